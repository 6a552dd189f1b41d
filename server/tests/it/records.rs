//! Truthful records (docs/liveness.md): an answer that loses to the card's expiry inside the
//! decision's own unit is refused like any late answer (410, the expiry named, nothing changed),
//! never a garbled 409 about a card "already pending"; and every page carries the headers that
//! keep it from being framed, sniffed or leaking its address; the whole audit log comes in
//! pages, newest first. A card says what it repeats, an overtaken card names the card that did
//! its work, and each card's end gets IRIS's own line in the chat, whatever the model then says.
//! A server whose clock runs ahead stamps in the database's time.
//!
//! In process (`support::TestApp` on a listener) except where the test sets a failpoint: those
//! are read from the process's environment, so they run the real `iris` binary.

use crate::support;

use iris_core::ports::Scope;
use serde_json::{json, Value};
use support::{snapshot, wait_for_line, ModelServer, TestApp, World, TRASH_SCRIPT};

// Needs a process: it pauses the server at a failpoint, which is read from the process's
// environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_loses_to_the_clock_is_a_410() {
    let model = ModelServer::start(TRASH_SCRIPT).await;
    let world = World::new(&model.base_url);
    iris_email::demo::write_demo_maildir(&world.maildir, chrono::Utc::now()).unwrap();
    let before = snapshot(&world.maildir);
    let token = world.add_device("phone", "control");
    let release = world.dir.path().join("release");
    let release_text = release.display().to_string();
    let (server, rx) = world.start_watched(&[
        ("IRIS_DESTRUCTIVE_TTL_SECS", "3"),
        ("IRIS_FAILPOINT_PAUSE", "decision_read"),
        ("IRIS_FAILPOINT_RELEASE", &release_text),
    ]);
    let client = server.client();
    let (status, halted) = client
        .post(
            "/api/chat",
            Some(&token),
            json!({"message": "trash the promo emails from this week"}),
        )
        .await;
    assert!(status.is_success(), "{status}: {halted}");
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let row = client
        .get(&format!("/governance/approvals/{id}"), &token)
        .await;
    let expires_at: chrono::DateTime<chrono::Utc> =
        row["expires_at"].as_str().unwrap().parse().unwrap();
    let answer = {
        let (client, token, id) = (server.client(), token.clone(), id.clone());
        tokio::spawn(async move {
            client
                .post(
                    &format!("/governance/approvals/{id}/respond"),
                    Some(&token),
                    json!({"decision": "approve"}),
                )
                .await
        })
    };
    // The answer has read the row while it was pending; the card's expiry passes before its
    // compare-and-set (a deadline to wait for, not a synchronisation).
    let _rx = wait_for_line(rx, "failpoint paused: decision_read".to_string()).await;
    let wait = (expires_at - chrono::Utc::now())
        .to_std()
        .unwrap_or_default();
    tokio::time::sleep(wait + std::time::Duration::from_millis(200)).await;
    std::fs::write(&release, "go").unwrap();
    let (status, body): (reqwest::StatusCode, Value) = answer.await.unwrap();
    assert_eq!(status, reqwest::StatusCode::GONE, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(error.contains("expired at"), "{body}");
    assert!(!error.contains("pending"), "{body}");
    let row = client
        .get(&format!("/governance/approvals/{id}"), &token)
        .await;
    assert_eq!(row["status"], "expired", "{row}");
    assert_eq!(row["execution"], "none", "{row}");
    assert_eq!(snapshot(&world.maildir), before, "nothing moved");
}

