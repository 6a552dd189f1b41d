//! The local store: the synced headers searches and cards read, and the trashed ledger
//! (tables `email_messages` and `email_trashed`, migrations `migrations/sqlite/0002_email.sql`
//! and `migrations/postgres/0002_email.sql`).
//!
//! Everything here is SQL over the project's database, SQLite or PostgreSQL: every statement is
//! written once, with `$1`-style placeholders, and runs on the store's one pool (sqlx's `Any`
//! driver). The one
//! spelling that differs is the substring test of the word search ([`Db::position_fn`]). Each
//! multi-statement change runs in one transaction on either engine. The rules of what goes in
//! live in `sync.rs` (which messages) and the tool modules (trash and restore).

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};
use iris_store::timestamp_text;
use iris_store::Engine;
use serde::{Deserialize, Serialize};
use sqlx::any::AnyArguments;
use sqlx::{AnyPool, Arguments};

use crate::category::Category;
use crate::id;

pub(crate) use ledger::{RestoreDone, TrashDone};

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
    /// The category path (`deals-promotions/northwind`); empty only in ledger snapshots taken
    /// before paths existed (migration 0013).
    #[serde(default)]
    pub category_path: String,
    /// JSON array of the provider's bucket labels (`["CATEGORY_PROMOTIONS"]`).
    #[serde(default = "empty_json_array")]
    pub labels: String,
}

fn empty_json_array() -> String {
    "[]".into()
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

/// Which of one account's messages a category selection takes (see `selection.rs`): the
/// triage condition (kind in `kinds`, or path equal to or under one of `paths`) when either is
/// non-empty, and the bucket condition (carries one of `labels`) when that is non-empty. A filter
/// with neither condition selects nothing (fail closed: never "every message"). Mail from one of
/// `own_addresses` (lower-case; the owner's accounts) is never taken: a clean-up of "personal"
/// must not empty the owner's Sent folder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AccountFilter {
    pub account: String,
    pub kinds: Vec<String>,
    pub paths: Vec<String>,
    pub labels: Vec<String>,
    pub own_addresses: Vec<String>,
}

/// The project's database as the plugin sees it: the store's pool and its engine.
///
/// Cloning is cheap and shares the pool.
#[derive(Debug, Clone)]
pub(crate) struct Db {
    /// The store's pool (the migrations, this plugin's included, ran on connect).
    pub pool: AnyPool,
    /// Which engine it is (for the one spelling that differs, [`Db::position_fn`]).
    pub engine: Engine,
}

impl Db {
    /// The pool of the project's store.
    pub fn of(store: &iris_store::Store) -> Self {
        Db {
            pool: store.pool().clone(),
            engine: store.engine(),
        }
    }

    /// The substring-position function of the engine (see [`Engine::position_fn`]).
    fn position_fn(&self) -> &'static str {
        self.engine.position_fn()
    }
}

/// A statement assembled piece by piece, its placeholders numbered `$1`, `$2`, … in the order
/// of [`Sql::push_bind`] (the spelling both engines accept through sqlx's `Any` driver; sqlx's
/// own query builder writes `?` for `Any`, which PostgreSQL refuses).
pub(crate) struct Sql {
    text: String,
    args: AnyArguments<'static>,
    count: usize,
}

impl Sql {
    fn new(text: &str) -> Sql {
        Sql {
            text: text.to_string(),
            args: AnyArguments::default(),
            count: 0,
        }
    }

    fn push(&mut self, text: impl std::fmt::Display) -> &mut Sql {
        use std::fmt::Write;
        let _ = write!(self.text, "{text}");
        self
    }

    fn push_bind<T>(&mut self, value: T) -> &mut Sql
    where
        T: 'static + sqlx::Encode<'static, sqlx::Any> + sqlx::Type<sqlx::Any> + Send,
    {
        self.count += 1;
        let placeholder = format!("${}", self.count);
        self.text.push_str(&placeholder);
        // Encoding text and integers for `Any` cannot fail.
        let _ = self.args.add(value);
        self
    }

