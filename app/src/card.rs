//! The approval card (DESIGN §2 "card"), the heart of the product: what the call will do, in
//! the owner's words, with the exact call behind a toggle; Reject in one tap; the action button
//! opens a centred confirm dialog that repeats the same words, and only its confirm approves.
//! After an answer the card shows the outcome: who answered, where, when, and what ran.
//!
//! [`ApprovalCard`] draws the card from its parts, one module each:
//! - `actions.rs`: Reject and the action button (the card's form before the page is live), and
//!   the answer they give;
//! - `choice.rs`: the card's lines, with a checkbox each where the owner may approve some of
//!   the items;
//! - `edit.rs`: "Edit" and its form, where the owner may change fields before approving;
//! - `dialog.rs`: the confirm dialog the action opens ([`dialog`], also `crate::dialog`) and
//!   the card's hold on it;
//! - `call.rs`: what the call does beyond the card's lines (its diff, the cards it repeats, the
//!   exact call);
//! - `origin.rs`: how the card came about (who asked, the turn's steps), open when a value on
//!   it came from outside;
//! - `outcome.rs`: an answered card's outcome;
//! - `reason.rs`: a rejected card's optional "Tell IRIS why", given after the tap;
//! - `undo.rs`: the undo sentence, then the undo button and what came back ([`undo`], also
//!   `crate::undo`);
//! - `focus.rs`: where the keyboard focus was in the card, put back after a live redraw.

mod actions;
mod call;
mod choice;
pub mod dialog;
pub(crate) mod edit;
mod focus;
mod origin;
mod outcome;
mod reason;
pub mod undo;

use iris_core::wire::{Approval, ApprovalKind, ApprovalStatus, Effect as CallEffect};
use leptos::html;
use leptos::prelude::*;

use crate::backend::Viewer;
use crate::format::{clip, format_time, outcome_tone, undo_sentence};
use crate::live::{clock_offset, is_live};
use crate::shape::{any, part, text};
use actions::CardActions;
use dialog::CardDialog;
pub use focus::CardFocus;
use undo::CardUndo;

/// A card's interaction state. It lives with the page, not the card view, so a live refetch
/// that redraws the card keeps an open dialog, a request in flight, an error and the keyboard
/// focus on screen.
#[derive(Clone, Copy, Debug)]
pub struct CardState {
    /// The confirm dialog is open.
    pub dialog_open: RwSignal<bool>,
    /// An answer is in flight: every answer button is disabled.
    pub busy: RwSignal<bool>,
    /// The last answer's error (e.g. already decided, expired), shown on the card.
    pub error: RwSignal<Option<String>>,
    /// The exact call is shown.
    pub show_call: RwSignal<bool>,
    /// Where the focus was in this card; `None` once it moved to something outside the card.
    pub focus: RwSignal<Option<CardFocus>>,
    /// Its "What happened" trail is open (a live refetch that redraws the card keeps it open).
    pub trail_open: RwSignal<bool>,
    /// The items the owner unticked (indices into the card's items, ascending): an approval
    /// keeps the others (docs/adr/0122-shaping-a-call.md). Empty: the whole card.
    pub left_out: RwSignal<Vec<usize>>,
    /// The edit form's fields as typed, one text per field of `card.editable` in its order,
    /// while the form is open; empty when the card is approved as pinned
    /// (docs/adr/0122-shaping-a-call.md).
    pub edits: RwSignal<Vec<String>>,
    /// The confirm dialog's lines for the reviewed edit, as the server worded them (each
    /// changed field against the model's version, the preview remade for the edited call);
    /// empty until "Review" found a change.
    pub review: RwSignal<Vec<String>>,
    /// The reviewed edit as the server will take it (a JSON object of the changed fields,
    /// [`crate::api::ReviewedEdit::edits`]): what approving sends; `None` when nothing is
    /// edited.
    pub edited: RwSignal<Option<String>>,
}

impl CardState {
    /// Closed, idle, no error.
    pub fn new() -> Self {
        CardState {
            dialog_open: RwSignal::new(false),
            busy: RwSignal::new(false),
            error: RwSignal::new(None),
            show_call: RwSignal::new(false),
            focus: RwSignal::new(None),
            trail_open: RwSignal::new(false),
            left_out: RwSignal::new(Vec::new()),
            edits: RwSignal::new(Vec::new()),
            review: RwSignal::new(Vec::new()),
            edited: RwSignal::new(None),
        }
    }
}

impl Default for CardState {
    fn default() -> Self {
        Self::new()
    }
}

