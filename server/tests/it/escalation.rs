//! `IRIS_ESCALATION` end to end (DESIGN §2 "escalation"): the server in process
//! (`support::TestApp`) with the rule judge around `/api/chat`, the scripted model on loopback,
//! and the curator table read back from the server's SQLite database. In `enforce` mode an answer that "doesn't know how"
//! and ran nothing is re-run once (and the re-run answers), a turn that ran a write is never
//! re-run, a turn waiting on an approval is never re-run, and the hop limit holds; in `shadow`
//! mode every verdict is recorded and nothing is re-run.

use crate::support;

use iris_core::escalation::{CuratorStore, EscalationMode, NotActed, Verdict};
use serde_json::{json, Value};
use support::{ModelServer, TestApp};

const SCRIPT: &str = r#"
rules:
  - when: "(?s)promos.*IRIS escalation"
    steps:
      - call: search_inbox
        args: {category: promotions, since_days: 7}
      - reply: "I found {count} promo emails from this week."
  - when: "(?i)undo"
    steps:
      - call: restore_email
        args: {}
      - reply: "I couldn't find anything else to undo."
  - when: "(?i)trash"
    steps:
      - call: search_inbox
        args: {category: promotions, since_days: 7}
      - call: trash_email
        args: {ids: "$ids"}
      - reply: "Done: moved {trashed} emails to Trash."
fallback: "I don't know how to do that."
"#;

struct Rig {
    server: TestApp,
    model: ModelServer,
}

async fn rig(mode: EscalationMode) -> Rig {
    let model = ModelServer::start(SCRIPT).await;
    let server = TestApp::with_model(&model)
        .mailbox()
        .escalation(mode)
        .start()
        .await;
    Rig { server, model }
}

impl Rig {
    /// `POST /api/chat`, which must answer 200: its body.
    async fn chat(&self, message: &str) -> Value {
        self.server.chat(message).await
    }

    /// The curator table's rows of `conversation` (all rows when it is null).
    async fn records(&self, conversation: &Value) -> Vec<iris_core::escalation::CuratorRecord> {
        self.server
            .state
            .store
            .records(conversation.as_str())
            .await
            .unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enforce_reruns_only_what_the_rules_allow() {
    let r = rig(EscalationMode::Enforce).await;

    // Ran nothing and "doesn't know how": re-run once in the same conversation; the re-run
    // answers and is judged ok.
    let body = r.chat("list my promos").await;
    assert_eq!(body["status"], "done", "{body}");
    let reply = body["reply"].as_str().unwrap();
    assert!(reply.starts_with("I found "), "{reply}");
    assert_eq!(body["effects_executed"], json!([]));
    let rows = r.records(&body["conversation_id"]).await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(
        (rows[0].hop, rows[0].verdict, rows[0].acted),
        (0, Verdict::Escalate, true)
    );
    assert_eq!(rows[0].mode, EscalationMode::Enforce);
    assert_ne!(rows[0].run_id, body["run_id"].as_str().unwrap());
    assert_eq!(
        (rows[1].hop, rows[1].verdict, rows[1].not_acted),
        (1, Verdict::Ok, Some(NotActed::NoAction))
    );
    assert_eq!(rows[1].run_id, body["run_id"].as_str().unwrap());
    // The model was asked again with the note.
    let last = r.model.requests.lock().unwrap().last().unwrap().clone();
    let users: Vec<String> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(users.len(), 2);
    assert!(users[1].starts_with("list my promos") && users[1].contains("IRIS escalation"));

    // A write ran: never re-run, whatever the verdict.
    let body = r.chat("undo that").await;
    assert_eq!(body["effects_executed"], json!(["write"]));
    assert_eq!(body["reply"], "I couldn't find anything else to undo.");
    let rows = r.records(&body["conversation_id"]).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].verdict, Verdict::Escalate);
    assert!(!rows[0].acted);
    assert_eq!(rows[0].not_acted, Some(NotActed::EffectsExecuted));

    // Waiting on an approval: never re-run.
    let body = r.chat("trash this week's promos").await;
    assert_eq!(body["status"], "awaiting_approval");
    let rows = r.records(&body["conversation_id"]).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].not_acted, Some(NotActed::AwaitingApproval));

    // Still "doesn't know how" after the re-run: the hop limit (1) stops it.
    let body = r.chat("xyzzy").await;
    assert_eq!(body["reply"], "I don't know how to do that.");
    let rows = r.records(&body["conversation_id"]).await;
    assert_eq!(rows.len(), 2);
    assert!(rows[0].acted);
    assert_eq!(rows[1].not_acted, Some(NotActed::HopLimit));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shadow_records_and_never_reruns() {
    let r = rig(EscalationMode::Shadow).await;
    let body = r.chat("list my promos").await;
    assert_eq!(body["reply"], "I don't know how to do that.");
    assert_eq!(
        r.model.requests.lock().unwrap().len(),
        1,
        "the turn was re-run"
    );
    let rows = r.records(&body["conversation_id"]).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].verdict, Verdict::Escalate);
    assert_eq!(rows[0].mode, EscalationMode::Shadow);
    assert!(!rows[0].acted);
    assert_eq!(rows[0].not_acted, Some(NotActed::Shadow));
    assert_eq!(rows[0].run_id, body["run_id"].as_str().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_records_nothing() {
    let r = rig(EscalationMode::Off).await;
    let body = r.chat("list my promos").await;
    assert_eq!(body["reply"], "I don't know how to do that.");
    assert!(r.records(&Value::Null).await.is_empty());
}
