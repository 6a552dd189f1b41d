//! A rejection's reason, given after the tap (docs/adr/0125-reason-after-reject.md): Reject is
//! one tap and decides at once; afterwards the owner may say why, once. The reason is written on
//! the row (every surface shows it as a reason given with the decision) and the model is told in
//! the card's conversation, as the owner's next message.

use crate::approvals::turn::ChatError;
use crate::ports::{Outbox, StoreError};
use crate::wire::{Approval, ApprovalStatus, Event};

use super::{Actor, ApprovalService, NotControl};

/// The longest reason, in characters (once trimmed).
pub const MAX_REASON_CHARS: usize = 500;

/// Why a reason was not taken.
#[derive(Debug, thiserror::Error)]
pub enum ReasonError {
    /// A read device (403).
    #[error(transparent)]
    Forbidden(#[from] NotControl),
    /// No such row (404).
    #[error("approval `{0}` does not exist")]
    NotFound(String),
    /// Empty, too long or with control characters (400); nothing changed.
    #[error("{0}")]
    Invalid(String),
    /// The row is not rejected, or has its reason already (409); nothing changed.
    #[error("{0}")]
    Refused(String, Box<Approval>),
    /// Storage failed (500); nothing changed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A reason written: the row as it is now, and what the model is told, where (`None` when the
/// row has no paused run to tell, e.g. a gateway agent's card).
#[derive(Debug, Clone, PartialEq)]
pub struct ReasonGiven {
    /// The row with its reason.
    pub approval: Approval,
    /// The conversation and the owner's message the model gets.
    pub tell: Option<(String, String)>,
}

/// The one check of a reason's text: trimmed, not empty, at most [`MAX_REASON_CHARS`]
/// characters, no control characters but line breaks.
///
/// # Errors
/// A sentence naming the rule; nothing is done.
pub fn reason_text(text: &str) -> Result<String, String> {
    let reason = text.trim();
    if reason.is_empty() {
        return Err("The reason is empty; nothing was changed.".into());
    }
    let count = reason.chars().count();
    if count > MAX_REASON_CHARS {
        return Err(format!(
            "The reason is {count} characters long; at most {MAX_REASON_CHARS} are accepted, so nothing was changed."
        ));
    }
    if reason.chars().any(|c| c.is_control() && c != '\n') {
        return Err("The reason has control characters; nothing was changed.".into());
    }
    Ok(reason.to_string())
}

/// What the model is told: the owner's own words about the card, in the first person.
fn told(title: &str, reason: &str) -> String {
    format!("I rejected “{title}” because: {reason}")
}

impl ApprovalService {
    /// Gives rejected row `id` the owner's reason, once, and announces it
    /// (`approval.responded`, the row with its reason). Then run [`ApprovalService::tell_reason`]
    /// on a task of its own.
    ///
    /// # Errors
    /// [`ReasonError`]: read scope 403, no row 404, a bad text 400, a row not rejected or with a
    /// reason already 409 (the sentence says which); nothing changes on any of them.
    pub async fn give_reason(
        &self,
        id: &str,
        text: &str,
        actor: &Actor,
    ) -> Result<ReasonGiven, ReasonError> {
        actor.require_control("answer approvals")?;
        let reason = reason_text(text).map_err(ReasonError::Invalid)?;
        let refused = |row: Approval| {
            let why = match (&row.status, &row.reason) {
                (ApprovalStatus::Rejected, Some(given)) => format!(
                    "This card's reason was given already (“{given}”); a reason is written once, so nothing was changed."
                ),
                (status, _) => format!(
                    "Only a rejected card takes a reason afterwards; this one is {}, so nothing was changed.",
                    status.as_str()
                ),
            };
            ReasonError::Refused(why, Box::new(row))
        };
        let row = self
            .store
            .approval(id)
            .await?
            .ok_or_else(|| ReasonError::NotFound(id.to_string()))?;
        if row.status != ApprovalStatus::Rejected || row.reason.is_some() {
            return Err(refused(row));
        }
        let mut after = row;
        after.reason = Some(reason.clone());
        let outbox = Outbox::of([Event::ApprovalResponded(after.clone())]);
        match self.store.add_reason(id, &reason, &outbox).await? {
            Some(conversation) => Ok(ReasonGiven {
                tell: conversation.map(|c| (c, told(&after.card.title, &reason))),
                approval: after,
            }),
            // Another answer won meanwhile: say what the row is now.
            None => {
                let now = self
                    .store
                    .approval(id)
                    .await?
                    .ok_or_else(|| ReasonError::NotFound(id.to_string()))?;
                Err(refused(now))
            }
        }
    }

    /// Tells the model the reason [`ApprovalService::give_reason`] wrote: the owner's message in
    /// the card's conversation, a turn like any other (its reply is a chat line).
    ///
    /// # Errors
    /// [`ChatError`] from the turn; the reason stays written.
    pub async fn tell_reason(&self, given: &ReasonGiven, actor: &Actor) -> Result<(), ChatError> {
        if let Some((conversation, message)) = &given.tell {
            self.chat(actor, Some(conversation.clone()), message)
                .await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_is_trimmed_bounded_and_plain() {
        assert_eq!(reason_text("  not these  ").unwrap(), "not these");
        assert!(reason_text("   ").unwrap_err().contains("empty"));
        let long = "x".repeat(MAX_REASON_CHARS + 1);
        assert!(reason_text(&long).unwrap_err().contains("at most 500"));
        assert_eq!(
            reason_text(&"x".repeat(MAX_REASON_CHARS)).unwrap().len(),
            500
        );
        assert!(reason_text("a\u{1b}[31m").unwrap_err().contains("control"));
        assert_eq!(reason_text("two\nlines").unwrap(), "two\nlines");
    }

    #[test]
    fn the_model_is_told_in_the_owners_words() {
        assert_eq!(
            told("Trash 3 emails", "I still need the receipts"),
            "I rejected “Trash 3 emails” because: I still need the receipts"
        );
    }
}
