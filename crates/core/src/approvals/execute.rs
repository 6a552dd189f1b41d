//! Execute (DESIGN §3 step 7): the pinned call runs from the row, after its claim's commit wrote
//! `executing` (write-ahead). Each item's pinned precondition is checked just before; a stale
//! item is left out ("stale: nothing done") and the others proceed. The outcome, one audit entry
//! per item and the ledger's `executed`/`failed` (or `unknown`, when the call's answer was lost)
//! are written in one commit, fenced by the lease.

use serde_json::{json, Value};

use super::narrow::call_to_run;
use super::{unknown_outcome, ApprovalService, STALE};
use crate::agent::as_object;
use crate::canonical::canonical_json;
use crate::plugin::{CallContext, ToolError};
use crate::ports::{Lease, NewAuditEntry, Outbox, Outcome, OutcomeRecord, StoreError};
use crate::wire::{Approval, AuditKind, Event, Execution, UNDO_ACTION};

impl ApprovalService {
    /// Runs the claimed call of `row` (its preconditions pinned as `preconditions`) and records
    /// its outcome under `lease`. Returns the observation for the paused call and the row as it
    /// stands afterwards.
    ///
    /// # Errors
    /// [`StoreError::LeaseLost`] when another server took the job over meanwhile (the outcome
    /// then stays `unknown`: it is never run again); other [`StoreError`]s when the outcome could
    /// not be written (the entry stays `executing`, and whoever takes the job over marks it
    /// `unknown`).
    pub(crate) async fn execute_claimed(
        &self,
        lease: &Lease,
        row: &Approval,
        preconditions: &[Value],
        ctx: &CallContext,
    ) -> Result<(Value, Approval), StoreError> {
        crate::failpoint::hit(crate::failpoint::AFTER_CLAIM);
        let toolbox = self.toolbox_for(row.requested_by.as_deref());
        let spec = toolbox.registry().get(&row.tool);
        let plugin = spec.and_then(|s| toolbox.plugin(s));
        let (Some(spec), Some(plugin)) = (spec, plugin) else {
            // The plan checked both inside the claim; a toolbox changing under a running
            // server is not a thing, so this only guards the invariant.
            return self
                .write_outcome(lease, row, Outcome::Failed, json!({"status": "failed", "message": "not run: the tool is not loaded; nothing was changed"}), Vec::new())
                .await;
        };
        let tool = &row.tool;
        // Test-only (debug builds): a job that stalls before its side effect, holding its lease
        // and nothing else (not the plugin's lock: other work on the mailbox goes on).
        if crate::failpoint::pauses_at(crate::failpoint::BEFORE_SIDE_EFFECT) {
            while !crate::failpoint::released() {
                self.runtime
                    .sleep(std::time::Duration::from_millis(50))
                    .await;
            }
        }
        // The plugin's lock is taken before the preconditions are read and before the deadline
        // starts (docs/liveness.md "busy locks"): waiting for it is not the side effect, and a
        // call that never got it never started, so it is `failed`, not `unknown`.
        let wait = std::time::Duration::from_secs(self.leases.execute_timeout_secs);
        let hold = match plugin.hold(tool, wait).await {
            Ok(hold) => hold,
            Err(e) => {
                tracing::warn!(approval = %row.id, error = %e, "the approved call could not start");
                return self
                    .write_outcome(
                        lease,
                        row,
                        Outcome::Failed,
                        json!({"status": "failed", "message": format!("not run: {e}")}),
                        Vec::new(),
                    )
                    .await;
            }
        };
        // The call that runs: the request's, or the decision's narrowed one with only the kept
        // items and their preconditions (docs/adr/0122-shaping-a-call.md). The claim's plan
        // checked it; a row that changed under us is never run.
        let call = match call_to_run(row, preconditions) {
            Ok(call) => call,
            Err(why) => {
                drop(hold);
                return self
                    .write_outcome(
                        lease,
                        row,
                        Outcome::Failed,
                        json!({"status": "failed", "message": format!("not run: {why}; nothing was changed")}),
                        Vec::new(),
                    )
                    .await;
            }
        };
        let items = &call.items;
        let mut stale: Vec<String> = Vec::new();
        for (item, precondition) in items.iter().zip(&call.preconditions) {
            if !plugin
                .check_precondition(tool, item, precondition, ctx)
                .await
            {
                stale.push(item.clone());
            }
        }
        let undo_available = spec.undo.is_some();
        let all_stale = !stale.is_empty() && stale.len() == items.len();
        // The fence right before the side effect (docs/liveness.md "fenced side effects"): a
        // holder that cannot confirm its lease at its epoch never starts the call.
        if !all_stale {
            let confirmed = self
                .retrying(lease, "confirming the lease before a side effect", || {
                    self.store.confirm_lease(lease, self.leases.secs)
                })
                .await;
            if !matches!(confirmed, Ok(true)) {
                let why = match confirmed {
                    Err(e) => format!("its claim could not be confirmed ({e})"),
                    _ => "this server's claim on it lapsed before it started".to_string(),
                };
                tracing::warn!(approval = %row.id, "{why}; the call is not started");
                return self
                    .write_outcome(
                        lease,
                        row,
                        Outcome::Failed,
                        json!({"status": "failed", "message": format!("not run: {why}; nothing was changed")}),
                        Vec::new(),
                    )
                    .await;
            }
        }
        // A card overtaken by another that already acted on its items names that card
        // (docs/liveness.md "a card says what it repeats").
        let overtaken_by = if stale.is_empty() {
            None
        } else {
            self.overtaken_by(row, &stale).await
        };
        let (outcome, mut result, outcomes) = if all_stale {
            let message =
                match &overtaken_by {
                    Some(first) => format!(
                    "nothing done: the card \"{}\", approved before this one, already acted on {}",
                    first["title"].as_str().unwrap_or_default(),
                    if items.len() == 1 { "its item" } else { "its items" }
                ),
                    None => STALE.to_string(),
                };
            (
                Outcome::Failed,
                json!({"status": "stale", "message": message, "changed": false}),
                Vec::new(),
            )
        } else {
            let run = plugin.execute_held(tool, &call.args, &stale, ctx, hold);
            // Every side effect has a deadline (docs/liveness.md): one without an answer by
            // then may or may not have happened, so it is `unknown` and never run again.
            let deadline = self.leases.execute_timeout_secs;
            let ran = {
                let timer = self.runtime.sleep(std::time::Duration::from_secs(deadline));
                futures::pin_mut!(run);
                match futures::future::select(run, timer).await {
                    futures::future::Either::Left((ran, _)) => Some(ran),
                    futures::future::Either::Right(((), _)) => None,
                }
            };
            match ran {
                None => {
                    tracing::error!(approval = %row.id, "the approved call did not answer within {deadline} s; its outcome is unknown");
                    (
                        Outcome::Unknown,
                        json!({"status": "unknown", "message": format!("no answer within {deadline} s: {}", unknown_outcome(plugin.how_to_check(tool).as_deref()))}),
                        Vec::new(),
                    )
                }
                Some(Ok(out)) => (Outcome::Executed, as_object(out.result), out.items),
                Some(Err(e @ ToolError::Interrupted { .. })) => (
                    Outcome::Unknown,
                    json!({"status": "unknown", "message": format!("{e}: {}", unknown_outcome(plugin.how_to_check(tool).as_deref()))}),
                    Vec::new(),
                ),
                Some(Err(e)) => (
                    Outcome::Failed,
                    json!({"status": "failed", "message": e.to_string()}),
                    Vec::new(),
                ),
            }
        };
        let executed = outcome == Outcome::Executed;
        crate::failpoint::hit(crate::failpoint::AFTER_SIDE_EFFECT);
        // The undo button's words for what actually ran ("Restore 3 emails" when 2 of 5 were
        // left out), from the plugin, beside its result (DESIGN §9 "Undo from the card").
        if let Some(action) = spec
            .undo
            .as_ref()
            .and_then(|_| plugin.undo_call(tool, &outcomes))
            .and_then(|call| call.action)
        {
            result[UNDO_ACTION] = json!(action);
        }
        if let Some(first) = overtaken_by {
            result["handled_by"] = first;
        }
        // The owner left some items out: the observation names them and says they were not
        // touched (docs/adr/0122-shaping-a-call.md).
        if let Some(note) = left_out_note(row) {
            result["left_out"] = note;
        }
        // The owner edited the call: the observation says what changed (and that it ran as
        // edited), so the model does not retry its own version.
        if let Some(fields) = &row.edited_fields {
            result["edited"] = json!({
                "fields": fields,
                "message": format!(
                    "Edited by the owner before approving ({}); it ran as edited: {}.",
                    fields.join(", "),
                    canonical_json(&row.decided_call.as_ref().map_or(Value::Null, |d| d.args.clone()))
                ),
            });
        }
        if !stale.is_empty() {
            result["stale"] = stale
                .iter()
                .map(|i| json!({"id": i, "status": "stale", "message": STALE}))
                .collect();
        }
        let done = self.clock.now();
        let entry = |item: Option<String>, result: Value, undo: bool| NewAuditEntry {
            approval_id: row.id.clone(),
            kind: AuditKind::Execution,
            item,
            result,
            undo_available: undo,
            actor: super::IRIS_ACTOR.into(),
            surface: None,
            at: done,
        };
        let mut audit = Vec::new();
        if outcomes.is_empty() && stale.is_empty() {
            audit.push(entry(None, result.clone(), undo_available && executed));
        }
        for item in outcomes {
            audit.push(entry(Some(item.item), item.outcome, undo_available));
        }
        for item in &stale {
            audit.push(entry(
                Some(item.clone()),
                json!({"status": "stale", "message": STALE}),
                false,
            ));
        }
        let written = self.write_outcome(lease, row, outcome, result, audit).await;
        crate::failpoint::hit(crate::failpoint::AFTER_OUTCOME);
        written
    }

