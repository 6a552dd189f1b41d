//! `delete_events(ids)` (effect destructive, `undo: restore_events`, `undo_window_days: 30`):
//! deletes each named event resource (a series whole), keeping its exact bytes first.
//!
//! The card (docs/DESIGN.md §2 "card"): "Delete N events", one line per id from the calendar
//! itself, never from the model's words ([`super::card_line`]: summary, day, time range and
//! zone or "(all day)", calendar; the series and guests when they apply). An id no account holds
//! is named "not found" with a precondition never met, so the rest proceed; a call naming no
//! event that exists is refused at describe time.
//!
//! Staleness: the card pins, per id, `{"account", "calendar", "href", "etag"}`. Just before the
//! approved call runs, [`check_precondition`] requires the same ETag; the delete itself is
//! conditional on that ETag too (`If-Match`), so an event changed in between is left alone and
//! its item says "changed since you saw it, not deleted" while the rest go on.
//!
//! Execution, per event: the kept row first (state `deleting`, the exact bytes), then the
//! conditional delete, then the row's state. A delete whose outcome cannot be known leaves the
//! row `deleting` and the item `unknown`; it is never sent again.

use std::collections::HashMap;

use iris_core::plugin::{Description, ItemOutcome, ToolError, ToolOutput, UndoCall};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{card_line, count_phrase, failed, invalid, object, parse_ids, summary_text, Guests};
use crate::backend::{BackendError, CalendarRef, Deleted};
use crate::event::EventFacts;
use crate::kept::KeptRow;
use crate::CalendarPlugin;

/// The tool's name.
pub const NAME: &str = "delete_events";

/// The manifest's `undo_window_days` (the manifest test checks they agree).
pub const UNDO_WINDOW_DAYS: u32 = 30;

/// The failpoint between an event's delete and the mark on its kept copy (crash tests).
pub const FAILPOINT_AFTER_DELETE: &str = "calendar_after_delete";

/// Normal form `{"ids": [...]}`: see [`super::parse_ids`].
///
/// # Errors
/// [`ToolError::InvalidArgs`] for a missing, empty or malformed `ids`, or any other argument.
pub fn normalise(args: &Value) -> Result<Value, ToolError> {
    let obj = object(NAME, args, &["ids"])?;
    let Some(ids) = obj.get("ids") else {
        return Err(invalid(NAME, "`ids` is required: the event ids to delete"));
    };
    Ok(json!({ "ids": parse_ids(NAME, ids)? }))
}

pub(crate) fn ids_of(args: &Value) -> Result<Vec<String>, ToolError> {
    Ok(normalise(args)?["ids"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default())
}

/// What `delete_events` pins per id: where the event was and the version the owner saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Precondition {
    /// The account.
    pub account: String,
    /// The calendar's href.
    pub calendar: String,
    /// The resource's href.
    pub href: String,
    /// Its ETag when the card was made.
    pub etag: String,
}

