//! Failed model calls are failures, never finished answers (DESIGN §8 "fail closed"), over real
//! HTTP with the server in process (`support::TestApp` on a listener, its background work
//! running) and a scripted OpenAI-compatible server:
//!
//! - a streamed answer cut off before its final chunk, and a model that goes silent past
//!   `IRIS_MODEL_TIMEOUT_SECS`, fail the resumed run: the card shows the resume error at once
//!   (no wait without end), the approved call ran once, and the owner's retry completes from
//!   the ledger's result without running it again.

use crate::support;

use reqwest::StatusCode;
use serde_json::{json, Value};
use support::{eventually, trashed, Fault, ModelServer, TestApp};

/// Halts a trash request, breaks the model with `fault`, approves, and checks the failure is
/// shown at once and the retry completes once the model behaves.
async fn a_broken_model_fails_the_resume_and_the_retry_runs_nothing_twice(
    fault: Fault,
    needle: &str,
) {
    let model = ModelServer::start(&support::scripts::promo_trash()).await;
    let server = TestApp::with_model(&model)
        .mailbox()
        .model_stream()
        .model_timeout_secs(2)
        .background()
        .start()
        .await;
    let control = server.token.clone();
    let client = server.client().await;
    let maildir = server.maildir();
    let (s, halted) = client
        .post(
            "/api/chat",
            Some(&control),
            json!({"message": "trash the promo emails from this week"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{halted}");
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let conversation = halted["conversation_id"].as_str().unwrap().to_string();
    assert_eq!(halted["status"], "awaiting_approval", "{halted}");

    model.set_fault(fault);
    let (s, body) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&control),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    // The failure shows on the card within the timeout, not after a wait without end.
    let row: Value = eventually("the resume error on the card", || {
        let client = &client;
        let (id, control) = (id.clone(), control.clone());
        async move {
            let row = client
                .get(&format!("/governance/approvals/{id}"), &control)
                .await;
            row["resume_error"].is_string().then_some(row)
        }
    })
    .await;
    let error = row["resume_error"].as_str().unwrap();
    assert!(error.contains(needle), "{error}");
    assert_eq!(row["execution"], "executed", "{row}");
    let moved = trashed(&maildir);
    assert!(moved > 0);
    let lines = client
        .get(&format!("/api/conversations/{conversation}"), &control)
        .await;
    let last = lines["lines"].as_array().unwrap().last().unwrap().clone();
    assert!(
        last["text"]
            .as_str()
            .unwrap()
            .contains("could not reach the model"),
        "the chat says why: {last}"
    );

    // The model behaves again: the owner's retry completes from the ledger, once.
    model.set_fault(Fault::None);
    let resume = format!("/governance/approvals/{id}/resume");
    let (s, body) = client.post(&resume, Some(&control), json!({})).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["run"]["status"], "done", "{body}");
    assert!(body["approval"]["resume_error"].is_null(), "{body}");
    assert_eq!(trashed(&maildir), moved, "the approved call ran twice");
    let (s, _) = client.post(&resume, Some(&control), json!({})).await;
    assert_eq!(s, StatusCode::CONFLICT, "nothing left to retry");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_off_before_its_final_chunk_is_a_failed_call() {
    a_broken_model_fails_the_resume_and_the_retry_runs_nothing_twice(Fault::CutOff, "cut off")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_goes_silent_past_the_timeout_is_a_failed_call() {
    a_broken_model_fails_the_resume_and_the_retry_runs_nothing_twice(
        Fault::Silent,
        "IRIS_MODEL_TIMEOUT_SECS",
    )
    .await;
}
