//! The table of every route the JSON API serves under `/api` and `/governance` (DESIGN §7).
//!
//! One table, three readers: `api::routes` builds the router from it (the method comes from
//! here, the handler from an exhaustive match on [`Endpoint`]), the OpenAPI document at
//! `GET /api/openapi.json` must list exactly these operations, and the route walk in
//! `server/tests/it/openapi.rs` includes this file to check that the served document and the table
//! agree. So a route cannot be served without being documented and walked. This file has no
//! dependencies so the test can include it with `#[path]`.

/// Which handler answers a route (one per operation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /api/chat`: one turn.
    Chat,
    /// `GET /api/audit`: the audit log.
    Audit,
    /// `GET /api/events`: Server-Sent Events.
    Events,
    /// `GET /api/conversations/{id}`: what was said.
    Conversation,
    /// `GET /api/plugins`: loaded plugins and their tools.
    Plugins,
    /// `GET /api/health`: liveness, public.
    Health,
    /// `GET /api/openapi.json`: this API's OpenAPI document, public.
    OpenApi,
    /// `GET /governance/approvals`: the rows.
    ListApprovals,
    /// `GET /governance/approvals/{id}`: one row.
    GetApproval,
    /// `POST /governance/approvals/{id}/respond`: the owner's answer.
    Respond,
    /// `POST /governance/approvals/{id}/resume`: retry a failed resume.
    RetryResume,
    /// `POST /governance/approvals/{id}/undo`: the card's undo, once.
    Undo,
    /// `POST /governance/approvals/{id}/reason`: why the owner rejected a card, once.
    Reason,
    /// `GET /api/push/key`: the server's VAPID public key.
    PushKey,
    /// `POST /api/push/subscriptions`: this device subscribes to pushes.
    PushSubscribe,
    /// `GET /api/push/subscriptions`: this device's subscriptions.
    PushSubscriptions,
    /// `DELETE /api/push/subscriptions/{id}`: this device removes one of its own.
    PushUnsubscribe,
    /// `POST /governance/approvals/{id}/passkey`: a passkey challenge for approving one card.
    ApprovalPasskey,
    /// `GET /api/passkeys`: the owner's passkeys and whether they work here.
    Passkeys,
    /// `POST /api/passkeys/registrations`: a challenge to register a passkey.
    PasskeyRegistration,
    /// `POST /api/passkeys/proofs`: a challenge to prove an existing passkey.
    PasskeyProof,
    /// `POST /api/passkeys`: register a passkey.
    PasskeyRegister,
    /// `DELETE /api/passkeys/{id}`: remove a passkey.
    PasskeyRemove,
}

/// Who may call a route (DESIGN §2 "device, scope": every state-changing route is control only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No credentials needed: liveness and the API's own description, which carry none of the
    /// owner's data.
    Public,
    /// Any paired device (read or control); 401 without credentials.
    AnyDevice,
    /// A control device, and for the browser cookie a same-origin request; 401 without
    /// credentials, 403 for a read device or a cross-site cookie request.
    Control,
    /// Any paired device changing what is its own (its push subscriptions: the one change a
    /// read device may make), and for the browser cookie a same-origin request; 401 without
    /// credentials, 403 for a cross-site cookie request.
    OwnDevice,
}

/// One served operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiRoute {
    /// The handler.
    pub endpoint: Endpoint,
    /// HTTP method in upper case (`GET`, `POST`).
    pub method: &'static str,
    /// Path in axum 0.8 and OpenAPI syntax (`{id}` for a segment).
    pub path: &'static str,
    /// Who may call it.
    pub access: Access,
}

const fn route(
    endpoint: Endpoint,
    method: &'static str,
    path: &'static str,
    access: Access,
) -> ApiRoute {
    ApiRoute {
        endpoint,
        method,
        path,
        access,
    }
}

/// Every operation the API serves, in the order of DESIGN §7.
pub const API_ROUTES: &[ApiRoute] = &[
    route(Endpoint::Chat, "POST", "/api/chat", Access::Control),
    route(Endpoint::Audit, "GET", "/api/audit", Access::AnyDevice),
    route(Endpoint::Events, "GET", "/api/events", Access::AnyDevice),
    route(
        Endpoint::Conversation,
        "GET",
        "/api/conversations/{id}",
        Access::AnyDevice,
    ),
    route(Endpoint::Plugins, "GET", "/api/plugins", Access::AnyDevice),
    route(Endpoint::Health, "GET", "/api/health", Access::Public),
    route(
        Endpoint::OpenApi,
        "GET",
        "/api/openapi.json",
        Access::Public,
    ),
    route(
        Endpoint::ListApprovals,
        "GET",
        "/governance/approvals",
        Access::AnyDevice,
    ),
    route(
        Endpoint::GetApproval,
        "GET",
        "/governance/approvals/{id}",
        Access::AnyDevice,
    ),
    route(
        Endpoint::Respond,
        "POST",
        "/governance/approvals/{id}/respond",
        Access::Control,
    ),
    route(
        Endpoint::RetryResume,
        "POST",
        "/governance/approvals/{id}/resume",
        Access::Control,
    ),
    route(
        Endpoint::Undo,
        "POST",
        "/governance/approvals/{id}/undo",
        Access::Control,
    ),
    route(
        Endpoint::Reason,
        "POST",
        "/governance/approvals/{id}/reason",
        Access::Control,
    ),
    route(
        Endpoint::ApprovalPasskey,
        "POST",
        "/governance/approvals/{id}/passkey",
        Access::Control,
    ),
    route(Endpoint::PushKey, "GET", "/api/push/key", Access::AnyDevice),
    route(
        Endpoint::PushSubscribe,
        "POST",
        "/api/push/subscriptions",
        Access::OwnDevice,
    ),
    route(
        Endpoint::PushSubscriptions,
        "GET",
        "/api/push/subscriptions",
        Access::AnyDevice,
    ),
    route(
        Endpoint::PushUnsubscribe,
        "DELETE",
        "/api/push/subscriptions/{id}",
        Access::OwnDevice,
    ),
    route(
        Endpoint::Passkeys,
        "GET",
        "/api/passkeys",
        Access::AnyDevice,
    ),
    route(
        Endpoint::PasskeyRegistration,
        "POST",
        "/api/passkeys/registrations",
        Access::Control,
    ),
    route(
        Endpoint::PasskeyProof,
        "POST",
        "/api/passkeys/proofs",
        Access::Control,
    ),
    route(
        Endpoint::PasskeyRegister,
        "POST",
        "/api/passkeys",
        Access::Control,
    ),
    route(
        Endpoint::PasskeyRemove,
        "DELETE",
        "/api/passkeys/{id}",
        Access::Control,
    ),
];
