//! Escalation (DESIGN §2 "escalation", §3 step 10, §8 "fail closed"): a [`Judge`] gives every
//! finished turn a [`Verdict`] (`ok`, `escalate`, `reroute`, `clarify`) with a reason, and an
//! [`Escalator`] records it in the curator table ([`CuratorStore`]) and, in
//! [`EscalationMode::Enforce`], acts on `escalate` by re-running the turn.
//!
//! # When escalation may act
//!
//! [`gate`] is checked at the top of every hop (the first turn is hop 0, each re-run one more),
//! before acting, in this order; the first rule that fails is the recorded "why not":
//!
//! 1. a resumed run is never escalated: a person already decided about this exact work
//!    (DESIGN §3 step 10) → [`NotActed::Resumed`];
//! 2. a turn that does not report `effects_executed` is unknown and never acted on (fail
//!    closed, DESIGN §8) → [`NotActed::EffectsUnknown`];
//! 3. a turn that reports any executed effect is never re-run (re-running could repeat a write)
//!    → [`NotActed::EffectsExecuted`];
//! 4. a turn waiting on an approval is never re-run (it would ask the owner twice for the same
//!    work; the card decides) → [`NotActed::AwaitingApproval`];
//! 5. only `escalate` has an action; `ok`, `reroute` and `clarify` are recorded only →
//!    [`NotActed::NoAction`];
//! 6. at most [`Escalator::max_hops`] re-runs per owner turn → [`NotActed::HopLimit`];
//! 7. in [`EscalationMode::Shadow`] nothing ever acts → [`NotActed::Shadow`].
//!
//! # What acting is
//!
//! Escalating re-runs the owner's turn through [`Escalator::runner`] (a [`TurnRunner`]: another
//! agent with a stronger model, or the same agent) in the same conversation, with the owner's
//! request followed by a note saying why the previous answer was judged insufficient
//! ([`escalation_message`]). The re-run's result is judged again at the top of the next hop.
//!
//! Every verdict is recorded, in both modes, before anything acts (write-ahead, as the ledger
//! does): a verdict that cannot be recorded never acts. `acted = true` means the re-run was
//! started; a re-run that then fails leaves the previous result standing
//! ([`EscalationOutcome::error`]).

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ports::{Clock, StoreError};
use crate::wire::{ChatResponse, Effect, RunStatus};

/// A judge's verdict on one finished turn (DESIGN §2 "escalation").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The turn did what was asked.
    Ok,
    /// The turn should be re-run (in `enforce` mode, subject to [`gate`]).
    Escalate,
    /// Another route (tool, plugin, person) should handle it; recorded only.
    Reroute,
    /// The owner should be asked to clarify; recorded only.
    Clarify,
}

impl Verdict {
    /// The stored spelling: `ok`, `escalate`, `reroute`, `clarify`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Escalate => "escalate",
            Verdict::Reroute => "reroute",
            Verdict::Clarify => "clarify",
        }
    }

    /// Parses the stored spelling; `None` for anything else (a corrupt record).
    pub fn parse(text: &str) -> Option<Verdict> {
        match text {
            "ok" => Some(Verdict::Ok),
            "escalate" => Some(Verdict::Escalate),
            "reroute" => Some(Verdict::Reroute),
            "clarify" => Some(Verdict::Clarify),
            _ => None,
        }
    }
}

/// A verdict with the judge's reason (stored with the record).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Judgement {
    /// The verdict.
    pub verdict: Verdict,
    /// Why, in a sentence.
    pub reason: String,
}

impl Judgement {
    /// A judgement from a verdict and a reason.
    pub fn new(verdict: Verdict, reason: impl Into<String>) -> Judgement {
        Judgement {
            verdict,
            reason: reason.into(),
        }
    }
}

/// `IRIS_ESCALATION`: `off` (default: no judge runs, nothing is recorded), `shadow` (every
/// verdict is recorded, nothing acts) or `enforce` (every verdict is recorded; `escalate`
/// re-runs the turn when [`gate`] allows).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EscalationMode {
    /// No escalation at all.
    #[default]
    Off,
    /// Record only.
    Shadow,
    /// Record and act.
    Enforce,
}

