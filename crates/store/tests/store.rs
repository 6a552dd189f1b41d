//! The store suite, run against both engines: every test body below is written once over the
//! engine-neutral [`Store`] and run twice, as `sqlite::NAME` (a fresh SQLite file) and
//! `postgres::NAME` (a fresh PostgreSQL database). Together they show that the database itself
//! refuses changing what was approved (DESIGN §2, §6), that compare-and-set writes have exactly
//! one winner (DESIGN §3, §8), that corrupt rows fail closed, and that both engines behave alike.
//!
//! PostgreSQL: each test creates its own database `iris_test_<random>` through the admin url in
//! `IRIS_TEST_POSTGRES_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`) and drops it
//! at the end (best effort). When the server is unreachable the PostgreSQL tests fail, saying how
//! to start it; they never pass silently.

use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use iris_core::canonical::{call_hash, canonical_json};
use iris_core::model::{Message, ToolCall};
use iris_core::pairing::{PairingLink, Redemption};
use iris_core::ports::{
    AuditLog, Checkpoint, CheckpointStore, ClaimOutcome, ConversationStore, Device, DeviceStore,
    Ledger, NewApproval, NewAuditEntry, PairingStore, QueueStore, Response, Scope, StoreError,
    TelegramCard, TelegramCardStore, TelegramView,
};
use iris_core::wire::{ApprovalKind, ApprovalStatus, AuditKind, Card, ChatLine, Effect, Execution};
use iris_store::testing::{
    admin_connection, fresh_postgres_database, postgres_admin_url, with_database, DropDatabase,
};
use iris_store::{PgStore, SqliteStore, Store};
use serde_json::json;
use sqlx::Connection;
use tempfile::TempDir;
use tokio::sync::Barrier;

// ---------------------------------------------------------------------------------------------
// The two engines.
// ---------------------------------------------------------------------------------------------

/// Which engine a test body runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Engine {
    Sqlite,
    Postgres,
}

/// A fresh, empty database of one engine, removed when dropped.
struct TestDb {
    /// The store on it (schema migrated).
    store: Store,
    /// Its url, to connect again.
    url: String,
    /// Removes the database: the temporary directory of the SQLite file, or the PostgreSQL
    /// database. Declared last, so it is dropped after the store.
    _cleanup: Cleanup,
}

/// What removes a test database when dropped (held only for its `Drop`).
#[allow(dead_code)]
enum Cleanup {
    Dir(TempDir),
    Database(DropDatabase),
}

impl Engine {
    /// A fresh database: for SQLite a file in its own temporary directory (a nested path, so the
    /// parent directories are created by `connect`); for PostgreSQL a new database.
    async fn open(self) -> TestDb {
        match self {
            Engine::Sqlite => {
                let dir = tempfile::tempdir().expect("tempdir");
                let url = format!("sqlite://{}/nested/data/iris.db", dir.path().display());
                let store = Store::connect(&url).await.expect("connect");
                assert!(store.as_sqlite().is_some());
                TestDb {
                    store,
                    url,
                    _cleanup: Cleanup::Dir(dir),
                }
            }
            Engine::Postgres => {
                let (url, guard) = fresh_postgres_database().await;
                let store = Store::connect(&url).await.expect("connect");
                assert!(store.as_postgres().is_some());
                TestDb {
                    store,
                    url,
                    _cleanup: Cleanup::Database(guard),
                }
            }
        }
    }

