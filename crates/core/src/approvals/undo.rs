//! Undo from the card (DESIGN §9 "Undo from the card"): an executed card whose tool declares
//! an undo runs the card's `undo_tool` for exactly the items that executed, once whatever the
//! taps, within the card's undo window. A card whose call is `unknown` offers it only for the
//! items its plugin found it can put back after the takeover (`locate.rs`), and runs it for
//! those only.
//!
//! The core knows only the card's undo tool, never its vocabulary: the plugin turns the
//! execution's per-item outcomes into the undo tool's arguments ([`crate::plugin::Plugin::undo_call`]),
//! and those arguments go through the undo tool's schema and `normalise` like any call. Two
//! commits, like execute: the undo `running` before the tool runs (write-ahead; its primary key
//! makes once), then its outcome with one audit entry per item. An undo that overruns its time
//! or whose server stops is `unknown` and never runs again (fail closed).
//!
//! The undo tool run from the chat ("undo that") is the card's undo too: after the turn, each
//! card whose executed items it acted on records it, with those items' outcomes, so the card
//! never offers to undo again what was already undone ([`ApprovalService::link_undos`]).

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::future::Either;
use serde_json::{json, Value};

use super::{Actor, ApprovalService};
use crate::agent::as_object;
use crate::agent::UndoRun;
use crate::canonical::canonical_json;
use crate::plugin::{CallContext, Hold, ItemOutcome, Plugin, UndoCall};
use crate::ports::{
    ApprovalQuery, NewAuditEntry, Outbox, PageLimit, StatusFilter, StoreError, UndoClaim,
    UndoOutcome,
};
use crate::wire::{Approval, ApprovalStatus, AuditKind, Event, Execution, UndoRecord, UndoState};

/// Why an undo was not run. Each maps to one HTTP status in the server.
#[derive(Debug, thiserror::Error)]
pub enum UndoError {
    /// A device without control scope asked (403).
    #[error(transparent)]
    Forbidden(#[from] super::NotControl),
    /// No such row (404).
    #[error("approval `{0}` does not exist")]
    NotFound(String),
    /// It was undone (or asked to be) already (409); carries the row as it stands.
    #[error("This card was already undone by {} via {} at {}; an undo runs once.",
        .0.undo.as_ref().map_or("someone", |u| u.by.as_str()),
        .0.undo.as_ref().map_or("an unknown surface", |u| u.surface.as_str()),
        .0.undo.as_ref().map(|u| crate::wire::when_utc(u.at)).unwrap_or_default())]
    AlreadyUndone(Box<Approval>),
    /// The card has nothing to undo (409): its tool declares no undo, its call did not run, or
    /// nothing that ran can be undone. The sentence says which.
    #[error("{1}")]
    NothingToUndo(Box<Approval>, String),
    /// What the undo must hold (the plugin's lock) stayed taken by another change (409):
    /// nothing was claimed or changed; trying again can work. The sentence says what was busy.
    #[error("{1}")]
    Busy(Box<Approval>, String),
    /// The card's undo window has closed (410): nothing was changed.
    #[error("The undo window of this card closed at {}; nothing was changed.", crate::wire::when_utc(*.1))]
    WindowClosed(Box<Approval>, DateTime<Utc>),
    /// Storage failed; nothing ran (500).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// How long an undo from the card waits for its plugin's lock before it answers "busy, try
/// again" (the owner is waiting on the button).
pub const UNDO_HOLD_WAIT: Duration = Duration::from_secs(5);

/// What an undo's result says when it overran its time.
pub const UNDO_UNKNOWN: &str =
    "it overran its time, so it may or may not have run; it will not be run again";

/// What an undo's result says when its server stopped while it ran.
pub const UNDO_STOPPED: &str =
    "the server stopped while it ran, so it may or may not have run; it will not be run again";

