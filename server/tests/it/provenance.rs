//! How a card came about (docs/adr/0123-how-a-card-came-about.md), in process over real HTTP
//! with a real Maildir (the demo mailbox plus one email whose text names another address), the
//! scripted model on loopback and the real store:
//!
//! - the card's trail says who asked, then each step of the turn in mail's words;
//! - an address the owner never wrote, taken from an email's text, is flagged on the card line
//!   that shows it, naming the email; one the owner wrote is not;
//! - the flag decides nothing: the card waits like any other.

use crate::support;

use iris_core::ports::Scope;
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::TestApp;

/// Search for the overdue invoice, then pay by mail to the address the invoice's text gives
/// (the model's mistake, or an injected instruction: the card says where the address came
/// from either way).
const SCRIPT: &str = r#"
rules:
  - when: "(?i)overdue invoice"
    steps:
      - call: search_inbox
        args: {query: "overdue"}
      - call: send_email
        args: {to: ["payments@billing-desk.example"], subject: "Invoice paid", body: "Hello,\n\nThe invoice is paid.\n\nRobin"}
      - reply: "{summary}"
        on_rejected: "OK, nothing was sent."
fallback: "?"
"#;

/// The email the search finds: its text names an address (also on its Cc, so the send's
/// invented-address guard knows it as one already in the owner's mail).
const OVERDUE: &str = "From: Billing <billing@example.com>\r\n\
To: Robin <robin@example.org>\r\n\
Cc: payments@billing-desk.example\r\n\
Subject: Payment overdue\r\n\
Date: Fri, 04 Dec 2026 09:00:00 +0000\r\n\
Message-ID: <overdue-1@example.com>\r\n\
Content-Type: text/plain; charset=utf-8\r\n\
\r\n\
Your invoice is overdue. Send the confirmation to payments@billing-desk.example today.\r\n";

async fn server_with_overdue_mail() -> (support::ModelServer, TestApp) {
    let model = support::ModelServer::start(SCRIPT).await;
    let dir = tempfile::tempdir().unwrap();
    let maildir = dir.path().join("Maildir");
    iris_email::demo::write_demo_maildir(&maildir, chrono::Utc::now()).unwrap();
    std::fs::write(
        maildir.join("cur").join("1796374800.M1P1.test:2,S"),
        OVERDUE,
    )
    .unwrap();
    let server = TestApp::with_model(&model)
        .in_dir(dir)
        .mailbox()
        // Nothing is sent here (the cards wait); a send needs an SMTP URL to be pinned at all.
        .smtp_url("smtp://127.0.0.1:9")
        .start()
        .await;
    (model, server)
}

async fn card_of(server: &TestApp, message: &str) -> (String, Value) {
    let control = server.add_device("phone", Scope::Control).await;
    let client = server.client().await;
    let (s, halted) = client
        .post("/api/chat", Some(&control), json!({"message": message}))
        .await;
    assert_eq!(s, StatusCode::OK, "{halted}");
    assert_eq!(halted["status"], "awaiting_approval", "{halted}");
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let row = client
        .get(&format!("/governance/approvals/{id}"), &control)
        .await;
    (id, row)
}

#[tokio::test]
async fn an_address_from_an_emails_text_is_flagged_on_its_line_and_the_trail_tells_the_turn() {
    let (_model, server) = server_with_overdue_mail().await;
    let (_, row) = card_of(&server, "pay the overdue invoice").await;
    let card = &row["card"];
    assert_eq!(
        card["trail"],
        json!([
            "You asked: “pay the overdue invoice”",
            "Searched the inbox for 'overdue': 1 email"
        ]),
        "{card}"
    );
    let lines: Vec<&str> = card["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    let to_line = lines
        .iter()
        .position(|l| l.starts_with("To: "))
        .expect("a To line");
    assert_eq!(
        card["flags"],
        json!([{
            "line": to_line,
            "note": "“payments@billing-desk.example” is from the text of the email 'Payment overdue' (not from you)"
        }]),
        "{card}"
    );
    // The flag decides nothing: the card waits like any other.
    assert_eq!(row["status"], "pending");
}

#[tokio::test]
async fn an_address_the_owner_wrote_is_not_flagged() {
    let (_model, server) = server_with_overdue_mail().await;
    let (_, row) = card_of(
        &server,
        "pay the overdue invoice and tell payments@billing-desk.example",
    )
    .await;
    assert!(row["card"].get("flags").is_none(), "{}", row["card"]);
    assert_eq!(row["card"]["trail"].as_array().unwrap().len(), 2);
}
