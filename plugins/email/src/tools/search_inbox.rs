//! `search_inbox` (effect read): searches the local store; every result carries its email id so
//! the model can name exact emails (DESIGN §5).
//!
//! Arguments: `query?` (words, all of which must occur, case-insensitively, in the subject,
//! sender name or address, or snippet), `category?` (a category word, resolved by
//! [`Category::from_word`]), `since_days?` (integer ≥ 1: dated within the last N×24 hours),
//! `limit?` (1–200, default 20). Result: `{"results": [...], "count": n, "total": m}`, newest
//! first; `count` is how many are listed, `total` how many match.

use iris_core::plugin::{Description, ToolError, ToolOutput};
use serde_json::{json, Map, Value};

use super::{invalid, object};
use crate::category::Category;
use crate::parse::collapse_ws;
use crate::store::{MessageRow, SearchQuery};
use crate::EmailPlugin;

/// The tool's name.
pub const NAME: &str = "search_inbox";

/// Default number of results.
pub const DEFAULT_LIMIT: u64 = 20;

/// Most results one call returns.
pub const MAX_LIMIT: u64 = 200;

/// Longest `since_days` window accepted (100 years).
const MAX_SINCE_DAYS: u64 = 36_500;

fn whole_number(v: &Value) -> Option<u64> {
    // JSON Schema's "integer" admits 7.0 as well as 7.
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= u32::MAX as f64)
            .map(|f| f as u64)
    })
}

/// Normal form: `query` white space collapsed (dropped when empty), `category` canonical,
/// `since_days` a whole number, `limit` always present.
///
/// # Errors
/// [`ToolError::InvalidArgs`] naming the argument and the rule.
pub fn normalise(args: &Value) -> Result<Value, ToolError> {
    let obj = object(NAME, args, &["query", "category", "since_days", "limit"])?;
    let mut out = Map::new();
    match obj.get("query") {
        None | Some(Value::Null) => {}
        Some(Value::String(q)) => {
            let q = collapse_ws(q);
            if !q.is_empty() {
                out.insert("query".into(), Value::String(q));
            }
        }
        Some(_) => return Err(invalid(NAME, "`query` must be a string of words")),
    }
    match obj.get("category") {
        None | Some(Value::Null) => {}
        Some(Value::String(c)) => {
            let Some(cat) = Category::from_word(c) else {
                let known: Vec<&str> = Category::ALL.iter().map(|c| c.as_str()).collect();
                return Err(invalid(
                    NAME,
                    format!("unknown category `{c}` (known: {})", known.join(", ")),
                ));
            };
            out.insert("category".into(), Value::String(cat.as_str().into()));
        }
        Some(_) => return Err(invalid(NAME, "`category` must be a string")),
    }
    match obj.get("since_days") {
        None | Some(Value::Null) => {}
        Some(v) => match whole_number(v) {
            Some(d) if (1..=MAX_SINCE_DAYS).contains(&d) => {
                out.insert("since_days".into(), json!(d));
            }
            _ => {
                return Err(invalid(
                    NAME,
                    format!("`since_days` must be a whole number from 1 to {MAX_SINCE_DAYS}"),
                ))
            }
        },
    }
    let limit = match obj.get("limit") {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(v) => match whole_number(v) {
            Some(l) if (1..=MAX_LIMIT).contains(&l) => l,
            _ => {
                return Err(invalid(
                    NAME,
                    format!("`limit` must be a whole number from 1 to {MAX_LIMIT}"),
                ))
            }
        },
    };
    out.insert("limit".into(), json!(limit));
    Ok(Value::Object(out))
}

/// A read needs no card; this says what would be searched.
///
/// # Errors
/// [`ToolError::InvalidArgs`] as [`normalise`].
pub fn describe(args: &Value) -> Result<Description, ToolError> {
    let args = normalise(args)?;
    Ok(Description {
        title: "Search mail".into(),
        action: "Search".into(),
        lines: vec![summary(&args)],
        items: Vec::new(),
        undo_note: None,
        undo_action: None,
        preconditions: Vec::new(),
        ..Description::default()
    })
}