impl EscalationMode {
    /// The setting's spelling: `off`, `shadow`, `enforce`.
    pub fn as_str(self) -> &'static str {
        match self {
            EscalationMode::Off => "off",
            EscalationMode::Shadow => "shadow",
            EscalationMode::Enforce => "enforce",
        }
    }

    /// Parses the setting's spelling; `None` for anything else.
    pub fn parse(text: &str) -> Option<EscalationMode> {
        match text {
            "off" => Some(EscalationMode::Off),
            "shadow" => Some(EscalationMode::Shadow),
            "enforce" => Some(EscalationMode::Enforce),
            _ => None,
        }
    }
}

/// Why escalation did not act on a verdict (the record's "why not"). See the module docs for
/// the order in which [`gate`] checks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotActed {
    /// The run continued a paused one (DESIGN §3 step 10).
    Resumed,
    /// The turn did not report `effects_executed` (fail closed, DESIGN §8).
    EffectsUnknown,
    /// The turn reported executed effects; re-running could repeat them.
    EffectsExecuted,
    /// The turn waits on an approval; the owner's answer decides, not a re-run.
    AwaitingApproval,
    /// The verdict has no action (`ok`, `reroute`, `clarify`).
    NoAction,
    /// The hop limit was reached.
    HopLimit,
    /// Shadow mode records only.
    Shadow,
}

impl NotActed {
    /// The stored spelling: `resumed`, `effects_unknown`, `effects_executed`,
    /// `awaiting_approval`, `no_action`, `hop_limit`, `shadow`.
    pub fn as_str(self) -> &'static str {
        match self {
            NotActed::Resumed => "resumed",
            NotActed::EffectsUnknown => "effects_unknown",
            NotActed::EffectsExecuted => "effects_executed",
            NotActed::AwaitingApproval => "awaiting_approval",
            NotActed::NoAction => "no_action",
            NotActed::HopLimit => "hop_limit",
            NotActed::Shadow => "shadow",
        }
    }

    /// Parses the stored spelling; `None` for anything else (a corrupt record).
    pub fn parse(text: &str) -> Option<NotActed> {
        match text {
            "resumed" => Some(NotActed::Resumed),
            "effects_unknown" => Some(NotActed::EffectsUnknown),
            "effects_executed" => Some(NotActed::EffectsExecuted),
            "awaiting_approval" => Some(NotActed::AwaitingApproval),
            "no_action" => Some(NotActed::NoAction),
            "hop_limit" => Some(NotActed::HopLimit),
            "shadow" => Some(NotActed::Shadow),
            _ => None,
        }
    }

    /// The rule in a sentence, for logs and the curator's readers.
    pub fn explain(self) -> &'static str {
        match self {
            NotActed::Resumed => {
                "a resumed run is never escalated: a person already decided (DESIGN §3 step 10)"
            }
            NotActed::EffectsUnknown => {
                "the turn did not report effects_executed; unknown means do not act (DESIGN §8)"
            }
            NotActed::EffectsExecuted => {
                "the turn executed non-read calls; re-running could repeat them"
            }
            NotActed::AwaitingApproval => {
                "the turn waits on the owner's approval; re-running would ask twice"
            }
            NotActed::NoAction => "only `escalate` has an action; this verdict is recorded only",
            NotActed::HopLimit => "the escalation hop limit was reached",
            NotActed::Shadow => "shadow mode records verdicts and never acts",
        }
    }
}

fn assume_resumed() -> bool {
    true
}

