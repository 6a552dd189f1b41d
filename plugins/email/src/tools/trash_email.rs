//! `trash_email(ids)` (effect destructive, `undo: restore_email`, `undo_window_days: 30`): moves
//! each named email to its account's Trash; never a permanent delete (DESIGN §4, §5).
//!
//! The card (DESIGN §2 "card"): title and action "Trash N email(s)", one line per id
//! "Subject — Sender Name, 28 Nov 2026" from the local store, items = the ids in order. An id the
//! local store does not hold is named on the card as "not found" with a precondition that is
//! never met, so the rest proceed and it is reported, never acted on (bad input); a
//! call naming no id the store holds is refused at describe time, so no row pins it.
//!
//! Execution writes the trashed ledger first (state `trashing`), then moves, then records each
//! outcome; a trashed message leaves the local store. One missing file never fails the batch: its
//! item says `{"status": "missing"}`.
//!
//! Staleness: the card pins, per id, a precondition `{"account", "folder",
//! "message_id"}`: where the message was when the owner saw it. Just before the approved call
//! runs, [`check_precondition`] requires the message to still be in that folder (local store and
//! mailbox alike) with the same Message-ID; a stale id is left out ([`execute_skipping`]) and the
//! core reports it "stale: nothing done".

use iris_core::plugin::{Description, ItemOutcome, ToolError, ToolOutput, UndoCall};
use iris_store::LockGuard;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{count_phrase, failed, invalid, object, parse_ids, row_line};
use crate::backend::{MessageRef, TrashOutcome};
use crate::store::{MessageRow, TrashDone};
use crate::EmailPlugin;

/// The tool's name.
pub const NAME: &str = "trash_email";

/// The manifest's `undo_window_days` (the manifest test checks they agree).
pub const UNDO_WINDOW_DAYS: u32 = 30;

/// Normal form `{"ids": [...]}`: ids trimmed, lower-cased, duplicates dropped keeping the first
/// occurrence's order; 1 to 200 ids.
///
/// # Errors
/// [`ToolError::InvalidArgs`] for a missing, empty or malformed `ids`, or any other argument.
pub fn normalise(args: &Value) -> Result<Value, ToolError> {
    let obj = object(NAME, args, &["ids"])?;
    let Some(ids) = obj.get("ids") else {
        return Err(invalid(
            NAME,
            "`ids` is required: the email ids to move to Trash",
        ));
    };
    Ok(json!({ "ids": parse_ids(NAME, ids)? }))
}

fn ids_of(args: &Value) -> Result<Vec<String>, ToolError> {
    let n = normalise(args)?;
    Ok(n["ids"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default())
}

/// The card for a call: see the module docs.
///
/// # Errors
/// [`ToolError::InvalidArgs`] when the local store holds none of the ids, naming each (saying
/// which are already in Trash); [`ToolError::Failed`] when the store cannot be read.
pub async fn describe(plugin: &EmailPlugin, args: &Value) -> Result<Description, ToolError> {
    let ids = ids_of(args)?;
    let store = plugin.store();
    let mut lines = Vec::with_capacity(ids.len());
    let mut preconditions = Vec::with_capacity(ids.len());
    let mut problems = Vec::new();
    for id in &ids {
        match store
            .get(id)
            .await
            .map_err(|e| failed(NAME, format!("local store: {e}")))?
        {
            Some(row) => {
                lines.push(row_line(&row));
                preconditions.push(json!(Precondition {
                    account: row.account.clone(),
                    folder: row.folder.clone(),
                    message_id: row.message_id.clone(),
                }));
            }
            None => {
                let trashed = store
                    .trashed_row(id)
                    .await
                    .map_err(|e| failed(NAME, format!("local store: {e}")))?;
                let why = match trashed {
                    Some(t) => format!(
                        "email `{id}` is already in Trash (batch {}); restore_email brings it back",
                        t.batch_id
                    ),
                    None => format!(
                        "no email with id `{id}` in the local store; use an id from search_inbox"
                    ),
                };
                // Named on the card and skipped: a null precondition is never met, so the core
                // leaves the item out and reports it (the rest proceed).
                lines.push(format!(
                    "{id} — not found, nothing will be done to it ({why})"
                ));
                preconditions.push(Value::Null);
                problems.push(why);
            }
        }
    }
    if problems.len() == ids.len() {
        return Err(invalid(NAME, problems.join("; ")));
    }
    let found = ids.len() - problems.len();
    let title = count_phrase("Trash", found);
    let undo_note = format!(
        "You can restore {} from Trash for {UNDO_WINDOW_DAYS} days.",
        if ids.len() - problems.len() == 1 {
            "it"
        } else {
            "these"
        }
    );
    Ok(Description {
        action: title.clone(),
        title,
        lines,
        items: ids,
        undo_note: Some(undo_note),
        undo_action: Some(count_phrase("Restore", found)),
        preconditions,
        ..Description::default()
    })
}

/// What `trash_email` pins per id (staleness): where the message was when the card was
/// written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Precondition {
    /// The account holding it.
    pub account: String,
    /// The folder it was in (`INBOX`, a Maildir++ folder name, an IMAP mailbox).
    pub folder: String,
    /// Its Message-ID header (without brackets), when it has one.
    pub message_id: Option<String>,
}

