//! The approval lifecycle's storage: units of work, one transaction per phase (DESIGN §9 "each
//! phase is one transaction"), and the reads the lifecycle and the surfaces need.
//!
//! The phases and their commits, for one destructive call:
//!
//! | phase | unit | commits |
//! |---|---|---|
//! | halt | [`ApprovalStore::commit_turn`] with a [`HaltRecord`]: row, checkpoint, link, transcript, lines, `approval.requested` | 1 |
//! | respond | [`ApprovalStore::decide`]: the row read once, compare-and-set from `pending`, decision audit, resume job, `approval.responded` | 1 |
//! | execute | [`ApprovalStore::claim_job`] (lease + ledger `executing`, write-ahead) then [`ApprovalStore::record_outcome`] (ledger outcome + audit) | 2 |
//! | resume | [`ApprovalStore::finish_job`]: transcript, lines, job done, `run.message` | 1 |
//!
//! Every write of a job after its claim is fenced by the lease's epoch: a server that lost its
//! lease (another took the job over after it lapsed) gets [`StoreError::LeaseLost`] and nothing
//! is written. Lease and expiry comparisons are made in SQL against one time source (the
//! database's clock in production, a test clock bound as a parameter in tests); stamps (when a
//! row was written, answered, executed) come from the [`crate::ports::Clock`] the service holds.
//!
//! The store decides nothing on its own: the approvals service ([`crate::approvals`]) computes
//! every record, and the statements' `WHERE` clauses (compare-and-set) and the database's
//! triggers are the second line that refuses what the service should never ask for.

use async_trait::async_trait;
use serde_json::Value;

use super::{Checkpoint, NewApproval, NewAuditEntry, Outbox, Response, StoreError, UndoStore};
use crate::model::Message;
use crate::wire::{Approval, ApprovalStatus, AuditEntry, ChatLine};

/// A card being written by a halt: the row's request terms and the paused run's checkpoint,
/// linked to each other in the same commit (DESIGN §8 "once a card exists it is whole").
#[derive(Debug, Clone, PartialEq)]
pub struct HaltRecord {
    /// The row's request terms (pending, unanswered).
    pub approval: NewApproval,
    /// The paused run (its `approval_id` is `approval.id`).
    pub checkpoint: Checkpoint,
}

/// The end of a turn, written in one commit: what the owner said (a new turn), the transcript,
/// the lines the owner sees, and, when the turn halted, the card.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnCommit {
    /// The conversation.
    pub conversation_id: String,
    /// The whole transcript after the turn: written only if the stored one is still at
    /// `transcript_version` (else [`StoreError::TranscriptMoved`] and nothing is written).
    pub transcript: Vec<Message>,
    /// The version of the transcript the turn read ([`StoredTranscript::version`]; 0 for a
    /// conversation that had none); the write makes it one more.
    pub transcript_version: i64,
    /// Lines to append, in order (the owner's message first on a new turn; then what the
    /// owner must be told; the reply last).
    pub lines: Vec<ChatLine>,
    /// The card the turn halted on, if it did.
    pub halt: Option<HaltRecord>,
    /// Writes that ran in the turn without a card, each audited (kind `action`) in the same
    /// commit.
    pub actions: Vec<ActionRecord>,
    /// What the commit announces when (and only when) it lands: its events and the pushes they
    /// ask for.
    pub outbox: Outbox,
}

/// A write that ran without a card because its manifest allows it (a write with a
/// `reply_undo`), as its audit entry records it: kind `action`, no approval, stamped by the
/// store's clock when the turn's commit lands (docs/liveness.md "writes without a card").
#[derive(Debug, Clone, PartialEq)]
pub struct ActionRecord {
    /// The run it ran in.
    pub run_id: String,
    /// The tool (canonical name).
    pub tool: String,
    /// The conversation of the run (where "undo that" reverses it).
    pub conversation_id: String,
    /// What the tool returned (a JSON object; mail's has its `summary`).
    pub result: Value,
    /// The tool "undo that" runs to reverse it, if the manifest names one.
    pub undo_tool: Option<String>,
}

