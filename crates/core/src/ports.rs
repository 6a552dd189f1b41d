//! Storage, clock and notification traits the kernel runs over (DESIGN §6: storage sits behind
//! traits). `crates/store` implements the storage traits with sqlx for SQLite and PostgreSQL;
//! the row's immutable request terms are also enforced by the database itself.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{Message, ToolCall};
use crate::wire::{
    Approval, ApprovalKind, ApprovalStatus, AuditEntry, AuditKind, Card, ChatLine, Effect,
};

/// Why storage failed. Every variant fails closed: the caller runs nothing destructive.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database refused or could not be reached.
    #[error("storage failed: {0}")]
    Backend(String),
    /// A persisted row does not parse (strict restore: it is never executed).
    #[error("stored row `{id}` is corrupt: {reason}")]
    Corrupt {
        /// The row.
        id: String,
        /// What does not parse.
        reason: String,
    },
    /// The row does not exist.
    #[error("`{0}` does not exist")]
    NotFound(String),
}

/// The request terms of a new approval row; immutable once written (DESIGN §2 "approval row").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewApproval {
    /// Row id (UUID text).
    pub id: String,
    /// Why the row exists.
    pub kind: ApprovalKind,
    /// Canonical tool name.
    pub tool: String,
    /// Normalised arguments.
    pub args: Value,
    /// Canonical JSON text of `args`: the bytes a claim compares.
    pub args_canonical: String,
    /// Hex SHA-256 of tool + NUL + canonical args.
    pub call_hash: String,
    /// Items, in the call's order.
    pub items: Vec<String>,
    /// The frozen card.
    pub card: Card,
    /// The paused run.
    pub run_id: String,
    /// Short text of what the run was doing (the owner's request).
    pub context_summary: String,
    /// When written.
    pub created_at: DateTime<Utc>,
    /// When it lapses.
    pub expires_at: DateTime<Utc>,
    /// One precondition per item, in `items` order, as the plugin's `describe(args)` pinned
    /// them (opaque JSON the plugin understands, checked by `Plugin::check_precondition` at
    /// execution; issue 3 staleness). Empty: the call pins none. Immutable like the other terms.
    #[serde(default)]
    pub preconditions: Vec<Value>,
}

impl NewApproval {
    /// The row as the API shows it right after it was written: pending, unanswered, nothing
    /// executed (the payload of `approval.requested`).
    pub fn pending_view(&self) -> Approval {
        Approval {
            id: self.id.clone(),
            kind: self.kind,
            status: ApprovalStatus::Pending,
            tool: self.tool.clone(),
            args: self.args.clone(),
            call_hash: self.call_hash.clone(),
            items: self.items.clone(),
            card: self.card.clone(),
            run_id: self.run_id.clone(),
            created_at: self.created_at,
            expires_at: self.expires_at,
            responded_at: None,
            responded_by: None,
            surface: None,
            reason: None,
            execution: crate::wire::Execution::None,
            result: None,
            resume_error: None,
        }
    }
}

/// An answer to store (DESIGN §2 "response", written once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// `approved`, `rejected` or `expired`.
    pub status: ApprovalStatus,
    /// Who (device name, or `iris` for the expiry sweep).
    pub responded_by: String,
    /// Through which surface.
    pub surface: String,
    /// Optional reason.
    pub reason: Option<String>,
    /// When.
    pub at: DateTime<Utc>,
}

/// Result of a claim (DESIGN §2 "claim"; §8 "at most once").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// This caller owns the execution; the ledger says `executing`.
    Claimed,
    /// Refused; the reason names the rule (forged id, not approved, other tool, other
    /// arguments, already claimed).
    Denied(String),
}

/// The approval queue.
#[async_trait]
pub trait QueueStore: Send + Sync {
    /// Writes a new pending row.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the row could not be written (the call does not run).
    async fn insert(&self, row: &NewApproval) -> Result<(), StoreError>;

    /// Reads one row with its execution state from the ledger.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] for a row that does not parse; [`StoreError::Backend`].
    async fn get(&self, id: &str) -> Result<Option<Approval>, StoreError>;

    /// Lists rows: pending first (oldest first), then answered (newest answer first).
    ///
    /// # Errors
    /// [`StoreError`].
    async fn list(&self, status: Option<ApprovalStatus>) -> Result<Vec<Approval>, StoreError>;

