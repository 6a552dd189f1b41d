//! `delete_events` and `restore_events` as the approvals core calls them: the precondition
//! check pins the version the owner saw and the delete is conditional on exactly it; the kept
//! copy comes back byte for byte, once, never over an event that exists now, and never as a
//! second copy of a UID that lives elsewhere.

use std::path::Path;

use iris_calendar::{AccountConfig, CalendarPlugin};
use iris_core::plugin::{CallContext, Plugin};
use iris_store::Store;
use serde_json::{json, Value};

const ONE: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:one\r\nDTSTART:20261208T100000Z\r\nSUMMARY:One\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
const TWO: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:two\r\nDTSTART:20261209T100000Z\r\nSUMMARY:Two\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
// Bytes that are not UTF-8: listed as unreadable, deletable, and restored exactly.
const BROKEN: &[u8] = b"BEGIN:VCALENDAR\r\nSUMMARY:\xff\xfe\r\n";

async fn plugin(folder: &Path) -> (CalendarPlugin, Store) {
    let store = Store::connect("sqlite::memory:").await.unwrap();
    let plugin = CalendarPlugin::new(
        vec![AccountConfig {
            name: "personal".into(),
            folder: Some(folder.to_path_buf()),
            url: None,
            username: None,
            password_env: None,
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
        request: "delete them".into(),
    }
}

async fn ids(plugin: &CalendarPlugin) -> Vec<(String, String)> {
    let args = json!({"from": "2000-01-01", "to": "2100-01-01"});
    let out = plugin
        .execute("list_events", &args, &ctx("r0"))
        .await
        .unwrap();
    out.result["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["summary"].as_str().unwrap().to_string(),
                e["id"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn id_of(ids: &[(String, String)], summary: &str) -> String {
    ids.iter().find(|(s, _)| s == summary).unwrap().1.clone()
}

/// What the core does for an approved call: describe (the card), check each precondition just
/// before, then execute with the stale ones left out.
async fn approve(
    plugin: &CalendarPlugin,
    run: &str,
    args: &Value,
    between: impl FnOnce(),
) -> Value {
    let card = plugin
        .describe("delete_events", args, &ctx(run))
        .await
        .unwrap();
    let mut stale = Vec::new();
    for (item, pre) in card.items.iter().zip(&card.preconditions) {
        if !plugin
            .check_precondition("delete_events", item, pre, &ctx(run))
            .await
        {
            stale.push(item.clone());
        }
    }
    between();
    let out = plugin
        .execute_held("delete_events", args, &stale, &ctx(run), None)
        .await
        .unwrap();
    json!({"result": out.result, "items": out.items.iter().map(|i| json!({"item": i.item, "outcome": i.outcome})).collect::<Vec<_>>(), "stale": stale})
}

#[tokio::test]
async fn an_event_changed_after_the_check_is_left_alone_and_the_rest_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("one.ics"), ONE).unwrap();
    std::fs::write(dir.path().join("two.ics"), TWO).unwrap();
    let (plugin, _store) = plugin(dir.path()).await;
    let listed = ids(&plugin).await;
    let args = json!({"ids": [id_of(&listed, "One"), id_of(&listed, "Two")]});
    let two = dir.path().join("two.ics");
    let ran = approve(&plugin, "r1", &args, || {
        // The owner's calendar app edits Two after IRIS checked it, before the delete.
        std::fs::write(&two, TWO.replace("SUMMARY:Two", "SUMMARY:Two (moved)")).unwrap();
    })
    .await;
    assert_eq!(ran["result"]["deleted"], 1, "{ran}");
    assert_eq!(ran["items"][1]["outcome"]["status"], "changed", "{ran}");
    assert_eq!(
        ran["items"][1]["outcome"]["message"],
        "changed since you saw it, not deleted"
    );
    assert!(!dir.path().join("one.ics").exists());
    assert!(std::fs::read_to_string(&two)
        .unwrap()
        .contains("Two (moved)"));
}

#[tokio::test]
async fn without_a_confirmed_version_nothing_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("one.ics"), ONE).unwrap();
    let (plugin, _store) = plugin(dir.path()).await;
    let listed = ids(&plugin).await;
    let args = json!({"ids": [id_of(&listed, "One")]});
    // Executed without the core's precondition check (a bug or a forged call): fail closed.
    let out = plugin
        .execute_held("delete_events", &args, &[], &ctx("r2"), None)
        .await
        .unwrap();
    assert_eq!(out.result["deleted"], 0);
    assert_eq!(out.items[0].outcome["status"], "changed");
    assert!(dir.path().join("one.ics").exists());
}

#[tokio::test]
async fn undo_puts_the_exact_bytes_back_once_and_never_over_a_newer_event() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("one.ics"), ONE).unwrap();
    std::fs::write(dir.path().join("two.ics"), TWO).unwrap();
    std::fs::write(dir.path().join("broken.ics"), BROKEN).unwrap();
    let (plugin, _store) = plugin(dir.path()).await;
    let listed = ids(&plugin).await;
    assert!(
        listed.iter().any(|(s, _)| s == "(unreadable event)"),
        "{listed:?}"
    );
    let args = json!({"ids": listed.iter().map(|(_, id)| id.clone()).collect::<Vec<_>>()});
    let ran = approve(&plugin, "r3", &args, || {}).await;
    assert_eq!(ran["result"]["deleted"], 3, "{ran}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    // A new "two.ics" took the place; a new event with UID "one" lives under another name.
    std::fs::write(dir.path().join("two.ics"), "a newer event").unwrap();
    std::fs::write(dir.path().join("one-again.ics"), ONE).unwrap();

    let undo = plugin
        .execute_held("restore_events", &json!({}), &[], &ctx("r4"), None)
        .await
        .unwrap();
    assert_eq!(undo.result["restored"], 1, "{}", undo.result);
    assert_eq!(
        std::fs::read(dir.path().join("broken.ics")).unwrap(),
        BROKEN
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("two.ics")).unwrap(),
        "a newer event",
        "never written over"
    );
    assert!(
        !dir.path().join("one.ics").exists(),
        "no second copy of UID one"
    );
    let reasons = undo.result["not_restored"].to_string();
    assert!(reasons.contains("same UID"), "{reasons}");
    assert!(reasons.contains("never writes over"), "{reasons}");

    // What was not restored can be once its place is free; then the batch is done, and a
    // third "undo that" restores nothing and says so.
    std::fs::remove_file(dir.path().join("two.ics")).unwrap();
    std::fs::remove_file(dir.path().join("one-again.ics")).unwrap();
    let retry = plugin
        .execute_held("restore_events", &json!({}), &[], &ctx("r5"), None)
        .await
        .unwrap();
    assert_eq!(retry.result["restored"], 2, "{}", retry.result);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("one.ics")).unwrap(),
        ONE
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("two.ics")).unwrap(),
        TWO
    );
    let done = plugin
        .execute_held("restore_events", &json!({}), &[], &ctx("r6"), None)
        .await
        .unwrap_err();
    assert!(done.to_string().contains("restored already"), "{done}");
}
