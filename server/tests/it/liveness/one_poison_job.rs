//! One poison job (docs/liveness.md "One poison job"): a job whose claim the database refuses
//! ends `failed` with the reason, its call never run, and the cards behind it run. In process
//! (`support::TestApp`): the claim is refused by the database, not by a failpoint.

use crate::support;

use support::trashed;

use super::{app, approve, ask};

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
    let (server, _model, _db) = app(postgres, |build| build).await;
    let token = server.token.clone();
    let client = server.client().await;
    let (first, _, _) = ask(&client, &token).await;
    let (second, _, n) = ask(&client, &token).await;
    poison(&server.state.settings.database_url, &first).await;
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
        trashed(&server.maildir()),
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
