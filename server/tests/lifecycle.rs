//! Issue 3 rules of an approval's life after it is written, against the real SQLite store, with
//! time from a [`ManualClock`] the tests move (no sleeps) and every notice captured by a
//! recording notifier:
//!
//! - expiry: answerable until `created + TTL`, lapsed at that instant; the sweep marks it
//!   `expired`, emits `approval.lapsed`, audits the lapse and resumes the run with "the approval
//!   lapsed; nothing was changed"; nothing executes; a late answer is `Expired` (HTTP 410).
//! - evaluator halts: an `evaluator` row with no items, the step's result already in the
//!   transcript; approve continues without re-executing; reject or lapse (evaluator TTL) stays
//!   stopped without asking the model.
//! - failed resumes: recorded on the row, not retried by the sweep, retried on request without
//!   executing the pinned call again; an `unknown` ledger entry is never run again.
//! - strict restore: a corrupt checkpoint, a tool no manifest declares any more, and an effect
//!   no longer approved per call never execute; the execution is marked `failed` with the
//!   reason and the owner is told.
//! - staleness: with the real email plugin on a real Maildir, a message moved away between halt
//!   and approve is skipped ("stale: nothing done") while the others are trashed.

mod support;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Duration, TimeZone, Utc};
use iris_core::agent::{Agent, RetryError, LAPSED, NOT_RUN_PAUSED, STALE, UNKNOWN_OUTCOME};
use iris_core::approval::Ttl;
use iris_core::evaluator::{PostStepEvaluator, RuleEvaluator};
use iris_core::kernel::{Actor, Governance, RespondError};
use iris_core::manifest::{Manifest, ToolSpec};
use iris_core::model::{Message, Model, ModelError, ModelTurn, ToolCall};
use iris_core::plugin::{CallContext, Description, ItemOutcome, Plugin, ToolError, ToolOutput};
use iris_core::ports::{
    AuditLog, Clock, ConversationStore, Ledger, ManualClock, Notifier, QueueStore, Scope,
};
use iris_core::wire::{
    Approval, ApprovalKind, ApprovalStatus, AuditKind, Decision, Effect, Event, Execution,
    RunStatus,
};
use iris_store::Store;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// Doubles: a counting plugin, a model that can go down, a recording notifier.
// ---------------------------------------------------------------------------------------------

const MANIFEST: &str = r#"
plugin: files
tools:
  - name: list_files
    effect: read
  - name: delete_file
    effect: destructive
    undo: restore_file
    undo_window_days: 7
    parameters:
      type: object
      properties: {path: {type: string}}
      required: [path]
      additionalProperties: false
  - name: restore_file
    effect: write
    confirm: never
"#;

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

/// Records every execution; `restore_file` reports 3 files restored.
struct Files {
    manifest: Manifest,
    runs: Mutex<Vec<(String, Value)>>,
}

impl Files {
    fn new(manifest: &str) -> Arc<Files> {
        Arc::new(Files {
            manifest: Manifest::from_yaml(manifest).unwrap(),
            runs: Mutex::new(vec![]),
        })
    }

    fn runs(&self) -> Vec<(String, Value)> {
        self.runs.lock().unwrap().clone()
    }

