//! The calendar plugin through the whole server, on a real vdir folder: a `delete_events` card
//! is made from the calendar itself (never the model's words), approving deletes exactly the
//! pinned events once, an event changed after the card is left alone ("changed since you saw
//! it"), and "undo that" puts the deleted files back byte for byte, once; approving one of
//! two events deletes only it, and the card's undo puts it back.

use crate::support;

use std::path::Path;

use iris_core::ports::Scope;
use reqwest::StatusCode;
use serde_json::json;
use support::{eventually, Client, ModelServer, TestApp};

const SCRIPT: &str = r#"
rules:
  - when: "(?i)undo"
    steps:
      - call: restore_events
        args: {}
      - reply: "Put {restored} events back."
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

const DENTIST: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:dentist-1\r\nDTSTAMP:20261101T000000Z\r\nDTSTART;TZID=Europe/Berlin:20261208T100000\r\nDTEND;TZID=Europe/Berlin:20261208T110000\r\nSUMMARY:Dentist\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
const DENTIST_FOLLOW_UP: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:dentist-2\r\nDTSTAMP:20261101T000000Z\r\nDTSTART;VALUE=DATE:20261215\r\nDTEND;VALUE=DATE:20261216\r\nSUMMARY:Dentist follow-up\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
const STANDUP: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:standup\r\nDTSTAMP:20261101T000000Z\r\nDTSTART:20261102T080000Z\r\nDTEND:20261102T081500Z\r\nRRULE:FREQ=WEEKLY\r\nSUMMARY:Standup\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

/// A calendar folder `home` (display name "Home") with three events.
fn calendar() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::write(home.join("displayname"), "Home\n").unwrap();
    for (file, text) in [
        ("dentist.ics", DENTIST),
        ("dentist-follow-up.ics", DENTIST_FOLLOW_UP),
        ("standup.ics", STANDUP),
    ] {
        std::fs::write(home.join(file), text).unwrap();
    }
    dir
}

