//! IRIS approvals storage: sqlx implementations of the core's storage traits
//! ([`iris_core::ports`]: `QueueStore`, `Ledger`, `AuditLog`, `CheckpointStore`,
//! `ConversationStore`, `DeviceStore`, `TelegramCardStore`) on SQLite and PostgreSQL (DESIGN §6).
//!
//! - [`sqlite`]: [`SqliteStore`], schema in `migrations/sqlite/`.
//! - [`postgres`]: [`PgStore`], schema in `migrations/postgres/`.
//! - [`any`]: [`Store`], either engine chosen by the scheme of `IRIS_DATABASE_URL`, implementing
//!   the same traits by delegation, so the server holds one type.
//! - `curator.rs`: the curator table (`iris_core::escalation::CuratorStore`) on all three.
//!
//! Both engines share one implementation of the traits (same statements, same results) and
//! enforce the approval row's invariants in the database itself (DESIGN §6): request terms are
//! immutable, the response is written once, a ledger claim must match the approved row, rows are
//! never deleted, the audit log is append-only; no code path can change what was approved.
//!
//! Every error is a [`iris_core::ports::StoreError`]; a row that does not parse is
//! `StoreError::Corrupt` naming the row, never a panic (DESIGN §8, fail closed).

mod curator;
mod engine;

pub mod any;
pub mod postgres;
pub mod sqlite;

pub use any::Store;
pub use engine::timestamp_text;
pub use postgres::PgStore;
pub use sqlite::SqliteStore;

#[cfg(feature = "testing")]
pub mod testing;
