//! What the plugin reads out of one event resource (an iCalendar object, RFC 5545): the facts a
//! list entry and a card line show. Parsed with the `icalendar` crate; a resource it cannot read,
//! or one without a VEVENT, is [`EventFacts::unreadable`], still listed and still deletable.
//!
//! Times keep the zone they were written in: a `TZID` time is placed in its zone (chrono-tz),
//! a UTC time is UTC, a floating time (no zone, RFC 5545 form 1) is read as UTC for windows and
//! said to be floating on the card; an all-day event has dates, its end exclusive.

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, TimeZone, Utc};
use icalendar::{
    Calendar, CalendarComponent, CalendarDateTime, Component, DatePerhapsTime, Event, EventLike,
};

/// When an event starts or ends, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum When {
    /// An all-day date (`VALUE=DATE`).
    Date(NaiveDate),
    /// A time, its instant, and the zone it was written in: an IANA name, `UTC`, or `None` for
    /// a floating time.
    Time {
        /// The instant (a floating time read as UTC).
        at: DateTime<Utc>,
        /// The local time as written.
        local: NaiveDateTime,
        /// The zone: `Some("Europe/Berlin")`, `Some("UTC")`, or `None` (floating).
        zone: Option<String>,
    },
}

impl When {
    /// The instant this starts at (an all-day date: its midnight, UTC).
    pub fn instant(&self) -> DateTime<Utc> {
        match self {
            When::Date(d) => Utc.from_utc_datetime(&d.and_hms_opt(0, 0, 0).unwrap_or_default()),
            When::Time { at, .. } => *at,
        }
    }

    /// RFC 3339 for a time (in UTC), `YYYY-MM-DD` for a date: what `list_events` returns.
    pub fn to_wire(&self) -> String {
        match self {
            When::Date(d) => d.format("%Y-%m-%d").to_string(),
            When::Time { at, .. } => at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        }
    }

    fn from_ical(value: DatePerhapsTime) -> When {
        match value {
            DatePerhapsTime::Date(d) => When::Date(d),
            DatePerhapsTime::DateTime(CalendarDateTime::Utc(at)) => When::Time {
                at,
                local: at.naive_utc(),
                zone: Some("UTC".into()),
            },
            DatePerhapsTime::DateTime(CalendarDateTime::Floating(local)) => When::Time {
                at: Utc.from_utc_datetime(&local),
                local,
                zone: None,
            },
            DatePerhapsTime::DateTime(CalendarDateTime::WithTimezone { date_time, tzid }) => {
                // An unknown TZID (a custom VTIMEZONE) is shown as written and windowed as UTC.
                let at = CalendarDateTime::WithTimezone {
                    date_time,
                    tzid: tzid.clone(),
                }
                .try_into_utc()
                .unwrap_or_else(|| Utc.from_utc_datetime(&date_time));
                When::Time {
                    at,
                    local: date_time,
                    zone: Some(tzid),
                }
            }
        }
    }
}

/// The facts of one event resource.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EventFacts {
    /// `UID`, when there is one.
    pub uid: Option<String>,
    /// `SUMMARY`, as written (unescaped by the parser); empty when absent.
    pub summary: String,
    /// `LOCATION`.
    pub location: String,
    /// `DESCRIPTION`.
    pub description: String,
    /// `DTSTART`; `None` for an unreadable resource.
    pub start: Option<When>,
    /// `DTEND`, or `DTSTART` + `DURATION`, or the start itself (a date: the next day).
    pub end: Option<When>,
    /// The `RRULE` frequency in words ("daily", "weekly", …) when the event repeats.
    pub repeats: Option<String>,
    /// The organizer's address (`mailto:` dropped), when the event has attendees.
    pub organizer: Option<String>,
    /// How many attendees it lists.
    pub attendees: usize,
    /// The first occurrence of the series at or after a window's start (see [`EventFacts::parse_in`]).
    pub first_in_window: Option<When>,
    /// The resource could not be read as an event.
    pub unreadable: bool,
}

impl EventFacts {
    /// The entry for a resource IRIS cannot read: listed as "(unreadable event)".
    pub fn unreadable() -> Self {
        EventFacts {
            summary: "(unreadable event)".into(),
            unreadable: true,
            ..EventFacts::default()
        }
    }

    /// Reads `bytes` (an iCalendar object); never fails: see [`EventFacts::unreadable`].
    pub fn parse(bytes: &[u8]) -> Self {
        Self::parse_in(bytes, None)
    }

