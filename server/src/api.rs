//! The JSON API of DESIGN §7. Handlers parse input into domain types, call the core, and map
//! domain errors to HTTP through [`ApiError`] (one place).

use std::convert::Infallible;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request, State};
use axum::http::request::Parts;
use axum::http::Method;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::routing::{on, MethodFilter, MethodRouter};
use axum::{Json, Router};
use futures::Stream;
use iris_core::approvals::Actor;
use iris_core::ports::{
    parse_listing_time, ApprovalQuery, ApprovalStore, DeviceStore, ListingError, PageCursor,
    PageLimit, Scope, SearchText, StatusFilter,
};
use iris_core::wire::{
    Approval, ApprovalList, AuditList, ChatRequest, ChatResponse, Conversation, ErrorBody, Event,
    PluginList, RespondRequest, RespondResponse, ResumeResponse,
};
use serde::Deserialize;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::StreamExt;

use crate::api_routes::{Endpoint, API_ROUTES};
use crate::auth::{self, Presented};
use crate::error::ApiError;
use crate::openapi;
use crate::passkeys::api as passkeys;
use crate::push::api as push;
use crate::state::AppState;

/// The largest request body accepted, in bytes (a chat message is at most 4,000 characters;
/// no body the API takes is near this). A larger one is refused with 413 and the JSON error
/// shape of every other 4xx.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// A request body read whole, within [`MAX_BODY_BYTES`]: a body too large, or one that cannot
/// be read, is refused with the API's JSON error shape.
pub struct Body(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for Body {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match Bytes::from_request(req, state).await {
            Ok(bytes) => Ok(Body(bytes)),
            Err(rejection) if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE => {
                Err(ApiError::TooLarge(format!(
                    "the request body is larger than {MAX_BODY_BYTES} bytes; nothing was changed"
                )))
            }
            Err(rejection) => Err(ApiError::BadRequest(format!(
                "the request body could not be read ({}); nothing was changed",
                rejection.body_text()
            ))),
        }
    }
}

/// A query string parsed into `T`; one that does not parse (a repeated or unknown-typed
/// parameter) is refused with the API's JSON error shape, like a bad body.
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, ApiError> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(value)) => Ok(ApiQuery(value)),
            Err(rejection) => Err(ApiError::BadRequest(format!(
                "the query string does not parse ({}); nothing was changed",
                rejection.body_text()
            ))),
        }
    }
}

/// The routes of DESIGN §7 (the web app's pages and server functions are added in `web`), built
/// from [`API_ROUTES`]: the table gives path and method, [`handler`] the handler, so every
/// served route is one the OpenAPI document must list (`server/tests/openapi.rs` checks it).
/// The operations of one path share a method router, whose other methods get 405.
pub fn routes() -> Router<AppState> {
    let mut paths: Vec<&'static str> = Vec::new();
    for route in API_ROUTES {
        if !paths.contains(&route.path) {
            paths.push(route.path);
        }
    }
    paths.into_iter().fold(Router::new(), |router, path| {
        let on_path: Vec<_> = API_ROUTES.iter().filter(|r| r.path == path).collect();
        let allowed = on_path
            .iter()
            .map(|r| r.method)
            .collect::<Vec<_>>()
            .join(", ");
        let methods = on_path.iter().fold(MethodRouter::new(), |methods, route| {
            let method = Method::from_bytes(route.method.as_bytes())
                .ok()
                .and_then(|m| MethodFilter::try_from(m).ok())
                .unwrap_or_else(|| panic!("API_ROUTES: `{}` is not an HTTP method", route.method));
            methods.merge(handler(route.endpoint, method))
        });
        router.route(
            path,
            methods.fallback(move || wrong_method(allowed.clone())),
        )
    })
}

/// 405 in the API's JSON error shape, with `Allow` naming the methods the route answers
/// (`GET`, or `GET, POST`).
async fn wrong_method(allowed: String) -> axum::response::Response {
    use axum::response::IntoResponse;
    let body = ErrorBody {
        error: format!("this route answers only {allowed}; nothing was changed"),
        approval: None,
        code: None,
    };
    (
        axum::http::StatusCode::METHOD_NOT_ALLOWED,
        [(axum::http::header::ALLOW, allowed)],
        Json(body),
    )
        .into_response()
}

