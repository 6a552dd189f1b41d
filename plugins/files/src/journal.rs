//! The journal (table `files_journal`, migrations `migrations/*/0031_files_journal.sql`): one
//! row per entry a `quarantine_files` batch moves, written before the move (ADR-0067), so a
//! crash at any point leaves a row saying where to look. Plain SQL with `$1` placeholders on the
//! project's one pool, either engine (sqlx's `Any` driver).
//!
//! States: `moving` (written before the move), `quarantined` (moved and flushed), `restored`,
//! `purged`. An entry the batch left alone (changed since the card, on another file system,
//! gone) loses its row: nothing was taken.

use chrono::{DateTime, Utc};
use iris_store::timestamp_text;
use sqlx::AnyPool;

/// One journal row.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct JournalRow {
    /// The batch (one `quarantine_files` call); also the folder name inside the quarantine.
    pub batch_id: String,
    /// The entry's id (`ROOT/relative/path`).
    pub entry_id: String,
    /// The conversation the call ran in ("undo that" looks there).
    pub conversation_id: String,
    /// The root's name.
    pub root: String,
    /// Where it is in quarantine, relative to the root (id-encoded).
    pub quarantine_rel: String,
    /// "file", "folder", "link" or "other".
    pub kind: String,
    /// Its size when moved (a folder's total), bytes.
    pub size: i64,
    /// Its device number, decimal.
    pub dev: String,
    /// Its inode number, decimal.
    pub ino: String,
    /// `moving`, `quarantined`, `restored` or `purged`.
    pub state: String,
    /// When the move was written (RFC 3339).
    pub moved_at: String,
    /// When it was restored.
    pub restored_at: Option<String>,
    /// When it was deleted for good.
    pub purged_at: Option<String>,
}

impl JournalRow {
    /// The quarantined entry's id (`ROOT/.iris-quarantine/BATCH/relative/path`): what
    /// `list_quarantine` returns and `purge_quarantine` takes.
    pub fn quarantine_id(&self) -> String {
        format!("{}/{}", self.root, self.quarantine_rel)
    }
}

const COLUMNS: &str = "batch_id, entry_id, conversation_id, root, quarantine_rel, kind, size, \
     dev, ino, state, moved_at, restored_at, purged_at";

/// The table's reads and writes.
#[derive(Debug, Clone)]
pub struct Journal {
    pool: AnyPool,
}

impl Journal {
    /// Over the project's store (its migrations ran on connect).
    pub fn of(store: &iris_store::Store) -> Self {
        Journal {
            pool: store.pool().clone(),
        }
    }

    /// Writes `row` in state `moving`, before the move.
    ///
    /// # Errors
    /// The database's.
    pub async fn insert_moving(&self, row: &JournalRow) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO files_journal (batch_id, entry_id, conversation_id, root, \
             quarantine_rel, kind, size, dev, ino, state, moved_at, restored_at, purged_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'moving', $10, NULL, NULL)",
        )
        .bind(&row.batch_id)
        .bind(&row.entry_id)
        .bind(&row.conversation_id)
        .bind(&row.root)
        .bind(&row.quarantine_rel)
        .bind(&row.kind)
        .bind(row.size)
        .bind(&row.dev)
        .bind(&row.ino)
        .bind(&row.moved_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Moves the row of `entry` in `batch` from state `from` to `to`, stamping `restored_at` or
    /// `purged_at` with `at` for those states; `false` when it was not in `from`.
    ///
    /// # Errors
    /// The database's.
    pub async fn advance(
        &self,
        batch: &str,
        entry: &str,
        from: &str,
        to: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, sqlx::Error> {
        let stamp = match to {
            "restored" => Some("restored_at"),
            "purged" => Some("purged_at"),
            _ => None,
        };
        let sql = match stamp {
            Some(column) => format!(
                "UPDATE files_journal SET state = $4, {column} = $5 \
                 WHERE batch_id = $1 AND entry_id = $2 AND state = $3"
            ),
            None => "UPDATE files_journal SET state = $4 \
                 WHERE batch_id = $1 AND entry_id = $2 AND state = $3"
                .to_string(),
        };
        let mut query = sqlx::query(&sql)
            .bind(batch)
            .bind(entry)
            .bind(from)
            .bind(to);
        if stamp.is_some() {
            query = query.bind(timestamp_text(at));
        }
        let done = query.execute(&self.pool).await?;
        Ok(done.rows_affected() == 1)
    }

    /// Drops the row of an entry the batch left alone (state `moving` only).
    ///
    /// # Errors
    /// The database's.
    pub async fn forget(&self, batch: &str, entry: &str) -> Result<(), sqlx::Error> {
        sqlx::query(
            "DELETE FROM files_journal WHERE batch_id = $1 AND entry_id = $2 AND state = 'moving'",
        )
        .bind(batch)
        .bind(entry)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The newest batch moved in `conversation` (any state), with its rows.
    ///
    /// # Errors
    /// The database's.
    pub async fn last_batch(&self, conversation: &str) -> Result<Vec<JournalRow>, sqlx::Error> {
        let newest: Option<(String,)> = sqlx::query_as(
            "SELECT batch_id FROM files_journal WHERE conversation_id = $1 \
             ORDER BY moved_at DESC, batch_id DESC LIMIT 1",
        )
        .bind(conversation)
        .fetch_optional(&self.pool)
        .await?;
        let Some((batch,)) = newest else {
            return Ok(Vec::new());
        };
        self.batch(&batch).await
    }

    /// Every row of `batch`, by entry id.
    ///
    /// # Errors
    /// The database's.
    pub async fn batch(&self, batch: &str) -> Result<Vec<JournalRow>, sqlx::Error> {
        sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM files_journal WHERE batch_id = $1 ORDER BY entry_id"
        ))
        .bind(batch)
        .fetch_all(&self.pool)
        .await
    }

    /// The newest row of `entry` (its original id), any state.
    ///
    /// # Errors
    /// The database's.
    pub async fn newest_of(&self, entry: &str) -> Result<Option<JournalRow>, sqlx::Error> {
        sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM files_journal WHERE entry_id = $1 \
             ORDER BY moved_at DESC, batch_id DESC LIMIT 1"
        ))
        .bind(entry)
        .fetch_optional(&self.pool)
        .await
    }

    /// The row whose quarantined entry is `quarantine_rel` in `root`.
    ///
    /// # Errors
    /// The database's.
    pub async fn by_quarantine(
        &self,
        root: &str,
        quarantine_rel: &str,
    ) -> Result<Option<JournalRow>, sqlx::Error> {
        sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM files_journal WHERE root = $1 AND quarantine_rel = $2 \
             ORDER BY moved_at DESC LIMIT 1"
        ))
        .bind(root)
        .bind(quarantine_rel)
        .fetch_optional(&self.pool)
        .await
    }

    /// Every row of `root` still in its quarantine (`quarantined`, or `moving` when a crash left
    /// it), oldest first.
    ///
    /// # Errors
    /// The database's.
    pub async fn in_quarantine(&self, root: &str) -> Result<Vec<JournalRow>, sqlx::Error> {
        sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM files_journal WHERE root = $1 \
             AND state IN ('quarantined', 'moving') ORDER BY moved_at, entry_id"
        ))
        .bind(root)
        .fetch_all(&self.pool)
        .await
    }
}
