//! Once the owner's message is accepted, the turn runs to its end whatever the client does
//! (DESIGN §8 "once a card exists it is whole"): the real `iris` binary, a scripted model that
//! holds each answer until the test lets it through, and a client that goes away at every step
//! of a turn. Afterwards the turn has ended all the same: with its reply in the conversation, or
//! with a whole card (row, checkpoint, link) whose approval executes once.

use crate::support;

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};
use support::{eventually, trashed, ModelServer, World};

/// Sends `message` in a new conversation, lets the model answer its first `answered` requests,
/// drops the client while the next one waits, then lets the model go on. Returns the
/// conversation's lines once the turn has ended.
async fn drop_the_client_after(
    world: &World,
    model: &ModelServer,
    token: &str,
    url: &str,
    message: &str,
    answered: usize,
) -> (String, Vec<Value>) {
    let conversation = uuid::Uuid::new_v4().to_string();
    let before = model.received();
    model.hold_after(before + answered);
    let request = {
        let (url, token, conversation) = (url.to_string(), token.to_string(), conversation.clone());
        let message = message.to_string();
        tokio::spawn(async move {
            reqwest::Client::new()
                .post(format!("{url}/api/chat"))
                .bearer_auth(token)
                .json(&json!({"message": message, "conversation_id": conversation}))
                .send()
                .await
        })
    };
    eventually("the turn reaching its held step", || async {
        (model.received() > before + answered).then_some(())
    })
    .await;
    request.abort();
    let _ = request.await;
    model.release(usize::MAX);
    let client = support::Client {
        http: reqwest::Client::new(),
        url: url.to_string(),
    };
    let lines = eventually("the turn's end in the conversation", || {
        let (client, conversation) = (&client, conversation.clone());
        async move {
            let lines = client
                .get(&format!("/api/conversations/{conversation}"), token)
                .await["lines"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            (lines.len() >= 2).then_some(lines)
        }
    })
    .await;
    let _ = world;
    (conversation, lines)
}

// Needs a process: a dropped client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_client_never_cuts_a_turn() {
    // Halting turns: the client goes away while the model is asked for step 1, then step 2.
    for answered in [0, 1] {
        let model = ModelServer::start(&support::scripts::script(&[
            support::scripts::PROMO_TRASH_RULE,
            support::scripts::HELLO_RULE,
        ]))
        .await;
        let world = World::new(&model.base_url);
        iris_email::demo::write_demo_maildir(&world.maildir, chrono::Utc::now()).unwrap();
        let token = world.add_device("phone", "control");
        let server = world.start();
        let (conversation, lines) = drop_the_client_after(
            &world,
            &model,
            &token,
            &server.url,
            "trash the promo emails from this week",
            answered,
        )
        .await;
        assert_eq!(lines[0]["role"], "owner", "the request is kept: {lines:?}");
        let card = lines
            .iter()
            .find_map(|l| l["approval_id"].as_str())
            .unwrap_or_else(|| panic!("no card after a drop at step {answered}: {lines:?}"))
            .to_string();
        // The card is whole: its row is pending and answering it resumes its saved run.
        let client = server.client();
        let row = client
            .get(&format!("/governance/approvals/{card}"), &token)
            .await;
        assert_eq!(row["status"], "pending", "{row}");
        let items = row["items"].as_array().unwrap().len();
        let (s, body) = client
            .post(
                &format!("/governance/approvals/{card}/respond"),
                Some(&token),
                json!({"decision": "approve"}),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{body}");
        client.wait_execution(&card, &token, "executed").await;
        let reply = eventually("the resumed run's reply", || {
            let (client, conversation) = (&client, conversation.clone());
            let token = token.clone();
            async move {
                let last = client.last_reply(&conversation, &token).await;
                last.starts_with("Done").then_some(last)
            }
        })
        .await;
        assert_eq!(reply, format!("Done: moved {items} emails to Trash."));
        assert_eq!(trashed(&world.maildir), items, "executed once");
    }

    // A turn that ends with its reply: the client goes away while the model answers.
    let model = ModelServer::start(&support::scripts::script(&[
        support::scripts::PROMO_TRASH_RULE,
        support::scripts::HELLO_RULE,
    ]))
    .await;
    let world = World::new(&model.base_url);
    let token = world.add_device("phone", "control");
    let server = world.start();
    let (_, lines) =
        drop_the_client_after(&world, &model, &token, &server.url, "hello there", 0).await;
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[1]["text"], "Hello! Nothing to do.");

    // And a client that goes away right after sending its answer: the decision either landed
    // (and then runs once) or did not (and the card still waits); never half.
    let model = ModelServer::start(&support::scripts::script(&[
        support::scripts::PROMO_TRASH_RULE,
        support::scripts::HELLO_RULE,
    ]))
    .await;
    let world = World::new(&model.base_url);
    iris_email::demo::write_demo_maildir(&world.maildir, chrono::Utc::now()).unwrap();
    let token = world.add_device("phone", "control");
    let server = world.start();
    let client = server.client();
    let (_, halted) = client
        .post(
            "/api/chat",
            Some(&token),
            json!({"message": "trash the promo emails from this week"}),
        )
        .await;
    let card = halted["approval_id"].as_str().unwrap().to_string();
    let answer = {
        let (url, token, card) = (server.url.clone(), token.clone(), card.clone());
        tokio::spawn(async move {
            reqwest::Client::new()
                .post(format!("{url}/governance/approvals/{card}/respond"))
                .bearer_auth(token)
                .json(&json!({"decision": "approve"}))
                .timeout(Duration::from_millis(1))
                .send()
                .await
        })
    };
    let _ = answer.await;
    let row = client
        .get(&format!("/governance/approvals/{card}"), &token)
        .await;
    if row["status"] == "pending" {
        let (s, body) = client
            .post(
                &format!("/governance/approvals/{card}/respond"),
                Some(&token),
                json!({"decision": "approve"}),
            )
            .await;
        // The dropped answer may land between the read and this one (it runs to its end on
        // the server): then this one is second, and the row says the first approved it.
        match s {
            StatusCode::OK => {}
            StatusCode::CONFLICT => {
                assert_eq!(body["approval"]["status"], "approved", "{body}");
                assert_eq!(body["approval"]["responded_by"], "phone", "{body}");
            }
            other => panic!("the second answer got {other}: {body}"),
        }
    }
    let row = client.wait_execution(&card, &token, "executed").await;
    assert_eq!(
        trashed(&world.maildir),
        row["items"].as_array().unwrap().len()
    );
}
