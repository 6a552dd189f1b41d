//! Editing a call before approving it (docs/adr/0122-shaping-a-call.md), in process over real
//! HTTP with the demo mailbox, the scripted model on loopback and a real SMTP sink:
//!
//! - a reply's card lists the fields the owner may edit (`card.editable`);
//! - an edit of a field the card does not let them edit, an edit with a rejection or with a
//!   choice of items, and an edit of `to` to an address that is neither in the owner's request
//!   nor in their mail are 400, naming the field and the rule, and the card stays waiting;
//! - an edit of the body is checked, pinned as the decision's call under its own hash, and sent
//!   exactly once as edited; the row, the audit and the resumed model's observation say it was
//!   edited by the owner and what changed; the card's words say "Approved as you edited it".

use crate::smtp_sink;
use crate::support;

use iris_core::ports::Scope;
use iris_core::scripted::DEMO_SCRIPT;
use reqwest::StatusCode;
use serde_json::json;
use smtp_sink::SmtpSink;
use support::{eventually, ModelServer, TestApp};

const REQUEST: &str = "reply to Anna that Thursday works";
const EDITED_BODY: &str = "Hi Anna,\n\nThursday works, and I will bring the salad.\n\nRobin";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_reply_is_checked_pinned_and_sent_once_as_edited() {
    let sink = SmtpSink::start();
    let model = ModelServer::start(DEMO_SCRIPT).await;
    let server = TestApp::with_model(&model)
        .mailbox()
        .smtp_url(&sink.url())
        .background()
        .start()
        .await;
    let control = server.add_device("phone", Scope::Control).await;
    let client = server.client().await;
    let (s, halted) = client
        .post("/api/chat", Some(&control), json!({"message": REQUEST}))
        .await;
    assert_eq!(s, StatusCode::OK, "{halted}");
    assert_eq!(halted["status"], "awaiting_approval", "{halted}");
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let conversation = halted["conversation_id"].as_str().unwrap().to_string();
    let path = format!("/governance/approvals/{id}");
    let pinned = client.get(&path, &control).await;
    assert_eq!(pinned["tool"], "send_email");
    assert_eq!(pinned["card"]["editable"], json!(["to", "subject", "body"]));

    // Refused, naming the field and the rule; the card stays waiting and nothing is sent.
    for (body, says) in [
        (
            json!({"decision": "approve", "edits": {"from": "robin@example.org"}}),
            "`from` cannot be edited on this card",
        ),
        (
            json!({"decision": "reject", "edits": {"body": "x"}}),
            "only goes with \"approve\"",
        ),
        (
            json!({"decision": "approve", "items": [0], "edits": {"body": "x"}}),
            "not both",
        ),
        (
            json!({"decision": "approve", "edits": {"to": ["stranger@invented.example"]}}),
            "`stranger@invented.example` is neither in the owner's request",
        ),
        (
            json!({"decision": "approve", "edits": {"body": ""}}),
            "the edited call was refused",
        ),
        (
            json!({"decision": "approve", "edits": {}}),
            "`edits` is empty",
        ),
    ] {
        let (s, refused) = client
            .post(&format!("{path}/respond"), Some(&control), body.clone())
            .await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body} → {refused}");
        let error = refused["error"].as_str().unwrap_or_default();
        assert!(error.contains(says), "{body} → {error}");
    }
    assert_eq!(client.get(&path, &control).await["status"], "pending");
    assert!(sink.messages().is_empty(), "a refused edit sent mail");

    // The body, edited.
    let (s, body) = client
        .post(
            &format!("{path}/respond"),
            Some(&control),
            json!({"decision": "approve", "edits": {"body": EDITED_BODY}}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let answered = &body["approval"];
    assert_eq!(answered["edited_fields"], json!(["body"]), "{body}");
    assert_eq!(answered["decided_call"]["args"]["body"], EDITED_BODY);
    assert_eq!(answered["decided_call"]["args"]["to"], pinned["args"]["to"]);
    assert_ne!(answered["decided_call"]["call_hash"], answered["call_hash"]);
    // The request's terms are as they were.
    assert_eq!(answered["args"], pinned["args"]);
    let row = client.wait_execution(&id, &control, "executed").await;
    assert_eq!(row["result"]["edited"]["fields"], json!(["body"]), "{row}");

    // Sent once, as edited.
    let sent = eventually("the edited mail in the sink", || async {
        let m = sink.messages();
        (!m.is_empty()).then_some(m)
    })
    .await;
    assert_eq!(sent.len(), 1);
    let raw = String::from_utf8(sent[0].clone())
        .unwrap()
        .replace("\r\n", "\n");
    assert!(raw.contains("I will bring the salad."), "{raw}");
    assert!(raw.contains("To: anna.weber@example.net"), "{raw}");

    // The audit's decision names the edit; the model was told; every surface's words say so.
    let audit = client
        .get(&format!("/api/audit?approval_id={id}"), &control)
        .await;
    let decision = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "decision")
        .cloned()
        .unwrap();
    assert_eq!(
        decision["result"]["edited_fields"],
        json!(["body"]),
        "{decision}"
    );
    let line = eventually("IRIS's end line", || {
        let client = &client;
        let (c, t) = (conversation.clone(), control.clone());
        async move {
            let lines =
                client.get(&format!("/api/conversations/{c}"), &t).await["lines"].to_string();
            lines
                .contains("You edited the body before approving.")
                .then_some(lines)
        }
    })
    .await;
    assert!(line.contains("Approved"), "{line}");
    let approval: iris_core::wire::Approval = serde_json::from_value(row.clone()).unwrap();
    assert!(
        app::format::execution_sentence(&approval).starts_with("Approved as you edited it (body).")
    );

    // Never again: a second answer is 409; one mail in all.
    let (s, _) = client
        .post(
            &format!("{path}/respond"),
            Some(&control),
            json!({"decision": "approve", "edits": {"body": "again"}}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert_eq!(sink.messages().len(), 1);
}
