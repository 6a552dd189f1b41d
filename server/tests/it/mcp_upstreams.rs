//! The gateway's upstreams beyond the filesystem server's stdio: a server reached over streamable
//! HTTP, a server that dies (started again at the next call; the call it was running when it died
//! is `unknown` and never runs again), and two IRIS servers on one PostgreSQL database, each with
//! its own upstream process (one card, one write). The upstream is a notes server made with the
//! official Python MCP SDK (`server/tests/mcp/notes_server.py`), the agent the SDK's client.
//!
//! The IRIS server runs in process (`support::TestApp` on a listener) except where the test needs
//! processes: two servers, and `iris serve` stopping at start-up.

use crate::support;

use std::path::Path;

use iris::config::UpstreamSetting;
use iris_core::ports::Scope;
use serde_json::json;
use support::eventually;
use support::mcp::{
    answer, app, client, files_upstream, files_upstream_on, one, row, script, world,
};

/// The upstream `notes`, reached at `url` or run over stdio on the folder `notes`.
fn notes_upstream(notes: &Path, url: Option<&str>) -> UpstreamSetting {
    let command = url.is_none().then(|| {
        vec![
            "python3".to_string(),
            script("notes_server.py").display().to_string(),
            "stdio".to_string(),
            notes.display().to_string(),
        ]
    });
    UpstreamSetting {
        name: "notes".into(),
        command,
        url: url.map(str::to_owned),
        manifest: script("notes.yaml"),
    }
}

