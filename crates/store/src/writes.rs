//! The writes of the lifecycle's units (`lifecycle.rs` reads and plans them): a decision's
//! compare-and-set with its audit entry, job and events; a claim's plan applied to the ledger
//! (the claim, the outcome); a job's end.

use iris_core::ports::{ClaimPlan, DecisionCommit, JobEnd, LedgerStep, StoreError};
use iris_core::wire::ApprovalStatus;

use crate::rows::{answerable_sql, lapsed_sql, to_json};
use crate::unit::{is_assertion, Stmt, WriteTx};
use crate::{timestamp_text, Store};

impl Store {
    /// Claims the approved call: `executing`. The database's triggers refuse any claim the row
    /// does not allow, and the primary key a second one; either aborts the unit.
    pub(crate) async fn claim_ledger(
        &self,
        tx: &mut WriteTx,
        approval_id: &str,
        tool: &str,
        args_canonical: &str,
    ) -> Result<(), StoreError> {
        tx.exec(
            self.timed(
                "INSERT INTO ledger (approval_id, tool, args_canonical, state, claimed_at) \
                 VALUES ($2, $3, $4, 'executing', {now})",
            )
            .text(approval_id)
            .text(tool)
            .text(args_canonical),
            "claiming an approval (the ledger refused the claim)",
        )
        .await
    }

    pub(crate) fn ledger_outcome(
        &self,
        approval_id: &str,
        state: &str,
        result: &serde_json::Value,
    ) -> Result<Stmt, StoreError> {
        Ok(self
            .timed(
                "UPDATE ledger SET state = $2, result = $3, finished_at = {now} \
                 WHERE approval_id = $4 AND state = 'executing'",
            )
            .text(state)
            .text(&to_json(result, "a ledger result")?)
            .text(approval_id))
    }

    pub(crate) async fn end_job(
        &self,
        tx: &mut WriteTx,
        approval_id: &str,
        end: JobEnd,
    ) -> Result<(), StoreError> {
        tx.exec(
            self.timed(
                "UPDATE resume_jobs SET state = $2, lease_until = NULL, updated_at = {now} \
                 WHERE approval_id = $3",
            )
            .text(end.as_str())
            .text(approval_id),
            "ending a resume job",
        )
        .await
    }

    /// The decision's writes and the commit: the compare-and-set from `pending` (the unit
    /// stops there when it changes nothing), its audit entry, its job, its events. Whether it
    /// won.
    pub(crate) async fn write_decision(
        &self,
        mut tx: WriteTx,
        approval_id: &str,
        commit: &DecisionCommit,
    ) -> Result<bool, StoreError> {
        let response = &commit.response;
        let time_rule = match response.status {
            ApprovalStatus::Pending => {
                tx.rollback().await;
                return Err(StoreError::Backend(format!(
                    "approval `{approval_id}`: `pending` is not a decision"
                )));
            }
            ApprovalStatus::Approved | ApprovalStatus::Rejected => answerable_sql("", "{now}"),
            ApprovalStatus::Expired => lapsed_sql("", "{now}"),
        };
        let written = async {
            // An approval of some items writes its decided call in the same statement
            // (docs/adr/0122-shaping-a-call.md; the triggers of 0033_decided_call keep it).
            let decided = response.decided.as_ref();
            let json_of = |value: Option<serde_json::Value>| value.map(|v| v.to_string());
            let approved_items = json_of(
                decided
                    .filter(|d| !d.items.is_empty())
                    .map(|d| serde_json::json!(d.items)),
            );
            let edited = decided.filter(|d| !d.edited_fields.is_empty());
            let edited_fields = json_of(edited.map(|d| serde_json::json!(d.edited_fields)));
            let decided_items = json_of(edited.map(|d| serde_json::json!(d.call.items)));
            let decided_args = decided
                .map(|d| serde_json::to_string(&d.call.args))
                .transpose()
                .map_err(|e| StoreError::Backend(format!("decided call: {e}")))?;
            tx.exec_cas(
                self.timed(&format!(
                    "UPDATE approvals SET status = $2, responded_at = $3, responded_by = $4, \
                     surface = $5, reason = $6, approved_items = $8, decided_args = $9, \
                     decided_args_canonical = $10, decided_call_hash = $11, edited_fields = $12, \
                     decided_items = $13 \
                     WHERE id = $7 AND status = 'pending' AND {time_rule}"
                ))
                .text(response.status.as_str())
                .text(&timestamp_text(response.at))
                .text(&response.responded_by)
                .text(&response.surface)
                .opt_text(response.reason.as_deref())
                .text(approval_id)
                .opt_text(approved_items.as_deref())
                .opt_text(decided_args.as_deref())
                .opt_text(decided.map(|d| d.args_canonical.as_str()))
                .opt_text(decided.map(|d| d.call.call_hash.as_str()))
                .opt_text(edited_fields.as_deref())
                .opt_text(decided_items.as_deref()),
                "deciding an approval",
            )
            .await?;
            if let Some(used) = &commit.passkey {
                // The ceremony was made for the call that runs (the narrowed one where so).
                let runs = decided.map_or(commit.after.call_hash.as_str(), |d| {
                    d.call.call_hash.as_str()
                });
                let binding = Some((approval_id, runs));
                self.use_passkey(&mut tx, binding, used).await?;
            }
            self.write_audit(&mut tx, std::slice::from_ref(&commit.audit))
                .await?;
            tx.exec(
                self.timed(
                    "INSERT INTO resume_jobs (approval_id, state, lease_epoch, created_at, \
                     updated_at) VALUES ($2, 'ready', 0, {now}, {now})",
                )
                .text(approval_id),
                "queueing the resume job",
            )
            .await?;
            self.stage_outbox(&mut tx, &commit.outbox).await
        }
        .await;
        finish_cas(tx, written).await
    }

