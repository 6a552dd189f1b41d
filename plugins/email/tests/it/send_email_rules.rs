//! `send_email`'s rules at normalise (before any approval row exists) and its card: recipients
//! must come from the owner's request or their mail, address syntax, limits, sender choice,
//! reply threading, the pinned form. Each runs with the local store on SQLite and PostgreSQL.

use crate::common;
use crate::send_support;

use common::*;
use iris_core::manifest::{Gate, Manifest};
use iris_core::plugin::{Plugin, ToolError};
use iris_core::Effect;
use iris_email::{EmailPlugin, Outbox};
use send_support::*;
use serde_json::{json, Value};

const TOOL: &str = "send_email";

fn refusal(r: Result<Value, ToolError>) -> String {
    match r {
        Err(ToolError::InvalidArgs { reason, .. }) => reason,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

async fn setup(engine: Engine) -> (Mailboxes, TestDb, EmailPlugin, tempfile::TempDir) {
    let boxes = Mailboxes::new();
    let db = engine.open().await;
    let outbox = tempfile::tempdir().unwrap();
    let p = boxes
        .plugin(&db.store, Outbox::demo(outbox.path().join("demo-outbox")))
        .await;
    (boxes, db, p, outbox)
}

#[test]
fn manifest_declares_a_pinned_write() {
    let m = Manifest::from_yaml(iris_email::MANIFEST_YAML).unwrap();
    let t = m.tools.iter().find(|t| t.name == TOOL).unwrap();
    assert_eq!(t.effect, Effect::Write);
    assert_eq!(t.gate(), Gate::Approval);
    assert!(t.approved_per_call());
    assert!(t.description.contains("never"), "{}", t.description);
    assert_eq!(t.parameters["properties"]["to"]["maxItems"], 50);
}

async fn no_transport_is_refused_before_any_card(engine: Engine) {
    let boxes = Mailboxes::new();
    let db = engine.open().await;
    let p = boxes.plugin_without_outbox(&db.store).await;
    let r = p
        .normalise(
            TOOL,
            json!({"to": ["anna.weber@example.net"], "subject": "Hi", "body": "Hello"}),
            &said("write to Anna"),
        )
        .await;
    assert!(refusal(r).contains("no IRIS_SMTP_URL"));
}

async fn invented_address_is_refused_naming_it(engine: Engine) {
    let (_b, _db, p, _o) = setup(engine).await;
    let args = |to: &str| json!({"to": [to], "subject": "Hi", "body": "Hello"});
    let r = p
        .normalise(TOOL, args("anna@invented.example"), &said("write to Anna"))
        .await;
    let why = refusal(r);
    assert!(why.contains("`anna@invented.example`"), "{why}");
    assert!(why.contains("Nothing was sent"), "{why}");
    // A longer address that merely contains a known one is still invented.
    let r = p
        .normalise(TOOL, args("xanna.weber@example.net"), &said("hi"))
        .await;
    assert!(refusal(r).contains("xanna.weber@example.net"));
    // One invented among known ones refuses the whole call, naming only it.
    let r = p
        .normalise(
            TOOL,
            json!({"to": ["anna.weber@example.net"], "cc": ["eve@evil.example"], "subject": "x", "body": "y"}),
            &said("hi"),
        )
        .await;
    let why = refusal(r);
    assert!(
        why.contains("eve@evil.example") && !why.contains("anna.weber"),
        "{why}"
    );
}

async fn addresses_from_the_request_or_the_mail_pass(engine: Engine) {
    let (_b, _db, p, _o) = setup(engine).await;
    let ok = |to: &str, request: &str| {
        let p = &p;
        let to = to.to_string();
        let request = request.to_string();
        async move {
            p.normalise(
                TOOL,
                json!({"to": [to], "subject": "Hi", "body": "Hello"}),
                &said(&request),
            )
            .await
        }
    };
    // In the request, any case.
    assert!(ok(
        "new.person@example.com",
        "mail New.Person@Example.com about it"
    )
    .await
    .is_ok());
    // A sender in the store.
    assert!(ok("anna.weber@example.net", "write to Anna").await.is_ok());
    // A cc in the store.
    assert!(ok("carol@example.net", "write to Carol").await.is_ok());
    // A recipient in the store, other account, different case.
    assert!(ok("Dave@Work.example", "write to Dave").await.is_ok());
}

async fn syntax_duplicates_and_limits(engine: Engine) {
    let (_b, _db, p, _o) = setup(engine).await;
    let ctx = said("x");
    let r = p
        .normalise(
            TOOL,
            json!({"to": ["not an address"], "subject": "a", "body": "b"}),
            &ctx,
        )
        .await;
    assert!(refusal(r).contains("is not an email address"));
    let n = p
        .normalise(
            TOOL,
            json!({"to": ["Anna.Weber@example.net", "Anna Weber <anna.weber@example.net>", "carol@example.net"],
                   "cc": ["CAROL@example.net", "dave@work.example", "dave@work.example"],
                   "subject": "a", "body": "b"}),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(
        n["to"],
        json!(["anna.weber@example.net", "carol@example.net"])
    );
    assert_eq!(n["cc"], json!(["dave@work.example"]));

    let many: Vec<String> = (0..51).map(|i| format!("p{i}@many.example")).collect();
    let request = many.join(" ");
    let r = p
        .normalise(
            TOOL,
            json!({"to": many, "subject": "a", "body": "b"}),
            &said(&request),
        )
        .await;
    assert!(refusal(r).contains("at most 50"));

    let to = json!(["anna.weber@example.net"]);
    let r = p
        .normalise(
            TOOL,
            json!({"to": to, "subject": "a\nBcc: x@y.z", "body": "b"}),
            &ctx,
        )
        .await;
    assert!(refusal(r).contains("single line"));
    let r = p
        .normalise(
            TOOL,
            json!({"to": to, "subject": "a", "body": "  \n "}),
            &ctx,
        )
        .await;
    assert!(refusal(r).contains("`body` is empty"));
    let r = p
        .normalise(
            TOOL,
            json!({"to": to, "subject": "a", "body": "x".repeat(20_001)}),
            &ctx,
        )
        .await;
    assert!(refusal(r).contains("longer than 20000"));
    let r = p
        .normalise(TOOL, json!({"subject": "a", "body": "b"}), &ctx)
        .await;
    assert!(refusal(r).contains("`to` is required"));
    let r = p
        .normalise(TOOL, json!({"to": to, "body": "b"}), &ctx)
        .await;
    assert!(refusal(r).contains("`subject` is required"));
}

async fn sender_choice(engine: Engine) {
    let boxes = Mailboxes::new();
    let db = engine.open().await;
    let dir = tempfile::tempdir().unwrap();
    let base = json!({"to": ["anna.weber@example.net"], "subject": "Hi", "body": "Hello"});
    let with = |extra: Value| {
        let mut a = base.clone();
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        a
    };
    let ctx = said("write to Anna");

    // No from, no default: the first account in the fixed order.
    let p = boxes.plugin(&db.store, Outbox::demo(dir.path())).await;
    let n = p.normalise(TOOL, base.clone(), &ctx).await.unwrap();
    assert_eq!(
        (n["account"].as_str(), n["from"].as_str()),
        (Some("personal"), Some("owner@example.org"))
    );
    // `from` by name or address.
    let n = p
        .normalise(TOOL, with(json!({"from": "work"})), &ctx)
        .await
        .unwrap();
    assert_eq!(n["from"], "owner@work.example");
    let n = p
        .normalise(TOOL, with(json!({"from": "Owner@Work.example"})), &ctx)
        .await
        .unwrap();
    assert_eq!(n["account"], "work");
    let r = p
        .normalise(TOOL, with(json!({"from": "holiday"})), &ctx)
        .await;
    let why = refusal(r);
    assert!(
        why.contains("`from` `holiday` names no mail account"),
        "{why}"
    );
    assert!(why.contains("work <owner@work.example>"), "{why}");

    // The default sender, by address; `from` still wins over it.
    let p = boxes
        .plugin(&db.store, Outbox::demo(dir.path()))
        .await
        .with_default_sender("owner@work.example");
    let n = p.normalise(TOOL, base.clone(), &ctx).await.unwrap();
    assert_eq!(n["account"], "work");
    let n = p
        .normalise(TOOL, with(json!({"from": "personal"})), &ctx)
        .await
        .unwrap();
    assert_eq!(n["account"], "personal");
    // A reply keeps the account that received the original, whatever the default.
    let dinner = id_of(&p, "Dinner on Saturday?").await;
    let n = p
        .normalise(TOOL, json!({"reply_to_id": dinner, "body": "Yes"}), &ctx)
        .await
        .unwrap();
    assert_eq!(n["account"], "personal");

    // A default sender naming no account is refused (fail closed), not replaced.
    let p = boxes
        .plugin(&db.store, Outbox::demo(dir.path()))
        .await
        .with_default_sender("gone@nowhere.example");
    let r = p.normalise(TOOL, base.clone(), &ctx).await;
    assert!(refusal(r)
        .contains("IRIS_EMAIL_DEFAULT_SENDER `gone@nowhere.example` names no mail account"));
}

async fn reply_fills_recipient_subject_and_threading(engine: Engine) {
    let (_b, _db, p, _o) = setup(engine).await;
    let dinner = id_of(&p, "Dinner on Saturday?").await;
    let n = p
        .normalise(
            TOOL,
            json!({"reply_to_id": dinner.to_uppercase(), "body": "Thursday works."}),
            &said("reply to Anna that Thursday works"),
        )
        .await
        .unwrap();
    assert_eq!(
        n,
        json!({
            "account": "personal",
            "from": "owner@example.org",
            "to": ["anna.weber@example.net"],
            "cc": [],
            "subject": "Re: Dinner on Saturday?",
            "body": "Thursday works.",
            "reply_to_id": dinner,
            "in_reply_to": "dinner-2@example.net",
            "references": ["dinner-0@example.net", "dinner-1@example.org", "dinner-2@example.net"],
        })
    );
    // Normalising the pinned form again gives it back (what is approved is what is sent).
    let again = p.normalise(TOOL, n.clone(), &said("")).await.unwrap();
    assert_eq!(again, n);

    // Reply-To wins over From; "Re:" is not doubled; no References header: just the id.
    let club = id_of(&p, "Re: Next book").await;
    let n = p
        .normalise(
            TOOL,
            json!({"reply_to_id": club, "body": "Dune."}),
            &said("answer the club"),
        )
        .await
        .unwrap();
    assert_eq!(n["to"], json!(["mia@books.example"]));
    assert_eq!(n["subject"], "Re: Next book");
    assert_eq!(n["references"], json!(["club-7@books.example"]));
    // A given subject gets "Re: " too.
    let n = p
        .normalise(
            TOOL,
            json!({"reply_to_id": club, "subject": "Our next book", "body": "Dune."}),
            &said(""),
        )
        .await
        .unwrap();
    assert_eq!(n["subject"], "Re: Our next book");

    let r = p
        .normalise(
            TOOL,
            json!({"reply_to_id": "mnothere", "body": "x"}),
            &said(""),
        )
        .await;
    assert!(refusal(r).contains("no email with id `mnothere`"));
}

async fn card_names_the_person_and_shows_the_mail(engine: Engine) {
    let (_b, _db, p, _o) = setup(engine).await;
    let n = p
        .normalise(
            TOOL,
            json!({"to": ["anna.weber@example.net"], "cc": ["carol@example.net", "new@friend.example"],
                   "subject": "Thursday", "body": "Hi Anna,\n\nThursday works for me.\nSee you at 7.\nBring Carol.\nCheers\nRobin"}),
            &said("tell Anna Thursday works, cc Carol and new@friend.example"),
        )
        .await
        .unwrap();
    let d = p.describe(TOOL, &n, &said("")).await.unwrap();
    assert_eq!(d.title, "Send an email to Anna Weber and 2 others");
    assert_eq!(d.action, "Send email");
    assert_eq!(
        d.items,
        vec![
            "anna.weber@example.net",
            "carol@example.net",
            "new@friend.example"
        ]
    );
    assert_eq!(
        d.lines,
        vec![
            "From: owner@example.org",
            "To: Anna Weber <anna.weber@example.net>",
            "Cc: Carol Jones <carol@example.net>, new@friend.example",
            "Subject: Thursday",
            "│ Hi Anna,",
            "│ ",
            "│ Thursday works for me.",
            "│ See you at 7.",
            "│ Bring Carol.",
            "│ Cheers",
            "│ Robin",
        ]
    );
    // Every word that goes out is on the card: the last line of a long body too.
    let long_body: String =
        (1..=30).map(|i| format!("line {i}\n")).collect::<String>() + "HIDDEN: the last line";
    let n = p
        .normalise(
            TOOL,
            json!({"to": ["anna.weber@example.net"], "subject": "Long", "body": long_body}),
            &said("write to anna.weber@example.net"),
        )
        .await
        .unwrap();
    let d = p.describe(TOOL, &n, &said("")).await.unwrap();
    assert_eq!(
        d.lines.last().map(String::as_str),
        Some("│ HIDDEN: the last line")
    );
    assert_eq!(d.lines.iter().filter(|l| l.starts_with('│')).count(), 31);
    assert!(d.undo_note.is_none() && d.preconditions.is_empty());

    let dinner = id_of(&p, "Dinner on Saturday?").await;
    let n = p
        .normalise(
            TOOL,
            json!({"reply_to_id": dinner, "body": "Thursday works."}),
            &said(""),
        )
        .await
        .unwrap();
    let d = p.describe(TOOL, &n, &said("")).await.unwrap();
    assert_eq!(d.title, "Send an email to Anna Weber");
    assert!(
        d.lines
            .iter()
            .any(|l| l.starts_with("In reply to: Dinner on Saturday? — Anna Weber")),
        "{:?}",
        d.lines
    );
    // describe takes only the pinned form.
    let r = p
        .describe(
            TOOL,
            &json!({"to": ["anna.weber@example.net"], "body": "x"}),
            &said(""),
        )
        .await;
    assert!(matches!(r, Err(ToolError::InvalidArgs { .. })));
}

on_both_engines!(
    no_transport_is_refused_before_any_card,
    invented_address_is_refused_naming_it,
    addresses_from_the_request_or_the_mail_pass,
    syntax_duplicates_and_limits,
    sender_choice,
    reply_fills_recipient_subject_and_threading,
    card_names_the_person_and_shows_the_mail,
);