    /// The card that already acted on some of `stale` (items of `row` that changed since its
    /// card was made), as the result's `handled_by`: `{"approval_id", "title", "at"}` (`at` its
    /// answer, RFC 3339). `None` when none did or it cannot be read (the plain stale words then
    /// stand; a failed read is logged).
    async fn overtaken_by(&self, row: &Approval, stale: &[String]) -> Option<Value> {
        let others = match self.store.related_cards(&row.tool, row.created_at).await {
            Ok(others) => others,
            Err(error) => {
                tracing::warn!(approval = %row.id, %error, "reading which card acted on the stale items failed");
                return None;
            }
        };
        let first = super::overlap::handled_by(row, stale, &others)?;
        Some(json!({
            "approval_id": first.id,
            "title": first.card.title,
            "at": first.responded_at.map(|at| at.to_rfc3339()),
        }))
    }

    /// The outcome commit: ledger `executed`/`failed`, the audit entries, `approval.responded`.
    async fn write_outcome(
        &self,
        lease: &Lease,
        row: &Approval,
        outcome: Outcome,
        result: Value,
        audit: Vec<NewAuditEntry>,
    ) -> Result<(Value, Approval), StoreError> {
        let mut after = row.clone();
        after.execution = match outcome {
            Outcome::Executed => Execution::Executed,
            Outcome::Failed => Execution::Failed,
            Outcome::Unknown => Execution::Unknown,
        };
        after.result = Some(result.clone());
        let record = OutcomeRecord {
            outcome,
            result: result.clone(),
            audit,
            outbox: Outbox::of([Event::ApprovalResponded(after.clone())]),
        };
        // A dropped connection must not strand the outcome: retried within the lease, each try
        // fenced by the epoch (docs/liveness.md "stalled forever").
        self.retrying(lease, "writing a ledger outcome", || {
            self.store.record_outcome(lease, self.leases.secs, &record)
        })
        .await?;
        Ok((result, after))
    }
}

/// What an approval of some items says of the items the owner left out, for the result the
/// model and the card read: `{"count", "items": [{"id", "line"}], "message"}`; `None` for a
/// full approval.
pub(crate) fn left_out_note(row: &Approval) -> Option<Value> {
    let (kept, of) = row.approved_share()?;
    let left = row.left_out_indices();
    let lines = row.left_out_lines();
    Some(json!({
        "count": left.len(),
        "items": left.iter().zip(&lines).map(|(&i, line)| json!({"id": row.items[i], "line": line})).collect::<Vec<_>>(),
        "message": format!(
            "The owner approved {kept} of {of}; the other {} {} left out and not touched: {}.",
            left.len(),
            if left.len() == 1 { "was" } else { "were" },
            lines.join("; ")
        ),
    }))
}
