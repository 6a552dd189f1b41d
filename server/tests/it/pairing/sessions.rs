//! A paired browser's session: revoking its device ends the session and its event stream; the
//! demo signs pages in but never the pairing page or the API; a page opened from another site
//! (SameSite=Strict keeps the cookie off) is loaded again from this one and signs nobody in; the
//! web app's state-changing functions are control-only and same-site only (DESIGN §2).
//!
//! In process (`support::TestApp` on a listener) except the demo's tests: `iris serve --demo`
//! runs the real binary.

use crate::support;

use std::time::Duration;

use futures::StreamExt;
use iris_core::ports::{DeviceStore, Scope};
use reqwest::StatusCode;
use serde_json::json;
use support::{no_redirects, session_cookie, snapshot, ModelServer, CATEGORY_TRASH_SCRIPT};

use super::{app, devices, devices_list, world};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoking_a_paired_browser_ends_its_session_and_event_stream() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let server = app(&model).await;
    let owner = server.add_device("owner", Scope::Control).await;
    let url = server.listen().await;
    let cookie = server.pair_browser(&url, Scope::Control, "laptop").await;
    let http = reqwest::Client::new();

    let events = http
        .get(format!("{url}/api/events"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), StatusCode::OK);
    let mut stream = events.bytes_stream();

    // Revoked as `iris devices revoke laptop` revokes it (the store's revoke).
    assert!(server.state.store.revoke("laptop").await.unwrap());

    // A card is requested: the revoked browser's stream ends instead of showing it.
    let (_, halted) = server
        .client()
        .await
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
        .get(format!("{url}/governance/approvals"))
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

// Needs a process: `--demo` (in process `iris::build` would take the demo's database from the
// process's environment, `./data/demo.db` without IRIS_DATABASE_URL), killed and started again;
// it also keeps the CLI's `iris devices revoke` tested.
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
    let out = std::process::Command::new(support::iris_bin())
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

// Needs a process: `--demo` (in process `iris::build` would take the demo's database from the
// process's environment, `./data/demo.db` without IRIS_DATABASE_URL).
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
    let server = app(&model).await;
    let owner = server.add_device("owner", Scope::Control).await;
    let url = server.listen().await;
    let client = server.client().await;
    let (_, halted) = client
        .post(
            "/api/chat",
            Some(&owner),
            json!({"message": "trash the promo emails"}),
        )
        .await;
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let read = server.pair_browser(&url, Scope::Read, "wall").await;
    let control = server.pair_browser(&url, Scope::Control, "laptop").await;
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
        http.post(format!("{url}{path}"))
            .header("cookie", cookie)
            .header("origin", origin)
            .json(body)
            .send()
    };
    // What a refused call must leave as it was (device names and scopes: a refused request
    // still records the device's last use).
    let database_url = server.state.settings.database_url.clone();
    let state = || async {
        (
            client.get("/governance/approvals", &owner).await,
            devices(&server).await,
            pairing_rows(&database_url).await,
        )
    };
    let before = state().await;
    let mail = snapshot(&server.maildir());
    for (path, body) in &calls {
        let resp = post(path, body, &read, &url).await.unwrap();
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
        snapshot(&server.maildir()) == mail,
        "a refused call moved mail"
    );

    // The same calls from the control browser on this site are accepted (so the 403s above
    // were the scope and the origin, not the bodies).
    let made = post(calls[3].0, &calls[3].1, &control, &url).await.unwrap();
    assert_eq!(made.status(), StatusCode::OK);
    assert_eq!(pairing_rows(&database_url).await, before.2 + 1);
    let revoked = post(calls[2].0, &json!({"name": "wall"}), &control, &url)
        .await
        .unwrap();
    assert_eq!(revoked.status(), StatusCode::OK);
    assert!(!devices(&server)
        .await
        .iter()
        .any(|(name, _)| name.contains("wall")));
}
