//! `trash_category(category, since_days)` (effect write, `confirm: never`): moves a category's
//! mail of a time window to Trash (DESIGN §5). Code, not the model, picks the items
//! (`crate::selection`): the newest 200 matches in the window, across every account; where an
//! account's provider has a bucket label for the category, only mail carrying that label.
//!
//! The move is `trash_email`'s own execution (the same trashed ledger and batch), so it is never
//! a permanent delete and `restore_email()` with no ids brings the whole batch back.
//!
//! Guards, each refused before anything moves: a word matching no category; a word covering
//! every category ("email", "all"); 0 matches is a success that says "nothing to trash".
//!
//! Result: `{"summary": the reply in plain words, "trashed", "batch", "category", "categories", "since_days", "sample": [up to 5
//! subjects], "remaining": matches in the window left in place, "undo": "restore_email",
//! "undo_note", "items": [...]}`, or with 0 matches `{"trashed": 0, "batch": null, ...,
//! "message": "Nothing to trash: ..."}`.

use iris_core::plugin::{Description, ToolError, ToolOutput};
use iris_store::LockGuard;
use serde_json::{json, Value};

use super::{failed, invalid, object, trash_email};
use crate::selection::{category_args, select};
use crate::EmailPlugin;

/// The tool's name.
pub const NAME: &str = "trash_category";

/// Most messages one call moves (DESIGN §5 "newest 200").
pub const MAX_ITEMS: u32 = 200;

/// Subjects quoted in the reply.
pub const SAMPLE: usize = 5;

/// Normal form `{"category": canonical word, "since_days": n}`.
///
/// # Errors
/// [`ToolError::InvalidArgs`] for a missing, empty, too long or all-covering `category`
/// ("email", "all"), a `since_days` outside 1..=3650, or any other argument.
pub fn normalise(args: &Value) -> Result<Value, ToolError> {
    let obj = object(NAME, args, &["category", "since_days"])?;
    let (category, days) =
        category_args(obj, "; nothing was moved to Trash").map_err(|e| invalid(NAME, e))?;
    Ok(json!({"category": category, "since_days": days}))
}

/// What the call would do, in words (a `confirm: never` write shows no card; the description
/// serves logs and the Plugins page).
///
/// # Errors
/// [`ToolError::InvalidArgs`] as [`normalise`].
pub fn describe(args: &Value) -> Result<Description, ToolError> {
    let n = normalise(args)?;
    let title = format!(
        "Trash {} mail from the last {} days",
        n["category"].as_str().unwrap_or_default(),
        n["since_days"]
    );
    Ok(Description {
        action: "Trash".into(),
        lines: vec![title.clone()],
        title,
        undo_note: Some(format!(
            "You can restore the whole batch from Trash for {} days.",
            trash_email::UNDO_WINDOW_DAYS
        )),
        ..Description::default()
    })
}

/// The clean-up as a step of a card's "How this came about": "Moved 12 emails of promotions
/// to Trash" (docs/adr/0123-how-a-card-came-about.md).
pub fn step(args: &Value, result: &Value) -> String {
    let n = result["trashed"].as_u64().unwrap_or(0);
    format!(
        "{} of {} to Trash",
        super::count_phrase("Moved", usize::try_from(n).unwrap_or(0)),
        args["category"].as_str().unwrap_or("a category")
    )
}

/// Picks and trashes (see the module docs).
///
/// # Errors
/// [`ToolError::InvalidArgs`] for the guards (nothing moved); [`ToolError::Failed`] when the
/// store fails, or as `trash_email` fails when no picked message could be moved.
pub async fn execute(
    plugin: &EmailPlugin,
    args: &Value,
    conversation: &str,
    held: Option<LockGuard>,
) -> Result<ToolOutput, ToolError> {
    let n = normalise(args)?;
    let word = n["category"].as_str().unwrap_or_default().to_string();
    let days = n["since_days"].as_i64().unwrap_or(1);
    let picked = select(plugin, &word, days, MAX_ITEMS)
        .await
        .map_err(|e| match e {
            Ok(refused) => invalid(NAME, format!("{refused}; nothing was moved to Trash")),
            Err(db) => failed(NAME, format!("local store: {db}")),
        })?;
    let names = picked.selection.names();
    let what = format!("{} mail from the last {days} days", names.join(" or "));
    if picked.rows.is_empty() {
        let message = format!("Nothing to trash: no {what}.");
        return Ok(ToolOutput::plain(json!({
            "summary": message,
            "trashed": 0,
            "batch": null,
            "category": word,
            "categories": names,
            "since_days": days,
            "sample": [],
            "remaining": 0,
            "message": message,
        })));
    }
    let ids: Vec<&str> = picked.rows.iter().map(|r| r.id.as_str()).collect();
    let moved = trash_email::execute(plugin, &json!({ "ids": ids }), conversation, held)
        .await
        .map_err(|e| match e {
            ToolError::Failed { reason, .. } => failed(NAME, reason),
            other => other,
        })?;
    let trashed = moved.result["trashed"].as_i64().unwrap_or(0);
    let sample: Vec<Value> = moved.result["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter(|i| i["status"] == "trashed")
                .take(SAMPLE)
                .map(|i| i["subject"].clone())
                .collect()
        })
        .unwrap_or_default();
    let remaining = (picked.total - trashed).max(0);
    let quoted: Vec<String> = sample
        .iter()
        .filter_map(Value::as_str)
        .map(|s| format!("“{s}”"))
        .collect();
    let summary = format!(
        "Moved {trashed} email{} ({what}) to Trash{}. {}Say “undo that” to restore {} (for {} days).",
        if trashed == 1 { "" } else { "s" },
        match (quoted.is_empty(), usize::try_from(trashed).unwrap_or(0) > quoted.len()) {
            (true, _) => String::new(),
            (false, true) => format!(", such as {}", quoted.join(", ")),
            (false, false) => format!(": {}", quoted.join(", ")),
        },
        if remaining == 0 {
            String::new()
        } else {
            format!("{remaining} more match and were left in place. ")
        },
        if trashed == 1 { "it" } else { "them" },
        trash_email::UNDO_WINDOW_DAYS
    );
    Ok(ToolOutput {
        result: json!({
            "summary": summary,
            "trashed": trashed,
            "batch": moved.result["batch"],
            "category": word,
            "categories": names,
            "since_days": days,
            "sample": sample,
            "remaining": remaining,
            "undo": super::restore_email::NAME,
            "undo_note": format!(
                "restore_email with no ids brings this whole batch back from Trash (for {} days).",
                trash_email::UNDO_WINDOW_DAYS
            ),
            "items": moved.result["items"],
        }),
        items: moved.items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_form_and_guards() {
        let n = normalise(&json!({"category": "Promo", "since_days": 7})).unwrap();
        assert_eq!(n, json!({"category": "promo", "since_days": 7}));
        assert_eq!(normalise(&n).unwrap(), n);
        for all in ["email", "all", "everything", "my emails"] {
            let e = normalise(&json!({"category": all, "since_days": 7})).unwrap_err();
            assert!(e.to_string().contains("covers every category"), "{e}");
        }
        assert!(normalise(&json!({"category": "promo"})).is_err());
        assert!(normalise(&json!({"category": "", "since_days": 7})).is_err());
        assert!(normalise(&json!({"category": "promo", "since_days": 7, "ids": []})).is_err());
        assert!(normalise(&json!(["promo", 7])).is_err());
    }
}
