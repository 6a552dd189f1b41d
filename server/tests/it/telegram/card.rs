//! Answering a card from the owner's chat: a halted chat turn sends exactly one card with the
//! escaped text and two buttons; the action asks "…? Yes / Cancel"; Cancel goes back; Yes
//! approves with surface `telegram` and the call runs once, also when the HTTP API answers at
//! the same moment; Reject is one tap; a tap from another chat changes nothing; an answer on the
//! HTTP API and a lapse edit the message; a card that needs the owner's passkey opens the web
//! app instead and can only be rejected here.

use crate::support;

use serde_json::json;
use support::telegram::{escape, FakeBot, OWNER};
use support::{eventually, snapshot};

use super::{card_keyboard, halt, lapse_time, row, start, REQUEST, STRANGER};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_card_is_answered_from_the_owners_chat() {
    let bot = FakeBot::start().await;
    let (server, control, client) = start(&bot, |b| b).await;
    let original = snapshot(&server.maildir());

    let row0 = halt(&client, &control).await;
    let id = row0["id"].as_str().unwrap().to_string();
    let card = &row0["card"];
    let action = card["action"].as_str().unwrap().to_string();
    let n = row0["items"].as_array().unwrap().len();
    assert!(n > 0);
    assert_eq!(action, format!("Trash {n} emails"));

    // Exactly one card, to the owner's chat, escaped MarkdownV2, with the action and Reject.
    let sent = eventually("the card message", || async {
        let sent = bot.calls("sendMessage");
        (!sent.is_empty()).then_some(sent)
    })
    .await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    let message = &sent[0];
    assert_eq!(message["chat_id"], OWNER);
    assert_eq!(message["parse_mode"], "MarkdownV2");
    let text = message["text"].as_str().unwrap().to_string();
    assert!(
        text.starts_with(&format!("*{}*", escape(card["title"].as_str().unwrap()))),
        "{text}"
    );
    for line in card["lines"].as_array().unwrap() {
        assert!(
            text.contains(&escape(line.as_str().unwrap())),
            "{line} in {text}"
        );
    }
    assert!(
        text.contains(&format!("You asked: “{}”", escape(REQUEST))),
        "{text}"
    );
    assert!(text.contains("\\(all of them\\) \\- thanks\\!"), "{text}");
    if let Some(undo) = card["undo_note"].as_str() {
        assert!(text.contains(&escape(undo)), "{text}");
    }
    assert_eq!(message["reply_markup"], card_keyboard(&row0));
    let message_id = 1;

    // A tap from another chat is told it is not allowed; nothing changes.
    let q = bot.tap(STRANGER, STRANGER, message_id, &format!("y:{id}"));
    assert_eq!(bot.answer(&q).await, "You are not allowed to answer this.");
    let q = bot.tap(STRANGER, STRANGER, message_id, &format!("r:{id}"));
    assert_eq!(bot.answer(&q).await, "You are not allowed to answer this.");
    assert_eq!(row(&client, &control, &id).await["status"], "pending");
    assert!(bot.edits_of(message_id).is_empty());

    // Data IRIS did not make is refused.
    let q = bot.tap(OWNER, OWNER, message_id, "y:../../approve-everything");
    assert!(bot.answer(&q).await.contains("not one IRIS made"));
    assert_eq!(row(&client, &control, &id).await["status"], "pending");

    // Yes straight from the card (no confirm shown yet) only shows the confirm.
    let q = bot.tap(OWNER, OWNER, message_id, &format!("y:{id}"));
    assert!(bot.answer(&q).await.contains("confirm"));
    assert_eq!(row(&client, &control, &id).await["status"], "pending");

    // Cancel goes back to the card, exactly as sent.
    let q = bot.tap(OWNER, OWNER, message_id, &format!("c:{id}"));
    bot.answer(&q).await;
    let back = bot.edits_of(message_id).last().unwrap().clone();
    assert_eq!(back["text"], text.as_str());
    assert_eq!(back["reply_markup"], card_keyboard(&row0));

    // The action asks "Trash N emails? Yes / Cancel".
    let q = bot.tap(OWNER, OWNER, message_id, &format!("a:{id}"));
    bot.answer(&q).await;
    let confirm = bot.edits_of(message_id).last().unwrap().clone();
    assert!(
        confirm["text"]
            .as_str()
            .unwrap()
            .ends_with(&format!("*{}?*", escape(&action))),
        "{confirm}"
    );
    assert_eq!(
        confirm["reply_markup"],
        json!({"inline_keyboard": [[
            {"text": "Yes", "callback_data": format!("y:{id}")},
            {"text": "Cancel", "callback_data": format!("c:{id}")}
        ]]})
    );
    assert_eq!(
        snapshot(&server.maildir()),
        original,
        "nothing runs before Yes"
    );

    // Yes approves through respond_to_approval with surface telegram; the call runs once.
    let q = bot.tap(OWNER, OWNER, message_id, &format!("y:{id}"));
    assert_eq!(bot.answer(&q).await, "Approved.");
    let done = eventually("the pinned call to execute", || {
        let (client, control, id) = (&client, &control, &id);
        async move {
            let r = row(client, control, id).await;
            (r["execution"] == "executed").then_some(r)
        }
    })
    .await;
    assert_eq!(done["status"], "approved");
    assert_eq!(done["surface"], "telegram");
    assert_eq!(done["responded_by"], "@owner");
    assert_eq!(done["result"]["trashed"], n);
    let after = snapshot(&server.maildir());
    let arrived: Vec<&String> = after
        .keys()
        .filter(|k| !original.contains_key(*k))
        .collect();
    assert_eq!(arrived.len(), n, "{arrived:?}");
    assert!(arrived.iter().all(|k| k.starts_with(".Trash/cur/")));

    // The message shows the outcome, with what ran, and no buttons.
    let outcome = bot
        .edited_to(message_id, &format!("Moved {n} emails to Trash"))
        .await;
    let outcome_text = outcome["text"].as_str().unwrap();
    assert!(
        outcome_text.contains("*Approved* by @owner via telegram at"),
        "{outcome_text}"
    );
    assert!(outcome.get("reply_markup").is_none(), "{outcome}");

    // A second Yes (a replayed tap) is told who decided; nothing runs again.
    let q = bot.tap(OWNER, OWNER, message_id, &format!("y:{id}"));
    let again = bot.answer(&q).await;
    assert!(
        again.contains("already approved by @owner via telegram"),
        "{again}"
    );
    let audit = client.audit_with_executions(&id, &control, n).await;
    let entries = audit["entries"].as_array().unwrap();
    assert_eq!(
        entries.iter().filter(|e| e["kind"] == "decision").count(),
        1
    );
    assert_eq!(
        entries.iter().filter(|e| e["kind"] == "execution").count(),
        n
    );
    assert_eq!(snapshot(&server.maildir()), after, "something ran twice");
    assert_eq!(bot.calls("sendMessage").len(), 1, "one card per approval");
    // The first poll failed (502) and the poller retried: taps arrived after it.
    assert!(bot.calls("getUpdates").len() >= 2);
    assert!(bot.wrong_tokens().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_is_one_tap_and_answers_elsewhere_edit_the_card() {
    let bot = FakeBot::start().await;
    let (server, control, client) = start(&bot, |b| b).await;
    let original = snapshot(&server.maildir());

    // Reject: one tap, nothing moves, the message shows who rejected where.
    let first = halt(&client, &control).await;
    let id = first["id"].as_str().unwrap().to_string();
    eventually("the first card", || async {
        (bot.calls("sendMessage").len() == 1).then_some(())
    })
    .await;
    // The first card is message 1.
    let q = bot.tap(OWNER, OWNER, 1, &format!("r:{id}"));
    assert_eq!(bot.answer(&q).await, "Rejected; nothing was changed.");
    let rejected = row(&client, &control, &id).await;
    assert_eq!(rejected["status"], "rejected");
    assert_eq!(rejected["surface"], "telegram");
    assert_eq!(rejected["responded_by"], "@owner");
    let outcome = bot
        .edited_to(1, "*Rejected* by @owner via telegram at")
        .await;
    assert!(outcome.get("reply_markup").is_none(), "{outcome}");
    assert!(outcome["text"]
        .as_str()
        .unwrap()
        .contains("Nothing was changed, sent or deleted\\."));

    // Approved on the HTTP API: the second card's message shows it, by whom and where.
    let second = halt(&client, &control).await;
    let id2 = second["id"].as_str().unwrap().to_string();
    eventually("the second card", || async {
        (bot.calls("sendMessage").len() == 2).then_some(())
    })
    .await;
    let (status, body) = client
        .post(
            &format!("/governance/approvals/{id2}/respond"),
            Some(&control),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    let outcome = bot.edited_to(2, "*Approved* by phone via api at").await;
    assert!(outcome.get("reply_markup").is_none(), "{outcome}");
    eventually("the API-approved call to execute", || {
        let (client, control, id2) = (&client, &control, &id2);
        async move { (row(client, control, id2).await["execution"] == "executed").then_some(()) }
    })
    .await;

    // A late tap on that message is told who decided; the first row stays rejected.
    let q = bot.tap(OWNER, OWNER, 2, &format!("a:{id2}"));
    let late = bot.answer(&q).await;
    assert!(late.contains("already approved by phone via api"), "{late}");
    // A button naming one row on another row's message is refused.
    let q = bot.tap(OWNER, OWNER, 2, &format!("y:{id}"));
    assert!(bot.answer(&q).await.contains("does not belong"));
    assert_eq!(row(&client, &control, &id).await["status"], "rejected");
    let moved = snapshot(&server.maildir())
        .keys()
        .filter(|k| !original.contains_key(*k))
        .count();
    assert_eq!(moved, second["items"].as_array().unwrap().len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapse_edits_the_card_to_the_notice() {
    let bot = FakeBot::start().await;
    let (server, control, client) = start(&bot, |b| b.destructive_ttl_secs(2).sweep_secs(1)).await;
    let original = snapshot(&server.maildir());
    let lapsing = halt(&client, &control).await;
    let id = lapsing["id"].as_str().unwrap().to_string();
    let notice = bot.edited_to(1, "This request lapsed at").await;
    let text = notice["text"].as_str().unwrap();
    assert!(
        text.contains(&format!(
            "This request lapsed at {} without an answer, so nothing was done\\.",
            lapse_time(&lapsing)
        )),
        "{text}"
    );
    assert!(notice.get("reply_markup").is_none(), "{notice}");
    assert_eq!(row(&client, &control, &id).await["status"], "expired");

    // A tap after the lapse is told so; nothing runs.
    let q = bot.tap(OWNER, OWNER, 1, &format!("y:{id}"));
    let answer = bot.answer(&q).await;
    assert!(answer.contains("expired"), "{answer}");
    assert_eq!(snapshot(&server.maildir()), original);
}

/// DESIGN §8 "one pinned call executes at most once, whatever … two surfaces answering at
/// once": Yes on Telegram and approves over HTTP (as the API and as the CLI) at the same moment
/// give one decision and one execution.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn telegram_and_http_answering_at_once_decide_once() {
    let bot = FakeBot::start().await;
    let (server, control, client) = start(&bot, |b| b).await;
    let original = snapshot(&server.maildir());
    let row0 = halt(&client, &control).await;
    let id = row0["id"].as_str().unwrap().to_string();
    let n = row0["items"].as_array().unwrap().len();
    eventually("the card", || async {
        (bot.calls("sendMessage").len() == 1).then_some(())
    })
    .await;
    let q = bot.tap(OWNER, OWNER, 1, &format!("a:{id}"));
    bot.answer(&q).await;

    let yes = bot.tap(OWNER, OWNER, 1, &format!("y:{id}"));
    let mut http = Vec::new();
    for i in 0..6 {
        let (client, url, token, id) = (
            client.http.clone(),
            client.url.clone(),
            control.clone(),
            id.clone(),
        );
        http.push(tokio::spawn(async move {
            client
                .post(format!("{url}/governance/approvals/{id}/respond"))
                .bearer_auth(token)
                .header("x-iris-surface", if i % 2 == 0 { "cli" } else { "api" })
                .json(&json!({"decision": "approve"}))
                .send()
                .await
                .unwrap()
                .status()
        }));
    }
    let mut won_over_http = 0;
    for answer in http {
        let status = answer.await.unwrap();
        assert!(
            status == reqwest::StatusCode::OK || status == reqwest::StatusCode::CONFLICT,
            "{status}"
        );
        won_over_http += usize::from(status == reqwest::StatusCode::OK);
    }
    let telegram = bot.answer(&yes).await;
    let won_on_telegram = usize::from(telegram == "Approved.");
    assert_eq!(
        won_over_http + won_on_telegram,
        1,
        "telegram said {telegram:?}"
    );
    if won_on_telegram == 0 {
        assert!(telegram.contains("already approved by phone"), "{telegram}");
    }

    let done = eventually("the pinned call to execute", || {
        let (client, control, id) = (&client, &control, &id);
        async move {
            let r = row(client, control, id).await;
            (r["execution"] == "executed").then_some(r)
        }
    })
    .await;
    let surface = done["surface"].as_str().unwrap();
    assert!(matches!(surface, "telegram" | "cli" | "api"), "{surface}");
    let outcome = bot
        .edited_to(1, &format!("Moved {n} emails to Trash"))
        .await;
    assert!(
        outcome["text"]
            .as_str()
            .unwrap()
            .contains(&format!("via {surface} at")),
        "{outcome}"
    );
    let audit = client.audit_with_executions(&id, &control, n).await;
    let entries = audit["entries"].as_array().unwrap();
    assert_eq!(
        entries.iter().filter(|e| e["kind"] == "decision").count(),
        1
    );
    assert_eq!(
        entries.iter().filter(|e| e["kind"] == "execution").count(),
        n
    );
    let moved = snapshot(&server.maildir())
        .keys()
        .filter(|k| !original.contains_key(*k))
        .count();
    assert_eq!(moved, n, "not exactly the pinned mail moved once");
}

/// ADR-0118 decision 4: a card that needs the owner's passkey arrives with "Open the card" (a
/// link to its page in the web app) instead of the action; tapping an old action or Yes only
/// says so, and Reject is still one tap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_that_needs_the_passkey_opens_the_web_app_and_can_only_be_rejected_here() {
    let bot = FakeBot::start().await;
    let (server, control, client) = start(&bot, |b| {
        b.passkey_required("destructive")
            .public_url("https://iris.example.org")
    })
    .await;
    let original = snapshot(&server.maildir());
    let row0 = halt(&client, &control).await;
    assert_eq!(row0["passkey_required"], true);
    let id = row0["id"].as_str().unwrap().to_string();
    let sent = eventually("the card message", || async {
        let sent = bot.calls("sendMessage");
        (!sent.is_empty()).then_some(sent)
    })
    .await;
    assert_eq!(
        sent[0]["reply_markup"],
        json!({"inline_keyboard": [[
            {"text": "Open the card", "url": format!("https://iris.example.org/activity/{id}")},
            {"text": "Reject", "callback_data": format!("r:{id}")}
        ]]})
    );
    let text = sent[0]["text"].as_str().unwrap();
    assert!(
        text.contains(&escape("This card needs your passkey")),
        "{text}"
    );

    // An action or Yes tap (an old message, a forged one) approves nothing.
    for step in ["a", "y"] {
        let q = bot.tap(OWNER, OWNER, 1, &format!("{step}:{id}"));
        assert!(bot.answer(&q).await.contains("needs your passkey"));
        assert_eq!(row(&client, &control, &id).await["status"], "pending");
    }
    assert_eq!(snapshot(&server.maildir()), original);
    let q = bot.tap(OWNER, OWNER, 1, &format!("r:{id}"));
    assert_eq!(bot.answer(&q).await, "Rejected; nothing was changed.");
    assert_eq!(row(&client, &control, &id).await["status"], "rejected");
}
