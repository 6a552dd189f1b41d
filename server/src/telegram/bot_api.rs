//! The few Telegram Bot API methods the Telegram surface uses, over the reqwest client already in
//! the tree (rustls), with serde types for exactly the documented JSON fields read or written
//! (<https://core.telegram.org/bots/api>): `getUpdates` (long polling), `sendMessage`,
//! `editMessageText` and `answerCallbackQuery`. Every call is `POST {API_URL}/bot{TOKEN}/{method}`
//! with a JSON body; every answer is `{"ok", "result" | "description", "error_code",
//! "parameters"}`.
//!
//! The token is part of each URL, so no error from here ever carries a URL (reqwest's errors
//! print it): logs never show the token.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// How long a `getUpdates` long poll may wait on Telegram's side, in seconds.
pub const LONG_POLL_SECS: u64 = 25;
/// Timeout of every other request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// Why a Bot API call did not give a result.
#[derive(Debug, thiserror::Error)]
pub enum BotApiError {
    /// The request did not get an answer (network, timeout, TLS); the URL is left out.
    #[error("Telegram Bot API `{method}` unreachable: {message}")]
    Transport {
        /// The method called.
        method: &'static str,
        /// reqwest's error without its URL.
        message: String,
    },
    /// Telegram answered `"ok": false` (or a non-JSON error page).
    #[error("Telegram Bot API `{method}` refused ({code}): {description}")]
    Refused {
        /// The method called.
        method: &'static str,
        /// `error_code` (or the HTTP status).
        code: i64,
        /// `description`.
        description: String,
        /// `parameters.retry_after` in seconds, when Telegram asks to slow down (429).
        retry_after: Option<u64>,
    },
}

impl BotApiError {
    /// True for `editMessageText` refusing an edit that changes nothing (the message already
    /// shows this view): not a failure.
    pub fn is_not_modified(&self) -> bool {
        matches!(self, BotApiError::Refused { description, .. } if description.contains("message is not modified"))
    }

    /// True for `editMessageText` refusing because the message no longer exists or can no
    /// longer be edited (deleted in the chat): retrying cannot help.
    pub fn is_message_gone(&self) -> bool {
        matches!(self, BotApiError::Refused { description, .. }
            if description.contains("message to edit not found")
                || description.contains("message can't be edited"))
    }

    /// Seconds Telegram asked to wait before the next call, if it did.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            BotApiError::Refused { retry_after, .. } => *retry_after,
            BotApiError::Transport { .. } => None,
        }
    }
}

/// The answer envelope of every method.
#[derive(Deserialize)]
struct Envelope {
    ok: bool,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    error_code: Option<i64>,
    #[serde(default)]
    parameters: Option<ResponseParameters>,
}

#[derive(Deserialize)]
struct ResponseParameters {
    #[serde(default)]
    retry_after: Option<u64>,
}

/// One incoming update. Only callback queries are asked for (`allowed_updates`); any other kind
/// leaves `callback_query` empty and is skipped.
#[derive(Debug, Clone, Deserialize)]
pub struct Update {
    /// The update's number; the next poll's `offset` is the highest seen plus one.
    pub update_id: i64,
    /// A tap on an inline button.
    #[serde(default)]
    pub callback_query: Option<CallbackQuery>,
}

/// A tap on an inline button.
#[derive(Debug, Clone, Deserialize)]
pub struct CallbackQuery {
    /// Answered with `answerCallbackQuery`.
    pub id: String,
    /// Who tapped.
    pub from: User,
    /// The message the button belongs to (absent for inline-mode messages).
    #[serde(default)]
    pub message: Option<MessageRef>,
    /// The button's `callback_data`.
    #[serde(default)]
    pub data: Option<String>,
}

/// A Telegram user.
#[derive(Debug, Clone, Deserialize)]
pub struct User {
    /// User id (equal to the private chat's id).
    pub id: i64,
    /// First name.
    #[serde(default)]
    pub first_name: String,
    /// `@username` without the `@`, if set.
    #[serde(default)]
    pub username: Option<String>,
}

/// The parts of a message (or of an inaccessible one) the surface reads.
#[derive(Debug, Clone, Deserialize)]
pub struct MessageRef {
    /// Message id within its chat.
    pub message_id: i64,
    /// The chat it is in.
    pub chat: Chat,
}

/// A chat.
#[derive(Debug, Clone, Deserialize)]
pub struct Chat {
    /// Chat id: a user's id for a private chat, negative for groups.
    pub id: i64,
}

/// `reply_markup` with inline buttons, one inner list per row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InlineKeyboard {
    /// Rows of buttons.
    pub inline_keyboard: Vec<Vec<InlineButton>>,
}

/// An inline button that sends `callback_data` back when tapped, or opens `url`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InlineButton {
    /// The words on the button.
    pub text: String,
    /// What comes back ([`super::callback::CallbackData`]); empty for a link button.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub callback_data: String,
    /// The page a link button opens (the card in the web app).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// A Bot API client for one bot.
