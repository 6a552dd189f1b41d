//! The server as a library, called in process (`iris::build`, `iris::app`, then
//! `tower::ServiceExt::oneshot`; no process, no port): strict input (a JSON body with a
//! duplicated key is refused and changes nothing; an oversized body gets the same JSON error
//! shape as every other 4xx), a request id on every response, and a tool whose backend is
//! missing (no mail account) is never offered to the model and never makes a card, and a card
//! approved after its backend went away says so instead of "stale".

use crate::support;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use iris_core::ports::ApprovalStore;
use serde_json::json;
use support::{seed_card, ModelServer, TestApp, CATEGORY_TRASH_SCRIPT};
use tower::ServiceExt;

/// A server built in process with the scripted model `model`, with the demo mailbox when
/// `mailbox`.
async fn app(model: &ModelServer, mailbox: bool) -> TestApp {
    let build = TestApp::with_model(model);
    if mailbox { build.mailbox() } else { build }.start().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_with_a_duplicated_key_is_refused_and_changes_nothing() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let app = app(&model, true).await;
    let halted = app.chat("trash the promo emails").await;
    assert_eq!(halted["status"], "awaiting_approval", "{halted}");
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let path = format!("/governance/approvals/{id}/respond");
    for body in [
        r#"{"decision":"reject","decision":"approve"}"#,
        r#"{"decision":"approve","reason":"a","reason":"b"}"#,
        r#"{"decision":"reject","tool":{"a":1,"a":2}}"#,
    ] {
        let (status, _, error) = app
            .call("POST", &path, Some(body.as_bytes().to_vec()))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {error}");
        let sentence = error["error"].as_str().unwrap();
        assert!(sentence.contains("appears twice"), "{sentence}");
        assert!(sentence.contains("nothing was changed"), "{sentence}");
    }
    let row = app.state.store.approval(&id).await.unwrap().unwrap();
    assert_eq!(row.status, iris_core::wire::ApprovalStatus::Pending);
    assert!(app.state.store.audit(Some(&id)).await.unwrap().is_empty());
    let (status, _, _) = app
        .call(
            "POST",
            "/api/chat",
            Some(br#"{"message":"hi","message":"trash the promo emails"}"#.to_vec()),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_body_gets_the_json_error_shape_and_every_response_a_request_id() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let app = app(&model, true).await;
    let big = json!({"message": "x".repeat(iris::api::MAX_BODY_BYTES + 1)})
        .to_string()
        .into_bytes();
    let (status, headers, body) = app.call("POST", "/api/chat", Some(big)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("larger than"),
        "{body}"
    );
    assert!(headers.get(iris::REQUEST_ID).is_some());
    assert_eq!(model.received(), 0, "nothing reached the model");
    // A message too long for a card is a 400 with a sentence, not a 500.
    let long = json!({"message": "y".repeat(5000)})
        .to_string()
        .into_bytes();
    let (status, _, body) = app.call("POST", "/api/chat", Some(long)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("at most 4000"),
        "{body}"
    );
    // A conversation id the app could not show or link to is refused the same way.
    for (id, says) in [
        (String::new(), "leave it out"),
        ("c".repeat(129), "at most 128"),
        ("c\u{1b}[31m".to_owned(), "control characters"),
    ] {
        let body = json!({"message": "hello", "conversation_id": id})
            .to_string()
            .into_bytes();
        let (status, _, body) = app.call("POST", "/api/chat", Some(body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(body["error"].as_str().unwrap().contains(says), "{body}");
    }
    assert_eq!(model.received(), 0, "nothing reached the model");
    // Two requests, two ids; a client's own id is kept.
    let (_, a, _) = app.call("GET", "/api/health", None).await;
    let (_, b, _) = app.call("GET", "/api/health", None).await;
    assert_ne!(a.get(iris::REQUEST_ID), b.get(iris::REQUEST_ID));
    let request = Request::builder()
        .uri("/api/health")
        .header(iris::REQUEST_ID, "trace-me-42")
        .body(Body::empty())
        .unwrap();
    let response = app.router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.headers()[iris::REQUEST_ID], "trace-me-42");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_mail_account_no_mail_tool_is_offered_and_no_card_is_made() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let app = app(&model, false).await;
    let turn = app.chat("trash the promo emails").await;
    assert_ne!(turn["status"], "awaiting_approval", "{turn}");
    assert!(turn["approval_id"].is_null(), "{turn}");
    let requests = model.requests.lock().unwrap().clone();
    assert!(!requests.is_empty());
    for request in &requests {
        let offered: Vec<&str> = request["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        assert!(offered.is_empty(), "offered without a backend: {offered:?}");
    }
    // The scripted model calls search_inbox anyway: it is told why it cannot run.
    let told = requests.iter().any(|r| {
        r["messages"].as_array().into_iter().flatten().any(|m| {
            m["role"] == "tool"
                && m["content"]
                    .as_str()
                    .is_some_and(|c| c.contains("no mail account is configured"))
        })
    });
    assert!(told, "the model was not told why: {requests:?}");
    let rows = app
        .state
        .store
        .approvals(&Default::default())
        .await
        .unwrap();
    assert!(rows.is_empty(), "a card nothing could carry out: {rows:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_card_whose_mail_account_went_away_says_so_and_changes_nothing() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let with_mail = app(&model, true).await;
    let turn = with_mail
        .chat("trash the promo emails from this week")
        .await;
    assert_eq!(turn["status"], "awaiting_approval", "{turn}");
    let id = turn["approval_id"].as_str().unwrap().to_string();
    let maildir = with_mail.maildir();
    let before = support::snapshot(&maildir);
    // The same database, served again with the account removed from the settings.
    let without = TestApp::with_model(&model)
        .in_dir(with_mail.dir)
        .start()
        .await;
    let (status, _, body) = without
        .call(
            "POST",
            &format!("/governance/approvals/{id}/respond"),
            Some(json!({"decision": "approve"}).to_string().into_bytes()),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let report = without.state.service.run_job(&id).await.unwrap();
    assert!(report.is_some(), "the decided row was not claimed");
    let row = without
        .state
        .service
        .approval(&id)
        .await
        .unwrap()
        .expect("row");
    let result = serde_json::to_value(&row).unwrap();
    let message = result["result"]["message"].as_str().unwrap_or_default();
    assert_eq!(result["execution"], "failed", "{result}");
    assert!(
        message.contains("no mail account is configured")
            && message.contains("nothing was changed"),
        "{result}"
    );
    assert!(!message.contains("stale"), "{result}");
    assert_eq!(support::snapshot(&maildir), before, "a mail was moved");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approvals_list_pages_by_cursor_filters_and_refuses_bad_values() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let app = app(&model, false).await;
    let t = chrono::Utc::now() - chrono::Duration::minutes(30);
    for i in 0..7 {
        seed_card(
            &app.state.store,
            &format!("card-{i}"),
            t,
            i,
            &format!("Mail number {i}"),
        )
        .await;
    }

    // Pages of 3, newest first, every row once; the last page says `next: null`.
    let mut seen = Vec::new();
    let mut path = "/governance/approvals?limit=3".to_string();
    loop {
        let (status, _, page) = app.call("GET", &path, None).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let rows = page["approvals"].as_array().unwrap();
        assert!(rows.len() <= 3, "{page}");
        seen.extend(rows.iter().map(|r| r["id"].as_str().unwrap().to_string()));
        match page["next"].as_str() {
            Some(next) => path = format!("/governance/approvals?limit=3&before={next}"),
            None => {
                assert!(page["next"].is_null(), "{page}");
                break;
            }
        }
    }
    let want: Vec<String> = (0..7).rev().map(|i| format!("card-{i}")).collect();
    assert_eq!(seen, want);

    // Filters and the search.
    for (query, want) in [
        ("q=NUMBER%204", vec!["card-4"]),
        (
            "status=pending&tool=trash_email&limit=2",
            vec!["card-6", "card-5"],
        ),
        ("tool=send_email", vec![]),
        ("status=answered", vec![]),
    ] {
        let (status, _, page) = app
            .call("GET", &format!("/governance/approvals?{query}"), None)
            .await;
        assert_eq!(status, StatusCode::OK, "{query}: {page}");
        let ids: Vec<&str> = page["approvals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, want, "{query}");
    }
    let since =
        (t + chrono::Duration::minutes(5)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let (_, _, page) = app
        .call("GET", &format!("/governance/approvals?since={since}"), None)
        .await;
    assert_eq!(page["approvals"].as_array().unwrap().len(), 2, "{page}");

    // Bad values: a 400 that names the value, in the JSON error shape.
    for (query, names) in [
        ("limit=0", "limit `0`"),
        ("limit=201", "limit `201`"),
        ("before=not-a-cursor", "cursor"),
        ("since=yesterday", "`since`"),
        ("status=done", "status `done`"),
        ("status=pending&status=all", "duplicate field `status`"),
    ] {
        let (status, _, error) = app
            .call("GET", &format!("/governance/approvals?{query}"), None)
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {error}");
        let sentence = error["error"].as_str().unwrap_or_default();
        assert!(sentence.contains(names), "{query}: {sentence}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activity_shows_every_pending_card_and_one_page_of_answered_ones() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let app = app(&model, false).await;
    let t = chrono::Utc::now() - chrono::Duration::minutes(59);
    let answered = 55;
    for i in 0..answered + 3 {
        seed_card(
            &app.state.store,
            &format!("card-{i:02}"),
            t,
            0,
            &format!("Mail {i}"),
        )
        .await;
    }
    for i in 0..answered {
        let (status, _, body) = app
            .call(
                "POST",
                &format!("/governance/approvals/card-{i:02}/respond"),
                Some(br#"{"decision":"reject"}"#.to_vec()),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let html = |path: &'static str| {
        let router = app.router.clone();
        let token = app.token.clone();
        async move {
            let request = Request::builder()
                .uri(path)
                .header("authorization", format!("Bearer {token}"))
                .body(Body::empty())
                .unwrap();
            let response = router.oneshot(request).await.unwrap();
            assert_eq!(response.status(), StatusCode::OK);
            let bytes = axum::body::to_bytes(response.into_body(), 64 << 20)
                .await
                .unwrap();
            String::from_utf8(bytes.to_vec()).unwrap()
        }
    };
    let page = html("/activity").await;
    let count = |page: &str, prefix: &str| {
        (0..answered + 3)
            .filter(|i| page.contains(&format!("{prefix}card-{i:02}\"")))
            .count()
    };
    // The three pending cards in full, the newest 50 answered ones as one line each (what
    // happened, by whom), "Older cards" for the rest.
    assert_eq!(count(&page, "id=\"card-"), 3, "full cards");
    for i in answered..answered + 3 {
        assert!(
            page.contains(&format!("id=\"card-card-{i:02}\"")),
            "pending {i}"
        );
    }
    assert_eq!(count(&page, "data-testid=\"line-"), 50, "history lines");
    assert!(page.contains("Rejected"), "a line says what happened");
    assert!(page.contains(" by phone-"), "and who answered");
    assert!(page.contains("data-testid=\"older\""), "an Older control");

    // An old card's own page shows it; an unknown id says so plainly.
    let old = html("/activity/card-00").await;
    assert!(
        old.contains("id=\"card-card-00\""),
        "the old card is on its page"
    );
    assert!(!old.contains("card-not-found"));
    let unknown = html("/activity/no-such-card").await;
    assert!(
        unknown.contains("data-testid=\"card-not-found\""),
        "{unknown}"
    );
    assert!(unknown.contains("No card has the id"));
}

/// The whole consent cycle in process, the background work running on the test's own runtime
/// (`Build::background`): the approved card's call is executed once by a worker, the mail moves,
/// and the paused run is resumed with the real result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_card_runs_once_with_the_background_work_in_process() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let app = TestApp::with_model(&model)
        .mailbox()
        .background()
        .start()
        .await;
    let halted = app.chat("trash the promo emails").await;
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let trashed_before = support::trashed(&app.maildir());
    let (status, _, body) = app
        .call(
            "POST",
            &format!("/governance/approvals/{id}/respond"),
            Some(br#"{"decision":"approve"}"#.to_vec()),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let path = format!("/governance/approvals/{id}");
    let row = support::eventually("the approved card's call to run", || async {
        let (_, _, row) = app.call("GET", &path, None).await;
        (row["execution"] == "executed").then_some(row)
    })
    .await;
    let items = row["items"].as_array().unwrap().len();
    assert!(items > 0, "{row}");
    assert_eq!(support::trashed(&app.maildir()), trashed_before + items);
    let audit = app.state.store.audit(Some(&id)).await.unwrap();
    let executions = audit
        .iter()
        .filter(|e| e.kind == iris_core::wire::AuditKind::Execution)
        .count();
    // One execution entry per item, each item once.
    assert_eq!(executions, items, "{audit:?}");
}
