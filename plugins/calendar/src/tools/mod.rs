//! The plugin's tools, one module each, with the same verbs (docs/DESIGN.md §6,
//! `iris_core::plugin`): `normalise` (the one argument form that gets pinned; idempotent),
//! `describe` (card lines and items) and `execute` (the effect).
//!
//! Shared here: argument checks that name the tool and the rule, the id list rule, and the card
//! line of an event.

use iris_core::plugin::ToolError;
use serde_json::Value;

use crate::event::{EventFacts, When};
use crate::id::is_event_id;

pub mod delete_events;
pub mod list_events;
pub mod restore_events;

/// Most ids one call may name, and most events one list returns (the manifest's `maxItems`).
pub const MAX_IDS: usize = 500;

// The argument rules every plugin shares (iris_core::plugin), under this crate's short names.
pub(crate) use iris_core::plugin::{
    args_object as object, invalid_args as invalid, tool_failed as failed,
};

/// The id list rule: an array of 1 to [`MAX_IDS`] event ids (`ev` + 16 hex digits), each
/// trimmed and lower-cased; duplicates dropped keeping the first.
pub(crate) fn parse_ids(tool: &str, v: &Value) -> Result<Vec<String>, ToolError> {
    let Value::Array(items) = v else {
        return Err(invalid(
            tool,
            "`ids` must be an array of event ids (strings)",
        ));
    };
    let mut ids: Vec<String> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Value::String(s) = item else {
            return Err(invalid(tool, format!("`ids[{i}]` is not a string")));
        };
        let id = s.trim().to_lowercase();
        if !is_event_id(&id) {
            return Err(invalid(
                tool,
                format!(
                    "`ids[{i}]` is not an event id (\"ev\" and 16 hex digits, from list_events)"
                ),
            ));
        }
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    if ids.is_empty() {
        return Err(invalid(tool, "`ids` is empty: name at least one event"));
    }
    if ids.len() > MAX_IDS {
        return Err(invalid(
            tool,
            format!("{} ids: one call names at most {MAX_IDS}", ids.len()),
        ));
    }
    Ok(ids)
}

/// "Delete 1 event", "Delete 3 events".
pub(crate) fn count_phrase(verb: &str, n: usize) -> String {
    format!("{verb} {n} event{}", if n == 1 { "" } else { "s" })
}

/// The summary as card text: escaped and bounded (`iris_core::mcp::escaped`), or "(no title)".
pub(crate) fn summary_text(facts: &EventFacts) -> String {
    if facts.summary.trim().is_empty() {
        "(no title)".into()
    } else {
        iris_core::mcp::escaped(facts.summary.trim())
    }
}

/// When, as the card says it: "Tue 8 Dec 2026, 10:00–11:00 (Europe/Berlin)", "Tue 8 Dec 2026
/// (all day)", "Tue 8 Dec 2026 (all day) to Thu 10 Dec 2026" for several days.
pub(crate) fn when_text(facts: &EventFacts) -> String {
    match (&facts.start, &facts.end) {
        (Some(When::Date(s)), end) => {
            let last = match end {
                Some(When::Date(e)) => e.pred_opt().filter(|l| l > s),
                _ => None,
            };
            match last {
                Some(l) => format!(
                    "{} to {} (all day)",
                    s.format("%a %-d %b %Y"),
                    l.format("%a %-d %b %Y")
                ),
                None => format!("{} (all day)", s.format("%a %-d %b %Y")),
            }
        }
        (Some(When::Time { local, zone, .. }), end) => {
            let zone = match zone {
                Some(z) => iris_core::mcp::escaped(z),
                None => "floating time, no zone".into(),
            };
            let end = match end {
                Some(When::Time { local: e, .. }) if e.date() == local.date() => {
                    format!("–{}", e.format("%H:%M"))
                }
                Some(When::Time { local: e, .. }) if e > local => {
                    format!(" to {}", e.format("%a %-d %b %Y, %H:%M"))
                }
                _ => String::new(),
            };
            format!("{}{end} ({zone})", local.format("%a %-d %b %Y, %H:%M"))
        }
        (None, _) => "no date".into(),
    }
}

/// Who organizes an event and whether its guests hear of the delete, for its card line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Guests {
    /// The owner organizes it (its `ORGANIZER` is one of the owner's addresses).
    pub you_organize: bool,
    /// The calendar server tells attendees when the organizer deletes it (RFC 6638).
    pub server_tells: bool,
}

