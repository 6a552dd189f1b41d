//! The card's own HTML form, the way a card is answered before the page's wasm has arrived
//! (`app::card_form` draws it): `POST /ui/answer_card` (`id`, `decision`) and
//! `POST /ui/undo_card` (`id`), url-encoded.
//!
//! Both answer through [`WebBackend`], the same calls as the live page (surface `web`), so the
//! approvals service stays the one owner of "decide, then resume" (DESIGN §6). Then the
//! browser is sent (303) to the card's page, which shows what happened. A refusal (already
//! answered, lapsed, view only, not paired) rides to that page in a one-time cookie only this
//! server sets (`app::card_form::refusal_cookie`), never in the address, where anybody could
//! write words onto the card. [`refusal_shown_once`] clears it with the page that shows it.
//!
//! A form that cannot be read (not url-encoded, a field missing or given twice, a decision
//! that is neither `approve` nor `reject`, an id no card could have) gets a 400 with a plain
//! sentence and changes nothing. The CSRF guard (`web::csrf_guard`) refuses a post from another
//! site with 403 before any of this runs; in the demo, a post from the demo's own page signs
//! the browser in as a page load does (`web::demo_sign_in`).

use app::backend::{AppBackend, Viewer};
use app::card_form::{refusal_cookie, refusal_cookie_cleared, ANSWER_URL, UNDO_URL};
use app::error::AppError;
use axum::extract::rejection::FormRejection;
use axum::extract::{FromRequest, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Form, Router};
use iris_core::wire::Decision;
use serde::Deserialize;

use crate::state::AppState;
use crate::web::WebBackend;

/// The longest id a card's form may name (bytes): ids are UUIDs (36); anything far longer is
/// not a card's, and would not fit the refusal cookie.
const MAX_ID_BYTES: usize = 128;

/// The answer form: which card, and the owner's decision.
#[derive(Debug, Deserialize)]
struct AnswerForm {
    id: String,
    decision: Decision,
}

/// The undo form: which card.
#[derive(Debug, Deserialize)]
struct UndoForm {
    id: String,
}

/// `POST /ui/answer_card` and `POST /ui/undo_card`. Static routes, so they take precedence over
/// the server functions' `/ui/{*fn_name}`.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(ANSWER_URL, post(answer))
        .route(UNDO_URL, post(undo))
}

/// Whether a request is a post of a card's form (the demo signs such a post in like a page load).
pub fn is_form_post(method: &Method, path: &str) -> bool {
    method == Method::POST && (path == ANSWER_URL || path == UNDO_URL)
}

async fn answer(State(state): State<AppState>, request: Request) -> Response {
    let (backend, viewer, request) = viewer_of(&state, request).await;
    let form: AnswerForm = match read_form(request, &state).await {
        Ok(form) => form,
        Err(refused) => return refused,
    };
    if let Some(refused) = id_refusal(&form.id) {
        return refused;
    }
    let answered = match viewer {
        // The core refuses a card whose approval needs a passkey (ADR-0118 decision 4): this
        // form carries none, so such a card is only rejected here.
        Ok(viewer) => backend
            .respond(&viewer, &form.id, form.decision, None, None, None)
            .await
            .map(|_| ()),
        Err(refused) => Err(refused.to_string()),
    };
    to_the_card(&state, &form.id, answered.err())
}

async fn undo(State(state): State<AppState>, request: Request) -> Response {
    let (backend, viewer, request) = viewer_of(&state, request).await;
    let form: UndoForm = match read_form(request, &state).await {
        Ok(form) => form,
        Err(refused) => return refused,
    };
    if let Some(refused) = id_refusal(&form.id) {
        return refused;
    }
    let undone = match viewer {
        Ok(viewer) => backend.undo(&viewer, &form.id).await.map(|_| ()),
        Err(refused) => Err(refused.to_string()),
    };
    to_the_card(&state, &form.id, undone.err())
}

/// The backend and who is posting: a control viewer, or why not (not paired, view only), in
/// the app's own words.
async fn viewer_of(
    state: &AppState,
    request: Request,
) -> (WebBackend, Result<Viewer, AppError>, Request) {
    let backend = WebBackend::new(state.clone());
    let (parts, body) = request.into_parts();
    let viewer = match backend.viewer(&parts).await {
        Some(viewer) if viewer.can_answer => Ok(viewer),
        Some(_) => Err(AppError::ViewOnly),
        None => Err(AppError::NotPaired),
    };
    (backend, viewer, Request::from_parts(parts, body))
}

/// The form, or a 400 that says in plain words why it cannot be read (nothing was changed).
async fn read_form<T: serde::de::DeserializeOwned>(
    request: Request,
    state: &AppState,
) -> Result<T, Response> {
    match Form::<T>::from_request(request, state).await {
        Ok(Form(form)) => Ok(form),
        Err(rejection) => Err(unreadable(&rejection)),
    }
}

/// A 400 for an id no card could have (empty, or over [`MAX_ID_BYTES`]); `None` for any other.
fn id_refusal(id: &str) -> Option<Response> {
    (id.is_empty() || id.len() > MAX_ID_BYTES).then(|| {
        bad_request(format!(
            "A card's form names its card by id (1 to {MAX_ID_BYTES} characters); this one had {}. Nothing was changed.",
            id.len()
        ))
    })
}

fn unreadable(rejection: &FormRejection) -> Response {
    bad_request(format!(
        "The card's form could not be read ({}). It sends the card's id and, to answer, a decision of approve or reject, url-encoded, once each. Nothing was changed.",
        rejection.body_text()
    ))
}

fn bad_request(sentence: String) -> Response {
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        sentence,
    )
        .into_response()
}

/// 303 to the card's page; a refusal goes with it in the one-time cookie.
fn to_the_card(state: &AppState, id: &str, refused: Option<String>) -> Response {
    let path = app::card_form::card_answer_path(id);
    let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, path)]).into_response();
    if let Some(sentence) = refused {
        let secure = crate::pairing::secure_cookies(state.public_origin.as_deref());
        if let Ok(cookie) = HeaderValue::from_str(&refusal_cookie(id, &sentence, secure)) {
            response.headers_mut().append(header::SET_COOKIE, cookie);
        }
    }
    response
}

/// Around the app's pages: a page request that carries a card form's refusal cookie gets it
/// cleared with its response (the page shows it once; a reload does not show it again).
pub async fn refusal_shown_once(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let carries = request
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .any(|pair| {
            pair.trim()
                .strip_prefix(app::card_form::REFUSAL_COOKIE)
                .is_some_and(|rest| rest.starts_with('='))
        });
    let mut response = next.run(request).await;
    if carries {
        let secure = crate::pairing::secure_cookies(state.public_origin.as_deref());
        if let Ok(cookie) = HeaderValue::from_str(&refusal_cookie_cleared(secure)) {
            response.headers_mut().append(header::SET_COOKIE, cookie);
        }
    }
    response
}
