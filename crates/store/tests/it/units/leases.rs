//! A job's lease: held by one server, kept by heartbeats, fenced by its epoch and taken over when
//! it lapses (the taker marks an `executing` call `unknown`, and the old holder writes nothing
//! more); the outcome is written once with its audit under the lease; the job's end clears the
//! lease; an unknown call's located items are written once beside it; concurrent claimers take
//! each job once.

use crate::common;

use common::*;
use iris_core::ports::{
    ClaimPlan, JobEnd, JobFinish, JobOrigin, JobPick, Lease, LedgerStep, LocatedRecord, Outcome,
    OutcomeRecord, ResumeErrorChange, SavedRun, UndoClaim, UndoStore,
};
use iris_core::wire::{Located, LocatedItem};

use super::{claim, claim_call, count, done, job_state, lease_only, outcome, LEASE};

// ---------------------------------------------------------------------------------------------
// Jobs: a lease, kept by heartbeats, fenced by its epoch, taken over when it lapses.
// ---------------------------------------------------------------------------------------------

async fn a_lapsed_lease_is_taken_over_and_the_old_holder_writes_nothing(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    approved(&store, "a1").await;

    // Server A claims the job and the call (write-ahead: `executing`).
    let a = claim(&store, JobPick::Next, "server-a", claim_call)
        .await
        .expect("a claims");
    assert_eq!(a.lease.epoch, 1);
    assert_eq!(a.snapshot.origin, JobOrigin::Fresh);
    assert!(matches!(a.snapshot.saved, SavedRun::Saved(_)));
    assert_eq!(a.snapshot.preconditions.as_ref().unwrap().len(), 2);
    assert_eq!(
        store.approval("a1").await.unwrap().unwrap().execution,
        Execution::Executing
    );
    // Held: nobody else can claim it, not even for this approval.
    assert!(claim(&store, JobPick::Next, "server-b", lease_only)
        .await
        .is_none());
    assert!(
        claim(&store, JobPick::Approval("a1"), "server-b", lease_only)
            .await
            .is_none()
    );
    // A heartbeat keeps it past its first end.
    db.clock.advance(Duration::seconds(i64::from(LEASE) - 1));
    assert!(store.heartbeat(&a.lease, LEASE).await.unwrap());
    db.clock.advance(Duration::seconds(i64::from(LEASE) - 1));
    assert!(claim(&store, JobPick::Next, "server-b", lease_only)
        .await
        .is_none());

    // A stalls past its lease. A itself never takes over a job one of its own tasks still
    // holds (a live server must not call its own running call interrupted)...
    db.clock.advance(Duration::seconds(2));
    let busy = [a.lease.owner.clone()];
    for pick in [JobPick::Next, JobPick::Approval("a1")] {
        assert!(store
            .claim_job(pick, "server-a", LEASE, &busy, &lease_only)
            .await
            .unwrap()
            .is_none());
    }
    // ...B does: it finds `executing` and marks it unknown.
    let b = claim(&store, JobPick::Next, "server-b", |s| {
        assert_eq!(s.origin, JobOrigin::TakenOver);
        assert_eq!(s.approval.as_ref().unwrap().execution, Execution::Executing);
        ClaimPlan {
            ledger: LedgerStep::MarkUnknown {
                result: serde_json::json!({"status": "unknown", "message": "look in Trash"}),
            },
            ..ClaimPlan::lease_only()
        }
    })
    .await
    .expect("b takes over");
    assert_eq!(b.lease.epoch, 2);
    let taken = store.approval("a1").await.unwrap().unwrap();
    assert_eq!(taken.execution, Execution::Unknown);
    // The card says how to check it: the takeover's result is stored with the state.
    assert_eq!(
        taken.result,
        Some(serde_json::json!({"status": "unknown", "message": "look in Trash"}))
    );

    // Every write of A's is fenced off now: heartbeat, outcome, end.
    assert!(!store.heartbeat(&a.lease, LEASE).await.unwrap());
    assert!(matches!(
        store.record_outcome(&a.lease, LEASE, &outcome()).await,
        Err(StoreError::LeaseLost(id)) if id == "a1"
    ));
    assert!(matches!(
        store.finish_job(&a.lease, &done()).await,
        Err(StoreError::LeaseLost(_))
    ));
    let row = store.approval("a1").await.unwrap().unwrap();
    assert_eq!(
        row.execution,
        Execution::Unknown,
        "the late outcome did not land"
    );
    assert!(store
        .audit(Some("a1"))
        .await
        .unwrap()
        .iter()
        .all(|e| e.kind != AuditKind::Execution));
    // Even the current holder with an old epoch is fenced.
    let stale = Lease {
        owner: b.lease.owner.clone(),
        ..a.lease.clone()
    };
    assert!(!store.heartbeat(&stale, LEASE).await.unwrap());

    // B ends the job once; a done job is never claimed again.
    store
        .finish_job(&b.lease, &done())
        .await
        .expect("b finishes");
    assert_eq!(job_state(&store, "a1").await, Some(("done".into(), 2)));
    db.clock.advance(Duration::hours(1));
    assert!(claim(&store, JobPick::Next, "server-c", lease_only)
        .await
        .is_none());
    assert!(claim(&store, JobPick::Retry("a1"), "server-c", lease_only)
        .await
        .is_none());
    let message = refused(
        &store,
        "UPDATE resume_jobs SET state = 'ready' WHERE approval_id = 'a1'",
    )
    .await;
    assert!(message.contains("resumes exactly once"), "{message}");
}

