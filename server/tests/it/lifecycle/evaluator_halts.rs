//! Evaluator halts: a post-step rule halts the run after a step ran, as an `evaluator` row with
//! no items and the step's result already in the transcript; approve continues without
//! re-executing; reject or lapse (evaluator TTL, ten minutes) stays stopped without asking the
//! model; a run that cannot pause ends at the halt.

use std::sync::Arc;

use chrono::Duration;
use iris_core::agent::{Pausing, NOT_RUN_PAUSED};
use iris_core::evaluator::{PostStepEvaluator, RuleEvaluator};
use iris_core::model::Message;
use iris_core::ports::{ApprovalFilter, ApprovalStore};
use iris_core::wire::{ApprovalKind, Decision, Effect, Execution, RunStatus};
use serde_json::{json, Value};

use super::{owner, result_sent, resume, sweep, t0, turn, Files, World, MANIFEST};

fn bulk_restore_rule() -> Vec<Arc<dyn PostStepEvaluator>> {
    vec![Arc::new(
        RuleEvaluator::from_yaml(
            r#"
rules:
  - name: bulk-restore
    tools: [restore_file]
    when: {pointer: /restored, greater_than: 1}
    reason: "{tool} restored {value} files at once"
"#,
        )
        .unwrap(),
    )]
}

#[tokio::test]
async fn an_evaluator_halt_pauses_with_the_result_in_place_and_approve_continues_without_rerunning()
{
    let w = World::new().await;
    let files = Files::new(MANIFEST);
    let g = w.service(files.clone(), bulk_restore_rule());

    let r = turn(&g, "restore all").await;
    assert_eq!(r.status, RunStatus::AwaitingApproval);
    assert_eq!(r.effects_executed, vec![Effect::Write]);
    assert!(
        r.reply.contains("restore_file restored 3 files at once"),
        "{}",
        r.reply
    );
    let id = r.approval_id.unwrap();
    assert!(r.reply.contains(&format!("/activity/{id}")));
    // The step ran; the later call of the step did not.
    assert_eq!(files.runs(), vec![("restore_file".to_string(), json!({}))]);

    let row = w.row(&id).await;
    assert_eq!(row.kind, ApprovalKind::Evaluator);
    assert!(row.items.is_empty(), "an evaluator row pins no items");
    assert_eq!(row.tool, "restore_file");
    assert_eq!(row.card.title, "restore_file restored 3 files at once");
    assert_eq!(row.card.action, "Continue after restore_file");
    assert_eq!(row.card.effect, Effect::Write);
    assert!(row.card.lines.len() <= 1);
    assert_eq!(
        row.expires_at,
        t0() + Duration::seconds(600),
        "evaluator TTL"
    );
    assert_eq!(w.events.named("approval.requested", &id).await.len(), 1);

    // The checkpointed transcript already holds the step's result.
    let transcript = w
        .store
        .transcript(&r.conversation_id)
        .await
        .unwrap()
        .messages;
    let results: Vec<(String, Value)> = transcript
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                tool_call_id,
                content,
            } => Some((tool_call_id.clone(), content.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].1, json!({"restored": 3}));
    assert_eq!(results[1].1["message"], NOT_RUN_PAUSED);
    let first_call = results[0].0.clone();

    // Approve: the model continues from the result; nothing runs again, nothing is claimed.
    w.clock.advance(Duration::seconds(599));
    assert!(sweep(&g).await.is_empty());
    g.respond(&id, Decision::Approve, None, &owner())
        .await
        .unwrap();
    let resumed = resume(&g, &id).await.unwrap();
    assert!(resumed.resumed);
    assert_eq!(resumed.status, RunStatus::Done);
    assert_eq!(resumed.reply, "finished");
    assert_eq!(files.count("restore_file"), 1, "the step ran again");
    assert_eq!(
        result_sent(&w.model, &first_call),
        vec![json!({"restored": 3})]
    );
    assert_eq!(w.row(&id).await.execution, Execution::None);
    assert!(resume(&g, &id).await.is_none());
}

#[tokio::test]
async fn a_rejected_or_lapsed_evaluator_halt_stays_stopped() {
    let w = World::new().await;
    let files = Files::new(MANIFEST);
    let g = w.service(files.clone(), bulk_restore_rule());

    // Reject: the model is not asked again; the chat says the run stays stopped.
    let r = turn(&g, "restore all").await;
    let id = r.approval_id.unwrap();
    g.respond(&id, Decision::Reject, Some("too many".into()), &owner())
        .await
        .unwrap();
    let asked = w.model.calls();
    let stopped = resume(&g, &id).await.unwrap();
    assert_eq!(w.model.calls(), asked, "the model was asked to continue");
    assert_eq!(stopped.status, RunStatus::Refused);
    assert!(stopped.reply.contains("stays stopped"), "{}", stopped.reply);
    assert!(stopped.reply.contains("too many"), "{}", stopped.reply);
    let lines = w.store.lines(&r.conversation_id).await.unwrap();
    assert!(lines.last().unwrap().text.contains("stays stopped"));
    assert_eq!(w.events.named("run.message", &id).await.len(), 1);
    assert_eq!(files.count("restore_file"), 1);
    assert_eq!(files.count("list_files"), 0);

    // Lapse after the evaluator TTL (10 minutes), not the destructive one.
    let r = turn(&g, "restore all").await;
    let id = r.approval_id.unwrap();
    w.clock.advance(Duration::seconds(599));
    assert!(sweep(&g).await.is_empty());
    w.clock.advance(Duration::seconds(1));
    assert_eq!(sweep(&g).await, vec![id.clone()]);
    assert_eq!(w.events.named("approval.lapsed", &id).await.len(), 1);
    let asked = w.model.calls();
    let stopped = resume(&g, &id).await.unwrap();
    assert_eq!(w.model.calls(), asked);
    assert_eq!(stopped.status, RunStatus::Refused);
    assert!(
        stopped.reply.contains("nobody answered"),
        "{}",
        stopped.reply
    );
    assert_eq!(files.count("restore_file"), 2);
    assert_eq!(files.count("list_files"), 0);
}

#[tokio::test]
async fn an_evaluator_halt_that_cannot_pause_ends_the_run() {
    let w = World::new().await;
    let files = Files::new(MANIFEST);
    let g = w.service_with(
        files.clone(),
        bulk_restore_rule(),
        Pausing::Ungoverned("approvals are switched off (IRIS_APPROVALS_ENABLED=false)".into()),
    );
    let r = turn(&g, "restore all").await;
    assert_eq!(r.status, RunStatus::Refused);
    assert!(r.reply.contains("cannot pause"), "{}", r.reply);
    assert!(r.approval_id.is_none());
    assert_eq!(
        files.count("list_files"),
        0,
        "the run went on after the halt"
    );
    assert!(w
        .store
        .approvals(&ApprovalFilter::default())
        .await
        .unwrap()
        .is_empty());
}
