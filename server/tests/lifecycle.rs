//! Rules of an approval's life after it is written, through the approvals service against the
//! real store, with time from a [`ManualClock`] the tests move (no sleeps; the store compares
//! against the same clock) and every event the commits publish captured:
//!
//! - expiry: answerable until `created + TTL`, lapsed at that instant; the sweep marks it
//!   `expired`, emits `approval.lapsed`, audits the lapse and resumes the run with "the approval
//!   lapsed; nothing was changed"; nothing executes; a late answer is `Expired` (HTTP 410).
//! - evaluator halts: an `evaluator` row with no items, the step's result already in the
//!   transcript; approve continues without re-executing; reject or lapse (evaluator TTL) stays
//!   stopped without asking the model.
//! - failed resumes: recorded on the row, not retried by the sweep, retried on request without
//!   executing the pinned call again; a server that stalls mid-call loses its lease and the
//!   taker marks the call `unknown`, which never runs again.
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
use iris_core::agent::{Agent, Pausing, NOT_RUN_PAUSED};
use iris_core::approval::Ttl;
use iris_core::approvals::{
    Actor, ApprovalService, RespondError, RetryError, LAPSED, STALE, UNKNOWN_OUTCOME,
};
use iris_core::evaluator::{PostStepEvaluator, RuleEvaluator};
use iris_core::manifest::{Manifest, ToolSpec};
use iris_core::model::{Message, Model, ModelError, ModelTurn, ToolCall};
use iris_core::plugin::{CallContext, Description, ItemOutcome, Plugin, ToolError, ToolOutput};
use iris_core::ports::{
    ApprovalFilter, ApprovalStore, ClaimPlan, Clock, JobPick, LedgerStep, ManualClock, Scope,
};
use iris_core::toolbox::Toolbox;
use iris_core::wire::{
    Approval, ApprovalKind, ApprovalStatus, AuditKind, ChatResponse, Decision, Effect, Event,
    Execution, RunStatus,
};
use iris_store::{Engine, Store, TimeSource};
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

/// Every event the store's commits published, in commit order: on SQLite read from the store's
/// in-process feed (sent right after each commit), on PostgreSQL from its event log (what every
/// server's listener reads).
struct Recorder {
    store: Store,
    feed: Mutex<tokio::sync::broadcast::Receiver<Event>>,
    seen: Mutex<Vec<Event>>,
}

impl Recorder {
    fn new(store: &Store) -> Recorder {
        Recorder {
            store: store.clone(),
            feed: Mutex::new(store.subscribe()),
            seen: Mutex::new(Vec::new()),
        }
    }

    async fn all(&self) -> Vec<Event> {
        if self.store.engine() == Engine::Postgres {
            let payloads: Vec<String> =
                sqlx::query_scalar("SELECT payload FROM events ORDER BY seq")
                    .fetch_all(self.store.pool())
                    .await
                    .unwrap();
            return payloads
                .iter()
                .map(|p| serde_json::from_str(p).unwrap())
                .collect();
        }
        let mut seen = self.seen.lock().unwrap();
        let mut feed = self.feed.lock().unwrap();
        while let Ok(event) = feed.try_recv() {
            seen.push(event);
        }
        seen.clone()
    }

    async fn named(&self, name: &str, approval_id: &str) -> Vec<Event> {
        self.all()
            .await
            .into_iter()
            .filter(|e| e.name() == name)
            .filter(|e| match e {
                Event::ApprovalRequested(a)
                | Event::ApprovalResponded(a)
                | Event::ApprovalLapsed(a) => a.id == approval_id,
                Event::RunMessage(m) => m.approval_id.as_deref() == Some(approval_id),
            })
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
    events: Recorder,
    model: Arc<Turns>,
}

impl World {
    async fn new() -> World {
        let clock = Arc::new(ManualClock::new(t0()));
        let (store, database) = support::kernel_store_on(TimeSource::Clock(clock.clone())).await;
        World {
            events: Recorder::new(&store),
            store,
            _database: database,
            clock,
            model: Arc::new(Turns::default()),
        }
    }