/// Whether email `id` is still where its card saw it: the local store still holds it in the
/// pinned account and folder with the pinned Message-ID, and the mailbox still has that message
/// in that folder with that Message-ID. Anything it cannot confirm (an unreadable
/// precondition, the store or mailbox failing) is stale: fail closed.
pub async fn check_precondition(plugin: &EmailPlugin, id: &str, precondition: &Value) -> bool {
    let Ok(pinned) = serde_json::from_value::<Precondition>(precondition.clone()) else {
        return false;
    };
    let Ok(Some(row)) = plugin.store().get(id).await else {
        return false;
    };
    if row.account != pinned.account
        || row.folder != pinned.folder
        || row.message_id != pinned.message_id
    {
        return false;
    }
    let Some(backend) = plugin.backend(&row.account) else {
        return false;
    };
    let reference = MessageRef {
        folder: pinned.folder.clone(),
        key: row.provider_key.clone(),
        location: row.location.clone(),
    };
    match backend.read(&reference).await {
        Ok(Some(raw)) => crate::parse::parse_message(&raw).message_id == pinned.message_id,
        _ => false,
    }
}

/// Moves every named email to Trash except the `stale` ones (see [`check_precondition`]); the
/// outcomes name only the emails acted on.
///
/// # Errors
/// As [`execute`]; [`ToolError::Failed`] when every id is stale (nothing to do: the core never
/// asks for that).
pub async fn execute_skipping(
    plugin: &EmailPlugin,
    args: &Value,
    stale: &[String],
    conversation: &str,
    held: Option<LockGuard>,
) -> Result<ToolOutput, ToolError> {
    let kept: Vec<String> = ids_of(args)?
        .into_iter()
        .filter(|id| !stale.contains(id))
        .collect();
    if kept.is_empty() {
        return Err(failed(NAME, "every email is stale; nothing was done"));
    }
    execute(plugin, &json!({ "ids": kept }), conversation, held).await
}

/// The result's `summary`: "Moved 3 emails to Trash.", and how many were not moved.
fn trash_summary(trashed: usize, not_moved: usize) -> String {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let moved = format!("Moved {trashed} email{} to Trash", plural(trashed));
    match not_moved {
        0 => format!("{moved}."),
        1 => format!("{moved}; 1 email was not moved."),
        n => format!("{moved}; {n} emails were not moved."),
    }
}

fn item(id: &str, outcome: Value) -> ItemOutcome {
    ItemOutcome {
        item: id.to_string(),
        outcome,
    }
}

/// The approved call as a step of a card's "How this came about" (a later card of the same
/// turn): "Moved 3 emails to Trash" (docs/adr/0123-how-a-card-came-about.md).
pub fn step(result: &Value) -> String {
    let n = result["trashed"].as_u64().unwrap_or(0);
    format!(
        "{} to Trash",
        super::count_phrase("Moved", usize::try_from(n).unwrap_or(0))
    )
}

