//! Passkeys bound to the call (ADR-0118 decision 4) with the server in process
//! (`support::TestApp` on a listener) or real `iris serve` processes where a test needs them (the
//! CLI, two servers), and a software passkey (`support::authenticator`, ES256, checked by the
//! server's `webauthn-rs`):
//!
//! - with `IRIS_PASSKEY_REQUIRED=destructive` a destructive card is approved only with an
//!   assertion made for a challenge of that card and its call hash, with user verification; the
//!   call then runs once. Without one, without user verification, with an answer made for
//!   another card, or with one replayed, the approve is refused with 403 `passkey_required` and
//!   the card, and nothing runs. Rejecting needs none;
//! - the first passkey needs no proof; adding or removing one afterwards needs an assertion of
//!   an existing one (used once);
//! - the CLI cannot approve such a card (exit 10, the card's link), and can reject it;
//! - `iris audit verify` checks the decision's passkey again, also after the passkey is removed
//!   (`iris passkeys remove`, the recovery path);
//! - on an IP address or plain http the routes say passkeys are off and why;
//! - two servers on one PostgreSQL database: one answer approves once, its replay on the other
//!   server is refused.

use crate::support;

use crate::smtp_sink;

use iris_core::ports::Scope;
use reqwest::StatusCode;
use serde_json::{json, Value};
use smtp_sink::SmtpSink;
use support::authenticator::SoftAuthenticator;
use support::{snapshot, Client, ModelServer, TestApp, World, CATEGORY_TRASH_SCRIPT};

const REQUEST: &str = "trash the promo emails from this week";
/// The relying party's origin the servers are told (`IRIS_PUBLIC_URL`); the tests reach them
/// on 127.0.0.1 with bearer tokens, and the passkey signs for this origin.
pub(crate) const ORIGIN: &str = "http://localhost:9";

/// A world with the demo mailbox, passkeys required for destructive cards, and devices
/// `laptop` (control) and `tablet` (read).
pub(crate) async fn world(database_url: Option<&str>) -> (World, String, String) {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let mut world = World::new(&model.base_url);
    drop(model);
    iris_email::demo::write_demo_maildir(&world.maildir, chrono::Utc::now()).unwrap();
    if let Some(url) = database_url {
        world.database_url = url.to_owned();
    }
    world.env.push(("IRIS_PUBLIC_URL".into(), ORIGIN.into()));
    world
        .env
        .push(("IRIS_PASSKEY_REQUIRED".into(), "destructive".into()));
    let laptop = world.add_device("laptop", "control");
    let tablet = world.add_device("tablet", "read");
    (world, laptop, tablet)
}