    /// Compare-and-set from `pending` to the response. `Ok(true)` when this write won;
    /// `Ok(false)` when the row was not pending (someone else answered, or it lapsed).
    ///
    /// # Errors
    /// [`StoreError`].
    async fn decide(&self, id: &str, response: &Response) -> Result<bool, StoreError>;

    /// Ids of pending rows whose `expires_at` is at or before `now`.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn lapsed(&self, now: DateTime<Utc>) -> Result<Vec<String>, StoreError>;

    /// Links the row to the checkpoint of its paused run.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn link_checkpoint(&self, id: &str, checkpoint_id: &str) -> Result<(), StoreError>;

    /// Ids of decided rows whose run has not been resumed (for the resume sweep).
    ///
    /// # Errors
    /// [`StoreError`].
    async fn unresumed(&self) -> Result<Vec<String>, StoreError>;

    /// Records why resuming the row's run failed (`None` clears it). A row with a resume
    /// error and a taken checkpoint can be resumed again on the owner's request
    /// ([`CheckpointStore::take_for_retry`]); the card shows the error (Approval
    /// `resume_error`).
    ///
    /// # Errors
    /// [`StoreError`].
    async fn set_resume_error(&self, id: &str, error: Option<&str>) -> Result<(), StoreError>;

    /// The row's pinned preconditions, one per item (empty when the call pins none, or for an
    /// unknown id). Read at execution only (issue 3 staleness).
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] when the stored value is not a JSON array (the call never runs);
    /// [`StoreError::Backend`].
    async fn preconditions(&self, id: &str) -> Result<Vec<Value>, StoreError>;
}

/// The write-ahead side-effect ledger, one entry per executed pinned call.
#[async_trait]
pub trait Ledger: Send + Sync {
    /// Claims the approval and writes `executing`, atomically, only when the row is approved,
    /// names `tool`, its canonical arguments equal `args_canonical` byte for byte, and nothing
    /// has claimed it before.
    ///
    /// # Errors
    /// [`StoreError`] (the call does not run).
    async fn claim(
        &self,
        approval_id: &str,
        tool: &str,
        args_canonical: &str,
        at: DateTime<Utc>,
    ) -> Result<ClaimOutcome, StoreError>;

    /// Writes the outcome after the side effect: `executed` or `failed`, with the result.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn finish(
        &self,
        approval_id: &str,
        executed: bool,
        result: &Value,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError>;

    /// Turns every `executing` entry into `unknown` (called at start-up: a crash left them).
    /// Returns the approval ids so the owner can be told.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn mark_unknown(&self) -> Result<Vec<String>, StoreError>;
}

/// What the audit log is given; the store assigns `id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewAuditEntry {
    /// The approval.
    pub approval_id: String,
    /// What happened.
    pub kind: AuditKind,
    /// The item (execution entries).
    pub item: Option<String>,
    /// Outcome.
    pub result: Value,
    /// Whether an undo exists.
    pub undo_available: bool,
    /// Who.
    pub actor: String,
    /// Surface.
    pub surface: Option<String>,
    /// When.
    pub at: DateTime<Utc>,
}

/// The append-only audit log.
#[async_trait]
pub trait AuditLog: Send + Sync {
    /// Appends one entry.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn append(&self, entry: &NewAuditEntry) -> Result<(), StoreError>;

    /// Entries for one approval (or all when `None`), oldest first.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn entries(&self, approval_id: Option<&str>) -> Result<Vec<AuditEntry>, StoreError>;
}

/// The saved state of a paused run (DESIGN §2 "checkpoint").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Checkpoint id.
    pub id: String,
    /// The paused run.
    pub run_id: String,
    /// Its conversation.
    pub conversation_id: String,
    /// What the owner asked this turn.
    pub request: String,
    /// The transcript so far, ending with the assistant message whose call halted; every other
    /// call id of that message already has its result.
    pub messages: Vec<Message>,
    /// The halted call as the model wrote it (its id gets the pinned call's result).
    pub pending_call: ToolCall,
    /// The approval the run waits on.
    pub approval_id: String,
    /// Effects recorded so far in this run.
    pub effects_executed: Vec<Effect>,
}

