//! A card says what it repeats (docs/liveness.md "a card says what it repeats"): two requests
//! can pin the same mail, or the very same call, and approving both would do the work twice
//! (a mail sent twice) or end the second in "nothing done". So a new card of IRIS's own
//! assistant lists, frozen with it, the cards still waiting that pin some of its items or its
//! exact call, and the cards whose exact call ran, or may have run (its outcome `unknown`), in
//! the last [`REPEAT_WINDOW_MINUTES`]; and a
//! call left with nothing to do because another card already acted on its items names that
//! card ([`handled_by`]).
//!
//! Gateway rows need none of this: the same agent's same call attaches to its card
//! (`super::gateway`), and an agent's card never names another device's.

use chrono::{DateTime, Duration, Utc};

use crate::agent::RunEnd;
use crate::ports::{ApprovalStore, NewApproval};
use crate::wire::{Approval, ApprovalKind, ApprovalStatus, CardOverlap, Execution, OverlapState};

/// How far back a card looks for the same call having run, in minutes.
pub const REPEAT_WINDOW_MINUTES: i64 = 60;

/// The cards `new` repeats among `others` (rows of its tool, as
/// [`ApprovalStore::related_cards`] reads them): waiting ones that pin some of its items or its
/// exact call, and ones whose exact call ran at or after `new`'s time minus
/// [`REPEAT_WINDOW_MINUTES`]. Only rows of the same requester; never `new` itself nor an
/// evaluator review (it pins no items and repeats nothing). Oldest first.
pub fn overlaps(new: &NewApproval, others: &[Approval]) -> Vec<CardOverlap> {
    let ran_since = new.created_at - Duration::minutes(REPEAT_WINDOW_MINUTES);
    let mut found: Vec<CardOverlap> = others
        .iter()
        .filter(|o| {
            o.id != new.id
                && o.tool == new.tool
                && o.kind != ApprovalKind::Evaluator
                && o.requested_by == new.requested_by
        })
        .filter_map(|o| {
            let same_call = o.call_hash == new.call_hash;
            let shared = new.items.iter().filter(|i| o.items.contains(i)).count();
            let (state, at) = match o.status {
                ApprovalStatus::Pending if same_call || shared > 0 => {
                    (OverlapState::Waiting, o.created_at)
                }
                ApprovalStatus::Approved
                    if same_call
                        && matches!(o.execution, Execution::Executed | Execution::Unknown) =>
                {
                    let at = o.responded_at.unwrap_or(o.created_at);
                    if at < ran_since {
                        return None;
                    }
                    // An unknown outcome may be a change already done (a mail already sent):
                    // the owner is told, so approving again is a choice, not an accident.
                    let state = if o.execution == Execution::Executed {
                        OverlapState::Ran
                    } else {
                        OverlapState::MayHaveRun
                    };
                    (state, at)
                }
                _ => return None,
            };
            Some(CardOverlap {
                approval_id: o.id.clone(),
                title: o.card.title.clone(),
                state,
                at,
                same_call,
                shared_items: u32::try_from(shared).unwrap_or(u32::MAX),
            })
        })
        .collect();
    found.sort_by(|a, b| {
        a.at.cmp(&b.at)
            .then_with(|| a.approval_id.cmp(&b.approval_id))
    });
    found
}

/// The card whose executed call already acted on some of `stale` (the items `row`'s call found
/// changed since its card was made), among `others` (rows of `row`'s tool); the earliest such
/// card approved after `row` was made, or `None` when the items changed some other way.
pub fn handled_by<'a>(
    row: &Approval,
    stale: &[String],
    others: &'a [Approval],
) -> Option<&'a Approval> {
    others
        .iter()
        .filter(|o| {
            o.id != row.id
                && o.tool == row.tool
                && o.requested_by == row.requested_by
                && o.status == ApprovalStatus::Approved
                && o.execution == Execution::Executed
                && o.responded_at.is_some_and(|at| at >= row.created_at)
                && stale.iter().any(|i| o.items.contains(i))
        })
        .min_by_key(|o| o.responded_at)
}

/// Freezes into the card `end` halted on (if any) the cards it repeats, read from `store`. A
/// read that fails leaves the card without them (they warn; they never gate): logged.
pub(crate) async fn annotate(store: &dyn ApprovalStore, end: &mut RunEnd) {
    let Some(halt) = end.halt.as_mut() else {
        return;
    };
    let row = &mut halt.approval;
    if row.kind == ApprovalKind::Evaluator {
        return;
    }
    let since = since(row.created_at);
    match store.related_cards(&row.tool, since).await {
        Ok(others) => row.card.overlaps = overlaps(row, &others),
        Err(error) => {
            tracing::warn!(approval = %row.id, %error, "reading the cards this one may repeat failed; it is shown without them")
        }
    }
}