/// Every response says it must not be framed or sniffed and sends no `Referer`; a page's
/// policy allows only the scripts carrying its own nonce, and every inline script carries it.
#[tokio::test]
async fn every_response_carries_the_security_headers_and_pages_their_nonce() {
    let model = ModelServer::start(TRASH_SCRIPT).await;
    let server = TestApp::with_model(&model).start().await;
    let url = server.listen().await;
    let http = support::no_redirects();
    for path in [
        "/api/health",
        "/activity",
        "/pair/not-a-link",
        "/no-such-page",
    ] {
        let mut request = http.get(format!("{url}{path}"));
        // The owner's page is drawn only for a device; the others answer anyone.
        if path == "/activity" {
            request = request.bearer_auth(&server.token);
        }
        let response = request.send().await.unwrap();
        let headers = response.headers().clone();
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string()
        };
        assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
        assert_eq!(header("x-frame-options"), "DENY", "{path}");
        assert_eq!(header("referrer-policy"), "same-origin", "{path}");
        let policy = header("content-security-policy");
        assert!(
            policy.contains("frame-ancestors 'none'"),
            "{path}: {policy}"
        );
        if path == "/activity" {
            let body = response.text().await.unwrap();
            let nonce = policy
                .split("'nonce-")
                .nth(1)
                .and_then(|rest| rest.split('\'').next())
                .unwrap_or_else(|| panic!("a nonce in the page's policy: {policy}"));
            assert!(policy.contains("'wasm-unsafe-eval'"), "{policy}");
            let scripts = body.matches("<script").count();
            assert!(scripts > 0, "{body}");
            for tag in body.split("<script").skip(1) {
                let open = tag.split('>').next().unwrap_or_default();
                assert!(
                    open.contains(&format!("nonce=\"{nonce}\"")),
                    "every script carries the page's nonce: <script{open}>"
                );
            }
        }
    }
}

/// Where an answer came from is recorded from its credential: a bearer token records `cli` when
/// it says so (the CLI's header) and `api` otherwise, never the name of a surface with its own
/// credentials (`telegram`, `phone`, `web`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bearer_token_records_only_cli_or_api_as_its_surface() {
    let model = ModelServer::start(TRASH_SCRIPT).await;
    let server = TestApp::with_model(&model).mailbox().start().await;
    let token = server.add_device("phone", Scope::Control).await;
    let client = server.client().await;
    for (claimed, recorded) in [
        ("telegram", "api"),
        ("phone", "api"),
        ("web", "api"),
        ("cli", "cli"),
    ] {
        let (status, halted) = client
            .post(
                "/api/chat",
                Some(&token),
                json!({"message": "trash the promo emails from this week"}),
            )
            .await;
        assert!(status.is_success(), "{status}: {halted}");
        let id = halted["approval_id"].as_str().unwrap();
        let answered: Value = client
            .http
            .post(format!("{}/governance/approvals/{id}/respond", client.url))
            .bearer_auth(&token)
            .header("x-iris-surface", claimed)
            .json(&json!({"decision": "reject"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            answered["approval"]["surface"], recorded,
            "claimed {claimed}: {answered}"
        );
    }
}

/// `GET /api/audit` without `approval_id` comes in pages, newest first, like the approvals list:
/// walking `next` gives every entry exactly once, with entries appended during the walk never
/// repeated; bad paging input is a 400 that names it (before, the whole log came in one answer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_audit_log_comes_in_pages_newest_first() {
    let model = ModelServer::start(TRASH_SCRIPT).await;
    let server = TestApp::with_model(&model).mailbox().start().await;
    let token = server.add_device("phone", Scope::Control).await;
    let client = server.client().await;
    let reject_a_card = || async {
        let (_, halted) = client
            .post(
                "/api/chat",
                Some(&token),
                json!({"message": "trash the promo emails from this week"}),
            )
            .await;
        let id = halted["approval_id"].as_str().unwrap().to_string();
        let (status, body) = client
            .post(
                &format!("/governance/approvals/{id}/respond"),
                Some(&token),
                json!({"decision": "reject"}),
            )
            .await;
        assert!(status.is_success(), "{status}: {body}");
        id
    };
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(reject_a_card().await);
    }
    // Every entry, read approval by approval.
    let mut expected: Vec<i64> = Vec::new();
    for id in &ids {
        let one = client
            .get(&format!("/api/audit?approval_id={id}"), &token)
            .await;
        assert!(one["next"].is_null(), "{one}");
        expected.extend(
            one["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["id"].as_i64().unwrap()),
        );
    }
    expected.sort_unstable_by(|a, b| b.cmp(a));
    assert!(expected.len() >= 5, "{expected:?}");

    // Walk two at a time; a card decided in the middle of the walk is not repeated.
    let mut seen: Vec<i64> = Vec::new();
    let mut before: Option<String> = None;
    let mut pages = 0;
    loop {
        let path = match &before {
            Some(b) => format!("/api/audit?limit=2&before={b}"),
            None => "/api/audit?limit=2".to_string(),
        };
        let page = client.get(&path, &token).await;
        let entries = page["entries"].as_array().unwrap();
        assert!(entries.len() <= 2, "{page}");
        seen.extend(entries.iter().map(|e| e["id"].as_i64().unwrap()));
        pages += 1;
        if pages == 1 {
            reject_a_card().await;
        }
        match page["next"].as_str() {
            Some(next) => before = Some(next.to_string()),
            None => break,
        }
    }
    assert_eq!(seen, expected, "every entry once, newest first");
    // A fresh walk starts with what was appended during the last one.
    let first = client.get("/api/audit", &token).await;
    assert!(
        first["entries"][0]["id"].as_i64().unwrap() > expected[0],
        "{first}"
    );

    for bad in [
        "/api/audit?limit=0",
        "/api/audit?limit=201",
        "/api/audit?before=not-a-cursor",
        &format!("/api/audit?approval_id={}&limit=2", ids[0]),
    ] {
        let resp = client
            .http
            .get(format!("{}{bad}", client.url))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), reqwest::StatusCode::BAD_REQUEST, "{bad}");
    }
}

