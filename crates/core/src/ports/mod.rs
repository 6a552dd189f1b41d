//! What the core runs over (DESIGN §6: storage sits behind traits). `crates/store` implements
//! the storage traits with sqlx for SQLite and PostgreSQL; the row's immutable request terms are
//! also enforced by the database itself.
//!
//! - [`lifecycle`]: [`ApprovalStore`], the units of work of an approval's life (one transaction
//!   per phase: halt, decision, claim, outcome, resume) and the reads the lifecycle needs;
//! - [`listing`]: a page of approvals (cursor, filters, search);
//! - [`devices`]: paired devices and pairing links;
//! - [`gateway`]: the MCP gateway's request (write a row, or attach to the same call's);
//! - [`telegram`]: which Telegram message shows which approval;
//! - [`undo`]: the undo from the card (claim, outcome);
//! - [`outbox`]: what a unit announces when it lands (its events and the pushes they ask for);
//! - [`push`]: Web Push's key, subscriptions and outbox;
//! - [`passkeys`]: the owner's passkeys and the server's ceremonies;
//! - [`clock`]: the time source.
//!
//! The shared records of a row's life live here: [`NewApproval`] (request terms), [`Response`],
//! [`NewAuditEntry`] and [`Checkpoint`].

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{Message, ToolCall};
use crate::wire::{Approval, ApprovalKind, ApprovalStatus, AuditKind, Card, Effect};

pub mod clock;
pub mod devices;
pub mod gateway;
pub mod lifecycle;
pub mod listing;
pub mod outbox;
pub mod passkeys;
pub mod push;
pub mod telegram;
pub mod undo;

pub use clock::{Clock, DatabaseClock, ManualClock, SystemClock};
pub use devices::{Device, DeviceStore, PairingStore, Scope};
pub use gateway::{GatewayRequest, GatewayStore, GatewayWrite};
pub use lifecycle::*;
pub use listing::{
    card_search_text, parse_listing_time, ApprovalPage, ApprovalQuery, ListingError, PageCursor,
    PageLimit, SearchText, StatusFilter,
};
pub use outbox::{Outbox, OutboxPush};
pub use passkeys::{PasskeyChange, PasskeyStore};
pub use push::{PushEnd, PushJob, PushStore};
pub use telegram::{TelegramCard, TelegramCardStore, TelegramView};
pub use undo::{UndoClaim, UndoOutcome, UndoStore};

/// Why storage failed. Every variant fails closed: the caller runs nothing destructive.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database refused or could not be reached.
    #[error("storage failed: {0}")]
    Backend(String),
    /// A persisted row does not parse (strict restore: it is never executed).
    #[error("stored row `{id}` is corrupt: {reason}")]
    Corrupt {
        /// The row.
        id: String,
        /// What does not parse.
        reason: String,
    },
    /// The row does not exist.
    #[error("`{0}` does not exist")]
    NotFound(String),
    /// A write under a resume job's lease was refused because another server took the job over
    /// (its epoch moved on; DESIGN §9 "every write fenced by the epoch"). Nothing was written.
    #[error("the lease on the resume job of approval `{0}` was taken over by another server; nothing was written")]
    LeaseLost(String),
    /// A run's commit found its conversation's transcript changed since the run read it
    /// (another turn or resume landed first; DESIGN §8 "nothing is lost"). Nothing was
    /// written: the writer re-reads and applies its change again.
    #[error("the transcript of conversation `{0}` changed since it was read; nothing was written")]
    TranscriptMoved(String),
    /// A unit's compare-and-set changed nothing: the row had moved on before it (another
    /// writer won, or the rule it checks no longer held). Nothing after it was written. Its
    /// text names what the unit was doing. Never retried as it is: the caller re-reads.
    #[error("{0}: nothing changed, the row had moved on; nothing was written")]
    Unchanged(String),
    /// The store's rules or the database's own (a trigger, a constraint) refused a write: it
    /// would be refused again, so it is never retried (a poison job ends on it). Nothing was
    /// written. Its text names the write and the rule.
    #[error("storage refused: {0}")]
    Refused(String),
}

