//! The write-ahead side-effect ledger under real crashes: the real `iris` binary on a
//! temp database and a real Maildir, the model a scripted OpenAI-compatible server. The owner
//! approves a halted trash request; the server stops at a failpoint (`IRIS_FAILPOINT`, debug
//! builds only), prints `failpoint reached: NAME` and blocks; the test kills it with SIGKILL,
//! restarts it without the failpoint, and counts side effects in the Maildir:
//!
//! - `after_claim` (ledger `executing`, nothing ran): `unknown`, nothing moved, the owner told,
//!   never retried (a second restart changes nothing);
//! - `after_side_effect` (moved, outcome not written): `unknown`, every file moved exactly once;
//! - `after_outcome` (ledger `executed`, run not continued): the run continues once after the
//!   restart from the ledger's result and the reply arrives; moved once;
//! - `after_decision` (decision stored, resume not started): the sweep resumes it after the
//!   restart and it executes exactly once.
//!
//! Every message file's bytes are in the Maildir exactly once before and after (no file lost,
//! none duplicated); the model is asked exactly three times (two steps before the halt, one
//! continuation), however many restarts.

use crate::support;

use std::collections::BTreeMap;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};
use support::{contents, eventually, snapshot, trashed, wait_for_line, Iris, ModelServer, World};

const SCRIPT: &str = support::TRASH_SCRIPT;

/// Server environment for every start: sweeps every second, leases of two seconds (so on
/// PostgreSQL, where a restarted server cannot know the old one is gone, its job is taken over
/// soon), and the sweep's debug line so a test can wait for whole sweeps.
const SWEEPS: [(&str, &str); 3] = [
    ("IRIS_SWEEP_SECS", "1"),
    ("IRIS_LEASE_SECS", "2"),
    ("RUST_LOG", "warn,iris::sweeps=debug"),
];

/// What the owner is told when the ledger says `unknown` (agent.rs `observation_for`).
const TOLD: &str = "It will not be run again";

struct Client {
    http: reqwest::Client,
    url: String,
    token: String,
}

impl Client {
    async fn get(&self, path: &str) -> Value {
        let resp = self
            .http
            .get(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_success(), "GET {path}: {}", resp.status());
        resp.json().await.unwrap()
    }
}

/// Waits for `count` whole sweeps, and returns the receiver and every stderr line seen until
/// then. Two sweeps after a start means at least one complete sweep ran after the start-up
/// recovery.
async fn sweeps(rx: Receiver<String>, count: usize) -> (Receiver<String>, Vec<String>) {
    tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut seen = Vec::new();
        let mut sweeps = 0;
        while sweeps < count {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = rx.recv_timeout(left).expect("the server sweeps");
            sweeps += usize::from(line.contains("sweep finished"));
            seen.push(line);
        }
        (rx, seen)
    })
    .await
    .unwrap()
}

/// Starts the server. With a failpoint, the sweep runs once at start and then not for an hour,
/// so only the respond route resumes the approved run (the test waits for that first sweep
/// before approving): the crash point is exactly the failpoint.
fn start(world: &World, failpoint: Option<&str>) -> (Iris, Receiver<String>) {
    let mut env: Vec<(&str, &str)> = SWEEPS.to_vec();
    if let Some(name) = failpoint {
        env.push(("IRIS_FAILPOINT", name));
        env.push(("IRIS_SWEEP_SECS", "3600"));
    }
    world.start_watched(&env)
}

/// Lines of the conversation.
async fn lines(client: &Client, conversation: &str) -> Vec<Value> {
    client
        .get(&format!("/api/conversations/{conversation}"))
        .await["lines"]
        .as_array()
        .unwrap()
        .clone()
}

