//! Where an unknown call's items are now ([`Located`]): what a takeover's plugin found
//! (docs/liveness.md "truthful records"), shown on every surface beside the unknown outcome.

use serde::{Deserialize, Serialize};

/// Where the items of an `unknown` call are now, as the tool's plugin found them after the
/// takeover (`crate::plugin::Plugin::locate`; docs/liveness.md "truthful records"). Written
/// once beside the unknown outcome, which it never changes: the call may or may not have
/// finished, and never runs again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Located {
    /// The plugin's sentence of where they are ("1 in quarantine, 1 still at its path.").
    pub summary: String,
    /// One per item it could place, in the call's order.
    pub items: Vec<LocatedItem>,
    /// The undo button's words when some of them can be put back ("Restore 1 file"): the
    /// card then offers its undo for those only. Absent when none can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo_action: Option<String>,
}

/// One item of [`Located`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LocatedItem {
    /// The item (one of the card's `items`).
    pub id: String,
    /// The item as shown (the plugin's name for it, e.g. "logs/a.log · downloads", else the
    /// id): its control and text-direction characters escaped.
    pub label: String,
    /// The plugin's word for where it is (for files: `quarantined`, `not_moved`, `unknown`).
    pub status: String,
    /// Where it is, in a sentence ("in quarantine: .iris-quarantine/…").
    pub message: String,
}
