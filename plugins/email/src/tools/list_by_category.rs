//! `list_by_category(category, since_days, limit?)` (effect read): a category's mail in a time
//! window, newest first (DESIGN §5). The word is resolved as `trash_category` resolves it
//! (`crate::selection`), so the model can show the owner exactly what a clean-up would take.
//!
//! Result: `{"category", "categories": [resolved kinds or paths], "since_days", "results":
//! [{id, subject, from, date, category, category_path, folder, account, thread, snippet}],
//! "count": listed, "total": matching}`. A word matching no category, or covering every
//! category, is an error observation naming the word and the categories that exist.

use iris_core::plugin::{Description, ToolError, ToolOutput};
use serde_json::{json, Value};

use super::search_inbox::result_json;
use super::{failed, invalid, object};
use crate::selection::{category_args, select};
use crate::EmailPlugin;

/// The tool's name.
pub const NAME: &str = "list_by_category";

/// Results listed when `limit` is not given.
pub const DEFAULT_LIMIT: u64 = 50;

/// Most results one call lists (the manifest's `maximum`).
pub const MAX_LIMIT: u64 = 200;

/// Normal form `{"category": canonical word, "since_days": n, "limit": n}` (`limit` defaults to
/// [`DEFAULT_LIMIT`]).
///
/// # Errors
/// [`ToolError::InvalidArgs`] for a missing, empty, too long or all-covering `category`, a
/// `since_days` outside 1..=3650, a `limit` outside 1..=200, or any other argument.
pub fn normalise(args: &Value) -> Result<Value, ToolError> {
    let obj = object(NAME, args, &["category", "since_days", "limit"])?;
    let (category, days) = category_args(obj, "").map_err(|e| invalid(NAME, e))?;
    let limit = match obj.get("limit") {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(v) => v
            .as_u64()
            .or_else(|| {
                v.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                    .map(|f| f as u64)
            })
            .filter(|l| (1..=MAX_LIMIT).contains(l))
            .ok_or_else(|| {
                invalid(
                    NAME,
                    format!("`limit` must be a whole number from 1 to {MAX_LIMIT}"),
                )
            })?,
    };
    Ok(json!({"category": category, "since_days": days, "limit": limit}))
}

/// A read needs no card; this says what would be listed.
///
/// # Errors
/// [`ToolError::InvalidArgs`] as [`normalise`].
pub fn describe(args: &Value) -> Result<Description, ToolError> {
    let n = normalise(args)?;
    Ok(Description {
        title: "List mail by category".into(),
        action: "List".into(),
        lines: vec![format!(
            "{} mail from the last {} days",
            n["category"].as_str().unwrap_or_default(),
            n["since_days"]
        )],
        ..Description::default()
    })
}

/// The listing as a step of a card's "How this came about": "Listed promotions from the last
/// 7 days: 12 emails" (docs/adr/0123-how-a-card-came-about.md).
pub fn step(args: &Value, result: &Value) -> String {
    format!(
        "Listed {} from the last {} days: {}",
        args["category"].as_str().unwrap_or("a category"),
        args["since_days"],
        super::listed_phrase(result)
    )
}

/// Lists the category's mail (see the module docs).
///
/// # Errors
/// [`ToolError::InvalidArgs`] as [`normalise`], or for a word matching no category;
/// [`ToolError::Failed`] when the store fails.
pub async fn execute(plugin: &EmailPlugin, args: &Value) -> Result<ToolOutput, ToolError> {
    let n = normalise(args)?;
    let word = n["category"].as_str().unwrap_or_default();
    let days = n["since_days"].as_i64().unwrap_or(1);
    let limit = u32::try_from(n["limit"].as_u64().unwrap_or(DEFAULT_LIMIT)).unwrap_or(50);
    let picked = select(plugin, word, days, limit)
        .await
        .map_err(|e| match e {
            Ok(refused) => invalid(NAME, refused.to_string()),
            Err(db) => failed(NAME, format!("local store: {db}")),
        })?;
    let results: Vec<Value> = picked.rows.iter().map(result_json).collect();
    Ok(ToolOutput::plain(json!({
        "category": word,
        "categories": picked.selection.names(),
        "since_days": days,
        "results": results,
        "count": results.len(),
        "total": picked.total,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_form() {
        let n = normalise(&json!({"category": " My Promo Emails ", "since_days": 7.0})).unwrap();
        assert_eq!(
            n,
            json!({"category": "promo", "since_days": 7, "limit": 50})
        );
        assert_eq!(normalise(&n).unwrap(), n);
        assert!(normalise(&json!({"category": "promo"})).is_err());
        assert!(normalise(&json!({"category": "all", "since_days": 7})).is_err());
        assert!(normalise(&json!({"category": "promo", "since_days": 7, "limit": 0})).is_err());
        assert!(normalise(&json!({"category": 3, "since_days": 7})).is_err());
        assert!(normalise(&json!({"category": "promo", "since_days": 7, "x": 1})).is_err());
    }
}
