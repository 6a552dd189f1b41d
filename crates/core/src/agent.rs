//! The agent loop (DESIGN §3): a ReAct loop over the [`Model`] trait that resolves every tool
//! name before any check, refuses gated calls it cannot govern, runs PreToolUse hooks, halts on
//! an approval row with a checkpoint, and on resume executes the pinned call *from the row*
//! (claim → ledger `executing` → run → ledger `executed` → audit) before the model says anything.
//!
//! Issue 3 adds, here:
//! - PostStep evaluators ([`crate::evaluator`]): after each executed call; a halt writes an
//!   `evaluator` row (no items) and pauses the run with the step's result in place.
//! - Staleness: each item's pinned precondition is checked just before the approved call
//!   executes; a stale item is skipped ("stale: nothing done"), the others proceed.
//! - Strict restore: a row or checkpoint that fails its schema check (corrupt checkpoint, tool
//!   no longer declared, effect no longer approved per call) never executes; the approval's
//!   execution is marked `failed` with the reason, and the owner is told.
//! - A failed resume (model unreachable, store error) is recorded on the row (`resume_error`)
//!   and retried only on the owner's request ([`Agent::retry_resume`]). A retry never executes
//!   the pinned call again: it reuses the ledger's recorded result, and an `unknown` entry is
//!   never retried.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::approval::Ttl;
use crate::canonical::{call_hash, canonical_json};
use crate::evaluator::{ExecutedStep, PostStepEvaluator, Verdict};
use crate::hooks::{
    ConfirmOnceHook, DestructiveApprovalHook, HookDecision, PendingCall, PreToolUseHook,
};
use crate::kernel::Governance;
use crate::manifest::{Registry, ToolSpec};
use crate::model::{Message, Model, ToolCall};
use crate::plugin::{CallContext, Plugin};
use crate::ports::{
    Checkpoint, CheckpointStore, ClaimOutcome, ConversationStore, NewApproval, NewAuditEntry,
    StoreError,
};
use crate::wire::{
    Approval, ApprovalKind, ApprovalStatus, AuditKind, Card, ChatLine, ChatResponse, Effect, Event,
    Execution, RunMessage, RunStatus,
};

/// The observation every later call id of a halted step gets (DESIGN §3 step 4).
pub const NOT_RUN_WAITING: &str = "not run: waiting for approval of an earlier call";

/// The observation every later call id of a step gets when an evaluator halted the run after an
/// earlier call of that step.
pub const NOT_RUN_PAUSED: &str =
    "not run: the run paused for the owner's review after an earlier call of this step";

/// The paused call's observation when its approval lapsed (DESIGN §3 step 9).
pub const LAPSED: &str = "the approval lapsed; nothing was changed";

/// The paused call's observation when the ledger says `unknown` (a crash between `executing`
/// and the outcome): never run again (DESIGN §2 side-effect ledger).
pub const UNKNOWN_OUTCOME: &str = "unknown: it may or may not have run; it will not be run again";

/// What a stale item's result and audit entry say (issue 3 staleness).
pub const STALE: &str = "stale: nothing done";

