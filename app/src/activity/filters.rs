//! What Activity's history is filtered by ([`HistoryFilter`]) and how the address keeps it: the
//! query of `/activity?q=invoice&status=rejected&surface=cli&since=2026-12-01`, so a reload,
//! the back button and a shared link show the same list. Only the server reads the query: to
//! render the filtered page (a browser without JavaScript gets it in the HTML) and to answer the
//! page's reads, which pass the address's query as it is ([`crate::api::activity_data`]); the
//! browser writes it as the owner types or chooses (`crate::activity::filter_form`) and never
//! parses it, so none of this is in the phone's wasm.
//!
//! A value the page cannot use (an unknown status, a date that is not one) is left out and
//! named in a plain note, never an error page: a hand-edited or old link still opens Activity.

use chrono::{DateTime, NaiveDate, Utc};
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::{Deserialize, Serialize};

/// The statuses an answered card can have (`GET /governance/approvals`' statuses, less
/// `pending`: waiting cards are listed above the history, never in it), with their labels.
pub const STATUSES: [(&str, &str); 3] = [
    ("approved", "Approved"),
    ("rejected", "Rejected"),
    ("expired", "Expired"),
];

/// The surfaces an answer comes from (`iris_core::wire::Surface`'s spellings), with their
/// labels. `sweep` is IRIS itself: a card that lapsed unanswered.
pub const SURFACES: [(&str, &str); 5] = [
    ("web", "Web app"),
    ("cli", "CLI"),
    ("telegram", "Telegram"),
    ("api", "API"),
    ("sweep", "IRIS (lapsed)"),
];

/// The longest search, as the listing takes it (`iris_core::ports::SearchText::MAX_CHARS`; the
/// browser's half of core is the wire types only, so the number is repeated here).
pub const SEARCH_MAX_CHARS: usize = 200;

/// The longest tool name the filter takes: longer is no tool's name.
const TOOL_MAX_CHARS: usize = 128;

/// What a query value may hold unescaped: RFC 3986's unreserved characters.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// The history's filters, each `None` when not set. Every value is checked
/// ([`HistoryFilter::from_query`]), so the listing is never asked a question it refuses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryFilter {
    /// Text the card holds (title, action, item lines, the owner's request), any case.
    pub q: Option<String>,
    /// One of [`STATUSES`].
    pub status: Option<String>,
    /// One tool's exact name.
    pub tool: Option<String>,
    /// One of [`SURFACES`].
    pub surface: Option<String>,
    /// Cards made on or after this day (`YYYY-MM-DD`, UTC).
    pub since: Option<String>,
    /// Cards made on or before this day (`YYYY-MM-DD`, UTC): the whole day, as a date
    /// picker's "to" reads.
    pub until: Option<String>,
}

impl HistoryFilter {
    /// The filters an address's query names (without its `?`; a GET form's `+` reads as a
    /// space), and a sentence for each value left out. Unknown names are ignored, empty values
    /// are unset (the no-script form sends every field), the last of a repeated name counts.
    pub fn from_query(query: &str) -> (HistoryFilter, Vec<String>) {
        let mut filter = HistoryFilter::default();
        let mut notes = Vec::new();
        for pair in query.trim_start_matches('?').split('&') {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = decode(value);
            let value = value.trim();
            match decode(name).as_str() {
                "q" => filter.q = search(value, &mut notes),
                "status" => filter.status = status(value, &mut notes),
                "tool" => filter.tool = tool(value, &mut notes),
                "surface" => filter.surface = surface(value, &mut notes),
                "since" => filter.since = day(value, "From", &mut notes),
                "until" => filter.until = day(value, "To", &mut notes),
                _ => {}
            }
        }
        // A range that ends before it starts matches nothing: said, not shown as an empty list.
        if let (Some(since), Some(until)) = (&filter.since, &filter.until) {
            if until < since {
                notes.push(format!(
                    "To ({until}) is before From ({since}), so no card could match: both were ignored."
                ));
                filter.since = None;
                filter.until = None;
            }
        }
        (filter, notes)
    }

