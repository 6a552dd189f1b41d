//! The OpenAPI 3 document of the JSON API (DESIGN §7), served at `GET /api/openapi.json`.
//!
//! Built at compile time by utoipa from the handlers' `#[utoipa::path]` annotations in `api` and
//! the wire types' `ToSchema` (iris-core's `openapi` feature). It lists exactly the operations of
//! [`crate::api_routes::API_ROUTES`] (checked by `server/tests/openapi.rs`).
//!
//! The document is public, like `/api/health`: it is the same for every server (static, built
//! into the binary), says nothing about the owner's mail, approvals, devices or even which
//! plugins are loaded, and describes a contract that is already published in the README and
//! DESIGN §7. Serving it without credentials lets tools (client generators, API browsers) and a
//! device that is not yet paired read it, and lets the route walk read it before it holds a
//! token. Every operation that touches the owner's data still answers 401 without credentials.

use axum::Json;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::api;

/// The API's document: every route of `API_ROUTES`, the wire types as schemas, and the two ways
/// a device proves itself (bearer token; the paired browser's session cookie `iris_session`).
#[derive(OpenApi)]
#[openapi(
    info(
        title = "IRIS approvals",
        description = "A personal assistant whose agent acts on the owner's mail; destructive or pinned tool calls run only after the owner approves the exact call. Every state-changing operation needs a control device (403 for a read device or a cross-site cookie request)."
    ),
    paths(
        api::chat,
        api::audit,
        api::events,
        api::conversation,
        api::plugins,
        api::health,
        document,
        api::list_approvals,
        api::get_approval,
        api::respond,
        api::retry_resume,
        api::undo,
        crate::push::api::key,
        crate::push::api::subscribe,
        crate::push::api::list,
        crate::push::api::unsubscribe,
        crate::passkeys::api::approval_challenge,
        crate::passkeys::api::list,
        crate::passkeys::api::registration,
        crate::passkeys::api::proof,
        crate::passkeys::api::register,
        crate::passkeys::api::remove,
    ),
    modifiers(&SecuritySchemes),
    tags(
        (name = "chat", description = "Talking to the assistant."),
        (name = "governance", description = "Approvals and the audit log: one row per gated call, answered through one capability."),
        (name = "events", description = "Live notices (Server-Sent Events)."),
        (name = "plugins", description = "Loaded plugins, their tools, effects and gates."),
        (name = "meta", description = "Liveness and this document; public."),
        (name = "passkeys", description = "Passkeys bound to the call: the owner's passkeys (WebAuthn with user verification); IRIS_PASSKEY_REQUIRED says which cards need one to be approved."),
        (name = "push", description = "Web Push: a device subscribes itself to a notification when a card waits and when it closes (IRIS_VAPID_SUBJECT turns it on)."),
    )
)]
pub struct ApiDoc;

/// Adds the security schemes the operations refer to: `bearer` (`Authorization: Bearer TOKEN`
/// from `iris devices add`) and `cookie` (the paired browser's HttpOnly session cookie `iris_session`).
struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "A device token from `iris devices add --name NAME --scope read|control`.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "cookie",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                crate::session::SESSION_COOKIE,
                "The paired browser's session cookie; a state-changing request must also come from this site (Origin check).",
            ))),
        );
    }
}

/// `GET /api/openapi.json` (public, see the module docs): this document.
#[utoipa::path(
    get,
    path = "/api/openapi.json",
    tag = "meta",
    responses((status = 200, description = "The OpenAPI 3 document of this API.", content_type = "application/json", body = Object)),
    security(())
)]
pub(crate) async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