/// Paused runs.
#[async_trait]
pub trait CheckpointStore: Send + Sync {
    /// Saves a checkpoint.
    ///
    /// # Errors
    /// [`StoreError`] (the run then refuses instead of pausing).
    async fn save(&self, checkpoint: &Checkpoint) -> Result<(), StoreError>;

    /// Takes the checkpoint of `approval_id` for resuming, by compare-and-set: only the first
    /// caller gets `Some`; later callers get `None` (DESIGN §3 step 6: resumed exactly once).
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] when the stored checkpoint does not parse (never executed).
    async fn take_for_resume(&self, approval_id: &str) -> Result<Option<Checkpoint>, StoreError>;

    /// Takes the checkpoint of `approval_id` again, for retrying a resume that failed: by
    /// compare-and-set on the approval's `resume_error` (cleared here), only when the approval
    /// is decided, its checkpoint was already taken and a resume error is recorded. Only the
    /// first caller gets `Some`; `None` when there is nothing to retry (never failed, resumed
    /// fine, still pending, no checkpoint, or another retry won). A retry never re-executes the
    /// pinned call: the ledger already records it (DESIGN §8).
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] when the stored checkpoint does not parse (never executed);
    /// [`StoreError::Backend`].
    async fn take_for_retry(&self, approval_id: &str) -> Result<Option<Checkpoint>, StoreError>;

    /// The conversation of the run paused on `approval_id`, read from the checkpoint's own
    /// column (not its body), so the owner can be told in the chat even when the body is
    /// corrupt. `None` when there is no checkpoint.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn conversation_of(&self, approval_id: &str) -> Result<Option<String>, StoreError>;

    /// Records that the run resumed on `approval_id` ended (done, refused, or failed with its
    /// resume error recorded). A run taken for resuming that never gets here was interrupted by
    /// a crash ([`CheckpointStore::interrupted`]).
    ///
    /// # Errors
    /// [`StoreError`].
    async fn finish_resume(&self, approval_id: &str) -> Result<(), StoreError>;

    /// Resumes interrupted by a crash: checkpoints taken for resuming whose run never finished
    /// and whose approval records no resume error, as `(approval id, recoveries so far)`, oldest
    /// first. Read at start-up only, before this process resumes anything: a run another
    /// process is resuming right now looks the same.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn interrupted(&self) -> Result<Vec<(String, i64)>, StoreError>;

    /// Takes an interrupted resume for continuing, by compare-and-set on its recovery count
    /// (`recoveries` as [`CheckpointStore::interrupted`] read it): only the first caller gets
    /// `Some`; `None` when it finished meanwhile or another process took it. Continuing never
    /// runs the pinned call again: the ledger records it (DESIGN §8).
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] when the stored checkpoint does not parse (never executed);
    /// [`StoreError::Backend`].
    async fn take_interrupted(
        &self,
        approval_id: &str,
        recoveries: i64,
    ) -> Result<Option<Checkpoint>, StoreError>;
}

/// Conversations: the model transcript and the lines the owner sees.
#[async_trait]
pub trait ConversationStore: Send + Sync {
    /// The transcript (empty for a new conversation).
    ///
    /// # Errors
    /// [`StoreError`].
    async fn transcript(&self, conversation_id: &str) -> Result<Vec<Message>, StoreError>;

    /// Replaces the transcript.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn save_transcript(
        &self,
        conversation_id: &str,
        messages: &[Message],
    ) -> Result<(), StoreError>;

    /// Appends one line the owner sees.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn append_line(&self, conversation_id: &str, line: &ChatLine) -> Result<(), StoreError>;

    /// The lines, oldest first.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn lines(&self, conversation_id: &str) -> Result<Vec<ChatLine>, StoreError>;
}

/// What a Telegram message shows of its approval (issue 5 "Telegram").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TelegramView {
    /// The card with its action and Reject buttons.
    Card,
    /// The confirm view ("Trash 3 emails?" with Yes and Cancel): only from here does Yes approve.
    Confirm,
    /// The outcome or the lapse notice, without buttons.
    Closed,
}

