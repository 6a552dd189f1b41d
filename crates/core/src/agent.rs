//! The agent loop (DESIGN §3): a ReAct loop over the [`Model`] trait that resolves every tool
//! name before any check, refuses gated calls it cannot govern, runs PreToolUse hooks, halts on
//! an approval row with a checkpoint, and on resume executes the pinned call *from the row*
//! (claim → ledger `executing` → run → ledger `executed` → audit) before the model says anything.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::canonical::{call_hash, canonical_json};
use crate::hooks::{
    ConfirmOnceHook, DestructiveApprovalHook, HookDecision, PendingCall, PreToolUseHook,
};
use crate::kernel::Governance;
use crate::manifest::{Registry, ToolSpec};
use crate::model::{Message, Model, ToolCall};
use crate::plugin::{CallContext, Plugin};
use crate::ports::{Checkpoint, ClaimOutcome, ConversationStore, NewAuditEntry, StoreError};
use crate::wire::{
    Approval, ApprovalStatus, AuditKind, ChatLine, ChatResponse, Effect, Event, RunMessage,
    RunStatus,
};

/// The observation every later call id of a halted step gets (DESIGN §3 step 4).
pub const NOT_RUN_WAITING: &str = "not run: waiting for approval of an earlier call";

/// Why the loop could not run at all (not: why a call was refused; that is an observation).
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Storage failed before anything ran.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What the loop does with one call.
enum Dispatch {
    /// The call ran (or was refused by a rule); this is its observation.
    Observation(Value),
    /// A gated call was refused because it cannot be governed; nothing ran.
    Refused(Value),
    /// The call waits on this approval row.
    Halt(String),
}

/// The agent: model, tools, conversations and (optionally) governance.
pub struct Agent {
    model: Arc<dyn Model>,
    registry: Registry,
    plugins: BTreeMap<String, Arc<dyn Plugin>>,
    conversations: Arc<dyn ConversationStore>,
    governance: Option<Governance>,
    hooks: Vec<Arc<dyn PreToolUseHook>>,
    system_prompt: String,
    max_steps: usize,
}

/// The default instructions for the model.
pub const SYSTEM_PROMPT: &str = "You are IRIS, the owner's mail assistant. Use the tools to find \
emails by id before acting on them. Destructive actions wait for the owner's approval; never \
claim something was changed unless a tool result says so.";

impl Agent {
    /// Builds an agent. With `governance`, a [`DestructiveApprovalHook`] (priority 50) and the
    /// confirm-once advice hook are installed; `extra_hooks` join them in priority order.
    ///
    /// # Errors
    /// [`crate::manifest::ManifestError`] when two plugins declare the same tool name.
    pub fn new(
        model: Arc<dyn Model>,
        plugins: Vec<Arc<dyn Plugin>>,
        conversations: Arc<dyn ConversationStore>,
        governance: Option<Governance>,
        extra_hooks: Vec<Arc<dyn PreToolUseHook>>,
    ) -> Result<Agent, crate::manifest::ManifestError> {
        let registry = Registry::new(plugins.iter().map(|p| p.manifest().clone()))?;
        let plugins = plugins
            .into_iter()
            .map(|p| (p.manifest().plugin.clone(), p))
            .collect();
        let mut hooks = extra_hooks;
        hooks.push(Arc::new(ConfirmOnceHook));
        if let Some(g) = &governance {
            hooks.push(Arc::new(DestructiveApprovalHook {
                queue: g.queue.clone(),
                notifier: g.notifier.clone(),
                clock: g.clock.clone(),
                ttl: g.ttl,
            }));
        }
        hooks.sort_by_key(|h| h.priority());
        Ok(Agent {
            model,
            registry,
            plugins,
            conversations,
            governance,
            hooks,
            system_prompt: SYSTEM_PROMPT.to_string(),
            max_steps: 8,
        })
    }

    /// The loaded tools.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The governance kernel, if any.
    pub fn governance(&self) -> Option<&Governance> {
        self.governance.as_ref()
    }

