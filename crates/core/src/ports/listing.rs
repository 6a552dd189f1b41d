//! Listing approvals a page at a time (Activity after a year of use, the governance API, the CLI).
//!
//! A page is ordered by `(created_at, id)`, newest first. Its cursor names the last row it
//! holds, so the next page starts strictly below it: rows created while someone pages arrive
//! above the first page and never shift the pages below, and paging `status=all` gives every
//! row exactly once. Every value here is parsed ([`PageCursor::parse`], [`PageLimit::parse`],
//! [`SearchText::parse`]) so a query cannot hold a bad one.

use chrono::{DateTime, SecondsFormat, Utc};

use crate::wire::{Approval, ApprovalStatus};

/// Which statuses a page holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StatusFilter {
    /// Every row.
    #[default]
    All,
    /// Every row the owner has answered or that lapsed (not `pending`): Activity's history.
    Answered,
    /// Rows in exactly this status.
    Is(ApprovalStatus),
}

impl StatusFilter {
    /// `all` (or empty), `answered`, or one status (`pending`, `approved`, `rejected`,
    /// `expired`).
    ///
    /// # Errors
    /// [`ListingError::Status`] names the word and the accepted ones.
    pub fn parse(text: &str) -> Result<Self, ListingError> {
        match text.trim() {
            "" | "all" => Ok(StatusFilter::All),
            "answered" => Ok(StatusFilter::Answered),
            other => ApprovalStatus::parse(other)
                .map(StatusFilter::Is)
                .ok_or_else(|| ListingError::Status(other.to_string())),
        }
    }
}

/// How many rows a page holds: 1 to [`PageLimit::MAX`], [`PageLimit::DEFAULT`] when unsaid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLimit(u32);

impl PageLimit {
    /// Rows per page when the caller does not say.
    pub const DEFAULT: PageLimit = PageLimit(50);
    /// The most rows one page holds.
    pub const MAX: u32 = 200;
    /// A page of [`PageLimit::MAX`] rows.
    pub const LARGEST: PageLimit = PageLimit(Self::MAX);

    /// A limit from its decimal text.
    ///
    /// # Errors
    /// [`ListingError::Limit`] unless it is a whole number from 1 to [`PageLimit::MAX`].
    pub fn parse(text: &str) -> Result<Self, ListingError> {
        match text.trim().parse::<u32>() {
            Ok(n) if (1..=Self::MAX).contains(&n) => Ok(PageLimit(n)),
            _ => Err(ListingError::Limit(text.to_string())),
        }
    }

    /// The number of rows.
    pub fn get(self) -> u32 {
        self.0
    }
}

impl Default for PageLimit {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Where the next page starts: strictly below the row `(created_at, id)` (newest first). Shown
/// to callers as opaque text ([`PageCursor::as_text`]); only [`PageCursor::parse`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageCursor {
    /// The last listed row's creation time.
    pub created_at: DateTime<Utc>,
    /// The last listed row's id.
    pub id: String,
}

impl PageCursor {
    /// The cursor after `row`.
    pub fn after(row: &Approval) -> Self {
        PageCursor {
            created_at: row.created_at,
            id: row.id.clone(),
        }
    }

    /// The opaque text form (hex digits) that [`PageCursor::parse`] reads back.
    pub fn as_text(&self) -> String {
        let plain = format!(
            "{}\n{}",
            self.created_at.to_rfc3339_opts(SecondsFormat::Nanos, true),
            self.id
        );
        hex::encode(plain.as_bytes())
    }

    /// Reads a cursor a page handed out.
    ///
    /// # Errors
    /// [`ListingError::Cursor`] when the text is not one this server made.
    pub fn parse(text: &str) -> Result<Self, ListingError> {
        let bad = || ListingError::Cursor(text.chars().take(80).collect());
        let bytes = hex::decode(text.trim()).map_err(|_| bad())?;
        let plain = String::from_utf8(bytes).map_err(|_| bad())?;
        let (at, id) = plain.split_once('\n').ok_or_else(bad)?;
        let created_at = DateTime::parse_from_rfc3339(at)
            .map_err(|_| bad())?
            .with_timezone(&Utc);
        let valid_id = !id.is_empty()
            && id.len() <= 128
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid_id {
            return Err(bad());
        }
        Ok(PageCursor {
            created_at,
            id: id.to_string(),
        })
    }
}

/// What a search looks for in a card's text (title, action, item lines, the owner's request):
/// 1 to [`SearchText::MAX_CHARS`] characters, compared without regard to case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchText(String);

impl SearchText {
    /// The longest search.
    pub const MAX_CHARS: usize = 200;

    /// Trims and lowercases `text`; `None` when nothing is left.
    ///
    /// # Errors
    /// [`ListingError::Search`] when it is longer than [`SearchText::MAX_CHARS`];
    /// [`ListingError::SearchControl`] when what is left holds a control character (U+0000 to
    /// U+001F, U+007F to U+009F): no card's text holds one, and the full-text index's query
    /// language cannot take a NUL.
    pub fn parse(text: &str) -> Result<Option<Self>, ListingError> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(None);
        }
        if text.chars().count() > Self::MAX_CHARS {
            return Err(ListingError::Search(Self::MAX_CHARS));
        }
        if let Some(c) = text.chars().find(|c| c.is_control()) {
            return Err(ListingError::SearchControl(u32::from(c)));
        }
        Ok(Some(SearchText(text.to_lowercase())))
    }

    /// The lowercased text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The searchable text of a card, as stored beside the row: its title, action, item lines and
