//! Every decided card ends (docs/liveness.md), with the real `iris` binary on a temp database
//! (SQLite, and PostgreSQL where the fault is a store unit's), a real Maildir and the scripted
//! model on loopback. Faults come from the debug build's failpoints (`IRIS_FAILPOINT_FAIL_ONCE`:
//! a store unit fails once, as a dropped connection would; `IRIS_FAILPOINT`: a crash) or from
//! the database itself (a row the ledger's rule refuses):
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
//! The side effects are counted in the Maildir: nothing runs twice, nothing is lost.

mod support;

use std::sync::mpsc::Receiver;

use iris_core::agent::protocol_errors;
use serde_json::{json, Value};
use support::{
    contents, eventually, snapshot, trashed, wait_for_line, Client, Iris, ModelServer, World,
};

const SCRIPT: &str = support::TRASH_SCRIPT;

/// Sweeps every second and leases of two seconds, so a job left behind is taken over soon.
const FAST: [(&str, &str); 2] = [("IRIS_SWEEP_SECS", "1"), ("IRIS_LEASE_SECS", "2")];

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outcome_unit_that_fails_once_is_retried_and_the_card_ends() {
    a_unit_that_fails_once_is_retried("record_outcome", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outcome_unit_that_fails_once_is_retried_and_the_card_ends_on_postgres() {
    a_unit_that_fails_once_is_retried("record_outcome", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_end_that_fails_once_is_retried_and_the_reply_arrives() {
    a_unit_that_fails_once_is_retried("finish_job", false).await;
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_whose_answer_was_lost_re_plans_and_the_run_goes_on() {
    a_unit_whose_answer_was_lost_is_not_taken_for_a_lost_lease(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_whose_answer_was_lost_re_plans_and_the_run_goes_on_on_postgres() {
    a_unit_whose_answer_was_lost_is_not_taken_for_a_lost_lease(true).await;
}

/// The outcome never commits (it fails more often than the retries within a lease): the job
/// is ended `failed` in a fresh unit, the ledger `unknown` (the side effect had run), the card
/// says why; the owner's retry continues the run from `unknown` and never moves mail again.
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

/// Rewrites the pinned canonical arguments of approval `id` behind the server's back (the rule
/// that forbids it dropped first), so the ledger's rule refuses every claim of its call: a
/// poison job, like a row an older canonicaliser wrote.
async fn poison(database_url: &str, id: &str) {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(database_url).await.unwrap();
    let drop_rule = if database_url.starts_with("postgres") {
        "DROP TRIGGER approvals_immutable_args_canonical ON approvals"
    } else {
        "DROP TRIGGER approvals_immutable_args_canonical"
    };
    sqlx::query(drop_rule).execute(&pool).await.unwrap();
    sqlx::query("UPDATE approvals SET args_canonical = '{\"ids\":[\"not-this\"]}' WHERE id = $1")
        .bind(id)
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
}

/// A job whose claim the database refuses ends `failed` with the reason, its call never run,
/// and the card behind it runs (before, every claim on every server failed on it).
async fn a_poison_job_does_not_hold_up_the_others(postgres: bool) {
    let (world, _model, _db) = scene(postgres).await;
    let token = world.add_device("phone", "control");
    let (server, _rx) = start(&world, &[]);
    let client = server.client();
    let (first, _, _) = ask(&client, &token).await;
    let (second, _, n) = ask(&client, &token).await;
    poison(&world.database_url, &first).await;
    approve(&client, &token, &first).await;
    approve(&client, &token, &second).await;
    let row = client.wait_execution(&first, &token, "failed").await;
    let message = row["result"]["message"].as_str().unwrap();
    assert!(message.starts_with("not run:"), "{row}");
    assert!(message.contains("refused"), "{row}");
    assert!(row["resume_error"].is_string(), "{row}");
    let behind = client.wait_execution(&second, &token, "executed").await;
    assert_eq!(behind["status"], "approved");
    assert_eq!(
        trashed(&world.maildir),
        n,
        "only the second card's call ran"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_job_ends_failed_and_the_card_behind_it_runs() {
    a_poison_job_does_not_hold_up_the_others(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_job_ends_failed_and_the_card_behind_it_runs_on_postgres() {
    a_poison_job_does_not_hold_up_the_others(true).await;
}

/// Two servers on PostgreSQL. A claims the approved call; its first heartbeat fails, and it
/// holds before the side effect (`IRIS_FAILPOINT_PAUSE`) for three leases. B runs all along and
/// takes over any lapsed lease. A's heartbeat is retried, so its lease never lapses: B never
/// takes the job over, and when A goes on the call runs once and the card ends `executed`.
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

/// The stored transcript of `conversation`, read from the world's database.
async fn stored_transcript(world: &World, conversation: &str) -> Vec<iris_core::model::Message> {
    use iris_core::ports::ApprovalStore;
    let store = iris_store::Store::connect(&world.database_url)
        .await
        .expect("the world's database opens");
    store
        .transcript(conversation)
        .await
        .expect("the transcript reads")
        .messages
}

/// Says `message` in `conversation`; the turn's answer.
async fn say(client: &Client, token: &str, conversation: &str, message: &str) -> serde_json::Value {
    let (status, body) = client
        .post(
            "/api/chat",
            Some(token),
            json!({"message": message, "conversation_id": conversation}),
        )
        .await;
    assert!(status.is_success(), "{status}: {body}");
    body
}

/// A chat turn that lands while a card's resume is running (the resume paused before its side
/// effect, after reading the transcript) keeps its messages: the resume's commit finds the
/// transcript moved and appends after the turn instead of overwriting it (before, the owner's
/// "hello there" and its answer vanished from the transcript the model reads).
async fn a_turn_during_a_resume_is_kept(postgres: bool) {
    use iris_core::model::Message;
    let (world, _model, _db) = scene(postgres).await;
    let token = world.add_device("phone", "control");
    let release = world.dir.path().join("release");
    let release_text = release.display().to_string();
    let (server, rx) = start(
        &world,
        &[
            ("IRIS_FAILPOINT_PAUSE", "before_side_effect"),
            ("IRIS_FAILPOINT_RELEASE", &release_text),
        ],
    );
    let client = server.client();
    let (id, conversation, n) = ask(&client, &token).await;
    approve(&client, &token, &id).await;
    let _rx = wait_for_line(rx, "failpoint paused: before_side_effect".to_string()).await;
    let turn = say(&client, &token, &conversation, "hello there").await;
    assert_eq!(turn["status"], "done", "{turn}");
    std::fs::write(&release, "go").unwrap();
    client.wait_execution(&id, &token, "executed").await;
    eventually("the continued run's reply", || {
        let (client, token, conversation) = (&client, &token, &conversation);
        async move {
            (!finished_replies(client, token, conversation)
                .await
                .is_empty())
            .then_some(())
        }
    })
    .await;
    assert_eq!(trashed(&world.maildir), n);

    let transcript = stored_transcript(&world, &conversation).await;
    assert_eq!(
        protocol_errors(&transcript),
        Vec::<String>::new(),
        "{transcript:#?}"
    );
    let said = |text: &str| {
        transcript
            .iter()
            .filter(|m| matches!(m, Message::User { content } if content == text))
            .count()
    };
    assert_eq!(
        said("hello there"),
        1,
        "the turn's message was lost: {transcript:#?}"
    );
    assert_eq!(
        said("trash the promo emails from this week"),
        1,
        "{transcript:#?}"
    );
    let replies: Vec<&str> = transcript
        .iter()
        .filter_map(|m| match m {
            Message::Assistant {
                content: Some(c),
                tool_calls,
            } if tool_calls.is_empty() => Some(c.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(replies, vec!["?", "Finished."], "{transcript:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_during_a_resume_is_kept_in_the_transcript() {
    a_turn_during_a_resume_is_kept(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_during_a_resume_is_kept_in_the_transcript_on_postgres() {
    a_turn_during_a_resume_is_kept(true).await;
}

/// When the owner said more while a card waited, the resumed model is told which card was
/// answered, how, and for which request, so it continues that request (before: "The owner
/// answered the paused call call_…; its result is above").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_after_other_turns_names_the_card_the_decision_and_the_request() {
    let (world, model, _db) = scene(false).await;
    let token = world.add_device("phone", "control");
    let (server, _rx) = start(&world, &[]);
    let client = server.client();
    let (id, conversation, _) = ask(&client, &token).await;
    let row = client
        .get(&format!("/governance/approvals/{id}"), &token)
        .await;
    let title = row["card"]["title"].as_str().unwrap().to_string();
    say(&client, &token, &conversation, "hello there").await;
    let asked_before = model.received();
    approve(&client, &token, &id).await;
    client.wait_execution(&id, &token, "executed").await;
    // The continued run's request to the model carries the notice.
    let notice = eventually("the continued run's request", || {
        let model = &model;
        async move {
            let requests = model.requests.lock().unwrap().clone();
            let last = requests.get(asked_before..)?.last()?.clone();
            let notice = last["messages"]
                .as_array()?
                .iter()
                .filter(|m| m["role"] == "system")
                .filter_map(|m| m["content"].as_str())
                .find(|t| t.starts_with("The owner"))
                .map(str::to_string);
            Some(notice.unwrap_or_else(|| panic!("no notice of the answer: {last}")))
        }
    })
    .await;
    assert!(notice.contains("approved"), "{notice}");
    assert!(notice.contains(&title), "{notice}");
    assert!(notice.contains("trash_email"), "{notice}");
    assert!(
        notice.contains("trash the promo emails from this week"),
        "{notice}"
    );
    let transcript = stored_transcript(&world, &conversation).await;
    assert_eq!(
        protocol_errors(&transcript),
        Vec::<String>::new(),
        "{transcript:#?}"
    );
}

/// Takes the mailbox lock on a PostgreSQL session of the test's own, as another server's sync
/// would hold it; closing the connection releases it.
async fn hold_mail_lock(world: &World) -> sqlx::PgConnection {
    use sqlx::Connection;
    let mut holder = sqlx::PgConnection::connect(&world.database_url)
        .await
        .unwrap();
    sqlx::query("SELECT pg_advisory_lock(hashtext('iris:mail-changes'))")
        .execute(&mut holder)
        .await
        .unwrap();
    holder
}

/// The card's undo takes the mailbox lock before it claims anything (docs/liveness.md "busy
/// locks"): with the lock held elsewhere (here by the test's own PostgreSQL session, as another
/// server's sync would hold it), the undo answers 409 "busy" and writes nothing; once the lock is
/// free the same undo runs and restores the mail. Before, the undo claimed first, waited for
/// the lock under its deadline and was recorded `unknown` although nothing ran, and could never
/// be tried again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undo_under_a_busy_mail_lock_is_refused_and_can_be_tried_again() {
    let (world, _model, _db) = scene(true).await;
    let token = world.add_device("phone", "control");
    let (server, _rx) = start(&world, &[]);
    let client = server.client();
    let (id, _conversation, n) = ask(&client, &token).await;
    approve(&client, &token, &id).await;
    client.wait_execution(&id, &token, "executed").await;
    assert_eq!(trashed(&world.maildir), n);

    let holder = hold_mail_lock(&world).await;
    let undo = format!("/governance/approvals/{id}/undo");
    let (status, body) = client.post(&undo, Some(&token), json!({})).await;
    assert_eq!(status, reqwest::StatusCode::CONFLICT, "{body}");
    assert!(body.to_string().contains("busy"), "{body}");
    let row = client
        .get(&format!("/governance/approvals/{id}"), &token)
        .await;
    assert!(
        row["undo"].is_null(),
        "a refused undo wrote its claim: {row}"
    );
    assert_eq!(trashed(&world.maildir), n);

    sqlx::Connection::close(holder).await.unwrap();
    let (status, body) = client.post(&undo, Some(&token), json!({})).await;
    assert!(status.is_success(), "{status}: {body}");
    let row = client
        .get(&format!("/governance/approvals/{id}"), &token)
        .await;
    assert_eq!(row["undo"]["state"], "done", "{row}");
    assert_eq!(trashed(&world.maildir), 0);
}

/// An approved call whose mailbox lock stays taken past the execute deadline never started, so
/// it ends `failed` saying so, not `unknown` (docs/liveness.md "busy locks": the deadline covers
/// the side effect only), and no mail moved. Before, the wait for the lock ran inside the
/// deadline and the card ended `unknown`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_that_never_got_its_lock_is_failed_not_unknown() {
    let (world, _model, _db) = scene(true).await;
    let token = world.add_device("phone", "control");
    let (server, _rx) = start(&world, &[("IRIS_EXECUTE_TIMEOUT_SECS", "2")]);
    let client = server.client();
    let (id, _conversation, _) = ask(&client, &token).await;
    let holder = hold_mail_lock(&world).await;
    approve(&client, &token, &id).await;
    let row = client.wait_execution(&id, &token, "failed").await;
    let message = row["result"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("not run:"), "{row}");
    assert!(message.contains("busy"), "{row}");
    assert_eq!(trashed(&world.maildir), 0);
    sqlx::Connection::close(holder).await.unwrap();
}
