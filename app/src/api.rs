//! Server functions: what the pages ask the server. Each one identifies the viewer from the
//! request headers through [`AppBackend::viewer`](crate::backend::AppBackend) and calls the
//! backend the server provided in context. They are registered automatically by
//! `leptos_axum`'s `leptos_routes_with_context` under the prefix `/ui` (POST, JSON bodies; the
//! answers are JSON too, read in the browser as [`TextJson`](crate::codec::TextJson) says).
//!
//! Reads need any signed-in viewer; answering and chatting need `can_answer`.

use iris_core::wire::{
    Approval, ChatResponse, Conversation, Decision, DeviceInfo, DeviceScope, PairingOffer,
    PluginList,
};
use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use serde::{Deserialize, Serialize};

use crate::backend::Viewer;
use crate::codec::TextJson;
use crate::error::AppError;

/// What the Activity page shows: who is looking and the cards.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ActivitySnapshot {
    /// The signed-in viewer (decides whether answer buttons show).
    pub viewer: Viewer,
    /// The cards waiting for the owner, oldest first.
    pub pending: Vec<Approval>,
    /// The newest page of answered (or lapsed) cards, newest first; the `/activity/:id` card
    /// first when it is older than the page.
    pub answered: Vec<Approval>,
    /// The cursor of the next older page ([`older_approvals`]), or `None` when this is all.
    pub older: Option<String>,
    /// The newest writes that ran without a card (`trash_category`), newest first: each a
    /// line of the history with how to undo it, worded by the server
    /// ([`crate::activity::action_line`]): the browser reads no audit entries.
    #[serde(default)]
    pub actions: Vec<crate::trail::TrailLine>,
    /// The `/activity/:id` id when no card has it.
    pub missing: Option<String>,
    /// Why the card's own form answer for the `/activity/:id` card was refused, read from
    /// the server's one-time cookie (`card_form::refusal_for`) while that page renders; shown
    /// on that card.
    #[serde(default)]
    pub refused: Option<String>,
    /// Why Web Push is off on this server, or `None` when it is on ([`crate::push::PushControl`]).
    #[serde(default)]
    pub push_off: Option<String>,
    /// The filters `answered` and `older` were read with, in words (`“invoice”, rejected`;
    /// empty when none is set): the page words an empty result with them.
    #[serde(default)]
    pub filter_words: String,
    /// A sentence for each value of the query the filters left out, and for a tool that makes
    /// no cards here ([`crate::activity::filters::HistoryFilter::from_query`]).
    #[serde(default)]
    pub filter_notes: Vec<String>,
    /// The history's search form as HTML, drawn with these filters
    /// ([`crate::activity::filter_form`]), when asked for (the page's first load).
    #[serde(default)]
    pub filter_form: Option<String>,
}

impl ActivitySnapshot {
    /// Every card the snapshot holds.
    pub fn cards(&self) -> impl Iterator<Item = &Approval> {
        self.pending.iter().chain(&self.answered)
    }
}

/// What the Devices page shows: who is looking and every live device.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct DevicesSnapshot {
    /// The signed-in viewer (decides whether revoke and pairing show).
    pub viewer: Viewer,
    /// Live devices by name; `this_device` marks the viewer's own.
    pub devices: Vec<DeviceInfo>,
    /// Why Web Push is off on this server, or `None` when it is on ([`crate::push::PushControl`]).
    #[serde(default)]
    pub push_off: Option<String>,
}

#[cfg(feature = "ssr")]
pub(crate) mod on_server {
    use std::sync::Arc;

    use leptos::prelude::*;

    use crate::backend::{AppBackend, Viewer};
    use crate::error::AppError;

    /// The request's parts: leptos_axum provides them (headers, and the session the server's
    /// session layer put in the extensions) to every render and server function.
    pub fn request() -> Result<axum::http::request::Parts, AppError> {
        use_context::<axum::http::request::Parts>().ok_or_else(|| {
            AppError::Backend("The IRIS server did not provide the request to the app.".into())
        })
    }

    /// The backend and the signed-in viewer of this request.
    pub async fn signed_in() -> Result<(Arc<dyn AppBackend>, Viewer), AppError> {
        let backend = use_context::<Arc<dyn AppBackend>>().ok_or_else(|| {
            AppError::Backend("The IRIS server did not provide its backend to the app.".into())
        })?;
        let request = request()?;
        match backend.viewer(&request).await {
            Some(viewer) => Ok((backend, viewer)),
            None => Err(with_status(AppError::NotPaired)),
        }
    }

