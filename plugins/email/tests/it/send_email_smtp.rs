//! `send_email` executing for real: through lettre to an aiosmtpd sink on loopback (the message's
//! headers and body as pinned), the Sent copy stored and synced, reply threading, the sender
//! rules on the wire, the demo outbox, and failures (refused, outcome unknown, no Sent copy)
//! that never send twice. The local store runs on SQLite and PostgreSQL.

use crate::common;
use crate::send_support;

use std::sync::Arc;

use async_trait::async_trait;
use common::*;
use iris_core::plugin::{Plugin, ToolError};
use iris_email::backend::{
    Appended, BackendError, Folder, Listed, MessageRef, RestoreOutcome, TrashOutcome, TrashedRef,
};
use iris_email::{AccountInfo, EmailPlugin, MailBackend, MaildirBackend, Outbox};
use mail_parser::{HeaderValue, MessageParser};
use send_support::smtp_sink::{Flaky, FlakySmtp, SmtpSink};
use send_support::*;
use serde_json::{json, Value};

const TOOL: &str = "send_email";

/// Normalises (as the agent does before the row) and executes (as the approved resume does).
async fn send(p: &EmailPlugin, args: Value, request: &str) -> Result<Value, ToolError> {
    let ctx = said(request);
    let pinned = p.normalise(TOOL, args, &ctx).await?;
    p.execute(TOOL, &pinned, &ctx).await.map(|o| o.result)
}

/// The captured message's header as text ("" when absent).
fn header(raw: &[u8], name: &str) -> String {
    let m = MessageParser::default().parse(raw).unwrap();
    let v = m
        .header_raw(name)
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    v
}

fn body(raw: &[u8]) -> String {
    let m = MessageParser::default().parse(raw).unwrap();
    m.body_text(0).unwrap().into_owned()
}

fn ids(raw: &[u8], name: &str) -> Vec<String> {
    let m = MessageParser::default().parse(raw).unwrap();
    match m.header(name) {
        Some(HeaderValue::Text(t)) => vec![t.to_string()],
        Some(HeaderValue::TextList(l)) => l.iter().map(|s| s.to_string()).collect(),
        _ => Vec::new(),
    }
}

