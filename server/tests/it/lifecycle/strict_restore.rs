//! Strict restore: a corrupt checkpoint, a tool no manifest declares any more, and an effect no
//! longer approved per call never execute; the execution is marked `failed` with the reason and
//! the owner is told (`approval.responded`, a chat line, a denial in the audit).

use iris_core::approvals::RetryError;
use iris_core::ports::ApprovalStore;
use iris_core::wire::{AuditKind, Decision, Event, Execution, RunStatus};

use super::{owner, resume, turn, Files, World, MANIFEST};

/// The same plugin after an update that dropped `delete_file`.
const MANIFEST_WITHOUT_DELETE: &str = r#"
plugin: files
tools:
  - name: list_files
    effect: read
  - name: restore_file
    effect: write
    confirm: never
"#;

/// The same plugin after an update that made `delete_file` a plain write.
const MANIFEST_DELETE_IS_A_WRITE: &str = r#"
plugin: files
tools:
  - name: list_files
    effect: read
  - name: delete_file
    effect: write
    confirm: never
    parameters:
      type: object
      properties: {path: {type: string}}
      required: [path]
      additionalProperties: false
  - name: restore_file
    effect: write
    confirm: never
"#;

/// Asserts the approval never executed, shows `execution: failed` with `needle` in its result,
/// and that the owner was told by `approval.responded` and a chat line.
async fn assert_refused_and_told(w: &World, id: &str, conversation: &str, needle: &str) {
    let row = w.row(id).await;
    assert_eq!(row.execution, Execution::Failed, "{row:?}");
    let message = row.result.as_ref().unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.contains(needle), "{message}");
    assert!(message.contains("nothing was changed"), "{message}");
    assert!(
        w.events
            .named("approval.responded", id)
            .await
            .iter()
            .any(|e| matches!(e, Event::ApprovalResponded(a) if a.execution == Execution::Failed)),
        "no approval.responded with execution failed"
    );
    assert!(!w.events.named("run.message", id).await.is_empty());
    let lines = w.store.lines(conversation).await.unwrap();
    assert!(
        lines.iter().any(|l| l.role == "assistant"
            && l.approval_id.as_deref() == Some(id)
            && (l.text.contains(needle) || l.text.contains("corrupt"))),
        "no chat line: {lines:?}"
    );
    assert!(w
        .audit(id)
        .await
        .iter()
        .any(|e| e.kind == AuditKind::Denial));
}

#[tokio::test]
async fn a_corrupt_checkpoint_is_never_executed_and_the_owner_is_told() {
    let w = World::new().await;
    let files = Files::new(MANIFEST);
    let g = w.service(files.clone(), vec![]);
    let r = turn(&g, "delete /x").await;
    let card = r.approval_id.unwrap();
    // Plant a copy of the card whose saved run is damaged (the database refuses changing a
    // checkpoint, so the damage is planted as a new one: what a bad disk or restore leaves).
    let id = "damaged";
    for sql in [
        format!(
            "INSERT INTO approvals (id, kind, tool, args, args_canonical, call_hash, items, \
             card, run_id, context_summary, created_at, expires_at, preconditions) \
             SELECT '{id}', kind, tool, args, args_canonical, call_hash, items, card, run_id, \
             context_summary, created_at, expires_at, preconditions FROM approvals WHERE id = '{card}'"
        ),
        format!(
            "INSERT INTO checkpoints (id, approval_id, run_id, conversation_id, body, created_at) \
             VALUES ('cp-damaged', '{id}', 'run-x', '{}', '{{\"messages\": [', 'x')",
            r.conversation_id
        ),
        format!("UPDATE approvals SET checkpoint_id = 'cp-damaged' WHERE id = '{id}'"),
    ] {
        sqlx::query(&sql).execute(w.store.pool()).await.unwrap();
    }
    g.respond(id, Decision::Approve, None, &owner())
        .await
        .unwrap();

    let report = g.run_job(id).await.unwrap().expect("the job ran");
    assert!(
        report.run.is_none(),
        "a run that cannot be restored does not continue"
    );
    assert!(files.runs().is_empty(), "a corrupt checkpoint executed");
    assert_refused_and_told(&w, id, &r.conversation_id, "corrupt").await;
    assert!(w.row(id).await.resume_error.unwrap().contains("corrupt"));
    // Never later either: the call is consumed, and the run can never resume, so there is no
    // retry.
    assert!(matches!(
        g.retry(id, &owner()).await,
        Err(RetryError::NotFailed(_))
    ));
    assert!(g.run_next_job().await.unwrap().is_none());
    assert!(files.runs().is_empty());
}

#[tokio::test]
async fn a_tool_no_manifest_declares_any_more_is_never_executed() {
    let w = World::new().await;
    let before = Files::new(MANIFEST);
    let r = turn(&w.service(before.clone(), vec![]), "delete /x").await;
    let id = r.approval_id.unwrap();
    w.service(before.clone(), vec![])
        .respond(&id, Decision::Approve, None, &owner())
        .await
        .unwrap();
    // The server restarts with the plugin updated: delete_file is gone.
    let after = Files::new(MANIFEST_WITHOUT_DELETE);
    let g = w.service(after.clone(), vec![]);
    let resumed = resume(&g, &id).await.unwrap();
    assert_eq!(resumed.status, RunStatus::Done);
    assert!(before.runs().is_empty() && after.runs().is_empty());
    assert_refused_and_told(&w, &id, &r.conversation_id, "not declared").await;
}

#[tokio::test]
async fn an_effect_no_longer_approved_per_call_is_never_executed() {
    let w = World::new().await;
    let before = Files::new(MANIFEST);
    let r = turn(&w.service(before.clone(), vec![]), "delete /x").await;
    let id = r.approval_id.unwrap();
    w.service(before.clone(), vec![])
        .respond(&id, Decision::Approve, None, &owner())
        .await
        .unwrap();
    let after = Files::new(MANIFEST_DELETE_IS_A_WRITE);
    let g = w.service(after.clone(), vec![]);
    resume(&g, &id).await.unwrap();
    assert!(before.runs().is_empty() && after.runs().is_empty());
    assert_refused_and_told(&w, &id, &r.conversation_id, "no longer approved per call").await;
}
