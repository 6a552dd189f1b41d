//! A rejected card's reason, given after the tap (docs/adr/0125-reason-after-reject.md): Reject
//! decides at once; then, on a rejected card without a reason, a control device that is live
//! gets one optional field, "Tell IRIS why", sent once. The card then shows the reason like one
//! given with the decision, and the model is told in the card's conversation.

use iris_core::wire::{Approval, ApprovalStatus};
use leptos::prelude::*;

use crate::api::give_reason;
use crate::backend::Viewer;
use crate::card::CardState;
use crate::shape::{any, flag};

/// The longest reason, in characters (the server's rule, `MAX_REASON_CHARS`).
const MAX_REASON_CHARS: usize = 500;

/// The optional reason field of a rejected card, for a control device once the page is live
/// (`live`); nothing otherwise.
#[component]
pub fn CardReason(
    /// The row.
    approval: Approval,
    /// Who is looking; only a control device may say why.
    viewer: Viewer,
    /// The card's interaction state (busy, error).
    state: CardState,
    /// Whether the page is live (hydrated): the field needs the page's own code.
    live: RwSignal<bool>,
) -> impl IntoView {
    if approval.status != ApprovalStatus::Rejected
        || approval.reason.is_some()
        || !viewer.can_answer
    {
        return ().into_any();
    }
    let live_ctx = crate::PageState::current().map(|state| state.live);
    let id = approval.id.clone();
    let field_id = format!("reason-{id}");
    let reason = RwSignal::new(String::new());
    let send = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let text = reason.get_untracked();
        if state.busy.get_untracked() || text.trim().is_empty() {
            return;
        }
        state.busy.set(true);
        state.error.set(None);
        let id = id.clone();
        leptos::task::spawn_local(async move {
            let answer = give_reason(id, text).await;
            state.busy.try_set(false);
            if let Err(error) = answer {
                state.error.try_set(Some(error.to_string()));
            }
            if let Some(live) = live_ctx {
                live.bump();
            }
        });
    };
    any(view! {
        <form class="card-reason" data-testid="reason-form" hidden=flag(move || !live.get()) on:submit=send>
            <label for=field_id.clone()>"Tell IRIS why (optional)"</label>
            <div class="card-reason-row">
                <input
                    id=field_id
                    type="text"
                    data-testid="reason-input"
                    maxlength=MAX_REASON_CHARS.to_string()
                    placeholder="e.g. I still need these"
                    prop:value=move || reason.get()
                    on:input=move |ev| reason.set(event_target_value(&ev))
                />
                <button class="btn btn-quiet" type="submit" data-testid="reason-send"
                    disabled=flag(move || state.busy.get() || reason.get().trim().is_empty())>
                    "Send"
                </button>
            </div>
            // Near the limit the field says so (a paste longer than it is cut at the limit).
            <p class="card-reason-count" data-testid="reason-count"
                hidden=flag(move || reason.with(|r| r.chars().count()) < MAX_REASON_CHARS - 100)>
                {crate::shape::text(move || format!("{} of {MAX_REASON_CHARS} characters", reason.with(|r| r.chars().count())))}
            </p>
        </form>
    })
}
