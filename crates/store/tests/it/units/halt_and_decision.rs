//! A halt is one commit, whole or nothing: the row, its checkpoint and their link, the
//! transcript and the chat lines. A decision is a compare-and-set from pending against the
//! store's clock (which, not the answer's stamp, says whether a row lapsed), and makes exactly
//! one job; a job exists only for a decided row and is never deleted.

use crate::common;

use common::*;
use iris_core::wire::Event;

use super::job_state;

// ---------------------------------------------------------------------------------------------
// Halt: one commit, whole or nothing.
// ---------------------------------------------------------------------------------------------

async fn a_halt_writes_row_checkpoint_link_transcript_and_lines_in_one_commit(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    let row = trash_request("a1", &["m1", "m2"]);
    let line = |text: &str| ChatLine {
        role: "assistant".into(),
        text: text.into(),
        approval_id: Some("a1".into()),
        approval_status: None,
    };
    let turn = TurnCommit {
        conversation_id: "c1".into(),
        transcript: checkpoint("a1").messages,
        transcript_version: 0,
        lines: vec![line("asked"), line("waiting")],
        actions: Vec::new(),
        halt: Some(HaltRecord {
            approval: row.clone(),
            checkpoint: checkpoint("a1"),
        }),
        outbox: iris_core::ports::Outbox::of([Event::ApprovalRequested(row.pending_view())]),
    };
    let mut events = store.subscribe();
    store.commit_turn(&turn).await.expect("halt");
    let stored = store.approval("a1").await.unwrap().expect("row");
    assert_eq!(stored.status, ApprovalStatus::Pending);
    assert_eq!(stored.items, row.items);
    assert_eq!(
        raw_column(&store, "a1", "checkpoint_id").await.as_deref(),
        Some("cp-a1")
    );
    assert_eq!(
        store.transcript("c1").await.unwrap().messages,
        turn.transcript
    );
    let lines = store.lines("c1").await.unwrap();
    assert_eq!(lines.len(), 2);
    // Each line says its card's status as the store reads it (the app's amber halt line).
    assert!(
        lines
            .iter()
            .all(|l| l.approval_status == Some(ApprovalStatus::Pending)),
        "{lines:?}"
    );
    if engine == Engine::Sqlite {
        // PostgreSQL delivers through its listener (tested with servers in the server suite).
        match events.try_recv() {
            Ok(Event::ApprovalRequested(a)) => assert_eq!(a.id, "a1"),
            other => panic!("expected approval.requested, got {other:?}"),
        }
    }

    // A halt that cannot be whole writes nothing: a checkpoint of another row, a row whose
    // hash does not cover its arguments.
    let mut broken = turn.clone();
    broken.conversation_id = "c2".into();
    let mut other = trash_request("a2", &["m1"]);
    broken.halt = Some(HaltRecord {
        approval: other.clone(),
        checkpoint: checkpoint("a1"),
    });
    assert!(store.commit_turn(&broken).await.is_err());
    other.call_hash = call_hash("restore_email", &other.args);
    broken.halt = Some(HaltRecord {
        approval: other,
        checkpoint: checkpoint("a2"),
    });
    assert!(store.commit_turn(&broken).await.is_err());
    assert!(store.approval("a2").await.unwrap().is_none());
    assert!(store.transcript("c2").await.unwrap().messages.is_empty());
    assert!(store.lines("c2").await.unwrap().is_empty());
    if engine == Engine::Sqlite {
        assert!(
            events.try_recv().is_err(),
            "a failed commit published nothing"
        );
    }
    // The database refuses a second checkpoint link even outside the store's API.
    let message = refused(
        &store,
        "UPDATE approvals SET checkpoint_id = 'cp-other' WHERE id = 'a1'",
    )
    .await;
    assert!(
        message.contains("linked to its checkpoint once"),
        "{message}"
    );
}

// ---------------------------------------------------------------------------------------------
// Decisions: compare-and-set from pending, against the store's clock; each makes a job.
// ---------------------------------------------------------------------------------------------

async fn a_decision_makes_one_job_and_the_store_clock_decides_lapses(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    insert(&store, &trash_request("a1", &["m1"])).await.unwrap();
    insert(&store, &trash_request("a2", &["m2"])).await.unwrap();
    assert_eq!(
        job_state(&store, "a1").await,
        None,
        "a pending row has no job"
    );
    let answer = response(ApprovalStatus::Rejected, "cli", t0() + Duration::minutes(5));
    assert!(decide(&store, "a1", &answer).await.unwrap());
    assert_eq!(job_state(&store, "a1").await, Some(("ready".into(), 0)));
    assert!(
        !decide(&store, "a1", &answer).await.unwrap(),
        "answered once"
    );
    assert_eq!(
        store.audit(Some("a1")).await.unwrap().len(),
        1,
        "the losing answer wrote nothing"
    );

    // The store's clock, not the answer's stamp, says whether a row lapsed.
    let expiry = t0() + Duration::hours(1);
    db.clock.set(expiry - Duration::nanoseconds(1));
    assert!(store.lapsed().await.unwrap().is_empty());
    let expire = response(ApprovalStatus::Expired, "iris", expiry);
    assert!(
        !decide(&store, "a2", &expire).await.unwrap(),
        "not lapsed yet"
    );
    db.clock.set(expiry);
    assert_eq!(store.lapsed().await.unwrap(), ["a2"]);
    let approve = response(ApprovalStatus::Approved, "web", t0());
    assert!(!decide(&store, "a2", &approve).await.unwrap(), "lapsed");
    assert!(decide(&store, "a2", &expire).await.unwrap());
    assert_eq!(
        store.approval("a2").await.unwrap().unwrap().status,
        ApprovalStatus::Expired
    );
    assert_eq!(job_state(&store, "a2").await, Some(("ready".into(), 0)));
    assert!(store.lapsed().await.unwrap().is_empty());
    assert!(matches!(
        decide(&store, "missing", &answer).await,
        Err(StoreError::NotFound(_))
    ));
}

async fn a_job_exists_only_for_a_decided_row_and_is_never_deleted(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    insert(&store, &trash_request("p", &["m1"])).await.unwrap();
    let message = refused(
        &store,
        "INSERT INTO resume_jobs (approval_id, state, lease_epoch, created_at, updated_at) \
         VALUES ('p', 'ready', 0, 'x', 'x')",
    )
    .await;
    assert!(message.contains("only for a decided approval"), "{message}");
    approved(&store, "a1").await;
    let message = refused(&store, "DELETE FROM resume_jobs").await;
    assert!(message.contains("never deleted"), "{message}");
    let message = refused(&store, "UPDATE resume_jobs SET lease_epoch = -1").await;
    assert!(message.contains("only grows"), "{message}");
}

// ---------------------------------------------------------------------------------------------
// The suite, once per engine.
// ---------------------------------------------------------------------------------------------

macro_rules! suite {
    ($engine:expr) => {
        #[tokio::test]
        async fn a_halt_writes_row_checkpoint_link_transcript_and_lines_in_one_commit() {
            super::a_halt_writes_row_checkpoint_link_transcript_and_lines_in_one_commit($engine)
                .await;
        }
        #[tokio::test]
        async fn a_decision_makes_one_job_and_the_store_clock_decides_lapses() {
            super::a_decision_makes_one_job_and_the_store_clock_decides_lapses($engine).await;
        }
        #[tokio::test]
        async fn a_job_exists_only_for_a_decided_row_and_is_never_deleted() {
            super::a_job_exists_only_for_a_decided_row_and_is_never_deleted($engine).await;
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
}