async fn sends_exactly_the_pinned_mail(engine: Engine) {
    let sink = SmtpSink::start();
    let boxes = Mailboxes::new();
    let db = engine.open().await;
    let p = boxes
        .plugin(&db.store, Outbox::smtp(&sink.url()).unwrap())
        .await;
    let r = send(
        &p,
        json!({"to": ["anna.weber@example.net"], "cc": ["carol@example.net"],
               "subject": "Thursday", "body": "Hi Anna,\n\nThursday works. Grüße!\n\nRobin"}),
        "tell Anna Thursday works, cc Carol",
    )
    .await
    .unwrap();
    assert_eq!(r["status"], "sent", "{r}");
    let mid = r["message_id"].as_str().unwrap().to_string();
    assert!(mid.ends_with("@example.org"), "{mid}");

    let got = sink.messages();
    assert_eq!(got.len(), 1, "exactly one mail reached the server");
    let raw = &got[0];
    assert_eq!(header(raw, "From"), "owner@example.org");
    assert_eq!(header(raw, "To"), "anna.weber@example.net");
    assert_eq!(header(raw, "Cc"), "carol@example.net");
    assert_eq!(header(raw, "Subject"), "Thursday");
    assert_eq!(header(raw, "Message-ID"), format!("<{mid}>"));
    assert_eq!(header(raw, "Date"), "Mon, 30 Nov 2026 09:30:00 +0000");
    assert_eq!(header(raw, "In-Reply-To"), "");
    assert_eq!(header(raw, "References"), "");
    assert_eq!(header(raw, "Bcc"), "");
    // The envelope is exactly To + Cc (aiosmtpd records it as X-RcptTo).
    assert_eq!(
        header(raw, "X-RcptTo"),
        "anna.weber@example.net, carol@example.net"
    );
    assert_eq!(
        body(raw).replace("\r\n", "\n").trim_end(),
        "Hi Anna,\n\nThursday works. Grüße!\n\nRobin"
    );

    // The Sent copy is in the account's Sent folder and in the local store (searchable).
    assert_eq!(r["sent_copy"]["folder"], "Sent", "{r}");
    let copies = sent_copies(&boxes.personal());
    assert_eq!(copies.len(), 1);
    assert_eq!(header(&copies[0], "Message-ID"), format!("<{mid}>"));
    let found = search(&p, json!({"query": "thursday"})).await;
    let hits = found["results"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{found}");
    assert_eq!(hits[0]["folder"], "Sent");
    assert!(sent_copies(&boxes.work()).is_empty());
    // A later sync finds the stored copy's key known: still one row, same id.
    let report = p.sync().await.unwrap();
    assert!(report.accounts.iter().all(|a| a.added == 0), "{report:?}");
    let again = search(&p, json!({"query": "thursday"})).await;
    assert_eq!(again["results"], found["results"]);
}

async fn reply_is_threaded_from_the_receiving_account(engine: Engine) {
    let sink = SmtpSink::start();
    let boxes = Mailboxes::new();
    let db = engine.open().await;
    // The default sender is personal, but the original arrived at work: the reply keeps work.
    let p = boxes
        .plugin(&db.store, Outbox::smtp(&sink.url()).unwrap())
        .await
        .with_default_sender("personal");
    let budget = id_of(&p, "Budget").await;
    let r = send(
        &p,
        json!({"reply_to_id": budget, "body": "Numbers attached below."}),
        "reply to the boss",
    )
    .await
    .unwrap();
    let got = sink.messages();
    assert_eq!(got.len(), 1);
    let raw = &got[0];
    assert_eq!(header(raw, "From"), "owner@work.example");
    assert_eq!(header(raw, "To"), "boss@work.example");
    assert_eq!(header(raw, "Subject"), "Re: Budget");
    assert_eq!(header(raw, "In-Reply-To"), "<budget-1@work.example>");
    assert_eq!(ids(raw, "References"), vec!["budget-1@work.example"]);
    assert!(r["message_id"].as_str().unwrap().ends_with("@work.example"));
    assert_eq!(sent_copies(&boxes.work()).len(), 1);
    assert!(sent_copies(&boxes.personal()).is_empty());

    // A reply deeper in a thread carries the whole chain; Reply-To decides the recipient.
    let dinner = id_of(&p, "Dinner on Saturday?").await;
    send(
        &p,
        json!({"reply_to_id": dinner, "body": "Yes!"}),
        "reply to Anna",
    )
    .await
    .unwrap();
    let club = id_of(&p, "Re: Next book").await;
    send(
        &p,
        json!({"reply_to_id": club, "body": "Dune."}),
        "answer the club",
    )
    .await
    .unwrap();
    let got = sink.messages();
    assert_eq!(got.len(), 3);
    let dinner_reply = got
        .iter()
        .find(|m| header(m, "Subject") == "Re: Dinner on Saturday?")
        .unwrap();
    assert_eq!(header(dinner_reply, "From"), "owner@example.org");
    assert_eq!(
        header(dinner_reply, "In-Reply-To"),
        "<dinner-2@example.net>"
    );
    assert_eq!(
        ids(dinner_reply, "References"),
        vec![
            "dinner-0@example.net",
            "dinner-1@example.org",
            "dinner-2@example.net"
        ]
    );
    let club_reply = got
        .iter()
        .find(|m| header(m, "Subject") == "Re: Next book")
        .unwrap();
    assert_eq!(header(club_reply, "To"), "mia@books.example");
}

async fn sender_rules_on_the_wire(engine: Engine) {
    let sink = SmtpSink::start();
    let boxes = Mailboxes::new();
    let db = engine.open().await;
    let args = |extra: Value| {
        let mut a = json!({"to": ["anna.weber@example.net"], "subject": "S", "body": "B"});
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        a
    };
    let p = boxes
        .plugin(&db.store, Outbox::smtp(&sink.url()).unwrap())
        .await;
    send(&p, args(json!({})), "x").await.unwrap();
    send(&p, args(json!({"from": "work"})), "x").await.unwrap();
    let p = p.with_default_sender("owner@work.example");
    send(&p, args(json!({})), "x").await.unwrap();
    let mut froms: Vec<String> = sink.messages().iter().map(|m| header(m, "From")).collect();
    froms.sort();
    assert_eq!(
        froms,
        vec![
            "owner@example.org",
            "owner@work.example",
            "owner@work.example"
        ]
    );
    assert_eq!(sent_copies(&boxes.personal()).len(), 1);
    assert_eq!(sent_copies(&boxes.work()).len(), 2);
}

async fn invented_address_never_reaches_the_server(engine: Engine) {
    let sink = SmtpSink::start();
    let boxes = Mailboxes::new();
    let db = engine.open().await;
    let p = boxes
        .plugin(&db.store, Outbox::smtp(&sink.url()).unwrap())
        .await;
    let r = send(
        &p,
        json!({"to": ["anna@invented.example"], "subject": "S", "body": "B"}),
        "write to Anna",
    )
    .await;
    assert!(
        matches!(&r, Err(ToolError::InvalidArgs { reason, .. }) if reason.contains("anna@invented.example")),
        "{r:?}"
    );
    assert!(sink.messages().is_empty());
    assert!(sent_copies(&boxes.personal()).is_empty());
}

async fn demo_outbox_saves_not_sends(engine: Engine) {
    let boxes = Mailboxes::new();
    let db = engine.open().await;
    let dir = tempfile::tempdir().unwrap();
    let outbox = dir.path().join("data").join("demo-outbox");
    let p = boxes.plugin(&db.store, Outbox::demo(&outbox)).await;
    let r = send(
        &p,
        json!({"to": ["anna.weber@example.net"], "subject": "S", "body": "B"}),
        "x",
    )
    .await
    .unwrap();
    assert_eq!(r["status"], "saved_to_demo_outbox");
    assert_eq!(r["note"], "saved to the demo outbox, not sent");
    let files: Vec<_> = std::fs::read_dir(&outbox).unwrap().collect();
    assert_eq!(files.len(), 1);
    let path = files[0].as_ref().unwrap().path();
    assert_eq!(r["file"], path.display().to_string(), "{r}");
    let raw = std::fs::read(&path).unwrap();
    assert_eq!(header(&raw, "To"), "anna.weber@example.net");
    // Written beside the outbox and renamed in whole: nothing is left half-way.
    let staging = iris_email::outbox::demo_staging_dir(&outbox);
    assert_eq!(std::fs::read_dir(&staging).unwrap().count(), 0);
    assert_eq!(sent_copies(&boxes.personal()).len(), 1);
}

/// Refused by the server, or no server at all: an error, no Sent copy.
async fn failed_send_is_an_error_and_stores_no_copy(engine: Engine) {
    let boxes = Mailboxes::new();
    let db = engine.open().await;
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let p = boxes
        .plugin(
            &db.store,
            Outbox::smtp(&format!("smtp://127.0.0.1:{port}")).unwrap(),
        )
        .await;
    let r = send(
        &p,
        json!({"to": ["anna.weber@example.net"], "subject": "S", "body": "B"}),
        "x",
    )
    .await;
    let Err(ToolError::Failed { reason, .. }) = r else {
        panic!("expected a failure, got {r:?}")
    };
    assert!(reason.contains("will not be sent again"), "{reason}");
    assert!(sent_copies(&boxes.personal()).is_empty());
}

/// A server that takes the whole message and then drops the connection instead of answering:
/// nobody knows whether it was delivered. The call is `interrupted` (the ledger's `unknown`,
/// never `failed`: it may have gone out) saying so, exactly one message was handed over (no
/// retry), and no Sent copy claims it went out.
async fn outcome_unknown_after_data_is_an_error_sent_once(engine: Engine) {
    let flaky = FlakySmtp::start(Flaky::DropAfterData).await;
    let boxes = Mailboxes::new();
    let db = engine.open().await;
    let p = boxes
        .plugin(&db.store, Outbox::smtp(&flaky.url()).unwrap())
        .await;
    let r = send(
        &p,
        json!({"to": ["anna.weber@example.net"], "subject": "S", "body": "B"}),
        "x",
    )
    .await;
    let Err(ToolError::Interrupted { reason, .. }) = r else {
        panic!("expected an unknown outcome, got {r:?}")
    };
    assert!(
        reason.contains("outcome of the send is unknown"),
        "{reason}"
    );
    assert!(reason.contains("will not be sent again"), "{reason}");
    assert_eq!(
        flaky.messages_handed(),
        1,
        "sent exactly once, never retried"
    );
    assert!(sent_copies(&boxes.personal()).is_empty());
}

/// A server that refuses the message (554): the call fails saying it was not sent, once.
async fn refused_by_the_server_is_not_sent(engine: Engine) {
    let flaky = FlakySmtp::start(Flaky::Reject).await;
    let boxes = Mailboxes::new();
    let db = engine.open().await;
    let p = boxes
        .plugin(&db.store, Outbox::smtp(&flaky.url()).unwrap())
        .await;
    let r = send(
        &p,
        json!({"to": ["anna.weber@example.net"], "subject": "S", "body": "B"}),
        "x",
    )
    .await;
    let Err(ToolError::Failed { reason, .. }) = r else {
        panic!("expected a failure, got {r:?}")
    };
    assert!(
        reason.contains("refused the mail, so it was not sent"),
        "{reason}"
    );
    assert!(reason.contains("rejected by policy"), "{reason}");
    assert_eq!(flaky.messages_handed(), 1);
    assert!(sent_copies(&boxes.personal()).is_empty());
}

/// A Maildir account whose Sent folder refuses the copy.
#[derive(Debug)]
struct NoSentCopy(MaildirBackend);

#[async_trait]
impl MailBackend for NoSentCopy {
    fn account(&self) -> &AccountInfo {
        self.0.account()
    }
    async fn folders(&self) -> Result<Vec<Folder>, BackendError> {
        self.0.folders().await
    }
    async fn list(&self, folder: &str) -> Result<Vec<Listed>, BackendError> {
        self.0.list(folder).await
    }
    async fn read(&self, msg: &MessageRef) -> Result<Option<Vec<u8>>, BackendError> {
        self.0.read(msg).await
    }
    async fn trash(&self, msgs: &[MessageRef]) -> Result<Vec<TrashOutcome>, BackendError> {
        self.0.trash(msgs).await
    }
    async fn restore(&self, msgs: &[TrashedRef]) -> Result<Vec<RestoreOutcome>, BackendError> {
        self.0.restore(msgs).await
    }
    async fn append_sent(&self, _raw: &[u8]) -> Result<Appended, BackendError> {
        Err(BackendError::Task("Sent folder over quota".into()))
    }
}

async fn missing_sent_copy_is_reported_not_resent(engine: Engine) {
    let sink = SmtpSink::start();
    let boxes = Mailboxes::new();
    let db = engine.open().await;
    let backend = NoSentCopy(
        MaildirBackend::open(
            AccountInfo {
                name: "personal".into(),
                address: "owner@example.org".into(),
            },
            boxes.personal(),
        )
        .unwrap(),
    );
    let p = EmailPlugin::with_backends(vec![Arc::new(backend)], &db.store)
        .unwrap()
        .with_outbox(Outbox::smtp(&sink.url()).unwrap());
    p.sync().await.unwrap();
    let r = send(
        &p,
        json!({"to": ["anna.weber@example.net"], "subject": "S", "body": "B"}),
        "x",
    )
    .await
    .unwrap();
    assert_eq!(r["status"], "sent");
    let why = r["sent_copy_error"].as_str().unwrap();
    assert!(
        why.contains("the mail went out") && why.contains("over quota"),
        "{why}"
    );
    assert_eq!(sink.messages().len(), 1, "sent once, not again");
}

on_both_engines!(
    sends_exactly_the_pinned_mail,
    reply_is_threaded_from_the_receiving_account,
    sender_rules_on_the_wire,
    invented_address_never_reaches_the_server,
    demo_outbox_saves_not_sends,
    failed_send_is_an_error_and_stores_no_copy,
    outcome_unknown_after_data_is_an_error_sent_once,
    refused_by_the_server_is_not_sent,
    missing_sent_copy_is_reported_not_resent,
);
