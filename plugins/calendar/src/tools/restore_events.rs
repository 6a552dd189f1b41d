//! `restore_events(ids?)` (effect write, `confirm: never`): puts deleted events back, byte for
//! byte, from the kept copies ([`crate::kept`]). Without ids: the newest batch `delete_events`
//! deleted in this conversation, once. An event is written only where nothing is (a create with
//! `If-None-Match: *`), and not when its UID now lives elsewhere in the calendar: such an item is
//! "not restored: …" and the rest go on. A copy a crash left `deleting` (whether its delete
//! reached the calendar is not known) is put back too when the event is gone; when it is still
//! there, its line says so.

use std::collections::HashMap;

use iris_core::plugin::{Description, ItemOutcome, ToolError, ToolOutput};
use serde_json::{json, Value};

use super::{count_phrase, failed, invalid, object, parse_ids};
use crate::backend::{CalendarRef, Created};
use crate::event::EventFacts;
use crate::kept::KeptRow;
use crate::CalendarPlugin;

/// The tool's name.
pub const NAME: &str = "restore_events";

/// Normal form: `{}` (the last batch) or `{"ids": [...]}`.
///
/// # Errors
/// [`ToolError::InvalidArgs`] for a malformed `ids` or any other argument.
pub fn normalise(args: &Value) -> Result<Value, ToolError> {
    let obj = object(NAME, args, &["ids"])?;
    match obj.get("ids") {
        None | Some(Value::Null) => Ok(json!({})),
        Some(ids) => Ok(json!({ "ids": parse_ids(NAME, ids)? })),
    }
}

/// The trail's words: "Restore 2 events" or "Restore the last deleted events".
///
/// # Errors
/// As [`normalise`].
pub fn describe(args: &Value) -> Result<Description, ToolError> {
    let n = normalise(args)?;
    let title = match n["ids"].as_array() {
        Some(ids) => count_phrase("Restore", ids.len()),
        None => "Restore the events deleted last in this conversation".into(),
    };
    Ok(Description {
        action: title.clone(),
        title,
        ..Description::default()
    })
}

fn item(id: &str, outcome: Value) -> ItemOutcome {
    ItemOutcome {
        item: id.to_string(),
        outcome,
    }
}

/// Restores: see the module docs.
///
/// # Errors
/// [`ToolError::InvalidArgs`] when there is nothing to restore (no batch in this conversation,
/// or it was restored already); [`ToolError::Failed`] when the kept copies cannot be read.
pub async fn execute(
    plugin: &CalendarPlugin,
    args: &Value,
    conversation: &str,
) -> Result<ToolOutput, ToolError> {
    let n = normalise(args)?;
    let rows: Vec<KeptRow> = match n["ids"].as_array() {
        None => {
            let batch = plugin
                .kept()
                .last_batch(conversation)
                .await
                .map_err(|e| failed(NAME, format!("reading the kept copies: {e}")))?;
            if batch.is_empty() {
                return Err(invalid(
                    NAME,
                    "no events were deleted in this conversation; name the ids to restore",
                ));
            }
            if batch.iter().all(|r| r.state == "restored") {
                return Err(invalid(
                    NAME,
                    "the events deleted last in this conversation were restored already",
                ));
            }
            batch
                .into_iter()
                .filter(|r| r.state == "deleted" || r.state == "deleting")
                .collect()
        }
        Some(ids) => {
            let mut rows = Vec::new();
            for id in ids.iter().filter_map(Value::as_str) {
                match plugin.kept().newest_of(id).await {
                    Ok(Some(row)) if row.state == "deleted" || row.state == "deleting" => {
                        rows.push(row)
                    }
                    Ok(_) => {
                        return Err(invalid(
                            NAME,
                            format!("event `{id}` is not a deleted event IRIS kept (or it was restored already)"),
                        ))
                    }
                    Err(e) => return Err(failed(NAME, format!("reading the kept copies: {e}"))),
                }
            }
            rows
        }
    };
    let mut outcomes = Vec::new();
    let mut restored = 0usize;
    let mut not_restored = Vec::new();
    let mut batch = None;
    let mut uids = UidsInCalendars::default();
    for row in &rows {
        batch.get_or_insert_with(|| row.batch_id.clone());
        let why = restore_one(plugin, row, &mut uids).await;
        match why {
            Ok(()) => {
                restored += 1;
                outcomes.push(item(
                    &row.event_id,
                    json!({"status": "restored", "summary": row.summary}),
                ));
            }
            Err(reason) => {
                not_restored
                    .push(json!({"id": row.event_id, "summary": row.summary, "reason": reason}));
                outcomes.push(item(
                    &row.event_id,
                    json!({"status": "not_restored", "message": format!("not restored: {reason}")}),
                ));
            }
        }
    }
    let mut summary = format!(
        "Put {restored} event{} back in the calendar",
        if restored == 1 { "" } else { "s" }
    );
    if !not_restored.is_empty() {
        summary.push_str(&format!("; {} could not be put back", not_restored.len()));
    }
    Ok(ToolOutput {
        result: json!({
            "summary": format!("{summary}."),
            "restored": restored,
            "not_restored": not_restored,
            "batch": batch,
            "items": outcomes.iter().map(|o| json!({"id": o.item, "status": o.outcome["status"]})).collect::<Vec<_>>(),
        }),
        items: outcomes,
    })
}

