//! What a claimed resume job does in its claim's commit, decided from what the claim read
//! (pure: no I/O, so the store can apply it inside the same transaction). The rules:
//!
//! - **strict restore** (DESIGN §8 fail closed): a row that does not parse, a saved run that is
//!   missing or corrupt, a tool no manifest declares any more, one no longer approved per call,
//!   one whose plugin or backend is gone, a row whose hash does not cover its own tool and
//!   arguments, preconditions that do not parse or do not match the items: the pinned call never
//!   runs. An approved, unclaimed call is consumed (`failed`, with the plain reason) so nothing
//!   can run it later, and the card and the chat say why.
//! - **start by**: an approved call not started by its card's expiry plus the grace
//!   (`IRIS_EXECUTE_GRACE_SECS`) is not run at all: `failed`, "not run: it could not start
//!   before …" (docs/liveness.md; no mail sent hours after the owner said yes).
//! - **write-ahead**: an approved, runnable call is claimed (`executing`) in this commit, before
//!   the side effect.
//! - **takeover**: `executing` with no outcome means the previous holder may or may not have run
//!   it: it becomes `unknown`, is never run again, and the owner is told.
//! - **gateway rows** (an MCP agent's call, `requested_by` set) have no saved run by design:
//!   the same rules, with the gateway's toolbox; the job is the execution alone.

use serde_json::{json, Value};

use super::narrow::call_to_run;
use super::{unknown_outcome, UNKNOWN_OUTCOME};
use crate::canonical::{call_hash, canonical_json};
use crate::ports::{
    ClaimPlan, JobEnd, JobSnapshot, LedgerStep, NewAuditEntry, ResumeErrorChange, SavedRun,
};
use crate::toolbox::Toolbox;
use crate::wire::{
    Approval, ApprovalKind, ApprovalStatus, AuditKind, ChatLine, Event, Execution, RunMessage,
};

