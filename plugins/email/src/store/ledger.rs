//! The trashed ledger (`email_trashed`): a row per message written before it moves (state
//! `trashing`, [`LocalStore::ledger_begin`]), then its outcome (`trashed` with where it went,
//! `missing` or `failed`, [`LocalStore::ledger_trash_done`]) and `restored_at` once it came
//! back ([`LocalStore::ledger_restore_done`]). The rows still `trashing` or `trashed` are what a
//! batch's undo restores ([`LocalStore::batch_rows`]).

use chrono::{DateTime, Utc};

use super::{timestamp_text, LocalStore, MessageRow, TrashedRow};

/// One thing the plugin did in a conversation (`email_actions`), newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A trash batch (`email_trashed.batch_id`), begun at `at` (RFC 3339 text).
    Trash {
        /// The batch.
        batch: String,
        /// When it began.
        at: String,
    },
    /// A sent mail: `summary` says what and to whom.
    Send {
        /// "“Subject” to anna@example.org".
        summary: String,
        /// When it went out.
        at: String,
    },
}

/// The ledger states of a message still in Trash or on its way there.
const ACTIVE_STATES: &str = "('trashing', 'trashed')";

impl LocalStore {
    /// The newest ledger row of an id that is still in Trash (or on its way), if any.
    pub async fn trashed_row(&self, email_id: &str) -> Result<Option<TrashedRow>, sqlx::Error> {
        let sql = format!(
            "SELECT * FROM email_trashed WHERE email_id = $1 AND state IN {ACTIVE_STATES} \
             AND restored_at IS NULL ORDER BY seq DESC LIMIT 1"
        );
        {
            let pool = &self.db.pool;
            sqlx::query_as(&sql)
                .bind(email_id)
                .fetch_optional(pool)
                .await
        }
    }

    /// Writes the ledger rows of a batch before anything moves (state `trashing`), in one
    /// transaction committed before this returns; their `seq`s, in the order of `rows`.
    /// The batch is also recorded as `conversation`'s newest action ([`LocalStore::last_action`])
    /// when `conversation` is not empty.
    pub async fn ledger_begin(
        &self,
        batch: &str,
        rows: &[MessageRow],
        now: DateTime<Utc>,
        conversation: &str,
    ) -> Result<Vec<i64>, sqlx::Error> {
        let trashed_at = timestamp_text(now);
        {
            let pool = &self.db.pool;
            let mut tx = pool.begin().await?;
            if !conversation.is_empty() {
                sqlx::query(
                    "INSERT INTO email_actions (conversation_id, kind, batch_id, at) \
                     VALUES ($1, 'trash', $2, $3)",
                )
                .bind(conversation)
                .bind(batch)
                .bind(&trashed_at)
                .execute(&mut *tx)
                .await?;
            }
            let mut seqs = Vec::with_capacity(rows.len());
            for r in rows {
                let json = serde_json::to_string(r).unwrap_or_default();
                let seq: i64 = sqlx::query_scalar(
                    "INSERT INTO email_trashed (email_id, account, batch_id, state, provider_key, \
                     original_folder, original_location, message_id, subject, from_name, \
                     from_address, date_unix, row_json, trashed_at) \
                     VALUES ($1, $2, $3, 'trashing', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
                     RETURNING seq",
                )
                .bind(&r.id)
                .bind(&r.account)
                .bind(batch)
                .bind(&r.provider_key)
                .bind(&r.folder)
                .bind(&r.location)
                .bind(&r.message_id)
                .bind(&r.subject)
                .bind(&r.from_name)
                .bind(&r.from_address)
                .bind(r.date_unix)
                .bind(json)
                .bind(&trashed_at)
                .fetch_one(&mut *tx)
                .await?;
                seqs.push(seq);
            }
            tx.commit().await?;
            Ok(seqs)
        }
    }

    /// Records trash outcomes in one transaction: each ledger row's state, and the message
    /// leaves `email_messages` when it is no longer in its folder (moved, or already gone).
    pub async fn ledger_trash_done(
        &self,
        done: &[(i64, String, TrashDone)],
    ) -> Result<(), sqlx::Error> {
        {
            let pool = &self.db.pool;
            let mut tx = pool.begin().await?;
            for (seq, email_id, outcome) in done {
                let (state, trash_location, leaves) = match outcome {
                    TrashDone::Trashed {
                        original_location,
                        trash_location,
                    } => {
                        sqlx::query(
                            "UPDATE email_trashed SET original_location = $1 WHERE seq = $2",
                        )
                        .bind(original_location)
                        .bind(seq)
                        .execute(&mut *tx)
                        .await?;
                        ("trashed", trash_location.as_str(), true)
                    }
                    TrashDone::Missing => ("missing", "", true),
                    TrashDone::Failed => ("failed", "", false),
                };
                sqlx::query(
                    "UPDATE email_trashed SET state = $1, trash_location = $2 WHERE seq = $3",
                )
                .bind(state)
                .bind(trash_location)
                .bind(seq)
                .execute(&mut *tx)
                .await?;
                if leaves {
                    sqlx::query("DELETE FROM email_messages WHERE id = $1")
                        .bind(email_id)
                        .execute(&mut *tx)
                        .await?;
                }
            }
            tx.commit().await
        }
    }