    fn count(&self, tool: &str) -> usize {
        self.runs().iter().filter(|(t, _)| t == tool).count()
    }
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
        _tool: &str,
        args: &Value,
        _: &CallContext,
    ) -> Result<Description, ToolError> {
        let path = args["path"].as_str().unwrap_or_default().to_string();
        Ok(Description {
            title: format!("Delete {path}"),
            action: format!("Delete {path}"),
            lines: vec![path.clone()],
            items: vec![path],
            ..Default::default()
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
        Ok(match tool {
            "restore_file" => ToolOutput::plain(json!({"restored": 3})),
            "delete_file" => ToolOutput {
                result: json!({"done": tool, "path": args["path"]}),
                items: vec![ItemOutcome {
                    item: args["path"].as_str().unwrap_or_default().into(),
                    outcome: json!({"status": "deleted"}),
                }],
            },
            _ => ToolOutput::plain(json!({"done": tool})),
        })
    }
}

/// Stateless per transcript: after the owner's message "delete PATH" it calls `delete_file`,
/// after "restore all" it calls `restore_file` then `list_files` in one step; after anything
/// else it answers "finished". While `down`, every call fails as an unreachable server would.
#[derive(Default)]
struct Turns {
    down: AtomicBool,
    seen: Mutex<Vec<Vec<Message>>>,
    steps: AtomicUsize,
}

impl Turns {
    fn calls(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    fn last_input(&self) -> Vec<Message> {
        self.seen
            .lock()
            .unwrap()
            .last()
            .cloned()
            .unwrap_or_default()
    }

    fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }
}

#[async_trait]
impl Model for Turns {
    async fn complete(
        &self,
        messages: &[Message],
        _: &[ToolSpec],
    ) -> Result<ModelTurn, ModelError> {
        self.seen.lock().unwrap().push(messages.to_vec());
        if self.down.load(Ordering::SeqCst) {
            return Err(ModelError::Transport("connection refused".into()));
        }
        let n = self.steps.fetch_add(1, Ordering::SeqCst);
        let call = |i: usize, name: &str, arguments: Value| ToolCall {
            id: format!("c{n}_{i}"),
            name: name.into(),
            arguments,
        };
        let tool_calls = match messages.last() {
            Some(Message::User { content }) => match content.strip_prefix("delete ") {
                Some(path) => vec![call(0, "delete_file", json!({"path": path}))],
                None if content == "restore all" => vec![
                    call(0, "restore_file", json!({})),
                    call(1, "list_files", json!({})),
                ],
                None => vec![],
            },
            _ => vec![],
        };
        Ok(if tool_calls.is_empty() {
            ModelTurn {
                content: Some("finished".into()),
                tool_calls,
            }
        } else {
            ModelTurn {
                content: None,
                tool_calls,
            }
        })
    }
}

/// Captures every notice the channel router would fan out.
#[derive(Default)]
struct Recorder(Mutex<Vec<Event>>);

impl Notifier for Recorder {
    fn notify(&self, event: Event) {
        self.0.lock().unwrap().push(event);
    }
}

impl Recorder {
    fn named(&self, name: &str, approval_id: &str) -> Vec<Event> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.name() == name)
            .filter(|e| match e {
                Event::ApprovalRequested(a)
                | Event::ApprovalResponded(a)
                | Event::ApprovalLapsed(a) => a.id == approval_id,
                Event::RunMessage(m) => m.approval_id.as_deref() == Some(approval_id),
            })
            .cloned()
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Set-up.
// ---------------------------------------------------------------------------------------------

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, 10, 0, 0)
        .single()
        .unwrap()
}

struct World {
    store: Store,
    _database: Option<iris_store::testing::DropDatabase>,
    clock: Arc<ManualClock>,
    events: Arc<Recorder>,
    model: Arc<Turns>,
}

impl World {
    async fn new() -> World {
        let (store, database) = support::kernel_store().await;
        World {
            store,
            _database: database,
            clock: Arc::new(ManualClock::new(t0())),
            events: Arc::new(Recorder::default()),
            model: Arc::new(Turns::default()),
        }
    }

    fn governance(&self) -> Governance {
        let s = Arc::new(self.store.clone());
        Governance {
            queue: s.clone(),
            ledger: s.clone(),
            audit: s.clone(),
            checkpoints: Some(s),
            notifier: self.events.clone(),
            clock: self.clock.clone(),
            ttl: Ttl::default(),
            enabled: true,
        }
    }

    /// An agent over this world's store, clock, notifier and model, with `plugin`.
    fn agent(&self, plugin: Arc<dyn Plugin>, evaluators: Vec<Arc<dyn PostStepEvaluator>>) -> Agent {
        Agent::new(
            self.model.clone(),
            vec![plugin],
            Arc::new(self.store.clone()),
            Some(self.governance()),
            vec![],
        )
        .unwrap()
        .with_evaluators(evaluators)
    }

    async fn row(&self, id: &str) -> Approval {
        self.store.get(id).await.unwrap().unwrap()
    }

    async fn audit(&self, id: &str) -> Vec<iris_core::wire::AuditEntry> {
        self.store.entries(Some(id)).await.unwrap()
    }
}

fn owner() -> Actor {
    Actor {
        name: "owner-phone".into(),
        scope: Scope::Control,
        surface: "web".into(),
    }
}

/// The tool result the model was sent for `call_id` in its last input.
fn result_sent(model: &Turns, call_id: &str) -> Vec<Value> {
    model
        .last_input()
        .into_iter()
        .filter_map(|m| match m {
            Message::Tool {
                tool_call_id,
                content,
            } if tool_call_id == call_id => Some(content),
            _ => None,
        })
        .collect()
}

