use super::*;

fn cal(body: &str) -> Vec<u8> {
    format!("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n{body}END:VCALENDAR\r\n")
        .into_bytes()
}

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&Utc)
}

#[test]
fn a_zoned_event_keeps_its_zone_and_its_instant() {
    let facts = EventFacts::parse(&cal(
        "BEGIN:VEVENT\r\nUID:d1\r\nDTSTART;TZID=Europe/Berlin:20261208T100000\r\nDTEND;TZID=Europe/Berlin:20261208T110000\r\nSUMMARY:Zahnarzt Müller\r\nLOCATION:Praxis\r\nEND:VEVENT\r\n",
    ));
    assert!(!facts.unreadable);
    assert_eq!(facts.uid.as_deref(), Some("d1"));
    assert_eq!(facts.summary, "Zahnarzt Müller");
    let Some(When::Time {
        at: start, zone, ..
    }) = &facts.start
    else {
        panic!("{facts:?}");
    };
    // 10:00 in Berlin in December is 09:00 UTC.
    assert_eq!(*start, at("2026-12-08T09:00:00Z"));
    assert_eq!(zone.as_deref(), Some("Europe/Berlin"));
    assert!(facts.meets(at("2026-12-08T00:00:00Z"), at("2026-12-09T00:00:00Z")));
    assert!(!facts.meets(at("2026-12-09T00:00:00Z"), at("2026-12-10T00:00:00Z")));
    assert!(facts.matches("praxis"));
    assert!(facts.matches("müller"));
}

#[test]
fn an_all_day_event_has_dates_and_its_end_is_exclusive() {
    let facts = EventFacts::parse(&cal(
        "BEGIN:VEVENT\r\nUID:h\r\nDTSTART;VALUE=DATE:20261224\r\nDTEND;VALUE=DATE:20261227\r\nSUMMARY:Holidays\r\nEND:VEVENT\r\n",
    ));
    assert_eq!(
        facts.start,
        Some(When::Date(NaiveDate::from_ymd_opt(2026, 12, 24).unwrap()))
    );
    assert!(facts.meets(at("2026-12-26T12:00:00Z"), at("2026-12-26T13:00:00Z")));
    assert!(!facts.meets(at("2026-12-27T00:00:00Z"), at("2026-12-28T00:00:00Z")));
    assert_eq!(
        crate::tools::when_text(&facts),
        "Thu 24 Dec 2026 to Sat 26 Dec 2026 (all day)"
    );
}

#[test]
fn a_duration_gives_the_end_and_a_floating_time_says_so() {
    let facts = EventFacts::parse(&cal(
        "BEGIN:VEVENT\r\nUID:f\r\nDTSTART:20261208T100000\r\nDURATION:PT1H30M\r\nSUMMARY:Call\r\nEND:VEVENT\r\n",
    ));
    assert_eq!(
        crate::tools::when_text(&facts),
        "Tue 8 Dec 2026, 10:00–11:30 (floating time, no zone)"
    );
}

#[test]
fn a_weekly_series_is_one_entry_at_its_first_occurrence_in_the_window() {
    let bytes = cal(
        "BEGIN:VEVENT\r\nUID:s\r\nDTSTART:20261102T080000Z\r\nDTEND:20261102T083000Z\r\nRRULE:FREQ=WEEKLY\r\nSUMMARY:Standup\r\nEND:VEVENT\r\n",
    );
    let window = (at("2026-12-05T00:00:00Z"), at("2026-12-12T00:00:00Z"));
    let facts = EventFacts::parse_in(&bytes, Some(window));
    assert_eq!(facts.repeats.as_deref(), Some("weekly"));
    let Some(When::Time { at: first, .. }) = &facts.first_in_window else {
        panic!("{facts:?}");
    };
    // Mondays from 2 Nov 2026: the one in the window is 7 Dec.
    assert_eq!(*first, at("2026-12-07T08:00:00Z"));
    assert!(facts.meets(window.0, window.1));
    // A window before the series starts has no occurrence.
    let before = (at("2026-10-01T00:00:00Z"), at("2026-10-08T00:00:00Z"));
    assert!(!EventFacts::parse_in(&bytes, Some(before)).meets(before.0, before.1));
}

#[test]
fn guests_and_the_organizer_are_counted() {
    let facts = EventFacts::parse(&cal(
        "BEGIN:VEVENT\r\nUID:m\r\nDTSTART:20261208T100000Z\r\nSUMMARY:Review\r\nORGANIZER:mailto:owner@example.org\r\nATTENDEE:mailto:a@example.org\r\nATTENDEE:mailto:b@example.org\r\nATTENDEE:mailto:c@example.org\r\nEND:VEVENT\r\n",
    ));
    assert_eq!(facts.organizer.as_deref(), Some("owner@example.org"));
    assert_eq!(facts.attendees, 3);
}

#[test]
fn what_cannot_be_read_is_an_unreadable_event() {
    for bytes in [
        b"\xff\xfe not text".to_vec(),
        b"hello".to_vec(),
        cal("BEGIN:VTODO\r\nUID:t\r\nSUMMARY:Todo\r\nEND:VTODO\r\n"),
        cal("BEGIN:VEVENT\r\nUID:x\r\nSUMMARY:No start\r\nEND:VEVENT\r\n"),
    ] {
        let facts = EventFacts::parse(&bytes);
        assert!(facts.unreadable, "{bytes:?}");
        assert_eq!(facts.summary, "(unreadable event)");
        assert!(facts.meets(at("2000-01-01T00:00:00Z"), at("2000-01-02T00:00:00Z")));
    }
}

#[test]
fn durations_follow_rfc_5545() {
    assert_eq!(parse_duration("PT1H30M"), Some(Duration::minutes(90)));
    assert_eq!(parse_duration("P1W"), Some(Duration::weeks(1)));
    assert_eq!(parse_duration("P1DT2H"), Some(Duration::hours(26)));
    assert_eq!(parse_duration("-PT15M"), Some(Duration::minutes(-15)));
    assert_eq!(parse_duration("P1H"), None);
    assert_eq!(parse_duration("1H"), None);
}
