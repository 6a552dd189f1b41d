//! The plugin's rules on real folders the tests create and a real SQLite database: each verb
//! through [`Plugin`], as the core calls it (normalise, describe, check the pins, execute).

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use iris_core::plugin::{CallContext, Plugin};
use iris_store::Store;
use serde_json::{json, Value};

use crate::{FilesPlugin, RootConfig};

mod locate;
mod mounts;

fn ctx(run: &str) -> CallContext {
    CallContext {
        run_id: run.into(),
        conversation_id: "conv-1".into(),
        request: "clean up".into(),
    }
}

pub(super) async fn plugin(dir: &Path) -> FilesPlugin {
    let store = Store::connect("sqlite::memory:").await.unwrap();
    FilesPlugin::new(
        vec![RootConfig {
            name: "downloads".into(),
            path: dir.to_path_buf(),
        }],
        &store,
    )
    .unwrap()
}

pub(super) fn write(dir: &Path, rel: &str, bytes: &[u8]) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// As the core runs an approved call: the card's pins checked, then the call with the stale
/// items left out.
pub(super) async fn approve(p: &FilesPlugin, tool: &str, args: Value, run: &str) -> (Value, Value) {
    let args = p.normalise(tool, args, &ctx(run)).await.unwrap();
    let card = p.describe(tool, &args, &ctx(run)).await.unwrap();
    let card = serde_json::to_value(card).unwrap();
    let mut stale = Vec::new();
    for (item, pin) in card["items"]
        .as_array()
        .unwrap()
        .iter()
        .zip(card["preconditions"].as_array().unwrap())
    {
        let item = item.as_str().unwrap();
        if !p.check_precondition(tool, item, pin, &ctx(run)).await {
            stale.push(item.to_string());
        }
    }
    let out = p
        .execute_held(tool, &args, &stale, &ctx(run), None)
        .await
        .unwrap();
    (card, out.result)
}

async fn card(p: &FilesPlugin, tool: &str, args: Value) -> Value {
    let args = p.normalise(tool, args, &ctx("r")).await.unwrap();
    serde_json::to_value(p.describe(tool, &args, &ctx("r")).await.unwrap()).unwrap()
}

#[tokio::test]
async fn list_matches_globs_ages_and_sizes_and_hides_the_quarantine() {
    let dir = tempfile::tempdir().unwrap();
    crate::demo::write_demo_folder(dir.path(), chrono::Utc::now()).unwrap();
    write(dir.path(), ".env", b"SECRET=1");
    std::fs::create_dir_all(dir.path().join(".iris-quarantine/old/logs")).unwrap();
    write(dir.path(), ".iris-quarantine/old/logs/x.log", b"x");
    let p = plugin(dir.path()).await;
    let list = |args: Value| {
        let p = &p;
        async move {
            p.execute("list_files", &args, &ctx("r"))
                .await
                .unwrap()
                .result
        }
    };
    let logs = list(json!({"root": "downloads", "glob": "**/*.log", "older_than_days": 30})).await;
    let ids: Vec<&str> = logs["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "downloads/logs/installer-error.log",
            "downloads/logs/sync-2026-08.log",
            "downloads/logs/sync-2026-09.log"
        ]
    );
    assert_eq!(logs["total"], 3);
    assert_eq!(logs["files"][0]["kind"], "file");
    // `*` does not cross folders.
    assert_eq!(
        list(json!({"root": "downloads", "glob": "*.log"})).await["total"],
        0
    );
    // Hidden entries only when the pattern names them; the quarantine never.
    let all = list(json!({"root": "downloads"})).await;
    let all_ids = all["files"].to_string();
    assert!(
        !all_ids.contains(".env") && !all_ids.contains("iris-quarantine"),
        "{all_ids}"
    );
    assert_eq!(
        list(json!({"root": "downloads", "glob": ".env"})).await["total"],
        1
    );
    assert_eq!(
        list(json!({"root": "downloads", "glob": "**/.iris-quarantine/**"})).await["total"],
        0
    );
    // A folder's size is what it holds.
    let reports = list(json!({"root": "downloads", "glob": "reports"})).await;
    assert_eq!(reports["files"][0]["kind"], "folder");
    assert_eq!(reports["files"][0]["size"], 14 * 900 + 17 * 20);
    let big = list(json!({"root": "downloads", "larger_than_mb": 0.2})).await;
    assert_eq!(big["files"][0]["id"], "downloads/holiday-photo.jpg");
    assert_eq!(big["total"], 1);
    // Bad arguments change nothing and name the rule.
    for bad in [
        json!({"root": "nope"}),
        json!({"root": "downloads", "glob": "a["}),
        json!({"root": "downloads", "older_than_days": -1}),
        json!({"root": "downloads", "extra": 1}),
        json!({"root": "downloads", "glob": "../**"}),
        json!({"root": "downloads", "glob": "/etc/*"}),
    ] {
        assert!(
            p.normalise("list_files", bad.clone(), &ctx("r"))
                .await
                .is_err(),
            "{bad}"
        );
    }
}

