//! The app's pages by address, through the real `iris serve --demo` (app::page; no client-side
//! router, so each page is a document of its own): `/`, `/activity`, `/activity/{id}`,
//! `/plugins` and `/devices` render their page (200, the header's link to it marked
//! `aria-current="page"`); any other address says "This page does not exist." with 404.

mod support;

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
