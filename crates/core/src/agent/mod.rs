//! The agent loop (DESIGN §3): a ReAct loop over the [`Model`] trait that resolves every tool
//! name before any check, refuses gated calls it cannot govern, runs PreToolUse hooks, and ends
//! on a halt when a hook pins a call or a PostStep evaluator asks for review.
//!
//! The loop only proposes: it never writes the queue, the ledger or the audit, and never
//! executes a pinned call. A run ends with a [`RunEnd`]: the transcript, the reply, and, when it
//! halted, the pinned row ([`Halt`]). The approvals service ([`crate::approvals`]) writes that
//! end in one commit and, once the owner answers, executes the pinned call from the row and
//! continues the run through [`Agent::run`] with the call's result in place.

pub mod transcript;

use std::sync::Arc;

use serde_json::{json, Value};

use crate::approval::Ttl;
use crate::canonical::{call_hash, canonical_json};
use crate::evaluator::{ExecutedStep, PostStepEvaluator, Verdict};
use crate::hooks::{
    ConfirmOnceHook, DestructiveApprovalHook, HookDecision, PendingCall, PreToolUseHook,
};
use crate::manifest::ToolSpec;
use crate::model::{Message, Model, ToolCall};
use crate::plugin::{CallContext, ItemOutcome};
use crate::ports::{ActionRecord, Checkpoint, Clock, NewApproval};
use crate::provenance::Provenance;
use crate::toolbox::Toolbox;
use crate::wire::{ApprovalKind, Card, ChatResponse, Effect, RunStatus};

pub use transcript::{
    as_object, continue_notice, continued_call_id, has_result, mint_call_ids, place_result,
    protocol_errors, tool_result, with_all_results, PlacedResult, TranscriptChange,
};

/// The observation every later call id of a halted step gets (DESIGN §3 step 4).
pub const NOT_RUN_WAITING: &str = "not run: waiting for approval of an earlier call";

/// The observation every later call id of a step gets when an evaluator halted the run after an
/// earlier call of that step.
pub const NOT_RUN_PAUSED: &str =
    "not run: the run paused for the owner's review after an earlier call of this step";

/// The default instructions for the model.
pub const SYSTEM_PROMPT: &str = "You are IRIS, the owner's mail assistant. Use the tools to find \
emails by id before acting on them. Destructive actions wait for the owner's approval; never \
claim something was changed unless a tool result says so.";

/// Whether runs can pause on an approval (DESIGN §3 step 2).
#[derive(Clone)]
pub enum Pausing {
    /// Approved-per-call calls are pinned into rows that live `ttl`, stamped by `clock`.
    Governed {
        /// Answerable windows.
        ttl: Ttl,
        /// Time source for the rows' created/expires.
        clock: Arc<dyn Clock>,
        /// Which cards need the owner's passkey (`IRIS_PASSKEY_REQUIRED`).
        passkeys: crate::passkey::PasskeyPolicy,
    },
    /// Approved-per-call calls are refused; the sentence says why (approvals switched off, no
    /// queue to pause on).
    Ungoverned(String),
}

/// A card the run halted on: the pinned row and the call that waits for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Halt {
    /// The row's request terms (not yet written).
    pub approval: NewApproval,
    /// The halted call as the model wrote it (its id gets the pinned call's result).
    pub pending_call: ToolCall,
}

/// How a run ended (not yet written anywhere).
#[derive(Debug, Clone, PartialEq)]
pub struct RunEnd {
    /// The turn.
    pub ctx: CallContext,
    /// The transcript after the run; when halted, it ends with the halted step, every other
    /// call of which has its result.
    pub transcript: Vec<Message>,
    /// How the run ended.
    pub status: RunStatus,
    /// What the assistant says to the owner.
    pub reply: String,
    /// The card, when the run halted.
    pub halt: Option<Halt>,
    /// Declared effects of every non-read call the loop invoked.
    pub effects: Vec<Effect>,
    /// Every call of an undo tool (a tool some destructive tool declares as its `undo`) that
    /// ran in this run, with its per-item outcomes: what the service links to the cards whose
    /// executed items it reversed (DESIGN §9 "Undo from the card").
    pub undo_runs: Vec<UndoRun>,
    /// Every write that ran without a card because its manifest allows it (a write with a
    /// `reply_undo`, e.g. mail's `trash_category`): audited with the run's id when the run's
    /// end is written (docs/liveness.md "writes without a card").
    pub actions: Vec<ActionRecord>,
    /// Whether the run continued a paused one.
    pub resumed: bool,
    /// Why the model could not be reached, when that ended the run (a resume that ends so is
    /// failed and retryable).
    pub model_error: Option<String>,
}

