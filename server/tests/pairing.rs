//! Pairing a browser and its session (Devices, sessions, scopes) through the real
//! `iris` binary: `iris pair --scope read|control` prints a one-time link; its page (GET) pairs
//! nothing by itself; posting its form from this site pairs one browser with the link's scope
//! and starts a session (cookie `iris_session`: HttpOnly, SameSite=Strict, Secure behind TLS)
//! whose record lives in the same database; the link then refuses a second use, a lapsed link
//! pairs nobody, a cross-site post is refused, and revoking the device ends its session and
//! its event stream. The main flow runs on SQLite and PostgreSQL.

mod support;

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;
use iris_core::pairing::PairingLink;
use iris_core::ports::{PairingStore, Scope};
use reqwest::StatusCode;
use serde_json::json;
use sha2::{Digest, Sha256};
use support::{no_redirects, session_cookie, snapshot, ModelServer, World, CATEGORY_TRASH_SCRIPT};
use tokio::sync::Barrier;

async fn world(model: &ModelServer) -> World {
    let world = World::new(&model.base_url);
    iris_email::demo::write_demo_maildir(&world.maildir, Utc::now()).unwrap();
    world
}

/// Posts the pairing form of `path` with `name`, from `origin` (None: no Origin header).
async fn post_form(url: &str, path: &str, name: &str, origin: Option<&str>) -> reqwest::Response {
    let mut request = no_redirects()
        .post(format!("{url}{path}"))
        .form(&[("name", name)]);
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    request.send().await.unwrap()
}

/// `iris devices list`, one line per live device.
fn devices_list(world: &World) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_iris"))
        .args(["devices", "list"])
        .current_dir(world.dir.path())
        .env("IRIS_DATABASE_URL", &world.database_url)
        .env("IRIS_CONFIG", world.dir.path().join("iris.toml"))
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// How many session records the database holds (tower-sessions' table on either engine).
async fn session_rows(database_url: &str) -> i64 {
    if database_url.starts_with("sqlite:") {
        let pool = sqlx::SqlitePool::connect(database_url).await.unwrap();
        let n: (i64,) = sqlx::query_as("SELECT COUNT(*) FROM tower_sessions")
            .fetch_one(&pool)
            .await
            .unwrap();
        n.0
    } else {
        let pool = sqlx::PgPool::connect(database_url).await.unwrap();
        let n: (i64,) = sqlx::query_as("SELECT COUNT(*) FROM tower_sessions.session")
            .fetch_one(&pool)
            .await
            .unwrap();
        n.0
    }
}

