//! A unit of work: one write transaction (DESIGN §9 "each phase is one transaction").
//!
//! - A SQLite file: one writer per file, a `rusqlite` connection of the store's own, used on
//!   the calling thread. A unit holds it, begins `IMMEDIATE` (the write lock at the start, never
//!   upgraded mid-way) and runs each statement as it comes, from SQLite's prepared-statement
//!   cache. Nothing crosses a thread: a hand-off to a database thread and back costs more than a
//!   statement here (two wake-ups of an idle CPU per round trip, BENCHMARKS.md), so a unit
//!   costs its statements' own time. What can wait long moves to tokio's blocking pool with the
//!   writer ([`off_the_worker`]): a `BEGIN` that finds another connection writing (its busy
//!   wait), and at `synchronous = FULL` the commit's flush. A unit dropped midway (a cancelled
//!   future) rolls back in its `Drop`, at once.
//! - PostgreSQL, and an in-memory SQLite database (the pool's one connection): a sqlx
//!   transaction; statements run one by one (the extended protocol takes one statement per
//!   round trip); dropping it rolls it back.
//!
//! Statements are [`Stmt`]s: their text with `$1…$n` placeholders and their arguments, bound
//! the same way on both engines.

use std::sync::Arc;

use iris_core::ports::StoreError;
use sqlx::any::AnyRow;
use sqlx::AnyPool;
use sqlx::{Any, Transaction};

use crate::rows::{backend, LiteRow, Record};
use crate::{Engine, Store};

/// One argument of a [`Stmt`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Arg {
    Text(Option<String>),
    Int(Option<i64>),
    Bool(bool),
}

/// One statement: its SQL, placeholders `$1…$n`, and its arguments in that order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stmt {
    sql: String,
    args: Vec<Arg>,
}

impl Stmt {
    pub(crate) fn new(sql: impl Into<String>) -> Stmt {
        Stmt {
            sql: sql.into(),
            args: Vec::new(),
        }
    }

    /// Binds a text argument (`None` is NULL).
    pub(crate) fn text<T: ToString + ?Sized>(mut self, value: &T) -> Stmt {
        self.args.push(Arg::Text(Some(value.to_string())));
        self
    }

    /// Binds an optional text argument.
    pub(crate) fn opt_text(mut self, value: Option<&str>) -> Stmt {
        self.args.push(Arg::Text(value.map(str::to_string)));
        self
    }

    /// Binds an integer.
    pub(crate) fn int(mut self, value: i64) -> Stmt {
        self.args.push(Arg::Int(Some(value)));
        self
    }

    /// Binds a boolean.
    pub(crate) fn flag(mut self, value: bool) -> Stmt {
        self.args.push(Arg::Bool(value));
        self
    }
}

/// The `tracing` target of the SQLite writer's statements (sqlx's own are `sqlx::query`), each
/// an event at TRACE with the statement in `db.statement`.
pub const STATEMENT_TARGET: &str = "iris_store::statement";

/// Binds `args` to a sqlx query.
async fn run<'c, E>(executor: E, sql: &str, args: Vec<Arg>) -> Result<Vec<AnyRow>, sqlx::Error>
where
    E: sqlx::Executor<'c, Database = Any>,
{
    let mut query = sqlx::query(sql);
    for arg in args {
        query = match arg {
            Arg::Text(v) => query.bind(v),
            Arg::Int(v) => query.bind(v),
            Arg::Bool(v) => query.bind(v),
        };
    }
    query.fetch_all(executor).await
}

