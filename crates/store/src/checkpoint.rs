//! SQLite WAL checkpoints off the commit path. SQLite's own automatic checkpoint runs inside
//! the commit that crosses its threshold, so one commit in a few hundred waits for a copy of
//! the log into the database and its flush (milliseconds, where a commit is tens of µs). The
//! writer connection's automatic threshold is therefore raised to a backstop
//! ([`WRITER_AUTOCHECKPOINT_PAGES`]), and every [`CHECKPOINT_EVERY`] commits a `PASSIVE`
//! checkpoint runs on a pool connection in the background: it never blocks the writer, and a
//! checkpoint that cannot finish (a long reader) leaves the log to the next one or to the
//! backstop. Durability is unchanged: a commit is durable in the log either way.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sqlx::AnyPool;

/// Commits between two background checkpoints (a cycle's few commits write a few pages each,
/// so the log stays well under SQLite's default 1000-page threshold).
pub(crate) const CHECKPOINT_EVERY: u64 = 128;

/// The writer connection's automatic checkpoint threshold, in pages (about 40 MB of log at
/// 4 KiB pages): reached only when background checkpoints fall behind.
pub(crate) const WRITER_AUTOCHECKPOINT_PAGES: u32 = 10_000;

/// Background checkpoints of one SQLite file.
#[derive(Clone)]
pub(crate) struct Checkpoints {
    pool: AnyPool,
    running: Arc<AtomicBool>,
}

impl Checkpoints {
    pub(crate) fn new(pool: AnyPool) -> Checkpoints {
        Checkpoints {
            pool,
            running: Arc::default(),
        }
    }

    /// Called after the `n`th commit: starts a checkpoint every [`CHECKPOINT_EVERY`] commits,
    /// unless one is still running (or there is no runtime to run it on).
    pub(crate) fn after_commit(&self, n: u64) {
        if !n.is_multiple_of(CHECKPOINT_EVERY) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.running.swap(true, Ordering::AcqRel) {
            return;
        }
        let (pool, running) = (self.pool.clone(), self.running.clone());
        runtime.spawn(async move {
            if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                .execute(&pool)
                .await
            {
                // The log then grows until the next checkpoint or the writer's backstop.
                tracing::warn!(error = %e, "SQLite: a background WAL checkpoint failed");
            }
            running.store(false, Ordering::Release);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unit::Stmt;
    use crate::Store;

    /// Rows of `conversations` in the database file alone, as a copy without its log shows
    /// them: what checkpoints have written into the file. `None` while a copy is torn.
    async fn rows_in_the_file(db: &std::path::Path, copy: &std::path::Path) -> Option<i64> {
        std::fs::copy(db, copy).ok()?;
        let url = format!("sqlite://{}?mode=ro", copy.display());
        let pool = sqlx::AnyPool::connect(&url).await.ok()?;
        let n = sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM conversations")
            .fetch_one(&pool)
            .await
            .ok();
        pool.close().await;
        n
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_log_reaches_the_file_without_the_writer_checkpointing() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("wal.db");
        let store = Store::connect(&format!("sqlite://{}", db.display()))
            .await
            .unwrap();
        let commits = 3 * CHECKPOINT_EVERY;
        for i in 0..commits {
            let mut tx = store.begin_write().await.unwrap();
            tx.exec(
                Stmt::new(
                    "INSERT INTO conversations (id, transcript, created_at, updated_at) \
                     VALUES ($1, '[]', 'x', 'x')",
                )
                .text(&format!("c{i}")),
                "a conversation",
            )
            .await
            .unwrap();
            tx.commit().await.unwrap();
        }
        // The writer's own threshold (10 000 pages) is far away: only the background
        // checkpoints can have copied these rows into the file.
        let copy = dir.path().join("copy.db");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let n = rows_in_the_file(&db, &copy).await;
            if n.is_some_and(|n| n >= CHECKPOINT_EVERY as i64) {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no background checkpoint reached the file: {n:?} rows there after {commits} commits"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}
