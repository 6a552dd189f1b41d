//! The card's audit trail, "What happened": the decision, each item's outcome, a lapse or a
//! refused claim, oldest first, as the append-only audit log holds them (DESIGN §2 "audit
//! log"). It is fetched in the browser when the owner opens it (a page of fifty cards costs
//! nothing until then) and again on every live event while it is open, so an outcome recorded
//! later shows without a reload. The server words it ([`TrailLine::of`], in the server
//! function [`approval_audit`]): the browser gets sentences, not the audit log's shapes.

use chrono::{DateTime, Utc};
use iris_core::wire::{AuditEntry, AuditKind};
use leptos::html;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::api::approval_audit;
use crate::format::format_time;
use crate::live::clock_offset;
use crate::shape::any;

/// One entry of the trail as the card shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrailLine {
    /// The entry's kind (`decision`, `execution`, `denial`, `lapse`, `undo`; `action` for
    /// Activity's lines of writes without a card), for styling and tests (`data-kind`).
    pub kind: String,
    /// The entry in words ([`trail_text`]).
    pub text: String,
    /// When it was recorded.
    #[serde(deserialize_with = "iris_core::wire::rfc3339::deserialize")]
    pub at: DateTime<Utc>,
}

impl TrailLine {
    /// `entry` in words; `lines` and `items` are its card's (see [`trail_text`]).
    pub fn of(entry: &AuditEntry, lines: &[String], items: &[String]) -> TrailLine {
        TrailLine {
            kind: entry.kind.as_str().to_owned(),
            text: trail_text(entry, lines, items),
            at: entry.at,
        }
    }
}

/// One entry in words, e.g. "Approved by phone via web: “looks right”" or "Flash sale —
/// Paperleaf Books: trashed". `lines` and `items` are the card's: an item is named by its line
/// when the card has one line per item, else by the subject its outcome names, else by its id.
pub fn trail_text(entry: &AuditEntry, lines: &[String], items: &[String]) -> String {
    let field = |name: &str| result_text(entry, name);
    let reason = field("reason");
    match entry.kind {
        AuditKind::Decision => {
            let decision = match field("decision").as_deref() {
                Some("approved") => "Approved",
                Some("rejected") => "Rejected",
                Some("expired") => "Lapsed",
                _ => "Answered",
            };
            let mut text = format!("{decision} by {}", entry.actor);
            if let Some(surface) = entry.surface.as_deref().filter(|s| !s.is_empty()) {
                text.push_str(&format!(" via {surface}"));
            }
            if let Some(reason) = reason {
                text.push_str(&format!(": “{reason}”"));
            }
            text
        }
        AuditKind::Execution => {
            let item = entry.item.as_deref().unwrap_or_default();
            let by_line = (lines.len() == items.len())
                .then(|| items.iter().position(|i| i == item))
                .flatten()
                .and_then(|i| lines.get(i).cloned());
            let name = by_line
                .or_else(|| field("subject"))
                .unwrap_or_else(|| item.to_owned());
            let status = field("status").unwrap_or_else(|| "done".to_owned());
            match reason {
                Some(reason) => format!("{name}: {status} ({reason})"),
                None => format!("{name}: {status}"),
            }
        }
        AuditKind::Denial => match reason.or_else(|| entry.result.as_str().map(str::to_owned)) {
            Some(reason) => format!("A claim to run it was refused: {reason}"),
            None => "A claim to run it was refused".to_owned(),
        },
        AuditKind::Lapse => "Lapsed unanswered; nothing was changed".to_owned(),
        AuditKind::Undo => undo_text(entry, lines, items),
        AuditKind::Action => match field("summary") {
            Some(summary) => format!("Without a card, as you asked: {summary}"),
            None => "Ran without a card, as you asked".to_owned(),
        },
    }
}

