//! The lifecycle's units of work on both engines (DESIGN §9): each phase is one transaction,
//! whole or not at all; a decided row is a durable resume job claimed under a lease; every write
//! under a lease is fenced by its epoch; lease and expiry comparisons read the store's one time
//! source (here a clock the test moves, bound as a parameter). Each body runs as
//! `SUBJECT::sqlite::NAME` and `SUBJECT::postgres::NAME`.
//!
//! One module per subject: [`halt_and_decision`] (the halt's one commit; a decision makes one
//! job), [`leases`] (a job's lease: held, renewed, fenced, taken over; its outcome and end),
//! [`claims`] (what a claim reports and refuses), [`narrowed`] (an approval of some items: its
//! decided call written once, and only that call claimed), and [`durability`] (the audit log, a resumed
//! turn, and reopening the database). This module holds the units as the service calls them.

mod claims;
mod durability;
mod halt_and_decision;
mod leases;
mod narrowed;

use crate::common;

use common::*;
use iris_core::ports::{
    ClaimPlan, ClaimedJob, JobEnd, JobFinish, JobPick, JobSnapshot, LedgerStep, Outcome,
    OutcomeRecord, ResumeErrorChange,
};

const LEASE: u32 = 30;

/// Claims `pick` for `owner` with `plan`, as the service does.
async fn claim(
    store: &Store,
    pick: JobPick<'_>,
    owner: &str,
    plan: impl Fn(&JobSnapshot) -> ClaimPlan + Send + Sync,
) -> Option<ClaimedJob> {
    store
        .claim_job(pick, owner, LEASE, &[], &plan)
        .await
        .expect("claim")
}

/// The plan that claims the approved call of the snapshot's row.
fn claim_call(snapshot: &JobSnapshot) -> ClaimPlan {
    let row = snapshot.approval.as_ref().expect("row");
    ClaimPlan {
        ledger: LedgerStep::Claim {
            tool: row.tool.clone(),
            args_canonical: canonical_json(&row.args),
        },
        ..ClaimPlan::lease_only()
    }
}

fn lease_only(_: &JobSnapshot) -> ClaimPlan {
    ClaimPlan::lease_only()
}

fn outcome() -> OutcomeRecord {
    OutcomeRecord {
        outcome: Outcome::Executed,
        result: json!({"status": "trashed", "trashed": 2}),
        audit: vec![NewAuditEntry {
            approval_id: "a1".to_owned(),
            kind: AuditKind::Execution,
            item: Some("m1".to_owned()),
            result: json!({"status": "trashed"}),
            undo_available: true,
            actor: "iris".to_owned(),
            surface: None,
            at: t0(),
        }],
        outbox: iris_core::ports::Outbox::default(),
    }
}

fn done() -> JobFinish {
    JobFinish {
        turn: None,
        end: JobEnd::Done,
        resume_error: ResumeErrorChange::Leave,
        outbox: iris_core::ports::Outbox::default(),
    }
}

async fn job_state(store: &Store, id: &str) -> Option<(String, i64)> {
    sqlx::query_as::<_, (String, i64)>(
        "SELECT state, lease_epoch FROM resume_jobs WHERE approval_id = $1",
    )
    .bind(id)
    .fetch_optional(store.pool())
    .await
    .expect("read job")
}

async fn count(store: &Store, sql: &str) -> i64 {
    sqlx::query_scalar::<_, i64>(sql)
        .fetch_one(store.pool())
        .await
        .expect("count")
}
