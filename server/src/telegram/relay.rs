//! Events to the owner's chat: the catch-up at start (and after missed events), a card sent
//! once per pending row, and each answered or lapsed row's message edited to its outcome.

use std::time::Duration;

use iris_core::ports::{ApprovalStore, TelegramCard, TelegramCardStore, TelegramView};
use iris_core::wire::{ApprovalStatus, Event};
use tokio::sync::broadcast;

use super::{render, Backoff, Bridge};

impl Bridge {
    /// Catches up ([`Bridge::catch_up`]), then relays the channel router's events to the owner's
    /// chat, in order, until the router closes. Events that arrive during the catch-up wait in
    /// the subscription.
    pub(super) async fn relay_events(self, mut events: broadcast::Receiver<Event>) {
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
}
