//! The units that end a resume job other than by its run's own end (docs/liveness.md): the
//! lease confirmed right before a side effect, a run that failed for good ended `failed`, a
//! poison job (its claim refused by the database's rules) ended in a unit of its own; the reads
//! that re-plan a missed compare-and-set; and the test failpoints that make a unit fail once or
//! lose its answer once.

use iris_core::ports::{JobEnd, Lease, NewAuditEntry, Outbox, StoreError};
use iris_core::wire::Event;

use crate::rows::{approval_from_row, backend, APPROVAL_SELECT};
use crate::unit::{is_assertion, Stmt, WriteTx};
use crate::writes::finish_cas;
use crate::Store;

impl Store {
    /// [`iris_core::ports::ApprovalStore::confirm_lease`]'s unit.
    pub(crate) async fn confirm_lease_unit(
        &self,
        lease: &Lease,
        lease_secs: u32,
    ) -> Result<bool, StoreError> {
        failpoint_unit("confirm_lease")?;
        let mut tx = self.begin_write().await?;
        let confirmed = tx
            .exec_cas(
                self.timed(
                    "UPDATE resume_jobs SET lease_until = {until}, updated_at = {now} \
                     WHERE approval_id = $3 AND lease_epoch = $4 AND lease_owner = $5 \
                     AND state = 'running' AND lease_until > {now}",
                )
                .int(i64::from(lease_secs))
                .text(&lease.approval_id)
                .int(lease.epoch)
                .text(&lease.owner),
                "confirming a resume job's lease before its side effect",
            )
            .await;
        finish_cas(tx, confirmed).await
    }

    /// Whether the ledger entry of `lease`'s approval holds `state` with `result` while the job
    /// is still `running` under `lease` (owner and epoch): an outcome unit of this holder
    /// landed, though its answer may have been lost (docs/liveness.md "a missed
    /// compare-and-set").
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the read fails; [`StoreError::Corrupt`] for a stored result
    /// that is not JSON.
    pub(crate) async fn outcome_landed(
        &self,
        lease: &Lease,
        state: &str,
        result: &serde_json::Value,
    ) -> Result<bool, StoreError> {
        let Some((stored_state, stored_result, _)) = self.ledger_under_lease(lease).await? else {
            return Ok(false);
        };
        let stored_result = stored_result
            .map(|text| serde_json::from_str::<serde_json::Value>(&text))
            .transpose()
            .map_err(|e| StoreError::Corrupt {
                id: lease.approval_id.clone(),
                reason: format!("its ledger result is not JSON: {e}"),
            })?;
        Ok(stored_state == state && stored_result.as_ref() == Some(result))
    }

    /// Whether `located` is what `lease`'s unknown entry says of its items, written while
    /// `lease` still holds the job (an earlier try of `record_located` landed, its answer
    /// lost).
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the read fails.
    pub(crate) async fn located_landed(
        &self,
        lease: &Lease,
        located: &iris_core::wire::Located,
    ) -> Result<bool, StoreError> {
        Ok(self
            .ledger_under_lease(lease)
            .await?
            .and_then(|(_, _, text)| text)
            .and_then(|text| serde_json::from_str::<iris_core::wire::Located>(&text).ok())
            .is_some_and(|stored| &stored == located))
    }

    /// The ledger entry of `lease`'s approval (state, result, located) while the job is still
    /// `running` under `lease`; `None` when it is not (or there is no entry).
    async fn ledger_under_lease(
        &self,
        lease: &Lease,
    ) -> Result<Option<(String, Option<String>, Option<String>)>, StoreError> {
        sqlx::query_as(
            "SELECT l.state, l.result, l.located FROM ledger l JOIN resume_jobs j \
             ON j.approval_id = l.approval_id WHERE l.approval_id = $1 \
             AND j.lease_epoch = $2 AND j.lease_owner = $3 AND j.state = 'running'",
        )
        .bind(&lease.approval_id)
        .bind(lease.epoch)
        .bind(&lease.owner)
        .fetch_optional(&self.pool)
        .await
        .map_err(backend("reading a ledger entry under its lease"))
    }