    /// The query that names these filters (no `?`; empty when none is set), always spelled
    /// the same way, so two addresses of one list are one text.
    pub fn to_query(&self) -> String {
        self.named()
            .map(|(name, value)| format!("{name}={}", utf8_percent_encode(value, QUERY_VALUE)))
            .collect::<Vec<_>>()
            .join("&")
    }

    /// These filters with the query's `name` set to `value` (checked as an address's value
    /// is; an empty value unsets it): what one control of the form changes.
    pub fn with(&self, name: &str, value: &str) -> HistoryFilter {
        let query = format!(
            "{}&{name}={}",
            self.to_query(),
            utf8_percent_encode(value, QUERY_VALUE)
        );
        HistoryFilter::from_query(&query).0
    }

    /// Whether any filter is set.
    pub fn is_set(&self) -> bool {
        self.named().next().is_some()
    }

    /// The set filters by their query names, in the address's order.
    fn named(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [
            ("q", &self.q),
            ("status", &self.status),
            ("tool", &self.tool),
            ("surface", &self.surface),
            ("since", &self.since),
            ("until", &self.until),
        ]
        .into_iter()
        .filter_map(|(name, value)| value.as_deref().map(|v| (name, v)))
    }

    /// The filters in words, for "No answered cards match …": `“invoice”, rejected, answered
    /// on CLI, from 2026-12-01`.
    pub fn in_words(&self) -> String {
        let label = |list: &[(&str, &'static str)], value: &str| {
            list.iter()
                .find(|(name, _)| *name == value)
                .map_or_else(|| value.to_owned(), |(_, label)| (*label).to_owned())
        };
        let mut words = Vec::new();
        if let Some(q) = &self.q {
            words.push(format!("\u{201c}{q}\u{201d}"));
        }
        if let Some(status) = &self.status {
            words.push(label(&STATUSES, status).to_lowercase());
        }
        if let Some(tool) = &self.tool {
            words.push(format!("tool {tool}"));
        }
        if let Some(surface) = &self.surface {
            words.push(format!("answered on {}", label(&SURFACES, surface)));
        }
        if let Some(since) = &self.since {
            words.push(format!("from {since}"));
        }
        if let Some(until) = &self.until {
            words.push(format!("to {until}"));
        }
        words.join(", ")
    }

    /// The first moment [`HistoryFilter::since`] lets in (midnight UTC of that day).
    pub fn since_time(&self) -> Option<DateTime<Utc>> {
        self.since.as_deref().and_then(midnight)
    }

    /// The first moment [`HistoryFilter::until`] keeps out: midnight UTC after that day, so
    /// the listing's `until` (exclusive) holds the whole day the owner picked.
    pub fn until_time(&self) -> Option<DateTime<Utc>> {
        let day = self.until.as_deref().and_then(parse_day)?;
        day.succ_opt()?.and_hms_opt(0, 0, 0).map(|t| t.and_utc())
    }
}

/// A query value as text: `+` is a space (an HTML form's encoding), then percent-decoded;
/// bytes that are not UTF-8 become U+FFFD.
fn decode(value: &str) -> String {
    percent_decode_str(&value.replace('+', " "))
        .decode_utf8_lossy()
        .into_owned()
}

/// `notes` with one more when the filter names a tool that makes no cards here (a tool's name
/// only the server knows: a typo, or a plugin removed since): kept, since old cards may still
/// carry it, but said, so an empty list is not a mystery.
pub fn with_tool_note(
    mut notes: Vec<String>,
    filter: &HistoryFilter,
    tools: &[String],
) -> Vec<String> {
    if let Some(tool) = filter.tool.as_ref().filter(|t| !tools.contains(t)) {
        notes.push(format!(
            "No tool named \u{201c}{}\u{201d} makes cards here now, so only older cards could match.",
            shorten(tool)
        ));
    }
    notes
}

/// `q`: cut to [`SEARCH_MAX_CHARS`] (with a note) rather than dropped, so the owner still sees
/// what the search was.
fn search(value: &str, notes: &mut Vec<String>) -> Option<String> {
    // Control characters (a NUL from a hand-made address) match no card's text, and the
    // listing refuses them (`SearchText::parse`): each becomes a space, with a note.
    let mut value = value.to_owned();
    if value.chars().any(char::is_control) {
        notes.push("The search held control characters; they were left out.".to_owned());
        value = value
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect::<String>()
            .trim()
            .to_owned();
    }
    if value.is_empty() {
        return None;
    }
    if value.chars().count() > SEARCH_MAX_CHARS {
        notes.push(format!(
            "The search was cut to its first {SEARCH_MAX_CHARS} characters."
        ));
        return Some(value.chars().take(SEARCH_MAX_CHARS).collect());
    }
    Some(value)
}

fn status(value: &str, notes: &mut Vec<String>) -> Option<String> {
    let value = value.to_lowercase();
    match value.as_str() {
        // What the form's "Any" sends, and the API's words for every answered card.
        "" | "any" | "all" | "answered" => None,
        "pending" => {
            notes.push(
                "Status \u{201c}pending\u{201d} is not used here: waiting cards are always listed above the history.".to_owned(),
            );
            None
        }
        known if STATUSES.iter().any(|(name, _)| *name == known) => Some(value),
        other => {
            notes.push(format!(
                "Status \u{201c}{}\u{201d} was ignored: it is not one of approved, rejected, expired.",
                shorten(other)
            ));
            None
        }
    }
}

fn tool(value: &str, notes: &mut Vec<String>) -> Option<String> {
    if value.is_empty() || value == "any" {
        return None;
    }
    // A tool's name as manifests spell them (an MCP upstream's may hold `-`, `.`, `/`, `:`).
    let named = value.chars().count() <= TOOL_MAX_CHARS
        && value
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | ':'));
    if named {
        Some(value.to_owned())
    } else {
        notes.push(format!(
            "Tool \u{201c}{}\u{201d} was ignored: it is not a tool's name.",
            shorten(value)
        ));
        None
    }
}

