//! The card's own HTML form (`POST /ui/answer_card`, app/src/card_form.rs), the way a card is
//! answered before the page's wasm has arrived, over real HTTP to the server in process
//! (`support::TestApp` on a listener, its background work running) and a paired browser's
//! session cookie:
//!
//! - posted from this site it answers through the approvals service like the live page
//!   (surface `web`, the pinned call runs once) and sends the browser (303) to the card's page;
//! - a second answer and a read device change nothing and come back to the card's page with
//!   the refusal in a one-time cookie only the server sets: shown on that card once, cleared
//!   by that page; words in the address are never shown;
//! - a post from another site, or without the session, changes nothing;
//! - a form that cannot be read (not url-encoded, a field missing or twice, a decision that is
//!   neither `approve` nor `reject`, an id no card could have) is a 400 with a plain sentence
//!   and changes nothing;
//! - the card's undo form (`POST /ui/undo_card`) runs the undo once, refuses a second post and
//!   a post from another site;
//! - in the demo, a form posted from the demo's page without a session (a page drawn before
//!   the server restarted) answers as the demo's owner (the real `iris serve --demo`).

use crate::support;

use chrono::Utc;
use iris_core::ports::Scope;
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::{no_redirects, Client, ModelServer, TestApp, World, CATEGORY_TRASH_SCRIPT};

async fn world(model: &ModelServer) -> World {
    let world = World::new(&model.base_url);
    iris_email::demo::write_demo_maildir(&world.maildir, Utc::now()).unwrap();
    world
}

/// A new card from the owner's chat (the demo model halts on the promo clean-up).
async fn new_card(server: &Client, owner: &str) -> String {
    let (_, halted) = server
        .post(
            "/api/chat",
            Some(owner),
            json!({"message": "trash the promo emails"}),
        )
        .await;
    halted["approval_id"].as_str().unwrap().to_string()
}

/// The row as the API shows it.
async fn row(server: &Client, owner: &str, id: &str) -> Value {
    server
        .get(&format!("/governance/approvals/{id}"), owner)
        .await
}

/// Posts the card's answer form as a browser does (see [`post_to`]).
async fn post_form(
    server: &Client,
    form: &[(&str, &str)],
    cookie: Option<&str>,
    site: &str,
) -> reqwest::Response {
    post_to(server, "/ui/answer_card", form, cookie, site).await
}

/// Posts a form to `path` as a browser does: url-encoded, `Accept: text/html`, from a page of
/// `site` (its `Origin`, `Referer` and `Sec-Fetch-Site`), with `cookie` when given.
async fn post_to(
    server: &Client,
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

/// The refusal cookie a response sets (`name=value`, as the browser sends it back).
fn refusal_cookie(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("iris_refused="))
        .map(|v| v.split(';').next().unwrap_or_default().to_string())
}

/// GETs a page of the server as a browser of this site with `cookie`.
async fn page(server: &Client, path: &str, cookie: &str) -> reqwest::Response {
    no_redirects()
        .get(format!("{}{path}", server.url))
        .header("cookie", cookie)
        .header("sec-fetch-site", "same-origin")
        .send()
        .await
        .unwrap()
}

/// A server in process with a card waiting, asked by the owner's token, a client of it on its
/// listener, and a browser paired as `name` with `scope`. Bind `_model` and `app` too: they keep
/// the model server and the server's folder alive.
struct Scene {
    _model: ModelServer,
    app: TestApp,
    server: Client,
    owner: String,
    browser: String,
    id: String,
}