    pub(crate) async fn apply_plan(
        &self,
        tx: &mut WriteTx,
        approval_id: &str,
        plan: &ClaimPlan,
    ) -> Result<(), StoreError> {
        match &plan.ledger {
            LedgerStep::Leave => {}
            LedgerStep::Claim {
                tool,
                args_canonical,
            } => {
                self.claim_ledger(tx, approval_id, tool, args_canonical)
                    .await?
            }
            LedgerStep::Refuse {
                tool,
                args_canonical,
                result,
            } => {
                self.claim_ledger(tx, approval_id, tool, args_canonical)
                    .await?;
                tx.exec(
                    self.ledger_outcome(approval_id, "failed", result)?,
                    "writing a ledger outcome",
                )
                .await?;
            }
            LedgerStep::MarkUnknown { result } => {
                tx.exec(
                    Stmt::new(
                        "UPDATE ledger SET state = 'unknown', result = $1 \
                         WHERE approval_id = $2 AND state = 'executing'",
                    )
                    .text(&to_json(result, "a ledger result")?)
                    .text(approval_id),
                    "marking an interrupted execution unknown",
                )
                .await?;
            }
        }
        self.write_audit(tx, &plan.audit).await?;
        if let Some(text) = plan.resume_error.written() {
            tx.exec(
                Stmt::new("UPDATE approvals SET resume_error = $1 WHERE id = $2")
                    .opt_text(text)
                    .text(approval_id),
                "recording a resume error",
            )
            .await?;
        }
        if let Some(end) = plan.end {
            self.end_job(tx, approval_id, end).await?;
        }
        for (conversation, line) in &plan.lines {
            self.write_lines(tx, conversation, std::slice::from_ref(line))
                .await?;
        }
        self.stage_outbox(tx, &plan.outbox).await
    }
}

/// Ends a unit whose writes `written` began with a compare-and-set: commits it, `Ok(true)`;
/// when the compare-and-set changed nothing (a failed assertion), rolls it back, `Ok(false)`; any other failure rolls back and is the error.
pub(crate) async fn finish_cas(
    tx: WriteTx,
    written: Result<(), StoreError>,
) -> Result<bool, StoreError> {
    let outcome = match written {
        Ok(()) => tx.commit().await,
        Err(e) => {
            tx.rollback().await;
            Err(e)
        }
    };
    match outcome {
        Ok(()) => Ok(true),
        Err(e) if is_assertion(&e) => Ok(false),
        Err(e) => Err(e),
    }
}
