//! The Telegram surface (Telegram; DESIGN §2 "surface", §6 puts it in the server):
//! a view of the approval row in the owner's chat that answers through the approvals service,
//! with surface `telegram`.
//!
//! - Every `approval.requested` from the channel router is sent to the owner's chat
//!   (`IRIS_TELEGRAM_CHAT_ID`) as the card in MarkdownV2 ([`render`]) with two buttons: the
//!   card's action ("Trash 3 emails") and Reject.
//! - Tapping the action edits the message to the confirm view ("Trash 3 emails?" with Yes and
//!   Cancel); Yes approves, Cancel goes back to the card, Reject is one tap.
//! - Only the owner's chat may answer: any other tap is told "You are not allowed to answer
//!   this." and nothing changes.
//! - `approval.responded` and `approval.lapsed` edit the message to the outcome (who, which
//!   surface, when, what ran) or to the lapse notice, whichever surface answered.
//!
//! Updates arrive by long polling `getUpdates` in a background task; errors back off and retry
//! and never touch the server. The Bot API is spoken through [`bot_api`], a few documented
//! methods over the reqwest client already in the tree (no extra dependency to build).
//!
//! Which message shows which row, and what it shows, is stored in the database
//! (`telegram_cards`, migration 0015, through [`TelegramCardStore`]), so it survives a restart:
//!
//! - An answer given on another surface, or a lapse, edits the old message after a restart too.
//! - On start the bridge catches up before relaying events: messages of rows answered or lapsed
//!   while it was down are edited to their outcome (once: a message already showing that outcome
//!   is left alone), and every still-pending row without a message is sent to the owner's chat
//!   (once: sending first claims the row in the table, so neither a second start nor an event
//!   racing the catch-up sends it again). A card whose send a crash interrupted is sent again.
//! - Yes approves only from the confirm view, also when that view was shown before a restart.
//! - A message the table does not know (sent before the table existed) is learnt from its
//!   first tap.
//!
//! Several servers on one database each run a bridge: every bridge relays events (the card is
//! sent once, claimed in `telegram_cards`; an edit that would show what the message already
//! shows is skipped), but only one polls for taps: Telegram refuses two concurrent `getUpdates`
//! for one token, so the poller holds a lock across servers (an advisory lock on PostgreSQL)
//! and another server takes over when it stops.
//!
//! The bridge's parts: [`relay`] sends and edits cards as events arrive, [`poll`] polls for
//! taps, [`tap`] answers a tap; the settings, the bridge and how a message is edited are here.

pub mod bot_api;
pub mod callback;
mod poll;
mod relay;
pub mod render;
mod tap;

use std::fmt;
use std::time::Duration;

use iris_core::ports::{TelegramCard, TelegramCardStore, TelegramView};
use iris_core::wire::{Approval, ApprovalStatus};

use crate::config::{non_blank, Settings};
use crate::state::AppState;
use bot_api::BotApi;

/// Telegram's own Bot API, used when `IRIS_TELEGRAM_API_URL` is unset.
pub const DEFAULT_API_URL: &str = "https://api.telegram.org";

/// What anyone but the owner's chat is told when tapping a button.
pub const NOT_ALLOWED: &str = "You are not allowed to answer this.";

/// The surface name stored on rows answered here (DESIGN §7 Approval `surface`).
pub const SURFACE: iris_core::wire::Surface = iris_core::wire::Surface::Telegram;

/// The Telegram settings of DESIGN §7, checked.
#[derive(Clone, PartialEq)]
pub struct TelegramSettings {
    /// `IRIS_TELEGRAM_TOKEN`: the bot's token (never logged).
    pub token: String,
    /// `IRIS_TELEGRAM_CHAT_ID`: the owner's chat; the only chat that receives cards and the
    /// only one whose taps are answered.
    pub owner_chat_id: i64,
    /// `IRIS_TELEGRAM_API_URL` (default [`DEFAULT_API_URL`]); tests point it at loopback.
    pub api_url: String,
}

impl fmt::Debug for TelegramSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TelegramSettings")
            .field("token", &"…")
            .field("owner_chat_id", &self.owner_chat_id)
            .field("api_url", &self.api_url)
            .finish()
    }
}