/// Runs `stmt` on the SQLite writer: its rows. `$n` is a named parameter to SQLite (the same
/// name twice is one value), so each argument is bound by its name.
fn run_lite(conn: &rusqlite::Connection, stmt: &Stmt) -> rusqlite::Result<Vec<LiteRow>> {
    tracing::trace!(target: STATEMENT_TARGET, { db.statement = stmt.sql.as_str() }, "statement");
    let mut prepared = conn.prepare_cached(&stmt.sql)?;
    for (i, arg) in stmt.args.iter().enumerate() {
        let Some(index) = prepared.parameter_index(&format!("${}", i + 1))? else {
            continue;
        };
        match arg {
            Arg::Text(v) => prepared.raw_bind_parameter(index, v.as_deref())?,
            Arg::Int(v) => prepared.raw_bind_parameter(index, v)?,
            Arg::Bool(v) => prepared.raw_bind_parameter(index, v)?,
        }
    }
    let names: Arc<[String]> = prepared
        .column_names()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let mut rows = prepared.raw_query();
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let mut values = Vec::with_capacity(names.len());
        for i in 0..names.len() {
            values.push(row.get_ref(i)?.into());
        }
        out.push(LiteRow {
            names: names.clone(),
            values,
        });
    }
    Ok(out)
}

/// The held writer: the store's writer connection, locked for one unit.
type WriterGuard = tokio::sync::OwnedMutexGuard<Writer>;

/// Runs `work` on the writer where it may block for a while (a busy wait, a disk flush): on
/// tokio's blocking pool, the writer moved there and back, so no async worker waits. (The
/// writer stays locked throughout; if the caller goes away meanwhile, the work still ends and
/// the lock is released when the guard drops there.)
async fn off_the_worker<T: Send + 'static>(
    writer: WriterGuard,
    work: impl FnOnce(&rusqlite::Connection) -> T + Send + 'static,
) -> Result<(WriterGuard, T), StoreError> {
    tokio::task::spawn_blocking(move || {
        let done = work(
            writer
                .conn
                .as_ref()
                .expect("a file's writer has a connection"),
        );
        (writer, done)
    })
    .await
    .map_err(|e| StoreError::Backend(format!("the SQLite writer's work stopped: {e}")))
}

/// Maps a SQLite writer error to [`StoreError::Backend`], saying what was being done.
fn lite_backend(doing: &'static str) -> impl Fn(rusqlite::Error) -> StoreError {
    move |e| {
        let refused = e.sqlite_error_code() == Some(rusqlite::ErrorCode::ConstraintViolation);
        crate::rows::refusal_marked(format!("{doing}: {e}"), refused)
    }
}

/// How long the SQLite writer waits for another connection's write lock before failing.
const WRITER_BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The SQLite writer: a file's own `rusqlite` connection (none for an in-memory database and on
/// PostgreSQL, whose units use the pool).
pub(crate) struct Writer {
    conn: Option<rusqlite::Connection>,
    /// Whether the commit's flush is waited for (`synchronous = FULL`).
    flushes: bool,
    /// A file's background WAL checkpoints (`checkpoint.rs`); none in memory or on PostgreSQL.
    checkpoints: Option<crate::checkpoint::Checkpoints>,
}

impl Writer {
    /// A file's own writer connection (its pragmas set), its log checkpointed in the
    /// background on `pool`.
    pub(crate) fn dedicated(
        conn: rusqlite::Connection,
        synchronous: crate::Synchronous,
        pool: AnyPool,
    ) -> Writer {
        Writer {
            conn: Some(conn),
            flushes: synchronous == crate::Synchronous::Full,
            checkpoints: Some(crate::checkpoint::Checkpoints::new(pool)),
        }
    }

    /// The pool's connections write (in memory, where there is no log; PostgreSQL).
    pub(crate) fn pooled() -> Writer {
        Writer {
            conn: None,
            flushes: false,
            checkpoints: None,
        }
    }

