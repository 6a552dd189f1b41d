//! Resume, retry and recover (DESIGN §3 steps 6-8, §9): a decided row is a durable job that
//! any server claims under a lease. The claimed job executes the pinned call (approve), or gives
//! the paused call the rejection or lapse as its observation, then the model continues from the
//! real result and the run's end is written in one commit under the lease. A job whose holder
//! died is claimed again by any server once its lease lapses (recover); a job that failed is
//! claimed again only on the owner's request (retry), and never runs the pinned call again.

use std::future::Future;

use serde_json::json;

use super::plan::{end_line, plan_claim, settled_observation, told};
use super::turn::{landing, turn_commit};
use super::{Actor, ApprovalService, UNKNOWN_OUTCOME};
use crate::agent::{has_result, place_result, PlacedResult, RunEnd, TranscriptChange};
use crate::model::Message;
use crate::plugin::CallContext;
use crate::ports::{
    ClaimedJob, JobEnd, JobFinish, JobOrigin, JobPick, JobSnapshot, Lease, LedgerStep, Outbox,
    ResumeErrorChange, SavedRun, StoreError,
};
use crate::wire::{
    Approval, ApprovalKind, ApprovalStatus, ChatLine, ChatResponse, Event, Execution, RunMessage,
    RunStatus,
};

