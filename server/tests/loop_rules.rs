//! Rules of the agent loop (DESIGN §3 steps 2-4 and 7), against the real SQLite store and a
//! counting plugin: names resolve before checks, gated calls are refused when they cannot be
//! governed, a halted step answers every other call id once, approve runs the pinned call once,
//! and a forged claim is denied and audited.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use iris_core::agent::{Agent, NOT_RUN_WAITING};
use iris_core::approval::Ttl;
use iris_core::kernel::{Actor, Governance};
use iris_core::manifest::{Manifest, ToolSpec};
use iris_core::model::{Message, Model, ModelError, ModelTurn, ToolCall};
use iris_core::plugin::{CallContext, Description, ItemOutcome, Plugin, ToolError, ToolOutput};
use iris_core::ports::{AuditLog, ConversationStore, Notifier, QueueStore, Scope, SystemClock};
use iris_core::wire::{Decision, Event, RunStatus};
use iris_store::Store;
use serde_json::{json, Value};

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

/// Counts executions per tool.
struct Files {
    manifest: Manifest,
    runs: Mutex<Vec<(String, Value)>>,
}

#[async_trait]
impl Plugin for Files {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }
    async fn normalise(&self, _: &str, args: Value, _: &CallContext) -> Result<Value, ToolError> {
        Ok(args)
    }
    async fn describe(
        &self,
        tool: &str,
        args: &Value,
        _: &CallContext,
    ) -> Result<Description, ToolError> {
        let path = args["path"].as_str().unwrap_or_default().to_string();
        Ok(Description {
            title: format!("Delete {path}"),
            action: format!("Delete {path}"),
            lines: vec![format!("{tool} {path}")],
            items: vec![path],
            undo_note: None,
            preconditions: vec![],
        })
    }
    async fn execute(
        &self,
        tool: &str,
        args: &Value,
        _: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        self.runs
            .lock()
            .unwrap()
            .push((tool.to_string(), args.clone()));
        Ok(ToolOutput {
            result: json!({"done": tool}),
            items: args["path"]
                .as_str()
                .map(|p| {
                    vec![ItemOutcome {
                        item: p.into(),
                        outcome: json!({"status": "deleted"}),
                    }]
                })
                .unwrap_or_default(),
        })
    }
}

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

struct Silent;
impl Notifier for Silent {
    fn notify(&self, _: Event) {}
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args,
    }
}

struct Setup {
    agent: Agent,
    files: Arc<Files>,
    model: Arc<OneStep>,
    store: Store,
    _database: Option<iris_store::testing::DropDatabase>,
}

async fn setup(calls: Vec<ToolCall>, governed: bool, enabled: bool, checkpoints: bool) -> Setup {
    let (store, database) = support::kernel_store().await;
    let files = Arc::new(Files {
        manifest: Manifest::from_yaml(MANIFEST).unwrap(),
        runs: Mutex::new(vec![]),
    });
    let model = Arc::new(OneStep {
        calls,
        seen: Mutex::new(vec![]),
        steps: AtomicUsize::new(0),
    });
    let s = Arc::new(store.clone());
    let governance = governed.then(|| Governance {
        queue: s.clone(),
        ledger: s.clone(),
        audit: s.clone(),
        checkpoints: if checkpoints { Some(s.clone()) } else { None },
        notifier: Arc::new(Silent),
        clock: Arc::new(SystemClock),
        ttl: Ttl::default(),
        enabled,
    });
    let agent = Agent::new(
        model.clone(),
        vec![files.clone()],
        s.clone(),
        governance,
        vec![],
    )
    .unwrap();
    Setup {
        agent,
        files,
        model,
        store,
        _database: database,
    }
}

fn owner() -> Actor {
    Actor {
        name: "owner".into(),
        scope: Scope::Control,
        surface: "web".into(),
    }
}

