//! The audit log's wire types (DESIGN §2 "audit log", `GET /api/audit`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::rfc3339;

/// What an audit entry records (DESIGN §2 "audit log").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum AuditKind {
    /// The owner answered a row.
    Decision,
    /// A pinned call ran for one item.
    Execution,
    /// A claim was refused (forged, changed, unapproved or already claimed).
    Denial,
    /// A row lapsed.
    Lapse,
    /// The card's undo: one entry when asked for (item `None`), then one per item undone.
    Undo,
    /// A write the owner asked for that ran without a card, as its manifest allows (a
    /// `confirm: never` write with a `reply_undo`, e.g. mail's `trash_category`): named by its
    /// run (`run_id`), not by a row.
    Action,
}

impl AuditKind {
    /// The wire and stored spelling (`decision`, `execution`, `denial`, `lapse`, `undo`,
    /// `action`), as
    /// serde writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditKind::Decision => "decision",
            AuditKind::Execution => "execution",
            AuditKind::Denial => "denial",
            AuditKind::Lapse => "lapse",
            AuditKind::Undo => "undo",
            AuditKind::Action => "action",
        }
    }

    /// Reads [`AuditKind::as_str`]'s spelling back; `None` for any other text.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "decision" => Some(AuditKind::Decision),
            "execution" => Some(AuditKind::Execution),
            "denial" => Some(AuditKind::Denial),
            "lapse" => Some(AuditKind::Lapse),
            "undo" => Some(AuditKind::Undo),
            "action" => Some(AuditKind::Action),
            _ => None,
        }
    }
}

/// One append-only audit entry (`GET /api/audit`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditEntry {
    /// Monotonic id.
    pub id: i64,
    /// The approval this entry concerns; `null` for an [`AuditKind::Action`] (no card).
    pub approval_id: Option<String>,
    /// The run of an [`AuditKind::Action`]; absent for entries about a row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// What happened.
    pub kind: AuditKind,
    /// The item executed (execution entries), else `None`.
    pub item: Option<String>,
    /// Outcome: the decision, the item's result or the denial reason.
    pub result: Value,
    /// Whether an undo exists for what ran.
    pub undo_available: bool,
    /// Who (device name, or `iris` for the kernel itself).
    pub actor: String,
    /// Through which surface.
    pub surface: Option<String>,
    /// When.
    #[serde(deserialize_with = "rfc3339::deserialize")]
    pub at: DateTime<Utc>,
}

/// `GET /api/audit` body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditList {
    /// One approval's entries, oldest first; or a page of the whole log, newest first.
    pub entries: Vec<AuditEntry>,
    /// For a page of the whole log: the `before` of the next (older) page; `null` at the end,
    /// and for one approval's entries (they come whole).
    #[serde(default)]
    pub next: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `as_str` is the spelling serde writes (the store and the pages rely on it), and `parse`
    /// reads it back.
    #[test]
    fn audit_kinds_are_spelled_as_serde_writes_them() {
        for kind in [
            AuditKind::Decision,
            AuditKind::Execution,
            AuditKind::Denial,
            AuditKind::Lapse,
            AuditKind::Undo,
        ] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
            assert_eq!(AuditKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(AuditKind::parse("Decision"), None);
    }
}
