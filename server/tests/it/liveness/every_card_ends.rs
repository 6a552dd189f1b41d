//! Every decided card ends (docs/liveness.md "Every decided card ends", "Fenced side effects"):
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
//! - a heartbeat that fails once is retried, so a holder whose side effect outlasts a lease
//!   keeps its job: a second server does not take it over and call it `unknown` (two real
//!   servers on PostgreSQL; before, one failed heartbeat stopped renewal for good);
//! - the owner is told once that a call's outcome is unknown, with one audit entry.

use crate::support;

use serde_json::{json, Value};
use support::{contents, eventually, snapshot, trashed, wait_for_line, ModelServer, World};

use super::{approve, ask, continued_replies, finished_replies, scene, start, FAST};

/// One store unit fails once on the way; the card still ends, without a restart, and the run
/// continues exactly once.
async fn a_unit_that_fails_once_is_retried(unit: &str, postgres: bool) {
    let (world, model, _db) = scene(postgres).await;
    let mut env = FAST.to_vec();
    env.push(("IRIS_FAILPOINT_FAIL_ONCE", unit));
    the_run_goes_on_once(
        &world,
        &model,
        &env,
        &[format!("failpoint failed once: {unit}")],
    )
    .await;
}

/// Starts the server with `env`, asks for a card and approves it, waits for each of `lines` on
/// the server's stderr, in order, and checks the card ended `executed` with its job, the run
/// continued once and the mail moved once.
async fn the_run_goes_on_once(
    world: &World,
    model: &ModelServer,
    env: &[(&str, &str)],
    lines: &[String],
) {
    let before = contents(&world.maildir);
    let token = world.add_device("phone", "control");
    let (server, mut rx) = world.start_watched(env);
    let client = server.client();
    let (id, conversation, n) = ask(&client, &token).await;
    approve(&client, &token, &id).await;
    for line in lines {
        rx = wait_for_line(rx, line.clone()).await;
    }
    let replies = continued_replies(&client, &token, &conversation).await;
    assert_eq!(replies, ["Finished."]);
    let row = client.wait_execution(&id, &token, "executed").await;
    assert!(row["resume_error"].is_null(), "{row}");
    assert!(row["running"].is_null(), "the job ended: {row}");
    assert_eq!(trashed(&world.maildir), n, "moved once");
    assert_eq!(
        contents(&world.maildir),
        before,
        "nothing lost or duplicated"
    );
    assert_eq!(model.requests.lock().unwrap().len(), 3);
}

// Needs a process: IRIS_FAILPOINT_FAIL_ONCE is read once from the process's environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outcome_unit_that_fails_once_is_retried_and_the_card_ends() {
    a_unit_that_fails_once_is_retried("record_outcome", false).await;
}

// Needs a process: IRIS_FAILPOINT_FAIL_ONCE is read once from the process's environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outcome_unit_that_fails_once_is_retried_and_the_card_ends_on_postgres() {
    a_unit_that_fails_once_is_retried("record_outcome", true).await;
}

// Needs a process: IRIS_FAILPOINT_FAIL_ONCE is read once from the process's environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_end_that_fails_once_is_retried_and_the_reply_arrives() {
    a_unit_that_fails_once_is_retried("finish_job", false).await;
}

// Needs a process: IRIS_FAILPOINT_FAIL_ONCE is read once from the process's environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_end_that_fails_once_is_retried_and_the_reply_arrives_on_postgres() {
    a_unit_that_fails_once_is_retried("finish_job", true).await;
}