/// The handler of each [`Endpoint`], answering only `method` (from the route table).
fn handler(endpoint: Endpoint, method: MethodFilter) -> MethodRouter<AppState> {
    match endpoint {
        Endpoint::Chat => on(method, chat),
        Endpoint::Audit => on(method, audit),
        Endpoint::Events => on(method, events),
        Endpoint::Conversation => on(method, conversation),
        Endpoint::Plugins => on(method, plugins),
        Endpoint::Health => on(method, health),
        Endpoint::OpenApi => on(method, openapi::document),
        Endpoint::ListApprovals => on(method, list_approvals),
        Endpoint::GetApproval => on(method, get_approval),
        Endpoint::Respond => on(method, respond),
        Endpoint::RetryResume => on(method, retry_resume),
        Endpoint::Undo => on(method, undo),
        Endpoint::PushKey => on(method, push::key),
        Endpoint::PushSubscribe => on(method, push::subscribe),
        Endpoint::PushSubscriptions => on(method, push::list),
        Endpoint::PushUnsubscribe => on(method, push::unsubscribe),
        Endpoint::ApprovalPasskey => on(method, passkeys::approval_challenge),
        Endpoint::Passkeys => on(method, passkeys::list),
        Endpoint::PasskeyRegistration => on(method, passkeys::registration),
        Endpoint::PasskeyProof => on(method, passkeys::proof),
        Endpoint::PasskeyRegister => on(method, passkeys::register),
        Endpoint::PasskeyRemove => on(method, passkeys::remove),
    }
}

/// An authenticated device (401 without credentials).
pub struct Authed {
    /// Who, with scope and surface.
    pub actor: Actor,
    /// Bearer or browser session.
    pub presented: Presented,
    /// Hex SHA-256 of the device's token, to check the device is still live later (an open
    /// event stream ends when it is revoked).
    pub token_hash: String,
}

impl FromRequestParts<AppState> for Authed {
    type Rejection = ApiError;

    /// Any paired device but an agent: an `agent` token reaches only the gateway and the
    /// approvals it requested ([`Reader`]); everywhere else 403 naming its scope (DESIGN §2).
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let authed = Authed::identify(parts, state).await?;
        if authed.actor.scope == Scope::Agent {
            return Err(ApiError::Forbidden(agent_refusal(&authed.actor.name)));
        }
        Ok(authed)
    }
}

/// The 403 sentence for an agent outside what its scope allows.
pub(crate) fn agent_refusal(name: &str) -> String {
    format!(
        "device `{name}` has agent scope: it may call tools through IRIS's MCP gateway and read \
         the approvals it requested (GET /governance/approvals), nothing else; it never answers \
         a card"
    )
}

/// A device reading approvals: any paired device, an agent too, which sees only the rows it
/// requested (`agent` is then its name).
pub struct Reader {
    /// Who.
    pub authed: Authed,
    /// For an agent, its name: the rows are filtered to those it requested.
    pub agent: Option<String>,
}

impl FromRequestParts<AppState> for Reader {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let authed = Authed::identify(parts, state).await?;
        let agent = (authed.actor.scope == Scope::Agent).then(|| authed.actor.name.clone());
        Ok(Reader { authed, agent })
    }
}

impl Authed {
    /// Whoever the credentials name, any scope (401 without, or for a token no live device has).
    async fn identify(parts: &mut Parts, state: &AppState) -> Result<Authed, ApiError> {
        match auth::authenticate(&state.store, &parts.headers, &parts.extensions).await? {
            auth::Identified::Device {
                device,
                presented,
                token_hash,
            } => Ok(Authed {
                actor: auth::actor_for(&device, presented, &parts.headers),
                presented,
                token_hash,
            }),
            auth::Identified::Unknown(Presented::Bearer) => Err(ApiError::UnknownToken),
            auth::Identified::Unknown(Presented::Session) => Err(ApiError::SessionEnded),
            auth::Identified::Nobody => Err(ApiError::Unauthorized),
        }
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
        refuse_cross_site(&authed, parts, state)?;
        Ok(Controller(authed.actor))
    }
}

/// The CSRF rule of every change (DESIGN §2): a request authenticated by the browser's cookie
/// must come from this site (its `Origin`, else `Referer`); 403 otherwise. A bearer token is
/// never sent by a browser on its own, so it passes.
pub(crate) fn refuse_cross_site(
    authed: &Authed,
    parts: &Parts,
    state: &AppState,
) -> Result<(), ApiError> {
    auth::refuse_cross_site(
        &parts.method,
        &parts.headers,
        state.public_origin.as_deref(),
        authed.presented == Presented::Session,
    )
}

/// Parses a JSON object body. Only an object with distinct keys is accepted: serde would also
/// read a struct from a JSON array (`["approve"]`), which is not the contract's shape, and would
/// keep the last of two equal keys ([`crate::json`]).
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(
    body: &Bytes,
    what: &str,
) -> Result<T, ApiError> {
    let value = crate::json::parse_strict(body)
        .map_err(|e| ApiError::BadRequest(format!("{what}: {e}; nothing was changed")))?;
    if !value.is_object() {
        return Err(ApiError::BadRequest(format!(
            "{what}: the body must be a JSON object; nothing was changed"
        )));
    }
    serde_json::from_value(value)
        .map_err(|e| ApiError::BadRequest(format!("{what}: {e}; nothing was changed")))
}

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

