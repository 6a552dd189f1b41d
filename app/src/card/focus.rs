//! The card by keyboard: where the focus was in a card ([`CardFocus`]), remembered as it moves,
//! and put back when a live redraw drops it.

use leptos::html;
use leptos::prelude::*;

use super::CardState;

/// Where the keyboard focus was in a card (the card by keyboard). Every live event
/// draws the Activity page anew, which drops the focused element; the redrawn card puts the
/// focus back on the same control, or on the card itself once that control is gone (the
/// answer buttons after an answer), so a keyboard user is never thrown back to the top.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CardFocus {
    /// Somewhere else in the card (its text, the exact-call toggle): the card itself.
    Card,
    /// The Reject button.
    Reject,
    /// The action button (also while its confirm dialog is open: it gets focus back).
    Action,
}

/// Keeps the card's focus in `state`: returns the card's `focusin` and `focusout` handlers,
/// and starts the effect that gives the focus back to a redrawn card.
pub(super) fn keep_focus(
    state: CardState,
    card_ref: NodeRef<html::Article>,
    action_ref: NodeRef<html::Button>,
    reject_ref: NodeRef<html::Button>,
) -> (
    impl Fn(leptos::ev::FocusEvent) + 'static,
    impl Fn(leptos::ev::FocusEvent) + 'static,
) {
    // Remember where the focus is in this card, and forget it once it leaves for another
    // element (a `focusout` towards nothing is the element being removed by a redraw, or a
    // click on the bare page: keep it then).
    let on_focusin = move |ev: leptos::ev::FocusEvent| {
        let target: leptos::web_sys::Element = event_target(&ev);
        if target.closest("[role=dialog]").ok().flatten().is_some() {
            // The dialog keeps its own focus; the action button gets it back on close.
            return;
        }
        let is = |button: Option<leptos::web_sys::HtmlButtonElement>| {
            button.is_some_and(|b| b.is_same_node(Some(&target)))
        };
        let at = if is(action_ref.get_untracked()) {
            CardFocus::Action
        } else if is(reject_ref.get_untracked()) {
            CardFocus::Reject
        } else {
            CardFocus::Card
        };
        state.focus.set(Some(at));
    };
    let on_focusout = move |ev: leptos::ev::FocusEvent| {
        use leptos::wasm_bindgen::JsCast;
        let Some(next) = ev.related_target() else {
            return;
        };
        let inside = next.dyn_ref::<leptos::web_sys::Node>().is_some_and(|node| {
            card_ref
                .get_untracked()
                .is_some_and(|card| card.contains(Some(node)))
        });
        if !inside {
            state.focus.set(None);
        }
    };
    // A redrawn card takes the focus back if the redraw dropped it (it sits on the page body).
    crate::shape::effect(move || {
        let Some(card) = card_ref.get() else {
            return;
        };
        if state.dialog_open.get_untracked() {
            // The dialog, drawn anew too, focuses itself.
            return;
        }
        let Some(at) = state.focus.get_untracked() else {
            return;
        };
        let target = match at {
            CardFocus::Action => action_ref.get_untracked(),
            CardFocus::Reject => reject_ref.get_untracked(),
            CardFocus::Card => None,
        };
        refocus(&card, target.as_deref());
    });
    (on_focusin, on_focusout)
}

/// Puts the focus on `target` (a control of a redrawn card), or on the card itself when that
/// control is gone or cannot take it (disabled while an answer is in flight), but only when
/// nothing else has it (it sits on the page body): a redraw must not steal the focus from
/// where the person moved it. The page does not scroll. Browser only.
fn refocus(card: &leptos::web_sys::HtmlElement, target: Option<&leptos::web_sys::HtmlElement>) {
    #[cfg(feature = "hydrate")]
    {
        let document = document();
        let dropped = document
            .active_element()
            .is_none_or(|active| active.tag_name().eq_ignore_ascii_case("body"));
        if !dropped {
            return;
        }
        let options = web_sys::FocusOptions::new();
        options.set_prevent_scroll(true);
        if let Some(target) = target {
            let _ = target.focus_with_options(&options);
            if document
                .active_element()
                .is_some_and(|active| target.is_same_node(Some(&active)))
            {
                return;
            }
        }
        let _ = card.focus_with_options(&options);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (card, target);
}
