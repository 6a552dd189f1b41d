//! Approving some of a card's items (docs/adr/0122-shaping-a-call.md): once the page is live,
//! a card whose call lists one item per line gets a checkbox on each line, all ticked; the
//! action button follows the count ("Trash 2 of 3 emails") and goes away at none, leaving
//! Reject. Before the page is live the lines are plain and the card answers whole (as with
//! passkeys, nothing is narrowed before hydration). An answered card marks the lines it left
//! out.

use iris_core::wire::{Approval, CardFlag};
use leptos::prelude::*;

use super::CardState;
use crate::dialog::part_view;
use crate::format::{card_parts, narrowed_action, CardPart};
use crate::shape::{any, flag, part, text, Part};

/// The card's lines: with checkboxes on a live page when `choosable`, marked "left out" after
/// an approval of some items, else plain.
pub(super) fn lines_view(
    approval: &Approval,
    choosable: bool,
    state: CardState,
    live: RwSignal<bool>,
) -> Option<AnyView> {
    let lines = approval.card.lines.clone();
    if lines.is_empty() {
        return None;
    }
    let flags = approval.card.flags.clone();
    let left_out = approval.left_out_indices();
    if !left_out.is_empty() {
        return Some(any(view! {
            <ul class="card-lines" data-testid="card-lines">
                {lines.into_iter().enumerate().map(|(i, line)| {
                    if left_out.contains(&i) {
                        any(view! {
                            <li class="card-line-left-out" data-testid="line-left-out">
                                <span class="line-text">{line}</span>
                                " "
                                <span class="left-out-tag">"left out"</span>
                            </li>
                        })
                    } else {
                        any(view! { <li>{line}{flag_notes(&flags, i)}</li> })
                    }
                }).collect_view()}
            </ul>
        }));
    }
    if !choosable {
        return Some(plain(&lines, &flags));
    }
    let choices: Part = part(move || {
        Some(if live.get() {
            checkboxes(lines.clone(), &flags, state)
        } else {
            plain(&lines, &flags)
        })
    });
    Some(any(view! { <div class="card-choice">{choices}</div> }))
}

/// The lines as they read (a quoted body as one block), each value that came from outside
/// noted under the line that shows it (docs/adr/0123-how-a-card-came-about.md).
fn plain(lines: &[String], flags: &[CardFlag]) -> AnyView {
    if flags.is_empty() {
        return any(view! {
            <ul class="card-lines" data-testid="card-lines">
                {card_parts(lines).into_iter().map(part_view).collect_view()}
            </ul>
        });
    }
    let mut first = 0;
    let parts = card_parts(lines).into_iter().map(|part| {
        let spans = match &part {
            CardPart::Line(_) => 1,
            CardPart::Quote(text) => text.matches('\n').count() + 1,
        };
        let notes: Vec<AnyView> = (first..first + spans)
            .filter_map(|i| flag_notes(flags, i))
            .collect();
        first += spans;
        let notes =
            (!notes.is_empty()).then(|| any(view! { <li class="line-flag-item">{notes}</li> }));
        any(view! { {part_view(part)}{notes} })
    });
    any(view! {
        <ul class="card-lines" data-testid="card-lines">
            {parts.collect_view()}
        </ul>
    })
}

/// Line `i`'s flags, one note each ("“x” is from the text of the email 'y' (not from you)"),
/// or `None` when it has none.
fn flag_notes(flags: &[CardFlag], i: usize) -> Option<AnyView> {
    let notes: Vec<String> = flags
        .iter()
        .filter(|f| f.line as usize == i)
        .map(|f| f.note.clone())
        .collect();
    (!notes.is_empty()).then(|| {
        any(view! {
            <span class="line-flags">
                {notes.into_iter().map(|note| any(view! {
                    <span class="line-flag" data-testid="line-flag" role="note">{note}</span>
                })).collect_view()}
            </span>
        })
    })
}

/// One checkbox per line, ticked unless the owner left that item out (`state.left_out`), in
/// the card's list of lines, under a sentence saying how many are ticked.
fn checkboxes(lines: Vec<String>, flags: &[CardFlag], state: CardState) -> AnyView {
    let count = lines.len();
    any(view! {
        <p class="choice-legend" data-testid="choice-legend" aria-live="polite">
            {text(move || {
                let kept = count - state.left_out.with(Vec::len);
                if kept == count {
                    format!("All {count} are ticked: untick any you want left out.")
                } else {
                    format!("{kept} of {count} ticked: the others are left out, untouched.")
                }
            })}
        </p>
        <ul class="card-lines card-lines-choice" data-testid="card-lines">
            {lines.into_iter().enumerate().map(|(i, line)| {
                let checked = flag(move || !state.left_out.with(|l| l.contains(&i)));
                let item_class = text(move || {
                    if state.left_out.with(|l| l.contains(&i)) {
                        "choice-off".to_owned()
                    } else {
                        String::new()
                    }
                });
                any(view! {
                    <li class=item_class>
                        <label class="choice">
                            <input
                                type="checkbox"
                                data-testid=format!("item-choice-{i}")
                                checked=checked
                                disabled=flag(move || state.busy.get())
                                on:change=move |ev| {
                                    let on = event_target_checked(&ev);
                                    // Kept ascending by inserting in place: a sort would
                                    // cost the phone's wasm std's sorting code (3.5 KB).
                                    state.left_out.update(|left| {
                                        left.retain(|&x| x != i);
                                        if !on {
                                            let at = left.iter().take_while(|&&x| x < i).count();
                                            left.insert(at, i);
                                        }
                                    });
                                }
                            />
                            <span class="line-text">{line}</span>
                        </label>
                        {flag_notes(flags, i)}
                    </li>
                })
            }).collect_view()}
        </ul>
    })
}

/// The action button's words for the items ticked now: the card's own action when all are,
/// "Trash 2 of 3 emails" when some are.
pub(super) fn action_words(action: String, count: usize, state: CardState) -> crate::shape::Text {
    text(move || {
        let kept = count.saturating_sub(state.left_out.with(Vec::len));
        if kept == count {
            action.clone()
        } else {
            narrowed_action(&action, kept, count)
        }
    })
}

/// The items an approval keeps, as indices into the card's items: `None` when every item is
/// ticked (the whole call), else the ticked ones.
pub(super) fn kept_items(count: usize, state: CardState) -> Option<Vec<u32>> {
    let left = state.left_out.get_untracked();
    if left.is_empty() {
        return None;
    }
    Some(
        (0..count)
            .filter(|i| !left.contains(i))
            .filter_map(|i| u32::try_from(i).ok())
            .collect(),
    )
}

/// What the confirm dialog repeats for the items ticked now: the action words and the kept
/// lines.
pub(super) fn dialog_terms(
    action: &str,
    lines: &[String],
    state: CardState,
) -> (String, Vec<String>) {
    let left = state.left_out.get_untracked();
    if left.is_empty() || lines.is_empty() {
        return (action.to_owned(), lines.to_vec());
    }
    let kept: Vec<String> = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| !left.contains(i))
        .map(|(_, line)| line.clone())
        .collect();
    (narrowed_action(action, kept.len(), lines.len()), kept)
}