impl RunEnd {
    /// The run as `POST /api/chat` answers it.
    pub fn response(&self) -> ChatResponse {
        ChatResponse {
            conversation_id: self.ctx.conversation_id.clone(),
            run_id: self.ctx.run_id.clone(),
            status: self.status,
            reply: self.reply.clone(),
            approval_id: self.halt.as_ref().map(|h| h.approval.id.clone()),
            effects_executed: self.effects.clone(),
            resumed: self.resumed,
        }
    }

    /// The checkpoint of a halted run (DESIGN §2 "checkpoint"), `None` when it did not halt.
    pub fn checkpoint(&self) -> Option<Checkpoint> {
        let halt = self.halt.as_ref()?;
        Some(Checkpoint {
            id: uuid::Uuid::new_v4().to_string(),
            run_id: self.ctx.run_id.clone(),
            conversation_id: self.ctx.conversation_id.clone(),
            request: self.ctx.request.clone(),
            messages: self.transcript.clone(),
            pending_call: halt.pending_call.clone(),
            approval_id: halt.approval.id.clone(),
            effects_executed: self.effects.clone(),
        })
    }
}

/// One run of an undo tool from the chat (e.g. "undo that"), as it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct UndoRun {
    /// The undo tool.
    pub tool: String,
    /// Its normalised arguments.
    pub args: Value,
    /// Its result (the observation).
    pub result: Value,
    /// Its per-item outcomes.
    pub items: Vec<ItemOutcome>,
}

/// What the calls of a run did besides answering: their declared effects (recorded before each
/// call runs) and the undo tools that ran.
struct RunLog {
    effects: Vec<Effect>,
    undo_runs: Vec<UndoRun>,
    actions: Vec<ActionRecord>,
}

/// What the loop does with one call.
enum Dispatch {
    /// The call was answered without running (unknown tool, invalid arguments, a deny).
    Observation(Value),
    /// The call ran (successfully or not).
    Executed {
        observation: Value,
        spec: Box<ToolSpec>,
        args: Value,
    },
    /// A gated call was refused because it cannot be governed; nothing ran.
    Refused(Value),
    /// The call is pinned into this row and the run halts on it.
    Halt(Box<NewApproval>),
}

/// The agent: model, tools, hooks and evaluators.
pub struct Agent {
    model: Arc<dyn Model>,
    toolbox: Arc<Toolbox>,
    pausing: Pausing,
    hooks: Vec<Arc<dyn PreToolUseHook>>,
    evaluators: Vec<Arc<dyn PostStepEvaluator>>,
    system_prompt: String,
    max_steps: usize,
}

impl Agent {
    /// Builds an agent. When `pausing` is governed, a [`DestructiveApprovalHook`] (priority 50)
    /// pins approved-per-call calls; the confirm-once advice hook is always installed;
    /// `extra_hooks` join them in priority order.
    pub fn new(
        model: Arc<dyn Model>,
        toolbox: Arc<Toolbox>,
        pausing: Pausing,
        extra_hooks: Vec<Arc<dyn PreToolUseHook>>,
    ) -> Agent {
        let mut hooks = extra_hooks;
        hooks.push(Arc::new(ConfirmOnceHook));
        if let Pausing::Governed {
            ttl,
            clock,
            passkeys,
        } = &pausing
        {
            hooks.push(Arc::new(DestructiveApprovalHook {
                clock: clock.clone(),
                ttl: *ttl,
                passkeys: *passkeys,
            }));
        }
        hooks.sort_by_key(|h| h.priority());
        Agent {
            model,
            toolbox,
            pausing,
            hooks,
            evaluators: Vec::new(),
            system_prompt: SYSTEM_PROMPT.to_string(),
            max_steps: 8,
        }
    }

    /// Adds PostStep evaluators (DESIGN §2 kind `evaluator`), run in the given order after each
    /// call the loop executes; the first halt wins.
    pub fn with_evaluators(mut self, evaluators: Vec<Arc<dyn PostStepEvaluator>>) -> Agent {
        self.evaluators.extend(evaluators);
        self
    }

    /// The loaded tools.
    pub fn toolbox(&self) -> &Arc<Toolbox> {
        &self.toolbox
    }