    /// Why an approved-per-call call cannot be governed now, or `None` when it can
    /// (DESIGN §3 step 2: no governance, approvals off, or no way to pause and resume).
    fn ungovernable(&self) -> Option<&'static str> {
        match &self.governance {
            None => Some("there is no governance kernel to ask the owner"),
            Some(g) if !g.enabled => {
                Some("approvals are switched off (IRIS_APPROVALS_ENABLED=false)")
            }
            Some(g) if g.checkpoints.is_none() => {
                Some("this run cannot pause and resume (no checkpoint store)")
            }
            Some(_) => None,
        }
    }

    /// One owner turn: runs the loop until the model answers, a call halts on an approval, or
    /// the step limit. `conversation_id` continues a conversation; `None` starts one.
    ///
    /// # Errors
    /// [`AgentError::Store`] when the conversation cannot be read or written.
    pub async fn run_turn(
        &self,
        conversation_id: Option<String>,
        message: &str,
    ) -> Result<ChatResponse, AgentError> {
        let conversation_id = conversation_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let run_id = uuid::Uuid::new_v4().to_string();
        let mut transcript = self.conversations.transcript(&conversation_id).await?;
        if transcript.is_empty() {
            transcript.push(Message::System {
                content: self.system_prompt.clone(),
            });
        }
        transcript.push(Message::User {
            content: message.to_string(),
        });
        self.conversations
            .append_line(
                &conversation_id,
                &ChatLine {
                    role: "owner".into(),
                    text: message.to_string(),
                    approval_id: None,
                },
            )
            .await?;
        let ctx = CallContext {
            run_id,
            conversation_id,
            request: message.to_string(),
        };
        self.drive(ctx, transcript, Vec::new(), false).await
    }

    /// The loop proper, from a transcript whose last message awaits the model.
    async fn drive(
        &self,
        ctx: CallContext,
        mut transcript: Vec<Message>,
        mut effects: Vec<Effect>,
        resumed: bool,
    ) -> Result<ChatResponse, AgentError> {
        let tools: Vec<ToolSpec> = self.registry.tools().to_vec();
        let mut refused = false;
        for _ in 0..self.max_steps {
            let turn = match self
                .model
                .complete(&with_all_results(&transcript), &tools)
                .await
            {
                Ok(t) => t,
                Err(e) => {
                    let reply =
                        format!("I could not reach the model ({e}). Nothing further was done.");
                    return self
                        .finish(
                            &ctx,
                            transcript,
                            RunStatus::Failed,
                            reply,
                            None,
                            effects,
                            resumed,
                        )
                        .await;
                }
            };
            transcript.push(Message::Assistant {
                content: turn.content.clone(),
                tool_calls: turn.tool_calls.clone(),
            });
            if turn.tool_calls.is_empty() {
                let status = if refused {
                    RunStatus::Refused
                } else {
                    RunStatus::Done
                };
                let reply = turn.content.unwrap_or_default();
                return self
                    .finish(&ctx, transcript, status, reply, None, effects, resumed)
                    .await;
            }
            for (index, call) in turn.tool_calls.iter().enumerate() {
                match self.dispatch(call, &ctx, &mut effects).await {
                    Dispatch::Observation(v) => transcript.push(tool_result(&call.id, v)),
                    Dispatch::Refused(v) => {
                        refused = true;
                        transcript.push(tool_result(&call.id, v));
                    }
                    Dispatch::Halt(approval_id) => {
                        return self
                            .halt(
                                ctx,
                                transcript,
                                &turn.tool_calls,
                                index,
                                approval_id,
                                effects,
                                resumed,
                            )
                            .await;
                    }
                }
            }
        }
        let reply = "I stopped after too many steps without an answer. Nothing further was done."
            .to_string();
        self.finish(
            &ctx,
            transcript,
            RunStatus::Failed,
            reply,
            None,
            effects,
            resumed,
        )
        .await
    }

    /// Resolves, checks and (for ungated tools) runs one call.
    async fn dispatch(
        &self,
        call: &ToolCall,
        ctx: &CallContext,
        effects: &mut Vec<Effect>,
    ) -> Dispatch {
        // DESIGN §3 step 2: resolve aliases and near misses before any check.
        let spec = match self.registry.resolve(&call.name) {
            Ok(s) => s,
            Err(e) => {
                return Dispatch::Observation(json!({"status": "error", "message": e.to_string()}))
            }
        };
        if spec.approved_per_call() {
            if let Some(why) = self.ungovernable() {
                return Dispatch::Refused(json!({
                    "status": "refused",
                    "message": format!("`{}` needs the owner's approval per call, but {why}. It was not run; nothing was changed.", spec.name),
                }));
            }
        }
        let Some(plugin) = self.plugins.get(&spec.plugin) else {
            return Dispatch::Observation(
                json!({"status": "error", "message": format!("no plugin provides `{}`; it was not run", spec.name)}),
            );
        };
        let args = match validate_args(spec, &call.arguments) {
            Ok(a) => a,
            Err(reason) => {
                return Dispatch::Observation(
                    json!({"status": "error", "message": format!("invalid arguments for `{}`: {reason}; it was not run", spec.name)}),
                )
            }
        };
        let args = match plugin.normalise(&spec.name, args, ctx).await {
            Ok(a) => a,
            Err(e) => {
                return Dispatch::Observation(
                    json!({"status": "error", "message": format!("{e}; it was not run")}),
                )
            }
        };
        let pending = PendingCall {
            spec,
            args: &args,
            plugin,
            ctx,
        };
        for hook in &self.hooks {
            match hook.pre_tool_use(&pending).await {
                HookDecision::Allow | HookDecision::RequireApproval(None) => {}
                HookDecision::Deny(reason) => {
                    return Dispatch::Observation(json!({"status": "denied", "message": reason}))
                }
                HookDecision::RequireApproval(Some(id)) => return Dispatch::Halt(id),
            }
        }
        if spec.approved_per_call() {
            // Fail closed: no hook pinned this call, so it must not run directly.
            return Dispatch::Refused(json!({
                "status": "refused",
                "message": format!("`{}` needs the owner's approval per call and no approval was recorded. It was not run; nothing was changed.", spec.name),
            }));
        }
        if spec.effect != Effect::Read {
            // Recorded before the call runs (DESIGN §2 "effects_executed").
            effects.push(spec.effect);
        }
        match plugin.execute(&spec.name, &args, ctx).await {
            Ok(out) => Dispatch::Observation(as_object(out.result)),
            Err(e) => Dispatch::Observation(json!({"status": "error", "message": e.to_string()})),
        }
    }

    /// Ends the turn on an approval (DESIGN §3 step 4).
    #[allow(clippy::too_many_arguments)]
    async fn halt(
        &self,
        ctx: CallContext,
        mut transcript: Vec<Message>,
        calls: &[ToolCall],
        index: usize,
        approval_id: String,
        effects: Vec<Effect>,
        resumed: bool,
    ) -> Result<ChatResponse, AgentError> {
        for later in &calls[index + 1..] {
            transcript.push(tool_result(
                &later.id,
                json!({"status": "not_run", "message": NOT_RUN_WAITING}),
            ));
        }
        let governance = self
            .governance
            .as_ref()
            .expect("a halt comes only from the approval hook, which exists only with governance");
        let checkpoints = governance
            .checkpoints
            .as_ref()
            .expect("ungovernable() refused calls when there is no checkpoint store");
        let checkpoint = Checkpoint {
            id: uuid::Uuid::new_v4().to_string(),
            run_id: ctx.run_id.clone(),
            conversation_id: ctx.conversation_id.clone(),
            request: ctx.request.clone(),
            messages: transcript.clone(),
            pending_call: calls[index].clone(),
            approval_id: approval_id.clone(),
            effects_executed: effects.clone(),
        };
        checkpoints.save(&checkpoint).await?;
        governance
            .queue
            .link_checkpoint(&approval_id, &checkpoint.id)
            .await?;
        let row = governance.queue.get(&approval_id).await?;
        let what = row
            .as_ref()
            .map(|r| r.card.action.clone())
            .unwrap_or_else(|| calls[index].name.clone());
        let reply = format!(
            "I need your approval to {}. Nothing has been changed yet. Review it on Activity: /activity/{approval_id}",
            lower_first(&what)
        );
        self.finish(
            &ctx,
            transcript,
            RunStatus::AwaitingApproval,
            reply,
            Some(approval_id),
            effects,
            resumed,
        )
        .await
    }

    #[allow(clippy::too_many_arguments)]
    async fn finish(
        &self,
        ctx: &CallContext,
        transcript: Vec<Message>,
        status: RunStatus,
        reply: String,
        approval_id: Option<String>,
        effects: Vec<Effect>,
        resumed: bool,
    ) -> Result<ChatResponse, AgentError> {
        self.conversations
            .save_transcript(&ctx.conversation_id, &transcript)
            .await?;
        self.conversations
            .append_line(
                &ctx.conversation_id,
                &ChatLine {
                    role: "assistant".into(),
                    text: reply.clone(),
                    approval_id: approval_id.clone(),
                },
            )
            .await?;
        Ok(ChatResponse {
            conversation_id: ctx.conversation_id.clone(),
            run_id: ctx.run_id.clone(),
            status,
            reply,
            approval_id,
            effects_executed: effects,
            resumed,
        })
    }

    /// Executes a pinned call: claim against the row (approved, this tool, byte-identical
    /// canonical arguments, not yet claimed), ledger `executing`, run, ledger `executed` or
    /// `failed` with the result, one audit entry per item (DESIGN §3 step 7). A denied claim is
    /// audited as a denial and nothing runs. Returns the observation for the paused call.
    ///
    /// # Errors
    /// [`StoreError`] when the ledger or audit cannot be written (fail closed: if the claim was
    /// not stored, nothing ran).
    pub async fn execute_pinned(
        &self,
        approval_id: &str,
        tool: &str,
        args: &Value,
        ctx: &CallContext,
    ) -> Result<Value, StoreError> {
        let Some(g) = &self.governance else {
            return Ok(
                json!({"status": "not_run", "message": "no governance kernel; nothing was changed"}),
            );
        };
        let now = g.clock.now();
        let deny = |reason: String| NewAuditEntry {
            approval_id: approval_id.to_string(),
            kind: AuditKind::Denial,
            item: None,
            result: json!({"denied": reason}),
            undo_available: false,
            actor: "iris".into(),
            surface: None,
            at: now,
        };
        // Strict restore: the tool must still be declared and still be approved per call.
        let spec = match self.registry.get(tool) {
            Some(s) if s.approved_per_call() => s,
            Some(_) => {
                let reason =
                    format!("tool `{tool}` is no longer approved per call; its effect changed");
                g.audit.append(&deny(reason.clone())).await?;
                return Ok(
                    json!({"status": "not_run", "message": format!("{reason}; nothing was changed")}),
                );
            }
            None => {
                let reason = format!("tool `{tool}` is not declared by any manifest any more");
                g.audit.append(&deny(reason.clone())).await?;
                return Ok(
                    json!({"status": "not_run", "message": format!("{reason}; nothing was changed")}),
                );
            }
        };
        let Some(plugin) = self.plugins.get(&spec.plugin) else {
            let reason = format!("no plugin provides `{tool}`");
            g.audit.append(&deny(reason.clone())).await?;
            return Ok(
                json!({"status": "not_run", "message": format!("{reason}; nothing was changed")}),
            );
        };
        match g
            .ledger
            .claim(approval_id, tool, &canonical_json(args), now)
            .await?
        {
            ClaimOutcome::Claimed => {}
            ClaimOutcome::Denied(reason) => {
                g.audit.append(&deny(reason.clone())).await?;
                return Ok(
                    json!({"status": "not_run", "message": format!("claim refused: {reason}; nothing was changed")}),
                );
            }
        }
        let undo_available = spec.undo.is_some();
        let outcome = plugin.execute(tool, args, ctx).await;
        let done = g.clock.now();
        let (executed, result, items) = match outcome {
            Ok(out) => (true, as_object(out.result), out.items),
            Err(e) => (
                false,
                json!({"status": "failed", "message": e.to_string()}),
                Vec::new(),
            ),
        };
        g.ledger
            .finish(approval_id, executed, &result, done)
            .await?;
        if items.is_empty() {
            g.audit
                .append(&NewAuditEntry {
                    approval_id: approval_id.to_string(),
                    kind: AuditKind::Execution,
                    item: None,
                    result: result.clone(),
                    undo_available: undo_available && executed,
                    actor: "iris".into(),
                    surface: None,
                    at: done,
                })
                .await?;
        }
        for item in items {
            g.audit
                .append(&NewAuditEntry {
                    approval_id: approval_id.to_string(),
                    kind: AuditKind::Execution,
                    item: Some(item.item),
                    result: item.outcome,
                    undo_available,
                    actor: "iris".into(),
                    surface: None,
                    at: done,
                })
                .await?;
        }
        if let Ok(Some(row)) = g.queue.get(approval_id).await {
            g.notifier.notify(Event::ApprovalResponded(row));
        }
        Ok(result)
    }

    /// Resumes the run paused on `approval_id` once it is decided (DESIGN §3 steps 6-8).
    /// Exactly one caller resumes (the checkpoint is taken by compare-and-set); others get
    /// `Ok(None)`. Approve executes the pinned call from the row before the model speaks;
    /// reject and expiry resume with an observation saying nothing was changed. The reply is
    /// published as `run.message`. A resumed run is never escalated.
    ///
    /// # Errors
    /// [`AgentError::Store`]; a corrupt checkpoint or row is never executed.
    pub async fn resume(&self, approval_id: &str) -> Result<Option<ChatResponse>, AgentError> {
        let Some(g) = &self.governance else {
            return Ok(None);
        };
        let Some(checkpoints) = &g.checkpoints else {
            return Ok(None);
        };
        let Some(row) = g.queue.get(approval_id).await? else {
            return Ok(None);
        };
        if row.status == ApprovalStatus::Pending {
            return Ok(None);
        }
        let Some(checkpoint) = checkpoints.take_for_resume(approval_id).await? else {
            return Ok(None);
        };
        let ctx = CallContext {
            run_id: checkpoint.run_id.clone(),
            conversation_id: checkpoint.conversation_id.clone(),
            request: checkpoint.request.clone(),
        };
        let observation = self.observation_for(&row, &ctx).await?;
        let mut transcript = self
            .conversations
            .transcript(&checkpoint.conversation_id)
            .await?;
        if transcript.is_empty() {
            transcript = checkpoint.messages.clone();
        }
        place_result(&mut transcript, &checkpoint.pending_call.id, observation);
        let response = self
            .drive(ctx, transcript, checkpoint.effects_executed.clone(), true)
            .await?;
        g.notifier.notify(Event::RunMessage(RunMessage {
            conversation_id: response.conversation_id.clone(),
            run_id: response.run_id.clone(),
            text: response.reply.clone(),
            approval_id: Some(approval_id.to_string()),
        }));
        Ok(Some(response))
    }

    /// The observation the paused call gets, by the row's final state.
    async fn observation_for(
        &self,
        row: &Approval,
        ctx: &CallContext,
    ) -> Result<Value, StoreError> {
        Ok(match row.status {
            ApprovalStatus::Approved => {
                // What executes is what was hashed: a row whose hash does not cover its own
                // tool and arguments is corrupt and never runs.
                if call_hash(&row.tool, &row.args) != row.call_hash {
                    let g = self.governance.as_ref().expect("resume has governance");
                    g.audit
                        .append(&NewAuditEntry {
                            approval_id: row.id.clone(),
                            kind: AuditKind::Denial,
                            item: None,
                            result: json!({"denied": "the row's call hash does not match its tool and arguments"}),
                            undo_available: false,
                            actor: "iris".into(),
                            surface: None,
                            at: g.clock.now(),
                        })
                        .await?;
                    json!({"status": "not_run", "message": "the approval row is corrupt; nothing was changed"})
                } else {
                    self.execute_pinned(&row.id, &row.tool, &row.args, ctx)
                        .await?
                }
            }
            ApprovalStatus::Rejected => json!({
                "status": "rejected",
                "message": format!("the owner rejected this: {}", row.reason.as_deref().unwrap_or("no reason given")),
                "changed": false,
            }),
            ApprovalStatus::Expired => json!({
                "status": "expired",
                "message": "the approval lapsed; nothing was changed",
                "changed": false,
            }),
            ApprovalStatus::Pending => {
                json!({"status": "not_run", "message": "still waiting for the owner"})
            }
        })
    }
}