/// The card: see the module docs.
///
/// # Errors
/// [`ToolError::InvalidArgs`] when no account holds any of the ids; [`ToolError::Failed`] when a
/// calendar cannot be read.
pub async fn describe(plugin: &CalendarPlugin, args: &Value) -> Result<Description, ToolError> {
    let ids = ids_of(args)?;
    let all = plugin.all_events(NAME, None).await?;
    let mut lines = Vec::with_capacity(ids.len());
    let mut preconditions = Vec::with_capacity(ids.len());
    let mut missing = Vec::new();
    // Whether each account's server tells guests (one OPTIONS per account and card).
    let mut tells: HashMap<String, bool> = HashMap::new();
    for id in &ids {
        match all.iter().find(|e| &e.id == id) {
            Some(found) => {
                let mut guests = Guests::default();
                if let Some(organizer) = &found.facts.organizer {
                    guests.you_organize = plugin.is_owner(organizer);
                }
                if guests.you_organize && found.facts.attendees > 0 {
                    if !tells.contains_key(&found.account) {
                        let told = match plugin.backend(&found.account) {
                            Some(backend) => backend.tells_attendees().await,
                            None => false,
                        };
                        tells.insert(found.account.clone(), told);
                    }
                    guests.server_tells = tells[&found.account];
                }
                lines.push(card_line(&found.facts, &found.calendar.name, guests));
                preconditions.push(json!(Precondition {
                    account: found.account.clone(),
                    calendar: found.calendar.href.clone(),
                    href: found.resource.href.clone(),
                    etag: found.resource.etag.clone(),
                }));
            }
            None => {
                let why = match plugin.kept().newest_of(id).await {
                    Ok(Some(row)) if row.state == "deleted" => {
                        format!("event `{id}` was deleted already; restore_events brings it back")
                    }
                    _ => format!("no event with id `{id}`; use an id from list_events"),
                };
                lines.push(format!(
                    "{id} — not found, nothing will be done to it ({why})"
                ));
                // Never met: the core leaves the item out and reports it (the rest proceed).
                preconditions.push(Value::Null);
                missing.push(why);
            }
        }
    }
    if missing.len() == ids.len() {
        return Err(invalid(NAME, missing.join("; ")));
    }
    let found = ids.len() - missing.len();
    let title = count_phrase("Delete", found);
    Ok(Description {
        action: title.clone(),
        title,
        lines,
        items: ids,
        undo_note: Some(format!(
            "IRIS keeps a copy: you can restore {} for {UNDO_WINDOW_DAYS} days.",
            if found == 1 { "it" } else { "them" }
        )),
        undo_action: Some(count_phrase("Restore", found)),
        preconditions,
        ..Description::default()
    })
}

/// Whether `item`'s pinned version is still the one in its calendar (fail closed: an unreadable
/// precondition or calendar is `false`). When it holds, the ETag is remembered for the delete's
/// `If-Match` ([`CalendarPlugin::remember_checked`]).
pub async fn check_precondition(
    plugin: &CalendarPlugin,
    run: &str,
    item: &str,
    precondition: &Value,
) -> bool {
    let Ok(pinned) = serde_json::from_value::<Precondition>(precondition.clone()) else {
        return false;
    };
    let Some(backend) = plugin.backend(&pinned.account) else {
        return false;
    };
    let calendar = CalendarRef {
        href: pinned.calendar.clone(),
        name: String::new(),
    };
    match backend.get(&calendar, &pinned.href).await {
        Ok(Some(now)) if now.etag == pinned.etag => {
            plugin.remember_checked(run, item, pinned);
            true
        }
        _ => false,
    }
}

fn item(id: &str, outcome: Value) -> ItemOutcome {
    ItemOutcome {
        item: id.to_string(),
        outcome,
    }
}

