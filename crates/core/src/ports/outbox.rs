//! What a unit of work announces when it lands: the events every surface hears (DESIGN §9
//! "events cross servers") and the Web Push messages the owner's devices get (DESIGN §9 "the
//! owner's phone").
//!
//! The service builds an [`Outbox`] with the unit it plans, from the events alone: which event
//! pushes and what the push says is [`PushMessage::for_event`]'s rule, applied here once when
//! an event is added. The store writes both in the unit's transaction (a push never announces a
//! change that rolled back, and a card that waits never lacks its push) and computes nothing of
//! its own: it reads [`Outbox::events`] and [`Outbox::pushes`].

use chrono::{DateTime, Duration, Utc};

use crate::push::{PushMessage, GIVE_UP_AFTER_SECS};
use crate::wire::Event;

/// The events and pushes of one unit, in the order they were added.
///
/// The only way in is an event ([`Outbox::of`], [`Outbox::add`], [`Outbox::extend`]), so the
/// pushes are always the ones its events ask for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outbox {
    events: Vec<Event>,
    pushes: Vec<OutboxPush>,
}

/// One push a unit writes: one outbox job per recipient subscription, chosen by the store by
/// [`PushMessage::kind`](crate::push::PushMessage) (a waiting card: every live subscription; a
/// closing: those the card's waiting push reached or is reaching).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxPush {
    /// What it says.
    pub message: PushMessage,
    /// Until when it is worth delivering (the card's expiry for a waiting card; the closing's
    /// time plus [`CLOSED_TTL_SECS`](crate::push::CLOSED_TTL_SECS) for a closing).
    pub deliver_until: DateTime<Utc>,
    /// When its sender stops retrying: `deliver_until`, or [`GIVE_UP_AFTER_SECS`] after the
    /// event if that comes first.
    pub give_up_at: DateTime<Utc>,
}

impl Outbox {
    /// An outbox announcing `events`, with the pushes they ask for.
    pub fn of(events: impl IntoIterator<Item = Event>) -> Outbox {
        let mut outbox = Outbox::default();
        outbox.extend(events);
        outbox
    }

    /// Adds `event` and the push it asks for, if any.
    pub fn add(&mut self, event: Event) {
        if let Some(push) = push_of(&event) {
            self.pushes.push(push);
        }
        self.events.push(event);
    }

    /// Adds each of `events` in order ([`Outbox::add`]).
    pub fn extend(&mut self, events: impl IntoIterator<Item = Event>) {
        for event in events {
            self.add(event);
        }
    }

    /// Appends `other`'s events and pushes after this one's.
    pub fn append(&mut self, other: Outbox) {
        self.events.extend(other.events);
        self.pushes.extend(other.pushes);
    }

    /// The events, to publish when the unit lands.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The pushes, to write in the unit's transaction.
    pub fn pushes(&self) -> &[OutboxPush] {
        &self.pushes
    }
}

/// The push `event` asks for, timed from the event's own row: a waiting card from its creation,
/// a closing from its answer or lapse.
fn push_of(event: &Event) -> Option<OutboxPush> {
    let at = match event {
        Event::ApprovalRequested(row) => row.created_at,
        Event::ApprovalResponded(row) | Event::ApprovalLapsed(row) => {
            row.responded_at.unwrap_or(row.created_at)
        }
        Event::RunMessage(_) => return None,
    };
    let message = PushMessage::for_event(event, at)?;
    let deliver_until = message.deliver_until.unwrap_or(at);
    let give_up_at = deliver_until.min(at + Duration::seconds(GIVE_UP_AFTER_SECS));
    Some(OutboxPush {
        message,
        deliver_until,
        give_up_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::push::PushKind;
    use crate::wire::{Approval, ApprovalStatus, RunMessage};

    fn words() -> Event {
        Event::RunMessage(RunMessage {
            conversation_id: "c1".into(),
            run_id: "r1".into(),
            text: "Done.".into(),
            approval_id: Some("a1".into()),
        })
    }

    fn waiting() -> Approval {
        let mut row = Approval::sample();
        row.status = ApprovalStatus::Pending;
        row.responded_at = None;
        row
    }

    #[test]
    fn a_waiting_card_and_its_closing_push_and_words_do_not() {
        let row = waiting();
        let mut closed = row.clone();
        closed.status = ApprovalStatus::Rejected;
        closed.responded_at = Some(row.created_at + Duration::seconds(90));
        let outbox = Outbox::of([
            Event::ApprovalRequested(row.clone()),
            words(),
            Event::ApprovalResponded(closed.clone()),
        ]);
        assert_eq!(outbox.events().len(), 3);
        let kinds: Vec<PushKind> = outbox.pushes().iter().map(|p| p.message.kind).collect();
        assert_eq!(kinds, [PushKind::Requested, PushKind::Closed]);
        // The closing is timed from the answer (90 s after the card was made), not from the
        // card's creation: worth delivering for 12 hours, and given up then (before a day).
        let closing = &outbox.pushes()[1];
        let answered = row.created_at + Duration::seconds(90);
        assert_eq!(closing.deliver_until, answered + Duration::hours(12));
        assert_eq!(closing.give_up_at, answered + Duration::hours(12));
    }

    #[test]
    fn a_waiting_push_gives_up_at_the_cards_expiry_or_a_day_whichever_is_first() {
        let mut row = waiting();
        row.expires_at = row.created_at + Duration::seconds(600);
        let short = Outbox::of([Event::ApprovalRequested(row.clone())]);
        assert_eq!(short.pushes()[0].give_up_at, row.expires_at);
        row.expires_at = row.created_at + Duration::days(3);
        let long = Outbox::of([Event::ApprovalRequested(row.clone())]);
        assert_eq!(
            long.pushes()[0].give_up_at,
            row.created_at + Duration::seconds(GIVE_UP_AFTER_SECS)
        );
        assert_eq!(long.pushes()[0].deliver_until, row.expires_at);
    }

    #[test]
    fn append_keeps_order_and_pushes() {
        let mut first = Outbox::of([Event::ApprovalRequested(waiting())]);
        first.append(Outbox::of([words()]));
        assert_eq!(first.events().len(), 2);
        assert_eq!(first.pushes().len(), 1);
    }
}
