//! A failed resume over real HTTP: the server in process (`support::TestApp` on a listener, its
//! background work running) on a temp SQLite database and a real Maildir, the model a scripted
//! OpenAI-compatible server that can be taken down. The model is down when the approved run
//! resumes: the pinned trash runs once, the row records the resume error, and nothing retries it by
//! itself. `POST /governance/approvals/{id}/resume` (control only; 404 unknown; 409 pending or
//! nothing to retry) retries it once the model is back: the run completes from the ledger's result
//! and the mail moved exactly once.

use crate::support;

use iris_core::ports::Scope;
use reqwest::StatusCode;
use serde_json::json;
use support::{eventually, trashed, ModelServer, TestApp};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_that_failed_at_the_model_is_retried_on_request_without_running_twice() {
    let model = ModelServer::start(&support::scripts::promo_trash()).await;
    let server = TestApp::with_model(&model)
        .mailbox()
        .background()
        .start()
        .await;
    let control = server.add_device("phone", Scope::Control).await;
    let read = server.add_device("wall", Scope::Read).await;
    let client = server.client().await;
    let maildir = server.maildir();
    let request = json!({"message": "trash the promo emails from this week"});

    let (s, halted) = client
        .post("/api/chat", Some(&control), request.clone())
        .await;
    assert_eq!(s, StatusCode::OK, "{halted}");
    assert_eq!(halted["status"], "awaiting_approval", "{halted}");
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let conversation = halted["conversation_id"].as_str().unwrap().to_string();
    let resume = format!("/governance/approvals/{id}/resume");

    // Pending: nothing to retry. Unknown: 404.
    let (s, body) = client.post(&resume, Some(&control), json!({})).await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("pending"),
        "{body}"
    );
    let (s, _) = client
        .post(
            "/governance/approvals/no-such/resume",
            Some(&control),
            json!({}),
        )
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);

    // The model goes down; the owner approves; the pinned call runs, the continuation fails.
    model.set_down(true);
    let (s, body) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&control),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let row = eventually("the failed resume to be recorded", || {
        let client = &client;
        let (id, t) = (id.clone(), control.clone());
        async move {
            let row = client.get(&format!("/governance/approvals/{id}"), &t).await;
            (!row["resume_error"].is_null()).then_some(row)
        }
    })
    .await;
    assert_eq!(row["execution"], "executed", "{row}");
    let n = row["items"].as_array().unwrap().len();
    assert!(n > 0);
    assert_eq!(trashed(&maildir), n);

    // A read device may not retry; the model still down: the retry fails again, recorded.
    let (s, _) = client.post(&resume, Some(&read), json!({})).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, body) = client.post(&resume, Some(&control), json!({})).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["run"]["status"], "failed", "{body}");
    assert!(!body["approval"]["resume_error"].is_null(), "{body}");
    assert_eq!(trashed(&maildir), n);

    // The model is back: the retry completes from the ledger's result.
    model.set_down(false);
    let (s, body) = client.post(&resume, Some(&control), json!({})).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["run"]["status"], "done", "{body}");
    assert_eq!(body["run"]["resumed"], true);
    assert_eq!(
        body["run"]["reply"],
        format!("Done: moved {n} emails to Trash.")
    );
    assert!(body["approval"]["resume_error"].is_null(), "{body}");
    assert_eq!(body["approval"]["execution"], "executed");
    let conv = client
        .get(&format!("/api/conversations/{conversation}"), &control)
        .await;
    assert_eq!(
        conv["lines"].as_array().unwrap().last().unwrap()["text"],
        format!("Done: moved {n} emails to Trash.")
    );

    // Once done, nothing to retry; the mail moved exactly once, one audit entry per item.
    let (s, _) = client.post(&resume, Some(&control), json!({})).await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert_eq!(trashed(&maildir), n);
    let audit = client
        .get(&format!("/api/audit?approval_id={id}"), &control)
        .await;
    let executions = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "execution")
        .count();
    assert_eq!(executions, n);
}
