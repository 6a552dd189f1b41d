//! Truthful records (docs/liveness.md), with the real `iris` binary: an answer that loses to
//! the card's expiry inside the decision's own unit is refused like any late answer (410, the
//! expiry named, nothing changed), never a garbled 409 about a card "already pending"; and
//! every page carries the headers that keep it from being framed, sniffed or leaking its
//! address.

mod support;

use serde_json::{json, Value};
use support::{snapshot, wait_for_line, ModelServer, World, TRASH_SCRIPT};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_loses_to_the_clock_is_a_410() {
    let model = ModelServer::start(TRASH_SCRIPT).await;
    let world = World::new(&model.base_url);
    iris_email::demo::write_demo_maildir(&world.maildir, chrono::Utc::now()).unwrap();
    let before = snapshot(&world.maildir);
    let token = world.add_device("phone", "control");
    let release = world.dir.path().join("release");
    let release_text = release.display().to_string();
    let (server, rx) = world.start_watched(&[
        ("IRIS_DESTRUCTIVE_TTL_SECS", "3"),
        ("IRIS_FAILPOINT_PAUSE", "decision_read"),
        ("IRIS_FAILPOINT_RELEASE", &release_text),
    ]);
    let client = server.client();
    let (status, halted) = client
        .post(
            "/api/chat",
            Some(&token),
            json!({"message": "trash the promo emails from this week"}),
        )
        .await;
    assert!(status.is_success(), "{status}: {halted}");
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let row = client
        .get(&format!("/governance/approvals/{id}"), &token)
        .await;
    let expires_at: chrono::DateTime<chrono::Utc> =
        row["expires_at"].as_str().unwrap().parse().unwrap();
    let answer = {
        let (client, token, id) = (server.client(), token.clone(), id.clone());
        tokio::spawn(async move {
            client
                .post(
                    &format!("/governance/approvals/{id}/respond"),
                    Some(&token),
                    json!({"decision": "approve"}),
                )
                .await
        })
    };
    // The answer has read the row while it was pending; the card's expiry passes before its
    // compare-and-set (a deadline to wait for, not a synchronisation).
    let _rx = wait_for_line(rx, "failpoint paused: decision_read".to_string()).await;
    let wait = (expires_at - chrono::Utc::now())
        .to_std()
        .unwrap_or_default();
    tokio::time::sleep(wait + std::time::Duration::from_millis(200)).await;
    std::fs::write(&release, "go").unwrap();
    let (status, body): (reqwest::StatusCode, Value) = answer.await.unwrap();
    assert_eq!(status, reqwest::StatusCode::GONE, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(error.contains("expired at"), "{body}");
    assert!(!error.contains("pending"), "{body}");
    let row = client
        .get(&format!("/governance/approvals/{id}"), &token)
        .await;
    assert_eq!(row["status"], "expired", "{row}");
    assert_eq!(row["execution"], "none", "{row}");
    assert_eq!(snapshot(&world.maildir), before, "nothing moved");
}

/// Every response says it must not be framed or sniffed and sends no `Referer`; a page's
/// policy allows only the scripts carrying its own nonce, and every inline script carries it.
#[tokio::test]
async fn every_response_carries_the_security_headers_and_pages_their_nonce() {
    let world = World::new("http://127.0.0.1:9/v1");
    let server = world.start_with(&["serve", "--demo"]);
    let http = support::no_redirects();
    for path in [
        "/api/health",
        "/activity",
        "/pair/not-a-link",
        "/no-such-page",
    ] {
        let response = http
            .get(format!("{}{path}", server.url))
            .send()
            .await
            .unwrap();
        let headers = response.headers().clone();
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string()
        };
        assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
        assert_eq!(header("x-frame-options"), "DENY", "{path}");
        assert_eq!(header("referrer-policy"), "same-origin", "{path}");
        let policy = header("content-security-policy");
        assert!(
            policy.contains("frame-ancestors 'none'"),
            "{path}: {policy}"
        );
        if path == "/activity" {
            let body = response.text().await.unwrap();
            let nonce = policy
                .split("'nonce-")
                .nth(1)
                .and_then(|rest| rest.split('\'').next())
                .unwrap_or_else(|| panic!("a nonce in the page's policy: {policy}"));
            assert!(policy.contains("'wasm-unsafe-eval'"), "{policy}");
            let scripts = body.matches("<script").count();
            assert!(scripts > 0, "{body}");
            for tag in body.split("<script").skip(1) {
                let open = tag.split('>').next().unwrap_or_default();
                assert!(
                    open.contains(&format!("nonce=\"{nonce}\"")),
                    "every script carries the page's nonce: <script{open}>"
                );
            }
        }
    }
}

/// Where an answer came from is recorded from its credential: a bearer token records `cli` when
/// it says so (the CLI's header) and `api` otherwise, never the name of a surface with its own
/// credentials (`telegram`, `phone`, `web`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bearer_token_records_only_cli_or_api_as_its_surface() {
    let model = ModelServer::start(TRASH_SCRIPT).await;
    let world = World::new(&model.base_url);
    iris_email::demo::write_demo_maildir(&world.maildir, chrono::Utc::now()).unwrap();
    let token = world.add_device("phone", "control");
    let server = world.start();
    let client = server.client();
    for (claimed, recorded) in [
        ("telegram", "api"),
        ("phone", "api"),
        ("web", "api"),
        ("cli", "cli"),
    ] {
        let (status, halted) = client
            .post(
                "/api/chat",
                Some(&token),
                json!({"message": "trash the promo emails from this week"}),
            )
            .await;
        assert!(status.is_success(), "{status}: {halted}");
        let id = halted["approval_id"].as_str().unwrap();
        let answered: Value = client
            .http
            .post(format!("{}/governance/approvals/{id}/respond", client.url))
            .bearer_auth(&token)
            .header("x-iris-surface", claimed)
            .json(&json!({"decision": "reject"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            answered["approval"]["surface"], recorded,
            "claimed {claimed}: {answered}"
        );
    }
}