#[tokio::test]
async fn a_halted_step_answers_every_other_call_once_and_runs_nothing_gated() {
    let s = setup(
        vec![
            call("a", "list_files", json!({})),
            call("b", "Remove-File", json!({"path": "/x"})),
            call("c", "touch_file", json!({})),
        ],
        true,
        true,
        true,
    )
    .await;
    let r = s.agent.run_turn(None, "delete /x").await.unwrap();
    assert_eq!(r.status, RunStatus::AwaitingApproval);
    // The read before the gated call ran; the alias resolved to delete_file and halted; the
    // later call did not run.
    let runs = s.files.runs.lock().unwrap().clone();
    assert_eq!(runs, vec![("list_files".to_string(), json!({}))]);
    let id = r.approval_id.clone().unwrap();
    let row = s.store.get(&id).await.unwrap().unwrap();
    assert_eq!(row.tool, "delete_file");
    let transcript = s.store.transcript(&r.conversation_id).await.unwrap();
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
    s.agent
        .governance()
        .unwrap()
        .respond_to_approval(&id, Decision::Approve, None, &owner())
        .await
        .unwrap();
    let resumed = s.agent.resume(&id).await.unwrap().unwrap();
    assert!(resumed.resumed);
    assert_eq!(resumed.reply, "finished");
    assert!(
        s.agent.resume(&id).await.unwrap().is_none(),
        "resumed twice"
    );
    let runs = s.files.runs.lock().unwrap().clone();
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
    for (governed, enabled, checkpoints) in [
        (false, true, true),
        (true, false, true),
        (true, true, false),
    ] {
        let s = setup(
            vec![call("b", "delete_file", json!({"path": "/x"}))],
            governed,
            enabled,
            checkpoints,
        )
        .await;
        let r = s.agent.run_turn(None, "delete /x").await.unwrap();
        assert_eq!(
            r.status,
            RunStatus::Refused,
            "{governed} {enabled} {checkpoints}"
        );
        assert!(s.files.runs.lock().unwrap().is_empty());
        assert!(
            s.store.list(None).await.unwrap().is_empty(),
            "a row was written"
        );
        let seen = s.model.seen.lock().unwrap().last().unwrap().clone();
        let told = seen.iter().any(|m| matches!(m, Message::Tool { content, .. }
            if content["status"] == "refused" && content["message"].as_str().unwrap().contains("nothing was changed")));
        assert!(told, "the model was not told nothing changed");
    }
}

#[tokio::test]
async fn unknown_tools_never_run_and_confirm_once_is_advice() {
    let s = setup(
        vec![
            call("a", "wipe_everything", json!({})),
            call("b", "touch_file", json!({})),
        ],
        true,
        true,
        true,
    )
    .await;
    let r = s.agent.run_turn(None, "go").await.unwrap();
    assert_eq!(r.status, RunStatus::Done);
    assert_eq!(
        s.files.runs.lock().unwrap().clone(),
        vec![("touch_file".to_string(), json!({}))]
    );
    assert!(
        s.store.list(None).await.unwrap().is_empty(),
        "confirm once wrote a row"
    );
    assert_eq!(r.effects_executed, vec![iris_core::wire::Effect::Write]);
}

#[tokio::test]
async fn a_forged_claim_is_denied_and_audited() {
    let s = setup(
        vec![call("b", "delete_file", json!({"path": "/x"}))],
        true,
        true,
        true,
    )
    .await;
    let r = s.agent.run_turn(None, "delete /x").await.unwrap();
    let id = r.approval_id.unwrap();
    let ctx = CallContext::default();
    // Not yet approved.
    let out = s
        .agent
        .execute_pinned(&id, "delete_file", &json!({"path": "/x"}), &ctx)
        .await
        .unwrap();
    assert_eq!(out["status"], "not_run");
    s.agent
        .governance()
        .unwrap()
        .respond_to_approval(&id, Decision::Approve, None, &owner())
        .await
        .unwrap();
    // Other arguments, another tool, changed bytes, a forged id: each denied and audited.
    let out = s
        .agent
        .execute_pinned(&id, "delete_file", &json!({"path": "/etc"}), &ctx)
        .await
        .unwrap();
    assert_eq!(out["status"], "not_run");
    // Another (also destructive) tool with the approved arguments: denied.
    let out = s
        .agent
        .execute_pinned(&id, "shred_file", &json!({"path": "/x"}), &ctx)
        .await
        .unwrap();
    assert_eq!(out["status"], "not_run");
    // An extra argument changes the canonical bytes: denied.
    let out = s
        .agent
        .execute_pinned(
            &id,
            "delete_file",
            &json!({"path": "/x", "force": true}),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(out["status"], "not_run");
    let out = s
        .agent
        .execute_pinned("forged", "delete_file", &json!({"path": "/x"}), &ctx)
        .await
        .unwrap();
    assert_eq!(out["status"], "not_run");
    // The real one runs once; a replay is denied.
    let out = s
        .agent
        .execute_pinned(&id, "delete_file", &json!({"path": "/x"}), &ctx)
        .await
        .unwrap();
    assert_eq!(out["done"], "delete_file");
    let out = s
        .agent
        .execute_pinned(&id, "delete_file", &json!({"path": "/x"}), &ctx)
        .await
        .unwrap();
    assert_eq!(out["status"], "not_run");
    assert_eq!(s.files.runs.lock().unwrap().len(), 1);
    let denials = s
        .store
        .entries(None)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == iris_core::wire::AuditKind::Denial)
        .count();
    assert_eq!(denials, 6);
}
