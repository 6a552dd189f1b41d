//! The files plugin through the whole server, on real folders (ADR-0067): a
//! `quarantine_files` card is made from the disk (never the model's words), approving moves
//! exactly the pinned entries once into the root's quarantine, an entry changed after the card
//! is left alone ("changed since you saw it"), the Plugins page counts the quarantine, and "undo
//! that" moves them back, once; approving one of two logs moves only it, and the card's undo
//! brings it back. Then the same under kill -9 at the plugin's own failpoints
//! (between the journal row and the move, and between the move and its flush): the call is
//! `unknown`, never run again, the card says where each file is now, and its undo restores
//! those in quarantine.

use crate::support;

use std::path::{Path, PathBuf};

use iris_core::ports::Scope;
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::{eventually, ModelServer, TestApp, World};

const SCRIPT: &str = r#"
rules:
  - when: "(?i)undo"
    steps:
      - call: restore_files
        args: {}
      - reply: "{summary}"
  - when: "(?i)clean up (.+)"
    steps:
      - call: list_files
        args: {root: downloads, glob: "$1"}
      - call: quarantine_files
        args: {paths: "$ids"}
        if_empty: "Nothing matched; nothing was moved."
      - reply: "{summary}"
        on_rejected: "OK, I left them alone."
fallback: "?"
"#;

/// A root with two logs, a folder of old builds and a photo.
fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (rel, bytes) in [
        ("logs/a.log", &b"first log\n"[..]),
        ("logs/b.log", b"second log\n"),
        ("photo.jpg", b"\xff\xd8 not really a jpeg"),
    ] {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    dir
}

