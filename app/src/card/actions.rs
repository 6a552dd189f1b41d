//! The card's actions: Reject in one tap, and the action button ("Trash 3 emails") that opens
//! the confirm dialog; before the page is live both work as the card's own form
//! ([`crate::card_form`]). Also the answer they give ([`answer`]).

use iris_core::wire::Decision;
use leptos::html;
use leptos::prelude::*;
use leptos::tachys::html::attribute::custom::CustomAttribute;

use super::{AnsweredHere, CardState};
use crate::api::respond_approval;
use crate::card_form::{form_dialog_id, FormConfirm, ANSWER_URL};
use crate::shape::{any, flag, maybe_text};

/// The answer to card `id`, run by its Reject button and its dialog's confirm: one at a time
/// (every answer button is disabled while one is in flight). ADR-0118 decision 4: approving a
/// card that needs the owner's passkey asks the browser for it after the confirm step;
/// rejecting never does. Afterwards the dialog closes, the card answered here takes the
/// highlight (or the error shows on the card) and the page refetches.
///
/// `item_count` is the number of items the owner may choose among (0 for a card answered
/// whole): an approval sends the ticked ones when some are unticked (`super::choice`).
pub(super) fn answer(
    id: String,
    passkey_required: bool,
    item_count: usize,
    state: CardState,
    answered_here: Option<AnsweredHere>,
) -> Callback<Decision> {
    let live_ctx = crate::PageState::current().map(|state| state.live);
    Callback::new(move |decision: Decision| {
        if state.busy.get_untracked() {
            return;
        }
        state.busy.set(true);
        state.error.set(None);
        let id = id.clone();
        let items = (decision == Decision::Approve && item_count > 0)
            .then(|| super::choice::kept_items(item_count, state))
            .flatten();
        // The edit the server reviewed, as it reviewed it (super::edit).
        let edits = (decision == Decision::Approve)
            .then(|| state.edited.get_untracked())
            .flatten();
        leptos::task::spawn_local(async move {
            let answer = if passkey_required && decision == Decision::Approve {
                crate::passkeys::approve_with_passkey(&id, None, items, edits).await
            } else {
                respond_approval(id.clone(), decision, None, items, edits)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            };
            // No answer came back (IRIS stopped or the network dropped): whether the answer
            // arrived is unknown (fail closed: never "try again"). The card keeps saying so
            // until the live stream reconnects and the page shows what IRIS recorded; a refetch
            // now would fail and redraw the card without the sentence.
            let unreached = answer
                .as_ref()
                .err()
                .is_some_and(|e| e.contains(crate::error::NO_ANSWER));
            state.busy.try_set(false);
            state.dialog_open.try_set(false);
            match answer {
                Ok(_) => {
                    state.edits.try_set(Vec::new());
                    state.edited.try_set(None);
                    if let Some(answered) = answered_here {
                        answered.0.try_set(Some(id));
                    }
                }
                Err(_) if unreached => {
                    state.error.try_set(Some(UNREACHED.to_owned()));
                }
                Err(error) => {
                    state.error.try_set(Some(error));
                }
            }
            if let Some(live) = live_ctx.filter(|_| !unreached) {
                live.bump();
            }
        });
    })
}

/// What a card says when its answer got no reply: the answer may or may not have arrived.
pub(super) const UNREACHED: &str = "IRIS did not reply, so it is not known whether your answer \
    arrived. Do not answer again: this card shows what IRIS recorded as soon as it is back.";

/// The answer buttons of a pending card on a device that may answer: the passkey note of a
/// card that needs one, then the card's form with Reject and the action button, then the
/// form's own dialog ([`FormConfirm`]) for answering before the page is live.
#[component]
pub(super) fn CardActions(
    /// The row's id.
    approval_id: String,
    /// The card's action words ("Trash 3 emails").
    action: String,
    /// The card's lines (the form's dialog repeats them).
    lines: Vec<String>,
    /// A destructive call (a red action button).
    destructive: bool,
    /// A call that cannot be taken back once it runs.
    irreversible: bool,
    /// The undo sentence, if the call has one.
    undo: Option<String>,
    /// Approving needs the owner's passkey.
    passkey_required: bool,
    /// How many items the owner may choose among (0: the card is answered whole).
    item_count: usize,
    /// The card's interaction state (busy, dialog).
    state: CardState,
    /// The answer ([`answer`]).
    respond: Callback<Decision>,
    /// Whether the page is live (hydrated).
    live: RwSignal<bool>,
    /// The action button, for the card's focus.
    action_ref: NodeRef<html::Button>,
    /// The Reject button, for the card's focus.
    reject_ref: NodeRef<html::Button>,
) -> impl IntoView {
    let action_words = super::choice::action_words(action.clone(), item_count, state);
    // With every item unticked only Reject remains; while the edit form is open its Review is
    // the way to approve (edit.rs), so the action's words never stand for a call they do not
    // describe.
    let none_kept = flag(move || item_count > 0 && state.left_out.with(Vec::len) >= item_count);
    let action_hidden = {
        let none_kept = none_kept.clone();
        flag(move || none_kept() || state.edits.with(|typed| !typed.is_empty()))
    };
    // Before the page is live these buttons work as the card's form (crate::card_form):
    // Reject submits it, the action button opens the form dialog. Live, their handlers
    // answer in place and the form is never sent. A passkey card's action waits for the
    // page (the passkey step needs its script).
    let form_ready = !passkey_required;
    let action_button = view! {
        <button
            type="button"
            class=if destructive { "btn btn-danger" } else { "btn btn-primary" }
            data-testid="action-button"
            aria-haspopup="dialog"
            node_ref=action_ref
            hidden=action_hidden
            disabled=flag(move || state.busy.get() || (!live.get() && !form_ready))
            on:click=move |_| state.dialog_open.set(true)
        >
            {action_words}
        </button>
    }
    // The element itself, not `view!`'s wrapper: the same type as every other button.
    .into_inner()
    .attr(
        "command",
        maybe_text(move || (form_ready && !live.get()).then(|| "show-modal".to_owned())),
    )
    .attr("commandfor", {
        let dialog = form_dialog_id(&approval_id);
        maybe_text(move || (form_ready && !live.get()).then(|| dialog.clone()))
    });
    any(view! {
        {passkey_required.then(|| any(view! {
            <p class="card-passkey" data-testid="passkey-note">
                "Approving needs your passkey: your browser asks for it after you confirm."
            </p>
        }))}
        <form class="card-actions" method="post" action=ANSWER_URL>
            <input type="hidden" name="id" value=approval_id.clone()/>
            <button
                type="submit"
                name="decision"
                value="reject"
                class="btn btn-quiet"
                data-testid="reject-button"
                node_ref=reject_ref
                disabled=flag(move || state.busy.get())
                on:click=move |ev| {
                    ev.prevent_default();
                    respond.run(Decision::Reject);
                }
            >
                "Reject"
            </button>
            {action_button}
        </form>
        {(item_count > 0).then(|| any(view! {
            <p class="choice-none" data-testid="choice-none" hidden=flag({
                let none_kept = none_kept.clone();
                move || !none_kept()
            })>
                "No item is ticked: tick at least one to approve it, or reject the card."
            </p>
        }))}
        {form_ready.then(|| any(view! {
            <FormConfirm
                approval_id=approval_id.clone()
                action=action.clone()
                lines=lines.clone()
                destructive
                irreversible
                undo=undo.clone()
                live
            />
        }))}
    })
}