/// The id of the call that paused on `approval_id` (the checkpoint's pending call).
async fn paused_call(w: &World, conversation: &str) -> String {
    let transcript = w.store.transcript(conversation).await.unwrap();
    transcript
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Assistant { tool_calls, .. } if !tool_calls.is_empty() => {
                Some(tool_calls[0].id.clone())
            }
            _ => None,
        })
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// 1. Expiry through an injected clock.
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_row_is_answerable_for_its_ttl_and_lapses_at_that_instant() {
    let w = World::new().await;
    let files = Files::new(MANIFEST);
    let agent = w.agent(files.clone(), vec![]);
    let g = w.governance();

    let a = agent.run_turn(None, "delete /a").await.unwrap();
    let b = agent.run_turn(None, "delete /b").await.unwrap();
    let (a_id, b_id) = (a.approval_id.unwrap(), b.approval_id.unwrap());
    let row_b = w.row(&b_id).await;
    assert_eq!(row_b.created_at, t0());
    assert_eq!(row_b.expires_at, t0() + Duration::seconds(3600));

    // t0 + 3599 s: nothing has lapsed, an answer is stored and executes.
    w.clock.advance(Duration::seconds(3599));
    assert!(g.expire_lapsed().await.unwrap().is_empty());
    g.respond_to_approval(&a_id, Decision::Approve, None, &owner())
        .await
        .unwrap();
    agent.resume(&a_id).await.unwrap().unwrap();
    assert_eq!(files.count("delete_file"), 1);

    // t0 + 3600 s: the sweep expires B, once.
    w.clock.advance(Duration::seconds(1));
    assert_eq!(g.expire_lapsed().await.unwrap(), vec![b_id.clone()]);
    assert!(g.expire_lapsed().await.unwrap().is_empty());
    let row_b = w.row(&b_id).await;
    assert_eq!(row_b.status, ApprovalStatus::Expired);
    assert_eq!(row_b.responded_at, Some(t0() + Duration::seconds(3600)));
    assert_eq!(row_b.responded_by.as_deref(), Some("iris"));
    let lapsed = w.events.named("approval.lapsed", &b_id);
    assert_eq!(lapsed.len(), 1, "one approval.lapsed for B");
    assert!(w.events.named("approval.lapsed", &a_id).is_empty());
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
    let resumed = agent.resume(&b_id).await.unwrap().unwrap();
    assert!(resumed.resumed);
    assert_eq!(resumed.status, RunStatus::Done);
    let sent = result_sent(&w.model, &call_b);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["message"], LAPSED);
    assert_eq!(sent[0]["status"], "expired");
    assert_eq!(files.count("delete_file"), 1, "a lapsed call ran");
    assert_eq!(w.row(&b_id).await.execution, Execution::None);
    assert_eq!(w.events.named("run.message", &b_id).len(), 1);

    // A late answer is refused as expired (HTTP 410), and changes nothing.
    match g
        .respond_to_approval(&b_id, Decision::Approve, None, &owner())
        .await
    {
        Err(RespondError::Expired(row)) => assert_eq!(row.status, ApprovalStatus::Expired),
        other => panic!("expected Expired, got {other:?}"),
    }
    assert_eq!(files.count("delete_file"), 1);
}

