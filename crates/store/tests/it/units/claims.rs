//! What a claim reports and refuses: a missing or corrupt saved run and a corrupt row are
//! reported, not panicked on or skipped; a call the row does not allow is refused, nothing of
//! the claim is written and the job (a poison job) ends `failed` without holding up the jobs
//! behind it; the database's claim rule is the second line, refusing a ledger entry that
//! bypasses the claim.

use crate::common;

use common::*;
use iris_core::ports::{
    ClaimPlan, JobEnd, JobPick, JobSnapshot, LedgerStep, ResumeErrorChange, SavedRun,
};

use super::{claim, claim_call, job_state, lease_only, LEASE};

async fn the_claim_reports_a_missing_or_corrupt_saved_run_and_a_corrupt_row(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    // A decided row whose run was never saved (what a halt in separate commits could leave).
    approved(&store, "src").await;
    exec(
        &store,
        "INSERT INTO approvals (id, kind, tool, args, args_canonical, call_hash, items, card, \
         run_id, context_summary, created_at, expires_at, preconditions) \
         SELECT 'lost', kind, tool, args, args_canonical, call_hash, items, card, run_id, \
         context_summary, created_at, expires_at, preconditions FROM approvals WHERE id = 'src'",
    )
    .await
    .unwrap();
    assert!(decide(
        &store,
        "lost",
        &response(ApprovalStatus::Approved, "web", t0())
    )
    .await
    .unwrap());
    let job = claim(&store, JobPick::Approval("lost"), "s", |s| {
        assert_eq!(s.saved, SavedRun::Missing);
        assert_eq!(s.conversation_id, None);
        ClaimPlan {
            end: Some(JobEnd::Dead),
            resume_error: ResumeErrorChange::Set("never saved".into()),
            ..ClaimPlan::lease_only()
        }
    })
    .await
    .expect("claim");
    assert_eq!(job.plan.end, Some(JobEnd::Dead));
    assert_eq!(job_state(&store, "lost").await.unwrap().0, "dead");
    assert!(claim(&store, JobPick::Retry("lost"), "s", lease_only)
        .await
        .is_none());
    assert_eq!(
        store
            .approval("lost")
            .await
            .unwrap()
            .unwrap()
            .resume_error
            .as_deref(),
        Some("never saved")
    );

    // A checkpoint that does not parse: corrupt, its conversation still known.
    exec(
        &store,
        "INSERT INTO approvals (id, kind, tool, args, args_canonical, call_hash, items, card, \
         run_id, context_summary, created_at, expires_at, preconditions) \
         SELECT 'bad', kind, tool, args, args_canonical, call_hash, items, card, run_id, \
         context_summary, created_at, expires_at, preconditions FROM approvals WHERE id = 'src'",
    )
    .await
    .unwrap();
    exec(
        &store,
        "INSERT INTO checkpoints (id, approval_id, run_id, conversation_id, body, created_at) \
         VALUES ('cp-bad', 'bad', 'run-bad', 'conv-9', '{\"messages\": [', 'x')",
    )
    .await
    .unwrap();
    assert!(decide(
        &store,
        "bad",
        &response(ApprovalStatus::Approved, "web", t0())
    )
    .await
    .unwrap());
    claim(&store, JobPick::Approval("bad"), "s", |s| {
        assert!(
            matches!(&s.saved, SavedRun::Corrupt(reason) if reason.contains("body")),
            "{:?}",
            s.saved
        );
        assert_eq!(s.conversation_id.as_deref(), Some("conv-9"));
        ClaimPlan::lease_only()
    })
    .await
    .expect("claim");

    // A row that does not parse is reported, not a panic and not a skipped job.
    exec(
        &store,
        "INSERT INTO approvals (id, kind, tool, args, args_canonical, call_hash, items, card, \
         run_id, context_summary, created_at, expires_at) \
         SELECT 'garbled', kind, tool, args, args_canonical, call_hash, items, '{\"title\": ', \
         run_id, context_summary, created_at, expires_at FROM approvals WHERE id = 'src'",
    )
    .await
    .unwrap();
    // (Nobody can answer a row that does not parse: the decision reads it first. This one was
    // answered before it was damaged.)
    assert!(matches!(
        decide(
            &store,
            "garbled",
            &response(ApprovalStatus::Rejected, "web", t0())
        )
        .await,
        Err(StoreError::Corrupt { .. })
    ));
    for sql in [
        "UPDATE approvals SET status = 'rejected', responded_at = '2026-03-01T09:01:00.000000000Z', \
         responded_by = 'web', surface = 'web' WHERE id = 'garbled'",
        "INSERT INTO resume_jobs (approval_id, state, lease_epoch, created_at, updated_at) \
         VALUES ('garbled', 'ready', 0, '2026-03-01T09:01:00.000000000Z', '2026-03-01T09:01:00.000000000Z')",
    ] {
        exec(&store, sql).await.unwrap();
    }
    claim(&store, JobPick::Approval("garbled"), "s", |s| {
        assert!(
            matches!(&s.approval, Err(reason) if reason.contains("card")),
            "{:?}",
            s.approval
        );
        ClaimPlan::lease_only()
    })
    .await
    .expect("claim");
}