pub(crate) async fn halt(client: &Client, token: &str) -> String {
    client.halt(token, REQUEST).await["approval_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Registers `key` as a passkey named `name`, with `proof` when one exists already.
pub(crate) async fn register(
    client: &Client,
    token: &str,
    key: &mut SoftAuthenticator,
    name: &str,
    proof: Option<Value>,
) -> (StatusCode, Value) {
    let (status, challenge) = client
        .post(
            "/api/passkeys/registrations",
            Some(token),
            json!({"name": name}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{challenge}");
    let credential = key.register(&challenge["options"]);
    let mut body = json!({"ceremony_id": challenge["ceremony_id"], "credential": credential});
    if let Some(proof) = proof {
        body["proof"] = proof;
    }
    client.post("/api/passkeys", Some(token), body).await
}

/// A proof: `key`'s answer to a fresh `manage` challenge.
async fn proof(client: &Client, token: &str, key: &mut SoftAuthenticator) -> Value {
    let (status, challenge) = client
        .post("/api/passkeys/proofs", Some(token), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{challenge}");
    json!({"ceremony_id": challenge["ceremony_id"], "credential": key.assert(&challenge["options"], true)})
}

/// `key`'s answer to a challenge for approving card `id` (with user verification or not).
async fn answer(
    client: &Client,
    token: &str,
    key: &mut SoftAuthenticator,
    id: &str,
    verified: bool,
) -> Value {
    let (status, challenge) = client
        .post(
            &format!("/governance/approvals/{id}/passkey"),
            Some(token),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{challenge}");
    assert!(challenge["expires_at"].is_string(), "{challenge}");
    json!({
        "ceremony_id": challenge["ceremony_id"],
        "credential": key.assert(&challenge["options"], verified),
    })
}

pub(crate) async fn approve(
    client: &Client,
    token: &str,
    id: &str,
    passkey: Option<&Value>,
) -> (StatusCode, Value) {
    let mut body = json!({"decision": "approve"});
    if let Some(p) = passkey {
        body["passkey"] = p.clone();
    }
    client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(token),
            body,
        )
        .await
}

/// A refusal that names the passkey: 403, `code` passkey_required, the card still pending.
fn assert_needs_passkey(status: StatusCode, body: &Value, id: &str) {
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["code"], "passkey_required", "{body}");
    assert_eq!(body["approval"]["id"], id, "{body}");
    assert_eq!(body["approval"]["status"], "pending", "{body}");
    assert_eq!(body["approval"]["passkey_required"], true, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("passkey"),
        "{body}"
    );
}

async fn decisions(client: &Client, token: &str, id: &str) -> Vec<Value> {
    let audit = client
        .get(&format!("/api/audit?approval_id={id}"), token)
        .await;
    audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "decision")
        .cloned()
        .collect()
}

// Needs a process: the CLI (`iris approvals`, `iris audit verify`, `iris passkeys`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_that_needs_a_passkey_runs_once_with_one_and_never_without() {
    let (world, laptop, tablet) = world(None).await;
    let server = world.start();
    let client = server.client();
    let mut phone_key = SoftAuthenticator::new("localhost", ORIGIN);
    let mut spare_key = SoftAuthenticator::new("localhost", ORIGIN);

    let listed = client.get("/api/passkeys", &tablet).await;
    assert_eq!(listed["enabled"], true, "{listed}");
    assert_eq!(listed["relying_party"], "localhost", "{listed}");
    assert_eq!(listed["required"], "destructive", "{listed}");
    assert_eq!(listed["passkeys"], json!([]));

    // A name is shown in terminals: no control or direction characters.
    let (status, _) = client
        .post(
            "/api/passkeys/registrations",
            Some(&laptop),
            json!({"name": "evil\u{202e}\u{1b}[31m"}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // A read device cannot register; the first passkey needs no proof.
    let (status, _) = client
        .post(
            "/api/passkeys/registrations",
            Some(&tablet),
            json!({"name": "x"}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, first) = register(&client, &laptop, &mut phone_key, "Phone", None).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    assert_eq!(first["name"], "Phone");
    assert_eq!(first["credential_id"], phone_key.credential_id());
    // Once one exists, another needs a proof from it; a proof is used once.
    let (status, refused) = register(&client, &laptop, &mut spare_key, "Spare", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    assert_eq!(refused["code"], "passkey_required", "{refused}");
    let proven = proof(&client, &laptop, &mut phone_key).await;
    let (status, spare) = register(
        &client,
        &laptop,
        &mut spare_key,
        "Spare",
        Some(proven.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{spare}");
    let mut third_key = SoftAuthenticator::new("localhost", ORIGIN);
    let (status, replayed) =
        register(&client, &laptop, &mut third_key, "Third", Some(proven)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{replayed}");
    let listed = client.get("/api/passkeys", &laptop).await;
    assert_eq!(listed["passkeys"].as_array().unwrap().len(), 2, "{listed}");

    let id = halt(&client, &laptop).await;
    let other = halt(&client, &laptop).await;
    let row = client
        .get(&format!("/governance/approvals/{id}"), &laptop)
        .await;
    assert_eq!(row["passkey_required"], true, "{row}");
    let before = snapshot(&world.maildir);

    // Without a passkey, without user verification, with an answer made for another card:
    // refused after the usual checks, nothing decided, nothing run.
    let (status, body) = approve(&client, &laptop, &id, None).await;
    assert_needs_passkey(status, &body, &id);
    let unverified = answer(&client, &laptop, &mut phone_key, &id, false).await;
    let (status, body) = approve(&client, &laptop, &id, Some(&unverified)).await;
    assert_needs_passkey(status, &body, &id);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("did not verify you"),
        "{body}"
    );
    let for_other = answer(&client, &laptop, &mut phone_key, &other, true).await;
    let (status, body) = approve(&client, &laptop, &id, Some(&for_other)).await;
    assert_needs_passkey(status, &body, &id);
    assert!(
        body["error"].as_str().unwrap().contains("another approval"),
        "{body}"
    );
    // A read device is still a plain 403, without the code; 404 comes before the passkey.
    let (status, body) = approve(&client, &tablet, &id, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(body.get("code").is_none(), "{body}");
    let (status, _) = approve(&client, &laptop, "no-such-card", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // A passkey answer with fields of its own is not one: 400, nothing changes.
    let odd = json!({"ceremony_id": "x", "credential": {}, "trusted": true});
    let (status, body) = approve(&client, &laptop, &id, Some(&odd)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(decisions(&client, &laptop, &id).await.is_empty());
    assert_eq!(snapshot(&world.maildir), before, "nothing ran");

    // The CLI cannot approve it: exit 10 and the card's link; nothing changes.
    let out = std::process::Command::new(support::iris_bin())
        .args(["approvals", "approve", &id, "--yes"])
        .env("IRIS_URL", &server.url)
        .env("IRIS_TOKEN", &laptop)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(10), "{stderr}");
    assert!(
        stderr.contains(&format!("{ORIGIN}/activity/{id}")),
        "{stderr}"
    );
    assert!(stderr.contains("needs your passkey"), "{stderr}");
    assert!(stderr.contains("iris approvals reject"), "{stderr}");

    // With the spare passkey's fresh, verified answer: approved, and the call runs once.
    let good = answer(&client, &laptop, &mut spare_key, &id, true).await;
    let (status, body) = approve(&client, &laptop, &id, Some(&good)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let done = client.wait_execution(&id, &laptop, "executed").await;
    assert_eq!(done["status"], "approved");
    let decided = decisions(&client, &laptop, &id).await;
    assert_eq!(decided.len(), 1);
    let kept = &decided[0]["result"]["passkey"];
    assert_eq!(kept["credential_id"], spare_key.credential_id(), "{kept}");
    assert_eq!(kept["call_hash"], row["call_hash"]);
    for field in ["client_data_json", "authenticator_data", "signature"] {
        assert!(
            kept[field].as_str().is_some_and(|v| !v.is_empty()),
            "{field}: {kept}"
        );
    }
    // The same answer again: on its own card it is decided (409); on the other card it was
    // made for another approval (403); nothing more runs.
    let (status, _) = approve(&client, &laptop, &id, Some(&good)).await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (status, body) = approve(&client, &laptop, &other, Some(&good)).await;
    assert_needs_passkey(status, &body, &other);
    let listed = client.get("/api/passkeys", &laptop).await;
    let spare_row = listed["passkeys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "Spare")
        .unwrap()
        .clone();
    assert!(spare_row["last_used_at"].is_string(), "{listed}");

    // Rejecting never needs a passkey (the CLI too).
    let out = std::process::Command::new(support::iris_bin())
        .args(["approvals", "reject", &other])
        .env("IRIS_URL", &server.url)
        .env("IRIS_TOKEN", &laptop)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // `iris audit verify` checks the decision again, also after the passkey is removed.
    let verified = String::from_utf8(world.run_ok(&["audit", "verify", &id])).unwrap();
    assert!(
        verified.contains("approved by passkey \"Spare\""),
        "{verified}"
    );
    // Checked against the site the decision was made on: a later address does not change it.
    let moved = std::process::Command::new(support::iris_bin())
        .args(["audit", "verify", &id])
        .env("IRIS_DATABASE_URL", &world.database_url)
        .env("IRIS_CONFIG", world.dir.path().join("iris.toml"))
        .env("IRIS_PUBLIC_URL", "https://iris.example.org")
        .output()
        .unwrap();
    assert!(
        moved.status.success() && String::from_utf8_lossy(&moved.stdout).contains("Spare"),
        "{}",
        String::from_utf8_lossy(&moved.stderr)
    );
    // Run against a database that is not there: said, not created.
    let nowhere = world.dir.path().join("nowhere.db");
    let missing = std::process::Command::new(support::iris_bin())
        .args(["passkeys", "list"])
        .env(
            "IRIS_DATABASE_URL",
            format!("sqlite://{}", nowhere.display()),
        )
        .env("IRIS_CONFIG", world.dir.path().join("iris.toml"))
        .output()
        .unwrap();
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("no database at"),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );
    assert!(!nowhere.exists());
    assert!(
        verified.contains(row["call_hash"].as_str().unwrap()),
        "{verified}"
    );
    let spare_id = spare_row["id"].as_str().unwrap();
    world.run_ok(&["passkeys", "remove", spare_id]);
    let verified = String::from_utf8(world.run_ok(&["audit", "verify", &id])).unwrap();
    assert!(verified.contains("removed"), "{verified}");
    let listed = String::from_utf8(world.run_ok(&["passkeys", "list"])).unwrap();
    assert!(
        listed.contains("Phone") && !listed.contains("Spare"),
        "{listed}"
    );
    // A rejection was signed by no passkey: exit 11, "not signed".
    let rejected = world
        .command(&["audit", "verify", &other])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&rejected.stdout);
    assert_eq!(rejected.status.code(), Some(11), "{said}");
    assert!(said.contains("not signed"), "{said}");

    // Removing the last passkey through the API needs a proof from it.
    let phone_id = client.get("/api/passkeys", &laptop).await["passkeys"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let resp = client
        .http
        .delete(format!("{}/api/passkeys/{phone_id}", server.url))
        .bearer_auth(&laptop)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let proven = proof(&client, &laptop, &mut phone_key).await;
    let resp = client
        .http
        .delete(format!("{}/api/passkeys/{phone_id}", server.url))
        .bearer_auth(&laptop)
        .json(&json!({"proof": proven}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        client.get("/api/passkeys", &laptop).await["passkeys"],
        json!([])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_an_ip_address_passkeys_are_off_and_a_card_that_needs_one_can_only_be_rejected() {
    // No IRIS_PUBLIC_URL: the server's address is its bind address, an IP address.
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let server = TestApp::with_model(&model)
        .mailbox()
        .passkey_required("destructive")
        .start()
        .await;
    let laptop = server.add_device("laptop", Scope::Control).await;
    let client = server.client().await;
    let listed = client.get("/api/passkeys", &laptop).await;
    assert_eq!(listed["enabled"], false, "{listed}");
    let why = listed["off_reason"].as_str().unwrap();
    assert!(
        why.contains("IP address") && why.contains("IRIS_PUBLIC_URL"),
        "{why}"
    );
    let (status, body) = client
        .post(
            "/api/passkeys/registrations",
            Some(&laptop),
            json!({"name": "Phone"}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("IP address"),
        "{body}"
    );

    let id = halt(&client, &laptop).await;
    let (status, body) = client
        .post(
            &format!("/governance/approvals/{id}/passkey"),
            Some(&laptop),
            json!({}),
        )
        .await;
    assert_needs_passkey(status, &body, &id);
    let (status, body) = approve(&client, &laptop, &id, None).await;
    assert_needs_passkey(status, &body, &id);
    let (status, body) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&laptop),
            json!({"decision": "reject"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

// Needs a process: several servers on one database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_database_accept_one_answer_once() {
    let (url, _database) = iris_store::testing::fresh_postgres_database().await;
    let (world, laptop, _tablet) = world(Some(&url)).await;
    let a = world.start();
    let b = world.start();
    let (ca, cb) = (a.client(), b.client());
    let mut key = SoftAuthenticator::new("localhost", ORIGIN);
    let (status, body) = register(&ca, &laptop, &mut key, "Phone", None).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let id = halt(&ca, &laptop).await;
    // The challenge from one server, the answer sent to both at once: one approve wins, the
    // other is refused (already decided, or the answer already used); the call runs once.
    let good = answer(&cb, &laptop, &mut key, &id, true).await;
    let (ra, rb) = tokio::join!(
        approve(&ca, &laptop, &id, Some(&good)),
        approve(&cb, &laptop, &id, Some(&good))
    );
    let statuses = [ra.0, rb.0];
    assert_eq!(
        statuses.iter().filter(|s| **s == StatusCode::OK).count(),
        1,
        "{ra:?} {rb:?}"
    );
    assert!(
        statuses
            .iter()
            .all(|s| [StatusCode::OK, StatusCode::CONFLICT, StatusCode::FORBIDDEN].contains(s)),
        "{ra:?} {rb:?}"
    );
    let done = ca.wait_execution(&id, &laptop, "executed").await;
    assert_eq!(done["status"], "approved");
    assert_eq!(decisions(&ca, &laptop, &id).await.len(), 1);
}

/// `IRIS_PASSKEY_REQUIRED=approvals` covers pinned writes too (a reply that sends mail, to an
/// SMTP sink); `destructive` does not: the need is pinned into each card when it is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_covers_a_pinned_write_and_destructive_does_not() {
    let sink = SmtpSink::start();
    for (policy, needed) in [("approvals", true), ("destructive", false)] {
        let model = ModelServer::start(iris_core::scripted::DEMO_SCRIPT).await;
        let server = TestApp::with_model(&model)
            .mailbox()
            .smtp_url(&sink.url())
            .public_url(ORIGIN)
            .passkey_required(policy)
            .start()
            .await;
        let laptop = server.add_device("laptop", Scope::Control).await;
        let client = server.client().await;
        let (status, halted) = client
            .post(
                "/api/chat",
                Some(&laptop),
                json!({"message": "reply to Anna that Thursday works"}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{halted}");
        let id = halted["approval_id"].as_str().unwrap().to_owned();
        let row = client
            .get(&format!("/governance/approvals/{id}"), &laptop)
            .await;
        assert_eq!(row["kind"], "pinned_write", "{row}");
        assert_eq!(row["passkey_required"], needed, "{policy}: {row}");
        let (status, body) = approve(&client, &laptop, &id, None).await;
        if needed {
            assert_needs_passkey(status, &body, &id);
        } else {
            assert_eq!(status, StatusCode::OK, "{body}");
        }
    }
}

/// A card of another plugin under `IRIS_PASSKEY_REQUIRED=destructive` needs the passkey as a
/// mail card does: asked with `message` on a server `build` configures (its model playing
/// `script`), without one nothing runs (`ran` stays false), with one made for this card it runs
/// once. (Replays and answers made for another card are the mail test's, above: the rule does
/// not depend on the plugin.)
async fn needs_the_passkey_and_runs_once_with_it(
    script: &str,
    build: impl FnOnce(support::app::Build) -> support::app::Build,
    message: &str,
    ran: impl Fn() -> bool,
) {
    let model = ModelServer::start(script).await;
    let server = build(TestApp::with_model(&model))
        .public_url(ORIGIN)
        .passkey_required("destructive")
        .background()
        .start()
        .await;
    let laptop = server.add_device("laptop", Scope::Control).await;
    let client = server.client().await;
    let mut key = SoftAuthenticator::new("localhost", ORIGIN);
    let (status, body) = register(&client, &laptop, &mut key, "Phone", None).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    let (status, halted) = client
        .post("/api/chat", Some(&laptop), json!({ "message": message }))
        .await;
    assert_eq!(status, StatusCode::OK, "{halted}");
    let id = halted["approval_id"].as_str().unwrap().to_owned();
    let row = client
        .get(&format!("/governance/approvals/{id}"), &laptop)
        .await;
    assert_eq!(row["passkey_required"], true, "{row}");
    let (status, body) = approve(&client, &laptop, &id, None).await;
    assert_needs_passkey(status, &body, &id);
    assert!(!ran(), "nothing ran without the passkey");

    let signed = answer(&client, &laptop, &mut key, &id, true).await;
    let (status, body) = approve(&client, &laptop, &id, Some(&signed)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    client.wait_execution(&id, &laptop, "executed").await;
    assert!(ran());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_files_card_needs_the_passkey_and_moves_once_with_it() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("old.log"), b"old").unwrap();
    let path = root.path().to_path_buf();
    needs_the_passkey_and_runs_once_with_it(
        support::scripts::FILES_CLEANUP_SCRIPT,
        |app| app.files_root("downloads", &path),
        "clean up *.log",
        || !path.join("old.log").exists(),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calendar_card_needs_the_passkey_and_deletes_once_with_it() {
    let folder = support::calendars::one_event("Dentist");
    let path = folder.path().to_path_buf();
    needs_the_passkey_and_runs_once_with_it(
        support::calendars::DELETE_SCRIPT,
        |app| app.calendar_folder("personal", &path),
        "delete dentist",
        || !support::calendars::still_there(&path),
    )
    .await;
}

/// docs/adr/0122-shaping-a-call.md: the passkey signs the call that runs. A challenge made for
/// some items binds the narrowed call's hash: its answer approves exactly those items, and is
/// refused for the whole card (or another choice), which stays pending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passkey_answers_for_the_narrowed_call_it_was_asked_for() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let server = TestApp::with_model(&model)
        .mailbox()
        .public_url(ORIGIN)
        .passkey_required("destructive")
        .background()
        .start()
        .await;
    let laptop = server.add_device("laptop", Scope::Control).await;
    let client = server.client().await;
    let mut key = SoftAuthenticator::new("localhost", ORIGIN);
    let (status, body) = register(&client, &laptop, &mut key, "Phone", None).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let id = halt(&client, &laptop).await;
    let path = format!("/governance/approvals/{id}");

    // A choice that does not fit is refused before any ceremony.
    let (status, refused) = client
        .post(
            &format!("{path}/passkey"),
            Some(&laptop),
            json!({"items": [99]}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");

    let (status, challenge) = client
        .post(
            &format!("{path}/passkey"),
            Some(&laptop),
            json!({"items": [2, 0]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{challenge}");
    let signed = json!({
        "ceremony_id": challenge["ceremony_id"],
        "credential": key.assert(&challenge["options"], true),
    });
    // The answer does not approve the whole card, nor another choice.
    for body in [
        json!({"decision": "approve", "passkey": signed}),
        json!({"decision": "approve", "items": [0, 1], "passkey": signed}),
    ] {
        let (status, refused) = client
            .post(&format!("{path}/respond"), Some(&laptop), body)
            .await;
        assert_needs_passkey(status, &refused, &id);
    }
    let (status, body) = client
        .post(
            &format!("{path}/respond"),
            Some(&laptop),
            json!({"decision": "approve", "items": [0, 2], "passkey": signed}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["approval"]["approved_items"], json!([0, 2]));
    let row = client.wait_execution(&id, &laptop, "executed").await;
    assert_eq!(row["result"]["trashed"], 2, "{row}");
    // The decision records that the passkey signed the narrowed call's hash.
    let decision = decisions(&client, &laptop, &id).await.remove(0);
    assert_eq!(
        decision["result"]["passkey"]["call_hash"], row["decided_call"]["call_hash"],
        "{decision}"
    );
    assert_ne!(row["decided_call"]["call_hash"], row["call_hash"]);
}