/// The request terms of a new approval row; immutable once written (DESIGN §2 "approval row").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewApproval {
    /// Row id (UUID text).
    pub id: String,
    /// Why the row exists.
    pub kind: ApprovalKind,
    /// Canonical tool name.
    pub tool: String,
    /// Normalised arguments.
    pub args: Value,
    /// Canonical JSON text of `args`: the bytes a claim compares.
    pub args_canonical: String,
    /// Hex SHA-256 of tool + NUL + canonical args.
    pub call_hash: String,
    /// Items, in the call's order.
    pub items: Vec<String>,
    /// The frozen card.
    pub card: Card,
    /// The paused run.
    pub run_id: String,
    /// Short text of what the run was doing (the owner's request).
    pub context_summary: String,
    /// When written.
    pub created_at: DateTime<Utc>,
    /// When it lapses.
    pub expires_at: DateTime<Utc>,
    /// One precondition per item, in `items` order, as the plugin's `describe(args)` pinned
    /// them (opaque JSON the plugin understands, checked by `Plugin::check_precondition` at
    /// execution; staleness). Empty: the call pins none. Immutable like the other terms.
    #[serde(default)]
    pub preconditions: Vec<Value>,
    /// Whether approving needs the owner's passkey ([`crate::passkey::PasskeyPolicy::requires`]
    /// when the row is written). Immutable like the other terms.
    #[serde(default)]
    pub passkey_required: bool,
    /// The agent device that requested the call (the MCP gateway); `None` for IRIS's own
    /// assistant. Immutable like the other terms.
    #[serde(default)]
    pub requested_by: Option<String>,
}

impl NewApproval {
    /// The row as the API shows it right after it was written: pending, unanswered, nothing
    /// executed (the payload of `approval.requested`).
    pub fn pending_view(&self) -> Approval {
        Approval {
            id: self.id.clone(),
            kind: self.kind,
            status: ApprovalStatus::Pending,
            tool: self.tool.clone(),
            args: self.args.clone(),
            call_hash: self.call_hash.clone(),
            items: self.items.clone(),
            card: self.card.clone(),
            run_id: self.run_id.clone(),
            created_at: self.created_at,
            expires_at: self.expires_at,
            responded_at: None,
            responded_by: None,
            surface: None,
            reason: None,
            execution: crate::wire::Execution::None,
            result: None,
            resume_error: None,
            undo: None,
            passkey_required: self.passkey_required,
            requested_by: self.requested_by.clone(),
            running: None,
            undo_left: None,
            located: None,
            approved_items: None,
            decided_call: None,
            edited_fields: None,
        }
    }
}

/// An answer to store (DESIGN §2 "response", written once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// `approved`, `rejected` or `expired`.
    pub status: ApprovalStatus,
    /// Who (device name, or `iris` for the expiry sweep).
    pub responded_by: String,
    /// Through which surface.
    pub surface: String,
    /// Optional reason.
    pub reason: Option<String>,
    /// When.
    pub at: DateTime<Utc>,
    /// For an approval of some of the card's items: what runs instead of the request's call
    /// (written once with the decision, only on `approved`); `None` otherwise.
    pub decided: Option<DecidedTerms>,
}

/// The decision's own terms when it approves some of a card's items or an edited call
/// (docs/adr/0122-shaping-a-call.md): which items, or which arguments changed, and the call
/// that runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecidedTerms {
    /// The kept indices into the row's `items`, ascending, at least one and fewer than all
    /// (an approval of some items); empty for an edit.
    pub items: Vec<u32>,
    /// The arguments the owner changed (an edit); empty for an approval of some items.
    pub edited_fields: Vec<String>,
    /// The call that runs (the request's tool, its own call hash; for an edit, `call.items` are
    /// the edited call's items).
    pub call: crate::wire::DecidedCall,
    /// The canonical JSON of `call.args` (what the ledger's claim must equal byte for byte).
    pub args_canonical: String,
}

/// What the audit log is given; the store assigns `id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewAuditEntry {
    /// The approval.
    pub approval_id: String,
    /// What happened.
    pub kind: AuditKind,
    /// The item (execution entries).
    pub item: Option<String>,
    /// Outcome.
    pub result: Value,
    /// Whether an undo exists.
    pub undo_available: bool,
    /// Who.
    pub actor: String,
    /// Surface.
    pub surface: Option<String>,
    /// When.
    pub at: DateTime<Utc>,
}

/// The saved state of a paused run (DESIGN §2 "checkpoint").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Checkpoint id.
    pub id: String,
    /// The paused run.
    pub run_id: String,
    /// Its conversation.
    pub conversation_id: String,
    /// What the owner asked this turn.
    pub request: String,
    /// The transcript so far, ending with the assistant message whose call halted; every other
    /// call id of that message already has its result.
    pub messages: Vec<Message>,
    /// The halted call as the model wrote it (its id gets the pinned call's result).
    pub pending_call: ToolCall,
    /// The approval the run waits on.
    pub approval_id: String,
    /// Effects recorded so far in this run.
    pub effects_executed: Vec<Effect>,
}
