//! [`ApprovalStore`] on both engines: the lifecycle's units of work, each one transaction (see
//! [`iris_core::ports::lifecycle`] for the phases; `unit.rs` for how each engine runs them).
//! Every compare-and-set is one statement whose `WHERE` names the rule and whose count of
//! changed rows says whether it won; every write under a job's lease is fenced by its epoch
//! in that same statement, so a holder that lost the job writes nothing. The claim of a pinned
//! call is a plain insert the database's triggers check (approved, this tool, these arguments,
//! not an evaluator halt) and its primary key makes once: a refused claim aborts the unit.

use async_trait::async_trait;
use iris_core::ports::{
    ApprovalFilter, ApprovalPage, ApprovalQuery, ApprovalStore, ClaimPlan, ClaimedJob, Decided,
    DecisionCommit, DecisionRead, JobFinish, JobPick, JobSnapshot, Lease, LocatedRecord,
    NewAuditEntry, Outbox, OutcomeRecord, StoreError, StoredTranscript, TurnCommit,
};
use iris_core::wire::{Approval, ApprovalStatus, AuditEntry, ChatLine};
use sqlx::any::AnyRow;
use sqlx::Row;

use crate::claim::snapshot;
use crate::job_end::{failpoint_lost_answer, failpoint_unit};
use crate::rows::{
    approval_from_row, audit_from_row, backend, is_refusal, lapsed_sql, live_device, to_json, Cols,
    ColumnRead, APPROVAL_COLUMNS, APPROVAL_FROM, APPROVAL_SELECT, REQUESTER_REVOKED,
};
use crate::unit::{Stmt, WriteTx};
use crate::writes::finish_cas;
use crate::{timestamp_text, Engine, Store};

impl Store {
    /// A statement with the time source bound as `$1` (its SQL says `{now}` where "now" goes,
    /// and `{until}` for "now plus `$2` seconds").
    pub(crate) fn timed(&self, sql: &str) -> Stmt {
        let sql = sql
            .replace("{until}", &self.engine.now_plus("$1", "$2"))
            .replace("{now}", &self.now_sql());
        Stmt::new(sql).opt_text(self.now_param().as_deref())
    }

    /// SQLite at start-up: no other process can hold a lease on this file (one server per
    /// SQLite file), so every running job's lease lapses now and the sweep takes them over.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    pub async fn lapse_leases_of_dead_servers(&self) -> Result<u64, StoreError> {
        if self.engine != Engine::Sqlite {
            return Ok(0);
        }
        let mut tx = self.begin_write().await?;
        let rows = tx
            .fetch(
                Stmt::new(
                    "UPDATE resume_jobs SET lease_until = '1970-01-01T00:00:00.000000000Z' \
                     WHERE state = 'running' RETURNING approval_id",
                ),
                "lapsing the leases of a stopped server",
            )
            .await?;
        tx.commit().await?;
        Ok(rows.len() as u64)
    }

    /// Commits `tx` and then delivers `outbox`'s events (SQLite; PostgreSQL's listener does).
    async fn commit_with(&self, tx: WriteTx, outbox: &Outbox) -> Result<(), StoreError> {
        tx.commit().await?;
        self.deliver(outbox);
        Ok(())
    }

    pub(crate) async fn write_audit(
        &self,
        tx: &mut WriteTx,
        entries: &[NewAuditEntry],
    ) -> Result<(), StoreError> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut sql = String::from(
            "INSERT INTO audit_log (approval_id, kind, item, result, undo_available, actor, \
             surface, at) VALUES ",
        );
        for i in 0..entries.len() {
            let p = 1 + i * 8;
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!(
                "(${p}, ${}, ${}, ${}, ${}, ${}, ${}, ${})",
                p + 1,
                p + 2,
                p + 3,
                p + 4,
                p + 5,
                p + 6,
                p + 7
            ));
        }
        let mut stmt = Stmt::new(sql);
        for entry in entries {
            stmt = stmt
                .text(&entry.approval_id)
                .text(entry.kind.as_str())
                .opt_text(entry.item.as_deref())
                .text(&to_json(&entry.result, "an audit result")?)
                .flag(entry.undo_available)
                .text(&entry.actor)
                .opt_text(entry.surface.as_deref())
                .text(&timestamp_text(entry.at));
        }
        tx.exec(stmt, "appending to the audit log").await
    }

    /// Renews `lease` for `secs` seconds, only while its epoch and owner still hold the job
    /// (the unit stops here when they do not).
    async fn fence(&self, tx: &mut WriteTx, lease: &Lease, secs: u32) -> Result<(), StoreError> {
        tx.exec_cas(
            self.timed(
                "UPDATE resume_jobs SET lease_until = {until}, updated_at = {now} \
                 WHERE approval_id = $3 AND lease_epoch = $4 AND lease_owner = $5 \
                 AND state = 'running'",
            )
            .int(i64::from(secs))
            .text(&lease.approval_id)
            .int(lease.epoch)
            .text(&lease.owner),
            "renewing a resume job's lease",
        )
        .await
    }
}