fn files(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder.join("home"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

async fn reply_containing(client: &Client, conversation: &str, token: &str, words: &str) -> String {
    eventually(words, || {
        let (c, t) = (conversation.to_string(), token.to_string());
        async move {
            let r = client.last_reply(&c, &t).await;
            r.contains(words).then_some(r)
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_card_comes_from_the_calendar_and_undo_puts_the_files_back() {
    let folder = calendar();
    let model = ModelServer::start(SCRIPT).await;
    let server = TestApp::with_model(&model)
        .calendar_folder("personal", folder.path())
        .background()
        .start()
        .await;
    let control = server.add_device("phone", Scope::Control).await;
    let client = server.client().await;
    let before = files(folder.path());

    let (s, halted) = client
        .post(
            "/api/chat",
            Some(&control),
            json!({"message": "delete dentist"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{halted}");
    assert_eq!(halted["status"], "awaiting_approval", "{halted}");
    assert_eq!(
        files(folder.path()),
        before,
        "a halted call deleted something"
    );
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let conversation = halted["conversation_id"].as_str().unwrap().to_string();

    let row = client
        .get(&format!("/governance/approvals/{id}"), &control)
        .await;
    assert_eq!(row["tool"], "delete_events");
    assert_eq!(row["kind"], "destructive");
    assert_eq!(row["card"]["action"], "Delete 2 events");
    assert_eq!(
        row["card"]["lines"],
        json!([
            "Dentist — Tue 8 Dec 2026, 10:00–11:00 (Europe/Berlin) · Home",
            "Dentist follow-up — Tue 15 Dec 2026 (all day) · Home",
        ]),
        "{row}"
    );
    assert_eq!(row["card"]["undo_tool"], "restore_events");
    assert_eq!(row["card"]["undo_window_days"], 30);
    let items: Vec<String> = serde_json::from_value(row["items"].clone()).unwrap();
    assert_eq!(items.len(), 2);

    // The follow-up changes after the card: it is left alone, the dentist goes.
    let changed = DENTIST_FOLLOW_UP.replace("SUMMARY:Dentist follow-up", "SUMMARY:Dentist (moved)");
    std::fs::write(folder.path().join("home/dentist-follow-up.ics"), &changed).unwrap();

    let (s, body) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&control),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    client.wait_execution(&id, &control, "executed").await;
    assert_eq!(
        files(folder.path()),
        ["dentist-follow-up.ics", "displayname", "standup.ics"],
        "exactly the unchanged pinned event was deleted"
    );
    assert_eq!(
        std::fs::read_to_string(folder.path().join("home/dentist-follow-up.ics")).unwrap(),
        changed,
        "the changed event is as the owner's calendar app left it"
    );
    let audit = client
        .get(&format!("/api/audit?approval_id={id}"), &control)
        .await;
    let text = audit.to_string();
    assert!(text.contains("it changed since you saw it"), "{audit}");
    reply_containing(&client, &conversation, &control, "Deleted 1 events").await;

    // "undo that": the deleted file comes back byte for byte, once.
    let (s, undone) = client
        .post(
            "/api/chat",
            Some(&control),
            json!({"message": "undo that", "conversation_id": conversation}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{undone}");
    reply_containing(&client, &conversation, &control, "Put 1 events back").await;
    assert_eq!(
        std::fs::read_to_string(folder.path().join("home/dentist.ics")).unwrap(),
        DENTIST
    );
    let (_, again) = client
        .post(
            "/api/chat",
            Some(&control),
            json!({"message": "undo that", "conversation_id": conversation}),
        )
        .await;
    assert_eq!(again["status"], "done", "{again}");
    assert!(
        again["reply"]
            .as_str()
            .unwrap()
            .contains("restored already"),
        "a batch is restored once: {again}"
    );
    assert_eq!(
        files(folder.path()),
        [
            "dentist-follow-up.ics",
            "dentist.ics",
            "displayname",
            "standup.ics"
        ]
    );
}

/// Approving one of the two dentist events (docs/adr/0122-shaping-a-call.md): only it is
/// deleted, once; the other stays byte for byte; the card's undo puts exactly that one back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_one_of_two_events_deletes_only_it_and_the_undo_puts_it_back() {
    let folder = calendar();
    let model = ModelServer::start(SCRIPT).await;
    let server = TestApp::with_model(&model)
        .calendar_folder("personal", folder.path())
        .background()
        .start()
        .await;
    let control = server.add_device("phone", Scope::Control).await;
    let client = server.client().await;
    let before = files(folder.path());
    let (s, halted) = client
        .post(
            "/api/chat",
            Some(&control),
            json!({"message": "delete dentist"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{halted}");
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let path = format!("/governance/approvals/{id}");
    let row = client.get(&path, &control).await;
    assert_eq!(row["card"]["items_arg"], "ids", "{row}");
    // Line 0 is "Dentist", line 1 "Dentist follow-up": keep the follow-up only.
    let (s, body) = client
        .post(
            &format!("{path}/respond"),
            Some(&control),
            json!({"decision": "approve", "items": [1]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    client.wait_execution(&id, &control, "executed").await;
    assert_eq!(
        files(folder.path()),
        ["dentist.ics", "displayname", "standup.ics"],
        "only the follow-up is deleted"
    );
    assert_eq!(
        std::fs::read_to_string(folder.path().join("home/dentist.ics")).unwrap(),
        DENTIST,
        "the event left out is untouched"
    );
    let row = client.get(&path, &control).await;
    assert_eq!(row["approved_items"], json!([1]), "{row}");

    let (s, body) = client
        .post(&format!("{path}/undo"), Some(&control), json!({}))
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(files(folder.path()), before);
    assert_eq!(
        std::fs::read_to_string(folder.path().join("home/dentist-follow-up.ics")).unwrap(),
        DENTIST_FOLLOW_UP,
        "put back byte for byte"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_events_shows_a_series_once_at_its_first_occurrence_in_the_window() {
    let folder = calendar();
    let model = ModelServer::start(SCRIPT).await;
    let server = TestApp::with_model(&model)
        .calendar_folder("personal", folder.path())
        .start()
        .await;
    let plugin = iris_calendar::CalendarPlugin::new(
        vec![iris_calendar::AccountConfig {
            name: "personal".into(),
            folder: Some(folder.path().to_path_buf()),
            url: None,
            username: None,
            password_env: None,
        }],
        &server.state.store,
    )
    .unwrap();
    let ctx = iris_core::plugin::CallContext::default();
    use iris_core::plugin::Plugin;
    let args = plugin
        .normalise(
            "list_events",
            json!({"from": "2026-12-07", "to": "2026-12-14"}),
            &ctx,
        )
        .await
        .unwrap();
    let out = plugin.execute("list_events", &args, &ctx).await.unwrap();
    let events = out.result["events"].as_array().unwrap();
    assert_eq!(out.result["total"], 2, "{}", out.result);
    assert_eq!(events[0]["summary"], "Standup");
    assert_eq!(events[0]["start"], "2026-12-07T08:00:00Z");
    assert_eq!(events[0]["recurring"], true);
    assert_eq!(events[1]["summary"], "Dentist");
    assert_eq!(events[1]["calendar"], "Home");
    // Asking for a calendar nobody has names the ones there are.
    let err = plugin
        .normalise(
            "list_events",
            json!({"from": "2026-12-07", "to": "2026-12-14", "calendar": "Work"}),
            &ctx,
        )
        .await
        .unwrap();
    let err = plugin.execute("list_events", &err, &ctx).await.unwrap_err();
    assert!(err.to_string().contains("calendars: Home"), "{err}");
}

/// kill -9 between an event's delete and the mark on its kept copy: after the restart the call
/// is `unknown` and never sent again, the card says the event is deleted with a copy kept, and
/// the card's undo puts it back byte for byte, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_the_delete_the_card_says_so_and_its_undo_puts_the_event_back() {
    let folder = support::calendars::one_event("Dentist");
    let event = folder.path().join("home/event.ics");
    let bytes = std::fs::read(&event).unwrap();
    let model = ModelServer::start(support::calendars::DELETE_SCRIPT).await;
    let world = support::World::new(&model.base_url);
    std::fs::write(
        world.dir.path().join("iris.toml"),
        format!(
            "[[calendar.accounts]]\nname = \"personal\"\nfolder = \"{}\"\n",
            folder.path().display()
        ),
    )
    .unwrap();
    let token = world.add_device("phone", "control");
    let failpoint = iris_calendar::tools::delete_events::FAILPOINT_AFTER_DELETE;
    let (id, _) =
        support::crash::approve_until_killed(&world, &token, "delete dentist", failpoint).await;
    assert!(!event.exists(), "the delete went through before the crash");

    let (server, row) = support::crash::restarted_until_located(&world, &token, &id).await;
    assert_eq!(row["located"]["items"][0]["status"], "deleted", "{row}");
    assert_eq!(
        row["located"]["summary"], "1 deleted (a copy kept).",
        "{row}"
    );
    assert_eq!(row["located"]["undo_action"], "Restore 1 event", "{row}");
    assert!(!event.exists(), "never sent again");

    let (status, undone) = support::crash::undo(&server, &token, &id).await;
    assert_eq!(status, StatusCode::OK, "{undone}");
    assert_eq!(undone["approval"]["undo"]["state"], "done", "{undone}");
    assert_eq!(std::fs::read(&event).unwrap(), bytes, "back byte for byte");
    let (again, _) = support::crash::undo(&server, &token, &id).await;
    assert_eq!(again, StatusCode::CONFLICT, "undone once");
    drop(server);
}
