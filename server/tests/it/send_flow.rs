//! `send_email` end to end over real HTTP with the demo script (part C): "reply to Anna
//! that Thursday works" searches, then halts on a `pinned_write` card naming Anna; nothing goes
//! out until the owner approves; approving sends exactly one mail (to an SMTP sink, or in
//! `iris serve --demo` into `data/demo-outbox/`), a second answer is 409 and nothing is sent
//! again. An invented address never reaches a card, and without a transport nothing does.
//!
//! The server runs in process (`support::TestApp` on a listener, its background work running)
//! with the SMTP sink as its transport; the demo's own outbox is the real `iris serve --demo`.

use crate::support;

use crate::smtp_sink;

use std::path::Path;

use iris_core::ports::Scope;
use iris_core::scripted::DEMO_SCRIPT;
use reqwest::StatusCode;
use serde_json::{json, Value};
use smtp_sink::{Flaky, FlakySmtp, SmtpSink};
use support::{eventually, snapshot, Client, ModelServer, TestApp, World};

const REQUEST: &str = "reply to Anna that Thursday works";

fn files(dir: &Path) -> Vec<Vec<u8>> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect()
}

fn sent_copies(maildir: &Path) -> usize {
    files(&maildir.join(".Sent/cur")).len() + files(&maildir.join(".Sent/new")).len()
}

/// Halts on the reply as the control device `control`, checks the card, approves, waits for the
/// execution; returns the approval after it ran. `delivered` counts what reached the transport,
/// `maildir` is the server's mailbox (its `.Sent` gets a copy).
async fn reply_flow(
    client: &Client,
    control: &str,
    maildir: &Path,
    delivered: impl Fn() -> usize,
) -> Value {
    let control = control.to_owned();
    let sent_before = sent_copies(maildir);
    let (s, halted) = client
        .post("/api/chat", Some(&control), json!({"message": REQUEST}))
        .await;
    assert_eq!(s, StatusCode::OK, "{halted}");
    assert_eq!(halted["status"], "awaiting_approval", "{halted}");
    let reply = halted["reply"].as_str().unwrap_or_default();
    assert!(
        reply.starts_with(
            "I need your approval to send an email to Anna Weber. Nothing has been changed yet."
        ),
        "{halted}"
    );
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let row = client
        .get(&format!("/governance/approvals/{id}"), &control)
        .await;
    assert_eq!(row["kind"], "pinned_write", "{row}");
    assert_eq!(row["tool"], "send_email");
    assert_eq!(row["card"]["title"], "Send an email to Anna Weber", "{row}");
    assert_eq!(row["card"]["action"], "Send email");
    assert_eq!(row["card"]["effect"], "write");
    assert_eq!(row["items"], json!(["anna.weber@example.net"]));
    let lines: Vec<&str> = row["card"]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(
        lines.contains(&"To: Anna Weber <anna.weber@example.net>"),
        "{lines:?}"
    );
    assert!(
        lines.contains(&"Subject: Re: Dinner on Saturday?"),
        "{lines:?}"
    );
    assert!(lines.contains(&"│ Thursday works for me."), "{lines:?}");
    // The pinned arguments hold everything the mail will contain.
    assert_eq!(row["args"]["from"], "owner@example.org");
    assert_eq!(row["args"]["to"], json!(["anna.weber@example.net"]));
    assert!(row["args"]["in_reply_to"].as_str().is_some(), "{row}");
    assert_eq!(delivered(), 0, "nothing goes out before the owner approves");

    let (s, body) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&control),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let row = client.wait_execution(&id, &control, "executed").await;
    assert_eq!(delivered(), 1, "exactly one mail");
    assert_eq!(sent_copies(maildir), sent_before + 1);

    // A second answer is refused and nothing is sent again.
    let (s, _) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&control),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert_eq!(delivered(), 1, "sent once");
    row
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_reply_sends_once_through_smtp() {
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
    reply_flow(&client, &control, &server.maildir(), || {
        sink.messages().len()
    })
    .await;
    let raw = String::from_utf8(sink.messages().remove(0)).unwrap();
    assert!(raw.contains("To: anna.weber@example.net"), "{raw}");
    assert!(raw.contains("Subject: Re: Dinner on Saturday?"), "{raw}");
    assert!(raw.contains("In-Reply-To: <"), "{raw}");
}

