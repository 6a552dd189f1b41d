//! The OpenAPI document and the route walk (DESIGN §2 "device, scope", §7 HTTP), over
//! real HTTP against the server in process (`support::TestApp` on a listener, its background
//! work running).
//!
//! `GET /api/openapi.json` must list exactly the operations of the router's route table
//! (`server/src/api_routes.rs`, included below: the router is built from it, so a route added to
//! the router but missing from the document fails here). The walk then takes every operation
//! from the served document: without credentials each answers 401 except the deliberately
//! public ones ([`PUBLIC`]); a read device gets 403 on every state-changing method but those
//! on its own push subscriptions, and nothing changes; a control device answering an unknown id gets 404; a method the document does not
//! list on one of its paths answers 405. A cookie request from another origin to any
//! state-changing operation is refused with 403 (CSRF).

use crate::support;

#[path = "../../src/api_routes.rs"]
#[allow(dead_code)]
mod api_routes;

use std::collections::BTreeSet;

use iris_core::ports::Scope;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use support::{snapshot, Client, ModelServer, TestApp, World};

/// The operations answered without credentials, on purpose: liveness, and the document itself
/// (static, none of the owner's data; see `server/src/openapi.rs`).
const PUBLIC: &[(&str, &str)] = &[("GET", "/api/health"), ("GET", "/api/openapi.json")];

/// Methods that change state (DESIGN §2: every one is a gated write, control only).
const STATE_CHANGING: &[&str] = &["POST", "PUT", "PATCH", "DELETE"];

/// The owner's request that halts on a trash call (a pending approval to act on).
const REQUEST: &str = "trash the promo emails from this week";

/// A body every state-changing operation would accept if it let the request through (a chat
/// message and an approving decision), so a 401 or 403 is the gate, not a parse error.
fn acceptable_body() -> Value {
    json!({"message": REQUEST, "decision": "approve"})
}

/// `(METHOD, path)` of every operation in an OpenAPI document.
fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let mut ops = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths is an object") {
        for method in item.as_object().unwrap().keys() {
            let upper = method.to_uppercase();
            if [
                "GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE",
            ]
            .contains(&upper.as_str())
            {
                ops.insert((upper, path.clone()));
            }
        }
    }
    ops
}

/// The operation's path with `{id}` filled in.
fn concrete(path: &str, id: &str) -> String {
    path.replace("{id}", id)
}

/// A demo mailbox, a control and a read device, a server in process with a client of it on its
/// listener, and one pending approval.
struct Fixture {
    app: TestApp,
    model: ModelServer,
    client: Client,
    control: String,
    read: String,
    pending: String,
}

async fn fixture() -> Fixture {
    let model = ModelServer::start(&support::scripts::promo_trash()).await;
    let dir = tempfile::tempdir().unwrap();
    let written =
        iris_email::demo::write_demo_maildir(&dir.path().join("Maildir"), chrono::Utc::now())
            .unwrap();
    assert!(written > 0);
    let app = TestApp::with_model(&model)
        .in_dir(dir)
        .mailbox()
        // Web Push on, so its key route answers 200 like every other read.
        .vapid_subject("mailto:owner@example.org")
        .background()
        .start()
        .await;
    let control = app.add_device("phone", Scope::Control).await;
    let read = app.add_device("wall", Scope::Read).await;
    let client = app.client().await;
    let (s, halted) = client
        .post("/api/chat", Some(&control), json!({"message": REQUEST}))
        .await;
    assert_eq!(s, StatusCode::OK, "{halted}");
    assert_eq!(halted["status"], "awaiting_approval", "{halted}");
    let pending = halted["approval_id"].as_str().unwrap().to_string();
    Fixture {
        app,
        model,
        client,
        control,
        read,
        pending,
    }
}

/// Everything a refused request must leave as it was: the approvals, the audit, the mail and
/// how many times the model was asked.
async fn state_of(
    f: &Fixture,
    client: &Client,
) -> (
    Value,
    Value,
    std::collections::BTreeMap<String, Vec<u8>>,
    usize,
) {
    (
        client.get("/governance/approvals", &f.control).await,
        client.get("/api/audit", &f.control).await,
        snapshot(&f.app.maildir()),
        f.model.requests.lock().unwrap().len(),
    )
}

