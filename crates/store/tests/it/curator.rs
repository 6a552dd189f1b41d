//! The curator table (DESIGN §2 "escalation") on both engines: records round-trip in insertion
//! order and filter by conversation; the database refuses an off-mode record, an acted record
//! with a reason not to, a shadow record that acted, updates and deletes (append-only); a
//! corrupt row is reported as corrupt, never guessed.
//!
//! PostgreSQL: a fresh `iris_test_<random>` database per test through `IRIS_TEST_POSTGRES_URL`
//! (default `postgres://postgres@127.0.0.1:5432/postgres`); the test fails when it is unreachable.

use chrono::{DateTime, Duration, TimeZone, Utc};
use iris_core::escalation::{CuratorRecord, CuratorStore, EscalationMode, NotActed, Verdict};
use iris_core::ports::StoreError;
use iris_store::testing::{fresh_postgres_database, DropDatabase};
use iris_store::Store;

/// A store on a fresh database, and what removes it.
#[allow(dead_code)]
enum Cleanup {
    Dir(tempfile::TempDir),
    Database(DropDatabase),
}

async fn sqlite() -> (Store, Cleanup) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/iris.db", dir.path().display());
    (Store::connect(&url).await.unwrap(), Cleanup::Dir(dir))
}

async fn postgres() -> (Store, Cleanup) {
    let (url, guard) = fresh_postgres_database().await;
    (
        Store::connect(&url).await.unwrap(),
        Cleanup::Database(guard),
    )
}

fn at(n: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 4, 5, 6, 7).unwrap() + Duration::nanoseconds(123_456_789 + n)
}

fn record(id: &str, conversation: &str, hop: u32, mode: EscalationMode) -> CuratorRecord {
    CuratorRecord {
        id: id.into(),
        run_id: format!("run-{id}"),
        conversation_id: conversation.into(),
        hop,
        verdict: Verdict::Escalate,
        reason: "the reply says it cannot do it".into(),
        mode,
        acted: mode == EscalationMode::Enforce,
        not_acted: (mode != EscalationMode::Enforce).then_some(NotActed::Shadow),
        at: at(i64::from(hop)),
    }
}

async fn exec(store: &Store, sql: &str) -> Result<u64, sqlx::Error> {
    sqlx::query(sql)
        .execute(store.pool())
        .await
        .map(|d| d.rows_affected())
}

async fn round_trip_and_order(store: Store) {
    let a = record("a", "c1", 0, EscalationMode::Enforce);
    let mut b = record("b", "c1", 1, EscalationMode::Enforce);
    b.acted = false;
    b.not_acted = Some(NotActed::HopLimit);
    b.verdict = Verdict::Clarify;
    let c = record("c", "c2", 0, EscalationMode::Shadow);
    let mut d = record("d", "c1", 2, EscalationMode::Shadow);
    d.verdict = Verdict::Ok;
    d.not_acted = Some(NotActed::EffectsUnknown);
    // Written out of time order: reads come back in insertion order.
    d.at = at(-5);
    for r in [&a, &b, &c, &d] {
        store.record(r).await.unwrap();
    }
    assert_eq!(
        store.records(Some("c1")).await.unwrap(),
        vec![a.clone(), b.clone(), d.clone()]
    );
    assert_eq!(store.records(Some("c2")).await.unwrap(), vec![c.clone()]);
    assert_eq!(store.records(None).await.unwrap(), vec![a, b, c, d]);
    assert!(store.records(Some("nobody")).await.unwrap().is_empty());
}

async fn the_database_refuses_bad_records(store: Store) {
    let good = record("g", "c", 0, EscalationMode::Enforce);
    store.record(&good).await.unwrap();
    // Same id twice.
    assert!(matches!(
        store.record(&good).await,
        Err(StoreError::Refused(_))
    ));
    // Off records nothing.
    let mut off = record("off", "c", 0, EscalationMode::Off);
    off.not_acted = Some(NotActed::Shadow);
    assert!(store.record(&off).await.is_err());
    // Acted with a reason not to.
    let mut both = record("both", "c", 0, EscalationMode::Enforce);
    both.not_acted = Some(NotActed::Resumed);
    assert!(store.record(&both).await.is_err());
    // Did not act, and no reason.
    let mut neither = record("neither", "c", 0, EscalationMode::Enforce);
    neither.acted = false;
    assert!(store.record(&neither).await.is_err());
    // A shadow verdict that acted.
    let mut shadow = record("shadow", "c", 0, EscalationMode::Shadow);
    shadow.acted = true;
    shadow.not_acted = None;
    assert!(store.record(&shadow).await.is_err());
    assert_eq!(store.records(None).await.unwrap(), vec![good]);

    // Append-only.
    let update = exec(&store, "UPDATE curator_verdicts SET verdict = 'ok'").await;
    assert!(
        update.unwrap_err().to_string().contains("append-only"),
        "update was allowed"
    );
    let delete = exec(&store, "DELETE FROM curator_verdicts").await;
    assert!(
        delete.unwrap_err().to_string().contains("append-only"),
        "delete was allowed"
    );
    if store.engine() == iris_store::Engine::Postgres {
        let truncate = exec(&store, "TRUNCATE curator_verdicts").await;
        assert!(truncate.unwrap_err().to_string().contains("append-only"));
    }
    assert_eq!(store.records(None).await.unwrap().len(), 1);
}

async fn a_corrupt_row_is_reported(store: Store) {
    // A time that does not parse passes the schema's checks but not the reader.
    exec(
        &store,
        "INSERT INTO curator_verdicts (id, run_id, conversation_id, hop, verdict, reason, mode, \
         acted, not_acted, at) VALUES ('bad', 'r', 'c', 0, 'ok', 'x', 'shadow', false, 'shadow', \
         'yesterday')",
    )
    .await
    .unwrap();
    match store.records(None).await {
        Err(StoreError::Corrupt { id, reason }) => {
            assert!(id.contains("bad"), "{id}");
            assert!(reason.contains("curator_verdicts.at"), "{reason}");
        }
        other => panic!("expected a corrupt record, got {other:?}"),
    }
}

#[tokio::test]
async fn sqlite_round_trip_and_order() {
    let (s, _c) = sqlite().await;
    round_trip_and_order(s).await;
}

#[tokio::test]
async fn postgres_round_trip_and_order() {
    let (s, _c) = postgres().await;
    round_trip_and_order(s).await;
}

#[tokio::test]
async fn sqlite_refuses_bad_records() {
    let (s, _c) = sqlite().await;
    the_database_refuses_bad_records(s).await;
}

#[tokio::test]
async fn postgres_refuses_bad_records() {
    let (s, _c) = postgres().await;
    the_database_refuses_bad_records(s).await;
}

#[tokio::test]
async fn sqlite_corrupt_row() {
    let (s, _c) = sqlite().await;
    a_corrupt_row_is_reported(s).await;
}

#[tokio::test]
async fn postgres_corrupt_row() {
    let (s, _c) = postgres().await;
    a_corrupt_row_is_reported(s).await;
}
