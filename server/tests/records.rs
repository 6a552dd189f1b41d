//! Truthful records (docs/liveness.md), with the real `iris` binary: an answer that loses to
//! the card's expiry inside the decision's own unit is refused like any late answer (410, the
//! expiry named, nothing changed), never a garbled 409 about a card "already pending"; and
//! every page carries the headers that keep it from being framed, sniffed or leaking its
//! address; the whole audit log comes in pages, newest first.

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

/// `GET /api/audit` without `approval_id` comes in pages, newest first, like the approvals list:
/// walking `next` gives every entry exactly once, with entries appended during the walk never
/// repeated; bad paging input is a 400 that names it (before, the whole log came in one answer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_audit_log_comes_in_pages_newest_first() {
    let model = ModelServer::start(TRASH_SCRIPT).await;
    let world = World::new(&model.base_url);
    iris_email::demo::write_demo_maildir(&world.maildir, chrono::Utc::now()).unwrap();
    let token = world.add_device("phone", "control");
    let server = world.start();
    let client = server.client();
    let reject_a_card = || async {
        let (_, halted) = client
            .post(
                "/api/chat",
                Some(&token),
                json!({"message": "trash the promo emails from this week"}),
            )
            .await;
        let id = halted["approval_id"].as_str().unwrap().to_string();
        let (status, body) = client
            .post(
                &format!("/governance/approvals/{id}/respond"),
                Some(&token),
                json!({"decision": "reject"}),
            )
            .await;
        assert!(status.is_success(), "{status}: {body}");
        id
    };
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(reject_a_card().await);
    }
    // Every entry, read approval by approval.
    let mut expected: Vec<i64> = Vec::new();
    for id in &ids {
        let one = client
            .get(&format!("/api/audit?approval_id={id}"), &token)
            .await;
        assert!(one["next"].is_null(), "{one}");
        expected.extend(
            one["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["id"].as_i64().unwrap()),
        );
    }
    expected.sort_unstable_by(|a, b| b.cmp(a));
    assert!(expected.len() >= 5, "{expected:?}");

    // Walk two at a time; a card decided in the middle of the walk is not repeated.
    let mut seen: Vec<i64> = Vec::new();
    let mut before: Option<String> = None;
    let mut pages = 0;
    loop {
        let path = match &before {
            Some(b) => format!("/api/audit?limit=2&before={b}"),
            None => "/api/audit?limit=2".to_string(),
        };
        let page = client.get(&path, &token).await;
        let entries = page["entries"].as_array().unwrap();
        assert!(entries.len() <= 2, "{page}");
        seen.extend(entries.iter().map(|e| e["id"].as_i64().unwrap()));
        pages += 1;
        if pages == 1 {
            reject_a_card().await;
        }
        match page["next"].as_str() {
            Some(next) => before = Some(next.to_string()),
            None => break,
        }
    }
    assert_eq!(seen, expected, "every entry once, newest first");
    // A fresh walk starts with what was appended during the last one.
    let first = client.get("/api/audit", &token).await;
    assert!(
        first["entries"][0]["id"].as_i64().unwrap() > expected[0],
        "{first}"
    );

    for bad in [
        "/api/audit?limit=0",
        "/api/audit?limit=201",
        "/api/audit?before=not-a-cursor",
        &format!("/api/audit?approval_id={}&limit=2", ids[0]),
    ] {
        let resp = client
            .http
            .get(format!("{}{bad}", client.url))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), reqwest::StatusCode::BAD_REQUEST, "{bad}");
    }
}
