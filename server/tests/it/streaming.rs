//! `IRIS_MODEL_STREAM` end to end: the server in process (`support::TestApp` on a listener) against
//! the scripted model server on loopback, once asking for plain answers and once for streamed ones
//! (server-sent chunks, each tool call's arguments in 4-character fragments). On both paths the
//! streamed tool calls arrive intact (the approval row pins exactly the ids the search returned),
//! and `effects_executed` is the same: the write that ran is recorded, the destructive call that
//! governance held back is not (DESIGN §2 "effects_executed").

use crate::support;

use reqwest::StatusCode;
use serde_json::{json, Value};
use support::{snapshot, ModelServer, TestApp};

const SCRIPT: &str = r#"
rules:
  - when: "(?i)tidy"
    steps:
      - call: restore_email
        args: {}
      - call: search_inbox
        args: {category: promotions, since_days: 7}
      - call: trash_email
        args: {ids: "$ids"}
        if_empty: "Nothing matched; nothing was trashed."
      - reply: "Done: moved {trashed} emails to Trash."
fallback: "?"
"#;

/// What one run through the server gave.
struct Run {
    body: Value,
    approval: Value,
    requests: Vec<Value>,
}

async fn run(stream: bool) -> Run {
    let model = ModelServer::start(SCRIPT).await;
    let dir = tempfile::tempdir().unwrap();
    let maildir = dir.path().join("Maildir");
    let written = iris_email::demo::write_demo_maildir(&maildir, chrono::Utc::now()).unwrap();
    assert!(written > 0);
    let build = TestApp::with_model(&model).in_dir(dir).mailbox();
    let server = if stream { build.model_stream() } else { build }
        .start()
        .await;
    let token = server.token.clone();
    let url = server.listen().await;
    let http = reqwest::Client::new();
    let original = snapshot(&maildir);

    let resp = http
        .post(format!("{url}/api/chat"))
        .bearer_auth(&token)
        .json(&json!({"message": "tidy up: undo, then trash this week's promos"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(snapshot(&maildir), original, "a halted call moved mail");

    let id = body["approval_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no approval: {body}"))
        .to_string();
    let approval: Value = http
        .get(format!("{url}/governance/approvals/{id}"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let requests = model.requests.lock().unwrap().clone();
    Run {
        body,
        approval,
        requests,
    }
}

/// The ids of the `search_inbox` result the model was last sent.
fn searched_ids(requests: &[Value]) -> Vec<Value> {
    let last = requests.last().expect("the model was asked");
    let search = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str::<Value>(m["content"].as_str().unwrap()).unwrap())
        .find(|c| c.get("results").is_some())
        .expect("a search result was sent to the model");
    search["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_calls_arrive_intact_and_effects_match_the_plain_path() {
    let plain = run(false).await;
    let streamed = run(true).await;

    assert!(plain.requests.iter().all(|r| r["stream"] == false));
    assert!(streamed.requests.iter().all(|r| r["stream"] == true));
    // Three model steps: restore, search, trash (which halted).
    assert_eq!(streamed.requests.len(), 3);

    for (path, run) in [("plain", &plain), ("streamed", &streamed)] {
        let body = &run.body;
        assert_eq!(body["status"], "awaiting_approval", "{path}: {body}");
        assert_eq!(body["resumed"], false, "{path}");
        // restore_email (write) ran and was recorded before it ran; trash_email (destructive)
        // was held back for approval and is not recorded.
        assert_eq!(body["effects_executed"], json!(["write"]), "{path}: {body}");

        // The trash call's arguments, streamed in fragments, arrived whole: the row pins
        // exactly the ids the search returned.
        let ids = searched_ids(&run.requests);
        assert!(!ids.is_empty(), "{path}: the search found nothing");
        assert_eq!(run.approval["tool"], "trash_email", "{path}");
        assert_eq!(run.approval["args"], json!({"ids": ids}), "{path}");
        assert_eq!(run.approval["status"], "pending", "{path}");

        // The calls the adapter sent back to the model are the ones it received, by id.
        let last = run.requests.last().unwrap();
        let calls: Vec<(String, String)> = last["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["tool_calls"].as_array())
            .flatten()
            .map(|c| {
                (
                    c["id"].as_str().unwrap().to_string(),
                    c["function"]["name"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(
            calls.iter().map(|c| c.1.as_str()).collect::<Vec<_>>(),
            vec!["restore_email", "search_inbox"],
            "{path}"
        );
        assert!(calls.iter().all(|c| c.0.starts_with("call_")), "{path}");
    }
    assert_eq!(
        plain.approval["items"].as_array().unwrap().len(),
        streamed.approval["items"].as_array().unwrap().len()
    );
}
