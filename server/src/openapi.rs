//! The OpenAPI 3 document of the JSON API (DESIGN §7), served at `GET /api/openapi.json`.
//!
//! Built at compile time by utoipa from the handlers' `#[utoipa::path]` annotations in `api` and
//! the wire types' `ToSchema` (iris-core's `openapi` feature). It lists exactly the operations of
//! [`crate::api_routes::API_ROUTES`] (checked by `server/tests/it/openapi.rs`).
//!
//! [`described`] then adds what the annotations cannot say: every limit the server enforces on
//! what it is sent (lengths, ranges, patterns, formats, from the constants the server checks
//! with) and the `links` from the responses that create things to the operations that take
//! their ids. `scripts/schemathesis.sh` fuzzes a demo server with it (every check, a fixed seed;
//! a step of `scripts/test.sh`): a request the document calls valid must be taken, one it calls
//! invalid refused.
//!
//! The document is public, like `/api/health`: it is the same for every server (static, built
//! into the binary), says nothing about the owner's mail, approvals, devices or even which
//! plugins are loaded, and describes a contract that is already published in the README and
//! DESIGN §7. Serving it without credentials lets tools (client generators, API browsers) and a
//! device that is not yet paired read it, and lets the route walk read it before it holds a
//! token. Every operation that touches the owner's data still answers 401 without credentials.

use std::sync::OnceLock;

use axum::Json;
use serde_json::{json, Value};
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
        api::reason,
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
pub(crate) async fn document() -> Json<Value> {
    static DOCUMENT: OnceLock<Value> = OnceLock::new();
    Json(DOCUMENT.get_or_init(described).clone())
}

/// The served document: utoipa's, with every limit the server enforces on what it is sent
/// ([`limits`]) and the links from the responses that create things to the operations that
/// take their ids ([`links`]).
pub fn described() -> Value {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).expect("the OpenAPI document is JSON");
    limits(&mut doc);
    links(&mut doc);
    doc
}

/// The format this document gives a page cursor of `GET /governance/approvals` (`before`, the
/// `next` of a page): hex digits encoding `TIME\nID`. OpenAPI lets a document name formats of
/// its own; a tool that does not know it reads a string of hex digits.
const PAGE_CURSOR_FORMAT: &str = "iris-page-cursor";

/// What `str::trim` removes (Rust's `char::is_whitespace`, Unicode White_Space), as the body of
/// a regular-expression class. Patterns are ECMA-262, as JSON Schema says.
const WHITESPACE: &str =
    r"\t\n\u000B\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000";
/// Control characters (Rust's `char::is_control`: general category Cc), as a class body.
const CONTROL: &str = r"\u0000-\u001F\u007F-\u009F";
/// The text-direction marks, embeddings, overrides and isolates a passkey's name must not hold,
/// as a class body.
const DIRECTION: &str = r"\u200E\u200F\u202A-\u202E\u2066-\u2069";

/// A pattern for text that holds `min` (0 or 1) to `max` (at least 2) characters once trimmed,
/// none of them in `excluded` (a class body; whitespace around is trimmed first, so it may be
/// anything `str::trim` removes).
fn trimmed(min: usize, max: usize, excluded: &str) -> String {
    let ws = WHITESPACE;
    let edge = format!("[^{ws}{excluded}]");
    let inner = if excluded.is_empty() {
        r"[\s\S]".to_string()
    } else {
        format!("[^{excluded}]")
    };
    let text = format!("{edge}(?:{inner}{{0,{}}}{edge})?", max - 2);
    let text = if min == 0 {
        format!("(?:{text})?")
    } else {
        text
    };
    format!("^[{ws}]*{text}[{ws}]*$")
}

/// `/paths/{path}/{method}` as a JSON pointer (`/` in the path escaped as `~1`).
fn operation(method: &str, path: &str) -> String {
    format!(
        "/paths/{}/{method}",
        path.replace('~', "~0").replace('/', "~1")
    )
}

/// Adds `fields` to the object at `pointer` (a JSON pointer into the document), replacing those
/// it has; panics when there is none, so a renamed type, field or operation fails the
/// document's tests rather than dropping a limit silently.
fn set(doc: &mut Value, pointer: &str, fields: Value) {
    let target = doc
        .pointer_mut(pointer)
        .and_then(Value::as_object_mut)
        .unwrap_or_else(|| panic!("the OpenAPI document has no object at {pointer}"));
    let Value::Object(fields) = fields else {
        panic!("fields to set at {pointer} must be an object")
    };
    target.extend(fields);
}