/// Runs `work` on a task of its own and waits for it: once a request is accepted, what it
/// started runs to its end whatever the client does (a dropped connection cannot cut a turn
/// or a decision midway; DESIGN §8 "once a card exists it is whole").
pub async fn to_the_end<T: Send + 'static>(
    work: impl std::future::Future<Output = Result<T, ApiError>> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::spawn(work)
        .await
        .map_err(|e| ApiError::Internal(format!("the request's work stopped: {e}")))?
}

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
    request_body(content = RespondRequest, description = "Any `tool` or `args` in the body are ignored."),
    responses(
        (status = 200, description = "The answer was stored; an approved call runs once.", body = RespondResponse),
        (status = 400, description = "The body does not parse; nothing changed.", body = ErrorBody),
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
    // Any `tool`/`args` in the body are ignored: only the decision and reason are read.
    let request: RespondRequest = parse_json(
        &body,
        "the body must be {\"decision\": \"approve\"|\"reject\", \"reason\"?: \"…\", \"passkey\"?: {\"ceremony_id\", \"credential\"}}",
    )?;
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
    if !(said.is_empty() || said == "{}") {
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

/// `GET /api/plugins`: every loaded plugin's tools with effect, gate and undo (any device).
#[utoipa::path(
    get,
    path = "/api/plugins",
    tag = "plugins",
    responses(
        (status = 200, description = "Every loaded plugin's tools.", body = PluginList),
        (status = 401, description = "No credentials, or a token no live device has.", body = ErrorBody),
        (status = 500, description = "Storage failed; nothing was decided.", body = ErrorBody),
    ),
    security(("bearer" = []), ("cookie" = []))
)]
pub(crate) async fn plugins(State(state): State<AppState>, _authed: Authed) -> Json<PluginList> {
    let mut list = crate::mcp::plugin_list(&state).await;
    // DESIGN §7's tool shape, exactly: `reply_undo` is the web app's Plugins page display.
    for tool in list.plugins.iter_mut().flat_map(|p| p.tools.iter_mut()) {
        tool.reply_undo = None;
    }
    Json(list)
}

/// `GET /api/events` (any device): Server-Sent Events; each event's name is `event` and its data
/// the JSON `data` of [`iris_core::wire::Event`].
#[utoipa::path(
    get,
    path = "/api/events",
    tag = "events",
    responses(
        (status = 200, description = "An endless stream: approval.requested, approval.responded, approval.lapsed, run.message.", content_type = "text/event-stream", body = Event),
        (status = 401, description = "No credentials, or a token no live device has.", body = ErrorBody),
        (status = 500, description = "Storage failed; nothing was decided.", body = ErrorBody),
    ),
    security(("bearer" = []), ("cookie" = []))
)]
pub(crate) async fn events(
    State(state): State<AppState>,
    authed: Authed,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let listener = BroadcastStream::new(state.store.subscribe());
    // Before each event the device is checked again: revoking it (or a storage failure: fail
    // closed) ends its stream, so a revoked device stops seeing cards at once.
    let stream = futures::stream::unfold(
        (listener, state.store.clone(), authed.token_hash),
        |(mut listener, store, token_hash)| async move {
            loop {
                let Ok(event) = listener.next().await? else {
                    // Lagged: this listener missed events; the app refetches on the next one.
                    continue;
                };
                if !matches!(store.is_live(&token_hash).await, Ok(true)) {
                    return None;
                }
                let Some(data) = serde_json::to_value(&event)
                    .ok()
                    .and_then(|v| v.get("data").cloned())
                else {
                    continue;
                };
                let sse = SseEvent::default()
                    .event(event.name())
                    .data(data.to_string());
                return Some((Ok(sse), (listener, store, token_hash)));
            }
        },
    );
    // A stop ends every stream, so the server's graceful shutdown is not held open by them
    // (the browser's EventSource reconnects to the next server).
    let stream = futures::StreamExt::take_until(stream, state.shutdown.clone().cancelled_owned());
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// `GET /api/health` (public): `ok` while the server answers.
#[utoipa::path(
    get,
    path = "/api/health",
    tag = "meta",
    responses((status = 200, description = "The server answers.", content_type = "text/plain", body = String)),
    security(())
)]
pub(crate) async fn health() -> &'static str {
    "ok"
}
