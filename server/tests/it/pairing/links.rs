//! The one-time pairing link: `iris pair --scope read|control` prints it; its page (GET) pairs
//! nothing by itself; posting its form from this site pairs one browser with the link's scope and
//! starts a session (cookie `iris_session`: HttpOnly, SameSite=Strict) whose record lives in the
//! same database (on SQLite and PostgreSQL); the link then refuses a second use, a lapsed or
//! unknown link pairs nobody, a taken name keeps the link and concurrent posts pair one browser,
//! and names follow the name rules. Behind TLS the link uses the public URL and the cookie is
//! `Secure`; a public URL that is not an origin is refused before any link.
//!
//! In process (`support::TestApp` on a listener, links made as `iris pair` makes them) except
//! the CLI's own tests: what `iris pair` prints, and the rules `iris devices add` keeps.

use crate::support;

use std::sync::Arc;

use chrono::Utc;
use iris_core::pairing::PairingLink;
use iris_core::ports::{PairingStore, Scope};
use reqwest::StatusCode;
use serde_json::json;
use sha2::{Digest, Sha256};
use support::{no_redirects, session_cookie, ModelServer, TestApp, CATEGORY_TRASH_SCRIPT};
use tokio::sync::Barrier;

use super::{app, devices, devices_list, pair_path, post_form, session_rows, world};

/// Whether the app's database holds a live device `name` of `scope`.
async fn has_device(app: &TestApp, name: &str, scope: Scope) -> bool {
    devices(app).await.contains(&(name.to_string(), scope))
}

/// Whether the app's database holds a live device whose name contains `part`.
async fn has_device_named(app: &TestApp, part: &str) -> bool {
    devices(app)
        .await
        .iter()
        .any(|(name, _)| name.contains(part))
}

/// `iris pair` prints a one-time link with what it grants and for how long; the link is stored
/// in the database the CLI was pointed at, so a server on that database opens it; with
/// `IRIS_PUBLIC_URL` the link is made on the public address.
async fn iris_pair_prints_a_one_time_link_a_server_on_its_database_opens(
    database_url: Option<String>,
) {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let mut world = world(&model).await;
    if let Some(url) = database_url {
        world.database_url = url;
    }
    let output = world.pair_output("read");
    assert!(output.contains("read device"), "{output}");
    assert!(output.contains("10 minutes"), "{output}");
    let link = output.lines().last().unwrap();
    let code = link.rsplit('/').next().unwrap();
    assert_eq!(code.len(), 64, "{link}");
    assert!(code.chars().all(|c| c.is_ascii_hexdigit()), "{link}");

    let server = TestApp::with_model(&model)
        .database_url(&world.database_url)
        .start()
        .await;
    let url = server.listen().await;
    let page = no_redirects()
        .get(format!("{url}/pair/{code}"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert!(page.text().await.unwrap().contains("a read device"));

    world.env.push((
        "IRIS_PUBLIC_URL".into(),
        "https://iris.example.test/".into(),
    ));
    let output = world.pair_output("read");
    let link = output.lines().last().unwrap();
    assert!(
        link.starts_with("https://iris.example.test/pair/"),
        "{output}"
    );
}

// Needs a process: the CLI (`iris pair`); the server that opens its link runs in process on the
// same database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iris_pair_prints_a_one_time_link_a_server_on_its_database_opens_on_sqlite() {
    iris_pair_prints_a_one_time_link_a_server_on_its_database_opens(None).await;
}

// Needs a process: the CLI (`iris pair`); the server that opens its link runs in process on the
// same database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iris_pair_prints_a_one_time_link_a_server_on_its_database_opens_on_postgres() {
    let (url, _database) = iris_store::testing::fresh_postgres_database().await;
    iris_pair_prints_a_one_time_link_a_server_on_its_database_opens(Some(url)).await;
}

