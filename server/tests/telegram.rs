//! The Telegram surface end to end (Telegram): the real `iris` binary with
//! `IRIS_TELEGRAM_API_URL` pointing at a fake Bot API server on loopback that records every call
//! (method names compared case-insensitively) and delivers callback updates by long polling.
//! A halted chat turn sends exactly one card with the escaped text and two buttons; the action
//! asks "…? Yes / Cancel"; Cancel goes back; Yes approves with surface `telegram` and the call
//! runs once; Reject is one tap; a tap from another chat changes nothing; an answer on the HTTP
//! API and a lapse edit the message.
//!
//! Restarts (`telegram_cards`), on SQLite and PostgreSQL: the server is killed and
//! started again on the same database and bot; an answer over HTTP and a lapse after the
//! restart edit the old message, a card requested before the bot knew is sent once (not again
//! at a later start), and an answer given while the bot was down edits the message once.
//!
//! Two servers on one PostgreSQL database and one bot: one polls at a time (the fake refuses a
//! second concurrent `getUpdates` with 409, as Telegram does), a card is sent once, an answer on
//! either server edits the message once, and when the poller is killed the other takes over.

mod support;

use serde_json::{json, Value};
use support::telegram::{escape, FakeBot, OWNER};
use support::{eventually, snapshot, Client, ModelServer, World, CATEGORY_TRASH_SCRIPT};

/// Another Telegram user, in their own chat: never allowed to answer.
const STRANGER: i64 = 777;
/// The owner's request: MarkdownV2 specials in "You asked" must arrive escaped.
const REQUEST: &str = "trash the promo emails from this week (all of them) - thanks!";

/// A server with the demo mailbox, a control device "phone" and Telegram pointed at `bot`.
async fn start(bot: &FakeBot, extra: &[(&str, &str)]) -> (World, String, support::Iris) {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let mut world = World::new(&model.base_url);
    // The model server's task keeps serving after this handle is dropped.
    drop(model);
    iris_email::demo::write_demo_maildir(&world.maildir, chrono::Utc::now()).unwrap();
    world.env = bot.env();
    world
        .env
        .extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let control = world.add_device("phone", "control");
    let server = world.start();
    (world, control, server)
}

/// Asks to trash the promo mail; the halted turn's approval row.
async fn halt(client: &Client, token: &str) -> Value {
    let (status, halted) = client
        .post("/api/chat", Some(token), json!({"message": REQUEST}))
        .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{halted}");
    assert_eq!(halted["status"], "awaiting_approval", "{halted}");
    let id = halted["approval_id"].as_str().unwrap();
    client
        .get(&format!("/governance/approvals/{id}"), token)
        .await
}

/// The card's keyboard: the action and Reject.
fn card_keyboard(row: &Value) -> Value {
    let id = row["id"].as_str().unwrap();
    json!({"inline_keyboard": [[
        {"text": row["card"]["action"], "callback_data": format!("a:{id}")},
        {"text": "Reject", "callback_data": format!("r:{id}")}
    ]]})
}

/// The message's lapse time as MarkdownV2: the row's `expires_at` as Telegram cards write
/// times ("30 Nov, 11:00 UTC"), escaped.
fn lapse_time(row: &Value) -> String {
    let expires_at: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(row["expires_at"].clone()).unwrap();
    escape(&app::format::format_time(expires_at, None))
}

