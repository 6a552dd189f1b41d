//! A files card and a calendar card reach the phone as a mail card does: their title and link,
//! never their lines (paths on the owner's disk, what is in the owner's calendar), and their
//! answer closes them.

use crate::support;

use iris_core::ports::Scope;
use reqwest::StatusCode;
use serde_json::json;
use support::app::Build;
use support::push::PushService;
use support::{eventually, ModelServer, TestApp};

use super::{learn_key, respond, subscribe, SUBJECT};

/// Asks with `message` on a server `build` configures (its model playing `script`): the card
/// titled `title` is pushed without `private` (a word of its lines), and approving it runs the
/// call (`ran` turns true) and pushes its closing.
async fn pushes_its_title_never_its_lines(
    script: &str,
    build: impl FnOnce(Build) -> Build,
    message: &str,
    title: &str,
    private: &str,
    ran: impl Fn() -> bool,
) {
    let push = PushService::start().await;
    let model = ModelServer::start(script).await;
    let app = build(TestApp::with_model(&model))
        .vapid_subject(SUBJECT)
        .background()
        .start()
        .await;
    let phone = app.add_device("phone", Scope::Control).await;
    let client = app.client().await;
    learn_key(&push, &client, &phone).await;
    subscribe(&client, &phone, push.browser("phone").subscription()).await;

    let (status, halted) = client
        .post("/api/chat", Some(&phone), json!({ "message": message }))
        .await;
    assert_eq!(status, StatusCode::OK, "{halted}");
    let id = halted["approval_id"].as_str().unwrap().to_owned();
    let requested = eventually("the card's push", || async {
        let got = push.delivered("phone", &id);
        (!got.is_empty()).then_some(got)
    })
    .await;
    assert_eq!(requested[0]["title"], title);
    assert!(
        !requested[0].to_string().contains(private),
        "never a line: {}",
        requested[0]
    );
    assert!(!ran(), "nothing before the answer");
    respond(&client, &phone, &id, "approve").await;
    client.wait_execution(&id, &phone, "executed").await;
    let closed = eventually("the closing push", || async {
        push.delivered("phone", &id)
            .into_iter()
            .find(|p| p["type"] == "approval.closed")
    })
    .await;
    assert_eq!(closed["outcome"], "approved");
    assert!(ran());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_files_card_pushes_its_title_never_its_paths_and_its_answer_closes_it() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("tax-return-2025.pdf"), b"private").unwrap();
    let path = root.path().to_path_buf();
    pushes_its_title_never_its_lines(
        support::scripts::FILES_CLEANUP_SCRIPT,
        |app| app.files_root("downloads", &path),
        "clean up *.pdf",
        "Move 1 file to quarantine",
        "tax-return",
        || !path.join("tax-return-2025.pdf").exists(),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calendar_card_pushes_its_title_never_its_events_and_its_answer_closes_it() {
    let folder = support::calendars::one_event("Therapy session");
    let path = folder.path().to_path_buf();
    pushes_its_title_never_its_lines(
        support::calendars::DELETE_SCRIPT,
        |app| app.calendar_folder("personal", &path),
        "delete therapy",
        "Delete 1 event",
        "Therapy",
        || !support::calendars::still_there(&path),
    )
    .await;
}
