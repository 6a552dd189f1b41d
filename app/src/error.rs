//! [`AppError`], the one error type every server function returns, with sentences the page
//! shows as they are.

use std::fmt;

use leptos::server_fn::{error::FromServerFnError, error::ServerFnErrorErr};
use serde::{Deserialize, Serialize};

use crate::codec::TextJsonEncoding;

/// What the page says when a request got no answer (after "Could not reach IRIS: ").
pub const NO_ANSWER: &str =
    "no answer came (IRIS may be restarting, or this device is offline). Try again in a moment.";

/// Why a server function did not give its answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum AppError {
    /// No signed-in device or session on this request.
    NotPaired,
    /// A `read` device tried to answer or chat.
    ViewOnly,
    /// The server refused or failed; the text is for the owner (e.g. "expired").
    Backend(String),
    /// The request did not reach the server or its answer could not be read.
    Transport(String),
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppError::NotPaired => f.write_str(
                "This browser is not paired with IRIS. To sign in, open a pairing link: run iris pair --scope control on the server, or make one on the Devices page of a paired control device.",
            ),
            AppError::ViewOnly => {
                f.write_str("This device can only view. Answer from a paired control device.")
            }
            AppError::Backend(text) => f.write_str(text),
            AppError::Transport(text) => write!(f, "Could not reach IRIS: {text}"),
        }
    }
}

impl std::error::Error for AppError {}

impl FromServerFnError for AppError {
    // The same JSON as server_fn's `JsonEncoding`, read as the answers are (crate::codec):
    // one JSON reader in the wasm rather than a second one only for errors.
    type Encoder = TextJsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        AppError::Transport(match value {
            // The browser's request got no answer at all (server_fn says "error reaching server
            // to call server function: TypeError: Failed to fetch", which tells the owner
            // nothing they can act on).
            ServerFnErrorErr::Request(_) => NO_ANSWER.to_owned(),
            other => other.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_without_an_answer_is_said_plainly() {
        let failed = AppError::from_server_fn_error(ServerFnErrorErr::Request(
            "TypeError: Failed to fetch".into(),
        ));
        assert_eq!(
            failed.to_string(),
            format!("Could not reach IRIS: {NO_ANSWER}")
        );
        assert!(!failed.to_string().contains("TypeError"));
        // Other failures keep their own words (e.g. an answer that could not be read).
        let unread = AppError::from_server_fn_error(ServerFnErrorErr::Deserialization(
            "missing field `id`".into(),
        ));
        assert!(unread.to_string().contains("missing field `id`"));
    }
}
