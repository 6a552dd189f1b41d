//! Failed resumes: recorded on the row, not retried by the sweep, retried on request without
//! executing the pinned call again (one retry wins however many ask at once); a server that
//! stalls mid-call loses its lease and the taker marks the call `unknown`, which never runs
//! again, and the owner is told.

use std::sync::Arc;

use chrono::Duration;
use iris_core::approvals::{RetryError, UNKNOWN_OUTCOME};
use iris_core::ports::{ApprovalStore, ClaimPlan, JobPick, LedgerStep};
use iris_core::wire::{AuditKind, Decision, Event, Execution, OverlapState, RunStatus};
use serde_json::json;

use super::{owner, paused_call, result_sent, resume, turn, Files, World, MANIFEST};

#[tokio::test]
async fn a_failed_resume_is_recorded_and_a_retry_reuses_the_ledger_result() {
    let w = World::new().await;
    let files = Files::new(MANIFEST);
    let g = w.service(files.clone(), vec![]);
    let r = turn(&g, "delete /x").await;
    let id = r.approval_id.unwrap();
    let call = paused_call(&w, &r.conversation_id).await;

    // Nothing to retry while pending, or for an unknown id.
    assert!(matches!(
        g.retry(&id, &owner()).await.map(|(_, run)| run),
        Err(RetryError::NotDecided(_))
    ));
    assert!(matches!(
        g.retry("nope", &owner()).await,
        Err(RetryError::NotFound(_))
    ));

    // Approved; the model is down when the run resumes, after the pinned call executed.
    g.respond(&id, Decision::Approve, None, &owner())
        .await
        .unwrap();
    w.model.set_down(true);
    let failed = resume(&g, &id).await.unwrap();
    assert_eq!(failed.status, RunStatus::Failed);
    assert_eq!(files.count("delete_file"), 1);
    let row = w.row(&id).await;
    assert_eq!(row.execution, Execution::Executed);
    let error = row.resume_error.clone().expect("resume_error recorded");
    assert!(error.contains("connection refused"), "{error}");
    assert!(
        w.events
            .named("approval.responded", &id)
            .await
            .iter()
            .any(|e| matches!(e, Event::ApprovalResponded(a) if a.resume_error.is_some())),
        "the card was not told about the failed resume"
    );
    // The sweep does not retry it by itself; a second resume is a no-op.
    assert!(g.run_next_job().await.unwrap().is_none());
    assert!(resume(&g, &id).await.is_none());

    // A retry while the model is still down fails again, recorded again, nothing re-executed.
    let again = g.retry(&id, &owner()).await.map(|(_, run)| run).unwrap();
    assert_eq!(again.status, RunStatus::Failed);
    assert!(w.row(&id).await.resume_error.is_some());
    assert_eq!(files.count("delete_file"), 1);

    // The model is back: the retry completes from the ledger's recorded result.
    w.model.set_down(false);
    let done = g.retry(&id, &owner()).await.map(|(_, run)| run).unwrap();
    assert_eq!(done.status, RunStatus::Done);
    assert_eq!(done.reply, "finished");
    assert!(done.resumed);
    assert_eq!(files.count("delete_file"), 1, "the pinned call ran twice");
    assert_eq!(
        result_sent(&w.model, &call),
        vec![json!({"done": "delete_file", "path": "/x"})]
    );
    let row = w.row(&id).await;
    assert_eq!(row.resume_error, None);
    assert_eq!(row.execution, Execution::Executed);
    let executions = w
        .audit(&id)
        .await
        .into_iter()
        .filter(|e| e.kind == AuditKind::Execution)
        .count();
    assert_eq!(executions, 1);
    // Nothing left to retry.
    assert!(matches!(
        g.retry(&id, &owner()).await.map(|(_, run)| run),
        Err(RetryError::NotFailed(_))
    ));
}