/// Why the Telegram settings cannot be used (the server refuses to start: a surface the owner
/// configured must not silently be missing).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TelegramSettingsError {
    /// A token without the owner's chat.
    #[error("IRIS_TELEGRAM_TOKEN is set but IRIS_TELEGRAM_CHAT_ID is not: cards need the owner's chat, and only that chat may answer")]
    MissingChatId,
    /// The chat id is not a whole number.
    #[error("IRIS_TELEGRAM_CHAT_ID `{0}` is not a Telegram chat id (a whole number, e.g. 123456789 or -1001234567890)")]
    BadChatId(String),
}

impl TelegramSettings {
    /// The Telegram settings from [`Settings`]: `None` when no token is set (the surface is off).
    ///
    /// # Errors
    /// A token without a chat id, or a chat id that is not a whole number.
    pub fn from_settings(
        settings: &Settings,
    ) -> Result<Option<TelegramSettings>, TelegramSettingsError> {
        let Some(token) = non_blank(&settings.telegram_token) else {
            return Ok(None);
        };
        let chat =
            non_blank(&settings.telegram_chat_id).ok_or(TelegramSettingsError::MissingChatId)?;
        // Telegram never gives a chat the id 0: a 0 is a placeholder left in the settings.
        let owner_chat_id = chat
            .parse::<i64>()
            .ok()
            .filter(|id| *id != 0)
            .ok_or_else(|| TelegramSettingsError::BadChatId(chat.to_string()))?;
        let api_url = non_blank(&settings.telegram_api_url)
            .unwrap_or(DEFAULT_API_URL)
            .trim_end_matches('/')
            .to_string();
        Ok(Some(TelegramSettings {
            token: token.to_string(),
            owner_chat_id,
            api_url,
        }))
    }
}

/// Starts the Telegram surface: subscribes to the channel router now (so no request made after
/// this call is missed), then, in one background task, catches up with what happened while the
/// bridge was not running and relays events, and in another polls for taps.
pub fn spawn(state: AppState, settings: TelegramSettings) {
    let events = state.store.subscribe();
    let bridge = Bridge {
        api: BotApi::new(&settings.api_url, &settings.token),
        owner: settings.owner_chat_id,
        edits: chat_lock(settings.owner_chat_id),
        state,
    };
    tracing::info!(chat = settings.owner_chat_id, api = %settings.api_url, "Telegram: cards go to the owner's chat");
    tokio::spawn(bridge.clone().relay_events(events));
    tokio::spawn(bridge.lead_polling(poller_lock(&settings.token)));
}

/// The lock of a bot's one poller (`iris:telegram-poller:HASH`): Telegram allows one
/// `getUpdates` per token, across every server of one database.
fn poller_lock(token: &str) -> iris_store::NamedLock {
    let bot = &crate::auth::token_hash(token)[..16];
    iris_store::NamedLock::new("telegram", &format!("poller:{bot}"))
}

/// The lock of one chat's sends and edits (`iris:telegram-chat:ID`), held with the read of the
/// stored card before each.
fn chat_lock(chat: i64) -> iris_store::NamedLock {
    iris_store::NamedLock::new("telegram", &format!("chat:{chat}"))
}

/// Whether `row`'s outcome will not change any more, so a message showing it needs no edit at
/// a later start: rejected, lapsed, or approved with the call's outcome recorded (executed,
/// failed, unknown). An approved call still on its way is not settled.
fn settled(row: &Approval) -> bool {
    match row.status {
        ApprovalStatus::Pending => false,
        ApprovalStatus::Rejected | ApprovalStatus::Expired => true,
        ApprovalStatus::Approved => row.execution.has_outcome(),
    }
}

/// Waits between failed polls: 1 s, doubling to at most 60 s; reset after a success.
#[derive(Debug)]
struct Backoff {
    next: Duration,
}

impl Backoff {
    const FIRST: Duration = Duration::from_secs(1);
    const MAX: Duration = Duration::from_secs(60);

    fn new() -> Backoff {
        Backoff { next: Self::FIRST }
    }

    /// The wait before the next try.
    fn next_wait(&mut self) -> Duration {
        let wait = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        wait
    }

    fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}