/// Deletes every id not in `stale`: see the module docs. `run` and `conversation` are the
/// call's (the checked versions, and where "undo that" looks).
///
/// # Errors
/// [`ToolError::Failed`] when the kept copy cannot be written for the first event (nothing was
/// deleted); later failures are per item.
pub async fn execute(
    plugin: &CalendarPlugin,
    args: &Value,
    stale: &[String],
    run: &str,
    conversation: &str,
) -> Result<ToolOutput, ToolError> {
    let ids = ids_of(args)?;
    let batch = uuid::Uuid::new_v4().to_string();
    let now = iris_store::timestamp_text(plugin.now());
    let mut outcomes = Vec::new();
    let mut deleted = Vec::new();
    let mut not_deleted = Vec::new();
    let mut names: HashMap<(String, String), String> = HashMap::new();
    for id in ids.iter().filter(|id| !stale.contains(id)) {
        // Only the version the owner's card pinned and the check confirmed is ever deleted.
        let Some(pinned) = plugin.take_checked(run, id) else {
            not_deleted.push(json!({"id": id, "status": "changed"}));
            outcomes.push(item(
                id,
                json!({"status": "changed", "message": "not deleted: the version you saw could not be confirmed"}),
            ));
            continue;
        };
        let Some(backend) = plugin.backend(&pinned.account) else {
            outcomes.push(item(id, json!({"status": "failed", "message": "its account is no longer configured; not deleted"})));
            continue;
        };
        // One listing of an account's calendars per call, not one per event.
        let key = (pinned.account.clone(), pinned.calendar.clone());
        if !names.contains_key(&key) {
            let name = plugin.calendar_name(&key.0, &key.1).await;
            names.insert(key.clone(), name);
        }
        let calendar = CalendarRef {
            href: pinned.calendar.clone(),
            name: names[&key].clone(),
        };
        let current = match backend.get(&calendar, &pinned.href).await {
            Ok(Some(r)) if r.etag == pinned.etag => r,
            Ok(Some(_)) => {
                not_deleted.push(json!({"id": id, "status": "changed"}));
                outcomes.push(item(id, json!({"status": "changed", "message": "changed since you saw it, not deleted"})));
                continue;
            }
            Ok(None) => {
                outcomes.push(item(
                    id,
                    json!({"status": "missing", "message": "already gone; nothing to delete"}),
                ));
                continue;
            }
            Err(e) => {
                outcomes.push(item(
                    id,
                    json!({"status": "failed", "message": format!("not deleted: {e}")}),
                ));
                continue;
            }
        };
        let facts = EventFacts::parse(&current.bytes);
        let row = KeptRow {
            batch_id: batch.clone(),
            event_id: id.clone(),
            conversation_id: conversation.to_string(),
            account: pinned.account.clone(),
            calendar_href: pinned.calendar.clone(),
            calendar_name: calendar.name.clone(),
            href: pinned.href.clone(),
            uid: facts.uid.clone(),
            etag: current.etag.clone(),
            bytes_b64: KeptRow::encode(&current.bytes),
            summary: summary_text(&facts),
            state: "deleting".into(),
            deleted_at: now.clone(),
            restored_at: None,
        };
        if let Err(e) = plugin.kept().insert_deleting(&row).await {
            if deleted.is_empty() && outcomes.is_empty() {
                return Err(failed(
                    NAME,
                    format!("keeping a copy failed ({e}); nothing was deleted"),
                ));
            }
            outcomes.push(item(id, json!({"status": "failed", "message": format!("not deleted: keeping its copy failed ({e})")})));
            continue;
        }
        match backend.delete(&calendar, &pinned.href, &pinned.etag).await {
            Ok(Deleted::Deleted) => {
                iris_core::failpoint::hit(FAILPOINT_AFTER_DELETE);
                if let Err(e) = plugin.kept().mark_deleted(&batch, id).await {
                    tracing::error!(event = %id, error = %e, "deleted, but its kept copy stays `deleting`");
                }
                deleted.push(id.clone());
                outcomes.push(item(
                    id,
                    json!({"status": "deleted", "summary": row.summary, "batch": batch}),
                ));
            }
            Ok(gone @ (Deleted::Changed | Deleted::Missing)) => {
                if let Err(e) = plugin.kept().forget(&batch, id).await {
                    tracing::warn!(event = %id, error = %e, "a kept copy of an event left alone stays");
                }
                let (status, message) = if gone == Deleted::Changed {
                    ("changed", "changed since you saw it, not deleted")
                } else {
                    ("missing", "already gone; nothing to delete")
                };
                if gone == Deleted::Changed {
                    not_deleted.push(json!({"id": id, "status": status}));
                }
                outcomes.push(item(id, json!({"status": status, "message": message})));
            }
            Err(e @ BackendError::Unknown(_)) => {
                // The copy stays `deleting`: whether the delete happened is not known, and it
                // is never sent again.
                outcomes.push(item(id, json!({"status": "unknown", "message": format!("may or may not be deleted: {e}")})));
            }
            Err(e) => {
                if let Err(f) = plugin.kept().forget(&batch, id).await {
                    tracing::warn!(event = %id, error = %f, "a kept copy of an event not deleted stays");
                }
                outcomes.push(item(
                    id,
                    json!({"status": "failed", "message": format!("not deleted: {e}")}),
                ));
            }
        }
    }
    let changed = not_deleted.len();
    let other = outcomes.len() - deleted.len() - changed;
    let mut summary = count_phrase("Deleted", deleted.len());
    if changed > 0 {
        summary.push_str(&format!(
            "; {changed} changed since you saw {} and {} left alone",
            if changed == 1 { "it" } else { "them" },
            if changed == 1 { "was" } else { "were" }
        ));
    }
    if other > 0 {
        summary.push_str(&format!("; {other} not deleted"));
    }
    Ok(ToolOutput {
        result: json!({
            "summary": format!("{summary}."),
            "deleted": deleted.len(),
            "not_deleted": not_deleted,
            "batch": batch,
            "undo": "restore_events",
            "items": outcomes.iter().map(|o| json!({"id": o.item, "status": o.outcome["status"]})).collect::<Vec<_>>(),
        }),
        items: outcomes,
    })
}

