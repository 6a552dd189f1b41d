//! IRIS approvals storage: the core's storage traits ([`iris_core::ports`]) on SQLite and
//! PostgreSQL, written once (DESIGN §6).
//!
//! Every statement is written once with `$N` placeholders; the few spellings that differ come
//! from [`Engine`] (`engine.rs`). Reads go through one sqlx `AnyPool` on both engines; every
//! write goes through a unit of work (`unit.rs`: one transaction, on SQLite the one rusqlite
//! connection that is the file's only writer, on PostgreSQL a sqlx transaction). The layout:
//!
//! - [`connect`](Store::connect) (`open.rs`): the engine by the url's scheme, migrations
//!   (`migrations/sqlite/`, `migrations/postgres/`), SQLite's durability setting;
//! - `lifecycle.rs`: [`iris_core::ports::ApprovalStore`], the units of work of an approval's
//!   life, one transaction per phase, fenced by the resume job's lease: `lifecycle.rs` reads
//!   and plans each unit, `writes.rs` holds its writes (a decision's compare-and-set, the
//!   ledger's claim and outcome, a job's end), `job_end.rs` the units that end a job;
//! - `events.rs`: events published by those commits: an in-process channel on SQLite (one
//!   server), an event log with `LISTEN/NOTIFY` wake-ups on PostgreSQL (many servers);
//! - `devices.rs`, `telegram.rs`, `curator.rs`: devices and pairing links, Telegram messages,
//!   escalation verdicts;
//! - `push.rs`: Web Push's VAPID key, subscriptions and outbox (written by the commits that
//!   carry the events it announces);
//! - `listing.rs`: a page of approvals (cursor, filters, search), each filter on its index;
//! - `locks.rs`: named locks held across servers (PostgreSQL advisory locks);
//! - `checkpoint.rs`: SQLite's WAL checkpoints in the background, off the commit path;
//! - `claim.rs`: what a claim reads: the job picked and leased, and the snapshot it is planned
//!   from;
//! - `turns.rs`: a turn's writes and a new card's (the row, its checkpoint, the transcript
//!   written only over the version read, the lines, the audit of writes without a card);
//! - `undo.rs`: the card's undo, its claim and its outcome ([`iris_core::ports::UndoStore`]);
//! - `reason.rs`: a rejection's reason given after the tap, once;
//! - `gateway.rs`: the MCP gateway's unit (the row of an agent's call, its result given once);
//! - `passkeys.rs`: passkeys and their ceremonies, and their part of a decision's unit;
//! - `rows.rs`: decoding rows, where a bad row is [`StoreError::Corrupt`] naming it;
//! - [`testing`]: fresh PostgreSQL databases for other crates' tests (feature `testing`).
//!
//! Both schemas enforce the approval row's invariants in the database itself (DESIGN §6):
//! request terms are immutable, the response is written once, a ledger claim must match the
//! approved row, rows are never deleted, the audit log is append-only, a job's lease epoch only
//! grows; no code path can change what was approved.

mod checkpoint;
mod claim;
mod curator;
mod devices;
mod engine;
mod events;
mod gateway;
mod job_end;
mod lifecycle;
mod listing;
mod locks;
mod open;
mod passkeys;
mod push;
mod reason;
mod rows;
mod telegram;
mod turns;
mod undo;
mod unit;
mod writes;

use std::sync::Arc;

use iris_core::wire::Event;
use sqlx::AnyPool;
use tokio::sync::broadcast;

pub use engine::{timestamp_text, Engine, TimeSource};
pub use locks::{LockGuard, NamedLock};
pub use open::{NativePool, StoreOptions, Synchronous};
pub use unit::STATEMENT_TARGET;

#[cfg(feature = "testing")]
pub mod testing;

/// Storage on SQLite or PostgreSQL: the approval queue, resume jobs, ledger, audit log,
/// checkpoints, conversations, devices, pairing links and Telegram messages, in one database.
///
/// Cloning is cheap and shares the pool and the event feed.
#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
    engine: Engine,
    url: Arc<str>,
    time: TimeSource,
    /// SQLite has one writer: the lifecycle's units take this connection in turn, so they queue
    /// here instead of in SQLite's busy loop, and run their statements on it inline (`unit.rs`).
    writer: Arc<tokio::sync::Mutex<unit::Writer>>,
    feed: broadcast::Sender<Event>,
    locks: Arc<locks::LocalLocks>,
    commits: Arc<std::sync::atomic::AtomicU64>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("engine", &self.engine)
            .field("time", &self.time)
            .finish()
    }
}

impl Store {
    /// The pool, for components that keep their own tables in the same database (the email
    /// plugin's local store).
    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// The engine.
    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// Where "now" comes from in this store's statements.
    pub fn time_source(&self) -> &TimeSource {
        &self.time
    }

    /// A listener of the events the store's commits publish (`approval.requested`, …), from
    /// every server on this database: on PostgreSQL once [`Store::listen_for_events`] runs. A
    /// listener that falls behind by more than 1024 events loses the oldest (it refetches).
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.feed.subscribe()
    }

    /// How many write transactions the lifecycle's units committed through this store (and its
    /// clones) so far: what a phase costs, for the benchmark and the one-commit-per-phase tests.
    pub fn commits(&self) -> u64 {
        self.commits.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// `now` as bound for [`Engine::now`].
    /// "Now" by the store's time source, for a stamp the store writes itself: the test clock,
    /// else this machine's clock (the database's is read in SQL by [`Store::now_sql`]).
    pub(crate) fn now_stamp(&self) -> chrono::DateTime<chrono::Utc> {
        match &self.time {
            TimeSource::Clock(clock) => clock.now(),
            TimeSource::Database => chrono::Utc::now(),
        }
    }

    pub(crate) fn now_param(&self) -> Option<String> {
        self.time.param()
    }

    /// The SQL of "now" with the time source at placeholder `$1`.
    pub(crate) fn now_sql(&self) -> String {
        self.engine.now("$1")
    }
}
