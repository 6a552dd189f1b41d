//! What the call does beyond the card's lines: the change it makes (a file write's diff), the
//! other cards it repeats, and the exact call (tool, arguments, call hash) behind a toggle.

use iris_core::wire::{Approval, Card};
use leptos::prelude::*;

use super::CardState;
use crate::format::{format_time, overlap_line_text, overlap_lines};
use crate::shape::{any, text};

/// What will change (a file write's diff), line by line, coloured by its +/- mark.
pub(super) fn preview_view(card: &Card) -> Option<impl IntoView> {
    (!card.preview.is_empty()).then(|| {
        any(view! {
            <pre class="card-preview" data-testid="card-preview" aria-label="What will change">
                {card
                    .preview
                    .iter()
                    .map(|line| {
                        let class = match line.chars().next() {
                            Some('+') if !line.starts_with("+++") => "added",
                            Some('-') if !line.starts_with("---") => "removed",
                            Some('@') => "hunk",
                            _ => "",
                        };
                        any(view! { <span class=class>{line.clone()}"\n"</span> })
                    })
                    .collect_view()}
            </pre>
        })
    })
}

/// Other cards this one repeats, as they stood when it was made: said before anyone
/// approves, so the same change is not approved twice (docs/liveness.md "a card says what
/// it repeats"). Only on a pending card.
pub(super) fn overlaps_view(
    card: &Card,
    pending: bool,
    offset: RwSignal<Option<i32>>,
) -> Option<impl IntoView> {
    (pending && !card.overlaps.is_empty()).then(|| {
        let lines = overlap_lines(&card.overlaps);
        any(view! {
            <ul class="card-overlaps" data-testid="card-overlaps" role="note">
                {lines
                    .into_iter()
                    .map(|line| {
                        let at = line.overlap.at;
                        any(view! { <li>{text(move || overlap_line_text(&line, &format_time(at, offset.get())))}</li> })
                    })
                    .collect_view()}
            </ul>
        })
    })
}

/// The exact call behind a toggle: the tool, the arguments as pinned and the call hash. The
/// toggle's state is the card's `show_call` (a live redraw keeps it open).
pub(super) fn exact_call_view(approval: &Approval, state: CardState) -> AnyView {
    let show_call = state.show_call;
    let call_ref: NodeRef<leptos::html::Details> = NodeRef::new();
    crate::toggle::keep_in_step(call_ref, show_call);
    // The call that runs, not only the one asked for (docs/adr/0122-shaping-a-call.md): an
    // answered card with a decided call shows it; a waiting card shows the ticked items' call
    // as the owner unticks some.
    let decided = approval.decided_call.clone();
    let (tool, hash) = match &decided {
        Some(call) => (call.tool.clone(), call.call_hash.clone()),
        None => (approval.tool.clone(), approval.call_hash.clone()),
    };
    let asked_hash = approval.call_hash.clone();
    let items_arg = approval
        .card
        .items_arg
        .clone()
        .filter(|_| approval.narrowable());
    let base = decided.map_or_else(|| approval.args.clone(), |call| call.args);
    let shown = base.clone();
    let args = move || {
        let left = state.left_out.get();
        match &items_arg {
            Some(arg) if !left.is_empty() => {
                let mut narrowed = shown.clone();
                if let Some(list) = narrowed.get_mut(arg).and_then(|v| v.as_array_mut()) {
                    let kept: Vec<_> = list
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| !left.contains(i))
                        .map(|(_, v)| v.clone())
                        .collect();
                    *list = kept;
                }
                crate::format::pretty_json(&narrowed)
            }
            _ => crate::format::pretty_json(&shown),
        }
    };
    let narrowing = move || !state.left_out.get().is_empty();
    let ran_other = approval.decided_call.is_some();
    any(view! {
        <details
            class="exact-call"
            node_ref=call_ref
            on:toggle=move |ev| show_call.set(crate::toggle::open_of(&ev))
        >
            <summary data-testid="exact-call-toggle">
                {text(move || if show_call.get() { "Hide exact call" } else { "Show exact call" }.to_owned())}
            </summary>
            <div class="exact-call-body" data-testid="exact-call">
                {ran_other.then(|| any(view! {
                    <p class="exact-note" data-testid="exact-call-decided">"The call that runs, as you chose it:"</p>
                }))}
                <p class="exact-tool"><span class="label">"Tool "</span><code>{tool}</code></p>
                <pre class="exact-args"><code>{text(args)}</code></pre>
                <p class="exact-hash" data-testid="exact-call-hash">
                    <span class="label">"Call hash "</span>
                    {move || if narrowing() {
                        any(view! { <span>"its own, made when you approve only the ticked items"</span> })
                    } else {
                        any(view! { <code>{hash.clone()}</code> })
                    }}
                </p>
                {ran_other.then(|| any(view! {
                    <p class="exact-hash"><span class="label">"Asked for, call hash "</span><code>{asked_hash}</code></p>
                }))}
            </div>
        </details>
    })
}
