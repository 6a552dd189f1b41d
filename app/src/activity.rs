//! The Activity page (`/`, `/activity`, `/activity/:id`): the cards waiting for the owner
//! first, then the newest page of answered ones, with an "Older cards" control that loads the
//! next page (so the page stays small after a year of use). With an id, that card is
//! highlighted and scrolled into view, or the page says plainly that no card has it. It
//! refetches on every live event; pages loaded with "Older cards" stay, and are loaded again
//! over the same range, so a card that moved into it since shows there once.
//!
//! The history (not the waiting cards: a card that waits is always shown) can be searched and
//! filtered, the filters kept in the address's query:
//! - `filters.rs` is what the history is filtered by and how the address spells it (read by
//!   the server only);
//! - `filter_form.rs` is the search box and filters above the history (drawn by the server,
//!   followed in the browser by `app/src/filter_client.js`);
//! - `older.rs` is "Older cards": the pages below the first.
//!
//! Every list the page asks for (the first page, a refetch, "Older cards") is asked with the
//! address's query of the moment, so a card answered elsewhere shows only when it matches it.
//! The first comes with the page (`load.rs`: the server loads it before it draws the page, and
//! the page carries it to the browser); the others are [`crate::api::activity_data`]'s.

use std::sync::Arc;
use std::time::Duration;

use iris_core::wire::{Approval, ApprovalStatus};
use leptos::prelude::*;

pub mod filter_form;
pub mod filters;
pub mod load;
mod older;

use crate::api::{activity_data, ActivitySnapshot};
use crate::card::{card_key, ApprovalCard, CardState};
use crate::history::HistoryLine;
use crate::shape::{any, flag, part, text};
use crate::trail::TrailLine;
use older::Older;

/// How many times the page polls for a running call's outcome (every 2 s) on top of live
/// events, in case the event stream is down.
const MAX_POLLS: u64 = 60;

