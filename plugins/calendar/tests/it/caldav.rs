//! The calendar plugin against two real CalDAV servers (Radicale and Xandikos, started on
//! loopback by [`super::servers`]): the same scenario on each. The card is read from the
//! server; the delete is `DELETE` with `If-Match` on the version the card pinned, so an event
//! another client changed in between is left alone (the server's 412); what was deleted comes
//! back with `PUT If-None-Match: *`, byte for byte as the server had it, once.

use iris_calendar::{AccountConfig, CalendarPlugin};
use iris_core::plugin::{CallContext, Plugin};
use iris_store::Store;
use serde_json::{json, Value};

use super::servers::{radicale, xandikos, CaldavServer, PASSWORD_ENV};

const DENTIST: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:dentist-1\r\nDTSTAMP:20261101T000000Z\r\nDTSTART;TZID=Europe/Berlin:20261208T100000\r\nDTEND;TZID=Europe/Berlin:20261208T110000\r\nSUMMARY:Zahnarzt Müller\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
const STANDUP: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:standup-1\r\nDTSTAMP:20261101T000000Z\r\nDTSTART:20261102T080000Z\r\nDTEND:20261102T081500Z\r\nRRULE:FREQ=WEEKLY\r\nSUMMARY:Standup\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

async fn plugin_for(server: &CaldavServer) -> (CalendarPlugin, Store) {
    let store = Store::connect("sqlite::memory:").await.unwrap();
    let plugin = CalendarPlugin::new(
        vec![AccountConfig {
            name: "personal".into(),
            folder: None,
            url: Some(server.home.clone()),
            username: server.username.clone(),
            password_env: server.username.as_ref().map(|_| PASSWORD_ENV.to_string()),
        }],
        &store,
    )
    .unwrap();
    (plugin, store)
}

fn ctx(run: &str) -> CallContext {
    CallContext {
        run_id: run.into(),
        conversation_id: "c1".into(),
        request: "delete the dentist".into(),
    }
}

async fn list(plugin: &CalendarPlugin) -> Value {
    let args = plugin
        .normalise(
            "list_events",
            json!({"from": "2026-12-07", "to": "2026-12-14"}),
            &ctx("r0"),
        )
        .await
        .unwrap();
    plugin
        .execute("list_events", &args, &ctx("r0"))
        .await
        .unwrap()
        .result
}

