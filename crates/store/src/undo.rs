//! [`UndoStore`] on both engines: the undo from the card's two units of work (see
//! [`iris_core::ports::undo`]). The claim is an insert that does nothing when the approval
//! already has an undo (its primary key makes once) and that the database's trigger refuses
//! unless the row is approved with its call executed; the outcome is a compare-and-set from
//! `running` (also for the sweep's `unknown`).

use async_trait::async_trait;
use iris_core::ports::{NewAuditEntry, Outbox, StoreError, UndoClaim, UndoOutcome, UndoStore};

use crate::rows::{backend, to_json};
use crate::unit::Stmt;
use crate::{timestamp_text, Store};

#[async_trait]
impl UndoStore for Store {
    async fn claim_undo(&self, claim: &UndoClaim) -> Result<bool, StoreError> {
        let mut tx = self.begin_write().await?;
        let written = async {
            tx.exec_cas(
                self.timed(
                    "INSERT INTO undos (approval_id, tool, args_canonical, items, state, actor, \
                     surface, started_at, lease_until) \
                     VALUES ($3, $4, $5, $6, 'running', $7, $8, $9, {until}) \
                     ON CONFLICT (approval_id) DO NOTHING",
                )
                .int(i64::from(claim.lease_secs))
                .text(&claim.approval_id)
                .text(&claim.tool)
                .text(&claim.args_canonical)
                .text(&to_json(&claim.items, "an undo's items")?)
                .text(&claim.by)
                .text(&claim.surface)
                .text(&timestamp_text(claim.at)),
                "claiming an undo (one per approval)",
            )
            .await?;
            self.write_audit(&mut tx, std::slice::from_ref(&claim.audit))
                .await?;
            self.stage_outbox(&mut tx, &claim.outbox).await
        }
        .await;
        let landed = crate::writes::finish_cas(tx, written).await?;
        if landed {
            self.deliver(&claim.outbox);
        }
        Ok(landed)
    }

    async fn record_undo(&self, outcome: &UndoOutcome) -> Result<bool, StoreError> {
        let mut tx = self.begin_write().await?;
        let written = async {
            tx.exec_cas(
                Stmt::new(
                    "UPDATE undos SET state = $1, result = $2, finished_at = $3 \
                     WHERE approval_id = $4 AND state = 'running'",
                )
                .text(outcome.state.as_str())
                .text(&to_json(&outcome.result, "an undo's result")?)
                .text(&timestamp_text(outcome.at))
                .text(&outcome.approval_id),
                "recording an undo's outcome",
            )
            .await?;
            self.write_audit(&mut tx, &outcome.audit).await?;
            self.stage_outbox(&mut tx, &outcome.outbox).await
        }
        .await;
        let landed = crate::writes::finish_cas(tx, written).await?;
        if landed {
            self.deliver(&outcome.outbox);
        }
        Ok(landed)
    }

    async fn note_undone(
        &self,
        approval_id: &str,
        audit: &[NewAuditEntry],
        undo_left: Option<&str>,
        outbox: &Outbox,
    ) -> Result<bool, StoreError> {
        let mut tx = self.begin_write().await?;
        // Only while the card has no undo of its own. (On PostgreSQL a card undo claimed at
        // the same instant may still land: its run then finds these items back already and
        // says so; nothing runs twice on a card.)
        let own = tx
            .fetch(
                Stmt::new("SELECT approval_id AS id FROM undos WHERE approval_id = $1")
                    .text(approval_id),
                "checking that a card has no undo of its own",
            )
            .await;
        let written = match own {
            Err(e) => Err(e),
            Ok(rows) if !rows.is_empty() => {
                tx.rollback().await;
                return Ok(false);
            }
            Ok(_) => {
                async {
                    self.write_audit(&mut tx, audit).await?;
                    tx.exec(
                        Stmt::new("UPDATE approvals SET undo_left = $1 WHERE id = $2")
                            .opt_text(undo_left)
                            .text(approval_id),
                        "recording what a card's undo has left",
                    )
                    .await?;
                    self.stage_outbox(&mut tx, outbox).await
                }
                .await
            }
        };
        let landed = crate::writes::finish_cas(tx, written).await?;
        if landed {
            self.deliver(outbox);
        }
        Ok(landed)
    }

    async fn lapsed_undos(&self) -> Result<Vec<String>, StoreError> {
        sqlx::query_scalar::<_, String>(&format!(
            "SELECT approval_id FROM undos WHERE state = 'running' AND lease_until <= {} \
             ORDER BY lease_until, approval_id",
            self.now_sql()
        ))
        .bind(self.now_param())
        .fetch_all(&self.pool)
        .await
        .map_err(backend("finding undos whose server stopped"))
    }
}
