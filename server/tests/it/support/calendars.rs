//! A calendar for the surface tests: a local vdir folder (the calendar plugin's folder backend)
//! with one event, and the script that asks for its deletion, so a calendar card reaches the
//! web, the CLI, Telegram, push and passkeys through the same words.

/// Asks to delete the events matching `$1` between 2026 and 2028 ("delete dentist").
pub const DELETE_SCRIPT: &str = r#"
rules:
  - when: "(?i)delete (.+)"
    steps:
      - call: list_events
        args: {from: "2026-01-01", to: "2028-01-01", query: "$1"}
      - call: delete_events
        args: {ids: "$ids"}
        if_empty: "No such event; nothing was deleted."
      - reply: "Deleted {deleted} events."
        on_rejected: "OK, I left them alone."
fallback: "?"
"#;

/// A calendar folder `home` (display name "Home") holding `event.ics`: one event on Tuesday
/// 8 Dec 2026, 10:00–11:00 Europe/Berlin, summarised `summary`.
pub fn one_event(summary: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::write(home.join("displayname"), "Home\n").unwrap();
    let ics = format!(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:one-event\r\n\
         DTSTAMP:20261101T000000Z\r\nDTSTART;TZID=Europe/Berlin:20261208T100000\r\n\
         DTEND;TZID=Europe/Berlin:20261208T110000\r\nSUMMARY:{summary}\r\nEND:VEVENT\r\n\
         END:VCALENDAR\r\n"
    );
    std::fs::write(home.join("event.ics"), ics).unwrap();
    dir
}

/// Whether the event of [`one_event`] is still in `folder`.
pub fn still_there(folder: &std::path::Path) -> bool {
    folder.join("home/event.ics").exists()
}