/// Two cards waiting in one new conversation, asked for by the demo model's two trash
/// requests: the conversation and the two approval ids, oldest first.
async fn two_waiting_cards(client: &support::Client, token: &str) -> (String, Vec<String>) {
    let mut conversation: Option<String> = None;
    let mut ids = Vec::new();
    for message in [
        "trash the promo emails from this week",
        "please trash the promos",
    ] {
        let (status, halted) = client
            .post(
                "/api/chat",
                Some(token),
                json!({"message": message, "conversation_id": conversation}),
            )
            .await;
        assert!(status.is_success(), "{status}: {halted}");
        assert_eq!(halted["status"], "awaiting_approval", "{halted}");
        conversation = Some(halted["conversation_id"].as_str().unwrap().to_string());
        ids.push(halted["approval_id"].as_str().unwrap().to_string());
    }
    (conversation.unwrap(), ids)
}

/// The texts of a conversation's lines once `done` holds for them (see [`support::eventually`]).
async fn lines_once(
    client: &support::Client,
    token: &str,
    conversation: &str,
    what: &str,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    support::eventually(what, || async {
        let c = client
            .get(&format!("/api/conversations/{conversation}"), token)
            .await;
        let texts: Vec<String> = c["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["text"].as_str().unwrap().to_string())
            .collect();
        done(&texts).then_some(texts)
    })
    .await
}

/// The model playing `script`, a world with the demo mailbox, on SQLite or on a fresh
/// PostgreSQL database (kept while the guard lives).
async fn demo_world(
    script: &str,
    postgres: bool,
) -> (
    ModelServer,
    World,
    Option<iris_store::testing::DropDatabase>,
) {
    let model = ModelServer::start(script).await;
    let mut world = World::new(&model.base_url);
    let guard = if postgres {
        let (url, guard) = iris_store::testing::fresh_postgres_database().await;
        world.database_url = url;
        Some(guard)
    } else {
        None
    };
    iris_email::demo::write_demo_maildir(&world.maildir, chrono::Utc::now()).unwrap();
    (model, world, guard)
}

/// The model playing `script` and a server in process with the demo mailbox and its background
/// work, on SQLite or on a fresh PostgreSQL database (kept while the guard lives).
async fn demo_app(
    script: &str,
    postgres: bool,
) -> (
    ModelServer,
    TestApp,
    Option<iris_store::testing::DropDatabase>,
) {
    let model = ModelServer::start(script).await;
    let build = TestApp::with_model(&model).mailbox().background();
    let (build, guard) = if postgres {
        let (url, guard) = iris_store::testing::fresh_postgres_database().await;
        (build.database_url(&url), Some(guard))
    } else {
        (build, None)
    };
    (model, build.start().await, guard)
}

/// Two cards waiting in one conversation for the same mail, on SQLite or PostgreSQL.
async fn two_cards_for_the_same_mail(postgres: bool) {
    let (_model, server, _guard) = demo_app(iris_core::scripted::DEMO_SCRIPT, postgres).await;
    let token = server.add_device("phone", Scope::Control).await;
    let client = server.client().await;
    let (conversation, ids) = two_waiting_cards(&client, &token).await;
    let (first, second) = (&ids[0], &ids[1]);
    let one = client
        .get(&format!("/governance/approvals/{first}"), &token)
        .await;
    let two = client
        .get(&format!("/governance/approvals/{second}"), &token)
        .await;
    let title = one["card"]["title"].as_str().unwrap().to_string();
    // The first card repeats nothing; the second says the first waits with the same call.
    assert!(one["card"].get("overlaps").is_none(), "{one}");
    let overlaps = two["card"]["overlaps"]
        .as_array()
        .expect("the second card's overlaps");
    assert_eq!(overlaps.len(), 1, "{two}");
    assert_eq!(overlaps[0]["approval_id"], first.as_str());
    assert_eq!(overlaps[0]["title"], title.as_str());
    assert_eq!(overlaps[0]["state"], "waiting");
    assert_eq!(overlaps[0]["same_call"], true);
    assert_eq!(
        overlaps[0]["shared_items"].as_u64().unwrap() as usize,
        two["items"].as_array().unwrap().len()
    );
    assert_eq!(overlaps[0]["at"], one["created_at"]);

    // Both approved, the first first: the second finds its mail gone and names the first.
    for id in [first, second] {
        let (status, body) = client
            .post(
                &format!("/governance/approvals/{id}/respond"),
                Some(&token),
                json!({"decision": "approve"}),
            )
            .await;
        assert!(status.is_success(), "{status}: {body}");
        if id == first {
            client.wait_execution(id, &token, "executed").await;
        }
    }
    let row = client.wait_execution(second, &token, "failed").await;
    let result = &row["result"];
    assert_eq!(result["status"], "stale", "{row}");
    assert_eq!(result["handled_by"]["approval_id"], first.as_str(), "{row}");
    assert_eq!(result["handled_by"]["title"], title.as_str(), "{row}");
    let message = result["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("the card \"{title}\"")),
        "{message}"
    );
    assert!(!message.starts_with("stale"), "{message}");

    // Each card's end has IRIS's own line, whatever the model says after it.
    let lines = lines_once(
        &client,
        &token,
        &conversation,
        "both cards' end lines",
        |texts| {
            texts
                .iter()
                .filter(|t| t.starts_with("Approved \""))
                .count()
                == 2
        },
    )
    .await;
    let approved: Vec<&String> = lines
        .iter()
        .filter(|t| t.starts_with("Approved \""))
        .collect();
    assert!(
        approved[0].contains(": Moved ") && approved[0].contains(" to Trash."),
        "{lines:?}"
    );
    assert!(
        approved[1].contains("but nothing was done") && approved[1].contains(&title),
        "{lines:?}"
    );
    assert!(
        !lines
            .iter()
            .any(|t| t == "Done. Activity shows what changed."),
        "{lines:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_for_mail_another_card_pins_says_so_and_the_second_approve_names_the_first() {
    two_cards_for_the_same_mail(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_for_mail_another_card_pins_says_so_and_the_second_approve_names_the_first_on_postgres(
) {
    two_cards_for_the_same_mail(true).await;
}

/// With two cards waiting in one conversation, rejecting the older one says so in IRIS's own
/// words and the model's reply claims no work: the demo model continues the request that
/// card's call was made for, not the newer one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejecting_one_of_two_waiting_cards_says_nothing_changed() {
    let (_model, server, _guard) = demo_app(iris_core::scripted::DEMO_SCRIPT, false).await;
    let before = snapshot(&server.maildir());
    let token = server.add_device("phone", Scope::Control).await;
    let client = server.client().await;
    let (conversation, ids) = two_waiting_cards(&client, &token).await;
    let (status, body) = client
        .post(
            &format!("/governance/approvals/{}/respond", ids[0]),
            Some(&token),
            json!({"decision": "reject", "reason": "not these"}),
        )
        .await;
    assert!(status.is_success(), "{status}: {body}");
    let title = body["approval"]["card"]["title"]
        .as_str()
        .unwrap()
        .to_string();
    let lines = lines_once(
        &client,
        &token,
        &conversation,
        "the rejected card's end",
        |texts| texts.len() >= 6,
    )
    .await;
    // owner, halt, owner, halt, IRIS's line, the model's reply.
    assert_eq!(
        lines[4],
        format!("Rejected \"{title}\" (not these): nothing was changed."),
        "{lines:?}"
    );
    assert_eq!(
        lines[5], "OK, I left them where they are. Nothing was changed, sent or deleted.",
        "{lines:?}"
    );
    assert_eq!(snapshot(&server.maildir()), before, "nothing moved");
}

/// A write that runs without a card, as its manifest allows (mail's `trash_category`), is
/// audited: kind `action`, no approval, its run's id, what it did and the tool that undoes it;
/// `GET /api/audit` lists it with the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_without_a_card_is_audited_with_its_run() {
    let model = ModelServer::start(iris_core::scripted::DEMO_SCRIPT).await;
    let server = TestApp::with_model(&model).mailbox().start().await;
    let token = server.add_device("phone", Scope::Control).await;
    let client = server.client().await;
    let (status, done) = client
        .post(
            "/api/chat",
            Some(&token),
            json!({"message": "delete my promo emails from this week"}),
        )
        .await;
    assert!(status.is_success(), "{status}: {done}");
    assert_eq!(done["status"], "done", "{done}");
    assert!(done["approval_id"].is_null(), "no card: {done}");
    let audit = client.get("/api/audit?limit=200", &token).await;
    let actions: Vec<&Value> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "action")
        .collect();
    assert_eq!(actions.len(), 1, "{audit}");
    let action = actions[0];
    assert!(action["approval_id"].is_null(), "{action}");
    assert_eq!(action["run_id"], done["run_id"], "{action}");
    assert_eq!(action["actor"], "iris");
    assert_eq!(action["undo_available"], true);
    assert_eq!(action["result"]["tool"], "trash_category");
    assert_eq!(action["result"]["undo"], "restore_email");
    assert_eq!(action["result"]["conversation_id"], done["conversation_id"]);
    let summary = action["result"]["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("Moved ") && summary.contains("undo that"),
        "{summary}"
    );
    assert_eq!(
        done["reply"].as_str().unwrap(),
        summary,
        "the audit says what the owner was told"
    );
}

