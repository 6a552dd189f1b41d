//! `restore_email(ids?)` (effect write, `confirm: never`; the undo of `trash_email`): moves
//! emails back from Trash to the folder each came from (DESIGN §5).
//!
//! With `ids`: each id's most recent trash that is not yet restored. Without ("undo that"): the
//! newest action of the call's own conversation, once: its trash batch's messages still in
//! Trash; when that action was a sent mail (which cannot be unsent) or was undone already, it
//! says so and restores nothing (it never reaches back to an older batch or another
//! conversation's). A restored message comes back into the
//! local store with the same id. The result's `summary` says it in plain words ("Restored 5
//! emails from Trash to where they were.", "Restored 3 of 5 emails to where they were; 2 no longer
//! in Trash.", or "Nothing to restore: …"). Per item: `restored`, `missing` (no longer in Trash),
//! `not_in_trash` (IRIS did not trash it, or it was restored already) or `failed`.

use iris_core::plugin::{Description, ItemOutcome, ToolError, ToolOutput};
use iris_store::LockGuard;
use serde_json::{json, Value};

use super::{card_line, count_phrase, failed, invalid, object, parse_ids};
use crate::backend::{RestoreOutcome, TrashedRef};
use crate::store::{Action, RestoreDone, TrashedRow};
use crate::EmailPlugin;

/// The tool's name.
pub const NAME: &str = "restore_email";

/// Normal form: `{}` (the last batch) or `{"ids": [...]}` under the id list rule of
/// `trash_email`.
///
/// # Errors
/// [`ToolError::InvalidArgs`] for an empty or malformed `ids`, or any other argument.
pub fn normalise(args: &Value) -> Result<Value, ToolError> {
    let obj = object(NAME, args, &["ids"])?;
    match obj.get("ids") {
        None | Some(Value::Null) => Ok(json!({})),
        Some(Value::Array(a)) if a.is_empty() => Err(invalid(
            NAME,
            "`ids` is empty: name the emails to restore, or leave `ids` out to restore the last trashed batch",
        )),
        Some(ids) => Ok(json!({ "ids": parse_ids(NAME, ids)? })),
    }
}

/// What a call would restore: the ledger rows, plus the ids that have none.
struct Plan {
    /// Why nothing is restored without ids, in the owner's words.
    nothing: Option<String>,
    batch: Option<String>,
    rows: Vec<TrashedRow>,
    not_in_trash: Vec<String>,
    /// The call's order of items.
    order: Vec<String>,
}

/// `at` (RFC 3339 text) as the owner reads it: "2026-12-05 10:02 UTC".
fn shown(at: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(at)
        .map(|t| {
            t.with_timezone(&chrono::Utc)
                .format("%Y-%m-%d %H:%M UTC")
                .to_string()
        })
        .unwrap_or_else(|_| at.to_string())
}

/// What "undo that" restores in `conversation`: its newest action, once (DESIGN §5
/// "restore_email"): a trash batch's messages still in Trash; nothing, said why, when that
/// action was a sent mail or was undone already. Nothing older is ever reached for.
async fn last_action_plan(plugin: &EmailPlugin, conversation: &str) -> Result<Plan, ToolError> {
    let store = plugin.store();
    let store_err = |e: sqlx::Error| failed(NAME, format!("local store: {e}"));
    let nothing = |why: String| Plan {
        nothing: Some(why),
        batch: None,
        rows: Vec::new(),
        not_in_trash: Vec::new(),
        order: Vec::new(),
    };
    if conversation.is_empty() {
        return Ok(nothing(
            "Nothing to restore: name the emails to restore (this call has no conversation to take the last action from).".into(),
        ));
    }
    match store.last_action(conversation).await.map_err(store_err)? {
        None => Ok(nothing(
            "Nothing to restore: nothing was trashed in this conversation. A card's own Undo (on Activity) restores what that card moved, whichever conversation it came from.".into(),
        )),
        Some(Action::Send { summary, at }) => Ok(nothing(format!(
            "Nothing to restore: the last thing done in this conversation was sending {summary} ({}), and a sent email cannot be unsent. Nothing older was restored; name the emails to restore them.",
            shown(&at)
        ))),
        Some(Action::Trash { batch, at }) => {
            let rows = store.batch_rows(&batch).await.map_err(store_err)?;
            if rows.is_empty() {
                let when = store
                    .batch_restored_at(&batch)
                    .await
                    .map_err(store_err)?
                    .map(|t| format!(" at {}", shown(&t)))
                    .unwrap_or_default();
                return Ok(nothing(format!(
                    "Nothing to restore: the last trash in this conversation ({}) was undone already{when}. Nothing older was restored; name the emails to restore them.",
                    shown(&at)
                )));
            }
            Ok(Plan {
                nothing: None,
                order: rows.iter().map(|r| r.email_id.clone()).collect(),
                batch: Some(batch),
                rows,
                not_in_trash: Vec::new(),
            })
        }
    }
}

