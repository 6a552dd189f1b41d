//! Which Telegram message shows which approval (the Telegram surface; migration 0015).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::StoreError;

/// What a Telegram message shows of its approval (Telegram).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TelegramView {
    /// The card with its action and Reject buttons.
    Card,
    /// The confirm view ("Trash 3 emails?" with Yes and Cancel): only from here does Yes approve.
    Confirm,
    /// The outcome or the lapse notice, without buttons.
    Closed,
}

impl TelegramView {
    /// `card`, `confirm` or `closed` (the stored spelling).
    pub fn as_str(self) -> &'static str {
        match self {
            TelegramView::Card => "card",
            TelegramView::Confirm => "confirm",
            TelegramView::Closed => "closed",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(text: &str) -> Option<TelegramView> {
        match text {
            "card" => Some(TelegramView::Card),
            "confirm" => Some(TelegramView::Confirm),
            "closed" => Some(TelegramView::Closed),
            _ => None,
        }
    }
}

/// The Telegram message that shows one approval in one chat (Telegram): durable, so
/// an answer given elsewhere or a lapse edits the message after a restart too, and a card is
/// sent to a chat once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TelegramCard {
    /// The chat (`IRIS_TELEGRAM_CHAT_ID` when it was sent).
    pub chat_id: i64,
    /// The approval it shows.
    pub approval_id: String,
    /// The message; `None` while the card is being sent (claimed, not yet delivered).
    pub message_id: Option<i64>,
    /// What the message shows now.
    pub view: TelegramView,
    /// The message's text as last sent or edited (MarkdownV2); `None` when unknown (a message
    /// learnt from a tap, e.g. one sent before this was stored).
    pub shown_text: Option<String>,
    /// The message shows an outcome that will not change any more; start-up reconciliation
    /// skips it.
    pub settled: bool,
    /// When the card was claimed for sending (or first learnt from a tap).
    pub sent_at: DateTime<Utc>,
    /// When the row last changed.
    pub updated_at: DateTime<Utc>,
}

/// Which Telegram message shows which approval (Telegram; migration 0015). The
/// surface serialises its own edits; this store makes what it learnt survive a restart.
#[async_trait]
pub trait TelegramCardStore: Send + Sync {
    /// Claims sending the card of `approval_id` to `chat_id`: writes a row without a message.
    /// `Ok(true)` when this caller won; `Ok(false)` when the chat already has (or is being sent)
    /// a card for that approval, so a card is sent to a chat once.
    ///
    /// # Errors
    /// [`StoreError::Backend`] (also for an unknown approval: foreign key).
    async fn claim_telegram_card(
        &self,
        chat_id: i64,
        approval_id: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError>;

    /// Gives up a claim whose card was not delivered (a row still without a message), so the
    /// next start sends it again. A row with a message is left alone.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn release_telegram_card(
        &self,
        chat_id: i64,
        approval_id: &str,
    ) -> Result<(), StoreError>;

    /// Gives up every claim in `chat_id` that never got a message (a crash mid-send); returns
    /// their approval ids, oldest claim first. Called at start-up, before this process sends
    /// anything.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn release_unsent_telegram_cards(&self, chat_id: i64) -> Result<Vec<String>, StoreError>;

    /// Records what `card`'s message shows now (written whole; the row is created when
    /// missing, e.g. for a message learnt from a tap; `sent_at` is kept when it exists).
    ///
    /// # Errors
    /// [`StoreError::Backend`] (also for an unknown approval, or a view other than `card`
    /// without a message).
    async fn record_telegram_card(&self, card: &TelegramCard) -> Result<(), StoreError>;

    /// The card of `approval_id` in `chat_id`, if any.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] for a row that does not parse; [`StoreError::Backend`].
    async fn telegram_card(
        &self,
        chat_id: i64,
        approval_id: &str,
    ) -> Result<Option<TelegramCard>, StoreError>;

    /// Pending approvals, not yet lapsed at `now`, that have no card in `chat_id`: ids, oldest
    /// first (the cards to send at start-up).
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn unsent_telegram_cards(
        &self,
        chat_id: i64,
        now: DateTime<Utc>,
    ) -> Result<Vec<String>, StoreError>;

    /// Sent, unsettled cards in `chat_id` whose approval is no longer pending (answered or
    /// lapsed), oldest answer first: the messages start-up edits to their outcome.
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] for a row that does not parse; [`StoreError::Backend`].
    async fn unsettled_telegram_cards(&self, chat_id: i64)
        -> Result<Vec<TelegramCard>, StoreError>;
}
