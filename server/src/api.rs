//! The JSON API of DESIGN §7. Handlers parse input into domain types, call the core, and map
//! domain errors to HTTP through [`ApiError`] (one place).

use std::convert::Infallible;

use axum::body::Bytes;
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::Stream;
use iris_core::kernel::Actor;
use iris_core::ports::{AuditLog, ConversationStore, QueueStore};
use iris_core::wire::{
    Approval, ApprovalList, ApprovalStatus, AuditList, ChatRequest, ChatResponse, Conversation,
    PluginList, RespondRequest, RespondResponse, ResumeResponse,
};
use serde::Deserialize;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::StreamExt;

use crate::auth::{self, Presented};
use crate::error::ApiError;
use crate::state::AppState;
use crate::sweeps;

/// The routes of DESIGN §7 (the web app's pages and server functions are added in `web`).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/chat", post(chat))
        .route("/api/audit", get(audit))
        .route("/api/events", get(events))
        .route("/api/conversations/{id}", get(conversation))
        .route("/api/plugins", get(plugins))
        .route("/api/health", get(|| async { "ok" }))
        .route("/governance/approvals", get(list_approvals))
        .route("/governance/approvals/{id}", get(get_approval))
        .route("/governance/approvals/{id}/respond", post(respond))
        .route("/governance/approvals/{id}/resume", post(retry_resume))
}

/// An authenticated device (401 without credentials).
pub struct Authed {
    /// Who, with scope and surface.
    pub actor: Actor,
    /// Bearer or cookie.
    pub presented: Presented,
}

impl FromRequestParts<AppState> for Authed {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let Some((device, presented)) = auth::authenticate(&state.store, &parts.headers).await?
        else {
            return Err(if auth::presented_token(&parts.headers).is_some() {
                ApiError::UnknownToken
            } else {
                ApiError::Unauthorized
            });
        };
        Ok(Authed {
            actor: auth::actor_for(&device, presented, &parts.headers),
            presented,
        })
    }
}

/// A device allowed to change state: control scope, and for cookies a same-origin request
/// (DESIGN §2: every state-changing route is a gated write; 403 otherwise).
pub struct Controller(pub Actor);

impl FromRequestParts<AppState> for Controller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let authed = Authed::from_request_parts(parts, state).await?;
        if !auth::may_change_state(authed.actor.scope) {
            return Err(ApiError::Forbidden(format!(
                "device `{}` has read scope; only a control device may do this",
                authed.actor.name
            )));
        }
        if authed.presented == Presented::Cookie
            && !auth::same_origin(&parts.method, &parts.headers)
        {
            return Err(ApiError::Forbidden(
                "cross-site request refused: a cookie-authenticated change must come from this site (CSRF)".into(),
            ));
        }
        Ok(Controller(authed.actor))
    }
}

/// Parses a JSON object body. Only an object is accepted: serde would also read a struct from a
/// JSON array (`["approve"]`), which is not the contract's shape.
fn parse_json<T: serde::de::DeserializeOwned>(body: &Bytes, what: &str) -> Result<T, ApiError> {
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::BadRequest(format!("{what}: {e}; nothing was changed")))?;
    if !value.is_object() {
        return Err(ApiError::BadRequest(format!(
            "{what}: the body must be a JSON object; nothing was changed"
        )));
    }
    serde_json::from_value(value)
        .map_err(|e| ApiError::BadRequest(format!("{what}: {e}; nothing was changed")))
}

/// The longest chat message accepted, in characters (a request is shown on every card it makes).
pub const MAX_MESSAGE_CHARS: usize = 4000;

/// The one check every chat surface (API, web app) applies before a turn runs: the message,
/// trimmed, is not empty and at most [`MAX_MESSAGE_CHARS`] characters.
///
/// # Errors
/// A sentence saying what is wrong and that nothing was done.
pub fn chat_message(message: &str) -> Result<&str, String> {
    let message = message.trim();
    if message.is_empty() {
        return Err("the message is empty; nothing was done".into());
    }
    if message.chars().count() > MAX_MESSAGE_CHARS {
        return Err(format!(
            "the message is longer than {MAX_MESSAGE_CHARS} characters; nothing was done"
        ));
    }
    Ok(message)
}