/// A decision to store (respond or expire): the compare-and-set from `pending`, its audit
/// entry, and a resume job for the paused run, in one commit.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionCommit {
    /// The answer (`approved`, `rejected`) or the lapse (`expired`). An answer needs the row not
    /// to have lapsed by the store's time source; an expiry needs it to have lapsed.
    pub response: Response,
    /// The decision or lapse audit entry.
    pub audit: NewAuditEntry,
    /// The row as this commit leaves it.
    pub after: Approval,
    /// What the commit announces when (and only when) it lands: its events and the pushes they
    /// ask for.
    pub outbox: Outbox,
    /// The passkey an approval used (ADR-0118 decision 4): its ceremony is marked used and the
    /// passkey's counter written in this commit, each by compare-and-set (ceremony unused,
    /// unlapsed by the store's time source, for this approval and its call hash; passkey not
    /// removed), or nothing is written.
    pub passkey: Option<crate::passkey::PasskeyUse>,
}

/// A row as a decision reads it, inside the decision's transaction (no other writer can change
/// it until the transaction ends).
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionRead {
    /// The row with its ledger state.
    pub approval: Approval,
    /// Whether it has lapsed by the store's time source (`expires_at` at or before now).
    pub lapsed: bool,
    /// The unit's time by the store's time source (the database's clock in production), read
    /// once with the row: the decision's `responded_at` and its audit entry's `at`.
    pub now: chrono::DateTime<chrono::Utc>,
    /// Whether the device that requested it (through the gateway) is revoked, read in the same
    /// unit: such a card can never be approved (docs/liveness.md "revoked devices").
    pub requester_revoked: bool,
    /// The passkey ceremony the answer names, read in the same transaction (`None` when none
    /// was named or it does not exist).
    pub ceremony: Option<crate::passkey::Ceremony>,
}

/// What a decision's unit of work did.
#[derive(Debug, Clone, PartialEq)]
pub enum Decided {
    /// The decision was committed; the row as it left it.
    Written(Box<Approval>),
    /// Nothing was written: the plan asked for nothing, or the compare-and-set refused what it
    /// asked; the row as read.
    Unchanged(Box<Approval>),
}

/// Which resume job a claim takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobPick<'a> {
    /// The oldest claimable job: `ready`, or `running` with a lapsed lease (a takeover).
    Next,
    /// This approval's job, when claimable as for [`JobPick::Next`].
    Approval(&'a str),
    /// This approval's job when it `failed` (the owner's retry).
    Retry(&'a str),
}

/// How the claimed job stood before this claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobOrigin {
    /// Never run before.
    Fresh,
    /// Another server held it and its lease lapsed: whatever it was doing may or may not have
    /// happened.
    TakenOver,
    /// It had failed; the owner asked to retry.
    Retried,
}

/// The saved run of a job's approval, as the claim found it.
#[derive(Debug, Clone, PartialEq)]
pub enum SavedRun {
    /// No checkpoint was ever saved for the row (a card written before halts were one commit).
    Missing,
    /// The checkpoint does not parse (never executed, DESIGN §8); the reason.
    Corrupt(String),
    /// The checkpoint.
    Saved(Box<Checkpoint>),
}

/// Everything the service needs to plan a claimed job, read in the claim's transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSnapshot {
    /// The approval the job resumes.
    pub approval_id: String,
    /// How the job stood before the claim.
    pub origin: JobOrigin,
    /// The row with its ledger state; `Err` with the reason when it does not parse.
    pub approval: Result<Approval, String>,
    /// The row's pinned preconditions, one per item; `Err` when they do not parse.
    pub preconditions: Result<Vec<Value>, String>,
    /// The saved run.
    pub saved: SavedRun,
    /// The conversation of the saved run, read from the checkpoint's own column (so the owner
    /// can be told even when the body is corrupt).
    pub conversation_id: Option<String>,
    /// That conversation's transcript now (the owner may have said more since the pause);
    /// `Err` when it does not parse.
    pub transcript: Result<Vec<Message>, String>,
    /// That transcript's version (0 when the conversation has no row).
    pub transcript_version: i64,
    /// The claim's time by the store's time source (the database's clock in production), read
    /// once in its unit: the start-by check judges the approved call by it.
    pub now: chrono::DateTime<chrono::Utc>,
}

