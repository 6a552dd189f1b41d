//! Rules of an approval's life after it is written, through the approvals service against the
//! real store, with time from a [`ManualClock`] the tests move (no sleeps; the store compares
//! against the same clock) and every event the commits publish captured. One module per rule:
//!
//! - [`expiry`]: answerable until `created + TTL`, lapsed at that instant; the sweep marks it
//!   `expired`, emits `approval.lapsed`, audits the lapse and resumes the run with "the approval
//!   lapsed; nothing was changed"; nothing executes; a late answer is `Expired` (HTTP 410).
//! - [`evaluator_halts`]: an `evaluator` row with no items, the step's result already in the
//!   transcript; approve continues without re-executing; reject or lapse (evaluator TTL) stays
//!   stopped without asking the model.
//! - [`failed_resumes`]: recorded on the row, not retried by the sweep, retried on request
//!   without executing the pinned call again; a server that stalls mid-call loses its lease and
//!   the taker marks the call `unknown`, which never runs again.
//! - [`strict_restore`]: a corrupt checkpoint, a tool no manifest declares any more, and an
//!   effect no longer approved per call never execute; the execution is marked `failed` with the
//!   reason and the owner is told.
//! - [`staleness`]: with the real email plugin on a real Maildir, a message moved away between
//!   halt and approve is skipped ("stale: nothing done") while the others are trashed.
//!
//! This module holds what they share: the counting plugin's manifest, a model that can go down,
//! an event recorder, and the world (store, clock, model) a test runs in.

mod evaluator_halts;
mod expiry;
mod failed_resumes;
mod staleness;
mod strict_restore;

use crate::support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, TimeZone, Utc};
use iris_core::agent::{Agent, Pausing};
use iris_core::approval::Ttl;
use iris_core::approvals::{Actor, ApprovalService};
use iris_core::evaluator::PostStepEvaluator;
use iris_core::manifest::ToolSpec;
use iris_core::model::{Message, Model, ModelError, ModelTurn, ToolCall};
use iris_core::plugin::Plugin;
use iris_core::ports::{ApprovalStore, ManualClock, Scope};
use iris_core::toolbox::Toolbox;
use iris_core::wire::{Approval, ChatResponse, Event};
use iris_store::{Engine, Store, TimeSource};
use serde_json::{json, Value};

use support::files_plugin::Files;

// ---------------------------------------------------------------------------------------------
// Doubles: the counting plugin's manifest, a model that can go down, a recording notifier.
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
        surface: iris_core::wire::Surface::Web,
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
