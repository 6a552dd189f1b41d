//! Wire types: the JSON shapes of DESIGN §7, shared by the server, the CLI and the browser.
//!
//! These compile to `wasm32-unknown-unknown` (no kernel dependencies). Field names are the
//! external contract: checks outside the code rely on them, so renaming one is a contract change.
//! With the `openapi` feature (the server's), each also derives `utoipa::ToSchema` for the
//! OpenAPI document at `GET /api/openapi.json`; the browser build never enables it. Times are
//! RFC 3339 text both ways, read back by `rfc3339` (chrono's strict reader); for people they are
//! written one way, by `when.rs` ([`when`]).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

mod answer;
mod audit;
mod card;
mod decided;
mod device;
mod located;
mod plugin;
pub mod rfc3339;
#[cfg(any(test, feature = "testing"))]
mod sample;
mod surface;
mod undo;
mod when;

pub use answer::{Assertion, ReasonRequest, RespondRequest};
pub use audit::{AuditEntry, AuditKind, AuditList};
/// `text` cut to at most `max` characters, ending in "…" when cut: how every surface shortens a
/// card's text (the server's trail and flags, the app, Telegram).
pub fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

pub use card::{Card, CardFlag, CardOverlap, OverlapState, RunningJob};
pub use decided::{DecidedCall, EditReview};
pub use device::{DeviceInfo, DeviceScope, PairingOffer};
pub use located::{Located, LocatedItem};
pub use plugin::{PluginInfo, PluginList, PluginTool, ServerHints, ToolGate};
pub use surface::Surface;
pub use undo::{UndoRecord, UndoState};
pub use when::{when, when_utc};

/// What a tool does to the owner's data (DESIGN §2 "effect").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Only reads.
    Read,
    /// Changes or sends something, without removing the owner's data.
    Write,
    /// Removes or overwrites the owner's data.
    Destructive,
}

impl Effect {
    /// The manifest spelling: `read`, `write` or `destructive`.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Read => "read",
            Effect::Write => "write",
            Effect::Destructive => "destructive",
        }
    }
}

/// Why a row exists (DESIGN §2 "kind").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ApprovalKind {
    /// A destructive tool call.
    Destructive,
    /// A write tool with `approval: pinned` (the card reads "acts for you").
    PinnedWrite,
    /// A PostStep evaluator halt; pins no items.
    Evaluator,
}

impl ApprovalKind {
    /// The stored spelling (`destructive`, `pinned_write`, `evaluator`).
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalKind::Destructive => "destructive",
            ApprovalKind::PinnedWrite => "pinned_write",
            ApprovalKind::Evaluator => "evaluator",
        }
    }

    /// Parses the stored spelling; `None` for anything else (a corrupt row fails closed).
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "destructive" => Some(ApprovalKind::Destructive),
            "pinned_write" => Some(ApprovalKind::PinnedWrite),
            "evaluator" => Some(ApprovalKind::Evaluator),
            _ => None,
        }
    }
}

/// Where a row stands in its life (DESIGN §3 steps 5 and 9). Only `pending` can move, once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// Waiting for the owner.
    Pending,
    /// The owner approved; the pinned call may execute once.
    Approved,
    /// The owner rejected; nothing executes.
    Rejected,
    /// Nobody answered within the TTL; nothing executes.
    Expired,
}

impl ApprovalStatus {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Pending => "pending",
            ApprovalStatus::Approved => "approved",
            ApprovalStatus::Rejected => "rejected",
            ApprovalStatus::Expired => "expired",
        }
    }

    /// Parses the stored spelling; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "pending" => Some(ApprovalStatus::Pending),
            "approved" => Some(ApprovalStatus::Approved),
            "rejected" => Some(ApprovalStatus::Rejected),
            "expired" => Some(ApprovalStatus::Expired),
            _ => None,
        }
    }
}

/// What the side-effect ledger knows about the pinned call (DESIGN §2 "side-effect ledger").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Execution {
    /// Nothing has been attempted.
    None,
    /// Written before the side effect; no outcome yet.
    Executing,
    /// The side effect ran; the result is recorded.
    Executed,
    /// The side effect was attempted and failed, or was refused at claim time.
    Failed,
    /// `executing` without an outcome after a crash: it may or may not have run. Never retried.
    Unknown,
}