/// A finished turn as the judge and the escalation rule see it: the owner's request and the
/// run's result ([`ChatResponse`]'s fields), where `effects_executed` may be missing.
///
/// `effects_executed: None` means the result did not report it (e.g. a result body from a
/// component that does not record effects): unknown, never acted on. A result that does not
/// say whether it `resumed` is read as resumed (never acted on) by [`FinishedTurn::from_json`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FinishedTurn {
    /// What the owner asked this turn (without any escalation note).
    #[serde(default)]
    pub request: String,
    /// The conversation.
    pub conversation_id: String,
    /// The run.
    pub run_id: String,
    /// How the run ended.
    pub status: RunStatus,
    /// What the assistant said.
    pub reply: String,
    /// The row the run waits on, if any.
    #[serde(default)]
    pub approval_id: Option<String>,
    /// DESIGN §2: declared effects of every non-read call the loop invoked, recorded before
    /// each call ran; `None` when the result did not report them.
    #[serde(default)]
    pub effects_executed: Option<Vec<Effect>>,
    /// Whether the run continued a paused one.
    #[serde(default = "assume_resumed")]
    pub resumed: bool,
}

impl FinishedTurn {
    /// From the agent's own result, which always reports its effects.
    pub fn from_response(request: &str, response: &ChatResponse) -> FinishedTurn {
        FinishedTurn {
            request: request.to_string(),
            conversation_id: response.conversation_id.clone(),
            run_id: response.run_id.clone(),
            status: response.status,
            reply: response.reply.clone(),
            approval_id: response.approval_id.clone(),
            effects_executed: Some(response.effects_executed.clone()),
            resumed: response.resumed,
        }
    }

    /// From a `POST /api/chat`-shaped JSON body. A missing or null `effects_executed` is
    /// `None` (unknown); a missing `resumed` is read as `true` (fail closed).
    ///
    /// # Errors
    /// When the body lacks the run's ids, status or reply, or a field has the wrong shape.
    pub fn from_json(request: &str, body: &Value) -> Result<FinishedTurn, serde_json::Error> {
        let mut turn: FinishedTurn = serde_json::from_value(body.clone())?;
        turn.request = request.to_string();
        Ok(turn)
    }

    /// The wire result. `ChatResponse` always carries a list, so an unknown report (`None`)
    /// becomes an empty list here: use this only to answer the client, never to decide again.
    pub fn to_response(&self) -> ChatResponse {
        ChatResponse {
            conversation_id: self.conversation_id.clone(),
            run_id: self.run_id.clone(),
            status: self.status,
            reply: self.reply.clone(),
            approval_id: self.approval_id.clone(),
            effects_executed: self.effects_executed.clone().unwrap_or_default(),
            resumed: self.resumed,
        }
    }
}

/// One row of the curator table: a verdict on one turn, and whether escalation acted on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CuratorRecord {
    /// Record id (UUID text).
    pub id: String,
    /// The judged run.
    pub run_id: String,
    /// Its conversation.
    pub conversation_id: String,
    /// 0 for the owner's turn, n for the n-th re-run.
    pub hop: u32,
    /// The verdict.
    pub verdict: Verdict,
    /// The judge's reason.
    pub reason: String,
    /// `shadow` or `enforce` (nothing is recorded when off).
    pub mode: EscalationMode,
    /// Whether escalation re-ran the turn on this verdict.
    pub acted: bool,
    /// Why not, when it did not act (`None` exactly when `acted`).
    pub not_acted: Option<NotActed>,
    /// When the verdict was recorded.
    pub at: DateTime<Utc>,
}

/// The curator table: every verdict, append-only. `crates/store` implements it on both engines
/// (`curator_verdicts`, migrations `0010_curator.sql`).
#[async_trait]
pub trait CuratorStore: Send + Sync {
    /// Appends one record.
    ///
    /// # Errors
    /// [`StoreError`] (escalation then does not act on that verdict).
    async fn record(&self, record: &CuratorRecord) -> Result<(), StoreError>;

    /// Records of one conversation (or all when `None`), oldest first.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] for a record that does not parse; [`StoreError::Backend`].
    async fn records(
        &self,
        conversation_id: Option<&str>,
    ) -> Result<Vec<CuratorRecord>, StoreError>;
}