    /// The SQL spelling for this engine, where the two differ.
    fn pick(self, sqlite: &'static str, postgres: &'static str) -> &'static str {
        match self {
            Engine::Sqlite => sqlite,
            Engine::Postgres => postgres,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Raw SQL on either engine (for what the store's API cannot do: forging and corrupting rows).
// ---------------------------------------------------------------------------------------------

/// Runs one raw statement; the number of rows it changed.
async fn exec(store: &Store, sql: &str) -> Result<u64, sqlx::Error> {
    match store {
        Store::Sqlite(s) => sqlx::query(sql)
            .execute(s.pool())
            .await
            .map(|d| d.rows_affected()),
        Store::Postgres(s) => sqlx::query(sql)
            .execute(s.pool())
            .await
            .map(|d| d.rows_affected()),
    }
}

/// Runs raw inserts with the `approvals.kind` check constraint lifted, to plant a corrupt row.
async fn exec_without_check_constraints(store: &Store, statements: &[String]) {
    match store {
        Store::Sqlite(s) => {
            let mut conn = s.pool().acquire().await.expect("conn");
            sqlx::query("PRAGMA ignore_check_constraints = ON")
                .execute(&mut *conn)
                .await
                .expect("pragma");
            for sql in statements {
                sqlx::query(sql)
                    .execute(&mut *conn)
                    .await
                    .expect("raw insert");
            }
            sqlx::query("PRAGMA ignore_check_constraints = OFF")
                .execute(&mut *conn)
                .await
                .expect("pragma");
        }
        Store::Postgres(s) => {
            let mut tx = s.pool().begin().await.expect("begin");
            sqlx::query("ALTER TABLE approvals DROP CONSTRAINT approvals_kind_check")
                .execute(&mut *tx)
                .await
                .expect("drop check");
            for sql in statements {
                sqlx::query(sql)
                    .execute(&mut *tx)
                    .await
                    .expect("raw insert");
            }
            sqlx::query(
                "ALTER TABLE approvals ADD CONSTRAINT approvals_kind_check \
                 CHECK (kind IN ('destructive', 'pinned_write', 'evaluator')) NOT VALID",
            )
            .execute(&mut *tx)
            .await
            .expect("restore check");
            tx.commit().await.expect("commit");
        }
    }
}

/// Closes the store's pool (every clone shares it).
async fn close(store: &Store) {
    match store {
        Store::Sqlite(s) => s.pool().close().await,
        Store::Postgres(s) => s.pool().close().await,
    }
}

// ---------------------------------------------------------------------------------------------
// Fixtures.
// ---------------------------------------------------------------------------------------------

/// A fixed "now" for the tests (no wall clock in the assertions).
fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 9, 0, 0)
        .single()
        .expect("valid time")
}

/// A destructive `trash_email` request for `ids`, written at `t0`, lapsing an hour later.
fn trash_request(id: &str, ids: &[&str]) -> NewApproval {
    let args = json!({ "ids": ids });
    NewApproval {
        id: id.to_owned(),
        kind: ApprovalKind::Destructive,
        tool: "trash_email".to_owned(),
        args_canonical: canonical_json(&args),
        call_hash: call_hash("trash_email", &args),
        items: ids.iter().map(|s| (*s).to_owned()).collect(),
        card: Card {
            title: format!("Trash {} emails", ids.len()),
            action: format!("Trash {} emails", ids.len()),
            effect: Effect::Destructive,
            lines: ids
                .iter()
                .map(|s| format!("Promo {s} — shop@example.com"))
                .collect(),
            undo_tool: Some("restore_email".to_owned()),
            undo_window_days: Some(30),
            request: "trash the promo emails from this week".to_owned(),
            undo_note: Some("You can restore these from Trash for 30 days".to_owned()),
        },
        args,
        run_id: format!("run-{id}"),
        context_summary: "trash the promo emails from this week".to_owned(),
        created_at: t0(),
        expires_at: t0() + Duration::hours(1),
        preconditions: ids
            .iter()
            .map(|s| json!({"folder": "INBOX", "message_id": format!("{s}@shop.example")}))
            .collect(),
    }
}

fn response(status: ApprovalStatus, by: &str, at: DateTime<Utc>) -> Response {
    Response {
        status,
        responded_by: by.to_owned(),
        surface: "web".to_owned(),
        reason: None,
        at,
    }
}

/// Inserts a request and approves it at `t0 + 1 min`.
async fn approved(store: &Store, id: &str) -> NewApproval {
    let row = trash_request(id, &["m1", "m2"]);
    store.insert(&row).await.expect("insert");
    let won = store
        .decide(
            id,
            &response(
                ApprovalStatus::Approved,
                "owner-phone",
                t0() + Duration::minutes(1),
            ),
        )
        .await
        .expect("decide");
    assert!(won);
    row
}

fn checkpoint(approval_id: &str) -> Checkpoint {
    Checkpoint {
        id: format!("cp-{approval_id}"),
        run_id: format!("run-{approval_id}"),
        conversation_id: "conv-1".to_owned(),
        request: "trash the promo emails".to_owned(),
        messages: vec![
            Message::User {
                content: "trash the promo emails".to_owned(),
            },
            Message::Assistant {
                content: None,
                tool_calls: vec![ToolCall {
                    id: "call-1".to_owned(),
                    name: "trash_email".to_owned(),
                    arguments: json!({"ids": ["m1", "m2"]}),
                }],
            },
        ],
        pending_call: ToolCall {
            id: "call-1".to_owned(),
            name: "trash_email".to_owned(),
            arguments: json!({"ids": ["m1", "m2"]}),
        },
        approval_id: approval_id.to_owned(),
        effects_executed: vec![],
    }
}

/// Runs raw SQL and returns the database's refusal message, failing the test if it ran.
async fn refused(store: &Store, sql: &str) -> String {
    match exec(store, sql).await {
        Ok(rows) => panic!("the database accepted `{sql}` ({rows} rows)"),
        Err(e) => e.to_string(),
    }
}

/// The raw text of one column of an approval row.
async fn raw_column(store: &Store, id: &str, column: &str) -> Option<String> {
    let sql = format!("SELECT CAST({column} AS TEXT) FROM approvals WHERE id = $1");
    match store {
        Store::Sqlite(s) => sqlx::query_scalar::<_, Option<String>>(&sql)
            .bind(id)
            .fetch_one(s.pool())
            .await
            .expect("read column"),
        Store::Postgres(s) => sqlx::query_scalar::<_, Option<String>>(&sql)
            .bind(id)
            .fetch_one(s.pool())
            .await
            .expect("read column"),
    }
}

// ---------------------------------------------------------------------------------------------
// Request terms are immutable, enforced by the database (one test per column).
// ---------------------------------------------------------------------------------------------

/// Asserts that `UPDATE approvals SET {column} = {value}` is refused on a pending row and on an
/// approved one, naming the rule and the column, and that the stored value did not change.
async fn assert_column_immutable(engine: Engine, column: &str, value: &str) {
    let db = engine.open().await;
    let store = db.store.clone();
    store
        .insert(&trash_request("a1", &["m1"]))
        .await
        .expect("insert");
    approved(&store, "a2").await;
    for id in ["a1", "a2"] {
        let before = raw_column(&store, id, column).await;
        let message = refused(
            &store,
            &format!("UPDATE approvals SET {column} = {value} WHERE id = '{id}'"),
        )
        .await;
        assert!(
            message.contains("approval request terms are immutable (DESIGN §2)"),
            "{message}"
        );
        assert!(message.contains(column), "{message}");
        assert_eq!(raw_column(&store, id, column).await, before);
    }
}

async fn id_is_immutable(engine: Engine) {
    assert_column_immutable(engine, "id", "'forged'").await;
}

async fn kind_is_immutable(engine: Engine) {
    assert_column_immutable(engine, "kind", "'evaluator'").await;
}

async fn tool_is_immutable(engine: Engine) {
    assert_column_immutable(engine, "tool", "'delete_everything'").await;
}

async fn args_are_immutable(engine: Engine) {
    assert_column_immutable(engine, "args", r#"'{"ids":["m1","m9"]}'"#).await;
}

async fn args_canonical_is_immutable(engine: Engine) {
    assert_column_immutable(engine, "args_canonical", r#"'{"ids":["m9"]}'"#).await;
}

async fn call_hash_is_immutable(engine: Engine) {
    assert_column_immutable(engine, "call_hash", "'00'").await;
}

async fn items_are_immutable(engine: Engine) {
    assert_column_immutable(engine, "items", r#"'["m9"]'"#).await;
}

async fn card_is_immutable(engine: Engine) {
    let edit = engine.pick(
        "json_set(card, '$.title', 'Trash 1 email')",
        "jsonb_set(card::jsonb, '{title}', '\"Trash 1 email\"')::text",
    );
    assert_column_immutable(engine, "card", edit).await;
}

async fn run_id_is_immutable(engine: Engine) {
    assert_column_immutable(engine, "run_id", "'run-other'").await;
}

async fn context_summary_is_immutable(engine: Engine) {
    assert_column_immutable(engine, "context_summary", "'delete everything'").await;
}

async fn created_at_is_immutable(engine: Engine) {
    assert_column_immutable(engine, "created_at", "'2026-03-01T10:00:00.000000000Z'").await;
}

async fn expires_at_is_immutable(engine: Engine) {
    assert_column_immutable(engine, "expires_at", "'2099-01-01T00:00:00.000000000Z'").await;
}

async fn preconditions_are_immutable(engine: Engine) {
    assert_column_immutable(engine, "preconditions", r#"'[]'"#).await;
}

async fn mutable_bookkeeping_columns_still_update(engine: Engine) {
    // Control for the tests above: the refusal is specific to request terms.
    let db = engine.open().await;
    let store = db.store.clone();
    store
        .insert(&trash_request("a1", &["m1"]))
        .await
        .expect("insert");
    exec(
        &store,
        "UPDATE approvals SET resume_error = 'boom' WHERE id = 'a1'",
    )
    .await
    .expect("resume_error is not a request term");
    store.set_resume_error("a1", None).await.expect("clear");
    let row = store.get("a1").await.expect("get").expect("row");
    assert_eq!(row.resume_error, None);
}

// ---------------------------------------------------------------------------------------------
// The response is written once; nothing is deleted; the audit log is append-only.
// ---------------------------------------------------------------------------------------------

async fn response_is_written_once(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    approved(&store, "a1").await;
    for assignment in [
        "status = 'rejected'",
        "status = 'pending'",
        "responded_by = 'agent'",
        "surface = 'telegram'",
        "reason = 'changed my mind'",
        "responded_at = '2026-03-01T09:30:00.000000000Z'",
    ] {
        let message = refused(
            &store,
            &format!("UPDATE approvals SET {assignment} WHERE id = 'a1'"),
        )
        .await;
        assert!(
            message.contains("an approval response is written once (DESIGN §2)"),
            "{assignment}: {message}"
        );
    }
    let row = store.get("a1").await.expect("get").expect("row");
    assert_eq!(row.status, ApprovalStatus::Approved);
    assert_eq!(row.responded_by.as_deref(), Some("owner-phone"));
    assert_eq!(row.surface.as_deref(), Some("web"));

    // The store's own compare-and-set also loses now.
    let late = store
        .decide(
            "a1",
            &response(ApprovalStatus::Rejected, "cli", t0() + Duration::minutes(2)),
        )
        .await
        .expect("decide");
    assert!(!late);
}

async fn a_pending_row_takes_a_response_only_with_its_decision(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    store
        .insert(&trash_request("a1", &["m1"]))
        .await
        .expect("insert");
    let message = refused(
        &store,
        "UPDATE approvals SET responded_by = 'agent' WHERE id = 'a1'",
    )
    .await;
    assert!(
        message.contains("written together with its decision"),
        "{message}"
    );
    let message = refused(
        &store,
        "UPDATE approvals SET status = 'approved' WHERE id = 'a1'",
    )
    .await;
    assert!(
        message.contains("a decision records who answered"),
        "{message}"
    );
    let message = refused(
        &store,
        "INSERT INTO approvals (id, kind, status, tool, args, args_canonical, call_hash, items, \
         card, run_id, context_summary, created_at, expires_at, responded_at, responded_by, surface) \
         SELECT 'born-approved', kind, 'approved', tool, args, args_canonical, call_hash, items, \
         card, run_id, context_summary, created_at, expires_at, created_at, 'agent', 'api' \
         FROM approvals WHERE id = 'a1'",
    )
    .await;
    assert!(
        message.contains("a new approval row is pending and unanswered"),
        "{message}"
    );
    assert_eq!(
        store.get("a1").await.expect("get").expect("row").status,
        ApprovalStatus::Pending
    );
}

async fn approvals_are_never_deleted(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    store
        .insert(&trash_request("a1", &["m1"]))
        .await
        .expect("insert");
    approved(&store, "a2").await;
    for id in ["a1", "a2"] {
        let message = refused(&store, &format!("DELETE FROM approvals WHERE id = '{id}'")).await;
        assert!(
            message.contains("approval rows are never deleted"),
            "{message}"
        );
        assert!(store.get(id).await.expect("get").is_some());
    }
}

async fn audit_log_is_append_only(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    approved(&store, "a1").await;
    let entry = NewAuditEntry {
        approval_id: "a1".to_owned(),
        kind: AuditKind::Decision,
        item: None,
        result: json!({"decision": "approve"}),
        undo_available: true,
        actor: "owner-phone".to_owned(),
        surface: Some("web".to_owned()),
        at: t0() + Duration::minutes(1),
    };
    store.append(&entry).await.expect("append");
    store
        .append(&NewAuditEntry {
            kind: AuditKind::Execution,
            item: Some("m1".to_owned()),
            result: json!({"trashed": "m1"}),
            actor: "iris".to_owned(),
            surface: None,
            at: t0() + Duration::minutes(2),
            ..entry.clone()
        })
        .await
        .expect("append");

    let message = refused(&store, "UPDATE audit_log SET actor = 'nobody'").await;
    assert!(
        message.contains("the audit log is append-only"),
        "{message}"
    );
    let message = refused(&store, "DELETE FROM audit_log").await;
    assert!(
        message.contains("the audit log is append-only"),
        "{message}"
    );

    let entries = store.entries(Some("a1")).await.expect("entries");
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].kind, AuditKind::Decision);
    assert_eq!(entries[0].actor, "owner-phone");
    assert_eq!(entries[0].at, t0() + Duration::minutes(1));
    assert_eq!(entries[1].kind, AuditKind::Execution);
    assert_eq!(entries[1].item.as_deref(), Some("m1"));
    assert!(entries[1].undo_available);
    assert!(entries[0].id < entries[1].id);
    assert!(store
        .entries(Some("other"))
        .await
        .expect("entries")
        .is_empty());
    assert_eq!(store.entries(None).await.expect("entries").len(), 2);
}

// ---------------------------------------------------------------------------------------------
// Queue behaviour.
// ---------------------------------------------------------------------------------------------

async fn insert_and_get_round_trip(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    let request = trash_request("a1", &["m1", "m2", "m3"]);
    store.insert(&request).await.expect("insert");
    let row = store.get("a1").await.expect("get").expect("row");
    assert_eq!(row.kind, ApprovalKind::Destructive);
    assert_eq!(row.status, ApprovalStatus::Pending);
    assert_eq!(row.tool, request.tool);
    assert_eq!(row.args, request.args);
    assert_eq!(row.call_hash, request.call_hash);
    assert_eq!(row.items, request.items);
    assert_eq!(row.card, request.card);
    assert_eq!(row.run_id, request.run_id);
    assert_eq!(row.created_at, request.created_at);
    assert_eq!(row.expires_at, request.expires_at);
    assert_eq!(row.responded_at, None);
    assert_eq!(row.execution, Execution::None);
    assert_eq!(row.result, None);
    assert!(store.get("missing").await.expect("get").is_none());
    assert_eq!(
        raw_column(&store, "a1", "args_canonical").await.as_deref(),
        Some(request.args_canonical.as_str())
    );
}

async fn insert_refuses_args_that_are_not_what_is_hashed(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    let mut request = trash_request("a1", &["m1"]);
    request.args_canonical = r#"{"ids":["m2"]}"#.to_owned();
    assert!(matches!(
        store.insert(&request).await,
        Err(StoreError::Backend(_))
    ));
    let mut request = trash_request("a2", &["m1"]);
    request.call_hash = call_hash("restore_email", &request.args);
    assert!(matches!(
        store.insert(&request).await,
        Err(StoreError::Backend(_))
    ));
    assert!(store.get("a1").await.expect("get").is_none());
    assert!(store.get("a2").await.expect("get").is_none());
}

async fn decide_records_the_response_and_refuses_lapsed_rows(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    store
        .insert(&trash_request("a1", &["m1"]))
        .await
        .expect("insert");
    store
        .insert(&trash_request("a2", &["m2"]))
        .await
        .expect("insert");

    let mut answer = response(ApprovalStatus::Rejected, "cli", t0() + Duration::minutes(5));
    answer.reason = Some("keep them".to_owned());
    answer.surface = "cli".to_owned();
    assert!(store.decide("a1", &answer).await.expect("decide"));
    let row = store.get("a1").await.expect("get").expect("row");
    assert_eq!(row.status, ApprovalStatus::Rejected);
    assert_eq!(row.responded_by.as_deref(), Some("cli"));
    assert_eq!(row.surface.as_deref(), Some("cli"));
    assert_eq!(row.reason.as_deref(), Some("keep them"));
    assert_eq!(row.responded_at, Some(t0() + Duration::minutes(5)));

    // An hour later the row can no longer be approved, only expired.
    let late = t0() + Duration::hours(1);
    assert!(!store
        .decide("a2", &response(ApprovalStatus::Approved, "web", late))
        .await
        .expect("decide"));
    assert!(!store
        .decide(
            "a2",
            &response(ApprovalStatus::Expired, "iris", late - Duration::seconds(1))
        )
        .await
        .expect("decide"));
    assert_eq!(
        store
            .lapsed(late - Duration::nanoseconds(1))
            .await
            .expect("lapsed"),
        Vec::<String>::new()
    );
    assert_eq!(
        store.lapsed(late).await.expect("lapsed"),
        vec!["a2".to_owned()]
    );
    assert!(store
        .decide("a2", &response(ApprovalStatus::Expired, "iris", late))
        .await
        .expect("decide"));
    assert!(store.lapsed(late).await.expect("lapsed").is_empty());
    assert_eq!(
        store.get("a2").await.expect("get").expect("row").status,
        ApprovalStatus::Expired
    );

    assert!(matches!(
        store.decide("missing", &answer).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(store
        .decide("a1", &response(ApprovalStatus::Pending, "web", t0()))
        .await
        .is_err());
}

async fn fifty_concurrent_decides_have_exactly_one_winner(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    // Several rounds, so a lucky interleaving cannot hide a broken compare-and-set.
    for round in 0..3 {
        let id = format!("a{round}");
        store
            .insert(&trash_request(&id, &["m1"]))
            .await
            .expect("insert");
        let barrier = Arc::new(Barrier::new(50));
        let mut tasks = Vec::new();
        for i in 0..50 {
            let (store, barrier, id) = (store.clone(), barrier.clone(), id.clone());
            tasks.push(tokio::spawn(async move {
                let status = if i % 2 == 0 {
                    ApprovalStatus::Approved
                } else {
                    ApprovalStatus::Rejected
                };
                let who = format!("device-{i}");
                barrier.wait().await;
                let won = store
                    .decide(&id, &response(status, &who, t0() + Duration::seconds(i)))
                    .await
                    .expect("decide");
                (won, status, who)
            }));
        }
        let mut winners = Vec::new();
        for task in tasks {
            let (won, status, who) = task.await.expect("task");
            if won {
                winners.push((status, who));
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
        let row = store.get(&id).await.expect("get").expect("row");
        assert_eq!(row.status, winners[0].0);
        assert_eq!(row.responded_by.as_deref(), Some(winners[0].1.as_str()));
    }
}

async fn list_puts_pending_first_oldest_first_then_newest_answer_first(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    for (i, id) in ["p-old", "p-new", "d-early", "d-late", "d-mid"]
        .iter()
        .enumerate()
    {
        let mut request = trash_request(id, &["m1"]);
        let offset = i64::try_from(i).expect("small");
        request.created_at = t0() + Duration::minutes(offset);
        request.expires_at = request.created_at + Duration::hours(1);
        store.insert(&request).await.expect("insert");
    }
    let at = |m: i64| t0() + Duration::minutes(m);
    assert!(store
        .decide(
            "d-early",
            &response(ApprovalStatus::Approved, "web", at(10))
        )
        .await
        .expect("decide"));
    assert!(store
        .decide("d-late", &response(ApprovalStatus::Rejected, "web", at(30)))
        .await
        .expect("decide"));
    assert!(store
        .decide("d-mid", &response(ApprovalStatus::Approved, "web", at(20)))
        .await
        .expect("decide"));

    let ids =
        |rows: Vec<iris_core::wire::Approval>| rows.into_iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(
        ids(QueueStore::list(&store, None).await.expect("list")),
        ["p-old", "p-new", "d-late", "d-mid", "d-early"]
    );
    assert_eq!(
        ids(QueueStore::list(&store, Some(ApprovalStatus::Pending))
            .await
            .expect("list")),
        ["p-old", "p-new"]
    );
    assert_eq!(
        ids(QueueStore::list(&store, Some(ApprovalStatus::Approved))
            .await
            .expect("list")),
        ["d-mid", "d-early"]
    );
    assert!(QueueStore::list(&store, Some(ApprovalStatus::Expired))
        .await
        .expect("list")
        .is_empty());
}

// ---------------------------------------------------------------------------------------------
// Claim and the side-effect ledger.
// ---------------------------------------------------------------------------------------------

fn denied(outcome: ClaimOutcome) -> String {
    match outcome {
        ClaimOutcome::Denied(reason) => reason,
        ClaimOutcome::Claimed => panic!("the claim was granted"),
    }
}

async fn claim_is_granted_once_for_exactly_the_approved_call(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    let row = approved(&store, "a1").await;
    let at = t0() + Duration::minutes(2);
    assert_eq!(
        store
            .claim("a1", "trash_email", &row.args_canonical, at)
            .await
            .expect("claim"),
        ClaimOutcome::Claimed
    );
    let reason = denied(
        store
            .claim("a1", "trash_email", &row.args_canonical, at)
            .await
            .expect("claim"),
    );
    assert!(reason.contains("already claimed"), "{reason}");
    let got = store.get("a1").await.expect("get").expect("row");
    assert_eq!(got.execution, Execution::Executing);
}

async fn claim_denials_name_the_rule(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    let at = t0() + Duration::minutes(2);
    let row = approved(&store, "approved").await;
    let args = row.args_canonical.clone();

    let reason = denied(
        store
            .claim("forged", "trash_email", &args, at)
            .await
            .expect("claim"),
    );
    assert!(reason.contains("no such approval"), "{reason}");

    store
        .insert(&trash_request("pending", &["m1", "m2"]))
        .await
        .expect("insert");
    let reason = denied(
        store
            .claim("pending", "trash_email", &args, at)
            .await
            .expect("claim"),
    );
    assert!(reason.contains("not approved (status pending)"), "{reason}");

    store
        .insert(&trash_request("rejected", &["m1", "m2"]))
        .await
        .expect("insert");
    assert!(store
        .decide("rejected", &response(ApprovalStatus::Rejected, "web", at))
        .await
        .expect("decide"));
    let reason = denied(
        store
            .claim("rejected", "trash_email", &args, at)
            .await
            .expect("claim"),
    );
    assert!(
        reason.contains("not approved (status rejected)"),
        "{reason}"
    );

    let reason = denied(
        store
            .claim("approved", "delete_email", &args, at)
            .await
            .expect("claim"),
    );
    assert!(reason.contains("another tool"), "{reason}");

    // Same JSON value, different bytes: still refused (byte comparison).
    let reason = denied(
        store
            .claim("approved", "trash_email", r#"{ "ids": ["m1", "m2"] }"#, at)
            .await
            .expect("claim"),
    );
    assert!(
        reason.contains("arguments differ from the approved ones"),
        "{reason}"
    );
    let reason = denied(
        store
            .claim("approved", "trash_email", r#"{"ids":["m1","m2","m3"]}"#, at)
            .await
            .expect("claim"),
    );
    assert!(
        reason.contains("arguments differ from the approved ones"),
        "{reason}"
    );

    // None of the refused claims wrote a ledger entry; the right one still can.
    for id in ["pending", "rejected", "approved"] {
        assert_eq!(
            store.get(id).await.expect("get").expect("row").execution,
            Execution::None
        );
    }
    assert_eq!(
        store
            .claim("approved", "trash_email", &args, at)
            .await
            .expect("claim"),
        ClaimOutcome::Claimed
    );
    let reason = denied(
        store
            .claim("approved", "trash_email", &args, at)
            .await
            .expect("claim"),
    );
    assert!(reason.contains("already claimed"), "{reason}");
}

async fn the_database_refuses_a_ledger_entry_that_bypasses_the_claim_rule(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    store
        .insert(&trash_request("pending", &["m1"]))
        .await
        .expect("insert");
    let message = refused(
        &store,
        "INSERT INTO ledger (approval_id, tool, args_canonical, state, claimed_at) \
         SELECT id, tool, args_canonical, 'executing', created_at FROM approvals WHERE id = 'pending'",
    )
    .await;
    assert!(
        message.contains("a claim needs an approved row"),
        "{message}"
    );
}

async fn an_evaluator_halt_is_never_claimed(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    let mut row = trash_request("e1", &[]);
    row.kind = ApprovalKind::Evaluator;
    row.items = Vec::new();
    row.preconditions = Vec::new();
    store.insert(&row).await.expect("insert");
    assert!(store
        .decide(
            "e1",
            &response(
                ApprovalStatus::Approved,
                "owner-phone",
                t0() + Duration::minutes(1)
            )
        )
        .await
        .expect("decide"));
    let reason = denied(
        store
            .claim("e1", &row.tool, &row.args_canonical, t0())
            .await
            .expect("claim"),
    );
    assert!(reason.contains("evaluator halt"), "{reason}");
    let message = refused(
        &store,
        "INSERT INTO ledger (approval_id, tool, args_canonical, state, claimed_at) \
         SELECT id, tool, args_canonical, 'executing', created_at FROM approvals WHERE id = 'e1'",
    )
    .await;
    assert!(message.contains("never claimed"), "{message}");
    assert_eq!(
        store.get("e1").await.expect("get").expect("row").execution,
        Execution::None
    );
}

async fn twenty_concurrent_claims_have_exactly_one_winner(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    let row = approved(&store, "a1").await;
    let barrier = Arc::new(Barrier::new(20));
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let (store, barrier, args) = (store.clone(), barrier.clone(), row.args_canonical.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            store
                .claim("a1", "trash_email", &args, t0() + Duration::minutes(2))
                .await
                .expect("claim")
        }));
    }
    let mut claimed = 0;
    for task in tasks {
        match task.await.expect("task") {
            ClaimOutcome::Claimed => claimed += 1,
            ClaimOutcome::Denied(reason) => assert!(reason.contains("already claimed"), "{reason}"),
        }
    }
    assert_eq!(claimed, 1);
}

async fn ledger_outcomes_show_on_the_approval_and_crashes_become_unknown(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    let done = approved(&store, "done").await;
    let crashed = approved(&store, "crashed").await;
    let failed = approved(&store, "failed").await;
    let at = t0() + Duration::minutes(2);
    for row in [&done, &crashed, &failed] {
        assert_eq!(
            store
                .claim(&row.id, &row.tool, &row.args_canonical, at)
                .await
                .expect("claim"),
            ClaimOutcome::Claimed
        );
    }
    let result = json!({"trashed": ["m1", "m2"], "undo": "restore_email"});
    store
        .finish("done", true, &result, at)
        .await
        .expect("finish");
    store
        .finish("failed", false, &json!({"error": "imap down"}), at)
        .await
        .expect("finish");

    let got = store.get("done").await.expect("get").expect("row");
    assert_eq!(got.execution, Execution::Executed);
    assert_eq!(got.result, Some(result.clone()));
    let got = store.get("failed").await.expect("get").expect("row");
    assert_eq!(got.execution, Execution::Failed);
    assert_eq!(got.result, Some(json!({"error": "imap down"})));
    let got = store.get("crashed").await.expect("get").expect("row");
    assert_eq!(got.execution, Execution::Executing);
    assert_eq!(got.result, None);

    assert_eq!(
        store.mark_unknown().await.expect("mark"),
        vec!["crashed".to_owned()]
    );
    assert!(store.mark_unknown().await.expect("mark").is_empty());
    let got = store.get("crashed").await.expect("get").expect("row");
    assert_eq!(got.execution, Execution::Unknown);

    // An outcome is written once: neither a late finish nor a retry changes it.
    assert!(matches!(
        store.finish("crashed", true, &result, at).await,
        Err(StoreError::Backend(_))
    ));
    assert!(store.finish("done", false, &json!({}), at).await.is_err());
    assert!(matches!(
        store.finish("never-claimed", true, &result, at).await,
        Err(StoreError::NotFound(_))
    ));
    let message = refused(
        &store,
        "UPDATE ledger SET state = 'executing' WHERE approval_id = 'crashed'",
    )
    .await;
    assert!(
        message.contains("a ledger outcome is written once"),
        "{message}"
    );
    let message = refused(&store, "DELETE FROM ledger").await;
    assert!(message.contains("never deleted"), "{message}");
    let reason = denied(
        store
            .claim("crashed", &crashed.tool, &crashed.args_canonical, at)
            .await
            .expect("claim"),
    );
    assert!(
        reason.contains("already claimed (ledger: unknown)"),
        "{reason}"
    );
    assert_eq!(
        store
            .get("done")
            .await
            .expect("get")
            .expect("row")
            .execution,
        Execution::Executed
    );
}

// ---------------------------------------------------------------------------------------------
// Checkpoints and resuming exactly once.
// ---------------------------------------------------------------------------------------------

async fn take_for_resume_has_exactly_one_winner(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    approved(&store, "a1").await;
    let saved = checkpoint("a1");
    store.save(&saved).await.expect("save");
    store.link_checkpoint("a1", &saved.id).await.expect("link");
    assert_eq!(
        store.unresumed().await.expect("unresumed"),
        vec!["a1".to_owned()]
    );

    let barrier = Arc::new(Barrier::new(20));
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let (store, barrier) = (store.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            store.take_for_resume("a1").await.expect("take")
        }));
    }
    let mut taken = Vec::new();
    for task in tasks {
        if let Some(cp) = task.await.expect("task") {
            taken.push(cp);
        }
    }
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0], saved);
    assert!(store.unresumed().await.expect("unresumed").is_empty());
    assert!(store.take_for_resume("a1").await.expect("take").is_none());
    assert!(store
        .take_for_resume("no-such")
        .await
        .expect("take")
        .is_none());
    assert!(raw_column(&store, "a1", "resumed_at").await.is_some());
}

async fn unresumed_lists_only_decided_rows_with_a_waiting_checkpoint(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    store
        .insert(&trash_request("pending", &["m1"]))
        .await
        .expect("insert");
    store.save(&checkpoint("pending")).await.expect("save");
    approved(&store, "no-checkpoint").await;
    approved(&store, "approved").await;
    store.save(&checkpoint("approved")).await.expect("save");
    store
        .insert(&trash_request("rejected", &["m1"]))
        .await
        .expect("insert");
    store.save(&checkpoint("rejected")).await.expect("save");
    assert!(store
        .decide(
            "rejected",
            &response(ApprovalStatus::Rejected, "web", t0() + Duration::minutes(3))
        )
        .await
        .expect("decide"));
    assert_eq!(
        store.unresumed().await.expect("unresumed"),
        vec!["approved".to_owned(), "rejected".to_owned()]
    );
    // A pending row's run cannot be resumed: the database refuses.
    assert!(store.take_for_resume("pending").await.is_err());
    assert!(store
        .take_for_resume("approved")
        .await
        .expect("take")
        .is_some());
    assert_eq!(
        store.unresumed().await.expect("unresumed"),
        vec!["rejected".to_owned()]
    );
    // The link to a checkpoint is written once.
    store
        .link_checkpoint("approved", "cp-approved")
        .await
        .expect("link");
    assert!(store
        .link_checkpoint("approved", "cp-rejected")
        .await
        .is_err());
    assert!(matches!(
        store.link_checkpoint("missing", "cp-approved").await,
        Err(StoreError::NotFound(_))
    ));
}

/// Approves `id` (with a checkpoint), takes its checkpoint for resuming, and records that the
/// resume failed.
async fn failed_resume(store: &Store, id: &str) -> Checkpoint {
    approved(store, id).await;
    let saved = checkpoint(id);
    store.save(&saved).await.expect("save");
    store.link_checkpoint(id, &saved.id).await.expect("link");
    assert_eq!(
        store.take_for_resume(id).await.expect("take"),
        Some(saved.clone())
    );
    store
        .set_resume_error(id, Some("the model could not be reached"))
        .await
        .expect("record");
    saved
}

async fn a_failed_resume_is_taken_again_only_for_a_retry(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    // Nothing to retry: pending, decided but not yet taken, taken and resumed fine, no
    // checkpoint at all, unknown id.
    store
        .insert(&trash_request("pending", &["m1"]))
        .await
        .expect("insert");
    store.save(&checkpoint("pending")).await.expect("save");
    store
        .set_resume_error("pending", Some("boom"))
        .await
        .expect("record");
    assert!(store
        .take_for_retry("pending")
        .await
        .expect("retry")
        .is_none());
    approved(&store, "waiting").await;
    store.save(&checkpoint("waiting")).await.expect("save");
    store
        .set_resume_error("waiting", Some("boom"))
        .await
        .expect("record");
    assert!(store
        .take_for_retry("waiting")
        .await
        .expect("retry")
        .is_none());
    approved(&store, "fine").await;
    store.save(&checkpoint("fine")).await.expect("save");
    assert!(store.take_for_resume("fine").await.expect("take").is_some());
    assert!(store.take_for_retry("fine").await.expect("retry").is_none());
    approved(&store, "no-checkpoint").await;
    store
        .set_resume_error("no-checkpoint", Some("boom"))
        .await
        .expect("record");
    assert!(store
        .take_for_retry("no-checkpoint")
        .await
        .expect("retry")
        .is_none());
    assert_eq!(
        raw_column(&store, "no-checkpoint", "resume_error")
            .await
            .as_deref(),
        Some("boom"),
        "a refused retry must not clear the error"
    );
    assert!(store
        .take_for_retry("no-such")
        .await
        .expect("retry")
        .is_none());

    // A failed resume: taken once for a retry (the error is cleared), then not again until a
    // new failure is recorded.
    let saved = failed_resume(&store, "a1").await;
    assert_eq!(
        store
            .get("a1")
            .await
            .expect("get")
            .expect("row")
            .resume_error
            .as_deref(),
        Some("the model could not be reached")
    );
    assert_eq!(
        store.take_for_retry("a1").await.expect("retry"),
        Some(saved.clone())
    );
    assert_eq!(
        store
            .get("a1")
            .await
            .expect("get")
            .expect("row")
            .resume_error,
        None
    );
    assert!(store.take_for_retry("a1").await.expect("retry").is_none());
    store
        .set_resume_error("a1", Some("again"))
        .await
        .expect("record");
    assert_eq!(
        store.take_for_retry("a1").await.expect("retry"),
        Some(saved)
    );
    // The sweep never lists it: its checkpoint was taken.
    assert!(!store
        .unresumed()
        .await
        .expect("unresumed")
        .contains(&"a1".to_owned()));
}

async fn twenty_concurrent_retries_have_exactly_one_winner(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    failed_resume(&store, "a1").await;
    let barrier = Arc::new(Barrier::new(20));
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let (store, barrier) = (store.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            store.take_for_retry("a1").await.expect("retry")
        }));
    }
    let mut won = 0;
    for task in tasks {
        if task.await.expect("task").is_some() {
            won += 1;
        }
    }
    assert_eq!(won, 1);
}

