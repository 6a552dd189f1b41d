//! A unit of work: one write transaction, whose statements travel as few round trips as the
//! engine allows (DESIGN §9 "each phase is one transaction").
//!
//! - SQLite: one writer per file. A unit holds the store's writer connection, begins
//!   `IMMEDIATE` (the write lock at the start, never upgraded mid-way), and sends its statements
//!   batched: everything queued since the last round trip goes in one query (`$N` parameters are
//!   renumbered into one list), so a unit costs one round trip per decision it needs to read
//!   back (a compare-and-set's `RETURNING`), plus its commit. A unit dropped midway (a cancelled
//!   future) leaves the writer marked open, and the next unit rolls it back first.
//! - PostgreSQL: a transaction on a pooled connection; statements run one by one (the extended
//!   protocol takes one statement per round trip).
//!
//! Statements are [`Stmt`]s: their text with `$1…$n` placeholders and their arguments, bound
//! the same way on both engines.

use std::sync::Arc;

use iris_core::ports::StoreError;
use sqlx::any::AnyRow;
use sqlx::pool::PoolConnection;
use sqlx::{Any, Transaction};
use sqlx::{AnyConnection, AnyPool};

use crate::rows::backend;
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

/// `sql` with every placeholder `$n` moved to `$(n + offset)`.
fn shift(sql: &str, offset: usize) -> String {
    let bytes = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 8);
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'$' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
            let start = i + 1;
            let mut end = start;
            while end < bytes.len() && bytes[end].is_ascii_digit() {
                end += 1;
            }
            let n: usize = sql[start..end].parse().unwrap_or(0);
            out.push('$');
            out.push_str(&(n + offset).to_string());
            i = end;
        } else {
            let next = sql[i..].find('$').map_or(bytes.len(), |j| i + j.max(1));
            out.push_str(&sql[i..next]);
            i = next;
        }
    }
    out
}

/// Appends `stmt` to `sql`/`args` with its placeholders moved past the `args` already there.
fn append(sql: &mut String, args: &mut Vec<Arg>, stmt: Stmt) {
    sql.push_str(&shift(&stmt.sql, args.len()));
    sql.push_str(";\n");
    args.extend(stmt.args);
}

/// Runs `sql` with `args` on `conn`: its rows.
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

/// The SQLite writer: one connection (a file's own; the pool's one for an in-memory database),
/// and whether a transaction is open on it.
pub(crate) struct Writer {
    conn: Option<AnyConnection>,
    open: bool,
    /// A file's background WAL checkpoints (`checkpoint.rs`); none in memory or on PostgreSQL.
    checkpoints: Option<crate::checkpoint::Checkpoints>,
}

impl Writer {
    /// A file's own writer connection, its log checkpointed in the background on `pool`.
    pub(crate) fn dedicated(conn: AnyConnection, pool: AnyPool) -> Writer {
        Writer {
            conn: Some(conn),
            open: false,
            checkpoints: Some(crate::checkpoint::Checkpoints::new(pool)),
        }
    }

    /// The pool's connection writes (in memory, where there is no log; PostgreSQL).
    pub(crate) fn pooled() -> Writer {
        Writer {
            conn: None,
            open: false,
            checkpoints: None,
        }
    }
}

enum Held {
    Sqlite {
        writer: tokio::sync::OwnedMutexGuard<Writer>,
        /// The pool's connection, for an in-memory database.
        pooled: Option<PoolConnection<Any>>,
        pending: String,
        args: Vec<Arg>,
    },
    Postgres(Transaction<'static, Any>),
}

/// One write transaction (see the module docs). Dropped before its end (a cancelled future),
/// it rolls back in the background, so SQLite's write lock is never left held.
pub(crate) struct WriteTx {
    held: Option<Held>,
    commits: Arc<std::sync::atomic::AtomicU64>,
}

impl Drop for WriteTx {
    fn drop(&mut self) {
        let Some(Held::Sqlite {
            mut writer,
            mut pooled,
            ..
        }) = self.held.take()
        else {
            // PostgreSQL: dropping the transaction rolls it back.
            return;
        };
        if !writer.open {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { WriteTx::abandon(&mut writer, &mut pooled).await });
        }
        // Without a runtime the writer stays marked open: the next unit rolls back first.
    }
}