/// A conversation's transcript as stored, with its version: every write checks the version it
/// read and makes it one more, so two runs never overwrite each other's messages.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StoredTranscript {
    /// The messages, in order (empty for a conversation that has none yet).
    pub messages: Vec<Message>,
    /// 0 for a conversation with no row yet; then 1, 2, … one per write.
    pub version: i64,
}

/// What the claim does to the ledger, in the claim's commit.
#[derive(Debug, Clone, PartialEq)]
pub enum LedgerStep {
    /// Nothing (a rejected or lapsed row, an evaluator halt, an outcome already recorded).
    Leave,
    /// Claim the approved call: `executing`, written ahead of the side effect (DESIGN §2
    /// side-effect ledger). Only when the row is approved, not an evaluator halt, names `tool`,
    /// its canonical arguments equal `args_canonical` byte for byte, and nothing claimed it.
    Claim {
        /// The pinned tool.
        tool: String,
        /// The canonical JSON of the pinned arguments.
        args_canonical: String,
    },
    /// Claim the approved call and record it `failed` with `result` without running it (strict
    /// restore: the call can never run; DESIGN §8 fail closed).
    Refuse {
        /// The pinned tool.
        tool: String,
        /// The canonical JSON of the pinned arguments.
        args_canonical: String,
        /// The outcome the card shows (`{"status":"failed","message":…}`).
        result: Value,
    },
    /// A taker found `executing` with no outcome: the previous holder may or may not have run
    /// it. Mark it `unknown` with `result` (`{"status": "unknown", "message": …}`, saying how
    /// to check it where the plugin says how); it is never run again.
    MarkUnknown {
        /// The ledger's result: what the card says of the outcome.
        result: Value,
    },
}

/// How a job ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobEnd {
    /// The run resumed and its turn ended (done, refused, halted again, or stopped).
    Done,
    /// Resuming failed (the model unreachable); the owner may retry.
    Failed,
    /// The run can never resume (no checkpoint, a corrupt one, an unreadable row); retrying
    /// would fail the same way.
    Dead,
}

impl JobEnd {
    /// `done`, `failed` or `dead` (the stored spelling).
    pub fn as_str(self) -> &'static str {
        match self {
            JobEnd::Done => "done",
            JobEnd::Failed => "failed",
            JobEnd::Dead => "dead",
        }
    }
}

/// What a unit does to the row's `resume_error` (the failure its card shows), one spelling for
/// every unit that may touch it: the claim's plan and the job's end.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ResumeErrorChange {
    /// Leave the stored text as it is (nothing written).
    #[default]
    Leave,
    /// Clear it (the run is fine now).
    Clear,
    /// Set it to this sentence.
    Set(String),
}

impl ResumeErrorChange {
    /// The change that makes a row holding `stored` hold `wanted`: [`ResumeErrorChange::Leave`]
    /// when they are equal (nothing to write, no event to send).
    pub fn to_reach(stored: Option<&str>, wanted: Option<String>) -> ResumeErrorChange {
        match wanted {
            w if w.as_deref() == stored => ResumeErrorChange::Leave,
            Some(text) => ResumeErrorChange::Set(text),
            None => ResumeErrorChange::Clear,
        }
    }