    /// Gives a refusal its HTTP status (401 not paired, 403 view only) instead of the 500 a
    /// server function's error gets by default: the browser then logs what it is, not a
    /// server failure, and scripts can tell the cases apart (DESIGN §7 uses the same codes).
    pub fn with_status(error: AppError) -> AppError {
        let status = match error {
            AppError::NotPaired => axum::http::StatusCode::UNAUTHORIZED,
            AppError::ViewOnly => axum::http::StatusCode::FORBIDDEN,
            AppError::Backend(_) | AppError::Transport(_) => return error,
        };
        if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
            response.set_status(status);
        }
        error
    }

    /// A refusal of what the request asked (`sentence` names the thing and the rule) with its
    /// HTTP status (400 bad input, 404 no such card), as the JSON API would answer it: nothing
    /// was done.
    pub fn refused(status: axum::http::StatusCode, sentence: String) -> AppError {
        if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
            response.set_status(status);
        }
        AppError::Backend(sentence)
    }

    /// Like [`signed_in`], and the viewer must be allowed to answer.
    pub async fn controller() -> Result<(Arc<dyn AppBackend>, Viewer), AppError> {
        let (backend, viewer) = signed_in().await?;
        if viewer.can_answer {
            Ok((backend, viewer))
        } else {
            Err(with_status(AppError::ViewOnly))
        }
    }
}

/// Who is looking (name and whether this device may answer), e.g. for the chat box.
#[server(prefix = "/ui", input = Json, output = TextJson)]
pub async fn current_viewer() -> Result<Viewer, AppError> {
    let (_backend, viewer) = on_server::signed_in().await?;
    Ok(viewer)
}

/// The viewer, the pending cards (never filtered: a card that waits is always shown) and the
/// newest page of answered ones that match the filters `query` names; `focus` (from
/// `/activity/:id`) is fetched and included even when that page would not hold it, or named
/// in `missing` when no card has that id. What the page loads again on every live event (its
/// first snapshot comes with the page: [`crate::activity::load`]).
#[server(prefix = "/ui", input = Json, output = TextJson)]
pub async fn activity_data(
    #[doc = "The `/activity/:id` card, included even when the page would not hold it."]
    focus: Option<String>,
    #[doc = "The address's query (`q=invoice&status=rejected`, no `?`; empty for none): the history's filters, read by the server (a value it cannot use is left out, with a note)."]
    #[server(default)]
    query: String,
) -> Result<ActivitySnapshot, AppError> {
    let (backend, viewer) = on_server::signed_in().await?;
    let request = on_server::request()?;
    activity_snapshot(&*backend, viewer, &request, focus, &query, false).await
}

/// The Activity snapshot `viewer` sees ([`activity_data`]), for the request `request` (its
/// cookies hold a refusal of the card's form for `focus`, `crate::card_form::refusal_for`),
/// with the history's search form drawn when `with_form` (the page's first draw). Server only.
///
/// # Errors
/// [`AppError::Backend`] with the store's sentence when a read fails.
#[cfg(feature = "ssr")]
pub async fn activity_snapshot(
    backend: &dyn crate::backend::AppBackend,
    viewer: Viewer,
    request: &axum::http::request::Parts,
    focus: Option<String>,
    query: &str,
    with_form: bool,
) -> Result<ActivitySnapshot, AppError> {
    let (filter, notes) = crate::activity::filters::HistoryFilter::from_query(query);
    let tools = backend.card_tools();
    let pending = backend.pending().await.map_err(AppError::Backend)?;
    let page = backend
        .answered(None, &filter)
        .await
        .map_err(AppError::Backend)?;
    // Writes without a card are audit entries, not cards: no card filter applies to them, so
    // a filtered history leaves them out rather than show them as if they matched.
    let actions = if filter.is_set() {
        Vec::new()
    } else {
        backend.actions().await.map_err(AppError::Backend)?
    };
    let mut snapshot = ActivitySnapshot {
        viewer,
        pending,
        answered: page.approvals,
        older: page.next,
        actions: actions.iter().map(crate::activity::action_line).collect(),
        missing: None,
        refused: None,
        push_off: backend.push_off(),
        filter_words: filter.in_words(),
        filter_notes: crate::activity::filters::with_tool_note(notes, &filter, &tools),
        filter_form: with_form.then(|| crate::activity::filter_form::form_html(&filter, &tools)),
    };
    if let Some(id) = focus {
        snapshot.refused = crate::card_form::refusal_for(&request.headers, &id);
        if !snapshot.cards().any(|a| a.id == id) {
            match backend.approval(&id).await.map_err(AppError::Backend)? {
                Some(one) => snapshot.answered.insert(0, one),
                None => snapshot.missing = Some(id),
            }
        }
    }
    Ok(snapshot)
}

