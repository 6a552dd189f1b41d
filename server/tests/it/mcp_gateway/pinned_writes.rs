//! The pinned write: reads pass without a card; a write is one pinned card that says which agent
//! asks; the owner's approval executes exactly the pinned call once, whatever the agent retries;
//! other content is another card; a rejection leaves the file as it was and tells the agent; an
//! undeclared tool is refused; an agent token cannot answer; the hold ends at its budget with
//! "waiting", and a call approved within it returns the result. A card pins the file as it
//! showed it: changed since, the approved write writes nothing. `iris mcp files` (stdio) passes
//! reads and holds writes like the endpoint.
//!
//! The server runs in process (`support::TestApp` on a listener); the stdio bridge is the real
//! `iris mcp files`, as an agent starts it.

use crate::support;

use iris_core::ports::Scope;
use serde_json::json;
use support::eventually;
use support::mcp::{answers, client, script};

use super::{app, approve, one, row, write};

#[tokio::test]
async fn reads_pass_and_a_write_runs_once_as_pinned_only_after_the_owner_approves() {
    let (server, url, notes) = app(1, |b| b).await;
    let owner = server.add_device("owner", Scope::Control).await;
    let claude = server.add_device("Claude Desktop", Scope::Agent).await;
    let client = client(&url);
    let plan = notes.join("plan.md");

    // Only what IRIS's manifest declares is offered; a read passes with the server's answer.
    let listed = one(&url, &claude, json!({"list": true})).await;
    let tools: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"read_text_file") && tools.contains(&"write_file"),
        "{listed}"
    );
    assert!(
        !tools.contains(&"read_file"),
        "undeclared tools are not offered: {listed}"
    );
    let read = one(
        &url,
        &claude,
        json!({"call": "read_text_file", "args": {"path": "plan.md"}}),
    )
    .await;
    assert_eq!(read["isError"], false, "{read}");
    assert_eq!(read["text"], "v1");
    // A write without a card passes too, and the upstream's own errors come back as errors.
    let mkdir = one(
        &url,
        &claude,
        json!({"call": "create_directory", "args": {"path": "archive"}}),
    )
    .await;
    assert_eq!(mkdir["isError"], false, "{mkdir}");
    assert!(notes.join("archive").is_dir());
    let missing = one(
        &url,
        &claude,
        json!({"call": "read_text_file", "args": {"path": "nowhere.md"}}),
    )
    .await;
    assert_eq!(missing["isError"], true, "{missing}");
    assert!(
        missing["text"].as_str().unwrap().contains("nowhere.md"),
        "{missing}"
    );
    let all = client.get("/governance/approvals?status=all", &owner).await;
    assert_eq!(
        all["approvals"].as_array().unwrap().len(),
        0,
        "reads and ungated writes make no card"
    );

    // The Plugins list shows the upstream, IRIS's effect and, beside it, the server's hints.
    let plugins = client.get("/api/plugins", &owner).await;
    let files = plugins["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "files")
        .expect("the upstream is listed");
    assert_eq!(files["mcp_path"], "/mcp/files");
    let listed_write = files["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "files.write_file")
        .expect("write_file is listed");
    assert_eq!(listed_write["effect"], "destructive");
    assert_eq!(listed_write["approved_per_call"], true);
    assert!(listed_write["server_hints"].is_object(), "{listed_write}");

    // A write is held on a card and, unanswered, answers "waiting" when the hold ends.
    let held = one(&url, &claude, write("v2")).await;
    assert_eq!(held["isError"], false, "{held}");
    assert_eq!(held["meta"]["iris/status"], "pending", "{held}");
    assert!(
        held["text"]
            .as_str()
            .unwrap()
            .contains("waits for the owner"),
        "{held}"
    );
    let id = held["meta"]["iris/approval_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(held["meta"]["iris/url"]
        .as_str()
        .unwrap()
        .ends_with(&format!("/activity/{id}")));
    assert_eq!(std::fs::read_to_string(&plan).unwrap(), "v1");
    let card = row(&url, &owner, &id).await;
    assert_eq!(card["tool"], "files.write_file");
    assert_eq!(card["requested_by"], "Claude Desktop");
    assert_eq!(card["card"]["title"], "Overwrite plan.md");
    assert_eq!(card["card"]["request"], "keep the plan current");
    assert_eq!(card["args"], json!({"path": "plan.md", "content": "v2"}));
    // The card shows the change against the file as it was when the card was made.
    let preview: Vec<&str> = card["card"]["preview"]
        .as_array()
        .expect("a preview")
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(
        preview.contains(&"-v1") && preview.contains(&"+v2"),
        "{preview:?}"
    );

    // The same call attaches to it; other content is another card.
    let again = one(&url, &claude, write("v2")).await;
    assert_eq!(again["meta"]["iris/approval_id"], id.as_str());
    let other = one(&url, &claude, write("v3")).await;
    let other_id = other["meta"]["iris/approval_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(other_id, id);

    // An agent can read its rows but never answer one.
    let (status, body) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&claude),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::FORBIDDEN, "{body}");
    assert!(body.to_string().contains("agent"), "{body}");
    assert_eq!(row(&url, &claude, &id).await["status"], "pending");

    // The owner approves: the pinned call runs at once, without the agent asking again.
    let (status, body) = approve(&url, &owner, &id).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    client.wait_execution(&id, &owner, "executed").await;
    assert_eq!(std::fs::read_to_string(&plan).unwrap(), "v2");

    // The first repeat after the execution gets its result; twenty more are told it ran before
    // (never the old result as new); none writes again (the owner's later edit stays).
    std::fs::write(&plan, "edited by the owner").unwrap();
    let done = one(&url, &claude, write("v2")).await;
    assert_eq!(done["isError"], false, "{done}");
    assert_eq!(done["meta"]["iris/status"], "executed", "{done}");
    assert_eq!(done["meta"]["iris/approval_id"], id.as_str());
    assert!(
        done["text"]
            .as_str()
            .unwrap()
            .contains("Successfully wrote"),
        "{done}"
    );
    let mut retries = write("v2");
    retries["times"] = json!(20);
    let repeated = one(&url, &claude, retries).await;
    assert_eq!(repeated["isError"], false, "{repeated}");
    assert_eq!(
        repeated["meta"]["iris/status"], "executed_before",
        "{repeated}"
    );
    assert_eq!(repeated["meta"]["iris/approval_id"], id.as_str());
    assert!(repeated["meta"]["iris/ran_at"].is_string(), "{repeated}");
    let told = repeated["text"].as_str().unwrap();
    assert!(
        told.contains("already ran, once, at") && told.contains("\"iris/again\": true"),
        "{told}"
    );
    assert!(!told.contains("Successfully wrote"), "{told}");
    assert_eq!(
        std::fs::read_to_string(&plan).unwrap(),
        "edited by the owner"
    );

    // A rejection changes nothing and the agent is told why.
    let (status, _) = client
        .post(
            &format!("/governance/approvals/{other_id}/respond"),
            Some(&owner),
            json!({"decision": "reject", "reason": "not this version"}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::OK);
    let rejected = one(&url, &claude, write("v3")).await;
    assert_eq!(rejected["isError"], true, "{rejected}");
    assert_eq!(
        rejected["text"],
        "The owner rejected this: not this version. Nothing was changed."
    );
    assert_eq!(
        std::fs::read_to_string(&plan).unwrap(),
        "edited by the owner"
    );

    // An undeclared tool is refused before anything is called; bad arguments make no card.
    let undeclared = one(
        &url,
        &claude,
        json!({"call": "read_file", "args": {"path": "plan.md"}}),
    )
    .await;
    assert_eq!(undeclared["isError"], true, "{undeclared}");
    assert!(undeclared["text"]
        .as_str()
        .unwrap()
        .contains("not a tool IRIS's manifest declares"));
    let bad = one(
        &url,
        &claude,
        json!({"call": "write_file", "args": {"path": "plan.md"}}),
    )
    .await;
    assert_eq!(bad["isError"], true, "{bad}");
    assert!(
        bad["text"].as_str().unwrap().contains("input schema"),
        "{bad}"
    );
    let all = client.get("/governance/approvals?status=all", &owner).await;
    assert_eq!(all["approvals"].as_array().unwrap().len(), 2);

    // The agent sees only its own rows.
    let cursor = server.add_device("Cursor", Scope::Agent).await;
    let theirs = client
        .get("/governance/approvals?status=all", &cursor)
        .await;
    assert_eq!(theirs["approvals"].as_array().unwrap().len(), 0);
}

/// A write's card pins the file as it showed it: changed since, the approved write is refused
/// and nothing is written; the agent is told, and asking `again` makes a new card against the
/// file as it now is.
#[tokio::test]
async fn an_approved_write_to_a_file_changed_since_its_card_writes_nothing() {
    let (server, url, notes) = app(1, |b| b).await;
    let owner = server.add_device("owner", Scope::Control).await;
    let claude = server.add_device("Claude Desktop", Scope::Agent).await;
    let client = client(&url);
    let plan = notes.join("plan.md");
    let held = one(&url, &claude, write("v2")).await;
    assert_eq!(held["meta"]["iris/status"], "pending", "{held}");
    let id = held["meta"]["iris/approval_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let card = row(&url, &owner, &id).await;
    assert!(
        card["card"]["preview"]
            .as_array()
            .unwrap()
            .contains(&json!("-v1")),
        "{card}"
    );

    // The owner changes the file by hand, then approves the card that showed "v1".
    std::fs::write(&plan, "changed by hand").unwrap();
    let (status, body) = approve(&url, &owner, &id).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    let ended = client.wait_execution(&id, &owner, "failed").await;
    assert_eq!(ended["result"]["status"], "stale", "{ended}");
    assert_eq!(std::fs::read_to_string(&plan).unwrap(), "changed by hand");

    let told = one(&url, &claude, write("v2")).await;
    assert_eq!(told["isError"], true, "{told}");
    assert_eq!(told["meta"]["iris/status"], "failed", "{told}");
    assert!(
        told["text"]
            .as_str()
            .unwrap()
            .contains("changed since the card showed it, so nothing was written"),
        "{told}"
    );

    // Asking again makes a new card, against the file as it is now.
    let mut again = write("v2");
    again["again"] = json!(true);
    let asked = one(&url, &claude, again).await;
    assert_eq!(asked["meta"]["iris/status"], "pending", "{asked}");
    let new_id = asked["meta"]["iris/approval_id"].as_str().unwrap();
    assert_ne!(new_id, id);
    let card = row(&url, &owner, new_id).await;
    assert!(
        card["card"]["preview"]
            .as_array()
            .unwrap()
            .contains(&json!("-changed by hand")),
        "{card}"
    );
    assert_eq!(std::fs::read_to_string(&plan).unwrap(), "changed by hand");
}

#[tokio::test]
async fn a_held_call_reports_progress_and_returns_the_result_when_approved_within_the_hold() {
    let (server, url, notes) = app(30, |b| b).await;
    let owner = server.add_device("owner", Scope::Control).await;
    let claude = server.add_device("Claude Desktop", Scope::Agent).await;

    let mut call = write("held");
    call["progress"] = json!(true);
    let held = {
        let (url, token) = (url.clone(), claude.clone());
        tokio::spawn(async move {
            let out = tokio::process::Command::new("python3")
                .arg(script("agent.py"))
                .args(["http", &format!("{url}/mcp/files"), &token])
                .arg(json!([call]).to_string())
                .output()
                .await
                .unwrap();
            answers(out).remove(0)
        })
    };
    let client = client(&url);
    let id = eventually("the held call's card", || {
        let (client, owner) = (&client, &owner);
        async move {
            let page = client
                .get("/governance/approvals?status=pending", owner)
                .await;
            page["approvals"][0]["id"].as_str().map(str::to_owned)
        }
    })
    .await;
    let (status, _) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&owner),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::OK);
    let answer = held.await.unwrap();
    assert_eq!(answer["meta"]["iris/status"], "executed", "{answer}");
    assert!(answer["progress"].as_u64().unwrap() >= 1, "{answer}");
    assert_eq!(
        std::fs::read_to_string(notes.join("plan.md")).unwrap(),
        "held"
    );
}

