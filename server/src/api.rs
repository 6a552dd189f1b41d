//! The JSON API of DESIGN §7. Handlers parse input into domain types, call the core, and map
//! domain errors to HTTP through [`ApiError`] (one place).
//!
//! This file holds the router ([`routes`], built from the route table), the extractors every
//! handler shares (who calls: [`Authed`], [`Reader`], [`Controller`]; what they send: [`Body`],
//! [`ApiQuery`], [`parse_json`]), [`to_the_end`], and the two small routes `plugins` and
//! `health`. The handlers live beside it, by tag:
//! - `governance.rs`: the approvals listing and one row, the answer (`respond`), the retry of a
//!   failed resume, the card's undo, and the audit log;
//! - `chat.rs`: one chat turn and a conversation's lines;
//! - `events.rs`: the live feed (Server-Sent Events).

mod chat;
mod events;
mod governance;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Query, Request, State};
use axum::http::request::Parts;
use axum::http::Method;
use axum::routing::{on, MethodFilter, MethodRouter};
use axum::{Json, Router};
use iris_core::approvals::Actor;
use iris_core::ports::Scope;
use iris_core::wire::{ErrorBody, PluginList};

use crate::api_routes::{Endpoint, API_ROUTES};
use crate::auth::{self, Presented};
use crate::error::ApiError;
use crate::openapi;
use crate::passkeys::api as passkeys;
use crate::push::api as push;
use crate::state::AppState;
// The handlers keep their `api::` paths (the OpenAPI document names them so, with the
// `__path_*` types utoipa puts beside each).
pub(crate) use chat::*;
pub(crate) use events::*;
pub(crate) use governance::*;

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
/// served route is one the OpenAPI document must list (`server/tests/it/openapi.rs` checks it).
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
        Endpoint::Reason => on(method, reason),
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

/// [`parse_json`] for a body that may carry `items` (an answer, a passkey challenge): an entry
/// that is not a whole number from 0 to 4294967295 is refused in words, before the typed parse
/// would name it as a float (`99999999999999999999` reads as `1e20`).
///
/// # Errors
/// [`ApiError::BadRequest`] naming the entry and the rule, or [`parse_json`]'s.
pub(crate) fn parse_shaped<T: serde::de::DeserializeOwned>(
    body: &Bytes,
    what: &str,
) -> Result<T, ApiError> {
    if let Ok(value) = crate::json::parse_strict(body) {
        if let Some(items) = value.get("items").and_then(serde_json::Value::as_array) {
            for entry in items {
                let whole = entry.as_u64().is_some_and(|n| u32::try_from(n).is_ok());
                if !whole {
                    let said = match entry.as_f64() {
                        Some(n) if n.fract() == 0.0 && n >= 0.0 => {
                            "a number too large to be an index".to_string()
                        }
                        _ => format!("`{entry}`"),
                    };
                    return Err(ApiError::BadRequest(format!(
                        "`items` must list whole numbers, indices into the card's items (0 for \
                         the first); one entry is {said}; nothing was changed"
                    )));
                }
            }
        }
    }
    parse_json(body, what)
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
