//! The approval card (DESIGN §2 "card"), the heart of the product: what the call will do, in
//! the owner's words, with the exact call behind a toggle; Reject in one tap; the action button
//! opens a centred confirm dialog that repeats the same words, and only its confirm approves.
//! After an answer the card shows the outcome: who answered, where, when, and what ran.

use iris_core::wire::{
    Approval, ApprovalKind, ApprovalStatus, Decision, Effect as CallEffect, Execution,
};
use leptos::html;
use leptos::prelude::*;
use leptos::tachys::html::attribute::custom::CustomAttribute;

use crate::api::respond_approval;
use crate::backend::Viewer;
use crate::card_form::{form_dialog_id, FormConfirm, ANSWER_URL};
use crate::dialog::{part_view, ConfirmDialog};
use crate::format::{
    card_parts, clip, exact_args, format_time, outcome_tone, overlap_line_text, overlap_lines,
    undo_sentence,
};
use crate::live::{clock_offset, is_live, Live};

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
    let mut key = format!(
        "{}|{}|{}|{}|{}|{}:{error}|",
        approval.id,
        approval.status.as_str(),
        approval.execution.as_str(),
        approval.responded_at.map_or(0, |t| t.timestamp_micros()),
        approval.undo.as_ref().map_or("", |u| u.state.as_str()),
        error.len(),
    );
    if let Some(result) = &approval.result {
        key.push_str(&crate::format::pretty_json(result));
    }
    key
}