    /// The statement as a query reading rows into `O` (its arguments are taken: build once).
    fn build_query_as<O>(&mut self) -> sqlx::query::QueryAs<'_, sqlx::Any, O, AnyArguments<'_>>
    where
        O: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow>,
    {
        sqlx::query_as_with(&self.text, std::mem::take(&mut self.args))
    }

    /// The statement as a query reading one column (its arguments are taken: build once).
    fn build_query_scalar<O>(
        &mut self,
    ) -> sqlx::query::QueryScalar<'_, sqlx::Any, O, AnyArguments<'_>>
    where
        (O,): for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow>,
    {
        sqlx::query_scalar_with(&self.text, std::mem::take(&mut self.args))
    }
}

/// Inserts one `email_messages` row through `$executor` (a transaction, `&mut *tx`).
macro_rules! insert_message {
    ($executor:expr, $r:expr) => {{
        let r: &MessageRow = $r;
        sqlx::query(
            "INSERT INTO email_messages (id, account, folder, provider_key, location, message_id, \
             in_reply_to, refs, thread_id, subject, from_name, from_address, to_addrs, cc_addrs, \
             date_unix, snippet, category, search_text, synced_at, category_path, labels) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
             $18, $19, $20, $21)",
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
        .bind(&r.category_path)
        .bind(&r.labels)
        .execute($executor)
        .await
    }};
}

// After `insert_message!`: a `macro_rules!` is visible only below its definition.
mod ledger;

pub use ledger::Action;

/// The SQL side of the plugin.
#[derive(Debug, Clone)]
pub(crate) struct LocalStore {
    db: Db,
}

/// Statements per transaction when a sync writes the local store (a few milliseconds of the
/// write lock each).
pub const SYNC_CHUNK: usize = 500;

impl LocalStore {
    pub fn new(db: Db) -> Self {
        LocalStore { db }
    }