#[derive(Clone)]
pub struct BotApi {
    http: reqwest::Client,
    /// `{API_URL}/bot{TOKEN}`.
    base: String,
}

impl BotApi {
    /// A client for the bot `token` at `api_url` (`https://api.telegram.org` or a test server).
    pub fn new(api_url: &str, token: &str) -> BotApi {
        BotApi {
            http: reqwest::Client::new(),
            base: format!("{}/bot{token}", api_url.trim_end_matches('/')),
        }
    }

    /// Calls `method` with a JSON body and decodes its `result`.
    async fn call<T: DeserializeOwned>(
        &self,
        method: &'static str,
        body: Value,
        timeout: Duration,
    ) -> Result<T, BotApiError> {
        let transport = |e: reqwest::Error| BotApiError::Transport {
            method,
            message: e.without_url().to_string(),
        };
        let response = self
            .http
            .post(format!("{}/{method}", self.base))
            .json(&body)
            .timeout(timeout)
            .send()
            .await
            .map_err(transport)?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(transport)?;
        let envelope: Envelope =
            serde_json::from_slice(&bytes).map_err(|_| BotApiError::Refused {
                method,
                code: i64::from(status.as_u16()),
                description: format!("HTTP {status} without a Bot API answer"),
                retry_after: None,
            })?;
        if !envelope.ok {
            return Err(BotApiError::Refused {
                method,
                code: envelope
                    .error_code
                    .unwrap_or_else(|| i64::from(status.as_u16())),
                description: envelope.description.unwrap_or_default(),
                retry_after: envelope.parameters.and_then(|p| p.retry_after),
            });
        }
        serde_json::from_value(envelope.result.unwrap_or(Value::Null)).map_err(|e| {
            BotApiError::Refused {
                method,
                code: i64::from(status.as_u16()),
                description: format!("unexpected result: {e}"),
                retry_after: None,
            }
        })
    }

    /// `getUpdates` from `offset`, waiting up to [`LONG_POLL_SECS`] for callback queries. Each
    /// update is decoded on its own: one that does not decode is returned as `Err(update_id)` so
    /// the caller can still move past it (a bad update must not stall the queue forever).
    pub async fn get_updates(&self, offset: i64) -> Result<Vec<Result<Update, i64>>, BotApiError> {
        let raw: Vec<Value> = self
            .call(
                "getUpdates",
                json!({"offset": offset, "timeout": LONG_POLL_SECS,
                       "allowed_updates": ["callback_query"]}),
                Duration::from_secs(LONG_POLL_SECS + 15),
            )
            .await?;
        Ok(raw
            .into_iter()
            .filter_map(|value| {
                let id = value.get("update_id")?.as_i64()?;
                Some(serde_json::from_value::<Update>(value).map_err(|_| id))
            })
            .collect())
    }

    /// `sendMessage` in MarkdownV2 with inline buttons; the new message's id.
    pub async fn send_message(
        &self,
        chat_id: i64,
        text: &str,
        keyboard: &InlineKeyboard,
    ) -> Result<i64, BotApiError> {
        let sent: MessageRef = self
            .call(
                "sendMessage",
                json!({"chat_id": chat_id, "text": text, "parse_mode": "MarkdownV2",
                       "reply_markup": keyboard}),
                REQUEST_TIMEOUT,
            )
            .await?;
        Ok(sent.message_id)
    }

    /// `editMessageText` in MarkdownV2; without `keyboard` the buttons are removed. An edit that
    /// changes nothing is not an error.
    pub async fn edit_message_text(
        &self,
        chat_id: i64,
        message_id: i64,
        text: &str,
        keyboard: Option<&InlineKeyboard>,
    ) -> Result<(), BotApiError> {
        let mut body = json!({"chat_id": chat_id, "message_id": message_id, "text": text,
                              "parse_mode": "MarkdownV2"});
        if let Some(keyboard) = keyboard {
            body["reply_markup"] = json!(keyboard);
        }
        match self
            .call::<Value>("editMessageText", body, REQUEST_TIMEOUT)
            .await
        {
            Err(e) if e.is_not_modified() => Ok(()),
            other => other.map(|_| ()),
        }
    }

    /// `answerCallbackQuery`: stops the button's spinner and shows `text` (at most 200
    /// characters) to the person who tapped; `alert` shows it as a dialog.
    pub async fn answer_callback_query(
        &self,
        callback_query_id: &str,
        text: &str,
        alert: bool,
    ) -> Result<(), BotApiError> {
        let text: String = text.chars().take(200).collect();
        self.call::<Value>(
            "answerCallbackQuery",
            json!({"callback_query_id": callback_query_id, "text": text, "show_alert": alert}),
            REQUEST_TIMEOUT,
        )
        .await
        .map(|_| ())
    }
}
