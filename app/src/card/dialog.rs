//! The confirm dialog a card opens before an approval (the card's own words, modal, by
//! keyboard), and the way a card's lines are drawn, shared by the card and its dialog. Also the
//! card's hold on its dialog ([`CardDialog`]): drawn while the card's state says it is open.

use iris_core::wire::Decision;
use leptos::html;
use leptos::prelude::*;

use super::CardState;
use crate::format::{card_parts, CardPart};
use crate::shape::{any, flag, part, text};

/// One part of a card's lines: a row, or a quoted block (a mail's body) drawn as text.
pub(crate) fn part_view(part: CardPart) -> AnyView {
    match part {
        CardPart::Line(line) => any(view! { <li>{line}</li> }),
        CardPart::Quote(text) => any(view! {
            <li class="card-quote" data-testid="card-quote">
                <div class="quoted-body">{text}</div>
            </li>
        }),
    }
}

/// The centred modal that confirms an approval with the card's own words (the dialog
/// by keyboard): a `dialog` with `aria-modal`, named by its title and described by what it
/// will do. Focus moves to Cancel when it opens; Tab and Shift+Tab go round its two buttons
/// and never reach the page behind; a click on its text or on the backdrop does not let the
/// focus out (the dialog itself takes it, so Escape and Tab keep working); Escape cancels.
#[component]
pub(crate) fn ConfirmDialog(
    dialog_id: String,
    action: String,
    lines: Vec<String>,
    destructive: bool,
    irreversible: bool,
    undo: Option<String>,
    busy: RwSignal<bool>,
    on_cancel: Callback<()>,
    on_confirm: Callback<()>,
    /// Approving needs the owner's passkey: the browser asks for it after this confirm.
    #[prop(optional)]
    passkey: bool,
) -> impl IntoView {
    let cancel_ref: NodeRef<html::Button> = NodeRef::new();
    let confirm_ref: NodeRef<html::Button> = NodeRef::new();

    crate::shape::effect(move || {
        if let Some(cancel) = cancel_ref.get() {
            let _ = cancel.focus();
        }
    });

    let on_keydown = move |ev: leptos::ev::KeyboardEvent| match ev.key().as_str() {
        "Escape" => {
            ev.prevent_default();
            on_cancel.run(());
        }
        "Tab" => {
            ev.prevent_default();
            let (Some(cancel), Some(confirm)) =
                (cancel_ref.get_untracked(), confirm_ref.get_untracked())
            else {
                return;
            };
            // The buttons in order, without a disabled confirm (busy): Tab goes forward round
            // them, Shift+Tab backward; from anywhere else in the dialog Tab starts at the
            // first, Shift+Tab at the last.
            let mut ring = vec![cancel];
            if !confirm.disabled() {
                ring.push(confirm);
            }
            let active = document().active_element();
            let at = ring
                .iter()
                .position(|b| active.as_ref().is_some_and(|a| b.is_same_node(Some(a))));
            let last = ring.len() - 1;
            let next = match (at, ev.shift_key()) {
                (Some(i), false) => (i + 1) % ring.len(),
                (Some(i), true) => (i + last) % ring.len(),
                (None, false) => 0,
                (None, true) => last,
            };
            let _ = ring[next].focus();
        }
        _ => {}
    };

    let title_id = format!("{dialog_id}-title");
    let desc_id = format!("{dialog_id}-desc");
    let title = format!("{action}?");
    let labelled_by = title_id.clone();
    let described_by = desc_id.clone();

    any(view! {
        <div
            class="dialog-backdrop"
            data-testid="dialog-backdrop"
            on:keydown=on_keydown
            on:mousedown=move |ev| {
                // A press on the backdrop itself would move the focus to the page body, out
                // of the dialog: keep it where it is.
                let on_backdrop = ev
                    .target()
                    .zip(ev.current_target())
                    .is_some_and(|(target, backdrop)| target == backdrop);
                if on_backdrop {
                    ev.prevent_default();
                }
            }
        >
            <div
                class="dialog"
                class:dialog-danger=destructive
                id=dialog_id
                tabindex="-1"
                role="dialog"
                aria-modal="true"
                aria-labelledby=labelled_by
                aria-describedby=described_by
                data-testid="confirm-dialog"
            >
                <h2 class="dialog-title" id=title_id>{title}</h2>
                <DialogWords desc_id lines destructive irreversible undo passkey/>
                <div class="dialog-actions">
                    <button
                        type="button"
                        class="btn btn-quiet"
                        data-testid="dialog-cancel"
                        node_ref=cancel_ref
                        on:click=move |_| on_cancel.run(())
                    >
                        "Cancel"
                    </button>
                    <button
                        type="button"
                        class=if destructive { "btn btn-danger" } else { "btn btn-primary" }
                        data-testid="dialog-confirm"
                        node_ref=confirm_ref
                        disabled=flag(move || busy.get())
                        on:click=move |_| on_confirm.run(())
                    >
                        {text(move || if busy.get() { "Working…".to_owned() } else { action.clone() })}
                    </button>
                </div>
            </div>
        </div>
    })
}