fn summary(args: &Value) -> String {
    let parts = filters(args, |q| format!("matching \"{q}\""));
    if parts.is_empty() {
        "All mail".into()
    } else {
        format!("Mail {}", parts.join(", "))
    }
}

/// The search's filters in words: the query (worded by `query`), "in CATEGORY", "from the
/// last N days".
fn filters(args: &Value, query: impl Fn(&str) -> String) -> Vec<String> {
    let mut parts = Vec::new();
    if let Some(q) = args.get("query").and_then(Value::as_str) {
        parts.push(query(q));
    }
    if let Some(c) = args.get("category").and_then(Value::as_str) {
        parts.push(format!("in {c}"));
    }
    if let Some(d) = args.get("since_days").and_then(Value::as_u64) {
        parts.push(format!(
            "from the last {d} day{}",
            if d == 1 { "" } else { "s" }
        ));
    }
    parts
}

/// The search as a step of a card's "How this came about": "Searched the inbox for
/// 'invoice': 12 emails" (docs/adr/0123-how-a-card-came-about.md).
pub fn step(args: &Value, result: &Value) -> String {
    let parts = filters(args, |q| format!("for '{q}'"));
    let what = if parts.is_empty() {
        String::new()
    } else {
        format!(" {}", parts.join(", "))
    };
    format!("Searched the inbox{what}: {}", super::listed_phrase(result))
}

/// One result as the model sees it.
pub(crate) fn result_json(r: &MessageRow) -> Value {
    json!({
        "id": r.id,
        "subject": r.subject,
        "from": r.sender_display(),
        "date": r.date().map(|d| d.to_rfc3339()),
        "category": r.category,
        "category_path": r.category_path,
        "folder": r.folder,
        "account": r.account,
        "thread": r.thread_id,
        "snippet": r.snippet,
    })
}

/// Runs the search against the local store.
///
/// # Errors
/// [`ToolError::InvalidArgs`] as [`normalise`]; [`ToolError::Failed`] when the store fails.
pub async fn execute(plugin: &EmailPlugin, args: &Value) -> Result<ToolOutput, ToolError> {
    let args = normalise(args)?;
    let now = plugin.now();
    let q = SearchQuery {
        words: args
            .get("query")
            .and_then(Value::as_str)
            .map(|q| q.split_whitespace().map(str::to_lowercase).collect())
            .unwrap_or_default(),
        category: args
            .get("category")
            .and_then(Value::as_str)
            .and_then(Category::from_word),
        since_unix: args
            .get("since_days")
            .and_then(Value::as_i64)
            .map(|d| now.timestamp() - d * 86_400),
        limit: args
            .get("limit")
            .and_then(Value::as_u64)
            .and_then(|l| u32::try_from(l).ok())
            .unwrap_or(20),
    };
    let (rows, total) = plugin
        .store()
        .search(&q)
        .await
        .map_err(|e| super::failed(NAME, format!("local store: {e}")))?;
    let results: Vec<Value> = rows.iter().map(result_json).collect();
    Ok(ToolOutput::plain(json!({
        "results": results,
        "count": results.len(),
        "total": total,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_form_is_idempotent() {
        let n = normalise(
            &json!({"query": "  winter   jackets ", "category": "Promo", "since_days": 7.0}),
        )
        .unwrap();
        assert_eq!(
            n,
            json!({"query": "winter jackets", "category": "promotions", "since_days": 7, "limit": 20})
        );
        assert_eq!(normalise(&n).unwrap(), n);
    }

    #[test]
    fn refusals_name_the_argument() {
        for bad in [
            json!({"since_days": 0}),
            json!({"limit": 201}),
            json!({"category": "email"}),
            json!({"colour": "red"}),
            json!([]),
        ] {
            let e = normalise(&bad).unwrap_err();
            assert!(matches!(e, ToolError::InvalidArgs { .. }), "{bad}");
        }
    }
}