/// the owner's request, lowercased, one per line.
pub fn card_search_text(card: &crate::wire::Card) -> String {
    let mut parts = vec![card.title.as_str(), card.action.as_str()];
    parts.extend(card.lines.iter().map(String::as_str));
    parts.push(card.request.as_str());
    parts.join("\n").to_lowercase()
}

/// One page's question.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApprovalQuery {
    /// Which statuses.
    pub status: StatusFilter,
    /// Only this tool (exact name).
    pub tool: Option<String>,
    /// Only rows answered on this surface (`web`, `telegram`, `cli`, `api`, …).
    pub surface: Option<String>,
    /// Only rows created at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Only rows created before this time.
    pub until: Option<DateTime<Utc>>,
    /// Only rows whose card text holds this.
    pub text: Option<SearchText>,
    /// Start strictly below this row (`None`: the newest).
    pub before: Option<PageCursor>,
    /// How many rows.
    pub limit: PageLimit,
    /// Only rows this agent requested (an `agent` device reads nothing else; DESIGN §2).
    pub requested_by: Option<String>,
}

/// One page, newest first; `next` is set when more rows may follow.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalPage {
    /// The rows.
    pub approvals: Vec<Approval>,
    /// Where the following page starts, or `None` at the end.
    pub next: Option<PageCursor>,
}

/// A listing question that cannot be asked (a 400 at the API).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListingError {
    /// Not a status word.
    #[error("status `{0}` is not one of all, answered, pending, approved, rejected, expired")]
    Status(String),
    /// Not a page size.
    #[error("limit `{0}` is not a whole number from 1 to 200")]
    Limit(String),
    /// Not a cursor this server handed out.
    #[error("cursor `{0}` is not one this server handed out; start again without `before`")]
    Cursor(String),
    /// Not a time.
    #[error("`{field}` = `{text}` is not a time (RFC 3339, e.g. 2026-12-01T00:00:00Z, or a date 2026-12-01)")]
    Time {
        /// `since` or `until`.
        field: &'static str,
        /// What was given.
        text: String,
    },
    /// The search is too long.
    #[error("the search `q` is longer than {0} characters")]
    Search(usize),
    /// The search holds a control character (its code point).
    #[error("the search `q` holds a control character (U+{0:04X}); search for plain text")]
    SearchControl(u32),
}

/// Parses a `since`/`until` value: an RFC 3339 time or a date (`YYYY-MM-DD`, midnight UTC).
///
/// # Errors
/// [`ListingError::Time`] names the field and the text.
pub fn parse_listing_time(field: &'static str, text: &str) -> Result<DateTime<Utc>, ListingError> {
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .ok_or_else(|| ListingError::Time {
            field,
            text: text.chars().take(80).collect(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_what_it_wrote_and_refuses_anything_else() {
        let cursor = PageCursor {
            created_at: DateTime::parse_from_rfc3339("2026-12-01T14:02:03.123456789Z")
                .unwrap()
                .with_timezone(&Utc),
            id: "0b9c1d2e-aaaa-bbbb-cccc-123456789abc".into(),
        };
        assert_eq!(PageCursor::parse(&cursor.as_text()), Ok(cursor));
        for bad in [
            "",
            "zz",
            "00",
            &hex::encode("2026-12-01T00:00:00Z\n' OR 1=1"),
        ] {
            assert!(
                matches!(PageCursor::parse(bad), Err(ListingError::Cursor(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn limits_are_one_to_two_hundred() {
        assert_eq!(PageLimit::parse("1").map(PageLimit::get), Ok(1));
        assert_eq!(PageLimit::parse("200").map(PageLimit::get), Ok(200));
        for bad in ["0", "201", "-1", "ten", ""] {
            assert!(PageLimit::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(PageLimit::default().get(), 50);
    }

    #[test]
    fn statuses_times_and_searches_parse_or_say_why_not() {
        assert_eq!(StatusFilter::parse("all"), Ok(StatusFilter::All));
        assert_eq!(StatusFilter::parse("answered"), Ok(StatusFilter::Answered));
        assert_eq!(
            StatusFilter::parse("expired"),
            Ok(StatusFilter::Is(ApprovalStatus::Expired))
        );
        assert!(StatusFilter::parse("done").is_err());
        assert_eq!(
            parse_listing_time("since", "2026-12-01")
                .unwrap()
                .to_rfc3339(),
            "2026-12-01T00:00:00+00:00"
        );
        assert!(parse_listing_time("until", "yesterday").is_err());
        assert_eq!(SearchText::parse("  "), Ok(None));
        assert_eq!(
            SearchText::parse(" Promo ").unwrap().unwrap().as_str(),
            "promo"
        );
        assert!(SearchText::parse(&"x".repeat(201)).is_err());
        // A control character inside the search is refused (a NUL broke the full-text query);
        // whitespace ones at its ends are trimmed like any whitespace.
        assert_eq!(
            SearchText::parse("zz\u{0}zz"),
            Err(ListingError::SearchControl(0))
        );
        assert_eq!(
            SearchText::parse("a\tb"),
            Err(ListingError::SearchControl(9))
        );
        assert_eq!(
            SearchText::parse("\tpromo\n").unwrap().unwrap().as_str(),
            "promo"
        );
    }
}
