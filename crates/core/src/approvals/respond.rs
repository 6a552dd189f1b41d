//! Respond and expire (DESIGN §3 steps 5, 6 and 9): the owner's answer through any surface, and
//! the sweep's lapse. Each is one commit: the compare-and-set from `pending`, its audit entry and
//! the resume job; the run resumes later, in the job worker (a separate, recoverable step).

use std::sync::Mutex;

use serde_json::{json, Value};

use super::edit::EditRefusal;
use super::narrow::{decided_terms, ItemsRefusal};
use super::{Actor, ApprovalService, IRIS_ACTOR};
use crate::approval::can_move;
use crate::passkey::{Assertion, PasskeyRefusal};
use crate::ports::{
    Decided, DecisionCommit, DecisionRead, NewAuditEntry, Outbox, Response, StoreError,
};
use crate::wire::{Approval, ApprovalStatus, AuditKind, Decision, Event, Surface};

/// Why an answer was not stored. Each maps to one HTTP status in the server.
#[derive(Debug, thiserror::Error)]
pub enum RespondError {
    /// A read device tried to answer (403).
    #[error(transparent)]
    Forbidden(#[from] super::NotControl),
    /// No such row (404).
    #[error("approval `{0}` does not exist")]
    NotFound(String),
    /// Someone answered first (409); carries the row as it stands.
    #[error("This was already {} by {} via {} at {}.", .0.status.as_str(),
        .0.responded_by.as_deref().unwrap_or("someone"), .0.surface.as_deref().unwrap_or("an unknown surface"),
        .0.responded_at.map(crate::wire::when_utc).unwrap_or_default())]
    AlreadyDecided(Box<Approval>),
    /// The row lapsed unanswered (410).
    #[error("This approval expired at {} and can no longer be answered; nothing was changed.", crate::wire::when_utc(.0.expires_at))]
    Expired(Box<Approval>),
    /// Approving this row needs the owner's passkey and none acceptable came with the answer
    /// (403 with the code `passkey_required`, checked after the 404/409/410 checks); the
    /// sentence names the passkey and the rule; nothing was decided.
    #[error("{0}")]
    PasskeyRequired(String, Box<Approval>),
    /// The device that requested the card was revoked (409): the card was rejected instead,
    /// in the answer's own unit, and nothing ran; carries the row as it stands.
    #[error("This card was requested by the device `{}`, which was revoked; it was rejected and nothing ran.",
        .0.requested_by.as_deref().unwrap_or("?"))]
    RequesterRevoked(Box<Approval>),
    /// The owner's choice of items does not fit the card or the answer (400); nothing was
    /// decided.
    #[error(transparent)]
    Items(#[from] ItemsRefusal),
    /// The owner's edit does not fit the card, or the edited call breaks the tool's rules
    /// (400); nothing was decided.
    #[error(transparent)]
    Edit(#[from] EditRefusal),
    /// The owner's words break the one rule of a reason ([`super::reason::reason_text`]: at
    /// most [`super::reason::MAX_REASON_CHARS`] characters, no control characters but line
    /// breaks), as they do given after the tap (400); nothing was decided.
    #[error("{0}")]
    Reason(String),
    /// Storage failed; nothing was decided (500).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// How the owner shaped the call they answer (docs/adr/0122-shaping-a-call.md): some of its
/// items, or edits of its editable fields; neither for an answer to the call as pinned.
#[derive(Debug, Clone, Copy, Default)]
pub struct Shaping<'a> {
    /// Indices into `approval.items` to approve (any order).
    pub items: Option<&'a [u32]>,
    /// Field → new value.
    pub edits: Option<&'a serde_json::Map<String, Value>>,
}

impl ApprovalService {
    /// The edited call's terms, checked before the decision's unit (the checks call the
    /// plugin): `None` without edits, or when the card is no longer waiting (the unit then
    /// answers 409 or 410).
    pub(super) async fn edit_first(
        &self,
        id: &str,
        decision: Decision,
        shaping: &Shaping<'_>,
    ) -> Result<Option<crate::ports::DecidedTerms>, RespondError> {
        let Some(edits) = shaping.edits else {
            return Ok(None);
        };
        let row = self
            .store
            .approval(id)
            .await?
            .ok_or_else(|| RespondError::NotFound(id.to_string()))?;
        if row.status != ApprovalStatus::Pending || row.lapsed_at(self.clock.now()) {
            return Ok(None);
        }
        Ok(self
            .edited_terms(&row, decision, shaping.items, edits)
            .await?)
    }
}

/// The reason a card of a revoked device is rejected with.
pub const REVOKED_REASON: &str = "requested by a revoked device";

impl ApprovalService {
    /// Stores an owner's answer: checks the actor's scope, then, in one unit of work, reads the
    /// row once, checks the move with the state machine ([`can_move`]) and writes decision,
    /// audit entry and resume job by compare-and-set from `pending` (first writer wins), and
    /// wakes the job worker. A row that lapsed by the store's time source is expired in that
    /// same unit if the sweep has not yet, and the answer refused.
    ///
    /// # Errors
    /// [`RespondError::Forbidden`] for read scope, `NotFound`, `AlreadyDecided` (who, where,
    /// when), `Expired`, `Store`.
    pub async fn respond(
        &self,
        id: &str,
        decision: Decision,
        reason: Option<String>,
        actor: &Actor,
    ) -> Result<Approval, RespondError> {
        self.respond_with_passkey(id, decision, reason, Shaping::default(), actor, None)
            .await
    }

    /// [`ApprovalService::respond`] with the owner's passkey answer for a card that needs one
    /// (ADR-0118 decision 4): approving such a card checks `passkey` inside the decision's unit
    /// of work ([`ApprovalService::check_passkey`]: this approval's ceremony and call hash,
    /// unused, unlapsed, verified with user verification), after the 404/409/410 checks, and
    /// the commit marks the ceremony used. Rejecting never needs one.
    ///
    /// `shaping` is how the owner shaped the call (docs/adr/0122-shaping-a-call.md): a choice
    /// of the card's items to approve (indices into `approval.items`, any order; every index is
    /// the whole call), written as a term of the decision ([`decided_terms`]) and checked after
    /// the 404/409/410 checks and before the passkey's; or edits of the fields the card lets
    /// them edit, checked as the model's call is ([`ApprovalService::edited_terms`]) before the
    /// decision's unit.
    ///
    /// # Errors
    /// As [`ApprovalService::respond`], [`RespondError::Items`] for a choice that does not fit
    /// (with a rejection; empty, repeated or out of range; a card that is all or nothing),
    /// [`RespondError::Edit`] for an edit that does not fit or that the tool refuses, and
    /// [`RespondError::PasskeyRequired`] when the card needs a passkey and `passkey` is missing
    /// or not accepted, or was made for another call. Nothing is decided then.
    pub async fn respond_with_passkey(
        &self,
        id: &str,
        decision: Decision,
        reason: Option<String>,
        shaping: Shaping<'_>,
        actor: &Actor,
        passkey: Option<&Assertion>,
    ) -> Result<Approval, RespondError> {
        actor.require_control("answer approvals")?;
        let items = shaping.items;
        let edited = self.edit_first(id, decision, &shaping).await?;
        let status = match decision {
            Decision::Approve => ApprovalStatus::Approved,
            Decision::Reject => ApprovalStatus::Rejected,
        };
        // A reason given with the answer is held to the rule of one given after the tap: the
        // same words stored and shown on every surface, whichever way they came.
        let reason = match reason.filter(|r| !r.trim().is_empty()) {
            Some(r) => Some(super::reason::reason_text(&r).map_err(RespondError::Reason)?),
            None => None,
        };
        let refused: Mutex<Option<PasskeyRefusal>> = Mutex::new(None);
        let bad_items: Mutex<Option<ItemsRefusal>> = Mutex::new(None);
        let plan = |read: &DecisionRead| {
            // Every stamp of the unit is the database's time, read once with the row
            // (docs/liveness.md "truthful records").
            let at = read.now;
            if read.lapsed {
                return self.expiry(&read.approval, at);
            }
            if read.requester_revoked {
                // Whatever the answer, a revoked device's card is rejected (docs/liveness.md
                // "revoked devices").
                return self.revocation(&read.approval, at);
            }
            if !can_move(read.approval.status, status) {
                return None;
            }
            let decided = match &edited {
                Some(terms) => Some(terms.clone()),
                None if shaping.edits.is_some() => None,
                None => match decided_terms(&read.approval, decision, items) {
                    Ok(decided) => decided,
                    Err(refusal) => {
                        *bad_items.lock().unwrap_or_else(|p| p.into_inner()) = Some(refusal);
                        return None;
                    }
                },
            };
            let mut used = None;
            let mut proof = Value::Null;
            if status == ApprovalStatus::Approved && read.approval.passkey_required {
                // The passkey signs the call that will run: the narrowed one where so.
                let runs = decided
                    .as_ref()
                    .map_or(read.approval.call_hash.as_str(), |d| {
                        d.call.call_hash.as_str()
                    });
                match self.check_passkey(read, passkey, runs, at) {
                    Ok((passkey_use, record)) => {
                        used = Some(passkey_use);
                        proof = record;
                    }
                    Err(refusal) => {
                        *refused.lock().unwrap_or_else(|p| p.into_inner()) = Some(refusal);
                        return None;
                    }
                }
            }
            let mut result = json!({"decision": status.as_str(), "reason": reason});
            if !proof.is_null() {
                result["passkey"] = proof;
            }
            let response = Response {
                status,
                responded_by: actor.name.clone(),
                surface: actor.surface.into(),
                reason: reason.clone(),
                at,
                decided,
            };
            // The row as this answer leaves it says what was chosen (wire/decided.rs), and the
            // audit keeps it: the call that runs, what was edited or left out.
            let after = answered(read.approval.clone(), &response);
            if let Some(call) = &after.decided_call {
                result["decided_call"] = json!(call);
            }
            if let Some(fields) = &after.edited_fields {
                result["edited_fields"] = json!(fields);
            }
            if let Some(kept) = &after.approved_items {
                result["approved_items"] = json!(kept);
                result["left_out"] = json!(after
                    .left_out_indices()
                    .into_iter()
                    .zip(after.left_out_lines())
                    .map(|(i, line)| json!({"index": i, "item": after.items[i], "line": line}))
                    .collect::<Vec<_>>());
            }
            let audit = NewAuditEntry {
                approval_id: id.to_string(),
                kind: AuditKind::Decision,
                item: None,
                result,
                undo_available: false,
                actor: actor.name.clone(),
                surface: Some(actor.surface.into()),
                at,
            };
            Some(DecisionCommit {
                response,
                audit,
                outbox: Outbox::of([Event::ApprovalResponded(after.clone())]),
                after,
                passkey: used,
            })
        };
        let ceremony = passkey.map(|p| p.ceremony_id.as_str());
        let decided = match self.store.decide(id, ceremony, &plan).await {
            Ok(decided) => decided,
            Err(StoreError::NotFound(_)) => return Err(RespondError::NotFound(id.to_string())),
            Err(e) => return Err(e.into()),
        };
        match decided {
            Decided::Written(row) if row.status == ApprovalStatus::Expired => {
                self.runtime.job_ready();
                Err(RespondError::Expired(row))
            }
            Decided::Written(row) if row.status != status => {
                // The answer became the revocation's rejection.
                self.runtime.job_ready();
                Err(RespondError::RequesterRevoked(row))
            }
            Decided::Written(row) => {
                // Test-only (debug builds, `IRIS_FAILPOINT`): the decision and its job are
                // stored, no worker woken; any server's sweep must pick the job up after a
                // crash here.
                crate::failpoint::hit(crate::failpoint::AFTER_DECISION);
                self.runtime.job_ready();
                Ok(*row)
            }
            Decided::Unchanged(row) => {
                if let Some(refusal) = bad_items.into_inner().unwrap_or_else(|p| p.into_inner()) {
                    return Err(RespondError::Items(refusal));
                }
                let refusal = refused.into_inner().unwrap_or_else(|p| p.into_inner());
                match refusal {
                    Some(refusal) => Err(RespondError::PasskeyRequired(refusal.to_string(), row)),
                    // The row was still pending when read, yet nothing was written: the
                    // ceremony's or the passkey's compare-and-set refused (another use of the
                    // same answer won, the passkey was removed meanwhile, or another approval
                    // stored a later signature counter first: docs/adr/0124-signed-consent.md).
                    None if row.status == ApprovalStatus::Pending && passkey.is_some() => {
                        Err(RespondError::PasskeyRequired(
                            PasskeyRefusal::WrongCeremony(
                                "a challenge that was used meanwhile, by a passkey that was \
                                 removed meanwhile, or with a signature counter another approval \
                                 has moved past"
                                    .into(),
                            )
                            .to_string(),
                            row,
                        ))
                    }
                    // Still pending when read and nothing written: the answer's compare-and-set
                    // found the row lapsed by the store's clock meanwhile (`expires_at > now`
                    // failed), so it lost to the clock: 410, like any late answer, and the
                    // lapse is recorded now (the sweep would, later).
                    None if row.status == ApprovalStatus::Pending => {
                        let lapsed = self.expire(id).await.ok().flatten();
                        Err(RespondError::Expired(lapsed.map(Box::new).unwrap_or(row)))
                    }
                    None => Err(settled(*row)),
                }
            }
        }
    }

    /// Row `id` read for a step before an answer (a passkey challenge, an edit's review), as
    /// the answer will find it: control scope, and the row still pending and unlapsed at `now`.
    ///
    /// # Errors
    /// [`RespondError::Forbidden`], `NotFound`, `Expired`, `AlreadyDecided`, `Store`.
    pub(super) async fn answerable(
        &self,
        id: &str,
        actor: &Actor,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Approval, RespondError> {
        actor.require_control("answer approvals")?;
        let row = self
            .store
            .approval(id)
            .await?
            .ok_or_else(|| RespondError::NotFound(id.to_string()))?;
        if row.status == ApprovalStatus::Expired || row.lapsed_at(now) {
            return Err(RespondError::Expired(Box::new(row)));
        }
        if row.status != ApprovalStatus::Pending {
            return Err(RespondError::AlreadyDecided(Box::new(row)));
        }
        Ok(row)
    }

    /// The lapse of `row` at `at`: the expiry, its audit entry and `approval.lapsed`, when it
    /// may still lapse ([`can_move`] to `expired`).
    fn expiry(&self, row: &Approval, at: chrono::DateTime<chrono::Utc>) -> Option<DecisionCommit> {
        by_iris(
            row,
            ApprovalStatus::Expired,
            "nobody answered in time",
            (AuditKind::Lapse, json!({"status": "expired"})),
            at,
        )
    }

    /// The rejection of `row`, a card of a revoked device, at `at` ([`REVOKED_REASON`]), with
    /// its audit entry and `approval.responded`, when it may still be rejected.
    fn revocation(
        &self,
        row: &Approval,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Option<DecisionCommit> {
        by_iris(
            row,
            ApprovalStatus::Rejected,
            REVOKED_REASON,
            (
                AuditKind::Decision,
                json!({"decision": "rejected", "reason": REVOKED_REASON}),
            ),
            at,
        )
    }

    /// Rejects every pending card whose requesting device is revoked (docs/liveness.md
    /// "revoked devices"): each in its own decision unit (compare-and-set from `pending`, audit
    /// entry, resume job, `approval.responded` on every surface), by `iris` through `sweep`,
    /// "requested by a revoked device". Run by every sweep, and right after a revocation on the
    /// server that made it. Returns the rows it rejected.
    ///
    /// # Errors
    /// [`StoreError`].
    pub async fn reject_revoked(&self) -> Result<Vec<Approval>, StoreError> {
        let mut rejected = Vec::new();
        for id in self.store.revoked_requests().await? {
            let plan = |read: &DecisionRead| {
                if read.lapsed {
                    self.expiry(&read.approval, read.now)
                } else if read.requester_revoked {
                    self.revocation(&read.approval, read.now)
                } else {
                    None
                }
            };
            if let Decided::Written(row) = self.store.decide(&id, None, &plan).await? {
                self.runtime.job_ready();
                if row.status == ApprovalStatus::Rejected {
                    rejected.push(*row);
                }
            }
        }
        Ok(rejected)
    }

    /// Marks row `id` `expired` if it has lapsed by the store's time source (compare-and-set),
    /// with a lapse audit entry, `approval.lapsed` and a resume job (the run resumes with "the
    /// approval lapsed; nothing was changed"). Returns the expired row, or `None` when it was
    /// not lapsed or is no longer pending.
    ///
    /// # Errors
    /// [`StoreError`].
    pub async fn expire(&self, id: &str) -> Result<Option<Approval>, StoreError> {
        let plan = |read: &DecisionRead| {
            if read.lapsed {
                self.expiry(&read.approval, read.now)
            } else {
                None
            }
        };
        match self.store.decide(id, None, &plan).await? {
            Decided::Written(row) => {
                self.runtime.job_ready();
                Ok(Some(*row))
            }
            Decided::Unchanged(_) => Ok(None),
        }
    }

    /// The expiry sweep (DESIGN §3 step 9): expires every pending row lapsed by the store's
    /// time source. Safe on every server at once (each row expires once). Returns the rows this
    /// sweep expired.
    ///
    /// # Errors
    /// [`StoreError`].
    pub async fn expire_lapsed(&self) -> Result<Vec<Approval>, StoreError> {
        let mut expired = Vec::new();
        for id in self.store.lapsed().await? {
            if let Some(row) = self.expire(&id).await? {
                expired.push(row);
            }
        }
        Ok(expired)
    }
}

/// A decision IRIS itself makes on `row` at `at` (by `iris` through `sweep`): `status` with
/// `reason`, the audit entry `(kind, result)`, and the event that says so (`approval.lapsed`
/// for an expiry, else `approval.responded`); `None` when the row may no longer move there.
fn by_iris(
    row: &Approval,
    status: ApprovalStatus,
    reason: &str,
    (kind, result): (AuditKind, Value),
    at: chrono::DateTime<chrono::Utc>,
) -> Option<DecisionCommit> {
    if !can_move(row.status, status) {
        return None;
    }
    let response = Response {
        status,
        responded_by: IRIS_ACTOR.into(),
        surface: Surface::Sweep.into(),
        reason: Some(reason.into()),
        at,
        decided: None,
    };
    let audit = NewAuditEntry {
        approval_id: row.id.clone(),
        kind,
        item: None,
        result,
        undo_available: false,
        actor: IRIS_ACTOR.into(),
        surface: Some(Surface::Sweep.into()),
        at,
    };
    let after = answered(row.clone(), &response);
    let event = if status == ApprovalStatus::Expired {
        Event::ApprovalLapsed(after.clone())
    } else {
        Event::ApprovalResponded(after.clone())
    };
    Some(DecisionCommit {
        response,
        audit,
        outbox: Outbox::of([event]),
        after,
        passkey: None,
    })
}

/// The row with `response` applied, as the commit writes it.
fn answered(mut row: Approval, response: &Response) -> Approval {
    row.status = response.status;
    row.responded_at = Some(response.at);
    row.responded_by = Some(response.responded_by.clone());
    row.surface = Some(response.surface.clone());
    row.reason = response.reason.clone();
    if let Some(terms) = &response.decided {
        row.approved_items = (!terms.items.is_empty()).then(|| terms.items.clone());
        row.edited_fields = (!terms.edited_fields.is_empty()).then(|| terms.edited_fields.clone());
        row.decided_call = Some(terms.call.clone());
    }
    row
}

/// The error for an answer to a row that is no longer pending.
fn settled(row: Approval) -> RespondError {
    if row.status == ApprovalStatus::Expired {
        RespondError::Expired(Box::new(row))
    } else {
        RespondError::AlreadyDecided(Box::new(row))
    }
}
