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

pub mod bot_api;
pub mod callback;
pub mod render;

use std::fmt;
use std::time::Duration;

use iris_core::approvals::{Actor, RespondError};
use iris_core::ports::{ApprovalStore, Scope, TelegramCard, TelegramCardStore, TelegramView};
use iris_core::wire::{Approval, ApprovalStatus, Decision, Event};
use tokio::sync::broadcast;

use crate::config::{non_blank, Settings};
use crate::state::AppState;
use bot_api::{BotApi, BotApiError, CallbackQuery, Update, User};
use callback::{CallbackData, Step};

/// Telegram's own Bot API, used when `IRIS_TELEGRAM_API_URL` is unset.
pub const DEFAULT_API_URL: &str = "https://api.telegram.org";

/// What anyone but the owner's chat is told when tapping a button.
pub const NOT_ALLOWED: &str = "You are not allowed to answer this.";

/// The surface name stored on rows answered here (DESIGN §7 Approval `surface`).
pub const SURFACE: &str = "telegram";

/// How often a server without the poller lock tries to take it.
const POLLER_RETRY: Duration = Duration::from_secs(5);

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
        edits: iris_store::NamedLock::TelegramChat(settings.owner_chat_id),
        state,
    };
    tracing::info!(chat = settings.owner_chat_id, api = %settings.api_url, "Telegram: cards go to the owner's chat");
    tokio::spawn(bridge.clone().relay_events(events));
    tokio::spawn(bridge.lead_polling(iris_store::NamedLock::TelegramPoller(
        crate::auth::token_hash(&settings.token)[..16].to_string(),
    )));
}

/// What a tap is answered with (`answerCallbackQuery`).
struct Answer {
    text: String,
    /// Shown as a dialog the owner must dismiss (refusals, already decided), else a toast.
    alert: bool,
}

impl Answer {
    fn toast(text: impl Into<String>) -> Answer {
        Answer {
            text: text.into(),
            alert: false,
        }
    }
    fn alert(text: impl Into<String>) -> Answer {
        Answer {
            text: text.into(),
            alert: true,
        }
    }
}

/// True when a tap comes from the owner's chat: the button's message is in that chat and, for a
/// private chat (positive id), the person tapping is the owner themself. In a group chat
/// (negative id) every member of that group counts as the owner's chat.
fn from_owner(owner_chat_id: i64, query: &CallbackQuery) -> bool {
    query.message.as_ref().is_some_and(|m| {
        m.chat.id == owner_chat_id && (owner_chat_id < 0 || query.from.id == owner_chat_id)
    })
}

/// The answering actor's name: `@username`, else the first name, else the user id.
fn actor_name(user: &User) -> String {
    if let Some(username) = user.username.as_deref().filter(|u| !u.is_empty()) {
        return format!("@{username}");
    }
    let first: String = user.first_name.trim().chars().take(64).collect();
    if first.is_empty() {
        format!("telegram user {}", user.id)
    } else {
        first
    }
}

