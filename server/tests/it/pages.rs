//! The app's pages by address, through the real `iris serve --demo` (app::page; no client-side
//! router, so each page is a document of its own): `/`, `/activity`, `/activity/{id}`,
//! `/plugins` and `/devices` render their page (200, the header's link to it marked
//! `aria-current="page"`); any other address says "This page does not exist." with 404. Each
//! page names its own wasm when the site has one per set of pages (app::page::Bundle), and the
//! site's one wasm when it has not.

use crate::support;

use chrono::Utc;
use reqwest::StatusCode;
use support::{no_redirects, Iris, ModelServer, World, CATEGORY_TRASH_SCRIPT};

/// GETs `path` as a browser of this site does; returns status and body.
async fn page(server: &Iris, path: &str) -> (StatusCode, String) {
    let response = no_redirects()
        .get(format!("{}{path}", server.url))
        .header("sec-fetch-site", "same-origin")
        .send()
        .await
        .unwrap();
    (response.status(), response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_address_shows_its_page_and_any_other_says_it_does_not_exist() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let world = World::new(&model.base_url);
    iris_email::demo::write_demo_maildir(&world.maildir, Utc::now()).unwrap();
    let server = world.start_with(&["serve", "--demo"]);

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
    }
    for path in ["/nope", "/activity/a/b"] {
        let (status, html) = page(&server, path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert!(html.contains("This page does not exist."), "{path}: {html}");
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
    let mut world = World::new(&model.base_url);
    iris_email::demo::write_demo_maildir(&world.maildir, Utc::now()).unwrap();
    let site = world.dir.path().join("site");
    std::fs::create_dir_all(site.join("pkg")).unwrap();
    std::fs::write(site.join("pkg/iris-setup.js"), "").unwrap();
    world
        .env
        .push(("LEPTOS_SITE_ROOT".into(), site.display().to_string()));
    world.env.push(("LEPTOS_OUTPUT_NAME".into(), "iris".into()));
    let server = world.start_with(&["serve", "--demo"]);
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
    let mut world = World::new(&model.base_url);
    world.env.push(("LEPTOS_OUTPUT_NAME".into(), "iris".into()));
    iris_email::demo::write_demo_maildir(&world.maildir, Utc::now()).unwrap();
    let server = world.start_with(&["serve", "--demo"]);
    for path in ["/activity", "/plugins", "/devices"] {
        let (_, html) = page(&server, path).await;
        assert_eq!(hydration_module(&html), "iris.js", "{path}");
    }
}
