//! `/mcp/iris`: IRIS's own tools for MCP clients (the official Python SDK's client, as an agent
//! runs it), with the same `agent` tokens, holds and cards as an upstream's. Only the tools
//! `[mcp.iris] tools` lists are offered and callable; a read passes; a destructive call is the
//! owning plugin's card (read from the disk, pinned), held until the owner answers, and runs
//! once; `iris mcp iris` (stdio) offers the same; the upstream name `iris` is reserved; without
//! the setting nothing is offered.

use crate::support;

use iris_core::ports::Scope;
use serde_json::{json, Value};
use support::mcp::{answers, client, one, script};
use support::{ModelServer, TestApp};

use super::{approve, row};

const NO_SCRIPT: &str = "rules: []\nfallback: \"?\"\n";

async fn own(url: &str, token: &str, step: Value) -> Value {
    one(url, "iris", token, step).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listed_own_tools_are_offered_with_the_same_cards_and_nothing_else() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("logs")).unwrap();
    std::fs::write(root.path().join("logs/old.log"), b"old lines\n").unwrap();
    let model = ModelServer::start(NO_SCRIPT).await;
    let server = TestApp::with_model(&model)
        .mailbox()
        .files_root("downloads", root.path())
        .mcp_own_tools(&["list_files", "quarantine_files"])
        .mcp_hold_secs(1)
        .background()
        .start()
        .await;
    let url = server.listen().await;
    let owner = server.add_device("owner", Scope::Control).await;
    let agent = server.add_device("Claude Desktop", Scope::Agent).await;

    // Exactly the listed tools; mail is not among them.
    let listed = own(&url, &agent, json!({"list": true})).await;
    assert_eq!(
        listed["tools"],
        json!(["list_files", "quarantine_files"]),
        "{listed}"
    );
    let mail = own(&url, &agent, json!({"call": "search_inbox", "args": {}})).await;
    assert_eq!(mail["isError"], true, "{mail}");
    assert!(
        mail["text"]
            .as_str()
            .unwrap()
            .contains("does not offer `search_inbox`"),
        "{mail}"
    );

    // A read passes with the plugin's own answer.
    let files = own(
        &url,
        &agent,
        json!({"call": "list_files", "args": {"root": "downloads", "glob": "**/*.log"}}),
    )
    .await;
    assert_eq!(files["isError"], false, "{files}");
    let listing: Value = serde_json::from_str(files["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        listing["files"][0]["id"], "downloads/logs/old.log",
        "{listing}"
    );

    // A destructive call: the files plugin's own card, held, then "waiting".
    let call = json!({"call": "quarantine_files", "args": {"paths": ["downloads/logs/old.log"]}, "reason": "tidy the downloads"});
    let waiting = own(&url, &agent, call.clone()).await;
    assert_eq!(waiting["meta"]["iris/status"], "pending", "{waiting}");
    let id = waiting["meta"]["iris/approval_id"]
        .as_str()
        .unwrap()
        .to_string();
    let card = row(&url, &owner, &id).await;
    assert_eq!(card["tool"], "iris.quarantine_files", "{card}");
    assert_eq!(card["card"]["action"], "Move 1 file to quarantine");
    assert!(
        card["card"]["lines"][0]
            .as_str()
            .unwrap()
            .starts_with("logs/old.log — 10 bytes"),
        "{card}"
    );
    assert!(
        root.path().join("logs/old.log").exists(),
        "nothing before the owner answers"
    );

    // The owner approves; the same call again gets the one execution's result.
    let (status, body) = approve(&url, &owner, &id).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    client(&url).wait_execution(&id, &owner, "executed").await;
    assert!(!root.path().join("logs/old.log").exists());
    let again = own(&url, &agent, call).await;
    assert_eq!(again["meta"]["iris/status"], "executed", "{again}");
    assert!(
        again["text"].as_str().unwrap().contains("\"moved\":1"),
        "{again}"
    );

    // `iris mcp iris`, the stdio bridge agents spawn, offers and passes the same.
    let out = tokio::process::Command::new("python3")
        .arg(script("agent.py"))
        .args(["stdio", &support::iris_bin().to_string_lossy(), "iris"])
        .arg(
            json!([
                {"list": true},
                {"call": "list_files", "args": {"root": "downloads"}},
            ])
            .to_string(),
        )
        .env("IRIS_URL", &url)
        .env("IRIS_TOKEN", &agent)
        .output()
        .await
        .unwrap();
    let got = answers(out);
    assert_eq!(got[0]["tools"], json!(["list_files", "quarantine_files"]));
    assert_eq!(got[1]["isError"], false, "{}", got[1]);
    // The emptied logs/ folder is what is left (its file is in quarantine, hidden).
    let left: Value = serde_json::from_str(got[1]["text"].as_str().unwrap()).unwrap();
    assert_eq!(left["total"], 1, "{left}");
    assert_eq!(left["files"][0]["id"], "downloads/logs", "{left}");
    assert_eq!(left["files"][0]["size"], 0, "{left}");

    // The Plugins page lists them under `iris`, at /mcp/iris.
    let plugins = client(&url).get("/api/plugins", &owner).await;
    let iris = plugins["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "iris")
        .unwrap_or_else(|| panic!("{plugins}"));
    assert_eq!(iris["mcp_path"], "/mcp/iris");
}

#[tokio::test]
async fn nothing_is_offered_unless_listed_and_the_name_iris_is_reserved() {
    let model = ModelServer::start(NO_SCRIPT).await;
    let server = TestApp::with_model(&model).mailbox().start().await;
    let url = server.listen().await;
    let agent = server.add_device("agent", Scope::Agent).await;
    let resp = reqwest::Client::new()
        .post(format!("{url}/mcp/iris"))
        .bearer_auth(&agent)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), reqwest::StatusCode::NOT_FOUND);
    assert!(resp
        .text()
        .await
        .unwrap()
        .contains("offers none of its own tools"));

    let mut settings = iris::config::Settings::defaults();
    settings
        .mcp
        .upstreams
        .push(support::mcp::files_upstream_on(std::path::Path::new(
            "/tmp",
        )));
    settings.mcp.upstreams[0].name = "iris".into();
    let refused = iris::mcp::Gateway::start(&settings, Vec::new()).await;
    assert!(refused
        .err()
        .unwrap()
        .to_string()
        .contains("`iris` is reserved"),);
    let mut settings = iris::config::Settings::defaults();
    settings.mcp.iris = Some(iris::config::OwnToolsSetting {
        tools: vec!["no_such_tool".into()],
    });
    let refused = iris::mcp::Gateway::start(&settings, Vec::new()).await;
    assert!(refused
        .err()
        .unwrap()
        .to_string()
        .contains("no tool `no_such_tool`"));
}
