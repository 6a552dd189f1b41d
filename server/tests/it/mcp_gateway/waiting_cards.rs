//! Cards that wait for the owner: one nobody answers lapses and the agent is told; an agent
//! asking faster than the owner answers gets at most its cap of waiting cards; revoking an agent
//! rejects its waiting cards (within one sweep, or in the answer's own unit) so nothing it asked
//! for runs, and a device paired later under its name inherits nothing.

use crate::support;

use serde_json::{json, Value};
use support::mcp::{files_upstream, world as mcp_world};
use support::{eventually, Iris};

use super::{approve, one, row, world, write};

#[tokio::test]
async fn a_card_nobody_answers_lapses_and_the_agent_is_told() {
    let (mut world, notes) = world(1);
    world
        .env
        .push(("IRIS_DESTRUCTIVE_TTL_SECS".into(), "2".into()));
    world.env.push(("IRIS_SWEEP_SECS".into(), "1".into()));
    let owner = world.add_device("owner", "control");
    let claude = world.add_device("Claude Desktop", "agent");
    let iris = world.start();
    let held = one(&iris, &claude, write("v2")).await;
    let id = held["meta"]["iris/approval_id"]
        .as_str()
        .unwrap()
        .to_owned();
    eventually("the card to lapse", || {
        let (client, owner, id) = (iris.client(), owner.clone(), id.clone());
        async move {
            let row = client
                .get(&format!("/governance/approvals/{id}"), &owner)
                .await;
            (row["status"] == "expired").then_some(())
        }
    })
    .await;
    let lapsed = one(&iris, &claude, write("v2")).await;
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

#[tokio::test]
async fn an_agent_asking_faster_than_the_owner_answers_gets_at_most_its_cap_of_cards() {
    // A cap of 0 would refuse every card: `iris serve` refuses the setting instead.
    let (world, _) = mcp_world(
        1,
        &format!("[mcp]\nmax_waiting_per_agent = 0\n{}", files_upstream()),
    );
    let out = world.command(&["serve"]).output().unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("max_waiting_per_agent"), "{said}");

    let (world, notes) = mcp_world(
        1,
        &format!("[mcp]\nmax_waiting_per_agent = 2\n{}", files_upstream()),
    );
    let owner = world.add_device("owner", "control");
    let claude = world.add_device("Claude Desktop", "agent");
    let cursor = world.add_device("Cursor", "agent");
    let iris = world.start();
    let id_of = |answer: &Value| {
        answer["meta"]["iris/approval_id"]
            .as_str()
            .unwrap()
            .to_owned()
    };

    let first = one(&iris, &claude, write("v2")).await;
    let second = one(&iris, &claude, write("v3")).await;
    assert_eq!(first["meta"]["iris/status"], "pending", "{first}");
    assert_eq!(second["meta"]["iris/status"], "pending", "{second}");

    // A third card would pass the cap: refused, with the numbers, and no card is made.
    let third = one(&iris, &claude, write("v4")).await;
    assert_eq!(third["isError"], true, "{third}");
    assert_eq!(
        third["text"],
        "2 of this agent's cards are waiting for the owner, the most it may have at once (2); \
         no new card is made until the owner answers one or one lapses; nothing was called"
    );
    let pending = iris
        .client()
        .get("/governance/approvals?status=pending", &owner)
        .await;
    assert_eq!(
        pending["approvals"].as_array().unwrap().len(),
        2,
        "{pending}"
    );

    // The same call again is no new card: it still reads its own.
    let again = one(&iris, &claude, write("v2")).await;
    assert_eq!(id_of(&again), id_of(&first));
    // Another agent has its own room.
    let other = one(&iris, &cursor, write("v4")).await;
    assert_eq!(other["meta"]["iris/status"], "pending", "{other}");

    // The owner answers one: the third call now gets its card.
    support::mcp::answer(
        &iris,
        &owner,
        &id_of(&first),
        json!({"decision": "reject", "reason": "not now"}),
    )
    .await;
    let now = one(&iris, &claude, write("v4")).await;
    assert_eq!(now["meta"]["iris/status"], "pending", "{now}");
    assert_ne!(id_of(&now), id_of(&other));
    assert_eq!(
        std::fs::read_to_string(notes.join("plan.md")).unwrap(),
        "v1"
    );
}