#[tokio::test]
async fn an_answer_at_the_expiry_instant_lapses_the_row_even_before_the_sweep() {
    let w = World::new().await;
    let files = Files::new(MANIFEST);
    let agent = w.agent(files.clone(), vec![]);
    let g = w.governance();
    let r = agent.run_turn(None, "delete /c").await.unwrap();
    let id = r.approval_id.unwrap();
    w.clock.advance(Duration::hours(1));
    assert!(matches!(
        g.respond_to_approval(&id, Decision::Approve, None, &owner())
            .await,
        Err(RespondError::Expired(_))
    ));
    assert_eq!(w.row(&id).await.status, ApprovalStatus::Expired);
    assert_eq!(w.events.named("approval.lapsed", &id).len(), 1);
    // The sweep finds nothing more to expire; the resume runs nothing.
    assert!(g.expire_lapsed().await.unwrap().is_empty());
    agent.resume(&id).await.unwrap().unwrap();
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

// ---------------------------------------------------------------------------------------------
// 2. Evaluator halts.
// ---------------------------------------------------------------------------------------------

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
    let agent = w.agent(files.clone(), bulk_restore_rule());
    let g = w.governance();

    let r = agent.run_turn(None, "restore all").await.unwrap();
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
    assert_eq!(w.events.named("approval.requested", &id).len(), 1);

    // The checkpointed transcript already holds the step's result.
    let transcript = w.store.transcript(&r.conversation_id).await.unwrap();
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
    assert!(g.expire_lapsed().await.unwrap().is_empty());
    g.respond_to_approval(&id, Decision::Approve, None, &owner())
        .await
        .unwrap();
    let resumed = agent.resume(&id).await.unwrap().unwrap();
    assert!(resumed.resumed);
    assert_eq!(resumed.status, RunStatus::Done);
    assert_eq!(resumed.reply, "finished");
    assert_eq!(files.count("restore_file"), 1, "the step ran again");
    assert_eq!(
        result_sent(&w.model, &first_call),
        vec![json!({"restored": 3})]
    );
    assert_eq!(w.row(&id).await.execution, Execution::None);
    assert!(agent.resume(&id).await.unwrap().is_none());
}

#[tokio::test]
async fn a_rejected_or_lapsed_evaluator_halt_stays_stopped() {
    let w = World::new().await;
    let files = Files::new(MANIFEST);
    let agent = w.agent(files.clone(), bulk_restore_rule());
    let g = w.governance();

    // Reject: the model is not asked again; the chat says the run stays stopped.
    let r = agent.run_turn(None, "restore all").await.unwrap();
    let id = r.approval_id.unwrap();
    g.respond_to_approval(&id, Decision::Reject, Some("too many".into()), &owner())
        .await
        .unwrap();
    let asked = w.model.calls();
    let stopped = agent.resume(&id).await.unwrap().unwrap();
    assert_eq!(w.model.calls(), asked, "the model was asked to continue");
    assert_eq!(stopped.status, RunStatus::Refused);
    assert!(stopped.reply.contains("stays stopped"), "{}", stopped.reply);
    assert!(stopped.reply.contains("too many"), "{}", stopped.reply);
    let lines = w.store.lines(&r.conversation_id).await.unwrap();
    assert!(lines.last().unwrap().text.contains("stays stopped"));
    assert_eq!(w.events.named("run.message", &id).len(), 1);
    assert_eq!(files.count("restore_file"), 1);
    assert_eq!(files.count("list_files"), 0);

    // Lapse after the evaluator TTL (10 minutes), not the destructive one.
    let r = agent.run_turn(None, "restore all").await.unwrap();
    let id = r.approval_id.unwrap();
    w.clock.advance(Duration::seconds(599));
    assert!(g.expire_lapsed().await.unwrap().is_empty());
    w.clock.advance(Duration::seconds(1));
    assert_eq!(g.expire_lapsed().await.unwrap(), vec![id.clone()]);
    assert_eq!(w.events.named("approval.lapsed", &id).len(), 1);
    let asked = w.model.calls();
    let stopped = agent.resume(&id).await.unwrap().unwrap();
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
    let agent = Agent::new(
        w.model.clone(),
        vec![files.clone()],
        Arc::new(w.store.clone()),
        None,
        vec![],
    )
    .unwrap()
    .with_evaluators(bulk_restore_rule());
    let r = agent.run_turn(None, "restore all").await.unwrap();
    assert_eq!(r.status, RunStatus::Refused);
    assert!(r.reply.contains("cannot pause"), "{}", r.reply);
    assert!(r.approval_id.is_none());
    assert_eq!(
        files.count("list_files"),
        0,
        "the run went on after the halt"
    );
    assert!(w.store.list(None).await.unwrap().is_empty());
}