    /// The service over this world's store, clock and model, with `plugin` and `evaluators`.
    fn service(
        &self,
        plugin: Arc<dyn Plugin>,
        evaluators: Vec<Arc<dyn PostStepEvaluator>>,
    ) -> ApprovalService {
        self.service_with(plugin, evaluators, self.governed())
    }

    fn governed(&self) -> Pausing {
        Pausing::Governed {
            ttl: Ttl::default(),
            clock: self.clock.clone(),
            passkeys: Default::default(),
        }
    }

    fn service_with(
        &self,
        plugin: Arc<dyn Plugin>,
        evaluators: Vec<Arc<dyn PostStepEvaluator>>,
        pausing: Pausing,
    ) -> ApprovalService {
        let toolbox = Arc::new(Toolbox::new(vec![plugin]).unwrap());
        let agent =
            Agent::new(self.model.clone(), toolbox, pausing, vec![]).with_evaluators(evaluators);
        support::service(&self.store, agent, self.clock.clone())
    }

    async fn row(&self, id: &str) -> Approval {
        self.store.approval(id).await.unwrap().unwrap()
    }

    async fn audit(&self, id: &str) -> Vec<iris_core::wire::AuditEntry> {
        self.store.audit(Some(id)).await.unwrap()
    }
}

fn owner() -> Actor {
    Actor {
        name: "owner-phone".into(),
        scope: Scope::Control,
        surface: "web".into(),
    }
}

/// A chat turn of the owner.
async fn turn(service: &ApprovalService, message: &str) -> ChatResponse {
    service.chat(&owner(), None, message).await.unwrap()
}

/// Runs `id`'s job now; the resumed run's response.
async fn resume(service: &ApprovalService, id: &str) -> Option<ChatResponse> {
    service.run_job(id).await.unwrap().and_then(|r| r.run)
}

/// The ids the expiry sweep expired.
async fn sweep(service: &ApprovalService) -> Vec<String> {
    service
        .expire_lapsed()
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.id)
        .collect()
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
    let transcript = w.store.transcript(conversation).await.unwrap().messages;
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

// ---------------------------------------------------------------------------------------------
// 3. Failed resumes: recorded, retried on request, never re-executed.
// ---------------------------------------------------------------------------------------------

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
                    events: vec![],
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
    let clock = Arc::new(ManualClock::new(t0()));
    let store = iris_store::Store::connect_with(
        "sqlite::memory:",
        iris_store::StoreOptions {
            time: TimeSource::Clock(clock.clone()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
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
    let toolbox = Arc::new(Toolbox::new(vec![email.clone()]).unwrap());
    let agent = Agent::new(
        Arc::new(iris_core::scripted::ScriptedModel::from_yaml(script).unwrap()),
        toolbox,
        Pausing::Governed {
            ttl: Ttl::default(),
            clock: clock.clone(),
            passkeys: Default::default(),
        },
        vec![],
    );
    let g = support::service(&store, agent, clock.clone());

    let r = turn(&g, "trash the promos").await;
    assert_eq!(r.status, RunStatus::AwaitingApproval, "{}", r.reply);
    let id = r.approval_id.unwrap();
    let row = store.approval(&id).await.unwrap().unwrap();
    assert_eq!(row.items.len(), 3);
    // One precondition per item: the folder and Message-ID the card saw.
    let pinned: Vec<Value> = serde_json::from_str(
        &sqlx::query_scalar::<_, String>("SELECT preconditions FROM approvals WHERE id = $1")
            .bind(&id)
            .fetch_one(store.pool())
            .await
            .unwrap(),
    )
    .unwrap();
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

    g.respond(&id, Decision::Approve, None, &owner())
        .await
        .unwrap();
    let done = resume(&g, &id).await.unwrap();
    assert_eq!(done.reply, "Done: moved 2 emails to Trash.");

    let row = store.approval(&id).await.unwrap().unwrap();
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
        .audit(Some(&id))
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