async fn crash_at(failpoint: &str, world: World, model: ModelServer) {
    iris_email::demo::write_demo_maildir(&world.maildir, chrono::Utc::now()).unwrap();
    let before: BTreeMap<String, Vec<u8>> = snapshot(&world.maildir);
    let before_contents = contents(&world.maildir);
    let token = world.add_device("phone", "control");

    // 1. Halt a trash request and approve it; the server stops at the failpoint.
    let (server, rx) = start(&world, Some(failpoint));
    let (rx, _) = sweeps(rx, 1).await;
    let client = Client {
        http: reqwest::Client::new(),
        url: server.url.clone(),
        token: token.clone(),
    };
    let resp = client
        .http
        .post(format!("{}/api/chat", client.url))
        .bearer_auth(&token)
        .json(&json!({"message": "trash the promo emails from this week"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let halted: Value = resp.json().await.unwrap();
    assert_eq!(halted["status"], "awaiting_approval", "{halted}");
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let conversation = halted["conversation_id"].as_str().unwrap().to_string();
    let row = client.get(&format!("/governance/approvals/{id}")).await;
    let n = row["items"].as_array().unwrap().len();
    assert!(n > 0, "{row}");
    assert_eq!(model.requests.lock().unwrap().len(), 2);

    // The answer may never come back (`after_decision` stops inside the respond route).
    let respond = {
        let (http, url, token) = (client.http.clone(), client.url.clone(), token.clone());
        let id = id.clone();
        tokio::spawn(async move {
            http.post(format!("{url}/governance/approvals/{id}/respond"))
                .bearer_auth(token)
                .json(&json!({"decision": "approve"}))
                .send()
                .await
        })
    };
    let _rx = wait_for_line(rx, format!("failpoint reached: {failpoint}")).await;
    server.kill();
    respond.abort();
    assert_eq!(
        model.requests.lock().unwrap().len(),
        2,
        "the model was not asked again before the crash"
    );
    let moved_at_crash = trashed(&world.maildir);
    match failpoint {
        "after_claim" | "after_decision" => assert_eq!(moved_at_crash, 0),
        _ => assert_eq!(moved_at_crash, n),
    }
    assert_eq!(contents(&world.maildir), before_contents);

    // 2. Restart without the failpoint: recovery and sweeps run.
    let (server, rx) = start(&world, None);
    let client = Client {
        http: reqwest::Client::new(),
        url: server.url.clone(),
        token: token.clone(),
    };
    let expected = match failpoint {
        "after_claim" | "after_side_effect" => "unknown",
        _ => "executed",
    };
    let row = eventually("the approval's execution state", || {
        let client = &client;
        let id = id.clone();
        async move {
            let row = client.get(&format!("/governance/approvals/{id}")).await;
            (row["execution"] == expected).then_some(row)
        }
    })
    .await;
    assert_eq!(row["status"], "approved", "{row}");
    // The run continues exactly once; its reply arrives.
    let reply = eventually("the continued run's reply", || {
        let client = &client;
        let conversation = conversation.clone();
        async move {
            let lines = lines(client, &conversation).await;
            let last = lines.last()?["text"].as_str()?.to_string();
            last.starts_with("Finished").then_some(last)
        }
    })
    .await;
    assert_eq!(model.requests.lock().unwrap().len(), 3);
    let all = lines(&client, &conversation).await;
    let told = all
        .iter()
        .filter(|l| l["text"].as_str().unwrap_or_default().contains(TOLD))
        .count();
    if expected == "unknown" {
        assert_eq!(told, 1, "the owner is told once: {all:?}");
        assert_eq!(reply, "Finished (unknown).");
        let row = client.get(&format!("/governance/approvals/{id}")).await;
        assert_eq!(row["execution"], "unknown", "{row}");
        // The card itself says how to check it (the mail plugin's words), not only the chat.
        let message = row["result"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("look in Trash"), "{row}");
        // Its undo says the same: unknown is not "did not run".
        let undo = client
            .http
            .post(format!("{}/governance/approvals/{id}/undo", client.url))
            .bearer_auth(&client.token)
            .send()
            .await
            .unwrap();
        assert_eq!(undo.status(), reqwest::StatusCode::CONFLICT);
        let body: Value = undo.json().await.unwrap();
        let said = body.to_string();
        assert!(said.contains("not known whether"), "{said}");
        assert!(said.contains("look in Trash"), "{said}");
    } else {
        assert_eq!(told, 0, "{all:?}");
        assert_ne!(reply, "Finished (unknown).");
    }
    let replies = all
        .iter()
        .filter(|l| {
            l["text"]
                .as_str()
                .unwrap_or_default()
                .starts_with("Finished")
        })
        .count();
    assert_eq!(replies, 1, "{all:?}");

    // Side effects: moved at most once, nothing lost or duplicated.
    let moved = if failpoint == "after_claim" { 0 } else { n };
    let check_files = || {
        assert_eq!(trashed(&world.maildir), moved);
        assert_eq!(contents(&world.maildir), before_contents);
        if moved == 0 {
            assert_eq!(snapshot(&world.maildir), before, "nothing moved");
        }
    };
    check_files();
    let audit = client.get(&format!("/api/audit?approval_id={id}")).await;
    let executions = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "execution")
        .count();
    // The audit is written after the side effect: a crash before it leaves none of the call's
    // own, and the takeover that marks it unknown writes one entry saying so.
    let audited = match failpoint {
        "after_claim" | "after_side_effect" => 1,
        _ => n,
    };
    assert_eq!(executions, audited, "{audit}");
    let _ = sweeps(rx, 2).await;
    server.kill();

    // 3. Restart once more: nothing is recovered, retried or resumed again.
    let (server, rx) = start(&world, None);
    let (_rx, seen) = sweeps(rx, 2).await;
    assert!(
        !seen.iter().any(|l| l.contains("continuing a resume")),
        "{seen:?}"
    );
    let client = Client {
        http: reqwest::Client::new(),
        url: server.url.clone(),
        token,
    };
    let row = client.get(&format!("/governance/approvals/{id}")).await;
    assert_eq!(row["execution"], expected, "{row}");
    assert!(row["resume_error"].is_null(), "{row}");
    assert_eq!(model.requests.lock().unwrap().len(), 3);
    assert_eq!(lines(&client, &conversation).await.len(), all.len());
    check_files();
    drop(server);
}

async fn on_sqlite(failpoint: &str) {
    let model = ModelServer::start(SCRIPT).await;
    let world = World::new(&model.base_url);
    crash_at(failpoint, world, model).await;
}

// Needs a process: kill -9, at a failpoint read from the process's environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_after_claim_is_unknown_nothing_moved_and_never_retried() {
    on_sqlite("after_claim").await;
}

// Needs a process: kill -9, at a failpoint read from the process's environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_after_side_effect_is_unknown_and_moved_exactly_once() {
    on_sqlite("after_side_effect").await;
}

// Needs a process: kill -9, at a failpoint read from the process's environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_after_outcome_continues_once_from_the_ledger() {
    on_sqlite("after_outcome").await;
}

// Needs a process: kill -9, at a failpoint read from the process's environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_after_decision_is_resumed_by_the_sweep_and_executes_once() {
    on_sqlite("after_decision").await;
}

// Needs a process: kill -9, at a failpoint read from the process's environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_after_side_effect_on_postgres() {
    let (url, _database) = iris_store::testing::fresh_postgres_database().await;
    let model = ModelServer::start(SCRIPT).await;
    let mut world = World::new(&model.base_url);
    world.database_url = url;
    crash_at("after_side_effect", world, model).await;
}
