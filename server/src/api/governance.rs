//! The governance routes: the approvals listing and one row, the owner's answer, the retry of
//! a failed resume, the card's undo, and the audit log.

use axum::extract::{Path, State};
use axum::Json;
use iris_core::ports::{
    parse_listing_time, ApprovalQuery, ApprovalStore, ListingError, PageCursor, PageLimit,
    SearchText, StatusFilter,
};
use iris_core::wire::{
    Approval, ApprovalList, AuditList, ErrorBody, ReasonRequest, RespondRequest, RespondResponse,
    ResumeResponse,
};
use serde::Deserialize;

use super::{parse_json, parse_shaped, to_the_end, ApiQuery, Authed, Body, Controller, Reader};
use crate::error::ApiError;
use crate::state::AppState;

/// The query of `GET /governance/approvals`: every field optional, parsed into an
/// [`ApprovalQuery`] (a bad value is a 400 naming it).
#[derive(Deserialize, Default)]
pub(crate) struct ListQuery {
    status: Option<String>,
    limit: Option<String>,
    before: Option<String>,
    tool: Option<String>,
    surface: Option<String>,
    since: Option<String>,
    until: Option<String>,
    q: Option<String>,
}

impl ListQuery {
    /// The page's question.
    ///
    /// # Errors
    /// [`ListingError`] for a bad status, limit, cursor, time or search.
    pub(crate) fn parse(self) -> Result<ApprovalQuery, ListingError> {
        let given = |v: Option<String>| v.map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        Ok(ApprovalQuery {
            status: StatusFilter::parse(self.status.as_deref().unwrap_or(""))?,
            tool: given(self.tool),
            surface: given(self.surface),
            since: given(self.since)
                .map(|t| parse_listing_time("since", &t))
                .transpose()?,
            until: given(self.until)
                .map(|t| parse_listing_time("until", &t))
                .transpose()?,
            text: SearchText::parse(self.q.as_deref().unwrap_or(""))?,
            before: given(self.before)
                .map(|c| PageCursor::parse(&c))
                .transpose()?,
            limit: given(self.limit)
                .map(|l| PageLimit::parse(&l))
                .transpose()?
                .unwrap_or_default(),
            requested_by: None,
        })
    }
}

/// `GET /governance/approvals` (any device): a page of rows, newest first.
#[utoipa::path(
    get,
    path = "/governance/approvals",
    tag = "governance",
    params(
        ("status" = Option<String>, Query, description = "all (the default), answered (not pending), pending, approved, rejected or expired."),
        ("limit" = Option<u32>, Query, description = "Rows per page, 1 to 200; 50 by default."),
        ("before" = Option<String>, Query, description = "The `next` cursor of the previous page (opaque)."),
        ("tool" = Option<String>, Query, description = "Only this tool."),
        ("surface" = Option<String>, Query, description = "Only rows answered on this surface (web, telegram, cli, api)."),
        ("since" = Option<String>, Query, description = "Only rows created at or after this time (RFC 3339, or a date YYYY-MM-DD)."),
        ("until" = Option<String>, Query, description = "Only rows created before this time (RFC 3339, or a date YYYY-MM-DD)."),
        ("q" = Option<String>, Query, description = "Only rows whose card (title, action, item lines, request) holds this text, any case; at most 200 characters."),
    ),
    responses(
        (status = 200, description = "The page, newest first by (created_at, id); `next` is the cursor of the following page, or null at the end.", body = ApprovalList),
        (status = 400, description = "A bad status, limit, cursor, time or search.", body = ErrorBody),
        (status = 401, description = "No credentials, or a token no live device has.", body = ErrorBody),
        (status = 500, description = "Storage failed; nothing was decided.", body = ErrorBody),
    ),
    security(("bearer" = []), ("cookie" = []))
)]
pub(crate) async fn list_approvals(
    State(state): State<AppState>,
    reader: Reader,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Json<ApprovalList>, ApiError> {
    let mut query = q.parse().map_err(|e| ApiError::BadRequest(e.to_string()))?;
    query.requested_by = reader.agent;
    let page = state.store.approval_page(&query).await?;
    Ok(Json(ApprovalList {
        approvals: page.approvals,
        next: page.next.map(|c| c.as_text()),
    }))
}

/// `GET /governance/approvals/{id}` (any device): one row.
#[utoipa::path(
    get,
    path = "/governance/approvals/{id}",
    tag = "governance",
    params(("id" = String, Path, description = "The approval id.")),
    responses(
        (status = 200, description = "The row.", body = Approval),
        (status = 401, description = "No credentials, or a token no live device has.", body = ErrorBody),
        (status = 404, description = "No approval has this id.", body = ErrorBody),
        (status = 500, description = "Storage failed; nothing was decided.", body = ErrorBody),
    ),
    security(("bearer" = []), ("cookie" = []))
)]
pub(crate) async fn get_approval(
    State(state): State<AppState>,
    reader: Reader,
    Path(id): Path<String>,
) -> Result<Json<Approval>, ApiError> {
    // An agent sees only the rows it requested (as this device, not a revoked one of its
    // name): another's is "does not exist" to it.
    let row = match &reader.agent {
        None => state.store.approval(&id).await?,
        Some(agent) => state.store.agent_approval(&id, agent).await?,
    };
    row.map(Json)
        .ok_or_else(|| ApiError::NotFound(format!("approval `{id}` does not exist")))
}