/// The outcome unit and then the job's end each commit and lose their answer once (the
/// connection drops between the commit and its reply). The retry's compare-and-set misses (the
/// first try landed), re-plans from what is stored, finds its own outcome and its own end, and
/// the run goes on at once: the reply arrives within a lease of two minutes, with no takeover
/// (before, the missed compare-and-set read as a lost lease and the job sat `running` under the
/// server's own lease until it lapsed).
async fn a_unit_whose_answer_was_lost_is_not_taken_for_a_lost_lease(postgres: bool) {
    let (world, model, _db) = scene(postgres).await;
    let env = [
        ("IRIS_SWEEP_SECS", "1"),
        ("IRIS_LEASE_SECS", "120"),
        ("IRIS_FAILPOINT_LOSE_ONCE", "record_outcome,finish_job"),
    ];
    let lines = ["record_outcome", "finish_job"]
        .map(|unit| format!("failpoint lost its answer once: {unit}"));
    the_run_goes_on_once(&world, &model, &env, &lines).await;
}

// Needs a process: IRIS_FAILPOINT_LOSE_ONCE is read once from the process's environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_whose_answer_was_lost_re_plans_and_the_run_goes_on() {
    a_unit_whose_answer_was_lost_is_not_taken_for_a_lost_lease(false).await;
}

// Needs a process: IRIS_FAILPOINT_LOSE_ONCE is read once from the process's environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_whose_answer_was_lost_re_plans_and_the_run_goes_on_on_postgres() {
    a_unit_whose_answer_was_lost_is_not_taken_for_a_lost_lease(true).await;
}

/// The outcome never commits (it fails more often than the retries within a lease): the job
/// is ended `failed` in a fresh unit, the ledger `unknown` (the side effect had run), the card
/// says why; the owner's retry continues the run from `unknown` and never moves mail again.
// Needs a process: IRIS_FAILPOINT_FAIL_ONCE is read once from the process's environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outcome_that_never_commits_ends_the_job_failed_and_unknown() {
    let (world, model, _db) = scene(false).await;
    let before = contents(&world.maildir);
    let token = world.add_device("phone", "control");
    let failures = vec!["record_outcome"; 40].join(",");
    let (server, _rx) = start(&world, &[("IRIS_FAILPOINT_FAIL_ONCE", &failures)]);
    let client = server.client();
    let (id, conversation, n) = ask(&client, &token).await;
    approve(&client, &token, &id).await;
    let row = eventually("the job ended with its reason", || {
        let (client, token, id) = (&client, &token, &id);
        async move {
            let row = client
                .get(&format!("/governance/approvals/{id}"), token)
                .await;
            row["resume_error"].is_string().then_some(row)
        }
    })
    .await;
    assert_eq!(row["execution"], "unknown", "{row}");
    let reason = row["resume_error"].as_str().unwrap();
    assert!(reason.contains("storage failed"), "{reason}");
    assert!(reason.contains("will not be run again"), "{reason}");
    assert_eq!(trashed(&world.maildir), n, "the side effect ran once");

    // The owner retries: the run continues from `unknown`; nothing runs again.
    let (status, body) = client
        .post(
            &format!("/governance/approvals/{id}/resume"),
            Some(&token),
            json!({}),
        )
        .await;
    assert!(status.is_success(), "{status}: {body}");
    let replies = finished_replies(&client, &token, &conversation).await;
    assert_eq!(replies, ["Finished (unknown)."]);
    assert_eq!(trashed(&world.maildir), n);
    assert_eq!(contents(&world.maildir), before);
    assert_eq!(model.requests.lock().unwrap().len(), 3);
    drop(server);
}