async fn plan(plugin: &EmailPlugin, args: &Value, conversation: &str) -> Result<Plan, ToolError> {
    let args = normalise(args)?;
    let store = plugin.store();
    let store_err = |e: sqlx::Error| failed(NAME, format!("local store: {e}"));
    match args.get("ids").and_then(Value::as_array) {
        None => last_action_plan(plugin, conversation).await,
        Some(ids) => {
            let mut plan = Plan {
                nothing: None,
                batch: None,
                rows: Vec::new(),
                not_in_trash: Vec::new(),
                order: Vec::new(),
            };
            for id in ids.iter().filter_map(Value::as_str) {
                plan.order.push(id.to_string());
                match store.trashed_row(id).await.map_err(store_err)? {
                    Some(r) => plan.rows.push(r),
                    None => plan.not_in_trash.push(id.to_string()),
                }
            }
            Ok(plan)
        }
    }
}

fn line(r: &TrashedRow) -> String {
    let date = serde_json::from_str::<crate::store::MessageRow>(&r.row_json)
        .ok()
        .and_then(|m| m.date());
    card_line(
        &r.subject,
        r.from_name.as_deref(),
        r.from_address.as_deref(),
        date,
    )
}

/// Describes what would come back (a `confirm: never` write has no card; this is for logs and
/// the Activity view).
///
/// # Errors
/// [`ToolError::InvalidArgs`] as [`normalise`]; [`ToolError::Failed`] when the store fails.
pub async fn describe(
    plugin: &EmailPlugin,
    args: &Value,
    conversation: &str,
) -> Result<Description, ToolError> {
    let p = plan(plugin, args, conversation).await?;
    let title = if p.rows.is_empty() {
        "Nothing to restore".to_string()
    } else {
        count_phrase("Restore", p.rows.len())
    };
    let mut lines: Vec<String> = p.rows.iter().map(line).collect();
    lines.extend(
        p.not_in_trash
            .iter()
            .map(|id| format!("{id} — not in Trash")),
    );
    Ok(Description {
        action: title.clone(),
        title,
        lines,
        items: p.order,
        undo_note: None,
        undo_action: None,
        preconditions: Vec::new(),
        ..Description::default()
    })
}

/// The restore as a step of a card's "How this came about": "Restored 3 emails from Trash"
/// (docs/adr/0123-how-a-card-came-about.md).
pub fn step(result: &Value) -> String {
    let n = result["restored"].as_u64().unwrap_or(0);
    format!(
        "{} from Trash",
        super::count_phrase("Restored", usize::try_from(n).unwrap_or(0))
    )
}

