//! The undo from the card as the wire shows it: where it stands ([`UndoState`]) and what it
//! did ([`UndoRecord`]). Part of the wire types (see the parent module).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::rfc3339;

/// Where an undo from the card stands. It runs once: none of these goes back to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum UndoState {
    /// Written before the undo tool runs (write-ahead); no outcome yet.
    Running,
    /// The undo tool ran; `result` says what came back, item by item.
    Done,
    /// The undo tool failed; `result` says why.
    Failed,
    /// It was running when its server stopped or it overran its time: it may or may not have
    /// run, and it is never run again (fail closed).
    Unknown,
}

impl UndoState {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            UndoState::Running => "running",
            UndoState::Done => "done",
            UndoState::Failed => "failed",
            UndoState::Unknown => "unknown",
        }
    }

    /// Parses the stored spelling; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "running" => Some(UndoState::Running),
            "done" => Some(UndoState::Done),
            "failed" => Some(UndoState::Failed),
            "unknown" => Some(UndoState::Unknown),
            _ => None,
        }
    }
}

/// The undo of an executed card: the card's `undo_tool` run once for exactly the items that
/// executed (`POST /governance/approvals/{id}/undo`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UndoRecord {
    /// Where it stands.
    pub state: UndoState,
    /// The items it acts on (those the pinned call executed), in the call's order.
    pub items: Vec<String>,
    /// Who asked (device name).
    pub by: String,
    /// Through which surface (`web`, `cli`, `api`, …).
    pub surface: String,
    /// When it was asked for (and written, before it ran).
    #[serde(deserialize_with = "rfc3339::deserialize")]
    pub at: DateTime<Utc>,
    /// When its outcome was recorded.
    #[serde(default, deserialize_with = "rfc3339::deserialize_option")]
    pub finished_at: Option<DateTime<Utc>>,
    /// The undo tool's result (its `summary` in the plugin's words, and each item's outcome),
    /// or `{"message"}` when it failed or its outcome is unknown.
    #[serde(default)]
    pub result: Option<Value>,
}
