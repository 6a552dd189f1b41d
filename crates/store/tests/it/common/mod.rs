//! Fixtures of the store suites: a fresh database per test on either engine with a clock the
//! test moves, raw SQL for what the store's API cannot do (forging and corrupting rows), and the
//! lifecycle's units called as the approvals service calls them.

#![allow(dead_code, unused_imports)]

pub use std::sync::Arc;

pub use chrono::{DateTime, Duration, TimeZone, Utc};
pub use iris_core::canonical::{call_hash, canonical_json};
pub use iris_core::model::{Message, ToolCall};
pub use iris_core::pairing::{PairingLink, Redemption};
pub use iris_core::ports::{
    ApprovalFilter, ApprovalStore, Checkpoint, Decided, DecisionCommit, DecisionRead, Device,
    DeviceStore, HaltRecord, ManualClock, NewApproval, NewAuditEntry, PairingStore, Response,
    Scope, StoreError, TelegramCard, TelegramCardStore, TelegramView, TurnCommit,
};
pub use iris_core::wire::{
    Approval, ApprovalKind, ApprovalStatus, AuditKind, Card, ChatLine, Effect, Execution,
};
pub use iris_store::testing::{
    admin_connection, fresh_postgres_database, postgres_admin_url, with_database, DropDatabase,
};
pub use iris_store::{Store, StoreOptions, TimeSource};
pub use serde_json::json;
pub use sqlx::Connection;
pub use tempfile::TempDir;
pub use tokio::sync::Barrier;

// ---------------------------------------------------------------------------------------------
// The two engines.
// ---------------------------------------------------------------------------------------------

/// Which engine a test body runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

impl Engine {
    /// The SQL spelling for this engine, where the two differ.
    pub fn pick(self, sqlite: &'static str, postgres: &'static str) -> &'static str {
        match self {
            Engine::Sqlite => sqlite,
            Engine::Postgres => postgres,
        }
    }
}

/// A fresh, empty database of one engine, removed when dropped.
pub struct TestDb {
    /// The store on it (schema migrated), its "now" from [`TestDb::clock`].
    pub store: Store,
    /// The store's time source: every lease and expiry comparison reads it.
    pub clock: Arc<ManualClock>,
    /// Its url, to connect again.
    pub url: String,
    /// Removes the database: the temporary directory of the SQLite file, or the PostgreSQL
    /// database. Declared last, so it is dropped after the store.
    _cleanup: Cleanup,
}

/// What removes a test database when dropped (held only for its `Drop`).
#[allow(dead_code)]
pub enum Cleanup {
    Dir(TempDir),
    Database(DropDatabase),
}

/// Opens `url` with `clock` as its time source.
pub async fn connect(url: &str, clock: &Arc<ManualClock>) -> Store {
    Store::connect_with(
        url,
        StoreOptions {
            time: TimeSource::Clock(clock.clone()),
            ..StoreOptions::default()
        },
    )
    .await
    .expect("connect")
}

