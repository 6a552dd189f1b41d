//! Where an answer came from ([`Surface`]). Part of the wire types (see the parent module).

use serde::{Deserialize, Serialize};

/// Where an answer (or an undo) came from, as the row, its audit and its undo record it
/// (docs/liveness.md "truthful records"). Serialises as the stored text: `web` (the browser
/// session), `api` (a bearer token), `cli` (a bearer token sent by `iris` with
/// `X-Iris-Surface: cli`), `telegram` (the paired chat), `sweep` (IRIS itself: a lapse, an
/// undo its server stopped in). Rows keep the text, so a reader of the wire types sees a
/// `String`; every writer names one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Surface {
    /// The web app, through the browser's session.
    Web,
    /// The JSON API with a bearer token.
    Api,
    /// The `iris` CLI (the JSON API with a bearer token and `X-Iris-Surface: cli`).
    Cli,
    /// The paired Telegram chat.
    Telegram,
    /// IRIS itself (the expiry and undo sweeps).
    Sweep,
}

impl Surface {
    /// The stored spelling: `web`, `api`, `cli`, `telegram` or `sweep`.
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Web => "web",
            Surface::Api => "api",
            Surface::Cli => "cli",
            Surface::Telegram => "telegram",
            Surface::Sweep => "sweep",
        }
    }

    /// The surface a client may name for itself (`X-Iris-Surface`): only `cli`. The others come
    /// from their own credentials, never from a header.
    pub fn claimed(header: &str) -> Option<Surface> {
        (header == "cli").then_some(Surface::Cli)
    }
}

impl std::fmt::Display for Surface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<Surface> for String {
    fn from(surface: Surface) -> String {
        surface.as_str().to_string()
    }
}
