//! An upgrade in place (DESIGN §8 "nothing is lost"): a database made by the schema before the
//! resume queue (migrations up to 0015), holding a pending row, decided rows whose run never
//! resumed, one whose resume a stop interrupted mid-call (ledger `executing`), one whose resume
//! failed, one that resumed and ended, and one whose run was never saved, is migrated by opening
//! it with the current store. Afterwards the pending row is still answerable, every decided row
//! is a job that resumes once (or waits for the owner's retry), the interrupted call is
//! `unknown` and is never run again, and the row without a saved run is claimed like any other
//! (and then fails with its reason on the card).

use crate::common;

use std::borrow::Cow;

use common::*;
use iris_core::ports::{ClaimPlan, JobOrigin, JobPick, JobSnapshot, SavedRun};

/// The schema as main had it before the resume queue: every migration up to 0015.
fn before_the_queue(all: &sqlx::migrate::Migrator) -> sqlx::migrate::Migrator {
    sqlx::migrate::Migrator {
        migrations: Cow::Owned(
            all.migrations
                .iter()
                .filter(|m| m.version <= 15)
                .cloned()
                .collect(),
        ),
        ignore_missing: false,
        locking: true,
        no_tx: false,
    }
}

static SQLITE: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/sqlite");
static POSTGRES: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/postgres");

/// The statements the old store ran, for one row in each state.
fn old_rows() -> Vec<String> {
    let mut sql = Vec::new();
    let row = |id: &str, created: &str| {
        let r = trash_request(id, &["m1"]);
        format!(
            "INSERT INTO approvals (id, kind, status, tool, args, args_canonical, call_hash, \
             items, card, run_id, context_summary, created_at, expires_at, preconditions) VALUES \
             ('{id}', 'destructive', 'pending', 'trash_email', '{args}', '{canon}', '{hash}', \
             '[\"m1\"]', '{card}', 'run-{id}', 'trash', '{created}', '2099-01-01T00:00:00.000000000Z', '[]')",
            args = r.args,
            canon = r.args_canonical,
            hash = r.call_hash,
            card = serde_json::to_string(&r.card).unwrap().replace('\'', "''"),
        )
    };
    let checkpoint = |id: &str| {
        let body = serde_json::to_string(&common::checkpoint(id))
            .unwrap()
            .replace('\'', "''");
        vec![
            format!(
                "INSERT INTO checkpoints (id, approval_id, run_id, conversation_id, body, \
                 created_at) VALUES ('cp-{id}', '{id}', 'run-{id}', 'conv-{id}', '{body}', \
                 '2026-03-01T09:00:00.000000000Z')"
            ),
            format!("UPDATE approvals SET checkpoint_id = 'cp-{id}' WHERE id = '{id}'"),
        ]
    };
    let decide = |id: &str, status: &str| {
        format!(
            "UPDATE approvals SET status = '{status}', responded_at = \
             '2026-03-01T09:05:00.000000000Z', responded_by = 'phone', surface = 'web' \
             WHERE id = '{id}'"
        )
    };
    let resumed = |id: &str, finished: bool| {
        let finished = if finished {
            ", finished_at = '2026-03-01T09:07:00.000000000Z'"
        } else {
            ""
        };
        format!(
            "UPDATE checkpoints SET resumed_at = '2026-03-01T09:06:00.000000000Z'{finished} \
             WHERE approval_id = '{id}'"
        )
    };
    let claimed = |id: &str, state: &str| {
        vec![
            format!(
                "INSERT INTO ledger (approval_id, tool, args_canonical, state, claimed_at) \
                 SELECT id, tool, args_canonical, 'executing', '2026-03-01T09:06:00.000000000Z' \
                 FROM approvals WHERE id = '{id}'"
            ),
            format!("UPDATE ledger SET state = '{state}' WHERE approval_id = '{id}' AND '{state}' <> 'executing'"),
        ]
    };
    // Pending, answerable.
    sql.push(row("pending", "2026-03-01T09:00:00.000000000Z"));
    sql.extend(checkpoint("pending"));
    // Approved, never resumed.
    sql.push(row("waiting", "2026-03-01T09:00:01.000000000Z"));
    sql.extend(checkpoint("waiting"));
    sql.push(decide("waiting", "approved"));
    // Approved, its resume interrupted between `executing` and the outcome.
    sql.push(row("interrupted", "2026-03-01T09:00:02.000000000Z"));
    sql.extend(checkpoint("interrupted"));
    sql.push(decide("interrupted", "approved"));
    sql.push(resumed("interrupted", false));
    sql.extend(claimed("interrupted", "executing"));
    // Rejected, its resume failed (the model was down).
    sql.push(row("failed", "2026-03-01T09:00:03.000000000Z"));
    sql.extend(checkpoint("failed"));
    sql.push(decide("failed", "rejected"));
    sql.push(resumed("failed", true));
    sql.push("UPDATE approvals SET resume_error = 'the model was down' WHERE id = 'failed'".into());
    // Approved, executed, resumed and ended.
    sql.push(row("finished", "2026-03-01T09:00:04.000000000Z"));
    sql.extend(checkpoint("finished"));
    sql.push(decide("finished", "approved"));
    sql.push(resumed("finished", true));
    sql.extend(claimed("finished", "executed"));
    // Approved, but the halt's checkpoint never landed (the halt's separate commits).
    sql.push(row("unsaved", "2026-03-01T09:00:05.000000000Z"));
    sql.push(decide("unsaved", "approved"));
    sql
}

