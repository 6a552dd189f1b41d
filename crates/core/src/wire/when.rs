//! The one way IRIS writes a moment for people (every surface: the web card, refusals, the CLI,
//! Telegram, pairing links, the gateway's notes): "6 Dec 2026, 14:05:09", with seconds, since
//! the order of answers, lapses and undos can turn on them; in UTC it says so ("… UTC").
//! Written out by hand rather than with chrono's `format`: the browser's wasm gets the same text
//! without chrono's format-string machinery. Machine-read times stay RFC 3339.

use chrono::{DateTime, Datelike, FixedOffset, Timelike, Utc};

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// `at` in the reader's offset (minutes east of UTC) when known, "6 Dec 2026, 15:05:09"; else
/// in UTC, "6 Dec 2026, 14:05:09 UTC". An offset outside ±24 h counts as unknown.
pub fn when(at: DateTime<Utc>, offset_minutes: Option<i32>) -> String {
    match offset_minutes.and_then(|m| FixedOffset::east_opt(m.checked_mul(60)?)) {
        Some(offset) => written(&at.with_timezone(&offset)),
        None => format!("{} UTC", written(&at)),
    }
}

/// `at` in UTC: "6 Dec 2026, 14:05:09 UTC" (what the server writes into refusals and the CLI).
pub fn when_utc(at: DateTime<Utc>) -> String {
    when(at, None)
}

fn written<Tz: chrono::TimeZone>(at: &DateTime<Tz>) -> String {
    format!(
        "{} {} {}, {:02}:{:02}:{:02}",
        at.day(),
        MONTHS[at.month0() as usize % 12],
        at.year(),
        at.hour(),
        at.minute(),
        at.second()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn one_format_with_seconds_local_or_said_utc() {
        let at = Utc.with_ymd_and_hms(2026, 12, 6, 14, 5, 9).unwrap();
        assert_eq!(when_utc(at), "6 Dec 2026, 14:05:09 UTC");
        assert_eq!(when(at, Some(60)), "6 Dec 2026, 15:05:09");
        assert_eq!(when(at, Some(-330)), "6 Dec 2026, 08:35:09");
        // The date moves with the offset.
        let late = Utc.with_ymd_and_hms(2026, 12, 31, 23, 30, 0).unwrap();
        assert_eq!(when(late, Some(60)), "1 Jan 2027, 00:30:00");
        // Nonsense offsets are unknown, never a panic.
        assert_eq!(when(at, Some(100_000)), "6 Dec 2026, 14:05:09 UTC");
        assert_eq!(when(at, Some(i32::MAX)), "6 Dec 2026, 14:05:09 UTC");
    }
}
