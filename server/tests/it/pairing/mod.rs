//! Pairing a browser and its session (Devices, sessions, scopes): `iris pair --scope
//! read|control` prints a one-time link; its page (GET) pairs nothing by itself; posting its form
//! from this site pairs one browser with the link's scope and starts a session (cookie
//! `iris_session`: HttpOnly, SameSite=Strict, Secure behind TLS) whose record lives in the same
//! database; the link then refuses a second use, a lapsed link pairs nobody, a cross-site post is
//! refused, and revoking the device ends its session and its event stream. The main flow runs on
//! SQLite and PostgreSQL.
//!
//! The server runs in process (`support::TestApp` on a listener), its links made as `iris pair`
//! makes them (`iris::pairing::make_link`); the CLI itself (`iris pair`, `iris devices`) and the
//! demo (`iris serve --demo`) run the real binary.
//!
//! - [`links`]: the one-time link: it pairs one browser once, with its scope, and then refuses;
//!   a lapsed or unknown link pairs nobody; a taken name keeps the link; a device's name follows
//!   the name rules; behind TLS the link uses the public URL (which must be an origin) and the
//!   cookie is `Secure`.
//! - [`sessions`]: what a paired browser's session may do and when it ends: revoking the device
//!   ends its session and its event stream; the demo signs pages in but never the pairing page
//!   or the API; a page opened from another site is loaded again from this one; the web app's
//!   state-changing functions are control-only and same-site only.
//!
//! This module holds what they share: the demo world and the in-process server, posting the
//! pairing form, and reading the devices and sessions the database holds.

mod links;
mod sessions;

use crate::support;

use chrono::Utc;
use iris_core::ports::{DeviceStore, Scope};
use support::{no_redirects, ModelServer, TestApp, World};

/// A server in process with the demo mailbox.
async fn app(model: &ModelServer) -> TestApp {
    TestApp::with_model(model).mailbox().start().await
}

/// A one-time link for `scope` made as `iris pair` makes it, on `url` (the app's listener): its
/// path, `/pair/CODE`.
async fn pair_path(app: &TestApp, url: &str, scope: Scope) -> String {
    let offer = iris::pairing::make_link(&app.state.store, scope, "cli", url, Utc::now())
        .await
        .expect("store the pairing link");
    offer.url[url.len()..].to_string()
}

/// The live devices the app's database holds, as `iris devices list` shows them: name and
/// scope.
async fn devices(app: &TestApp) -> Vec<(String, Scope)> {
    app.state
        .store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|d| (d.name, d.scope))
        .collect()
}

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
    let out = std::process::Command::new(support::iris_bin())
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