/// Revokes device `name` with `iris devices revoke`, as the owner would from a shell while the
/// server runs.
fn revoke_from_the_cli(world: &support::World, name: &str) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_iris"))
        .args(["devices", "revoke", name])
        .env("IRIS_DATABASE_URL", &world.database_url)
        .env("IRIS_CONFIG", world.dir.path().join("iris.toml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A held write's card, requested by `token`: its approval id.
async fn card_of(iris: &Iris, token: &str, content: &str) -> String {
    let held = one(iris, token, write(content)).await;
    assert_eq!(held["meta"]["iris/status"], "pending", "{held}");
    held["meta"]["iris/approval_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Revoking an agent from the CLI while the server runs rejects its waiting card within one
/// sweep (by `iris` through `sweep`, "requested by a revoked device"), so nothing it asked for
/// can run; a device paired later under the same name is another device: it sees none of the
/// old rows and its own card is not attached to the old one (before, the card stayed pending
/// and approvable, and the new device inherited the rows).
#[tokio::test]
async fn revoking_an_agent_rejects_its_waiting_cards_and_its_name_inherits_nothing() {
    let (mut world, notes) = world(1);
    world.env.push(("IRIS_SWEEP_SECS".into(), "1".into()));
    let owner = world.add_device("owner", "control");
    let claude = world.add_device("Claude Desktop", "agent");
    let iris = world.start();
    let id = card_of(&iris, &claude, "v2").await;

    revoke_from_the_cli(&world, "Claude Desktop");
    let rejected = eventually("the revoked device's card rejected by the sweep", || {
        let (iris, owner, id) = (&iris, &owner, &id);
        async move {
            let row = row(iris, owner, id).await;
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
    let (status, _) = approve(&iris, &owner, &id).await;
    assert_eq!(status, reqwest::StatusCode::CONFLICT);
    assert_eq!(
        std::fs::read_to_string(notes.join("plan.md")).unwrap(),
        "v1"
    );

    // The name paired again: another device, with none of the old rows.
    let again = world.add_device("Claude Desktop", "agent");
    let listed = iris
        .client()
        .get("/governance/approvals?status=all", &again)
        .await;
    assert_eq!(listed["approvals"], json!([]), "{listed}");
    let old = reqwest::Client::new()
        .get(format!("{}/governance/approvals/{id}", iris.url))
        .bearer_auth(&again)
        .send()
        .await
        .unwrap();
    assert_eq!(old.status(), reqwest::StatusCode::NOT_FOUND);
    let fresh = card_of(&iris, &again, "v2").await;
    assert_ne!(
        fresh, id,
        "the same call attached to the revoked device's card"
    );
}

/// With no sweep in between, an approval of a revoked agent's card is refused in the answer's
/// own unit: the card is rejected instead (409 saying why) and the write never runs.
#[tokio::test]
async fn an_answer_to_a_revoked_agents_card_rejects_it_and_nothing_runs() {
    let (mut world, notes) = world(1);
    world.env.push(("IRIS_SWEEP_SECS".into(), "3600".into()));
    let owner = world.add_device("owner", "control");
    let claude = world.add_device("Claude Desktop", "agent");
    let iris = world.start();
    let id = card_of(&iris, &claude, "v2").await;
    revoke_from_the_cli(&world, "Claude Desktop");

    let (status, body) = approve(&iris, &owner, &id).await;
    assert_eq!(status, reqwest::StatusCode::CONFLICT, "{body}");
    assert!(body.to_string().contains("which was revoked"), "{body}");
    let row = row(&iris, &owner, &id).await;
    assert_eq!(row["status"], "rejected", "{row}");
    assert_eq!(row["reason"], "requested by a revoked device", "{row}");
    assert_eq!(
        std::fs::read_to_string(notes.join("plan.md")).unwrap(),
        "v1"
    );
}
