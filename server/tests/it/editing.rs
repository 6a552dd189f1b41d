//! Editing a call before approving it (docs/adr/0122-shaping-a-call.md), in process over real
//! HTTP with the demo mailbox, the scripted model on loopback and a real SMTP sink:
//!
//! - a reply's card lists the fields the owner may edit (`card.editable`);
//! - an edit of a field the card does not let them edit, an edit with a rejection or with a
//!   choice of items, and an edit of `to` to an address that is neither in the owner's request
//!   nor in their mail are 400, naming the field and the rule, and the card stays waiting;
//! - an edit of the body is checked, pinned as the decision's call under its own hash, and sent
//!   exactly once as edited; the row, the audit and the resumed model's observation say it was
//!   edited by the owner and what changed; the card's words say "Approved as you edited it";
//! - the web card's form texts are made into the edit by the server (its page's own server
//!   functions), and a form of the wrong shape, an unknown card or an edit that is not an
//!   object are 4xx and change nothing.

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

/// A server with the demo mailbox, the scripted model on loopback and a real SMTP sink, and
/// the reply card the owner's request halted on.
struct ReplyCard {
    sink: SmtpSink,
    client: support::Client,
    /// A `control` device's token.
    control: String,
    /// The chat's answer (`awaiting_approval`).
    halted: serde_json::Value,
    /// The card's id.
    id: String,
    _server: TestApp,
    _model: ModelServer,
}

async fn reply_card() -> ReplyCard {
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
    ReplyCard {
        sink,
        client,
        control,
        halted,
        id,
        _server: server,
        _model: model,
    }
}

/// The mails the sink has received, once there is one.
async fn first_mail(sink: &SmtpSink) -> Vec<Vec<u8>> {
    eventually("the edited mail in the sink", || async {
        let m = sink.messages();
        (!m.is_empty()).then_some(m)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_reply_is_checked_pinned_and_sent_once_as_edited() {
    let card = reply_card().await;
    let (sink, client, halted) = (&card.sink, &card.client, &card.halted);
    let (control, id) = (card.control.clone(), card.id.clone());
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
    let sent = first_mail(sink).await;
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

/// The web card's edit, through the page's own server functions (docs/adr/0122-shaping-a-call.md:
/// the browser sends the form's texts, the server makes them into the edit and words the
/// dialog): texts as the form showed them are no edit; changed texts are reviewed (checked as
/// the approval will be) into the changed fields and the dialog's lines; a form of the wrong
/// shape (400), an unknown card (404) and an edit that is not a JSON object (400) change
/// nothing; the reviewed edit, sent back, approves the call as edited, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_cards_texts_are_reviewed_into_the_edit_that_approving_sends() {
    use leptos::server_fn::ServerFn;

    let card = reply_card().await;
    let (sink, client) = (&card.sink, &card.client);
    let (control, id) = (card.control.clone(), card.id.clone());
    let path = format!("/governance/approvals/{id}");
    let pinned = client.get(&path, &control).await;
    let shown = |field: &str| match &pinned["args"][field] {
        serde_json::Value::Array(list) => list
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect::<Vec<_>>()
            .join(", "),
        other => other.as_str().unwrap().to_owned(),
    };
    let (to, subject, body) = (shown("to"), shown("subject"), shown("body"));
    let review = app::api::ReviewEdit::PATH;
    let respond = app::api::RespondApproval::PATH;

    // The page's review of the form's texts, as the dialog asks for it.
    let review_typed =
        |typed: [&str; 3]| client.post(review, Some(&control), json!({"id": id, "typed": typed}));

    // The form as it opened: no edit, no lines (the dialog is the pinned call's).
    let (s, same) = review_typed([&to, &subject, &body]).await;
    assert_eq!(s, StatusCode::OK, "{same}");
    assert_eq!(same, json!({"edits": null, "lines": []}));

    // The body changed over two lines: only it is the edit, told as a line diff.
    let edited_body = format!("{body}\n{EDITED_BODY}");
    let (s, reviewed) = review_typed([&to, &subject, &edited_body]).await;
    assert_eq!(s, StatusCode::OK, "{reviewed}");
    let edits: serde_json::Value =
        serde_json::from_str(reviewed["edits"].as_str().unwrap()).unwrap();
    assert_eq!(edits, json!({"body": edited_body}));
    let lines: Vec<&str> = reviewed["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(lines[0], "Body (edited by you):", "{lines:?}");
    assert!(lines.contains(&"  Thursday works for me."), "{lines:?}");
    assert!(
        lines.contains(&"+ Thursday works, and I will bring the salad."),
        "{lines:?}"
    );

    // Refused, changing nothing: a form of the wrong shape, a card nobody has, an edit that
    // is not an object; the edit the approval would refuse is refused at review already.
    for (url, request, status) in [
        (
            review,
            json!({"id": id, "typed": [to]}),
            StatusCode::BAD_REQUEST,
        ),
        (
            review,
            json!({"id": "no-such-card", "typed": []}),
            StatusCode::NOT_FOUND,
        ),
        (
            respond,
            json!({"id": id, "decision": "approve", "reason": null, "items": null, "edits": "[1]"}),
            StatusCode::BAD_REQUEST,
        ),
        (
            review,
            json!({"id": id, "typed": ["stranger@invented.example", subject, body]}),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let (s, answer) = client.post(url, Some(&control), request.clone()).await;
        assert_eq!(s, status, "{url} {request} → {answer}");
    }
    assert_eq!(client.get(&path, &control).await["status"], "pending");
    assert!(sink.messages().is_empty());

    // The reviewed edit, sent back as the confirm sends it: approved as edited, sent once.
    let (s, answered) = client
        .post(
            respond,
            Some(&control),
            json!({"id": id, "decision": "approve", "reason": null, "items": null, "edits": reviewed["edits"]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{answered}");
    assert_eq!(answered["edited_fields"], json!(["body"]), "{answered}");
    let sent = first_mail(sink).await;
    let raw = String::from_utf8(sent[0].clone())
        .unwrap()
        .replace("\r\n", "\n");
    assert!(raw.contains("I will bring the salad."), "{raw}");
    assert_eq!(sink.messages().len(), 1);
}