/// Gives a finished turn a verdict. A judge that cannot decide (e.g. its own model is down)
/// should answer [`Verdict::Ok`] with a reason saying so: no verdict never acts.
#[async_trait]
pub trait Judge: Send + Sync {
    /// The verdict on `turn`.
    async fn judge(&self, turn: &FinishedTurn) -> Judgement;
}

/// What re-runs a turn: the approvals service's turns ([`crate::approvals::Turns`]) implement
/// it, with the same agent or a second one with a stronger model.
#[async_trait]
pub trait TurnRunner: Send + Sync {
    /// One owner turn in `conversation_id`, written like any turn.
    ///
    /// # Errors
    /// [`StoreError`] when the turn could not be read or written.
    async fn run_turn(
        &self,
        conversation_id: Option<String>,
        message: &str,
    ) -> Result<ChatResponse, StoreError>;
}

/// The escalation rule, checked at the top of every hop before acting (see the module docs for
/// the order). `hop` is how many re-runs already happened for this owner turn.
///
/// # Errors
/// The first rule that forbids acting, as the record's "why not".
pub fn gate(
    turn: &FinishedTurn,
    verdict: Verdict,
    mode: EscalationMode,
    hop: u32,
    max_hops: u32,
) -> Result<(), NotActed> {
    if turn.resumed {
        return Err(NotActed::Resumed);
    }
    match &turn.effects_executed {
        None => return Err(NotActed::EffectsUnknown),
        Some(effects) if !effects.is_empty() => return Err(NotActed::EffectsExecuted),
        Some(_) => {}
    }
    if turn.status == RunStatus::AwaitingApproval || turn.approval_id.is_some() {
        return Err(NotActed::AwaitingApproval);
    }
    if verdict != Verdict::Escalate {
        return Err(NotActed::NoAction);
    }
    if hop >= max_hops {
        return Err(NotActed::HopLimit);
    }
    if mode != EscalationMode::Enforce {
        return Err(NotActed::Shadow);
    }
    Ok(())
}

/// The message a re-run is given: the owner's request, then a note naming why the previous
/// answer was judged insufficient.
pub fn escalation_message(request: &str, reason: &str) -> String {
    format!(
        "{request}\n\n[IRIS escalation: a previous answer to this request was judged \
         insufficient ({reason}). Try again: use the tools, and say plainly what you did.]"
    )
}