// ---------------------------------------------------------------------------------------------
// 3. Failed resumes: recorded, retried on request, never re-executed.
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_failed_resume_is_recorded_and_a_retry_reuses_the_ledger_result() {
    let w = World::new().await;
    let files = Files::new(MANIFEST);
    let agent = w.agent(files.clone(), vec![]);
    let g = w.governance();
    let r = agent.run_turn(None, "delete /x").await.unwrap();
    let id = r.approval_id.unwrap();
    let call = paused_call(&w, &r.conversation_id).await;

    // Nothing to retry while pending, or for an unknown id.
    assert!(matches!(
        agent.retry_resume(&id).await,
        Err(RetryError::NotDecided(_))
    ));
    assert!(matches!(
        agent.retry_resume("nope").await,
        Err(RetryError::NotFound(_))
    ));

    // Approved; the model is down when the run resumes, after the pinned call executed.
    g.respond_to_approval(&id, Decision::Approve, None, &owner())
        .await
        .unwrap();
    w.model.set_down(true);
    let failed = agent.resume(&id).await.unwrap().unwrap();
    assert_eq!(failed.status, RunStatus::Failed);
    assert_eq!(files.count("delete_file"), 1);
    let row = w.row(&id).await;
    assert_eq!(row.execution, Execution::Executed);
    let error = row.resume_error.clone().expect("resume_error recorded");
    assert!(error.contains("connection refused"), "{error}");
    assert!(
        w.events
            .named("approval.responded", &id)
            .iter()
            .any(|e| matches!(e, Event::ApprovalResponded(a) if a.resume_error.is_some())),
        "the card was not told about the failed resume"
    );
    // The sweep does not retry it by itself; a second resume is a no-op.
    assert!(w.store.unresumed().await.unwrap().is_empty());
    assert!(agent.resume(&id).await.unwrap().is_none());

    // A retry while the model is still down fails again, recorded again, nothing re-executed.
    let again = agent.retry_resume(&id).await.unwrap();
    assert_eq!(again.status, RunStatus::Failed);
    assert!(w.row(&id).await.resume_error.is_some());
    assert_eq!(files.count("delete_file"), 1);

    // The model is back: the retry completes from the ledger's recorded result.
    w.model.set_down(false);
    let done = agent.retry_resume(&id).await.unwrap();
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
        agent.retry_resume(&id).await,
        Err(RetryError::NotFailed(_))
    ));
}

#[tokio::test]
async fn concurrent_retries_have_one_winner() {
    let w = World::new().await;
    let files = Files::new(MANIFEST);
    let agent = Arc::new(w.agent(files.clone(), vec![]));
    let g = w.governance();
    let r = agent.run_turn(None, "delete /x").await.unwrap();
    let id = r.approval_id.unwrap();
    g.respond_to_approval(&id, Decision::Approve, None, &owner())
        .await
        .unwrap();
    w.model.set_down(true);
    agent.resume(&id).await.unwrap().unwrap();
    w.model.set_down(false);
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (agent, id) = (agent.clone(), id.clone());
        tasks.push(tokio::spawn(async move { agent.retry_resume(&id).await }));
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
    let agent = w.agent(files.clone(), vec![]);
    let g = w.governance();
    let r = agent.run_turn(None, "delete /x").await.unwrap();
    let id = r.approval_id.unwrap();
    let call = paused_call(&w, &r.conversation_id).await;
    g.respond_to_approval(&id, Decision::Approve, None, &owner())
        .await
        .unwrap();
    // A crash after the claim (ledger `executing`) and before the outcome; at start-up the
    // entry becomes `unknown`.
    let row = w.row(&id).await;
    let claim = w
        .store
        .claim(
            &id,
            &row.tool,
            &iris_core::canonical::canonical_json(&row.args),
            w.clock.now(),
        )
        .await
        .unwrap();
    assert_eq!(claim, iris_core::ports::ClaimOutcome::Claimed);
    assert_eq!(w.store.mark_unknown().await.unwrap(), vec![id.clone()]);

    // The first resume fails at the model; the retry then completes. Neither runs the call.
    w.model.set_down(true);
    agent.resume(&id).await.unwrap().unwrap();
    w.model.set_down(false);
    let done = agent.retry_resume(&id).await.unwrap();
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
    assert!(!w.events.named("run.message", &id).is_empty());
}