/// A key that changes whenever what a card shows changes (for keyed lists): id, status,
/// execution, answer time (µs), undo state, resume error (length-prefixed, so no text can
/// pass for another field), then the result's JSON ([`crate::format::pretty_json`]). Written
/// without `{:?}`: Debug formatting of times, texts and JSON values would compile chrono's,
/// `str`'s and floats' Debug code into the browser's wasm for nothing but a key.
pub fn card_key(approval: &Approval) -> String {
    let error = approval.resume_error.as_deref().unwrap_or_default();
    // A rejection's reason may arrive after the decision (docs/adr/0125-reason-after-reject.md).
    let reason = approval.reason.as_deref().unwrap_or_default();
    let mut key = format!(
        "{}|{}|{}|{}|{}|{}:{error}|{}:{reason}|",
        approval.id,
        approval.status.as_str(),
        approval.execution.as_str(),
        approval.responded_at.map_or(0, |t| t.timestamp_micros()),
        approval.undo.as_ref().map_or("", |u| u.state.as_str()),
        error.len(),
        reason.len(),
    );
    if let Some(result) = &approval.result {
        key.push_str(&crate::format::pretty_json(result));
    }
    key
}

/// The card the owner last answered on this page ([`crate::PageState::answered_here`]): it takes the
/// highlight from the card the page was opened on.
#[derive(Clone, Copy, Debug)]
pub struct AnsweredHere(pub RwSignal<Option<String>>);

