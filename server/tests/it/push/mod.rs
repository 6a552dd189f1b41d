//! Web Push (DESIGN §9 "the owner's phone") with the server in process (`support::TestApp` on a
//! listener, its background work running; the real `iris serve` where a test needs processes)
//! and a push service on loopback that checks the VAPID token and decrypts every push
//! (`support::push`):
//!
//! - a card that waits pushes its title and link (never its lines) to every subscribed device,
//!   read ones included, with `TTL` until its expiry, `Urgency: high` and `Topic` = the id's
//!   hex; its answer pushes `approval.closed` with the outcome, once per subscription however
//!   many events follow;
//! - 410 from the push service removes the subscription; 500 is retried until it is taken;
//! - two servers on one PostgreSQL database send each push once;
//! - the routes: a device sees and removes only its own subscriptions; bad input is a 400 that
//!   stores nothing; without `IRIS_VAPID_SUBJECT` the routes say how to turn push on; revoking
//!   a device removes its subscriptions.

mod other_plugins;

use crate::support;

use iris_core::ports::{DeviceStore, PushStore, Scope};
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::push::PushService;
use support::{
    eventually, wait_for_line, Client, ModelServer, TestApp, World, CATEGORY_TRASH_SCRIPT,
};

const REQUEST: &str = "trash the promo emails from this week";
const SUBJECT: &str = "mailto:owner@example.org";

/// A world with the demo mailbox, push on, and devices `phone` (control) and `tablet` (read).
async fn world(database_url: Option<&str>) -> (World, String, String) {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let mut world = World::new(&model.base_url);
    drop(model);
    iris_email::demo::write_demo_maildir(&world.maildir, chrono::Utc::now()).unwrap();
    if let Some(url) = database_url {
        world.database_url = url.to_owned();
    }
    world
        .env
        .push(("IRIS_VAPID_SUBJECT".into(), SUBJECT.into()));
    let phone = world.add_device("phone", "control");
    let tablet = world.add_device("tablet", "read");
    (world, phone, tablet)
}

/// A server in process with the demo mailbox, its background work running, push on when `push`,
/// devices `phone` (control) and `tablet` (read), and a client of it on its listener.
struct Rig {
    app: TestApp,
    client: Client,
    phone: String,
    tablet: String,
    _model: ModelServer,
}

async fn rig(push: bool) -> Rig {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let build = TestApp::with_model(&model).mailbox().background();
    let app = if push {
        build.vapid_subject(SUBJECT)
    } else {
        build
    }
    .start()
    .await;
    let phone = app.add_device("phone", Scope::Control).await;
    let tablet = app.add_device("tablet", Scope::Read).await;
    let client = app.client().await;
    Rig {
        app,
        client,
        phone,
        tablet,
        _model: model,
    }
}

/// Subscribes `browser` as the device of `token`: the subscription's id.
async fn subscribe(client: &Client, token: &str, subscription: Value) -> String {
    let (status, body) = client
        .post("/api/push/subscriptions", Some(token), subscription)
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["id"].as_str().unwrap().to_owned()
}