// ---------------------------------------------------------------------------------------------
// 5. Strict restore.
// ---------------------------------------------------------------------------------------------

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
            .iter()
            .any(|e| matches!(e, Event::ApprovalResponded(a) if a.execution == Execution::Failed)),
        "no approval.responded with execution failed"
    );
    assert!(!w.events.named("run.message", id).is_empty());
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
    let agent = w.agent(files.clone(), vec![]);
    let r = agent.run_turn(None, "delete /x").await.unwrap();
    let id = r.approval_id.unwrap();
    w.governance()
        .respond_to_approval(&id, Decision::Approve, None, &owner())
        .await
        .unwrap();
    // Plant a corrupt body (the database itself refuses changing a checkpoint, so the
    // trigger goes first: this is what a damaged file or a bad restore would leave).
    // Planting needs engine-specific SQL; the SQLite run of this suite covers the rule.
    let Some(sqlite) = w.store.as_sqlite() else {
        eprintln!("skipped on PostgreSQL: the corrupt row is planted with SQLite SQL");
        return;
    };
    let pool = sqlite.pool();
    sqlx::query("DROP TRIGGER checkpoints_immutable")
        .execute(pool)
        .await
        .unwrap();
    sqlx::query("UPDATE checkpoints SET body = '{\"messages\": [' WHERE approval_id = $1")
        .bind(&id)
        .execute(pool)
        .await
        .unwrap();

    let told = agent.resume(&id).await.unwrap().unwrap();
    assert_eq!(told.status, RunStatus::Failed);
    assert!(told.reply.contains("corrupt"), "{}", told.reply);
    assert!(files.runs().is_empty(), "a corrupt checkpoint executed");
    assert_refused_and_told(&w, &id, &r.conversation_id, "corrupt").await;
    assert!(w.row(&id).await.resume_error.unwrap().contains("corrupt"));
    // Never later either: the claim is consumed.
    assert!(agent.retry_resume(&id).await.is_ok());
    assert!(
        agent
            .execute_pinned(
                &id,
                "delete_file",
                &json!({"path": "/x"}),
                &CallContext::default()
            )
            .await
            .unwrap()["status"]
            == "not_run"
    );
    assert!(files.runs().is_empty());
}

#[tokio::test]
async fn a_tool_no_manifest_declares_any_more_is_never_executed() {
    let w = World::new().await;
    let before = Files::new(MANIFEST);
    let r = w
        .agent(before.clone(), vec![])
        .run_turn(None, "delete /x")
        .await
        .unwrap();
    let id = r.approval_id.unwrap();
    w.governance()
        .respond_to_approval(&id, Decision::Approve, None, &owner())
        .await
        .unwrap();
    // The server restarts with the plugin updated: delete_file is gone.
    let after = Files::new(MANIFEST_WITHOUT_DELETE);
    let agent = w.agent(after.clone(), vec![]);
    let resumed = agent.resume(&id).await.unwrap().unwrap();
    assert_eq!(resumed.status, RunStatus::Done);
    assert!(before.runs().is_empty() && after.runs().is_empty());
    assert_refused_and_told(&w, &id, &r.conversation_id, "not declared").await;
}

#[tokio::test]
async fn an_effect_no_longer_approved_per_call_is_never_executed() {
    let w = World::new().await;
    let before = Files::new(MANIFEST);
    let r = w
        .agent(before.clone(), vec![])
        .run_turn(None, "delete /x")
        .await
        .unwrap();
    let id = r.approval_id.unwrap();
    w.governance()
        .respond_to_approval(&id, Decision::Approve, None, &owner())
        .await
        .unwrap();
    let after = Files::new(MANIFEST_DELETE_IS_A_WRITE);
    let agent = w.agent(after.clone(), vec![]);
    agent.resume(&id).await.unwrap().unwrap();
    assert!(before.runs().is_empty() && after.runs().is_empty());
    assert_refused_and_told(&w, &id, &r.conversation_id, "no longer approved per call").await;
}

// ---------------------------------------------------------------------------------------------
// 4. Staleness with the real email plugin.
// ---------------------------------------------------------------------------------------------

fn put_message(maildir: &Path, rel: &str, subject: &str, message_id: &str) {
    let path = maildir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text = format!(
        "From: Shop <deals@shop.example>\r\nTo: owner@example.org\r\nSubject: {subject}\r\n\
         Date: Fri, 27 Nov 2026 08:00:00 +0000\r\nMessage-ID: <{message_id}>\r\n\r\nBuy now.\r\n"
    );
    std::fs::write(path, text).unwrap();
}

