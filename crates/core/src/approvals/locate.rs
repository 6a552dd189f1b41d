//! Where an unknown call's items are now (docs/liveness.md "truthful records"): after a
//! takeover marks a call `unknown` (its server stopped while it ran), the tool's plugin is asked
//! where each item stands ([`crate::plugin::Plugin::locate`]: a file at its path or in
//! quarantine). The answer is written beside the ledger entry in one commit fenced by the job's
//! lease ([`crate::ports::ApprovalStore::record_located`]): one audit entry per item, and the
//! undo button's words when some of them can be put back. The call stays `unknown` and never
//! runs again; only the card's undo can act, and only on what the plugin found it can restore.

use serde_json::{json, Value};

use super::narrow::call_to_run;
use super::ApprovalService;
use crate::plugin::{ItemOutcome, ToolOutput};
use crate::ports::{
    ClaimPlan, Lease, LedgerStep, LocatedRecord, NewAuditEntry, Outbox, StoreError,
};
use crate::wire::{Approval, AuditKind, Event, Execution, Located, LocatedItem};

impl ApprovalService {
    /// After a claim whose plan marked `row`'s call unknown (`plan.ledger` is
    /// [`LedgerStep::MarkUnknown`]): the row as that claim left it, with where its items are
    /// ([`ApprovalService::locate_unknown`]). Any other plan: `row` as it is. A failed write is
    /// logged and the card keeps only its unknown words (it still says how to check).
    ///
    /// # Errors
    /// [`StoreError::LeaseLost`] when another server took the job over.
    pub(crate) async fn after_takeover(
        &self,
        lease: &Lease,
        row: &Approval,
        plan: &ClaimPlan,
        preconditions: &[Value],
    ) -> Result<Approval, StoreError> {
        let LedgerStep::MarkUnknown { result } = &plan.ledger else {
            return Ok(row.clone());
        };
        let mut unknown = row.clone();
        unknown.execution = Execution::Unknown;
        unknown.result = Some(result.clone());
        match self.locate_unknown(lease, &unknown, preconditions).await {
            Ok(located) => Ok(located),
            Err(lost @ StoreError::LeaseLost(_)) => Err(lost),
            Err(error) => {
                tracing::warn!(approval = %row.id, %error, "recording where the unknown call's items are failed");
                Ok(unknown)
            }
        }
    }

    /// Asks `row`'s plugin where the items of its unknown call are now and records the answer
    /// under `lease`. Returns the row as it then stands: unchanged when the call is not
    /// `unknown`, already located, the plugin cannot tell, or it did not answer within the
    /// execution deadline (logged).
    ///
    /// # Errors
    /// [`StoreError::LeaseLost`] when another server took the job over; other [`StoreError`]s
    /// when the answer could not be written.
    pub(crate) async fn locate_unknown(
        &self,
        lease: &Lease,
        row: &Approval,
        preconditions: &[Value],
    ) -> Result<Approval, StoreError> {
        if row.execution != Execution::Unknown || row.located.is_some() {
            return Ok(row.clone());
        }
        let toolbox = self.toolbox_for(row.requested_by.as_deref());
        let Some((spec, plugin)) = toolbox
            .registry()
            .get(&row.tool)
            .and_then(|spec| Some((spec, toolbox.plugin(spec)?.clone())))
        else {
            return Ok(row.clone());
        };
        // The items of the call that ran: after an approval of some items, only those
        // (docs/adr/0122-shaping-a-call.md).
        let Ok(call) = call_to_run(row, preconditions) else {
            return Ok(row.clone());
        };
        let found = plugin.locate(&call.tool, &call.args, &call.items, &call.preconditions);
        // Every wait has a deadline (docs/liveness.md): the execution's own.
        let deadline = self.runtime.sleep(std::time::Duration::from_secs(
            self.leases.execute_timeout_secs,
        ));
        futures::pin_mut!(found);
        let found = match futures::future::select(found, deadline).await {
            futures::future::Either::Left((found, _)) => found,
            futures::future::Either::Right(((), _)) => {
                tracing::warn!(approval = %row.id, "finding where the unknown call's items are took too long; the card says how to check");
                None
            }
        };
        let Some(ToolOutput { result, items }) = found.filter(|f| !f.items.is_empty()) else {
            return Ok(row.clone());
        };
        let undo = spec
            .undo
            .as_ref()
            .and_then(|_| plugin.undo_call(&row.tool, &items));
        let located = Located {
            summary: result["summary"].as_str().unwrap_or_default().to_string(),
            items: items.iter().map(located_item).collect(),
            undo_action: undo.as_ref().map(|u| {
                u.action
                    .clone()
                    .or_else(|| row.card.undo_action.clone())
                    .unwrap_or_else(|| "Undo".into())
            }),
        };
        let at = self.clock.now();
        let audit = items
            .into_iter()
            .map(|ItemOutcome { item, outcome }| NewAuditEntry {
                approval_id: row.id.clone(),
                kind: AuditKind::Execution,
                undo_available: undo.as_ref().is_some_and(|u| u.items.contains(&item)),
                item: Some(item),
                result: outcome,
                actor: super::IRIS_ACTOR.into(),
                surface: None,
                at,
            })
            .collect();
        let mut after = row.clone();
        after.located = Some(located.clone());
        let record = LocatedRecord {
            located,
            audit,
            outbox: Outbox::of([Event::ApprovalResponded(after.clone())]),
        };
        self.retrying(lease, "recording where an unknown call's items are", || {
            self.store.record_located(lease, &record)
        })
        .await?;
        Ok(after)
    }
}

/// One item's place as the card shows it: the plugin's status word and sentence.
fn located_item(o: &ItemOutcome) -> LocatedItem {
    let word = |key: &str| o.outcome[key].as_str().unwrap_or_default().to_string();
    LocatedItem {
        id: o.item.clone(),
        // As the plugin names it on the card (else the id); a file name may carry controls
        // and text-direction marks.
        label: crate::mcp::escaped(o.outcome["label"].as_str().unwrap_or(&o.item)),
        status: word("status"),
        message: word("message"),
    }
}

/// What the paused call's model is told of a located unknown call: that it is unknown, how to
/// check, and where each item is now; `None` when nothing was located.
pub(crate) fn located_observation(row: &Approval) -> Option<Value> {
    let located = row.located.as_ref()?;
    let message = row
        .result
        .as_ref()
        .and_then(|r| r.get("message"))
        .cloned()
        .unwrap_or(Value::Null);
    Some(json!({
        "status": "unknown",
        "message": message,
        "located": located,
    }))
}