/// The sentence for a row that can no longer be answered: who decided, where and when, or
/// when it lapsed (the same words as the HTTP API's 409/410).
fn closed_sentence(row: &Approval) -> String {
    if row.status == ApprovalStatus::Expired {
        RespondError::Expired(Box::new(row.clone())).to_string()
    } else {
        RespondError::AlreadyDecided(Box::new(row.clone())).to_string()
    }
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
    /// Catches up ([`Bridge::catch_up`]), then relays the channel router's events to the owner's
    /// chat, in order, until the router closes. Events that arrive during the catch-up wait in
    /// the subscription.
    async fn relay_events(self, mut events: broadcast::Receiver<Event>) {
        self.catch_up(true).await;
        loop {
            match events.recv().await {
                Ok(Event::ApprovalRequested(row)) => self.send_card(&row.id).await,
                Ok(Event::ApprovalResponded(row)) | Ok(Event::ApprovalLapsed(row)) => {
                    self.refresh_outcome(&row.id).await
                }
                // A resumed run speaks after the pinned call ran: the row now knows what ran
                // (execution, result), which the outcome shows.
                Ok(Event::RunMessage(message)) => {
                    if let Some(id) = message.approval_id {
                        self.refresh_outcome(&id).await;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(
                        missed,
                        "Telegram: missed events; catching up from the database"
                    );
                    self.catch_up(false).await;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }

    /// What happened while no event reached this bridge: messages of rows answered
    /// or lapsed meanwhile are edited to their outcome, then every pending row without a
    /// message is sent. At start-up (`at_start`) the claims a stopped process left without a
    /// message are given up first, so those cards are sent again.
    async fn catch_up(&self, at_start: bool) {
        let store = &self.state.store;
        if at_start {
            match store.release_unsent_telegram_cards(self.owner).await {
                Ok(ids) => {
                    for id in ids {
                        tracing::warn!(approval = %id, "Telegram: sending a card again whose send a stop interrupted");
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "Telegram: reading interrupted sends failed")
                }
            }
        }
        match store.unsettled_telegram_cards(self.owner).await {
            Ok(cards) => {
                for card in cards {
                    self.refresh_outcome(&card.approval_id).await;
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "Telegram: reading which messages need their outcome failed")
            }
        }
        let now = chrono::Utc::now();
        match store.unsent_telegram_cards(self.owner, now).await {
            Ok(ids) => {
                for id in ids {
                    self.send_card(&id).await;
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "Telegram: reading which cards were never sent failed")
            }
        }
    }

    /// The stored card of row `id` in the owner's chat. A store failure is logged here and is
    /// `Err(())`: the caller then changes nothing.
    async fn stored_card(&self, id: &str) -> Result<Option<TelegramCard>, ()> {
        TelegramCardStore::telegram_card(&self.state.store, self.owner, id)
            .await
            .map_err(|e| {
                tracing::error!(approval = %id, error = %e, "Telegram: reading the card's message failed");
            })
    }

    /// Re-reads row `id` and, if its message is known and the row is answered or lapsed, edits
    /// the message to the current outcome (unless it shows exactly that already).
    async fn refresh_outcome(&self, id: &str) {
        let Some(_edits) = self.lock_edits().await else {
            return;
        };
        let Ok(Some(card)) = self.stored_card(id).await else {
            return;
        };
        let Some(message_id) = card.message_id else {
            return;
        };
        match self.state.store.approval(id).await {
            Ok(Some(row)) if row.status != ApprovalStatus::Pending => {
                self.show(Some(&card), message_id, &row, TelegramView::Closed)
                    .await;
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(approval = %id, error = %e, "Telegram: reading the approval failed")
            }
        }
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

    /// Sends row `id`'s pending card with its two buttons, once per chat: the row is claimed in
    /// the store first, and a row no longer pending is not sent. A failed send is retried
    /// twice; then the claim is given up, so the next start tries again (the row stays
    /// answerable on every other surface either way).
    async fn send_card(&self, id: &str) {
        let store = &self.state.store;
        let Some(guard) = self.lock_edits().await else {
            return;
        };
        let mut held = Some(guard);
        let claimed_at = chrono::Utc::now();
        match store.claim_telegram_card(self.owner, id, claimed_at).await {
            Ok(true) => {}
            // Already sent (or being sent) to this chat.
            Ok(false) => return,
            Err(e) => {
                tracing::error!(approval = %id, error = %e, "Telegram: claiming the card failed; it is sent at the next start");
                return;
            }
        }
        let mut backoff = Backoff::new();
        for attempt in 1..=3 {
            // The lock is held for one attempt: taps on other cards need not wait for a retry.
            let wait = {
                let _edits = match held.take() {
                    Some(guard) => guard,
                    None => match self.lock_edits().await {
                        Some(guard) => guard,
                        None => break,
                    },
                };
                // Read now, not from the event: a row answered or lapsed meanwhile is not sent.
                let row = match store.approval(id).await {
                    Ok(Some(row)) if row.status == ApprovalStatus::Pending => row,
                    Ok(_) => break,
                    Err(e) => {
                        tracing::warn!(approval = %id, error = %e, "Telegram: reading the approval failed");
                        break;
                    }
                };
                let text = render::card_text(&row);
                let keyboard = render::card_keyboard(&row, &self.card_link(&row.id));
                match self.api.send_message(self.owner, &text, &keyboard).await {
                    Ok(message_id) => {
                        let now = chrono::Utc::now();
                        self.remember(TelegramCard {
                            chat_id: self.owner,
                            approval_id: row.id.clone(),
                            message_id: Some(message_id),
                            view: TelegramView::Card,
                            shown_text: Some(text),
                            settled: false,
                            sent_at: claimed_at,
                            updated_at: now,
                        })
                        .await;
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(approval = %id, attempt, error = %e, "Telegram: sending the card failed");
                        e.retry_after()
                            .map(Duration::from_secs)
                            .unwrap_or_else(|| backoff.next_wait())
                    }
                }
            };
            if attempt < 3 {
                tokio::time::sleep(wait).await;
            } else {
                tracing::error!(approval = %id, "Telegram: the card was not delivered; answer it on another surface");
            }
        }
        if let Err(e) = store.release_telegram_card(self.owner, id).await {
            tracing::error!(approval = %id, error = %e, "Telegram: giving up the card's claim failed");
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

    /// Polls for taps while this server holds the bot's poller lock; without it, tries again
    /// every few seconds (another server polls meanwhile).
    async fn lead_polling(self, lock: iris_store::NamedLock) {
        loop {
            match self.state.store.try_lock(&lock).await {
                Ok(Some(_held)) => {
                    tracing::info!("Telegram: this server polls for taps");
                    self.poll_updates().await;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "Telegram: taking the poller lock failed"),
            }
            tokio::time::sleep(POLLER_RETRY).await;
        }
    }

    /// Long-polls `getUpdates` forever, handling each tap in order; errors back off (or wait as
    /// long as Telegram asks) and retry.
    async fn poll_updates(&self) {
        let mut offset = 0_i64;
        let mut backoff = Backoff::new();
        loop {
            match self.api.get_updates(offset).await {
                Ok(updates) => {
                    backoff.reset();
                    for update in updates {
                        match update {
                            Ok(Update {
                                update_id,
                                callback_query,
                            }) => {
                                offset = offset.max(update_id + 1);
                                if let Some(query) = callback_query {
                                    self.on_tap(query).await;
                                }
                            }
                            Err(update_id) => {
                                offset = offset.max(update_id + 1);
                                tracing::warn!(
                                    update_id,
                                    "Telegram: skipped an update that does not decode"
                                );
                            }
                        }
                    }
                }
                Err(e) => {
                    let wait = match &e {
                        BotApiError::Refused {
                            retry_after: Some(secs),
                            ..
                        } => Duration::from_secs(*secs),
                        _ => backoff.next_wait(),
                    };
                    tracing::warn!(error = %e, retry_in_secs = wait.as_secs(), "Telegram: polling for updates failed; retrying");
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    /// Handles one tap and answers it (which also stops the button's spinner).
    async fn on_tap(&self, query: CallbackQuery) {
        let answer = self.decide_tap(&query).await;
        if let Err(e) = self
            .api
            .answer_callback_query(&query.id, &answer.text, answer.alert)
            .await
        {
            tracing::warn!(error = %e, "Telegram: answering a tap failed");
        }
    }

    /// What a tap does. Everything after the owner check holds the edit lock, so the row and
    /// card read here and the edit made here cannot cross an event's edit of the same message.
    async fn decide_tap(&self, query: &CallbackQuery) -> Answer {
        let Some(message) = query
            .message
            .as_ref()
            .filter(|_| from_owner(self.owner, query))
        else {
            tracing::warn!(
                from = query.from.id,
                chat = query.message.as_ref().map(|m| m.chat.id),
                "Telegram: refused a tap from outside the owner's chat"
            );
            return Answer::alert(NOT_ALLOWED);
        };
        let data = match CallbackData::parse(query.data.as_deref()) {
            Ok(data) => data,
            Err(e) => {
                tracing::warn!(error = %e, "Telegram: refused a tap with unknown data");
                return Answer::alert(format!("{e}; nothing was changed."));
            }
        };
        let id = data.approval_id.as_str();
        let Some(_edits) = self.lock_edits().await else {
            return Answer::alert(
                "The approval could not be read; nothing was changed. Try again.",
            );
        };
        let Ok(card) = self.stored_card(id).await else {
            return Answer::alert(
                "The approval could not be read; nothing was changed. Try again.",
            );
        };
        if card
            .as_ref()
            .and_then(|c| c.message_id)
            .is_some_and(|known| known != message.message_id)
        {
            return Answer::alert(
                "This button does not belong to this approval's card; nothing was changed.",
            );
        }
        let mut row = match self.state.store.approval(id).await {
            Ok(Some(row)) => row,
            Ok(None) => return Answer::alert("This approval does not exist; nothing was changed."),
            Err(e) => {
                tracing::error!(approval = %id, error = %e, "Telegram: reading the approval failed");
                return Answer::alert(
                    "The approval could not be read; nothing was changed. Try again.",
                );
            }
        };
        // A row past its hour is marked expired here if the sweep has not yet (DESIGN §3 step 9).
        // This server's clock only suggests it; the store's clock decides (the expiry is a
        // compare-and-set on it).
        if row.status == ApprovalStatus::Pending && row.expires_at <= chrono::Utc::now() {
            match self.state.service.expire(&row.id).await {
                Ok(Some(expired)) => row = expired,
                Ok(None) => {
                    if let Ok(Some(fresh)) = self.state.store.approval(id).await {
                        row = fresh;
                    }
                }
                Err(e) => {
                    tracing::error!(approval = %id, error = %e, "Telegram: expiring a lapsed approval failed");
                    return Answer::alert(
                        "This approval has expired and can no longer be answered; nothing was changed.",
                    );
                }
            }
        }
        let card = card.as_ref();
        if row.status != ApprovalStatus::Pending {
            self.show(card, message.message_id, &row, TelegramView::Closed)
                .await;
            return Answer::alert(closed_sentence(&row));
        }
        match data.step {
            // Telegram cannot approve a card that needs the owner's passkey: the card stays
            // (with "Open the card"), and Reject still works.
            Step::Ask | Step::Yes if row.passkey_required => {
                self.show(card, message.message_id, &row, TelegramView::Card)
                    .await;
                Answer::alert(render::NEEDS_PASSKEY)
            }
            Step::Ask => {
                self.show(card, message.message_id, &row, TelegramView::Confirm)
                    .await;
                Answer::toast(format!("{}?", row.card.action))
            }
            Step::Cancel => {
                self.show(card, message.message_id, &row, TelegramView::Card)
                    .await;
                Answer::toast("Cancelled; nothing was changed.")
            }
            Step::Yes => {
                // Yes approves only from the confirm view this surface showed on this message
                // (stored, so also when it was shown before a restart); otherwise the confirm is
                // shown first.
                let confirmed = card.is_some_and(|c| {
                    c.view == TelegramView::Confirm && c.message_id == Some(message.message_id)
                });
                if !confirmed {
                    self.show(card, message.message_id, &row, TelegramView::Confirm)
                        .await;
                    return Answer::toast("Please confirm: tap Yes to approve.");
                }
                self.respond(card, message.message_id, query, &row, Decision::Approve)
                    .await
            }
            Step::Reject => {
                self.respond(card, message.message_id, query, &row, Decision::Reject)
                    .await
            }
        }
    }

    /// Answers the row through the approvals service as the owner's Telegram chat (control
    /// scope, surface `telegram`); the service queues the resume. The message is edited to the
    /// outcome by the `approval.responded` event that follows.
    async fn respond(
        &self,
        card: Option<&TelegramCard>,
        message_id: i64,
        query: &CallbackQuery,
        row: &Approval,
        decision: Decision,
    ) -> Answer {
        // Remember the message first (learnt from this tap when the store did not know it), so
        // the outcome edit finds it.
        if card.and_then(|c| c.message_id) != Some(message_id) {
            let now = chrono::Utc::now();
            self.remember(TelegramCard {
                chat_id: self.owner,
                approval_id: row.id.clone(),
                message_id: Some(message_id),
                view: card.map_or(TelegramView::Card, |c| c.view),
                shown_text: None,
                settled: false,
                sent_at: card.map_or(now, |c| c.sent_at),
                updated_at: now,
            })
            .await;
        }
        let actor = Actor {
            name: actor_name(&query.from),
            scope: Scope::Control,
            surface: SURFACE.into(),
        };
        match self
            .state
            .service
            .respond(&row.id, decision, None, &actor)
            .await
        {
            Ok(_) => Answer::toast(match decision {
                Decision::Approve => "Approved.",
                Decision::Reject => "Rejected; nothing was changed.",
            }),
            Err(
                e @ (RespondError::AlreadyDecided(_)
                | RespondError::Expired(_)
                | RespondError::RequesterRevoked(_)),
            ) => {
                if let RespondError::AlreadyDecided(row)
                | RespondError::Expired(row)
                | RespondError::RequesterRevoked(row) = &e
                {
                    let card = self.stored_card(&row.id).await.ok().flatten();
                    self.show(card.as_ref(), message_id, row, TelegramView::Closed)
                        .await;
                }
                Answer::alert(e.to_string())
            }
            Err(e @ RespondError::NotFound(_)) => {
                Answer::alert(format!("{e}; nothing was changed."))
            }
            Err(RespondError::Forbidden(_)) => Answer::alert(NOT_ALLOWED),
            Err(RespondError::PasskeyRequired(..)) => Answer::alert(render::NEEDS_PASSKEY),
            Err(RespondError::Store(e)) => {
                tracing::error!(approval = %row.id, error = %e, "Telegram: storing the answer failed");
                Answer::alert("The answer could not be stored; nothing was decided. Try again.")
            }
        }
    }
}

#[cfg(test)]
mod tests;