/// A server whose own clock runs two hours ahead of the database's stamps in the database's
/// time: the card's `created_at` and `expires_at` (so its life is the setting's, not two hours
/// more), the answer's `responded_at` and the audit entries' times all sit at the test's (and
/// the database's) now, within a minute. Before, every one of them was two hours ahead, and the
/// card lived two hours longer on every server that read it.
async fn a_server_with_a_fast_clock_stamps_in_database_time(postgres: bool) {
    let (_model, world, _guard) = demo_world(TRASH_SCRIPT, postgres).await;
    let token = world.add_device("phone", "control");
    let (server, _rx) = world.start_watched(&[
        ("IRIS_FAILPOINT_CLOCK_SKEW_SECS", "7200"),
        ("IRIS_DESTRUCTIVE_TTL_SECS", "600"),
    ]);
    let client = server.client();
    let (status, halted) = client
        .post(
            "/api/chat",
            Some(&token),
            json!({"message": "trash the promo emails from this week"}),
        )
        .await;
    assert!(status.is_success(), "{status}: {halted}");
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let (status, body) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&token),
            json!({"decision": "reject", "reason": "not now"}),
        )
        .await;
    assert!(status.is_success(), "{status}: {body}");
    let row = client
        .get(&format!("/governance/approvals/{id}"), &token)
        .await;
    let at = |v: &Value| -> chrono::DateTime<chrono::Utc> {
        v.as_str()
            .unwrap_or_else(|| panic!("a time: {v}"))
            .parse()
            .unwrap()
    };
    let near_now = |what: &str, t: chrono::DateTime<chrono::Utc>| {
        let off = (t - chrono::Utc::now()).num_seconds().abs();
        assert!(
            off < 60,
            "{what} is {off} s away from the database's now: {t}"
        );
    };
    near_now("created_at", at(&row["created_at"]));
    near_now("responded_at", at(&row["responded_at"]));
    assert_eq!(
        (at(&row["expires_at"]) - at(&row["created_at"])).num_seconds(),
        600,
        "{row}"
    );
    let audit = client
        .get(&format!("/api/audit?approval_id={id}"), &token)
        .await;
    let entries = audit["entries"].as_array().expect("audit entries");
    assert!(!entries.is_empty(), "{audit}");
    for entry in entries {
        near_now("an audit entry", at(&entry["at"]));
    }
}

// Needs a process: the skewed clock is a failpoint, read from the process's environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_whose_clock_runs_ahead_stamps_in_the_database_time() {
    a_server_with_a_fast_clock_stamps_in_database_time(false).await;
}

// Needs a process: the skewed clock is a failpoint, read from the process's environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_whose_clock_runs_ahead_stamps_in_the_database_time_on_postgres() {
    a_server_with_a_fast_clock_stamps_in_database_time(true).await;
}