async fn upgrade_in_place(engine: Engine) {
    let (url, _cleanup): (String, Box<dyn std::any::Any>) = match engine {
        Engine::Sqlite => {
            let dir = tempfile::tempdir().unwrap();
            let url = format!("sqlite://{}/old.db", dir.path().display());
            (url, Box::new(dir))
        }
        Engine::Postgres => {
            let (url, guard) = fresh_postgres_database().await;
            (url, Box::new(guard))
        }
    };
    // 1. The old schema, and rows as the old store wrote them.
    match engine {
        Engine::Sqlite => {
            use std::str::FromStr;
            let options = sqlx::sqlite::SqliteConnectOptions::from_str(&url)
                .unwrap()
                .create_if_missing(true);
            let mut conn = sqlx::SqliteConnection::connect_with(&options)
                .await
                .unwrap();
            before_the_queue(&SQLITE).run(&mut conn).await.unwrap();
            for sql in old_rows() {
                sqlx::query(&sql).execute(&mut conn).await.expect(&sql);
            }
            conn.close().await.unwrap();
        }
        Engine::Postgres => {
            let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
            before_the_queue(&POSTGRES).run(&mut conn).await.unwrap();
            for sql in old_rows() {
                sqlx::query(&sql).execute(&mut conn).await.expect(&sql);
            }
            conn.close().await.unwrap();
        }
    }

    // 2. Opening it with the current store migrates it.
    let clock = Arc::new(ManualClock::new(t0()));
    let store = connect(&url, &clock).await;
    let state = |id: &'static str| {
        let store = store.clone();
        async move {
            sqlx::query_scalar::<_, String>("SELECT state FROM resume_jobs WHERE approval_id = $1")
                .bind(id)
                .fetch_optional(store.pool())
                .await
                .unwrap()
        }
    };
    assert_eq!(state("pending").await, None);
    assert_eq!(state("waiting").await.as_deref(), Some("ready"));
    assert_eq!(state("interrupted").await.as_deref(), Some("ready"));
    assert_eq!(state("failed").await.as_deref(), Some("failed"));
    assert_eq!(state("finished").await.as_deref(), Some("done"));
    assert_eq!(state("unsaved").await.as_deref(), Some("ready"));
    assert_eq!(
        store
            .approval("interrupted")
            .await
            .unwrap()
            .unwrap()
            .execution,
        Execution::Unknown,
        "a call a stop interrupted may or may not have run: never again"
    );
    assert_eq!(
        store.approval("finished").await.unwrap().unwrap().execution,
        Execution::Executed
    );

    // Rows written before the card's search text existed are found by a search.
    let found = store
        .approval_page(&iris_core::ports::ApprovalQuery {
            text: iris_core::ports::SearchText::parse("SHOP@EXAMPLE").unwrap(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(
        found.approvals.iter().any(|a| a.id == "pending"),
        "{:?}",
        found.approvals.iter().map(|a| &a.id).collect::<Vec<_>>()
    );

    // The pending row is still answerable.
    assert!(decide(
        &store,
        "pending",
        &response(ApprovalStatus::Approved, "phone", t0())
    )
    .await
    .unwrap());

    // Every decided row resumes once, oldest decision first (ties by id): then nothing is left
    // but the retry.
    let mut seen = Vec::new();
    let plan = |s: &JobSnapshot| {
        assert_eq!(s.origin, JobOrigin::Fresh);
        ClaimPlan::lease_only()
    };
    while let Some(job) = store
        .claim_job(JobPick::Next, "new-server", 30, &[], &plan)
        .await
        .unwrap()
    {
        let saved = match &job.snapshot.saved {
            SavedRun::Saved(_) => "saved",
            SavedRun::Missing => "missing",
            SavedRun::Corrupt(_) => "corrupt",
        };
        seen.push((job.lease.approval_id.clone(), saved));
    }
    assert_eq!(
        seen,
        [
            ("pending".to_string(), "saved"),
            ("interrupted".to_string(), "saved"),
            ("unsaved".to_string(), "missing"),
            ("waiting".to_string(), "saved"),
        ]
        .iter()
        .map(|(id, s)| (id.clone(), *s))
        .collect::<Vec<_>>()
    );
    let retried = store
        .claim_job(JobPick::Retry("failed"), "new-server", 30, &[], &plan_retry)
        .await
        .unwrap()
        .expect("the failed resume waits for the owner's retry");
    assert_eq!(retried.snapshot.origin, JobOrigin::Retried);
    assert!(store
        .claim_job(
            JobPick::Retry("finished"),
            "new-server",
            30,
            &[],
            &plan_retry
        )
        .await
        .unwrap()
        .is_none());
}

fn plan_retry(_: &JobSnapshot) -> ClaimPlan {
    ClaimPlan::lease_only()
}

#[tokio::test]
async fn sqlite_database_of_the_old_schema_migrates_with_nothing_lost() {
    upgrade_in_place(Engine::Sqlite).await;
}

#[tokio::test]
async fn postgres_database_of_the_old_schema_migrates_with_nothing_lost() {
    upgrade_in_place(Engine::Postgres).await;
}