    /// The transcript a new turn starts from: the conversation so far (a system prompt first
    /// when it is new) and the owner's message.
    pub fn opening(&self, mut transcript: Vec<Message>, message: &str) -> Vec<Message> {
        if transcript.is_empty() {
            transcript.push(Message::System {
                content: self.system_prompt.clone(),
            });
        }
        transcript.push(Message::User {
            content: message.to_string(),
        });
        transcript
    }

    /// Why an approved-per-call call cannot be governed now, or `None` when it can.
    fn ungovernable(&self) -> Option<&str> {
        match &self.pausing {
            Pausing::Governed { .. } => None,
            Pausing::Ungoverned(why) => Some(why),
        }
    }

    /// Runs the loop from a transcript whose last message awaits the model, until the model
    /// answers, a call halts, or the step limit. Never fails: a model that cannot be reached
    /// ends the run `failed` with [`RunEnd::model_error`].
    pub async fn run(
        &self,
        ctx: CallContext,
        mut transcript: Vec<Message>,
        effects: Vec<Effect>,
        resumed: bool,
    ) -> RunEnd {
        let tools = self.toolbox.offered();
        let mut refused = false;
        let mut effects = RunLog {
            effects,
            undo_runs: Vec::new(),
            actions: Vec::new(),
        };
        let end = |transcript, status, reply, halt, log: RunLog, model_error| RunEnd {
            ctx: ctx.clone(),
            transcript,
            status,
            reply,
            halt,
            effects: log.effects,
            undo_runs: log.undo_runs,
            actions: log.actions,
            resumed,
            model_error,
        };
        for _ in 0..self.max_steps {
            let mut turn = match self
                .model
                .complete(&with_all_results(&transcript), &tools)
                .await
            {
                Ok(t) => t,
                Err(e) => {
                    let reply =
                        format!("I could not reach the model ({e}). Nothing further was done.");
                    return end(
                        transcript,
                        RunStatus::Failed,
                        reply,
                        None,
                        effects,
                        Some(e.to_string()),
                    );
                }
            };
            mint_call_ids(&mut turn.tool_calls, &transcript);
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
                return end(transcript, status, reply, None, effects, None);
            }
            for (index, call) in turn.tool_calls.iter().enumerate() {
                match self.dispatch(call, &ctx, &transcript, &mut effects).await {
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
                            later_calls(
                                &mut transcript,
                                &turn.tool_calls[index + 1..],
                                NOT_RUN_PAUSED,
                            );
                            let tool = spec.name.clone();
                            let Pausing::Governed { ttl, clock, .. } = &self.pausing else {
                                let why = self.ungovernable().unwrap_or_default();
                                let reply = format!(
                                    "I stopped after `{tool}`: {reason}. It cannot pause for your review ({why}), so this run ends here; nothing more was done."
                                );
                                return end(
                                    transcript,
                                    RunStatus::Refused,
                                    reply,
                                    None,
                                    effects,
                                    None,
                                );
                            };
                            let row = evaluator_row(
                                &ctx,
                                &spec,
                                &args,
                                &observation,
                                reason.clone(),
                                clock.now(),
                                *ttl,
                            );
                            let reply = format!(
                                "I paused after `{tool}`: {reason}. Nothing more will run until you review it on Activity: /activity/{}",
                                row.id
                            );
                            let halt = Halt {
                                approval: row,
                                pending_call: call.clone(),
                            };
                            return end(
                                transcript,
                                RunStatus::AwaitingApproval,
                                reply,
                                Some(halt),
                                effects,
                                None,
                            );
                        }
                    }
                    Dispatch::Halt(row) => {
                        later_calls(
                            &mut transcript,
                            &turn.tool_calls[index + 1..],
                            NOT_RUN_WAITING,
                        );
                        // The card's title says what and for whom ("send an email to Anna
                        // Weber"); the button's words alone may not ("send email").
                        let reply = format!(
                            "I need your approval to {}. Nothing has been changed yet. Review it on Activity: /activity/{}",
                            lower_first(&row.card.title),
                            row.id
                        );
                        let halt = Halt {
                            approval: *row,
                            pending_call: call.clone(),
                        };
                        return end(
                            transcript,
                            RunStatus::AwaitingApproval,
                            reply,
                            Some(halt),
                            effects,
                            None,
                        );
                    }
                }
            }
        }
        let reply = "I stopped after too many steps without an answer. Nothing further was done."
            .to_string();
        end(transcript, RunStatus::Failed, reply, None, effects, None)
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

    /// Resolves, checks and (for ungated tools) runs one call of the turn that `transcript`
    /// holds so far.
    async fn dispatch(
        &self,
        call: &ToolCall,
        ctx: &CallContext,
        transcript: &[Message],
        log: &mut RunLog,
    ) -> Dispatch {
        // DESIGN §3 step 2: resolve aliases and near misses before any check.
        let spec = match self.toolbox.registry().resolve(&call.name) {
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
        if let Some(why) = self.toolbox.unavailable(spec) {
            return Dispatch::Observation(json!({
                "status": "error",
                "message": format!("`{}` cannot run here: {why}. It was not run; nothing was changed.", spec.name),
            }));
        }
        let plugin = self
            .toolbox
            .plugin(spec)
            .expect("unavailable() is None only when a plugin provides the tool");
        let args = match self.toolbox.validate(spec, &call.arguments) {
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
        // What led to a call the owner will be asked about, frozen with its card
        // (docs/adr/0123-how-a-card-came-about.md); other calls need none.
        let provenance = if spec.approved_per_call() {
            Provenance::of_turn(&ctx.request, transcript, &self.toolbox)
        } else {
            Provenance::default()
        };
        let pending = PendingCall {
            spec,
            args: &args,
            plugin,
            ctx,
            provenance: &provenance,
        };
        for hook in &self.hooks {
            match hook.pre_tool_use(&pending).await {
                HookDecision::Allow | HookDecision::RequireApproval(None) => {}
                HookDecision::Deny(reason) => {
                    return Dispatch::Observation(json!({"status": "denied", "message": reason}))
                }
                HookDecision::RequireApproval(Some(row)) => return Dispatch::Halt(row),
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
            log.effects.push(spec.effect);
        }
        let observation = match plugin.execute(&spec.name, &args, ctx).await {
            Ok(out) => {
                let observation = as_object(out.result);
                if let Some(undo) = &spec.reply_undo {
                    log.actions.push(ActionRecord {
                        run_id: ctx.run_id.clone(),
                        tool: spec.name.clone(),
                        conversation_id: ctx.conversation_id.clone(),
                        result: observation.clone(),
                        undo_tool: Some(undo.clone()),
                    });
                }
                if !out.items.is_empty() && self.toolbox.registry().is_undo_tool(&spec.name) {
                    log.undo_runs.push(UndoRun {
                        tool: spec.name.clone(),
                        args: args.clone(),
                        result: observation.clone(),
                        items: out.items,
                    });
                }
                observation
            }
            Err(e) => json!({"status": "error", "message": e.to_string()}),
        };
        Dispatch::Executed {
            observation,
            spec: Box::new(spec.clone()),
            args,
        }
    }
}

/// Gives every later call of a halted step its one result (DESIGN §3 step 4).
fn later_calls(transcript: &mut Vec<Message>, later: &[ToolCall], message: &str) {
    for call in later {
        transcript.push(tool_result(
            &call.id,
            json!({"status": "not_run", "message": message}),
        ));
    }
}

/// Longest observation summary on an evaluator card, in characters.
const SUMMARY_CHARS: usize = 160;

/// The `evaluator` row of a halt (DESIGN §2 kind `evaluator`): pins the call that already ran
/// (tool and normalised arguments, hashed like any row) and **no items**; the card's title is
/// the reason, its action "Continue after TOOL", its effect the tool's, and its one line a
/// summary of the result. Lapses after the evaluator TTL.
fn evaluator_row(
    ctx: &CallContext,
    spec: &ToolSpec,
    args: &Value,
    observation: &Value,
    reason: String,
    now: chrono::DateTime<chrono::Utc>,
    ttl: Ttl,
) -> NewApproval {
    let tool = &spec.name;
    let result = observation.to_string();
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
        args: args.clone(),
        args_canonical: canonical_json(args),
        call_hash: call_hash(tool, args),
        items: Vec::new(),
        card: Card {
            title: reason,
            action: format!("Continue after {tool}"),
            effect: spec.effect,
            lines: vec![format!("{tool} returned {summary}")],
            undo_tool: None,
            undo_window_days: None,
            request: ctx.request.clone(),
            undo_note: None,
            undo_action: None,
            preview: Vec::new(),
            overlaps: Vec::new(),
            items_arg: None,
            editable: Vec::new(),
            trail: Vec::new(),
            flags: Vec::new(),
        },
        run_id: ctx.run_id.clone(),
        context_summary: ctx.request.clone(),
        created_at: now,
        expires_at: ttl.expires_at(ApprovalKind::Evaluator, now),
        preconditions: Vec::new(),
        passkey_required: false,
        requested_by: None,
    }
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}