    /// The database (for the plugin's other tables, e.g. `sync_state.rs`).
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Every message of an account, as keys, by id (a fixed order, so a sync decides alike on
    /// both engines).
    pub async fn known_keys(&self, account: &str) -> Result<Vec<KnownKey>, sqlx::Error> {
        {
            let pool = &self.db.pool;
            sqlx::query_as(
                "SELECT id, folder, provider_key, location FROM email_messages WHERE account = $1 \
                 ORDER BY id",
            )
            .bind(account)
            .fetch_all(pool)
            .await
        }
    }

    /// Every id in use, all accounts (ids are one namespace).
    pub async fn all_ids(&self) -> Result<HashSet<String>, sqlx::Error> {
        let ids: Vec<String> = {
            let pool = &self.db.pool;
            sqlx::query_scalar("SELECT id FROM email_messages")
                .fetch_all(pool)
                .await?
        };
        Ok(ids.into_iter().collect())
    }

    /// Applies one account's sync: removes, then moves, then inserts, in that order, each in
    /// transactions of at most [`SYNC_CHUNK`] statements. A sync of a large mailbox must not
    /// hold SQLite's one write lock for seconds (every other write, the approvals' included,
    /// would wait behind it); a sync cut off midway leaves a store the next sync completes (it
    /// compares the mailbox with the store again).
    pub async fn apply_sync(
        &self,
        inserts: &[MessageRow],
        removes: &[String],
        moves: &[(String, String, String)],
    ) -> Result<(), sqlx::Error> {
        let pool = &self.db.pool;
        for chunk in removes.chunks(SYNC_CHUNK) {
            let mut tx = pool.begin().await?;
            for id in chunk {
                sqlx::query("DELETE FROM email_messages WHERE id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
        }
        for chunk in moves.chunks(SYNC_CHUNK) {
            let mut tx = pool.begin().await?;
            for (id, folder, location) in chunk {
                sqlx::query("UPDATE email_messages SET folder = $1, location = $2 WHERE id = $3")
                    .bind(folder)
                    .bind(location)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
        }
        for chunk in inserts.chunks(SYNC_CHUNK) {
            let mut tx = pool.begin().await?;
            for r in chunk {
                insert_message!(&mut *tx, r)?;
            }
            tx.commit().await?;
        }
        Ok(())
    }

    /// Records where a listing found messages that did not change otherwise (new/ → cur/), in
    /// transactions of at most [`SYNC_CHUNK`] statements (see [`LocalStore::apply_sync`]).
    pub async fn update_locations(&self, locs: &[(String, String)]) -> Result<(), sqlx::Error> {
        let pool = &self.db.pool;
        for chunk in locs.chunks(SYNC_CHUNK) {
            let mut tx = pool.begin().await?;
            for (id, location) in chunk {
                sqlx::query("UPDATE email_messages SET location = $1 WHERE id = $2")
                    .bind(location)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
        }
        Ok(())
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
        let rows: Vec<T> = {
            let pool = &self.db.pool;
            sqlx::query_as(
                "SELECT id, message_id, in_reply_to, refs, thread_id, date_unix FROM email_messages \
                 WHERE account = $1",
            )
            .bind(account)
            .fetch_all(pool)
            .await?
        };
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
        // In chunks, as a sync writes (see [`LocalStore::apply_sync`]).
        let pool = &self.db.pool;
        for chunk in changes.chunks(SYNC_CHUNK) {
            let mut tx = pool.begin().await?;
            for (id, tid) in chunk {
                sqlx::query("UPDATE email_messages SET thread_id = $1 WHERE id = $2")
                    .bind(tid)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
        }
        Ok(())
    }

    /// Number of messages an account has in the store.
    pub async fn count(&self, account: &str) -> Result<i64, sqlx::Error> {
        {
            let pool = &self.db.pool;
            sqlx::query_scalar("SELECT COUNT(*) FROM email_messages WHERE account = $1")
                .bind(account)
                .fetch_one(pool)
                .await
        }
    }

    /// One message by id.
    pub async fn get(&self, id: &str) -> Result<Option<MessageRow>, sqlx::Error> {
        {
            let pool = &self.db.pool;
            sqlx::query_as("SELECT * FROM email_messages WHERE id = $1")
                .bind(id)
                .fetch_optional(pool)
                .await
        }
    }

    /// Up to 50 stored messages (any account, any folder but Trash) naming `address` as their
    /// sender, a recipient or a cc, as (from name, from address, to JSON, cc JSON). `address`
    /// must be lower-case; the match is case-insensitive on the stored side. To/Cc are matched on
    /// their serialised `"address":"…"` field (quotes included, so `nna@x` does not match
    /// `anna@x`); the caller re-checks the parsed lists. Used by `send_email`'s recipient rule.
    pub async fn people_with_address(
        &self,
        address: &str,
    ) -> Result<Vec<(Option<String>, Option<String>, String, String)>, sqlx::Error> {
        let position = self.db.position_fn();
        let needle = format!("\"address\":{}", serde_json::Value::from(address));
        let sql = format!(
            "SELECT from_name, from_address, to_addrs, cc_addrs FROM email_messages \
             WHERE lower(from_address) = $1 OR {position}(lower(to_addrs), $2) > 0 \
             OR {position}(lower(cc_addrs), $2) > 0 ORDER BY id LIMIT 50"
        );
        {
            let pool = &self.db.pool;
            sqlx::query_as(&sql)
                .bind(address)
                .bind(&needle)
                .fetch_all(pool)
                .await
        }
    }

    /// Newest first (undated last, ties by id in byte order), at most `limit`; with the number
    /// of all matches.
    pub async fn search(&self, q: &SearchQuery) -> Result<(Vec<MessageRow>, i64), sqlx::Error> {
        let position = self.db.position_fn();
        {
            let pool = &self.db.pool;
            let filters = |b: &mut Sql| {
                b.push(" WHERE 1 = 1");
                if let Some(c) = q.category {
                    b.push(" AND category = ").push_bind(c.as_str());
                }
                if let Some(since) = q.since_unix {
                    b.push(" AND date_unix >= ").push_bind(since);
                }
                for w in &q.words {
                    b.push(format_args!(" AND {position}(search_text, "))
                        .push_bind(w.clone())
                        .push(") > 0");
                }
            };
            let mut b = Sql::new("SELECT * FROM email_messages");
            filters(&mut b);
            b.push(" ORDER BY date_unix IS NULL, date_unix DESC, id LIMIT ")
                .push_bind(i64::from(q.limit));
            let rows: Vec<MessageRow> = b.build_query_as().fetch_all(pool).await?;
            let mut c = Sql::new("SELECT COUNT(*) FROM email_messages");
            filters(&mut c);
            let total: i64 = c.build_query_scalar().fetch_one(pool).await?;
            Ok((rows, total))
        }
    }

    /// Every category path the store holds, sorted (what an owner's word can name).
    pub async fn category_paths(&self) -> Result<Vec<String>, sqlx::Error> {
        {
            let pool = &self.db.pool;
            sqlx::query_scalar(
                "SELECT DISTINCT category_path FROM email_messages \
                 WHERE category_path <> '' ORDER BY category_path",
            )
            .fetch_all(pool)
            .await
        }
    }

    /// The messages a category selection takes, newest first (undated ones never: a window
    /// cannot place them), at most `limit`; with the number of all it takes.
    pub async fn by_category(
        &self,
        filters: &[AccountFilter],
        since_unix: i64,
        limit: u32,
    ) -> Result<(Vec<MessageRow>, i64), sqlx::Error> {
        let usable: Vec<&AccountFilter> = filters
            .iter()
            .filter(|f| !(f.kinds.is_empty() && f.paths.is_empty() && f.labels.is_empty()))
            .collect();
        if usable.is_empty() {
            return Ok((Vec::new(), 0));
        }
        let position = self.db.position_fn();
        {
            let pool = &self.db.pool;
            let where_ = |b: &mut Sql| {
                b.push(" WHERE date_unix IS NOT NULL AND date_unix >= ")
                    .push_bind(since_unix)
                    .push(" AND (");
                for (i, f) in usable.iter().enumerate() {
                    if i > 0 {
                        b.push(" OR ");
                    }
                    b.push("(account = ").push_bind(f.account.clone());
                    for own in &f.own_addresses {
                        b.push(" AND COALESCE(lower(from_address), '') <> ")
                            .push_bind(own.clone());
                    }
                    if !f.kinds.is_empty() || !f.paths.is_empty() {
                        b.push(" AND (1 = 0");
                        for k in &f.kinds {
                            b.push(" OR category = ").push_bind(k.clone());
                        }
                        for p in &f.paths {
                            b.push(" OR category_path = ")
                                .push_bind(p.clone())
                                .push(format_args!(" OR {position}(category_path, "))
                                .push_bind(format!("{p}/"))
                                .push(") = 1");
                        }
                        b.push(")");
                    }
                    if !f.labels.is_empty() {
                        b.push(" AND (1 = 0");
                        for l in &f.labels {
                            // Labels are stored as a JSON array of strings: match the quoted
                            // label so CATEGORY_UPDATES never matches CATEGORY_UPDATES_2.
                            b.push(format_args!(" OR {position}(labels, "))
                                .push_bind(serde_json::Value::from(l.as_str()).to_string())
                                .push(") > 0");
                        }
                        b.push(")");
                    }
                    b.push(")");
                }
                b.push(")");
            };
            let mut q = Sql::new("SELECT * FROM email_messages");
            where_(&mut q);
            q.push(" ORDER BY date_unix DESC, id LIMIT ")
                .push_bind(i64::from(limit));
            let rows: Vec<MessageRow> = q.build_query_as().fetch_all(pool).await?;
            let mut c = Sql::new("SELECT COUNT(*) FROM email_messages");
            where_(&mut c);
            let total: i64 = c.build_query_scalar().fetch_one(pool).await?;
            Ok((rows, total))
        }
    }
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
