//! A fake Telegram Bot API on loopback, shared by the suites that drive the Telegram surface
//! (`telegram.rs`) and race it against the other surfaces (`cli.rs`): it records every call
//! (method names compared case-insensitively, as BUILD-NOTES says teloxide and others differ),
//! numbers sent messages 1, 2, … and delivers callback updates by long polling `getUpdates`.

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::sync::{Barrier, Notify};

use super::eventually;

/// The bot token `iris` is given (`IRIS_TELEGRAM_TOKEN`); calls naming another are refused 401.
pub const TOKEN: &str = "123456:test-token";
/// The owner's private chat (`IRIS_TELEGRAM_CHAT_ID`), also the owner's user id; taps from it
/// carry the username `owner`, so an answer given here is recorded as by `@owner`.
pub const OWNER: i64 = 4242;

/// The test's own MarkdownV2 escaping (the Bot API's list of reserved characters), to find
/// card text and outcomes in the messages `iris` sends.
pub fn escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if "_*[]()~`>#+-=|{}.!\\".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// What the fake has seen and what it still has to deliver.
#[derive(Clone, Default)]
struct BotState {
    /// Every call: lower-cased method name and JSON body.
    calls: Arc<Mutex<Vec<(String, Value)>>>,
    /// Every update ever queued; `getUpdates` returns those at or after its offset.
    updates: Arc<Mutex<Vec<Value>>>,
    /// Woken whenever an update is queued (a long poll waiting for one returns at once).
    arrived: Arc<Notify>,
    /// The id of the last message sent (messages are numbered 1, 2, …).
    next_message_id: Arc<AtomicI64>,
    /// `getUpdates` calls still to fail with 502 (the poller must back off and retry).
    failing_polls: Arc<AtomicUsize>,
    /// Path segments that did not name this bot's token.
    wrong_token: Arc<Mutex<Vec<String>>>,
    /// `getUpdates` calls being answered right now.
    polling: Arc<AtomicUsize>,
    /// `getUpdates` calls refused because another was in progress (Telegram's 409 Conflict).
    conflicts: Arc<AtomicUsize>,
}

/// Counts one `getUpdates` in progress while alive.
struct Polling(Arc<AtomicUsize>);

impl Drop for Polling {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl BotState {
    /// Makes `update` visible to `getUpdates` and wakes a poll waiting for one.
    fn deliver(&self, update: Value) {
        self.updates.lock().unwrap().push(update);
        self.arrived.notify_waiters();
    }
}

/// A fake Telegram Bot API on loopback. The first `getUpdates` fails with 502, so every suite
/// also exercises the poller's back-off and retry.
pub struct FakeBot {
    /// `http://127.0.0.1:PORT`, for `IRIS_TELEGRAM_API_URL`.
    pub url: String,
    state: BotState,
    next_update: AtomicI64,
}

/// A successful Bot API answer carrying `result`.
fn ok(result: Value) -> Response {
    Json(json!({"ok": true, "result": result})).into_response()
}

/// Every Bot API method: `POST /bot{TOKEN}/{method}`.
async fn bot_method(
    State(state): State<BotState>,
    Path((bot, method)): Path<(String, String)>,
    body: Option<Json<Value>>,
) -> Response {
    let method = method.to_ascii_lowercase();
    let body = body.map(|Json(b)| b).unwrap_or(Value::Null);
    if bot != format!("bot{TOKEN}") {
        state.wrong_token.lock().unwrap().push(bot);
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"ok": false, "error_code": 401, "description": "Unauthorized"})),
        )
            .into_response();
    }
    state
        .calls
        .lock()
        .unwrap()
        .push((method.clone(), body.clone()));
    match method.as_str() {
        "getupdates" => {
            if state
                .failing_polls
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
            {
                return (StatusCode::BAD_GATEWAY, "bad gateway (test)").into_response();
            }
            // As Telegram does: one `getUpdates` per bot at a time; a second one is refused.
            if state.polling.fetch_add(1, Ordering::SeqCst) > 0 {
                state.polling.fetch_sub(1, Ordering::SeqCst);
                state.conflicts.fetch_add(1, Ordering::SeqCst);
                return (
                    StatusCode::CONFLICT,
                    Json(json!({"ok": false, "error_code": 409, "description":
                        "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"})),
                )
                    .into_response();
            }
            let _polling = Polling(state.polling.clone());
            let offset = body["offset"].as_i64().unwrap_or(0);
            // As Telegram does: an offset confirms every earlier update, which is then forgotten
            // (a restarted poller does not see taps its predecessor already handled).
            state
                .updates
                .lock()
                .unwrap()
                .retain(|u| u["update_id"].as_i64().unwrap() >= offset);
            // Long polling: answer as soon as an update is there, or empty after a second.
            let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
            loop {
                let arrived = state.arrived.notified();
                let pending: Vec<Value> = state
                    .updates
                    .lock()
                    .unwrap()
                    .iter()
                    .filter(|u| u["update_id"].as_i64().unwrap() >= offset)
                    .cloned()
                    .collect();
                if !pending.is_empty() {
                    return ok(Value::Array(pending));
                }
                if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                    return ok(json!([]));
                }
            }
        }
        "sendmessage" => {
            let id = state.next_message_id.fetch_add(1, Ordering::SeqCst) + 1;
            ok(json!({"message_id": id, "date": 0,
                      "chat": {"id": body["chat_id"], "type": "private"}, "text": body["text"]}))
        }
        "editmessagetext" => ok(json!({"message_id": body["message_id"], "date": 0,
                                        "chat": {"id": body["chat_id"], "type": "private"},
                                        "text": body["text"]})),
        "answercallbackquery" => ok(json!(true)),
        _ => (
            StatusCode::NOT_FOUND,
            Json(json!({"ok": false, "error_code": 404, "description": "Not Found: method not found"})),
        )
            .into_response(),
    }
}

