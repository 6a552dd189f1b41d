//! DESIGN §8 "one pinned call executes at most once, whatever crashes, retries, double clicks or
//! two surfaces answering at once", over real HTTP: one server in process (`support::TestApp`
//! on a listener, its background work running), a halted trash approval, 50 answers at once
//! (approve and reject mixed, five control devices, several surfaces). Exactly one answer gets
//! 200; the other 49 get 409 with a body naming who decided, through which surface and when (the
//! winner's own values). If the winner approved, the pinned call runs exactly once: ledger
//! `executed`, one audit execution entry per item, exactly the pinned files moved to Trash once.
//! If it rejected, nothing runs and no file moves. Several rounds (one per mail category) on
//! SQLite and on PostgreSQL.

use crate::support;

use std::sync::Arc;

use iris_core::ports::Scope;
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::{eventually, moved, snapshot, Client, ModelServer, TestApp};
use tokio::sync::Barrier;

/// Answers per round.
const ANSWERS: usize = 50;

/// What each answer's `X-Iris-Surface` header claims (a bearer records only `cli` or `api`).
const SURFACES: [Option<&str>; 5] = [
    Some("cli"),
    Some("phone"),
    Some("telegram"),
    Some("web"),
    None,
];

use support::CATEGORY_TRASH_SCRIPT as SCRIPT;

/// One answer as sent and as received.
struct Answer {
    device: String,
    surface: &'static str,
    decision: &'static str,
    status: StatusCode,
    body: Value,
}