/// The Activity page.
#[component]
pub fn ActivityPage(
    /// The card in the address (`/activity/{id}`): highlighted and brought into view.
    focus: Option<String>,
) -> impl IntoView {
    // Signals of the value types the app holds anyway, not `Signal`s or `StoredValue`s of new
    // ones: each value type costs the phone's wasm its own copy of Leptos' signal code
    // (BENCHMARKS.md). `focus` never changes; the values kept below are read untracked.
    let focus = RwSignal::new(focus);
    let live = crate::PageState::current()
        .map(|state| state.live)
        .unwrap_or_default();
    // A `u64` like the live tick's: each value type a signal holds costs the wasm its own copy
    // of Leptos' signal code.
    let poll = RwSignal::new(0_u64);
    // The history's filters: the address's query as it is (the request's on the server, the
    // same one in the browser), which the server reads; it changes when the filters' script
    // says the address did (`iris-filters`).
    let query = RwSignal::new(crate::page::current_query());

    // The page is drawn once, from the snapshot the server loaded with it (`load`); live
    // events and polls load the lists again into `latest`, which the drawn lists follow card by
    // card (keyed), so a card that did not change keeps its elements: a button about to be
    // tapped, an open trail, the focus.
    let first = load::first();
    let latest = RwSignal::new(first.as_ref().ok().cloned());
    // Pages loaded with "Older cards": their cards and the cursor after them.
    let older = Older {
        cards: RwSignal::new(Vec::new()),
        cursor: RwSignal::new(None),
        loading: RwSignal::new(false),
        error: RwSignal::new(None),
        query,
    };
    // Live events, polls and a change of the filters load the lists again, with the filters
    // of the moment; an answer for filters since changed is dropped (a newer one comes).
    // The query the previous run asked with (`None` before the first run, which only notes it:
    // the first lists came with the page).
    let asked_before = RwSignal::new(None::<String>);
    crate::shape::effect(move || {
        live.tick.track();
        poll.track();
        let asked = query.get();
        let before = asked_before.get_untracked();
        asked_before.update_untracked(|kept| *kept = Some(asked.clone()));
        if let Some(before) = before {
            if before != asked {
                // Older pages of other filters are not this list's.
                older.reset();
            }
            let focus = focus.get_untracked();
            let sent = asked.clone();
            leptos::task::spawn_local(async move {
                if let Ok(snapshot) = activity_data(focus, sent.clone()).await {
                    if query.get_untracked() != sent {
                        return;
                    }
                    let from = snapshot.older.clone();
                    latest.try_set(Some(snapshot));
                    older.refresh(from);
                }
            });
        }
    });
    // Once live: the filters' script follows the form and the back and forward buttons, and
    // says when the address's query changed. The page lives as long as the document: the
    // listener is never removed.
    crate::shape::effect(move || {
        let _ = window_event_listener_untyped("iris-filters", move |_| {
            let now = crate::page::current_query();
            if now != query.get_untracked() {
                query.set(now);
            }
        });
        filter_form::attach();
    });
    // The snapshot on screen (`None` when the first could not be loaded: the page says why).
    let data = move || latest.get();

    // Card states live with the page so a redraw keeps dialogs, errors and requests in flight.
    // Lists, not hash maps, here and below: a page holds a few hundred cards at most, and std's
    // hashing would cost the phone's wasm 2.7 KB (BENCHMARKS.md).
    let held = StoredValue::new((
        Owner::current().unwrap_or_default(),
        Vec::<(String, CardState)>::new(),
    ));
    // A refusal of the card's form (answered before the page was live, crate::card_form)
    // comes with the first snapshot and shows on that card like any other answer's error (a
    // card's state is made when the card is first drawn: from the first snapshot).
    let refused = move || latest.with_untracked(|d| d.as_ref().and_then(|d| d.refused.clone()));
    let state_for = move |id: &str| -> CardState {
        let kept = held.with_value(|(_, kept)| {
            kept.iter()
                .find(|(card, _)| card == id)
                .map(|(_, state)| *state)
        });
        if let Some(state) = kept {
            return state;
        }
        let state = held.with_value(|(owner, _)| owner.with(CardState::new));
        if focus.get_untracked().as_deref() == Some(id) {
            state.error.set(refused());
        }
        held.update_value(|(_, m)| {
            m.push((id.to_owned(), state));
        });
        state
    };

    // The cards this page has shown waiting (in the browser only: an effect, so the server's
    // render and hydration agree): answered later, here or elsewhere, they stay open in full.
    let shown_pending = RwSignal::new(Vec::<String>::new());
    crate::shape::effect(move || {
        if let Some(d) = data() {
            shown_pending.update_untracked(|shown| {
                for card in &d.pending {
                    if !shown.contains(&card.id) {
                        shown.push(card.id.clone());
                    }
                }
            });
        }
    });
    let seen =
        move |id: &str| shown_pending.with_untracked(|shown| shown.iter().any(|card| card == id));
    // Read by the push control's effect only (in the browser, once the data has come).
    let push_off = Memo::new(move |_| data().map(|d| d.push_off));

    // Bring the focused card into view once it is on screen (once per id).
    let scrolled_for = RwSignal::new(None::<String>);
    crate::shape::effect(move || {
        let loaded = data().is_some();
        let Some(id) = focus.get() else { return };
        if !loaded || scrolled_for.with_untracked(|s| s.as_deref() == Some(id.as_str())) {
            return;
        }
        scrolled_for.update_untracked(|s| *s = Some(id.clone()));
        request_animation_frame(move || scroll_to_card(&id));
    });

    // While an approved call has no outcome yet, look again now and then.
    crate::shape::effect(move || {
        let waiting = data().is_some_and(|d| {
            d.cards()
                .any(|a| a.status == ApprovalStatus::Approved && !a.execution.has_outcome())
        });
        if waiting && poll.get_untracked() < MAX_POLLS {
            set_timeout(
                move || {
                    poll.try_update(|p| *p += 1);
                },
                Duration::from_secs(2),
            );
        }
    });

    any(view! {
        <div class="activity">
            // The page's heading for screen readers; its sections are titled below.
            <h1 class="visually-hidden">"Activity"</h1>
            {match first {
                Ok(d) => activity_view(d, latest, focus.get_untracked(), state_for, seen, older),
                Err(e) => any(view! {
                    <div class="page-error" role="alert" data-testid="page-error">
                        <p>{e}</p>
                    </div>
                }),
            }}
            // The first snapshot as the server loaded it: what the browser draws from (`load`).
            <script type="application/json" id=load::SCRIPT_ID nonce=load::script_nonce() inner_html=load::script_text()></script>
            <crate::push::PushControl server_off=push_off/>
        </div>
    })
}