/// Where an unknown call's items are: written once beside the `unknown` entry under its lease,
/// never on an entry that is not `unknown`, never changing the outcome; an undo from the card
/// of an unknown call is refused until its plugin found items it can put back.
async fn where_an_unknown_calls_items_are_is_written_once_beside_it(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    approved(&store, "a1").await;
    let job = claim(&store, JobPick::Approval("a1"), "server-a", claim_call)
        .await
        .expect("claim");
    let located = |undo: Option<&str>| LocatedRecord {
        located: Located {
            summary: "1 in quarantine, 1 still at its path.".into(),
            items: vec![LocatedItem {
                id: "m1".into(),
                label: "m1".into(),
                status: "quarantined".into(),
                message: "in quarantine".into(),
            }],
            undo_action: undo.map(str::to_owned),
        },
        audit: outcome().audit,
        outbox: iris_core::ports::Outbox::default(),
    };
    // Still `executing`: nothing located, nothing written.
    assert!(matches!(
        store
            .record_located(&job.lease, &located(Some("Restore 1")))
            .await,
        Err(StoreError::LeaseLost(_))
    ));
    assert_eq!(execution_entries(&store).await, 0);
    let unknown = OutcomeRecord {
        outcome: Outcome::Unknown,
        result: json!({"status": "unknown", "message": "it may or may not have run"}),
        audit: Vec::new(),
        ..outcome()
    };
    store
        .record_outcome(&job.lease, LEASE, &unknown)
        .await
        .expect("unknown");
    let undo = |at| UndoClaim {
        approval_id: "a1".into(),
        tool: "restore_email".into(),
        args_canonical: "{\"ids\":[\"m1\"]}".into(),
        items: vec!["m1".into()],
        by: "phone".into(),
        surface: "api".into(),
        at,
        lease_secs: LEASE,
        audit: NewAuditEntry {
            kind: AuditKind::Undo,
            item: None,
            ..outcome().audit[0].clone()
        },
        outbox: iris_core::ports::Outbox::default(),
    };
    assert!(
        matches!(
            store.claim_undo(&undo(t0())).await,
            Err(StoreError::Refused(_))
        ),
        "no undo of an unknown call nobody located"
    );

    store
        .record_located(&job.lease, &located(Some("Restore 1")))
        .await
        .expect("located");
    let row = store.approval("a1").await.unwrap().unwrap();
    assert_eq!(row.execution, Execution::Unknown, "still unknown");
    assert_eq!(
        row.result,
        Some(unknown.result.clone()),
        "the outcome as written"
    );
    assert_eq!(row.located, Some(located(Some("Restore 1")).located));
    assert_eq!(execution_entries(&store).await, 1);
    // The same answer again under the lease (its first answer lost) is acknowledged; another is
    // not written, and the database refuses any change to it.
    store
        .record_located(&job.lease, &located(Some("Restore 1")))
        .await
        .expect("the same answer, already stored, is acknowledged");
    assert!(matches!(
        store.record_located(&job.lease, &located(None)).await,
        Err(StoreError::LeaseLost(_))
    ));
    assert_eq!(execution_entries(&store).await, 1, "nothing written again");
    let message = refused(
        &store,
        "UPDATE ledger SET located = NULL WHERE approval_id = 'a1'",
    )
    .await;
    assert!(message.contains("written once"), "{message}");
    // Now the card's undo may claim, for what was found.
    assert!(store.claim_undo(&undo(t0())).await.expect("undo claim"));
}

/// How many `execution` audit entries approval `a1` has.
async fn execution_entries(store: &Store) -> usize {
    store
        .audit(Some("a1"))
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == AuditKind::Execution)
        .count()
}