/// Why an owner-requested retry of a failed resume did not happen
/// (`POST /governance/approvals/{id}/resume`).
#[derive(Debug, thiserror::Error)]
pub enum RetryError {
    /// A read device asked (403).
    #[error(transparent)]
    Forbidden(#[from] super::NotControl),
    /// No such approval (404).
    #[error("approval `{0}` does not exist")]
    NotFound(String),
    /// Still pending: nothing to resume yet (409).
    #[error("approval `{}` is still pending: answer it first", .0.id)]
    NotDecided(Box<Approval>),
    /// Its run did not fail to resume (it resumed fine, is resuming now, has not been resumed
    /// yet, can never resume, or another retry won): nothing to retry (409).
    #[error("the run of approval `{}` has no failed resume to retry", .0.id)]
    NotFailed(Box<Approval>),
    /// Storage failed (500).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What running one job did.
#[derive(Debug, Clone, PartialEq)]
pub struct JobReport {
    /// The job's approval.
    pub approval_id: String,
    /// The resumed run's result; `None` when the run could never resume (the card says why).
    pub run: Option<ChatResponse>,
}

impl ApprovalService {
    /// Claims the oldest claimable job (a decided row's, or one whose holder's lease lapsed) and
    /// runs it to its end. `Ok(None)` when there is none. Safe on every server at once.
    ///
    /// # Errors
    /// [`StoreError`] (a [`StoreError::LeaseLost`] means another server finished the job).
    pub async fn run_next_job(&self) -> Result<Option<JobReport>, StoreError> {
        self.claim_and_run(JobPick::Next).await
    }

    /// Runs `approval_id`'s job now, when it is claimable.
    ///
    /// # Errors
    /// As [`ApprovalService::run_next_job`].
    pub async fn run_job(&self, approval_id: &str) -> Result<Option<JobReport>, StoreError> {
        self.claim_and_run(JobPick::Approval(approval_id)).await
    }

    /// Retries the resume of a run whose resume failed (the owner's request; never automatic).
    /// The pinned call is never executed again: the ledger's recorded result (executed or
    /// failed) becomes the observation; an `unknown` entry is reported as [`UNKNOWN_OUTCOME`].
    ///
    /// # Errors
    /// [`RetryError::Forbidden`], `NotFound`, `NotDecided`, `NotFailed`, `Store`.
    pub async fn retry(
        &self,
        approval_id: &str,
        actor: &Actor,
    ) -> Result<(Approval, ChatResponse), RetryError> {
        actor.require_control("retry a resume")?;
        let row = self
            .store
            .approval(approval_id)
            .await?
            .ok_or_else(|| RetryError::NotFound(approval_id.to_string()))?;
        if row.status == ApprovalStatus::Pending {
            return Err(RetryError::NotDecided(Box::new(row)));
        }
        let report = self.claim_and_run(JobPick::Retry(approval_id)).await?;
        let Some(run) = report.and_then(|r| r.run) else {
            return Err(RetryError::NotFailed(Box::new(row)));
        };
        let after = self
            .store
            .approval(approval_id)
            .await?
            .ok_or_else(|| RetryError::NotFound(approval_id.to_string()))?;
        Ok((after, run))
    }

    async fn claim_and_run(&self, pick: JobPick<'_>) -> Result<Option<JobReport>, StoreError> {
        let grace = self.leases.execute_grace_secs;
        let plan = move |snapshot: &JobSnapshot| {
            let requested_by = snapshot
                .approval
                .as_ref()
                .ok()
                .and_then(|row| row.requested_by.as_deref());
            plan_claim(&self.toolbox_for(requested_by), snapshot, grace)
        };
        let busy = self.busy_leases();
        let Some(job) = self
            .store
            .claim_job(pick, &self.leases.owner, self.leases.secs, &busy, &plan)
            .await?
        else {
            return Ok(None);
        };
        let lease = job.lease.clone();
        let _held = BusyLease::hold(self, &lease);
        match self.with_heartbeat(&lease, self.run_claimed(job)).await {
            Ok(report) => Ok(Some(report)),
            Err(StoreError::LeaseLost(id)) => Err(StoreError::LeaseLost(id)),
            Err(error) => {
                // The run failed for good (a unit that would not commit even after retries):
                // end the job now rather than leave it `running` (docs/liveness.md "every
                // decided card ends"). If even that cannot be written, the lease lapses and any
                // server, this one included, takes the job over.
                let reason = format!(
                    "This request's run stopped before it ended: storage failed ({error}). If its call had started, it is marked unknown and will not be run again; you may retry the rest."
                );
                let ended = self
                    .with_heartbeat(
                        &lease,
                        self.retrying(&lease, "ending a failed resume job", || {
                            self.store.abandon_job(&lease, &reason)
                        }),
                    )
                    .await;
                match ended {
                    Ok(true) => {
                        tracing::error!(approval = %lease.approval_id, %error, "the resume job failed and was ended; the card says so")
                    }
                    Ok(false) => {
                        tracing::warn!(approval = %lease.approval_id, "the failed resume job was taken over by another server")
                    }
                    Err(e) => {
                        tracing::error!(approval = %lease.approval_id, error = %e, "ending the failed resume job failed; it is taken over when its lease lapses")
                    }
                }
                Err(error)
            }
        }
    }

    /// This server's busy leases, for a claim to leave alone.
    fn busy_leases(&self) -> Vec<String> {
        self.busy
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Runs the store unit `unit` until it commits or answers, retrying a failure that may pass
    /// (a dropped connection, a busy database: [`StoreError::Backend`] other than a lost lease)
    /// with back-off from 100 ms doubling to 2 s, for at most the lease's length
    /// ([`super::LeaseSettings::retry_budget`]). Every unit it retries is fenced by the lease's
    /// epoch, so a retry after the lease passed to another server writes nothing.
    ///
    /// # Errors
    /// The last failure, or the first that retrying cannot mend.
    pub(crate) async fn retrying<T, F, Fut>(
        &self,
        lease: &Lease,
        what: &str,
        mut unit: F,
    ) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, StoreError>>,
    {
        let budget = self.leases.retry_budget();
        let mut waited = std::time::Duration::ZERO;
        let mut pause = std::time::Duration::from_millis(100);
        loop {
            match unit().await {
                Err(StoreError::Backend(error)) if waited < budget => {
                    tracing::warn!(approval = %lease.approval_id, %error, "{what} failed; retrying in {} ms", pause.as_millis());
                    self.runtime.sleep(pause).await;
                    waited += pause;
                    pause = (pause * 2).min(std::time::Duration::from_secs(2));
                }
                done => return done,
            }
        }
    }

    /// Runs `work` while renewing `lease` every third of its length. A heartbeat that cannot
    /// reach the store is retried every tenth of the lease until the lease ends; one that finds
    /// the lease taken over stops renewing; `work` goes on, and its fenced writes then fail
    /// instead of landing.
    async fn with_heartbeat<T>(&self, lease: &Lease, work: impl Future<Output = T>) -> T {
        let beats = async {
            let mut pause = self.leases.heartbeat();
            loop {
                self.runtime.sleep(pause).await;
                match self.store.heartbeat(lease, self.leases.secs).await {
                    Ok(true) => pause = self.leases.heartbeat(),
                    Ok(false) => {
                        tracing::warn!(approval = %lease.approval_id, "the resume job was taken over by another server");
                        break;
                    }
                    Err(error) => {
                        tracing::warn!(approval = %lease.approval_id, %error, "renewing a resume job's lease failed; retrying");
                        pause = std::time::Duration::from_millis(u64::from(self.leases.secs) * 100);
                    }
                }
            }
            futures::future::pending::<()>().await;
        };
        futures::pin_mut!(work);
        futures::pin_mut!(beats);
        match futures::future::select(work, beats).await {
            futures::future::Either::Left((done, _)) => done,
            futures::future::Either::Right(((), _)) => unreachable!("the heartbeat never ends"),
        }
    }

    /// The claimed job, after its claim's commit: the paused call's observation (executing the
    /// pinned call when the claim took it), the model's continuation, the end commit.
    async fn run_claimed(&self, job: ClaimedJob) -> Result<JobReport, StoreError> {
        let ClaimedJob {
            lease,
            snapshot,
            plan,
        } = job;
        let report = |run| JobReport {
            approval_id: snapshot.approval_id.clone(),
            run,
        };
        // A gateway row: no run of IRIS's to continue; its end is the upstream's outcome.
        if let (Ok(row), None) = (&snapshot.approval, plan.end) {
            if row.requested_by.is_some() {
                self.run_gateway_claimed(&lease, row, &snapshot, &plan)
                    .await?;
                return Ok(report(None));
            }
        }
        // A run that can never resume was ended in the claim's commit, with the reason.
        let (Ok(row), SavedRun::Saved(checkpoint), None) =
            (&snapshot.approval, &snapshot.saved, plan.end)
        else {
            return Ok(report(None));
        };
        let ctx = CallContext {
            run_id: checkpoint.run_id.clone(),
            conversation_id: checkpoint.conversation_id.clone(),
            request: checkpoint.request.clone(),
        };
        let mut transcript = match &snapshot.transcript {
            Ok(t) if !t.is_empty() => t.clone(),
            _ => checkpoint.messages.clone(),
        };
        let version = snapshot.transcript_version;
        let effects = checkpoint.effects_executed.clone();
        let call_id = &checkpoint.pending_call.id;
        let mut row = row.clone();
        let mut told_lines = Vec::new();
        let mut placed = None;
        if row.kind == ApprovalKind::Evaluator {
            if row.status != ApprovalStatus::Approved {
                let read = transcript.clone();
                let end = stay_stopped(&row, ctx, transcript, effects);
                let change = TranscriptChange::between(&read, &end.transcript, None);
                let about = Some(row.id.clone());
                return self
                    .finish(
                        &lease,
                        &end,
                        row,
                        told_lines,
                        about.as_deref(),
                        (change, version),
                    )
                    .await
                    .map(report);
            }
            // The step's result is already in the transcript: nothing re-executes.
            if !has_result(&transcript, call_id) {
                let saved = checkpoint.messages.iter().find_map(|m| match m {
                    Message::Tool {
                        tool_call_id,
                        content,
                    } if tool_call_id == call_id => Some(content.clone()),
                    _ => None,
                });
                placed = Some(PlacedResult {
                    call_id: call_id.clone(),
                    observation: saved.unwrap_or_else(
                        || json!({"status": "unknown", "message": UNKNOWN_OUTCOME}),
                    ),
                    notice: answered_notice(&row, checkpoint),
                });
            }
        } else {
            // IRIS's own line at the card's end, told once: not again on the owner's retry
            // (the failed resume's commit told it), nor for an outcome the claim that made it
            // unknown already told.
            let preconditions = snapshot.preconditions.clone().unwrap_or_default();
            row = self
                .after_takeover(&lease, &row, &plan, &preconditions)
                .await?;
            let told_before = snapshot.origin == JobOrigin::Retried
                || matches!(plan.ledger, LedgerStep::MarkUnknown { .. })
                || matches!(row.execution, Execution::Unknown | Execution::Executing);
            let observation = match settled_observation(&row, &plan) {
                Some((observation, told_text)) => {
                    let text = told_text
                        .or_else(|| (!told_before).then(|| end_line(&row, None)).flatten());
                    if let Some(text) = text {
                        told_lines.push(told(&row.id, &text));
                    }
                    super::locate::located_observation(&row).unwrap_or(observation)
                }
                None => {
                    let (observation, after) = self
                        .execute_claimed(&lease, &row, &preconditions, &ctx)
                        .await?;
                    row = after;
                    let check = self
                        .toolbox_for(row.requested_by.as_deref())
                        .how_to_check(&row.tool);
                    if let Some(text) = end_line(&row, check.as_deref()) {
                        told_lines.push(told(&row.id, &text));
                    }
                    observation
                }
            };
            placed = Some(PlacedResult {
                call_id: call_id.clone(),
                observation,
                notice: answered_notice(&row, checkpoint),
            });
        }
        if let Some(placed) = &placed {
            place_result(&mut transcript, placed);
        }
        let mut end = self.agent.run(ctx, transcript.clone(), effects, true).await;
        super::overlap::annotate(self.store.as_ref(), &mut end).await;
        let change = TranscriptChange::between(&transcript, &end.transcript, placed);
        self.finish(&lease, &end, row, told_lines, None, (change, version))
            .await
            .map(report)
    }

    /// A gateway row's claimed job: the pinned call executed on the upstream when the claim
    /// took it (approved), else nothing runs; then the job ends (no turn: the agent reads the
    /// recorded outcome on its next call).
    async fn run_gateway_claimed(
        &self,
        lease: &Lease,
        row: &Approval,
        snapshot: &JobSnapshot,
        plan: &crate::ports::ClaimPlan,
    ) -> Result<(), StoreError> {
        let preconditions = snapshot.preconditions.clone().unwrap_or_default();
        self.after_takeover(lease, row, plan, &preconditions)
            .await?;
        if settled_observation(row, plan).is_none() {
            let ctx = CallContext {
                run_id: row.run_id.clone(),
                conversation_id: String::new(),
                request: row.card.request.clone(),
            };
            self.execute_claimed(lease, row, &preconditions, &ctx)
                .await?;
        }
        let finish = JobFinish {
            turn: None,
            end: JobEnd::Done,
            resume_error: ResumeErrorChange::Leave,
            outbox: Outbox::default(),
        };
        self.retrying(lease, "ending a resume job", || {
            self.store.finish_job(lease, &finish)
        })
        .await
    }

    /// The resume's end commit: the turn, the job done (or failed, retryable, when the model
    /// could not be reached), the row's resume error, `run.message` for every line the owner
    /// is told. The reply's line links to `about` (a stopped review), else to nothing.
    async fn finish(
        &self,
        lease: &Lease,
        end: &RunEnd,
        mut row: Approval,
        told_lines: Vec<ChatLine>,
        about: Option<&str>,
        (change, version): (TranscriptChange, i64),
    ) -> Result<Option<ChatResponse>, StoreError> {
        let resume_error = end
            .model_error
            .as_ref()
            .map(|e| format!("the resumed run could not reach the model ({e}); it can be retried"));
        let mut outbox = Outbox::of(
            told_lines
                .iter()
                .map(|line| run_message(end, &row.id, &line.text)),
        );
        outbox.add(run_message(end, &row.id, &end.reply));
        let error_change =
            ResumeErrorChange::to_reach(row.resume_error.as_deref(), resume_error.clone());
        if error_change != ResumeErrorChange::Leave {
            row.resume_error = resume_error.clone();
            outbox.add(Event::ApprovalResponded(row.clone()));
        }
        let job_end = if resume_error.is_some() {
            JobEnd::Failed
        } else {
            JobEnd::Done
        };
        let turn = turn_commit(end, told_lines, about, version);
        landing(self.store.as_ref(), turn, &change, |turn| {
            let finish = JobFinish {
                turn: Some(turn),
                end: job_end,
                resume_error: error_change.clone(),
                outbox: outbox.clone(),
            };
            async move {
                self.retrying(lease, "ending a resume job", || {
                    self.store.finish_job(lease, &finish)
                })
                .await
            }
        })
        .await?;
        Ok(Some(end.response()))
    }
}

/// A lease one of this server's tasks holds, listed in the service's busy leases while it lives.
struct BusyLease<'s> {
    service: &'s ApprovalService,
    holder: String,
}

impl<'s> BusyLease<'s> {
    fn hold(service: &'s ApprovalService, lease: &Lease) -> BusyLease<'s> {
        service
            .busy
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(lease.owner.clone());
        BusyLease {
            service,
            holder: lease.owner.clone(),
        }
    }
}

impl Drop for BusyLease<'_> {
    fn drop(&mut self) {
        let mut busy = self
            .service
            .busy
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        busy.retain(|h| h != &self.holder);
    }
}

/// `run.message` for `text` said in `end`'s run about `approval_id`.
fn run_message(end: &RunEnd, approval_id: &str, text: &str) -> Event {
    Event::RunMessage(RunMessage {
        conversation_id: end.ctx.conversation_id.clone(),
        run_id: end.ctx.run_id.clone(),
        text: text.to_string(),
        approval_id: Some(approval_id.to_string()),
    })
}

/// What the model is told when other messages came between its paused call and the answer:
/// the card, the decision and the call, so it continues that card's request (DESIGN §3 step 8).
fn answered_notice(row: &Approval, checkpoint: &crate::ports::Checkpoint) -> String {
    let decision = match row.status {
        ApprovalStatus::Approved if row.kind == ApprovalKind::Evaluator => {
            "let the run go on after".to_string()
        }
        ApprovalStatus::Approved => "approved".to_string(),
        ApprovalStatus::Rejected => "rejected".to_string(),
        ApprovalStatus::Expired => "did not answer in time (it lapsed, nothing ran)".to_string(),
        ApprovalStatus::Pending => "has not answered".to_string(),
    };
    crate::agent::continue_notice(
        &decision,
        &row.card.title,
        &row.tool,
        &checkpoint.pending_call.id,
        &checkpoint.request,
    )
}

/// A rejected or lapsed evaluator halt: the run stays stopped. The model is not asked; the
/// transcript notes the stop for later turns and the chat says so.
fn stay_stopped(
    row: &Approval,
    ctx: CallContext,
    mut transcript: Vec<Message>,
    effects: Vec<crate::wire::Effect>,
) -> RunEnd {
    let why = match row.status {
        ApprovalStatus::Expired => "nobody answered the review in time".to_string(),
        _ => match row.reason.as_deref() {
            Some(reason) => format!("you stopped it: {reason}"),
            None => "you stopped it".to_string(),
        },
    };
    transcript.push(Message::System {
        content: format!(
            "The run was halted for review after `{}` ({}) and stays stopped: {why}. Do not continue it unless the owner asks again.",
            row.tool, row.card.title
        ),
    });
    let reply = format!(
        "The run stays stopped after `{}` ({}): {why}. Nothing more was done.",
        row.tool, row.card.title
    );
    RunEnd {
        ctx,
        transcript,
        status: RunStatus::Refused,
        reply,
        halt: None,
        effects,
        undo_runs: Vec::new(),
        actions: Vec::new(),
        resumed: true,
        model_error: None,
    }
}
