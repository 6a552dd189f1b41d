//! The local store: the synced headers searches and cards read, and the trashed ledger
//! (tables `email_messages` and `email_trashed`, migration `migrations/sqlite/0002_email.sql`).
//!
//! Everything here is SQL over the project's SQLite pool; the rules of what goes in live in
//! `sync.rs` (which messages) and the tool modules (trash and restore).

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::{QueryBuilder, Sqlite, SqlitePool};

use crate::category::Category;
use crate::id;

/// One row of `email_messages`; also the JSON snapshot the ledger keeps for restore.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub(crate) struct MessageRow {
    pub id: String,
    pub account: String,
    pub folder: String,
    pub provider_key: String,
    pub location: String,
    pub message_id: Option<String>,
    pub in_reply_to: Option<String>,
    /// JSON array of message ids.
    pub refs: String,
    pub thread_id: String,
    pub subject: String,
    pub from_name: Option<String>,
    pub from_address: Option<String>,
    /// JSON array of `Person`.
    pub to_addrs: String,
    /// JSON array of `Person`.
    pub cc_addrs: String,
    pub date_unix: Option<i64>,
    pub snippet: String,
    pub category: String,
    pub search_text: String,
    pub synced_at: String,
}

impl MessageRow {
    /// The Date header as a UTC time.
    pub fn date(&self) -> Option<DateTime<Utc>> {
        self.date_unix.and_then(|s| DateTime::from_timestamp(s, 0))
    }

    /// "Name <address>", the name alone, the address alone, or "unknown sender".
    pub fn sender_display(&self) -> String {
        match (&self.from_name, &self.from_address) {
            (Some(n), Some(a)) => format!("{n} <{a}>"),
            (Some(n), None) => n.clone(),
            (None, Some(a)) => a.clone(),
            (None, None) => "unknown sender".into(),
        }
    }
}

/// One row of `email_trashed`.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub(crate) struct TrashedRow {
    pub seq: i64,
    pub email_id: String,
    pub account: String,
    pub batch_id: String,
    pub state: String,
    pub provider_key: String,
    pub original_folder: String,
    pub original_location: String,
    pub trash_location: String,
    pub subject: String,
    pub from_name: Option<String>,
    pub from_address: Option<String>,
    pub row_json: String,
    pub trashed_at: String,
}

/// What the store knows of one message during a sync.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct KnownKey {
    pub id: String,
    pub folder: String,
    pub provider_key: String,
    pub location: String,
}

/// A search over `email_messages`.
#[derive(Debug, Clone, Default)]
pub(crate) struct SearchQuery {
    /// Lower-cased words; every one must occur in `search_text`.
    pub words: Vec<String>,
    pub category: Option<Category>,
    /// Only messages dated at or after this Unix second.
    pub since_unix: Option<i64>,
    pub limit: u32,
}

/// The SQL side of the plugin.
#[derive(Debug, Clone)]
pub(crate) struct LocalStore {
    pool: SqlitePool,
}

const ACTIVE_STATES: &str = "('trashing', 'trashed')";

impl LocalStore {
    pub fn new(pool: SqlitePool) -> Self {
        LocalStore { pool }
    }

    /// Every message of an account, as keys.
    pub async fn known_keys(&self, account: &str) -> Result<Vec<KnownKey>, sqlx::Error> {
        sqlx::query_as(
            "SELECT id, folder, provider_key, location FROM email_messages WHERE account = ?",
        )
        .bind(account)
        .fetch_all(&self.pool)
        .await
    }

    /// Every id in use, all accounts (ids are one namespace).
    pub async fn all_ids(&self) -> Result<HashSet<String>, sqlx::Error> {
        let ids: Vec<(String,)> = sqlx::query_as("SELECT id FROM email_messages")
            .fetch_all(&self.pool)
            .await?;
        Ok(ids.into_iter().map(|(i,)| i).collect())
    }

