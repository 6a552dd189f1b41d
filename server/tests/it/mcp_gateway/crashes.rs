//! Crashes around the side effect: IRIS killed with SIGKILL between the approval and the write
//! writes exactly once after the restart; killed after the write and before its outcome is
//! recorded, the call is `unknown` and never written again. The agent's retries are told which.

use crate::support;

use serde_json::{json, Value};
use support::{eventually, wait_for_line};

use super::{one, world, write};

/// Approves a write and kills IRIS with SIGKILL at `failpoint`; restarts it. The file afterwards
/// (the owner overwrites it after the restart, so a second write would show), and what the
/// last of 20 retries is told.
async fn killed_at(failpoint: &'static str) -> (String, Value) {
    let (world, notes) = world(1);
    let owner = world.add_device("owner", "control");
    let claude = world.add_device("Claude Desktop", "agent");
    let plan = notes.join("plan.md");
    let (iris, rx) = world.start_watched(&[
        ("IRIS_FAILPOINT", failpoint),
        ("IRIS_SWEEP_SECS", "3600"),
        ("IRIS_LEASE_SECS", "2"),
    ]);
    let held = one(&iris.url, &claude, write("v2")).await;
    let id = held["meta"]["iris/approval_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let respond = {
        let (client, owner, id) = (iris.client(), owner.clone(), id.clone());
        tokio::spawn(async move {
            client
                .post(
                    &format!("/governance/approvals/{id}/respond"),
                    Some(&owner),
                    json!({"decision": "approve"}),
                )
                .await
        })
    };
    let _rx = wait_for_line(rx, format!("failpoint reached: {failpoint}")).await;
    iris.kill();
    respond.abort();
    let at_crash = std::fs::read_to_string(&plan).unwrap();
    // No upstream is left behind by the killed server (its stdin closed, it exited).
    eventually("the killed server's upstream to exit", || {
        let notes = notes.clone();
        async move {
            let out = std::process::Command::new("pgrep")
                .args(["-f", &format!("mcp-server-filesystem {}", notes.display())])
                .output()
                .unwrap();
            out.stdout.is_empty().then_some(())
        }
    })
    .await;

    let (iris, _rx) = world.start_watched(&[("IRIS_SWEEP_SECS", "1"), ("IRIS_LEASE_SECS", "2")]);
    let settled = eventually("the job to settle after the restart", || {
        let (client, owner, id) = (iris.client(), owner.clone(), id.clone());
        async move {
            let row = client
                .get(&format!("/governance/approvals/{id}"), &owner)
                .await;
            matches!(row["execution"].as_str(), Some("executed" | "unknown")).then_some(row)
        }
    })
    .await;
    let after_restart = std::fs::read_to_string(&plan).unwrap();
    std::fs::write(&plan, "edited after the restart").unwrap();
    let mut retries = write("v2");
    retries["times"] = json!(20);
    let told = one(&iris.url, &claude, retries).await;
    assert_eq!(told["meta"]["iris/approval_id"], id.as_str());
    assert_eq!(
        std::fs::read_to_string(&plan).unwrap(),
        "edited after the restart"
    );
    (
        format!(
            "{at_crash}|{after_restart}|{}",
            settled["execution"].as_str().unwrap()
        ),
        told,
    )
}

// Needs a process: kill -9, at a failpoint read from the process's environment.
#[tokio::test]
async fn a_sigkill_between_approval_and_execution_writes_exactly_once_after_the_restart() {
    let (files, told) = killed_at("after_decision").await;
    // Not written at the crash; written once, by the restarted server, with the pinned content.
    assert_eq!(files, "v1|v2|executed");
    // The first of the 20 retries got the result; the last is told it ran before.
    assert_eq!(told["meta"]["iris/status"], "executed_before", "{told}");
    assert!(
        told["text"]
            .as_str()
            .unwrap()
            .contains("already ran, once, at"),
        "{told}"
    );
}

// Needs a process: kill -9, at a failpoint read from the process's environment.
#[tokio::test]
async fn a_sigkill_after_the_write_and_before_its_outcome_never_writes_again() {
    let (files, told) = killed_at("after_side_effect").await;
    // Written before the crash; nothing recorded that it was: unknown, never run again.
    assert_eq!(files, "v2|v2|unknown");
    assert_eq!(told["meta"]["iris/status"], "unknown", "{told}");
    assert!(
        told["text"]
            .as_str()
            .unwrap()
            .contains("will not be run again"),
        "{told}"
    );
}