impl Engine {
    /// A fresh database: for SQLite a file in its own temporary directory (a nested path, so the
    /// parent directories are created by `connect`); for PostgreSQL a new database. Its clock
    /// stands at [`t0`].
    pub async fn open(self) -> TestDb {
        let clock = Arc::new(ManualClock::new(t0()));
        match self {
            Engine::Sqlite => {
                let dir = tempfile::tempdir().expect("tempdir");
                let url = format!("sqlite://{}/nested/data/iris.db", dir.path().display());
                let store = connect(&url, &clock).await;
                assert_eq!(store.engine(), iris_store::Engine::Sqlite);
                TestDb {
                    store,
                    clock,
                    url,
                    _cleanup: Cleanup::Dir(dir),
                }
            }
            Engine::Postgres => {
                let (url, guard) = fresh_postgres_database().await;
                let store = connect(&url, &clock).await;
                assert_eq!(store.engine(), iris_store::Engine::Postgres);
                TestDb {
                    store,
                    clock,
                    url,
                    _cleanup: Cleanup::Database(guard),
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Raw SQL on either engine (for what the store's API cannot do: forging and corrupting rows).
// ---------------------------------------------------------------------------------------------

/// Runs one raw statement; the number of rows it changed.
pub async fn exec(store: &Store, sql: &str) -> Result<u64, sqlx::Error> {
    sqlx::query(sql)
        .execute(store.pool())
        .await
        .map(|d| d.rows_affected())
}

/// Runs raw inserts with the `approvals.kind` check constraint lifted, to plant a corrupt row.
pub async fn exec_without_check_constraints(store: &Store, statements: &[String]) {
    match store.engine() {
        iris_store::Engine::Sqlite => {
            let mut conn = store.pool().acquire().await.expect("conn");
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
        iris_store::Engine::Postgres => {
            let mut tx = store.pool().begin().await.expect("begin");
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
pub async fn close(store: &Store) {
    store.pool().close().await;
}

// ---------------------------------------------------------------------------------------------
// The lifecycle's units, as the approvals service calls them.
// ---------------------------------------------------------------------------------------------

/// Pairs a live agent device `name` (a token hash of its own each time).
pub async fn pair_agent(store: &Store, name: &str) {
    let device = Device {
        name: name.to_owned(),
        scope: Scope::Agent,
        created_at: t0(),
        last_used_at: None,
    };
    let hash = format!("hash-{name}-{}", uuid::Uuid::new_v4().simple());
    DeviceStore::add(store, &device, &hash).await.unwrap();
}

/// Writes `row` as a halt would: the row, its checkpoint and their link, in one commit.
pub async fn insert(store: &Store, row: &NewApproval) -> Result<(), StoreError> {
    // Every card here is in one conversation: each halt writes over the version it read.
    let read = store.transcript("conv-1").await?;
    store
        .commit_turn(&TurnCommit {
            conversation_id: "conv-1".to_owned(),
            transcript: checkpoint(&row.id).messages,
            transcript_version: read.version,
            lines: Vec::new(),
            actions: Vec::new(),
            halt: Some(HaltRecord {
                approval: row.clone(),
                checkpoint: checkpoint(&row.id),
            }),
            outbox: iris_core::ports::Outbox::default(),
        })
        .await
}

/// Stores `response` for `id` as respond (or expire) would, with its audit entry and job,
/// whatever the row holds: the store's compare-and-set alone decides. Whether it won.
pub async fn decide(store: &Store, id: &str, response: &Response) -> Result<bool, StoreError> {
    let commit = |read: &DecisionRead| {
        let mut after = read.approval.clone();
        after.status = response.status;
        Some(DecisionCommit {
            response: response.clone(),
            audit: NewAuditEntry {
                approval_id: id.to_owned(),
                kind: if response.status == ApprovalStatus::Expired {
                    AuditKind::Lapse
                } else {
                    AuditKind::Decision
                },
                item: None,
                result: json!({"decision": response.status.as_str()}),
                undo_available: false,
                actor: response.responded_by.clone(),
                surface: Some(response.surface.clone()),
                at: response.at,
            },
            after,
            outbox: iris_core::ports::Outbox::default(),
            passkey: None,
        })
    };
    Ok(matches!(
        store.decide(id, None, &commit).await?,
        Decided::Written(_)
    ))
}

/// The rows in `status` (every row with `None`).
pub async fn list(
    store: &Store,
    status: Option<ApprovalStatus>,
) -> Result<Vec<Approval>, StoreError> {
    store.approvals(&ApprovalFilter { status }).await
}

// ---------------------------------------------------------------------------------------------
// Fixtures.
// ---------------------------------------------------------------------------------------------

/// A fixed "now" for the tests (no wall clock in the assertions).
pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 9, 0, 0)
        .single()
        .expect("valid time")
}

/// A destructive `trash_email` request for `ids`, written at `t0`, lapsing an hour later.
pub fn trash_request(id: &str, ids: &[&str]) -> NewApproval {
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
            undo_action: None,
            preview: Vec::new(),
            overlaps: Vec::new(),
            items_arg: None,
            editable: Vec::new(),
            trail: Vec::new(),
            flags: Vec::new(),
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
        passkey_required: false,
        requested_by: None,
    }
}

pub fn response(status: ApprovalStatus, by: &str, at: DateTime<Utc>) -> Response {
    Response {
        status,
        responded_by: by.to_owned(),
        surface: "web".to_owned(),
        reason: None,
        at,
        decided: None,
    }
}

/// Inserts a request and approves it at `t0 + 1 min`.
pub async fn approved(store: &Store, id: &str) -> NewApproval {
    let row = trash_request(id, &["m1", "m2"]);
    insert(store, &row).await.expect("insert");
    let won = decide(
        store,
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

pub fn checkpoint(approval_id: &str) -> Checkpoint {
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
pub async fn refused(store: &Store, sql: &str) -> String {
    match exec(store, sql).await {
        Ok(rows) => panic!("the database accepted `{sql}` ({rows} rows)"),
        Err(e) => e.to_string(),
    }
}

/// The raw text of one column of an approval row.
pub async fn raw_column(store: &Store, id: &str, column: &str) -> Option<String> {
    let sql = format!("SELECT CAST({column} AS TEXT) FROM approvals WHERE id = $1");
    sqlx::query_scalar::<_, Option<String>>(&sql)
        .bind(id)
        .fetch_one(store.pool())
        .await
        .expect("read column")
}