/// One card line: "Dentist — Tue 8 Dec 2026, 10:00–11:00 (Europe/Berlin) · Personal", then
/// "repeats weekly: deletes the whole series" and, for an event with guests, who organizes it
/// and whether they are told: "you organize, 3 guests: the server tells them it is cancelled",
/// "you organize, 3 guests: nobody tells them", "organized by anna@example.org, 3 guests:
/// deletes your copy only".
pub(crate) fn card_line(facts: &EventFacts, calendar: &str, guests: Guests) -> String {
    let mut line = format!(
        "{} — {} · {}",
        summary_text(facts),
        when_text(facts),
        iris_core::mcp::escaped(calendar)
    );
    if let Some(every) = &facts.repeats {
        line.push_str(&format!("; repeats {every}: deletes the whole series"));
    }
    if facts.attendees > 0 {
        let n = format!(
            "{} guest{}",
            facts.attendees,
            if facts.attendees == 1 { "" } else { "s" }
        );
        match (&facts.organizer, guests) {
            (
                Some(_),
                Guests {
                    you_organize: true,
                    server_tells: true,
                },
            ) => {
                line.push_str(&format!(
                    "; you organize, {n}: the server tells them it is cancelled"
                ));
            }
            (
                Some(_),
                Guests {
                    you_organize: true,
                    server_tells: false,
                },
            ) => {
                line.push_str(&format!(
                    "; you organize, {n}: nobody tells them (this calendar server does not send cancellations)"
                ));
            }
            (Some(organizer), _) => {
                line.push_str(&format!(
                    "; organized by {}, {n}: deletes your copy only",
                    iris_core::mcp::escaped(organizer)
                ));
            }
            (None, _) => {
                line.push_str(&format!("; {n}, no organizer named: nobody tells them"));
            }
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_rule() {
        let ids = parse_ids(
            "t",
            &json!([
                " EV0123456789ABCDEF ",
                "ev0123456789abcdef",
                "evffffffffffffffff"
            ]),
        )
        .unwrap();
        assert_eq!(ids, vec!["ev0123456789abcdef", "evffffffffffffffff"]);
        assert!(parse_ids("t", &json!([])).is_err());
        assert!(parse_ids("t", &json!(["m1"])).is_err());
        assert!(parse_ids("t", &json!([1])).is_err());
        assert!(parse_ids("t", &json!("ev0123456789abcdef")).is_err());
        let many: Vec<String> = (0..501).map(|n| format!("ev{n:016x}")).collect();
        assert!(parse_ids("t", &json!(many)).is_err());
    }

    #[test]
    fn a_line_says_who_organizes_and_whether_the_guests_are_told() {
        let facts = EventFacts::parse(
            "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:x\r\nDTSTART:20261208T100000Z\r\nDTEND:20261208T110000Z\r\nSUMMARY:Offsite\r\nORGANIZER:mailto:owner@example.org\r\nATTENDEE:mailto:a@example.org\r\nATTENDEE:mailto:b@example.org\r\nATTENDEE:mailto:c@example.org\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
                .as_bytes(),
        );
        let mine = |server_tells| Guests {
            you_organize: true,
            server_tells,
        };
        assert!(card_line(&facts, "Work", mine(true))
            .ends_with("; you organize, 3 guests: the server tells them it is cancelled"));
        assert!(card_line(&facts, "Work", mine(false)).ends_with(
            "; you organize, 3 guests: nobody tells them (this calendar server does not send cancellations)"
        ));
        assert!(card_line(&facts, "Work", Guests::default())
            .ends_with("; organized by owner@example.org, 3 guests: deletes your copy only"));
    }

    #[test]
    fn a_line_names_the_series_and_escapes_hostile_text() {
        let facts = EventFacts::parse(
            "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:x\r\nDTSTART;TZID=Europe/Berlin:20261208T100000\r\nDTEND;TZID=Europe/Berlin:20261208T110000\r\nRRULE:FREQ=WEEKLY\r\nSUMMARY:Pay \u{202e}lanigiro\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
                .as_bytes(),
        );
        let line = card_line(&facts, "Home", Guests::default());
        assert_eq!(
            line,
            "Pay \\u{202e}lanigiro — Tue 8 Dec 2026, 10:00–11:00 (Europe/Berlin) · Home; repeats weekly: deletes the whole series"
        );
    }
}