impl Store {
    /// Begins a unit of work.
    pub(crate) async fn begin_write(&self) -> Result<WriteTx, StoreError> {
        let held = match self.engine {
            Engine::Sqlite => {
                let writer = self.writer.clone().lock_owned().await;
                let mut pooled = None;
                if writer.conn.is_none() {
                    pooled = Some(
                        self.pool
                            .acquire()
                            .await
                            .map_err(backend("taking the writer connection"))?,
                    );
                }
                let mut pending = String::new();
                if writer.open {
                    // A unit before this one was dropped midway: end its transaction.
                    pending.push_str("ROLLBACK;\n");
                }
                pending.push_str("BEGIN IMMEDIATE;\n");
                Held::Sqlite {
                    writer,
                    pooled,
                    pending,
                    args: Vec::new(),
                }
            }
            Engine::Postgres => Held::Postgres(
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

/// What a failed assertion ([`WriteTx::exec_cas`]) says, and how the unit's error is told
/// apart from others.
pub(crate) const ASSERTION: &str = "iris_unit_assertion";

/// Whether `error` is a unit's failed assertion: its compare-and-set changed nothing, and
/// nothing after it was written.
pub(crate) fn is_assertion(error: &StoreError) -> bool {
    matches!(error, StoreError::Backend(m) if m.contains(ASSERTION))
}

impl WriteTx {
    /// A compare-and-set (an `UPDATE` that changes one row or none) the rest of the unit
    /// depends on: when it changes nothing, the unit stops there with a failed assertion
    /// ([`is_assertion`]) and nothing after it is written. On SQLite it is queued with an
    /// assertion that travels in the same batch; on PostgreSQL it runs now and its `RETURNING`
    /// is checked.
    pub(crate) async fn exec_cas(
        &mut self,
        stmt: Stmt,
        doing: &'static str,
    ) -> Result<(), StoreError> {
        match self.held.as_mut().expect("a unit is held until it ends") {
            Held::Sqlite { pending, args, .. } => {
                append(pending, args, stmt);
                append(
                    pending,
                    args,
                    Stmt::new(
                        "INSERT INTO unit_assertions (failed) SELECT 'the compare-and-set \
                         changed nothing' WHERE changes() = 0",
                    ),
                );
                Ok(())
            }
            Held::Postgres(tx) => {
                let rows = run(&mut **tx, &format!("{} RETURNING 1", stmt.sql), stmt.args)
                    .await
                    .map_err(backend(doing))?;
                if rows.is_empty() {
                    return Err(StoreError::Backend(format!("{doing}: {ASSERTION}")));
                }
                Ok(())
            }
        }
    }

    /// Queues (SQLite) or runs (PostgreSQL) a statement whose rows are not needed.
    pub(crate) async fn exec(&mut self, stmt: Stmt, doing: &'static str) -> Result<(), StoreError> {
        match self.held.as_mut().expect("a unit is held until it ends") {
            Held::Sqlite { pending, args, .. } => {
                append(pending, args, stmt);
                Ok(())
            }
            Held::Postgres(tx) => run(&mut **tx, &stmt.sql, stmt.args)
                .await
                .map(|_| ())
                .map_err(backend(doing)),
        }
    }

    /// Runs `stmt` (on SQLite with everything queued before it, in one round trip): its rows.
    pub(crate) async fn fetch(
        &mut self,
        stmt: Stmt,
        doing: &'static str,
    ) -> Result<Vec<AnyRow>, StoreError> {
        match self.held.as_mut().expect("a unit is held until it ends") {
            Held::Sqlite {
                writer,
                pooled,
                pending,
                args,
            } => {
                append(pending, args, stmt);
                let sql = std::mem::take(pending);
                let args = std::mem::take(args);
                // From this send on, a transaction may be open on the writer.
                writer.open = true;
                let result = match (writer.conn.as_mut(), pooled.as_mut()) {
                    (Some(conn), _) => run(conn, &sql, args).await,
                    (None, Some(conn)) => run(&mut **conn, &sql, args).await,
                    (None, None) => unreachable!("a writer has a connection"),
                };
                match result {
                    Ok(rows) => Ok(rows),
                    Err(e) => {
                        Self::abandon(writer, pooled).await;
                        Err(backend(doing)(e))
                    }
                }
            }
            Held::Postgres(tx) => run(&mut **tx, &stmt.sql, stmt.args)
                .await
                .map_err(backend(doing)),
        }
    }

    /// Ends a failed SQLite unit: rolls back (the writer is left marked open if even that
    /// fails, so the next unit tries again).
    async fn abandon(
        writer: &mut tokio::sync::OwnedMutexGuard<Writer>,
        pooled: &mut Option<PoolConnection<Any>>,
    ) {
        let rolled_back = match (writer.conn.as_mut(), pooled.as_mut()) {
            (Some(conn), _) => run(conn, "ROLLBACK", Vec::new()).await,
            (None, Some(conn)) => run(&mut **conn, "ROLLBACK", Vec::new()).await,
            (None, None) => Ok(Vec::new()),
        };
        // "no transaction is active" also means it is over.
        if rolled_back.is_ok()
            || rolled_back
                .as_ref()
                .is_err_and(|e| e.to_string().contains("no transaction"))
        {
            writer.open = false;
        }
    }

    /// Commits everything (on SQLite the queued statements and the commit in one round trip).
    pub(crate) async fn commit(mut self) -> Result<(), StoreError> {
        match self.held.take().expect("a unit is held until it ends") {
            Held::Sqlite {
                mut writer,
                mut pooled,
                mut pending,
                args,
            } => {
                pending.push_str("COMMIT");
                writer.open = true;
                let result = match (writer.conn.as_mut(), pooled.as_mut()) {
                    (Some(conn), _) => run(conn, &pending, args).await,
                    (None, Some(conn)) => run(&mut **conn, &pending, args).await,
                    (None, None) => unreachable!("a writer has a connection"),
                };
                if let Err(e) = result {
                    Self::abandon(&mut writer, &mut pooled).await;
                    return Err(backend("committing a transaction")(e));
                }
                writer.open = false;
                let n = self.count_commit();
                if let Some(checkpoints) = &writer.checkpoints {
                    checkpoints.after_commit(n);
                }
            }
            Held::Postgres(tx) => {
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
            Held::Sqlite {
                mut writer,
                mut pooled,
                ..
            } => Self::abandon(&mut writer, &mut pooled).await,
            // Dropping the transaction rolls it back.
            Held::Postgres(tx) => {
                let _ = tx.rollback().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_renumbered_into_one_list() {
        let mut sql = String::new();
        let mut args = Vec::new();
        append(
            &mut sql,
            &mut args,
            Stmt::new("UPDATE t SET a = $1 WHERE b = $2")
                .text("x")
                .int(2),
        );
        append(
            &mut sql,
            &mut args,
            Stmt::new("INSERT INTO u VALUES ($2, $1, $10)")
                .text("p")
                .text("q"),
        );
        assert_eq!(
            sql,
            "UPDATE t SET a = $1 WHERE b = $2;\nINSERT INTO u VALUES ($4, $3, $12);\n"
        );
        assert_eq!(args.len(), 4);
    }

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
}
