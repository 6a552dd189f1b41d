//! The trash flow over real HTTP with an IMAP account: the server in process
//! (`support::TestApp` on a listener, its background work running) whose one mail account is a
//! private Dovecot on loopback
//! (`plugins/email/tests/it/dovecot/`), the chat driven by a scripted model. The halted call moves
//! nothing; approving moves exactly the pinned message into Dovecot's Trash, nothing is expunged,
//! and `restore_email` brings it back. Approving two of three (docs/adr/0122-shaping-a-call.md)
//! moves exactly those two; the third stays in INBOX, and the undo brings back the two.

use crate::support;

use crate::dovecot;

use iris::config::AccountSetting;
use iris_core::ports::Scope;
use reqwest::StatusCode;
use serde_json::json;
use support::{eventually, ModelServer, TestApp};

const SCRIPT: &str = r#"
rules:
  - when: "(?i)undo"
    steps:
      - call: restore_email
        args: {}
      - reply: "Restored {restored}."
  - when: "(?i)trash"
    steps:
      - call: search_inbox
        args: {query: "winter jackets"}
      - call: trash_email
        args: {ids: "$ids"}
        if_empty: "Nothing matched; nothing was trashed."
      - reply: "Done: moved {trashed} emails to Trash."
        on_rejected: "OK, I left them alone. Nothing was changed, sent or deleted."
fallback: "?"
"#;

fn message(subject: &str, id: &str) -> Vec<u8> {
    format!(
        "From: Northwind <deals@northwind.example>\r\nTo: owner@example.org\r\nSubject: {subject}\r\nDate: Sat, 28 Nov 2026 10:15:00 +0100\r\nMessage-ID: <{id}>\r\n\r\nHello.\r\n"
    )
    .into_bytes()
}

/// A server in process whose one mail account is Dovecot `d`, with `SCRIPT`'s model.
async fn imap_server(d: &dovecot::Dovecot, model: &ModelServer) -> TestApp {
    TestApp::with_model(model)
        .email_account(AccountSetting {
            name: "personal".into(),
            address: "owner@example.org".into(),
            kind: "imap".into(),
            path: None,
            host: Some("127.0.0.1".into()),
            port: Some(d.port),
            user: Some(dovecot::USER.into()),
            password_env: Some(dovecot::PASSWORD_ENV.into()),
        })
        .background()
        .start()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_two_of_three_moves_exactly_those_in_dovecot_and_the_undo_brings_back_two() {
    let d = dovecot::Dovecot::start();
    for (n, id) in ["a", "b", "c"].iter().enumerate() {
        d.deliver(
            "INBOX",
            &format!("{}.host", n + 1),
            &message(
                &format!("winter jackets, offer {id}"),
                &format!("{id}@northwind.example"),
            ),
        );
    }
    let model = ModelServer::start(SCRIPT).await;
    let server = imap_server(&d, &model).await;
    let control = server.add_device("phone", Scope::Control).await;
    let client = server.client().await;
    let halted = client.halt(&control, "trash the winter jackets mail").await;
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let row = client
        .get(&format!("/governance/approvals/{id}"), &control)
        .await;
    let lines: Vec<String> = serde_json::from_value(row["card"]["lines"].clone()).unwrap();
    assert_eq!(lines.len(), 3, "{row}");
    // The one left out, by its line (the order of the card's items is the search's).
    let left_out = lines[1].clone();
    let (s, body) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&control),
            json!({"decision": "approve", "items": [0, 2]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    eventually(
        "two messages in Dovecot's Trash, one left in INBOX",
        || async { (d.count("Trash") == 2 && d.count("INBOX") == 1).then_some(()) },
    )
    .await;
    let kept = String::from_utf8(d.messages("INBOX").remove(0)).unwrap();
    let offer = |text: &str| {
        ["a", "b", "c"]
            .into_iter()
            .find(|id| text.contains(&format!("offer {id}")))
            .unwrap()
    };
    assert_eq!(
        offer(&kept),
        offer(&left_out),
        "the one left out stayed: {kept}"
    );
    let done = client.wait_execution(&id, &control, "executed").await;
    assert_eq!(done["approved_items"], json!([0, 2]), "{done}");

    let conversation = halted["conversation_id"].as_str().unwrap().to_string();
    let (s, undone) = client
        .post(
            "/api/chat",
            Some(&control),
            json!({"message": "undo that", "conversation_id": conversation}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{undone}");
    eventually("the two back in INBOX", || async {
        (d.count("INBOX") == 3 && d.count("Trash") == 0).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_a_trash_moves_the_message_into_dovecots_trash() {
    let d = dovecot::Dovecot::start();
    d.deliver(
        "INBOX",
        "1.host",
        &message("20% off winter jackets", "p1@northwind.example"),
    );
    d.deliver(
        "INBOX",
        "2.host",
        &message("Your order has shipped", "o1@northwind.example"),
    );

    let model = ModelServer::start(SCRIPT).await;
    // The password is read from `dovecot::PASSWORD_ENV`, which `Dovecot::start` set.
    let server = imap_server(&d, &model).await;
    let control = server.add_device("phone", Scope::Control).await;
    let client = server.client().await;

    let halted = client.halt(&control, "trash the winter jackets mail").await;
    assert_eq!(
        (d.count("INBOX"), d.count("Trash")),
        (2, 0),
        "a halted call moved mail"
    );
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let row = client
        .get(&format!("/governance/approvals/{id}"), &control)
        .await;
    assert_eq!(row["tool"], "trash_email");
    assert_eq!(row["items"].as_array().unwrap().len(), 1, "{row}");
    assert!(
        row["card"]["lines"][0]
            .as_str()
            .unwrap()
            .contains("20% off winter jackets"),
        "{row}"
    );

    let (s, body) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&control),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    // Dovecot's MOVE on Maildir links the file into Trash, then unlinks it from INBOX: wait
    // for both halves before reading the folders.
    eventually(
        "the message in Dovecot's Trash and out of INBOX",
        || async { (d.count("Trash") == 1 && d.count("INBOX") == 1).then_some(()) },
    )
    .await;
    let trashed = String::from_utf8(d.messages("Trash").remove(0)).unwrap();
    assert!(
        trashed.contains("Message-ID: <p1@northwind.example>"),
        "{trashed}"
    );
    assert_eq!(d.count("INBOX"), 1, "nothing else moved, nothing expunged");
    let conversation = halted["conversation_id"].as_str().unwrap().to_string();
    let reply = eventually("the approved run's reply", || {
        let client = &client;
        let (c, t) = (conversation.clone(), control.clone());
        async move {
            let r = client.last_reply(&c, &t).await;
            r.contains("Done").then_some(r)
        }
    })
    .await;
    assert!(reply.contains("moved 1"), "{reply}");

    // "Undo that" (restore_email, confirm never) puts it back.
    let (s, undone) = client
        .post(
            "/api/chat",
            Some(&control),
            json!({"message": "undo that", "conversation_id": conversation}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{undone}");
    assert_eq!(undone["status"], "done", "{undone}");
    assert_eq!((d.count("INBOX"), d.count("Trash")), (2, 0), "{undone}");
}