impl TelegramView {
    /// `card`, `confirm` or `closed` (the stored spelling).
    pub fn as_str(self) -> &'static str {
        match self {
            TelegramView::Card => "card",
            TelegramView::Confirm => "confirm",
            TelegramView::Closed => "closed",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(text: &str) -> Option<TelegramView> {
        match text {
            "card" => Some(TelegramView::Card),
            "confirm" => Some(TelegramView::Confirm),
            "closed" => Some(TelegramView::Closed),
            _ => None,
        }
    }
}

/// The Telegram message that shows one approval in one chat (issue 5 "Telegram"): durable, so
/// an answer given elsewhere or a lapse edits the message after a restart too, and a card is
/// sent to a chat once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TelegramCard {
    /// The chat (`IRIS_TELEGRAM_CHAT_ID` when it was sent).
    pub chat_id: i64,
    /// The approval it shows.
    pub approval_id: String,
    /// The message; `None` while the card is being sent (claimed, not yet delivered).
    pub message_id: Option<i64>,
    /// What the message shows now.
    pub view: TelegramView,
    /// The message's text as last sent or edited (MarkdownV2); `None` when unknown (a message
    /// learnt from a tap, e.g. one sent before this was stored).
    pub shown_text: Option<String>,
    /// The message shows an outcome that will not change any more; start-up reconciliation
    /// skips it.
    pub settled: bool,
    /// When the card was claimed for sending (or first learnt from a tap).
    pub sent_at: DateTime<Utc>,
    /// When the row last changed.
    pub updated_at: DateTime<Utc>,
}

/// Which Telegram message shows which approval (issue 5 "Telegram"; migration 0015). The
/// surface serialises its own edits; this store makes what it learnt survive a restart.
#[async_trait]
pub trait TelegramCardStore: Send + Sync {
    /// Claims sending the card of `approval_id` to `chat_id`: writes a row without a message.
    /// `Ok(true)` when this caller won; `Ok(false)` when the chat already has (or is being sent)
    /// a card for that approval, so a card is sent to a chat once.
    ///
    /// # Errors
    /// [`StoreError::Backend`] (also for an unknown approval: foreign key).
    async fn claim_telegram_card(
        &self,
        chat_id: i64,
        approval_id: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError>;

    /// Gives up a claim whose card was not delivered (a row still without a message), so the
    /// next start sends it again. A row with a message is left alone.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn release_telegram_card(
        &self,
        chat_id: i64,
        approval_id: &str,
    ) -> Result<(), StoreError>;

    /// Gives up every claim in `chat_id` that never got a message (a crash mid-send); returns
    /// their approval ids, oldest claim first. Called at start-up, before this process sends
    /// anything.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn release_unsent_telegram_cards(&self, chat_id: i64) -> Result<Vec<String>, StoreError>;

    /// Records what `card`'s message shows now (written whole; the row is created when
    /// missing, e.g. for a message learnt from a tap; `sent_at` is kept when it exists).
    ///
    /// # Errors
    /// [`StoreError::Backend`] (also for an unknown approval, or a view other than `card`
    /// without a message).
    async fn record_telegram_card(&self, card: &TelegramCard) -> Result<(), StoreError>;

    /// The card of `approval_id` in `chat_id`, if any.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] for a row that does not parse; [`StoreError::Backend`].
    async fn telegram_card(
        &self,
        chat_id: i64,
        approval_id: &str,
    ) -> Result<Option<TelegramCard>, StoreError>;

    /// Pending approvals, not yet lapsed at `now`, that have no card in `chat_id`: ids, oldest
    /// first (the cards to send at start-up).
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn unsent_telegram_cards(
        &self,
        chat_id: i64,
        now: DateTime<Utc>,
    ) -> Result<Vec<String>, StoreError>;

    /// Sent, unsettled cards in `chat_id` whose approval is no longer pending (answered or
    /// lapsed), oldest answer first: the messages start-up edits to their outcome.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] for a row that does not parse; [`StoreError::Backend`].
    async fn unsettled_telegram_cards(&self, chat_id: i64)
        -> Result<Vec<TelegramCard>, StoreError>;
}

/// What a device may do (DESIGN §2 "device, scope").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// See cards, never answer.
    Read,
    /// See and answer.
    Control,
}