#[tokio::test]
async fn quarantine_moves_exactly_the_pinned_entries_and_restore_puts_them_back() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "logs/a.log", b"aaaa");
    write(dir.path(), "logs/b.log", b"bbbb");
    write(dir.path(), "old/x/1.txt", b"1");
    write(dir.path(), "old/2.txt", b"22");
    let p = plugin(dir.path()).await;
    let args = json!({"paths": ["downloads/logs/a.log", "downloads/old", "downloads/logs/b.log"]});
    let c = card(&p, "quarantine_files", args.clone()).await;
    assert_eq!(c["title"], "Move 3 entries to quarantine");
    let lines = c["lines"].as_array().unwrap();
    assert!(
        lines[0]
            .as_str()
            .unwrap()
            .starts_with("logs/a.log — 4 bytes, modified "),
        "{lines:?}"
    );
    assert!(
        lines[1]
            .as_str()
            .unwrap()
            .starts_with("old/ — folder, 3 items, 3 bytes"),
        "{lines:?}"
    );
    assert!(c["undo_note"].as_str().unwrap().contains("30 days"));

    // b.log changes after the card: only that line is left alone.
    let (_, out) = {
        let args = p
            .normalise("quarantine_files", args, &ctx("run-1"))
            .await
            .unwrap();
        let card = serde_json::to_value(
            p.describe("quarantine_files", &args, &ctx("run-1"))
                .await
                .unwrap(),
        )
        .unwrap();
        write(dir.path(), "logs/b.log", b"changed");
        let mut stale = Vec::new();
        for (item, pin) in card["items"]
            .as_array()
            .unwrap()
            .iter()
            .zip(card["preconditions"].as_array().unwrap())
        {
            if !p
                .check_precondition(
                    "quarantine_files",
                    item.as_str().unwrap(),
                    pin,
                    &ctx("run-1"),
                )
                .await
            {
                stale.push(item.as_str().unwrap().to_string());
            }
        }
        assert_eq!(stale, ["downloads/logs/b.log"]);
        let out = p
            .execute_held("quarantine_files", &args, &stale, &ctx("run-1"), None)
            .await
            .unwrap();
        (card, out.result)
    };
    assert_eq!(out["moved"], 2, "{out}");
    let batch = out["batch"].as_str().unwrap();
    assert!(!dir.path().join("logs/a.log").exists());
    assert!(!dir.path().join("old").exists());
    assert_eq!(
        std::fs::read(dir.path().join("logs/b.log")).unwrap(),
        b"changed"
    );
    let q = dir.path().join(".iris-quarantine").join(batch);
    assert_eq!(std::fs::read(q.join("logs/a.log")).unwrap(), b"aaaa");
    assert_eq!(std::fs::read(q.join("old/x/1.txt")).unwrap(), b"1");

    // The quarantine lists them; the Plugins page counts them.
    let listed = p
        .execute("list_quarantine", &json!({"root": "downloads"}), &ctx("r"))
        .await
        .unwrap()
        .result;
    assert_eq!(listed["total"], 2, "{listed}");
    assert_eq!(listed["bytes"], 7);
    let sizes = p.quarantine_sizes().await.unwrap();
    assert_eq!((sizes[0].entries, sizes[0].bytes), (2, 7));

    // "Undo that": the last batch of this conversation, once; the folder that vanished comes back.
    std::fs::remove_dir(dir.path().join("logs")).ok();
    let restored = p
        .execute("restore_files", &json!({}), &ctx("run-2"))
        .await
        .unwrap()
        .result;
    assert_eq!(restored["restored"], 2, "{restored}");
    // Said as the move was: a file and a folder are two entries, and where they went.
    assert_eq!(
        restored["summary"], "Restored 2 entries to where they were.",
        "{restored}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("logs/a.log")).unwrap(),
        b"aaaa"
    );
    assert_eq!(std::fs::read(dir.path().join("old/x/1.txt")).unwrap(), b"1");
    assert!(!q.exists(), "the emptied batch folder is removed");
    let again = p.execute("restore_files", &json!({}), &ctx("run-3")).await;
    assert!(again.unwrap_err().to_string().contains("restored already"));
    assert_eq!(p.quarantine_sizes().await.unwrap()[0].entries, 0);
}

