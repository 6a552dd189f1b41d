//! One answered card as a line of Activity's history: its title, what happened, who answered
//! where and when. A tap opens it into the full card ([`ApprovalCard`]) in place (before
//! hydration, or with a modifier, the line is a link to the card's own page); a card the
//! page has already shown in full (it was waiting, or it is the `/activity/:id` card) starts
//! open, so answering a card never folds it away under the owner's finger.

use iris_core::wire::Approval;
use leptos::prelude::*;

use crate::backend::Viewer;
use crate::card::{ApprovalCard, CardState};
use crate::format::{badge_label, format_time, narrowed_action, outcome_tone, who_and_where};
use crate::live::clock_offset;
use crate::shape::{any, text};

/// An answered card: a line until it is opened, then the whole card.
#[component]
pub fn HistoryLine(
    /// The row.
    approval: Approval,
    /// Who is looking.
    viewer: Viewer,
    /// The `/activity/:id` card (highlighted, open).
    focused: bool,
    /// Whether it starts open.
    open: bool,
    /// The card's interaction state, kept by the page.
    state: CardState,
) -> impl IntoView {
    let open = RwSignal::new(open || focused);
    let offset = clock_offset();
    let id = approval.id.clone();
    let title = line_title(&approval);
    let outcome = badge_label(&approval);
    // An undone card says so on its line too (the card itself says what came back).
    let undone = approval.undo.as_ref().map(|u| {
        use iris_core::wire::UndoState;
        let words = match u.state {
            UndoState::Running => "Undoing…",
            UndoState::Done => "Undone",
            UndoState::Failed => "Undo failed",
            UndoState::Unknown => "Undo unknown",
        };
        (words, u.state.as_str())
    });
    let tone = outcome_tone(&approval).as_str();
    let status = approval.status.as_str();
    let at = approval.responded_at.unwrap_or(approval.created_at);
    let who = who_and_where(&approval);
    let when = move || format_time(at, offset.get());
    let card = approval.clone();
    // Drawn as a closure over a memo, not `<Show>` (the Activity page's one shape for parts
    // shown on a condition, crate::activity).
    let opened = Memo::new(move |_| open.get());
    let close_id = id.clone();
    view! {
        {move || {
            if opened.get() {
                // Open: the card, with a way back to its line; the keyboard's focus goes back
                // to the line when it closes (and into the card when it opened).
                let line_id = format!("line-{close_id}");
                return any(view! {
                    <button
                        type="button"
                        class="history-close"
                        data-testid=format!("close-{close_id}")
                        aria-expanded="true"
                        aria-controls=format!("card-{close_id}")
                        on:click=move |_| {
                            open.set(false);
                            focus_later(line_id.clone());
                        }
                    >
                        "Show less"
                    </button>
                    <ApprovalCard approval=card.clone() viewer=viewer.clone() focused state/>
                });
            }
            {
                let id = id.clone();
                let title = title.clone();
                let who = who.clone();
                any(view! {
                    // A link to the card's own page, so a tap works before the wasm has
                    // arrived (seconds on a slow phone) and a new-tab tap opens the card there;
                    // once hydrated, a plain tap opens the card in place instead.
                    <a
                        class="history-line"
                        id=format!("line-{id}")
                        href=format!("/activity/{id}")
                        data-testid=format!("line-{id}")
                        aria-expanded="false"
                        on:click={
                            let card_id = format!("card-{id}");
                            move |ev: leptos::ev::MouseEvent| {
                                let modified = ev.ctrl_key() || ev.meta_key() || ev.shift_key() || ev.alt_key();
                                if ev.button() == 0 && !modified {
                                    ev.prevent_default();
                                    open.set(true);
                                    focus_later(card_id.clone());
                                }
                            }
                        }
                    >
                        <span class="history-title">{title}</span>
                        <span class="history-badges">
                            <span class=format!("badge badge-status status-{status} tone-{tone}")>
                                {outcome}
                            </span>
                            {undone.map(|(words, state)| any(view! {
                                <span class=format!("badge badge-undone undo-{state}") data-testid="line-undone">{words}</span>
                            }))}
                        </span>
                        <span class="history-meta">{text(move || format!("{}{who}", when()))}</span>
                    </a>
                })
            }
        }}
    }
}

/// Moves the keyboard's focus to the element with `id` once the next frame has drawn it (a
/// card just opened, a line just closed, the first card of a page just loaded), so it is not
/// dropped to the page.
pub(crate) fn focus_later(id: String) {
    #[cfg(feature = "hydrate")]
    request_animation_frame(move || {
        use wasm_bindgen::JsCast;
        if let Some(element) = document()
            .get_element_by_id(&id)
            .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
        {
            let _ = element.focus();
        }
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = id;
}

/// The line's title: the card's own ("Trash 5 emails"), or for a card approved for some of its
/// items what was approved ("Trash 4 of 5 emails", as its action button said when it was
/// tapped), so the line does not claim more than ran.
fn line_title(approval: &Approval) -> String {
    let left_out = approval.left_out_indices().len();
    let count = approval.items.len();
    if left_out == 0 || left_out > count {
        return approval.card.title.clone();
    }
    narrowed_action(&approval.card.title, count - left_out, count)
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use iris_core::wire::{Approval, ApprovalStatus};

    use super::line_title;

    #[test]
    fn a_card_approved_for_some_items_is_titled_by_what_was_approved() {
        let mut row = Approval::sample();
        assert_eq!(line_title(&row), "Trash 3 emails");
        row.status = ApprovalStatus::Approved;
        row.approved_items = Some(vec![0, 2]);
        assert_eq!(line_title(&row), "Trash 2 of 3 emails");
        row.approved_items = Some(vec![0, 1, 2]);
        assert_eq!(line_title(&row), "Trash 3 emails");
    }
}
