//! A `<details>` element whose open state lives in a signal the page keeps (a card's "Show
//! exact call", its "What happened" trail), so a live redraw of the card keeps it as the owner
//! left it.
//!
//! Why not `prop:open`: hydration sets a property from the signal, and the signal starts
//! closed. The server's HTML is usable seconds before the wasm arrives on a slow phone (Fast 3G,
//! BENCHMARKS.md), and `<details>` opens without any script, so a toggle the owner opened in
//! those seconds was shut again under their finger when the app woke up. Here the element the
//! owner opened wins once, at hydration; after that the signal leads and `on:toggle` follows
//! the owner.

use leptos::html;
use leptos::prelude::*;

/// Keeps `details` and `open` in step both ways, in the browser (an effect; the server renders
/// the element closed, as `open` starts):
/// - the first time the element is there (hydration, or a fresh draw), an element already open
///   (opened before hydration) sets `open` to `true`;
/// - afterwards every change of `open` opens or closes the element.
///
/// The caller also sets `open` from the element's `toggle` event ([`open_of`]), so a tap on the
/// summary lands in the signal. Never fails: without the element it does nothing.
pub fn keep_in_step(details: NodeRef<html::Details>, open: RwSignal<bool>) {
    // Read untracked: a signal of a type the app holds anyway, not a `StoredValue<bool>` (each
    // value type costs the browser's wasm its own copy of Leptos' signal code).
    let seen = RwSignal::new(false);
    crate::shape::effect(move || {
        let Some(element) = details.get() else { return };
        if !seen.get_untracked() {
            seen.update_untracked(|seen| *seen = true);
            if element.open() && !open.get_untracked() {
                open.set(true);
            }
        }
        let want = open.get();
        if element.open() != want {
            element.set_open(want);
        }
    });
}

/// Whether the `<details>` element a `toggle` event came from is open now.
pub fn open_of(ev: &leptos::ev::Event) -> bool {
    let details: leptos::web_sys::HtmlDetailsElement = event_target(ev);
    details.open()
}
