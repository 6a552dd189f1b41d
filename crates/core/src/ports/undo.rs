//! The undo from the card's storage (DESIGN §9 "Undo from the card"): two units of work, like
//! the execute phase's claim and outcome.
//!
//! | unit | commit |
//! |---|---|
//! | [`UndoStore::claim_undo`] | the undo `running` (write-ahead), its request audit entry, `approval.responded` |
//! | [`UndoStore::record_undo`] | `running` → `done`/`failed`/`unknown`, one audit entry per item, `approval.responded` |
//!
//! A `running` undo whose lease passed ([`UndoStore::lapsed_undos`]) is recorded `unknown` by
//! the same outcome unit.
//!
//! The undo's primary key (the approval id) makes it once whatever the taps; the database's
//! triggers refuse an undo of a row that is not approved with its call executed, any change to
//! its terms and a second outcome.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{NewAuditEntry, Outbox, StoreError};
use crate::wire::UndoState;

/// An undo about to run, written before its tool runs.
#[derive(Debug, Clone, PartialEq)]
pub struct UndoClaim {
    /// The approval whose executed call it reverses.
    pub approval_id: String,
    /// The card's `undo_tool`.
    pub tool: String,
    /// The canonical JSON of the undo tool's arguments.
    pub args_canonical: String,
    /// The items it acts on, in the call's order.
    pub items: Vec<String>,
    /// Who asked (device name).
    pub by: String,
    /// Through which surface.
    pub surface: String,
    /// When it was asked for.
    pub at: DateTime<Utc>,
    /// Seconds after which, by the store's time source, a `running` undo without an outcome is
    /// `unknown` ([`UndoStore::lapsed_undos`]).
    pub lease_secs: u32,
    /// The request's audit entry (kind `undo`, no item).
    pub audit: NewAuditEntry,
    /// What the commit announces when (and only when) it lands: its events and the pushes they
    /// ask for.
    pub outbox: Outbox,
}

/// An undo's outcome, written after its tool ran (or could not be known to have run).
#[derive(Debug, Clone, PartialEq)]
pub struct UndoOutcome {
    /// The approval.
    pub approval_id: String,
    /// `done`, `failed` or `unknown` (never `running`).
    pub state: UndoState,
    /// The undo tool's result, or `{"message"}`.
    pub result: Value,
    /// When it ended.
    pub at: DateTime<Utc>,
    /// One entry per item undone (or one for the whole call).
    pub audit: Vec<NewAuditEntry>,
    /// What the commit announces when (and only when) it lands: its events and the pushes they
    /// ask for.
    pub outbox: Outbox,
}

/// Storage of undos from the card. Implemented by `crates/store` for SQLite and PostgreSQL.
#[async_trait]
pub trait UndoStore: Send + Sync {
    /// Writes `claim` as a `running` undo with its audit entry, in one commit. `Ok(false)` when
    /// the approval already has an undo (nothing written).
    ///
    /// # Errors
    /// [`StoreError::Refused`] when the database refuses it (the row is not approved with its
    /// call executed), [`StoreError::Backend`] when it fails: nothing was written.
    async fn claim_undo(&self, claim: &UndoClaim) -> Result<bool, StoreError>;

    /// Writes `outcome` by compare-and-set from `running`, with its audit entries, in one
    /// commit. `Ok(false)` when the undo is no longer `running` (a sweep called it `unknown`):
    /// nothing was written.
    ///
    /// # Errors
    /// [`StoreError::Backend`]: nothing was written.
    async fn record_undo(&self, outcome: &UndoOutcome) -> Result<bool, StoreError>;

    /// Notes on approval `approval_id` that an undo from the chat acted on some of its items
    /// (`audit`: one [`crate::wire::AuditKind::Undo`] entry per item), with `outbox`, in one
    /// commit, while the card has no undo of its own: its undo stays for the other items, and
    /// `undo_left` (the button's words for them, e.g. "Restore 3 emails") becomes the row's
    /// `undo_left`. `Ok(false)` when it has one (nothing written).
    ///
    /// # Errors
    /// [`StoreError::Backend`]: nothing was written.
    async fn note_undone(
        &self,
        approval_id: &str,
        audit: &[NewAuditEntry],
        undo_left: Option<&str>,
        outbox: &Outbox,
    ) -> Result<bool, StoreError>;

    /// The approval ids of `running` undos whose lease passed by the store's time source
    /// (their server stopped while they ran), oldest first.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn lapsed_undos(&self) -> Result<Vec<String>, StoreError>;
}
