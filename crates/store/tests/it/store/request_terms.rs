//! What was approved cannot change, enforced by the database itself (DESIGN §2, §6): every
//! request term is immutable (one test per column), the response is written once and only with
//! its decision, and nothing is deleted (on PostgreSQL not by `TRUNCATE` either).

use crate::common;

use common::*;

// ---------------------------------------------------------------------------------------------
// Request terms are immutable, enforced by the database (one test per column).
// ---------------------------------------------------------------------------------------------

/// Asserts that `UPDATE approvals SET {column} = {value}` is refused on a pending row and on an
/// approved one, naming the rule and the column, and that the stored value did not change.
async fn assert_column_immutable(engine: Engine, column: &str, value: &str) {
    let db = engine.open().await;
    let store = db.store.clone();
    insert(&store, &trash_request("a1", &["m1"]))
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
            message.contains("an approval response is written once (DESIGN §2"),
            "{assignment}: {message}"
        );
    }
    let row = store.approval("a1").await.expect("get").expect("row");
    assert_eq!(row.status, ApprovalStatus::Approved);
    assert_eq!(row.responded_by.as_deref(), Some("owner-phone"));
    assert_eq!(row.surface.as_deref(), Some("web"));

    // The store's own compare-and-set also loses now.
    let late = decide(
        &store,
        "a1",
        &response(ApprovalStatus::Rejected, "cli", t0() + Duration::minutes(2)),
    )
    .await
    .expect("decide");
    assert!(!late);
}

/// A rejection may be given its reason once after the decision (docs/adr/0125-reason-after-
/// reject.md): by the store's unit or raw SQL alike, only NULL to text, only on a rejected row.
async fn a_rejection_takes_its_reason_once(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    insert(&store, &trash_request("r1", &["m1"]))
        .await
        .expect("insert");
    let won = decide(
        &store,
        "r1",
        &response(
            ApprovalStatus::Rejected,
            "owner-phone",
            t0() + Duration::minutes(1),
        ),
    )
    .await
    .expect("decide");
    assert!(won);
    let outbox = iris_core::ports::Outbox::default();
    let written = store
        .add_reason("r1", "not these", &outbox)
        .await
        .expect("add");
    // Written, with the conversation of the row's paused run (the test rows' checkpoints).
    assert_eq!(written, Some(Some("conv-1".to_owned())));
    assert_eq!(
        store
            .add_reason("r1", "changed my mind", &outbox)
            .await
            .expect("again"),
        None
    );
    for assignment in ["reason = 'changed my mind'", "reason = NULL"] {
        let message = refused(
            &store,
            &format!("UPDATE approvals SET {assignment} WHERE id = 'r1'"),
        )
        .await;
        assert!(message.contains("written once"), "{assignment}: {message}");
    }
    let row = store.approval("r1").await.expect("get").expect("row");
    assert_eq!(row.reason.as_deref(), Some("not these"));
    // An approved row takes none, by the unit or by SQL.
    approved(&store, "a1").await;
    assert_eq!(
        store.add_reason("a1", "why", &outbox).await.expect("add"),
        None
    );
    let message = refused(
        &store,
        "UPDATE approvals SET reason = 'why' WHERE id = 'a1'",
    )
    .await;
    assert!(message.contains("written once"), "{message}");
}

async fn a_pending_row_takes_a_response_only_with_its_decision(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    insert(&store, &trash_request("a1", &["m1"]))
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
        store
            .approval("a1")
            .await
            .expect("get")
            .expect("row")
            .status,
        ApprovalStatus::Pending
    );
}

async fn approvals_are_never_deleted(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    insert(&store, &trash_request("a1", &["m1"]))
        .await
        .expect("insert");
    approved(&store, "a2").await;
    for id in ["a1", "a2"] {
        let message = refused(&store, &format!("DELETE FROM approvals WHERE id = '{id}'")).await;
        assert!(
            message.contains("approval rows are never deleted"),
            "{message}"
        );
        assert!(store.approval(id).await.expect("get").is_some());
    }
}

// ---------------------------------------------------------------------------------------------
// The suite, once per engine.
// ---------------------------------------------------------------------------------------------

/// Every engine-generic test body of this module, with its runtime.
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
            #[tokio::test] response_is_written_once,
            #[tokio::test] a_rejection_takes_its_reason_once,
            #[tokio::test] a_pending_row_takes_a_response_only_with_its_decision,
            #[tokio::test] approvals_are_never_deleted,
        }
    };
}

mod sqlite {
    use super::*;

    suite!(Engine::Sqlite);
}

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
        assert!(db.store.approval("a1").await.expect("get").is_some());
    }
}