async fn an_outcome_is_written_once_with_its_audit_under_the_lease(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    approved(&store, "a1").await;
    let job = claim(&store, JobPick::Approval("a1"), "server-a", claim_call)
        .await
        .expect("claim");
    store
        .record_outcome(&job.lease, LEASE, &outcome())
        .await
        .expect("outcome");
    let row = store.approval("a1").await.unwrap().unwrap();
    assert_eq!(row.execution, Execution::Executed);
    assert_eq!(row.result, Some(outcome().result));
    let executions = execution_entries(&store).await;
    assert_eq!(executions, 1);
    // The outcome is written once. The same outcome again under the same lease (a retry whose
    // first try landed, its answer lost) re-plans from what is stored: acknowledged, nothing
    // written again. Another outcome is refused and changes nothing.
    store
        .record_outcome(&job.lease, LEASE, &outcome())
        .await
        .expect("the same outcome, already stored, is acknowledged");
    let other = OutcomeRecord {
        outcome: Outcome::Failed,
        result: json!({"status": "failed"}),
        ..outcome()
    };
    assert!(matches!(
        store.record_outcome(&job.lease, LEASE, &other).await,
        Err(StoreError::LeaseLost(_))
    ));
    let executions_now = execution_entries(&store).await;
    assert_eq!(executions_now, 1, "nothing written again");
    assert_eq!(
        store.approval("a1").await.unwrap().unwrap().result,
        Some(outcome().result)
    );
    let message = refused(
        &store,
        "UPDATE ledger SET state = 'failed' WHERE approval_id = 'a1'",
    )
    .await;
    assert!(message.contains("written once"), "{message}");
    // The end of the job clears the lease and records the resume error, if any.
    store
        .finish_job(
            &job.lease,
            &JobFinish {
                end: JobEnd::Failed,
                resume_error: ResumeErrorChange::Set("the model was down".into()),
                ..done()
            },
        )
        .await
        .expect("finish");
    assert_eq!(
        store
            .approval("a1")
            .await
            .unwrap()
            .unwrap()
            .resume_error
            .as_deref(),
        Some("the model was down")
    );
    assert_eq!(job_state(&store, "a1").await, Some(("failed".into(), 1)));
    // A failed job is claimed again only for the owner's retry.
    assert!(claim(&store, JobPick::Next, "server-b", lease_only)
        .await
        .is_none());
    let retry = claim(&store, JobPick::Retry("a1"), "server-b", |s| {
        assert_eq!(s.origin, JobOrigin::Retried);
        assert_eq!(s.approval.as_ref().unwrap().execution, Execution::Executed);
        ClaimPlan {
            resume_error: ResumeErrorChange::Clear,
            ..ClaimPlan::lease_only()
        }
    })
    .await
    .expect("retry");
    assert_eq!(retry.lease.epoch, 2);
    assert_eq!(
        store.approval("a1").await.unwrap().unwrap().resume_error,
        None
    );
    assert!(claim(&store, JobPick::Retry("a1"), "server-c", lease_only)
        .await
        .is_none());
}

async fn concurrent_claimers_take_each_job_once(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    for round in 0..3 {
        let ids: Vec<String> = (0..8).map(|i| format!("r{round}-{i}")).collect();
        for id in &ids {
            approved(&store, id).await;
        }
        let barrier = Arc::new(Barrier::new(12));
        let mut tasks = Vec::new();
        for worker in 0..12 {
            let (store, barrier) = (store.clone(), barrier.clone());
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                let mut taken = Vec::new();
                while let Some(job) = store
                    .claim_job(
                        JobPick::Next,
                        &format!("w{worker}"),
                        LEASE,
                        &[],
                        &claim_call,
                    )
                    .await
                    .expect("claim")
                {
                    taken.push(job.lease.approval_id);
                }
                taken
            }));
        }
        let mut taken = Vec::new();
        for task in tasks {
            taken.extend(task.await.expect("task"));
        }
        taken.sort();
        let mut expected = ids.clone();
        expected.sort();
        assert_eq!(
            taken, expected,
            "round {round}: each job claimed exactly once"
        );
    }
    assert_eq!(
        count(
            &store,
            "SELECT COUNT(*) FROM ledger WHERE state = 'executing'"
        )
        .await,
        24
    );
}

// ---------------------------------------------------------------------------------------------
// The suite, once per engine.
// ---------------------------------------------------------------------------------------------

macro_rules! suite {
    ($engine:expr) => {
        #[tokio::test]
        async fn a_lapsed_lease_is_taken_over_and_the_old_holder_writes_nothing() {
            super::a_lapsed_lease_is_taken_over_and_the_old_holder_writes_nothing($engine).await;
        }
        #[tokio::test]
        async fn an_outcome_is_written_once_with_its_audit_under_the_lease() {
            super::an_outcome_is_written_once_with_its_audit_under_the_lease($engine).await;
        }
        #[tokio::test]
        async fn where_an_unknown_calls_items_are_is_written_once_beside_it() {
            super::where_an_unknown_calls_items_are_is_written_once_beside_it($engine).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn concurrent_claimers_take_each_job_once() {
            super::concurrent_claimers_take_each_job_once($engine).await;
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