/// What a confirm dialog says under its title, in the card's own words: a destructive call's
/// "This deletes data.", a call that cannot be taken back, the undo sentence, the card's lines
/// (a destructive card's first six and "and N more"; a write's all) and the passkey step.
/// Shared by [`ConfirmDialog`] and the card's form dialog ([`crate::card_form`]), so the two
/// never word a confirmation differently.
#[component]
pub(crate) fn DialogWords(
    /// The id the dialog's `aria-describedby` names.
    desc_id: String,
    /// The card's lines.
    lines: Vec<String>,
    /// A destructive call (deletes data).
    destructive: bool,
    /// A call that cannot be taken back once it runs (a mail to send).
    irreversible: bool,
    /// The undo sentence, if the call has one.
    undo: Option<String>,
    /// Approving needs the owner's passkey after this confirm.
    passkey: bool,
) -> impl IntoView {
    let count = lines.len();
    // A destructive card lists items: a few stand for the list (the card above has them all).
    // A pinned write's lines are the content that will go out: all of them, nothing hidden.
    let cap = if destructive { 6 } else { count };
    let shown: Vec<String> = lines.iter().take(cap).cloned().collect();
    let more = count.saturating_sub(shown.len());
    any(view! {
        <div id=desc_id class="dialog-desc">
            {destructive.then(|| any(view! { <p class="dialog-warning">"This deletes data."</p> }))}
            {irreversible.then(|| any(view! { <p class="dialog-warning" data-testid="dialog-no-undo">"This cannot be taken back once it runs."</p> }))}
            // The undo sentence before the list: a long list scrolls inside the dialog on a
            // small phone, and what can be taken back must show without scrolling.
            {undo.map(|u| any(view! { <p class="dialog-undo">{u}</p> }))}
            {(count > 0).then(|| any(view! {
                <ul class="dialog-lines">
                    {card_parts(&shown).into_iter().map(part_view).collect_view()}
                    {(more > 0).then(|| any(view! { <li class="more">{format!("and {more} more")}</li> }))}
                </ul>
            }))}
            {passkey.then(|| any(view! {
                <p class="dialog-passkey" data-testid="dialog-passkey">"Then your browser asks for your passkey."</p>
            }))}
        </div>
    })
}

/// A card's dialog that was open when the card was answered elsewhere (this card is drawn anew
/// with its outcome, and the dialog goes): the card says so rather than close it without a word.
pub(super) fn note_answered_elsewhere(pending: bool, state: CardState) {
    if !pending && state.dialog_open.get_untracked() {
        state.dialog_open.set(false);
        state.error.set(Some(
            "While you were confirming, this card was answered elsewhere (see below); nothing more was done here."
                .into(),
        ));
    }
}

/// The card's confirm dialog ([`ConfirmDialog`] in the card's words), drawn while the card's
/// `dialog_open` is set: its confirm approves through `respond`; Cancel closes it and gives
/// the focus back to the action button.
#[component]
pub(super) fn CardDialog(
    /// The dialog element's id.
    dialog_id: String,
    /// The card's action words.
    action: String,
    /// The card's lines.
    lines: Vec<String>,
    /// A destructive call.
    destructive: bool,
    /// A call that cannot be taken back once it runs.
    irreversible: bool,
    /// The undo sentence, if the call has one.
    undo: Option<String>,
    /// Approving needs the owner's passkey.
    passkey_required: bool,
    /// The card's interaction state (open, busy).
    state: CardState,
    /// The card's answer.
    respond: Callback<Decision>,
    /// The action button, which gets the focus back on close.
    action_ref: NodeRef<html::Button>,
) -> impl IntoView {
    let close_dialog = Callback::new(move |()| {
        state.dialog_open.set(false);
        if let Some(button) = action_ref.get_untracked() {
            let _ = button.focus();
        }
    });
    part(move || {
        state.dialog_open.get().then(|| {
            // The words and lines of what will run: only the ticked items where some are
            // unticked (super::choice).
            let (action, lines) = super::edit::dialog_terms(&action, state)
                .unwrap_or_else(|| super::choice::dialog_terms(&action, &lines, state));
            any(view! {
                <ConfirmDialog
                    dialog_id=dialog_id.clone()
                    action=action
                    lines=lines
                    destructive=destructive
                    irreversible=irreversible
                    undo=undo.clone()
                    busy=state.busy
                    on_cancel=close_dialog
                    on_confirm=Callback::new(move |()| respond.run(Decision::Approve))
                    passkey=passkey_required
                />
            })
        })
    })
}