async fn a_read_browser_pairs_once_through_the_link(server: TestApp) {
    let url = server.listen().await;
    let path = pair_path(&server, &url, Scope::Read).await;
    let code = path.rsplit('/').next().unwrap();
    assert_eq!(code.len(), 64, "{path}");
    assert!(code.chars().all(|c| c.is_ascii_hexdigit()), "{path}");

    let http = no_redirects();
    let page = http.get(format!("{url}{path}")).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert!(
        session_cookie(&page).is_none(),
        "opening the page signs nobody in"
    );
    let html = page.text().await.unwrap();
    assert!(html.contains("a read device"), "{html}");
    assert!(html.contains("never approve or reject"), "{html}");
    assert!(html.contains("method=\"post\""), "{html}");

    // From another site, or without an Origin: refused, nothing paired, the link still works.
    for origin in [Some("http://evil.example"), None] {
        let resp = post_form(&url, &path, "wall tablet", origin).await;
        assert_eq!(resp.status(), StatusCode::FORBIDDEN, "origin {origin:?}");
        assert!(session_cookie(&resp).is_none());
    }
    // A name the rules refuse: 400, the link still works.
    let resp = post_form(&url, &path, "wall\u{202e}tablet", Some(&url)).await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert!(resp.text().await.unwrap().contains("letters, digits"));
    assert!(!has_device_named(&server, "wall").await);
    let database_url = server.state.settings.database_url.clone();
    let sessions_before = session_rows(&database_url).await;

    let resp = post_form(&url, &path, "  wall tablet ", Some(&url)).await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    assert_eq!(resp.headers()["location"], "/activity");
    let set_cookie = resp.headers()["set-cookie"].to_str().unwrap().to_string();
    // 30 days without use (session::SESSION_IDLE_DAYS) lapse the session.
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=2592000"] {
        assert!(set_cookie.contains(attribute), "{set_cookie}");
    }
    assert!(!set_cookie.contains("Secure"), "plain http: {set_cookie}");
    let cookie = session_cookie(&resp).unwrap();
    assert!(
        session_rows(&database_url).await > sessions_before,
        "the session is stored in the server's database"
    );
    assert!(
        has_device(&server, "wall tablet", Scope::Read).await,
        "{:?}",
        devices(&server).await
    );

    // The session sees everything and changes nothing.
    let client = server.client().await;
    let owner = server.add_device("owner", Scope::Control).await;
    let (_, halted) = client
        .post(
            "/api/chat",
            Some(&owner),
            json!({"message": "trash the promo emails"}),
        )
        .await;
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let seen = http
        .get(format!("{url}/governance/approvals/{id}"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(seen.status(), StatusCode::OK);
    let answer = http
        .post(format!("{url}/governance/approvals/{id}/respond"))
        .header("cookie", &cookie)
        .header("origin", &url)
        .json(&json!({"decision": "approve"}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::FORBIDDEN);
    let row = client
        .get(&format!("/governance/approvals/{id}"), &owner)
        .await;
    assert_eq!(row["status"], "pending");

    // Used once: the page and the form say so and pair nobody else.
    let again = http.get(format!("{url}{path}")).send().await.unwrap();
    assert_eq!(again.status(), StatusCode::GONE);
    let text = again.text().await.unwrap();
    assert!(text.contains("already used"), "{text}");
    assert!(text.contains("wall tablet"), "{text}");
    // Its time written as the cards write theirs ("3 Dec 2026, 16:23:05 UTC"), not
    // "2026-12-03 16:23".
    let today = chrono::Utc::now().format("at %-d %b %Y, ").to_string();
    assert!(text.contains(&today), "{text}");
    assert!(
        !text.contains(&chrono::Utc::now().format("%Y-%m-").to_string()),
        "{text}"
    );
    let resp = post_form(&url, &path, "second", Some(&url)).await;
    assert_eq!(resp.status(), StatusCode::GONE);
    assert!(session_cookie(&resp).is_none());
    assert!(!has_device_named(&server, "second").await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_browser_pairs_once_through_the_link_on_sqlite() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    a_read_browser_pairs_once_through_the_link(app(&model).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_browser_pairs_once_through_the_link_on_postgres() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let (url, _database) = iris_store::testing::fresh_postgres_database().await;
    let server = TestApp::with_model(&model)
        .mailbox()
        .database_url(&url)
        .start()
        .await;
    a_read_browser_pairs_once_through_the_link(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_or_unknown_link_pairs_nobody() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let server = app(&model).await;
    let url = server.listen().await;
    // A link made eleven minutes ago (the rule: it works for ten).
    let store = &server.state.store;
    let code = "0".repeat(64);
    let made = Utc::now() - chrono::Duration::minutes(11);
    store
        .create_pairing(
            &hex::encode(Sha256::digest(code.as_bytes())),
            &PairingLink::new(Scope::Control, "cli", made),
        )
        .await
        .unwrap();
    let path = format!("/pair/{code}");
    let page = no_redirects()
        .get(format!("{url}{path}"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::GONE);
    assert!(page.text().await.unwrap().contains("lapsed"));
    let resp = post_form(&url, &path, "late phone", Some(&url)).await;
    assert_eq!(resp.status(), StatusCode::GONE);
    assert!(session_cookie(&resp).is_none());
    assert!(!has_device_named(&server, "late phone").await);

    let resp = post_form(&url, "/pair/nonsense", "x", Some(&url)).await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let page = resp.text().await.unwrap();
    assert!(page.contains("not valid"), "{page}");
    // Plain words for a person: no Markdown backticks on the page.
    assert!(
        page.contains("iris pair --scope read (or --scope control)"),
        "{page}"
    );
    assert!(!page.contains('`'), "{page}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_name_keeps_the_link_and_concurrent_posts_pair_one_browser() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let server = app(&model).await;
    server.add_device("phone", Scope::Control).await;
    let url = server.listen().await;
    let path = pair_path(&server, &url, Scope::Control).await;
    let resp = post_form(&url, &path, "phone", Some(&url)).await;
    assert_eq!(resp.status(), StatusCode::CONFLICT);
    assert!(resp.text().await.unwrap().contains("already exists"));

    // Eight browsers post the same link at once: exactly one is paired.
    let barrier = Arc::new(Barrier::new(8));
    let mut tasks = Vec::new();
    for i in 0..8 {
        let (barrier, url, path) = (barrier.clone(), url.clone(), path.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let resp = post_form(&url, &path, &format!("browser {i}"), Some(&url)).await;
            (resp.status(), session_cookie(&resp).is_some())
        }));
    }
    let mut paired = 0;
    for task in tasks {
        let (status, cookie) = task.await.unwrap();
        match status {
            StatusCode::SEE_OTHER => {
                assert!(cookie);
                paired += 1
            }
            StatusCode::GONE => assert!(!cookie),
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(paired, 1);
    assert_eq!(
        devices(&server)
            .await
            .iter()
            .filter(|(name, _)| name.starts_with("browser "))
            .count(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_tls_the_link_uses_the_public_url_and_the_cookie_is_secure() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let server = TestApp::with_model(&model)
        .mailbox()
        .public_url("https://iris.example.test/")
        .start()
        .await;
    // Made where `iris pair` makes it: on the public URL.
    let base = iris::pairing::configured_base(&server.state.settings).unwrap();
    let offer =
        iris::pairing::make_link(&server.state.store, Scope::Read, "cli", &base, Utc::now())
            .await
            .unwrap();
    let link = offer.url.as_str();
    assert!(
        link.starts_with("https://iris.example.test/pair/"),
        "{link}"
    );
    let url = server.listen().await;
    let path = &link[link.find("/pair/").unwrap()..];
    // Behind a proxy that rewrites Host, the browser's Origin is the public address: accepted.
    let resp = post_form(&url, path, "phone", Some("https://iris.example.test")).await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let set_cookie = resp.headers()["set-cookie"].to_str().unwrap();
    assert!(set_cookie.contains("Secure"), "{set_cookie}");
}

// Needs a process: the CLI (`iris devices add`, `iris devices list`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devices_added_at_the_server_follow_the_name_rules() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let world = world(&model).await;
    let long = "x".repeat(41);
    for bad in ["<script>", "a\u{1b}[2Jb", "", long.as_str()] {
        let out = std::process::Command::new(support::iris_bin())
            .args(["devices", "add", "--name", bad, "--scope", "read"])
            .env("IRIS_DATABASE_URL", &world.database_url)
            .env("IRIS_CONFIG", world.dir.path().join("iris.toml"))
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad:?} was accepted");
    }
    assert!(devices_list(&world).is_empty());
    world.add_device("kitchen tablet", "read");
    assert!(devices_list(&world).starts_with("kitchen tablet\tread"));
}

// Needs a process: the CLI (`iris pair`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_url_that_is_not_an_origin_is_refused_before_any_link() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let world = world(&model).await;
    let out = std::process::Command::new(support::iris_bin())
        .args(["pair", "--scope", "read"])
        .env("IRIS_DATABASE_URL", &world.database_url)
        .env("IRIS_CONFIG", world.dir.path().join("iris.toml"))
        .env("IRIS_PUBLIC_URL", "https://iris.example.org/iris/")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("IRIS_PUBLIC_URL"), "{stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("/pair/"));
}
