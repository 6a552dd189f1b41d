//! The MCP gateway's one unit of work: an agent's gated call becomes one approval row, or
//! attaches to the row of the same call (DESIGN §9 "IRIS as an MCP gateway").

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{NewApproval, StoreError};
use crate::wire::{Approval, Event};

/// What [`GatewayStore::request`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayRequest {
    /// The row the call is held on: the one written, or the one it attached to.
    pub approval: Approval,
    /// `true` when the call attached to an earlier row of the same call (no new card).
    pub attached: bool,
}

/// The gateway's storage.
#[async_trait]
pub trait GatewayStore: Send + Sync {
    /// In one unit: the newest row of the same call (the same `requested_by` agent and the same
    /// `call_hash`, which covers the upstream's tool and the canonical arguments) written at or
    /// after `attach_since`, if there is one (attached, nothing written); else `row` is written
    /// (pending) and `events` staged with it. Two identical calls at once get one row: the find
    /// and the write are serialised per call (SQLite's one writer; an advisory transaction lock
    /// on PostgreSQL).
    ///
    /// # Errors
    /// [`StoreError`]; nothing is written.
    async fn request(
        &self,
        row: &NewApproval,
        attach_since: DateTime<Utc>,
        events: &[Event],
    ) -> Result<GatewayRequest, StoreError>;
}
