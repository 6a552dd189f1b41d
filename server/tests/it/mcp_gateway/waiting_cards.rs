//! Cards that wait for the owner: one nobody answers lapses and the agent is told; an agent
//! asking faster than the owner answers gets at most its cap of waiting cards; revoking an agent
//! rejects its waiting cards (within one sweep, or in the answer's own unit) so nothing it asked
//! for runs, and a device paired later under its name inherits nothing.
//!
//! The server runs in process (`support::TestApp` on a listener); a cap `iris serve` refuses
//! runs the real binary.

use crate::support;

use std::num::NonZeroU32;

use iris_core::ports::{DeviceStore, Scope};
use serde_json::{json, Value};
use support::mcp::{client, files_upstream, world as mcp_world};
use support::{eventually, TestApp};

use super::{app, approve, one, row, write};

#[tokio::test]
async fn a_card_nobody_answers_lapses_and_the_agent_is_told() {
    let (server, url, notes) = app(1, |b| b.destructive_ttl_secs(2).sweep_secs(1)).await;
    let owner = server.add_device("owner", Scope::Control).await;
    let claude = server.add_device("Claude Desktop", Scope::Agent).await;
    let held = one(&url, &claude, write("v2")).await;
    let id = held["meta"]["iris/approval_id"]
        .as_str()
        .unwrap()
        .to_owned();
    eventually("the card to lapse", || {
        let (client, owner, id) = (client(&url), owner.clone(), id.clone());
        async move {
            let row = client
                .get(&format!("/governance/approvals/{id}"), &owner)
                .await;
            (row["status"] == "expired").then_some(())
        }
    })
    .await;
    let lapsed = one(&url, &claude, write("v2")).await;
    assert_eq!(lapsed["isError"], true, "{lapsed}");
    assert_eq!(lapsed["meta"]["iris/status"], "expired");
    let text = lapsed["text"].as_str().unwrap();
    assert!(
        text.starts_with(
            "The owner did not answer in time: the approval lapsed; nothing was changed. The same call asks the owner again on a new card from "
        ),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(notes.join("plan.md")).unwrap(),
        "v1"
    );
}

// Needs a process: `iris serve`'s exit at start-up (the cap is read from `iris.toml`).
#[tokio::test]
async fn a_cap_of_no_cards_is_refused_at_start_up() {
    // A cap of 0 would refuse every card: `iris serve` refuses the setting instead.
    let (world, _) = mcp_world(
        1,
        &format!("[mcp]\nmax_waiting_per_agent = 0\n{}", files_upstream()),
    );
    let out = world.command(&["serve"]).output().unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("max_waiting_per_agent"), "{said}");
}

#[tokio::test]
async fn an_agent_asking_faster_than_the_owner_answers_gets_at_most_its_cap_of_cards() {
    let cap = NonZeroU32::new(2).unwrap();
    let (server, url, notes) = app(1, |b| b.max_waiting_per_agent(cap)).await;
    let owner = server.add_device("owner", Scope::Control).await;
    let claude = server.add_device("Claude Desktop", Scope::Agent).await;
    let cursor = server.add_device("Cursor", Scope::Agent).await;
    let id_of = |answer: &Value| {
        answer["meta"]["iris/approval_id"]
            .as_str()
            .unwrap()
            .to_owned()
    };

    let first = one(&url, &claude, write("v2")).await;
    let second = one(&url, &claude, write("v3")).await;
    assert_eq!(first["meta"]["iris/status"], "pending", "{first}");
    assert_eq!(second["meta"]["iris/status"], "pending", "{second}");

    // A third card would pass the cap: refused, with the numbers, and no card is made.
    let third = one(&url, &claude, write("v4")).await;
    assert_eq!(third["isError"], true, "{third}");
    assert_eq!(
        third["text"],
        "2 of this agent's cards are waiting for the owner, the most it may have at once (2); \
         no new card is made until the owner answers one or one lapses; nothing was called"
    );
    let pending = client(&url)
        .get("/governance/approvals?status=pending", &owner)
        .await;
    assert_eq!(
        pending["approvals"].as_array().unwrap().len(),
        2,
        "{pending}"
    );

    // The same call again is no new card: it still reads its own.
    let again = one(&url, &claude, write("v2")).await;
    assert_eq!(id_of(&again), id_of(&first));
    // Another agent has its own room.
    let other = one(&url, &cursor, write("v4")).await;
    assert_eq!(other["meta"]["iris/status"], "pending", "{other}");

    // The owner answers one: the third call now gets its card.
    support::mcp::answer(
        &url,
        &owner,
        &id_of(&first),
        json!({"decision": "reject", "reason": "not now"}),
    )
    .await;
    let now = one(&url, &claude, write("v4")).await;
    assert_eq!(now["meta"]["iris/status"], "pending", "{now}");
    assert_ne!(id_of(&now), id_of(&other));
    assert_eq!(
        std::fs::read_to_string(notes.join("plan.md")).unwrap(),
        "v1"
    );
}

