//! The app's pages by address, in process (`support::TestApp`; app::page, no client-side
//! router, so each page is a document of its own): `/`, `/activity`, `/activity/{id}`,
//! `/plugins` and `/devices` render their page (200, the header's link to it marked
//! `aria-current="page"`); any other address says "This page does not exist." with 404. Each
//! page has one `<h1>` and a title naming it, and its lists in the HTML itself (in-order
//! streaming: no "Loading…" for a browser without JavaScript). Each page names its own wasm
//! when the site has one per set of pages (app::page::Bundle), and the site's one wasm when it
//! has not.

use crate::support;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use support::{ModelServer, TestApp, CATEGORY_TRASH_SCRIPT};

/// GETs `path` as a browser of this site does (with the app's device token); returns status
/// and body.
async fn page(app: &TestApp, path: &str) -> (StatusCode, String) {
    let request = Request::builder()
        .uri(path)
        .header("authorization", app.bearer())
        .header("sec-fetch-site", "same-origin")
        .body(Body::empty())
        .unwrap();
    let response = app.send(request).await;
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 64 << 20)
        .await
        .unwrap();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

/// Leptos options as `iris serve` reads them from `LEPTOS_SITE_ROOT` and `LEPTOS_OUTPUT_NAME`.
fn site(root: Option<&std::path::Path>) -> leptos::config::LeptosOptions {
    let options = leptos::config::LeptosOptions::builder().output_name("iris");
    match root {
        Some(root) => options.site_root(root.display().to_string()).build(),
        None => options.build(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_address_shows_its_page_and_any_other_says_it_does_not_exist() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let server = TestApp::with_model(&model).mailbox().start().await;

    for (path, current, marker) in [
        ("/", "/activity", "data-testid=\"pending-list\""),
        ("/activity", "/activity", "data-testid=\"pending-list\""),
        (
            "/activity/no-such-card",
            "/activity",
            "data-testid=\"card-not-found\"",
        ),
        ("/plugins", "/plugins", "data-testid=\"plugin-email\""),
        ("/devices", "/devices", "Devices"),
    ] {
        let (status, html) = page(&server, path).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert!(html.contains(marker), "{path} shows its page: {html}");
        assert!(
            html.contains(&format!("href=\"{current}\" aria-current=\"page\"")),
            "{path}: the header marks {current}"
        );
        assert!(!html.contains("This page does not exist."), "{path}");
        // One heading names the page, as the tab's title does.
        let name = match current {
            "/plugins" => "Plugins",
            "/devices" => "Devices",
            _ => "Activity",
        };
        assert_eq!(html.matches("<h1").count(), 1, "{path}: one h1");
        assert!(
            html.contains(&format!("<title>{name} · IRIS approvals</title>")),
            "{path}: its title"
        );
        // The lists are in the page itself: without JavaScript it never says "Loading…".
        assert!(!html.contains("Loading…"), "{path}: {html}");
    }
    for path in ["/nope", "/activity/a/b"] {
        let (status, html) = page(&server, path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert!(html.contains("This page does not exist."), "{path}: {html}");
        assert!(html.contains("<title>Page not found · IRIS approvals</title>"));
        assert!(html.contains(">Page not found</h1>"), "{path}: {html}");
    }
}

/// The js module a page's hydration script loads (`/pkg/NAME.js`).
fn hydration_module(html: &str) -> String {
    let marker = "rel=\"modulepreload\" href=\"/pkg/";
    let start = html.find(marker).expect("a module preload") + marker.len();
    html[start..].split('"').next().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_page_loads_its_own_wasm_when_the_site_has_one_per_set_of_pages() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    // A site with the setup bundle beside the Activity one (as scripts/build-site.sh makes).
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("site");
    std::fs::create_dir_all(root.join("pkg")).unwrap();
    std::fs::write(root.join("pkg/iris-setup.js"), "").unwrap();
    let server = TestApp::with_model(&model)
        .mailbox()
        .leptos(site(Some(&root)))
        .in_dir(dir)
        .start()
        .await;
    for (path, module) in [
        ("/activity", "iris.js"),
        ("/activity/no-such-card", "iris.js"),
        ("/nope", "iris.js"),
        ("/plugins", "iris-setup.js"),
        ("/devices", "iris-setup.js"),
    ] {
        let (_, html) = page(&server, path).await;
        assert_eq!(hydration_module(&html), module, "{path}");
    }

    // A site with one wasm for every page (e.g. cargo-leptos' build): every page loads it.
    let server = TestApp::with_model(&model)
        .mailbox()
        .leptos(site(None))
        .start()
        .await;
    for path in ["/activity", "/plugins", "/devices"] {
        let (_, html) = page(&server, path).await;
        assert_eq!(hydration_module(&html), "iris.js", "{path}");
    }
}
