//! The card's own HTML form: how a card is answered before the page's wasm has arrived.
//!
//! On a slow phone the server's HTML is on screen seconds before the browser has the wasm that
//! makes the page live (BENCHMARKS.md, Fast 3G: 1.3 s against 3 s). Until then a card's Reject
//! button submits the card's form, and its action button opens [`FormConfirm`], a native
//! `<dialog>` (the `command="show-modal"` invoker: no script) with the same words as the live
//! confirm dialog, whose confirm submits the form with `decision=approve`. The form
//! posts to [`ANSWER_URL`], which the server answers (its `card_form` module) through the same
//! backend call as the live page, then sends the browser to the card's page ([`card_path`]),
//! where its outcome shows, and a refusal once ([`refusal_cookie`]).
//! Once hydrated, the buttons answer in place as before (their handlers stop the form) and the
//! form dialog goes, unless the owner has it open (then its form still answers).
//!
//! The undo button of an executed card works the same way: it submits the card's undo form
//! ([`UNDO_URL`]).
//!
//! A card whose approval needs the owner's passkey keeps its action button off until the page
//! is live: the passkey step needs the script (ADR-0118 decision 4).

use leptos::html;
use leptos::prelude::*;

use crate::dialog::DialogWords;
use crate::shape::{any, part};

/// Where the card's form posts (`id`, `decision`: `approve` or `reject`, url-encoded).
pub const ANSWER_URL: &str = "/ui/answer_card";

/// Where the card's undo form posts (`id`, url-encoded).
pub const UNDO_URL: &str = "/ui/undo_card";

/// The card's page after a form answer: `/activity/{id}`, the id percent-encoded as one path
/// segment. A refusal does not travel in the address (anyone can write an address, so words
/// there could be anybody's): it goes in [`refusal_cookie`], which only this server sets.
pub fn card_path(id: &str) -> String {
    format!(
        "/activity/{}",
        percent_encoding::utf8_percent_encode(id, UNRESERVED_KEPT)
    )
}

/// Where a form answer sends the browser: [`card_path`] with the card as its fragment
/// (`#card-{id}`, the card's element id), so the page opens on the card that was answered,
/// not at the top of Activity, also after a refusal.
pub fn card_answer_path(id: &str) -> String {
    format!(
        "{}#card-{}",
        card_path(id),
        percent_encoding::utf8_percent_encode(id, UNRESERVED_KEPT)
    )
}

/// Everything but RFC 3986's unreserved characters is escaped (a path segment, a cookie value).
const UNRESERVED_KEPT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The cookie that carries a refused form answer's sentence to the card's page, once: set by the
/// server's form handler with the redirect, read while that card's page renders
/// ([`refusal_for`]), cleared by the server on that page's response. Only this server can set
/// it (a cookie of this site, `HttpOnly`), so the words on the card are the server's own.
#[cfg(feature = "ssr")]
pub const REFUSAL_COOKIE: &str = "iris_refused";

/// How long a refusal waits for its card's page to be loaded (seconds): the redirect follows at
/// once; a page opened later should not show an old refusal.
#[cfg(feature = "ssr")]
const REFUSAL_MAX_AGE_SECS: u32 = 60;

/// The `Set-Cookie` value that carries `sentence` (why the form answer of card `id` was
/// refused) to that card's page: `iris_refused=<id>&<sentence>`, each percent-encoded, for
/// `/activity` pages only, a minute at most, `HttpOnly`, `SameSite=Strict`, `Secure` when the
/// server is reached over https.
#[cfg(feature = "ssr")]
pub fn refusal_cookie(id: &str, sentence: &str, secure: bool) -> String {
    use percent_encoding::utf8_percent_encode;
    format!(
        "{REFUSAL_COOKIE}={}&{}; Path=/activity; Max-Age={REFUSAL_MAX_AGE_SECS}; HttpOnly; SameSite=Strict{}",
        utf8_percent_encode(id, UNRESERVED_KEPT),
        utf8_percent_encode(sentence, UNRESERVED_KEPT),
        if secure { "; Secure" } else { "" }
    )
}

/// The `Set-Cookie` value that removes [`REFUSAL_COOKIE`]: sent with the page that showed it,
/// so a reload does not show the refusal again.
#[cfg(feature = "ssr")]
pub fn refusal_cookie_cleared(secure: bool) -> String {
    format!(
        "{REFUSAL_COOKIE}=; Path=/activity; Max-Age=0; HttpOnly; SameSite=Strict{}",
        if secure { "; Secure" } else { "" }
    )
}

/// The refusal a request's cookies carry for card `id` ([`refusal_cookie`]); `None` when there
/// is none, it is for another card, or it cannot be read.
#[cfg(feature = "ssr")]
pub fn refusal_for(headers: &axum::http::HeaderMap, id: &str) -> Option<String> {
    let decode = |text: &str| {
        percent_encoding::percent_decode_str(text)
            .decode_utf8()
            .ok()
            .map(|t| t.into_owned())
    };
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().strip_prefix(REFUSAL_COOKIE)?.strip_prefix('='))
        .filter_map(|value| value.split_once('&'))
        .find(|(card, _)| decode(card).as_deref() == Some(id))
        .and_then(|(_, sentence)| decode(sentence))
        .filter(|sentence| !sentence.is_empty())
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
    live: RwSignal<bool>,
) -> impl IntoView {
    let dialog_ref: NodeRef<html::Dialog> = NodeRef::new();
    // Read when the page goes live: a dialog the owner opened before keeps its place.
    let open_now = move || dialog_ref.get_untracked().is_some_and(|d| d.open());
    part(move || {
        (!live.get() || open_now()).then(|| {
            let dialog_id = form_dialog_id(&approval_id);
            let title_id = format!("{dialog_id}-title");
            let desc_id = format!("{dialog_id}-desc");
            let (labelled_by, described_by) = (title_id.clone(), desc_id.clone());
            any(view! {
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
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cards_path_holds_its_id_as_one_segment() {
        assert_eq!(card_path("a-1.b_~"), "/activity/a-1.b_~");
        assert_eq!(card_path("a/b?c"), "/activity/a%2Fb%3Fc");
        assert_eq!(card_answer_path("a/b"), "/activity/a%2Fb#card-a%2Fb");
        assert_eq!(
            crate::page::Page::from_path(&card_path("a/b?c \u{201c}")),
            crate::page::Page::Activity(Some("a/b?c \u{201c}".into()))
        );
    }

    #[cfg(feature = "ssr")]
    #[test]
    fn a_refusal_reaches_only_its_own_cards_page() {
        use axum::http::{header::COOKIE, HeaderMap, HeaderValue};
        let sentence = "Already answered: 100% \u{201c}no\u{201d}; by phone";
        let set = refusal_cookie("a-1", sentence, true);
        assert!(set.ends_with("; Path=/activity; Max-Age=60; HttpOnly; SameSite=Strict; Secure"));
        // The browser sends back the part before the first `;`.
        let sent = set.split(';').next().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(
            COOKIE,
            HeaderValue::from_str(&format!("id=x; {sent}; other=1")).unwrap(),
        );
        assert_eq!(refusal_for(&headers, "a-1").as_deref(), Some(sentence));
        assert_eq!(refusal_for(&headers, "a-2"), None);
        assert_eq!(refusal_for(&HeaderMap::new(), "a-1"), None);
        assert!(refusal_cookie_cleared(false).contains("Max-Age=0"));
    }
}