fn surface(value: &str, notes: &mut Vec<String>) -> Option<String> {
    let value = value.to_lowercase();
    if value.is_empty() || value == "any" {
        return None;
    }
    if SURFACES.iter().any(|(name, _)| *name == value) {
        return Some(value);
    }
    notes.push(format!(
        "Surface \u{201c}{}\u{201d} was ignored: it is not one of web, cli, telegram, api, sweep.",
        shorten(&value)
    ));
    None
}

/// A `since`/`until` day, spelled `YYYY-MM-DD` (what `<input type=date>` sends).
fn day(value: &str, label: &str, notes: &mut Vec<String>) -> Option<String> {
    if value.is_empty() {
        return None;
    }
    match parse_day(value) {
        Some(day) => Some(day.format("%Y-%m-%d").to_string()),
        None => {
            notes.push(format!(
                "{label} \u{201c}{}\u{201d} was ignored: it is not a date like 2026-12-01.",
                shorten(value)
            ));
            None
        }
    }
}

fn parse_day(value: &str) -> Option<NaiveDate> {
    NaiveDate::parse_from_str(value, "%Y-%m-%d").ok()
}

fn midnight(value: &str) -> Option<DateTime<Utc>> {
    parse_day(value)?.and_hms_opt(0, 0, 0).map(|t| t.and_utc())
}