// Needs a process: `--demo` (in process `iris::build` would take the demo's database from the
// process's environment, `./data/demo.db` without IRIS_DATABASE_URL).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_reply_is_saved_to_the_demo_outbox() {
    let model = ModelServer::start(DEMO_SCRIPT).await;
    let world = World::new(&model.base_url);
    let server = world.start_with(&["serve", "--demo"]);
    // Beside the demo mailbox (`data/demo-outbox` when the demo keeps its own `data/`).
    let outbox = world.maildir.parent().unwrap().join("demo-outbox");
    // The start-up line names that folder, not the default's.
    let told = server.printed_line("demo: or \"reply to Anna").await;
    assert!(
        told.contains(&format!("saved to {}/, not sent", outbox.display())),
        "{told}"
    );
    let phone = world.add_device("phone", "control");
    reply_flow(&server.client(), &phone, &world.maildir, || {
        files(&outbox).len()
    })
    .await;
    let raw = String::from_utf8(files(&outbox).remove(0)).unwrap();
    assert!(raw.contains("To: anna.weber@example.net"), "{raw}");
    // The owner is told it was saved, not sent.
    let control = world.add_device("tablet", "control");
    let client = server.client();
    let approvals = client.get("/governance/approvals", &control).await;
    let id = approvals["approvals"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let audit = client
        .get(&format!("/api/audit?approval_id={id}"), &control)
        .await;
    assert!(
        audit.to_string().contains("saved_to_demo_outbox"),
        "{audit}"
    );
    drop(server);
}

const INVENTED: &str = r#"
rules:
  - when: "(?i)write to"
    steps:
      - call: send_email
        args: {to: ["stranger@invented.example"], subject: "Hello", body: "Hi there"}
      - reply: "Sent."
fallback: "?"
"#;

/// An address the owner never wrote and their mail never held is refused at normalise: the model
/// gets the error, no approval row exists, nothing reaches the server. Without any transport,
/// the same call is refused for that reason, also before any row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invented_address_and_missing_transport_never_reach_a_card() {
    let sink = SmtpSink::start();
    let model = ModelServer::start(INVENTED).await;
    let server = TestApp::with_model(&model)
        .mailbox()
        .smtp_url(&sink.url())
        .start()
        .await;
    let control = server.token.clone();
    let client = server.client().await;
    let (s, done) = client
        .post(
            "/api/chat",
            Some(&control),
            json!({"message": "write to the stranger"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{done}");
    assert_ne!(done["status"], "awaiting_approval", "{done}");
    assert!(done["approval_id"].is_null(), "{done}");
    assert!(
        done["reply"]
            .as_str()
            .unwrap()
            .contains("stranger@invented.example"),
        "{done}"
    );
    let approvals = client.get("/governance/approvals", &control).await;
    assert_eq!(approvals["approvals"], json!([]), "no approval row");
    assert!(sink.messages().is_empty());

    // The same database served again without IRIS_SMTP_URL (and not the demo): refused, naming
    // the missing setting.
    let server = TestApp::with_model(&model)
        .in_dir(server.dir)
        .mailbox()
        .start()
        .await;
    let client = server.client().await;
    let (_, done) = client
        .post(
            "/api/chat",
            Some(&control),
            json!({"message": "write to stranger@invented.example"}),
        )
        .await;
    assert!(
        done["reply"].as_str().unwrap().contains("no IRIS_SMTP_URL"),
        "{done}"
    );
    let approvals = client.get("/governance/approvals", &control).await;
    assert_eq!(approvals["approvals"], json!([]), "no approval row");
}

/// The SMTP server takes the message and drops the connection before answering: nobody knows
/// whether it was delivered, so the row's execution is `unknown` (never `failed`: it may have
/// gone out), the owner is told, and the mail was handed over exactly once (no retry).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_outcome_is_recorded_unknown_and_never_retried() {
    let flaky = FlakySmtp::start(Flaky::DropAfterData).await;
    let model = ModelServer::start(DEMO_SCRIPT).await;
    let server = TestApp::with_model(&model)
        .mailbox()
        .smtp_url(&flaky.url())
        .background()
        .start()
        .await;
    let control = server.token.clone();
    let client = server.client().await;
    let (_, halted) = client
        .post("/api/chat", Some(&control), json!({"message": REQUEST}))
        .await;
    assert_eq!(halted["status"], "awaiting_approval", "{halted}");
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let conversation = halted["conversation_id"].as_str().unwrap().to_string();
    let (s, _) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&control),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let row = client.wait_execution(&id, &control, "unknown").await;
    assert_eq!(row["status"], "approved");
    let reply = eventually("the resumed run's reply", || {
        let client = &client;
        let (c, t) = (conversation.clone(), control.clone());
        async move {
            let r = client.last_reply(&c, &t).await;
            r.contains("unknown").then_some(r)
        }
    })
    .await;
    assert!(reply.contains("will not be sent again"), "{reply}");
    assert_eq!(
        flaky.messages_handed(),
        1,
        "handed over once, never retried"
    );
}