/// `POST /governance/approvals/{id}/respond` (control only): the owner's answer, through
/// `respond_to_approval` (DESIGN §7).
#[utoipa::path(
    post,
    path = "/governance/approvals/{id}/respond",
    tag = "governance",
    params(("id" = String, Path, description = "The approval id.")),
    request_body(content = RespondRequest, description = "Any `tool` or `args` in the body are ignored. `items` approves some of the card's items (indices into `approval.items`; only on a card with `card.items_arg`); `edits` approves the call with new values for fields in `card.editable`, checked as the model's call is."),
    responses(
        (status = 200, description = "The answer was stored; an approved call runs once.", body = RespondResponse),
        (status = 400, description = "The body does not parse, or `items` does not fit (with a reject; empty, repeated, out of range or not whole numbers; a card that is all or nothing), or `edits` does not (a field the card does not let you edit; the edited call breaks the tool's rules, named); nothing changed.", body = ErrorBody),
        (status = 401, description = "No credentials, or a token no live device has.", body = ErrorBody),
        (status = 403, description = "A read device, or a cross-site request with the browser cookie (CSRF); or, with `code` = `passkey_required` and the card in `approval`, approving this card needs the owner's passkey (`passkey` from `POST /governance/approvals/{id}/passkey`) and none acceptable came; nothing changed.", body = ErrorBody),
        (status = 404, description = "No approval has this id.", body = ErrorBody),
        (status = 409, description = "Already decided: `approval` says by whom, where and when.", body = ErrorBody),
        (status = 410, description = "Expired: nothing runs.", body = ErrorBody),
        (status = 500, description = "Storage failed; nothing was decided.", body = ErrorBody),
    ),
    security(("bearer" = []), ("cookie" = []))
)]
pub(crate) async fn respond(
    State(state): State<AppState>,
    Controller(actor): Controller,
    Path(id): Path<String>,
    Body(body): Body,
) -> Result<Json<RespondResponse>, ApiError> {
    // Any `tool`/`args` in the body are ignored: only the decision, reason, items, edits and
    // passkey are read.
    let request: RespondRequest = parse_shaped(
        &body,
        "the body must be {\"decision\": \"approve\"|\"reject\", \"reason\"?: \"…\", \"items\"?: [whole numbers: indices into the card's items], \"edits\"?: {field: value}, \"passkey\"?: {\"ceremony_id\", \"credential\"}}",
    )?;
    crate::passkeys::api::credential_is_object(request.passkey.as_ref(), "passkey")?;
    // A card that needs the owner's passkey is approved on its page in the web app: the refusal
    // names it, for a client (a script with a bearer token) that cannot make a passkey answer.
    let card = format!(
        "{}/activity/{id}",
        crate::pairing::configured_base(&state.settings).unwrap_or_default()
    );
    let approval = to_the_end(async move {
        state
            .service
            .respond_with_passkey(
                &id,
                request.decision,
                request.reason,
                iris_core::approvals::Shaping {
                    items: request.items.as_deref(),
                    edits: request.edits.as_ref(),
                },
                &actor,
                request.passkey.as_ref(),
            )
            .await
            .map_err(|e| match ApiError::from(e) {
                ApiError::PasskeyRequired(text, row) => ApiError::PasskeyRequired(
                    format!(
                        "{} (the card: {card}); nothing was changed",
                        text.trim_end_matches('.')
                    ),
                    row,
                ),
                other => other,
            })
    })
    .await?;
    Ok(Json(RespondResponse { approval }))
}

