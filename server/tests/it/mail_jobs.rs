//! Mail jobs beside the approval flow, in process (`support::TestApp` with a real Maildir, the
//! chat driven through a scripted OpenAI-compatible server on loopback): the demo's category
//! clean-up and its undo (a write without a card, ADR-0119), mail that arrives while the server
//! runs, and a tool called with arguments off its schema (nothing changes).

use crate::support;

use reqwest::StatusCode;
use serde_json::json;
use support::{eventually, snapshot, ModelServer, TestApp};

/// The demo's category clean-up. "delete my promo emails from this week" runs
/// `trash_category` (a write with `confirm: never`: no card), which picks exactly the week's
/// promotions itself; the reply gives the count, a sample and how to undo; "undo that" brings
/// the whole batch back to where it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn category_cleanup_and_undo_on_the_demo_mailbox() {
    let model = ModelServer::start(iris_core::scripted::DEMO_SCRIPT).await;
    let server = TestApp::with_model(&model).mailbox().start().await;
    let control = server.token.clone();
    let client = server.client().await;
    let maildir = server.maildir();
    let original = snapshot(&maildir);
    let in_trash = |s: &std::collections::BTreeMap<String, Vec<u8>>| {
        s.keys()
            .filter(|k| k.starts_with(".Trash/cur/") || k.starts_with(".Trash/new/"))
            .count()
    };

    let (status, turn) = client
        .post(
            "/api/chat",
            Some(&control),
            json!({"message": "delete my promo emails from this week"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{turn}");
    assert_eq!(turn["status"], "done", "{turn}");
    assert!(
        turn["approval_id"].is_null(),
        "a confirm-never write shows no card"
    );
    let reply = turn["reply"].as_str().unwrap();
    assert!(
        reply.starts_with("Moved 5 emails (promotions mail from the last 7 days) to Trash"),
        "{reply}"
    );
    assert!(reply.contains("undo that"), "{reply}");
    let after = snapshot(&maildir);
    assert_eq!(in_trash(&after), 5);
    let mut trashed_subjects: Vec<String> = Vec::new();
    for (name, bytes) in after.iter().filter(|(k, _)| k.starts_with(".Trash/cur/")) {
        assert!(
            original.values().any(|v| v == bytes),
            "{name} is byte-identical"
        );
        let subject = mail_parser::MessageParser::default()
            .parse(bytes.as_slice())
            .and_then(|m| m.subject().map(String::from))
            .unwrap_or_default();
        trashed_subjects.push(subject.trim().to_string());
    }
    trashed_subjects.sort();
    let mut expected: Vec<String> = iris_email::demo::promotions_this_week()
        .into_iter()
        .map(String::from)
        .collect();
    expected.sort();
    assert_eq!(trashed_subjects, expected, "exactly the week's promotions");
    let pending = client
        .get("/governance/approvals?status=pending", &control)
        .await;
    assert_eq!(pending["approvals"], json!([]));

    let (status, undo) = client
        .post(
            "/api/chat",
            Some(&control),
            json!({"message": "undo that", "conversation_id": turn["conversation_id"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{undo}");
    assert_eq!(
        undo["reply"],
        "Restored 5 emails from Trash to where they were."
    );
    let restored = snapshot(&maildir);
    assert_eq!(in_trash(&restored), 0);
    for (k, v) in &original {
        assert_eq!(restored.get(k), Some(v), "{k} is back where it was");
    }
}

/// Mail that arrives after start-up is synced by the periodic mail sync
/// (`IRIS_MAIL_SYNC_SECS`), so the model's searches see it without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_mail_is_synced_while_the_server_runs() {
    let model = ModelServer::start(
        r#"
rules:
  - when: "(?i)find"
    steps:
      - call: search_inbox
        args: {query: "latecomer"}
      - reply: "found {count}"
fallback: "?"
"#,
    )
    .await;
    let server = TestApp::with_model(&model)
        .mailbox()
        .mail_sync_secs(1)
        .background()
        .start()
        .await;
    let control = server.token.clone();
    let client = server.client().await;
    let ask = || async {
        let (status, turn) = client
            .post(
                "/api/chat",
                Some(&control),
                json!({"message": "find the latecomer"}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{turn}");
        turn["reply"].as_str().unwrap().to_string()
    };
    assert_eq!(ask().await, "found 0");
    std::fs::write(
        server.maildir().join("new/1795000000.M1P1.late"),
        "From: Late Comer <late@example.net>\r\nTo: owner@example.org\r\nSubject: The latecomer\r\nDate: Mon, 30 Nov 2026 09:00:00 +0000\r\nMessage-ID: <late@example.net>\r\n\r\nHello.\r\n",
    )
    .unwrap();
    eventually("the new message in search results", || async {
        (ask().await == "found 1").then_some(())
    })
    .await;
}

/// A tool called with arguments that do not match its schema gets a clear
/// error observation naming the tool, and changes nothing: no file moves, no approval row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_off_schema_change_nothing() {
    let model = ModelServer::start(
        r#"
rules:
  - when: "(?i)one"
    steps:
      - call: trash_email
        args: {ids: "m123"}
      - reply: "?"
  - when: "(?i)two"
    steps:
      - call: trash_category
        args: {category: "promo", since_days: "seven"}
      - reply: "?"
  - when: "(?i)three"
    steps:
      - call: trash_category
        args: {category: "promo", since_days: 7, permanently: true}
      - reply: "?"
  - when: "(?i)four"
    steps:
      - call: send_email
        args: {to: "anna@example.net", body: 5}
      - reply: "?"
fallback: "?"
"#,
    )
    .await;
    let server = TestApp::with_model(&model).mailbox().start().await;
    let control = server.token.clone();
    let client = server.client().await;
    let maildir = server.maildir();
    let before = snapshot(&maildir);
    for (word, tool) in [
        ("one", "trash_email"),
        ("two", "trash_category"),
        ("three", "trash_category"),
        ("four", "send_email"),
    ] {
        let (status, turn) = client
            .post("/api/chat", Some(&control), json!({"message": word}))
            .await;
        assert_eq!(status, StatusCode::OK, "{turn}");
        let reply = turn["reply"].as_str().unwrap();
        assert!(
            reply.contains(&format!("invalid arguments for `{tool}`")),
            "{word}: {reply}"
        );
        assert!(turn["approval_id"].is_null(), "{turn}");
    }
    assert_eq!(snapshot(&maildir), before, "nothing moved");
    let approvals = client.get("/governance/approvals", &control).await;
    assert_eq!(approvals["approvals"], json!([]));
}
