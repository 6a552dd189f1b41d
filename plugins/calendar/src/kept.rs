//! The kept copies (table `calendar_kept`, migrations `migrations/*/0030_calendar_kept.sql`):
//! what `delete_events` removed, byte for byte, so `restore_events` can put it back. Plain SQL
//! with `$1` placeholders on the project's one pool, either engine (sqlx's `Any` driver).
//!
//! States: `deleting` (written before the delete is sent), `deleted`, `restored`. A row whose
//! delete did not happen (changed since the card, or already gone) is removed: nothing was kept
//! because nothing was taken.

use base64ct::{Base64, Encoding};
use chrono::{DateTime, Utc};
use iris_store::timestamp_text;
use sqlx::AnyPool;

/// One kept event.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct KeptRow {
    /// The batch (one `delete_events` call).
    pub batch_id: String,
    /// The event's id (see [`crate::id`]).
    pub event_id: String,
    /// The conversation the call ran in ("undo that" looks there).
    pub conversation_id: String,
    /// The account.
    pub account: String,
    /// The calendar's href and name.
    pub calendar_href: String,
    /// The calendar's display name when it was deleted.
    pub calendar_name: String,
    /// The resource's href.
    pub href: String,
    /// Its UID, when it had one.
    pub uid: Option<String>,
    /// Its ETag when it was deleted.
    pub etag: String,
    /// Its bytes, base64.
    pub bytes_b64: String,
    /// Its summary, for lines and results.
    pub summary: String,
    /// `deleting`, `deleted` or `restored`.
    pub state: String,
    /// When it was deleted (RFC 3339).
    pub deleted_at: String,
    /// When it was restored.
    pub restored_at: Option<String>,
}

impl KeptRow {
    /// The exact bytes kept; `None` when the stored text is not base64 (a damaged row).
    pub fn bytes(&self) -> Option<Vec<u8>> {
        Base64::decode_vec(&self.bytes_b64).ok()
    }

    /// Encodes `bytes` for [`KeptRow::bytes_b64`].
    pub fn encode(bytes: &[u8]) -> String {
        Base64::encode_string(bytes)
    }
}

const COLUMNS: &str =
    "batch_id, event_id, conversation_id, account, calendar_href, calendar_name, \
     href, uid, etag, bytes_b64, summary, state, deleted_at, restored_at";

/// The table's reads and writes.
#[derive(Debug, Clone)]
pub struct Kept {
    pool: AnyPool,
}

impl Kept {
    /// Over the project's store (its migrations ran on connect).
    pub fn of(store: &iris_store::Store) -> Self {
        Kept {
            pool: store.pool().clone(),
        }
    }

    /// Writes `row` in state `deleting`, before the delete is sent.
    ///
    /// # Errors
    /// The database's.
    pub async fn insert_deleting(&self, row: &KeptRow) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO calendar_kept (batch_id, event_id, conversation_id, account, \
             calendar_href, calendar_name, href, uid, etag, bytes_b64, summary, state, \
             deleted_at, restored_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'deleting', $12, NULL)",
        )
        .bind(&row.batch_id)
        .bind(&row.event_id)
        .bind(&row.conversation_id)
        .bind(&row.account)
        .bind(&row.calendar_href)
        .bind(&row.calendar_name)
        .bind(&row.href)
        .bind(row.uid.clone())
        .bind(&row.etag)
        .bind(&row.bytes_b64)
        .bind(&row.summary)
        .bind(&row.deleted_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Marks the event of `batch` deleted.
    ///
    /// # Errors
    /// The database's.
    pub async fn mark_deleted(&self, batch: &str, event: &str) -> Result<(), sqlx::Error> {
        sqlx::query(
            "UPDATE calendar_kept SET state = 'deleted' \
             WHERE batch_id = $1 AND event_id = $2 AND state = 'deleting'",
        )
        .bind(batch)
        .bind(event)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Drops the row of an event the delete left alone.
    ///
    /// # Errors
    /// The database's.
    pub async fn forget(&self, batch: &str, event: &str) -> Result<(), sqlx::Error> {
        sqlx::query(
            "DELETE FROM calendar_kept WHERE batch_id = $1 AND event_id = $2 AND state = 'deleting'",
        )
        .bind(batch)
        .bind(event)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Marks a kept event restored at `at`; `false` when it was not in state `deleted` or
    /// `deleting` (a crash left it there; restored already: a batch is restored once).
    ///
    /// # Errors
    /// The database's.
    pub async fn mark_restored(
        &self,
        batch: &str,
        event: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, sqlx::Error> {
        let done = sqlx::query(
            "UPDATE calendar_kept SET state = 'restored', restored_at = $3 \
             WHERE batch_id = $1 AND event_id = $2 AND state IN ('deleted', 'deleting')",
        )
        .bind(batch)
        .bind(event)
        .bind(timestamp_text(at))
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The newest batch deleted in `conversation` (any state), with its rows.
    ///
    /// # Errors
    /// The database's.
    pub async fn last_batch(&self, conversation: &str) -> Result<Vec<KeptRow>, sqlx::Error> {
        let newest: Option<(String,)> = sqlx::query_as(
            "SELECT batch_id FROM calendar_kept WHERE conversation_id = $1 \
             ORDER BY deleted_at DESC, batch_id DESC LIMIT 1",
        )
        .bind(conversation)
        .fetch_optional(&self.pool)
        .await?;
        let Some((batch,)) = newest else {
            return Ok(Vec::new());
        };
        sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM calendar_kept WHERE batch_id = $1 ORDER BY event_id"
        ))
        .bind(batch)
        .fetch_all(&self.pool)
        .await
    }

    /// The newest kept row of `event`, any state.
    ///
    /// # Errors
    /// The database's.
    pub async fn newest_of(&self, event: &str) -> Result<Option<KeptRow>, sqlx::Error> {
        sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM calendar_kept WHERE event_id = $1 \
             ORDER BY deleted_at DESC LIMIT 1"
        ))
        .bind(event)
        .fetch_optional(&self.pool)
        .await
    }
}