/// `POST /governance/approvals/{id}/resume` (control only): the owner retries a resume that
/// failed (`resume_error` on the card). Runs the continuation now and answers with it; the
/// pinned call is never executed again (the ledger's result is reused). 404 unknown; 409 still
/// pending, or no failed resume to retry (failed resumes are retried only on this request, never
/// by the sweep).
#[utoipa::path(
    post,
    path = "/governance/approvals/{id}/resume",
    tag = "governance",
    params(("id" = String, Path, description = "The approval id.")),
    responses(
        (status = 200, description = "The run continued from the ledger's result.", body = ResumeResponse),
        (status = 401, description = "No credentials, or a token no live device has.", body = ErrorBody),
        (status = 403, description = "A read device, or a cross-site request with the browser cookie (CSRF); nothing changed.", body = ErrorBody),
        (status = 404, description = "No approval has this id.", body = ErrorBody),
        (status = 409, description = "Still pending, or no failed resume to retry.", body = ErrorBody),
        (status = 500, description = "Storage failed; nothing was decided.", body = ErrorBody),
    ),
    security(("bearer" = []), ("cookie" = []))
)]
pub(crate) async fn retry_resume(
    State(state): State<AppState>,
    Controller(actor): Controller,
    Path(id): Path<String>,
) -> Result<Json<ResumeResponse>, ApiError> {
    tracing::info!(approval = %id, by = %actor.name, "retrying a failed resume");
    let (approval, run) = to_the_end(async move {
        state
            .service
            .retry(&id, &actor)
            .await
            .map_err(ApiError::from)
    })
    .await?;
    Ok(Json(ResumeResponse { approval, run }))
}

/// `POST /governance/approvals/{id}/undo` (control only): runs the card's `undo_tool` for
/// exactly the items its call executed, once whatever the taps, within the card's undo window,
/// through the approvals service; answers with the row, whose `undo` says what came back item by
/// item (DESIGN §9 "Undo from the card").
#[utoipa::path(
    post,
    path = "/governance/approvals/{id}/undo",
    tag = "governance",
    params(("id" = String, Path, description = "The approval id.")),
    responses(
        (status = 200, description = "The undo ran (or failed, or its outcome is unknown): `approval.undo` says which, item by item.", body = RespondResponse),
        (status = 400, description = "A body other than none or `{}`; nothing changed.", body = ErrorBody),
        (status = 413, description = "The body is too large; nothing changed.", body = ErrorBody),
        (status = 401, description = "No credentials, or a token no live device has.", body = ErrorBody),
        (status = 403, description = "A read device, or a cross-site request with the browser cookie (CSRF); nothing changed.", body = ErrorBody),
        (status = 404, description = "No approval has this id.", body = ErrorBody),
        (status = 409, description = "Already undone (`approval` says by whom, where and when), or nothing to undo (no undo declared, the call did not run, no item of it ran).", body = ErrorBody),
        (status = 410, description = "The card's undo window has closed; nothing changed.", body = ErrorBody),
        (status = 500, description = "Storage failed; nothing ran.", body = ErrorBody),
    ),
    security(("bearer" = []), ("cookie" = []))
)]
pub(crate) async fn undo(
    State(state): State<AppState>,
    Controller(actor): Controller,
    Path(id): Path<String>,
    Body(body): Body,
) -> Result<Json<RespondResponse>, ApiError> {
    // The undo takes no choice: it always reverses exactly the items that ran. A body that
    // asks for something (some items, a dry run) is refused rather than ignored.
    let said = std::str::from_utf8(&body).map(str::trim).unwrap_or("?");
    let empty_object =
        || crate::json::parse_strict(&body).is_ok_and(|v| v == serde_json::json!({}));
    if !(said.is_empty() || empty_object()) {
        return Err(ApiError::BadRequest(
            "the undo takes no body (or `{}`): it always reverses exactly the items that ran; nothing was changed".into(),
        ));
    }
    let approval = to_the_end(async move {
        state
            .service
            .undo(&id, &actor)
            .await
            .map_err(ApiError::from)
    })
    .await?;
    Ok(Json(RespondResponse { approval }))
}

/// `POST /governance/approvals/{id}/reason` (control only): why the owner rejected the card,
/// given after the tap, once (docs/adr/0125-reason-after-reject.md). The card shows it and the
/// model is told in the card's conversation (its reply arrives as a chat line).
#[utoipa::path(
    post,
    path = "/governance/approvals/{id}/reason",
    tag = "governance",
    params(("id" = String, Path, description = "The approval id.")),
    request_body(content = ReasonRequest, description = "The reason, at most 500 characters."),
    responses(
        (status = 200, description = "Written: `approval.reason` is the reason; the model is being told.", body = RespondResponse),
        (status = 400, description = "Not `{\"reason\": \"…\"}`, empty, longer than 500 characters, or with control characters; nothing changed.", body = ErrorBody),
        (status = 401, description = "No credentials, or a token no live device has.", body = ErrorBody),
        (status = 403, description = "A read device, or a cross-site request with the browser cookie (CSRF); nothing changed.", body = ErrorBody),
        (status = 404, description = "No approval has this id.", body = ErrorBody),
        (status = 409, description = "The card is not rejected, or its reason was given already (`approval` shows it); nothing changed.", body = ErrorBody),
        (status = 500, description = "Storage failed; nothing changed.", body = ErrorBody),
    ),
    security(("bearer" = []), ("cookie" = []))
)]
pub(crate) async fn reason(
    State(state): State<AppState>,
    Controller(actor): Controller,
    Path(id): Path<String>,
    Body(body): Body,
) -> Result<Json<RespondResponse>, ApiError> {
    let request: ReasonRequest = parse_json(&body, "the body must be {\"reason\": \"…\"}")?;
    let (approval, _telling) = give_reason(&state, &id, &request.reason, &actor).await?;
    Ok(Json(RespondResponse { approval }))
}

