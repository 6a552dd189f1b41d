//! The demo calendar (`iris serve --demo`): a vdir folder with two calendars, "Personal" and
//! "Work", whose events sit around the day the demo starts (a dentist appointment next week, a
//! weekly standup, a team offsite with guests, a birthday), so "delete the dentist appointment
//! next week" finds one event and makes one card.

use std::io;
use std::path::Path;

use chrono::{DateTime, Datelike, Duration, Utc, Weekday};

fn ics(uid: &str, body: &str) -> String {
    format!(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//IRIS//demo calendar//EN\r\nBEGIN:VEVENT\r\nUID:{uid}\r\nDTSTAMP:20261101T000000Z\r\n{body}END:VEVENT\r\nEND:VCALENDAR\r\n"
    )
}

/// Writes the demo calendars into `dir` (created when missing) and returns how many events it
/// wrote: 0 when `dir` already holds anything (idempotent; an owner's real calendar is never
/// mixed with demo events). Times are in Europe/Berlin, placed from `now`: the dentist on the
/// Tuesday of next week at 10:00.
///
/// # Errors
/// The I/O error of the first file or folder that could not be written.
pub fn write_demo_calendar(dir: &Path, now: DateTime<Utc>) -> io::Result<usize> {
    if dir.exists() && std::fs::read_dir(dir)?.next().is_some() {
        return Ok(0);
    }
    let today = now.date_naive();
    let monday_next = today + Duration::days(7 - i64::from(today.weekday().num_days_from_monday()));
    let day = |offset: i64| {
        (monday_next + Duration::days(offset))
            .format("%Y%m%d")
            .to_string()
    };
    let this_monday = (monday_next - Duration::days(7))
        .format("%Y%m%d")
        .to_string();
    let birthday = (today + Duration::days(10)).format("%Y%m%d").to_string();
    let birthday_end = (today + Duration::days(11)).format("%Y%m%d").to_string();
    debug_assert_eq!(
        (monday_next + Duration::days(1)).weekday(),
        Weekday::Tue,
        "the dentist is on a Tuesday"
    );
    let personal = [
        (
            "dentist.ics",
            ics(
                "demo-dentist",
                &format!(
                    "DTSTART;TZID=Europe/Berlin:{}T100000\r\nDTEND;TZID=Europe/Berlin:{}T110000\r\nSUMMARY:Dentist appointment\r\nLOCATION:Dr. Weber, Lindenstraße 4\r\n",
                    day(1),
                    day(1)
                ),
            ),
        ),
        (
            "birthday-anna.ics",
            ics(
                "demo-birthday",
                &format!(
                    "DTSTART;VALUE=DATE:{birthday}\r\nDTEND;VALUE=DATE:{birthday_end}\r\nSUMMARY:Anna's birthday\r\n"
                ),
            ),
        ),
    ];
    let work = [
        (
            "standup.ics",
            ics(
                "demo-standup",
                &format!(
                    "DTSTART;TZID=Europe/Berlin:{this_monday}T091500\r\nDTEND;TZID=Europe/Berlin:{this_monday}T093000\r\nRRULE:FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR\r\nSUMMARY:Team standup\r\n"
                ),
            ),
        ),
        (
            "offsite.ics",
            ics(
                "demo-offsite",
                &format!(
                    "DTSTART;TZID=Europe/Berlin:{}T130000\r\nDTEND;TZID=Europe/Berlin:{}T170000\r\nSUMMARY:Team offsite planning\r\nORGANIZER:mailto:owner@example.org\r\nATTENDEE:mailto:anna.weber@example.net\r\nATTENDEE:mailto:ben@example.com\r\nATTENDEE:mailto:chris@example.com\r\n",
                    day(3),
                    day(3)
                ),
            ),
        ),
    ];
    let mut written = 0;
    for (folder, name, events) in [
        ("personal", "Personal", &personal[..]),
        ("work", "Work", &work[..]),
    ] {
        let calendar = dir.join(folder);
        std::fs::create_dir_all(&calendar)?;
        std::fs::write(calendar.join("displayname"), format!("{name}\n"))?;
        for (file, text) in events {
            std::fs::write(calendar.join(file), text)?;
            written += 1;
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{EventFacts, When};

    #[test]
    fn the_demo_calendar_is_written_once_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let now = DateTime::parse_from_rfc3339("2026-12-05T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let root = dir.path().join("cal");
        assert_eq!(write_demo_calendar(&root, now).unwrap(), 4);
        assert_eq!(write_demo_calendar(&root, now).unwrap(), 0, "idempotent");
        let dentist = EventFacts::parse(&std::fs::read(root.join("personal/dentist.ics")).unwrap());
        let Some(When::Time { local, zone, .. }) = dentist.start else {
            panic!("{dentist:?}");
        };
        // Saturday 5 Dec 2026: next week's Tuesday is 8 Dec.
        assert_eq!(local.to_string(), "2026-12-08 10:00:00");
        assert_eq!(zone.as_deref(), Some("Europe/Berlin"));
        for file in [
            "personal/birthday-anna.ics",
            "work/standup.ics",
            "work/offsite.ics",
        ] {
            let facts = EventFacts::parse(&std::fs::read(root.join(file)).unwrap());
            assert!(!facts.unreadable, "{file}");
        }
    }
}