/// Asks for the promo clean-up: the new card's id.
async fn halt(client: &Client, token: &str) -> String {
    client.halt(token, REQUEST).await["approval_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn respond(client: &Client, token: &str, id: &str, decision: &str) {
    let (status, body) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(token),
            json!({"decision": decision}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// Tells the push service the key `server` publishes.
async fn learn_key(push: &PushService, client: &Client, token: &str) {
    let key = client.get("/api/push/key", token).await;
    let key = key["public_key"].as_str().unwrap();
    assert_eq!(key.len(), 87, "65 bytes of unpadded base64url: {key}");
    push.expect_key(key);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_card_and_its_answer_reach_every_subscribed_device_once() {
    let push = PushService::start().await;
    let r = rig(true).await;
    let (client, phone, tablet) = (&r.client, r.phone.clone(), r.tablet.clone());
    learn_key(&push, client, &phone).await;
    let phone_browser = push.browser("phone");
    let tablet_browser = push.browser("tablet");
    subscribe(client, &phone, phone_browser.subscription()).await;
    // A read device may subscribe itself: the one change its scope allows.
    subscribe(client, &tablet, tablet_browser.subscription()).await;

    let id = halt(client, &phone).await;
    // A second card while the first waits: its closing comes after everything the first one's
    // answer and execution wrote.
    let second = halt(client, &phone).await;
    let row = client
        .get(&format!("/governance/approvals/{id}"), &phone)
        .await;
    for name in ["phone", "tablet"] {
        let requested = eventually("the waiting card's push", || async {
            let got = push.delivered(name, &id);
            (!got.is_empty()).then_some(got)
        })
        .await;
        assert_eq!(
            requested[0],
            json!({
                "type": "approval.requested",
                "approval_id": id,
                "title": row["card"]["title"],
                "url": format!("/activity/{id}"),
            })
        );
        // Never the card's lines (subjects, senders).
        for line in row["card"]["lines"].as_array().unwrap() {
            let line = line.as_str().unwrap();
            assert!(!requested[0].to_string().contains(line), "{line}");
        }
    }
    let first = push
        .received()
        .into_iter()
        .find(|r| {
            r.payload
                .as_ref()
                .is_ok_and(|p| p["type"] == "approval.requested")
        })
        .unwrap();
    assert_eq!(first.urgency, "high");
    assert_eq!(first.topic, id.replace('-', ""));
    assert_eq!(first.topic.len(), 32);
    assert!(
        (3000..=3600).contains(&first.ttl),
        "TTL runs until the card's expiry (an hour): {}",
        first.ttl
    );

    respond(client, &phone, &id, "approve").await;
    client.wait_execution(&id, &phone, "executed").await;
    for name in ["phone", "tablet"] {
        let closed = eventually("the closing push", || async {
            let got: Vec<Value> = push
                .delivered(name, &id)
                .into_iter()
                .filter(|p| p["type"] == "approval.closed")
                .collect();
            (!got.is_empty()).then_some(got)
        })
        .await;
        assert_eq!(closed[0]["outcome"], "approved");
        assert_eq!(closed[0]["title"], row["card"]["title"]);
    }

    // The second card's closing goes out after everything the first one's events asked for
    // (the outbox is sent oldest first): by then the first card has exactly one push of each
    // kind per device, although its execution sent more `approval.responded` events.
    respond(client, &phone, &second, "reject").await;
    for name in ["phone", "tablet"] {
        eventually("the second card's closing", || async {
            push.delivered(name, &second)
                .iter()
                .any(|p| p["type"] == "approval.closed" && p["outcome"] == "rejected")
                .then_some(())
        })
        .await;
        let kinds: Vec<Value> = push
            .delivered(name, &id)
            .into_iter()
            .map(|p| p["type"].clone())
            .collect();
        assert_eq!(
            kinds,
            vec![json!("approval.requested"), json!("approval.closed")],
            "{name}"
        );
    }
    let closing = push
        .received()
        .into_iter()
        .find(|r| {
            r.payload
                .as_ref()
                .is_ok_and(|p| p["type"] == "approval.closed")
        })
        .unwrap();
    assert_eq!(closing.urgency, "normal");
    assert_eq!(closing.topic, id.replace('-', ""));
    assert!(
        push.received().iter().all(|r| r.payload.is_ok()),
        "{:?}",
        push.received()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gone_subscription_is_removed_and_a_failing_push_is_retried() {
    let push = PushService::start().await;
    let r = rig(true).await;
    let (client, phone, tablet) = (&r.client, r.phone.clone(), r.tablet.clone());
    learn_key(&push, client, &phone).await;
    let gone = push.browser("gone");
    let flaky = push.browser("flaky");
    subscribe(client, &phone, gone.subscription()).await;
    subscribe(client, &tablet, flaky.subscription()).await;
    push.gone("gone");
    push.fail_next("flaky", 1);

    let id = halt(client, &phone).await;
    eventually("the gone subscription to be removed", || async {
        let list = client.get("/api/push/subscriptions", &phone).await;
        list["subscriptions"]
            .as_array()
            .unwrap()
            .is_empty()
            .then_some(())
    })
    .await;
    let delivered = eventually("the flaky push to be taken after a 500", || async {
        let got = push.delivered("flaky", &id);
        (!got.is_empty()).then_some(got)
    })
    .await;
    assert_eq!(delivered.len(), 1);
    let attempts: Vec<u16> = push
        .received()
        .into_iter()
        .filter(|r| r.name == "flaky")
        .map(|r| r.answered)
        .collect();
    assert_eq!(attempts, vec![500, 201]);
    // The gone endpoint was tried once, and never again.
    let gone_tries = push.received().iter().filter(|r| r.name == "gone").count();
    assert_eq!(gone_tries, 1);
}

// Needs a process: several servers on one database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_database_send_each_push_once() {
    let (url, _database) = iris_store::testing::fresh_postgres_database().await;
    let push = PushService::start().await;
    let (world, phone, _tablet) = world(Some(&url)).await;
    let a = world.start();
    let b = world.start();
    let (ca, cb) = (a.client(), b.client());
    learn_key(&push, &ca, &phone).await;
    // One key for the database, whichever server answers.
    assert_eq!(
        ca.get("/api/push/key", &phone).await,
        cb.get("/api/push/key", &phone).await
    );
    subscribe(&ca, &phone, push.browser("phone").subscription()).await;

    // Five cards asked through either server, four rejected through the other; both servers'
    // senders wake on every event and race for the outbox.
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(halt(if i % 2 == 0 { &ca } else { &cb }, &phone).await);
    }
    // Each waiting push out before its card closes (a card closed first is never pushed).
    for id in &ids {
        eventually("every waiting push", || async {
            (!push.delivered("phone", id).is_empty()).then_some(())
        })
        .await;
    }
    for (i, id) in ids.iter().take(4).enumerate() {
        respond(if i % 2 == 0 { &cb } else { &ca }, &phone, id, "reject").await;
    }
    for id in ids.iter().take(4) {
        eventually("both pushes of every card", || async {
            (push.delivered("phone", id).len() >= 2).then_some(())
        })
        .await;
    }
    // The last card's answer goes out after everything before it: a push sent twice would be
    // in by then.
    let last = ids.pop().unwrap();
    respond(&cb, &phone, &last, "approve").await;
    eventually("the last card's closing", || async {
        (push.delivered("phone", &last).len() >= 2).then_some(())
    })
    .await;
    for (i, id) in ids.iter().enumerate() {
        let got = push.delivered("phone", id);
        assert_eq!(got.len(), 2, "card {i}: {got:?}");
        assert_eq!(got[0]["type"], "approval.requested");
        assert_eq!(got[1]["type"], "approval.closed");
        assert_eq!(got[1]["outcome"], "rejected");
    }
    assert_eq!(push.delivered("phone", &last)[1]["outcome"], "approved");
    assert_eq!(
        push.received().len(),
        push.received().iter().filter(|r| r.answered == 201).count(),
        "nothing was refused or sent twice: {:?}",
        push.received()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_closed_before_its_push_went_out_is_not_pushed_and_late_devices_miss_its_closing() {
    let push = PushService::start().await;
    let r = rig(true).await;
    let (client, phone, tablet) = (&r.client, r.phone.clone(), r.tablet.clone());
    learn_key(&push, client, &phone).await;
    subscribe(client, &phone, push.browser("phone").subscription()).await;
    // The phone's push service fails for now: the waiting push is retried in 5 s.
    push.fail_next("phone", 1000);
    let unseen = halt(client, &phone).await;
    eventually("a first failed attempt", || async {
        push.received()
            .iter()
            .any(|r| r.name == "phone" && r.answered == 500)
            .then_some(())
    })
    .await;
    respond(client, &phone, &unseen, "reject").await;
    push.fail_next("phone", 0);

    // A card the tablet subscribes to only after it was asked for.
    let seen = halt(client, &phone).await;
    eventually("the second card's waiting push", || async {
        (!push.delivered("phone", &seen).is_empty()).then_some(())
    })
    .await;
    subscribe(client, &tablet, push.browser("tablet").subscription()).await;
    respond(client, &phone, &seen, "reject").await;
    // A third card is the barrier: its waiting push goes out after everything before it.
    let barrier = halt(client, &phone).await;
    for name in ["phone", "tablet"] {
        eventually("the barrier's waiting push", || async {
            (!push.delivered(name, &barrier).is_empty()).then_some(())
        })
        .await;
    }
    assert!(
        push.delivered("phone", &unseen).is_empty(),
        "a card closed before its push went out is never pushed: {:?}",
        push.delivered("phone", &unseen)
    );
    let seen_on_phone: Vec<Value> = push
        .delivered("phone", &seen)
        .into_iter()
        .map(|p| p["type"].clone())
        .collect();
    assert_eq!(
        seen_on_phone,
        vec![json!("approval.requested"), json!("approval.closed")]
    );
    assert!(
        push.delivered("tablet", &seen).is_empty(),
        "the tablet never saw that card, so it gets no closing of it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_push_that_fails_after_its_card_closed_takes_the_closing_with_it() {
    let push = PushService::start().await;
    let r = rig(true).await;
    let (client, phone) = (&r.client, r.phone.clone());
    learn_key(&push, client, &phone).await;
    subscribe(client, &phone, push.browser("phone").subscription()).await;
    // The waiting push is on its way (the push service holds it) when the card is answered;
    // then the push service fails it.
    push.hold("phone");
    push.fail_next("phone", 1);
    let id = halt(client, &phone).await;
    eventually("the waiting push to be in flight", || async {
        (push.arrived("phone") == 1).then_some(())
    })
    .await;
    respond(client, &phone, &id, "reject").await;
    push.release("phone");
    // The barrier: a second card's waiting push goes out after anything left of the first.
    let barrier = halt(client, &phone).await;
    eventually("the barrier's waiting push", || async {
        (!push.delivered("phone", &barrier).is_empty()).then_some(())
    })
    .await;
    assert!(
        push.delivered("phone", &id).is_empty(),
        "neither the late waiting push nor the closing of a card the phone never showed: {:?}",
        push.received()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_device_manages_only_its_own_subscriptions() {
    let push = PushService::start().await;
    let r = rig(true).await;
    let (client, phone, tablet) = (&r.client, r.phone.clone(), r.tablet.clone());
    let http = reqwest::Client::new();
    let mine = subscribe(client, &phone, push.browser("phone").subscription()).await;
    let theirs = subscribe(client, &tablet, push.browser("tablet").subscription()).await;

    let list = client.get("/api/push/subscriptions", &phone).await;
    let listed: Vec<&str> = list["subscriptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, vec![mine.as_str()]);
    assert!(list["subscriptions"][0].get("keys").is_none());

    // Another device's subscription is absent to this one.
    let response = http
        .delete(format!("{}/api/push/subscriptions/{theirs}", client.url))
        .bearer_auth(&phone)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let list = client.get("/api/push/subscriptions", &tablet).await;
    assert_eq!(list["subscriptions"].as_array().unwrap().len(), 1);

    // Subscribing again with the same endpoint keeps one row, however it is spelled.
    let mut respelled = push.browser("phone").subscription();
    respelled["endpoint"] = json!(
        respelled["endpoint"]
            .as_str()
            .unwrap()
            .replace("http://", "HTTP://")
            + "#again"
    );
    let again = subscribe(client, &phone, respelled).await;
    assert_eq!(again, mine);
    // Another device cannot take it over: 409, and it stays the phone's.
    let (status, body) = client
        .post(
            "/api/push/subscriptions",
            Some(&tablet),
            push.browser("phone").subscription(),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("another device"),
        "{body}"
    );
    let list = client.get("/api/push/subscriptions", &phone).await;
    assert_eq!(list["subscriptions"][0]["id"], json!(mine));

    let response = http
        .delete(format!("{}/api/push/subscriptions/{mine}", client.url))
        .bearer_auth(&phone)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let list = client.get("/api/push/subscriptions", &phone).await;
    assert!(list["subscriptions"].as_array().unwrap().is_empty());

    // Without credentials: 401; bad input: 400, nothing stored.
    let (status, _) = client
        .post(
            "/api/push/subscriptions",
            None,
            push.browser("x").subscription(),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let good = push.browser("y").subscription();
    let mut plain_http = good.clone();
    plain_http["endpoint"] = json!("http://push.example.net/x");
    let mut short_key = good.clone();
    short_key["keys"]["p256dh"] = json!("AAAA");
    let mut short_auth = good.clone();
    short_auth["keys"]["auth"] = json!("AAAA");
    let mut off_curve = good.clone();
    off_curve["keys"]["p256dh"] = json!(format!("BA{}", "A".repeat(85)));
    let mut metadata = good.clone();
    metadata["endpoint"] = json!("https://169.254.169.254/latest/meta-data");
    let mut expired = good.clone();
    expired["expirationTime"] = json!(1000);
    for (body, needle) in [
        (plain_http, "https"),
        (short_key, "p256dh"),
        (short_auth, "auth"),
        (off_curve, "not a point on P-256"),
        (metadata, "link-local"),
        (expired, "already passed"),
        (json!({"endpoint": "https://p.example/x"}), "shape"),
        (json!([1]), "subscription"),
    ] {
        let (status, answer) = client
            .post("/api/push/subscriptions", Some(&phone), body)
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
        let error = answer["error"].as_str().unwrap();
        assert!(error.contains(needle), "{error}");
        assert!(error.contains("nothing was stored"), "{error}");
    }
    let list = client.get("/api/push/subscriptions", &phone).await;
    assert!(list["subscriptions"].as_array().unwrap().is_empty());

    // Revoking a device removes its subscriptions (the store's revoke, which `iris devices
    // revoke` runs).
    let store = &r.app.state.store;
    assert!(store.revoke("tablet").await.unwrap(), "tablet was revoked");
    assert!(store.subscriptions("tablet").await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_vapid_subject_push_is_off_and_says_how_to_turn_it_on() {
    let push = PushService::start().await;
    let r = rig(false).await;
    let (client, phone) = (&r.client, r.phone.clone());
    let response = client
        .http
        .get(format!("{}/api/push/key", client.url))
        .bearer_auth(&phone)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("IRIS_VAPID_SUBJECT"),
        "{body}"
    );
    let (status, body) = client
        .post(
            "/api/push/subscriptions",
            Some(&phone),
            push.browser("phone").subscription(),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
}

/// A subject that is neither mailto: nor https: stops the server at start, naming it.
// Needs a process: `iris serve`'s exit at start-up.
#[test]
fn a_vapid_subject_neither_mailto_nor_https_stops_the_server_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(support::iris_bin())
        .arg("serve")
        .current_dir(dir.path())
        .env(
            "IRIS_DATABASE_URL",
            format!("sqlite://{}", dir.path().join("other.db").display()),
        )
        .env("IRIS_CONFIG", dir.path().join("iris.toml"))
        .env("IRIS_BIND", "127.0.0.1:0")
        .env("IRIS_VAPID_SUBJECT", "owner@example.org")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("IRIS_VAPID_SUBJECT"), "{stderr}");
}

/// A push service named by a host name that resolves inside the network is never posted to:
/// the push client's resolver judges what the name resolves to at each connection
/// (`iris_core::push::admit_resolved`). The name here is this machine's own host name, which
/// resolves to an internal address (loopback or the machine's private one) but is not
/// `localhost`, so the subscription passes the static checks and the refusal can only come
/// from the resolver: the server says so, and nothing reaches the push service. (Without the
/// resolver wired into the client, the push is attempted and fails at TLS instead.)
// Needs a process: the refusal is seen only in the server's log, read from its stderr (the
// outbox keeps no error to read back, and an in-process server's log is the whole test
// binary's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_service_whose_name_resolves_inside_the_network_is_not_posted_to() {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_owned();
    assert!(!iris_core::push::is_loopback(&host), "{host}");
    let resolved: Vec<std::net::SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
        .await
        .unwrap()
        .collect();
    assert!(
        resolved
            .iter()
            .any(|a| iris_core::push::is_internal_ip(a.ip())),
        "this test needs the machine's name to resolve inside the network: {host} → {resolved:?}"
    );
    let push = PushService::start().await;
    let (world, phone, _tablet) = world(None).await;
    let (server, rx) = world.start_watched(&[]);
    let client = server.client();
    learn_key(&push, &client, &phone).await;
    let mut subscription = push.browser("inside").subscription();
    let endpoint = subscription["endpoint"].as_str().unwrap().to_owned();
    let port = endpoint
        .trim_start_matches("http://127.0.0.1:")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    subscription["endpoint"] = json!(format!("https://{host}:{port}/push/inside"));
    subscribe(&client, &phone, subscription).await;

    halt(&client, &phone).await;
    let _rx = wait_for_line(rx, format!("the push service `{host}` resolves to")).await;
    assert!(push.received().is_empty(), "{:?}", push.received());
}