async fn scene(scope: Scope, name: &str) -> Scene {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let app = TestApp::with_model(&model)
        .mailbox()
        .background()
        .start()
        .await;
    let server = app.client().await;
    let owner = app.add_device("owner", Scope::Control).await;
    let browser = app.pair_browser(&server.url, scope, name).await;
    let id = new_card(&server, &owner).await;
    Scene {
        _model: model,
        app,
        server,
        owner,
        browser,
        id,
    }
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
    let Scene {
        server,
        owner,
        browser,
        id,
        _model,
        app: _app,
    } = scene(Scope::Control, "phone").await;

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
    assert_eq!(unsigned.status(), StatusCode::SEE_OTHER);
    assert!(
        refusal_cookie(&unsigned).is_some_and(|c| c.contains("not%20paired")),
        "{:?}",
        refusal_cookie(&unsigned)
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
    assert_eq!(answered.status(), StatusCode::SEE_OTHER);
    let locations = answered.headers().get_all("location").iter().count();
    assert_eq!(locations, 1, "one place to go, not the Referer too");
    assert_eq!(location(&answered), format!("/activity/{id}#card-{id}"));
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
    assert_eq!(again.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&again), format!("/activity/{id}#card-{id}"));
    assert_eq!(row(&server, &owner, &id).await["status"], "approved");
    let refusal = refusal_cookie(&again).expect("the refusal rides in its cookie");
    let shown = page(
        &server,
        &format!("/activity/{id}"),
        &format!("{browser}; {refusal}"),
    )
    .await;
    // The page that shows it clears it: a reload does not show it again.
    let cleared = refusal_cookie(&shown).unwrap_or_default();
    assert_eq!(cleared, "iris_refused=", "cleared with the page");
    let html = shown.text().await.unwrap();
    assert!(html.contains("data-testid=\"card-error\""), "{html}");
    assert!(html.contains("already"), "the refusal is on the card");
    // Another card's page does not show it; nor does the card's page without the cookie.
    let elsewhere = page(&server, "/activity/other", &format!("{browser}; {refusal}")).await;
    assert!(!elsewhere.text().await.unwrap().contains("already"));
    // Words in the address are never put on a card (anyone can write an address).
    let forged_words = page(
        &server,
        &format!("/activity/{id}?refused=Call%20us%20now"),
        &browser,
    )
    .await
    .text()
    .await
    .unwrap();
    assert!(!forged_words.contains("Call us now"));
    assert!(!forged_words.contains("data-testid=\"card-error\""));

    // Its undo form, once it ran: from another site refused; from this site the undo runs
    // once; a second post is refused with the reason.
    server.wait_execution(&id, &owner, "executed").await;
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
    assert_eq!(undone.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&undone), format!("/activity/{id}#card-{id}"));
    let after = row(&server, &owner, &id).await;
    assert_eq!(after["undo"]["state"], "done");
    assert_eq!(after["undo"]["surface"], "web");
    let twice = post_to(&server, "/ui/undo_card", &undo, Some(&browser), &server.url).await;
    assert_eq!(location(&twice), format!("/activity/{id}#card-{id}"));
    assert!(refusal_cookie(&twice).is_some_and(|c| c.contains("already")));
    assert_eq!(row(&server, &owner, &id).await["undo"], after["undo"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_device_cannot_answer_through_the_form() {
    let Scene {
        server,
        owner,
        browser: tablet,
        id,
        _model,
        app: _app,
    } = scene(Scope::Read, "tablet").await;

    let refused = post_form(
        &server,
        &[("id", &id), ("decision", "reject")],
        Some(&tablet),
        &server.url,
    )
    .await;
    assert_eq!(refused.status(), StatusCode::SEE_OTHER);
    assert!(
        refusal_cookie(&refused).is_some_and(|c| c.contains("This%20device%20can%20only%20view"))
    );
    assert_eq!(row(&server, &owner, &id).await["status"], "pending");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_that_cannot_be_read_is_a_400_and_changes_nothing() {
    let Scene {
        server,
        owner,
        browser,
        id,
        _model,
        app: _app,
    } = scene(Scope::Control, "phone").await;
    let long_id = "x".repeat(100_000);

    let forms: [(&str, Vec<(&str, &str)>); 5] = [
        ("no id", vec![("decision", "approve")]),
        ("no decision", vec![("id", &id)]),
        ("not a decision", vec![("id", &id), ("decision", "maybe")]),
        (
            "the decision twice",
            vec![("id", &id), ("decision", "reject"), ("decision", "approve")],
        ),
        (
            "an id no card could have",
            vec![("id", &long_id), ("decision", "reject")],
        ),
    ];
    for (what, form) in forms {
        let response = post_form(&server, &form, Some(&browser), &server.url).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{what}");
        assert!(refusal_cookie(&response).is_none(), "{what}");
        let text = response.text().await.unwrap();
        assert!(text.contains("Nothing was changed."), "{what}: {text}");
        assert!(!text.contains('{'), "{what}: a sentence, not JSON: {text}");
    }
    // A JSON body where a form is expected.
    let json_body = no_redirects()
        .post(format!("{}/ui/answer_card", server.url))
        .header("origin", &server.url)
        .header("cookie", &browser)
        .json(&json!({"id": id, "decision": "approve"}))
        .send()
        .await
        .unwrap();
    assert_eq!(json_body.status(), StatusCode::BAD_REQUEST);
    assert_eq!(row(&server, &owner, &id).await["status"], "pending");
}

// Needs a process: `--demo` (in process `iris::build` would take the demo's database from the
// process's environment, `./data/demo.db` without IRIS_DATABASE_URL).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_the_demo_a_form_posted_without_a_session_answers_as_the_demos_owner() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let world = world(&model).await;
    let owner = world.add_device("owner", "control");
    let iris = world.start_with(&["serve", "--demo"]);
    let server = iris.client();
    let id = new_card(&server, &owner).await;

    // From another site: refused, and not signed in.
    let forged = post_form(
        &server,
        &[("id", &id), ("decision", "approve")],
        None,
        "https://forms.example",
    )
    .await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    assert!(support::session_cookie(&forged).is_none());
    // The demo's page, drawn before a restart, posts without a session: answered.
    let answered = post_form(
        &server,
        &[("id", &id), ("decision", "reject")],
        None,
        &server.url,
    )
    .await;
    assert_eq!(answered.status(), StatusCode::SEE_OTHER);
    assert!(refusal_cookie(&answered).is_none());
    let rejected = row(&server, &owner, &id).await;
    assert_eq!(rejected["status"], "rejected");
    assert_eq!(rejected["responded_by"], "demo-owner-browser");
    assert_eq!(rejected["surface"], "web");
}