/// The earliest time a related card's call may have run and still count, for a card made at
/// `at`.
pub fn since(at: DateTime<Utc>) -> DateTime<Utc> {
    at - Duration::minutes(REPEAT_WINDOW_MINUTES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Card;
    use serde_json::json;

    fn card(title: &str) -> Card {
        Card {
            title: title.into(),
            action: title.into(),
            effect: crate::wire::Effect::Destructive,
            lines: Vec::new(),
            undo_tool: None,
            undo_window_days: None,
            request: String::new(),
            undo_note: None,
            undo_action: None,
            preview: Vec::new(),
            overlaps: Vec::new(),
            items_arg: None,
            editable: Vec::new(),
            trail: Vec::new(),
            flags: Vec::new(),
        }
    }

    fn new_row(items: &[&str], hash: &str, at: DateTime<Utc>) -> NewApproval {
        NewApproval {
            id: "new".into(),
            kind: ApprovalKind::Destructive,
            tool: "trash_email".into(),
            args: json!({}),
            args_canonical: "{}".into(),
            call_hash: hash.into(),
            items: items.iter().map(|s| s.to_string()).collect(),
            card: card("Trash"),
            run_id: "r".into(),
            context_summary: String::new(),
            created_at: at,
            expires_at: at,
            preconditions: Vec::new(),
            passkey_required: false,
            requested_by: None,
        }
    }

    fn other(id: &str, items: &[&str], hash: &str, at: DateTime<Utc>) -> Approval {
        let mut row = new_row(items, hash, at).pending_view();
        row.id = id.into();
        row.card.title = format!("card {id}");
        row
    }

    #[test]
    fn a_waiting_card_with_shared_items_or_the_same_call_is_named_and_others_are_not() {
        let now = Utc::now();
        let new = new_row(&["m1", "m2", "m3"], "h1", now);
        let shares = other("a", &["m2", "m3", "m9"], "h2", now - Duration::minutes(5));
        let same = other("b", &["m1", "m2", "m3"], "h1", now - Duration::minutes(3));
        let apart = other("c", &["m7"], "h3", now - Duration::minutes(4));
        let mut rejected = other("d", &["m1"], "h1", now - Duration::minutes(2));
        rejected.status = ApprovalStatus::Rejected;
        let mut elsewhere = other("e", &["m1"], "h1", now);
        elsewhere.tool = "send_email".into();
        let mut agents = other("f", &["m1"], "h1", now);
        agents.requested_by = Some("bot".into());
        let found = overlaps(&new, &[same, shares, apart, rejected, elsewhere, agents]);
        let named: Vec<_> = found
            .iter()
            .map(|o| (o.approval_id.as_str(), o.state, o.same_call, o.shared_items))
            .collect();
        assert_eq!(
            named,
            vec![
                ("a", OverlapState::Waiting, false, 2),
                ("b", OverlapState::Waiting, true, 3)
            ]
        );
    }

    #[test]
    fn the_same_call_that_ran_is_named_only_within_the_hour() {
        let now = Utc::now();
        let new = new_row(&["m1"], "h1", now);
        let ran = |id: &str, minutes: i64| {
            let mut row = other(id, &["m1"], "h1", now - Duration::minutes(minutes + 1));
            row.status = ApprovalStatus::Approved;
            row.execution = Execution::Executed;
            row.responded_at = Some(now - Duration::minutes(minutes));
            row
        };
        let mut failed = ran("failed", 5);
        failed.execution = Execution::Failed;
        let mut other_call = ran("other", 5);
        other_call.call_hash = "h2".into();
        let mut unknown = ran("unknown", 3);
        unknown.execution = Execution::Unknown;
        let found = overlaps(
            &new,
            &[
                ran("recent", 10),
                ran("old", 61),
                failed,
                other_call,
                unknown,
            ],
        );
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].approval_id, "recent");
        assert_eq!(found[0].state, OverlapState::Ran);
        assert_eq!(found[0].at, now - Duration::minutes(10));
        // A call whose outcome is unknown may already have done the change: it is named too.
        assert_eq!(found[1].approval_id, "unknown");
        assert_eq!(found[1].state, OverlapState::MayHaveRun);
    }

    #[test]
    fn stale_items_name_the_card_that_acted_on_them_after_this_one_was_made() {
        let made = Utc::now();
        let row = other("second", &["m1", "m2"], "h1", made);
        let executed = |id: &str, items: &[&str], minutes: i64| {
            let mut o = other(id, items, "h9", made - Duration::minutes(30));
            o.status = ApprovalStatus::Approved;
            o.execution = Execution::Executed;
            o.responded_at = Some(made + Duration::minutes(minutes));
            o
        };
        let before = {
            let mut o = executed("before", &["m1"], 0);
            o.responded_at = Some(made - Duration::minutes(1));
            o
        };
        let others = [
            before,
            executed("later", &["m2"], 9),
            executed("first", &["m1"], 2),
        ];
        let found = handled_by(&row, &["m1".into(), "m2".into()], &others).map(|o| o.id.as_str());
        assert_eq!(found, Some("first"));
        assert!(handled_by(&row, &["m5".into()], &others).is_none());
    }
}
