//! No plugin delays start-up (docs/liveness.md "start-up"): the real `iris` binary on a Maildir
//! whose first sync stalls half-way (`IRIS_FAILPOINT_PAUSE=mail_sync_chunk`) answers
//! `/api/health` at once, the Plugins page and the log say how far the sync is, a search says
//! the mailbox is still syncing instead of answering from half of it, and once the sync goes on
//! the same search finds every message.

use crate::support;

use std::path::Path;

use serde_json::{json, Value};
use support::{eventually, wait_for_line, ModelServer, World};

const SCRIPT: &str = r#"
rules:
  - when: "(?i)find"
    steps:
      - call: search_inbox
        args: {query: "report", limit: 5}
      - reply: "found {count}"
        on_failed: "{message}"
fallback: "?"
"#;

/// Writes `n` small messages into the Maildir's `cur/`.
fn messages(maildir: &Path, n: usize) {
    for i in 0..n {
        let body = format!(
            "From: sender{i}@example.org\r\nTo: owner@example.org\r\nSubject: report {i}\r\nDate: Mon, 30 Nov 2026 10:00:00 +0000\r\nMessage-ID: <m{i}@example.org>\r\n\r\nbody {i}\r\n"
        );
        std::fs::write(maildir.join("cur").join(format!("{i}.test:2,S")), body).unwrap();
    }
}

async fn get(http: &reqwest::Client, url: &str, token: &str) -> (u16, Value) {
    let r = http.get(url).bearer_auth(token).send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

fn email_status(plugins: &Value) -> String {
    plugins["plugins"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["name"] == "email"))
        .map(|p| p["status"].to_string())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_answers_while_a_large_first_sync_runs_and_mail_tools_wait_for_it() {
    let model = ModelServer::start(SCRIPT).await;
    let world = World::new(&model.base_url);
    messages(&world.maildir, 2_500);
    let token = world.add_device("phone", "control");
    let release = world.dir.path().join("release-the-sync");
    let release_text = release.display().to_string();
    let (server, rx) = world.start_watched(&[
        ("IRIS_FAILPOINT_PAUSE", "mail_sync_chunk"),
        ("IRIS_FAILPOINT_RELEASE", release_text.as_str()),
        ("RUST_LOG", "warn,iris_email=info"),
    ]);
    // The log says how far it is, then the sync stands at its first chunk.
    let rx = wait_for_line(rx, "synced 1,000 of 2,500 new messages".into()).await;
    let _rx = wait_for_line(rx, "failpoint paused: mail_sync_chunk".into()).await;
    let http = reqwest::Client::new();

    // Listening and healthy while the sync stands at its first chunk.
    let (status, _) = get(&http, &format!("{}/api/health", server.url), &token).await;
    assert_eq!(status, 200);
    let (_, plugins) = get(&http, &format!("{}/api/plugins", server.url), &token).await;
    assert!(
        email_status(&plugins).contains("synced 1,000 of 2,500 new messages"),
        "{plugins}"
    );

    // A search waits a little, then says so instead of answering from 1,000 of 2,500.
    let chat: Value = http
        .post(format!("{}/api/chat", server.url))
        .bearer_auth(&token)
        .json(&json!({"message": "find the reports"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let reply = chat["reply"].as_str().unwrap_or_default();
    assert!(
        reply.contains("the mailbox is still syncing: synced 1,000 of 2,500"),
        "{chat}"
    );

    // The sync goes on and ends; the same search answers from the whole mailbox.
    std::fs::write(&release, b"go").unwrap();
    eventually("the first sync ends", || {
        let (http, url, token) = (&http, &server.url, &token);
        async move {
            let (_, plugins) = get(http, &format!("{url}/api/plugins"), token).await;
            email_status(&plugins)
                .contains("2,500 messages in the local store")
                .then_some(())
        }
    })
    .await;
    let chat: Value = http
        .post(format!("{}/api/chat", server.url))
        .bearer_auth(&token)
        .json(&json!({"message": "find the reports"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(chat["reply"], "found 5", "{chat}");
}
