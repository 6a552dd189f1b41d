//! Which message shows which row is stored (migration 0015), so the Telegram surface survives
//! restarts and shares one bot between servers. Restarts, on SQLite and PostgreSQL: the server
//! is killed and started again on the same database and bot; an answer over HTTP and a lapse
//! after the restart edit the old message, a card requested before the bot knew is sent once
//! (not again at a later start), and an answer given while the bot was down edits the message
//! once. Two servers on one PostgreSQL database and one bot: one polls at a time (the fake
//! refuses a second concurrent `getUpdates` with 409, as Telegram does), a card is sent once, an
//! answer on either server edits the message once, and when the poller is killed the other takes
//! over.

use crate::support;

use serde_json::json;
use support::telegram::{escape, FakeBot, OWNER};
use support::{eventually, snapshot, Client, ModelServer, World, CATEGORY_TRASH_SCRIPT};

use super::{card_keyboard, halt, lapse_time, row};

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
        iris_core::wire::when_utc(at)
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

// Needs a process: kill -9 (each restart kills the server; a stopped in-process build's
// Telegram bridge would poll on beside the next one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_an_answer_after_a_restart_edits_the_old_message() {
    an_answer_after_a_restart_edits_the_old_message(None).await;
}

// Needs a process: kill -9 (each restart kills the server; a stopped in-process build's
// Telegram bridge would poll on beside the next one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_an_answer_after_a_restart_edits_the_old_message() {
    let (url, _database) = iris_store::testing::fresh_postgres_database().await;
    an_answer_after_a_restart_edits_the_old_message(Some(&url)).await;
}

// Needs a process: kill -9 (each restart kills the server; a stopped in-process build's
// Telegram bridge would poll on beside the next one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_card_the_bot_never_saw_is_sent_once_across_restarts() {
    a_card_the_bot_never_saw_is_sent_once_across_restarts(None).await;
}

// Needs a process: kill -9 (each restart kills the server; a stopped in-process build's
// Telegram bridge would poll on beside the next one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_card_the_bot_never_saw_is_sent_once_across_restarts() {
    let (url, _database) = iris_store::testing::fresh_postgres_database().await;
    a_card_the_bot_never_saw_is_sent_once_across_restarts(Some(&url)).await;
}

// Needs a process: kill -9 (each restart kills the server; a stopped in-process build's
// Telegram bridge would poll on beside the next one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_lapse_after_a_restart_edits_the_old_message() {
    a_lapse_after_a_restart_edits_the_old_message(None).await;
}

// Needs a process: kill -9 (each restart kills the server; a stopped in-process build's
// Telegram bridge would poll on beside the next one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_lapse_after_a_restart_edits_the_old_message() {
    let (url, _database) = iris_store::testing::fresh_postgres_database().await;
    a_lapse_after_a_restart_edits_the_old_message(Some(&url)).await;
}

// Needs a process: several servers on one database, one of them killed with SIGKILL.
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