impl Execution {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Execution::None => "none",
            Execution::Executing => "executing",
            Execution::Executed => "executed",
            Execution::Failed => "failed",
            Execution::Unknown => "unknown",
        }
    }

    /// Whether the ledger holds the call's outcome (executed, failed or unknown): it will not
    /// change any more (DESIGN §8: a pinned call runs at most once, an unknown is never
    /// retried). `none` and `executing` are still on their way.
    pub fn has_outcome(self) -> bool {
        match self {
            Execution::None | Execution::Executing => false,
            Execution::Executed | Execution::Failed | Execution::Unknown => true,
        }
    }

    /// Parses the stored spelling; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "none" => Some(Execution::None),
            "executing" => Some(Execution::Executing),
            "executed" => Some(Execution::Executed),
            "failed" => Some(Execution::Failed),
            "unknown" => Some(Execution::Unknown),
            _ => None,
        }
    }
}

/// The owner's answer (DESIGN §7 respond body `decision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run exactly the pinned call, once.
    Approve,
    /// Run nothing.
    Reject,
}

/// One approval row as the API returns it (DESIGN §7 "Approval").
///
/// `result` and `resume_error` extend the contract: the outcome the card shows after execution
/// (ledger result) and why a resume failed, if it did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Approval {
    /// Row id (UUID text).
    pub id: String,
    /// Why the row exists.
    pub kind: ApprovalKind,
    /// Life-cycle state.
    pub status: ApprovalStatus,
    /// Canonical tool name the row pins.
    pub tool: String,
    /// The pinned arguments (their canonical JSON is what `call_hash` covers).
    pub args: Value,
    /// Hex SHA-256 of `tool` + NUL + canonical args.
    pub call_hash: String,
    /// The things the call acts on (e.g. email ids), in the call's order.
    pub items: Vec<String>,
    /// What the owner sees.
    pub card: Card,
    /// The paused run this row belongs to.
    pub run_id: String,
    /// When the row was written.
    #[serde(deserialize_with = "rfc3339::deserialize")]
    pub created_at: DateTime<Utc>,
    /// After this instant the row can only lapse.
    #[serde(deserialize_with = "rfc3339::deserialize")]
    pub expires_at: DateTime<Utc>,
    /// When the answer was stored.
    #[serde(default, deserialize_with = "rfc3339::deserialize_option")]
    pub responded_at: Option<DateTime<Utc>>,
    /// Who answered (device name).
    pub responded_by: Option<String>,
    /// Through which surface (`web`, `cli`, `api`, `telegram`, `phone`, `sweep`).
    pub surface: Option<String>,
    /// The owner's reason, if given.
    pub reason: Option<String>,
    /// What the side-effect ledger knows.
    pub execution: Execution,
    /// The executed call's result (from the ledger), once there is one.
    #[serde(default)]
    pub result: Option<Value>,
    /// Why resuming the run failed, if it did (shown on the card).
    #[serde(default)]
    pub resume_error: Option<String>,
    /// The undo run from the card, once asked for (DESIGN §9 "Undo from the card"); `None`
    /// while nobody has asked.
    #[serde(default)]
    pub undo: Option<UndoRecord>,
    /// Whether approving needs the owner's passkey, pinned when the row was written
    /// (`IRIS_PASSKEY_REQUIRED`; ADR-0118 decision 4). Rejecting never does.
    #[serde(default)]
    pub passkey_required: bool,
    /// The agent device that requested the call through IRIS's MCP gateway; `None` for IRIS's
    /// own assistant. An `agent` device reads only its own rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
    /// While the card's job runs (its call executing, or the run continuing after the
    /// answer): which server holds it and since when (docs/liveness.md "who holds a running
    /// job"). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<RunningJob>,
    /// The undo button's words for the items still to undo ("Restore 3 emails") once an undo
    /// from the chat acted on some of this card's items (docs/liveness.md "undo that"); absent
    /// until then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo_left: Option<String>,
    /// For an `unknown` call: where its items are now, when its plugin could tell after the
    /// takeover ([`Located`]); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub located: Option<Located>,
    /// After an approval of some of the card's items: the indices into `items` the owner kept,
    /// ascending (docs/adr/0122-shaping-a-call.md). Absent for a full approval, a rejection
    /// and a card not answered yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_items: Option<Vec<u32>>,
    /// The call that runs, whenever it differs from the request's `tool`/`args`/`call_hash`
    /// ([`DecidedCall`]); written once with the decision. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_call: Option<DecidedCall>,
    /// After an approval of an edited call: the arguments the owner changed (the call that ran
    /// is `decided_call`; docs/adr/0122-shaping-a-call.md). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_fields: Option<Vec<String>>,
}

