//! Rules of the agent loop (DESIGN §3 steps 2-4 and 7), through the approvals service against
//! the real store and a counting plugin: names resolve before checks, gated calls are refused
//! when they cannot be governed, a halted step answers every other call id once, approve runs
//! the pinned call once from the row however many workers race for the job, and the loop never
//! runs a pinned call itself.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use iris_core::agent::{Agent, Pausing, NOT_RUN_WAITING};
use iris_core::approval::Ttl;
use iris_core::approvals::ApprovalService;
use iris_core::manifest::ToolSpec;
use iris_core::model::{Message, Model, ModelError, ModelTurn, ToolCall};
use iris_core::ports::{ApprovalFilter, ApprovalStore, SystemClock};
use iris_core::toolbox::Toolbox;
use iris_core::wire::{Decision, RunStatus};
use iris_store::Store;
use serde_json::{json, Value};
use support::files_plugin::Files;
use support::owner;

const MANIFEST: &str = r#"
plugin: files
tools:
  - name: list_files
    effect: read
  - name: delete_file
    effect: destructive
    aliases: [remove_file]
    undo: restore_file
    undo_window_days: 7
    parameters:
      type: object
      properties: {path: {type: string}}
      required: [path]
      additionalProperties: false
  - name: shred_file
    effect: destructive
    parameters:
      type: object
      properties: {path: {type: string}}
      required: [path]
      additionalProperties: false
  - name: restore_file
    effect: write
    confirm: never
  - name: touch_file
    effect: write
    confirm: once
"#;

/// Proposes a fixed list of calls once, then answers with text; records what it was sent.
struct OneStep {
    calls: Vec<ToolCall>,
    seen: Mutex<Vec<Vec<Message>>>,
    steps: AtomicUsize,
}

#[async_trait]
impl Model for OneStep {
    async fn complete(
        &self,
        messages: &[Message],
        _: &[ToolSpec],
    ) -> Result<ModelTurn, ModelError> {
        self.seen.lock().unwrap().push(messages.to_vec());
        if self.steps.fetch_add(1, Ordering::SeqCst) == 0 {
            Ok(ModelTurn {
                content: None,
                tool_calls: self.calls.clone(),
            })
        } else {
            Ok(ModelTurn {
                content: Some("finished".into()),
                tool_calls: vec![],
            })
        }
    }
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args,
    }
}

struct Setup {
    service: ApprovalService,
    files: Arc<Files>,
    model: Arc<OneStep>,
    store: Store,
    _database: Option<iris_store::testing::DropDatabase>,
}

/// The service over a fresh store; `pausing` `None` is governed with the default TTLs.
async fn setup(calls: Vec<ToolCall>, ungoverned: Option<&str>) -> Setup {
    let (store, database) = support::kernel_store().await;
    let files = Files::new(MANIFEST);
    let model = Arc::new(OneStep {
        calls,
        seen: Mutex::new(vec![]),
        steps: AtomicUsize::new(0),
    });
    let pausing = match ungoverned {
        None => Pausing::Governed {
            ttl: Ttl::default(),
            clock: Arc::new(SystemClock),
            passkeys: Default::default(),
        },
        Some(why) => Pausing::Ungoverned(why.into()),
    };
    let toolbox = Arc::new(Toolbox::new(vec![files.clone()]).unwrap());
    let agent = Agent::new(model.clone(), toolbox, pausing, vec![]);
    Setup {
        service: support::service(&store, agent, Arc::new(SystemClock)),
        files,
        model,
        store,
        _database: database,
    }
}

async fn rows(store: &Store) -> usize {
    store
        .approvals(&ApprovalFilter::default())
        .await
        .unwrap()
        .len()
}

#[tokio::test]
async fn a_halted_step_answers_every_other_call_once_and_runs_nothing_gated() {
    let s = setup(
        vec![
            call("a", "list_files", json!({})),
            call("b", "Remove-File", json!({"path": "/x"})),
            call("c", "touch_file", json!({})),
        ],
        None,
    )
    .await;
    let r = s.service.chat(&owner(), None, "delete /x").await.unwrap();
    assert_eq!(r.status, RunStatus::AwaitingApproval);
    // The read before the gated call ran; the alias resolved to delete_file and halted; the
    // later call did not run.
    let runs = s.files.runs();
    assert_eq!(runs, vec![("list_files".to_string(), json!({}))]);
    let id = r.approval_id.clone().unwrap();
    let row = s.store.approval(&id).await.unwrap().unwrap();
    assert_eq!(row.tool, "delete_file");
    let transcript = s
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
    assert_eq!(results[0].0, "a");
    assert_eq!(results[1].0, "c");
    assert_eq!(results[1].1["message"], NOT_RUN_WAITING);

    // Approve, resume: the pinned call runs once from the row, the model then finishes and saw
    // exactly one result per call id.
    s.service
        .respond(&id, Decision::Approve, None, &owner())
        .await
        .unwrap();
    let resumed = s.service.run_job(&id).await.unwrap().unwrap().run.unwrap();
    assert!(resumed.resumed);
    assert_eq!(resumed.reply, "finished");
    assert!(
        s.service.run_job(&id).await.unwrap().is_none(),
        "resumed twice"
    );
    let runs = s.files.runs();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1], ("delete_file".to_string(), json!({"path": "/x"})));
    let last_seen = s.model.seen.lock().unwrap().last().unwrap().clone();
    for id in ["a", "b", "c"] {
        let n = last_seen
            .iter()
            .filter(|m| matches!(m, Message::Tool { tool_call_id, .. } if tool_call_id == id))
            .count();
        assert_eq!(n, 1, "call {id} has {n} results");
    }
}