async fn chat(
    State(state): State<AppState>,
    Controller(_actor): Controller,
    body: Bytes,
) -> Result<Json<ChatResponse>, ApiError> {
    let request: ChatRequest = parse_json(&body, "the chat body must be {\"message\": \"…\"}")?;
    let message = chat_message(&request.message).map_err(ApiError::BadRequest)?;
    let response = state
        .agent
        .run_turn(request.conversation_id, message)
        .await?;
    // IRIS_ESCALATION (DESIGN §2 "escalation"): judge the finished turn with the rule judge,
    // record the verdict in the curator table and, in enforce mode, re-run the turn through the
    // same agent with a note when the rules allow (never a resumed run, never one that ran a
    // non-read call or did not report).
    let mode = state.settings.escalation;
    if mode == iris_core::escalation::EscalationMode::Off {
        return Ok(Json(response));
    }
    let escalator = iris_core::escalation::Escalator {
        mode,
        judge: std::sync::Arc::new(iris_core::escalation::RuleJudge),
        curator: std::sync::Arc::new(state.store.clone()),
        runner: state.agent.clone(),
        clock: std::sync::Arc::new(iris_core::ports::SystemClock),
        max_hops: state.settings.escalation_max_hops,
    };
    let outcome = escalator
        .maybe_escalate(iris_core::escalation::FinishedTurn::from_response(
            message, &response,
        ))
        .await;
    if let Some(error) = &outcome.error {
        tracing::warn!(run = %response.run_id, %error, "escalation stopped early");
    }
    Ok(Json(outcome.turn.to_response()))
}

#[derive(Deserialize)]
struct StatusQuery {
    status: Option<String>,
}

async fn list_approvals(
    State(state): State<AppState>,
    _authed: Authed,
    Query(q): Query<StatusQuery>,
) -> Result<Json<ApprovalList>, ApiError> {
    let status = match q.status.as_deref() {
        None | Some("") | Some("all") => None,
        Some(s) => Some(ApprovalStatus::parse(s).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "status `{s}` is not one of pending, approved, rejected, expired"
            ))
        })?),
    };
    Ok(Json(ApprovalList {
        approvals: state.store.list(status).await?,
    }))
}

async fn get_approval(
    State(state): State<AppState>,
    _authed: Authed,
    Path(id): Path<String>,
) -> Result<Json<Approval>, ApiError> {
    state
        .store
        .get(&id)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::NotFound(format!("approval `{id}` does not exist")))
}

async fn respond(
    State(state): State<AppState>,
    Controller(actor): Controller,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Json<RespondResponse>, ApiError> {
    // Any `tool`/`args` in the body are ignored: only the decision and reason are read.
    let request: RespondRequest = parse_json(
        &body,
        "the body must be {\"decision\": \"approve\"|\"reject\", \"reason\"?: \"…\"}",
    )?;
    let approval = state
        .governance
        .respond_to_approval(&id, request.decision, request.reason, &actor)
        .await?;
    sweeps::spawn_resume(state.clone(), id);
    Ok(Json(RespondResponse { approval }))
}

/// `POST /governance/approvals/{id}/resume` (control only): the owner retries a resume that
/// failed (`resume_error` on the card). Runs the continuation now and answers with it; the
/// pinned call is never executed again (the ledger's result is reused). 404 unknown; 409 still
/// pending, or no failed resume to retry (failed resumes are retried only on this request, never
/// by the sweep).
async fn retry_resume(
    State(state): State<AppState>,
    Controller(actor): Controller,
    Path(id): Path<String>,
) -> Result<Json<ResumeResponse>, ApiError> {
    tracing::info!(approval = %id, by = %actor.name, "retrying a failed resume");
    let run = state.agent.retry_resume(&id).await?;
    let approval = state
        .store
        .get(&id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("approval `{id}` does not exist")))?;
    Ok(Json(ResumeResponse { approval, run }))
}

#[derive(Deserialize)]
struct AuditQuery {
    approval_id: Option<String>,
}

async fn audit(
    State(state): State<AppState>,
    _authed: Authed,
    Query(q): Query<AuditQuery>,
) -> Result<Json<AuditList>, ApiError> {
    Ok(Json(AuditList {
        entries: state.store.entries(q.approval_id.as_deref()).await?,
    }))
}

async fn conversation(
    State(state): State<AppState>,
    _authed: Authed,
    Path(id): Path<String>,
) -> Result<Json<Conversation>, ApiError> {
    let lines = state.store.lines(&id).await?;
    Ok(Json(Conversation { id, lines }))
}

/// `GET /api/plugins`: every loaded plugin's tools with effect, gate and undo (any device).
async fn plugins(State(state): State<AppState>, _authed: Authed) -> Json<PluginList> {
    Json(state.agent.registry().plugin_list())
}

async fn events(
    State(state): State<AppState>,
    _authed: Authed,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let stream = BroadcastStream::new(state.events.subscribe()).filter_map(|event| {
        let event = event.ok()?;
        let data = serde_json::to_value(&event).ok()?.get("data").cloned()?;
        Some(Ok(SseEvent::default()
            .event(event.name())
            .data(data.to_string())))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}