/// The page of answered cards matching the filters `query` names older than the cursor
/// `before` (an [`ActivitySnapshot::older`] or an earlier page's `next`, read with the same
/// filters), newest first.
#[server(prefix = "/ui", input = Json, output = TextJson)]
pub async fn older_approvals(
    #[doc = "Where the page starts (exclusive)."] before: String,
    #[doc = "The address's query, as [`activity_data`] takes it."]
    #[server(default)]
    query: String,
) -> Result<iris_core::wire::ApprovalList, AppError> {
    let (backend, _viewer) = on_server::signed_in().await?;
    let filter = crate::activity::filters::HistoryFilter::from_query(&query).0;
    backend
        .answered(Some(before), &filter)
        .await
        .map_err(AppError::Backend)
}

/// Answers one card as the viewer (surface `web`); returns the row as it now stands. The error
/// text (already decided by whom, expired) is shown on the card.
#[server(prefix = "/ui", input = Json, output = TextJson)]
pub async fn respond_approval(
    #[doc = "The approval row."] id: String,
    #[doc = "Approve or reject."] decision: Decision,
    #[doc = "The owner's words, if any."] reason: Option<String>,
    #[doc = "With approve: only these items (indices into `items`); `None` for the whole card."]
    items: Option<Vec<u32>>,
    #[doc = "With approve: the reviewed edit ([`ReviewedEdit::edits`], a JSON object of new values for fields in `card.editable`); `None` for the pinned call."]
    edits: Option<String>,
) -> Result<Approval, AppError> {
    let (backend, viewer) = on_server::controller().await?;
    let edits = match edits {
        None => None,
        Some(text) => match serde_json::from_str(&text) {
            Ok(serde_json::Value::Object(edits)) => Some(edits),
            _ => {
                return Err(on_server::refused(
                    axum::http::StatusCode::BAD_REQUEST,
                    "The edit is not a JSON object of fields: nothing was answered.".into(),
                ))
            }
        },
    };
    backend
        .respond(&viewer, &id, decision, reason, items, edits)
        .await
        .map_err(AppError::Backend)
}

/// Runs the card's undo as the viewer (surface `web`), once; returns the row with its `undo`.
/// The error text (already undone by whom, window closed) is shown on the card.
#[server(prefix = "/ui", input = Json, output = TextJson)]
pub async fn undo_approval(#[doc = "The approval row."] id: String) -> Result<Approval, AppError> {
    let (backend, viewer) = on_server::controller().await?;
    backend.undo(&viewer, &id).await.map_err(AppError::Backend)
}

/// Gives a card the viewer rejected its reason, once (docs/adr/0125-reason-after-reject.md);
/// returns the row with it. The model is told in the card's conversation.
#[server(prefix = "/ui", input = Json, output = TextJson)]
pub async fn give_reason(
    #[doc = "The approval row."] id: String,
    #[doc = "Why it was rejected (at most 500 characters)."] reason: String,
) -> Result<Approval, AppError> {
    let (backend, viewer) = on_server::controller().await?;
    backend
        .give_reason(&viewer, &id, reason)
        .await
        .map_err(AppError::Backend)
}

/// The viewer's edit of a waiting card as [`review_edit`] found it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ReviewedEdit {
    /// The changed fields as a JSON object (`{"body": "…"}`), what approving the edit sends
    /// back ([`respond_approval`]'s `edits`); `None` when nothing changed (the pinned call).
    pub edits: Option<String>,
    /// The confirm dialog's lines for it ([`crate::card::edit::review_lines`]); empty when
    /// nothing changed.
    pub lines: Vec<String>,
}

