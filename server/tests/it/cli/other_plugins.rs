//! The terminal answers the other plugins' cards as it answers mail's: `iris approvals show`
//! prints a files card's lines as the disk gave them (path, size, time, root) and its undo
//! sentence, and `iris approvals approve --yes` runs exactly that call once: the file moves to
//! its root's quarantine, the calendar event's file is gone.

use crate::support;

use iris_core::ports::Scope;
use support::{ModelServer, TestApp};

use super::{exit, halt, iris};

const SCRIPT: &str = r#"
rules:
  - when: "(?i)clean up (.+)"
    steps:
      - call: list_files
        args: {root: downloads, glob: "$1"}
      - call: quarantine_files
        args: {paths: "$ids"}
      - reply: "{summary}"
  - when: "(?i)delete (.+)"
    steps:
      - call: list_events
        args: {from: "2000-01-01", to: "2100-01-01", query: "$1"}
      - call: delete_events
        args: {ids: "$ids"}
      - reply: "{summary}"
fallback: "?"
"#;

const EVENT: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:dentist-1\r\nDTSTAMP:20261101T000000Z\r\nDTSTART;TZID=Europe/Berlin:20261208T100000\r\nDTEND;TZID=Europe/Berlin:20261208T110000\r\nSUMMARY:Dentist\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

// Needs a process: the CLI; the server it talks to runs in process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_and_calendar_cards_are_shown_and_approved_from_the_terminal() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("logs")).unwrap();
    std::fs::write(root.path().join("logs/old.log"), b"old lines\n").unwrap();
    let calendar = tempfile::tempdir().unwrap();
    std::fs::write(calendar.path().join("dentist.ics"), EVENT).unwrap();
    let model = ModelServer::start(SCRIPT).await;
    let server = TestApp::with_model(&model)
        .files_root("downloads", root.path())
        .calendar_folder("personal", calendar.path())
        .background()
        .start()
        .await;
    let laptop = server.add_device("laptop", Scope::Control).await;
    let client = server.client().await;
    let url = client.url.clone();

    let card = halt(&client, &laptop, "clean up logs/*.log").await;
    let show = iris(&url, Some(&laptop), &["approvals", "show", &card.id]).await;
    assert_eq!(show.code, exit::DONE, "{show}");
    assert!(show.stdout.contains("Move 1 file to quarantine"), "{show}");
    assert!(
        show.stdout.contains("logs/old.log — 10 bytes, modified "),
        "{show}"
    );
    assert!(show.stdout.contains("Nothing is deleted"), "{show}");
    let approve = iris(
        &url,
        Some(&laptop),
        &["approvals", "approve", &card.id, "--yes"],
    )
    .await;
    assert_eq!(approve.code, exit::DONE, "{approve}");
    client.wait_execution(&card.id, &laptop, "executed").await;
    assert!(!root.path().join("logs/old.log").exists());
    assert!(root.path().join(".iris-quarantine").is_dir());

    let card = halt(&client, &laptop, "delete dentist").await;
    let show = iris(&url, Some(&laptop), &["approvals", "show", &card.id]).await;
    assert!(
        show.stdout
            .contains("Dentist — Tue 8 Dec 2026, 10:00–11:00 (Europe/Berlin)"),
        "{show}"
    );
    let approve = iris(
        &url,
        Some(&laptop),
        &["approvals", "approve", &card.id, "--yes"],
    )
    .await;
    assert_eq!(approve.code, exit::DONE, "{approve}");
    client.wait_execution(&card.id, &laptop, "executed").await;
    assert!(!calendar.path().join("dentist.ics").exists());
}
