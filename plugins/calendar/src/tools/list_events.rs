//! `list_events {from, to, query?, calendar?}` (effect read): every event of every account that
//! meets the window, soonest first, up to [`super::MAX_IDS`], as
//! `{"events": [{"id", "summary", "start", "end", "all_day", "calendar", "recurring"}], "total": N}`.
//! A repeating series is one entry whose `start` is its first occurrence in the window; an event
//! IRIS cannot read is listed as "(unreadable event)" so it can still be deleted.

use chrono::{DateTime, NaiveDate, Utc};
use iris_core::plugin::{Description, ToolError, ToolOutput};
use serde_json::{json, Value};

use super::{invalid, object, MAX_IDS};
use crate::event::When;
use crate::CalendarPlugin;

/// The tool's name.
pub const NAME: &str = "list_events";

/// An RFC 3339 date-time, or a bare date (`YYYY-MM-DD`) read as UTC midnight.
fn parse_bound(field: &str, v: Option<&Value>) -> Result<DateTime<Utc>, ToolError> {
    let Some(Value::String(text)) = v else {
        return Err(invalid(
            NAME,
            format!("`{field}` is required: an RFC 3339 date or date-time"),
        ));
    };
    let text = text.trim();
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Ok(at.with_timezone(&Utc));
    }
    if let Ok(day) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(day.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc());
    }
    Err(invalid(
        NAME,
        format!("`{field}` = {text:?} is neither an RFC 3339 date-time nor a date (YYYY-MM-DD)"),
    ))
}

fn optional_text(field: &str, v: Option<&Value>) -> Result<Option<String>, ToolError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(_) => Err(invalid(NAME, format!("`{field}` must be a string"))),
    }
}

/// Normal form: `from` and `to` as RFC 3339 UTC (`to` after `from`), `query` and `calendar`
/// trimmed, left out when empty.
///
/// # Errors
/// [`ToolError::InvalidArgs`] naming the argument and the rule.
pub fn normalise(args: &Value) -> Result<Value, ToolError> {
    let obj = object(NAME, args, &["from", "to", "query", "calendar"])?;
    let from = parse_bound("from", obj.get("from"))?;
    let to = parse_bound("to", obj.get("to"))?;
    if to <= from {
        return Err(invalid(NAME, "`to` must be after `from`"));
    }
    let mut out = json!({
        "from": from.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "to": to.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    });
    if let Some(q) = optional_text("query", obj.get("query"))? {
        out["query"] = json!(q);
    }
    if let Some(c) = optional_text("calendar", obj.get("calendar"))? {
        out["calendar"] = json!(c);
    }
    Ok(out)
}

/// A read has no card; this names the window for the trail.
///
/// # Errors
/// As [`normalise`].
pub fn describe(args: &Value) -> Result<Description, ToolError> {
    let n = normalise(args)?;
    let title = format!(
        "List events from {} to {}",
        n["from"].as_str().unwrap_or_default(),
        n["to"].as_str().unwrap_or_default()
    );
    Ok(Description {
        action: title.clone(),
        title,
        ..Description::default()
    })
}

/// The listing as a step of a card's "How this came about": "Listed the events from
/// 2026-12-07 to 2026-12-14 matching 'dentist': 3 events"
/// (docs/adr/0123-how-a-card-came-about.md).
pub fn step(args: &Value, result: &Value) -> String {
    let mut what = format!(
        "Listed the events from {} to {}",
        args["from"].as_str().unwrap_or("?"),
        args["to"].as_str().unwrap_or("?")
    );
    if let Some(q) = args["query"].as_str() {
        what.push_str(&format!(" matching '{q}'"));
    }
    if let Some(c) = args["calendar"].as_str() {
        what.push_str(&format!(" in {c}"));
    }
    let n = result["total"].as_u64().unwrap_or(0);
    format!("{what}: {n} event{}", if n == 1 { "" } else { "s" })
}

/// Lists: see the module docs.
///
/// # Errors
/// [`ToolError::InvalidArgs`] for bad arguments or a `calendar` no account has;
/// [`ToolError::Failed`] when a calendar cannot be read.
pub async fn execute(plugin: &CalendarPlugin, args: &Value) -> Result<ToolOutput, ToolError> {
    let n = normalise(args)?;
    let from = parse_bound("from", n.get("from"))?;
    let to = parse_bound("to", n.get("to"))?;
    let query = n["query"].as_str().map(str::to_lowercase);
    let only = n["calendar"].as_str();
    let all = plugin.all_events(NAME, Some((from, to))).await?;
    if let Some(name) = only {
        if !all
            .iter()
            .any(|e| e.calendar.name.eq_ignore_ascii_case(name))
        {
            let mut names: Vec<&str> = all.iter().map(|e| e.calendar.name.as_str()).collect();
            names.sort_unstable();
            names.dedup();
            return Err(invalid(
                NAME,
                format!(
                    "no calendar is named {name:?} (calendars: {})",
                    names.join(", ")
                ),
            ));
        }
    }
    let mut found: Vec<(DateTime<Utc>, Value)> = all
        .iter()
        .filter(|e| only.is_none_or(|name| e.calendar.name.eq_ignore_ascii_case(name)))
        .filter(|e| e.facts.meets(from, to))
        .filter(|e| query.as_deref().is_none_or(|q| e.facts.matches(q)))
        .map(|e| {
            let start = e.facts.first_in_window.as_ref().or(e.facts.start.as_ref());
            let end = e.facts.end.as_ref();
            let at = start.map_or(from, When::instant);
            (
                at,
                json!({
                    "id": e.id,
                    "summary": if e.facts.summary.is_empty() { "(no title)" } else { e.facts.summary.as_str() },
                    "start": start.map(When::to_wire),
                    "end": end.map(When::to_wire),
                    "all_day": matches!(start, Some(When::Date(_))),
                    "calendar": e.calendar.name,
                    "recurring": e.facts.repeats.is_some(),
                }),
            )
        })
        .collect();
    found.sort_by_key(|a| a.0);
    let total = found.len();
    let events: Vec<Value> = found.into_iter().take(MAX_IDS).map(|(_, v)| v).collect();
    Ok(ToolOutput::plain(
        json!({ "events": events, "total": total }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_date_is_utc_midnight_and_the_window_must_be_forward() {
        let n = normalise(
            &json!({"from": "2026-12-07", "to": "2026-12-14T00:00:00+01:00", "query": "  "}),
        )
        .unwrap();
        assert_eq!(
            n,
            json!({"from": "2026-12-07T00:00:00Z", "to": "2026-12-13T23:00:00Z"})
        );
        assert_eq!(normalise(&n).unwrap(), n, "idempotent");
        assert!(normalise(&json!({"from": "2026-12-14", "to": "2026-12-07"})).is_err());
        assert!(normalise(&json!({"from": "next week", "to": "2026-12-07"})).is_err());
        assert!(normalise(&json!({"from": "2026-12-07"})).is_err());
        assert!(normalise(&json!({"from": "2026-12-07", "to": "2026-12-08", "x": 1})).is_err());
    }
}