impl ApprovalService {
    /// Runs the card's undo for approval `id` as `actor` (see the module docs) and returns the
    /// row as it stands afterwards (its `undo` says what happened, item by item).
    ///
    /// # Errors
    /// [`UndoError::Forbidden`] without control scope, `NotFound`, `AlreadyUndone` (who,
    /// where, when), `NothingToUndo`, `WindowClosed`, `Store` (nothing ran).
    pub async fn undo(&self, id: &str, actor: &Actor) -> Result<Approval, UndoError> {
        actor.require_control("undo a card")?;
        let row = self
            .store
            .approval(id)
            .await?
            .ok_or_else(|| UndoError::NotFound(id.to_string()))?;
        if row.undo.is_some() {
            return Err(UndoError::AlreadyUndone(Box::new(row)));
        }
        let planned = self.plan_undo(&row).await?;
        // The plugin's lock before the claim (docs/liveness.md "busy locks"): an undo that
        // cannot start is refused with nothing written, never claimed and then left `unknown`.
        let hold = planned
            .plugin
            .hold(&planned.tool, UNDO_HOLD_WAIT)
            .await
            .map_err(|e| UndoError::Busy(Box::new(row.clone()), e.to_string()))?;
        let (claim, after) = self.claim_for(
            &row,
            actor,
            &planned.tool,
            &planned.args,
            planned.call.items.clone(),
        );
        if !self.store.claim_undo(&claim).await? {
            let now_row = self.store.approval(id).await?.unwrap_or(row);
            return Err(UndoError::AlreadyUndone(Box::new(now_row)));
        }
        self.run_undo(&row, actor, planned, after, hold).await
    }