/// The UIDs each calendar holds, by (account, calendar href) and the href that holds each:
/// read once per calendar and call, then kept up to date as events are put back.
type UidsInCalendars = HashMap<(String, String), HashMap<String, String>>;

async fn restore_one(
    plugin: &CalendarPlugin,
    row: &KeptRow,
    uids: &mut UidsInCalendars,
) -> Result<(), String> {
    let Some(backend) = plugin.backend(&row.account) else {
        return Err(format!(
            "the account `{}` is no longer configured",
            row.account
        ));
    };
    let Some(bytes) = row.bytes() else {
        return Err("its kept copy is damaged".into());
    };
    let calendar = CalendarRef {
        href: row.calendar_href.clone(),
        name: row.calendar_name.clone(),
    };
    // The same UID re-created elsewhere in the calendar: putting this back would make two.
    let key = (row.account.clone(), row.calendar_href.clone());
    if !uids.contains_key(&key) {
        let now = backend
            .resources(&calendar)
            .await
            .map_err(|e| format!("its calendar cannot be read ({e})"))?;
        let held = now
            .into_iter()
            .filter_map(|r| EventFacts::parse(&r.bytes).uid.map(|uid| (uid, r.href)))
            .collect();
        uids.insert(key.clone(), held);
    }
    let held = uids.get_mut(&key).expect("filled above");
    if held.values().any(|href| href == &row.href) && row.state == "deleting" {
        return Err("it is still in the calendar: its delete never reached it".into());
    }
    if let Some(twin) = row.uid.as_ref().and_then(|uid| held.get(uid)) {
        return Err(format!(
            "an event with the same UID exists now ({}), so it was left as it is",
            iris_core::mcp::escaped(twin)
        ));
    }
    match backend.create(&calendar, &row.href, &bytes).await {
        Ok(Created::Created) => {
            if let Some(uid) = &row.uid {
                held.insert(uid.clone(), row.href.clone());
            }
        }
        Ok(Created::Exists) => {
            return Err("something else is at its place now, and IRIS never writes over it".into())
        }
        Err(e) => return Err(e.to_string()),
    }
    match plugin
        .kept()
        .mark_restored(&row.batch_id, &row.event_id, plugin.now())
        .await
    {
        Ok(true) => Ok(()),
        Ok(false) => Err("it was restored already".into()),
        Err(e) => {
            tracing::error!(event = %row.event_id, error = %e, "restored, but its kept copy is not marked");
            Ok(())
        }
    }
}
