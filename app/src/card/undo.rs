//! The card's undo (DESIGN §9 "Undo from the card"): on an executed card whose tool declares an
//! undo, within its window, a button named by the card ("Restore 5 emails") that runs the
//! card's undo tool for exactly the items that executed, once; afterwards a line that says what
//! came back, by whom, where and when ("Undone by phone via web at 14:02: Restored 5 emails
//! from Trash to where they were."). Before that, the card's undo sentence ([`undo_lines`]).

use chrono::{DateTime, Utc};
use iris_core::wire::{Approval, ApprovalStatus, Execution, UndoRecord, UndoState};
use leptos::prelude::*;

use crate::api::undo_approval;
use crate::backend::Viewer;
use crate::card::CardState;
use crate::card_form::UNDO_URL;
use crate::format::format_time;
use crate::live::clock_offset;
use crate::shape::{any, flag, text};

/// Now, by this machine's clock (the browser's `Date.now()` once hydrated).
pub fn now_utc() -> DateTime<Utc> {
    #[cfg(feature = "hydrate")]
    {
        DateTime::from_timestamp_millis(js_sys::Date::now() as i64).unwrap_or_default()
    }
    #[cfg(not(feature = "hydrate"))]
    {
        Utc::now()
    }
}

/// What an undo's record says, without its time: "Undone by phone via web", then the undo
/// tool's own summary, or why it did not (fully) happen.
pub fn undo_words(undo: &UndoRecord) -> (String, Option<String>) {
    let said = |key: &str| {
        undo.result
            .as_ref()
            .and_then(|r| r.get(key))
            .and_then(|v| v.as_str())
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let head = match undo.state {
        UndoState::Running => "Undoing, asked",
        UndoState::Done => "Undone",
        UndoState::Failed => "The undo failed, asked",
        UndoState::Unknown => "The undo's outcome is unknown, asked",
    };
    let detail = match undo.state {
        UndoState::Running => None,
        UndoState::Done => said("summary").or_else(|| said("message")),
        UndoState::Failed | UndoState::Unknown => said("message"),
    };
    (
        format!("{head} by {} via {}", undo.by, undo.surface),
        detail,
    )
}

/// When the undo's line is dated: a done undo by when it ended, any other by when it was asked
/// (its line says "asked … at").
pub fn undo_time(undo: &UndoRecord) -> DateTime<Utc> {
    match undo.state {
        UndoState::Done => undo.finished_at.unwrap_or(undo.at),
        UndoState::Running | UndoState::Failed | UndoState::Unknown => undo.at,
    }
}

/// The card's lines about taking the call back: the undo sentence (`undo`), and for a call that
/// cannot be taken back (`irreversible`) that it cannot, while the card waits.
pub(crate) fn undo_lines(
    approval: &Approval,
    undo: Option<String>,
    irreversible: bool,
) -> (Option<impl IntoView>, Option<impl IntoView>) {
    let pending = approval.status == ApprovalStatus::Pending;
    // The undo sentence matters while the call may still run or after it ran, not after a "no".
    // Once the card's undo was asked for, its own line says what came back instead. Not when
    // the outcome is unknown either: "you can restore these" would say it ran (DESIGN §8
    // fail closed: unknown is neither done nor not done).
    let undo_applies = approval.undo.is_none()
        && (pending
            || (approval.status == ApprovalStatus::Approved
                && !matches!(approval.execution, Execution::Failed | Execution::Unknown)));
    (
        undo.filter(|_| undo_applies)
            .map(|u| any(view! { <p class="card-undo" data-testid="card-undo">{u}</p> })),
        (irreversible && pending).then(|| any(view! {
            <p class="card-no-undo" data-testid="card-no-undo">"Once it runs, this cannot be taken back."</p>
        })),
    )
}

/// The undo part of an answered card: the record's line once asked, else the button while
/// the card offers its undo to a device that may answer.
#[component]
pub fn CardUndo(
    /// The row.
    approval: Approval,
    /// Who is looking; only a control device gets the button.
    viewer: Viewer,
    /// The card's interaction state (busy, error).
    state: CardState,
) -> impl IntoView {
    let offset = clock_offset();
    if let Some(undo) = approval.undo.clone() {
        let (head, detail) = undo_words(&undo);
        let at = undo_time(&undo);
        return any(view! {
            <p class=format!("card-undone undo-{}", undo.state.as_str()) data-testid="card-undone" data-undo=undo.state.as_str() role="status">
                <strong>{head}</strong>
                " at "
                <time datetime=at.to_rfc3339()>{text(move || format_time(at, offset.get()))}</time>
                {detail.map(|d| format!(": {d}")).unwrap_or_else(|| ".".into())}
            </p>
        });
    }
    if !viewer.can_answer || !approval.undo_offered(now_utc()) {
        return ().into_any();
    }
    let live_ctx = crate::PageState::current().map(|state| state.live);
    let id = approval.id.clone();
    // Before the page is live the button submits the card's undo form (crate::card_form);
    // live, it runs the undo in place and the form is never sent.
    let run = move |ev: leptos::ev::MouseEvent| {
        ev.prevent_default();
        if state.busy.get_untracked() {
            return;
        }
        state.busy.set(true);
        state.error.set(None);
        let id = id.clone();
        leptos::task::spawn_local(async move {
            let answer = undo_approval(id).await;
            state.busy.try_set(false);
            if let Err(error) = answer {
                state.error.try_set(Some(error.to_string()));
            }
            if let Some(live) = live_ctx {
                live.bump();
            }
        });
    };
    let until = approval.undo_until();
    any(view! {
        <form class="card-undo-action" method="post" action=UNDO_URL>
            <input type="hidden" name="id" value=approval.id.clone()/>
            <button
                type="submit"
                class="btn btn-quiet"
                data-testid="undo-button"
                disabled=flag(move || state.busy.get())
                on:click=run
            >
                {approval.undo_label()}
            </button>
            {until.map(|until| any(view! {
                <span class="undo-until">
                    "Possible until "
                    <time datetime=until.to_rfc3339()>{text(move || format_time(until, offset.get()))}</time>
                </span>
            }))}
        </form>
    })
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use serde_json::json;

    fn record(state: UndoState, result: Option<serde_json::Value>) -> UndoRecord {
        UndoRecord {
            state,
            items: vec!["m1".into()],
            by: "phone".into(),
            surface: "web".into(),
            at: Utc.with_ymd_and_hms(2026, 12, 1, 14, 2, 0).unwrap(),
            finished_at: None,
            result,
        }
    }

    #[test]
    fn an_undo_says_who_where_and_what_came_back() {
        let done = record(
            UndoState::Done,
            Some(json!({"summary": "Restored 3 of 5 emails; 2 no longer in Trash."})),
        );
        assert_eq!(
            undo_words(&done),
            (
                "Undone by phone via web".to_owned(),
                Some("Restored 3 of 5 emails; 2 no longer in Trash.".to_owned())
            )
        );
        let failed = record(
            UndoState::Failed,
            Some(json!({"message": "the mailbox refused"})),
        );
        assert_eq!(
            undo_words(&failed),
            (
                "The undo failed, asked by phone via web".to_owned(),
                Some("the mailbox refused".to_owned())
            )
        );
        assert_eq!(undo_words(&record(UndoState::Running, None)).1, None);
    }
}
