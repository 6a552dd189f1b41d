//! The incremental sync marks per (account, folder): table `email_sync_state`
//! (`migrations/sqlite/0012_email_sync_state.sql`, `migrations/postgres/0012_email_sync_state.sql`).
//!
//! A provider that reports [`FolderStatus`] (IMAP: UIDVALIDITY, UIDNEXT, MESSAGES) gets one row
//! per folder, written after the sync applied that folder's rows; `sync.rs` compares the next
//! status with it to skip unchanged folders. Statements use `$1` placeholders, accepted by sqlx on
//! both engines.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use crate::backend::FolderStatus;
use crate::store::LocalStore;

/// The marks an account's folders had at their last complete sync, by folder name.
pub(crate) async fn load(
    store: &LocalStore,
    account: &str,
) -> Result<HashMap<String, FolderStatus>, sqlx::Error> {
    const SQL: &str = "SELECT folder, validity, next_key, message_count FROM email_sync_state \
                       WHERE account = $1";
    let rows: Vec<(String, i64, i64, i64)> = sqlx::query_as(SQL)
        .bind(account)
        .fetch_all(&store.db().pool)
        .await?;
    // Marks are written from u64s that fit i64 (IMAP's are 32-bit); a negative value read back
    // would be a corrupt row: it maps to u64::MAX, which never equals a real mark, so the folder
    // is listed again (fail safe, never skipped).
    let mark = |v: i64| u64::try_from(v).unwrap_or(u64::MAX);
    Ok(rows
        .into_iter()
        .map(|(folder, v, n, c)| {
            (
                folder,
                FolderStatus {
                    validity: mark(v),
                    next: mark(n),
                    count: mark(c),
                },
            )
        })
        .collect())
}

/// Records the marks of folders whose rows the store now reflects (insert or replace).
pub(crate) async fn save(
    store: &LocalStore,
    account: &str,
    marks: &[(String, FolderStatus)],
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    if marks.is_empty() {
        return Ok(());
    }
    const SQL: &str = "INSERT INTO email_sync_state \
                       (account, folder, validity, next_key, message_count, synced_at) \
                       VALUES ($1, $2, $3, $4, $5, $6) \
                       ON CONFLICT (account, folder) DO UPDATE SET validity = excluded.validity, \
                       next_key = excluded.next_key, message_count = excluded.message_count, \
                       synced_at = excluded.synced_at";
    let at = iris_store::timestamp_text(now);
    // A mark beyond i64 cannot be stored faithfully: store -1, which never matches (see load).
    let col = |v: u64| i64::try_from(v).unwrap_or(-1);
    let mut tx = store.db().pool.begin().await?;
    for (folder, s) in marks {
        sqlx::query(SQL)
            .bind(account)
            .bind(folder)
            .bind(col(s.validity))
            .bind(col(s.next))
            .bind(col(s.count))
            .bind(&at)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await
}
