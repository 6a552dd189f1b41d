//! kill -9 in the middle of an approved call, and the restart that takes it over: the steps
//! every plugin's crash test shares (`files.rs`, `calendar.rs`).

use serde_json::{json, Value};

use super::{eventually, wait_for_line, Iris, World};

/// Starts `world`'s server with `IRIS_FAILPOINT=failpoint` (no sweep of its own, 2 s leases),
/// asks `message` as `token`'s device, approves the card it makes and kills the server with
/// SIGKILL once `failpoint` is reached. Returns the card's id and its conversation.
pub async fn approve_until_killed(
    world: &World,
    token: &str,
    message: &str,
    failpoint: &str,
) -> (String, String) {
    let env = [
        ("IRIS_FAILPOINT", failpoint),
        ("IRIS_SWEEP_SECS", "3600"),
        ("IRIS_LEASE_SECS", "2"),
    ];
    let (server, rx) = world.start_watched(&env);
    let http = reqwest::Client::new();
    let halted: Value = http
        .post(format!("{}/api/chat", server.url))
        .bearer_auth(token)
        .json(&json!({ "message": message }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(halted["status"], "awaiting_approval", "{halted}");
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let conversation = halted["conversation_id"].as_str().unwrap().to_string();
    let respond = {
        let (url, token, id) = (server.url.clone(), token.to_string(), id.clone());
        tokio::spawn(async move {
            http.post(format!("{url}/governance/approvals/{id}/respond"))
                .bearer_auth(token)
                .json(&json!({"decision": "approve"}))
                .send()
                .await
        })
    };
    let _rx = wait_for_line(rx, format!("failpoint reached: {failpoint}")).await;
    server.kill();
    respond.abort();
    (id, conversation)
}

/// Starts `world`'s server again (1 s sweeps, 2 s leases) and waits until card `id`'s call is
/// `unknown` and its plugin said where its items are. Returns the server and the card.
pub async fn restarted_until_located(world: &World, token: &str, id: &str) -> (Iris, Value) {
    let (server, _rx) = world.start_watched(&[("IRIS_SWEEP_SECS", "1"), ("IRIS_LEASE_SECS", "2")]);
    let http = reqwest::Client::new();
    let row = eventually("the call becomes unknown and its items are found", || {
        let (http, url) = (&http, &server.url);
        async move {
            let row: Value = http
                .get(format!("{url}/governance/approvals/{id}"))
                .bearer_auth(token)
                .send()
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            (row["execution"] == "unknown" && row["located"].is_object()).then_some(row)
        }
    })
    .await;
    (server, row)
}

/// The card's undo of `id` as `token`'s device: its status and body.
pub async fn undo(server: &Iris, token: &str, id: &str) -> (reqwest::StatusCode, Value) {
    let answer = reqwest::Client::new()
        .post(format!("{}/governance/approvals/{id}/undo", server.url))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = answer.status();
    (status, answer.json().await.unwrap())
}