impl FakeBot {
    /// Starts the fake on a free loopback port.
    pub async fn start() -> FakeBot {
        let state = BotState::default();
        state.failing_polls.store(1, Ordering::SeqCst);
        let app = Router::new()
            .route("/{bot}/{method}", post(bot_method))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FakeBot {
            url: format!("http://{addr}"),
            state,
            next_update: AtomicI64::new(1),
        }
    }

    /// The settings pointing `iris` at this bot, with the owner's chat.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("IRIS_TELEGRAM_TOKEN".into(), TOKEN.into()),
            ("IRIS_TELEGRAM_CHAT_ID".into(), OWNER.to_string()),
            ("IRIS_TELEGRAM_API_URL".into(), self.url.clone()),
        ]
    }

    /// Bodies of every call of `method` (any case), in order.
    pub fn calls(&self, method: &str) -> Vec<Value> {
        let method = method.to_ascii_lowercase();
        self.state
            .calls
            .lock()
            .unwrap()
            .iter()
            .filter(|(m, _)| *m == method)
            .map(|(_, b)| b.clone())
            .collect()
    }

    /// The cards sent for approval `id` (its buttons name it), in order.
    pub fn sent_for(&self, id: &str) -> Vec<Value> {
        self.calls("sendMessage")
            .into_iter()
            .filter(|m| m["reply_markup"].to_string().contains(id))
            .collect()
    }

    /// Waits for the card of approval `id`; its message id (the fake numbers messages 1, 2, …
    /// in the order they are sent).
    pub async fn message_of(&self, id: &str) -> i64 {
        eventually(&format!("the card of {id}"), || async move {
            let position = self
                .calls("sendMessage")
                .iter()
                .position(|m| m["reply_markup"].to_string().contains(id))?;
            Some(i64::try_from(position).unwrap() + 1)
        })
        .await
    }

    /// Edits of one message, in order.
    pub fn edits_of(&self, message_id: i64) -> Vec<Value> {
        self.calls("editMessageText")
            .into_iter()
            .filter(|e| e["message_id"] == message_id)
            .collect()
    }

    /// Queues a tap on `data` by user `from` on `message_id` in `chat`; the callback query id.
    pub fn tap(&self, from: i64, chat: i64, message_id: i64, data: &str) -> String {
        let (query_id, update) = self.tap_update(from, chat, message_id, data);
        self.state.deliver(update);
        query_id
    }

    /// Like [`FakeBot::tap`], but the tap is delivered only when `release` lets everyone go:
    /// the poller, parked in its `getUpdates` long poll, is woken at that moment and gets the
    /// tap at once, so the tap reaches `iris` together with the other surfaces' answers held
    /// at the same barrier. Returns the callback query id at once; `release` counts this tap
    /// as one of its participants. Make no other tap until this one is answered: a later tap
    /// delivered first would move the poller's offset past this one, which is then dropped.
    pub fn tap_when_released(
        &self,
        release: Arc<Barrier>,
        from: i64,
        chat: i64,
        message_id: i64,
        data: &str,
    ) -> String {
        let (query_id, update) = self.tap_update(from, chat, message_id, data);
        let state = self.state.clone();
        tokio::spawn(async move {
            release.wait().await;
            state.deliver(update);
        });
        query_id
    }

    /// A callback-query update for a tap (numbered in the order taps are made); its query id
    /// and the update.
    fn tap_update(&self, from: i64, chat: i64, message_id: i64, data: &str) -> (String, Value) {
        let update_id = self.next_update.fetch_add(1, Ordering::SeqCst);
        let query_id = format!("cbq-{update_id}");
        let username = if from == OWNER { "owner" } else { "stranger" };
        let update = json!({
            "update_id": update_id,
            "callback_query": {
                "id": query_id,
                "from": {"id": from, "is_bot": false, "first_name": "Someone", "username": username},
                "message": {"message_id": message_id, "date": 0,
                            "chat": {"id": chat, "type": "private"}, "text": "card"},
                "chat_instance": "test",
                "data": data
            }
        });
        (query_id, update)
    }

    /// How many `getUpdates` calls were refused because another was in progress (two pollers).
    pub fn conflicts(&self) -> usize {
        self.state.conflicts.load(Ordering::SeqCst)
    }

    /// Path segments of calls that did not name this bot's token (`bot{TOKEN}`).
    pub fn wrong_tokens(&self) -> Vec<String> {
        self.state.wrong_token.lock().unwrap().clone()
    }

    /// Waits until the poller has confirmed every queued tap (asked for updates after them), so
    /// a restarted server is not handed them again.
    pub async fn confirmed(&self) {
        eventually("the poller to confirm every tap", || async {
            self.state.updates.lock().unwrap().is_empty().then_some(())
        })
        .await
    }

    /// Waits for the answer to a tap; its `text`.
    pub async fn answer(&self, query_id: &str) -> String {
        eventually("the tap's answerCallbackQuery", || async move {
            self.calls("answerCallbackQuery")
                .into_iter()
                .find(|a| a["callback_query_id"] == query_id)
                .map(|a| a["text"].as_str().unwrap_or_default().to_string())
        })
        .await
    }

    /// Waits for an edit of `message_id` whose text contains `needle`; that edit.
    pub async fn edited_to(&self, message_id: i64, needle: &str) -> Value {
        eventually(
            &format!("an edit of message {message_id} to {needle:?}"),
            || async move {
                self.edits_of(message_id)
                    .into_iter()
                    .rev()
                    .find(|e| e["text"].as_str().unwrap().contains(needle))
            },
        )
        .await
    }
}
