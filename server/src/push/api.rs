//! The Web Push routes (DESIGN §7, §9 "the owner's phone"). A device's subscriptions are its
//! own business: any paired device, read or control, may add, list and remove its own (the one
//! change a read device may make); it never sees or touches another device's. With the browser
//! cookie a change must come from this site, as for every other change (CSRF).

use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::Json;
use chrono::{DateTime, Utc};
use iris_core::ports::PushStore;
use iris_core::push::NewSubscription;
use iris_core::wire::ErrorBody;
use serde::Serialize;

use super::PUSH_OFF;
use crate::api::{refuse_cross_site, Authed, Body};
use crate::error::ApiError;
use crate::state::AppState;

/// `GET /api/push/key`'s answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PushKeyBody {
    /// The server's VAPID public key (uncompressed P-256, unpadded base64url): the
    /// `applicationServerKey` to subscribe with.
    pub public_key: String,
}

/// A new subscription's id.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SubscriptionCreated {
    /// The id to list or remove it by.
    pub id: String,
}

/// One of this device's subscriptions (its keys stay on the server).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SubscriptionView {
    /// Its id.
    pub id: String,
    /// The push service's URL.
    pub endpoint: String,
    /// When the browser said it stops working, if it did.
    pub expires_at: Option<DateTime<Utc>>,
    /// When it was added.
    pub created_at: DateTime<Utc>,
}

/// `GET /api/push/subscriptions`'s answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SubscriptionList {
    /// This device's subscriptions, oldest first.
    pub subscriptions: Vec<SubscriptionView>,
}

/// A paired device changing what is its own: its push subscriptions. Read or control scope;
/// for the browser cookie a same-origin request (403 otherwise).
pub struct OwnDevice(pub String);

impl FromRequestParts<AppState> for OwnDevice {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let authed = Authed::from_request_parts(parts, state).await?;
        refuse_cross_site(&authed, parts, state)?;
        Ok(OwnDevice(authed.actor.name))
    }
}

fn push_of(state: &AppState) -> Result<&super::WebPush, ApiError> {
    state
        .push
        .as_deref()
        .ok_or_else(|| ApiError::Off(PUSH_OFF.into()))
}

/// `GET /api/push/key` (any device): the key to subscribe with.
#[utoipa::path(
    get,
    path = "/api/push/key",
    operation_id = "push_key",
    tag = "push",
    responses(
        (status = 200, description = "The server's VAPID public key.", body = PushKeyBody),
        (status = 401, description = "No credentials, or a token no live device has.", body = ErrorBody),
        (status = 404, description = "Web Push is off (no push key on this server): the sentence names the setting that turns it on.", body = ErrorBody),
    ),
    security(("bearer" = []), ("cookie" = []))
)]
pub(crate) async fn key(
    State(state): State<AppState>,
    _device: Authed,
) -> Result<Json<PushKeyBody>, ApiError> {
    Ok(Json(PushKeyBody {
        public_key: push_of(&state)?.public_key(),
    }))
}

/// `POST /api/push/subscriptions` (any device, for itself): the browser's
/// `PushSubscription.toJSON()`. The same endpoint again replaces its keys.
#[utoipa::path(
    post,
    path = "/api/push/subscriptions",
    operation_id = "subscribe_push",
    tag = "push",
    request_body(content = Object, description = "`PushSubscription.toJSON()`: {\"endpoint\", \"expirationTime\", \"keys\": {\"p256dh\", \"auth\"}}; the endpoint https (plain http only on loopback)."),
    responses(
        (status = 201, description = "Subscribed: this device gets a push when a card waits and when it closes.", body = SubscriptionCreated),
        (status = 400, description = "Not a subscription: the sentence names the field and the rule (the endpoint https and public, plain http only on loopback; p256dh a point on P-256; auth 16 bytes; expirationTime not past); nothing stored.", body = ErrorBody),
        (status = 409, description = "The endpoint is another device's subscription; nothing stored.", body = ErrorBody),
        (status = 401, description = "No credentials, or a token no live device has.", body = ErrorBody),
        (status = 403, description = "A cross-site request with the browser cookie (CSRF); nothing stored.", body = ErrorBody),
        (status = 404, description = "Web Push is off; nothing stored.", body = ErrorBody),
    ),
    security(("bearer" = []), ("cookie" = []))
)]
pub(crate) async fn subscribe(
    State(state): State<AppState>,
    OwnDevice(device): OwnDevice,
    Body(body): Body,
) -> Result<(StatusCode, Json<SubscriptionCreated>), ApiError> {
    push_of(&state)?;
    let value = crate::json::parse_strict(&body)
        .map_err(|e| ApiError::BadRequest(format!("the subscription: {e}; nothing was stored")))?;
    let subscription = NewSubscription::parse(&value, Utc::now())
        .map_err(|e| ApiError::BadRequest(format!("{e}; nothing was stored")))?;
    super::vapid::check_key(&subscription.keys)
        .map_err(|e| ApiError::BadRequest(format!("{e}; nothing was stored")))?;
    let Some(id) = state
        .store
        .add_subscription(&device, &subscription, Utc::now())
        .await?
    else {
        return Err(ApiError::InUse(
            "this endpoint is another device's push subscription; nothing was stored (that device removes it, or revoking it does)".into(),
        ));
    };
    tracing::info!(device = %device, subscription = %id, "a device subscribed to pushes");
    Ok((StatusCode::CREATED, Json(SubscriptionCreated { id })))
}

/// `GET /api/push/subscriptions` (any device): this device's subscriptions.
#[utoipa::path(
    get,
    path = "/api/push/subscriptions",
    operation_id = "list_push_subscriptions",
    tag = "push",
    responses(
        (status = 200, description = "This device's subscriptions (never another device's).", body = SubscriptionList),
        (status = 401, description = "No credentials, or a token no live device has.", body = ErrorBody),
    ),
    security(("bearer" = []), ("cookie" = []))
)]
pub(crate) async fn list(
    State(state): State<AppState>,
    device: Authed,
) -> Result<Json<SubscriptionList>, ApiError> {
    let subscriptions = state
        .store
        .subscriptions(&device.actor.name)
        .await?
        .into_iter()
        .map(|s| SubscriptionView {
            id: s.id,
            endpoint: s.endpoint.as_str().to_owned(),
            expires_at: s.expires_at,
            created_at: s.created_at,
        })
        .collect();
    Ok(Json(SubscriptionList { subscriptions }))
}

/// `DELETE /api/push/subscriptions/{id}` (any device, its own): no more pushes to it.
#[utoipa::path(
    delete,
    path = "/api/push/subscriptions/{id}",
    operation_id = "unsubscribe_push",
    tag = "push",
    params(("id" = String, Path, description = "The subscription's id.")),
    responses(
        (status = 204, description = "Removed, with any push still waiting for it."),
        (status = 401, description = "No credentials, or a token no live device has.", body = ErrorBody),
        (status = 403, description = "A cross-site request with the browser cookie (CSRF); nothing removed.", body = ErrorBody),
        (status = 404, description = "This device has no subscription with this id.", body = ErrorBody),
    ),
    security(("bearer" = []), ("cookie" = []))
)]
pub(crate) async fn unsubscribe(
    State(state): State<AppState>,
    OwnDevice(device): OwnDevice,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    if state.store.remove_subscription(&device, &id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!(
            "device `{device}` has no push subscription `{id}`; nothing was removed"
        )))
    }
}