async fn scenario(server: CaldavServer) {
    let kind = server.kind;
    server.put("dentist.ics", DENTIST).await;
    server.put("standup.ics", STANDUP).await;
    let (plugin, _store) = plugin_for(&server).await;

    let listed = list(&plugin).await;
    assert_eq!(listed["total"], 2, "{kind}: {listed}");
    let events = listed["events"].as_array().unwrap();
    assert_eq!(events[0]["summary"], "Standup", "{kind}");
    assert_eq!(events[0]["start"], "2026-12-07T08:00:00Z", "{kind}");
    assert_eq!(events[1]["summary"], "Zahnarzt Müller", "{kind}");
    let dentist = events[1]["id"].as_str().unwrap().to_string();
    let args = json!({"ids": [dentist]});

    // The card is the server's event.
    let card = plugin
        .describe("delete_events", &args, &ctx("r1"))
        .await
        .unwrap();
    assert!(
        card.lines[0]
            .starts_with("Zahnarzt Müller — Tue 8 Dec 2026, 10:00–11:00 (Europe/Berlin) · "),
        "{kind}: {:?}",
        card.lines
    );

    // Checked, then changed by another client before the delete: the server refuses (412).
    assert!(
        plugin
            .check_precondition(
                "delete_events",
                &dentist,
                &card.preconditions[0],
                &ctx("r1")
            )
            .await,
        "{kind}"
    );
    let moved = DENTIST
        .replace("T100000", "T120000")
        .replace("T110000", "T130000");
    server.put("dentist.ics", &moved).await;
    let out = plugin
        .execute_held("delete_events", &args, &[], &ctx("r1"), None)
        .await
        .unwrap();
    assert_eq!(out.result["deleted"], 0, "{kind}: {}", out.result);
    assert_eq!(out.items[0].outcome["status"], "changed", "{kind}");
    assert!(
        server.get("dentist.ics").await.unwrap().contains("T120000"),
        "{kind}"
    );

    // A new card on the new version: deleted, once.
    let card = plugin
        .describe("delete_events", &args, &ctx("r2"))
        .await
        .unwrap();
    assert!(
        card.lines[0].contains("12:00–13:00"),
        "{kind}: {:?}",
        card.lines
    );
    let before = server.get("dentist.ics").await.unwrap();
    assert!(
        plugin
            .check_precondition(
                "delete_events",
                &dentist,
                &card.preconditions[0],
                &ctx("r2")
            )
            .await
    );
    let out = plugin
        .execute_held("delete_events", &args, &[], &ctx("r2"), None)
        .await
        .unwrap();
    assert_eq!(out.result["deleted"], 1, "{kind}: {}", out.result);
    assert_eq!(server.get("dentist.ics").await, None, "{kind}");
    // The version the card pinned is gone: a second check says so (the core never runs twice).
    assert!(
        !plugin
            .check_precondition(
                "delete_events",
                &dentist,
                &card.preconditions[0],
                &ctx("r3")
            )
            .await
    );

    // "Undo that": the server gets the same bytes back, never over something new.
    let undo = plugin
        .execute_held("restore_events", &json!({}), &[], &ctx("r4"), None)
        .await
        .unwrap();
    assert_eq!(undo.result["restored"], 1, "{kind}: {}", undo.result);
    assert_eq!(server.get("dentist.ics").await.unwrap(), before, "{kind}");
    let again = plugin
        .execute_held("restore_events", &json!({}), &[], &ctx("r5"), None)
        .await
        .unwrap_err();
    assert!(
        again.to_string().contains("restored already"),
        "{kind}: {again}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn radicale_deletes_the_pinned_version_once_and_restores_it() {
    scenario(radicale().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xandikos_deletes_the_pinned_version_once_and_restores_it() {
    scenario(xandikos().await).await;
}

#[tokio::test]
async fn a_password_never_goes_over_plain_http_to_another_machine() {
    std::env::set_var("IRIS_TEST_CALDAV_ELSEWHERE", "secret");
    let store = Store::connect("sqlite::memory:").await.unwrap();
    let account = |url: &str| AccountConfig {
        name: "remote".into(),
        folder: None,
        url: Some(url.into()),
        username: Some("alice".into()),
        password_env: Some("IRIS_TEST_CALDAV_ELSEWHERE".into()),
    };
    let refused = CalendarPlugin::new(vec![account("http://calendar.example.org/alice/")], &store)
        .unwrap_err();
    assert!(refused.to_string().contains("plain text"), "{refused}");
    for fine in [
        "https://calendar.example.org/alice/",
        "http://127.0.0.1:5232/alice/",
    ] {
        assert!(
            CalendarPlugin::new(vec![account(fine)], &store).is_ok(),
            "{fine}"
        );
    }
    let unset = CalendarPlugin::new(
        vec![AccountConfig {
            password_env: Some("IRIS_TEST_CALDAV_UNSET".into()),
            ..account("https://calendar.example.org/")
        }],
        &store,
    )
    .unwrap_err();
    assert!(unset.to_string().contains("not set"), "{unset}");
}

const OFFSITE: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:offsite-1\r\nDTSTAMP:20261101T000000Z\r\nDTSTART:20261209T090000Z\r\nDTEND:20261209T170000Z\r\nSUMMARY:Offsite\r\nORGANIZER:mailto:Owner@Example.org\r\nATTENDEE:mailto:anna@example.net\r\nATTENDEE:mailto:ben@example.com\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

/// The card line of the offsite the owner organizes, on `server`.
async fn offsite_line(server: &CaldavServer) -> String {
    server.put("offsite.ics", OFFSITE).await;
    let (plugin, _store) = plugin_for(server).await;
    let plugin = plugin.with_owner_addresses(["owner@example.org".to_string()]);
    let listed = list(&plugin).await;
    let id = listed["events"][0]["id"].as_str().unwrap().to_string();
    let card = plugin
        .describe("delete_events", &json!({"ids": [id]}), &ctx("r1"))
        .await
        .unwrap();
    card.lines[0].clone()
}

/// RFC 6638: Xandikos advertises `calendar-auto-schedule` (it tells the guests), Radicale does
/// not; the card says which, for an event the owner organizes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_card_says_whether_the_server_tells_the_guests_of_an_event_the_owner_organizes() {
    let line = offsite_line(&radicale().await).await;
    assert!(
        line.ends_with("; you organize, 2 guests: nobody tells them (this calendar server does not send cancellations)"),
        "{line}"
    );
    let line = offsite_line(&xandikos().await).await;
    assert!(
        line.ends_with("; you organize, 2 guests: the server tells them it is cancelled"),
        "{line}"
    );
}