/// The claim's plan for `snapshot` at its unit's time `snapshot.now` (which also stamps audit entries); an
/// approved call is started only up to `grace_secs` seconds after its card's expiry.
pub fn plan_claim(toolbox: &Toolbox, snapshot: &JobSnapshot, grace_secs: u64) -> ClaimPlan {
    let at = snapshot.now;
    let mut plan = ClaimPlan::lease_only();
    let row = match &snapshot.approval {
        Ok(row) => row,
        Err(reason) => {
            // The row cannot be read, so nothing can run it; say why where we can.
            let text = format!("the approval row cannot be read ({reason}); nothing was run");
            plan.end = Some(JobEnd::Dead);
            plan.resume_error = ResumeErrorChange::Set(text);
            if let Some(conversation) = &snapshot.conversation_id {
                tell(
                    &mut plan,
                    conversation,
                    "",
                    &snapshot.approval_id,
                    "I could not continue a paused run: its approval row cannot be read. Nothing was run and nothing was changed.",
                );
            }
            return plan;
        }
    };
    let unclaimed_call = row.status == ApprovalStatus::Approved
        && row.kind != ApprovalKind::Evaluator
        && row.execution == Execution::None;
    // A run that can never resume: consume the call, say why on the card and in the chat.
    let dead = match &snapshot.saved {
        // A gateway row never had a run of IRIS's: its job is the execution alone.
        SavedRun::Missing if row.requested_by.is_some() => None,
        SavedRun::Missing => Some((
            "its paused run was never saved, so it cannot continue".to_string(),
            None,
        )),
        SavedRun::Corrupt(reason) => Some((
            format!("its saved run is corrupt ({reason})"),
            Some(format!(
                "I could not continue the paused run for \"{}\": its saved state is corrupt. Nothing was run and nothing was changed.",
                row.card.action
            )),
        )),
        SavedRun::Saved(_) => None,
    };
    if let Some((reason, chat)) = dead {
        let mut after = row.clone();
        if unclaimed_call {
            let result = refusal_result(&reason);
            plan.ledger = refuse(row, result.clone());
            after.execution = Execution::Failed;
            after.result = Some(result);
        }
        plan.audit.push(denial(&row.id, &reason, at));
        let text = format!("The paused run cannot be restored: {reason}. Nothing was run.");
        after.resume_error = Some(text.clone());
        plan.resume_error = ResumeErrorChange::Set(text);
        plan.end = Some(JobEnd::Dead);
        plan.outbox.add(Event::ApprovalResponded(after));
        if let (Some(conversation), Some(chat)) = (&snapshot.conversation_id, chat) {
            tell(&mut plan, conversation, &row.run_id, &row.id, &chat);
        }
        return plan;
    }
    if row.execution == Execution::Executing {
        let check = toolbox.how_to_check(&row.tool);
        // The card says how to check it, as an outcome that timed out does (docs/liveness.md
        // "truthful records").
        let result = json!({"status": "unknown", "message": unknown_outcome(check.as_deref())});
        plan.ledger = LedgerStep::MarkUnknown {
            result: result.clone(),
        };
        let mut after = row.clone();
        after.execution = Execution::Unknown;
        after.result = Some(result);
        plan.outbox.add(Event::ApprovalResponded(after));
        // Told once, in the commit that makes it unknown: the audit entry and the chat's line
        // land with the ledger's change or not at all, so no retry or retake tells it again.
        plan.audit.push(NewAuditEntry {
            approval_id: row.id.clone(),
            kind: AuditKind::Execution,
            item: None,
            result: json!({"status": "unknown", "message": unknown_outcome(check.as_deref())}),
            undo_available: false,
            actor: super::IRIS_ACTOR.into(),
            surface: None,
            at,
        });
        if let Some(conversation) = &snapshot.conversation_id {
            tell(
                &mut plan,
                conversation,
                &row.run_id,
                &row.id,
                &unknown_told(&row.card.action, check.as_deref()),
            );
        }
        return plan;
    }
    if !unclaimed_call {
        return plan;
    }
    let start_by = i64::try_from(grace_secs)
        .ok()
        .and_then(chrono::Duration::try_seconds)
        .and_then(|grace| row.expires_at.checked_add_signed(grace));
    let verdict = match start_by {
        Some(start_by) if at > start_by => Err(format!(
            "it could not start before {}",
            crate::wire::when_utc(start_by)
        )),
        _ => runnable(toolbox, row, &snapshot.preconditions),
    };
    match verdict {
        Ok(()) => {
            plan.ledger = LedgerStep::Claim {
                tool: row.tool.clone(),
                args_canonical: claimed_args(row),
            };
            let mut after = row.clone();
            after.execution = Execution::Executing;
            plan.outbox.add(Event::ApprovalResponded(after));
        }
        Err(reason) => {
            let result = refusal_result(&reason);
            plan.ledger = refuse(row, result.clone());
            plan.audit.push(denial(&row.id, &reason, at));
            let mut after = row.clone();
            after.execution = Execution::Failed;
            after.result = Some(result);
            plan.outbox.add(Event::ApprovalResponded(after));
        }
    }
    plan
}

/// Why the approved call of `row` must not run now (strict restore), or `Ok` when it may.
fn runnable(
    toolbox: &Toolbox,
    row: &Approval,
    preconditions: &Result<Vec<Value>, String>,
) -> Result<(), String> {
    let tool = &row.tool;
    let spec = toolbox
        .registry()
        .get(tool)
        .ok_or_else(|| format!("tool `{tool}` is not declared by any manifest any more"))?;
    if !spec.approved_per_call() {
        return Err(format!(
            "tool `{tool}` is no longer approved per call (its effect is now `{}`)",
            spec.effect.as_str()
        ));
    }
    if let Some(why) = toolbox.unavailable(spec) {
        return Err(format!("`{tool}` cannot run here any more: {why}"));
    }
    // What executes is what was hashed: a row whose hash does not cover its own tool and
    // arguments is corrupt and never runs.
    if call_hash(tool, &row.args) != row.call_hash {
        return Err("the row's call hash does not match its tool and arguments".into());
    }
    match preconditions {
        Err(reason) => Err(format!("the row's preconditions are corrupt: {reason}")),
        Ok(p) if !p.is_empty() && p.len() != row.items.len() => Err(format!(
            "the row pins {} preconditions for {} items",
            p.len(),
            row.items.len()
        )),
        // An approval of some items runs its decided call, which must be exactly the request
        // narrowed to them (docs/adr/0122-shaping-a-call.md).
        Ok(p) => call_to_run(row, p).map(|_| ()),
    }
}

