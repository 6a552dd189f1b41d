//! The main job end to end over real HTTP, in process: `iris::build` + `iris::app` on a listener
//! (`support::TestApp`) with its resume workers and sweeps, a temp SQLite database (or a fresh
//! PostgreSQL one) and a real Maildir, the chat driven through a scripted OpenAI-compatible
//! server on loopback. A trash request halts, nothing moves, a read device gets 403, reject moves
//! nothing, the pending approval survives a restart (the same database served again), approve
//! moves exactly the pinned files to `.Trash` once, the audit has one entry per item, and a
//! second answer is 409; the card's undo then restores exactly those files once (403 read, 404
//! unknown, 409 a rejected card or a second tap). Two servers on one database are two `iris`
//! processes.

use crate::support;

use iris_core::ports::Scope;
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::{copy_messages, eventually, snapshot, Client, ModelServer, TestApp, World};

fn script(search_args: Value) -> String {
    format!(
        r#"
rules:
  - when: "(?i)trash"
    steps:
      - call: search_inbox
        args: {search_args}
      - call: trash_email
        args: {{ids: "$ids"}}
        if_empty: "Nothing matched; nothing was trashed."
      - reply: "Done: moved {{trashed}} emails to Trash."
        on_rejected: "OK, I left them alone. Nothing was changed, sent or deleted."
fallback: "?"
"#
    )
}

/// A server in process on `dir` (its `Maildir/` written already), on `database_url` when given,
/// with its background work running.
async fn serve(model: &ModelServer, dir: tempfile::TempDir, database_url: Option<&str>) -> TestApp {
    let build = TestApp::with_model(model)
        .in_dir(dir)
        .mailbox()
        .background();
    match database_url {
        Some(url) => build.database_url(url),
        None => build,
    }
    .start()
    .await
}

/// A temp folder whose `Maildir/` holds the demo mailbox: how many messages were written.
fn demo_folder() -> (tempfile::TempDir, usize) {
    let dir = tempfile::tempdir().unwrap();
    let written =
        iris_email::demo::write_demo_maildir(&dir.path().join("Maildir"), chrono::Utc::now())
            .unwrap();
    (dir, written)
}