#[tokio::test]
async fn gated_calls_are_refused_when_they_cannot_be_governed() {
    for why in [
        "approvals are switched off (IRIS_APPROVALS_ENABLED=false)",
        "there is no queue to pause on",
    ] {
        let s = setup(
            vec![call("b", "delete_file", json!({"path": "/x"}))],
            Some(why),
        )
        .await;
        let r = s.service.chat(&owner(), None, "delete /x").await.unwrap();
        assert_eq!(r.status, RunStatus::Refused, "{why}");
        assert!(s.files.runs().is_empty());
        assert_eq!(rows(&s.store).await, 0, "a row was written");
        let seen = s.model.seen.lock().unwrap().last().unwrap().clone();
        let told = seen.iter().any(|m| {
            matches!(m, Message::Tool { content, .. }
            if content["status"] == "refused"
                && content["message"].as_str().unwrap().contains("nothing was changed")
                && content["message"].as_str().unwrap().contains(why))
        });
        assert!(told, "the model was not told why nothing changed");
    }
}

#[tokio::test]
async fn unknown_tools_never_run_and_confirm_once_is_advice() {
    let s = setup(
        vec![
            call("a", "wipe_everything", json!({})),
            call("b", "touch_file", json!({})),
        ],
        None,
    )
    .await;
    let r = s.service.chat(&owner(), None, "go").await.unwrap();
    assert_eq!(r.status, RunStatus::Done);
    assert_eq!(s.files.runs(), vec![("touch_file".to_string(), json!({}))]);
    assert_eq!(rows(&s.store).await, 0, "confirm once wrote a row");
    assert_eq!(r.effects_executed, vec![iris_core::wire::Effect::Write]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn approving_runs_the_rows_call_once_however_many_workers_race() {
    let s = Arc::new(setup(vec![call("b", "delete_file", json!({"path": "/x"}))], None).await);
    let r = s.service.chat(&owner(), None, "delete /x").await.unwrap();
    let id = r.approval_id.unwrap();
    // Before the answer there is no job: nothing can run the call.
    assert!(s.service.run_next_job().await.unwrap().is_none());
    assert!(s.files.runs().is_empty());
    s.service
        .respond(&id, Decision::Approve, None, &owner())
        .await
        .unwrap();
    let barrier = Arc::new(tokio::sync::Barrier::new(8));
    let mut workers = Vec::new();
    for _ in 0..8 {
        let (s, barrier) = (s.clone(), barrier.clone());
        workers.push(tokio::spawn(async move {
            barrier.wait().await;
            s.service.run_next_job().await.unwrap().is_some()
        }));
    }
    let mut ran = 0;
    for w in workers {
        ran += usize::from(w.await.unwrap());
    }
    assert_eq!(ran, 1, "one worker got the job");
    assert_eq!(
        s.files.runs(),
        vec![("delete_file".to_string(), json!({"path": "/x"}))],
        "exactly the row's call, once"
    );
    let audit = s.store.audit(Some(&id)).await.unwrap();
    let executions: Vec<_> = audit
        .iter()
        .filter(|e| e.kind == iris_core::wire::AuditKind::Execution)
        .collect();
    assert_eq!(executions.len(), 1);
    assert_eq!(executions[0].item.as_deref(), Some("/x"));
    let row = s.store.approval(&id).await.unwrap().unwrap();
    assert_eq!(row.execution, iris_core::wire::Execution::Executed);
}

#[tokio::test]
async fn the_loop_never_runs_a_pinned_call_itself() {
    // A model that keeps asking for the destructive call after it halted: every halt is a new
    // card, and nothing runs until a card is approved.
    let s = setup(vec![call("b", "delete_file", json!({"path": "/x"}))], None).await;
    for _ in 0..3 {
        s.model.steps.store(0, Ordering::SeqCst);
        let r = s.service.chat(&owner(), None, "delete /x").await.unwrap();
        assert_eq!(r.status, RunStatus::AwaitingApproval);
    }
    assert!(s.files.runs().is_empty());
    assert_eq!(rows(&s.store).await, 3);
    assert!(s.service.run_next_job().await.unwrap().is_none());
}