/// Adds `fields` to the schema of the query parameter `name` of the operation at `op`.
fn query(doc: &mut Value, op: &str, name: &str, fields: Value) {
    let index = doc
        .pointer(&format!("{op}/parameters"))
        .and_then(Value::as_array)
        .and_then(|ps| {
            ps.iter()
                .position(|p| p["name"] == name && p["in"] == "query")
        })
        .unwrap_or_else(|| panic!("{op} has no query parameter `{name}`"));
    set(doc, &format!("{op}/parameters/{index}/schema"), fields);
}

/// Every limit the server enforces on what it is sent, with the constants it enforces them
/// with, so the description and the server cannot drift apart (this module's tests check the
/// patterns against the server's own checks on texts at every edge, and scripts/schemathesis.sh
/// fuzzes the server with this document).
fn limits(doc: &mut Value) {
    use iris_core::approvals::turn::{MAX_CONVERSATION_ID_CHARS, MAX_MESSAGE_CHARS};
    use iris_core::ports::{PageLimit, SearchText};
    use iris_core::push::ENDPOINT_MAX_BYTES;

    let schemas = "/components/schemas";
    set(
        doc,
        &format!("{schemas}/ChatRequest/properties/message"),
        json!({
            "description": format!("What the owner says: 1 to {MAX_MESSAGE_CHARS} characters once leading and trailing whitespace is trimmed (400 otherwise)."),
            "minLength": 1,
            "pattern": trimmed(1, MAX_MESSAGE_CHARS, ""),
            "examples": ["trash the promo emails from this week"],
        }),
    );
    set(
        doc,
        &format!("{schemas}/ChatRequest/properties/conversation_id"),
        json!({
            "description": format!("Continue this conversation (the `conversation_id` of an earlier answer: 1 to {MAX_CONVERSATION_ID_CHARS} characters, no control characters); a new one starts when absent or null. An id no conversation has starts one with that id."),
            "minLength": 1,
            "maxLength": MAX_CONVERSATION_ID_CHARS,
            // "Holds no control character", said without `$` (a trailing newline is one, and
            // some regex engines let `$` match before it).
            "not": {"type": "string", "pattern": format!("[{CONTROL}]")},
        }),
    );
    let reason_max = iris_core::approvals::reason::MAX_REASON_CHARS;
    set(
        doc,
        &format!("{schemas}/ReasonRequest/properties/reason"),
        json!({
            "description": format!("Why the owner rejected the card: 1 to {reason_max} characters once leading and trailing whitespace is trimmed, no control characters but line breaks (400 otherwise)."),
            "minLength": 1,
            // Control characters but the line feed (`reason_text` keeps line breaks).
            "pattern": trimmed(1, reason_max, r"\u0000-\u0009\u000B-\u001F\u007F-\u009F"),
            "examples": ["I still need these"],
        }),
    );
    // The same rule for words given with the answer; empty or blank is no reason.
    set(
        doc,
        &format!("{schemas}/RespondRequest/properties/reason"),
        json!({
            "description": format!("Optional words from the owner, stored on the row: at most {reason_max} characters once leading and trailing whitespace is trimmed, no control characters but line breaks (400 otherwise); empty or blank is no reason."),
            "pattern": trimmed(0, reason_max, r"\u0000-\u0009\u000B-\u001F\u007F-\u009F"),
        }),
    );
    let name_max = crate::passkeys::api::MAX_NAME_CHARS;
    set(
        doc,
        &format!("{schemas}/RegistrationRequest/properties/name"),
        json!({
            "description": format!("The owner's name for the new passkey, e.g. \"iPhone\": 1 to {name_max} characters once leading and trailing whitespace is trimmed, none of them a control or text-direction character (400 otherwise)."),
            "minLength": 1,
            "pattern": trimmed(1, name_max, &format!("{CONTROL}{DIRECTION}")),
        }),
    );

    // GET /governance/approvals: every value is trimmed, and an empty one is the same as none.
    let ws = WHITESPACE;
    let limit =
        json!({"minimum": 1, "maximum": PageLimit::MAX, "default": PageLimit::DEFAULT.get()});
    let list = operation("get", "/governance/approvals");
    query(
        doc,
        &list,
        "status",
        json!({
            "pattern": format!("^[{ws}]*(?:all|answered|pending|approved|rejected|expired)?[{ws}]*$"),
            "default": "all",
        }),
    );
    query(doc, &list, "limit", limit.clone());
    query(
        doc,
        &list,
        "before",
        json!({
            "description": "The `next` of the previous page: hex digits encoding `TIME\nID` (an RFC 3339 time and an approval id), which this document names the format `iris-page-cursor`.",
            "format": PAGE_CURSOR_FORMAT,
            "pattern": format!("^[{ws}]*(?:[0-9A-Fa-f]{{2}})*[{ws}]*$"),
        }),
    );
    for name in ["since", "until"] {
        query(
            doc,
            &list,
            name,
            json!({"anyOf": [
                {"type": "string", "format": "date-time"},
                {"type": "string", "format": "date"},
                {"type": "string", "pattern": format!("^[{ws}]*$")},
            ]}),
        );
    }
    query(
        doc,
        &list,
        "q",
        json!({"pattern": trimmed(0, SearchText::MAX_CHARS, CONTROL)}),
    );

    // GET /api/audit: one approval's entries, or a page of the whole log, never both. The three
    // are one object of form-encoded query parameters so that rule can be said.
    let audit = operation("get", "/api/audit");
    let parameters = doc
        .pointer_mut(&format!("{audit}/parameters"))
        .and_then(Value::as_array_mut)
        .expect("GET /api/audit has parameters");
    let mut properties = serde_json::Map::new();
    parameters.retain(|p| {
        let name = p["name"].as_str().unwrap_or_default();
        if p["in"] != "query" || !["approval_id", "limit", "before"].contains(&name) {
            return true;
        }
        let mut schema = p["schema"].clone();
        schema["description"] = p["description"].clone();
        properties.insert(name.to_string(), schema);
        false
    });
    assert_eq!(
        properties.len(),
        3,
        "GET /api/audit: approval_id, limit and before"
    );
    parameters.push(json!({
        "name": "selection",
        "in": "query",
        "style": "form",
        "explode": true,
        "required": false,
        "description": "Either `approval_id` (one approval's entries, oldest first, whole) or `limit` and `before` (a page of the whole log, newest first), never both (400). An empty value is the same as none.",
        "schema": {
            "type": "object",
            "properties": properties,
            "not": {"required": ["approval_id"], "anyOf": [{"required": ["limit"]}, {"required": ["before"]}]},
        },
    }));
    let selection = format!(
        "{audit}/parameters/{}/schema/properties",
        parameters.len() - 1
    );
    set(doc, &format!("{selection}/limit"), limit);
    set(
        doc,
        &format!("{selection}/before"),
        json!({"type": "integer", "format": "int64"}),
    );

    // POST /api/push/subscriptions: `PushSubscription.toJSON()`, exactly.
    let base64url = "[A-Za-z0-9_-]";
    set(
        doc,
        &format!(
            "{}/requestBody/content/application~1json/schema",
            operation("post", "/api/push/subscriptions")
        ),
        json!({
            "type": "object",
            "description": "`PushSubscription.toJSON()`. Beyond this shape the endpoint must be public (not a private, link-local or unspecified address; plain http only on this machine's loopback), `expirationTime` not past, and `p256dh` a point on P-256 (400 otherwise).",
            "required": ["endpoint", "keys"],
            "additionalProperties": false,
            "properties": {
                "endpoint": {
                    "type": "string",
                    "description": "The push service's URL: https (http only on loopback), ASCII without whitespace or control characters, no user name or password.",
                    "maxLength": ENDPOINT_MAX_BYTES,
                    "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://[!-~]+$",
                },
                "expirationTime": {
                    "type": ["number", "null"],
                    "description": "When the subscription stops working, in milliseconds since 1970 (in the future), or null.",
                    "minimum": 0,
                },
                "keys": {
                    "type": "object",
                    "required": ["p256dh", "auth"],
                    "additionalProperties": false,
                    "properties": {
                        "p256dh": {
                            "type": "string",
                            "description": "The browser's uncompressed P-256 public key (65 bytes, starting 0x04), base64url, padding optional.",
                            "pattern": format!("^B[A-P]{base64url}{{84}}[AEIMQUYcgkosw048]=*$"),
                        },
                        "auth": {
                            "type": "string",
                            "description": "The 16-byte authentication secret, base64url, padding optional.",
                            "pattern": format!("^{base64url}{{21}}[AQgw]=*$"),
                        },
                    },
                },
            },
        }),
    );

    // DELETE /api/passkeys/{id}: the body (a proof) may be left out while no passkey exists.
    set(
        doc,
        &format!("{}/requestBody", operation("delete", "/api/passkeys/{id}")),
        json!({"required": false}),
    );

    // POST /governance/approvals/{id}/undo takes no choice: no body, or an empty object.
    set(
        doc,
        &operation("post", "/governance/approvals/{id}/undo"),
        json!({"requestBody": {
            "description": "None, or an empty object: the undo always reverses exactly the items that ran.",
            "required": false,
            "content": {"application/json": {"schema": {"type": "object", "maxProperties": 0}}},
        }}),
    );
}