/// The canonical arguments a claim of `row` names: those of the call that runs (the decided
/// call after an approval of some items, else the request's). A decided call that does not
/// hold up claims the request's, which the database refuses for such a row.
fn claimed_args(row: &Approval) -> String {
    call_to_run(row, &[])
        .map(|call| call.args_canonical)
        .unwrap_or_else(|_| canonical_json(&row.args))
}

/// The ledger step that consumes `row`'s call without running it.
fn refuse(row: &Approval, result: Value) -> LedgerStep {
    LedgerStep::Refuse {
        tool: row.tool.clone(),
        args_canonical: claimed_args(row),
        result,
    }
}

/// The recorded outcome of a call strict restore refused.
pub(crate) fn refusal_result(reason: &str) -> Value {
    json!({"status": "failed", "message": format!("not run: {reason}; nothing was changed")})
}

/// An audit denial by the service itself.
pub(crate) fn denial(
    approval_id: &str,
    reason: &str,
    at: chrono::DateTime<chrono::Utc>,
) -> NewAuditEntry {
    NewAuditEntry {
        approval_id: approval_id.to_string(),
        kind: AuditKind::Denial,
        item: None,
        result: json!({"denied": reason}),
        undo_available: false,
        actor: super::IRIS_ACTOR.into(),
        surface: None,
        at,
    }
}

/// Tells the owner `text` about `approval_id` in `conversation`: a chat line and `run.message`.
fn tell(plan: &mut ClaimPlan, conversation: &str, run_id: &str, approval_id: &str, text: &str) {
    plan.lines
        .push((conversation.to_string(), told(approval_id, text)));
    plan.outbox.add(Event::RunMessage(RunMessage {
        conversation_id: conversation.to_string(),
        run_id: run_id.to_string(),
        text: text.to_string(),
        approval_id: Some(approval_id.to_string()),
    }));
}

/// What the owner is told when a call's outcome became unknown (its holder stopped while it
/// ran): that it will not run again, and how to check it (`check`, from the tool's plugin).
pub(crate) fn unknown_told(action: &str, check: Option<&str>) -> String {
    let how = match check {
        Some(check) => format!("please check it yourself: {check}."),
        None => "please check it yourself.".to_string(),
    };
    format!(
        "I can't tell whether \"{action}\" ran: it was interrupted while running. It will not be run again; {how}"
    )
}