impl Scope {
    /// `read` or `control`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Control => "control",
        }
    }

    /// Parses `read` / `control`.
    pub fn parse(text: &str) -> Option<Scope> {
        match text {
            "read" => Some(Scope::Read),
            "control" => Some(Scope::Control),
            _ => None,
        }
    }
}

/// A paired device (token stored only as its SHA-256).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    /// Unique name.
    pub name: String,
    /// What it may do.
    pub scope: Scope,
    /// When paired.
    pub created_at: DateTime<Utc>,
    /// Last authenticated use.
    pub last_used_at: Option<DateTime<Utc>>,
}

/// Paired devices.
#[async_trait]
pub trait DeviceStore: Send + Sync {
    /// Adds a device with the hex SHA-256 of its token.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the name is taken.
    async fn add(&self, device: &Device, token_hash: &str) -> Result<(), StoreError>;

    /// The live device whose token hashes to `token_hash`; records the use.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn authenticate(
        &self,
        token_hash: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<Device>, StoreError>;

    /// Whether a live (unrevoked) device has this token hash. Reads only: for checks repeated
    /// on an open stream, where recording a use each time would be a write per event.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn is_live(&self, token_hash: &str) -> Result<bool, StoreError>;

    /// Live devices, by name.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn list(&self) -> Result<Vec<Device>, StoreError>;

    /// Revokes a device; `Ok(false)` when no live device has that name.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn revoke(&self, name: &str) -> Result<bool, StoreError>;
}

/// One-time pairing links (issue 5; rules in [`crate::pairing`]). Codes are stored only as
/// their hex SHA-256.
#[async_trait]
pub trait PairingStore: Send + Sync {
    /// Stores a new link under `code_hash`.
    ///
    /// # Errors
    /// [`StoreError`] (a repeated `code_hash` is a backend error: codes are random).
    async fn create_pairing(
        &self,
        code_hash: &str,
        link: &crate::pairing::PairingLink,
    ) -> Result<(), StoreError>;

    /// The link stored under `code_hash`, used or not.
    ///
    /// # Errors
    /// [`StoreError`]; [`StoreError::Corrupt`] for an unreadable row.
    async fn pairing(
        &self,
        code_hash: &str,
    ) -> Result<Option<crate::pairing::PairingLink>, StoreError>;

    /// Redeems the link: in one transaction marks it used by `device_name` at `at` (only if it
    /// is unused and `at` is before its expiry) and adds the device with the link's scope and
    /// `token_hash`. Concurrent redemptions of one link pair exactly one device. Anything but
    /// [`Redemption::Paired`](crate::pairing::Redemption::Paired) changed nothing.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn redeem_pairing(
        &self,
        code_hash: &str,
        device_name: &str,
        token_hash: &str,
        at: DateTime<Utc>,
    ) -> Result<crate::pairing::Redemption, StoreError>;
}

/// The time source. Tests control it (expiry, sweeps).
pub trait Clock: Send + Sync {
    /// Now, UTC.
    fn now(&self) -> DateTime<Utc>;
}

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that moves only when told to: for tests and simulations (expiry, sweeps, TTLs),
/// never for a running server (which uses [`SystemClock`]). Share it as `Arc<ManualClock>`
/// and hand clones to the kernel as `Arc<dyn Clock>`; [`ManualClock::set`] and
/// [`ManualClock::advance`] then move every holder's "now" at once.
#[derive(Debug)]
pub struct ManualClock {
    now: std::sync::Mutex<DateTime<Utc>>,
}

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: DateTime<Utc>) -> ManualClock {
        ManualClock {
            now: std::sync::Mutex::new(start),
        }
    }

    /// Moves the clock to `at` (backwards too: a test may replay an instant).
    pub fn set(&self, at: DateTime<Utc>) {
        *self.lock() = at;
    }

    /// Moves the clock forward by `by` (a negative duration moves it back).
    pub fn advance(&self, by: chrono::Duration) {
        let mut now = self.lock();
        *now += by;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, DateTime<Utc>> {
        // A poisoned lock still holds a valid instant: a panicking test must not hide it.
        self.now
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.lock()
    }
}

/// Fans notices out to the surfaces (DESIGN §2 "channel router").
pub trait Notifier: Send + Sync {
    /// Publishes one event; must not block and must not fail the caller.
    fn notify(&self, event: crate::wire::Event);
}