/// Gives a rejected card its reason and tells the model on a task of its own (every surface
/// that takes a reason calls this: the route above and the web app's server function). Returns
/// the row with its reason and the telling's task: the route lets it run on; the web app waits
/// for it, so the open chat shows the model's reply when the card does.
///
/// # Errors
/// [`ApiError`] from [`iris_core::approvals::reason::ReasonError`]; nothing changed.
pub(crate) async fn give_reason(
    state: &AppState,
    id: &str,
    reason: &str,
    actor: &iris_core::approvals::Actor,
) -> Result<(Approval, tokio::task::JoinHandle<()>), ApiError> {
    let given = state.service.give_reason(id, reason, actor).await?;
    let service = state.service.clone();
    let (teller, told) = (actor.clone(), given.clone());
    // The turn runs to its end whatever the client does (a model call has its own timeout).
    let telling = tokio::spawn(async move {
        if let Err(error) = service.tell_reason(&told, &teller).await {
            tracing::warn!(approval = %told.approval.id, %error, "telling the model a rejection's reason failed; the reason stays on the card");
        }
    });
    Ok((given.approval, telling))
}

/// `?approval_id=` (one approval's entries, whole) or `?limit=&before=` (a page of the whole
/// log) of `GET /api/audit`.
#[derive(Deserialize)]
pub(crate) struct AuditQuery {
    approval_id: Option<String>,
    limit: Option<String>,
    before: Option<String>,
}

/// `GET /api/audit` (any device): one approval's entries, oldest first, whole; or the whole
/// append-only log in pages, newest first, like the approvals list.
#[utoipa::path(
    get,
    path = "/api/audit",
    tag = "governance",
    params(
        ("approval_id" = Option<String>, Query, description = "Only the entries of this approval, oldest first, all of them (no paging)."),
        ("limit" = Option<u32>, Query, description = "Without `approval_id`: entries per page, 1 to 200 (default 50)."),
        ("before" = Option<String>, Query, description = "Without `approval_id`: the `next` of the previous page."),
    ),
    responses(
        (status = 200, description = "The entries; `next` is the `before` of the following page, or null at the end.", body = AuditList),
        (status = 400, description = "A bad limit or cursor, or paging asked with `approval_id`.", body = ErrorBody),
        (status = 401, description = "No credentials, or a token no live device has.", body = ErrorBody),
        (status = 500, description = "Storage failed; nothing was decided.", body = ErrorBody),
    ),
    security(("bearer" = []), ("cookie" = []))
)]
pub(crate) async fn audit(
    State(state): State<AppState>,
    _authed: Authed,
    ApiQuery(q): ApiQuery<AuditQuery>,
) -> Result<Json<AuditList>, ApiError> {
    let given = |v: Option<String>| v.map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    let (limit, before) = (given(q.limit), given(q.before));
    if let Some(approval_id) = q.approval_id {
        if limit.is_some() || before.is_some() {
            return Err(ApiError::BadRequest(
                "`limit` and `before` page the whole log; an approval's entries come whole, so leave them out with `approval_id`".into(),
            ));
        }
        return Ok(Json(AuditList {
            entries: state.store.audit(Some(&approval_id)).await?,
            next: None,
        }));
    }
    let limit = match limit {
        Some(text) => PageLimit::parse(&text).map_err(|e| ApiError::BadRequest(e.to_string()))?,
        None => PageLimit::DEFAULT,
    };
    let before = match before {
        Some(text) => Some(text.parse::<i64>().map_err(|_| {
            ApiError::BadRequest(format!(
                "cursor `{}` is not one this server handed out; start again without `before`",
                text.chars().take(80).collect::<String>()
            ))
        })?),
        None => None,
    };
    let (entries, next) = state.store.audit_page(before, limit).await?;
    Ok(Json(AuditList {
        entries,
        next: next.map(|id| id.to_string()),
    }))
}