    /// Applies one account's sync in one transaction.
    pub async fn apply_sync(
        &self,
        inserts: &[MessageRow],
        removes: &[String],
        moves: &[(String, String, String)],
    ) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        for id in removes {
            sqlx::query("DELETE FROM email_messages WHERE id = ?")
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        for (id, folder, location) in moves {
            sqlx::query("UPDATE email_messages SET folder = ?, location = ? WHERE id = ?")
                .bind(folder)
                .bind(location)
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        for r in inserts {
            insert_row(&mut tx, r).await?;
        }
        tx.commit().await
    }

    /// Records where a listing found messages that did not change otherwise (new/ → cur/).
    pub async fn update_locations(&self, locs: &[(String, String)]) -> Result<(), sqlx::Error> {
        if locs.is_empty() {
            return Ok(());
        }
        let mut tx = self.pool.begin().await?;
        for (id, location) in locs {
            sqlx::query("UPDATE email_messages SET location = ? WHERE id = ?")
                .bind(location)
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await
    }

    /// Recomputes an account's thread ids.
    ///
    /// Messages are linked through Message-ID, In-Reply-To and every References entry (a
    /// union-find over message ids, so a reply links even when only In-Reply-To is present and
    /// its parent's own parent is missing). A thread's representative is the Message-ID of its
    /// oldest message (by date, then id), so a new reply never renames the thread.
    pub async fn recompute_threads(&self, account: &str) -> Result<(), sqlx::Error> {
        #[derive(sqlx::FromRow)]
        struct T {
            id: String,
            message_id: Option<String>,
            in_reply_to: Option<String>,
            refs: String,
            thread_id: String,
            date_unix: Option<i64>,
        }
        let rows: Vec<T> = sqlx::query_as(
            "SELECT id, message_id, in_reply_to, refs, thread_id, date_unix FROM email_messages WHERE account = ?",
        )
        .bind(account)
        .fetch_all(&self.pool)
        .await?;
        let mut uf = UnionFind::default();
        let node_of = |t: &T| t.message_id.clone().unwrap_or_else(|| format!("@{}", t.id));
        for t in &rows {
            let me = uf.node(&node_of(t));
            let refs: Vec<String> = serde_json::from_str(&t.refs).unwrap_or_default();
            for other in refs.iter().chain(t.in_reply_to.iter()) {
                let o = uf.node(other);
                uf.union(me, o);
            }
        }
        // Oldest message per component; undated messages sort last.
        let mut rep: HashMap<usize, (i64, String, String)> = HashMap::new();
        for t in &rows {
            let node = node_of(t);
            let root = uf.find_name(&node);
            let key = (t.date_unix.unwrap_or(i64::MAX), t.id.clone(), node);
            rep.entry(root)
                .and_modify(|cur| {
                    if key < *cur {
                        *cur = key.clone();
                    }
                })
                .or_insert(key);
        }
        let mut changes = Vec::new();
        for t in &rows {
            let root = uf.find_name(&node_of(t));
            if let Some((_, _, rep_node)) = rep.get(&root) {
                let tid = id::thread_id(account, rep_node);
                if tid != t.thread_id {
                    changes.push((t.id.clone(), tid));
                }
            }
        }
        if changes.is_empty() {
            return Ok(());
        }
        let mut tx = self.pool.begin().await?;
        for (id, tid) in changes {
            sqlx::query("UPDATE email_messages SET thread_id = ? WHERE id = ?")
                .bind(tid)
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await
    }

    /// Number of messages an account has in the store.
    pub async fn count(&self, account: &str) -> Result<i64, sqlx::Error> {
        let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM email_messages WHERE account = ?")
            .bind(account)
            .fetch_one(&self.pool)
            .await?;
        Ok(n)
    }

    /// One message by id.
    pub async fn get(&self, id: &str) -> Result<Option<MessageRow>, sqlx::Error> {
        sqlx::query_as("SELECT * FROM email_messages WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
    }

    /// Newest first, at most `limit`; with the number of all matches.
    pub async fn search(&self, q: &SearchQuery) -> Result<(Vec<MessageRow>, i64), sqlx::Error> {
        fn filters(b: &mut QueryBuilder<'_, Sqlite>, q: &SearchQuery) {
            b.push(" WHERE 1 = 1");
            if let Some(c) = q.category {
                b.push(" AND category = ").push_bind(c.as_str());
            }
            if let Some(since) = q.since_unix {
                b.push(" AND date_unix >= ").push_bind(since);
            }
            for w in &q.words {
                b.push(" AND instr(search_text, ")
                    .push_bind(w.clone())
                    .push(") > 0");
            }
        }
        let mut b = QueryBuilder::<Sqlite>::new("SELECT * FROM email_messages");
        filters(&mut b, q);
        b.push(" ORDER BY date_unix IS NULL, date_unix DESC, id LIMIT ")
            .push_bind(i64::from(q.limit));
        let rows: Vec<MessageRow> = b.build_query_as().fetch_all(&self.pool).await?;
        let mut c = QueryBuilder::<Sqlite>::new("SELECT COUNT(*) FROM email_messages");
        filters(&mut c, q);
        let (total,): (i64,) = c.build_query_as().fetch_one(&self.pool).await?;
        Ok((rows, total))
    }

    /// The newest ledger row of an id that is still in Trash (or on its way), if any.
    pub async fn trashed_row(&self, email_id: &str) -> Result<Option<TrashedRow>, sqlx::Error> {
        sqlx::query_as(&format!(
            "SELECT * FROM email_trashed WHERE email_id = ? AND state IN {ACTIVE_STATES} AND restored_at IS NULL ORDER BY seq DESC LIMIT 1"
        ))
        .bind(email_id)
        .fetch_optional(&self.pool)
        .await
    }

    /// Writes the ledger rows of a batch before anything moves (state `trashing`).
    pub async fn ledger_begin(
        &self,
        batch: &str,
        rows: &[MessageRow],
        now: DateTime<Utc>,
    ) -> Result<Vec<i64>, sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        let mut seqs = Vec::with_capacity(rows.len());
        for r in rows {
            let json = serde_json::to_string(r).unwrap_or_default();
            let res = sqlx::query(
                "INSERT INTO email_trashed (email_id, account, batch_id, state, provider_key, original_folder, original_location, message_id, subject, from_name, from_address, date_unix, row_json, trashed_at)
                 VALUES (?, ?, ?, 'trashing', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
            .bind(now.to_rfc3339())
            .execute(&mut *tx)
            .await?;
            seqs.push(res.last_insert_rowid());
        }
        tx.commit().await?;
        Ok(seqs)
    }

    /// Records a trash outcome: the ledger row's state, and the message leaves `email_messages`
    /// when it is no longer in its folder (moved, or already gone).
    pub async fn ledger_trash_done(
        &self,
        done: &[(i64, String, TrashDone)],
    ) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        for (seq, email_id, outcome) in done {
            let (state, trash_location, leaves) = match outcome {
                TrashDone::Trashed {
                    original_location,
                    trash_location,
                } => {
                    sqlx::query("UPDATE email_trashed SET original_location = ? WHERE seq = ?")
                        .bind(original_location)
                        .bind(seq)
                        .execute(&mut *tx)
                        .await?;
                    ("trashed", trash_location.as_str(), true)
                }
                TrashDone::Missing => ("missing", "", true),
                TrashDone::Failed => ("failed", "", false),
            };
            sqlx::query("UPDATE email_trashed SET state = ?, trash_location = ? WHERE seq = ?")
                .bind(state)
                .bind(trash_location)
                .bind(seq)
                .execute(&mut *tx)
                .await?;
            if leaves {
                sqlx::query("DELETE FROM email_messages WHERE id = ?")
                    .bind(email_id)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        tx.commit().await
    }

    /// The most recent batch with a message still in Trash.
    pub async fn last_batch(&self) -> Result<Option<String>, sqlx::Error> {
        let row: Option<(String,)> = sqlx::query_as(&format!(
            "SELECT batch_id FROM email_trashed WHERE state IN {ACTIVE_STATES} AND restored_at IS NULL ORDER BY seq DESC LIMIT 1"
        ))
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|(b,)| b))
    }

    /// A batch's rows still in Trash, in trash order.
    pub async fn batch_rows(&self, batch: &str) -> Result<Vec<TrashedRow>, sqlx::Error> {
        sqlx::query_as(&format!(
            "SELECT * FROM email_trashed WHERE batch_id = ? AND state IN {ACTIVE_STATES} AND restored_at IS NULL ORDER BY seq"
        ))
        .bind(batch)
        .fetch_all(&self.pool)
        .await
    }

    /// Records a restore outcome; a restored message's row comes back into `email_messages`
    /// exactly as it was (same id), at its new location.
    pub async fn ledger_restore_done(
        &self,
        done: &[(TrashedRow, RestoreDone)],
        now: DateTime<Utc>,
    ) -> Result<(), sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        for (row, outcome) in done {
            match outcome {
                RestoreDone::Restored { location } => {
                    sqlx::query(
                        "UPDATE email_trashed SET state = 'restored', restored_at = ? WHERE seq = ?",
                    )
                    .bind(now.to_rfc3339())
                    .bind(row.seq)
                    .execute(&mut *tx)
                    .await?;
                    if let Ok(mut msg) = serde_json::from_str::<MessageRow>(&row.row_json) {
                        msg.location = location.clone();
                        msg.folder = row.original_folder.clone();
                        // A sync may have picked the file up already (another client restored
                        // it first): replace that row so the id stays the one the model knows.
                        sqlx::query(
                            "DELETE FROM email_messages WHERE id = ? OR (account = ? AND folder = ? AND provider_key = ?)",
                        )
                        .bind(&msg.id)
                        .bind(&msg.account)
                        .bind(&msg.folder)
                        .bind(&msg.provider_key)
                        .execute(&mut *tx)
                        .await?;
                        insert_row(&mut tx, &msg).await?;
                    }
                }
                RestoreDone::Missing => {
                    sqlx::query("UPDATE email_trashed SET state = 'missing' WHERE seq = ?")
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

/// How a restore attempt ended, for the ledger.
#[derive(Debug, Clone)]
pub(crate) enum RestoreDone {
    Restored { location: String },
    Missing,
    Failed,
}

async fn insert_row(
    tx: &mut sqlx::Transaction<'_, Sqlite>,
    r: &MessageRow,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO email_messages (id, account, folder, provider_key, location, message_id, in_reply_to, refs, thread_id, subject, from_name, from_address, to_addrs, cc_addrs, date_unix, snippet, category, search_text, synced_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&r.id)
    .bind(&r.account)
    .bind(&r.folder)
    .bind(&r.provider_key)
    .bind(&r.location)
    .bind(&r.message_id)
    .bind(&r.in_reply_to)
    .bind(&r.refs)
    .bind(&r.thread_id)
    .bind(&r.subject)
    .bind(&r.from_name)
    .bind(&r.from_address)
    .bind(&r.to_addrs)
    .bind(&r.cc_addrs)
    .bind(r.date_unix)
    .bind(&r.snippet)
    .bind(&r.category)
    .bind(&r.search_text)
    .bind(&r.synced_at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Union-find over message-id strings.
#[derive(Default)]
struct UnionFind {
    index: BTreeMap<String, usize>,
    parent: Vec<usize>,
}

impl UnionFind {
    fn node(&mut self, name: &str) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.parent.len();
        self.parent.push(i);
        self.index.insert(name.to_string(), i);
        i
    }

    fn find(&mut self, mut i: usize) -> usize {
        while self.parent[i] != i {
            self.parent[i] = self.parent[self.parent[i]];
            i = self.parent[i];
        }
        i
    }

    fn find_name(&mut self, name: &str) -> usize {
        let i = self.node(name);
        self.find(i)
    }

    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.parent[rb] = ra;
        }
    }
}
