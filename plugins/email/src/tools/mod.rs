//! The plugin's tools, one module each, with the same verbs (DESIGN §6, `iris_core::plugin`):
//! `normalise` (the one argument form that gets pinned; idempotent), `describe` (card lines and
//! items) and `execute` (the effect).
//!
//! Shared here: argument checks that name the tool and the rule, the id list rule, and the card
//! line format.

use chrono::{DateTime, Utc};
use iris_core::plugin::ToolError;
use serde_json::Value;

use crate::store::MessageRow;

pub mod list_by_category;
pub mod restore_email;
pub mod search_inbox;
pub mod send_email;
pub mod trash_category;
pub mod trash_email;

/// Most ids one call may name (the manifest's `maxItems`; DESIGN §5 "newest 200").
pub const MAX_IDS: usize = 200;

// The argument rules every plugin shares (iris_core::plugin), under this crate's short names.
pub(crate) use iris_core::plugin::{
    args_object as object, invalid_args as invalid, tool_failed as failed,
};

/// The id list rule: an array of 1 to [`MAX_IDS`] strings; each trimmed and lower-cased (ids
/// are lower-case by construction); empty ones refused; duplicates dropped keeping the first.
pub(crate) fn parse_ids(tool: &str, v: &Value) -> Result<Vec<String>, ToolError> {
    let Value::Array(items) = v else {
        return Err(invalid(
            tool,
            "`ids` must be an array of email ids (strings)",
        ));
    };
    let mut ids: Vec<String> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Value::String(s) = item else {
            return Err(invalid(tool, format!("`ids[{i}]` is not a string")));
        };
        let id = s.trim().to_lowercase();
        if id.is_empty() {
            return Err(invalid(tool, format!("`ids[{i}]` is empty")));
        }
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    if ids.is_empty() {
        return Err(invalid(
            tool,
            "`ids` is empty: name at least one email id (search_inbox shows them)",
        ));
    }
    if ids.len() > MAX_IDS {
        return Err(invalid(
            tool,
            format!(
                "`ids` names {} emails; at most {MAX_IDS} per call",
                ids.len()
            ),
        ));
    }
    Ok(ids)
}

/// "Trash 1 email", "Trash 3 emails".
pub(crate) fn count_phrase(verb: &str, n: usize) -> String {
    format!("{verb} {n} email{}", if n == 1 { "" } else { "s" })
}

/// A date as the card shows it: "28 Nov 2026" (UTC).
pub(crate) fn card_date(d: Option<DateTime<Utc>>) -> String {
    d.map_or_else(
        || "no date".to_string(),
        |d| d.format("%-d %b %Y").to_string(),
    )
}

/// The sender's name, else the address, else "unknown sender".
pub(crate) fn sender_name(name: Option<&str>, address: Option<&str>) -> String {
    name.or(address).unwrap_or("unknown sender").to_string()
}

/// The subject, or "(no subject)".
pub(crate) fn subject_or_placeholder(s: &str) -> &str {
    if s.trim().is_empty() {
        "(no subject)"
    } else {
        s
    }
}

/// A card line: "Subject — Sender Name, 28 Nov 2026".
pub(crate) fn card_line(
    subject: &str,
    from_name: Option<&str>,
    from_address: Option<&str>,
    date: Option<DateTime<Utc>>,
) -> String {
    format!(
        "{} — {}, {}",
        subject_or_placeholder(subject),
        sender_name(from_name, from_address),
        card_date(date)
    )
}

/// The card line of a stored message.
pub(crate) fn row_line(r: &MessageRow) -> String {
    card_line(
        &r.subject,
        r.from_name.as_deref(),
        r.from_address.as_deref(),
        r.date(),
    )
}

/// "12 emails", or "20 of 45 emails" when a list shows only some of what matched: a step of a
/// card's "How this came about" (docs/adr/0123-how-a-card-came-about.md).
pub(crate) fn listed_phrase(result: &Value) -> String {
    let count = result.get("count").and_then(Value::as_u64).unwrap_or(0);
    let total = result.get("total").and_then(Value::as_u64).unwrap_or(count);
    let noun = if total == 1 { "email" } else { "emails" };
    if total > count {
        format!("{count} of {total} {noun}")
    } else {
        format!("{total} {noun}")
    }
}

/// What a card's flag calls one email of a result ("the email 'Payment overdue'"), or `None`
/// for a record that is not an email (no `subject`).
pub(crate) fn source_name(record: &Value) -> Option<String> {
    let subject = record.get("subject")?.as_str()?;
    let subject: String = subject_or_placeholder(subject).chars().take(80).collect();
    Some(format!("the email '{subject}'"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_rule() {
        let ids = parse_ids("t", &json!([" mA ", "mb", "ma", "mc"])).unwrap();
        assert_eq!(ids, vec!["ma", "mb", "mc"]);
        assert!(parse_ids("t", &json!([])).is_err());
        assert!(parse_ids("t", &json!(["  "])).is_err());
        assert!(parse_ids("t", &json!([1])).is_err());
        assert!(parse_ids("t", &json!("ma")).is_err());
    }

    #[test]
    fn phrases() {
        assert_eq!(count_phrase("Trash", 1), "Trash 1 email");
        assert_eq!(count_phrase("Trash", 3), "Trash 3 emails");
        let d = DateTime::from_timestamp(1_795_860_000, 0);
        assert_eq!(
            card_line("Hi", Some("Anna"), Some("a@x"), d),
            format!("Hi — Anna, {}", card_date(d))
        );
        assert_eq!(
            card_line(" ", None, None, None),
            "(no subject) — unknown sender, no date"
        );
    }
}