    /// Whether `lease`'s job is ended `end` at `lease`'s epoch by `lease`'s owner: a job end of
    /// this holder landed, though its answer may have been lost.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the read fails.
    pub(crate) async fn job_ended_by(
        &self,
        lease: &Lease,
        end: JobEnd,
    ) -> Result<bool, StoreError> {
        let ended: Option<i64> = sqlx::query_scalar(
            "SELECT 1 FROM resume_jobs WHERE approval_id = $1 AND lease_epoch = $2 \
             AND lease_owner = $3 AND state = $4",
        )
        .bind(&lease.approval_id)
        .bind(lease.epoch)
        .bind(&lease.owner)
        .bind(end.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(backend("reading a resume job's end"))?;
        Ok(ended.is_some())
    }

    /// [`iris_core::ports::ApprovalStore::abandon_job`]'s unit.
    pub(crate) async fn abandon_job_unit(
        &self,
        lease: &Lease,
        reason: &str,
    ) -> Result<bool, StoreError> {
        let mut tx = self.begin_write().await?;
        let written = async {
            tx.exec_cas(
                self.timed(
                    "UPDATE resume_jobs SET state = 'failed', lease_until = NULL, \
                     updated_at = {now} WHERE approval_id = $2 AND lease_epoch = $3 \
                     AND lease_owner = $4 AND state = 'running'",
                )
                .text(&lease.approval_id)
                .int(lease.epoch)
                .text(&lease.owner),
                "ending a failed resume job",
            )
            .await?;
            tx.exec(
                self.timed(
                    "UPDATE ledger SET state = 'unknown', finished_at = {now} \
                     WHERE approval_id = $2 AND state = 'executing'",
                )
                .text(&lease.approval_id),
                "marking an interrupted execution unknown",
            )
            .await?;
            tx.exec(
                Stmt::new("UPDATE approvals SET resume_error = $1 WHERE id = $2")
                    .text(reason)
                    .text(&lease.approval_id),
                "recording a resume error",
            )
            .await?;
            self.stage_responded(&mut tx, &lease.approval_id).await
        }
        .await;
        match written {
            Ok(outbox) => {
                tx.commit().await?;
                self.deliver(&outbox);
                Ok(true)
            }
            Err(e) => {
                tx.rollback().await;
                if is_assertion(&e) {
                    Ok(false)
                } else {
                    Err(e)
                }
            }
        }
    }

    /// Stages `approval.responded` with row `approval_id` as `tx` leaves it (none when the row
    /// does not parse: the surfaces then read it as it is); the outbox, to deliver after the
    /// commit. The two units that call it are planned here, not by the service (a job ended
    /// for good and a poison job: the row they announce exists only inside their transaction),
    /// so they build their outbox from that row by the service's own rule, [`Outbox::of`].
    pub(crate) async fn stage_responded(
        &self,
        tx: &mut WriteTx,
        approval_id: &str,
    ) -> Result<Outbox, StoreError> {
        let rows = tx
            .fetch(
                Stmt::new(format!("{APPROVAL_SELECT} WHERE a.id = $1")).text(approval_id),
                "reading an approval row",
            )
            .await?;
        let outbox = Outbox::of(
            rows.iter()
                .filter_map(|row| approval_from_row(row).ok())
                .map(Event::ApprovalResponded),
        );
        self.stage_outbox(tx, &outbox).await?;
        Ok(outbox)
    }

    /// Ends a poison job (its claim's commit was refused by the database's rules) in a unit of
    /// its own: the job, if still at `epoch` (nobody claimed it since), `failed` with `error` as
    /// the row's resume error; an entry a former holder left `executing` becomes `unknown`; an
    /// approved call nobody claimed is claimed and `failed` at once, from the row's own stored
    /// tool and canonical arguments (so the ledger's rule accepts it), never run; a denial in the
    /// audit log; `approval.responded` with the row as it ends.
    pub(crate) async fn end_poison_job(
        &self,
        approval_id: &str,
        epoch: i64,
        error: &StoreError,
    ) -> Result<(), StoreError> {
        let reason = format!("the database refused to claim it ({error})");
        let result = serde_json::json!({
            "status": "failed",
            "message": format!("not run: {reason}; nothing was changed"),
        });
        let mut tx = self.begin_write().await?;
        let written = async {
            tx.exec_cas(
                self.timed(
                    "UPDATE resume_jobs SET claimed_from = state, state = 'failed', \
                     lease_owner = NULL, lease_until = NULL, lease_epoch = lease_epoch + 1, \
                     updated_at = {now} WHERE approval_id = $2 AND lease_epoch = $3 \
                     AND state IN ('ready', 'running')",
                )
                .text(approval_id)
                .int(epoch),
                "ending a poison resume job",
            )
            .await?;
            tx.exec(
                Stmt::new(
                    "UPDATE ledger SET state = 'unknown' WHERE approval_id = $1 \
                     AND state = 'executing'",
                )
                .text(approval_id),
                "marking an interrupted execution unknown",
            )
            .await?;
            tx.exec(
                self.timed(
                    "INSERT INTO ledger (approval_id, tool, args_canonical, state, claimed_at) \
                     SELECT a.id, a.tool, COALESCE(a.decided_args_canonical, a.args_canonical), \
                     'executing', {now} FROM approvals a \
                     WHERE a.id = $2 AND a.status = 'approved' AND a.kind <> 'evaluator' \
                     AND NOT EXISTS (SELECT 1 FROM ledger l WHERE l.approval_id = a.id)",
                )
                .text(approval_id),
                "consuming a poison job's call",
            )
            .await?;
            tx.exec(
                self.ledger_outcome(approval_id, "failed", &result)?,
                "writing a ledger outcome",
            )
            .await?;
            tx.exec(
                Stmt::new("UPDATE approvals SET resume_error = $1 WHERE id = $2")
                    .text(&format!(
                        "This request could not be resumed: {reason}. Nothing was run."
                    ))
                    .text(approval_id),
                "recording a resume error",
            )
            .await?;
            self.write_audit(
                &mut tx,
                &[NewAuditEntry {
                    approval_id: approval_id.to_string(),
                    kind: iris_core::wire::AuditKind::Denial,
                    item: None,
                    result: serde_json::json!({"denied": reason}),
                    undo_available: false,
                    actor: "iris".into(),
                    surface: None,
                    at: self.now_stamp(),
                }],
            )
            .await?;
            self.stage_responded(&mut tx, approval_id).await
        }
        .await;
        match written {
            Ok(outbox) => {
                tx.commit().await?;
                tracing::error!(approval = %approval_id, %error, "a resume job the database refuses to claim ended failed; nothing was run");
                self.deliver(&outbox);
                Ok(())
            }
            Err(e) => {
                tx.rollback().await;
                // Another claim moved the job on meanwhile: it is that claim's now.
                if is_assertion(&e) {
                    Ok(())
                } else {
                    Err(e)
                }
            }
        }
    }
}

/// Fails with a connection reset after the commit when the test failpoint
/// `IRIS_FAILPOINT_LOSE_ONCE` names `unit` and it has not lost an answer yet (debug builds only;
/// [`iris_core::failpoint::lose_once`]): the unit landed, its caller is told it failed.
pub(crate) fn failpoint_lost_answer(unit: &str) -> Result<(), StoreError> {
    if iris_core::failpoint::lose_once(unit) {
        return Err(StoreError::Backend(format!(
            "{unit}: the connection was reset before the commit's answer (failpoint)"
        )));
    }
    Ok(())
}

/// Fails with a reset connection when the test failpoint `IRIS_FAILPOINT_FAIL_ONCE` names `unit`
/// and it has not failed yet (debug builds only; [`iris_core::failpoint::fail_once`]).
pub(crate) fn failpoint_unit(unit: &str) -> Result<(), StoreError> {
    if iris_core::failpoint::fail_once(unit) {
        return Err(StoreError::Backend(format!(
            "{unit}: the connection was reset (failpoint)"
        )));
    }
    Ok(())
}