/// A free loopback port.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The notes server's processes on `folder` (its command line names the folder).
fn notes_server_pids(folder: &Path) -> Vec<String> {
    let out = std::process::Command::new("pgrep")
        .args(["-f", &format!("notes_server.py stdio {}", folder.display())])
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

fn notes_file(folder: &Path) -> String {
    std::fs::read_to_string(folder.join("notes.txt")).unwrap_or_default()
}

#[tokio::test]
async fn an_upstream_over_streamable_http_is_gated_by_iris_manifest() {
    let upstream_dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut upstream = std::process::Command::new("python3")
        .arg(script("notes_server.py"))
        .args(["http", &port.to_string()])
        .arg(upstream_dir.path())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    eventually("the notes server listening", || async move {
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()
    })
    .await;
    let upstream_url = format!("http://127.0.0.1:{port}/mcp");
    let (server, url, _) = app(1, |notes| notes_upstream(notes, Some(&upstream_url)), |b| b).await;
    let owner = server.add_device("owner", Scope::Control).await;
    let goose = server.add_device("goose", Scope::Agent).await;

    let listed = one(&url, "notes", &goose, json!({"list": true})).await;
    assert_eq!(listed["tools"], json!(["append_note", "read_notes"]));
    let held = one(
        &url,
        "notes",
        &goose,
        json!({"call": "append_note", "args": {"text": "buy milk"}}),
    )
    .await;
    assert_eq!(held["meta"]["iris/status"], "pending", "{held}");
    let id = held["meta"]["iris/approval_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let card = row(&url, &owner, &id).await;
    assert_eq!(card["kind"], "pinned_write");
    assert_eq!(card["tool"], "notes.append_note");
    assert_eq!(card["card"]["lines"], json!(["“buy milk”"]));
    assert_eq!(card["requested_by"], "goose");
    assert_eq!(notes_file(upstream_dir.path()), "");

    answer(&url, &owner, &id, json!({"decision": "approve"})).await;
    client(&url).wait_execution(&id, &owner, "executed").await;
    let read = one(&url, "notes", &goose, json!({"call": "read_notes"})).await;
    assert_eq!(read["text"], "buy milk\n");
    let first = one(
        &url,
        "notes",
        &goose,
        json!({"call": "append_note", "args": {"text": "buy milk"}}),
    )
    .await;
    assert_eq!(first["text"], "Added: buy milk", "{first}");
    let again = one(
        &url,
        "notes",
        &goose,
        json!({"call": "append_note", "args": {"text": "buy milk"}, "times": 3}),
    )
    .await;
    assert_eq!(again["meta"]["iris/status"], "executed_before", "{again}");
    assert_eq!(notes_file(upstream_dir.path()), "buy milk\n");
    let _ = upstream.kill();
    let _ = upstream.wait();
}

#[tokio::test]
async fn an_upstream_that_dies_is_started_again_and_its_call_in_flight_is_unknown() {
    let (server, url, notes) = app(1, |notes| notes_upstream(notes, None), |b| b).await;
    let owner = server.add_device("owner", Scope::Control).await;
    let goose = server.add_device("goose", Scope::Agent).await;
    let before = notes_server_pids(&notes);
    assert_eq!(before.len(), 1, "one notes server: {before:?}");

    let held = one(
        &url,
        "notes",
        &goose,
        json!({"call": "append_note", "args": {"text": "hang"}}),
    )
    .await;
    let id = held["meta"]["iris/approval_id"]
        .as_str()
        .unwrap()
        .to_owned();
    answer(&url, &owner, &id, json!({"decision": "approve"})).await;
    let hanging = notes.join("hanging");
    eventually("the approved call reaching the notes server", || {
        let hanging = hanging.clone();
        async move { hanging.exists().then_some(()) }
    })
    .await;
    let killed = std::process::Command::new("kill")
        .args(["-9", &before[0]])
        .status()
        .unwrap();
    assert!(killed.success());

    let lost = client(&url).wait_execution(&id, &owner, "unknown").await;
    assert!(
        lost["result"]["message"]
            .as_str()
            .unwrap()
            .contains("will not be run again"),
        "{lost}"
    );
    let told = one(
        &url,
        "notes",
        &goose,
        json!({"call": "append_note", "args": {"text": "hang"}}),
    )
    .await;
    assert_eq!(told["meta"]["iris/status"], "unknown", "{told}");

    // The next call starts the server again.
    let read = one(&url, "notes", &goose, json!({"call": "read_notes"})).await;
    assert_eq!(read["isError"], false, "{read}");
    let after = notes_server_pids(&notes);
    assert_eq!(after.len(), 1, "{after:?}");
    assert_ne!(after, before);
}

/// A side effect has a deadline (`IRIS_EXECUTE_TIMEOUT_SECS`, docs/liveness.md): an approved
/// call the upstream never answers is `unknown` once it passes, never run again, and the job's
/// worker is free for the next card. (Without the deadline it stays `executing` for ever.)
#[tokio::test]
async fn an_upstream_that_never_answers_is_unknown_at_the_execute_deadline() {
    let (server, url, notes) = app(
        1,
        |notes| notes_upstream(notes, None),
        |b| b.execute_timeout_secs(2),
    )
    .await;
    let owner = server.add_device("owner", Scope::Control).await;
    let goose = server.add_device("goose", Scope::Agent).await;
    let hang = json!({"call": "append_note", "args": {"text": "hang"}});
    let held = one(&url, "notes", &goose, hang.clone()).await;
    let id = held["meta"]["iris/approval_id"]
        .as_str()
        .unwrap()
        .to_owned();
    answer(&url, &owner, &id, json!({"decision": "approve"})).await;
    let lost = client(&url).wait_execution(&id, &owner, "unknown").await;
    let message = lost["result"]["message"].as_str().unwrap();
    assert!(message.contains("no answer within 2 s"), "{lost}");
    assert!(message.contains("will not be run again"), "{lost}");
    assert!(
        notes.join("hanging").exists(),
        "the call had reached the upstream"
    );
    let told = one(&url, "notes", &goose, hang).await;
    assert_eq!(told["meta"]["iris/status"], "unknown", "{told}");
    // The next approved call runs as usual: the job's worker is free, and so is the gateway's
    // connection to the upstream (the hung call still waits there, unanswered).
    let held = one(
        &url,
        "notes",
        &goose,
        json!({"call": "append_note", "args": {"text": "after"}}),
    )
    .await;
    let next = held["meta"]["iris/approval_id"]
        .as_str()
        .unwrap()
        .to_owned();
    answer(&url, &owner, &next, json!({"decision": "approve"})).await;
    client(&url).wait_execution(&next, &owner, "executed").await;
    assert_eq!(notes_file(&notes), "after\n");
}

// Needs a process: several servers on one database.
#[tokio::test]
async fn two_servers_on_one_database_hold_one_card_and_write_it_once() {
    let (url, _database) = iris_store::testing::fresh_postgres_database().await;
    let (mut world, notes) = world(1, &files_upstream());
    world.database_url = url;
    let owner = world.add_device("owner", "control");
    let claude = world.add_device("Claude Desktop", "agent");
    // Each server runs its own filesystem server on the same folder.
    let a = world.start();
    let b = world.start();
    let plan = notes.join("plan.md");
    let write = json!({"call": "write_file", "args": {"path": "plan.md", "content": "v2"}});

    let held = one(&a.url, "files", &claude, write.clone()).await;
    let id = held["meta"]["iris/approval_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The same call through the other server is the same card.
    let again = one(&b.url, "files", &claude, write.clone()).await;
    assert_eq!(again["meta"]["iris/approval_id"], id.as_str(), "{again}");
    assert_eq!(row(&b.url, &owner, &id).await["status"], "pending");

    answer(&b.url, &owner, &id, json!({"decision": "approve"})).await;
    a.client().wait_execution(&id, &owner, "executed").await;
    assert_eq!(std::fs::read_to_string(&plan).unwrap(), "v2");
    std::fs::write(&plan, "edited by the owner").unwrap();
    // Its result is given once, whichever server is asked; then every repeat, on either, is
    // told it ran before.
    let first = one(&b.url, "files", &claude, write.clone()).await;
    assert_eq!(first["meta"]["iris/status"], "executed", "{first}");
    let mut retries = write;
    retries["times"] = json!(5);
    for server in [&a, &b] {
        let done = one(&server.url, "files", &claude, retries.clone()).await;
        assert_eq!(done["meta"]["iris/status"], "executed_before", "{done}");
    }
    assert_eq!(
        std::fs::read_to_string(&plan).unwrap(),
        "edited by the owner"
    );
    let all = a
        .client()
        .get("/governance/approvals?status=all", &owner)
        .await;
    assert_eq!(all["approvals"].as_array().unwrap().len(), 1);
}

// Needs a process: `iris serve`'s exit at start-up, and IRIS_MCP_START_SECS is read from the
// process's environment.
#[tokio::test]
async fn a_server_that_never_answers_stops_iris_serve_with_a_sentence_and_leaves_nothing() {
    // `sleep` reads no MCP: the handshake never completes.
    let toml = "[[mcp.upstreams]]\nname = \"silent\"\ncommand = [\"sleep\", \"1234.5\"]\nmanifest = \"silent.yaml\"\n";
    let (mut world, _) = world(1, toml);
    std::fs::write(
        world.dir.path().join("silent.yaml"),
        "upstream: silent\ntools:\n  - {name: nothing, effect: read}\n",
    )
    .unwrap();
    world.env.push(("IRIS_MCP_START_SECS".into(), "2".into()));
    let out = world.command(&["serve"]).output().unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("`silent`")
            && said.contains("did not complete the MCP handshake and list its tools within 2 s"),
        "{said}"
    );
    eventually("the silent server to be gone", || async {
        let out = std::process::Command::new("pgrep")
            .args(["-f", "sleep 1234.5"])
            .output()
            .unwrap();
        out.stdout.is_empty().then_some(())
    })
    .await;
}

// Needs a process: `iris serve`'s exit at start-up (the table is read from `iris.toml`).
#[tokio::test]
async fn a_misspelt_table_is_said_plainly() {
    let (world, _) = world(1, "[[mcp.upstream]]\nname = \"files\"\n");
    let out = world.command(&["serve"]).output().unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("upstream"), "{said}");
}

#[tokio::test]
async fn an_unknown_upstream_is_said_plainly() {
    let (server, url, _) = app(1, files_upstream_on, |b| b).await;
    let goose = server.add_device("goose", Scope::Agent).await;
    let response = reqwest::Client::new()
        .post(format!("{url}/mcp/nope"))
        .bearer_auth(&goose)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), reqwest::StatusCode::NOT_FOUND);
    assert_eq!(
        response.text().await.unwrap(),
        "no MCP upstream `nope` here (configured: files)"
    );
}