async fn served_document(client: &Client) -> Value {
    let resp = client
        .http
        .get(format!("{}/api/openapi.json", client.url))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK, "the document is public");
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/json"));
    resp.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_route_is_gated() {
    let f = fixture().await;
    let client = &f.client;
    let doc = served_document(client).await;

    // The document is OpenAPI 3 and lists exactly the router's operations.
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3."),
        "{}",
        doc["openapi"]
    );
    let documented = operations(&doc);
    let routed: BTreeSet<(String, String)> = api_routes::API_ROUTES
        .iter()
        .map(|r| (r.method.to_string(), r.path.to_string()))
        .collect();
    assert_eq!(
        documented, routed,
        "the OpenAPI document and the router's route table differ"
    );
    let public: BTreeSet<(String, String)> = PUBLIC
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    let table_public: BTreeSet<(String, String)> = api_routes::API_ROUTES
        .iter()
        .filter(|r| r.access == api_routes::Access::Public)
        .map(|r| (r.method.to_string(), r.path.to_string()))
        .collect();
    assert_eq!(public, table_public, "the public routes changed");

    // The bearer scheme, and what each operation declares.
    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(schemes["bearer"]["type"], "http", "{schemes}");
    assert_eq!(schemes["bearer"]["scheme"], "bearer", "{schemes}");
    assert_eq!(schemes["cookie"]["in"], "cookie", "{schemes}");
    assert_eq!(schemes["cookie"]["name"], "iris_session", "{schemes}");
    for (method, path) in &documented {
        let op = &doc["paths"][path][method.to_lowercase()];
        let responses = op["responses"].as_object().unwrap();
        assert!(
            responses.keys().any(|status| status.starts_with('2')),
            "{method} {path}: no 2xx"
        );
        let security = op["security"].as_array().unwrap();
        if public.contains(&(method.clone(), path.clone())) {
            assert_eq!(security, &[json!({})], "{method} {path} is public");
            continue;
        }
        assert!(
            security.contains(&json!({"bearer": []})),
            "{method} {path}: {op}"
        );
        assert!(responses.contains_key("401"), "{method} {path}: no 401");
        if STATE_CHANGING.contains(&method.as_str()) {
            assert!(responses.contains_key("403"), "{method} {path}: no 403");
        }
    }
    let respond = &doc["paths"]["/governance/approvals/{id}/respond"]["post"]["responses"];
    for status in ["401", "403", "404", "409", "410"] {
        assert!(respond.get(status).is_some(), "respond lacks {status}");
    }
    assert!(
        doc["components"]["schemas"]["Approval"]["properties"]["card"].is_object(),
        "the Approval schema is described"
    );

    let before = state_of(&f, client).await;

    // Without credentials (and with a token nobody issued): 401, except the public ones.
    for (method, path) in &documented {
        let url = format!("{}{}", f.client.url, concrete(path, &f.pending));
        let method_of = Method::from_bytes(method.as_bytes()).unwrap();
        let resp = client
            .http
            .request(method_of.clone(), &url)
            .json(&acceptable_body())
            .send()
            .await
            .unwrap();
        let expected = if public.contains(&(method.clone(), path.clone())) {
            StatusCode::OK
        } else {
            StatusCode::UNAUTHORIZED
        };
        assert_eq!(
            resp.status(),
            expected,
            "{method} {path} without credentials"
        );
        if expected == StatusCode::UNAUTHORIZED {
            let resp = client
                .http
                .request(method_of, &url)
                .bearer_auth("iris_forged")
                .json(&acceptable_body())
                .send()
                .await
                .unwrap();
            assert_eq!(
                resp.status(),
                StatusCode::UNAUTHORIZED,
                "{method} {path} forged"
            );
        }
    }

    // On a documented path, every method the document does not list answers 405: the router
    // serves no operation there that the document leaves out.
    let paths: BTreeSet<&String> = documented.iter().map(|(_, p)| p).collect();
    for path in paths {
        let url = format!("{}{}", f.client.url, concrete(path, &f.pending));
        for method in ["GET", "POST", "PUT", "PATCH", "DELETE"] {
            if documented.contains(&(method.to_string(), path.clone())) {
                continue;
            }
            let resp = client
                .http
                .request(Method::from_bytes(method.as_bytes()).unwrap(), &url)
                .bearer_auth(&f.control)
                .json(&acceptable_body())
                .send()
                .await
                .unwrap();
            assert_eq!(
                resp.status(),
                StatusCode::METHOD_NOT_ALLOWED,
                "{method} {path} is served but not in the document"
            );
        }
    }

    // A read device, by token and as a paired browser (its session cookie, from this site):
    // 403 on every state-changing method, and it may look at everything else.
    let read_browser = f
        .app
        .pair_browser(&f.client.url, Scope::Read, "wall browser")
        .await;
    for (method, path) in &documented {
        let url = format!("{}{}", f.client.url, concrete(path, &f.pending));
        for by_session in [false, true] {
            let mut request = client
                .http
                .request(Method::from_bytes(method.as_bytes()).unwrap(), &url)
                .json(&acceptable_body());
            request = if by_session {
                request
                    .header("cookie", &read_browser)
                    .header("origin", &f.client.url)
            } else {
                request.bearer_auth(&f.read)
            };
            let resp = request.send().await.unwrap();
            // A device's own push subscriptions are the one change a read device may make
            // (DESIGN §9 "the owner's phone"): not refused, and the body above is no
            // subscription (400) and the id none of its subscriptions (404), so nothing changes.
            let own = api_routes::API_ROUTES.iter().any(|r| {
                r.method == method && r.path == path && r.access == api_routes::Access::OwnDevice
            });
            let expected = if own {
                if method == "POST" {
                    StatusCode::BAD_REQUEST
                } else {
                    StatusCode::NOT_FOUND
                }
            } else if STATE_CHANGING.contains(&method.as_str()) {
                StatusCode::FORBIDDEN
            } else {
                StatusCode::OK
            };
            assert_eq!(
                resp.status(),
                expected,
                "{method} {path} as a read device (session: {by_session})"
            );
            // Drop the response: `/api/events` streams forever.
        }
    }

    // Nothing changed: the row is still pending, no audit entry, no mail moved, no model call.
    let after = state_of(&f, client).await;
    assert_eq!(after, before, "a refused request changed something");
    let row = client
        .get(&format!("/governance/approvals/{}", f.pending), &f.control)
        .await;
    assert_eq!(row["status"], "pending", "{row}");

    // A method a route does not answer: 405 in the API's JSON error shape, naming those it
    // does (`Allow`, in the route table's order), for every documented route; nothing changes.
    for (_, path) in operations(&doc) {
        let method = api_routes::API_ROUTES
            .iter()
            .filter(|r| r.path == path)
            .map(|r| r.method)
            .collect::<Vec<_>>()
            .join(", ");
        let wrong = reqwest::Method::PUT;
        let resp = client
            .http
            .request(
                wrong.clone(),
                format!("{}{}", f.client.url, concrete(&path, &f.pending)),
            )
            .bearer_auth(&f.control)
            .send()
            .await
            .unwrap();
        assert_eq!(
            resp.status(),
            StatusCode::METHOD_NOT_ALLOWED,
            "{wrong} {path}"
        );
        assert_eq!(
            resp.headers()["allow"].to_str().unwrap(),
            method,
            "{wrong} {path}"
        );
        let body: Value = resp.json().await.unwrap();
        assert!(
            body["error"].as_str().unwrap().contains(&method),
            "{wrong} {path}: {body}"
        );
    }
    assert_eq!(
        state_of(&f, client).await,
        after,
        "a wrong method changed something"
    );

    // A control device answering an unknown id: 404 (respond, resume and undo).
    for (action, request) in [
        ("respond", json!({"decision": "approve"})),
        ("resume", json!({})),
        ("undo", json!({})),
    ] {
        let (s, body) = client
            .post(
                &format!("/governance/approvals/no-such-approval/{action}"),
                Some(&f.control),
                request,
            )
            .await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{action}: {body}");
        assert!(
            body["error"].as_str().unwrap().contains("no-such-approval"),
            "{body}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cross_site_cookie_posts_are_refused() {
    let f = fixture().await;
    let client = &f.client;
    let doc = served_document(client).await;
    // A browser paired as a control device (its session cookie).
    let cookie = f
        .app
        .pair_browser(&f.client.url, Scope::Control, "browser")
        .await;
    let before = state_of(&f, client).await;

    // A control device's own cookie, sent by a page of another site: every state-changing
    // operation refuses with 403; so does a cookie request carrying no Origin or Referer.
    let changing: Vec<(String, String)> = operations(&doc)
        .into_iter()
        .filter(|(m, _)| STATE_CHANGING.contains(&m.as_str()))
        .collect();
    assert!(!changing.is_empty());
    for (method, path) in &changing {
        let url = format!("{}{}", f.client.url, concrete(path, &f.pending));
        for origin in [Some("http://evil.example"), None] {
            let mut request = client
                .http
                .request(Method::from_bytes(method.as_bytes()).unwrap(), &url)
                .header("cookie", &cookie)
                .json(&acceptable_body());
            if let Some(origin) = origin {
                request = request.header("origin", origin);
            }
            let resp = request.send().await.unwrap();
            assert_eq!(
                resp.status(),
                StatusCode::FORBIDDEN,
                "{method} {path} with the cookie from {origin:?}"
            );
            let body: Value = resp.json().await.unwrap();
            assert!(
                body["error"].as_str().unwrap().contains("cross-site"),
                "{body}"
            );
        }
    }
    let after = state_of(&f, client).await;
    assert_eq!(after, before, "a cross-site request changed something");

    // The same cookie from this site's own origin is accepted (so the 403 above was the origin
    // check): a reject, which runs nothing.
    let resp = client
        .http
        .post(format!(
            "{}/governance/approvals/{}/respond",
            f.client.url, f.pending
        ))
        .header("cookie", &cookie)
        .header("origin", &f.client.url)
        .json(&json!({"decision": "reject"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["approval"]["status"], "rejected", "{body}");
    assert_eq!(body["approval"]["surface"], "web", "{body}");
    assert_eq!(snapshot(&f.app.maildir()), before.2, "a reject moved mail");
}

/// DESIGN §2's `agent` scope (the MCP gateway's tokens, `iris devices add --scope agent` only):
/// every route but the approvals it requested answers 403 naming the scope and changes nothing;
/// the approvals list and a row are filtered to its own (none here: the pending row is the
/// owner's assistant's); no page opens for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_token_reaches_only_the_approvals_it_requested() {
    let f = fixture().await;
    let client = &f.client;
    let agent = f.app.add_device("claude-desktop", Scope::Agent).await;
    let before = state_of(&f, client).await;
    let readable = [
        ("GET", "/governance/approvals"),
        ("GET", "/governance/approvals/{id}"),
    ];
    for route in api_routes::API_ROUTES {
        if route.access == api_routes::Access::Public
            || readable.contains(&(route.method, route.path))
        {
            continue;
        }
        let url = format!("{}{}", f.client.url, concrete(route.path, &f.pending));
        let resp = client
            .http
            .request(Method::from_bytes(route.method.as_bytes()).unwrap(), &url)
            .bearer_auth(&agent)
            .json(&acceptable_body())
            .send()
            .await
            .unwrap();
        let status = resp.status();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        assert_eq!(
            status,
            StatusCode::FORBIDDEN,
            "{} {}: {body}",
            route.method,
            route.path
        );
        assert!(
            body["error"].as_str().unwrap_or("").contains("agent scope"),
            "{} {}: {body}",
            route.method,
            route.path
        );
    }
    assert_eq!(
        state_of(&f, client).await,
        before,
        "an agent changed something"
    );

    let listed = client.get("/governance/approvals?status=all", &agent).await;
    assert_eq!(listed["approvals"], json!([]), "{listed}");
    let owners = client
        .get("/governance/approvals?status=all", &f.control)
        .await;
    assert_eq!(owners["approvals"].as_array().unwrap().len(), 1);
    let one = client
        .http
        .get(format!(
            "{}/governance/approvals/{}",
            f.client.url, f.pending
        ))
        .bearer_auth(&agent)
        .send()
        .await
        .unwrap();
    assert_eq!(one.status(), StatusCode::NOT_FOUND);
    // No page opens for it.
    let page = client
        .http
        .get(format!("{}/activity/{}", f.client.url, f.pending))
        .bearer_auth(&agent)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!page.contains("Trash 5 emails"), "{page}");
}

/// The agent scope from the CLI: `iris devices add --scope agent` makes one, and a browser is
/// never paired as one (`iris pair --scope agent` fails).
// Needs a process: the CLI.
#[test]
fn a_browser_is_never_paired_as_an_agent() {
    let world = World::new("http://127.0.0.1:9/v1");
    world.add_device("claude-desktop", "agent");
    let out = std::process::Command::new(support::iris_bin())
        .args(["pair", "--scope", "agent"])
        .env("IRIS_DATABASE_URL", &world.database_url)
        .env("IRIS_CONFIG", world.dir.path().join("iris.toml"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let listed = String::from_utf8(world.run_ok(&["devices", "list"])).unwrap();
    assert!(listed.contains("claude-desktop\tagent"), "{listed}");
}

/// The document states every limit the server enforces (server/src/openapi.rs: a request the
/// description calls valid must be taken; an empty chat message, an empty passkey name and
/// `limit=0` once were refused while described as valid), and the server holds to it where
/// it said more than it did: a passkey answer whose `credential` is not an object is refused
/// even when the card needs no passkey, and the undo takes an empty object however spaced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_document_states_the_limits_and_the_server_keeps_them() {
    let f = fixture().await;
    let client = &f.client;
    let doc = served_document(client).await;
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["ChatRequest"]["properties"]["message"]["minLength"],
        1
    );
    assert_eq!(
        schemas["RegistrationRequest"]["properties"]["name"]["minLength"],
        1
    );
    let list = &doc["paths"]["/governance/approvals"]["get"];
    let limit = list["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "limit")
        .unwrap();
    assert_eq!(limit["schema"]["minimum"], 1);
    assert_eq!(limit["schema"]["maximum"], 200);
    // A chat's answer links to the card it made.
    let links = &doc["paths"]["/api/chat"]["post"]["responses"]["200"]["links"];
    assert_eq!(links["Respond"]["operationId"], "respond", "{links}");
    assert_eq!(
        links["Respond"]["parameters"]["id"],
        "$response.body#/approval_id"
    );

    // `passkey.credential` is the browser's credential, an object: anything else is a 400 and
    // the card still waits (it needs no passkey, so the answer was never needed).
    let before = state_of(&f, client).await;
    let respond = format!("/governance/approvals/{}/respond", f.pending);
    for credential in [json!(5), json!("x"), json!([]), json!(null)] {
        let (s, body) = client
            .post(
                &respond,
                Some(&f.control),
                json!({"decision": "approve", "passkey": {"ceremony_id": "c", "credential": credential}}),
            )
            .await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{credential}: {body}");
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains("passkey.credential"),
            "{body}"
        );
    }
    assert_eq!(state_of(&f, client).await, before, "nothing changed");

    // The undo's body: none or an empty object, however it is spaced; anything else is a 400.
    let undo = format!("{}/governance/approvals/{}/undo", f.client.url, f.pending);
    for (body, status) in [
        ("{ }", StatusCode::CONFLICT),
        ("{\n}", StatusCode::CONFLICT),
        ("", StatusCode::CONFLICT),
        ("{\"items\": []}", StatusCode::BAD_REQUEST),
        ("[]", StatusCode::BAD_REQUEST),
    ] {
        let resp = client
            .http
            .post(&undo)
            .bearer_auth(&f.control)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        // A pending card has nothing to undo yet: 409 once the body is accepted.
        assert_eq!(resp.status(), status, "undo with {body:?}");
    }
    assert_eq!(state_of(&f, client).await, before, "nothing changed");
}