#[tokio::test]
async fn the_stdio_bridge_passes_reads_and_holds_writes_like_the_endpoint() {
    let (server, url, notes) = app(1, |b| b).await;
    let claude = server.add_device("Claude Desktop", Scope::Agent).await;
    // The bridge is the CLI, `iris mcp files`, started by the agent; the server it reaches runs
    // in process.
    let out = tokio::process::Command::new("python3")
        .arg(script("agent.py"))
        .args(["stdio", &support::iris_bin().to_string_lossy(), "files"])
        .arg(
            json!([
                {"list": true},
                {"call": "read_text_file", "args": {"path": "plan.md"}},
                write("by the bridge"),
            ])
            .to_string(),
        )
        .env("IRIS_URL", &url)
        .env("IRIS_TOKEN", &claude)
        .output()
        .await
        .unwrap();
    let got = answers(out);
    assert!(got[0]["tools"]
        .as_array()
        .unwrap()
        .contains(&json!("write_file")));
    assert_eq!(got[1]["text"], "v1");
    assert_eq!(got[2]["meta"]["iris/status"], "pending", "{}", got[2]);
    assert_eq!(
        std::fs::read_to_string(notes.join("plan.md")).unwrap(),
        "v1"
    );
}

/// docs/adr/0122-shaping-a-call.md: the owner edits a gateway write's `content` before
/// approving (the manifest's `editable: [content]`); the upstream writes the edited content
/// once, and the agent calling again is told the call that ran, with `iris/edited`.
#[tokio::test]
async fn a_write_the_owner_edited_writes_the_edited_content_once_and_the_agent_is_told() {
    let (server, url, notes) = app(1, |b| b).await;
    let owner = server.add_device("owner", Scope::Control).await;
    let claude = server.add_device("Claude Desktop", Scope::Agent).await;
    let client = client(&url);
    let plan = notes.join("plan.md");
    let held = one(&url, &claude, write("v2")).await;
    let id = held["meta"]["iris/approval_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let card = row(&url, &owner, &id).await;
    assert_eq!(card["card"]["editable"], json!(["content"]), "{card}");
    // The path is not editable: refused, nothing written.
    let path = format!("/governance/approvals/{id}/respond");
    let (status, refused) = client
        .post(
            &path,
            Some(&owner),
            json!({"decision": "approve", "edits": {"path": "other.md"}}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::BAD_REQUEST, "{refused}");
    assert_eq!(std::fs::read_to_string(&plan).unwrap(), "v1");
    // The review before confirming: checked as the approval will be, and the file's preview
    // remade for the edited content (against the file as it is now); nothing changes.
    let owner_actor = crate::support::owner();
    let edits = json!({"content": "v2, as the owner wrote it"});
    let review = server
        .state
        .service
        .review_edit(&id, edits.as_object().unwrap(), &owner_actor)
        .await
        .unwrap();
    assert_eq!(review.edited_fields, vec!["content".to_string()]);
    let preview = review.preview.join("\n");
    assert!(
        preview.contains("-v1") && preview.contains("+v2, as the owner wrote it"),
        "{preview}"
    );
    assert!(
        !preview.contains("+v2\n"),
        "the model's version is not previewed: {preview}"
    );
    let bad = json!({"path": "other.md"});
    assert!(server
        .state
        .service
        .review_edit(&id, bad.as_object().unwrap(), &owner_actor)
        .await
        .is_err());
    assert_eq!(row(&url, &owner, &id).await["status"], "pending");
    assert_eq!(std::fs::read_to_string(&plan).unwrap(), "v1");
    let (status, body) = client
        .post(
            &path,
            Some(&owner),
            json!({"decision": "approve", "edits": {"content": "v2, as the owner wrote it"}}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::OK, "{body}");
    client.wait_execution(&id, &owner, "executed").await;
    assert_eq!(
        std::fs::read_to_string(&plan).unwrap(),
        "v2, as the owner wrote it"
    );
    let told = one(&url, &claude, write("v2")).await;
    assert_eq!(told["meta"]["iris/edited"], true, "{told}");
    assert_eq!(
        told["meta"]["iris/decided_call"]["args"]["content"], "v2, as the owner wrote it",
        "{told}"
    );
    assert_eq!(
        std::fs::read_to_string(&plan).unwrap(),
        "v2, as the owner wrote it",
        "written once"
    );
}
