//! IRIS approvals storage: sqlx implementations of the core's storage traits
//! ([`iris_core::ports`]: `QueueStore`, `Ledger`, `AuditLog`, `CheckpointStore`,
//! `ConversationStore`, `DeviceStore`).
//!
//! One module per engine: [`sqlite`] now (schema in `migrations/sqlite/`), a `postgres` module with
//! `migrations/postgres/` beside it later. Each engine enforces the approval row's invariants in
//! the database itself (DESIGN §6): request terms are immutable, the response is written once,
//! rows are never deleted, the audit log is append-only; no code path can change what was
//! approved.
//!
//! Every error is a [`iris_core::ports::StoreError`]; a row that does not parse is
//! `StoreError::Corrupt` naming the row, never a panic (DESIGN §8, fail closed).

pub mod sqlite;

pub use sqlite::SqliteStore;
