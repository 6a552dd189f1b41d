//! "How this came about" (docs/adr/0123-how-a-card-came-about.md): who asked, then the steps of
//! the turn that led to the call, frozen with the card. Collapsed, unless a value on the card
//! came from text outside the owner's control: then it is open, and its summary says how many
//! (each is also noted under its line, `choice.rs`).

use iris_core::wire::Card;
use leptos::prelude::*;

use crate::shape::any;

/// The card's trail behind a toggle, open when something is flagged; `None` for a card made
/// before trails were kept.
pub(super) fn origin_view(card: &Card) -> Option<AnyView> {
    if card.trail.is_empty() {
        return None;
    }
    let flagged = card.flags.len();
    let summary = match flagged {
        0 => "How this came about".to_owned(),
        1 => "How this came about · 1 value not from you".to_owned(),
        n => format!("How this came about · {n} values not from you"),
    };
    let trail = card.trail.clone();
    let open = flagged > 0;
    Some(any(view! {
        <details class="card-origin" data-testid="card-origin" data-flagged=flagged open=open>
            <summary>{summary}</summary>
            <ol class="card-trail-steps" data-testid="card-trail-steps">
                {trail.into_iter().map(|sentence| any(view! { <li>{sentence}</li> })).collect_view()}
            </ol>
        </details>
    }))
}