/// The paused call's observation when the ledger says `unknown` (a crash between `executing`
/// and the outcome): never run again (DESIGN §2 side-effect ledger).
pub const UNKNOWN_OUTCOME: &str = "unknown: it may or may not have run; it will not be run again";

/// The key of an executed call's result under which the executor keeps the undo button's words
/// for what actually ran (e.g. "Restore 3 emails").
pub const UNDO_ACTION: &str = "undo_action";

impl Approval {
    /// The lapse rule: whether this card, still `pending`, can no longer be answered at `now`,
    /// the unit's time (the database's, read in the same unit as the row where it matters). The
    /// expiry instant itself counts as lapsed. The store spells the same rule in SQL
    /// (`iris_store`'s `rows::lapsed_sql` / `answerable_sql`); an answered card never lapses.
    pub fn lapsed_at(&self, now: DateTime<Utc>) -> bool {
        self.status == ApprovalStatus::Pending && self.expires_at <= now
    }

    /// Who asked for the call and in whose words, as every surface labels the card's request:
    /// `("You asked", request)` for IRIS's own assistant (the owner's words); for an agent
    /// through the MCP gateway `("NAME asks", reason)`, the reason the agent gave (never shown
    /// as the owner's words), or "(no reason given)".
    pub fn asked(&self) -> (String, String) {
        match &self.requested_by {
            None => ("You asked".into(), self.card.request.clone()),
            Some(agent) if self.card.request.trim().is_empty() => {
                (format!("{agent} asks"), "(no reason given)".into())
            }
            Some(agent) => (format!("{agent} asks"), self.card.request.clone()),
        }
    }

    /// Until when the card's undo stays possible: `undo_window_days` after the answer that let
    /// the call run (it executes right after). `None` when the card declares no window.
    pub fn undo_until(&self) -> Option<DateTime<Utc>> {
        let days = self.card.undo_window_days?;
        let from = self.responded_at.unwrap_or(self.created_at);
        Some(from + chrono::Duration::days(i64::from(days)))
    }

    /// The undo button's words: for what is left when an undo from the chat acted on some
    /// items (`undo_left`), else those for what an unknown call's plugin found it can put back
    /// ([`Located::undo_action`]), else those the execution recorded for what actually ran (its
    /// result's [`UNDO_ACTION`]), else the card's `undo_action`, else "Undo".
    pub fn undo_label(&self) -> String {
        if let Some(left) = &self.undo_left {
            return left.clone();
        }
        if let Some(action) = self.located.as_ref().and_then(|l| l.undo_action.clone()) {
            return action;
        }
        self.result
            .as_ref()
            .and_then(|r| r.get(UNDO_ACTION))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| self.card.undo_action.clone())
            .unwrap_or_else(|| "Undo".to_string())
    }

    /// Whether the card offers its undo at `now`: approved, its call executed (or `unknown`
    /// with items its plugin found it can put back: [`Located::undo_action`]), its tool
    /// declares an undo, nobody asked for it yet, and its window is open. (The plugin may still
    /// find nothing to undo, e.g. when no item ran; the service then says so.)
    pub fn undo_offered(&self, now: DateTime<Utc>) -> bool {
        let ran = match self.execution {
            Execution::Executed => true,
            Execution::Unknown => self
                .located
                .as_ref()
                .is_some_and(|l| l.undo_action.is_some()),
            _ => false,
        };
        self.status == ApprovalStatus::Approved
            && ran
            && self.card.undo_tool.is_some()
            && self.undo.is_none()
            && self.undo_until().is_none_or(|until| now < until)
    }
}

/// The longest chat message accepted, in characters (a request is shown on every card it
/// makes). Every chat surface refuses a longer one (400); the web app counts down to it.
pub const MAX_MESSAGE_CHARS: usize = 4000;

/// `GET /governance/approvals` body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApprovalList {
    /// The page's rows, newest first (`created_at`, then id).
    pub approvals: Vec<Approval>,
    /// The opaque cursor of the next page (pass it as `before=`), or `null` at the end.
    #[serde(default)]
    pub next: Option<String>,
}