async fn trash_flow(
    model: ModelServer,
    dir: tempfile::TempDir,
    database_url: Option<&str>,
    request: &str,
) {
    let server = serve(&model, dir, database_url).await;
    let control = server.add_device("phone", Scope::Control).await;
    let read = server.add_device("wall", Scope::Read).await;
    let client = server.client().await;
    let maildir = server.maildir();
    let original = snapshot(&maildir);

    // 401 without credentials, 403 for a read device on a state-changing route.
    let (s, _) = client
        .post("/api/chat", None, json!({"message": request}))
        .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, _) = client
        .post("/api/chat", Some(&read), json!({"message": request}))
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN);

    // --- Reject: nothing moves, the reply says nothing was changed.
    let (s, halted) = client
        .post("/api/chat", Some(&control), json!({"message": request}))
        .await;
    assert_eq!(s, StatusCode::OK, "{halted}");
    assert_eq!(halted["status"], "awaiting_approval", "{halted}");
    assert_eq!(halted["effects_executed"], json!([]));
    assert_eq!(halted["resumed"], false);
    let rejected_id = halted["approval_id"].as_str().unwrap().to_string();
    assert!(halted["reply"]
        .as_str()
        .unwrap()
        .contains(&format!("/activity/{rejected_id}")));
    assert_eq!(snapshot(&maildir), original, "a halted call moved mail");

    let (s, body) = client
        .post(
            &format!("/governance/approvals/{rejected_id}/respond"),
            Some(&control),
            json!({"decision": "reject", "reason": "not these"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["approval"]["status"], "rejected");
    let conversation = halted["conversation_id"].as_str().unwrap().to_string();
    let reply = eventually("the rejected run's reply", || {
        let client = &client;
        let (c, t) = (conversation.clone(), control.clone());
        async move {
            let r = client.last_reply(&c, &t).await;
            r.contains("Nothing was changed").then_some(r)
        }
    })
    .await;
    assert!(reply.contains("Nothing was changed"), "{reply}");
    assert_eq!(snapshot(&maildir), original, "a rejected call moved mail");
    let row = client
        .get(&format!("/governance/approvals/{rejected_id}"), &control)
        .await;
    assert_eq!(row["execution"], "none");
    assert_eq!(row["reason"], "not these");

    // --- Halt again, then restart the server between halt and approve.
    let (_, halted) = client
        .post("/api/chat", Some(&control), json!({"message": request}))
        .await;
    assert_eq!(halted["status"], "awaiting_approval", "{halted}");
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let conversation = halted["conversation_id"].as_str().unwrap().to_string();
    let server = serve(&model, server.stop().await, database_url).await;
    let client = server.client().await;
    let row = client
        .get(&format!("/governance/approvals/{id}"), &control)
        .await;
    assert_eq!(
        row["status"], "pending",
        "the approval did not survive a restart"
    );
    assert_eq!(row["kind"], "destructive");
    assert_eq!(row["tool"], "trash_email");
    let items: Vec<String> = serde_json::from_value(row["items"].clone()).unwrap();
    assert!(!items.is_empty());
    assert_eq!(row["args"]["ids"], json!(items));
    assert_eq!(row["card"]["lines"].as_array().unwrap().len(), items.len());
    let n = items.len();
    let plural = if n == 1 { "email" } else { "emails" };
    assert_eq!(row["card"]["action"], format!("Trash {n} {plural}"));
    assert_eq!(row["card"]["undo_tool"], "restore_email");
    assert_eq!(row["card"]["undo_window_days"], 30);
    assert_eq!(row["card"]["request"], request);
    assert_eq!(row["call_hash"].as_str().unwrap().len(), 64);
    let listed = client
        .get("/governance/approvals?status=pending", &read)
        .await;
    assert_eq!(listed["approvals"].as_array().unwrap().len(), 1);
    assert_eq!(listed["approvals"][0]["id"], id.as_str());

    // A read device may look but not answer; a missing token is 401. Nothing moves.
    let (s, _) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&read),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            None,
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, _) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&control),
            json!({"decision": "maybe"}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    // A JSON array is not the contract's object, even if serde could read it as one.
    let (s, _) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&control),
            json!(["approve"]),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, _) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some("iris_not_a_device"),
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, _) = client
        .post(
            "/api/chat",
            Some(&control),
            json!({"message": "x".repeat(4001)}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(snapshot(&maildir), original);

    // --- A choice of items that does not fit, and an edited call (not offered yet), are
    // refused, not ignored (ignoring them would approve the whole call).
    for field in [
        json!({"items": [n]}),
        json!({"items": []}),
        json!({"items": [0, 0]}),
        json!({"items": [-1]}),
        json!({"items": ["0"]}),
        json!({"edits": {"ids": []}}),
    ] {
        let mut body = json!({"decision": "approve"});
        body.as_object_mut()
            .unwrap()
            .extend(field.as_object().unwrap().clone());
        let (s, refused) = client
            .post(
                &format!("/governance/approvals/{id}/respond"),
                Some(&control),
                body,
            )
            .await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{refused}");
        assert_eq!(snapshot(&maildir), original);
    }
    let row = client
        .get(&format!("/governance/approvals/{id}"), &control)
        .await;
    assert_eq!(row["status"], "pending", "{row}");

    // --- Approve, with a forged tool and args in the body: they are ignored.
    let (s, body) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&control),
            json!({"decision": "approve", "tool": "restore_email", "args": {"ids": ["forged"]}}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["approval"]["status"], "approved");
    assert_eq!(body["approval"]["responded_by"], "phone");
    let row = client.wait_execution(&id, &control, "executed").await;
    assert_eq!(row["result"]["trashed"], n);

    // Exactly the pinned files moved to .Trash, byte for byte; nothing was deleted.
    let after = snapshot(&maildir);
    assert_eq!(after.len(), original.len(), "a file was lost");
    let gone: Vec<&String> = original
        .keys()
        .filter(|k| !after.contains_key(*k))
        .collect();
    let arrived: Vec<&String> = after
        .keys()
        .filter(|k| !original.contains_key(*k))
        .collect();
    assert_eq!(gone.len(), n, "not exactly the pinned messages moved");
    assert!(
        arrived.iter().all(|k| k.starts_with(".Trash/cur/")),
        "{arrived:?}"
    );
    let mut gone_bytes: Vec<&Vec<u8>> = gone.iter().map(|k| &original[*k]).collect();
    let mut arrived_bytes: Vec<&Vec<u8>> = arrived.iter().map(|k| &after[*k]).collect();
    gone_bytes.sort();
    arrived_bytes.sort();
    assert_eq!(gone_bytes, arrived_bytes, "trashed files changed");

    // The audit: one decision, one execution entry per item, each with an undo.
    let audit = client.audit_with_executions(&id, &control, n).await;
    let entries = audit["entries"].as_array().unwrap();
    let executions: Vec<&Value> = entries
        .iter()
        .filter(|e| e["kind"] == "execution")
        .collect();
    assert_eq!(executions.len(), n);
    let mut audited: Vec<String> = executions
        .iter()
        .map(|e| e["item"].as_str().unwrap().to_string())
        .collect();
    audited.sort();
    let mut pinned = items.clone();
    pinned.sort();
    assert_eq!(audited, pinned);
    assert!(executions.iter().all(|e| e["undo_available"] == true));
    assert_eq!(
        entries.iter().filter(|e| e["kind"] == "decision").count(),
        1
    );

    // A second answer is 409 and says who decided, where and when.
    let (s, body) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&control),
            json!({"decision": "reject"}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert!(body["error"].as_str().unwrap().contains("phone"), "{body}");
    assert_eq!(body["approval"]["responded_by"], "phone");
    assert_eq!(body["approval"]["surface"], "api");

    // The resumed run continued from the real result.
    let reply = eventually("the resumed run's reply", || {
        let client = &client;
        let (c, t) = (conversation.clone(), control.clone());
        async move {
            let r = client.last_reply(&c, &t).await;
            r.starts_with("Done").then_some(r)
        }
    })
    .await;
    assert_eq!(reply, format!("Done: moved {n} emails to Trash."));
    assert_eq!(snapshot(&maildir), after, "something ran twice");

    // --- Undo from the card: the card's undo tool for exactly the items that executed, once.
    let undo_path = format!("/governance/approvals/{id}/undo");
    let (s, _) = client.post(&undo_path, Some(&read), json!({})).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _) = client.post(&undo_path, None, json!({})).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, _) = client
        .post(
            "/governance/approvals/no-such-card/undo",
            Some(&control),
            json!({}),
        )
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, body) = client
        .post(
            &format!("/governance/approvals/{rejected_id}/undo"),
            Some(&control),
            json!({}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert!(body["approval"]["undo"].is_null(), "{body}");
    assert_eq!(snapshot(&maildir), after, "a refused undo moved mail");
    let row = client
        .get(&format!("/governance/approvals/{id}"), &control)
        .await;
    assert_eq!(row["card"]["undo_action"], format!("Restore {n} emails"));
    assert!(row["undo"].is_null(), "{row}");
    // A body that asks for something else (some items only) is refused, not ignored.
    let (s, body) = client
        .post(&undo_path, Some(&control), json!({"items": [pinned[0]]}))
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(snapshot(&maildir), after, "a refused undo moved mail");
    let (s, body) = client.post(&undo_path, Some(&control), json!({})).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let undo = &body["approval"]["undo"];
    assert_eq!(undo["state"], "done", "{body}");
    assert_eq!(undo["by"], "phone");
    assert_eq!(undo["surface"], "api");
    let mut undone: Vec<String> = serde_json::from_value(undo["items"].clone()).unwrap();
    undone.sort();
    assert_eq!(undone, pinned, "the undo names exactly the executed items");
    assert_eq!(
        undo["result"]["summary"],
        format!("Restored {n} emails from Trash to where they were.")
    );
    // Every file is back where it was, byte for byte.
    assert_eq!(
        snapshot(&maildir),
        original,
        "the undo did not restore the mail"
    );
    // Once whatever the taps: 409 naming who undid it; nothing moves again.
    let (s, body) = client.post(&undo_path, Some(&control), json!({})).await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("already undone by phone via api"),
        "{body}"
    );
    assert_eq!(snapshot(&maildir), original);
    let audit = client
        .get(&format!("/api/audit?approval_id={id}"), &control)
        .await;
    let undo_entries: Vec<&Value> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "undo")
        .collect();
    assert_eq!(undo_entries.len(), n + 2, "request, one per item, end");

    // The model saw the manifests' tools as functions and JSON-object tool results.
    let requests = model.requests.lock().unwrap().clone();
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"trash_email") && tools.contains(&"search_inbox"));
    assert!(requests.iter().any(|r| r["messages"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["role"] == "tool")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trash_flow_on_the_demo_mailbox() {
    let model =
        ModelServer::start(&script(json!({"category": "promotions", "since_days": 7}))).await;
    let (dir, written) = demo_folder();
    assert!(written > 0);
    trash_flow(model, dir, None, "trash the promo emails from this week").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corpus_trash_flow_on_real_mail() {
    let Some(corpora) = std::env::var_os("IRIS_CORPORA") else {
        eprintln!("skipped: IRIS_CORPORA is not set (the test command sets it when ../shared/corpora exists)");
        return;
    };
    let model = ModelServer::start(&script(json!({"query": "notmuch", "limit": 3}))).await;
    let dir = tempfile::tempdir().unwrap();
    let maildir = dir.path().join("Maildir");
    for sub in ["cur", "new", "tmp"] {
        std::fs::create_dir_all(maildir.join(sub)).unwrap();
    }
    let copied = copy_messages(
        &std::path::Path::new(&corpora).join("notmuch-default/cur"),
        &maildir,
    );
    assert_eq!(copied, 53);
    trash_flow(model, dir, None, "trash the three newest notmuch emails").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trash_flow_on_postgres() {
    let (url, _database) = iris_store::testing::fresh_postgres_database().await;
    let model =
        ModelServer::start(&script(json!({"category": "promotions", "since_days": 7}))).await;
    let (dir, _) = demo_folder();
    trash_flow(
        model,
        dir,
        Some(&url),
        "trash the promo emails from this week",
    )
    .await;
}

/// DESIGN §8 "one pinned call executes at most once, whatever … two surfaces answering at
/// once": two servers on one PostgreSQL database share the queue; concurrent approves through
/// both give one decision and one execution.
// Needs a process: several servers on one database.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_servers_on_one_postgres_database_execute_once() {
    let (url, _database) = iris_store::testing::fresh_postgres_database().await;
    let model =
        ModelServer::start(&script(json!({"category": "promotions", "since_days": 7}))).await;
    let mut world = World::new(&model.base_url);
    world.database_url = url;
    iris_email::demo::write_demo_maildir(&world.maildir, chrono::Utc::now()).unwrap();
    let tokens: Vec<String> = (0..4)
        .map(|i| world.add_device(&format!("device-{i}"), "control"))
        .collect();
    let a = world.start();
    let b = world.start();
    let http = reqwest::Client::new();
    let client_a = Client {
        http: http.clone(),
        url: a.url.clone(),
    };
    let original = snapshot(&world.maildir);
    let (_, halted) = client_a
        .post(
            "/api/chat",
            Some(&tokens[0]),
            json!({"message": "trash the promo emails from this week"}),
        )
        .await;
    let id = halted["approval_id"].as_str().unwrap().to_string();

    // 24 answers at once, alternating servers and devices.
    let mut answers = Vec::new();
    for i in 0..24 {
        let url = if i % 2 == 0 {
            a.url.clone()
        } else {
            b.url.clone()
        };
        let token = tokens[i % tokens.len()].clone();
        let http = http.clone();
        let id = id.clone();
        answers.push(tokio::spawn(async move {
            http.post(format!("{url}/governance/approvals/{id}/respond"))
                .bearer_auth(token)
                .json(&json!({"decision": "approve"}))
                .send()
                .await
                .unwrap()
                .status()
        }));
    }
    let mut statuses = Vec::new();
    for a in answers {
        statuses.push(a.await.unwrap());
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == StatusCode::OK).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses
            .iter()
            .filter(|s| **s == StatusCode::CONFLICT)
            .count(),
        23
    );

    let row = client_a.wait_execution(&id, &tokens[0], "executed").await;
    let n = row["items"].as_array().unwrap().len();
    let audit = client_a.audit_with_executions(&id, &tokens[0], n).await;
    let entries = audit["entries"].as_array().unwrap();
    assert_eq!(
        entries.iter().filter(|e| e["kind"] == "execution").count(),
        n
    );
    assert_eq!(
        entries.iter().filter(|e| e["kind"] == "decision").count(),
        1
    );
    let after = snapshot(&world.maildir);
    assert_eq!(
        original.keys().filter(|k| !after.contains_key(*k)).count(),
        n,
        "not exactly the pinned mail moved"
    );
    drop((a, b));
}