/// Why the loop could not run at all (not: why a call was refused; that is an observation).
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Storage failed before anything ran.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why an owner-requested retry of a failed resume did not happen
/// (`POST /governance/approvals/{id}/resume`).
#[derive(Debug, thiserror::Error)]
pub enum RetryError {
    /// No such approval (404).
    #[error("approval `{0}` does not exist")]
    NotFound(String),
    /// Still pending: nothing to resume yet (409).
    #[error("approval `{}` is still pending: answer it first", .0.id)]
    NotDecided(Box<Approval>),
    /// Its run did not fail to resume (it resumed fine, is resuming now, has not been resumed
    /// yet, or another retry won): nothing to retry (409).
    #[error("the run of approval `{}` has no failed resume to retry", .0.id)]
    NotFailed(Box<Approval>),
    /// This agent cannot resume runs (no governance or no checkpoint store) (409).
    #[error("this server cannot resume paused runs (no governance or no checkpoint store)")]
    Unavailable,
    /// The retry itself failed; the failure is recorded on the row again (500).
    #[error(transparent)]
    Agent(#[from] AgentError),
}

/// The outcome of driving the loop: the run's response and, when it ended because the model
/// could not be reached, why (a resume that ends so is recorded as failed and retryable).
struct Driven {
    response: ChatResponse,
    model_error: Option<String>,
}

impl From<ChatResponse> for Driven {
    fn from(response: ChatResponse) -> Driven {
        Driven {
            response,
            model_error: None,
        }
    }
}

/// What the loop does with one call.
enum Dispatch {
    /// The call was answered without running (unknown tool, invalid arguments, a deny); this
    /// is its observation.
    Observation(Value),
    /// The call ran (successfully or not): its observation, for the transcript and the
    /// PostStep evaluators.
    Executed {
        /// The observation.
        observation: Value,
        /// The resolved tool.
        spec: ToolSpec,
        /// The normalised arguments it ran with.
        args: Value,
    },
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
    evaluators: Vec<Arc<dyn PostStepEvaluator>>,
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
            evaluators: Vec::new(),
            system_prompt: SYSTEM_PROMPT.to_string(),
            max_steps: 8,
        })
    }

    /// Adds PostStep evaluators (DESIGN §2 kind `evaluator`), run in the given order after each
    /// call the loop executes; the first halt wins. With none (the default) nothing is
    /// evaluated.
    pub fn with_evaluators(mut self, evaluators: Vec<Arc<dyn PostStepEvaluator>>) -> Agent {
        self.evaluators.extend(evaluators);
        self
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
        Ok(self
            .drive(ctx, transcript, Vec::new(), false)
            .await?
            .response)
    }

    /// The loop proper, from a transcript whose last message awaits the model.
    async fn drive(
        &self,
        ctx: CallContext,
        mut transcript: Vec<Message>,
        mut effects: Vec<Effect>,
        resumed: bool,
    ) -> Result<Driven, AgentError> {
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
                    let response = self
                        .finish(
                            &ctx,
                            transcript,
                            RunStatus::Failed,
                            reply,
                            None,
                            effects,
                            resumed,
                        )
                        .await?;
                    return Ok(Driven {
                        response,
                        model_error: Some(e.to_string()),
                    });
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
                    .await
                    .map(Driven::from);
            }
            for (index, call) in turn.tool_calls.iter().enumerate() {
                match self.dispatch(call, &ctx, &mut effects).await {
                    Dispatch::Observation(v) => transcript.push(tool_result(&call.id, v)),
                    Dispatch::Refused(v) => {
                        refused = true;
                        transcript.push(tool_result(&call.id, v));
                    }
                    Dispatch::Executed {
                        observation,
                        spec,
                        args,
                    } => {
                        transcript.push(tool_result(&call.id, observation.clone()));
                        let step = ExecutedStep {
                            call,
                            spec: &spec,
                            args: &args,
                            observation: &observation,
                            ctx: &ctx,
                        };
                        if let Some(reason) = self.evaluate(&step).await {
                            let halt = EvaluatorHalt {
                                spec: &spec,
                                args: &args,
                                observation: &observation,
                                reason,
                            };
                            return self
                                .evaluator_halt(
                                    ctx,
                                    transcript,
                                    &turn.tool_calls,
                                    index,
                                    halt,
                                    effects,
                                    resumed,
                                )
                                .await
                                .map(Driven::from);
                        }
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
                            .await
                            .map(Driven::from);
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
        .map(Driven::from)
    }

    /// Runs the PostStep evaluators in order; the first halt's reason, if any.
    async fn evaluate(&self, step: &ExecutedStep<'_>) -> Option<String> {
        for evaluator in &self.evaluators {
            if let Verdict::Halt { reason } = evaluator.evaluate(step).await {
                return Some(reason);
            }
        }
        None
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
        let observation = match plugin.execute(&spec.name, &args, ctx).await {
            Ok(out) => as_object(out.result),
            Err(e) => json!({"status": "error", "message": e.to_string()}),
        };
        Dispatch::Executed {
            observation,
            spec: spec.clone(),
            args,
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
        let row = governance.queue.get(&approval_id).await?;
        let what = row
            .as_ref()
            .map(|r| r.card.action.clone())
            .unwrap_or_else(|| calls[index].name.clone());
        let reply = format!(
            "I need your approval to {}. Nothing has been changed yet. Review it on Activity: /activity/{approval_id}",
            lower_first(&what)
        );
        self.pause(
            ctx,
            transcript,
            &calls[index],
            approval_id,
            effects,
            resumed,
            reply,
        )
        .await
    }

    /// Checkpoints the run on `approval_id`, links the row to the checkpoint and ends the turn
    /// `awaiting_approval` with `reply` (DESIGN §3 step 4).
    #[allow(clippy::too_many_arguments)]
    async fn pause(
        &self,
        ctx: CallContext,
        transcript: Vec<Message>,
        pending_call: &ToolCall,
        approval_id: String,
        effects: Vec<Effect>,
        resumed: bool,
        reply: String,
    ) -> Result<ChatResponse, AgentError> {
        let governance = self
            .governance
            .as_ref()
            .expect("a pause happens only with governance");
        let checkpoints = governance
            .checkpoints
            .as_ref()
            .expect("ungovernable() refused pausing when there is no checkpoint store");
        let checkpoint = Checkpoint {
            id: uuid::Uuid::new_v4().to_string(),
            run_id: ctx.run_id.clone(),
            conversation_id: ctx.conversation_id.clone(),
            request: ctx.request.clone(),
            messages: transcript.clone(),
            pending_call: pending_call.clone(),
            approval_id: approval_id.clone(),
            effects_executed: effects.clone(),
        };
        checkpoints.save(&checkpoint).await?;
        governance
            .queue
            .link_checkpoint(&approval_id, &checkpoint.id)
            .await?;
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

    /// An evaluator halted the run after a call that already ran (its result is the last entry
    /// of `transcript`): every later call of the step gets [`NOT_RUN_PAUSED`], an `evaluator`
    /// row (no items, evaluator TTL) is written and notified, and the run pauses on it. When the
    /// run cannot pause (no governance, approvals off, no checkpoint store, or the row cannot be
    /// written) it ends here instead, refused: fail closed, nothing more runs.
    #[allow(clippy::too_many_arguments)]
    async fn evaluator_halt(
        &self,
        ctx: CallContext,
        mut transcript: Vec<Message>,
        calls: &[ToolCall],
        index: usize,
        halt: EvaluatorHalt<'_>,
        effects: Vec<Effect>,
        resumed: bool,
    ) -> Result<ChatResponse, AgentError> {
        for later in &calls[index + 1..] {
            transcript.push(tool_result(
                &later.id,
                json!({"status": "not_run", "message": NOT_RUN_PAUSED}),
            ));
        }
        let tool = halt.spec.name.clone();
        let stop = |why: String| {
            format!(
                "I stopped after `{tool}`: {}. {why}, so this run ends here; nothing more was done.",
                halt.reason
            )
        };
        let governance = match (self.ungovernable(), &self.governance) {
            (None, Some(g)) => g,
            (why, _) => {
                let why = why.unwrap_or("there is no governance kernel");
                let reply = stop(format!("It cannot pause for your review ({why})"));
                return self
                    .finish(
                        &ctx,
                        transcript,
                        RunStatus::Refused,
                        reply,
                        None,
                        effects,
                        resumed,
                    )
                    .await;
            }
        };
        let row = evaluator_row(&ctx, &halt, governance.clock.now(), governance.ttl);
        if let Err(e) = governance.queue.insert(&row).await {
            let reply = stop(format!("The review could not be recorded ({e})"));
            return self
                .finish(
                    &ctx,
                    transcript,
                    RunStatus::Refused,
                    reply,
                    None,
                    effects,
                    resumed,
                )
                .await;
        }
        governance
            .notifier
            .notify(Event::ApprovalRequested(row.pending_view()));
        let reply = format!(
            "I paused after `{tool}`: {}. Nothing more will run until you review it on Activity: /activity/{}",
            halt.reason, row.id
        );
        self.pause(
            ctx,
            transcript,
            &calls[index],
            row.id,
            effects,
            resumed,
            reply,
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
    /// canonical arguments, not yet claimed), ledger `executing`, check each item's pinned
    /// precondition, run (leaving stale items out), one audit entry per item, then ledger
    /// `executed` or `failed` with the result (DESIGN §3 step 7; issue 3 staleness). A denied claim is
    /// audited as a denial and nothing runs. Returns the observation for the paused call.
    ///
    /// Strict restore: when the tool is no longer declared, no longer approved per call, or no
    /// plugin provides it, nothing runs and the approval is consumed with its execution marked
    /// `failed` and the reason (DESIGN §8 fail closed). A stale item gets [`STALE`] in the
    /// observation's `stale` list and in its audit entry; when every item is stale nothing runs
    /// and the ledger says `failed`.
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
        Ok(self
            .execute_pinned_told(approval_id, tool, args, ctx)
            .await?
            .0)
    }

    /// [`Agent::execute_pinned`], plus what the owner must be told in the chat when the call
    /// was refused by strict restore.
    async fn execute_pinned_told(
        &self,
        approval_id: &str,
        tool: &str,
        args: &Value,
        ctx: &CallContext,
    ) -> Result<(Value, Option<String>), StoreError> {
        let Some(g) = &self.governance else {
            return Ok((
                json!({"status": "not_run", "message": "no governance kernel; nothing was changed"}),
                None,
            ));
        };
        let now = g.clock.now();
        // Strict restore: the tool must still be declared, still approved per call, and still
        // provided by a plugin.
        let problem = match self.registry.get(tool) {
            None => Some(format!(
                "tool `{tool}` is not declared by any manifest any more"
            )),
            Some(s) if !s.approved_per_call() => Some(format!(
                "tool `{tool}` is no longer approved per call (its effect is now `{}`)",
                s.effect.as_str()
            )),
            Some(s) if !self.plugins.contains_key(&s.plugin) => {
                Some(format!("no plugin provides `{tool}`"))
            }
            Some(_) => None,
        };
        if let Some(reason) = problem {
            let consumed = self.fail_closed(approval_id, tool, args, &reason).await?;
            let message = format!("{reason}; nothing was changed");
            let told =
                consumed.then(|| format!("I did not run the approved `{tool}` call: {message}."));
            return Ok((json!({"status": "not_run", "message": message}), told));
        }
        let spec = self
            .registry
            .get(tool)
            .expect("checked above: the tool is declared");
        let plugin = &self.plugins[&spec.plugin];
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
        // The request terms read before the claim; a forged id has none (the claim denies it).
        let row = g.queue.get(approval_id).await?;
        if row
            .as_ref()
            .is_some_and(|r| r.kind == ApprovalKind::Evaluator)
        {
            let reason = "an evaluator halt pins no call to execute".to_string();
            g.audit.append(&deny(reason.clone())).await?;
            return Ok((
                json!({"status": "not_run", "message": format!("{reason}; nothing was changed")}),
                None,
            ));
        }
        let preconditions = match g.queue.preconditions(approval_id).await {
            Ok(p) => Ok(p),
            Err(StoreError::Corrupt { reason, .. }) => Err(reason),
            Err(e) => return Err(e),
        };
        match g
            .ledger
            .claim(approval_id, tool, &canonical_json(args), now)
            .await?
        {
            ClaimOutcome::Claimed => crate::failpoint::hit(crate::failpoint::AFTER_CLAIM),
            ClaimOutcome::Denied(reason) => {
                g.audit.append(&deny(reason.clone())).await?;
                return Ok((
                    json!({"status": "not_run", "message": format!("claim refused: {reason}; nothing was changed")}),
                    None,
                ));
            }
        }
        // Claimed: from here the ledger says `executing`, and every path writes its outcome.
        let items = row.map(|r| r.items).unwrap_or_default();
        let preconditions = match preconditions {
            Ok(p) if p.is_empty() || p.len() == items.len() => p,
            Ok(p) => {
                let reason = format!(
                    "the row pins {} preconditions for {} items",
                    p.len(),
                    items.len()
                );
                return self.refuse_claimed(approval_id, &reason).await;
            }
            Err(reason) => {
                let reason = format!("the row's preconditions are corrupt: {reason}");
                return self.refuse_claimed(approval_id, &reason).await;
            }
        };
        let mut stale: Vec<String> = Vec::new();
        for (item, precondition) in items.iter().zip(&preconditions) {
            if !plugin
                .check_precondition(tool, item, precondition, ctx)
                .await
            {
                stale.push(item.clone());
            }
        }
        let stale_json: Vec<Value> = stale
            .iter()
            .map(|i| json!({"id": i, "status": "stale", "message": STALE}))
            .collect();
        let undo_available = spec.undo.is_some();
        let (executed, mut result, outcomes) = if !stale.is_empty() && stale.len() == items.len() {
            (
                false,
                json!({"status": "stale", "message": STALE, "changed": false}),
                Vec::new(),
            )
        } else {
            let outcome = if stale.is_empty() {
                plugin.execute(tool, args, ctx).await
            } else {
                plugin.execute_skipping(tool, args, &stale, ctx).await
            };
            match outcome {
                Ok(out) => (true, as_object(out.result), out.items),
                Err(e) => (
                    false,
                    json!({"status": "failed", "message": e.to_string()}),
                    Vec::new(),
                ),
            }
        };
        crate::failpoint::hit(crate::failpoint::AFTER_SIDE_EFFECT);
        if !stale.is_empty() {
            result["stale"] = Value::Array(stale_json);
        }
        let done = g.clock.now();
        // The audit entries go first, the ledger outcome last: whoever sees `executed` (or
        // `failed`) on the row then finds the complete audit. A crash in between leaves the
        // entry `executing` (then `unknown`): never run again, and the audit says what ran.
        let entry = |item: Option<String>, result: Value, undo: bool| NewAuditEntry {
            approval_id: approval_id.to_string(),
            kind: AuditKind::Execution,
            item,
            result,
            undo_available: undo,
            actor: "iris".into(),
            surface: None,
            at: done,
        };
        if outcomes.is_empty() && stale.is_empty() {
            g.audit
                .append(&entry(None, result.clone(), undo_available && executed))
                .await?;
        }
        for item in outcomes {
            g.audit
                .append(&entry(Some(item.item), item.outcome, undo_available))
                .await?;
        }
        for item in &stale {
            g.audit
                .append(&entry(
                    Some(item.clone()),
                    json!({"status": "stale", "message": STALE}),
                    false,
                ))
                .await?;
        }
        g.ledger
            .finish(approval_id, executed, &result, done)
            .await?;
        crate::failpoint::hit(crate::failpoint::AFTER_OUTCOME);
        if let Ok(Some(row)) = g.queue.get(approval_id).await {
            g.notifier.notify(Event::ApprovalResponded(row));
        }
        Ok((result, None))
    }

    /// After a claim: writes `failed` with `reason` instead of running, audits the refusal and
    /// notifies (strict restore on a claimed call).
    async fn refuse_claimed(
        &self,
        approval_id: &str,
        reason: &str,
    ) -> Result<(Value, Option<String>), StoreError> {
        let g = self.governance.as_ref().expect("claimed under governance");
        let now = g.clock.now();
        let message = format!("not run: {reason}; nothing was changed");
        let result = json!({"status": "failed", "message": message});
        g.audit.append(&denial(approval_id, reason, now)).await?;
        g.ledger.finish(approval_id, false, &result, now).await?;
        if let Ok(Some(row)) = g.queue.get(approval_id).await {
            g.notifier.notify(Event::ApprovalResponded(row));
        }
        Ok((
            json!({"status": "not_run", "message": message}),
            Some(format!("I did not run the approved call: {message}.")),
        ))
    }

    /// Strict restore (DESIGN §8): the approval is never executed. When the call is the row's
    /// own, approved and unclaimed, it is claimed and its execution marked `failed` with
    /// `reason` (so nothing can run it later, and the card says why); the refusal is audited
    /// either way. Returns whether the approval was consumed so (the owner is then told).
    ///
    /// # Errors
    /// [`StoreError`] when the ledger or audit cannot be written.
    async fn fail_closed(
        &self,
        approval_id: &str,
        tool: &str,
        args: &Value,
        reason: &str,
    ) -> Result<bool, StoreError> {
        let g = self
            .governance
            .as_ref()
            .expect("strict restore runs under governance");
        let now = g.clock.now();
        let consumed = match g
            .ledger
            .claim(approval_id, tool, &canonical_json(args), now)
            .await?
        {
            ClaimOutcome::Claimed => {
                // Audit first, outcome last (see `execute_pinned_told`).
                g.audit.append(&denial(approval_id, reason, now)).await?;
                let result = json!({
                    "status": "failed",
                    "message": format!("not run: {reason}; nothing was changed"),
                });
                g.ledger.finish(approval_id, false, &result, now).await?;
                true
            }
            ClaimOutcome::Denied(_) => {
                g.audit.append(&denial(approval_id, reason, now)).await?;
                false
            }
        };
        if consumed {
            if let Ok(Some(row)) = g.queue.get(approval_id).await {
                g.notifier.notify(Event::ApprovalResponded(row));
            }
        }
        Ok(consumed)
    }

    /// The governance and checkpoint store a resume needs, when this agent has both.
    fn resumable(&self) -> Option<(&Governance, &Arc<dyn CheckpointStore>)> {
        let g = self.governance.as_ref()?;
        Some((g, g.checkpoints.as_ref()?))
    }

    /// Resumes the run paused on `approval_id` once it is decided (DESIGN §3 steps 6-8).
    /// Exactly one caller resumes (the checkpoint is taken by compare-and-set); others get
    /// `Ok(None)`. Approve executes the pinned call from the row before the model speaks;
    /// reject and expiry resume with an observation saying nothing was changed. An `evaluator`
    /// row: approve continues from the step's result already in place (nothing re-executes);
    /// reject or lapse leaves the run stopped without asking the model. The reply is published
    /// as `run.message`. A resumed run is never escalated.
    ///
    /// A resume that fails (the model unreachable, a store error) is recorded on the row
    /// (`resume_error`, shown on the card) and retried only through [`Agent::retry_resume`].
    /// A checkpoint that does not parse is never executed: the approval's execution is marked
    /// `failed` with the reason and the owner is told (strict restore).
    ///
    /// # Errors
    /// [`AgentError::Store`]; a corrupt row is never executed.
    pub async fn resume(&self, approval_id: &str) -> Result<Option<ChatResponse>, AgentError> {
        let Some((g, checkpoints)) = self.resumable() else {
            return Ok(None);
        };
        let row = match g.queue.get(approval_id).await {
            Ok(Some(row)) => row,
            Ok(None) => return Ok(None),
            Err(e) => {
                if matches!(e, StoreError::Corrupt { .. }) {
                    // Strict restore: the row cannot be read, so nothing can run it; say why.
                    let text = format!("the approval row cannot be read ({e}); nothing was run");
                    let _ = g.queue.set_resume_error(approval_id, Some(&text)).await;
                }
                return Err(e.into());
            }
        };
        if row.status == ApprovalStatus::Pending {
            return Ok(None);
        }
        match checkpoints.take_for_resume(approval_id).await {
            Ok(Some(checkpoint)) => self.continue_run(&row, checkpoint).await.map(Some),
            Ok(None) => Ok(None),
            Err(StoreError::Corrupt { id, reason }) => self
                .restore_refused(&row, &format!("its saved run ({id}) is corrupt: {reason}"))
                .await
                .map(Some),
            Err(e) => Err(e.into()),
        }
    }

    /// Retries the resume of a run whose resume failed (the owner's request,
    /// `POST /governance/approvals/{id}/resume`; never automatic). The checkpoint is taken again
    /// by compare-and-set, so one retry runs at a time. The pinned call is never executed again:
    /// the ledger's recorded result (executed or failed) becomes the observation, and an
    /// `unknown` entry is reported as [`UNKNOWN_OUTCOME`] and the owner told.
    ///
    /// # Errors
    /// [`RetryError::NotFound`], [`RetryError::NotDecided`], [`RetryError::NotFailed`],
    /// [`RetryError::Unavailable`]; [`RetryError::Agent`] when the retry failed again (recorded
    /// on the row again).
    pub async fn retry_resume(&self, approval_id: &str) -> Result<ChatResponse, RetryError> {
        let Some((g, checkpoints)) = self.resumable() else {
            return Err(RetryError::Unavailable);
        };
        let row = g
            .queue
            .get(approval_id)
            .await
            .map_err(AgentError::from)?
            .ok_or_else(|| RetryError::NotFound(approval_id.to_string()))?;
        if row.status == ApprovalStatus::Pending {
            return Err(RetryError::NotDecided(Box::new(row)));
        }
        match checkpoints.take_for_retry(approval_id).await {
            Ok(Some(checkpoint)) => Ok(self.continue_run(&row, checkpoint).await?),
            Ok(None) => Err(RetryError::NotFailed(Box::new(row))),
            Err(StoreError::Corrupt { id, reason }) => Ok(self
                .restore_refused(&row, &format!("its saved run ({id}) is corrupt: {reason}"))
                .await?),
            Err(e) => Err(AgentError::from(e).into()),
        }
    }

    /// Continues a resume that a crash interrupted (found at start-up by
    /// [`CheckpointStore::interrupted`], taken by compare-and-set on `recoveries`). The paused
    /// call's observation comes from the ledger, so the pinned call never runs twice: `executed`
    /// or `failed` reuse the recorded result; `unknown` (the crash fell between `executing` and
    /// the outcome) is reported as [`UNKNOWN_OUTCOME`], never run again, and the owner is told
    /// in the chat; a call never claimed runs once (the claim is a compare-and-set). `Ok(None)`
    /// when another process took it or it finished meanwhile.
    ///
    /// # Errors
    /// [`AgentError::Store`]; a failure is recorded on the row like any resume's.
    pub async fn recover_interrupted(
        &self,
        approval_id: &str,
        recoveries: i64,
    ) -> Result<Option<ChatResponse>, AgentError> {
        let Some((g, checkpoints)) = self.resumable() else {
            return Ok(None);
        };
        let Some(row) = g.queue.get(approval_id).await? else {
            return Ok(None);
        };
        match checkpoints.take_interrupted(approval_id, recoveries).await {
            Ok(Some(checkpoint)) => self.continue_run(&row, checkpoint).await.map(Some),
            Ok(None) => Ok(None),
            Err(StoreError::Corrupt { id, reason }) => self
                .restore_refused(&row, &format!("its saved run ({id}) is corrupt: {reason}"))
                .await
                .map(Some),
            Err(e) => Err(e.into()),
        }
    }

    /// Continues a taken checkpoint; records a failure on the row (`resume_error`, then
    /// `approval.responded` so the card shows it) and publishes the reply as `run.message`.
    /// Either way the run is then recorded as ended ([`CheckpointStore::finish_resume`]); a
    /// crash before that leaves it to [`Agent::recover_interrupted`] at the next start.
    async fn continue_run(
        &self,
        row: &Approval,
        checkpoint: Checkpoint,
    ) -> Result<ChatResponse, AgentError> {
        let outcome = self.continue_run_inner(row, checkpoint).await;
        if let Some((_, checkpoints)) = self.resumable() {
            // Best effort: if it cannot be written, the next start continues the run again
            // from the ledger (the pinned call still never runs twice).
            let _ = checkpoints.finish_resume(&row.id).await;
        }
        outcome
    }

    /// [`Agent::continue_run`] without recording the end.
    async fn continue_run_inner(
        &self,
        row: &Approval,
        checkpoint: Checkpoint,
    ) -> Result<ChatResponse, AgentError> {
        let g = self.governance.as_ref().expect("resume has governance");
        match self.continue_inner(row, checkpoint).await {
            Ok(driven) => {
                if let Some(error) = &driven.model_error {
                    self.record_resume_error(
                        &row.id,
                        &format!(
                            "the resumed run could not reach the model ({error}); it can be retried"
                        ),
                    )
                    .await;
                }
                let response = driven.response;
                g.notifier.notify(Event::RunMessage(RunMessage {
                    conversation_id: response.conversation_id.clone(),
                    run_id: response.run_id.clone(),
                    text: response.reply.clone(),
                    approval_id: Some(row.id.clone()),
                }));
                Ok(response)
            }
            Err(e) => {
                self.record_resume_error(
                    &row.id,
                    &format!("resuming failed: {e}; it can be retried"),
                )
                .await;
                Err(e)
            }
        }
    }

    /// Best effort: records why a resume failed and notifies `approval.responded`.
    async fn record_resume_error(&self, approval_id: &str, text: &str) {
        let g = self.governance.as_ref().expect("resume has governance");
        if g.queue
            .set_resume_error(approval_id, Some(text))
            .await
            .is_ok()
        {
            if let Ok(Some(row)) = g.queue.get(approval_id).await {
                g.notifier.notify(Event::ApprovalResponded(row));
            }
        }
    }

    /// The resumed run proper: the paused call's observation by the row's state, then the
    /// model continues (or, for a stopped evaluator halt, does not).
    async fn continue_inner(
        &self,
        row: &Approval,
        checkpoint: Checkpoint,
    ) -> Result<Driven, AgentError> {
        let ctx = CallContext {
            run_id: checkpoint.run_id.clone(),
            conversation_id: checkpoint.conversation_id.clone(),
            request: checkpoint.request.clone(),
        };
        let mut transcript = self
            .conversations
            .transcript(&checkpoint.conversation_id)
            .await?;
        if transcript.is_empty() {
            transcript = checkpoint.messages.clone();
        }
        let effects = checkpoint.effects_executed.clone();
        if row.kind == ApprovalKind::Evaluator {
            if row.status != ApprovalStatus::Approved {
                return self
                    .stay_stopped(row, ctx, transcript, effects)
                    .await
                    .map(Driven::from);
            }
            // The step's result is already in the transcript: nothing re-executes.
            if !has_result(&transcript, &checkpoint.pending_call.id) {
                let saved = checkpoint.messages.iter().find_map(|m| match m {
                    Message::Tool {
                        tool_call_id,
                        content,
                    } if tool_call_id == &checkpoint.pending_call.id => Some(content.clone()),
                    _ => None,
                });
                place_result(
                    &mut transcript,
                    &checkpoint.pending_call.id,
                    saved.unwrap_or_else(
                        || json!({"status": "unknown", "message": UNKNOWN_OUTCOME}),
                    ),
                );
            }
            return self.drive(ctx, transcript, effects, true).await;
        }
        let (observation, told) = self.observation_for(row, &ctx).await?;
        if let Some(text) = told {
            self.tell_owner(&ctx, &row.id, &text).await?;
        }
        place_result(&mut transcript, &checkpoint.pending_call.id, observation);
        self.drive(ctx, transcript, effects, true).await
    }

    /// A rejected or lapsed evaluator halt: the run stays stopped. The model is not asked; the
    /// transcript notes the stop for later turns and the chat says so.
    async fn stay_stopped(
        &self,
        row: &Approval,
        ctx: CallContext,
        mut transcript: Vec<Message>,
        effects: Vec<Effect>,
    ) -> Result<ChatResponse, AgentError> {
        let why = match row.status {
            ApprovalStatus::Expired => "nobody answered the review in time".to_string(),
            _ => match row.reason.as_deref() {
                Some(reason) => format!("you stopped it: {reason}"),
                None => "you stopped it".to_string(),
            },
        };
        transcript.push(Message::System {
            content: format!(
                "The run was halted for review after `{}` ({}) and stays stopped: {why}. Do not continue it unless the owner asks again.",
                row.tool, row.card.title
            ),
        });
        let reply = format!(
            "The run stays stopped after `{}` ({}): {why}. Nothing more was done.",
            row.tool, row.card.title
        );
        self.finish(
            &ctx,
            transcript,
            RunStatus::Refused,
            reply,
            Some(row.id.clone()),
            effects,
            true,
        )
        .await
    }

    /// Appends an assistant line to the run's conversation and publishes it as `run.message`.
    async fn tell_owner(
        &self,
        ctx: &CallContext,
        approval_id: &str,
        text: &str,
    ) -> Result<(), StoreError> {
        self.conversations
            .append_line(
                &ctx.conversation_id,
                &ChatLine {
                    role: "assistant".into(),
                    text: text.to_string(),
                    approval_id: Some(approval_id.to_string()),
                },
            )
            .await?;
        if let Some(g) = &self.governance {
            g.notifier.notify(Event::RunMessage(RunMessage {
                conversation_id: ctx.conversation_id.clone(),
                run_id: ctx.run_id.clone(),
                text: text.to_string(),
                approval_id: Some(approval_id.to_string()),
            }));
        }
        Ok(())
    }

    /// Strict restore for a checkpoint that does not parse: the run cannot continue and the
    /// pinned call never executes. An approved, unexecuted call is consumed with its execution
    /// marked `failed` and the reason; the reason is also recorded as the row's `resume_error`;
    /// the owner is told by `approval.responded` and a chat line (`run.message`) in the run's
    /// conversation (read from the checkpoint's own column).
    async fn restore_refused(
        &self,
        row: &Approval,
        reason: &str,
    ) -> Result<ChatResponse, AgentError> {
        let (g, checkpoints) = self.resumable().expect("resume has a checkpoint store");
        if row.status == ApprovalStatus::Approved
            && row.execution == Execution::None
            && row.kind != ApprovalKind::Evaluator
        {
            self.fail_closed(&row.id, &row.tool, &row.args, reason)
                .await?;
        } else {
            g.audit
                .append(&denial(&row.id, reason, g.clock.now()))
                .await?;
        }
        let text = format!("the paused run cannot be restored: {reason}. Nothing was run.");
        g.queue.set_resume_error(&row.id, Some(&text)).await?;
        if let Some(row) = g.queue.get(&row.id).await? {
            g.notifier.notify(Event::ApprovalResponded(row));
        }
        let reply = format!(
            "I could not continue the paused run for \"{}\": its saved state is corrupt. Nothing was run and nothing was changed.",
            row.card.action
        );
        let conversation_id = checkpoints
            .conversation_of(&row.id)
            .await?
            .unwrap_or_default();
        let ctx = CallContext {
            run_id: row.run_id.clone(),
            conversation_id: conversation_id.clone(),
            request: row.card.request.clone(),
        };
        if !conversation_id.is_empty() {
            self.tell_owner(&ctx, &row.id, &reply).await?;
        }
        Ok(ChatResponse {
            conversation_id,
            run_id: row.run_id.clone(),
            status: RunStatus::Failed,
            reply,
            approval_id: Some(row.id.clone()),
            effects_executed: Vec::new(),
            resumed: true,
        })
    }

    /// The observation the paused call gets, by the row's final state, and what the owner must
    /// be told in the chat beyond the model's own reply (an unknown outcome, a strict-restore
    /// refusal).
    async fn observation_for(
        &self,
        row: &Approval,
        ctx: &CallContext,
    ) -> Result<(Value, Option<String>), StoreError> {
        Ok(match row.status {
            ApprovalStatus::Approved => match row.execution {
                // A retry: the ledger already records the call. Its result is the observation;
                // it never runs again (DESIGN §8).
                Execution::Executed | Execution::Failed => (
                    row.result
                        .clone()
                        .map(as_object)
                        .unwrap_or_else(|| json!({"status": row.execution.as_str()})),
                    None,
                ),
                Execution::Unknown | Execution::Executing => (
                    json!({"status": "unknown", "message": UNKNOWN_OUTCOME}),
                    Some(format!(
                        "I can't tell whether \"{}\" ran: it was interrupted while running. It will not be run again; please check it yourself.",
                        row.card.action
                    )),
                ),
                Execution::None => {
                    // What executes is what was hashed: a row whose hash does not cover its own
                    // tool and arguments is corrupt and never runs.
                    if call_hash(&row.tool, &row.args) != row.call_hash {
                        let reason = "the row's call hash does not match its tool and arguments";
                        self.fail_closed(&row.id, &row.tool, &row.args, reason)
                            .await?;
                        (
                            json!({"status": "not_run", "message": "the approval row is corrupt; nothing was changed"}),
                            Some(format!(
                                "I did not run \"{}\": the approval row is corrupt. Nothing was changed.",
                                row.card.action
                            )),
                        )
                    } else {
                        self.execute_pinned_told(&row.id, &row.tool, &row.args, ctx)
                            .await?
                    }
                }
            },
            ApprovalStatus::Rejected => (
                json!({
                    "status": "rejected",
                    "message": format!("the owner rejected this: {}", row.reason.as_deref().unwrap_or("no reason given")),
                    "changed": false,
                }),
                None,
            ),
            ApprovalStatus::Expired => (
                json!({
                    "status": "expired",
                    "message": LAPSED,
                    "changed": false,
                }),
                None,
            ),
            ApprovalStatus::Pending => (
                json!({"status": "not_run", "message": "still waiting for the owner"}),
                None,
            ),
        })
    }
}

/// What an evaluator halt pins: the call that ran, its result and the evaluator's reason.
struct EvaluatorHalt<'a> {
    spec: &'a ToolSpec,
    args: &'a Value,
    observation: &'a Value,
    reason: String,
}

/// Longest observation summary on an evaluator card, in characters.
const SUMMARY_CHARS: usize = 160;

/// The `evaluator` row of a halt (DESIGN §2 kind `evaluator`): pins the call that already ran
/// (tool and normalised arguments, hashed like any row) and **no items**; the card's title is
/// the reason, its action "Continue after TOOL", its effect the tool's, and its one line a
/// summary of the result. Lapses after the evaluator TTL.
fn evaluator_row(
    ctx: &CallContext,
    halt: &EvaluatorHalt<'_>,
    now: chrono::DateTime<chrono::Utc>,
    ttl: Ttl,
) -> NewApproval {
    let tool = &halt.spec.name;
    let result = halt.observation.to_string();
    let summary = if result.chars().count() > SUMMARY_CHARS {
        format!(
            "{}…",
            result.chars().take(SUMMARY_CHARS).collect::<String>()
        )
    } else {
        result
    };
    NewApproval {
        id: uuid::Uuid::new_v4().to_string(),
        kind: ApprovalKind::Evaluator,
        tool: tool.clone(),
        args: halt.args.clone(),
        args_canonical: canonical_json(halt.args),
        call_hash: call_hash(tool, halt.args),
        items: Vec::new(),
        card: Card {
            title: halt.reason.clone(),
            action: format!("Continue after {tool}"),
            effect: halt.spec.effect,
            lines: vec![format!("{tool} returned {summary}")],
            undo_tool: None,
            undo_window_days: None,
            request: ctx.request.clone(),
            undo_note: None,
        },
        run_id: ctx.run_id.clone(),
        context_summary: ctx.request.clone(),
        created_at: now,
        expires_at: ttl.expires_at(ApprovalKind::Evaluator, now),
        preconditions: Vec::new(),
    }
}

/// An audit denial by the kernel itself.
fn denial(approval_id: &str, reason: &str, at: chrono::DateTime<chrono::Utc>) -> NewAuditEntry {
    NewAuditEntry {
        approval_id: approval_id.to_string(),
        kind: AuditKind::Denial,
        item: None,
        result: json!({"denied": reason}),
        undo_available: false,
        actor: "iris".into(),
        surface: None,
        at,
    }
}

/// Whether `call_id` already has a result in `transcript`.
fn has_result(transcript: &[Message], call_id: &str) -> bool {
    transcript
        .iter()
        .any(|m| matches!(m, Message::Tool { tool_call_id, .. } if tool_call_id == call_id))
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
