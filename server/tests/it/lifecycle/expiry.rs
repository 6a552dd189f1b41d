//! Expiry through the injected clock: a row is answerable until `created + TTL` and lapsed at
//! that instant; the sweep marks it `expired` once, emits `approval.lapsed`, audits the lapse
//! and resumes the run with "the approval lapsed; nothing was changed"; nothing executes; a late
//! answer (even before the sweep) is `Expired` (HTTP 410).

use chrono::Duration;
use iris_core::approvals::{RespondError, LAPSED};
use iris_core::ports::{Clock, ManualClock};
use iris_core::wire::{ApprovalStatus, AuditKind, Decision, Execution, RunStatus};

use super::{owner, paused_call, result_sent, resume, sweep, t0, turn, Files, World, MANIFEST};

#[tokio::test]
async fn a_row_is_answerable_for_its_ttl_and_lapses_at_that_instant() {
    let w = World::new().await;
    let files = Files::new(MANIFEST);
    let g = w.service(files.clone(), vec![]);

    let a = turn(&g, "delete /a").await;
    let b = turn(&g, "delete /b").await;
    let (a_id, b_id) = (a.approval_id.unwrap(), b.approval_id.unwrap());
    let row_b = w.row(&b_id).await;
    assert_eq!(row_b.created_at, t0());
    assert_eq!(row_b.expires_at, t0() + Duration::seconds(3600));

    // t0 + 3599 s: nothing has lapsed, an answer is stored and executes.
    w.clock.advance(Duration::seconds(3599));
    assert!(sweep(&g).await.is_empty());
    g.respond(&a_id, Decision::Approve, None, &owner())
        .await
        .unwrap();
    resume(&g, &a_id).await.unwrap();
    assert_eq!(files.count("delete_file"), 1);

    // t0 + 3600 s: the sweep expires B, once.
    w.clock.advance(Duration::seconds(1));
    assert_eq!(sweep(&g).await, vec![b_id.clone()]);
    assert!(sweep(&g).await.is_empty());
    let row_b = w.row(&b_id).await;
    assert_eq!(row_b.status, ApprovalStatus::Expired);
    assert_eq!(row_b.responded_at, Some(t0() + Duration::seconds(3600)));
    assert_eq!(row_b.responded_by.as_deref(), Some("iris"));
    let lapsed = w.events.named("approval.lapsed", &b_id).await;
    assert_eq!(lapsed.len(), 1, "one approval.lapsed for B");
    assert!(w.events.named("approval.lapsed", &a_id).await.is_empty());
    let lapses: Vec<_> = w
        .audit(&b_id)
        .await
        .into_iter()
        .filter(|e| e.kind == AuditKind::Lapse)
        .collect();
    assert_eq!(lapses.len(), 1);
    assert_eq!(lapses[0].at, t0() + Duration::seconds(3600));

    // The sweep's resume: the model's next input holds the lapse; nothing executes.
    let call_b = paused_call(&w, &b.conversation_id).await;
    let resumed = resume(&g, &b_id).await.unwrap();
    assert!(resumed.resumed);
    assert_eq!(resumed.status, RunStatus::Done);
    let sent = result_sent(&w.model, &call_b);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["message"], LAPSED);
    assert_eq!(sent[0]["status"], "expired");
    assert_eq!(files.count("delete_file"), 1, "a lapsed call ran");
    assert_eq!(w.row(&b_id).await.execution, Execution::None);
    // IRIS's own line at the card's end, then the model's reply.
    assert_eq!(w.events.named("run.message", &b_id).await.len(), 2);

    // A late answer is refused as expired (HTTP 410), and changes nothing.
    match g.respond(&b_id, Decision::Approve, None, &owner()).await {
        Err(RespondError::Expired(row)) => assert_eq!(row.status, ApprovalStatus::Expired),
        other => panic!("expected Expired, got {other:?}"),
    }
    assert_eq!(files.count("delete_file"), 1);
}

#[tokio::test]
async fn an_answer_at_the_expiry_instant_lapses_the_row_even_before_the_sweep() {
    let w = World::new().await;
    let files = Files::new(MANIFEST);
    let g = w.service(files.clone(), vec![]);
    let r = turn(&g, "delete /c").await;
    let id = r.approval_id.unwrap();
    w.clock.advance(Duration::hours(1));
    assert!(matches!(
        g.respond(&id, Decision::Approve, None, &owner()).await,
        Err(RespondError::Expired(_))
    ));
    assert_eq!(w.row(&id).await.status, ApprovalStatus::Expired);
    assert_eq!(w.events.named("approval.lapsed", &id).await.len(), 1);
    // The sweep finds nothing more to expire; the resume runs nothing.
    assert!(sweep(&g).await.is_empty());
    resume(&g, &id).await.unwrap();
    assert!(files.runs().is_empty());
}

#[test]
fn the_manual_clock_moves_only_when_told() {
    let clock = ManualClock::new(t0());
    assert_eq!(clock.now(), t0());
    assert_eq!(clock.now(), t0());
    clock.advance(Duration::seconds(90));
    assert_eq!(clock.now(), t0() + Duration::seconds(90));
    clock.set(t0() - Duration::days(1));
    assert_eq!(clock.now(), t0() - Duration::days(1));
}
