//! A rejection's reason, given after the tap (docs/adr/0125-reason-after-reject.md), in process
//! over real HTTP with the demo Maildir and the scripted model on loopback:
//! - Reject decides at once; `POST …/reason` then writes the reason once: the row and the audit
//!   read it, the model is told in the card's conversation (its reply is a chat line);
//! - a second reason, a reason on an approved or pending card, an empty or over-long one, a
//!   body of another shape and a read device are refused (409, 409, 400, 400, 403) and change
//!   nothing; an unknown card is 404.

use crate::support;

use iris_core::ports::Scope;
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::{eventually, TestApp};

const SCRIPT: &str = r#"
rules:
  - when: "(?i)because"
    steps:
      - reply: "Understood, I will leave them alone."
  - when: "(?i)trash"
    steps:
      - call: search_inbox
        args: {category: promotions, limit: 3}
      - call: trash_email
        args: {ids: "$ids"}
        if_empty: "Nothing matched; nothing was trashed."
      - reply: "Moved {trashed} emails to Trash."
        on_rejected: "OK, I left them alone."
fallback: "?"
"#;

#[tokio::test]
async fn a_rejected_card_takes_its_reason_once_and_the_model_is_told() {
    let model = support::ModelServer::start(SCRIPT).await;
    let dir = tempfile::tempdir().unwrap();
    iris_email::demo::write_demo_maildir(&dir.path().join("Maildir"), chrono::Utc::now()).unwrap();
    let server = TestApp::with_model(&model)
        .in_dir(dir)
        .mailbox()
        .background()
        .start()
        .await;
    let control = server.add_device("phone", Scope::Control).await;
    let viewer = server.add_device("tablet", Scope::Read).await;
    let client = server.client().await;
    let ask = || async {
        let (s, halted) = client
            .post(
                "/api/chat",
                Some(&control),
                json!({"message": "trash three promo emails"}),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{halted}");
        (
            halted["approval_id"].as_str().unwrap().to_string(),
            halted["conversation_id"].as_str().unwrap().to_string(),
        )
    };
    let (id, conversation) = ask().await;
    let reason_path = format!("/governance/approvals/{id}/reason");
    let give = |token: &str, body: Value| {
        let (client, path, token) = (&client, reason_path.clone(), token.to_string());
        async move { client.post(&path, Some(&token), body).await }
    };

    // Pending: no reason yet (a reason with the decision goes with `respond`).
    let (s, body) = give(&control, json!({"reason": "not these"})).await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("Only a rejected card"),
        "{body}"
    );

    // A reason given with the answer is held to the same rule (it was stored whole, 10,000
    // characters shown on every surface): refused, and nothing is decided.
    for bad in [json!("x".repeat(501)), json!("a\u{1b}[31m")] {
        let (s, body) = client
            .post(
                &format!("/governance/approvals/{id}/respond"),
                Some(&control),
                json!({"decision": "reject", "reason": bad}),
            )
            .await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains("nothing was changed"),
            "{body}"
        );
        let row = client
            .get(&format!("/governance/approvals/{id}"), &control)
            .await;
        assert_eq!(row["status"], "pending", "{row}");
    }

    let (s, body) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&control),
            json!({"decision": "reject"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert!(body["approval"]["reason"].is_null(), "{body}");

    // Refusals change nothing.
    for (token, request, want) in [
        (
            &viewer,
            json!({"reason": "not these"}),
            StatusCode::FORBIDDEN,
        ),
        (&control, json!({"reason": "   "}), StatusCode::BAD_REQUEST),
        (
            &control,
            json!({"reason": "x".repeat(501)}),
            StatusCode::BAD_REQUEST,
        ),
        (
            &control,
            json!({"why": "not these"}),
            StatusCode::BAD_REQUEST,
        ),
        (
            &control,
            json!({"reason": "a\u{1b}[31m"}),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let (s, body) = give(token, request.clone()).await;
        assert_eq!(s, want, "{request}: {body}");
    }
    let row = client
        .get(&format!("/governance/approvals/{id}"), &control)
        .await;
    assert!(row["reason"].is_null(), "{row}");
    let (s, _) = client
        .post(
            "/governance/approvals/no-such-card/reason",
            Some(&control),
            json!({"reason": "not these"}),
        )
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);

    // The reason, once: on the row, and told to the model in the card's conversation.
    let (s, body) = give(&control, json!({"reason": "  I still need the receipts  "})).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(
        body["approval"]["reason"], "I still need the receipts",
        "{body}"
    );
    let row = client
        .get(&format!("/governance/approvals/{id}"), &control)
        .await;
    assert_eq!(row["reason"], "I still need the receipts", "{row}");
    assert_eq!(row["status"], "rejected");
    let lines = eventually("the model's reply to the reason", || async {
        let said = client
            .get(&format!("/api/conversations/{conversation}"), &control)
            .await;
        let text = said.to_string();
        text.contains("Understood, I will leave them alone.")
            .then_some(text)
    })
    .await;
    assert!(
        lines.contains("I rejected “") && lines.contains("because: I still need the receipts"),
        "{lines}"
    );
    let (s, body) = give(&control, json!({"reason": "changed my mind"})).await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("given already"),
        "{body}"
    );
    assert_eq!(
        client
            .get(&format!("/governance/approvals/{id}"), &control)
            .await["reason"],
        "I still need the receipts"
    );

    // An approved card takes no reason afterwards.
    let (approved, _) = ask().await;
    let (s, body) = client
        .post(
            &format!("/governance/approvals/{approved}/respond"),
            Some(&control),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let (s, body) = client
        .post(
            &format!("/governance/approvals/{approved}/reason"),
            Some(&control),
            json!({"reason": "just because"}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("this one is approved"),
        "{body}"
    );
}