/// An approved call whose job could not start by its card's expiry plus the grace
/// (`IRIS_EXECUTE_GRACE_SECS`) is never run: the server stopped right after the decision and
/// came back after the card's expiry.
// Needs a process: kill -9, at a failpoint read from the process's environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_that_could_not_start_in_time_is_not_run() {
    let (world, model, _db) = scene(false).await;
    let model = &model;
    let before = snapshot(&world.maildir);
    let token = world.add_device("phone", "control");
    let ttl = [
        ("IRIS_DESTRUCTIVE_TTL_SECS", "4"),
        ("IRIS_EXECUTE_GRACE_SECS", "0"),
    ];
    let mut env = ttl.to_vec();
    env.push(("IRIS_FAILPOINT", "after_decision"));
    let (server, rx) = start(&world, &env);
    let client = server.client();
    let (id, conversation, _) = ask(&client, &token).await;
    let row = client
        .get(&format!("/governance/approvals/{id}"), &token)
        .await;
    let expires_at: chrono::DateTime<chrono::Utc> =
        row["expires_at"].as_str().unwrap().parse().unwrap();
    let respond = {
        let (http, url, token, id) = (
            client.http.clone(),
            client.url.clone(),
            token.clone(),
            id.clone(),
        );
        tokio::spawn(async move {
            http.post(format!("{url}/governance/approvals/{id}/respond"))
                .bearer_auth(token)
                .json(&json!({"decision": "approve"}))
                .send()
                .await
        })
    };
    let _rx = wait_for_line(rx, "failpoint reached: after_decision".to_string()).await;
    server.kill();
    respond.abort();
    // The restart comes after the start-by instant (expiry + 0 s): a deadline to wait for, not
    // a synchronisation.
    let wait = (expires_at - chrono::Utc::now())
        .to_std()
        .unwrap_or_default();
    tokio::time::sleep(wait + std::time::Duration::from_millis(200)).await;

    let (server, _rx) = start(&world, &ttl);
    let client = server.client();
    let row = client.wait_execution(&id, &token, "failed").await;
    assert_eq!(row["status"], "approved", "{row}");
    let message = row["result"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("not run: it could not start before"),
        "{row}"
    );
    assert_eq!(snapshot(&world.maildir), before, "nothing moved");
    // The chat says so in IRIS's own words, and the run continues once from "not run".
    eventually("the chat saying the call was not run", || {
        let (client, token, conversation) = (&client, &token, &conversation);
        async move {
            let c = client
                .get(&format!("/api/conversations/{conversation}"), token)
                .await;
            let lines = c["lines"].as_array().unwrap().clone();
            let told = lines.iter().any(|l| {
                l["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("could not start before"))
            });
            (told && model.requests.lock().unwrap().len() == 3).then_some(())
        }
    })
    .await;
}