async fn a_read_browser_pairs_once_through_the_link(world: World) {
    let output = world.pair_output("read");
    assert!(output.contains("read device"), "{output}");
    assert!(output.contains("10 minutes"), "{output}");
    let link = output.lines().last().unwrap();
    let code = link.rsplit('/').next().unwrap();
    assert_eq!(code.len(), 64, "{link}");
    assert!(code.chars().all(|c| c.is_ascii_hexdigit()), "{link}");
    let path = format!("/pair/{code}");

    let server = world.start();
    let http = no_redirects();
    let page = http
        .get(format!("{}{path}", server.url))
        .send()
        .await
        .unwrap();
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
        let resp = post_form(&server.url, &path, "wall tablet", origin).await;
        assert_eq!(resp.status(), StatusCode::FORBIDDEN, "origin {origin:?}");
        assert!(session_cookie(&resp).is_none());
    }
    // A name the rules refuse: 400, the link still works.
    let resp = post_form(&server.url, &path, "wall\u{202e}tablet", Some(&server.url)).await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert!(resp.text().await.unwrap().contains("letters, digits"));
    assert!(!devices_list(&world).contains("wall"));
    let sessions_before = session_rows(&world.database_url).await;

    let resp = post_form(&server.url, &path, "  wall tablet ", Some(&server.url)).await;
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
        session_rows(&world.database_url).await > sessions_before,
        "the session is stored in the server's database"
    );
    let listed = devices_list(&world);
    assert!(
        listed.lines().any(|l| l.starts_with("wall tablet\tread")),
        "{listed}"
    );

    // The session sees everything and changes nothing.
    let client = server.client();
    let owner = world.add_device("owner", "control");
    let (_, halted) = client
        .post(
            "/api/chat",
            Some(&owner),
            json!({"message": "trash the promo emails"}),
        )
        .await;
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let seen = http
        .get(format!("{}/governance/approvals/{id}", server.url))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(seen.status(), StatusCode::OK);
    let answer = http
        .post(format!("{}/governance/approvals/{id}/respond", server.url))
        .header("cookie", &cookie)
        .header("origin", &server.url)
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
    let again = http
        .get(format!("{}{path}", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::GONE);
    let text = again.text().await.unwrap();
    assert!(text.contains("already used"), "{text}");
    assert!(text.contains("wall tablet"), "{text}");
    // Its time written as the cards write theirs ("3 Dec, 16:23 UTC"), not "2026-12-03 16:23".
    let today = chrono::Utc::now().format("at %-d %b, ").to_string();
    assert!(text.contains(&today), "{text}");
    assert!(
        !text.contains(&chrono::Utc::now().format("%Y-%m-").to_string()),
        "{text}"
    );
    let resp = post_form(&server.url, &path, "second", Some(&server.url)).await;
    assert_eq!(resp.status(), StatusCode::GONE);
    assert!(session_cookie(&resp).is_none());
    assert!(!devices_list(&world).contains("second"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_browser_pairs_once_through_the_link_on_sqlite() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    a_read_browser_pairs_once_through_the_link(world(&model).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_browser_pairs_once_through_the_link_on_postgres() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let (url, _database) = iris_store::testing::fresh_postgres_database().await;
    let mut world = world(&model).await;
    world.database_url = url;
    a_read_browser_pairs_once_through_the_link(world).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_or_unknown_link_pairs_nobody() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let world = world(&model).await;
    let server = world.start();
    // A link made eleven minutes ago (the rule: it works for ten).
    let store = iris_store::Store::connect(&world.database_url)
        .await
        .unwrap();
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
        .get(format!("{}{path}", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::GONE);
    assert!(page.text().await.unwrap().contains("lapsed"));
    let resp = post_form(&server.url, &path, "late phone", Some(&server.url)).await;
    assert_eq!(resp.status(), StatusCode::GONE);
    assert!(session_cookie(&resp).is_none());
    assert!(!devices_list(&world).contains("late phone"));

    let resp = post_form(&server.url, "/pair/nonsense", "x", Some(&server.url)).await;
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
    let world = world(&model).await;
    world.add_device("phone", "control");
    let server = world.start();
    let path = world.pair_path("control");
    let resp = post_form(&server.url, &path, "phone", Some(&server.url)).await;
    assert_eq!(resp.status(), StatusCode::CONFLICT);
    assert!(resp.text().await.unwrap().contains("already exists"));

    // Eight browsers post the same link at once: exactly one is paired.
    let barrier = Arc::new(Barrier::new(8));
    let mut tasks = Vec::new();
    for i in 0..8 {
        let (barrier, url, path) = (barrier.clone(), server.url.clone(), path.clone());
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
        devices_list(&world)
            .lines()
            .filter(|l| l.starts_with("browser "))
            .count(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoking_a_paired_browser_ends_its_session_and_event_stream() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let world = world(&model).await;
    let owner = world.add_device("owner", "control");
    let server = world.start();
    let cookie = server.pair_browser(&world, "control", "laptop").await;
    let http = reqwest::Client::new();

    let events = http
        .get(format!("{}/api/events", server.url))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), StatusCode::OK);
    let mut stream = events.bytes_stream();

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_iris"))
        .args(["devices", "revoke", "laptop"])
        .env("IRIS_DATABASE_URL", &world.database_url)
        .env("IRIS_CONFIG", world.dir.path().join("iris.toml"))
        .output()
        .unwrap();
    assert!(out.status.success());

    // A card is requested: the revoked browser's stream ends instead of showing it.
    let (_, halted) = server
        .client()
        .post(
            "/api/chat",
            Some(&owner),
            json!({"message": "trash the promo emails"}),
        )
        .await;
    assert_eq!(halted["status"], "awaiting_approval");
    let mut received = Vec::new();
    let ended = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(bytes) => received.extend_from_slice(&bytes),
                Err(_) => break,
            }
        }
    })
    .await;
    assert!(
        ended.is_ok(),
        "the revoked device's event stream did not end"
    );
    let text = String::from_utf8_lossy(&received);
    assert!(
        !text.contains("approval.requested"),
        "a revoked device saw a new card: {text}"
    );

    let refused = http
        .get(format!("{}/governance/approvals", server.url))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    let body: serde_json::Value = refused.json().await.unwrap();
    assert!(
        body["error"].as_str().unwrap().contains("pair it again"),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_tls_the_link_uses_the_public_url_and_the_cookie_is_secure() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let mut world = world(&model).await;
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
    let server = world.start();
    let path = &link[link.find("/pair/").unwrap()..];
    // Behind a proxy that rewrites Host, the browser's Origin is the public address: accepted.
    let resp = post_form(
        &server.url,
        path,
        "phone",
        Some("https://iris.example.test"),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let set_cookie = resp.headers()["set-cookie"].to_str().unwrap();
    assert!(set_cookie.contains("Secure"), "{set_cookie}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_signs_pages_in_but_never_the_pairing_page_or_the_api() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let world = world(&model).await;
    let server = world.start_with(&["serve", "--demo"]);
    let http = no_redirects();
    let page = http
        .get(format!("{}/activity", server.url))
        .send()
        .await
        .unwrap();
    let cookie = session_cookie(&page).expect("the demo signs a page request in");
    // A page of another site re-pointed at this machine (DNS rebinding) sends its own name as
    // Host: it is not signed in, so its scripts cannot answer cards as the demo owner.
    for host in [
        "evil.example",
        "evil.example:3000",
        "127.0.0.1.evil.example",
    ] {
        let rebound = http
            .get(format!("{}/activity", server.url))
            .header("host", host)
            .send()
            .await
            .unwrap();
        assert!(
            session_cookie(&rebound).is_none(),
            "signed in for Host {host}"
        );
    }
    let localhost = server.url.replace("127.0.0.1", "localhost");
    let by_name = http
        .get(format!("{localhost}/activity"))
        .send()
        .await
        .unwrap();
    assert!(
        session_cookie(&by_name).is_some(),
        "localhost is this machine"
    );
    let approvals = http
        .get(format!("{}/governance/approvals", server.url))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(
        approvals.status(),
        StatusCode::OK,
        "the demo owner's session works"
    );
    let pair = http
        .get(format!("{}/pair/{}", server.url, "1".repeat(64)))
        .send()
        .await
        .unwrap();
    assert_eq!(pair.status(), StatusCode::NOT_FOUND);
    assert!(session_cookie(&pair).is_none());
    let api = http
        .get(format!("{}/governance/approvals", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(api.status(), StatusCode::UNAUTHORIZED);

    // A browser paired on the demo and then revoked stays signed out: the demo does not sign
    // it in as its owner on the following page loads.
    let tablet = server.pair_browser(&world, "read", "demo tablet").await;
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_iris"))
        .args(["devices", "revoke", "demo tablet"])
        .env("IRIS_DATABASE_URL", &world.database_url)
        .env("IRIS_CONFIG", world.dir.path().join("iris.toml"))
        .output()
        .unwrap();
    assert!(out.status.success());
    for _ in 0..2 {
        let page = http
            .get(format!("{}/activity", server.url))
            .header("cookie", &tablet)
            .send()
            .await
            .unwrap();
        assert!(
            session_cookie(&page).is_none_or(|c| c == tablet),
            "the revoked browser got a new session"
        );
    }
    let refused = http
        .get(format!("{}/governance/approvals", server.url))
        .header("cookie", &tablet)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);

    // The demo's owner cannot be revoked from the app while the demo runs (every browser of the
    // demo signs in as it); the refusal changes nothing.
    let revoke = format!(
        "{}{}",
        server.url,
        <app::api::RevokeDevice as leptos::server_fn::ServerFn>::PATH
    );
    let refused = http
        .post(&revoke)
        .header("cookie", &cookie)
        .header("origin", &server.url)
        .json(&json!({"name": "demo-owner-browser"}))
        .send()
        .await
        .unwrap();
    assert!(!refused.status().is_success());
    assert!(refused.text().await.unwrap().contains("demo's owner"));
    assert!(devices_list(&world).contains("demo-owner-browser"));

    // The demo killed and started again (each run makes its owner device anew): the open tab's
    // event stream reconnects first and is refused, and the next page load signs the browser
    // in as the new run's owner instead of leaving it locked out.
    server.kill();
    let server = world.start_with(&["serve", "--demo"]);
    let events = http
        .get(format!("{}/api/events", server.url))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), StatusCode::UNAUTHORIZED);
    let page = http
        .get(format!("{}/activity", server.url))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let renewed = session_cookie(&page).expect("signed in again");
    let approvals = http
        .get(format!("{}/governance/approvals", server.url))
        .header("cookie", &renewed)
        .send()
        .await
        .unwrap();
    assert_eq!(
        approvals.status(),
        StatusCode::OK,
        "the renewed session works"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devices_added_at_the_server_follow_the_name_rules() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let world = world(&model).await;
    let long = "x".repeat(41);
    for bad in ["<script>", "a\u{1b}[2Jb", "", long.as_str()] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_iris"))
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_opened_from_another_site_is_loaded_again_from_this_one() {
    // SameSite=Strict keeps the session cookie off a link followed from another site; the
    // server answers such a first load with a page that loads itself again (same-site), and
    // signs nobody in on it, not even in the demo.
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let world = world(&model).await;
    let server = world.start_with(&["serve", "--demo"]);
    let http = no_redirects();
    let bounced = http
        .get(format!("{}/activity", server.url))
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(bounced.status(), StatusCode::OK);
    assert!(
        session_cookie(&bounced).is_none(),
        "nobody is signed in on the bounce"
    );
    let html = bounced.text().await.unwrap();
    assert!(html.contains("http-equiv=\"refresh\""), "{html}");
    assert!(
        !html.contains("Approvals"),
        "no app content on the bounce: {html}"
    );

    // The same load from this site renders the app (the demo signs it in).
    let page = http
        .get(format!("{}/activity", server.url))
        .header("sec-fetch-site", "same-origin")
        .send()
        .await
        .unwrap();
    assert!(session_cookie(&page).is_some());
    // A cross-site load that does carry a cookie, and the pairing page, are never bounced.
    for (path, cookie) in [("/activity", Some("iris_session=x")), ("/pair/abc", None)] {
        let mut request = http
            .get(format!("{}{path}", server.url))
            .header("sec-fetch-site", "cross-site");
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        let text = request.send().await.unwrap().text().await.unwrap();
        assert!(!text.contains("http-equiv=\"refresh\""), "{path}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_url_that_is_not_an_origin_is_refused_before_any_link() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let world = world(&model).await;
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_iris"))
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

/// How many pairing links the database holds.
async fn pairing_rows(database_url: &str) -> i64 {
    let pool = sqlx::SqlitePool::connect(database_url).await.unwrap();
    let n: (i64,) = sqlx::query_as("SELECT COUNT(*) FROM pairing_links")
        .fetch_one(&pool)
        .await
        .unwrap();
    n.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_apps_state_changing_functions_are_control_only_and_same_site_only() {
    // DESIGN §2: every state-changing route is a gated write. The web app's server functions
    // are routes too: a read browser gets 403 on each, a control browser's cookie sent from
    // another site gets 403, and neither changes anything.
    use leptos::server_fn::ServerFn;
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let world = world(&model).await;
    let owner = world.add_device("owner", "control");
    let server = world.start();
    let client = server.client();
    let (_, halted) = client
        .post(
            "/api/chat",
            Some(&owner),
            json!({"message": "trash the promo emails"}),
        )
        .await;
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let read = server.pair_browser(&world, "read", "wall").await;
    let control = server.pair_browser(&world, "control", "laptop").await;
    let calls = [
        (
            <app::api::RespondApproval as ServerFn>::PATH,
            json!({"id": id, "decision": "approve", "reason": null}),
        ),
        (
            <app::api::SendChat as ServerFn>::PATH,
            json!({"message": "trash the newsletters", "conversation_id": null}),
        ),
        (
            <app::api::RevokeDevice as ServerFn>::PATH,
            json!({"name": "owner"}),
        ),
        (
            <app::api::MakePairingLink as ServerFn>::PATH,
            json!({"scope": "control"}),
        ),
    ];
    let http = no_redirects();
    let post = |path: &str, body: &serde_json::Value, cookie: &str, origin: &str| {
        http.post(format!("{}{path}", server.url))
            .header("cookie", cookie)
            .header("origin", origin)
            .json(body)
            .send()
    };
    // What a refused call must leave as it was (device names and scopes: a refused request
    // still records the device's last use).
    let state = || async {
        let devices: Vec<String> = devices_list(&world)
            .lines()
            .map(|l| l.split('\t').take(2).collect::<Vec<_>>().join(" "))
            .collect();
        (
            client.get("/governance/approvals", &owner).await,
            devices,
            pairing_rows(&world.database_url).await,
        )
    };
    let before = state().await;
    let mail = snapshot(&world.maildir);
    for (path, body) in &calls {
        let resp = post(path, body, &read, &server.url).await.unwrap();
        assert_eq!(
            resp.status(),
            StatusCode::FORBIDDEN,
            "{path} as a read browser"
        );
        let resp = post(path, body, &control, "http://evil.example")
            .await
            .unwrap();
        assert_eq!(
            resp.status(),
            StatusCode::FORBIDDEN,
            "{path} from another site"
        );
    }
    assert_eq!(state().await, before, "a refused call changed something");
    assert!(
        snapshot(&world.maildir) == mail,
        "a refused call moved mail"
    );

    // The same calls from the control browser on this site are accepted (so the 403s above
    // were the scope and the origin, not the bodies).
    let made = post(calls[3].0, &calls[3].1, &control, &server.url)
        .await
        .unwrap();
    assert_eq!(made.status(), StatusCode::OK);
    assert_eq!(pairing_rows(&world.database_url).await, before.2 + 1);
    let revoked = post(calls[2].0, &json!({"name": "wall"}), &control, &server.url)
        .await
        .unwrap();
    assert_eq!(revoked.status(), StatusCode::OK);
    assert!(!devices_list(&world).contains("wall"));
}