async fn the_conversation_of_a_checkpoint_is_read_without_its_body(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    approved(&store, "a1").await;
    assert_eq!(store.conversation_of("a1").await.expect("read"), None);
    exec(
        &store,
        "INSERT INTO checkpoints (id, approval_id, run_id, conversation_id, body, created_at) \
         VALUES ('cp-bad', 'a1', 'run-a1', 'conv-9', '{\"messages\": [', 'x')",
    )
    .await
    .expect("raw insert");
    assert_eq!(
        store.conversation_of("a1").await.expect("read").as_deref(),
        Some("conv-9")
    );
}

async fn preconditions_round_trip_and_corrupt_ones_fail_closed(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    let row = trash_request("a1", &["m1", "m2"]);
    store.insert(&row).await.expect("insert");
    assert_eq!(
        store.preconditions("a1").await.expect("read"),
        row.preconditions
    );
    assert_eq!(row.preconditions.len(), 2);
    // None pinned, and an unknown id: empty.
    let mut none = trash_request("a2", &["m1"]);
    none.preconditions = Vec::new();
    store.insert(&none).await.expect("insert");
    assert!(store.preconditions("a2").await.expect("read").is_empty());
    assert!(store
        .preconditions("no-such")
        .await
        .expect("read")
        .is_empty());
    // A row written before migration 0003 reads as none.
    exec(
        &store,
        "INSERT INTO approvals (id, kind, tool, args, args_canonical, call_hash, items, card, \
         run_id, context_summary, created_at, expires_at) \
         SELECT 'old', kind, tool, args, args_canonical, call_hash, items, card, run_id, \
         context_summary, created_at, expires_at FROM approvals WHERE id = 'a1'",
    )
    .await
    .expect("raw insert");
    assert!(store.preconditions("old").await.expect("read").is_empty());
    // Corrupt: not JSON. Planted as a new row (the column is immutable).
    exec(
        &store,
        "INSERT INTO approvals (id, kind, tool, args, args_canonical, call_hash, items, card, \
         run_id, context_summary, created_at, expires_at, preconditions) \
         SELECT 'bad', kind, tool, args, args_canonical, call_hash, items, card, run_id, \
         context_summary, created_at, expires_at, '[{' FROM approvals WHERE id = 'a1'",
    )
    .await
    .expect("raw insert");
    match store.preconditions("bad").await {
        Err(StoreError::Corrupt { id, reason }) => {
            assert_eq!(id, "bad");
            assert!(reason.contains("preconditions"), "{reason}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Telegram cards (issue 5 "Telegram", migration 0015): which message shows which approval.
// ---------------------------------------------------------------------------------------------

/// The owner's chat in these tests.
const CHAT: i64 = 4242;

/// A sent card of `approval_id` in [`CHAT`] showing `view`.
fn telegram_card(approval_id: &str, message_id: i64, view: TelegramView) -> TelegramCard {
    TelegramCard {
        chat_id: CHAT,
        approval_id: approval_id.to_owned(),
        message_id: Some(message_id),
        view,
        shown_text: Some(format!("*{approval_id}* as {}", view.as_str())),
        settled: false,
        sent_at: t0(),
        updated_at: t0() + Duration::seconds(1),
    }
}

async fn a_telegram_card_is_claimed_once_per_chat_and_survives_reopening(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    let mut later = trash_request("a2", &["m2"]);
    later.created_at = t0() + Duration::minutes(1);
    later.expires_at = later.created_at + Duration::hours(1);
    store
        .insert(&trash_request("a1", &["m1"]))
        .await
        .expect("insert");
    store.insert(&later).await.expect("insert");
    let unsent = |store: Store| async move {
        store
            .unsent_telegram_cards(CHAT, t0() + Duration::minutes(2))
            .await
            .expect("unsent")
    };
    // Oldest first; none sent yet.
    assert_eq!(unsent(store.clone()).await, ["a1", "a2"]);

    // A claim wins once per chat; another chat has its own.
    assert!(store
        .claim_telegram_card(CHAT, "a1", t0())
        .await
        .expect("claim"));
    assert!(!store
        .claim_telegram_card(CHAT, "a1", t0())
        .await
        .expect("claim"));
    assert!(store
        .claim_telegram_card(7, "a1", t0())
        .await
        .expect("claim"));
    assert_eq!(unsent(store.clone()).await, ["a2"]);
    let claimed = store
        .telegram_card(CHAT, "a1")
        .await
        .expect("read")
        .expect("claimed");
    assert_eq!(claimed.message_id, None);
    assert_eq!(claimed.view, TelegramView::Card);
    assert_eq!(claimed.sent_at, t0());
    assert!(
        store
            .claim_telegram_card(CHAT, "no-such", t0())
            .await
            .is_err(),
        "foreign key"
    );

    // A crash mid-send leaves the claim; start-up gives it up, so it is sent again.
    assert_eq!(
        store
            .release_unsent_telegram_cards(CHAT)
            .await
            .expect("release"),
        ["a1"]
    );
    assert_eq!(unsent(store.clone()).await, ["a1", "a2"]);
    assert!(
        store.telegram_card(7, "a1").await.expect("read").is_some(),
        "other chat kept"
    );

    // Sent: the message is recorded; releasing leaves a sent card alone.
    assert!(store
        .claim_telegram_card(CHAT, "a1", t0())
        .await
        .expect("claim"));
    let sent = telegram_card("a1", 10, TelegramView::Card);
    store.record_telegram_card(&sent).await.expect("record");
    store
        .release_telegram_card(CHAT, "a1")
        .await
        .expect("release");
    assert!(store
        .release_unsent_telegram_cards(CHAT)
        .await
        .expect("release")
        .is_empty());
    assert_eq!(
        store.telegram_card(CHAT, "a1").await.expect("read"),
        Some(sent.clone())
    );

    // The confirm view, then a restart: what the message shows is still known.
    let confirm = telegram_card("a1", 10, TelegramView::Confirm);
    store.record_telegram_card(&confirm).await.expect("record");
    close(&store).await;
    let store = Store::connect(&db.url).await.expect("reopen");
    assert_eq!(
        store.telegram_card(CHAT, "a1").await.expect("read"),
        Some(confirm)
    );
    assert_eq!(unsent(store.clone()).await, ["a2"]);
    // A lapsed pending row is not sent.
    assert!(store
        .unsent_telegram_cards(CHAT, later.expires_at)
        .await
        .expect("unsent")
        .is_empty());
    // A message learnt from a tap is recorded without a claim; `sent_at` is the first one.
    let mut learnt = telegram_card("a2", 11, TelegramView::Card);
    learnt.shown_text = None;
    store.record_telegram_card(&learnt).await.expect("record");
    let mut again = learnt.clone();
    again.sent_at = t0() + Duration::hours(5);
    store.record_telegram_card(&again).await.expect("record");
    assert_eq!(
        store
            .telegram_card(CHAT, "a2")
            .await
            .expect("read")
            .expect("learnt")
            .sent_at,
        learnt.sent_at
    );
}

async fn unsettled_telegram_cards_are_those_answered_or_lapsed(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    for id in ["a1", "a2", "a3"] {
        store
            .insert(&trash_request(id, &["m1"]))
            .await
            .expect("insert");
        store
            .record_telegram_card(&telegram_card(id, 1, TelegramView::Card))
            .await
            .expect("record");
    }
    let ids = |cards: Vec<TelegramCard>| -> Vec<String> {
        cards.into_iter().map(|c| c.approval_id).collect()
    };
    // All pending: nothing to edit.
    assert!(store
        .unsettled_telegram_cards(CHAT)
        .await
        .expect("read")
        .is_empty());
    store
        .decide(
            "a2",
            &response(
                ApprovalStatus::Rejected,
                "phone",
                t0() + Duration::minutes(2),
            ),
        )
        .await
        .expect("decide");
    store
        .decide(
            "a1",
            &response(
                ApprovalStatus::Approved,
                "phone",
                t0() + Duration::minutes(3),
            ),
        )
        .await
        .expect("decide");
    // Oldest answer first.
    assert_eq!(
        ids(store.unsettled_telegram_cards(CHAT).await.expect("read")),
        ["a2", "a1"]
    );
    assert!(store
        .unsettled_telegram_cards(7)
        .await
        .expect("read")
        .is_empty());
    // Closed on a final outcome: settled, no longer listed. Closed on one still changing: listed.
    let mut rejected = telegram_card("a2", 1, TelegramView::Closed);
    rejected.settled = true;
    store.record_telegram_card(&rejected).await.expect("record");
    store
        .record_telegram_card(&telegram_card("a1", 1, TelegramView::Closed))
        .await
        .expect("record");
    assert_eq!(
        ids(store.unsettled_telegram_cards(CHAT).await.expect("read")),
        ["a1"]
    );
    // The database refuses what cannot be: a confirm view or a settled outcome without a sent
    // message, or a settled card that shows no outcome.
    let mut unsent_confirm = telegram_card("a3", 1, TelegramView::Confirm);
    unsent_confirm.message_id = None;
    assert!(store.record_telegram_card(&unsent_confirm).await.is_err());
    let mut settled_card = telegram_card("a3", 1, TelegramView::Card);
    settled_card.settled = true;
    assert!(store.record_telegram_card(&settled_card).await.is_err());
}

async fn twenty_concurrent_telegram_claims_have_exactly_one_winner(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    store
        .insert(&trash_request("a1", &["m1"]))
        .await
        .expect("insert");
    let barrier = Arc::new(Barrier::new(20));
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let (store, barrier) = (store.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            store
                .claim_telegram_card(CHAT, "a1", t0())
                .await
                .expect("claim")
        }));
    }
    let mut won = 0;
    for task in tasks {
        won += usize::from(task.await.expect("task"));
    }
    assert_eq!(won, 1);
}

// ---------------------------------------------------------------------------------------------
// Corrupt rows fail closed.
// ---------------------------------------------------------------------------------------------

async fn a_corrupt_card_is_reported_not_panicked_on(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    store
        .insert(&trash_request("good", &["m1"]))
        .await
        .expect("insert");
    exec(
        &store,
        "INSERT INTO approvals (id, kind, tool, args, args_canonical, call_hash, items, card, \
         run_id, context_summary, created_at, expires_at) \
         SELECT 'bad', kind, tool, args, args_canonical, call_hash, items, '{\"title\": ', \
         run_id, context_summary, created_at, expires_at FROM approvals WHERE id = 'good'",
    )
    .await
    .expect("raw insert");
    match store.get("bad").await {
        Err(StoreError::Corrupt { id, reason }) => {
            assert_eq!(id, "bad");
            assert!(reason.contains("card"), "{reason}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert!(matches!(
        QueueStore::list(&store, None).await,
        Err(StoreError::Corrupt { .. })
    ));
    assert!(store.get("good").await.expect("get").is_some());
}

async fn unknown_kind_or_bad_times_are_corrupt(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    store
        .insert(&trash_request("good", &["m1"]))
        .await
        .expect("insert");
    let inserts: Vec<String> = [
        ("odd-kind", "'launch_missiles'", "created_at"),
        ("odd-time", "kind", "'yesterday'"),
    ]
    .iter()
    .map(|(id, kind, created)| {
        format!(
            "INSERT INTO approvals (id, kind, tool, args, args_canonical, call_hash, items, card, \
             run_id, context_summary, created_at, expires_at) \
             SELECT '{id}', {kind}, tool, args, args_canonical, call_hash, items, card, run_id, \
             context_summary, {created}, expires_at FROM approvals WHERE id = 'good'"
        )
    })
    .collect();
    exec_without_check_constraints(&store, &inserts).await;
    match store.get("odd-kind").await {
        Err(StoreError::Corrupt { id, reason }) => {
            assert_eq!(id, "odd-kind");
            assert!(reason.contains("launch_missiles"), "{reason}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    match store.get("odd-time").await {
        Err(StoreError::Corrupt { id, reason }) => {
            assert_eq!(id, "odd-time");
            assert!(reason.contains("created_at"), "{reason}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

async fn a_corrupt_checkpoint_is_taken_but_never_returned(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    approved(&store, "a1").await;
    exec(
        &store,
        "INSERT INTO checkpoints (id, approval_id, run_id, conversation_id, body, created_at) \
         VALUES ('cp-bad', 'a1', 'run-a1', 'conv-1', '{\"messages\": [', 'x')",
    )
    .await
    .expect("raw insert");
    match store.take_for_resume("a1").await {
        Err(StoreError::Corrupt { id, .. }) => assert_eq!(id, "cp-bad"),
        other => panic!("expected Corrupt, got {other:?}"),
    }
    // Taken: a sweep will not pick it up again.
    assert!(store.unresumed().await.expect("unresumed").is_empty());
    assert!(store.take_for_resume("a1").await.expect("take").is_none());
}

// ---------------------------------------------------------------------------------------------
// Conversations and devices.
// ---------------------------------------------------------------------------------------------

async fn conversations_keep_transcript_and_lines_in_order(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    assert!(store.transcript("c1").await.expect("transcript").is_empty());
    let first = vec![Message::User {
        content: "hello".to_owned(),
    }];
    store.save_transcript("c1", &first).await.expect("save");
    let second = vec![
        Message::User {
            content: "hello".to_owned(),
        },
        Message::Tool {
            tool_call_id: "call-1".to_owned(),
            content: json!({"ok": true}),
        },
    ];
    store.save_transcript("c1", &second).await.expect("save");
    assert_eq!(store.transcript("c1").await.expect("transcript"), second);

    for (role, text, approval) in [
        ("owner", "trash the promos", None),
        ("assistant", "Waiting for your approval", Some("a1")),
        ("assistant", "Done: trashed 2 emails", None),
    ] {
        store
            .append_line(
                "c1",
                &ChatLine {
                    role: role.to_owned(),
                    text: text.to_owned(),
                    approval_id: approval.map(str::to_owned),
                },
            )
            .await
            .expect("append");
    }
    store
        .append_line(
            "c2",
            &ChatLine {
                role: "owner".to_owned(),
                text: "other".to_owned(),
                approval_id: None,
            },
        )
        .await
        .expect("append");
    let lines = store.lines("c1").await.expect("lines");
    let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "trash the promos",
            "Waiting for your approval",
            "Done: trashed 2 emails"
        ]
    );
    assert_eq!(lines[1].approval_id.as_deref(), Some("a1"));

    exec(
        &store,
        "UPDATE conversations SET transcript = '[{\"role\": \"wizard\"}]' WHERE id = 'c1'",
    )
    .await
    .expect("raw update");
    assert!(matches!(
        store.transcript("c1").await,
        Err(StoreError::Corrupt { id, .. }) if id == "c1"
    ));
}

async fn devices_add_authenticate_list_revoke(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    let phone = Device {
        name: "phone".to_owned(),
        scope: Scope::Control,
        created_at: t0(),
        last_used_at: None,
    };
    let wall = Device {
        name: "wall".to_owned(),
        scope: Scope::Read,
        created_at: t0(),
        last_used_at: None,
    };
    store.add(&phone, "hash-phone").await.expect("add");
    store.add(&wall, "hash-wall").await.expect("add");
    assert!(matches!(
        store.add(&phone, "hash-other").await,
        Err(StoreError::Backend(m)) if m.contains("already exists")
    ));
    assert!(matches!(
        store.add(&Device { name: "tablet".to_owned(), ..wall.clone() }, "hash-wall").await,
        Err(StoreError::Backend(m)) if m.contains("token")
    ));

    let used = t0() + Duration::minutes(7);
    let got = store
        .authenticate("hash-phone", used)
        .await
        .expect("auth")
        .expect("device");
    assert_eq!(got.name, "phone");
    assert_eq!(got.scope, Scope::Control);
    assert_eq!(got.last_used_at, Some(used));
    assert!(store
        .authenticate("hash-nobody", used)
        .await
        .expect("auth")
        .is_none());

    let listed = DeviceStore::list(&store).await.expect("list");
    assert_eq!(
        listed.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
        ["phone", "wall"]
    );
    assert_eq!(listed[0].last_used_at, Some(used));
    assert_eq!(listed[1].scope, Scope::Read);

    assert!(store.is_live("hash-phone").await.expect("live"));
    assert!(!store.is_live("hash-nobody").await.expect("live"));
    assert!(store.revoke("phone").await.expect("revoke"));
    assert!(!store.is_live("hash-phone").await.expect("live"), "revoked");
    assert!(!store.revoke("phone").await.expect("revoke"));
    assert!(!store.revoke("nobody").await.expect("revoke"));
    assert!(store
        .authenticate("hash-phone", used)
        .await
        .expect("auth")
        .is_none());
    assert_eq!(
        DeviceStore::list(&store)
            .await
            .expect("list")
            .iter()
            .map(|d| d.name.as_str())
            .collect::<Vec<_>>(),
        ["wall"]
    );
    // A revoked name can be paired again with a new token; the revocation itself is final.
    store.add(&phone, "hash-phone-2").await.expect("re-add");
    assert!(store
        .authenticate("hash-phone-2", used)
        .await
        .expect("auth")
        .is_some());
    let message = refused(
        &store,
        "UPDATE devices SET revoked_at = NULL WHERE token_hash = 'hash-phone'",
    )
    .await;
    assert!(message.contains("a revocation is final"), "{message}");
    let message = refused(
        &store,
        "UPDATE devices SET scope = 'control' WHERE name = 'wall'",
    )
    .await;
    assert!(
        message.contains("keeps its name, scope and token"),
        "{message}"
    );
}

// ---------------------------------------------------------------------------------------------
// One-time pairing links (issue 5).
// ---------------------------------------------------------------------------------------------

async fn a_pairing_link_pairs_one_device_once_before_it_lapses(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    let made = t0();
    let link = PairingLink::new(Scope::Read, "cli", made);
    store.create_pairing("code-1", &link).await.expect("create");
    assert_eq!(
        store.pairing("code-1").await.expect("read"),
        Some(link.clone())
    );
    assert_eq!(store.pairing("code-x").await.expect("read"), None);
    assert_eq!(
        store
            .redeem_pairing("code-x", "tablet", "hash-t", made)
            .await
            .expect("redeem"),
        Redemption::Unknown
    );

    // A live device's name is refused and the link stays usable.
    let phone = Device {
        name: "phone".to_owned(),
        scope: Scope::Control,
        created_at: made,
        last_used_at: None,
    };
    store.add(&phone, "hash-phone").await.expect("add");
    let at = made + Duration::minutes(3);
    assert_eq!(
        store
            .redeem_pairing("code-1", "phone", "hash-t", at)
            .await
            .expect("redeem"),
        Redemption::NameTaken
    );
    assert!(store
        .pairing("code-1")
        .await
        .expect("read")
        .expect("link")
        .usable_at(at));

    let paired = store
        .redeem_pairing("code-1", "kitchen tablet", "hash-t", at)
        .await
        .expect("redeem");
    let Redemption::Paired(device) = paired else {
        panic!("expected a pairing, got {paired:?}");
    };
    assert_eq!(
        (device.name.as_str(), device.scope),
        ("kitchen tablet", Scope::Read)
    );
    let got = store
        .authenticate("hash-t", at)
        .await
        .expect("auth")
        .expect("the new device authenticates");
    assert_eq!(got.scope, Scope::Read, "the link's scope, nothing else");
    assert_eq!(
        store
            .redeem_pairing("code-1", "second", "hash-2", at)
            .await
            .expect("redeem"),
        Redemption::AlreadyUsed {
            device_name: "kitchen tablet".into(),
            used_at: at
        }
    );
    assert!(store
        .authenticate("hash-2", at)
        .await
        .expect("auth")
        .is_none());

    // Ten minutes after it was made, an unused link pairs nobody.
    store
        .create_pairing("code-2", &PairingLink::new(Scope::Control, "cli", made))
        .await
        .expect("create");
    assert_eq!(
        store
            .redeem_pairing("code-2", "late", "hash-late", made + Duration::minutes(10))
            .await
            .expect("redeem"),
        Redemption::Lapsed {
            expires_at: made + Duration::minutes(10)
        }
    );
    assert!(store
        .authenticate("hash-late", made)
        .await
        .expect("auth")
        .is_none());

    // The database keeps a used link used and its terms fixed.
    let message = refused(
        &store,
        "UPDATE pairing_links SET used_at = NULL, device_name = NULL WHERE code_hash = 'code-1'",
    )
    .await;
    assert!(message.contains("pairs one device once"), "{message}");
    let message = refused(
        &store,
        "UPDATE pairing_links SET scope = 'read' WHERE code_hash = 'code-2'",
    )
    .await;
    assert!(message.contains("terms never change"), "{message}");
    let message = refused(&store, "UPDATE pairing_links SET expires_at = '2999-01-01T00:00:00.000000000Z' WHERE code_hash = 'code-2'").await;
    assert!(message.contains("terms never change"), "{message}");
}

async fn concurrent_redemptions_of_one_link_pair_one_device(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    for round in 0..3 {
        let code = format!("code-{round}");
        store
            .create_pairing(&code, &PairingLink::new(Scope::Control, "cli", t0()))
            .await
            .expect("create");
        let barrier = Arc::new(Barrier::new(10));
        let mut tasks = Vec::new();
        for i in 0..10 {
            let (store, barrier, code) = (store.clone(), barrier.clone(), code.clone());
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                store
                    .redeem_pairing(
                        &code,
                        &format!("browser-{round}-{i}"),
                        &format!("hash-{round}-{i}"),
                        t0() + Duration::seconds(1),
                    )
                    .await
                    .expect("redeem")
            }));
        }
        let mut paired = 0;
        for task in tasks {
            match task.await.expect("task") {
                Redemption::Paired(_) => paired += 1,
                Redemption::AlreadyUsed { .. } => {}
                other => panic!("round {round}: unexpected {other:?}"),
            }
        }
        assert_eq!(paired, 1, "round {round}");
    }
    assert_eq!(DeviceStore::list(&store).await.expect("list").len(), 3);
}

// ---------------------------------------------------------------------------------------------
// Nothing is lost: reopening the same database.
// ---------------------------------------------------------------------------------------------

async fn rows_survive_reopening_the_database(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    store
        .insert(&trash_request("pending", &["m1"]))
        .await
        .expect("insert");
    let row = approved(&store, "approved").await;
    store
        .claim(
            "approved",
            &row.tool,
            &row.args_canonical,
            t0() + Duration::minutes(2),
        )
        .await
        .expect("claim");
    store.save(&checkpoint("approved")).await.expect("save");
    store
        .append(&NewAuditEntry {
            approval_id: "approved".to_owned(),
            kind: AuditKind::Decision,
            item: None,
            result: json!("approve"),
            undo_available: false,
            actor: "owner-phone".to_owned(),
            surface: Some("web".to_owned()),
            at: t0(),
        })
        .await
        .expect("append");
    store
        .add(
            &Device {
                name: "cli".to_owned(),
                scope: Scope::Control,
                created_at: t0(),
                last_used_at: None,
            },
            "hash-cli",
        )
        .await
        .expect("add");
    store
        .save_transcript(
            "c1",
            &[Message::User {
                content: "hi".to_owned(),
            }],
        )
        .await
        .expect("save");
    close(&store).await;
    drop(store);

    let reopened = Store::connect(&db.url).await.expect("reconnect");
    let pending = reopened.get("pending").await.expect("get").expect("row");
    assert_eq!(pending.status, ApprovalStatus::Pending);
    let approved_row = reopened.get("approved").await.expect("get").expect("row");
    assert_eq!(approved_row.status, ApprovalStatus::Approved);
    assert_eq!(approved_row.execution, Execution::Executing);
    assert_eq!(reopened.entries(None).await.expect("entries").len(), 1);
    assert!(reopened
        .authenticate("hash-cli", t0())
        .await
        .expect("auth")
        .is_some());
    assert_eq!(
        reopened.transcript("c1").await.expect("transcript").len(),
        1
    );
    assert_eq!(
        reopened.unresumed().await.expect("unresumed"),
        vec!["approved".to_owned()]
    );
    // Start-up after a crash: the interrupted execution becomes unknown.
    assert_eq!(
        reopened.mark_unknown().await.expect("mark"),
        vec!["approved".to_owned()]
    );
}

// ---------------------------------------------------------------------------------------------
// Both engines behave alike where their defaults differ.
// ---------------------------------------------------------------------------------------------

async fn instants_round_trip_to_the_nanosecond(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    let mut request = trash_request("a1", &["m1"]);
    request.created_at = t0() + Duration::nanoseconds(123_456_789);
    request.expires_at = request.created_at + Duration::hours(1);
    store.insert(&request).await.expect("insert");
    let answered = request.created_at + Duration::nanoseconds(1);
    assert!(store
        .decide("a1", &response(ApprovalStatus::Approved, "web", answered))
        .await
        .expect("decide"));
    let row = store.get("a1").await.expect("get").expect("row");
    assert_eq!(row.created_at, request.created_at);
    assert_eq!(row.responded_at, Some(answered));
    assert_eq!(
        raw_column(&store, "a1", "created_at").await.as_deref(),
        Some("2026-03-01T09:00:00.123456789Z")
    );
    // One nanosecond before expiry still counts as in time.
    store
        .insert(&trash_request("a2", &["m2"]))
        .await
        .expect("insert");
    let expiry = t0() + Duration::hours(1);
    assert!(store
        .decide(
            "a2",
            &response(
                ApprovalStatus::Approved,
                "web",
                expiry - Duration::nanoseconds(1)
            )
        )
        .await
        .expect("decide"));
}

async fn text_orders_by_bytes(engine: Engine) {
    // Ids and names sort in byte order on both engines, whatever PostgreSQL's default collation.
    let db = engine.open().await;
    let store = db.store.clone();
    for (i, name) in ["alpha", "Émile", "Zed", "bravo"].iter().enumerate() {
        store
            .add(
                &Device {
                    name: (*name).to_owned(),
                    scope: Scope::Read,
                    created_at: t0(),
                    last_used_at: None,
                },
                &format!("hash-{i}"),
            )
            .await
            .expect("add");
    }
    let names: Vec<String> = DeviceStore::list(&store)
        .await
        .expect("list")
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(names, ["Zed", "alpha", "bravo", "Émile"]);
    let expiry = t0() + Duration::hours(1);
    for id in ["b", "B", "a"] {
        store
            .insert(&trash_request(id, &["m1"]))
            .await
            .expect("insert");
    }
    assert_eq!(store.lapsed(expiry).await.expect("lapsed"), ["B", "a", "b"]);
}

// ---------------------------------------------------------------------------------------------
// The suite, once per engine.
// ---------------------------------------------------------------------------------------------

/// Defines one `#[tokio::test]` per listed body, running it on `$engine`.
macro_rules! engine_tests {
    ($engine:expr; $( $(#[$attr:meta])* $name:ident ),* $(,)?) => {
        $(
            $(#[$attr])*
            async fn $name() {
                super::$name($engine).await;
            }
        )*
    };
}

/// Every engine-generic test body, with its runtime.
macro_rules! suite {
    ($engine:expr) => {
        engine_tests! { $engine;
            #[tokio::test] id_is_immutable,
            #[tokio::test] kind_is_immutable,
            #[tokio::test] tool_is_immutable,
            #[tokio::test] args_are_immutable,
            #[tokio::test] args_canonical_is_immutable,
            #[tokio::test] call_hash_is_immutable,
            #[tokio::test] items_are_immutable,
            #[tokio::test] card_is_immutable,
            #[tokio::test] run_id_is_immutable,
            #[tokio::test] context_summary_is_immutable,
            #[tokio::test] created_at_is_immutable,
            #[tokio::test] expires_at_is_immutable,
            #[tokio::test] preconditions_are_immutable,
            #[tokio::test] mutable_bookkeeping_columns_still_update,
            #[tokio::test] response_is_written_once,
            #[tokio::test] a_pending_row_takes_a_response_only_with_its_decision,
            #[tokio::test] approvals_are_never_deleted,
            #[tokio::test] audit_log_is_append_only,
            #[tokio::test] insert_and_get_round_trip,
            #[tokio::test] insert_refuses_args_that_are_not_what_is_hashed,
            #[tokio::test] decide_records_the_response_and_refuses_lapsed_rows,
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            fifty_concurrent_decides_have_exactly_one_winner,
            #[tokio::test] list_puts_pending_first_oldest_first_then_newest_answer_first,
            #[tokio::test] claim_is_granted_once_for_exactly_the_approved_call,
            #[tokio::test] claim_denials_name_the_rule,
            #[tokio::test] the_database_refuses_a_ledger_entry_that_bypasses_the_claim_rule,
            #[tokio::test] an_evaluator_halt_is_never_claimed,
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            twenty_concurrent_claims_have_exactly_one_winner,
            #[tokio::test] ledger_outcomes_show_on_the_approval_and_crashes_become_unknown,
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            take_for_resume_has_exactly_one_winner,
            #[tokio::test] unresumed_lists_only_decided_rows_with_a_waiting_checkpoint,
            #[tokio::test] a_failed_resume_is_taken_again_only_for_a_retry,
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            twenty_concurrent_retries_have_exactly_one_winner,
            #[tokio::test] the_conversation_of_a_checkpoint_is_read_without_its_body,
            #[tokio::test] preconditions_round_trip_and_corrupt_ones_fail_closed,
            #[tokio::test] a_telegram_card_is_claimed_once_per_chat_and_survives_reopening,
            #[tokio::test] unsettled_telegram_cards_are_those_answered_or_lapsed,
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            twenty_concurrent_telegram_claims_have_exactly_one_winner,
            #[tokio::test] a_corrupt_card_is_reported_not_panicked_on,
            #[tokio::test] unknown_kind_or_bad_times_are_corrupt,
            #[tokio::test] a_corrupt_checkpoint_is_taken_but_never_returned,
            #[tokio::test] conversations_keep_transcript_and_lines_in_order,
            #[tokio::test] devices_add_authenticate_list_revoke,
            #[tokio::test] a_pairing_link_pairs_one_device_once_before_it_lapses,
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            concurrent_redemptions_of_one_link_pair_one_device,
            #[tokio::test] rows_survive_reopening_the_database,
            #[tokio::test] instants_round_trip_to_the_nanosecond,
            #[tokio::test] text_orders_by_bytes,
        }
    };
}

/// The suite on SQLite files, plus what only SQLite has.
mod sqlite {
    use super::*;

    suite!(Engine::Sqlite);

    #[tokio::test]
    async fn in_memory_database_works_with_one_connection() {
        let store = SqliteStore::connect("sqlite::memory:")
            .await
            .expect("connect");
        store
            .insert(&trash_request("a1", &["m1"]))
            .await
            .expect("insert");
        assert!(store.get("a1").await.expect("get").is_some());
        let other = SqliteStore::connect("sqlite::memory:")
            .await
            .expect("connect");
        assert!(other.get("a1").await.expect("get").is_none());
        assert_eq!(store.pool().size(), 1);
    }

    #[tokio::test]
    async fn store_connect_chooses_sqlite_by_scheme() {
        let store = Store::connect("sqlite::memory:").await.expect("connect");
        assert_eq!(store.engine(), "sqlite");
        assert!(store.as_sqlite().is_some());
        assert!(store.as_postgres().is_none());
    }
}

/// The suite on PostgreSQL databases, plus what only PostgreSQL has.
mod postgres {
    use super::*;

    suite!(Engine::Postgres);

    #[tokio::test]
    async fn truncate_is_refused_like_delete() {
        let db = Engine::Postgres.open().await;
        approved(&db.store, "a1").await;
        for (table, rule) in [
            ("audit_log", "the audit log is append-only"),
            ("checkpoints", "checkpoints are never deleted"),
            ("ledger", "ledger entries are never deleted"),
            ("approvals", "approval rows are never deleted"),
        ] {
            let message = refused(&db.store, &format!("TRUNCATE {table} CASCADE")).await;
            assert!(message.contains(rule), "{table}: {message}");
        }
        assert!(db.store.get("a1").await.expect("get").is_some());
    }

    #[tokio::test]
    async fn store_connect_chooses_postgres_by_either_scheme() {
        let (url, _guard) = fresh_postgres_database().await;
        let store = Store::connect(&url).await.expect("connect");
        assert_eq!(store.engine(), "postgres");
        assert!(store.as_postgres().is_some());
        assert!(store.as_sqlite().is_none());
        let long = url.replacen("postgres://", "postgresql://", 1);
        assert!(long.starts_with("postgresql://"), "{long}");
        let again = Store::connect(&long).await.expect("connect postgresql://");
        again
            .insert(&trash_request("a1", &["m1"]))
            .await
            .expect("insert");
        // Migrations ran once: the second connect found the schema in place.
        assert!(store.get("a1").await.expect("get").is_some());
        close(&store).await;
        close(&again).await;
    }

    #[tokio::test]
    async fn a_missing_database_is_a_clear_error() {
        // Reachability first, so an absent server fails with the start-it message.
        let admin_url = postgres_admin_url();
        let _ = admin_connection(&admin_url).await.close().await;
        let url = with_database(&admin_url, "iris_test_does_not_exist");
        match PgStore::connect(&url).await {
            Err(StoreError::Backend(message)) => {
                assert!(message.contains("does not exist"), "{message}");
                assert!(message.contains("create the database"), "{message}");
            }
            other => panic!("expected Backend, got {other:?}"),
        }
    }
}

/// Choosing the engine, without any database.
mod connect {
    use super::*;

    #[tokio::test]
    async fn an_unknown_scheme_names_the_setting_and_not_the_password() {
        for url in ["mysql://iris:s3cret@db/iris", "./data/iris.db", ""] {
            match Store::connect(url).await {
                Err(StoreError::Backend(message)) => {
                    assert!(message.contains("IRIS_DATABASE_URL"), "{message}");
                    assert!(message.contains("sqlite:"), "{message}");
                    assert!(message.contains("postgres:"), "{message}");
                    assert!(!message.contains("s3cret"), "{message}");
                }
                other => panic!("{url}: expected Backend, got {other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn postgres_errors_never_show_the_password() {
        // Port 1: nothing listens, the connection is refused at once.
        match Store::connect("postgres://iris:s3cret@127.0.0.1:1/iris").await {
            Err(StoreError::Backend(message)) => {
                assert!(message.contains("connecting to PostgreSQL"), "{message}");
                assert!(message.contains("iris:***@127.0.0.1:1"), "{message}");
                assert!(!message.contains("s3cret"), "{message}");
            }
            other => panic!("expected Backend, got {other:?}"),
        }
    }
}