    /// What to write: `None` for [`ResumeErrorChange::Leave`], else the column's new value
    /// (`Some(None)` clears it).
    pub fn written(&self) -> Option<Option<&str>> {
        match self {
            ResumeErrorChange::Leave => None,
            ResumeErrorChange::Clear => Some(None),
            ResumeErrorChange::Set(text) => Some(Some(text)),
        }
    }
}

/// What the claim's commit writes besides the lease (computed by the service from the
/// [`JobSnapshot`] inside the same transaction).
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimPlan {
    /// The ledger step.
    pub ledger: LedgerStep,
    /// Audit entries (denials, a refusal).
    pub audit: Vec<NewAuditEntry>,
    /// What happens to the row's `resume_error` (shown on the card).
    pub resume_error: ResumeErrorChange,
    /// End the job in this commit (a run that can never resume); `None` keeps it running.
    pub end: Option<JobEnd>,
    /// Lines for the owner, appended to their conversations: `(conversation id, line)`.
    pub lines: Vec<(String, ChatLine)>,
    /// What the commit announces when (and only when) it lands: its events and the pushes they
    /// ask for.
    pub outbox: Outbox,
}

impl ClaimPlan {
    /// A plan that only takes the lease.
    pub fn lease_only() -> ClaimPlan {
        ClaimPlan {
            ledger: LedgerStep::Leave,
            audit: Vec::new(),
            resume_error: ResumeErrorChange::Leave,
            end: None,
            lines: Vec::new(),
            outbox: Outbox::default(),
        }
    }
}

/// A lease on one resume job (DESIGN §9): who holds it and the epoch every write under it is
/// fenced by. A new claim of the same job increments the epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The job's approval.
    pub approval_id: String,
    /// The server holding it (a random id per process).
    pub owner: String,
    /// The claim's epoch (1 for the first claim).
    pub epoch: i64,
}

/// A claimed job: its lease, what the claim read, and the plan its commit applied.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimedJob {
    /// The lease (valid until the store's time source passes it, unless renewed).
    pub lease: Lease,
    /// What the claim read.
    pub snapshot: JobSnapshot,
    /// What the claim's commit wrote.
    pub plan: ClaimPlan,
}

/// The outcome of a pinned call, written after the side effect (the second commit of execute).
#[derive(Debug, Clone, PartialEq)]
pub struct OutcomeRecord {
    /// What the side effect came to.
    pub outcome: Outcome,
    /// The result the card and the model see.
    pub result: Value,
    /// One execution entry per item (or one for the whole call).
    pub audit: Vec<NewAuditEntry>,
    /// What the commit announces when (and only when) it lands: its events and the pushes they
    /// ask for.
    pub outbox: Outbox,
}

/// Where an unknown call's items are now, with its audit entries (one per item) and what the
/// commit announces ([`ApprovalStore::record_located`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LocatedRecord {
    /// The plugin's answer, as the card shows it.
    pub located: crate::wire::Located,
    /// One execution entry per item it placed (`undo_available` for those the undo restores).
    pub audit: Vec<NewAuditEntry>,
    /// Its events (the card's `approval.responded`).
    pub outbox: Outbox,
}

/// What a claimed call's side effect came to (the ledger's state after `executing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It ran (possibly with some items stale).
    Executed,
    /// It did not complete, and nothing says it changed anything.
    Failed,
    /// It was sent and its answer was lost (the upstream exited mid-call): it may or may not
    /// have run, and is never run again (DESIGN §8 fail closed).
    Unknown,
}

impl Outcome {
    /// The ledger's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Executed => "executed",
            Outcome::Failed => "failed",
            Outcome::Unknown => "unknown",
        }
    }
}

/// The end of a resumed run, written in one commit under the lease.
#[derive(Debug, Clone, PartialEq)]
pub struct JobFinish {
    /// The resumed turn's end (transcript, lines, a new card), when the run got that far.
    pub turn: Option<TurnCommit>,
    /// How the job ends.
    pub end: JobEnd,
    /// What happens to the row's `resume_error` (written only when it changes).
    pub resume_error: ResumeErrorChange,
    /// What the commit announces when (and only when) it lands: its events and the pushes they
    /// ask for (besides the turn's own).
    pub outbox: Outbox,
}