/// Why escalation stopped early (the last result still stands).
#[derive(Debug, thiserror::Error)]
pub enum EscalationError {
    /// A verdict could not be recorded, so it was not acted on.
    #[error("the curator could not record a verdict, so escalation did not act: {0}")]
    Record(#[source] StoreError),
    /// The re-run could not happen; the previous result stands.
    #[error("the escalated re-run failed; the previous answer stands: {0}")]
    Rerun(#[source] StoreError),
}

/// What [`Escalator::maybe_escalate`] ends with.
#[derive(Debug)]
pub struct EscalationOutcome {
    /// The turn to answer with: the input, or the last re-run.
    pub turn: FinishedTurn,
    /// Every record written, in order.
    pub records: Vec<CuratorRecord>,
    /// Why escalation stopped early, if it did.
    pub error: Option<EscalationError>,
}

/// Judges finished turns, records every verdict and, in enforce mode, re-runs escalated ones.
pub struct Escalator {
    /// Off, shadow or enforce.
    pub mode: EscalationMode,
    /// Who gives verdicts.
    pub judge: Arc<dyn Judge>,
    /// Where verdicts are recorded.
    pub curator: Arc<dyn CuratorStore>,
    /// Who re-runs an escalated turn (a stronger agent, or the same one).
    pub runner: Arc<dyn TurnRunner>,
    /// Time source for the records.
    pub clock: Arc<dyn Clock>,
    /// At most this many re-runs per owner turn.
    pub max_hops: u32,
}

/// The default hop limit: one re-run per owner turn.
pub const DEFAULT_MAX_HOPS: u32 = 1;

impl Escalator {
    /// Judges `turn`, records the verdict and acts when [`gate`] allows, hop after hop. In
    /// [`EscalationMode::Off`] it returns `turn` untouched without judging or recording.
    /// Never fails the owner's turn: problems are in [`EscalationOutcome::error`] and the last
    /// good result stands.
    pub async fn maybe_escalate(&self, turn: FinishedTurn) -> EscalationOutcome {
        let mut outcome = EscalationOutcome {
            turn,
            records: Vec::new(),
            error: None,
        };
        if self.mode == EscalationMode::Off {
            return outcome;
        }
        let request = outcome.turn.request.clone();
        let mut hop = 0u32;
        loop {
            // The top of every hop: judge, check, record, and only then act.
            let judgement = self.judge.judge(&outcome.turn).await;
            let allowed = gate(
                &outcome.turn,
                judgement.verdict,
                self.mode,
                hop,
                self.max_hops,
            );
            let record = CuratorRecord {
                id: uuid::Uuid::new_v4().to_string(),
                run_id: outcome.turn.run_id.clone(),
                conversation_id: outcome.turn.conversation_id.clone(),
                hop,
                verdict: judgement.verdict,
                reason: judgement.reason.clone(),
                mode: self.mode,
                acted: allowed.is_ok(),
                not_acted: allowed.err(),
                at: self.clock.now(),
            };
            if let Err(e) = self.curator.record(&record).await {
                outcome.error = Some(EscalationError::Record(e));
                return outcome;
            }
            outcome.records.push(record);
            if allowed.is_err() {
                return outcome;
            }
            let message = escalation_message(&request, &judgement.reason);
            match self
                .runner
                .run_turn(Some(outcome.turn.conversation_id.clone()), &message)
                .await
            {
                Ok(response) => {
                    outcome.turn = FinishedTurn::from_response(&request, &response);
                    hop += 1;
                }
                Err(e) => {
                    outcome.error = Some(EscalationError::Rerun(e));
                    return outcome;
                }
            }
        }
    }
}

/// Phrases that say the assistant could not do what was asked (lower case, straight quotes).
const CANNOT: &[&str] = &[
    "i can't",
    "i cannot",
    "i can not",
    "i couldn't",
    "i could not",
    "i'm unable",
    "i am unable",
    "i'm not able",
    "i am not able",
    "i don't know how",
    "i do not know how",
];

/// A simple rule-based judge for tests and the demo:
/// - a run waiting on an approval or refused by governance: `ok` (the owner or a rule decides);
/// - a failed run: `escalate`;
/// - an empty reply, or one that says it cannot do it ("I can't", "I'm unable", …): `escalate`;
/// - a reply that ends with a question: `clarify`;
/// - otherwise `ok`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RuleJudge;

impl RuleJudge {
    /// The verdict, without I/O.
    pub fn verdict(turn: &FinishedTurn) -> Judgement {
        match turn.status {
            RunStatus::AwaitingApproval => {
                return Judgement::new(Verdict::Ok, "the run waits on the owner's approval")
            }
            RunStatus::Refused => {
                return Judgement::new(Verdict::Ok, "governance refused a call; a re-run would too")
            }
            RunStatus::Failed => return Judgement::new(Verdict::Escalate, "the run failed"),
            RunStatus::Done => {}
        }
        let reply = turn.reply.trim().to_lowercase().replace('\u{2019}', "'");
        if reply.is_empty() {
            return Judgement::new(Verdict::Escalate, "the reply is empty");
        }
        if let Some(phrase) = CANNOT.iter().find(|p| reply.contains(*p)) {
            return Judgement::new(
                Verdict::Escalate,
                format!("the reply says it cannot do it (\"{phrase}\")"),
            );
        }
        if reply.ends_with('?') {
            return Judgement::new(Verdict::Clarify, "the reply asks the owner a question");
        }
        Judgement::new(Verdict::Ok, "the reply answers the request")
    }
}

#[async_trait]
impl Judge for RuleJudge {
    async fn judge(&self, turn: &FinishedTurn) -> Judgement {
        RuleJudge::verdict(turn)
    }
}
