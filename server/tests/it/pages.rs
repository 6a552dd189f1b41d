//! The app's pages by address, in process (`support::TestApp`; app::page, no client-side
//! router, so each page is a document of its own): `/`, `/activity`, `/activity/{id}`,
//! `/plugins` and `/devices` render their page (200, the header's link to it marked
//! `aria-current="page"`); any other address says "This page does not exist." with 404. Each
//! page has one `<h1>` and a title naming it, and its lists in the HTML itself (in-order
//! streaming: no "Loading…" for a browser without JavaScript). Each page names its own wasm
//! when the site has one per set of pages (app::page::Bundle), and the site's one wasm when it
//! has not. Activity's history shows the filters its address names (app::activity::filters).

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

/// Rejects card `id` through the JSON API, as the CLI does when `cli` (its surface header),
/// else as a script with a bearer token (surface `api`).
async fn reject(app: &TestApp, id: &str, cli: bool) {
    let mut request = Request::builder()
        .method("POST")
        .uri(format!("/governance/approvals/{id}/respond"))
        .header("authorization", app.bearer())
        .header("content-type", "application/json");
    if cli {
        request = request.header("x-iris-surface", "cli");
    }
    let body = serde_json::json!({ "decision": "reject" }).to_string();
    let response = app.send(request.body(Body::from(body)).unwrap()).await;
    assert_eq!(response.status(), StatusCode::OK, "{id}");
}

/// Activity's history follows the address's query (app::activity::filters) in the HTML the
/// server renders, so a reload, a shared link and a browser without JavaScript show the same
/// list: the search, the status and the surface narrow the answered cards (the waiting card
/// stays), the form shows the filters chosen with a way to clear them, an empty result says
/// so in words, and values the page cannot use are left out with a note, never an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activitys_history_shows_the_filters_of_its_address() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let server = TestApp::with_model(&model).mailbox().start().await;
    let card = |turn: serde_json::Value| turn["approval_id"].as_str().unwrap().to_owned();
    let walrus = card(server.chat("trash the promo mail, walrus").await);
    reject(&server, &walrus, true).await;
    let otter = card(server.chat("trash the promo mail, otter").await);
    reject(&server, &otter, false).await;
    let waiting = card(server.chat("trash the promo mail, heron").await);
    let line = |id: &str| format!("data-testid=\"line-{id}\"");

    let (status, html) = page(&server, "/activity").await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains(&line(&walrus)) && html.contains(&line(&otter)));
    assert!(html.contains("role=\"search\""), "one search form: {html}");
    assert!(
        !html.contains("data-testid=\"filter-clear\""),
        "nothing to clear"
    );

    // The search and the surface: only the card rejected on the CLI; the waiting card stays.
    let (status, html) = page(&server, "/activity?q=Walrus&status=rejected&surface=cli").await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains(&line(&walrus)), "{html}");
    assert!(!html.contains(&line(&otter)), "{html}");
    assert!(html.contains(&format!("data-testid=\"card-{waiting}\"")));
    // The form says what is chosen, and offers to clear it.
    assert!(html.contains("value=\"Walrus\""), "{html}");
    assert!(html.contains("<option value=\"cli\" selected"), "{html}");
    assert!(
        html.contains("<option value=\"rejected\" selected"),
        "{html}"
    );
    assert!(html.contains("data-testid=\"filter-clear\""));
    assert!(
        html.contains("<option value=\"trash_email\""),
        "the tools that make cards"
    );

    let (_, html) = page(&server, "/activity?surface=api").await;
    assert!(html.contains(&line(&otter)) && !html.contains(&line(&walrus)));

    // Nothing matches: said in words, with a way back to every card.
    let (status, html) = page(&server, "/activity?q=walrus&status=approved").await;
    assert_eq!(status, StatusCode::OK);
    assert!(!html.contains(&line(&walrus)));
    assert!(
        html.contains("No answered cards match \u{201c}walrus\u{201d}, approved."),
        "{html}"
    );
    assert!(html.contains("data-testid=\"no-match-clear\""));

    // Values the page cannot use are left out, each with a note; the rest still filters.
    let (status, html) = page(
        &server,
        "/activity?q=otter&status=done&since=yesterday&surface=fax&until=2026-02-31",
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains(&line(&otter)) && !html.contains(&line(&walrus)));
    assert!(html.contains("data-testid=\"filter-notes\""), "{html}");
    assert!(html.contains("Status \u{201c}done\u{201d} was ignored"));
    assert!(html.contains("From \u{201c}yesterday\u{201d} was ignored"));
    // A NUL in the search (it broke the full-text query, and the page showed the database's
    // words instead of any card): left out with a note, the rest of the search still applies.
    let (status, html) = page(&server, "/activity?q=otter%00").await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains(&line(&otter)) && !html.contains(&line(&walrus)));
    assert!(
        html.contains("control characters; they were left out"),
        "{html}"
    );
    assert!(!html.contains("database"), "{html}");
    // The JSON API refuses it, naming the rule, and changes nothing.
    let (status, _, body) = server
        .call("GET", "/governance/approvals?q=zz%00zz", None)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("control character (U+0000)"),
        "{body}"
    );

    // Days: today's cards are in a range that ends today, none in one that ended before.
    let today = chrono::Utc::now().date_naive();
    let (_, html) = page(&server, &format!("/activity?since={today}&until={today}")).await;
    assert!(html.contains(&line(&walrus)) && html.contains(&line(&otter)));
    let (_, html) = page(&server, "/activity?until=2020-01-01").await;
    assert!(!html.contains(&line(&walrus)) && html.contains("data-testid=\"no-match\""));
}

/// Activity carries its first snapshot to the browser in the page (app::activity::load: a
/// `<script type="application/json">` data block the browser reads before it hydrates): the
/// whole snapshot, its cards' texts included, as JSON that no card's text can end or turn
/// into markup (every `<` is written `\u003c`), with the page's script nonce.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activity_carries_its_first_snapshot_as_json_no_card_text_can_break() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let server = TestApp::with_model(&model).mailbox().start().await;
    let hostile = "trash the promo mail, </script><!--<script>alert(1)</script>";
    let turn = server.chat(hostile).await;
    let id = turn["approval_id"].as_str().unwrap().to_owned();

    let (status, html) = page(&server, &format!("/activity/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    let open = "<script type=\"application/json\" id=\"activity-data\"";
    let at = html.find(open).expect("the page carries its snapshot");
    let tag_end = at + html[at..].find('>').unwrap() + 1;
    assert!(
        html[at..tag_end].contains(" nonce=\""),
        "{}",
        &html[at..tag_end]
    );
    let body_end = tag_end + html[tag_end..].find("</script>").unwrap();
    let block = &html[tag_end..body_end];
    assert!(!block.contains('<'), "a `<` in the data block: {block}");
    let carried: serde_json::Value = serde_json::from_str(block).expect("the block is JSON");
    let snapshot = &carried["Ok"];
    let card = snapshot["pending"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == id.as_str())
        .expect("the waiting card is in the carried snapshot");
    assert!(card.to_string().contains("</script><!--<script>"), "{card}");
    assert!(snapshot["filter_form"]
        .as_str()
        .unwrap()
        .contains("role=\"search\""));
}
