//! What the units write stays written: the audit log is append-only; a resumed turn and its
//! lines land with the job's end, and never over a transcript version another run moved past;
//! pending, decided and leased rows survive reopening the database (a lapsed lease is then
//! taken over).

use crate::common;

use common::*;
use iris_core::ports::{JobFinish, JobOrigin, JobPick, Lease};

use super::{claim, claim_call, done, lease_only, outcome, LEASE};

async fn the_audit_log_is_append_only(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    approved(&store, "a1").await;
    let job = claim(&store, JobPick::Next, "s", claim_call).await.unwrap();
    store
        .record_outcome(&job.lease, LEASE, &outcome())
        .await
        .unwrap();
    for sql in [
        "UPDATE audit_log SET actor = 'nobody'",
        "DELETE FROM audit_log",
    ] {
        let message = refused(&store, sql).await;
        assert!(
            message.contains("the audit log is append-only"),
            "{message}"
        );
    }
    let entries = store.audit(Some("a1")).await.unwrap();
    assert_eq!(
        entries.iter().map(|e| e.kind).collect::<Vec<_>>(),
        [AuditKind::Decision, AuditKind::Execution]
    );
    assert_eq!(entries[0].actor, "owner-phone");
    assert!(entries[0].id < entries[1].id);
    assert!(store.audit(Some("other")).await.unwrap().is_empty());
}

async fn a_resumed_turn_and_its_lines_land_with_the_job_end(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    approved(&store, "a1").await;
    let job = claim(&store, JobPick::Next, "s", lease_only).await.unwrap();
    let transcript = vec![Message::User {
        content: "later".into(),
    }];
    let read = store.transcript("conv-1").await.unwrap();
    assert_eq!(read.version, 1, "the halt wrote the conversation once");
    let finish = JobFinish {
        turn: Some(TurnCommit {
            conversation_id: "conv-1".into(),
            transcript: transcript.clone(),
            transcript_version: read.version,
            lines: vec![ChatLine {
                role: "assistant".into(),
                text: "Done.".into(),
                approval_id: None,
                approval_status: None,
            }],
            halt: None,
            actions: Vec::new(),
            outbox: iris_core::ports::Outbox::default(),
        }),
        ..done()
    };
    let stale = Lease {
        epoch: 99,
        ..job.lease.clone()
    };
    assert!(matches!(
        store.finish_job(&stale, &finish).await,
        Err(StoreError::LeaseLost(_))
    ));
    assert!(
        store.lines("conv-1").await.unwrap().is_empty(),
        "a fenced end wrote nothing"
    );
    // Written over a version another run already moved past: nothing is written (the writer
    // re-reads and applies its change again; DESIGN §8 "nothing is lost").
    let mut behind = finish.clone();
    behind.turn.as_mut().unwrap().transcript_version = 0;
    assert!(matches!(
        store.finish_job(&job.lease, &behind).await,
        Err(StoreError::TranscriptMoved(_))
    ));
    assert!(
        store.lines("conv-1").await.unwrap().is_empty(),
        "a transcript write behind another wrote nothing"
    );
    assert_eq!(store.transcript("conv-1").await.unwrap(), read);
    store.finish_job(&job.lease, &finish).await.unwrap();
    let after = store.transcript("conv-1").await.unwrap();
    assert_eq!(after.messages, transcript);
    assert_eq!(after.version, 2);
    assert_eq!(store.lines("conv-1").await.unwrap()[0].text, "Done.");
}

async fn pending_decided_and_leased_rows_survive_reopening(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    insert(&store, &trash_request("pending", &["m1"]))
        .await
        .unwrap();
    approved(&store, "leased").await;
    approved(&store, "waiting").await;
    let job = claim(&store, JobPick::Approval("leased"), "s", claim_call)
        .await
        .unwrap();
    close(&store).await;
    drop(store);
    let reopened = connect(&db.url, &db.clock).await;
    assert_eq!(
        reopened.approval("pending").await.unwrap().unwrap().status,
        ApprovalStatus::Pending
    );
    assert_eq!(
        reopened
            .approval("leased")
            .await
            .unwrap()
            .unwrap()
            .execution,
        Execution::Executing
    );
    // The waiting job is claimable at once; the leased one once its lease lapses.
    let next = reopened
        .claim_job(JobPick::Next, "t", LEASE, &[], &lease_only)
        .await
        .unwrap()
        .expect("the waiting job");
    assert_eq!(next.lease.approval_id, "waiting");
    assert!(reopened
        .claim_job(JobPick::Next, "t", LEASE, &[], &lease_only)
        .await
        .unwrap()
        .is_none());
    if engine == Engine::Sqlite {
        // One server per SQLite file: at start-up the stopped server's leases lapse at once.
        assert_eq!(reopened.lapse_leases_of_dead_servers().await.unwrap(), 2);
        let taken = reopened
            .claim_job(JobPick::Approval("leased"), "t", LEASE, &[], &lease_only)
            .await
            .unwrap()
            .expect("taken over");
        assert_eq!(taken.snapshot.origin, JobOrigin::TakenOver);
        assert_eq!(taken.lease.epoch, job.lease.epoch + 1);
    } else {
        assert_eq!(reopened.lapse_leases_of_dead_servers().await.unwrap(), 0);
    }
}

// ---------------------------------------------------------------------------------------------
// The suite, once per engine.
// ---------------------------------------------------------------------------------------------

macro_rules! suite {
    ($engine:expr) => {
        #[tokio::test]
        async fn the_audit_log_is_append_only() {
            super::the_audit_log_is_append_only($engine).await;
        }
        #[tokio::test]
        async fn a_resumed_turn_and_its_lines_land_with_the_job_end() {
            super::a_resumed_turn_and_its_lines_land_with_the_job_end($engine).await;
        }
        #[tokio::test]
        async fn pending_decided_and_leased_rows_survive_reopening() {
            super::pending_decided_and_leased_rows_survive_reopening($engine).await;
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
