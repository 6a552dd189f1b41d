//! The chat routes: one turn of the agent loop (`POST /api/chat`) and what was said in a
//! conversation (`GET /api/conversations/{id}`).

use axum::extract::{Path, State};
use axum::Json;
use iris_core::ports::ApprovalStore;
use iris_core::wire::{ChatRequest, ChatResponse, Conversation, ErrorBody};

use super::{parse_json, to_the_end, Authed, Body, Controller};
use crate::error::ApiError;
use crate::state::AppState;

/// `POST /api/chat` (control only): one turn of the agent loop.
#[utoipa::path(
    post,
    path = "/api/chat",
    tag = "chat",
    request_body = ChatRequest,
    responses(
        (status = 200, description = "The turn ran: done, awaiting approval, refused or failed.", body = ChatResponse),
        (status = 400, description = "The body does not parse; nothing changed.", body = ErrorBody),
        (status = 401, description = "No credentials, or a token no live device has.", body = ErrorBody),
        (status = 403, description = "A read device, or a cross-site request with the browser cookie (CSRF); nothing changed.", body = ErrorBody),
        (status = 500, description = "Storage failed; nothing was decided.", body = ErrorBody),
    ),
    security(("bearer" = []), ("cookie" = []))
)]
pub(crate) async fn chat(
    State(state): State<AppState>,
    Controller(actor): Controller,
    Body(body): Body,
) -> Result<Json<ChatResponse>, ApiError> {
    let request: ChatRequest = parse_json(&body, "the chat body must be {\"message\": \"…\"}")?;
    let response = to_the_end(async move {
        state
            .service
            .chat(&actor, request.conversation_id, &request.message)
            .await
            .map_err(ApiError::from)
    })
    .await?;
    Ok(Json(response))
}

/// `GET /api/conversations/{id}` (any device): what was said, oldest first.
#[utoipa::path(
    get,
    path = "/api/conversations/{id}",
    tag = "chat",
    params(("id" = String, Path, description = "The conversation id.")),
    responses(
        (status = 200, description = "The lines (none for an unknown id).", body = Conversation),
        (status = 401, description = "No credentials, or a token no live device has.", body = ErrorBody),
        (status = 500, description = "Storage failed; nothing was decided.", body = ErrorBody),
    ),
    security(("bearer" = []), ("cookie" = []))
)]
pub(crate) async fn conversation(
    State(state): State<AppState>,
    _authed: Authed,
    Path(id): Path<String>,
) -> Result<Json<Conversation>, ApiError> {
    let lines = state.store.lines(&id).await?;
    Ok(Json(Conversation { id, lines }))
}