#[tokio::test]
async fn restore_never_writes_over_what_now_exists() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "report.txt", b"old");
    let p = plugin(dir.path()).await;
    let (_, out) = approve(
        &p,
        "quarantine_files",
        json!({"paths": ["downloads/report.txt"]}),
        "r1",
    )
    .await;
    assert_eq!(out["moved"], 1);
    write(dir.path(), "report.txt", b"new one");
    let restored = p
        .execute(
            "restore_files",
            &json!({"paths": ["downloads/report.txt"]}),
            &ctx("r2"),
        )
        .await
        .unwrap()
        .result;
    assert_eq!(restored["restored"], 0, "{restored}");
    assert!(restored["not_restored"][0]["why"]
        .as_str()
        .unwrap()
        .contains("never writes over it"));
    assert_eq!(
        std::fs::read(dir.path().join("report.txt")).unwrap(),
        b"new one"
    );
}

#[tokio::test]
async fn paths_that_lead_out_are_refused_before_any_card() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "secret.txt", b"s");
    std::os::unix::fs::symlink(outside.path(), dir.path().join("escape")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", dir.path().join("passwd-link")).unwrap();
    let p = plugin(dir.path()).await;
    for bad in [
        json!({"paths": ["downloads/../x"]}),
        json!({"paths": ["/etc/passwd"]}),
        json!({"paths": ["downloads/.iris-quarantine/b/x"]}),
        json!({"paths": ["elsewhere/x"]}),
        json!({"paths": []}),
        json!({"paths": ["downloads/logs", "downloads/logs/a.log"]}),
    ] {
        assert!(
            p.normalise("quarantine_files", bad.clone(), &ctx("r"))
                .await
                .is_err(),
            "{bad}"
        );
    }
    let args = p
        .normalise(
            "quarantine_files",
            json!({"paths": ["downloads/escape/secret.txt"]}),
            &ctx("r"),
        )
        .await
        .unwrap();
    let refused = p
        .describe("quarantine_files", &args, &ctx("r"))
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("outside the root"),
        "{refused}"
    );
    // A symlink is moved as a link, never followed.
    let (c, out) = approve(
        &p,
        "quarantine_files",
        json!({"paths": ["downloads/passwd-link"]}),
        "r1",
    )
    .await;
    assert!(
        c["lines"][0]
            .as_str()
            .unwrap()
            .contains("link to /etc/passwd"),
        "{c}"
    );
    assert_eq!(out["moved"], 1);
    assert!(Path::new("/etc/passwd").exists());
    let listed = p
        .execute("list_files", &json!({"root": "downloads"}), &ctx("r"))
        .await
        .unwrap()
        .result;
    assert!(
        listed["files"].to_string().contains("downloads/escape"),
        "the link itself is listed"
    );
    assert!(
        !listed["files"].to_string().contains("secret"),
        "never followed: {listed}"
    );
}