/// One approval card. `focused` highlights it (the `/activity/:id` target); `state` defaults
/// to a fresh [`CardState`].
/// The card the owner last answered on this page (provided by the page): it takes the
/// highlight from the card the page was opened on.
#[derive(Clone, Copy, Debug)]
pub struct AnsweredHere(pub RwSignal<Option<String>>);

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

    let live_ctx = use_context::<Live>();
    let answered_here = use_context::<AnsweredHere>();
    // Its dialog was open when the card was answered elsewhere (this card is drawn anew with
    // its outcome, and the dialog goes): say so rather than close it without a word.
    if !pending && state.dialog_open.get_untracked() {
        state.dialog_open.set(false);
        state.error.set(Some(
            "While you were confirming, this card was answered elsewhere (see below); nothing more was done here."
                .into(),
        ));
    }
    // ADR-0118 decision 4: approving this card needs the owner's passkey, asked for by the
    // browser after the confirm step; rejecting never does.
    let passkey_required = approval.passkey_required;
    let respond = {
        let id = id.clone();
        Callback::new(move |decision: Decision| {
            if state.busy.get_untracked() {
                return;
            }
            state.busy.set(true);
            state.error.set(None);
            let id = id.clone();
            leptos::task::spawn_local(async move {
                let answer = if passkey_required && decision == Decision::Approve {
                    crate::passkeys::approve_with_passkey(&id, None).await
                } else {
                    respond_approval(id.clone(), decision, None)
                        .await
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                };
                state.busy.try_set(false);
                state.dialog_open.try_set(false);
                match answer {
                    Ok(_) => {
                        if let Some(answered) = answered_here {
                            answered.0.try_set(Some(id));
                        }
                    }
                    Err(error) => {
                        state.error.try_set(Some(error));
                    }
                }
                if let Some(live) = live_ctx {
                    live.bump();
                }
            });
        })
    };

    let action_ref: NodeRef<html::Button> = NodeRef::new();
    let reject_ref: NodeRef<html::Button> = NodeRef::new();
    let card_ref: NodeRef<html::Article> = NodeRef::new();
    let close_dialog = Callback::new(move |()| {
        state.dialog_open.set(false);
        if let Some(button) = action_ref.get_untracked() {
            let _ = button.focus();
        }
    });

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
    Effect::new(move |_| {
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

    let undo = undo_sentence(&card);
    // A call with no undo tool that acts for the owner (a mail to send) cannot be taken back:
    // the card and its dialog say so, as a destructive one says it deletes data.
    let irreversible = acts_for_you && card.undo_tool.is_none();
    // The undo sentence matters while the call may still run or after it ran, not after a "no".
    // Once the card's undo was asked for, its own line says what came back instead. Not when
    // the outcome is unknown either: "you can restore these" would say it ran (DESIGN §8
    // fail closed: unknown is neither done nor not done).
    let undo_applies = approval.undo.is_none()
        && (pending
            || (approval.status == ApprovalStatus::Approved
                && !matches!(approval.execution, Execution::Failed | Execution::Unknown)));
    let args = exact_args(&approval);
    let expires_at = approval.expires_at;
    let created_at = approval.created_at;

    let badges = view! {
        <div class="card-badges">
            {destructive.then(|| view! { <span class="badge badge-danger" data-testid="badge-deletes">"Deletes data"</span> })}
            {acts_for_you.then(|| view! { <span class="badge badge-acts" data-testid="badge-acts">"Acts for you"</span> })}
            {evaluator.then(|| view! { <span class="badge badge-review">"Paused for review"</span> })}
            <span class=format!("badge badge-status status-{status} tone-{}", tone.as_str()) data-testid="card-status">
                {badge_label}
            </span>
        </div>
    }
    .into_any();

    let lines = (!card.lines.is_empty()).then(|| {
        view! {
            <ul class="card-lines" data-testid="card-lines">
                {card_parts(&card.lines).into_iter().map(part_view).collect_view()}
            </ul>
        }
    });

    // What will change (a file write's diff), line by line, coloured by its +/- mark.
    let preview = (!card.preview.is_empty()).then(|| {
        view! {
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
                        view! { <span class=class>{line.clone()}"\n"</span> }
                    })
                    .collect_view()}
            </pre>
        }
    });

    // Other cards this one repeats, as they stood when it was made: said before anyone
    // approves, so the same change is not approved twice (docs/liveness.md "a card says what
    // it repeats").
    let overlaps = (pending && !card.overlaps.is_empty()).then(|| {
        let lines = overlap_lines(&card.overlaps);
        view! {
            <ul class="card-overlaps" data-testid="card-overlaps" role="note">
                {lines
                    .into_iter()
                    .map(|line| {
                        let at = line.overlap.at;
                        view! { <li>{move || overlap_line_text(&line, &format_time(at, offset.get()))}</li> }
                    })
                    .collect_view()}
            </ul>
        }
    });

    let call_ref: NodeRef<leptos::html::Details> = NodeRef::new();
    crate::toggle::keep_in_step(call_ref, state.show_call);
    let exact_call = view! {
        <details
            class="exact-call"
            node_ref=call_ref
            on:toggle=move |ev| state.show_call.set(crate::toggle::open_of(&ev))
        >
            <summary data-testid="exact-call-toggle">
                {move || if state.show_call.get() { "Hide exact call" } else { "Show exact call" }.to_owned()}
            </summary>
            <div class="exact-call-body" data-testid="exact-call">
                <p class="exact-tool"><span class="label">"Tool "</span><code>{approval.tool.clone()}</code></p>
                <pre class="exact-args"><code>{args}</code></pre>
                <p class="exact-hash"><span class="label">"Call hash "</span><code>{approval.call_hash.clone()}</code></p>
            </div>
        </details>
    }
    .into_any();

    let timing = if pending {
        view! {
            <p class="card-time">
                "Expires "
                <time datetime=expires_at.to_rfc3339()>{move || format_time(expires_at, offset.get())}</time>
            </p>
        }
        .into_any()
    } else {
        view! {
            <p class="card-time">
                "Asked "
                <time datetime=created_at.to_rfc3339()>{move || format_time(created_at, offset.get())}</time>
            </p>
        }
        .into_any()
    };

    let actions = if answerable {
        let action_words = card.action.clone();
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
                disabled=move || state.busy.get() || (!live.get() && !form_ready)
                on:click=move |_| state.dialog_open.set(true)
            >
                {action_words}
            </button>
        }
        .attr("command", move || {
            (form_ready && !live.get()).then(|| "show-modal".to_owned())
        })
        .attr("commandfor", {
            let dialog = form_dialog_id(&id);
            move || (form_ready && !live.get()).then(|| dialog.clone())
        });
        Some(
            view! {
                {passkey_required.then(|| view! {
                    <p class="card-passkey" data-testid="passkey-note">
                        "Approving needs your passkey: your browser asks for it after you confirm."
                    </p>
                })}
                <form class="card-actions" method="post" action=ANSWER_URL>
                    <input type="hidden" name="id" value=approval.id.clone()/>
                    <button
                        type="submit"
                        name="decision"
                        value="reject"
                        class="btn btn-quiet"
                        data-testid="reject-button"
                        node_ref=reject_ref
                        disabled=move || state.busy.get()
                        on:click=move |ev| {
                            ev.prevent_default();
                            respond.run(Decision::Reject);
                        }
                    >
                        "Reject"
                    </button>
                    {action_button}
                </form>
                {form_ready.then(|| view! {
                    <FormConfirm
                        approval_id=approval.id.clone()
                        action=card.action.clone()
                        lines=card.lines.clone()
                        destructive
                        irreversible
                        undo=undo.clone()
                        live
                    />
                })}
            }
            .into_any(),
        )
    } else if pending {
        Some(
            view! { <p class="view-only" data-testid="view-only">"This device can only view."</p> }
                .into_any(),
        )
    } else {
        None
    };

    let outcome = (!pending).then(|| outcome::outcome_view(&approval, offset));
    let undo_part = (!pending).then(|| {
        view! { <crate::undo::CardUndo approval=approval.clone() viewer=viewer.clone() state=state /> }
    });
    let trail = (!pending).then(|| {
        view! {
            <crate::trail::CardTrail approval_id=id.clone() open=state.trail_open/>
        }
    });

    let dialog = answerable.then(|| {
        let action = card.action.clone();
        let lines = card.lines.clone();
        let undo = undo.clone();
        move || {
            state.dialog_open.get().then(|| {
                view! {
                    <ConfirmDialog
                        dialog_id=dialog_id.clone()
                        action=action.clone()
                        lines=lines.clone()
                        destructive=destructive
                        irreversible=irreversible
                        undo=undo.clone()
                        busy=state.busy.into()
                        on_cancel=close_dialog
                        on_confirm=Callback::new(move |()| respond.run(Decision::Approve))
                        passkey=passkey_required
                    />
                }
            })
        }
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
    let class = move || {
        if highlighted() {
            format!("{class_base} focused")
        } else {
            class_base.clone()
        }
    };

    let labelled_by = title_id.clone();
    view! {
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
            {undo.clone().filter(|_| undo_applies).map(|u| view! { <p class="card-undo" data-testid="card-undo">{u}</p> })}
            {(irreversible && pending).then(|| view! {
                <p class="card-no-undo" data-testid="card-no-undo">"Once it runs, this cannot be taken back."</p>
            })}
            <p class="card-asked" data-testid="card-asked">
                <span class="label">{format!("{asker}: ")}</span>
                <q>{asked_shown}</q>
            </p>
            // A long request is quoted in part, so the card's buttons stay near its title; the
            // whole of it is one tap away.
            {asked_clipped.then(|| view! {
                <details class="card-asked-all" data-testid="card-asked-all">
                    <summary>"Show the whole request"</summary>
                    <p class="card-asked-full">{asked.clone()}</p>
                </details>
            })}
            {exact_call}
            {timing}
            {actions}
            {move || {
                state.error.get().map(|e| view! { <p class="card-error" role="alert" data-testid="card-error">{e}</p> }.into_any())
            }}
            {outcome}
            {undo_part}
            {trail}
            {dialog}
        </article>
    }
    .into_any()
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

/// How many characters of the request a card quotes before "Show the whole request".
const ASKED_SHOWN: usize = 280;

mod outcome;

#[cfg(all(test, feature = "ssr"))]
mod tests;
