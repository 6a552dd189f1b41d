//! Every decided card ends (docs/liveness.md), on a temp database (SQLite, and PostgreSQL where
//! the fault is a store unit's), a real Maildir and the scripted model on loopback. Faults come
//! from the debug build's failpoints (`IRIS_FAILPOINT_FAIL_ONCE`: a store unit fails once, as a
//! dropped connection would; `IRIS_FAILPOINT`: a crash), which the real `iris` binary reads from
//! its environment, or from the database itself (a row the ledger's rule refuses, a lock held by
//! the test's own session), where the server runs in process (`support::TestApp`):
//!
//! - the outcome unit fails once: retried within the lease, the card ends `executed`, the run
//!   continues once (without a restart; before, the job stayed `running` under the server's
//!   own lease for ever);
//! - the job's end fails once: retried, the reply arrives;
//! - the outcome unit and the job's end each land but lose their answer once: the retry's
//!   missed compare-and-set re-plans from what is stored and the run goes on, no takeover;
//! - the outcome never commits: the job is ended `failed` in a fresh unit, the ledger
//!   `unknown`, the card says why, and the owner's retry continues the run without running the
//!   call again;
//! - an approved call that could not start by its card's expiry plus the grace is not run;
//! - a poison job (the database refuses its claim) ends `failed` and the cards behind it run;
//! - a heartbeat that fails once is retried, so a holder whose side effect outlasts a lease
//!   keeps its job: a second server does not take it over and call it `unknown` (two real
//!   servers on PostgreSQL; before, one failed heartbeat stopped renewal for good);
//! - a chat turn that lands while a resume runs keeps its messages (the transcript is appended
//!   to, never overwritten), and a resume after other turns tells the model which card, which
//!   decision and which request its result belongs to;
//! - with the mailbox lock held elsewhere (a PostgreSQL session of the test's own), the card's
//!   undo answers 409 "busy" and writes nothing, then runs once the lock is free; an approved
//!   call that never gets the lock ends `failed` ("not run"), not `unknown`.
//!
//! The side effects are counted in the Maildir: nothing runs twice, nothing is lost. One module
//! per section of docs/liveness.md: [`every_card_ends`] (with its fenced side effects),
//! [`one_poison_job`], [`nothing_said_is_lost`] and [`busy_locks`]. This module holds what they
//! share: the demo world, a server with fast sweeps and short leases (a process, or in process),
//! asking for a card and approving it, and reading the run's replies.

mod busy_locks;
mod every_card_ends;
mod nothing_said_is_lost;
mod one_poison_job;

use crate::support;

use std::sync::mpsc::Receiver;

use serde_json::json;
use support::app::Build;
use support::{eventually, Client, Iris, ModelServer, TestApp, World};

const SCRIPT: &str = support::TRASH_SCRIPT;

/// Sweeps every second and leases of two seconds, so a job left behind is taken over soon.
const FAST: [(&str, &str); 2] = [("IRIS_SWEEP_SECS", "1"), ("IRIS_LEASE_SECS", "2")];

/// `FAST`'s value of the setting `name`, for a server built in process (one source for both).
fn fast<T: std::str::FromStr>(name: &str) -> T {
    FAST.iter()
        .find(|(setting, _)| *setting == name)
        .and_then(|(_, value)| value.parse().ok())
        .expect("FAST holds the setting as a number")
}

/// A world with the demo mailbox and the script's model, on SQLite or on a fresh PostgreSQL
/// database (kept alive by the returned guard).
async fn scene(
    postgres: bool,
) -> (
    World,
    ModelServer,
    Option<iris_store::testing::DropDatabase>,
) {
    let model = ModelServer::start(SCRIPT).await;
    let mut world = World::new(&model.base_url);
    let mut guard = None;
    if postgres {
        let (url, database) = iris_store::testing::fresh_postgres_database().await;
        world.database_url = url;
        guard = Some(database);
    }
    iris_email::demo::write_demo_maildir(&world.maildir, chrono::Utc::now()).unwrap();
    (world, model, guard)
}

/// The server in process for the tests that need no process: the demo mailbox and the
/// script's model, its background work running with `FAST`'s sweeps and leases, on SQLite or on
/// a fresh PostgreSQL database (kept alive by the returned guard), with the settings
/// `configure` adds.
async fn app(
    postgres: bool,
    configure: fn(Build) -> Build,
) -> (
    TestApp,
    ModelServer,
    Option<iris_store::testing::DropDatabase>,
) {
    let model = ModelServer::start(SCRIPT).await;
    let mut build = TestApp::with_model(&model)
        .mailbox()
        .sweep_secs(fast("IRIS_SWEEP_SECS"))
        .lease_secs(fast("IRIS_LEASE_SECS"))
        .background();
    let mut guard = None;
    if postgres {
        let (url, database) = iris_store::testing::fresh_postgres_database().await;
        build = build.database_url(&url);
        guard = Some(database);
    }
    (configure(build).start().await, model, guard)
}

/// Starts the server with `FAST` and `extra`.
fn start(world: &World, extra: &[(&str, &str)]) -> (Iris, Receiver<String>) {
    let mut env = FAST.to_vec();
    env.extend_from_slice(extra);
    world.start_watched(&env)
}

/// Asks for the week's promotions to be trashed: the card's approval id, its conversation and
/// how many messages it names.
async fn ask(client: &Client, token: &str) -> (String, String, usize) {
    let (status, halted) = client
        .post(
            "/api/chat",
            Some(token),
            json!({"message": "trash the promo emails from this week"}),
        )
        .await;
    assert!(status.is_success(), "{status}: {halted}");
    assert_eq!(halted["status"], "awaiting_approval", "{halted}");
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let conversation = halted["conversation_id"].as_str().unwrap().to_string();
    let row = client
        .get(&format!("/governance/approvals/{id}"), token)
        .await;
    let n = row["items"].as_array().unwrap().len();
    assert!(n > 0, "{row}");
    (id, conversation, n)
}

async fn approve(client: &Client, token: &str, id: &str) {
    let (status, body) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(token),
            json!({"decision": "approve"}),
        )
        .await;
    assert!(status.is_success(), "{status}: {body}");
}

/// The conversation's replies that start with "Finished".
async fn finished_replies(client: &Client, token: &str, conversation: &str) -> Vec<String> {
    let c = client
        .get(&format!("/api/conversations/{conversation}"), token)
        .await;
    c["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["text"].as_str())
        .filter(|t| t.starts_with("Finished"))
        .map(str::to_string)
        .collect()
}

/// The conversation's "Finished" replies, once there is one (30 s at most).
async fn continued_replies(client: &Client, token: &str, conversation: &str) -> Vec<String> {
    eventually("the continued run's reply", || async move {
        let replies = finished_replies(client, token, conversation).await;
        (!replies.is_empty()).then_some(replies)
    })
    .await
}
