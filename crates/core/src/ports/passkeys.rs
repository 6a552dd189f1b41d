//! Passkeys' storage (ADR-0118 decision 4; [`crate::passkey`]): the owner's registered passkeys
//! and the ceremonies the server made. The decision that uses an approval's ceremony is part of
//! [`crate::ports::ApprovalStore::decide`] (one transaction with the decision); adding and
//! removing a passkey are each one commit here.
//!
//! | call | what it does |
//! |---|---|
//! | [`PasskeyStore::start_ceremony`] | stores a challenge (lapses after two minutes, used once) |
//! | [`PasskeyStore::add_passkey`] | the registration's ceremony used, the proof used, the row written |
//! | [`PasskeyStore::remove_passkey`] | the proof used, the row marked removed (kept for `iris audit verify`) |

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::StoreError;
use crate::passkey::{Ceremony, PasskeyRecord, PasskeyUse};

/// What a change to the set of passkeys did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PasskeyChange {
    /// Committed.
    Done,
    /// Nothing was written; the sentence names the rule (a ceremony used or lapsed, a proof
    /// needed because a passkey exists, an unknown or removed passkey, a credential already
    /// registered).
    Refused(String),
}

/// The owner's passkeys and the server's ceremonies (`passkeys`, `passkey_ceremonies`).
#[async_trait]
pub trait PasskeyStore: Send + Sync {
    /// Passkeys, oldest first; removed ones too when `with_removed`.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn passkeys(&self, with_removed: bool) -> Result<Vec<PasskeyRecord>, StoreError>;

    /// Stores a new ceremony.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn start_ceremony(&self, ceremony: &Ceremony) -> Result<(), StoreError>;

    /// One ceremony, used or not.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] when it does not parse; [`StoreError::Backend`].
    async fn ceremony(&self, id: &str) -> Result<Option<Ceremony>, StoreError>;

    /// Adds `passkey` in one commit: the registration ceremony `register_ceremony` marked used
    /// (unused and unlapsed at `at`, or refused), and `proof` (an existing passkey's assertion)
    /// used likewise. Without `proof` it is refused when any passkey counts already (only the
    /// first passkey needs none); the check and the insert are serialised against each other.
    ///
    /// # Errors
    /// [`StoreError`]: nothing was written.
    async fn add_passkey(
        &self,
        register_ceremony: &str,
        proof: Option<&PasskeyUse>,
        passkey: &PasskeyRecord,
        at: DateTime<Utc>,
    ) -> Result<PasskeyChange, StoreError>;

    /// Marks passkey `id` removed by `by` at `at` (the row stays, for `iris audit verify`), with
    /// `proof` used in the same commit. `proof` is `None` only for the recovery path at the
    /// server (`iris passkeys remove`).
    ///
    /// # Errors
    /// [`StoreError`]: nothing was written.
    async fn remove_passkey(
        &self,
        id: &str,
        proof: Option<&PasskeyUse>,
        by: &str,
        at: DateTime<Utc>,
    ) -> Result<PasskeyChange, StoreError>;
}
