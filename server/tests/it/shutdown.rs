//! A graceful stop (SIGTERM, what systemd and container runtimes send, and Ctrl-C's SIGINT) with
//! the real `iris` binary: open event streams end instead of holding the server up, the process
//! exits by itself and its SQLite file can be served again at once, and a resume job running at
//! the stop finishes and records its end first, so the next start has nothing to mark
//! `unknown`.

use crate::support;

use std::time::Duration;

use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::{eventually, ModelServer, World, CATEGORY_TRASH_SCRIPT as SCRIPT};

/// How long a stop may take here (far more than it needs; past it the test fails).
const STOP_LIMIT: Duration = Duration::from_secs(30);

// Needs a process: shutdown (SIGTERM, SIGINT): the process exits and frees its SQLite file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_ends_the_event_streams_exits_and_frees_the_database() {
    let model = ModelServer::start(SCRIPT).await;
    let world = World::new(&model.base_url);
    let token = world.add_device("phone", "control");
    for signal in ["TERM", "INT"] {
        let server = world.start();
        let events = reqwest::Client::new()
            .get(format!("{}/api/events", server.url))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(events.status(), StatusCode::OK);
        let mut stream = events.bytes_stream();

        server.signal(signal);
        let status = tokio::task::spawn_blocking(move || server.wait_exit(STOP_LIMIT))
            .await
            .unwrap();
        assert!(status.success(), "SIG{signal}: {status}");
        // The stream ended with the server (it did not hold the stop up).
        while let Some(chunk) = stream.next().await {
            if chunk.is_err() {
                break;
            }
        }
    }
    // The file is free at once: a new server starts on it.
    let again = world.start();
    let health = reqwest::get(format!("{}/api/health", again.url))
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
}

// Needs a process: shutdown (SIGTERM): the process exits only once its running job has ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_running_at_the_stop_finishes_before_the_exit() {
    let model = ModelServer::start(SCRIPT).await;
    let world = World::new(&model.base_url);
    iris_email::demo::write_demo_maildir(&world.maildir, chrono::Utc::now()).unwrap();
    let token = world.add_device("phone", "control");
    let server = world.start();
    let http = reqwest::Client::new();
    let halted: Value = http
        .post(format!("{}/api/chat", server.url))
        .bearer_auth(&token)
        .json(&json!({"message": "trash the promo emails from this week"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(halted["status"], "awaiting_approval", "{halted}");
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let conversation = halted["conversation_id"].as_str().unwrap().to_string();

    // The continuation after the call waits in the model: the job is running at the stop.
    model.hold_after(2);
    let answer = http
        .post(format!("{}/governance/approvals/{id}/respond", server.url))
        .bearer_auth(&token)
        .json(&json!({"decision": "approve"}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    eventually("the resume asks the model to continue", || async {
        (model.received() == 3).then_some(())
    })
    .await;
    server.signal("TERM");
    // The server waits for the job; the model answers; the job ends; the process exits.
    model.release(usize::MAX);
    let status = tokio::task::spawn_blocking(move || server.wait_exit(STOP_LIMIT))
        .await
        .unwrap();
    assert!(status.success(), "{status}");

    // Read before any restart: the job is done and the reply written by the stopped server.
    let store = iris_store::Store::connect(&world.database_url)
        .await
        .unwrap();
    let job: String = sqlx::query_scalar("SELECT state FROM resume_jobs WHERE approval_id = $1")
        .bind(&id)
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(job, "done");
    let ledger: String = sqlx::query_scalar("SELECT state FROM ledger WHERE approval_id = $1")
        .bind(&id)
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(ledger, "executed");
    let lines = iris_core::ports::ApprovalStore::lines(&store, &conversation)
        .await
        .unwrap();
    assert!(
        lines
            .last()
            .is_some_and(|l| l.text.starts_with("Done: moved")),
        "{lines:?}"
    );
    assert_eq!(model.received(), 3, "the model was asked once to continue");
}
