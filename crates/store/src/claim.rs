//! What a claim reads (docs/liveness.md "every decided card ends"): the job picked and leased in
//! one statement (a fresh one, a lapsed lease not held by this server's own tasks, or the
//! owner's retry), and the snapshot the service plans the claim from, read in the same unit
//! with the database's time. `lifecycle.rs`'s `claim_job` applies the plan.

use iris_core::model::Message;
use iris_core::ports::{Checkpoint, JobOrigin, JobPick, JobSnapshot, SavedRun, StoreError};

use crate::rows::approval_row_columns;
use crate::rows::{approval_from_row, Cols, ColumnRead, Record};
use crate::unit::WriteTx;
use crate::Store;

/// The columns a claim reads: the unit's time (`{now}`, the time source at `$1`), the job, the
/// row with its ledger entry, the checkpoint and the conversation's transcript, joined.
const SNAPSHOT_SELECT: &str = concat!(
    "SELECT {now} AS unit_now, j.approval_id AS job_id, j.lease_epoch AS job_epoch, \
     j.claimed_from AS job_from, ",
    approval_row_columns!(),
    ", c.id AS cp_id, c.conversation_id AS cp_conversation, c.body AS cp_body, \
     v.id AS conv_id, v.transcript AS conv_transcript, v.version AS conv_version \
     FROM resume_jobs j JOIN approvals a ON a.id = j.approval_id \
     LEFT JOIN ledger l ON l.approval_id = a.id \
     LEFT JOIN checkpoints c ON c.approval_id = a.id \
     LEFT JOIN conversations v ON v.id = c.conversation_id"
);

impl Store {
    /// Picks and leases a job inside `tx` (one statement: the pick is its sub-select), then
    /// reads what the claim needs.
    pub(crate) async fn pick_job(
        &self,
        tx: &mut WriteTx,
        pick: JobPick<'_>,
        owner: &str,
        secs: u32,
        busy: &[String],
    ) -> Result<Option<(JobOrigin, i64, Record)>, StoreError> {
        // A lapsed lease is taken over by any server, this one included, unless one of this
        // server's own tasks still holds it (`busy`: its heartbeat could not write, and a live
        // task's call must not be called interrupted). A job whose task ended without ending it
        // (a unit that failed for good) is retaken here like any other, so it always ends
        // (docs/liveness.md "every decided card ends").
        let claimable = format!(
            "(state = 'ready' OR (state = 'running' AND lease_until <= {{now}} \
             AND {pos}($5, ',' || lease_owner || ',') = 0))",
            pos = self.engine.position_fn()
        );
        let busy_list = format!(",{},", busy.join(","));
        let (condition, id) = match pick {
            JobPick::Next => (claimable.clone(), None),
            JobPick::Approval(id) => (format!("{claimable} AND approval_id = $4"), Some(id)),
            JobPick::Retry(id) => (
                "state = 'failed' AND approval_id = $4".to_string(),
                Some(id),
            ),
        };
        let mut take = self
            .timed(&format!(
                "UPDATE resume_jobs SET claimed_from = state, state = 'running', \
                 lease_owner = $3, lease_epoch = lease_epoch + 1, lease_until = {{until}}, \
                 claimed_at = {{now}}, updated_at = {{now}} WHERE approval_id = (SELECT approval_id FROM resume_jobs \
                 WHERE {condition} ORDER BY created_at, approval_id LIMIT 1{lock})",
                lock = self.engine.claim_lock()
            ))
            .int(i64::from(secs))
            .text(owner);
        if let Some(id) = id {
            take = take.text(id);
        } else {
            // Keep `$4` bound so both spellings take the same arguments.
            take = take.opt_text(None);
        }
        take = take.text(&busy_list);
        tx.exec(take, "leasing a resume job").await?;
        let rows = tx
            .fetch(
                self.timed(&format!(
                    "{SNAPSHOT_SELECT} WHERE j.lease_owner = $2 AND j.state = 'running'"
                ))
                .text(owner),
                "reading a claimed job",
            )
            .await?;
        let Some(row) = rows.into_iter().next() else {
            return Ok(None);
        };
        let job = Cols::new(&row, "resume_jobs", "job_id")?;
        let epoch = job.integer("job_epoch")?;
        let from = job.opt_text("job_from")?;
        let origin = match from.as_deref() {
            Some("failed") => JobOrigin::Retried,
            Some("running") => JobOrigin::TakenOver,
            _ => JobOrigin::Fresh,
        };
        Ok(Some((origin, epoch, row)))
    }
}

/// What a claim read, from one row of [`SNAPSHOT_SELECT`].
pub(crate) fn snapshot(row: &Record, origin: JobOrigin) -> Result<JobSnapshot, StoreError> {
    let approval_id = Cols::new(row, "resume_jobs", "job_id")?.id;
    let approval = approval_from_row(row).map_err(|e| e.to_string());
    let preconditions = Cols::new(row, "approvals", "id")
        .and_then(|c| c.json("preconditions"))
        .map_err(|e| e.to_string());
    let checkpoint_id = row.text_at("cp_id").unwrap_or(None);
    let conversation_id = row.text_at("cp_conversation").unwrap_or(None);
    let saved = match checkpoint_id {
        None => SavedRun::Missing,
        Some(id) => {
            let c = Cols {
                row,
                table: "checkpoints",
                id,
            };
            match c.json::<Checkpoint>("cp_body") {
                Ok(checkpoint) => SavedRun::Saved(Box::new(checkpoint)),
                Err(e) => SavedRun::Corrupt(e.to_string().replace("cp_body", "body")),
            }
        }
    };
    let transcript = match row.text_at("conv_id").unwrap_or(None) {
        None => Ok(Vec::new()),
        Some(id) => Cols {
            row,
            table: "conversations",
            id,
        }
        .json::<Vec<Message>>("conv_transcript")
        .map_err(|e| e.to_string()),
    };
    let transcript_version = row.int_at("conv_version").unwrap_or(None).unwrap_or(0);
    let now = Cols::new(row, "resume_jobs", "job_id")?.time("unit_now")?;
    Ok(JobSnapshot {
        now,
        approval_id,
        origin,
        approval,
        preconditions,
        saved,
        conversation_id,
        transcript,
        transcript_version,
    })
}