fn make_folder(dir: &Path) {
    for sub in ["cur", "new", "tmp"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn a_message_moved_away_after_the_card_was_written_is_stale_and_not_trashed() {
    let tmp = tempfile::tempdir().unwrap();
    let maildir = tmp.path().join("Maildir");
    make_folder(&maildir);
    make_folder(&maildir.join(".Archive"));
    std::fs::write(maildir.join(".Archive/maildirfolder"), b"").unwrap();
    for n in 1..=3 {
        put_message(
            &maildir,
            &format!("cur/170000000{n}.M{n}P1.host:2,S"),
            &format!("Promo {n}"),
            &format!("p{n}@shop.example"),
        );
    }
    let store = iris_store::Store::connect("sqlite::memory:").await.unwrap();
    let email = Arc::new(
        iris_email::EmailPlugin::new(
            vec![iris_email::AccountConfig {
                name: "maildir".into(),
                address: "owner@example.org".into(),
                kind: iris_email::AccountKind::Maildir {
                    path: maildir.clone(),
                },
            }],
            &store,
        )
        .unwrap(),
    );
    email.sync().await.unwrap();
    let script = r#"
rules:
  - when: "(?i)trash"
    steps:
      - call: search_inbox
        args: {query: promo}
      - call: trash_email
        args: {ids: "$ids"}
      - reply: "Done: moved {trashed} emails to Trash."
"#;
    let clock = Arc::new(ManualClock::new(t0()));
    let events = Arc::new(Recorder::default());
    let s = Arc::new(store.clone());
    let governance = Governance {
        queue: s.clone(),
        ledger: s.clone(),
        audit: s.clone(),
        checkpoints: Some(s.clone()),
        notifier: events.clone(),
        clock: clock.clone(),
        ttl: Ttl::default(),
        enabled: true,
    };
    let agent = Agent::new(
        Arc::new(iris_core::scripted::ScriptedModel::from_yaml(script).unwrap()),
        vec![email.clone()],
        s.clone(),
        Some(governance.clone()),
        vec![],
    )
    .unwrap();

    let r = agent.run_turn(None, "trash the promos").await.unwrap();
    assert_eq!(r.status, RunStatus::AwaitingApproval, "{}", r.reply);
    let id = r.approval_id.unwrap();
    let row = store.get(&id).await.unwrap().unwrap();
    assert_eq!(row.items.len(), 3);
    // One precondition per item: the folder and Message-ID the card saw.
    let pinned = store.preconditions(&id).await.unwrap();
    assert_eq!(pinned.len(), 3);
    assert!(pinned.iter().all(|p| p["folder"] == "INBOX"), "{pinned:?}");
    let moved_at = row
        .card
        .lines
        .iter()
        .position(|l| l.starts_with("Promo 2"))
        .unwrap();
    let moved_id = row.items[moved_at].clone();

    // Between halt and approve, another client files Promo 2 in Archive, and a sync sees it.
    // (Without the precondition, trash_email would now trash it from Archive.)
    std::fs::rename(
        maildir.join("cur/1700000002.M2P1.host:2,S"),
        maildir.join(".Archive/cur/1700000002.M2P1.host:2,S"),
    )
    .unwrap();
    email.sync().await.unwrap();

    governance
        .respond_to_approval(&id, Decision::Approve, None, &owner())
        .await
        .unwrap();
    let done = agent.resume(&id).await.unwrap().unwrap();
    assert_eq!(done.reply, "Done: moved 2 emails to Trash.");

    let row = store.get(&id).await.unwrap().unwrap();
    assert_eq!(row.execution, Execution::Executed);
    let result = row.result.unwrap();
    assert_eq!(result["trashed"], 2);
    assert_eq!(
        result["stale"],
        json!([{"id": moved_id, "status": "stale", "message": STALE}])
    );
    // On disk: two in Trash, Promo 2 untouched in Archive.
    assert_eq!(files_in(&maildir.join(".Trash/cur")).len(), 2);
    assert_eq!(
        files_in(&maildir.join(".Archive/cur")),
        vec!["1700000002.M2P1.host:2,S".to_string()]
    );
    assert!(files_in(&maildir.join("cur")).is_empty());
    // The audit says so, one entry per item.
    let executions: Vec<_> = store
        .entries(Some(&id))
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == AuditKind::Execution)
        .collect();
    assert_eq!(executions.len(), 3);
    let stale: Vec<_> = executions
        .iter()
        .filter(|e| e.result["message"] == STALE)
        .collect();
    assert_eq!(stale.len(), 1);
    assert_eq!(stale[0].item.as_deref(), Some(moved_id.as_str()));
    assert!(!stale[0].undo_available);
    assert_eq!(
        executions
            .iter()
            .filter(|e| e.result["status"] == "trashed")
            .count(),
        2
    );
}