#[tokio::test]
async fn a_path_swapped_for_a_symlink_after_the_card_is_not_moved() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "notes.txt", b"mine");
    write(dir.path(), "other.txt", b"keep");
    let p = plugin(dir.path()).await;
    let args = p
        .normalise(
            "quarantine_files",
            json!({"paths": ["downloads/notes.txt", "downloads/other.txt"]}),
            &ctx("r1"),
        )
        .await
        .unwrap();
    let c = serde_json::to_value(
        p.describe("quarantine_files", &args, &ctx("r1"))
            .await
            .unwrap(),
    )
    .unwrap();
    // Approved after notes.txt became a link to something else.
    std::fs::remove_file(dir.path().join("notes.txt")).unwrap();
    std::os::unix::fs::symlink("other.txt", dir.path().join("notes.txt")).unwrap();
    let pin = &c["preconditions"][0];
    assert!(
        !p.check_precondition("quarantine_files", "downloads/notes.txt", pin, &ctx("r1"))
            .await
    );
    assert!(
        p.check_precondition(
            "quarantine_files",
            "downloads/other.txt",
            &c["preconditions"][1],
            &ctx("r1")
        )
        .await
    );
    let out = p
        .execute_held(
            "quarantine_files",
            &args,
            &["downloads/notes.txt".into()],
            &ctx("r1"),
            None,
        )
        .await
        .unwrap()
        .result;
    assert_eq!(out["moved"], 1);
    assert!(std::fs::symlink_metadata(dir.path().join("notes.txt"))
        .unwrap()
        .file_type()
        .is_symlink());
    // Swapped between the check and the move: the re-check through the descriptor catches it.
    write(dir.path(), "late.txt", b"late");
    let args = p
        .normalise(
            "quarantine_files",
            json!({"paths": ["downloads/late.txt"]}),
            &ctx("r2"),
        )
        .await
        .unwrap();
    let c = serde_json::to_value(
        p.describe("quarantine_files", &args, &ctx("r2"))
            .await
            .unwrap(),
    )
    .unwrap();
    assert!(
        p.check_precondition(
            "quarantine_files",
            "downloads/late.txt",
            &c["preconditions"][0],
            &ctx("r2")
        )
        .await
    );
    std::fs::remove_file(dir.path().join("late.txt")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", dir.path().join("late.txt")).unwrap();
    let out = p
        .execute_held("quarantine_files", &args, &[], &ctx("r2"), None)
        .await
        .unwrap();
    assert_eq!(out.result["moved"], 0, "{}", out.result);
    assert_eq!(out.items[0].outcome["status"], "changed");
    assert!(std::fs::symlink_metadata(dir.path().join("late.txt"))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[tokio::test]
async fn hostile_names_are_listed_moved_and_escaped_on_the_card() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<Vec<u8>> = vec![
        b"line\nbreak.txt".to_vec(),
        "invoice\u{202e}fdp.exe".as_bytes().to_vec(),
        b"latin1-\xe9t\xe9.txt".to_vec(),
        vec![b'n'; 255],
    ];
    for n in &names {
        std::fs::write(dir.path().join(std::ffi::OsStr::from_bytes(n)), b"x").unwrap();
    }
    let p = plugin(dir.path()).await;
    let listed = p
        .execute("list_files", &json!({"root": "downloads"}), &ctx("r"))
        .await
        .unwrap()
        .result;
    let ids: Vec<String> = listed["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 4);
    assert!(
        ids.contains(&"downloads/latin1-%E9t%E9.txt".to_string()),
        "{ids:?}"
    );
    let (c, out) = approve(&p, "quarantine_files", json!({"paths": ids}), "r1").await;
    let lines = c["lines"].to_string();
    assert!(
        !lines.contains('\u{202e}') && !lines.contains("\\n\\n"),
        "escaped: {lines}"
    );
    assert!(
        lines.contains("\\\\u{202e}") || lines.contains("\\u{202e}"),
        "{lines}"
    );
    assert_eq!(out["moved"], 4, "{out}");
    for n in &names {
        assert!(!dir.path().join(std::ffi::OsStr::from_bytes(n)).exists());
    }
    let restored = p
        .execute("restore_files", &json!({}), &ctx("r2"))
        .await
        .unwrap()
        .result;
    assert_eq!(restored["restored"], 4, "{restored}");
    for n in &names {
        assert!(dir.path().join(std::ffi::OsStr::from_bytes(n)).exists());
    }
}

#[tokio::test]
async fn a_large_file_is_pinned_by_size_and_times_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "big.iso", &[7u8; 4096]);
    let store = Store::connect("sqlite::memory:").await.unwrap();
    let p = FilesPlugin::new(
        vec![RootConfig {
            name: "downloads".into(),
            path: dir.path().to_path_buf(),
        }],
        &store,
    )
    .unwrap()
    .with_hash_limit(1024);
    let c = card(
        &p,
        "quarantine_files",
        json!({"paths": ["downloads/big.iso"]}),
    )
    .await;
    assert!(
        c["lines"][0]
            .as_str()
            .unwrap()
            .contains("checked by size and times only"),
        "{c}"
    );
    assert!(c["preconditions"][0]["sha256"].is_null());
}

