//! What a tap does: only the owner's chat may answer; the action button shows the confirm view,
//! Yes (from that view) approves and Reject rejects, through the approvals service with surface
//! `telegram`; a row no longer pending shows its outcome.

use iris_core::approvals::{Actor, RespondError};
use iris_core::ports::{ApprovalStore, Scope, TelegramCard, TelegramView};
use iris_core::wire::{Approval, ApprovalStatus, Decision};

use super::bot_api::{CallbackQuery, User};
use super::callback::{CallbackData, Step};
use super::{render, Bridge, NOT_ALLOWED, SURFACE};

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
pub(super) fn from_owner(owner_chat_id: i64, query: &CallbackQuery) -> bool {
    query.message.as_ref().is_some_and(|m| {
        m.chat.id == owner_chat_id && (owner_chat_id < 0 || query.from.id == owner_chat_id)
    })
}

/// The answering actor's name: `@username`, else the first name, else the user id.
pub(super) fn actor_name(user: &User) -> String {
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

impl Bridge {
    /// Handles one tap and answers it (which also stops the button's spinner).
    pub(super) async fn on_tap(&self, query: CallbackQuery) {
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
        if row.lapsed_at(chrono::Utc::now()) {
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
            surface: SURFACE,
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
            // Telegram's buttons answer the whole card; a choice of items is made in the app.
            Err(e @ (RespondError::Items(_) | RespondError::Edit(_) | RespondError::Reason(_))) => {
                Answer::alert(e.to_string())
            }
            Err(RespondError::Store(e)) => {
                tracing::error!(approval = %row.id, error = %e, "Telegram: storing the answer failed");
                Answer::alert("The answer could not be stored; nothing was decided. Try again.")
            }
        }
    }
}