/// Two servers on PostgreSQL. A claims the approved call; its first heartbeat fails, and it
/// holds before the side effect (`IRIS_FAILPOINT_PAUSE`) for three leases. B runs all along and
/// takes over any lapsed lease. A's heartbeat is retried, so its lease never lapses: B never
/// takes the job over, and when A goes on the call runs once and the card ends `executed`.
// Needs a process: several servers on one database, one paused at a failpoint, and the CLI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heartbeat_that_fails_once_is_retried_and_the_holder_keeps_its_job() {
    let (world, model, _db) = scene(true).await;
    let before = contents(&world.maildir);
    let token = world.add_device("phone", "control");
    let release = world.dir.path().join("release");
    let release_text = release.display().to_string();
    let (a, rx) = start(
        &world,
        &[
            ("IRIS_FAILPOINT_FAIL_ONCE", "heartbeat"),
            ("IRIS_FAILPOINT_PAUSE", "before_side_effect"),
            ("IRIS_FAILPOINT_RELEASE", &release_text),
        ],
    );
    let client = a.client();
    let (id, conversation, n) = ask(&client, &token).await;
    approve(&client, &token, &id).await;
    let rx = wait_for_line(rx, "failpoint paused: before_side_effect".to_string()).await;
    let _rx = wait_for_line(rx, "failpoint failed once: heartbeat".to_string()).await;
    let (b, _b_rx) = start(&world, &[]);
    let b_client = b.client();
    // Three leases (2 s each) with A holding: B sweeps every second and would take a lapsed
    // lease over, marking the call `unknown`.
    let watch_until = std::time::Instant::now() + std::time::Duration::from_secs(6);
    let mut holder = None;
    while std::time::Instant::now() < watch_until {
        let row = b_client
            .get(&format!("/governance/approvals/{id}"), &token)
            .await;
        assert_eq!(row["execution"], "executing", "A kept its job: {row}");
        // Every surface can say who runs it and since when: A, all along.
        let running = &row["running"];
        let name = running["holder"]
            .as_str()
            .expect("the job's holder")
            .to_string();
        assert!(name.starts_with("iris@"), "{row}");
        assert!(
            running["since"].is_string() && running["lease_until"].is_string(),
            "{row}"
        );
        assert_eq!(holder.get_or_insert_with(|| name.clone()), &name, "{row}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let shown = world
        .command(&["approvals", "show", &id])
        .env("IRIS_URL", &b.url)
        .env("IRIS_TOKEN", &token)
        .output()
        .unwrap();
    assert!(
        shown.status.success(),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains(&format!("Running:   Running on {} since ", holder.unwrap())),
        "{shown}"
    );
    std::fs::write(&release, "go").unwrap();
    let row = b_client.wait_execution(&id, &token, "executed").await;
    assert!(row["resume_error"].is_null(), "{row}");
    let replies = continued_replies(&client, &token, &conversation).await;
    assert_eq!(replies, ["Finished."]);
    assert_eq!(trashed(&world.maildir), n);
    assert_eq!(contents(&world.maildir), before);
    assert_eq!(model.requests.lock().unwrap().len(), 3);
    drop(b);
    drop(a);
}

/// The owner is told once that a call's outcome is unknown, with one audit entry, in the commit
/// that makes it unknown: the server is killed after the claim, the taker finds `executing`
/// while the model is down (the run's end fails and is retried by the owner), and the retry
/// says nothing more (before, every resume of the run posted the notice again).
// Needs a process: kill -9, at a failpoint read from the process's environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_outcome_is_told_once_with_its_audit_entry() {
    let (world, model, _db) = scene(false).await;
    let token = world.add_device("phone", "control");
    let (server, rx) = start(
        &world,
        &[
            ("IRIS_FAILPOINT", "after_claim"),
            ("IRIS_SWEEP_SECS", "3600"),
        ],
    );
    let client = server.client();
    let (id, conversation, _) = ask(&client, &token).await;
    let respond = {
        let (client, token, id) = (server.client(), token.clone(), id.clone());
        tokio::spawn(async move { approve(&client, &token, &id).await })
    };
    let _rx = wait_for_line(rx, "failpoint reached: after_claim".to_string()).await;
    server.kill();
    respond.abort();

    // The taker: the model cannot be reached, so the run's end is a failed resume.
    model.set_down(true);
    let (server, _rx) = start(&world, &[]);
    let client = server.client();
    let row = client.wait_execution(&id, &token, "unknown").await;
    eventually("the failed resume", || {
        let (client, token, id) = (&client, &token, &id);
        async move {
            let row = client
                .get(&format!("/governance/approvals/{id}"), token)
                .await;
            row["resume_error"].is_string().then_some(())
        }
    })
    .await;
    assert_eq!(row["status"], "approved", "{row}");
    model.set_down(false);
    let (status, body) = client
        .post(
            &format!("/governance/approvals/{id}/resume"),
            Some(&token),
            json!({}),
        )
        .await;
    assert!(status.is_success(), "{status}: {body}");
    let lines = client
        .get(&format!("/api/conversations/{conversation}"), &token)
        .await["lines"]
        .as_array()
        .unwrap()
        .clone();
    let told = lines
        .iter()
        .filter(|l| {
            l["text"]
                .as_str()
                .is_some_and(|t| t.contains("It will not be run again"))
        })
        .count();
    assert_eq!(told, 1, "told once: {lines:?}");
    // And how to check it, for mail: Trash.
    assert!(
        lines.iter().any(|l| l["text"]
            .as_str()
            .is_some_and(|t| t.contains("please check it yourself: look in Trash"))),
        "{lines:?}"
    );
    let audit = client
        .get(&format!("/api/audit?approval_id={id}"), &token)
        .await;
    let unknown: Vec<&Value> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "execution" && e["result"]["status"] == "unknown")
        .collect();
    assert_eq!(unknown.len(), 1, "{audit}");
    assert!(
        unknown[0]["result"]["message"]
            .as_str()
            .unwrap()
            .contains("To check: look in Trash"),
        "{audit}"
    );
}
