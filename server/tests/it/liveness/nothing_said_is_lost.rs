//! Nothing said is lost (docs/liveness.md "Nothing said is lost"): a chat turn that lands while
//! a resume runs keeps its messages (the transcript is appended to, never overwritten), and a
//! resume after other turns tells the model which card, which decision and which request its
//! result belongs to. The turn during a resume needs the real binary (the resume is held at a
//! failpoint read from its environment); the resume after other turns runs in process
//! (`support::TestApp`).

use crate::support;

use iris_core::agent::protocol_errors;
use serde_json::json;
use support::{eventually, trashed, wait_for_line, Client};

use super::{app, approve, ask, finished_replies, scene, start};

/// The stored transcript of `conversation`, read from the database at `database_url`.
async fn stored_transcript(
    database_url: &str,
    conversation: &str,
) -> Vec<iris_core::model::Message> {
    use iris_core::ports::ApprovalStore;
    let store = iris_store::Store::connect(database_url)
        .await
        .expect("the server's database opens");
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

    let transcript = stored_transcript(&world.database_url, &conversation).await;
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

// Needs a process: IRIS_FAILPOINT_PAUSE is read once from the process's environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_during_a_resume_is_kept_in_the_transcript() {
    a_turn_during_a_resume_is_kept(false).await;
}

// Needs a process: IRIS_FAILPOINT_PAUSE is read once from the process's environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_during_a_resume_is_kept_in_the_transcript_on_postgres() {
    a_turn_during_a_resume_is_kept(true).await;
}

/// When the owner said more while a card waited, the resumed model is told which card was
/// answered, how, and for which request, so it continues that request (before: "The owner
/// answered the paused call call_…; its result is above").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_after_other_turns_names_the_card_the_decision_and_the_request() {
    let (server, model, _db) = app(false, |build| build).await;
    let token = server.token.clone();
    let client = server.client().await;
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
    // The resumed turn writes the call's result with the model's answer, after the request
    // above: until then the stored transcript is the one the card waited on, with its call not
    // yet answered. Once written, every call in it is answered.
    let url = server.state.settings.database_url.clone();
    eventually(
        "the resumed turn's transcript with every call answered",
        || {
            let (url, conversation) = (&url, &conversation);
            async move {
                let transcript = stored_transcript(url, conversation).await;
                protocol_errors(&transcript).is_empty().then_some(())
            }
        },
    )
    .await;
}
