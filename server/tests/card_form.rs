//! The card's own HTML form (`POST /ui/answer_card`, app/src/card_form.rs), the way a card is
//! answered before the page's wasm has arrived, through the real `iris` binary and a paired
//! browser's session cookie:
//!
//! - posted from this site it answers through the approvals service like the live page
//!   (surface `web`, the pinned call runs once) and sends the browser to the card's page;
//! - a second answer and a read device change nothing and come back to the card's page with
//!   the refusal in `refused=`, shown on the card;
//! - a post from another site, or without the session, changes nothing;
//! - a decision that is neither `approve` nor `reject` is a 400 and changes nothing;
//! - the card's undo form (`POST /ui/undo_card`) runs the undo once, refuses a second post and
//!   a post from another site.

mod support;

use chrono::Utc;
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::{no_redirects, Iris, ModelServer, World, CATEGORY_TRASH_SCRIPT};

async fn world(model: &ModelServer) -> World {
    let world = World::new(&model.base_url);
    iris_email::demo::write_demo_maildir(&world.maildir, Utc::now()).unwrap();
    world
}

/// A new card from the owner's chat (the demo model halts on the promo clean-up).
async fn new_card(server: &Iris, owner: &str) -> String {
    let (_, halted) = server
        .client()
        .post(
            "/api/chat",
            Some(owner),
            json!({"message": "trash the promo emails"}),
        )
        .await;
    halted["approval_id"].as_str().unwrap().to_string()
}

/// The row as the API shows it.
async fn row(server: &Iris, owner: &str, id: &str) -> Value {
    server
        .client()
        .get(&format!("/governance/approvals/{id}"), owner)
        .await
}

/// Posts the card's answer form as a browser does (see [`post_to`]).
async fn post_form(
    server: &Iris,
    form: &[(&str, &str)],
    cookie: Option<&str>,
    site: &str,
) -> reqwest::Response {
    post_to(server, "/ui/answer_card", form, cookie, site).await
}

/// Posts a form to `path` as a browser does: url-encoded, `Accept: text/html`, from a page of
/// `site` (its `Origin`, `Referer` and `Sec-Fetch-Site`), with `cookie` when given.
async fn post_to(
    server: &Iris,
    path: &str,
    form: &[(&str, &str)],
    cookie: Option<&str>,
    site: &str,
) -> reqwest::Response {
    let fetch_site = if site == server.url {
        "same-origin"
    } else {
        "cross-site"
    };
    let mut request = no_redirects()
        .post(format!("{}{path}", server.url))
        .header("accept", "text/html,application/xhtml+xml")
        .header("origin", site)
        .header("referer", format!("{site}/activity"))
        .header("sec-fetch-site", fetch_site)
        .form(form);
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    request.send().await.unwrap()
}

/// Where a response sends the browser.
fn location(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_answered_through_its_form_runs_once_and_shows_its_page() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let world = world(&model).await;
    let server = world.start();
    let owner = world.add_device("owner", "control");
    let browser = server.pair_browser(&world, "control", "phone").await;
    let id = new_card(&server, &owner).await;

    // From another site, or without the session: refused, nothing changes.
    let forged = post_form(
        &server,
        &[("id", &id), ("decision", "approve")],
        Some(&browser),
        "https://forms.example",
    )
    .await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    let unsigned = post_form(
        &server,
        &[("id", &id), ("decision", "approve")],
        None,
        &server.url,
    )
    .await;
    assert!(
        location(&unsigned).contains("refused="),
        "{}",
        location(&unsigned)
    );
    // Not a decision: 400, nothing changes.
    let bad = post_form(
        &server,
        &[("id", &id), ("decision", "maybe")],
        Some(&browser),
        &server.url,
    )
    .await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    assert_eq!(row(&server, &owner, &id).await["status"], "pending");

    // From this site with the session: approved as the phone, on the web surface, and the
    // browser goes to the card's page.
    let answered = post_form(
        &server,
        &[("id", &id), ("decision", "approve")],
        Some(&browser),
        &server.url,
    )
    .await;
    assert_eq!(answered.status(), StatusCode::FOUND);
    let locations = answered.headers().get_all("location").iter().count();
    assert_eq!(locations, 1, "one place to go, not the Referer too");
    assert_eq!(location(&answered), format!("/activity/{id}"));
    let approved = row(&server, &owner, &id).await;
    assert_eq!(approved["status"], "approved");
    assert_eq!(approved["responded_by"], "phone");
    assert_eq!(approved["surface"], "web");

    // The same form again (a second tap, a reload that posts again): refused with the
    // reason, on the card's page; the call ran once.
    let again = post_form(
        &server,
        &[("id", &id), ("decision", "reject")],
        Some(&browser),
        &server.url,
    )
    .await;
    assert_eq!(again.status(), StatusCode::FOUND);
    let back = location(&again);
    assert!(
        back.starts_with(&format!("/activity/{id}?refused=")),
        "{back}"
    );
    assert_eq!(row(&server, &owner, &id).await["status"], "approved");
    let page = no_redirects()
        .get(format!("{}{back}", server.url))
        .header("cookie", &browser)
        .header("sec-fetch-site", "same-origin")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("data-testid=\"card-error\""), "{page}");
    assert!(page.contains("already"), "the refusal is on the card");

    // Its undo form, once it ran: from another site refused; from this site the undo runs
    // once; a second post is refused with the reason.
    server
        .client()
        .wait_execution(&id, &owner, "executed")
        .await;
    let undo = [("id", id.as_str())];
    let forged = post_to(
        &server,
        "/ui/undo_card",
        &undo,
        Some(&browser),
        "https://forms.example",
    )
    .await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    assert!(row(&server, &owner, &id).await["undo"].is_null());
    let undone = post_to(&server, "/ui/undo_card", &undo, Some(&browser), &server.url).await;
    assert_eq!(undone.status(), StatusCode::FOUND);
    assert_eq!(location(&undone), format!("/activity/{id}"));
    let after = row(&server, &owner, &id).await;
    assert_eq!(after["undo"]["state"], "done");
    assert_eq!(after["undo"]["surface"], "web");
    let twice = post_to(&server, "/ui/undo_card", &undo, Some(&browser), &server.url).await;
    assert!(
        location(&twice).starts_with(&format!("/activity/{id}?refused=")),
        "{}",
        location(&twice)
    );
    assert_eq!(row(&server, &owner, &id).await["undo"], after["undo"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_device_cannot_answer_through_the_form() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let world = world(&model).await;
    let server = world.start();
    let owner = world.add_device("owner", "control");
    let tablet = server.pair_browser(&world, "read", "tablet").await;
    let id = new_card(&server, &owner).await;

    let refused = post_form(
        &server,
        &[("id", &id), ("decision", "reject")],
        Some(&tablet),
        &server.url,
    )
    .await;
    assert_eq!(refused.status(), StatusCode::FOUND);
    assert!(location(&refused).contains("refused=This%20device%20can%20only%20view"));
    assert_eq!(row(&server, &owner, &id).await["status"], "pending");
}
