//! `GET /api/plugins` over real HTTP (the app in process on a loopback listener): 401 without credentials; any paired device (read
//! or control) sees every loaded plugin's tools with effect, derived gate, the approved-per-call
//! predicate and undo, exactly as the manifests declare them (DESIGN §2 "gate").

use crate::support;

use iris_core::ports::Scope;
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::{ModelServer, TestApp};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugins_lists_tools_with_their_gates() {
    let model = ModelServer::start("rules: []\nfallback: \"?\"\n").await;
    let app = TestApp::with_model(&model).mailbox().start().await;
    let read = app.add_device("wall", Scope::Read).await;
    let control = app.add_device("phone", Scope::Control).await;
    let http = reqwest::Client::new();
    let url = format!("{}/api/plugins", app.listen().await);

    // 401 without credentials, or with a token nobody issued.
    let resp = http.get(&url).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let body: Value = resp.json().await.unwrap();
    assert!(
        body["error"].as_str().unwrap().contains("credentials"),
        "{body}"
    );
    let resp = http.get(&url).bearer_auth("forged").send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);

    // Any paired device may look; both see the same list.
    let mut bodies = Vec::new();
    for token in [&read, &control] {
        let resp = http.get(&url).bearer_auth(token).send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        bodies.push(resp.json::<Value>().await.unwrap());
    }
    assert_eq!(bodies[0], bodies[1]);
    let body = &bodies[0];

    // Shape: {"plugins": [{"name", "tools": [{…}]}]} and nothing else.
    let plugins = body["plugins"].as_array().expect("plugins is a list");
    assert_eq!(body.as_object().unwrap().len(), 1, "{body}");
    let email = plugins
        .iter()
        .find(|p| p["name"] == "email")
        .unwrap_or_else(|| panic!("no email plugin: {body}"));
    let tools = email["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "search_inbox",
            "list_by_category",
            "trash_category",
            "trash_email",
            "restore_email",
            "send_email"
        ]
    );
    for t in tools {
        let mut keys: Vec<&String> = t.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "aliases",
                "approved_per_call",
                "description",
                "effect",
                "gate",
                "name",
                "undo",
                "undo_window_days"
            ],
            "{t}"
        );
        assert!(!t["description"].as_str().unwrap().is_empty(), "{t}");
        assert!(t["aliases"].is_array(), "{t}");
    }
    let tool = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap().clone();

    let trash = tool("trash_email");
    assert_eq!(trash["effect"], "destructive");
    assert_eq!(trash["gate"], "approval");
    assert_eq!(trash["approved_per_call"], true);
    assert_eq!(trash["undo"], "restore_email");
    assert_eq!(trash["undo_window_days"], 30);
    assert!(trash["aliases"]
        .as_array()
        .unwrap()
        .contains(&json!("delete_email")));

    let search = tool("search_inbox");
    assert_eq!(search["effect"], "read");
    assert_eq!(search["gate"], "none");
    assert_eq!(search["approved_per_call"], false);
    assert_eq!(search["undo"], Value::Null);
    assert_eq!(search["undo_window_days"], Value::Null);

    let restore = tool("restore_email");
    assert_eq!(restore["effect"], "write");
    assert_eq!(restore["gate"], "none");
    assert_eq!(restore["approved_per_call"], false);

    // A category clean-up is a reversible write the code scopes itself: no card (DESIGN §5).
    let category = tool("trash_category");
    assert_eq!(category["effect"], "write");
    assert_eq!(category["gate"], "none");
    assert_eq!(category["approved_per_call"], false);
    assert_eq!(tool("list_by_category")["effect"], "read");

    // A pinned write: routed through the per-call approval like a destructive tool.
    let send = tool("send_email");
    assert_eq!(send["effect"], "write");
    assert_eq!(send["gate"], "approval");
    assert_eq!(send["approved_per_call"], true);
    assert_eq!(send["undo"], Value::Null);

    // The same list parses as the shared wire type the app uses.
    let typed: iris_core::wire::PluginList = serde_json::from_value(body.clone()).unwrap();
    assert!(typed.plugins.iter().any(|p| p.name == "email"));
}