    /// What the undo of `row` will run, refused with the reason when there is nothing to undo
    /// or its window has closed: the card's undo tool, the plugin's call for the items that
    /// executed, its arguments through the tool's schema and `normalise`.
    async fn plan_undo(&self, row: &Approval) -> Result<PlannedUndo, UndoError> {
        let nothing = |why: String| UndoError::NothingToUndo(Box::new(row.clone()), why);
        let Some(tool) = row.card.undo_tool.clone() else {
            return Err(nothing(
                "This card's tool declares no undo, so there is nothing to undo here.".into(),
            ));
        };
        if row.status == ApprovalStatus::Pending {
            return Err(nothing(
                "This card still waits for an answer: its call has not run, so there is nothing to undo yet.".into(),
            ));
        }
        // An unknown call whose plugin found some items it can put back (the takeover's
        // `locate`) is undone for those only; otherwise unknown is refused.
        let located = row.execution == Execution::Unknown
            && row
                .located
                .as_ref()
                .is_some_and(|l| l.undo_action.is_some());
        if row.status == ApprovalStatus::Approved && row.execution == Execution::Unknown && !located
        {
            // Unknown is not "did not run" (docs/liveness.md "truthful records"): say how to
            // check, and where what it may have done can be put back.
            let check = self
                .agent
                .toolbox()
                .how_to_check(&row.tool)
                .map(|check| format!(" To check: {check}."))
                .unwrap_or_default();
            return Err(nothing(format!(
                "It is not known whether this card's call ran, so the card cannot undo it.{check} Saying \"undo that\" in the card's conversation restores what it did, if it did anything."
            )));
        }
        if row.status == ApprovalStatus::Approved
            && matches!(row.execution, Execution::None | Execution::Executing)
        {
            return Err(nothing(
                "This card's call has not finished yet; its undo is offered once it has, so nothing was changed.".into(),
            ));
        }
        if row.status != ApprovalStatus::Approved
            || !(row.execution == Execution::Executed || located)
        {
            return Err(nothing(
                "This card's call did not run, so there is nothing to undo.".into(),
            ));
        }
        if let Some(until) = row.undo_until().filter(|until| self.clock.now() >= *until) {
            return Err(UndoError::WindowClosed(Box::new(row.clone()), until));
        }
        let call = self.undo_call(row).await?.ok_or_else(|| {
            nothing("Nothing this card's call changed can be undone (no item of it ran), so nothing was changed.".into())
        })?;
        let toolbox = self.agent.toolbox();
        let spec = toolbox.registry().get(&tool);
        let Some((spec, plugin)) = spec.and_then(|s| Some((s, toolbox.plugin(s)?.clone()))) else {
            return Err(nothing(format!(
                "The undo tool `{tool}` is not loaded, so this card cannot be undone here; nothing was changed."
            )));
        };
        if let Some(why) = toolbox.unavailable(spec) {
            return Err(nothing(format!(
                "This card cannot be undone now: {why}; nothing was changed."
            )));
        }
        let ctx = CallContext {
            run_id: row.run_id.clone(),
            conversation_id: String::new(),
            request: format!("{} (from the card)", row.undo_label()),
        };
        let args = match toolbox.validate(spec, &call.args) {
            Ok(args) => plugin
                .normalise(&tool, args, &ctx)
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e),
        }
        .map_err(|why| {
            nothing(format!(
                "The plugin's undo of this card does not fit `{tool}` ({why}); nothing was changed."
            ))
        })?;
        Ok(PlannedUndo {
            tool,
            plugin,
            args,
            call,
            ctx,
        })
    }

    /// Runs a claimed undo, holding `hold`, under a deadline of the lease's length (its side
    /// effect only: the hold was taken before the claim) and records its outcome; `after` is the
    /// row as the claim left it.
    async fn run_undo(
        &self,
        row: &Approval,
        actor: &Actor,
        planned: PlannedUndo,
        after: Approval,
        hold: Option<Hold>,
    ) -> Result<Approval, UndoError> {
        let deadline = self
            .runtime
            .sleep(Duration::from_secs(u64::from(self.leases.secs)));
        let run =
            planned
                .plugin
                .execute_held(&planned.tool, &planned.args, &[], &planned.ctx, hold);
        futures::pin_mut!(run);
        let (state, result, items) = match futures::future::select(run, deadline).await {
            Either::Left((Ok(out), _)) => (UndoState::Done, as_object(out.result), out.items),
            Either::Left((Err(e), _)) => (
                UndoState::Failed,
                json!({"status": "failed", "message": e.to_string()}),
                Vec::new(),
            ),
            Either::Right(_) => (
                UndoState::Unknown,
                json!({"status": "unknown", "message": UNDO_UNKNOWN}),
                Vec::new(),
            ),
        };
        Ok(self
            .finish_undo(row, actor, state, result, items, after)
            .await?)
    }

    /// The claim of `row`'s undo by `actor` now (`tool` with `args`, acting on `items`), and
    /// the row as it leaves it (`running`).
    fn claim_for(
        &self,
        row: &Approval,
        actor: &Actor,
        tool: &str,
        args: &Value,
        items: Vec<String>,
    ) -> (UndoClaim, Approval) {
        let now = self.clock.now();
        let mut after = row.clone();
        after.undo = Some(UndoRecord {
            state: UndoState::Running,
            items: items.clone(),
            by: actor.name.clone(),
            surface: actor.surface.into(),
            at: now,
            finished_at: None,
            result: None,
        });
        let asked = json!({
            "status": "requested",
            "action": row.undo_label(),
            "tool": tool,
            "items": items.len(),
        });
        let claim = UndoClaim {
            approval_id: row.id.clone(),
            tool: tool.to_string(),
            args_canonical: canonical_json(args),
            items,
            by: actor.name.clone(),
            surface: actor.surface.into(),
            at: now,
            // Twice the run's own deadline, so the sweep never calls a live undo unknown.
            lease_secs: self.leases.secs.saturating_mul(2),
            audit: undo_entry(row, actor, None, asked, now),
            outbox: Outbox::of([Event::ApprovalResponded(after.clone())]),
        };
        (claim, after)
    }

    /// Records a claimed undo's outcome: `state` with `result`, one audit entry per item of
    /// `items` and one for its end, `approval.responded` with the row as it leaves it.
    async fn finish_undo(
        &self,
        row: &Approval,
        actor: &Actor,
        state: UndoState,
        result: Value,
        items: Vec<ItemOutcome>,
        mut after: Approval,
    ) -> Result<Approval, StoreError> {
        let done = self.clock.now();
        let mut audit: Vec<NewAuditEntry> = items
            .into_iter()
            .map(|o| undo_entry(row, actor, Some(o.item), o.outcome, done))
            .collect();
        let mut end = json!({"status": state.as_str()});
        for key in ["summary", "message"] {
            if let Some(text) = result.get(key) {
                end[key] = text.clone();
            }
        }
        audit.push(undo_entry(row, actor, None, end, done));
        if let Some(undo) = after.undo.as_mut() {
            undo.state = state;
            undo.finished_at = Some(done);
            undo.result = Some(result.clone());
        }
        let outcome = UndoOutcome {
            approval_id: row.id.clone(),
            state,
            result,
            at: done,
            audit,
            outbox: Outbox::of([Event::ApprovalResponded(after.clone())]),
        };
        if self.store.record_undo(&outcome).await? {
            Ok(after)
        } else {
            // A sweep called it unknown meanwhile: that is what the row says now.
            Ok(self.store.approval(&row.id).await?.unwrap_or(after))
        }
    }

    /// Records each undo tool's run from the chat (e.g. "undo that") as the undo of every card
    /// whose executed items it acted on, so the card tells its whole story whichever way it was
    /// undone. A card already undone, or past its window, is left as it is. The turn is written
    /// already, so a failure here is logged and changes nothing else.
    pub(crate) async fn link_undos(&self, actor: &Actor, runs: &[UndoRun]) {
        for run in runs {
            if let Err(e) = self.link_undo(actor, run).await {
                tracing::warn!(tool = %run.tool, error = %e, "an undo run from the chat could not be shown on its card");
            }
        }
    }

    async fn link_undo(&self, actor: &Actor, run: &UndoRun) -> Result<(), StoreError> {
        let now = self.clock.now();
        let toolbox = self.agent.toolbox();
        for spec in toolbox.registry().undone_by(&run.tool) {
            let query = ApprovalQuery {
                status: StatusFilter::Is(ApprovalStatus::Approved),
                tool: Some(spec.name.clone()),
                since: spec
                    .undo_window_days
                    .map(|days| now - chrono::Duration::days(i64::from(days))),
                limit: PageLimit::LARGEST,
                ..ApprovalQuery::default()
            };
            let page = self.store.approval_page(&query).await?;
            for row in page.approvals.into_iter().filter(|r| r.undo_offered(now)) {
                let outcomes = self.undoable_outcomes(&row).await?;
                let Some(call) = self.plugin_undo_call(&row, &outcomes) else {
                    continue;
                };
                let items: Vec<ItemOutcome> = run
                    .items
                    .iter()
                    .filter(|o| call.items.contains(&o.item))
                    .cloned()
                    .collect();
                if items.is_empty() {
                    continue;
                }
                // A card's undo is consumed only for the items the chat's undo acted on
                // (docs/liveness.md "undo that"): when some of its items are left, each one
                // acted on is noted on the card and its own undo stays for the rest.
                if items.len() < call.items.len() {
                    let at = self.clock.now();
                    let audit = items
                        .iter()
                        .map(|o| {
                            let mut outcome = o.outcome.clone();
                            outcome[NOTED_VIA] = json!(run.tool);
                            undo_entry(&row, actor, Some(o.item.clone()), outcome, at)
                        })
                        .collect::<Vec<_>>();
                    // The button then names what is left ("Restore 3 emails"), not what ran.
                    let left: Vec<ItemOutcome> = outcomes
                        .iter()
                        .filter(|o| !items.iter().any(|done| done.item == o.item))
                        .cloned()
                        .collect();
                    let undo_left = self
                        .plugin_undo_call(&row, &left)
                        .and_then(|call| call.action)
                        .or_else(|| Some(row.undo_label()));
                    let after = Approval {
                        undo_left: undo_left.clone(),
                        ..row.clone()
                    };
                    self.store
                        .note_undone(
                            &row.id,
                            &audit,
                            undo_left.as_deref(),
                            &Outbox::of([Event::ApprovalResponded(after)]),
                        )
                        .await?;
                    continue;
                }
                let names = items.iter().map(|o| o.item.clone()).collect();
                let (claim, after) = self.claim_for(&row, actor, &run.tool, &run.args, names);
                if self.store.claim_undo(&claim).await? {
                    self.finish_undo(
                        &row,
                        actor,
                        UndoState::Done,
                        run.result.clone(),
                        items,
                        after,
                    )
                    .await?;
                }
            }
        }
        Ok(())
    }

    /// The plugin's undo of an executed `row`, from its execution's audit entries, without the
    /// items an undo from the chat already acted on (noted on the card, one entry each).
    async fn undo_call(&self, row: &Approval) -> Result<Option<UndoCall>, StoreError> {
        let outcomes = self.undoable_outcomes(row).await?;
        Ok(self.plugin_undo_call(row, &outcomes))
    }

    /// The execution's item outcomes of `row` that no undo from the chat acted on yet.
    async fn undoable_outcomes(&self, row: &Approval) -> Result<Vec<ItemOutcome>, StoreError> {
        let entries = self.store.audit(Some(&row.id)).await?;
        // Only the notes of a chat's undo (`via` its tool): the card's own undo entries are
        // its one undo, which `undo` refuses to run again whatever its items.
        let undone: Vec<String> = entries
            .iter()
            .filter(|e| e.kind == AuditKind::Undo && e.result.get(NOTED_VIA).is_some())
            .filter_map(|e| e.item.clone())
            .collect();
        Ok(entries
            .into_iter()
            .filter(|e| e.kind == AuditKind::Execution)
            .filter(|e| e.item.as_ref().is_none_or(|item| !undone.contains(item)))
            .filter_map(|e| {
                e.item.map(|item| ItemOutcome {
                    item,
                    outcome: e.result,
                })
            })
            .collect())
    }

    /// The plugin's undo of `row`'s tool for `outcomes`.
    fn plugin_undo_call(&self, row: &Approval, outcomes: &[ItemOutcome]) -> Option<UndoCall> {
        let toolbox = self.agent.toolbox();
        toolbox
            .registry()
            .get(&row.tool)
            .and_then(|spec| toolbox.plugin(spec))
            .and_then(|p| p.undo_call(&row.tool, outcomes))
    }

    /// Records every undo whose server stopped while it ran (its lease passed) as `unknown`,
    /// with an audit entry and `approval.responded` so open pages say so: it may or may not have
    /// run, and it never runs again. The sweep's step; every server runs it. Returns how many.
    ///
    /// # Errors
    /// [`StoreError`].
    pub async fn lapse_undos(&self) -> Result<usize, StoreError> {
        let sweep = Actor::sweep();
        let mut lapsed = 0;
        for id in self.store.lapsed_undos().await? {
            let Some(row) = self.store.approval(&id).await? else {
                continue;
            };
            let result = json!({"status": "unknown", "message": UNDO_STOPPED});
            self.finish_undo(
                &row,
                &sweep,
                UndoState::Unknown,
                result,
                Vec::new(),
                row.clone(),
            )
            .await?;
            lapsed += 1;
        }
        Ok(lapsed)
    }
}

/// The key of a chat undo's note on a card's item (the undo tool that acted on it): such an
/// item is left out of the card's own undo.
const NOTED_VIA: &str = "via";

/// A planned undo: the tool, its plugin, its arguments and the call the plugin built.
struct PlannedUndo {
    tool: String,
    plugin: Arc<dyn Plugin>,
    args: Value,
    call: UndoCall,
    ctx: CallContext,
}

/// One audit entry of `row`'s undo by `actor`.
fn undo_entry(
    row: &Approval,
    actor: &Actor,
    item: Option<String>,
    result: Value,
    at: DateTime<Utc>,
) -> NewAuditEntry {
    NewAuditEntry {
        approval_id: row.id.clone(),
        kind: AuditKind::Undo,
        item,
        result,
        undo_available: false,
        actor: actor.name.clone(),
        surface: Some(actor.surface.into()),
        at,
    }
}