/// Revokes device `name` as `iris devices revoke` does while the server runs (the store's
/// revoke; the CLI's own run is the pairing suite's).
async fn revoke(server: &TestApp, name: &str) {
    assert!(
        server.state.store.revoke(name).await.unwrap(),
        "no live device {name}"
    );
}

/// A held write's card, requested by `token`: its approval id.
async fn card_of(url: &str, token: &str, content: &str) -> String {
    let held = one(url, token, write(content)).await;
    assert_eq!(held["meta"]["iris/status"], "pending", "{held}");
    held["meta"]["iris/approval_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Revoking an agent while the server runs rejects its waiting card within one
/// sweep (by `iris` through `sweep`, "requested by a revoked device"), so nothing it asked for
/// can run; a device paired later under the same name is another device: it sees none of the
/// old rows and its own card is not attached to the old one (before, the card stayed pending
/// and approvable, and the new device inherited the rows).
#[tokio::test]
async fn revoking_an_agent_rejects_its_waiting_cards_and_its_name_inherits_nothing() {
    let (server, url, notes) = app(1, |b| b.sweep_secs(1)).await;
    let owner = server.add_device("owner", Scope::Control).await;
    let claude = server.add_device("Claude Desktop", Scope::Agent).await;
    let id = card_of(&url, &claude, "v2").await;

    revoke(&server, "Claude Desktop").await;
    let rejected = eventually("the revoked device's card rejected by the sweep", || {
        let (url, owner, id) = (&url, &owner, &id);
        async move {
            let row = row(url, owner, id).await;
            (row["status"] == "rejected").then_some(row)
        }
    })
    .await;
    assert_eq!(rejected["responded_by"], "iris", "{rejected}");
    assert_eq!(rejected["surface"], "sweep", "{rejected}");
    assert_eq!(
        rejected["reason"], "requested by a revoked device",
        "{rejected}"
    );
    let (status, _) = approve(&url, &owner, &id).await;
    assert_eq!(status, reqwest::StatusCode::CONFLICT);
    assert_eq!(
        std::fs::read_to_string(notes.join("plan.md")).unwrap(),
        "v1"
    );

    // The name paired again: another device, with none of the old rows.
    let again = server.add_device("Claude Desktop", Scope::Agent).await;
    let listed = client(&url)
        .get("/governance/approvals?status=all", &again)
        .await;
    assert_eq!(listed["approvals"], json!([]), "{listed}");
    let old = reqwest::Client::new()
        .get(format!("{url}/governance/approvals/{id}"))
        .bearer_auth(&again)
        .send()
        .await
        .unwrap();
    assert_eq!(old.status(), reqwest::StatusCode::NOT_FOUND);
    let fresh = card_of(&url, &again, "v2").await;
    assert_ne!(
        fresh, id,
        "the same call attached to the revoked device's card"
    );
}

/// With no sweep in between, an approval of a revoked agent's card is refused in the answer's
/// own unit: the card is rejected instead (409 saying why) and the write never runs.
#[tokio::test]
async fn an_answer_to_a_revoked_agents_card_rejects_it_and_nothing_runs() {
    let (server, url, notes) = app(1, |b| b.sweep_secs(3600)).await;
    let owner = server.add_device("owner", Scope::Control).await;
    let claude = server.add_device("Claude Desktop", Scope::Agent).await;
    let id = card_of(&url, &claude, "v2").await;
    revoke(&server, "Claude Desktop").await;

    let (status, body) = approve(&url, &owner, &id).await;
    assert_eq!(status, reqwest::StatusCode::CONFLICT, "{body}");
    assert!(body.to_string().contains("which was revoked"), "{body}");
    let row = row(&url, &owner, &id).await;
    assert_eq!(row["status"], "rejected", "{row}");
    assert_eq!(row["reason"], "requested by a revoked device", "{row}");
    assert_eq!(
        std::fs::read_to_string(notes.join("plan.md")).unwrap(),
        "v1"
    );
}