/// Every file under `dir`, relative, sorted (the quarantine included).
fn tree(dir: &Path) -> Vec<String> {
    fn walk(top: &Path, at: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(at).unwrap() {
            let p: PathBuf = e.unwrap().path();
            if p.is_dir() {
                walk(top, &p, out);
            } else {
                out.push(p.strip_prefix(top).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quarantine_card_comes_from_the_disk_and_undo_moves_the_files_back() {
    let root = folder();
    let model = ModelServer::start(SCRIPT).await;
    let server = TestApp::with_model(&model)
        .files_root("downloads", root.path())
        .background()
        .start()
        .await;
    let control = server.add_device("phone", Scope::Control).await;
    let client = server.client().await;

    let (s, halted) = client
        .post(
            "/api/chat",
            Some(&control),
            json!({"message": "clean up logs/*.log"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{halted}");
    assert_eq!(halted["status"], "awaiting_approval", "{halted}");
    assert_eq!(
        tree(root.path()),
        ["logs/a.log", "logs/b.log", "photo.jpg"],
        "a halted call moved something"
    );
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let conversation = halted["conversation_id"].as_str().unwrap().to_string();
    let row = client
        .get(&format!("/governance/approvals/{id}"), &control)
        .await;
    assert_eq!(row["tool"], "quarantine_files");
    assert_eq!(row["kind"], "destructive");
    assert_eq!(row["card"]["action"], "Move 2 files to quarantine");
    let lines: Vec<String> = serde_json::from_value(row["card"]["lines"].clone()).unwrap();
    assert!(
        lines[0].starts_with("logs/a.log — 10 bytes, modified "),
        "{lines:?}"
    );
    assert!(lines[0].ends_with(" · downloads"), "{lines:?}");
    assert_eq!(row["card"]["undo_tool"], "restore_files");
    assert_eq!(row["card"]["undo_window_days"], 30);
    assert_eq!(
        row["items"],
        json!(["downloads/logs/a.log", "downloads/logs/b.log"])
    );

    // b.log changes after the card: it stays, a.log moves.
    std::fs::write(root.path().join("logs/b.log"), b"second log, longer now\n").unwrap();
    let (s, body) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&control),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    client.wait_execution(&id, &control, "executed").await;
    let after = tree(root.path());
    assert_eq!(after.len(), 3, "{after:?}");
    assert!(after.contains(&"logs/b.log".to_string()), "{after:?}");
    assert!(after.contains(&"photo.jpg".to_string()), "{after:?}");
    let moved = after
        .iter()
        .find(|p| p.starts_with(".iris-quarantine/") && p.ends_with("/logs/a.log"))
        .unwrap_or_else(|| panic!("a.log is in quarantine: {after:?}"));
    assert_eq!(
        std::fs::read(root.path().join(moved)).unwrap(),
        b"first log\n"
    );
    let audit = client
        .get(&format!("/api/audit?approval_id={id}"), &control)
        .await;
    assert!(
        audit.to_string().contains("it changed since you saw it"),
        "{audit}"
    );

    // The Plugins page says what the quarantine holds.
    let plugins = client.get("/api/plugins", &control).await;
    let files = plugins["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "folders")
        .unwrap();
    assert!(
        files["status"][0]
            .as_str()
            .unwrap()
            .ends_with("1 entry in quarantine, 10 bytes"),
        "{files}"
    );

    // "undo that": back at its path, byte for byte, once.
    let (s, undone) = client
        .post(
            "/api/chat",
            Some(&control),
            json!({"message": "undo that", "conversation_id": conversation}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{undone}");
    assert_eq!(
        undone["reply"], "Restored 1 file to where it was.",
        "{undone}"
    );
    assert_eq!(tree(root.path()), ["logs/a.log", "logs/b.log", "photo.jpg"]);
    let (_, again) = client
        .post(
            "/api/chat",
            Some(&control),
            json!({"message": "undo that", "conversation_id": conversation}),
        )
        .await;
    assert!(
        again["reply"]
            .as_str()
            .unwrap()
            .contains("restored already"),
        "a batch is restored once: {again}"
    );
}

/// Approving one of the two logs (docs/adr/0122-shaping-a-call.md): only it moves into
/// quarantine, once; the other stays byte for byte; the row pins the narrowed call; the card's
/// undo moves exactly that one back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_one_of_two_logs_moves_only_it_and_the_undo_brings_it_back() {
    let root = folder();
    let model = ModelServer::start(SCRIPT).await;
    let server = TestApp::with_model(&model)
        .files_root("downloads", root.path())
        .background()
        .start()
        .await;
    let control = server.add_device("phone", Scope::Control).await;
    let client = server.client().await;
    let (s, halted) = client
        .post(
            "/api/chat",
            Some(&control),
            json!({"message": "clean up logs/*.log"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{halted}");
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let path = format!("/governance/approvals/{id}");
    let row = client.get(&path, &control).await;
    assert_eq!(row["card"]["items_arg"], "paths", "{row}");

    let (s, body) = client
        .post(
            &format!("{path}/respond"),
            Some(&control),
            json!({"decision": "approve", "items": [1]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    client.wait_execution(&id, &control, "executed").await;
    let after = tree(root.path());
    assert!(after.contains(&"logs/a.log".to_string()), "{after:?}");
    assert!(after.contains(&"photo.jpg".to_string()), "{after:?}");
    assert!(!after.contains(&"logs/b.log".to_string()), "{after:?}");
    let moved: Vec<&String> = after
        .iter()
        .filter(|p| p.starts_with(".iris-quarantine/"))
        .collect();
    assert_eq!(moved.len(), 1, "{after:?}");
    assert!(moved[0].ends_with("/logs/b.log"), "{after:?}");
    assert_eq!(
        std::fs::read(root.path().join("logs/a.log")).unwrap(),
        b"first log\n",
        "the log left out is untouched"
    );
    let row = client.get(&path, &control).await;
    assert_eq!(row["approved_items"], json!([1]), "{row}");
    assert_eq!(
        row["decided_call"]["args"]["paths"],
        json!(["downloads/logs/b.log"]),
        "{row}"
    );

    let (s, body) = client
        .post(&format!("{path}/undo"), Some(&control), json!({}))
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(tree(root.path()), ["logs/a.log", "logs/b.log", "photo.jpg"]);
    assert_eq!(
        std::fs::read(root.path().join("logs/b.log")).unwrap(),
        b"second log\n"
    );
}

/// kill -9 at `failpoint` while the approved move of two logs runs (it stops at the first);
/// after the restart the call is `unknown` and never run again, the card says where each log
/// is now, found by its pinned inode (`a.log` at its path or, when `moved`, in quarantine;
/// `b.log` at its path), and its undo restores exactly what is in quarantine: from the card
/// when something is, else "undo that" in the conversation says it restored nothing.
async fn crash_at(failpoint: &str, moved: bool) {
    let model = ModelServer::start(SCRIPT).await;
    let world = World::new(&model.base_url);
    let root = world.dir.path().join("downloads");
    std::fs::create_dir_all(root.join("logs")).unwrap();
    std::fs::write(root.join("logs/a.log"), b"first log\n").unwrap();
    std::fs::write(root.join("logs/b.log"), b"second log\n").unwrap();
    std::fs::write(
        world.dir.path().join("iris.toml"),
        format!(
            "[[files.roots]]\nname = \"downloads\"\npath = \"{}\"\n",
            root.display()
        ),
    )
    .unwrap();
    let token = world.add_device("phone", "control");
    let (id, conversation) =
        support::crash::approve_until_killed(&world, &token, "clean up logs/*.log", failpoint)
            .await;
    let http = reqwest::Client::new();
    let in_quarantine = |root: &Path| {
        tree(root)
            .into_iter()
            .filter(|p| p.starts_with(".iris-quarantine/"))
            .count()
    };
    assert_eq!(root.join("logs/a.log").exists(), !moved);
    assert!(
        root.join("logs/b.log").exists(),
        "the batch stopped at its first log"
    );
    assert_eq!(in_quarantine(&root), usize::from(moved));

    // Restarted without the failpoint: unknown, told how to check, never run again, and each
    // log's place found.
    let (server, row) = support::crash::restarted_until_located(&world, &token, &id).await;
    let message = row["result"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(".iris-quarantine"), "{row}");
    assert_eq!(root.join("logs/a.log").exists(), !moved, "never run again");
    assert!(root.join("logs/b.log").exists(), "never run again");
    assert_eq!(in_quarantine(&root), usize::from(moved));
    let located = row["located"]["items"].as_array().unwrap();
    let place = |item: &str| {
        located
            .iter()
            .find(|l| l["id"] == item)
            .map(|l| l["status"].as_str().unwrap_or_default().to_string())
    };
    let a_status = if moved { "quarantined" } else { "not_moved" };
    assert_eq!(
        place("downloads/logs/a.log").as_deref(),
        Some(a_status),
        "{row}"
    );
    assert_eq!(
        place("downloads/logs/b.log").as_deref(),
        Some("not_moved"),
        "{row}"
    );
    let summary = row["located"]["summary"].as_str().unwrap_or_default();
    let expected = if moved {
        "1 in quarantine, 1 still at its path."
    } else {
        "2 still at their paths."
    };
    assert_eq!(summary, expected, "{row}");
    // The audit has one line per log, and only a log in quarantine can be undone.
    let trail: Value = http
        .get(format!("{}/api/audit?approval_id={id}", server.url))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let lines: Vec<(String, bool)> = trail["entries"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["kind"] == "execution" && e["item"].is_string())
        .map(|e| {
            (
                e["item"].as_str().unwrap().to_string(),
                e["undo_available"] == true,
            )
        })
        .collect();
    assert_eq!(lines.len(), 2, "{trail}");
    assert!(
        lines
            .iter()
            .all(|(item, undo)| *undo == (moved && item == "downloads/logs/a.log")),
        "{trail}"
    );

    let (status, undone) = support::crash::undo(&server, &token, &id).await;
    if moved {
        // The card's undo: exactly what is in quarantine comes back, once.
        assert_eq!(row["located"]["undo_action"], "Restore 1 file", "{row}");
        assert_eq!(status, StatusCode::OK, "{undone}");
        assert_eq!(undone["approval"]["undo"]["state"], "done", "{undone}");
        assert_eq!(
            std::fs::read(root.join("logs/a.log")).unwrap(),
            b"first log\n"
        );
        assert_eq!(in_quarantine(&root), 0);
        let (again, _) = support::crash::undo(&server, &token, &id).await;
        assert_eq!(again, StatusCode::CONFLICT, "undone once");
    } else {
        // Nothing moved: the card offers no undo, and refusing it changes nothing.
        assert!(row["located"].get("undo_action").is_none(), "{row}");
        assert_eq!(status, StatusCode::CONFLICT, "{undone}");
        // "undo that" in the card's conversation (what the unknown card points to) says what
        // it could not restore.
        let reply = eventually("the conversation's undo", || {
            let (http, url, token, conversation) = (&http, &server.url, &token, &conversation);
            async move {
                let chat: Value = http
                    .post(format!("{url}/api/chat"))
                    .bearer_auth(token)
                    .json(&json!({"message": "undo that", "conversation_id": conversation}))
                    .send()
                    .await
                    .ok()?
                    .json()
                    .await
                    .ok()?;
                let reply = chat["reply"].as_str()?.to_string();
                reply.starts_with("Restored").then_some(reply)
            }
        })
        .await;
        assert_eq!(reply, "Restored nothing; 1 not restored.", "{reply}");
    }
    assert!(root.join("logs/a.log").exists());
    assert!(root.join("logs/b.log").exists());
    assert_eq!(in_quarantine(&root), 0);
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_between_the_journal_row_and_the_move_the_file_stays_and_it_never_runs_again() {
    crash_at(
        iris_files::tools::quarantine_files::FAILPOINT_AFTER_JOURNAL,
        false,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_between_the_move_and_its_flush_the_file_is_in_quarantine_and_it_never_runs_again() {
    crash_at(
        iris_files::tools::quarantine_files::FAILPOINT_AFTER_MOVE,
        true,
    )
    .await;
}
