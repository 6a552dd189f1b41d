//! The governance kernel: the storage it runs over, and `respond_to_approval`, the one capability
//! every surface answers through (DESIGN §2 "surface"; §3 step 5; §8 "consent is a field on a
//! row, set only by respond_to_approval").
//!
//! No agent-facing tool can reach this: the agent loop holds the queue only to write rows.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::approval::{has_lapsed, Ttl};
use crate::ports::{
    AuditLog, CheckpointStore, Clock, Ledger, NewAuditEntry, Notifier, QueueStore, Response, Scope,
    StoreError,
};
use crate::wire::{Approval, ApprovalStatus, AuditKind, Decision, Event};

/// Who answers, and through which surface (checked by `respond_to_approval`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// Device name (e.g. `owner-browser`, `phone`, `cli`).
    pub name: String,
    /// The device's scope: only `control` may answer (DESIGN §2 "device, scope").
    pub scope: Scope,
    /// `web`, `cli`, `api`, `telegram`, `phone`.
    pub surface: String,
}

/// Why an answer was not stored. Each maps to one HTTP status in the server.
#[derive(Debug, thiserror::Error)]
pub enum RespondError {
    /// A read device tried to answer (403).
    #[error("device `{0}` has read scope; only a control device may answer approvals")]
    Forbidden(String),
    /// No such row (404).
    #[error("approval `{0}` does not exist")]
    NotFound(String),
    /// Someone answered first (409); carries the row as it stands.
    #[error("This was already {} by {} via {} at {}.", .0.status.as_str(),
        .0.responded_by.as_deref().unwrap_or("someone"), .0.surface.as_deref().unwrap_or("an unknown surface"),
        .0.responded_at.map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string()).unwrap_or_default())]
    AlreadyDecided(Box<Approval>),
    /// The row lapsed unanswered (410).
    #[error("This approval expired at {} and can no longer be answered; nothing was changed.", .0.expires_at.format("%Y-%m-%d %H:%M:%S UTC"))]
    Expired(Box<Approval>),
    /// Storage failed; nothing was decided (500).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The storage and channels the governance kernel runs over.
#[derive(Clone)]
pub struct Governance {
    /// The approval queue.
    pub queue: Arc<dyn QueueStore>,
    /// The side-effect ledger.
    pub ledger: Arc<dyn Ledger>,
    /// The audit log.
    pub audit: Arc<dyn AuditLog>,
    /// Paused runs; `None` means runs cannot pause, so approved-per-call calls are refused.
    pub checkpoints: Option<Arc<dyn CheckpointStore>>,
    /// The channel router.
    pub notifier: Arc<dyn Notifier>,
    /// Time source.
    pub clock: Arc<dyn Clock>,
    /// Answerable windows.
    pub ttl: Ttl,
    /// `IRIS_APPROVALS_ENABLED`: when false, approved-per-call calls are refused (fail closed).
    pub enabled: bool,
}

impl Governance {
    /// Stores an owner's answer: checks the actor's scope, then moves the row by
    /// compare-and-set from `pending` (first writer wins), writes a decision audit entry and
    /// notifies `approval.responded`. Resuming the run is a separate step (DESIGN §3 step 6).
    ///
    /// # Errors
    /// [`RespondError::Forbidden`] for read scope, `NotFound`, `AlreadyDecided` (who, where,
    /// when), `Expired` (a lapsed row is marked expired here if the sweep has not yet), `Store`.
    pub async fn respond_to_approval(
        &self,
        id: &str,
        decision: Decision,
        reason: Option<String>,
        actor: &Actor,
    ) -> Result<Approval, RespondError> {
        if actor.scope != Scope::Control {
            return Err(RespondError::Forbidden(actor.name.clone()));
        }
        let row = self
            .queue
            .get(id)
            .await?
            .ok_or_else(|| RespondError::NotFound(id.to_string()))?;
        let now = self.clock.now();
        if has_lapsed(&row, now) {
            self.expire(id, now).await?;
        }
        let reason = reason
            .map(|r| r.trim().to_string())
            .filter(|r| !r.is_empty());
        let status = match decision {
            Decision::Approve => ApprovalStatus::Approved,
            Decision::Reject => ApprovalStatus::Rejected,
        };
        let response = Response {
            status,
            responded_by: actor.name.clone(),
            surface: actor.surface.clone(),
            reason: reason.clone(),
            at: now,
        };
        let won = self.queue.decide(id, &response).await?;
        let row = self
            .queue
            .get(id)
            .await?
            .ok_or_else(|| RespondError::NotFound(id.to_string()))?;
        if !won {
            return Err(if row.status == ApprovalStatus::Expired {
                RespondError::Expired(Box::new(row))
            } else {
                RespondError::AlreadyDecided(Box::new(row))
            });
        }
        self.audit
            .append(&NewAuditEntry {
                approval_id: id.to_string(),
                kind: AuditKind::Decision,
                item: None,
                result: json!({"decision": status.as_str(), "reason": reason}),
                undo_available: false,
                actor: actor.name.clone(),
                surface: Some(actor.surface.clone()),
                at: now,
            })
            .await?;
        self.notifier.notify(Event::ApprovalResponded(row.clone()));
        Ok(row)
    }

    /// Marks one lapsed pending row `expired` (compare-and-set), audits and notifies
    /// `approval.lapsed`. Returns whether this call expired it.
    ///
    /// # Errors
    /// [`StoreError`].
    pub async fn expire(&self, id: &str, now: DateTime<Utc>) -> Result<bool, StoreError> {
        let won = self
            .queue
            .decide(
                id,
                &Response {
                    status: ApprovalStatus::Expired,
                    responded_by: "iris".into(),
                    surface: "sweep".into(),
                    reason: Some("nobody answered in time".into()),
                    at: now,
                },
            )
            .await?;
        if won {
            self.audit
                .append(&NewAuditEntry {
                    approval_id: id.to_string(),
                    kind: AuditKind::Lapse,
                    item: None,
                    result: json!({"status": "expired"}),
                    undo_available: false,
                    actor: "iris".into(),
                    surface: Some("sweep".into()),
                    at: now,
                })
                .await?;
            if let Some(row) = self.queue.get(id).await? {
                self.notifier.notify(Event::ApprovalLapsed(row));
            }
        }
        Ok(won)
    }

    /// The expiry sweep (DESIGN §3 step 9): expires every pending row lapsed at the clock's now.
    /// Returns the ids this sweep expired (their runs are then resumed with a lapse observation).
    ///
    /// # Errors
    /// [`StoreError`].
    pub async fn expire_lapsed(&self) -> Result<Vec<String>, StoreError> {
        let now = self.clock.now();
        let mut expired = Vec::new();
        for id in self.queue.lapsed(now).await? {
            if self.expire(&id, now).await? {
                expired.push(id);
            }
        }
        Ok(expired)
    }
}