async fn a_refused_call_is_consumed_and_the_claim_rule_is_the_second_line(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    approved(&store, "a1").await;
    let result = json!({"status": "failed", "message": "not run: the tool is gone"});
    claim(&store, JobPick::Approval("a1"), "s", |s| {
        let row = s.approval.as_ref().unwrap();
        ClaimPlan {
            ledger: LedgerStep::Refuse {
                tool: row.tool.clone(),
                args_canonical: canonical_json(&row.args),
                result: result.clone(),
            },
            ..ClaimPlan::lease_only()
        }
    })
    .await
    .expect("claim");
    let row = store.approval("a1").await.unwrap().unwrap();
    assert_eq!(row.execution, Execution::Failed);
    assert_eq!(row.result, Some(result));

    // A plan that claims a call the row does not allow (a rejected row; other arguments) is
    // refused by the store: nothing of the claim is written, and the job (a poison job: every
    // claim of it would be refused the same way) ends `failed` with the refusal as its reason,
    // in a unit of its own.
    insert(&store, &trash_request("r1", &["m1"])).await.unwrap();
    assert!(decide(
        &store,
        "r1",
        &response(ApprovalStatus::Rejected, "web", t0())
    )
    .await
    .unwrap());
    assert!(store
        .claim_job(JobPick::Approval("r1"), "s", LEASE, &[], &claim_call)
        .await
        .unwrap()
        .is_none());
    assert_eq!(job_state(&store, "r1").await, Some(("failed".into(), 1)));
    let r1 = store.approval("r1").await.unwrap().unwrap();
    assert_eq!(
        r1.execution,
        Execution::None,
        "a rejected row has no ledger entry"
    );
    let reason = r1.resume_error.unwrap_or_default();
    assert!(reason.contains("a claim needs an approved row"), "{reason}");
    approved(&store, "a2").await;
    let wrong_arguments = |s: &JobSnapshot| {
        if s.approval_id == "a2" {
            ClaimPlan {
                ledger: LedgerStep::Claim {
                    tool: "trash_email".into(),
                    args_canonical: r#"{"ids":["m9"]}"#.into(),
                },
                ..ClaimPlan::lease_only()
            }
        } else {
            claim_call(s)
        }
    };
    assert!(store
        .claim_job(JobPick::Approval("a2"), "s", LEASE, &[], &wrong_arguments)
        .await
        .unwrap()
        .is_none());
    let a2 = store.approval("a2").await.unwrap().unwrap();
    assert_eq!(a2.execution, Execution::Failed, "consumed, never run");
    let message = a2.result.unwrap()["message"].as_str().unwrap().to_string();
    assert!(message.starts_with("not run:"), "{message}");
    assert!(message.contains("exactly these arguments"), "{message}");
    assert!(store
        .audit(Some("a2"))
        .await
        .unwrap()
        .iter()
        .any(|e| e.kind == AuditKind::Denial));
    // A poison job ahead of others does not hold them up: the next claim ends it and takes
    // the one behind it.
    approved(&store, "p1").await;
    approved(&store, "q3").await;
    let poison_first = |s: &JobSnapshot| {
        if s.approval_id == "p1" {
            wrong_arguments(&JobSnapshot {
                approval_id: "a2".into(),
                ..s.clone()
            })
        } else {
            claim_call(s)
        }
    };
    let next = store
        .claim_job(JobPick::Next, "s", LEASE, &[], &poison_first)
        .await
        .unwrap()
        .expect("the job behind the poison one");
    assert_eq!(next.lease.approval_id, "q3");
    assert_eq!(job_state(&store, "p1").await, Some(("failed".into(), 1)));
    assert_eq!(
        store.approval("p1").await.unwrap().unwrap().execution,
        Execution::Failed
    );
    // The database itself refuses a ledger entry that bypasses the claim, and any claim of an
    // evaluator halt.
    insert(&store, &trash_request("pending", &["m1"]))
        .await
        .unwrap();
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
    let mut evaluator = trash_request("e1", &[]);
    evaluator.kind = ApprovalKind::Evaluator;
    evaluator.preconditions = Vec::new();
    insert(&store, &evaluator).await.unwrap();
    assert!(decide(
        &store,
        "e1",
        &response(ApprovalStatus::Approved, "web", t0())
    )
    .await
    .unwrap());
    let message = refused(
        &store,
        "INSERT INTO ledger (approval_id, tool, args_canonical, state, claimed_at) \
         SELECT id, tool, args_canonical, 'executing', created_at FROM approvals WHERE id = 'e1'",
    )
    .await;
    assert!(message.contains("never claimed"), "{message}");
}

// ---------------------------------------------------------------------------------------------
// The suite, once per engine.
// ---------------------------------------------------------------------------------------------

macro_rules! suite {
    ($engine:expr) => {
        #[tokio::test]
        async fn the_claim_reports_a_missing_or_corrupt_saved_run_and_a_corrupt_row() {
            super::the_claim_reports_a_missing_or_corrupt_saved_run_and_a_corrupt_row($engine)
                .await;
        }
        #[tokio::test]
        async fn a_refused_call_is_consumed_and_the_claim_rule_is_the_second_line() {
            super::a_refused_call_is_consumed_and_the_claim_rule_is_the_second_line($engine).await;
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
