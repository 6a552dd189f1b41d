//! The card's own HTML form: how a card is answered before the page's wasm has arrived.
//!
//! On a slow phone the server's HTML is on screen seconds before the browser has the wasm that
//! makes the page live (BENCHMARKS.md, Fast 3G: 1.3 s against 3 s). Until then a card's Reject
//! button submits the card's form, and its action button opens [`FormConfirm`], a native
//! `<dialog>` (the `command="show-modal"` invoker: no script) with the same words as the live
//! confirm dialog, whose confirm submits the form with `decision=approve`. The form
//! posts to [`answer_card`](crate::api::answer_card), which answers through the same backend
//! call as the live page and sends the browser to the card's page, where its outcome shows.
//! Once hydrated, the buttons answer in place as before (their handlers stop the form) and the
//! form dialog goes, unless the owner has it open (then its form still answers).
//!
//! The undo button of an executed card works the same way: it submits the card's undo form
//! ([`UNDO_URL`], [`undo_card`](crate::api::undo_card)).
//!
//! A card whose approval needs the owner's passkey keeps its action button off until the page
//! is live: the passkey step needs the script (ADR-0118 decision 4).

use leptos::html;
use leptos::prelude::*;

use crate::dialog::DialogWords;

/// Where the card's form posts: the [`answer_card`](crate::api::answer_card) server function.
pub const ANSWER_URL: &str = "/ui/answer_card";

/// Where the card's undo form posts: the [`undo_card`](crate::api::undo_card) server function.
pub const UNDO_URL: &str = "/ui/undo_card";

/// The card's page after a form answer: `/activity/{id}`, with `?refused=<sentence>`
/// (percent-encoded) when the answer was refused.
pub fn card_path(id: &str, refused: Option<&str>) -> String {
    let id = encode(id);
    match refused {
        Some(sentence) => format!("/activity/{id}?refused={}", encode(sentence)),
        None => format!("/activity/{id}"),
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters (a query value or a path
/// segment).
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The id of a card's form dialog (the action button's `commandfor`).
pub fn form_dialog_id(approval_id: &str) -> String {
    format!("card-{approval_id}-form-dialog")
}

/// The form confirm dialog of one card: a native modal `<dialog>` (opened by the action
/// button's `command="show-modal"` before the page is live) with the card's words
/// ([`DialogWords`]), Cancel (closes it, sends nothing) and the confirm button, which posts
/// `id` and `decision=approve` to [`ANSWER_URL`]. Drawn while the page is not live, and after
/// that only while the owner has it open: a live page confirms with its own dialog.
#[component]
pub(crate) fn FormConfirm(
    /// The approval row's id.
    approval_id: String,
    /// The card's action words ("Trash 5 emails").
    action: String,
    /// The card's lines.
    lines: Vec<String>,
    /// A destructive call.
    destructive: bool,
    /// A call that cannot be taken back once it runs.
    irreversible: bool,
    /// The card's undo sentence, if any.
    undo: Option<String>,
    /// Whether the page is live (hydrated).
    live: Signal<bool>,
) -> impl IntoView {
    let dialog_ref: NodeRef<html::Dialog> = NodeRef::new();
    // Read when the page goes live: a dialog the owner opened before keeps its place.
    let open_now = move || dialog_ref.get_untracked().is_some_and(|d| d.open());
    move || {
        (!live.get() || open_now()).then(|| {
            let dialog_id = form_dialog_id(&approval_id);
            let title_id = format!("{dialog_id}-title");
            let desc_id = format!("{dialog_id}-desc");
            let (labelled_by, described_by) = (title_id.clone(), desc_id.clone());
            view! {
                <dialog
                    class="dialog dialog-form"
                    class:dialog-danger=destructive
                    id=dialog_id
                    aria-labelledby=labelled_by
                    aria-describedby=described_by
                    data-testid="form-dialog"
                    node_ref=dialog_ref
                >
                    <h2 class="dialog-title" id=title_id>{format!("{action}?")}</h2>
                    <DialogWords
                        desc_id
                        lines=lines.clone()
                        destructive
                        irreversible
                        undo=undo.clone()
                        passkey=false
                    />
                    <form class="dialog-actions" method="post" action=ANSWER_URL>
                        <input type="hidden" name="id" value=approval_id.clone()/>
                        <button
                            type="submit"
                            class="btn btn-quiet"
                            formmethod="dialog"
                            data-testid="form-dialog-cancel"
                            autofocus
                        >
                            "Cancel"
                        </button>
                        <button
                            type="submit"
                            name="decision"
                            value="approve"
                            class=if destructive { "btn btn-danger" } else { "btn btn-primary" }
                            data-testid="form-dialog-confirm"
                        >
                            {action.clone()}
                        </button>
                    </form>
                </dialog>
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_travels_percent_encoded_in_the_cards_path() {
        assert_eq!(card_path("a-1", None), "/activity/a-1");
        assert_eq!(
            card_path("a-1", Some("Already answered: 100% \u{201c}no\u{201d}")),
            "/activity/a-1?refused=Already%20answered%3A%20100%25%20%E2%80%9Cno%E2%80%9D"
        );
        assert_eq!(card_path("a/b?c", None), "/activity/a%2Fb%3Fc");
    }
}