/// One round: halt on `request`, fire [`ANSWERS`] answers at once, check the invariants.
/// Returns the winner's decision.
async fn round(
    client: &Client,
    maildir: &std::path::Path,
    devices: &[(String, String)],
    request: &str,
    round_no: usize,
) -> &'static str {
    let owner = &devices[0].1;
    let (chat_status, halted) = {
        let resp = client
            .http
            .post(format!("{}/api/chat", client.url))
            .bearer_auth(owner)
            .json(&json!({"message": request}))
            .send()
            .await
            .unwrap();
        (resp.status(), resp.json::<Value>().await.unwrap())
    };
    assert_eq!(chat_status, StatusCode::OK, "{halted}");
    assert_eq!(halted["status"], "awaiting_approval", "{request}: {halted}");
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let conversation = halted["conversation_id"].as_str().unwrap().to_string();
    let row = client
        .get(&format!("/governance/approvals/{id}"), owner)
        .await;
    let items: Vec<String> = serde_json::from_value(row["items"].clone()).unwrap();
    let n = items.len();
    assert!(n > 0, "{row}");
    let before = snapshot(maildir);

    // 50 answers released together: decisions alternate (shifted per round), devices and
    // surfaces rotate, so the winner may be anyone with either decision.
    let barrier = Arc::new(Barrier::new(ANSWERS));
    let mut tasks = Vec::new();
    for i in 0..ANSWERS {
        let (device, token) = devices[i % devices.len()].clone();
        let surface = SURFACES[i % SURFACES.len()];
        let decision = if (i + round_no).is_multiple_of(2) {
            "approve"
        } else {
            "reject"
        };
        let http = client.http.clone();
        let url = format!("{}/governance/approvals/{id}/respond", client.url);
        let barrier = barrier.clone();
        tasks.push(tokio::spawn(async move {
            let mut req = http
                .post(url)
                .bearer_auth(token)
                .json(&json!({"decision": decision, "reason": format!("answer {i}")}));
            if let Some(s) = surface {
                req = req.header("x-iris-surface", s);
            }
            barrier.wait().await;
            let resp = req.send().await.unwrap();
            let status = resp.status();
            let body = resp.json::<Value>().await.unwrap_or(Value::Null);
            Answer {
                device,
                // A bearer records `cli` when it says so, else `api`: it can never claim
                // another surface's name (`phone`, `telegram`, `web`).
                surface: match surface {
                    Some("cli") => "cli",
                    _ => "api",
                },
                decision,
                status,
                body,
            }
        }));
    }
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    let statuses: Vec<u16> = answers.iter().map(|a| a.status.as_u16()).collect();
    let winners: Vec<&Answer> = answers
        .iter()
        .filter(|a| a.status == StatusCode::OK)
        .collect();
    assert_eq!(winners.len(), 1, "exactly one answer wins: {statuses:?}");
    assert_eq!(
        answers
            .iter()
            .filter(|a| a.status == StatusCode::CONFLICT)
            .count(),
        ANSWERS - 1,
        "every other answer is 409: {statuses:?}"
    );
    let winner = winners[0];
    let won = &winner.body["approval"];
    let status = if winner.decision == "approve" {
        "approved"
    } else {
        "rejected"
    };
    assert_eq!(won["status"], status, "{won}");
    assert_eq!(won["responded_by"], winner.device.as_str(), "{won}");
    assert_eq!(won["surface"], winner.surface, "{won}");
    assert!(won["responded_at"].is_string(), "{won}");

    // Every loser is told who decided, where and when: the winner's own values.
    for a in answers.iter().filter(|a| a.status == StatusCode::CONFLICT) {
        let row = &a.body["approval"];
        assert_eq!(row["id"], id.as_str(), "{}", a.body);
        assert_eq!(row["status"], status, "{}", a.body);
        assert_eq!(row["responded_by"], won["responded_by"], "{}", a.body);
        assert_eq!(row["surface"], won["surface"], "{}", a.body);
        assert_eq!(row["responded_at"], won["responded_at"], "{}", a.body);
        assert_eq!(row["reason"], won["reason"], "{}", a.body);
        let error = a.body["error"].as_str().unwrap();
        assert!(
            error.contains(&format!(
                "{status} by {} via {}",
                winner.device, winner.surface
            )),
            "{error}"
        );
    }

    // The row as stored agrees.
    let stored = client
        .get(&format!("/governance/approvals/{id}"), owner)
        .await;
    for field in [
        "status",
        "responded_by",
        "surface",
        "responded_at",
        "reason",
    ] {
        assert_eq!(stored[field], won[field], "{field}: {stored}");
    }

    if winner.decision == "approve" {
        let row = client.wait_execution(&id, owner, "executed").await;
        assert_eq!(row["result"]["trashed"], n, "{row}");
        eventually("the resumed run's reply", || {
            let (c, t) = (conversation.clone(), owner.clone());
            async move {
                client
                    .last_reply(&c, &t)
                    .await
                    .starts_with("Done")
                    .then_some(())
            }
        })
        .await;
        let after = snapshot(maildir);
        let (gone, arrived) = moved(&before, &after);
        assert_eq!(gone.len(), n, "exactly the pinned mail moved: {gone:?}");
        assert_eq!(arrived.len(), n, "each moved once: {arrived:?}");
        assert!(
            arrived.iter().all(|k| k.starts_with(".Trash/cur/")),
            "{arrived:?}"
        );
        let mut gone_bytes: Vec<&Vec<u8>> = gone.iter().map(|k| &before[k]).collect();
        let mut arrived_bytes: Vec<&Vec<u8>> = arrived.iter().map(|k| &after[k]).collect();
        gone_bytes.sort();
        arrived_bytes.sort();
        assert_eq!(gone_bytes, arrived_bytes, "trashed files changed");
    } else {
        eventually("the rejected run's reply", || {
            let (c, t) = (conversation.clone(), owner.clone());
            async move {
                client
                    .last_reply(&c, &t)
                    .await
                    .contains("Nothing was changed")
                    .then_some(())
            }
        })
        .await;
        let row = client
            .get(&format!("/governance/approvals/{id}"), owner)
            .await;
        assert_eq!(row["execution"], "none", "{row}");
        assert_eq!(snapshot(maildir), before, "a rejected call moved mail");
    }

    // The audit: one decision (the winner's), one execution entry per item or none.
    let audit = client
        .get(&format!("/api/audit?approval_id={id}"), owner)
        .await;
    let entries = audit["entries"].as_array().unwrap();
    let decisions: Vec<&Value> = entries.iter().filter(|e| e["kind"] == "decision").collect();
    assert_eq!(decisions.len(), 1, "{audit}");
    assert_eq!(decisions[0]["actor"], winner.device.as_str());
    assert_eq!(decisions[0]["surface"], winner.surface);
    let mut executed: Vec<String> = entries
        .iter()
        .filter(|e| e["kind"] == "execution")
        .map(|e| e["item"].as_str().unwrap().to_string())
        .collect();
    executed.sort();
    if winner.decision == "approve" {
        let mut pinned = items.clone();
        pinned.sort();
        assert_eq!(executed, pinned, "one execution entry per item");
    } else {
        assert!(executed.is_empty(), "{audit}");
    }
    assert!(
        entries.iter().all(|e| e["kind"] != "denial"),
        "no second claim was even attempted: {audit}"
    );

    // Nothing more happens later (no second execution from a late resume).
    let settled = snapshot(maildir);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(snapshot(maildir), settled, "something ran twice");
    winner.decision
}

/// Three rounds on `server` (built with the demo mailbox and its background work), answered
/// by five control devices of its own.
async fn race(server: TestApp) {
    let mut devices = Vec::new();
    for i in 0..5 {
        let name = format!("device-{i}");
        let token = server.add_device(&name, Scope::Control).await;
        devices.push((name, token));
    }
    let client = server.client().await;
    let maildir = server.maildir();
    let mut outcomes = Vec::new();
    for (i, request) in [
        "trash the promo emails",
        "trash the newsletters",
        "trash the order emails",
    ]
    .into_iter()
    .enumerate()
    {
        outcomes.push(round(&client, &maildir, &devices, request, i).await);
    }
    eprintln!("winning decisions per round: {outcomes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_answers_one_decision_on_sqlite() {
    let model = ModelServer::start(SCRIPT).await;
    let server = TestApp::with_model(&model)
        .mailbox()
        .background()
        .start()
        .await;
    race(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_answers_one_decision_on_postgres() {
    let (url, _database) = iris_store::testing::fresh_postgres_database().await;
    let model = ModelServer::start(SCRIPT).await;
    let server = TestApp::with_model(&model)
        .database_url(&url)
        .mailbox()
        .background()
        .start()
        .await;
    race(server).await;
}