#[tokio::test]
async fn concurrent_retries_have_one_winner() {
    let w = World::new().await;
    let files = Files::new(MANIFEST);
    let g = Arc::new(w.service(files.clone(), vec![]));
    let r = turn(&g, "delete /x").await;
    let id = r.approval_id.unwrap();
    g.respond(&id, Decision::Approve, None, &owner())
        .await
        .unwrap();
    w.model.set_down(true);
    resume(&g, &id).await.unwrap();
    w.model.set_down(false);
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (g, id) = (g.clone(), id.clone());
        tasks.push(tokio::spawn(async move {
            g.retry(&id, &owner()).await.map(|(_, run)| run)
        }));
    }
    let mut won = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => won += 1,
            Err(RetryError::NotFailed(_)) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(won, 1);
    assert_eq!(files.count("delete_file"), 1);
}

#[tokio::test]
async fn an_unknown_execution_is_never_run_again_and_the_owner_is_told() {
    let w = World::new().await;
    let files = Files::new(MANIFEST);
    let g = w.service(files.clone(), vec![]);
    let r = turn(&g, "delete /x").await;
    let id = r.approval_id.unwrap();
    let call = paused_call(&w, &r.conversation_id).await;
    g.respond(&id, Decision::Approve, None, &owner())
        .await
        .unwrap();
    // Another server claims the job and the call (ledger `executing`), then stalls (or dies)
    // before the outcome: its lease lapses and this server takes the job over.
    let stalled = w
        .store
        .claim_job(JobPick::Approval(&id), "server-that-died", 30, &[], &|s| {
            let row = s.approval.as_ref().unwrap();
            ClaimPlan {
                ledger: LedgerStep::Claim {
                    tool: row.tool.clone(),
                    args_canonical: iris_core::canonical::canonical_json(&row.args),
                },
                ..ClaimPlan::lease_only()
            }
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(w.row(&id).await.execution, Execution::Executing);
    assert!(resume(&g, &id).await.is_none(), "the lease is still held");
    w.clock.advance(Duration::seconds(31));

    // The taker's resume fails at the model; the retry then completes. Neither runs the call,
    // and the stalled server can no longer record an outcome.
    w.model.set_down(true);
    resume(&g, &id).await.unwrap();
    assert_eq!(w.row(&id).await.execution, Execution::Unknown);
    assert!(matches!(
        w.store
            .record_outcome(
                &stalled.lease,
                30,
                &iris_core::ports::OutcomeRecord {
                    outcome: iris_core::ports::Outcome::Executed,
                    result: json!({"done": "delete_file"}),
                    audit: vec![],
                    outbox: iris_core::ports::Outbox::default(),
                }
            )
            .await,
        Err(iris_core::ports::StoreError::LeaseLost(_))
    ));
    w.model.set_down(false);
    let done = g.retry(&id, &owner()).await.map(|(_, run)| run).unwrap();
    assert_eq!(done.status, RunStatus::Done);
    assert!(files.runs().is_empty(), "an unknown execution was retried");
    let sent = result_sent(&w.model, &call);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["message"], UNKNOWN_OUTCOME);
    assert_eq!(w.row(&id).await.execution, Execution::Unknown);
    let lines = w.store.lines(&r.conversation_id).await.unwrap();
    assert!(
        lines
            .iter()
            .any(|l| l.text.contains("can't tell whether") && l.text.contains("not be run again")),
        "the owner was not told: {lines:?}"
    );
    assert!(!w.events.named("run.message", &id).await.is_empty());

    // A new card for the same call says it may already have run (docs/liveness.md "a card says
    // what it repeats"): approving it again is the owner's choice, not an accident.
    let again = turn(&g, "delete /x").await;
    let card = w.row(&again.approval_id.unwrap()).await.card;
    assert!(
        card.overlaps
            .iter()
            .any(|o| o.approval_id == id && o.state == OverlapState::MayHaveRun && o.same_call),
        "{:?}",
        card.overlaps
    );
}