    /// Begins `IMMEDIATE` on `conn` without waiting: `Ok(false)` when another connection
    /// writes (the caller then waits for it off the async worker, [`Writer::begin_waiting`]).
    fn begin(conn: &rusqlite::Connection) -> rusqlite::Result<bool> {
        if !conn.is_autocommit() {
            // Cannot happen (a dropped unit rolls back), but a transaction left open would
            // fold this unit into it.
            conn.execute_batch("ROLLBACK")?;
        }
        conn.busy_timeout(std::time::Duration::ZERO)?;
        let first = conn.execute_batch("BEGIN IMMEDIATE");
        conn.busy_timeout(WRITER_BUSY_TIMEOUT)?;
        match first {
            Ok(()) => Ok(true),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Begins `IMMEDIATE` on `conn`, waiting up to the busy timeout for another writer.
    fn begin_waiting(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
        conn.execute_batch("BEGIN IMMEDIATE")
    }
}

/// Opens a SQLite file's writer connection with `pragmas` (run as one batch).
///
/// # Errors
/// [`StoreError::Backend`] when the file cannot be opened or a pragma fails.
pub(crate) fn open_writer(
    path: &std::path::Path,
    pragmas: &str,
) -> Result<rusqlite::Connection, StoreError> {
    let conn =
        rusqlite::Connection::open(path).map_err(lite_backend("opening the writer connection"))?;
    conn.busy_timeout(WRITER_BUSY_TIMEOUT)
        .map_err(lite_backend("setting up the writer connection"))?;
    conn.execute_batch(pragmas)
        .map_err(lite_backend("setting up the writer connection"))?;
    // A unit's statements are few and fixed; the halt's line insert varies with its count.
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

enum Held {
    /// A SQLite file's writer.
    Lite(tokio::sync::OwnedMutexGuard<Writer>),
    /// PostgreSQL, or an in-memory SQLite database.
    Tx(Transaction<'static, Any>),
}

/// One write transaction (see the module docs). Dropped before its end (a cancelled future),
/// it rolls back, so SQLite's write lock is never left held.
pub(crate) struct WriteTx {
    held: Option<Held>,
    commits: Arc<std::sync::atomic::AtomicU64>,
}

impl Drop for WriteTx {
    fn drop(&mut self) {
        if let Some(Held::Lite(writer)) = &self.held {
            if let Some(conn) = &writer.conn {
                if !conn.is_autocommit() {
                    // If even this fails, the next unit's begin rolls back first.
                    let _ = conn.execute_batch("ROLLBACK");
                }
            }
        }
        // A sqlx transaction rolls back when dropped.
    }
}

impl Store {
    /// Begins a unit of work.
    pub(crate) async fn begin_write(&self) -> Result<WriteTx, StoreError> {
        let held = match self.engine {
            Engine::Sqlite => {
                let writer = self.writer.clone().lock_owned().await;
                match &writer.conn {
                    Some(conn) => {
                        if Writer::begin(conn).map_err(lite_backend("starting a transaction"))? {
                            Held::Lite(writer)
                        } else {
                            let (writer, begun) =
                                off_the_worker(writer, Writer::begin_waiting).await?;
                            begun.map_err(lite_backend("starting a transaction"))?;
                            Held::Lite(writer)
                        }
                    }
                    None => Held::Tx(
                        self.pool
                            .begin_with("BEGIN IMMEDIATE")
                            .await
                            .map_err(backend("starting a transaction"))?,
                    ),
                }
            }
            Engine::Postgres => Held::Tx(
                self.pool
                    .begin()
                    .await
                    .map_err(backend("starting a transaction"))?,
            ),
        };
        Ok(WriteTx {
            held: Some(held),
            commits: self.commits.clone(),
        })
    }
}

/// Whether `error` is a unit's failed assertion ([`StoreError::Unchanged`]): its
/// compare-and-set changed nothing, and nothing after it was written.
pub(crate) fn is_assertion(error: &StoreError) -> bool {
    matches!(error, StoreError::Unchanged(_))
}

impl WriteTx {
    fn held(&mut self) -> &mut Held {
        self.held.as_mut().expect("a unit is held until it ends")
    }

    /// A compare-and-set (an `UPDATE` that changes one row or none) the rest of the unit
    /// depends on: when it changes nothing, it fails with an assertion ([`is_assertion`]) and
    /// the caller ends the unit, so nothing after it is written.
    pub(crate) async fn exec_cas(
        &mut self,
        stmt: Stmt,
        doing: &'static str,
    ) -> Result<(), StoreError> {
        let changed = match self.held() {
            Held::Lite(writer) => {
                let conn = writer
                    .conn
                    .as_ref()
                    .expect("a file's writer has a connection");
                run_lite(conn, &stmt).map_err(lite_backend(doing))?;
                conn.changes() > 0
            }
            Held::Tx(tx) => !run(&mut **tx, &format!("{} RETURNING 1", stmt.sql), stmt.args)
                .await
                .map_err(backend(doing))?
                .is_empty(),
        };
        if changed {
            Ok(())
        } else {
            Err(StoreError::Unchanged(doing.to_string()))
        }
    }

    /// Runs a statement whose rows are not needed.
    pub(crate) async fn exec(&mut self, stmt: Stmt, doing: &'static str) -> Result<(), StoreError> {
        self.fetch(stmt, doing).await.map(|_| ())
    }

    /// Runs `stmt`: its rows.
    pub(crate) async fn fetch(
        &mut self,
        stmt: Stmt,
        doing: &'static str,
    ) -> Result<Vec<Record>, StoreError> {
        match self.held() {
            Held::Lite(writer) => {
                let conn = writer
                    .conn
                    .as_ref()
                    .expect("a file's writer has a connection");
                let rows = run_lite(conn, &stmt).map_err(lite_backend(doing))?;
                Ok(rows.into_iter().map(Record::Lite).collect())
            }
            Held::Tx(tx) => Ok(run(&mut **tx, &stmt.sql, stmt.args)
                .await
                .map_err(backend(doing))?
                .into_iter()
                .map(Record::Any)
                .collect()),
        }
    }

    /// Commits everything.
    pub(crate) async fn commit(mut self) -> Result<(), StoreError> {
        match self.held.take().expect("a unit is held until it ends") {
            Held::Lite(writer) => {
                let (writer, committed) = if writer.flushes {
                    off_the_worker(writer, |conn| conn.execute_batch("COMMIT")).await?
                } else {
                    let committed = writer
                        .conn
                        .as_ref()
                        .expect("a file's writer has a connection")
                        .execute_batch("COMMIT");
                    (writer, committed)
                };
                let conn = writer
                    .conn
                    .as_ref()
                    .expect("a file's writer has a connection");
                if let Err(e) = committed {
                    if !conn.is_autocommit() {
                        let _ = conn.execute_batch("ROLLBACK");
                    }
                    return Err(lite_backend("committing a transaction")(e));
                }
                let n = self.count_commit();
                if let Some(checkpoints) = &writer.checkpoints {
                    checkpoints.after_commit(n);
                }
            }
            Held::Tx(tx) => {
                tx.commit()
                    .await
                    .map_err(backend("committing a transaction"))?;
                self.count_commit();
            }
        }
        Ok(())
    }

    /// Counts one committed unit; the count so far.
    fn count_commit(&self) -> u64 {
        self.commits
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1
    }

    /// Ends the unit without writing anything.
    pub(crate) async fn rollback(mut self) {
        match self.held.take().expect("a unit is held until it ends") {
            Held::Lite(writer) => {
                if let Some(conn) = &writer.conn {
                    if !conn.is_autocommit() {
                        // If even this fails, the next unit's begin rolls back first.
                        let _ = conn.execute_batch("ROLLBACK");
                    }
                }
            }
            Held::Tx(tx) => {
                let _ = tx.rollback().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::ColumnRead;

    #[tokio::test]
    async fn a_unit_dropped_midway_never_leaves_the_write_lock_held() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/unit.db", dir.path().display());
        let store = Store::connect(&url).await.unwrap();
        // A unit that has sent its first statements (the write lock taken), then is dropped,
        // as a cancelled request future would drop it.
        let mut tx = store.begin_write().await.unwrap();
        tx.fetch(
            Stmt::new("UPDATE devices SET last_used_at = NULL RETURNING id"),
            "a write",
        )
        .await
        .unwrap();
        drop(tx);
        // Another connection can write at once (the busy timeout is 5 s; this allows 2).
        let other = tokio::time::timeout(
            std::time::Duration::from_secs(2),
            sqlx::query(
                "INSERT INTO conversations (id, transcript, created_at, updated_at) \
                         VALUES ('c', '[]', 'x', 'x')",
            )
            .execute(store.pool()),
        )
        .await;
        assert!(
            matches!(other, Ok(Ok(_))),
            "the write lock stayed held: {other:?}"
        );
        // And the next unit runs normally.
        let tx = store.begin_write().await.unwrap();
        tx.commit().await.unwrap();
    }

    /// The writer's first try at the write lock does not wait; when another connection holds
    /// it, the writer then waits for it (the busy timeout) instead of failing at once.
    #[test]
    fn a_begin_waits_for_another_writer_instead_of_failing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("busy.db");
        let setup = rusqlite::Connection::open(&path).unwrap();
        setup
            .execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (n INTEGER);")
            .unwrap();
        let writer = open_writer(&path, "PRAGMA foreign_keys = ON;").unwrap();

        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let holder_path = path.clone();
        let holder = std::thread::spawn(move || {
            let other = rusqlite::Connection::open(holder_path).unwrap();
            other
                .execute_batch("BEGIN IMMEDIATE; INSERT INTO t VALUES (1);")
                .unwrap();
            held_tx.send(()).unwrap();
            // The window in which the writer's begin must wait (far shorter than its 5 s).
            std::thread::sleep(std::time::Duration::from_millis(300));
            other.execute_batch("COMMIT").unwrap();
        });
        held_rx.recv().unwrap();
        // The first try does not wait; the second waits for the other writer.
        assert!(!Writer::begin(&writer).expect("a busy database is not an error"));
        Writer::begin_waiting(&writer).expect("the begin waits for the other writer");
        writer
            .execute_batch("INSERT INTO t VALUES (2); COMMIT;")
            .unwrap();
        holder.join().unwrap();
        let n: i64 = writer
            .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2);
    }

    /// `$n` is a named parameter to SQLite: arguments bind by name, whatever order and however
    /// often the names appear in the text.
    #[test]
    fn arguments_bind_by_their_placeholder_names() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let rows = run_lite(
            &conn,
            &Stmt::new("SELECT $3 AS c, $1 AS a, $2 AS b, $1 AS a2")
                .text("one")
                .int(2)
                .opt_text(None),
        )
        .unwrap();
        let row = &rows[0];
        assert_eq!(row.text_at("a").unwrap().as_deref(), Some("one"));
        assert_eq!(row.text_at("a2").unwrap().as_deref(), Some("one"));
        assert_eq!(row.int_at("b").unwrap(), Some(2));
        assert_eq!(row.text_at("c").unwrap(), None);
        assert!(row.text_at("b").is_err(), "an integer is not read as text");
        assert!(row.text_at("missing").is_err());
    }

    /// Through the store: a unit that finds another connection writing waits for it off the
    /// async worker and then runs; the other connection's write and the unit's both land.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_unit_waits_for_another_connection_then_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("busy-store.db");
        let store = Store::connect(&format!("sqlite://{}", path.display()))
            .await
            .unwrap();
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let holder = std::thread::spawn(move || {
            let other = rusqlite::Connection::open(path).unwrap();
            other
                .execute_batch(
                    "BEGIN IMMEDIATE; INSERT INTO conversations (id, transcript, created_at, \
                     updated_at) VALUES ('held', '[]', 'x', 'x');",
                )
                .unwrap();
            held_tx.send(()).unwrap();
            // The window in which the unit must wait (far shorter than its 5 s).
            std::thread::sleep(std::time::Duration::from_millis(300));
            other.execute_batch("COMMIT").unwrap();
        });
        held_rx.recv().unwrap();
        let mut tx = store
            .begin_write()
            .await
            .expect("the unit waits, then begins");
        tx.exec(
            Stmt::new(
                "INSERT INTO conversations (id, transcript, created_at, updated_at) \
                 VALUES ('mine', '[]', 'x', 'x')",
            ),
            "a write",
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
        holder.join().unwrap();
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM conversations")
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(n, 2);
    }
}