/// "Undo that" undoes the last action of its own conversation, once (DESIGN §5
/// "restore_email"): after a sent mail it says a sent mail cannot be unsent instead of
/// restoring an older trash (before, it restored the newest batch of any conversation); in a
/// conversation that trashed nothing it restores nothing; in the trashing conversation it
/// restores that batch, and asked again it says the batch was undone already. The mail goes to
/// an SMTP sink.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_that_undoes_the_last_action_of_its_own_conversation_once() {
    let sink = SmtpSink::start();
    let model = ModelServer::start(DEMO_SCRIPT).await;
    let server = TestApp::with_model(&model)
        .mailbox()
        .smtp_url(&sink.url())
        .background()
        .start()
        .await;
    let control = server.token.clone();
    let client = server.client().await;
    let maildir = server.maildir();
    let in_trash = || {
        snapshot(&maildir)
            .keys()
            .filter(|k| k.starts_with(".Trash/"))
            .count()
    };
    let say = |message: &str, conversation: Option<&str>| {
        let (client, control) = (&client, &control);
        let mut body = json!({"message": message});
        if let Some(c) = conversation {
            body["conversation_id"] = json!(c);
        }
        async move {
            let (s, turn) = client.post("/api/chat", Some(control), body).await;
            assert_eq!(s, StatusCode::OK, "{turn}");
            turn
        }
    };
    let approve = |turn: Value| {
        let (client, control) = (&client, &control);
        async move {
            let id = turn["approval_id"].as_str().expect("a card").to_string();
            let (s, body) = client
                .post(
                    &format!("/governance/approvals/{id}/respond"),
                    Some(control),
                    json!({"decision": "approve"}),
                )
                .await;
            assert_eq!(s, StatusCode::OK, "{body}");
            client.wait_execution(&id, control, "executed").await;
            turn["conversation_id"].as_str().unwrap().to_string()
        }
    };

    let trashing = approve(say("trash the promo emails from this week", None).await).await;
    let n = in_trash();
    assert!(n > 0);
    let sending = approve(say(REQUEST, None).await).await;

    let after_send = say("undo that", Some(&sending)).await;
    let reply = after_send["reply"].as_str().unwrap();
    assert!(reply.contains("cannot be unsent"), "{reply}");
    assert!(reply.contains("Re: Dinner on Saturday?"), "{reply}");
    assert_eq!(in_trash(), n, "an older trash was restored: {reply}");

    let elsewhere = say("undo that", None).await;
    let reply = elsewhere["reply"].as_str().unwrap();
    assert!(
        reply.contains("nothing was trashed in this conversation"),
        "{reply}"
    );
    assert_eq!(
        in_trash(),
        n,
        "another conversation's trash was restored: {reply}"
    );

    let undone = say("undo that", Some(&trashing)).await;
    assert_eq!(
        undone["reply"],
        format!("Restored {n} emails from Trash to where they were.")
    );
    assert_eq!(in_trash(), 0);
    let again = say("undo that", Some(&trashing)).await;
    let reply = again["reply"].as_str().unwrap();
    assert!(reply.contains("was undone already"), "{reply}");
    assert_eq!(in_trash(), 0);
    assert_eq!(sink.messages().len(), 1, "the reply went out once");
}