/// Which rows a listing returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApprovalFilter {
    /// Only rows in this status; `None` for every status.
    pub status: Option<ApprovalStatus>,
}

/// The approval lifecycle's storage (DESIGN §6, §9), with the undo from the card's
/// ([`UndoStore`]). Implemented by `crates/store` for SQLite and PostgreSQL.
#[async_trait]
pub trait ApprovalStore: UndoStore + Send + Sync {
    /// Ends a turn in one commit ([`TurnCommit`]); with a halt, the row, its checkpoint and
    /// their link are written together, so a card is never without its paused run.
    ///
    /// # Errors
    /// [`StoreError`]: nothing was written (the turn ends without a card).
    async fn commit_turn(&self, turn: &TurnCommit) -> Result<(), StoreError>;

    /// Reads row `approval_id` inside one transaction and stores what `plan` decides for it: a
    /// compare-and-set from `pending` (an answer needs the row not to have lapsed by the store's
    /// time source, an expiry needs it lapsed), its audit entry and a resume job, in one commit.
    /// When `plan` returns `None`, or the compare-and-set refuses, nothing is written.
    /// `ceremony` names a passkey ceremony to read into [`DecisionRead::ceremony`].
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown row; [`StoreError::Corrupt`] for a row that does
    /// not parse; [`StoreError::Backend`].
    async fn decide(
        &self,
        approval_id: &str,
        ceremony: Option<&str>,
        plan: &(dyn for<'r> Fn(&'r DecisionRead) -> Option<DecisionCommit> + Send + Sync),
    ) -> Result<Decided, StoreError>;

    /// Claims a resume job under a lease of `lease_secs` seconds for `owner`, in one commit with
    /// what `plan` returns for the job as read inside that transaction (PostgreSQL picks with
    /// `FOR UPDATE SKIP LOCKED`, SQLite by compare-and-set under its one writer). `Ok(None)`
    /// when no job is claimable. A lapsed lease is claimable by any server, the caller's own
    /// included, unless its holder (the lease's `owner`, `SERVER#CLAIM`) is in `busy`: the
    /// caller's own tasks that still run a job.
    ///
    /// A job whose claim the database refuses (a poison job: its pinned arguments no longer
    /// match their canonical text, a refused strict restore) is not left in the way of the
    /// others: it ends `failed` in a unit of its own, its ledger entry (if approved and
    /// unclaimed) `failed` with the reason, written from the row's stored canonical arguments,
    /// and the claim moves on to the next job.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the commit fails (nothing was claimed or written).
    async fn claim_job(
        &self,
        pick: JobPick<'_>,
        owner: &str,
        lease_secs: u32,
        busy: &[String],
        plan: &(dyn for<'s> Fn(&'s JobSnapshot) -> ClaimPlan + Send + Sync),
    ) -> Result<Option<ClaimedJob>, StoreError>;

    /// Renews the lease for `lease_secs` more seconds. `Ok(false)` when it was taken over.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn heartbeat(&self, lease: &Lease, lease_secs: u32) -> Result<bool, StoreError>;

    /// Confirms, in the unit right before a side effect, that `lease` still holds its job at
    /// its epoch and has not lapsed by the store's time source, renewing it for `lease_secs`.
    /// `Ok(false)` when it does not: the holder must not start the side effect
    /// (docs/liveness.md "fenced side effects").
    ///
    /// # Errors
    /// [`StoreError::Backend`] (the holder does not know: it must not start either).
    async fn confirm_lease(&self, lease: &Lease, lease_secs: u32) -> Result<bool, StoreError>;

    /// Ends a job whose run failed (a unit that would not commit, a run that stopped midway)
    /// in a fresh unit fenced by the lease's epoch: the job `failed` (the owner may retry; a
    /// retry never runs the call again), the row's `resume_error` set to `reason`, and a ledger
    /// entry still `executing` marked `unknown` (the side effect may have started). `Ok(false)`
    /// when the lease was taken over (the taker ends it).
    ///
    /// # Errors
    /// [`StoreError::Backend`]: nothing was written; the job stays `running` until its lease
    /// lapses, then any server (this one included) takes it over.
    async fn abandon_job(&self, lease: &Lease, reason: &str) -> Result<bool, StoreError>;

    /// Writes a pinned call's outcome: ledger `executing` → `executed`/`failed`/`unknown`, the
    /// audit entries, in one commit fenced by the lease's epoch by compare-and-set on the job
    /// row, which it locks (a lapsed lease nobody took over still lands; a taken-over one never).
    /// `Ok` also when the compare-and-set misses because this very outcome is already stored
    /// under this lease (an earlier try landed, its answer lost: docs/liveness.md "a missed
    /// compare-and-set re-plans").
    ///
    /// # Errors
    /// [`StoreError::LeaseLost`] when the lease was taken over or the ledger entry holds
    /// anything else (a taker marked it `unknown`): nothing was written.
    async fn record_outcome(
        &self,
        lease: &Lease,
        lease_secs: u32,
        outcome: &OutcomeRecord,
    ) -> Result<(), StoreError>;

    /// Writes where an `unknown` call's items stand now (the plugin's
    /// [`crate::plugin::Plugin::locate`] after a takeover) beside its ledger entry, with the
    /// per-item audit entries and the outbox, in one commit fenced by the lease as
    /// [`ApprovalStore::record_outcome`] is. The entry stays `unknown` with its result: where
    /// things are now never says whether the call finished. Written once (the database
    /// refuses a second, and any on an entry that is not `unknown`); `Ok` also when this very
    /// answer is already stored under this lease.
    ///
    /// # Errors
    /// [`StoreError::LeaseLost`] when the lease was taken over, or the entry is not `unknown`
    /// or already says where its items are (another answer): nothing was written.
    async fn record_located(&self, lease: &Lease, record: &LocatedRecord)
        -> Result<(), StoreError>;

    /// Ends a job in one commit fenced by the lease: the resumed turn, the job's end, the row's
    /// `resume_error`. `Ok` also when this holder already ended the job so at its epoch (an
    /// earlier try landed, its answer lost).
    ///
    /// # Errors
    /// [`StoreError::LeaseLost`] when the lease was taken over: nothing was written.
    async fn finish_job(&self, lease: &Lease, finish: &JobFinish) -> Result<(), StoreError>;

    /// "Now" by the store's time source: the database's clock in production (every server of
    /// one database reads the same one), the test's clock in tests. [`super::DatabaseClock`]
    /// aligns a server's stamps to it.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the database cannot be reached; [`StoreError::Corrupt`] when
    /// its answer is not an RFC 3339 time.
    async fn database_now(&self) -> Result<chrono::DateTime<chrono::Utc>, StoreError>;

    /// Ids of pending rows that have lapsed by the store's time source, oldest expiry first.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn lapsed(&self) -> Result<Vec<String>, StoreError>;

    /// One row with its execution state from the ledger.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] for a row that does not parse; [`StoreError::Backend`].
    async fn approval(&self, id: &str) -> Result<Option<Approval>, StoreError>;

    /// Gives rejected row `id` the owner's `reason`, once (docs/adr/0125-reason-after-reject.md):
    /// a compare-and-set on `status = 'rejected' AND reason IS NULL`, with `outbox` staged in
    /// the same commit. `Some(conversation)` when written (the conversation of the row's paused
    /// run, where the model is told; `None` inside for a row without one); `None` when the row
    /// is not rejected or has a reason already.
    ///
    /// # Errors
    /// [`StoreError`]: nothing was written.
    async fn add_reason(
        &self,
        id: &str,
        reason: &str,
        outbox: &Outbox,
    ) -> Result<Option<Option<String>>, StoreError>;

    /// Row `id` if the live agent device named `agent` requested it (by device id: a device
    /// paired later under a revoked device's name is another device), else `None`.
    ///
    /// # Errors
    /// As [`ApprovalStore::approval`].
    async fn agent_approval(&self, id: &str, agent: &str) -> Result<Option<Approval>, StoreError>;

    /// Rows: pending first (oldest first), then answered (newest answer first).
    ///
    /// # Errors
    /// [`StoreError`].
    async fn approvals(&self, filter: &ApprovalFilter) -> Result<Vec<Approval>, StoreError>;

    /// The newest `limit` audit entries of writes that ran without a card (kind `action`),
    /// newest first: what Activity lists beside the cards.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] when an entry does not parse; [`StoreError::Backend`].
    async fn actions(&self, limit: crate::ports::PageLimit) -> Result<Vec<AuditEntry>, StoreError>;

    /// The rows of `tool` a card may repeat or have been overtaken by
    /// ([`crate::approvals::overlap`]): those still pending and not lapsed by the database's
    /// clock, and those whose call executed with the answer given at or after `ran_since`.
    /// Oldest first, at most 200 (the newest kept).
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] when a listed row does not parse; [`StoreError::Backend`].
    async fn related_cards(
        &self,
        tool: &str,
        ran_since: chrono::DateTime<chrono::Utc>,
    ) -> Result<Vec<Approval>, StoreError>;

    /// One page of rows, newest first by `(created_at, id)`, matching every filter of `query`
    /// ([`crate::ports::listing`]); `next` is set when the page is full.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] when a listed row does not parse; [`StoreError::Backend`].
    async fn approval_page(
        &self,
        query: &crate::ports::ApprovalQuery,
    ) -> Result<crate::ports::ApprovalPage, StoreError>;

    /// Audit entries of one approval (or every entry), oldest first.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn audit(&self, approval_id: Option<&str>) -> Result<Vec<AuditEntry>, StoreError>;

    /// One page of the whole audit log, newest first: up to `limit` entries with ids below
    /// `before` (all when `None`), and the id to pass as `before` for the next page (`None` at
    /// the end). The log is append-only, so a walk from the newest entry down sees every entry
    /// that existed when it started exactly once; entries appended meanwhile come at the top.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn audit_page(
        &self,
        before: Option<i64>,
        limit: crate::ports::PageLimit,
    ) -> Result<(Vec<AuditEntry>, Option<i64>), StoreError>;

    /// The pending rows whose requesting device is revoked, oldest first (what the sweep
    /// rejects; docs/liveness.md "revoked devices").
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn revoked_requests(&self) -> Result<Vec<String>, StoreError>;

    /// A conversation's transcript (empty for a new one).
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] when it does not parse.
    async fn transcript(&self, conversation_id: &str) -> Result<StoredTranscript, StoreError>;

    /// A conversation's lines, oldest first.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn lines(&self, conversation_id: &str) -> Result<Vec<ChatLine>, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::ResumeErrorChange;

    /// Only a real change is written (and announced): the same text again leaves the row.
    #[test]
    fn a_resume_error_change_is_written_only_when_the_text_changes() {
        let reach = ResumeErrorChange::to_reach;
        assert_eq!(reach(None, None), ResumeErrorChange::Leave);
        assert_eq!(
            reach(Some("down"), Some("down".into())),
            ResumeErrorChange::Leave
        );
        assert_eq!(reach(Some("down"), None), ResumeErrorChange::Clear);
        assert_eq!(
            reach(None, Some("down".into())),
            ResumeErrorChange::Set("down".into())
        );
        assert_eq!(ResumeErrorChange::Leave.written(), None);
        assert_eq!(ResumeErrorChange::Clear.written(), Some(None));
        assert_eq!(
            ResumeErrorChange::Set("down".into()).written(),
            Some(Some("down"))
        );
    }
}