/// The running surface: the bot and the owner's chat. Which message shows which row is in the
/// store ([`TelegramCardStore`]).
#[derive(Clone)]
struct Bridge {
    state: AppState,
    api: BotApi,
    owner: i64,
    /// Serialises every send and edit together with the read of the stored card before it, on
    /// every server of the database (DESIGN §9 "per-process locks become advisory locks"): a
    /// tap and an event about the same row never interleave their read-then-edit, and when
    /// several servers relay the same event the first edits and the others find the message
    /// already showing it.
    edits: iris_store::NamedLock,
}

impl Bridge {
    /// The stored card of row `id` in the owner's chat. A store failure is logged here and is
    /// `Err(())`: the caller then changes nothing.
    async fn stored_card(&self, id: &str) -> Result<Option<TelegramCard>, ()> {
        TelegramCardStore::telegram_card(&self.state.store, self.owner, id)
            .await
            .map_err(|e| {
                tracing::error!(approval = %id, error = %e, "Telegram: reading the card's message failed");
            })
    }

    /// Takes the chat's edit lock ([`Bridge::edits`]); `None`, logged, when the database cannot
    /// be reached (the caller then changes nothing: the next event, tap or start catches up).
    async fn lock_edits(&self) -> Option<iris_store::LockGuard> {
        match self.state.store.lock(&self.edits).await {
            Ok(guard) => Some(guard),
            Err(e) => {
                tracing::warn!(error = %e, "Telegram: taking the chat's edit lock failed");
                None
            }
        }
    }

    /// The card's page in the web app (`IRIS_PUBLIC_URL`, else the bind address), for the
    /// "Open the card" button of a card that needs the owner's passkey.
    fn card_link(&self, id: &str) -> String {
        let base = crate::pairing::configured_base(&self.state.settings)
            .unwrap_or_else(|_| "http://localhost:3000".into());
        format!("{base}/activity/{id}")
    }

    /// Stores what a message shows; a failure is logged (the message then updates at the next
    /// event, tap or start).
    async fn remember(&self, card: TelegramCard) {
        if let Err(e) = self.state.store.record_telegram_card(&card).await {
            tracing::error!(approval = %card.approval_id, error = %e, "Telegram: storing the card's message failed");
        }
    }

    /// Edits `message_id` to `view` of `row` (the outcome or lapse notice for
    /// [`TelegramView::Closed`], without buttons) and stores what it shows now. Nothing is sent
    /// when the stored card says the message shows exactly that already.
    async fn show(
        &self,
        card: Option<&TelegramCard>,
        message_id: i64,
        row: &Approval,
        view: TelegramView,
    ) {
        let (text, keyboard) = match view {
            TelegramView::Card => (
                render::card_text(row),
                Some(render::card_keyboard(row, &self.card_link(&row.id))),
            ),
            TelegramView::Confirm => (
                render::confirm_text(row),
                Some(render::confirm_keyboard(row)),
            ),
            TelegramView::Closed => (render::outcome_text(row), None),
        };
        let settled = view == TelegramView::Closed && settled(row);
        let now = chrono::Utc::now();
        let record = |shown_text: Option<String>, view: TelegramView, settled: bool| TelegramCard {
            chat_id: self.owner,
            approval_id: row.id.clone(),
            message_id: Some(message_id),
            view,
            shown_text,
            settled,
            sent_at: card.map_or(now, |c| c.sent_at),
            updated_at: now,
        };
        if let Some(card) = card.filter(|c| {
            c.message_id == Some(message_id)
                && c.view == view
                && c.shown_text.as_deref() == Some(text.as_str())
        }) {
            if settled && !card.settled {
                self.remember(record(Some(text), view, settled)).await;
            }
            return;
        }
        match self
            .api
            .edit_message_text(self.owner, message_id, &text, keyboard.as_ref())
            .await
        {
            Ok(()) => self.remember(record(Some(text), view, settled)).await,
            // Deleted in the chat: there is nothing left to edit, now or at a later start.
            Err(e) if e.is_message_gone() => {
                tracing::warn!(approval = %row.id, error = %e, "Telegram: the card's message is gone");
                self.remember(record(None, TelegramView::Closed, true))
                    .await;
            }
            Err(e) => {
                tracing::warn!(approval = %row.id, error = %e, "Telegram: editing the card failed")
            }
        }
    }
}

#[cfg(test)]
mod tests;