/// One approval card. `focused` highlights it (the `/activity/:id` target); `state` defaults
/// to a fresh [`CardState`].
#[component]
pub fn ApprovalCard(
    /// The row to show.
    approval: Approval,
    /// Who is looking; without `can_answer` there are no answer buttons.
    viewer: Viewer,
    /// Highlight this card.
    #[prop(optional)]
    focused: bool,
    /// Interaction state kept by the page.
    #[prop(optional)]
    state: Option<CardState>,
) -> impl IntoView {
    let state = state.unwrap_or_default();
    let live = is_live();
    let offset = clock_offset();

    let id = approval.id.clone();
    let card = approval.card.clone();
    let (asker, asked) = approval.asked();
    let asked_clipped = asked.chars().count() > ASKED_SHOWN;
    let asked_shown = clip(&asked, ASKED_SHOWN);
    let destructive = card.effect == CallEffect::Destructive;
    let acts_for_you = approval.kind == ApprovalKind::PinnedWrite;
    let evaluator = approval.kind == ApprovalKind::Evaluator;
    let pending = approval.status == ApprovalStatus::Pending;
    let answerable = pending && viewer.can_answer;
    let status = approval.status.as_str();
    // A failed, stale or unknown execution must not look like a success.
    let tone = outcome_tone(&approval);
    // A read device only watches: the card waits for the owner's answer, not for it.
    let badge_label = if pending && !viewer.can_answer {
        "Waiting for an answer"
    } else {
        crate::format::badge_label(&approval)
    };
    let title_id = format!("card-{id}-title");
    let dialog_id = format!("card-{id}-dialog");

    let answered_here = crate::PageState::current().map(|state| state.answered_here);
    dialog::note_answered_elsewhere(pending, state);
    // ADR-0118 decision 4: approving this card needs the owner's passkey, asked for by the
    // browser after the confirm step; rejecting never does.
    let passkey_required = approval.passkey_required;
    // The owner may approve some of the items once the page is live (choice.rs).
    let choosable = answerable && approval.narrowable();
    let item_count = if choosable { approval.items.len() } else { 0 };
    let respond = actions::answer(
        id.clone(),
        passkey_required,
        item_count,
        state,
        answered_here,
    );
    let editable = answerable && !card.editable.is_empty();

    let action_ref: NodeRef<html::Button> = NodeRef::new();
    let reject_ref: NodeRef<html::Button> = NodeRef::new();
    let card_ref: NodeRef<html::Article> = NodeRef::new();
    let (on_focusin, on_focusout) = focus::keep_focus(state, card_ref, action_ref, reject_ref);

    let undo = undo_sentence(&card);
    // A call with no undo tool that acts for the owner (a mail to send) cannot be taken back:
    // the card and its dialog say so, as a destructive one says it deletes data.
    let irreversible = acts_for_you && card.undo_tool.is_none();
    let (undo_line, no_undo_line) = undo::undo_lines(&approval, undo.clone(), irreversible);
    let expires_at = approval.expires_at;
    let created_at = approval.created_at;

    let badges = any(view! {
        <div class="card-badges">
            {destructive.then(|| any(view! { <span class="badge badge-danger" data-testid="badge-deletes">"Deletes data"</span> }))}
            {acts_for_you.then(|| any(view! { <span class="badge badge-acts" data-testid="badge-acts">"Acts for you"</span> }))}
            {evaluator.then(|| any(view! { <span class="badge badge-review">"Paused for review"</span> }))}
            <span class=format!("badge badge-status status-{status} tone-{}", tone.as_str()) data-testid="card-status">
                {badge_label}
            </span>
        </div>
    });

    let lines = choice::lines_view(&approval, choosable, state, live);

    let preview = call::preview_view(&card);
    let overlaps = call::overlaps_view(&card, pending, offset);
    let exact_call = call::exact_call_view(&approval, state);
    let origin = origin::origin_view(&card);

    let timing = if pending {
        // A waiting card says when it was asked as well as until when it waits.
        any(view! {
            <p class="card-time" data-testid="card-time">
                "Asked "
                <time datetime=created_at.to_rfc3339()>{text(move || format_time(created_at, offset.get()))}</time>
                " · expires "
                <time datetime=expires_at.to_rfc3339()>{text(move || format_time(expires_at, offset.get()))}</time>
            </p>
        })
    } else {
        any(view! {
            <p class="card-time">
                "Asked "
                <time datetime=created_at.to_rfc3339()>{text(move || format_time(created_at, offset.get()))}</time>
            </p>
        })
    };

    let edit_part =
        editable.then(|| any(view! { <edit::CardEdit approval=approval.clone() state live/> }));
    let actions = if answerable {
        Some(any(view! {
            <CardActions
                approval_id=approval.id.clone()
                action=card.action.clone()
                lines=card.lines.clone()
                destructive
                irreversible
                undo=undo.clone()
                passkey_required
                item_count
                state
                respond
                live
                action_ref
                reject_ref
            />
        }))
    } else if pending {
        Some(any(
            view! { <p class="view-only" data-testid="view-only">"This device can only view."</p> },
        ))
    } else {
        None
    };

    let outcome = (!pending).then(|| outcome::outcome_view(&approval, offset));
    let reason_part = (!pending).then(|| {
        any(view! { <reason::CardReason approval=approval.clone() viewer=viewer.clone() state live/> })
    });
    let undo_part = (!pending).then(|| {
        any(view! { <CardUndo approval=approval.clone() viewer=viewer.clone() state=state /> })
    });
    let trail = (!pending).then(|| {
        any(view! {
            <crate::trail::CardTrail approval_id=id.clone() open=state.trail_open/>
        })
    });

    let dialog = answerable.then(|| {
        any(view! {
            <CardDialog
                dialog_id
                action=card.action.clone()
                lines=card.lines.clone()
                destructive
                irreversible
                undo=undo.clone()
                passkey_required
                state
                respond
                action_ref
            />
        })
    });

    // The highlight: the card the page was opened on, until the owner answers another here.
    let highlighted = {
        let id = id.clone();
        move || match answered_here.map(|a| a.0.get()) {
            Some(Some(answered)) => answered == id,
            _ => focused,
        }
    };
    let class_base = format!(
        "card status-{status} tone-{}{}",
        tone.as_str(),
        if destructive {
            " card-destructive"
        } else {
            " card-write"
        },
    );
    let class = text(move || {
        if highlighted() {
            format!("{class_base} focused")
        } else {
            class_base.clone()
        }
    });

    let labelled_by = title_id.clone();
    any(view! {
        <article
            class=class
            id=format!("card-{id}")
            data-testid=format!("card-{id}")
            data-status=status
            data-outcome=tone.as_str()
            aria-labelledby=labelled_by
            tabindex="-1"
            node_ref=card_ref
            on:focusin=on_focusin
            on:focusout=on_focusout
        >
            <header class="card-head">
                {badges}
                <h3 class="card-title" id=title_id>{card.title.clone()}</h3>
            </header>
            {lines}
            {preview}
            {overlaps}
            {undo_line}
            {no_undo_line}
            <p class="card-asked" data-testid="card-asked">
                <span class="label">{format!("{asker}: ")}</span>
                // Isolated: a text-direction control in what was asked (an unclosed U+202E)
                // must not carry past the request into the closing quote or the card.
                <q><bdi>{asked_shown}</bdi></q>
            </p>
            // A long request is quoted in part, so the card's buttons stay near its title; the
            // whole of it is one tap away.
            {asked_clipped.then(|| any(view! {
                <details class="card-asked-all" data-testid="card-asked-all">
                    <summary>"Show the whole request"</summary>
                    <p class="card-asked-full">{asked.clone()}</p>
                </details>
            }))}
            {origin}
            {exact_call}
            {timing}
            {edit_part}
            {actions}
            {part(move || {
                state.error.get().map(|e| any(view! { <p class="card-error" role="alert" data-testid="card-error">{e}</p> }))
            })}
            {outcome}
            {reason_part}
            {undo_part}
            {trail}
            {dialog}
        </article>
    })
}

/// How many characters of the request a card quotes before "Show the whole request".
const ASKED_SHOWN: usize = 280;

#[cfg(all(test, feature = "ssr"))]
mod tests;