    /// As [`EventFacts::parse`], and for a repeating event, the first occurrence in
    /// `window` (`[from, to)`), when there is one.
    pub fn parse_in(bytes: &[u8], window: Option<(DateTime<Utc>, DateTime<Utc>)>) -> Self {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return Self::unreadable();
        };
        let Ok(calendar) = text.parse::<Calendar>() else {
            return Self::unreadable();
        };
        // The master of a series (no RECURRENCE-ID) first; an overridden occurrence alone is
        // read as itself.
        let events: Vec<&Event> = calendar
            .components
            .iter()
            .filter_map(|c| match c {
                CalendarComponent::Event(e) => Some(e),
                _ => None,
            })
            .collect();
        let Some(event) = events
            .iter()
            .find(|e| e.property_value("RECURRENCE-ID").is_none())
            .or(events.first())
        else {
            return Self::unreadable();
        };
        let Some(start) = event.get_start().map(When::from_ical) else {
            return Self::unreadable();
        };
        let end = event
            .get_end()
            .map(When::from_ical)
            .or_else(|| {
                event
                    .property_value("DURATION")
                    .and_then(parse_duration)
                    .map(|d| shift(&start, d))
            })
            .unwrap_or_else(|| match &start {
                When::Date(d) => When::Date(d.succ_opt().unwrap_or(*d)),
                time => time.clone(),
            });
        let repeats = event.property_value("RRULE").map(frequency_words);
        let attendees = event.multi_properties().get("ATTENDEE").map_or(0, Vec::len)
            + usize::from(event.properties().contains_key("ATTENDEE"));
        let organizer = event.property_value("ORGANIZER").map(|o| {
            o.trim_start_matches("mailto:")
                .trim_start_matches("MAILTO:")
                .to_string()
        });
        let first_in_window = match (&repeats, window) {
            (Some(_), Some((from, to))) => first_occurrence(event, from, to, &start),
            _ => None,
        };
        EventFacts {
            uid: event.get_uid().map(str::to_string),
            summary: event.get_summary().unwrap_or_default().to_string(),
            location: event.get_location().unwrap_or_default().to_string(),
            description: event.get_description().unwrap_or_default().to_string(),
            start: Some(start),
            end: Some(end),
            repeats,
            organizer,
            attendees,
            first_in_window,
            unreadable: false,
        }
    }

    /// Whether the event meets `[from, to)`: a single event when its span overlaps the window;
    /// a series when it has an occurrence in it. An unreadable resource meets every window (it
    /// is listed so it can be deleted).
    pub fn meets(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> bool {
        if self.unreadable {
            return true;
        }
        let (Some(start), Some(end)) = (&self.start, &self.end) else {
            return true;
        };
        if self.repeats.is_some() {
            return self.first_in_window.is_some();
        }
        let (s, e) = (start.instant(), end.instant());
        s < to && (e > from || (e == s && s >= from))
    }

    /// Whether `query` (lower-cased) is in the summary, location or description.
    pub fn matches(&self, query_lower: &str) -> bool {
        [&self.summary, &self.location, &self.description]
            .iter()
            .any(|t| t.to_lowercase().contains(query_lower))
    }
}

fn shift(start: &When, by: Duration) -> When {
    match start {
        When::Date(d) => When::Date(
            d.checked_add_signed(by.max(Duration::days(1)))
                .unwrap_or(*d),
        ),
        When::Time { at, local, zone } => When::Time {
            at: *at + by,
            local: *local + by,
            zone: zone.clone(),
        },
    }
}

/// An RFC 5545 DURATION (`P1W`, `PT1H30M`, `P1DT2H`, signed); `None` when malformed.
fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let (negative, rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let rest = rest.strip_prefix('P')?;
    let mut total = Duration::zero();
    let mut number = String::new();
    let mut in_time = false;
    for c in rest.chars() {
        match c {
            '0'..='9' => number.push(c),
            'T' => in_time = true,
            unit => {
                let n: i64 = number.parse().ok()?;
                number.clear();
                total += match (unit, in_time) {
                    ('W', false) => Duration::weeks(n),
                    ('D', false) => Duration::days(n),
                    ('H', true) => Duration::hours(n),
                    ('M', true) => Duration::minutes(n),
                    ('S', true) => Duration::seconds(n),
                    _ => return None,
                };
            }
        }
    }
    (number.is_empty()).then_some(if negative { -total } else { total })
}

fn frequency_words(rrule: &str) -> String {
    let freq = rrule
        .split(';')
        .find_map(|part| part.strip_prefix("FREQ="))
        .unwrap_or("")
        .to_ascii_uppercase();
    match freq.as_str() {
        "SECONDLY" => "every second",
        "MINUTELY" => "every minute",
        "HOURLY" => "hourly",
        "DAILY" => "daily",
        "WEEKLY" => "weekly",
        "MONTHLY" => "monthly",
        "YEARLY" => "yearly",
        _ => "on a schedule",
    }
    .to_string()
}

/// The first occurrence of `event`'s series in `[from, to)` (the `rrule` crate through
/// icalendar); a rule it cannot expand counts the series' own start when that is in the window.
fn first_occurrence(
    event: &Event,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    start: &When,
) -> Option<When> {
    let shifted = |at: DateTime<Utc>| -> When {
        let by = at - start.instant();
        shift(start, by)
    };
    match event.get_recurrence() {
        Ok(set) => {
            let from_tz = from.with_timezone(&icalendar::Tz::UTC);
            let to_tz = to.with_timezone(&icalendar::Tz::UTC);
            let found = set.after(from_tz).before(to_tz).all(1);
            found.dates.first().map(|d| shifted(d.with_timezone(&Utc)))
        }
        Err(_) => {
            let s = start.instant();
            (s >= from && s < to).then(|| start.clone())
        }
    }
}

#[cfg(test)]
mod tests;
