//! The Activity page's first snapshot, loaded by the server before it draws the page and
//! carried to the browser inside it, so the page draws and hydrates at once from the same data,
//! without a Leptos resource: a resource and its `<Suspense>` cost the phone's wasm 22 KB gzip
//! of async machinery (BENCHMARKS.md "Wasm size") for data that is always there when the page
//! is.
//!
//! - The server's page handler calls [`load`] (the cards, as [`crate::api::activity_data`]
//!   would answer, with the history's search form) and, while it renders, [`provide`]: the
//!   page reads it from context, and a refusal (not paired, 401) gives the page its status.
//! - The page writes the snapshot into itself as JSON ([`SCRIPT_ID`], a data block no browser
//!   runs); the browser reads it there before it hydrates ([`first`]).
//!
//! Every later snapshot (live events, polls, a change of the filters) is
//! [`crate::api::activity_data`]'s.

use crate::api::ActivitySnapshot;
use crate::error::AppError;

/// The id of the `<script type="application/json">` that carries the first snapshot.
pub const SCRIPT_ID: &str = "activity-data";

/// The first snapshot as the server loaded it, or why it could not (shown instead of the
/// lists).
#[derive(Clone, Debug)]
pub struct ActivityLoad(pub Result<ActivitySnapshot, AppError>);

/// Loads the first snapshot for the request `request` of an Activity page (`focus`: the card of
/// `/activity/{id}`; the query: the history's filters): who is asking (a browser not paired
/// gets [`AppError::NotPaired`]), then [`crate::api::activity_snapshot`] with the search form.
/// Server only.
#[cfg(feature = "ssr")]
pub async fn load(
    backend: std::sync::Arc<dyn crate::backend::AppBackend>,
    request: &axum::http::request::Parts,
    focus: Option<String>,
) -> ActivityLoad {
    let query = request.uri.query().unwrap_or_default().to_owned();
    let Some(viewer) = backend.viewer(request).await else {
        return ActivityLoad(Err(AppError::NotPaired));
    };
    ActivityLoad(
        crate::api::activity_snapshot(&*backend, viewer, request, focus, &query, true).await,
    )
}

/// Puts `load` where the page reads it (context of the render this is called in), and gives a
/// refusal its status (401 not paired, 403 view only) as a server function's would. Server
/// only; call it in the render's context function.
#[cfg(feature = "ssr")]
pub fn provide(load: ActivityLoad) {
    let load = match load.0 {
        Err(error) => ActivityLoad(Err(crate::api::on_server::with_status(error))),
        ok => ActivityLoad(ok),
    };
    leptos::prelude::provide_context(load);
}

/// The first snapshot: on the server the one [`provide`]d (an error naming the server when none
/// was: a render outside the page handler); in the browser the one the page carries.
pub fn first() -> Result<ActivitySnapshot, String> {
    #[cfg(feature = "ssr")]
    {
        return match leptos::prelude::use_context::<ActivityLoad>() {
            Some(ActivityLoad(load)) => load.map_err(|e| e.to_string()),
            None => Err("The IRIS server did not load this page's cards.".to_owned()),
        };
    }
    #[cfg(feature = "hydrate")]
    {
        let text = leptos::prelude::document()
            .get_element_by_id(SCRIPT_ID)
            .and_then(|script| script.text_content())
            .unwrap_or_default();
        return crate::codec::read_json::<Result<ActivitySnapshot, AppError>>(&text)
            .map_err(|e| format!("This page's cards did not arrive whole ({e}): reload it."))
            .and_then(|load| load.map_err(|e| e.to_string()));
    }
    #[allow(unreachable_code)]
    Err("This page's cards are loaded by the server.".to_owned())
}

/// The JSON the page carries in [`SCRIPT_ID`] (server only; the browser never writes it: the
/// element is hydrated as the server drew it). Every `<` is written `\u003c` (the same JSON),
/// so no text in a card can end the script element or open a comment in it.
pub fn script_text() -> String {
    #[cfg(feature = "ssr")]
    {
        if let Some(ActivityLoad(load)) = leptos::prelude::use_context::<ActivityLoad>() {
            return serde_json::to_string(&load)
                .unwrap_or_default()
                .replace('<', "\\u003c");
        }
    }
    String::new()
}

/// The page's script nonce for the data block (server only: every script of a page carries it,
/// which its Content-Security-Policy requires of scripts; the browser hides it once parsed).
pub fn script_nonce() -> Option<String> {
    #[cfg(feature = "ssr")]
    {
        return leptos::nonce::use_nonce().map(|nonce| nonce.to_string());
    }
    #[allow(unreachable_code)]
    None
}