#[tokio::test]
async fn purge_deletes_only_the_named_quarantined_entries() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.log", b"a");
    write(dir.path(), "b.log", b"b");
    let p = plugin(dir.path()).await;
    approve(
        &p,
        "quarantine_files",
        json!({"paths": ["downloads/a.log", "downloads/b.log"]}),
        "r1",
    )
    .await;
    let listed = p
        .execute("list_quarantine", &json!({"root": "downloads"}), &ctx("r"))
        .await
        .unwrap()
        .result;
    let a = listed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["original"] == "downloads/a.log")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    // Anything else in the quarantine folder is not IRIS's to purge.
    write(dir.path(), ".iris-quarantine/stray.txt", b"s");
    let refused = {
        let args = p
            .normalise(
                "purge_quarantine",
                json!({"paths": ["downloads/.iris-quarantine/stray.txt"]}),
                &ctx("r"),
            )
            .await
            .unwrap();
        p.describe("purge_quarantine", &args, &ctx("r"))
            .await
            .unwrap_err()
    };
    assert!(
        refused
            .to_string()
            .contains("not an entry IRIS quarantined"),
        "{refused}"
    );
    assert!(p
        .normalise(
            "purge_quarantine",
            json!({"paths": ["downloads/a.log"]}),
            &ctx("r")
        )
        .await
        .is_err());
    let (c, out) = approve(&p, "purge_quarantine", json!({"paths": [a]}), "r2").await;
    assert_eq!(c["title"], "Delete 1 quarantined file for good");
    assert!(
        c["lines"][0]
            .as_str()
            .unwrap()
            .starts_with("a.log — 1 byte, quarantined "),
        "{c}"
    );
    assert!(c["undo_note"].is_null());
    assert_eq!(out["purged"], 1, "{out}");
    let left = p
        .execute("list_quarantine", &json!({"root": "downloads"}), &ctx("r"))
        .await
        .unwrap()
        .result;
    assert_eq!(left["total"], 1);
    assert_eq!(left["entries"][0]["original"], "downloads/b.log");
    assert!(dir.path().join(".iris-quarantine/stray.txt").exists());
}

#[tokio::test]
async fn the_manifest_loads_and_agrees_with_the_code() {
    let dir = tempfile::tempdir().unwrap();
    let p = plugin(dir.path()).await;
    let m = p.manifest();
    let q = m
        .tools
        .iter()
        .find(|t| t.name == "quarantine_files")
        .unwrap();
    assert_eq!(
        q.undo_window_days,
        Some(crate::tools::quarantine_files::UNDO_WINDOW_DAYS)
    );
    let store = Store::connect("sqlite::memory:").await.unwrap();
    for bad in ["", "a/b", " x"] {
        let e = FilesPlugin::new(
            vec![RootConfig {
                name: bad.into(),
                path: dir.path().into(),
            }],
            &store,
        );
        assert!(e.is_err(), "{bad:?}");
    }
    let e = FilesPlugin::new(
        vec![RootConfig {
            name: "x".into(),
            path: "relative".into(),
        }],
        &store,
    );
    assert!(e.unwrap_err().to_string().contains("not absolute"));
}

#[tokio::test]
async fn a_listing_past_the_cap_says_how_many_more_match() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..503 {
        write(dir.path(), &format!("logs/{i:04}.log"), b"x");
    }
    let p = plugin(dir.path()).await;
    let listed = p
        .execute(
            "list_files",
            &json!({"root": "downloads", "glob": "**/*.log"}),
            &ctx("r"),
        )
        .await
        .unwrap()
        .result;
    assert_eq!(listed["total"], 503);
    assert_eq!(listed["files"].as_array().unwrap().len(), 500);
    assert!(
        listed["more"].as_str().unwrap().starts_with("3 more match"),
        "{listed}"
    );
    let few = p
        .execute(
            "list_files",
            &json!({"root": "downloads", "glob": "logs/000*.log"}),
            &ctx("r"),
        )
        .await
        .unwrap()
        .result;
    assert!(few.get("more").is_none(), "{few}");
}
