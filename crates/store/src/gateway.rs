//! The MCP gateway's unit of work ([`GatewayStore`]): find the row of the same call, or write
//! one when the agent has room for another card, in one transaction serialised per agent.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use iris_core::ports::{
    GatewayRequest, GatewayStore, GatewayWrite, NewApproval, Outbox, StoreError,
};

use crate::rows::{
    answerable_sql, approval_from_row, live_device, Cols, ColumnRead, APPROVAL_SELECT,
};
use crate::unit::{Stmt, WriteTx};
use crate::{timestamp_text, Engine, Store};

impl Store {
    /// The newest row of `row`'s call (same agent, same call hash) written at or after
    /// `since`, read in `tx`.
    async fn same_call_in(
        &self,
        tx: &mut WriteTx,
        agent: Option<&str>,
        call_hash: &str,
        since: DateTime<Utc>,
    ) -> Result<Option<iris_core::wire::Approval>, StoreError> {
        let found = tx
            .fetch(
                Stmt::new(format!(
                    "{APPROVAL_SELECT} WHERE a.requested_by_device = {} AND a.call_hash = $2 \
                     AND a.created_at >= $3 ORDER BY a.created_at DESC, a.id DESC LIMIT 1",
                    live_device("$1")
                ))
                .opt_text(agent)
                .text(call_hash)
                .text(&timestamp_text(since)),
                "finding the row of the same gateway call",
            )
            .await?;
        found.first().map(approval_from_row).transpose()
    }

    /// How many of `agent`'s cards are pending and not lapsed at `now`, read in `tx`.
    async fn waiting_of(
        &self,
        tx: &mut WriteTx,
        agent: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<u32, StoreError> {
        let rows = tx
            .fetch(
                Stmt::new(format!(
                    "SELECT COUNT(*) AS n FROM approvals WHERE requested_by_device = {} \
                     AND status = 'pending' AND {}",
                    live_device("$1"),
                    answerable_sql("", "$2")
                ))
                .opt_text(agent)
                .text(&timestamp_text(now)),
                "counting an agent's waiting cards",
            )
            .await?;
        // A count that cannot be read refuses the card (fail closed), never counts as zero.
        let n = match rows.first() {
            Some(r) => r
                .int_at("n")
                .map_err(|e| {
                    StoreError::Backend(format!("counting an agent's waiting cards: {e}"))
                })?
                .unwrap_or(0),
            None => 0,
        };
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }
}

/// What the unit found before it commits or rolls back.
enum Found {
    Attached(Box<iris_core::wire::Approval>),
    Full(u32),
    Written,
}

#[async_trait]
impl GatewayStore for Store {
    async fn same_call(
        &self,
        agent: &str,
        call_hash: &str,
        since: DateTime<Utc>,
    ) -> Result<Option<iris_core::wire::Approval>, StoreError> {
        let mut tx = self.begin_write().await?;
        let found = self
            .same_call_in(&mut tx, Some(agent), call_hash, since)
            .await;
        tx.rollback().await;
        found
    }

    async fn request(
        &self,
        row: &NewApproval,
        attach_since: DateTime<Utc>,
        max_waiting: u32,
        outbox: &Outbox,
    ) -> Result<GatewayWrite, StoreError> {
        let mut tx = self.begin_write().await?;
        let written = async {
            if self.engine == Engine::Postgres {
                // Two calls of one agent at once on two servers: the second waits here for the
                // first's commit, then finds its row or counts it (SQLite has one writer at a
                // time).
                tx.exec(
                    Stmt::new("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))").text(
                        &format!(
                            "iris:gateway:{}",
                            row.requested_by.as_deref().unwrap_or_default(),
                        ),
                    ),
                    "serialising an agent's gateway calls",
                )
                .await?;
            }
            if let Some(approval) = self
                .same_call_in(
                    &mut tx,
                    row.requested_by.as_deref(),
                    &row.call_hash,
                    attach_since,
                )
                .await?
            {
                return Ok(Found::Attached(Box::new(approval)));
            }
            let waiting = self
                .waiting_of(&mut tx, row.requested_by.as_deref(), row.created_at)
                .await?;
            if waiting >= max_waiting {
                return Ok(Found::Full(waiting));
            }
            self.write_row(&mut tx, row).await?;
            self.stage_outbox(&mut tx, outbox).await?;
            Ok(Found::Written)
        }
        .await;
        match written {
            Err(e) => {
                tx.rollback().await;
                Err(e)
            }
            Ok(Found::Attached(approval)) => {
                tx.rollback().await;
                Ok(GatewayWrite::Held(Box::new(GatewayRequest {
                    approval: *approval,
                    attached: true,
                })))
            }
            Ok(Found::Full(waiting)) => {
                tx.rollback().await;
                Ok(GatewayWrite::Full { waiting })
            }
            Ok(Found::Written) => {
                tx.commit().await?;
                self.deliver(outbox);
                Ok(GatewayWrite::Held(Box::new(GatewayRequest {
                    approval: row.pending_view(),
                    attached: false,
                })))
            }
        }
    }

    async fn deliver_result(
        &self,
        approval_id: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<DateTime<Utc>>, StoreError> {
        // A nonce beside the time tells this delivery from an earlier one at the same instant.
        let stamp = format!("{} {}", timestamp_text(at), uuid::Uuid::new_v4().simple());
        let mut tx = self.begin_write().await?;
        let read = async {
            tx.exec(
                Stmt::new(
                    "INSERT INTO gateway_deliveries (approval_id, delivered_at) VALUES ($1, $2) \
                     ON CONFLICT (approval_id) DO NOTHING",
                )
                .text(approval_id)
                .text(&stamp),
                "recording a gateway result's delivery",
            )
            .await?;
            tx.fetch(
                Stmt::new(
                    "SELECT approval_id AS id, delivered_at FROM gateway_deliveries \
                     WHERE approval_id = $1",
                )
                .text(approval_id),
                "reading a gateway result's first delivery",
            )
            .await
        }
        .await;
        let rows = match read {
            Ok(rows) => rows,
            Err(e) => {
                tx.rollback().await;
                return Err(e);
            }
        };
        tx.commit().await?;
        let Some(row) = rows.first() else {
            return Err(StoreError::Backend(format!(
                "the delivery of approval `{approval_id}` was not recorded"
            )));
        };
        let stored = Cols::new(row, "gateway_deliveries", "id")?.text("delivered_at")?;
        if stored == stamp {
            return Ok(None);
        }
        let first = stored.split(' ').next().unwrap_or_default();
        let first = chrono::DateTime::parse_from_rfc3339(first)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| StoreError::Corrupt {
                id: format!("gateway_deliveries row {approval_id}"),
                reason: format!("delivered_at `{stored}`: {e}"),
            })?;
        Ok(Some(first))
    }
}
