//! Busy locks (docs/liveness.md "Busy locks"): with the mailbox lock held elsewhere (a
//! PostgreSQL session of the test's own), the card's undo answers 409 "busy" and writes nothing,
//! then runs once the lock is free; an approved call that never gets the lock ends `failed`
//! ("not run"), not `unknown`. The lock is held by a connection of the test's own, not by
//! another process, so the server runs in process (`support::TestApp`).

use crate::support;

use serde_json::json;
use support::trashed;

use super::{app, approve, ask};

/// Takes the mailbox lock on a PostgreSQL session of the test's own, as another server's sync
/// would hold it; closing the connection releases it.
async fn hold_mail_lock(database_url: &str) -> sqlx::PgConnection {
    use sqlx::Connection;
    let mut holder = sqlx::PgConnection::connect(database_url).await.unwrap();
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
    let (server, _model, _db) = app(true, |build| build).await;
    let token = server.token.clone();
    let client = server.client().await;
    let maildir = server.maildir();
    let (id, _conversation, n) = ask(&client, &token).await;
    approve(&client, &token, &id).await;
    client.wait_execution(&id, &token, "executed").await;
    assert_eq!(trashed(&maildir), n);

    let holder = hold_mail_lock(&server.state.settings.database_url).await;
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
    assert_eq!(trashed(&maildir), n);

    sqlx::Connection::close(holder).await.unwrap();
    let (status, body) = client.post(&undo, Some(&token), json!({})).await;
    assert!(status.is_success(), "{status}: {body}");
    let row = client
        .get(&format!("/governance/approvals/{id}"), &token)
        .await;
    assert_eq!(row["undo"]["state"], "done", "{row}");
    assert_eq!(trashed(&maildir), 0);
}

/// An approved call whose mailbox lock stays taken past the execute deadline never started, so
/// it ends `failed` saying so, not `unknown` (docs/liveness.md "busy locks": the deadline covers
/// the side effect only), and no mail moved. Before, the wait for the lock ran inside the
/// deadline and the card ended `unknown`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_that_never_got_its_lock_is_failed_not_unknown() {
    let (server, _model, _db) = app(true, |build| build.execute_timeout_secs(2)).await;
    let token = server.token.clone();
    let client = server.client().await;
    let (id, _conversation, _) = ask(&client, &token).await;
    let holder = hold_mail_lock(&server.state.settings.database_url).await;
    approve(&client, &token, &id).await;
    let row = client.wait_execution(&id, &token, "failed").await;
    let message = row["result"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("not run:"), "{row}");
    assert!(message.contains("busy"), "{row}");
    assert_eq!(trashed(&server.maildir()), 0);
    sqlx::Connection::close(holder).await.unwrap();
}