/// Moves the emails back (see the module docs), under `held` (the mailbox lock the core took
/// with `Plugin::hold`) or taking the lock itself.
///
/// # Errors
/// [`ToolError::InvalidArgs`] as [`normalise`]; [`ToolError::Failed`] when the store fails, or
/// when it named emails and none of them came back (each one's reason in the message).
pub async fn execute(
    plugin: &EmailPlugin,
    args: &Value,
    conversation: &str,
    held: Option<LockGuard>,
) -> Result<ToolOutput, ToolError> {
    let _guard = plugin
        .held_or_lock(held)
        .await
        .map_err(|e| failed(NAME, e))?;
    let p = plan(plugin, args, conversation).await?;
    let store = plugin.store();
    let store_err = |e: sqlx::Error| failed(NAME, format!("local store: {e}"));

    let mut accounts: Vec<&str> = Vec::new();
    for r in &p.rows {
        if !accounts.contains(&r.account.as_str()) {
            accounts.push(&r.account);
        }
    }
    let mut done: Vec<(TrashedRow, RestoreOutcome)> = Vec::with_capacity(p.rows.len());
    for account in accounts {
        let group: Vec<&TrashedRow> = p.rows.iter().filter(|r| r.account == account).collect();
        let refs: Vec<TrashedRef> = group
            .iter()
            .map(|r| TrashedRef {
                key: r.provider_key.clone(),
                original_folder: r.original_folder.clone(),
                original_location: r.original_location.clone(),
                trash_location: r.trash_location.clone(),
                message_id: serde_json::from_str::<crate::store::MessageRow>(&r.row_json)
                    .ok()
                    .and_then(|m| m.message_id),
            })
            .collect();
        let results = match plugin.backend(account) {
            None => Err(format!("account `{account}` is not configured")),
            Some(b) => b.restore(&refs).await.map_err(|e| e.to_string()),
        };
        for (pos, row) in group.into_iter().enumerate() {
            let outcome = match &results {
                Ok(r) => r.get(pos).cloned().unwrap_or(RestoreOutcome::Failed {
                    reason: "the backend gave no outcome for this message".into(),
                }),
                Err(reason) => RestoreOutcome::Failed {
                    reason: reason.clone(),
                },
            };
            done.push((row.clone(), outcome));
        }
    }
    let ledger: Vec<(TrashedRow, RestoreDone)> = done
        .iter()
        .map(|(r, o)| {
            let d = match o {
                RestoreOutcome::Restored { location, key } => RestoreDone::Restored {
                    location: location.clone(),
                    key: key.clone(),
                },
                RestoreOutcome::Missing => RestoreDone::Missing,
                RestoreOutcome::Failed { .. } => RestoreDone::Failed,
            };
            (r.clone(), d)
        })
        .collect();
    store
        .ledger_restore_done(&ledger, plugin.now())
        .await
        .map_err(store_err)?;

    let mut outcomes: Vec<(String, Value)> = done
        .iter()
        .map(|(r, o)| {
            let v = match o {
                RestoreOutcome::Restored { .. } => {
                    json!({"status": "restored", "folder": r.original_folder, "subject": r.subject})
                }
                RestoreOutcome::Missing => json!({"status": "missing", "reason": "no longer in Trash (emptied or moved by another client)", "subject": r.subject}),
                RestoreOutcome::Failed { reason } => {
                    json!({"status": "failed", "reason": reason, "subject": r.subject})
                }
            };
            (r.email_id.clone(), v)
        })
        .collect();
    outcomes.extend(p.not_in_trash.iter().map(|id| {
        (
            id.clone(),
            json!({"status": "not_in_trash", "reason": "IRIS has no trashed email with this id waiting to be restored"}),
        )
    }));
    outcomes.sort_by_key(|(id, _)| p.order.iter().position(|i| i == id));

    let restored = outcomes
        .iter()
        .filter(|(_, v)| v["status"] == "restored")
        .count();
    if restored == 0 && !outcomes.is_empty() {
        // Nothing came back: a failure, never a "done" that restored nothing.
        let why: Vec<String> = outcomes
            .iter()
            .map(|(id, v)| {
                let reason = v["reason"].as_str().unwrap_or("not restored");
                format!("{id}: {reason}")
            })
            .collect();
        return Err(failed(
            NAME,
            format!("no email was restored ({})", why.join("; ")),
        ));
    }
    let items_json: Vec<Value> = outcomes
        .iter()
        .map(|(id, v)| {
            let mut v = v.clone();
            v["id"] = json!(id);
            v
        })
        .collect();
    let mut result = json!({
        "restored": restored,
        "batch": p.batch,
        "items": items_json,
    });
    let summary = if outcomes.is_empty() {
        let why = p
            .nothing
            .clone()
            .unwrap_or_else(|| "Nothing to restore: no trashed batch is waiting.".to_string());
        result["message"] = json!(why);
        why
    } else {
        let not_back = outcomes.len() - restored;
        if not_back == 0 {
            format!(
                "Restored {restored} email{} from Trash to where {} were.",
                if restored == 1 { "" } else { "s" },
                if restored == 1 { "it" } else { "they" },
            )
        } else {
            let counted = |status: &str| {
                outcomes
                    .iter()
                    .filter(|(_, v)| v["status"] == status)
                    .count()
            };
            let mut why = Vec::new();
            for (status, words) in [
                ("missing", "no longer in Trash"),
                (
                    "not_in_trash",
                    "not waiting in Trash (restored already, or not trashed by IRIS)",
                ),
                ("failed", "could not be restored (see each item)"),
            ] {
                let n = counted(status);
                if n > 0 {
                    why.push(format!("{n} {words}"));
                }
            }
            format!(
                "Restored {restored} of {} emails to where they were; {}.",
                outcomes.len(),
                why.join(", ")
            )
        }
    };
    result["summary"] = json!(summary);
    Ok(ToolOutput {
        result,
        items: outcomes
            .into_iter()
            .map(|(item, outcome)| ItemOutcome { item, outcome })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_forms() {
        assert_eq!(normalise(&json!({})).unwrap(), json!({}));
        assert_eq!(normalise(&json!({"ids": null})).unwrap(), json!({}));
        assert_eq!(
            normalise(&json!({"ids": ["mB", "mb"]})).unwrap(),
            json!({"ids": ["mb"]})
        );
        assert!(normalise(&json!({"ids": []})).is_err());
    }
}