fn tool_result(id: &str, content: Value) -> Message {
    Message::Tool {
        tool_call_id: id.to_string(),
        content,
    }
}

fn as_object(v: Value) -> Value {
    if v.is_object() {
        v
    } else {
        json!({ "result": v })
    }
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// Validates model arguments against the tool's JSON Schema. A missing or null argument object
/// counts as `{}`.
fn validate_args(spec: &ToolSpec, args: &Value) -> Result<Value, String> {
    let args = match args {
        Value::Null => json!({}),
        Value::String(s) => {
            serde_json::from_str(s).map_err(|e| format!("arguments are not JSON: {e}"))?
        }
        other => other.clone(),
    };
    let validator = jsonschema::validator_for(&spec.parameters).map_err(|e| e.to_string())?;
    let errors: Vec<String> = validator
        .iter_errors(&args)
        .map(|e| e.to_string())
        .collect();
    if errors.is_empty() {
        Ok(args)
    } else {
        Err(errors.join("; "))
    }
}

/// Places the paused call's observation right after the results of its step (replacing a
/// placeholder if one is there), so the transcript never has a call without a result.
fn place_result(transcript: &mut Vec<Message>, call_id: &str, observation: Value) {
    if let Some(existing) = transcript.iter_mut().find_map(|m| match m {
        Message::Tool {
            tool_call_id,
            content,
        } if tool_call_id == call_id => Some(content),
        _ => None,
    }) {
        *existing = observation;
        return;
    }
    let asked = transcript.iter().position(|m| {
        matches!(m, Message::Assistant { tool_calls, .. } if tool_calls.iter().any(|c| c.id == call_id))
    });
    let at = match asked {
        Some(i) => {
            let mut j = i + 1;
            while j < transcript.len() && matches!(transcript[j], Message::Tool { .. }) {
                j += 1;
            }
            j
        }
        None => transcript.len(),
    };
    transcript.insert(at, tool_result(call_id, observation));
    if at + 1 < transcript.len() {
        // The owner said more while the call was paused; tell the model where the answer is.
        transcript.push(Message::System {
            content: format!("The owner answered the paused call {call_id}; its result is above."),
        });
    }
}

/// The transcript as sent to the model: every call id has exactly one result. A call paused on
/// an approval that is still open gets a "waiting" result in the copy sent (never stored).
fn with_all_results(transcript: &[Message]) -> Vec<Message> {
    let answered: std::collections::BTreeSet<&str> = transcript
        .iter()
        .filter_map(|m| match m {
            Message::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    let mut out = Vec::with_capacity(transcript.len());
    let mut i = 0;
    while i < transcript.len() {
        out.push(transcript[i].clone());
        if let Message::Assistant { tool_calls, .. } = &transcript[i] {
            let mut j = i + 1;
            while j < transcript.len() && matches!(transcript[j], Message::Tool { .. }) {
                out.push(transcript[j].clone());
                j += 1;
            }
            for c in tool_calls
                .iter()
                .filter(|c| !answered.contains(c.id.as_str()))
            {
                out.push(tool_result(
                    &c.id,
                    json!({"status": "waiting", "message": "not run yet: waiting for the owner's answer on this call"}),
                ));
            }
            i = j;
            continue;
        }
        i += 1;
    }
    out
}