/// A list of cards as the page reads it: a plain shared closure, not a `Signal` (a `Signal` of
/// a new value type would cost the phone's wasm its own copy of Leptos' signal code).
type Cards = Arc<dyn Fn() -> Vec<Approval> + Send + Sync>;

/// What `f` reads of the latest snapshot (tracked), or `R`'s default before there is one.
/// Through the page's `RwSignal` itself, not a `Memo` over it: a signal type of its own would
/// cost the phone's wasm a copy of Leptos' signal code, and comparing two snapshots to skip
/// an update costs more than the keyed lists' own comparison of card keys.
fn read<R: Default>(
    latest: RwSignal<Option<ActivitySnapshot>>,
    f: impl FnOnce(&ActivitySnapshot) -> R,
) -> R {
    latest.with(|d| d.as_ref().map(f).unwrap_or_default())
}

/// The lists: waiting, then answered (the first page, then what "Older cards" loaded), drawn
/// from `first` and following `latest` (the newest snapshot) card by card.
fn activity_view(
    first: ActivitySnapshot,
    latest: RwSignal<Option<ActivitySnapshot>>,
    focus: Option<String>,
    state_for: impl Fn(&str) -> CardState + Copy + Send + Sync + 'static,
    seen: impl Fn(&str) -> bool + Copy + Send + Sync + 'static,
    older: Older,
) -> AnyView {
    let form = first.filter_form.clone().unwrap_or_default();
    let (name, can_answer, missing) = (
        first.viewer.name.clone(),
        first.viewer.can_answer,
        first.missing.clone(),
    );
    let viewer = first.viewer;
    let titled = focus.clone();
    let pending_count = move || read(latest, |d| d.pending.len());

    // Waiting cards in full; answered ones as lines of the history (a card already shown in
    // full on this page stays open). Keyed by the card's id and state: a card that did not
    // change keeps its elements when the lists load again.
    let list = move |items: Cards| {
        let viewer = viewer.clone();
        let focus = focus.clone();
        any(view! {
            <For each=move || items() key=card_key let:approval>
                {
                    let focused = focus.as_deref() == Some(approval.id.as_str());
                    let seen = seen(&approval.id);
                    let state = state_for(&approval.id);
                    if approval.status == ApprovalStatus::Pending {
                        any(view! { <ApprovalCard approval viewer=viewer.clone() focused state/> })
                    } else {
                        any(view! {
                            <HistoryLine approval viewer=viewer.clone() focused open=seen state/>
                        })
                    }
                }
            </For>
        })
    };
    let pending: Cards = Arc::new(move || read(latest, |d| d.pending.clone()));
    let answered: Cards = Arc::new(move || read(latest, |d| d.answered.clone()));
    // Older cards not already on the first page (a refetch may have moved one up).
    let older_cards: Cards = Arc::new(move || {
        let shown: Vec<String> = read(latest, |d| d.cards().map(|a| a.id.clone()).collect());
        older
            .cards
            .get()
            .into_iter()
            .filter(|a| !shown.contains(&a.id))
            .collect()
    });
    let next_cursor = move || match older.cursor.get() {
        None => read(latest, |d| d.older.clone()),
        Some(after_loaded) => after_loaded,
    };
    // Parts shown on a condition: a closure over a memo (it changes only when the condition
    // does, as `<Show>` would), drawing an `AnyView` or nothing. One shape for every such
    // part on the page: each shape of reactive view costs the phone's wasm its own copy of
    // Leptos' render effect (BENCHMARKS.md).
    // The tab's title follows the waiting count and, on a card's page, names the card (in the
    // browser only: the server's title names the page).
    crate::shape::effect(move || {
        let waiting = pending_count();
        let shows = titled
            .as_deref()
            .and_then(|id| {
                read(latest, |d| {
                    d.cards().find(|a| a.id == id).map(|a| a.card.title.clone())
                })
            })
            .unwrap_or_else(|| "Activity".to_owned());
        document().set_title(&crate::page::document_title(&shows, waiting));
    });
    let none_waiting = Memo::new(move |_| pending_count() == 0);
    // With nothing answered to show: the filters in words, empty when none is set (a `String`
    // rather than a bool, so the sentence follows a change of the filters between two empty
    // lists).
    let none_answered = Memo::new(move |_| {
        read(latest, |d| {
            d.answered.is_empty().then(|| d.filter_words.clone())
        })
    });
    let has_older = Memo::new(move |_| next_cursor().is_some());

    any(view! {
        <p class="viewer-line" data-testid="viewer">
            "Signed in as "<strong>{name}</strong>
            {(!can_answer).then_some(" · This device can only view.")}
        </p>
        {missing.map(|id| any(view! {
            <p class="page-error" role="alert" data-testid="card-not-found">
                "No card has the id \u{201c}"{id}"\u{201d}. The link may be mistyped or cut short; the cards that do exist are listed below."
            </p>
        }))}
        <section class="card-section" aria-labelledby="pending-title">
            <h2 id="pending-title" class="section-title">
                {if can_answer { "Waiting for you" } else { "Waiting for an answer" }}
                <span class="count" aria-label=text(move || format!("{} waiting", pending_count()))>{text(move || pending_count().to_string())}</span>
            </h2>
            {part(move || none_waiting.get().then(|| any(view! {
                <p class="empty">
                    {if can_answer { "Nothing is waiting for you." } else { "Nothing is waiting for an answer." }}
                </p>
            })))}
            <div class="card-list" data-testid="pending-list">{list.clone()(pending)}</div>
        </section>
        <section class="card-section" aria-labelledby="answered-title">
            <h2 id="answered-title" class="section-title">"Answered"</h2>
            // The server's HTML, placed as it is: the browser keeps the server's form when it
            // hydrates, and the filters' script, not the wasm, follows it.
            <div class="history-filters-slot" inner_html=form></div>
            {part(move || {
                let notes = read(latest, |d| d.filter_notes.clone());
                (!notes.is_empty()).then(|| any(view! {
                    <ul class="filter-notes" data-testid="filter-notes">
                        {notes.into_iter().map(|note| any(view! { <li>{note}</li> })).collect_view()}
                    </ul>
                }))
            })}
            {part(move || none_answered.get().map(|words| {
                if words.is_empty() {
                    return any(view! { <p class="empty">"Nothing answered yet."</p> });
                }
                any(view! {
                    <p class="empty" data-testid="no-match">
                        {format!("No answered cards match {words}. ")}
                        // A plain link (the page without the filters); live, the filters'
                        // script clears the form in place instead.
                        <a href="/activity" data-testid="no-match-clear">"Clear the filters"</a>
                        " to see every answered card."
                    </p>
                })
            }))}
            {part(move || {
                let actions = read(latest, |d| d.actions.clone());
                (!actions.is_empty()).then(|| any(view! {
                    <ul class="action-lines" data-testid="action-lines" aria-label="Done without a card">
                        {actions.into_iter().map(|line| any(view! { <ActionLine line/> })).collect_view()}
                    </ul>
                }))
            })}
            <div class="card-list" data-testid="answered-list">{list.clone()(answered)}{list(older_cards)}</div>
            <div class="older">
                {part(move || has_older.get().then(|| any(view! {
                    <button
                        type="button"
                        class="btn btn-quiet"
                        data-testid="older"
                        disabled=flag(move || older.loading.get())
                        on:click=move |_| {
                            if let Some(from) = next_cursor() {
                                older.load(from);
                            }
                        }
                    >
                        {text(move || if older.loading.get() { "Loading older cards…" } else { "Older cards" }.to_owned())}
                    </button>
                })))}
                {part(move || older.error.get().map(|e| any(view! {
                    <p class="page-error" role="alert">{format!("Could not load older cards: {e}")}</p>
                })))}
            </div>
        </section>
    })
}