/// The viewer's edit of a waiting card as it would run: the form's texts (one per field of
/// `card.editable`, in its order) made into the edited call, checked as the approval will
/// check it (a refusal is the error text, shown on the card), with the confirm dialog's lines;
/// changes nothing.
#[server(prefix = "/ui", input = Json, output = TextJson)]
pub async fn review_edit(
    #[doc = "The approval row."] id: String,
    #[doc = "What the edit form holds: one text per field of `card.editable`, in its order."]
    typed: Vec<String>,
) -> Result<ReviewedEdit, AppError> {
    let (backend, viewer) = on_server::controller().await?;
    let approval = backend
        .approval(&id)
        .await
        .map_err(AppError::Backend)?
        .ok_or_else(|| {
            on_server::refused(
                axum::http::StatusCode::NOT_FOUND,
                format!("No card has the id \u{201c}{id}\u{201d}."),
            )
        })?;
    let fields = &approval.card.editable;
    if typed.len() != fields.len() {
        return Err(on_server::refused(
            axum::http::StatusCode::BAD_REQUEST,
            format!(
                "The edit form sends one text per field the card lets you edit ({}): {} came. Nothing was reviewed.",
                fields.len(),
                typed.len()
            ),
        ));
    }
    let edits = crate::card::edit::edits_from_form(&approval.args, fields, &typed);
    if edits.is_empty() {
        return Ok(ReviewedEdit {
            edits: None,
            lines: Vec::new(),
        });
    }
    let review = backend
        .review_edit(&viewer, &id, edits.clone())
        .await
        .map_err(AppError::Backend)?;
    let lines = crate::card::edit::review_lines(&approval.args, fields, &edits, &review.preview);
    Ok(ReviewedEdit {
        edits: Some(serde_json::Value::Object(edits).to_string()),
        lines,
    })
}

/// One chat turn; starts a conversation when `conversation_id` is `None`.
#[server(prefix = "/ui", input = Json, output = TextJson)]
pub async fn send_chat(
    #[doc = "What the owner says."] message: String,
    #[doc = "The conversation to continue; a new one when `None`."] conversation_id: Option<String>,
) -> Result<ChatResponse, AppError> {
    let (backend, viewer) = on_server::controller().await?;
    backend
        .chat(&viewer, message, conversation_id)
        .await
        .map_err(AppError::Backend)
}

/// What was said in a conversation, oldest first.
#[server(prefix = "/ui", input = Json, output = TextJson)]
pub async fn load_conversation(
    #[doc = "The conversation."] id: String,
) -> Result<Conversation, AppError> {
    let (backend, _viewer) = on_server::signed_in().await?;
    backend.conversation(&id).await.map_err(AppError::Backend)
}

/// The audit trail of one approval, oldest first, in words ([`crate::trail::TrailLine`]): the
/// entries are worded here, beside the row whose lines name its items, so the browser gets
/// sentences rather than the audit log's shapes.
#[server(prefix = "/ui", input = Json, output = TextJson)]
pub async fn approval_audit(
    #[doc = "The approval whose entries to list."] approval_id: String,
) -> Result<Vec<crate::trail::TrailLine>, AppError> {
    let (backend, _viewer) = on_server::signed_in().await?;
    let entries = backend
        .audit(&approval_id)
        .await
        .map_err(AppError::Backend)?;
    let row = backend
        .approval(&approval_id)
        .await
        .map_err(AppError::Backend)?;
    let (lines, items) = row
        .map(|row| (row.card.lines, row.items))
        .unwrap_or_default();
    Ok(entries
        .iter()
        .map(|entry| crate::trail::TrailLine::of(entry, &lines, &items))
        .collect())
}

/// Every loaded plugin with its tools' effect, gate and undo (the Plugins page).
#[server(prefix = "/ui", input = Json, output = TextJson)]
pub async fn load_plugins() -> Result<PluginList, AppError> {
    let (backend, _viewer) = on_server::signed_in().await?;
    backend.plugins().await.map_err(AppError::Backend)
}

/// The viewer and every live device (the Devices page).
#[server(prefix = "/ui", input = Json, output = TextJson)]
pub async fn load_devices() -> Result<DevicesSnapshot, AppError> {
    let (backend, viewer) = on_server::signed_in().await?;
    let devices = backend.devices(&viewer).await.map_err(AppError::Backend)?;
    Ok(DevicesSnapshot {
        viewer,
        devices,
        push_off: backend.push_off(),
    })
}

/// Revokes a device by name (control devices only): its token and browser sessions stop
/// working at their next request, and an open event stream ends.
#[server(prefix = "/ui", input = Json, output = TextJson)]
pub async fn revoke_device(#[doc = "The device's name."] name: String) -> Result<(), AppError> {
    let (backend, viewer) = on_server::controller().await?;
    backend
        .revoke_device(&viewer, &name)
        .await
        .map_err(AppError::Backend)
}

/// Makes a one-time pairing link (control devices only) on the address this browser used.
#[server(prefix = "/ui", input = Json, output = TextJson)]
pub async fn make_pairing_link(
    #[doc = "The scope the paired browser gets."] scope: DeviceScope,
) -> Result<PairingOffer, AppError> {
    let (backend, viewer) = on_server::controller().await?;
    let request = on_server::request()?;
    backend
        .pairing_link(&viewer, scope, &request)
        .await
        .map_err(AppError::Backend)
}
