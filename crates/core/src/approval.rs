//! The approval state machine (DESIGN §3 steps 5 and 9): which kind a call gets, how long it
//! stays answerable, and which moves are allowed. Only `pending` moves, once, to a final state.

use chrono::{DateTime, Duration, Utc};

use crate::manifest::ToolSpec;
use crate::wire::{ApprovalKind, ApprovalStatus, Effect};

/// How long rows stay answerable (DESIGN §3 step 9; settings `IRIS_DESTRUCTIVE_TTL_SECS`,
/// `IRIS_EVALUATOR_TTL_SECS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ttl {
    /// Destructive and pinned-write rows (default 1 hour).
    pub destructive: Duration,
    /// Evaluator halts (default 10 minutes).
    pub evaluator: Duration,
}

impl Default for Ttl {
    fn default() -> Self {
        Ttl {
            destructive: Duration::seconds(3600),
            evaluator: Duration::seconds(600),
        }
    }
}

impl Ttl {
    /// When a row of `kind` written at `created_at` lapses.
    pub fn expires_at(&self, kind: ApprovalKind, created_at: DateTime<Utc>) -> DateTime<Utc> {
        match kind {
            ApprovalKind::Destructive | ApprovalKind::PinnedWrite => created_at + self.destructive,
            ApprovalKind::Evaluator => created_at + self.evaluator,
        }
    }
}

/// The kind of row an approved-per-call tool gets: `destructive` for destructive tools,
/// `pinned_write` for writes with `approval: pinned` (DESIGN §2 "kind").
pub fn kind_for(spec: &ToolSpec) -> ApprovalKind {
    if spec.effect == Effect::Destructive {
        ApprovalKind::Destructive
    } else {
        ApprovalKind::PinnedWrite
    }
}

/// Whether a row may move from `from` to `to`: only from `pending`, only to a final state.
pub fn can_move(from: ApprovalStatus, to: ApprovalStatus) -> bool {
    from == ApprovalStatus::Pending && to != ApprovalStatus::Pending
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pending_moves_and_only_once() {
        use ApprovalStatus::*;
        for to in [Approved, Rejected, Expired] {
            assert!(can_move(Pending, to));
            for from in [Approved, Rejected, Expired] {
                assert!(!can_move(from, to), "{from:?} -> {to:?}");
            }
        }
        assert!(!can_move(Pending, Pending));
    }

    #[test]
    fn ttl_per_kind() {
        let t0 = DateTime::parse_from_rfc3339("2026-11-30T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let ttl = Ttl::default();
        assert_eq!(
            ttl.expires_at(ApprovalKind::Destructive, t0),
            t0 + Duration::hours(1)
        );
        assert_eq!(
            ttl.expires_at(ApprovalKind::PinnedWrite, t0),
            t0 + Duration::hours(1)
        );
        assert_eq!(
            ttl.expires_at(ApprovalKind::Evaluator, t0),
            t0 + Duration::minutes(10)
        );
    }
}