/// IRIS's own line at a card's end (docs/liveness.md "every decided card ends"): what
/// happened to the call, in plain words, from the row and the ledger alone, whatever the model
/// then says. `check` is how to check an unknown outcome (the tool's plugin's words). The text
/// names the card's title; `None` for a row still pending (it has not ended).
pub(crate) fn end_line(row: &Approval, check: Option<&str>) -> Option<String> {
    let title = &row.card.title;
    let text = |key: &str| {
        row.result
            .as_ref()
            .and_then(|r| r.get(key))
            .and_then(Value::as_str)
            .filter(|m| !m.trim().is_empty())
    };
    let (message, summary) = (text("message"), text("summary"));
    let stale = row
        .result
        .as_ref()
        .and_then(|r| r.get("stale"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    Some(match row.status {
        ApprovalStatus::Pending => return None,
        ApprovalStatus::Rejected => match row.reason.as_deref().filter(|r| !r.trim().is_empty()) {
            Some(reason) => format!("Rejected \"{title}\" ({reason}): nothing was changed."),
            None => format!("Rejected \"{title}\": nothing was changed."),
        },
        ApprovalStatus::Expired => {
            format!("\"{title}\" lapsed without an answer: nothing was changed.")
        }
        ApprovalStatus::Approved => {
            (match row.execution {
                Execution::Executed => {
                    let done = summary.map_or_else(|| "done.".to_string(), sentence);
                    if stale > 0 {
                        format!(
                        "Approved \"{title}\": {done} {stale} of its items had changed since you saw them and were left alone."
                    )
                    } else {
                        format!("Approved \"{title}\": {done}")
                    }
                }
                Execution::Failed
                    if row.result.as_ref().is_some_and(|r| r["status"] == "stale") =>
                {
                    format!(
                        "Approved \"{title}\", but nothing was done: {}",
                        sentence(
                            message.unwrap_or("everything on it had changed since you saw it")
                        )
                    )
                }
                Execution::Failed => format!(
                    "Approved \"{title}\", but it did not happen: {} Nothing more will be tried.",
                    sentence(message.unwrap_or("no reason was recorded"))
                ),
                Execution::Unknown => unknown_told(title, check),
                Execution::None | Execution::Executing => {
                    format!("Approved \"{title}\": it will run in a moment.")
                }
            }) + &left_out_words(row)
        }
    })
}

/// What the end line adds after an approval of some items (" You approved 2 of 3; the other
/// was left out and not touched.") or of an edited call (" You edited the subject before
/// approving."); empty for any other card.
fn left_out_words(row: &Approval) -> String {
    if let Some(fields) = row.edited_words() {
        return format!(" You edited {fields} before approving.");
    }
    match row.approved_share() {
        Some((kept, of)) => {
            let left = of - kept;
            let others = if left == 1 {
                "the other was".to_string()
            } else {
                format!("the other {left} were")
            };
            format!(" You approved {kept} of {of}; {others} left out and not touched.")
        }
        None => String::new(),
    }
}

/// `text` as a sentence: a capital first letter and a full stop.
fn sentence(text: &str) -> String {
    let text = text.trim();
    let mut chars = text.chars();
    let mut out = match chars.next() {
        Some(first) => first.to_uppercase().collect::<String>() + chars.as_str(),
        None => String::new(),
    };
    if !out.ends_with(['.', '!', '?']) {
        out.push('.');
    }
    out
}

/// An assistant line about `approval_id`.
pub(crate) fn told(approval_id: &str, text: &str) -> ChatLine {
    ChatLine {
        role: "assistant".into(),
        text: text.to_string(),
        approval_id: Some(approval_id.to_string()),
        approval_status: None,
    }
}

/// The observation the paused call gets from a row whose call will not run in this job, and
/// what the owner must be told beyond the model's reply. `None` when the call is to be executed
/// now (the claim took it).
pub(crate) fn settled_observation(
    row: &Approval,
    plan: &ClaimPlan,
) -> Option<(Value, Option<String>)> {
    Some(match row.status {
        ApprovalStatus::Approved => match (&plan.ledger, row.execution) {
            (LedgerStep::Claim { .. }, _) => return None,
            (LedgerStep::Refuse { result, .. }, _) => {
                let message = result["message"].as_str().unwrap_or_default().to_string();
                (
                    json!({"status": "not_run", "message": message}),
                    Some(format!(
                        "I did not run the approved `{}` call: {message}.",
                        row.tool
                    )),
                )
            }
            // The claim that made it unknown told the owner in its own commit; a retry or a
            // retake says nothing more.
            (LedgerStep::MarkUnknown { .. }, _)
            | (_, Execution::Unknown | Execution::Executing) => (
                json!({"status": "unknown", "message": UNKNOWN_OUTCOME}),
                None,
            ),
            // A retry or a takeover after the outcome: the ledger's result is the observation;
            // the call never runs again (DESIGN §8).
            (_, Execution::Executed | Execution::Failed) => (
                row.result
                    .clone()
                    .map(crate::agent::as_object)
                    .unwrap_or_else(|| json!({"status": row.execution.as_str()})),
                None,
            ),
            (_, Execution::None) => (
                json!({"status": "not_run", "message": "the call was not run; nothing was changed"}),
                None,
            ),
        },
        ApprovalStatus::Rejected => (
            json!({
                "status": "rejected",
                "message": format!("the owner rejected this: {}", row.reason.as_deref().unwrap_or("no reason given")),
                "changed": false,
            }),
            None,
        ),
        ApprovalStatus::Expired => (
            json!({"status": "expired", "message": super::LAPSED, "changed": false}),
            None,
        ),
        ApprovalStatus::Pending => (
            json!({"status": "not_run", "message": "still waiting for the owner"}),
            None,
        ),
    })
}