/// The entry's result field `name` when it is text that says something.
fn result_text(entry: &AuditEntry, name: &str) -> Option<String> {
    entry
        .result
        .get(name)
        .and_then(|v| v.as_str())
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// An undo entry in words: the request ("Undo asked by phone via web: Restore 5 emails"), each
/// item's outcome ("Undo: Flash sale — Paperleaf: restored") and its end ("Undo done:
/// Restored 5 emails from Trash to where they were.").
fn undo_text(entry: &AuditEntry, lines: &[String], items: &[String]) -> String {
    let field = |name: &str| result_text(entry, name);
    if entry.item.is_some() {
        let as_execution = AuditEntry {
            kind: AuditKind::Execution,
            ..entry.clone()
        };
        return format!("Undo: {}", trail_text(&as_execution, lines, items));
    }
    match field("status").as_deref() {
        Some("requested") => {
            let mut text = format!("Undo asked by {}", entry.actor);
            if let Some(surface) = entry.surface.as_deref().filter(|s| !s.is_empty()) {
                text.push_str(&format!(" via {surface}"));
            }
            if let Some(action) = field("action") {
                text.push_str(&format!(": {action}"));
            }
            text
        }
        status => {
            let status = status.unwrap_or("ended");
            match field("summary").or_else(|| field("message")) {
                Some(said) => format!("Undo {status}: {said}"),
                None => format!("Undo {status}"),
            }
        }
    }
}

/// The trail of one answered card (see the module docs): a closed "What happened" until the
/// owner opens it.
#[component]
pub fn CardTrail(
    /// The row whose entries to show.
    approval_id: String,
    /// Whether it is open: kept by the page with the card's state, so a live refetch that
    /// draws the card anew keeps it open (and loads it again).
    #[prop(optional)]
    open: Option<RwSignal<bool>>,
) -> impl IntoView {
    let entries: RwSignal<Option<Result<Vec<TrailLine>, String>>> = RwSignal::new(None);
    let open = open.unwrap_or_else(|| RwSignal::new(false));
    let details_ref: NodeRef<html::Details> = NodeRef::new();
    crate::toggle::keep_in_step(details_ref, open);
    let offset = clock_offset();
    let live = crate::PageState::current().map(|state| state.live);

    crate::shape::effect(move || {
        if let Some(live) = live {
            live.tick.track();
        }
        if !open.get() {
            return;
        }
        let id = approval_id.clone();
        leptos::task::spawn_local(async move {
            let answer = approval_audit(id).await.map_err(|e| e.to_string());
            entries.try_set(Some(answer));
        });
    });

    let list = move || match entries.get() {
        None => any(view! { <p class="trail-note">"Loading…"</p> }),
        Some(Err(e)) => any(view! { <p class="trail-note" role="alert">{e}</p> }),
        Some(Ok(list)) if list.is_empty() => {
            any(view! { <p class="trail-note">"Nothing is recorded yet."</p> })
        }
        Some(Ok(list)) => any(view! {
            <ol class="trail" data-testid="trail">
                {list
                    .into_iter()
                    .map(|TrailLine { kind, text, at }| {
                        any(view! {
                            <li class="trail-entry" data-testid="trail-entry" data-kind=kind>
                                <span class="trail-text">{text}</span>
                                " "
                                <time class="trail-time" datetime=at.to_rfc3339()>
                                    {crate::shape::text(move || format_time(at, offset.get()))}
                                </time>
                            </li>
                        })
                    })
                    .collect_view()}
            </ol>
        }),
    };

    any(view! {
        <details
            class="card-trail"
            data-testid="card-trail"
            node_ref=details_ref
            on:toggle=move |ev| open.set(crate::toggle::open_of(&ev))
        >
            <summary>"What happened"</summary>
            {list}
        </details>
    })
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use serde_json::json;

    fn entry(kind: AuditKind, item: Option<&str>, result: serde_json::Value) -> AuditEntry {
        AuditEntry {
            id: 1,
            approval_id: Some("a".into()),
            run_id: None,
            kind,
            item: item.map(str::to_owned),
            result,
            undo_available: true,
            actor: "phone".into(),
            surface: Some("web".into()),
            at: Utc.with_ymd_and_hms(2026, 12, 1, 14, 2, 0).unwrap(),
        }
    }

    #[test]
    fn a_decision_says_who_where_and_why() {
        let e = entry(
            AuditKind::Decision,
            None,
            json!({"decision": "approved", "reason": "looks right"}),
        );
        assert_eq!(
            trail_text(&e, &[], &[]),
            "Approved by phone via web: “looks right”"
        );
        let e = entry(
            AuditKind::Decision,
            None,
            json!({"decision": "rejected", "reason": null}),
        );
        assert_eq!(trail_text(&e, &[], &[]), "Rejected by phone via web");
    }

    #[test]
    fn an_item_is_named_by_its_card_line_then_its_subject_then_its_id() {
        let lines = vec!["Flash sale — Paperleaf".to_owned(), "Other".to_owned()];
        let items = vec!["m1".to_owned(), "m2".to_owned()];
        let done = entry(
            AuditKind::Execution,
            Some("m1"),
            json!({"status": "trashed", "subject": "Flash sale"}),
        );
        assert_eq!(
            trail_text(&done, &lines, &items),
            "Flash sale — Paperleaf: trashed"
        );
        let gone = entry(
            AuditKind::Execution,
            Some("m2"),
            json!({"status": "missing", "reason": "no longer in its folder"}),
        );
        assert_eq!(
            trail_text(&gone, &lines, &items),
            "Other: missing (no longer in its folder)"
        );
        // A card whose lines are not one per item (a mail to send) names it otherwise.
        let sent = entry(
            AuditKind::Execution,
            Some("anna@example.net"),
            json!({"status": "sent"}),
        );
        assert_eq!(
            trail_text(
                &sent,
                &["To: Anna".to_owned()],
                &["anna@example.net".to_owned(), "b".to_owned()]
            ),
            "anna@example.net: sent"
        );
        let with_subject = entry(
            AuditKind::Execution,
            Some("x"),
            json!({"status": "failed", "subject": "Hello"}),
        );
        assert_eq!(trail_text(&with_subject, &[], &[]), "Hello: failed");
    }

    #[test]
    fn an_undo_says_who_asked_each_item_and_its_end() {
        let lines = vec!["Flash sale — Paperleaf".to_owned()];
        let items = vec!["m1".to_owned()];
        let asked = entry(
            AuditKind::Undo,
            None,
            json!({"status": "requested", "action": "Restore 1 email"}),
        );
        assert_eq!(
            trail_text(&asked, &lines, &items),
            "Undo asked by phone via web: Restore 1 email"
        );
        let item = entry(AuditKind::Undo, Some("m1"), json!({"status": "restored"}));
        assert_eq!(
            trail_text(&item, &lines, &items),
            "Undo: Flash sale — Paperleaf: restored"
        );
        let end = entry(
            AuditKind::Undo,
            None,
            json!({"status": "done", "summary": "Restored 1 email from Trash to where it was."}),
        );
        assert_eq!(
            trail_text(&end, &lines, &items),
            "Undo done: Restored 1 email from Trash to where it was."
        );
    }

    #[test]
    fn a_trail_line_carries_the_words_the_kind_and_the_time() {
        let e = entry(
            AuditKind::Execution,
            Some("m1"),
            json!({"status": "trashed", "subject": "Flash sale"}),
        );
        let line = TrailLine::of(&e, &[], &[]);
        assert_eq!(line.kind, "execution");
        assert_eq!(line.text, "Flash sale: trashed");
        assert_eq!(line.at, e.at);
        // As the browser reads it back.
        let text = serde_json::to_string(&line).unwrap();
        assert_eq!(serde_json::from_str::<TrailLine>(&text).unwrap(), line);
    }

    #[test]
    fn a_lapse_and_a_refused_claim_say_so() {
        let lapse = entry(AuditKind::Lapse, None, json!({}));
        assert_eq!(
            trail_text(&lapse, &[], &[]),
            "Lapsed unanswered; nothing was changed"
        );
        let denial = entry(
            AuditKind::Denial,
            None,
            json!({"reason": "the arguments changed"}),
        );
        assert_eq!(
            trail_text(&denial, &[], &[]),
            "A claim to run it was refused: the arguments changed"
        );
    }
}