/// Moves the emails to Trash (see the module docs). The batch is `conversation`'s newest action
/// (what "undo that" there restores; none when `conversation` is empty). Runs under `held`
/// (the mailbox lock the core took with `Plugin::hold`), or takes the lock itself.
///
/// # Errors
/// [`ToolError::InvalidArgs`] as [`normalise`]; [`ToolError::Failed`] when the store fails, or
/// when no email could be moved and at least one failed (a batch of only missing emails is not a
/// failure: nothing of the owner's is left to trash).
pub async fn execute(
    plugin: &EmailPlugin,
    args: &Value,
    conversation: &str,
    held: Option<LockGuard>,
) -> Result<ToolOutput, ToolError> {
    let ids = ids_of(args)?;
    let _guard = plugin
        .held_or_lock(held)
        .await
        .map_err(|e| failed(NAME, e))?;
    let store = plugin.store();
    let store_err = |e: sqlx::Error| failed(NAME, format!("local store: {e}"));

    // Look every id up first: what the store does not hold is reported missing, not guessed.
    let mut found: Vec<MessageRow> = Vec::new();
    let mut outcomes: Vec<(String, Value)> = Vec::new();
    for id in &ids {
        match store.get(id).await.map_err(store_err)? {
            Some(row) => found.push(row),
            None => outcomes.push((
                id.clone(),
                json!({"status": "missing", "reason": "not in the local store (already trashed, or gone from the mailbox)"}),
            )),
        }
    }

    let batch = format!("b{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let now = plugin.now();
    let seqs = store
        .ledger_begin(&batch, &found, now, conversation)
        .await
        .map_err(store_err)?;

    // One backend call per account, keeping each account's items in call order.
    let mut done = Vec::with_capacity(found.len());
    let mut accounts: Vec<&str> = Vec::new();
    for r in &found {
        if !accounts.contains(&r.account.as_str()) {
            accounts.push(&r.account);
        }
    }
    for account in accounts {
        let group: Vec<(usize, &MessageRow)> = found
            .iter()
            .enumerate()
            .filter(|(_, r)| r.account == account)
            .collect();
        let refs: Vec<MessageRef> = group
            .iter()
            .map(|(_, r)| MessageRef {
                folder: r.folder.clone(),
                key: r.provider_key.clone(),
                location: r.location.clone(),
            })
            .collect();
        let results = match plugin.backend(account) {
            None => Err(format!("account `{account}` is not configured")),
            Some(b) => b.trash(&refs).await.map_err(|e| e.to_string()),
        };
        for (pos, (i, row)) in group.iter().enumerate() {
            let outcome = match &results {
                Ok(r) => r.get(pos).cloned().unwrap_or(TrashOutcome::Failed {
                    reason: "the backend gave no outcome for this message".into(),
                }),
                Err(reason) => TrashOutcome::Failed {
                    reason: reason.clone(),
                },
            };
            done.push((*i, (*row).clone(), outcome));
        }
    }
    done.sort_by_key(|(i, _, _)| *i);

    let ledger: Vec<(i64, String, TrashDone)> = done
        .iter()
        .map(|(i, row, o)| {
            let d = match o {
                TrashOutcome::Moved {
                    original_location,
                    trash_location,
                } => TrashDone::Trashed {
                    original_location: original_location.clone(),
                    trash_location: trash_location.clone(),
                },
                TrashOutcome::Missing => TrashDone::Missing,
                TrashOutcome::Failed { .. } => TrashDone::Failed,
            };
            (seqs[*i], row.id.clone(), d)
        })
        .collect();
    store.ledger_trash_done(&ledger).await.map_err(store_err)?;

    for (_, row, o) in &done {
        let v = match o {
            TrashOutcome::Moved { .. } => {
                json!({"status": "trashed", "folder": row.folder, "subject": row.subject})
            }
            TrashOutcome::Missing => {
                json!({"status": "missing", "reason": "the message is no longer in its folder; nothing was moved", "subject": row.subject})
            }
            TrashOutcome::Failed { reason } => {
                json!({"status": "failed", "reason": reason, "subject": row.subject})
            }
        };
        outcomes.push((row.id.clone(), v));
    }
    // Report in the call's order.
    outcomes.sort_by_key(|(id, _)| ids.iter().position(|i| i == id));

    let trashed = count(&outcomes, "trashed");
    let failed_n = count(&outcomes, "failed");
    if trashed == 0 && failed_n > 0 {
        let reasons: Vec<String> = outcomes
            .iter()
            .filter(|(_, v)| v["status"] == "failed")
            .map(|(id, v)| format!("{id}: {}", v["reason"].as_str().unwrap_or("failed")))
            .collect();
        return Err(failed(
            NAME,
            format!("no email was moved to Trash ({})", reasons.join("; ")),
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
    Ok(ToolOutput {
        result: json!({
            "summary": trash_summary(trashed, outcomes.len() - trashed),
            "trashed": trashed,
            "batch": batch,
            "undo": super::restore_email::NAME,
            "items": items_json,
        }),
        items: outcomes.into_iter().map(|(id, v)| item(&id, v)).collect(),
    })
}

/// The undo of an executed call (DESIGN §9 "Undo from the card"): `restore_email` for exactly
/// the ids whose outcome was `trashed` (not a missing, failed or stale one), in the call's
/// order; `None` when none was.
pub fn undo_call(outcomes: &[ItemOutcome]) -> Option<UndoCall> {
    let items: Vec<String> = outcomes
        .iter()
        .filter(|o| o.outcome["status"] == "trashed")
        .map(|o| o.item.clone())
        .collect();
    (!items.is_empty()).then(|| UndoCall {
        args: json!({ "ids": items }),
        action: Some(count_phrase("Restore", items.len())),
        items,
    })
}

fn count(outcomes: &[(String, Value)], status: &str) -> usize {
    outcomes
        .iter()
        .filter(|(_, v)| v["status"] == status)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalise_dedupes_and_refuses_empty() {
        let n = normalise(&json!({"ids": [" mAB ", "mcd", "mab"]})).unwrap();
        assert_eq!(n, json!({"ids": ["mab", "mcd"]}));
        assert_eq!(normalise(&n).unwrap(), n);
        assert!(normalise(&json!({"ids": []})).is_err());
        assert!(normalise(&json!({})).is_err());
        assert!(normalise(&json!({"ids": ["ma"], "force": true})).is_err());
    }

    #[test]
    fn the_undo_restores_only_what_was_trashed() {
        let outcome = |id: &str, status: &str| ItemOutcome {
            item: id.into(),
            outcome: json!({"status": status}),
        };
        let call = undo_call(&[
            outcome("m1", "trashed"),
            outcome("m2", "missing"),
            outcome("m3", "stale"),
            outcome("m4", "trashed"),
            outcome("m5", "failed"),
        ])
        .unwrap();
        assert_eq!(call.args, json!({"ids": ["m1", "m4"]}));
        assert_eq!(call.items, vec!["m1", "m4"]);
        assert_eq!(call.action.as_deref(), Some("Restore 2 emails"));
        assert_eq!(undo_call(&[outcome("m2", "missing")]), None);
    }
}