    /// Records that `conversation` sent a mail (`summary`: its subject and recipients).
    pub async fn record_send(
        &self,
        conversation: &str,
        summary: &str,
        now: DateTime<Utc>,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO email_actions (conversation_id, kind, summary, at) \
             VALUES ($1, 'send', $2, $3)",
        )
        .bind(conversation)
        .bind(summary)
        .bind(timestamp_text(now))
        .execute(&self.db.pool)
        .await
        .map(|_| ())
    }

    /// `conversation`'s newest action, if it has one.
    pub async fn last_action(&self, conversation: &str) -> Result<Option<Action>, sqlx::Error> {
        let row: Option<(String, Option<String>, String, String)> = sqlx::query_as(
            "SELECT kind, batch_id, summary, at FROM email_actions WHERE conversation_id = $1 \
             ORDER BY seq DESC LIMIT 1",
        )
        .bind(conversation)
        .fetch_optional(&self.db.pool)
        .await?;
        Ok(
            row.map(|(kind, batch, summary, at)| match (kind.as_str(), batch) {
                ("trash", Some(batch)) => Action::Trash { batch, at },
                _ => Action::Send { summary, at },
            }),
        )
    }

    /// When batch `batch` was restored (its newest `restored_at`), if any of it was.
    pub async fn batch_restored_at(&self, batch: &str) -> Result<Option<String>, sqlx::Error> {
        sqlx::query_scalar("SELECT MAX(restored_at) FROM email_trashed WHERE batch_id = $1")
            .bind(batch)
            .fetch_one(&self.db.pool)
            .await
    }

    /// A batch's rows still in Trash, in trash order.
    pub async fn batch_rows(&self, batch: &str) -> Result<Vec<TrashedRow>, sqlx::Error> {
        let sql = format!(
            "SELECT * FROM email_trashed WHERE batch_id = $1 AND state IN {ACTIVE_STATES} \
             AND restored_at IS NULL ORDER BY seq"
        );
        {
            let pool = &self.db.pool;
            sqlx::query_as(&sql).bind(batch).fetch_all(pool).await
        }
    }

    /// Records restore outcomes in one transaction; a restored message's row comes back into
    /// `email_messages` exactly as it was (same id), at its new location.
    pub async fn ledger_restore_done(
        &self,
        done: &[(TrashedRow, RestoreDone)],
        now: DateTime<Utc>,
    ) -> Result<(), sqlx::Error> {
        let restored_at = timestamp_text(now);
        {
            let pool = &self.db.pool;
            let mut tx = pool.begin().await?;
            for (row, outcome) in done {
                match outcome {
                    RestoreDone::Restored { location, key } => {
                        sqlx::query(
                            "UPDATE email_trashed SET state = 'restored', restored_at = $1 \
                             WHERE seq = $2",
                        )
                        .bind(&restored_at)
                        .bind(row.seq)
                        .execute(&mut *tx)
                        .await?;
                        if let Ok(mut msg) = serde_json::from_str::<MessageRow>(&row.row_json) {
                            msg.location = location.clone();
                            msg.folder = row.original_folder.clone();
                            if let Some(key) = key {
                                // IMAP gives a restored message a new UID: the row follows it,
                                // so the next sync finds it in place (same id).
                                msg.provider_key = key.clone();
                            }
                            // A sync may have picked the file up already (another client
                            // restored it first): replace that row so the id stays the one the
                            // model knows.
                            sqlx::query(
                                "DELETE FROM email_messages WHERE id = $1 \
                                 OR (account = $2 AND folder = $3 AND provider_key = $4)",
                            )
                            .bind(&msg.id)
                            .bind(&msg.account)
                            .bind(&msg.folder)
                            .bind(&msg.provider_key)
                            .execute(&mut *tx)
                            .await?;
                            insert_message!(&mut *tx, &msg)?;
                        }
                    }
                    RestoreDone::Missing => {
                        sqlx::query("UPDATE email_trashed SET state = 'missing' WHERE seq = $1")
                            .bind(row.seq)
                            .execute(&mut *tx)
                            .await?;
                    }
                    RestoreDone::Failed => {}
                }
            }
            tx.commit().await
        }
    }
}

/// How a restore attempt ended, for the ledger.
#[derive(Debug, Clone)]
pub(crate) enum RestoreDone {
    Restored {
        location: String,
        /// The provider key after the move, when it changed (IMAP).
        key: Option<String>,
    },
    Missing,
    Failed,
}

/// How a trash attempt ended, for the ledger.
#[derive(Debug, Clone)]
pub(crate) enum TrashDone {
    Trashed {
        original_location: String,
        trash_location: String,
    },
    Missing,
    Failed,
}