/// The `code` of a 403 refusing an approve that needs the owner's passkey: surfaces branch on
/// it (a 403 without it means a read device).
pub const PASSKEY_REQUIRED: &str = "passkey_required";

/// `POST /governance/approvals/{id}/respond` 200 body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RespondResponse {
    /// The row after the answer was stored.
    pub approval: Approval,
}

/// `POST /governance/approvals/{id}/resume` 200 body: the owner's retry of a failed resume.
/// The pinned call is never executed again: the run continues from the ledger's
/// recorded result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ResumeResponse {
    /// The row after the retry (`resume_error` cleared, or set again if the retry failed).
    pub approval: Approval,
    /// The resumed run's result (its reply is also published as `run.message`).
    pub run: ChatResponse,
}

/// `POST /api/chat` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChatRequest {
    /// What the owner says.
    pub message: String,
    /// Continue this conversation; a new one starts when absent.
    #[serde(default)]
    pub conversation_id: Option<String>,
}

/// How a run ended (DESIGN §7 chat `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The model gave its final answer.
    Done,
    /// A call waits for the owner; `approval_id` names the row.
    AwaitingApproval,
    /// A gated call was refused (no governance, cannot pause); nothing changed.
    Refused,
    /// The run broke (model unreachable, step limit); nothing more ran.
    Failed,
}

/// `POST /api/chat` 200 body, also the result of a resumed run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChatResponse {
    /// The conversation this turn belongs to.
    pub conversation_id: String,
    /// This run's id.
    pub run_id: String,
    /// How the run ended.
    pub status: RunStatus,
    /// What the assistant says to the owner.
    pub reply: String,
    /// The row the run waits on, when `status` is `awaiting_approval`.
    pub approval_id: Option<String>,
    /// Declared effects of every non-read call the loop invoked, recorded before each call ran.
    pub effects_executed: Vec<Effect>,
    /// Whether this run continued a paused one.
    pub resumed: bool,
}

/// One line of a conversation as the app shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChatLine {
    /// `owner` or `assistant`.
    pub role: String,
    /// The words.
    pub text: String,
    /// The row a halt message links to, if any.
    pub approval_id: Option<String>,
    /// That row's status when the conversation was read (absent on lines not read from the
    /// store): the app marks a halt message only while its card waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_status: Option<ApprovalStatus>,
}

/// `GET /api/conversations/{id}` body: what was said, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Conversation {
    /// The conversation id.
    pub id: String,
    /// Owner and assistant lines (tool traffic is not shown).
    pub lines: Vec<ChatLine>,
}

/// The error body every 4xx/5xx carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    /// A sentence naming the thing and the rule.
    pub error: String,
    /// For 409: the row as it stands (who decided, where, when); for a 403
    /// [`PASSKEY_REQUIRED`], the card.
    #[serde(default)]
    pub approval: Option<Approval>,
    /// A machine-readable reason where a status alone is ambiguous: [`PASSKEY_REQUIRED`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// A notice the channel router fans out (SSE on `GET /api/events`; DESIGN §2 "channel router").
/// Serialised with `event` as the SSE event name and the rest as its JSON data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "event", content = "data")]
pub enum Event {
    /// A new row waits for the owner.
    #[serde(rename = "approval.requested")]
    ApprovalRequested(Approval),
    /// A row was answered (or its execution changed).
    #[serde(rename = "approval.responded")]
    ApprovalResponded(Approval),
    /// A row lapsed unanswered.
    #[serde(rename = "approval.lapsed")]
    ApprovalLapsed(Approval),
    /// The assistant said something outside a request (a resumed run's reply).
    #[serde(rename = "run.message")]
    RunMessage(RunMessage),
}

impl Event {
    /// The SSE event name (`approval.requested`, …).
    pub fn name(&self) -> &'static str {
        match self {
            Event::ApprovalRequested(_) => "approval.requested",
            Event::ApprovalResponded(_) => "approval.responded",
            Event::ApprovalLapsed(_) => "approval.lapsed",
            Event::RunMessage(_) => "run.message",
        }
    }
}

/// Payload of `run.message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunMessage {
    /// The conversation.
    pub conversation_id: String,
    /// The run that spoke.
    pub run_id: String,
    /// The words.
    pub text: String,
    /// The row this message concerns, if any.
    pub approval_id: Option<String>,
}