/// The links from each response that creates or lists something to the operations that take
/// its id (OpenAPI `links`): a chat's `approval_id` and `conversation_id`, a page's `next`, a
/// challenge's `ceremony_id`, a new passkey's or subscription's `id`.
fn links(doc: &mut Value) {
    let approval = |from: &str| {
        json!({
            "GetApproval": {"operationId": "get_approval", "parameters": {"id": from}, "description": "The approval."},
            "Respond": {"operationId": "respond", "parameters": {"id": from}, "description": "Approve or reject it."},
            "ApprovalPasskey": {"operationId": "approval_challenge", "parameters": {"id": from}, "description": "A passkey challenge for approving it."},
            "RetryResume": {"operationId": "retry_resume", "parameters": {"id": from}, "description": "Retry its failed resume."},
            "Undo": {"operationId": "undo", "parameters": {"id": from}, "description": "Undo what it ran."},
        })
    };
    let response = |method: &str, path: &str, status: &str| {
        format!("{}/responses/{status}", operation(method, path))
    };

    let mut chat = approval("$response.body#/approval_id");
    chat.as_object_mut().unwrap().extend(
        json!({
            "Conversation": {"operationId": "conversation", "parameters": {"id": "$response.body#/conversation_id"}, "description": "What was said in this conversation."},
            "ContinueConversation": {"operationId": "chat", "requestBody": {"conversation_id": "$response.body#/conversation_id"}, "description": "The next turn of this conversation."},
        })
        .as_object()
        .unwrap()
        .clone(),
    );
    set(
        doc,
        &response("post", "/api/chat", "200"),
        json!({"links": chat}),
    );

    let mut listed = approval("$response.body#/approvals/0/id");
    listed.as_object_mut().unwrap().insert(
        "NextPage".into(),
        json!({"operationId": "list_approvals", "parameters": {"before": "$response.body#/next"}, "description": "The following page."}),
    );
    set(
        doc,
        &response("get", "/governance/approvals", "200"),
        json!({"links": listed}),
    );
    set(
        doc,
        &response("get", "/api/audit", "200"),
        json!({"links": {"NextPage": {"operationId": "audit", "parameters": {"query.before": "$response.body#/next"}, "description": "The following page of the whole log."}}}),
    );
    for (method, path) in [
        ("post", "/governance/approvals/{id}/respond"),
        ("post", "/governance/approvals/{id}/undo"),
        ("post", "/governance/approvals/{id}/reason"),
    ] {
        set(
            doc,
            &response(method, path, "200"),
            json!({"links": approval("$response.body#/approval/id")}),
        );
    }
    let mut resumed = approval("$response.body#/approval/id");
    resumed.as_object_mut().unwrap().insert(
        "Conversation".into(),
        json!({"operationId": "conversation", "parameters": {"id": "$response.body#/run/conversation_id"}, "description": "The resumed conversation."}),
    );
    set(
        doc,
        &response("post", "/governance/approvals/{id}/resume", "200"),
        json!({"links": resumed}),
    );

    // Passkeys: a registration challenge's ceremony is registered with; a proof's or an
    // approval challenge's is answered with the browser's credential.
    set(
        doc,
        &response("post", "/api/passkeys/registrations", "200"),
        json!({"links": {"Register": {"operationId": "register_passkey", "requestBody": {"ceremony_id": "$response.body#/ceremony_id"}, "description": "Register the passkey the browser made for this challenge (`credential` from `navigator.credentials.create`)."}}}),
    );
    set(
        doc,
        &response("post", "/governance/approvals/{id}/passkey", "200"),
        json!({"links": {"Approve": {"operationId": "respond", "parameters": {"id": "$request.path.id"}, "requestBody": {"decision": "approve", "passkey": {"ceremony_id": "$response.body#/ceremony_id"}}, "description": "Approve the card with the browser's answer to this challenge (`passkey.credential` from `navigator.credentials.get`)."}}}),
    );
    set(
        doc,
        &response("post", "/api/passkeys", "201"),
        json!({"links": {"Remove": {"operationId": "remove_passkey", "parameters": {"id": "$response.body#/id"}, "description": "Remove this passkey."}}}),
    );
    set(
        doc,
        &response("get", "/api/passkeys", "200"),
        json!({"links": {"Remove": {"operationId": "remove_passkey", "parameters": {"id": "$response.body#/passkeys/0/id"}, "description": "Remove the first passkey."}}}),
    );

    // Push: a new subscription's id, and the listed ones'.
    set(
        doc,
        &response("post", "/api/push/subscriptions", "201"),
        json!({"links": {"Unsubscribe": {"operationId": "unsubscribe_push", "parameters": {"id": "$response.body#/id"}, "description": "Remove this subscription."}}}),
    );
    set(
        doc,
        &response("get", "/api/push/subscriptions", "200"),
        json!({"links": {"Unsubscribe": {"operationId": "unsubscribe_push", "parameters": {"id": "$response.body#/subscriptions/0/id"}, "description": "Remove the first subscription."}}}),
    );
}

#[cfg(test)]
mod tests;