/// One write that ran without a card, as the owner asked (its audit entry, kind `action`), as
/// its line on Activity says it: what it did in the tool's own words (which say how to undo it),
/// else which tool ran. Worded by the server ([`crate::api::ActivitySnapshot::actions`]), so
/// the browser's wasm reads a [`TrailLine`], not the audit entry's shape.
pub fn action_line(entry: &iris_core::wire::AuditEntry) -> TrailLine {
    let text = entry
        .result
        .get("summary")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| {
            let tool = entry.result.get("tool").and_then(serde_json::Value::as_str);
            format!("Ran {}.", tool.unwrap_or("a tool"))
        });
    TrailLine {
        kind: entry.kind.as_str().to_owned(),
        text,
        at: entry.at,
    }
}

/// One write that ran without a card ([`action_line`]), and when.
#[component]
fn ActionLine(line: TrailLine) -> impl IntoView {
    let offset = crate::live::clock_offset();
    let at = line.at;
    any(view! {
        <li class="action-line" data-testid="action-line">
            <span class="badge badge-acts">"Without a card, as you asked"</span>
            " "
            <span class="action-summary">{line.text}</span>
            " "
            <time class="action-time" datetime=at.to_rfc3339()>{text(move || crate::format::format_time(at, offset.get()))}</time>
        </li>
    })
}