/// The undo: `restore_events` for the ids deleted.
pub fn undo_call(outcomes: &[ItemOutcome]) -> Option<UndoCall> {
    let ids: Vec<String> = outcomes
        .iter()
        .filter(|o| o.outcome["status"] == "deleted")
        .map(|o| o.item.clone())
        .collect();
    if ids.is_empty() {
        return None;
    }
    Some(UndoCall {
        args: json!({ "ids": ids }),
        action: Some(count_phrase("Restore", ids.len())),
        items: ids,
    })
}

/// Where each event of an unknown call is now (the takeover after a crash: the call is never
/// sent again), by its kept copy (written before its delete was sent) and the calendar: gone
/// with a copy kept is "deleted" (the shape [`execute`] gives, so [`undo_call`] puts it back),
/// still there with the ETag the card pinned is "not_deleted", anything else "unknown". An
/// event without a copy of this call was never sent. Reads only.
pub async fn locate(plugin: &CalendarPlugin, items: &[String]) -> ToolOutput {
    let mut outcomes = Vec::with_capacity(items.len());
    let (mut gone, mut there, mut unknown) = (0usize, 0usize, 0usize);
    for id in items {
        let row = match plugin.kept().newest_of(id).await {
            Ok(Some(row)) if row.state == "deleting" || row.state == "deleted" => row,
            Ok(_) => {
                there += 1;
                outcomes.push(item(id, json!({"status": "not_deleted", "message": "not deleted: its delete was never sent"})));
                continue;
            }
            Err(e) => {
                unknown += 1;
                outcomes.push(item(id, json!({"status": "unknown", "message": format!("its kept copy cannot be read ({e}): look in your calendar app")})));
                continue;
            }
        };
        let calendar = crate::backend::CalendarRef {
            href: row.calendar_href.clone(),
            name: row.calendar_name.clone(),
        };
        let now = match plugin.backend(&row.account) {
            Some(backend) => backend
                .get(&calendar, &row.href)
                .await
                .map_err(|e| e.to_string()),
            None => Err(format!(
                "the account `{}` is no longer configured",
                row.account
            )),
        };
        let outcome = match now {
            Ok(None) => {
                gone += 1;
                json!({"status": "deleted", "summary": row.summary, "batch": row.batch_id, "message": "deleted; IRIS kept its copy, which the undo puts back"})
            }
            Ok(Some(resource)) if resource.etag == row.etag => {
                there += 1;
                json!({"status": "not_deleted", "message": "not deleted: it is still in the calendar"})
            }
            Ok(Some(_)) => {
                unknown += 1;
                json!({"status": "unknown", "message": "something else is at its place now: look in your calendar app"})
            }
            Err(e) => {
                unknown += 1;
                json!({"status": "unknown", "message": format!("its calendar cannot be read ({e}): look in your calendar app")})
            }
        };
        outcomes.push(item(id, outcome));
    }
    let mut parts = Vec::new();
    if gone > 0 {
        parts.push(format!("{gone} deleted (a copy kept)"));
    }
    if there > 0 {
        parts.push(format!("{there} still in the calendar"));
    }
    if unknown > 0 {
        parts.push(format!("{unknown} not known"));
    }
    ToolOutput {
        result: json!({"summary": format!("{}.", parts.join(", "))}),
        items: outcomes,
    }
}
