//! The Telegram surface end to end (Telegram): the server with `IRIS_TELEGRAM_API_URL` pointing
//! at a fake Bot API server on loopback that records every call (method names compared
//! case-insensitively) and delivers callback updates by long polling. One server runs in process
//! (`support::TestApp` on a listener, its background work running); restarts and two servers on
//! one database are real `iris serve` processes.
//!
//! - [`card`]: a halted chat turn sends exactly one card with the escaped text and two buttons;
//!   the action asks "…? Yes / Cancel"; Cancel goes back; Yes approves with surface `telegram`
//!   and the call runs once; Reject is one tap; a tap from another chat changes nothing; an
//!   answer on the HTTP API and a lapse edit the message; a card that needs the passkey can only
//!   be opened in the web app or rejected here.
//! - [`stored_cards`]: which message shows which row is stored (`telegram_cards`). Restarts, on
//!   SQLite and PostgreSQL: the server is killed and started again on the same database and bot;
//!   an answer over HTTP and a lapse after the restart edit the old message, a card requested
//!   before the bot knew is sent once (not again at a later start), and an answer given while
//!   the bot was down edits the message once. Two servers on one PostgreSQL database and one
//!   bot: one polls at a time (the fake refuses a second concurrent `getUpdates` with 409, as
//!   Telegram does), a card is sent once, an answer on either server edits the message once, and
//!   when the poller is killed the other takes over.
//!
//! This module holds what they share: starting a server pointed at the bot, halting a card, and
//! what its message should show.

mod card;
mod other_plugins;
mod stored_cards;

use crate::support;

use iris_core::ports::Scope;
use serde_json::{json, Value};
use support::app::Build;
use support::telegram::{escape, FakeBot, OWNER, TOKEN};
use support::{Client, ModelServer, TestApp, CATEGORY_TRASH_SCRIPT};

/// Another Telegram user, in their own chat: never allowed to answer.
const STRANGER: i64 = 777;
/// The owner's request: MarkdownV2 specials in "You asked" must arrive escaped.
const REQUEST: &str = "trash the promo emails from this week (all of them) - thanks!";

/// A server in process with the demo mailbox, its background work running, a control device
/// "phone", Telegram pointed at `bot` and the settings `configure` adds; a client of it.
async fn start(bot: &FakeBot, configure: fn(Build) -> Build) -> (TestApp, String, Client) {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let build = TestApp::with_model(&model)
        .mailbox()
        .telegram(&bot.url, TOKEN, OWNER)
        .background();
    // The model server's task keeps serving after this handle is dropped.
    drop(model);
    let server = configure(build).start().await;
    let control = server.add_device("phone", Scope::Control).await;
    let client = server.client().await;
    (server, control, client)
}

/// Asks to trash the promo mail; the halted turn's approval row.
async fn halt(client: &Client, token: &str) -> Value {
    let halted = client.halt(token, REQUEST).await;
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
/// times ("30 Nov 2026, 11:00:00 UTC"), escaped.
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