async fn row(client: &Client, token: &str, id: &str) -> Value {
    client
        .get(&format!("/governance/approvals/{id}"), token)
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_card_is_answered_from_the_owners_chat() {
    let bot = FakeBot::start().await;
    let (world, control, server) = start(&bot, &[]).await;
    let client = server.client();
    let original = snapshot(&world.maildir);

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
        snapshot(&world.maildir),
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
    let after = snapshot(&world.maildir);
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
    assert_eq!(snapshot(&world.maildir), after, "something ran twice");
    assert_eq!(bot.calls("sendMessage").len(), 1, "one card per approval");
    // The first poll failed (502) and the poller retried: taps arrived after it.
    assert!(bot.calls("getUpdates").len() >= 2);
    assert!(bot.wrong_tokens().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_is_one_tap_and_answers_elsewhere_edit_the_card() {
    let bot = FakeBot::start().await;
    let (world, control, server) = start(&bot, &[]).await;
    let client = server.client();
    let original = snapshot(&world.maildir);

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
    let moved = snapshot(&world.maildir)
        .keys()
        .filter(|k| !original.contains_key(*k))
        .count();
    assert_eq!(moved, second["items"].as_array().unwrap().len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapse_edits_the_card_to_the_notice() {
    let bot = FakeBot::start().await;
    let (world, control, server) = start(
        &bot,
        &[("IRIS_DESTRUCTIVE_TTL_SECS", "2"), ("IRIS_SWEEP_SECS", "1")],
    )
    .await;
    let client = server.client();
    let original = snapshot(&world.maildir);
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
    assert_eq!(snapshot(&world.maildir), original);
}

/// DESIGN §8 "one pinned call executes at most once, whatever … two surfaces answering at
/// once": Yes on Telegram and approves over HTTP (as the API and as the CLI) at the same moment
/// give one decision and one execution.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn telegram_and_http_answering_at_once_decide_once() {
    let bot = FakeBot::start().await;
    let (world, control, server) = start(&bot, &[]).await;
    let client = server.client();
    let original = snapshot(&world.maildir);
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
    let moved = snapshot(&world.maildir)
        .keys()
        .filter(|k| !original.contains_key(*k))
        .count();
    assert_eq!(moved, n, "not exactly the pinned mail moved once");
}

// ---------------------------------------------------------------------------------------------
// Restarts: which message shows which row is stored (migration 0015).
// ---------------------------------------------------------------------------------------------

/// A world that can be served, killed and served again on the same database (`database_url`,
/// else its own SQLite file) and Maildir, with a control device "phone". `base` is the
/// environment of every start.
async fn restartable(database_url: Option<&str>) -> (World, String) {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let mut world = World::new(&model.base_url);
    drop(model);
    iris_email::demo::write_demo_maildir(&world.maildir, chrono::Utc::now()).unwrap();
    if let Some(url) = database_url {
        world.database_url = url.to_string();
    }
    let control = world.add_device("phone", "control");
    (world, control)
}

/// Starts `iris serve` on `world` with `base` environment, and the Telegram surface pointed at
/// `bot` (or off without one).
fn serve(world: &mut World, base: &[(&str, &str)], bot: Option<&FakeBot>) -> support::Iris {
    world.env = base
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if let Some(bot) = bot {
        world.env.extend(bot.env());
    }
    world.start()
}

/// Waits until the server has stored that `message_id` shows row `id` in the owner's chat.
async fn message_recorded(world: &World, id: &str, message_id: i64) {
    use iris_core::ports::TelegramCardStore;
    let store = iris_store::Store::connect(&world.database_url)
        .await
        .expect("the world's database opens");
    eventually("the card's message to be stored", || async {
        let card = store.telegram_card(OWNER, id).await.expect("card reads");
        (card.and_then(|c| c.message_id) == Some(message_id)).then_some(())
    })
    .await;
}

/// Waits until the server has stored that row `id`'s message shows a text containing `shown`.
async fn outcome_recorded(world: &World, id: &str, shown: &str) {
    use iris_core::ports::TelegramCardStore;
    let store = iris_store::Store::connect(&world.database_url)
        .await
        .expect("the world's database opens");
    eventually("the card's outcome to be stored", || async {
        let card = store.telegram_card(OWNER, id).await.expect("card reads");
        card.and_then(|c| c.shown_text)
            .is_some_and(|t| t.contains(shown))
            .then_some(())
    })
    .await;
}

/// Halts a new request and waits for its card: every event reaches the bridge after its
/// start-up catch-up, so once this card is sent the catch-up is over. The new row's id.
async fn catch_up_done(bot: &FakeBot, client: &Client, control: &str) -> String {
    let id = halt(client, control).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    bot.message_of(&id).await;
    id
}

/// (a) An answer over HTTP after a restart edits the message sent before it; the card is not
/// sent again.
async fn an_answer_after_a_restart_edits_the_old_message(database_url: Option<&str>) {
    let bot = FakeBot::start().await;
    let (mut world, control) = restartable(database_url).await;
    let server = serve(&mut world, &[], Some(&bot));
    let row0 = halt(&server.client(), &control).await;
    let id = row0["id"].as_str().unwrap().to_string();
    let message_id = bot.message_of(&id).await;
    // The owner opened the confirm view before the restart.
    let q = bot.tap(OWNER, OWNER, message_id, &format!("a:{id}"));
    bot.answer(&q).await;
    bot.confirmed().await;
    server.kill();

    let server = serve(&mut world, &[], Some(&bot));
    let client = server.client();
    let (status, body) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&control),
            json!({"decision": "reject", "reason": "not now"}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    let outcome = bot
        .edited_to(message_id, "*Rejected* by phone via api at")
        .await;
    assert!(outcome.get("reply_markup").is_none(), "{outcome}");
    assert!(
        outcome["text"]
            .as_str()
            .unwrap()
            .contains("Nothing was changed, sent or deleted\\."),
        "{outcome}"
    );
    assert_eq!(bot.sent_for(&id).len(), 1, "the card was sent again");
    // A late tap after the restart is told who decided.
    let q = bot.tap(OWNER, OWNER, message_id, &format!("y:{id}"));
    let late = bot.answer(&q).await;
    assert!(late.contains("already rejected by phone via api"), "{late}");
}

/// (b) A card requested while the bot was off is sent once at the next start, not again at a
/// later one; an answer given while the bot was off edits its message at the next start, once.
async fn a_card_the_bot_never_saw_is_sent_once_across_restarts(database_url: Option<&str>) {
    let bot = FakeBot::start().await;
    let (mut world, control) = restartable(database_url).await;
    let server = serve(&mut world, &[], None);
    let row0 = halt(&server.client(), &control).await;
    let id = row0["id"].as_str().unwrap().to_string();
    server.kill();
    assert!(bot.calls("sendMessage").is_empty());

    // The bot's first start sends the waiting card, with its buttons.
    let server = serve(&mut world, &[], Some(&bot));
    let message_id = bot.message_of(&id).await;
    let sent = bot.sent_for(&id);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["chat_id"], OWNER);
    assert_eq!(sent[0]["reply_markup"], card_keyboard(&row0));
    assert!(
        sent[0]["text"].as_str().unwrap().starts_with(&format!(
            "*{}*",
            escape(row0["card"]["title"].as_str().unwrap())
        )),
        "{sent:?}"
    );
    catch_up_done(&bot, &server.client(), &control).await;
    server.kill();

    // A second start does not send it again.
    let server = serve(&mut world, &[], Some(&bot));
    catch_up_done(&bot, &server.client(), &control).await;
    assert_eq!(bot.sent_for(&id).len(), 1, "sent again at a restart");
    server.kill();

    // Answered while the bot is off: the next start edits the message to the outcome, once.
    let server = serve(&mut world, &[], None);
    let (status, body) = server
        .client()
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&control),
            json!({"decision": "reject"}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    server.kill();
    assert!(bot.edits_of(message_id).is_empty());
    let server = serve(&mut world, &[], Some(&bot));
    let outcome = bot
        .edited_to(message_id, "*Rejected* by phone via api at")
        .await;
    assert!(outcome.get("reply_markup").is_none(), "{outcome}");
    catch_up_done(&bot, &server.client(), &control).await;
    let edits = bot.edits_of(message_id).len();
    server.kill();
    let server = serve(&mut world, &[], Some(&bot));
    catch_up_done(&bot, &server.client(), &control).await;
    assert_eq!(
        bot.edits_of(message_id).len(),
        edits,
        "the outcome was edited again at a restart"
    );
    assert_eq!(bot.sent_for(&id).len(), 1);
}

/// (c) A lapse after a restart edits the message sent before it to the lapse notice (dated by
/// the row's expiry, saying nothing was done); a tap and an HTTP answer after it are told it
/// expired and when; a later start does not edit it again.
async fn a_lapse_after_a_restart_edits_the_old_message(database_url: Option<&str>) {
    // Long enough to send the card and restart before the row lapses on a busy machine; if a
    // start ever takes longer, the lapse is caught up at start-up instead and edits the same
    // message the same way.
    let ttl = [("IRIS_DESTRUCTIVE_TTL_SECS", "8"), ("IRIS_SWEEP_SECS", "1")];
    let bot = FakeBot::start().await;
    let (mut world, control) = restartable(database_url).await;
    let original = snapshot(&world.maildir);
    let server = serve(&mut world, &ttl, Some(&bot));
    let lapsing = halt(&server.client(), &control).await;
    let id = lapsing["id"].as_str().unwrap().to_string();
    let message_id = bot.message_of(&id).await;
    // Killed only once the message is stored: a kill between Telegram's answer and the write
    // leaves the send unknown, and the next start sends the card again (a new message).
    message_recorded(&world, &id, message_id).await;
    server.kill();

    let server = serve(&mut world, &ttl, Some(&bot));
    let client = server.client();
    let notice = bot.edited_to(message_id, "This request lapsed at").await;
    let text = notice["text"].as_str().unwrap();
    assert!(
        text.ends_with(&format!(
            "This request lapsed at {} without an answer, so nothing was done\\.",
            lapse_time(&lapsing)
        )),
        "{text}"
    );
    assert!(notice.get("reply_markup").is_none(), "{notice}");
    assert_eq!(row(&client, &control, &id).await["status"], "expired");

    // The approve attempts after expiry say so, when, and that nothing was changed.
    let expired_at = {
        let at: chrono::DateTime<chrono::Utc> =
            serde_json::from_value(lapsing["expires_at"].clone()).unwrap();
        at.format("%Y-%m-%d %H:%M:%S UTC").to_string()
    };
    let (status, body) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&control),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::GONE, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains(&format!("expired at {expired_at}"))
            && error.contains("nothing was changed"),
        "{error}"
    );
    let q = bot.tap(OWNER, OWNER, message_id, &format!("y:{id}"));
    let answer = bot.answer(&q).await;
    assert!(
        answer.contains(&format!("expired at {expired_at}"))
            && answer.contains("nothing was changed"),
        "{answer}"
    );
    assert_eq!(snapshot(&world.maildir), original, "a lapsed call ran");
    let lapse_edits = |bot: &FakeBot| {
        bot.edits_of(message_id)
            .iter()
            .filter(|e| e["text"].as_str().unwrap().contains("lapsed at"))
            .count()
    };
    let edits = lapse_edits(&bot);
    server.kill();

    let server = serve(&mut world, &ttl, Some(&bot));
    catch_up_done(&bot, &server.client(), &control).await;
    assert_eq!(
        lapse_edits(&bot),
        edits,
        "the lapse was edited again at a restart"
    );
    assert_eq!(bot.sent_for(&id).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_an_answer_after_a_restart_edits_the_old_message() {
    an_answer_after_a_restart_edits_the_old_message(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_an_answer_after_a_restart_edits_the_old_message() {
    let (url, _database) = iris_store::testing::fresh_postgres_database().await;
    an_answer_after_a_restart_edits_the_old_message(Some(&url)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_card_the_bot_never_saw_is_sent_once_across_restarts() {
    a_card_the_bot_never_saw_is_sent_once_across_restarts(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_card_the_bot_never_saw_is_sent_once_across_restarts() {
    let (url, _database) = iris_store::testing::fresh_postgres_database().await;
    a_card_the_bot_never_saw_is_sent_once_across_restarts(Some(&url)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_lapse_after_a_restart_edits_the_old_message() {
    a_lapse_after_a_restart_edits_the_old_message(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_lapse_after_a_restart_edits_the_old_message() {
    let (url, _database) = iris_store::testing::fresh_postgres_database().await;
    a_lapse_after_a_restart_edits_the_old_message(Some(&url)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_share_one_bot_one_poller_one_card_one_edit() {
    let (url, _database) = iris_store::testing::fresh_postgres_database().await;
    let bot = FakeBot::start().await;
    let (mut world, control) = restartable(Some(&url)).await;
    let a = serve(&mut world, &[], Some(&bot));
    let b = serve(&mut world, &[], Some(&bot));

    // Requested on B: both servers hear of it; one sends it.
    let row0 = halt(&b.client(), &control).await;
    let id = row0["id"].as_str().unwrap().to_string();
    let message_id = bot.message_of(&id).await;
    // Whichever server polls answers the tap.
    let q = bot.tap(OWNER, OWNER, message_id, &format!("a:{id}"));
    bot.answer(&q).await;
    bot.confirmed().await;
    // Answered on A over HTTP: the message shows the outcome.
    let (status, body) = a
        .client()
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&control),
            json!({"decision": "reject"}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    bot.edited_to(message_id, "*Rejected* by phone via api at")
        .await;
    // The edit is recorded right after the chat shows it; a kill between the two would leave an
    // unrecorded edit that B rightly makes again (at least once, never lost).
    outcome_recorded(&world, &id, "Rejected").await;

    // A is killed (the poller or not): B keeps sending, editing and, now, polling.
    a.kill();
    let row1 = halt(&b.client(), &control).await;
    let id1 = row1["id"].as_str().unwrap().to_string();
    let message1 = bot.message_of(&id1).await;
    let q = bot.tap(OWNER, OWNER, message1, &format!("r:{id1}"));
    bot.answer(&q).await;
    bot.edited_to(message1, "*Rejected* by").await;

    // B relays events in order, so it handled the first answer before the second card.
    let outcome_edits = bot
        .edits_of(message_id)
        .iter()
        .filter(|e| e["text"].as_str().unwrap().contains("Rejected"))
        .count();
    assert_eq!(outcome_edits, 1, "both servers edited the outcome");
    assert_eq!(bot.sent_for(&id).len(), 1, "the card was sent twice");
    assert_eq!(bot.sent_for(&id1).len(), 1, "the card was sent twice");
    assert_eq!(bot.conflicts(), 0, "two servers polled at once");
    assert!(bot.calls("getUpdates").len() > 1);
}

/// ADR-0118 decision 4: a card that needs the owner's passkey arrives with "Open the card" (a
/// link to its page in the web app) instead of the action; tapping an old action or Yes only
/// says so, and Reject is still one tap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_that_needs_the_passkey_opens_the_web_app_and_can_only_be_rejected_here() {
    let bot = FakeBot::start().await;
    let (world, control, server) = start(
        &bot,
        &[
            ("IRIS_PASSKEY_REQUIRED", "destructive"),
            ("IRIS_PUBLIC_URL", "https://iris.example.org"),
        ],
    )
    .await;
    let client = server.client();
    let original = snapshot(&world.maildir);
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
    assert_eq!(snapshot(&world.maildir), original);
    let q = bot.tap(OWNER, OWNER, 1, &format!("r:{id}"));
    assert_eq!(bot.answer(&q).await, "Rejected; nothing was changed.");
    assert_eq!(row(&client, &control, &id).await["status"], "rejected");
}