#[async_trait]
impl ApprovalStore for Store {
    async fn commit_turn(&self, turn: &TurnCommit) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        let written = async {
            self.write_turn(&mut tx, turn).await?;
            self.stage_outbox(&mut tx, &turn.outbox).await
        }
        .await;
        if let Err(e) = written {
            tx.rollback().await;
            return Err(e);
        }
        self.commit_with(tx, &turn.outbox).await
    }

    /// One unit: the row read (locked: SQLite's one writer holds the write lock, PostgreSQL
    /// `FOR UPDATE`), the plan, then one compare-and-set from `pending` (an answer also needs the
    /// row not to have lapsed, `expires_at > now`; an expiry needs it to have, `expires_at <=
    /// now`, "now" being the store's time source) with its audit entry and job, which are written
    /// only if that compare-and-set did.
    async fn decide(
        &self,
        approval_id: &str,
        ceremony: Option<&str>,
        plan: &(dyn for<'r> Fn(&'r DecisionRead) -> Option<DecisionCommit> + Send + Sync),
    ) -> Result<Decided, StoreError> {
        let mut tx = self.begin_write().await?;
        let lock = match self.engine {
            Engine::Sqlite => "",
            Engine::Postgres => " FOR UPDATE OF a",
        };
        let lapsed = lapsed_sql("a.", "{now}");
        let read = tx
            .fetch(
                self.timed(&format!(
                    "SELECT {APPROVAL_COLUMNS}, CASE WHEN {lapsed} THEN 1 ELSE 0 \
                     END AS lapsed_now, CASE WHEN {REQUESTER_REVOKED} THEN 1 ELSE 0 END \
                     AS requester_revoked, {{now}} AS unit_now {APPROVAL_FROM} \
                     WHERE a.id = $2{lock}"
                ))
                .text(approval_id),
                "reading an approval row",
            )
            .await;
        let row = match read {
            Ok(rows) => rows.into_iter().next(),
            Err(e) => {
                tx.rollback().await;
                return Err(e);
            }
        };
        let Some(row) = row else {
            tx.rollback().await;
            return Err(StoreError::NotFound(format!("approval {approval_id}")));
        };
        let ceremony = match ceremony {
            None => Ok(None),
            Some(id) => self.read_ceremony(&mut tx, id).await,
        };
        let now = crate::rows::Cols::new(&row, "approvals", "id").and_then(|c| c.time("unit_now"));
        let read = match (approval_from_row(&row), ceremony, now) {
            (Ok(approval), Ok(ceremony), Ok(now)) => DecisionRead {
                approval,
                lapsed: row.int_at("lapsed_now").ok().flatten() == Some(1),
                now,
                requester_revoked: row.int_at("requester_revoked").ok().flatten() == Some(1),
                ceremony,
            },
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
                tx.rollback().await;
                return Err(e);
            }
        };
        let Some(commit) = plan(&read) else {
            tx.rollback().await;
            return Ok(Decided::Unchanged(Box::new(read.approval)));
        };
        if iris_core::failpoint::pauses_at(iris_core::failpoint::DECISION_READ) {
            while !iris_core::failpoint::released() {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
        if self.write_decision(tx, approval_id, &commit).await? {
            self.deliver(&commit.outbox);
            Ok(Decided::Written(Box::new(commit.after)))
        } else {
            Ok(Decided::Unchanged(Box::new(read.approval)))
        }
    }

    async fn claim_job(
        &self,
        pick: JobPick<'_>,
        owner: &str,
        lease_secs: u32,
        busy: &[String],
        plan_fn: &(dyn for<'s> Fn(&'s JobSnapshot) -> ClaimPlan + Send + Sync),
    ) -> Result<Option<ClaimedJob>, StoreError> {
        failpoint_unit("claim_job")?;
        let plan = plan_fn;
        // Each claim holds the lease under an owner of its own, so the claim's read finds it.
        let holder = format!("{owner}#{}", uuid::Uuid::new_v4().simple());
        let mut tx = self.begin_write().await?;
        let picked = match self
            .pick_job(&mut tx, pick, &holder, lease_secs, busy)
            .await
        {
            Ok(Some(picked)) => picked,
            Ok(None) => {
                tx.rollback().await;
                return Ok(None);
            }
            Err(e) => {
                tx.rollback().await;
                return Err(e);
            }
        };
        let (origin, epoch, row) = picked;
        let snapshot = match snapshot(&row, origin) {
            Ok(s) => s,
            Err(e) => {
                tx.rollback().await;
                return Err(e);
            }
        };
        let plan = plan(&snapshot);
        let approval_id = snapshot.approval_id.clone();
        if let Err(e) = self.apply_plan(&mut tx, &approval_id, &plan).await {
            tx.rollback().await;
            if !is_refusal(&e) {
                return Err(e);
            }
            // A poison job: the database refuses what its claim writes and would refuse it again
            // on every server. It ends here in a unit of its own, and the claim moves on, so no
            // job is held up behind it (docs/liveness.md "one poison job").
            self.end_poison_job(&approval_id, epoch - 1, &e).await?;
            return match pick {
                JobPick::Next => self.claim_job(pick, owner, lease_secs, busy, plan_fn).await,
                _ => Ok(None),
            };
        }
        self.commit_with(tx, &plan.outbox).await?;
        Ok(Some(ClaimedJob {
            lease: Lease {
                approval_id,
                owner: holder,
                epoch,
            },
            snapshot,
            plan,
        }))
    }

    async fn heartbeat(&self, lease: &Lease, lease_secs: u32) -> Result<bool, StoreError> {
        failpoint_unit("heartbeat")?;
        let mut tx = self.begin_write().await?;
        let fenced = self.fence(&mut tx, lease, lease_secs).await;
        finish_cas(tx, fenced).await
    }

    async fn confirm_lease(&self, lease: &Lease, lease_secs: u32) -> Result<bool, StoreError> {
        self.confirm_lease_unit(lease, lease_secs).await
    }

    async fn abandon_job(&self, lease: &Lease, reason: &str) -> Result<bool, StoreError> {
        self.abandon_job_unit(lease, reason).await
    }

    async fn record_outcome(
        &self,
        lease: &Lease,
        lease_secs: u32,
        outcome: &OutcomeRecord,
    ) -> Result<(), StoreError> {
        // Heartbeats keep the lease; this write is fenced by it, it does not renew it.
        let _ = lease_secs;
        failpoint_unit("record_outcome")?;
        let state = outcome.outcome.as_str();
        // Written once: the entry is still `executing`; when not, the unit stops there.
        let ledger = self.ledger_outcome(&lease.approval_id, state, &outcome.result)?;
        let landed = || self.outcome_landed(lease, state, &outcome.result);
        self.fenced_outcome(
            "record_outcome",
            lease,
            ledger,
            &outcome.audit,
            &outcome.outbox,
            landed,
        )
        .await
    }

    async fn record_located(
        &self,
        lease: &Lease,
        record: &LocatedRecord,
    ) -> Result<(), StoreError> {
        failpoint_unit("record_located")?;
        let located = to_json(&record.located, "where an unknown call's items are")?;
        // Only an entry still `unknown` with nothing located yet (the database's rule too).
        let ledger = self
            .timed(
                "UPDATE ledger SET located = $2 WHERE approval_id = $3 AND state = 'unknown' \
                 AND located IS NULL",
            )
            .text(&located)
            .text(&lease.approval_id);
        let landed = || self.located_landed(lease, &record.located);
        self.fenced_outcome(
            "record_located",
            lease,
            ledger,
            &record.audit,
            &record.outbox,
            landed,
        )
        .await
    }

    async fn finish_job(&self, lease: &Lease, finish: &JobFinish) -> Result<(), StoreError> {
        failpoint_unit("finish_job")?;
        let mut tx = self.begin_write().await?;
        let mut outbox = Outbox::default();
        let written = async {
            // The job's end is its fence: only the holder of this epoch ends it, and the unit
            // stops here when it does not.
            tx.exec_cas(
                self.timed(
                    "UPDATE resume_jobs SET state = $2, lease_until = NULL, updated_at = {now} \
                     WHERE approval_id = $3 AND lease_epoch = $4 AND lease_owner = $5 \
                     AND state = 'running'",
                )
                .text(finish.end.as_str())
                .text(&lease.approval_id)
                .int(lease.epoch)
                .text(&lease.owner),
                "ending a resume job",
            )
            .await?;
            if let Some(turn) = &finish.turn {
                self.write_turn(&mut tx, turn).await?;
                outbox.append(turn.outbox.clone());
            }
            if let Some(text) = finish.resume_error.written() {
                tx.exec(
                    Stmt::new("UPDATE approvals SET resume_error = $1 WHERE id = $2")
                        .opt_text(text)
                        .text(&lease.approval_id),
                    "recording a resume error",
                )
                .await?;
            }
            outbox.append(finish.outbox.clone());
            self.stage_outbox(&mut tx, &outbox).await
        }
        .await;
        if !finish_cas(tx, written).await? {
            // Re-planned from what is stored, as an outcome's (docs/liveness.md "a missed
            // compare-and-set"): this holder's earlier try ended the job, its answer lost.
            if self.job_ended_by(lease, finish.end).await? {
                self.deliver(&outbox);
                return Ok(());
            }
            return Err(StoreError::LeaseLost(lease.approval_id.clone()));
        }
        failpoint_lost_answer("finish_job")?;
        self.deliver(&outbox);
        Ok(())
    }

    async fn database_now(&self) -> Result<chrono::DateTime<chrono::Utc>, StoreError> {
        let text: String = sqlx::query_scalar(&format!("SELECT {}", self.now_sql()))
            .bind(self.now_param())
            .fetch_one(&self.pool)
            .await
            .map_err(backend("reading the database's clock"))?;
        chrono::DateTime::parse_from_rfc3339(&text)
            .map(|t| t.with_timezone(&chrono::Utc))
            .map_err(|e| StoreError::Corrupt {
                id: "now".into(),
                reason: format!("the database's clock read `{text}`, not an RFC 3339 time: {e}"),
            })
    }

    async fn lapsed(&self) -> Result<Vec<String>, StoreError> {
        sqlx::query_scalar::<_, String>(&format!(
            "SELECT id FROM approvals WHERE status = 'pending' AND {} \
             ORDER BY expires_at, id",
            lapsed_sql("", &self.now_sql())
        ))
        .bind(self.now_param())
        .fetch_all(&self.pool)
        .await
        .map_err(backend("finding lapsed approvals"))
    }

    async fn revoked_requests(&self) -> Result<Vec<String>, StoreError> {
        sqlx::query_scalar::<_, String>(&format!(
            "SELECT a.id FROM approvals a WHERE a.status = 'pending' AND {REQUESTER_REVOKED} \
             ORDER BY a.created_at, a.id"
        ))
        .fetch_all(&self.pool)
        .await
        .map_err(backend("finding the cards of revoked devices"))
    }

    async fn add_reason(
        &self,
        id: &str,
        reason: &str,
        outbox: &Outbox,
    ) -> Result<Option<Option<String>>, StoreError> {
        self.write_reason(id, reason, outbox).await
    }

    async fn approval(&self, id: &str) -> Result<Option<Approval>, StoreError> {
        let row = sqlx::query(&format!("{APPROVAL_SELECT} WHERE a.id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(backend("reading an approval row"))?;
        row.as_ref().map(approval_from_row).transpose()
    }

    async fn agent_approval(&self, id: &str, agent: &str) -> Result<Option<Approval>, StoreError> {
        let row = sqlx::query(&format!(
            "{APPROVAL_SELECT} WHERE a.id = $1 AND a.requested_by_device = {}",
            live_device("$2")
        ))
        .bind(id)
        .bind(agent)
        .fetch_optional(&self.pool)
        .await
        .map_err(backend("reading an agent's approval row"))?;
        row.as_ref().map(approval_from_row).transpose()
    }

    /// Pending rows first, oldest first; then answered rows, newest answer first. Fails with
    /// [`StoreError::Corrupt`] when any listed row does not parse.
    async fn approvals(&self, filter: &ApprovalFilter) -> Result<Vec<Approval>, StoreError> {
        let sql = format!(
            "{APPROVAL_SELECT} WHERE ($1 IS NULL OR a.status = $1) \
             ORDER BY CASE WHEN a.status = 'pending' THEN 0 ELSE 1 END, \
             CASE WHEN a.status = 'pending' THEN a.created_at END ASC, \
             a.responded_at DESC, a.created_at DESC, a.id"
        );
        let rows = sqlx::query(&sql)
            .bind(filter.status.map(ApprovalStatus::as_str))
            .fetch_all(&self.pool)
            .await
            .map_err(backend("listing approvals"))?;
        rows.iter().map(approval_from_row).collect()
    }

    async fn actions(
        &self,
        limit: iris_core::ports::PageLimit,
    ) -> Result<Vec<AuditEntry>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, approval_id, run_id, kind, item, result, undo_available, actor, surface, \
             at FROM audit_log WHERE kind = 'action' ORDER BY id DESC LIMIT $1",
        )
        .bind(i64::from(limit.get()))
        .fetch_all(&self.pool)
        .await
        .map_err(backend("reading the writes without a card"))?;
        rows.iter().map(audit_from_row).collect()
    }

    async fn related_cards(
        &self,
        tool: &str,
        ran_since: chrono::DateTime<chrono::Utc>,
    ) -> Result<Vec<Approval>, StoreError> {
        self.related(tool, ran_since).await
    }

    async fn approval_page(&self, query: &ApprovalQuery) -> Result<ApprovalPage, StoreError> {
        self.page(query).await
    }

    async fn audit(&self, approval_id: Option<&str>) -> Result<Vec<AuditEntry>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, approval_id, run_id, kind, item, result, undo_available, actor, surface, \
             at FROM audit_log WHERE ($1 IS NULL OR approval_id = $1) ORDER BY id",
        )
        .bind(approval_id)
        .fetch_all(&self.pool)
        .await
        .map_err(backend("reading the audit log"))?;
        rows.iter().map(audit_from_row).collect()
    }

    async fn audit_page(
        &self,
        before: Option<i64>,
        limit: iris_core::ports::PageLimit,
    ) -> Result<(Vec<AuditEntry>, Option<i64>), StoreError> {
        let n = i64::from(limit.get());
        let rows = sqlx::query(
            "SELECT id, approval_id, run_id, kind, item, result, undo_available, actor, surface, \
             at FROM audit_log WHERE ($1 IS NULL OR id < $1) ORDER BY id DESC LIMIT $2",
        )
        .bind(before)
        .bind(n + 1)
        .fetch_all(&self.pool)
        .await
        .map_err(backend("reading a page of the audit log"))?;
        let mut entries = rows
            .iter()
            .map(audit_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        let more = entries.len() as i64 > n;
        entries.truncate(limit.get() as usize);
        let next = more.then(|| entries.last().map(|e| e.id)).flatten();
        Ok((entries, next))
    }

    async fn transcript(&self, conversation_id: &str) -> Result<StoredTranscript, StoreError> {
        let row = sqlx::query("SELECT id, transcript, version FROM conversations WHERE id = $1")
            .bind(conversation_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(backend("reading a transcript"))?;
        match row {
            None => Ok(StoredTranscript::default()),
            Some(row) => Ok(StoredTranscript {
                messages: Cols::new(&row, "conversations", "id")?.json("transcript")?,
                version: row
                    .try_get::<i64, _>("version")
                    .map_err(backend("reading a transcript's version"))?,
            }),
        }
    }

    async fn lines(&self, conversation_id: &str) -> Result<Vec<ChatLine>, StoreError> {
        let rows = sqlx::query(
            "SELECT l.seq, l.role, l.text, l.approval_id, a.status AS approval_status \
             FROM conversation_lines l LEFT JOIN approvals a ON a.id = l.approval_id \
             WHERE l.conversation_id = $1 ORDER BY l.seq",
        )
        .bind(conversation_id)
        .fetch_all(&self.pool)
        .await
        .map_err(backend("reading conversation lines"))?;
        rows.iter()
            .map(|row| line_from_row(row, conversation_id))
            .collect()
    }
}

fn line_from_row(row: &AnyRow, conversation_id: &str) -> Result<ChatLine, StoreError> {
    let seq: i64 = row.try_get("seq").unwrap_or_default();
    let c = Cols {
        row,
        table: "conversation_lines",
        id: format!("line {seq} of conversation {conversation_id}"),
    };
    let approval_status = match c.opt_text("approval_status")? {
        None => None,
        Some(text) => Some(
            ApprovalStatus::parse(&text)
                .ok_or_else(|| c.corrupt("approval_status", format!("unknown status `{text}`")))?,
        ),
    };
    Ok(ChatLine {
        role: c.text("role")?,
        text: c.text("text")?,
        approval_id: c.opt_text("approval_id")?,
        approval_status,
    })
}

impl Store {
    /// The unit `unit` of [`ApprovalStore::record_outcome`] and
    /// [`ApprovalStore::record_located`]: the lease's fence, `ledger` (a compare-and-set on the
    /// entry), `audit` and `outbox` in one commit. `landed` says whether an earlier try of this
    /// very unit already stored it (its answer lost).
    async fn fenced_outcome<L, F>(
        &self,
        unit: &str,
        lease: &Lease,
        ledger: Stmt,
        audit: &[NewAuditEntry],
        outbox: &Outbox,
        landed: L,
    ) -> Result<(), StoreError>
    where
        L: FnOnce() -> F,
        F: std::future::Future<Output = Result<bool, StoreError>>,
    {
        let mut tx = self.begin_write().await?;
        let written = async {
            // The fence first, as a write: compare-and-set on the job row at this epoch, which
            // locks the row until the commit (PostgreSQL; SQLite has one writer), so a claim
            // taking the job over waits for this unit or wins before it, never both
            // (docs/liveness.md "fenced side effects"). A lapsed lease nobody took is still
            // this holder's: its outcome lands.
            tx.exec_cas(
                self.timed(
                    "UPDATE resume_jobs SET updated_at = {now} WHERE approval_id = $2 \
                     AND lease_epoch = $3 AND lease_owner = $4 AND state = 'running'",
                )
                .text(&lease.approval_id)
                .int(lease.epoch)
                .text(&lease.owner),
                "fencing a ledger outcome by its lease",
            )
            .await?;
            tx.exec_cas(ledger, "writing a ledger outcome").await?;
            self.write_audit(&mut tx, audit).await?;
            self.stage_outbox(&mut tx, outbox).await
        }
        .await;
        if !finish_cas(tx, written).await? {
            // A missed compare-and-set re-plans from what is stored (docs/liveness.md "a
            // missed compare-and-set"): an earlier try of this very unit may have landed with
            // its answer lost, and then there is nothing left to write.
            if landed().await? {
                self.deliver(outbox);
                return Ok(());
            }
            return Err(StoreError::LeaseLost(lease.approval_id.clone()));
        }
        failpoint_lost_answer(unit)?;
        self.deliver(outbox);
        Ok(())
    }
}
