//! After a crash the call is `unknown`; `locate` tells the card where each entry is now, by the
//! inode its card pinned, and builds the undo for exactly those in quarantine.

use iris_core::plugin::Plugin;
use serde_json::{json, Value};

use super::{ctx, plugin, write};

#[tokio::test]
async fn each_entry_is_found_by_its_pinned_inode_and_only_those_in_quarantine_are_undone() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a", "b", "c", "d"] {
        write(dir.path(), &format!("logs/{name}.log"), name.as_bytes());
    }
    let p = plugin(dir.path()).await;
    let tool = "quarantine_files";
    let args = p
        .normalise(
            tool,
            json!({"paths": ["downloads/logs/a.log", "downloads/logs/b.log", "downloads/logs/c.log", "downloads/logs/d.log"]}),
            &ctx("run-1"),
        )
        .await
        .unwrap();
    let card = serde_json::to_value(p.describe(tool, &args, &ctx("run-1")).await.unwrap()).unwrap();
    let items: Vec<String> = serde_json::from_value(card["items"].clone()).unwrap();
    let pins: Vec<Value> = serde_json::from_value(card["preconditions"].clone()).unwrap();
    // c changes in place (same inode), d is replaced by another file (a new inode): both are
    // left alone; a and b move.
    write(dir.path(), "logs/c.log", b"c, changed");
    // (Written beside it and renamed over it, so the new file cannot reuse the old inode.)
    write(dir.path(), "logs/d.new", b"another d");
    std::fs::rename(dir.path().join("logs/d.new"), dir.path().join("logs/d.log")).unwrap();
    let mut stale = Vec::new();
    for (item, pin) in items.iter().zip(&pins) {
        if !p.check_precondition(tool, item, pin, &ctx("run-1")).await {
            stale.push(item.clone());
        }
    }
    assert_eq!(stale, ["downloads/logs/c.log", "downloads/logs/d.log"]);
    let out = p
        .execute_held(tool, &args, &stale, &ctx("run-1"), None)
        .await
        .unwrap();
    assert_eq!(out.result["moved"], 2, "{}", out.result);
    // Someone empties b's place in the quarantine by hand.
    let b_in_quarantine = out
        .items
        .iter()
        .find(|o| o.item == "downloads/logs/b.log")
        .map(|o| o.outcome["to"].as_str().unwrap().to_string())
        .unwrap();
    std::fs::remove_file(
        dir.path()
            .join(b_in_quarantine.trim_start_matches("downloads/")),
    )
    .unwrap();

    let found = p
        .locate(tool, &args, &items, &pins)
        .await
        .expect("files can tell");
    let places: Vec<(&str, &str)> = found
        .items
        .iter()
        .map(|o| (o.item.as_str(), o.outcome["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        places,
        [
            ("downloads/logs/a.log", "quarantined"),
            ("downloads/logs/b.log", "unknown"),
            ("downloads/logs/c.log", "not_moved"),
            ("downloads/logs/d.log", "unknown"),
        ]
    );
    let said = |item: &str| {
        found.items.iter().find(|o| o.item == item).unwrap().outcome["message"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(said("downloads/logs/a.log").starts_with("in quarantine: .iris-quarantine/"));
    assert!(
        said("downloads/logs/b.log").contains("no longer in quarantine"),
        "{}",
        said("downloads/logs/b.log")
    );
    assert!(
        said("downloads/logs/d.log").starts_with("something else is at its path now"),
        "{}",
        said("downloads/logs/d.log")
    );
    assert_eq!(
        found.result["summary"],
        "1 in quarantine, 1 still at its path, 2 found in neither place."
    );
    // The undo restores exactly what is in quarantine.
    let undo = p.undo_call(tool, &found.items).expect("a is in quarantine");
    assert_eq!(undo.items, ["downloads/logs/a.log"]);
    assert_eq!(undo.action.as_deref(), Some("Restore 1 file"));
    // Nothing was changed by looking.
    assert_eq!(
        std::fs::read(dir.path().join("logs/c.log")).unwrap(),
        b"c, changed"
    );
    assert_eq!(
        std::fs::read(dir.path().join("logs/d.log")).unwrap(),
        b"another d"
    );
    assert!(!dir.path().join("logs/a.log").exists());
    // The other tools cannot tell.
    assert!(p
        .locate("restore_files", &json!({}), &[], &[])
        .await
        .is_none());
}