/// A value quoted back in a note: at most 40 characters, so a long bad link keeps the note
/// short.
fn shorten(value: &str) -> String {
    if value.chars().count() > 40 {
        format!("{}…", value.chars().take(40).collect::<String>())
    } else {
        value.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_query_reads_back_as_it_is_written() {
        let (filter, notes) = HistoryFilter::from_query(
            "q=Black+Friday%21&status=rejected&tool=trash_email&surface=cli&since=2026-12-01&until=2026-12-05",
        );
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(filter.q.as_deref(), Some("Black Friday!"));
        assert_eq!(filter.status.as_deref(), Some("rejected"));
        assert_eq!(filter.tool.as_deref(), Some("trash_email"));
        assert_eq!(filter.surface.as_deref(), Some("cli"));
        assert_eq!(
            filter.to_query(),
            "q=Black%20Friday%21&status=rejected&tool=trash_email&surface=cli&since=2026-12-01&until=2026-12-05"
        );
        assert_eq!(HistoryFilter::from_query(&filter.to_query()).0, filter);
        assert!(filter.is_set());
        let changed = filter.with("status", "").with("q", "a&b=c");
        assert_eq!(changed.status, None);
        assert_eq!(changed.q.as_deref(), Some("a&b=c"));
        assert_eq!(changed.with("since", "not a day").since, None);
    }

    #[test]
    fn the_no_script_forms_empty_fields_set_nothing() {
        let (filter, _) = HistoryFilter::from_query("tool=nope");
        let tools = vec!["trash_email".to_string()];
        let said = with_tool_note(Vec::new(), &filter, &tools);
        assert!(
            said[0].contains("No tool named \u{201c}nope\u{201d}"),
            "{said:?}"
        );
        let (known, _) = HistoryFilter::from_query("tool=trash_email");
        assert!(with_tool_note(Vec::new(), &known, &tools).is_empty());
        let (filter, notes) = HistoryFilter::from_query("since=2026-12-07&until=2026-12-01");
        assert_eq!((filter.since, filter.until), (None, None));
        assert!(notes[0].contains("is before From"), "{notes:?}");
        let (filter, notes) =
            HistoryFilter::from_query("?q=&status=&tool=&surface=&since=&until=&other=1");
        assert_eq!(filter, HistoryFilter::default());
        assert!(notes.is_empty());
        assert_eq!(filter.to_query(), "");
        assert!(!filter.is_set());
    }

    #[test]
    fn bad_values_are_left_out_with_a_note_each() {
        let (filter, notes) = HistoryFilter::from_query(
            "status=done&surface=fax&since=yesterday&until=2026-13-40&tool=%3Cscript%3E&q=ok",
        );
        assert_eq!(
            filter,
            HistoryFilter {
                q: Some("ok".into()),
                ..HistoryFilter::default()
            }
        );
        assert_eq!(notes.len(), 5, "{notes:?}");
        assert!(notes[0].contains("\u{201c}done\u{201d}"));
        assert!(notes.iter().any(|n| n.starts_with("From")));
        assert!(notes.iter().any(|n| n.starts_with("To")));
        // A NUL in the search (it broke the listing's full-text query) is left out, said.
        let (filter, notes) = HistoryFilter::from_query("q=zzzz%00");
        assert_eq!(filter.q.as_deref(), Some("zzzz"));
        assert!(notes[0].contains("control characters"), "{notes:?}");
        let (filter, notes) = HistoryFilter::from_query("q=%00");
        assert_eq!((filter.q, notes.len()), (None, 1));
        let (filter, notes) = HistoryFilter::from_query("status=pending");
        assert_eq!(filter, HistoryFilter::default());
        assert!(notes[0].contains("waiting cards"));
        let (filter, notes) = HistoryFilter::from_query(&format!("q={}", "x".repeat(300)));
        assert_eq!(filter.q.map(|q| q.len()), Some(SEARCH_MAX_CHARS));
        assert_eq!(notes.len(), 1);
    }

    #[test]
    fn the_days_hold_whole_days_in_utc() {
        let (filter, _) = HistoryFilter::from_query("since=2026-12-01&until=2026-12-05");
        assert_eq!(
            filter.since_time().unwrap().to_rfc3339(),
            "2026-12-01T00:00:00+00:00"
        );
        assert_eq!(
            filter.until_time().unwrap().to_rfc3339(),
            "2026-12-06T00:00:00+00:00"
        );
    }

    #[test]
    fn the_filters_read_as_words() {
        let (filter, _) =
            HistoryFilter::from_query("q=invoice&status=rejected&surface=cli&since=2026-12-01");
        assert_eq!(
            filter.in_words(),
            "\u{201c}invoice\u{201d}, rejected, answered on CLI, from 2026-12-01"
        );
    }
}
