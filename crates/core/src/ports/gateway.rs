//! The MCP gateway's one unit of work: an agent's gated call becomes one approval row, or
//! attaches to the row of the same call (DESIGN §9 "IRIS as an MCP gateway").

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{NewApproval, Outbox, StoreError};
use crate::wire::Approval;

/// What [`GatewayStore::request`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayRequest {
    /// The row the call is held on: the one written, or the one it attached to.
    pub approval: Approval,
    /// `true` when the call attached to an earlier row of the same call (no new card).
    pub attached: bool,
}

/// What [`GatewayStore::request`] found room for.
#[derive(Debug, Clone, PartialEq)]
pub enum GatewayWrite {
    /// The call is held on a row (written, or attached to the same call's).
    Held(Box<GatewayRequest>),
    /// The agent already has `waiting` pending cards, the most it may have: nothing written.
    Full {
        /// The agent's pending cards (not lapsed) counted in the same unit.
        waiting: u32,
    },
}

/// The gateway's storage.
#[async_trait]
pub trait GatewayStore: Send + Sync {
    /// In one unit: the newest row of the same call (the same `requested_by` agent and the same
    /// `call_hash`, which covers the upstream's tool and the canonical arguments) written at or
    /// after `attach_since`, if there is one (attached, nothing written); else, when the agent
    /// has fewer than `max_waiting` pending cards that have not lapsed (`expires_at` after
    /// `row.created_at`), `row` is written (pending) and `outbox` staged with it; else nothing
    /// is written ([`GatewayWrite::Full`]). The same call always attaches, full or not. Two
    /// calls of one agent at once are serialised (SQLite's one writer; an advisory transaction
    /// lock per agent on PostgreSQL): identical calls get one row, and the cap holds under
    /// concurrency.
    ///
    /// # Errors
    /// [`StoreError`]; nothing is written.
    async fn request(
        &self,
        row: &NewApproval,
        attach_since: DateTime<Utc>,
        max_waiting: u32,
        outbox: &Outbox,
    ) -> Result<GatewayWrite, StoreError>;

    /// The newest row of the same call (agent `agent`, `call_hash`) written at or after `since`,
    /// read without writing anything: a repeat whose card can no longer be made (the call ran
    /// and its target is gone) still finds the row it would attach to.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn same_call(
        &self,
        agent: &str,
        call_hash: &str,
        since: DateTime<Utc>,
    ) -> Result<Option<crate::wire::Approval>, StoreError>;

    /// Records that the result of gateway row `approval_id`'s executed call is being given to
    /// its agent at `at`, unless it was before: `None` when this is the first delivery (the
    /// agent gets the result), `Some(first)` with when it was first given (the agent is told
    /// `executed_before`). Two deliveries at once: one is first. Written once, never changed.
    ///
    /// # Errors
    /// [`StoreError`]; when it fails the agent is not given the result as new.
    async fn deliver_result(
        &self,
        approval_id: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<DateTime<Utc>>, StoreError>;
}
