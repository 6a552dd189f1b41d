//! The MCP gateway's unit of work ([`GatewayStore`]): find the row of the same call, or write
//! one, in one transaction serialised per call.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use iris_core::ports::{GatewayRequest, GatewayStore, NewApproval, StoreError};
use iris_core::wire::Event;

use crate::rows::{approval_from_row, APPROVAL_SELECT};
use crate::unit::{Stmt, WriteTx};
use crate::{timestamp_text, Engine, Store};

impl Store {
    /// The newest row of `row`'s call (same agent, same call hash) written at or after
    /// `since`, read in `tx`.
    async fn same_call(
        &self,
        tx: &mut WriteTx,
        row: &NewApproval,
        since: DateTime<Utc>,
    ) -> Result<Option<iris_core::wire::Approval>, StoreError> {
        let found = tx
            .fetch(
                Stmt::new(format!(
                    "{APPROVAL_SELECT} WHERE a.requested_by = $1 AND a.call_hash = $2 \
                     AND a.created_at >= $3 ORDER BY a.created_at DESC, a.id DESC LIMIT 1"
                ))
                .opt_text(row.requested_by.as_deref())
                .text(&row.call_hash)
                .text(&timestamp_text(since)),
                "finding the row of the same gateway call",
            )
            .await?;
        found.first().map(approval_from_row).transpose()
    }
}

#[async_trait]
impl GatewayStore for Store {
    async fn request(
        &self,
        row: &NewApproval,
        attach_since: DateTime<Utc>,
        events: &[Event],
    ) -> Result<GatewayRequest, StoreError> {
        let mut tx = self.begin_write().await?;
        let written = async {
            if self.engine == Engine::Postgres {
                // Two identical calls at once on two servers: the second waits here for the
                // first's commit, then finds its row (SQLite has one writer at a time).
                tx.exec(
                    Stmt::new("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))").text(
                        &format!(
                            "iris:gateway:{}:{}",
                            row.requested_by.as_deref().unwrap_or_default(),
                            row.call_hash
                        ),
                    ),
                    "serialising a gateway call",
                )
                .await?;
            }
            if let Some(approval) = self.same_call(&mut tx, row, attach_since).await? {
                return Ok(Some(approval));
            }
            self.write_row(&mut tx, row).await?;
            self.stage_events(&mut tx, events).await?;
            Ok(None)
        }
        .await;
        match written {
            Err(e) => {
                tx.rollback().await;
                Err(e)
            }
            Ok(Some(approval)) => {
                tx.rollback().await;
                Ok(GatewayRequest {
                    approval,
                    attached: true,
                })
            }
            Ok(None) => {
                tx.commit().await?;
                self.deliver(events);
                Ok(GatewayRequest {
                    approval: row.pending_view(),
                    attached: false,
                })
            }
        }
    }
}