/// Scrolls the card with this approval id to the middle of the screen (browser only).
fn scroll_to_card(id: &str) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        if let Some(element) = document().get_element_by_id(&format!("card-{id}")) {
            let options = web_sys::ScrollIntoViewOptions::new();
            options.set_behavior(web_sys::ScrollBehavior::Smooth);
            options.set_block(web_sys::ScrollLogicalPosition::Center);
            element.scroll_into_view_with_scroll_into_view_options(&options);
            if let Ok(element) = element.dyn_into::<web_sys::HtmlElement>() {
                let focus_options = web_sys::FocusOptions::new();
                focus_options.set_prevent_scroll(true);
                let _ = element.focus_with_options(&focus_options);
            }
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = id;
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use iris_core::wire::{AuditEntry, AuditKind};
    use serde_json::json;

    fn entry(result: serde_json::Value) -> AuditEntry {
        AuditEntry {
            id: 7,
            approval_id: None,
            run_id: Some("r1".into()),
            kind: AuditKind::Action,
            item: None,
            result,
            undo_available: true,
            actor: "iris".into(),
            surface: None,
            at: Utc.with_ymd_and_hms(2026, 12, 5, 9, 30, 0).unwrap(),
        }
    }

    /// A write without a card reads as the tool's own summary, else names the tool.
    #[test]
    fn an_action_line_says_the_tools_summary_or_its_name() {
        let line = action_line(&entry(json!({
            "tool": "trash_category",
            "summary": "Moved 4 emails to Trash; say \"undo that\" to bring them back."
        })));
        assert_eq!(line.kind, "action");
        assert_eq!(
            line.text,
            "Moved 4 emails to Trash; say \"undo that\" to bring them back."
        );
        assert_eq!(
            line.at,
            Utc.with_ymd_and_hms(2026, 12, 5, 9, 30, 0).unwrap()
        );
        assert_eq!(
            action_line(&entry(json!({"tool": "trash_category"}))).text,
            "Ran trash_category."
        );
        assert_eq!(action_line(&entry(json!({}))).text, "Ran a tool.");
    }
}
