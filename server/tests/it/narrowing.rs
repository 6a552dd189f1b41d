//! Approving some of a card's items (docs/adr/0122-shaping-a-call.md), end to end in process
//! over real HTTP: the demo Maildir, the scripted model on loopback, the real store (SQLite;
//! the test command runs the suite again on PostgreSQL with `IRIS_KERNEL_ENGINE=postgres`
//! where the store's own tests cover both engines).
//!
//! - a card listing one email per line names its items argument (`card.items_arg`);
//! - a choice that does not fit is 400 and changes nothing;
//! - approving two of three moves exactly those two to Trash, once; the third is untouched;
//! - the row shows `approved_items` and the decided call with its own hash; the audit's
//!   decision lists what was left out; the resumed model is told the items left out were not
//!   touched; `iris approvals show`'s words say "Approved 2 of 3";
//! - the card's undo restores exactly the two.

use crate::support;

use iris_core::ports::Scope;
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::{eventually, moved, snapshot, TestApp};

const SCRIPT: &str = r#"
rules:
  - when: "(?i)trash"
    steps:
      - call: search_inbox
        args: {category: promotions, limit: 3}
      - call: trash_email
        args: {ids: "$ids"}
        if_empty: "Nothing matched; nothing was trashed."
      - reply: "Moved {trashed} emails to Trash. {left_out.message}"
        on_rejected: "OK, I left them alone."
fallback: "?"
"#;

#[tokio::test]
async fn approving_two_of_three_moves_exactly_those_two_and_the_undo_restores_them() {
    let model = support::ModelServer::start(SCRIPT).await;
    let dir = tempfile::tempdir().unwrap();
    iris_email::demo::write_demo_maildir(&dir.path().join("Maildir"), chrono::Utc::now()).unwrap();
    let server = TestApp::with_model(&model)
        .in_dir(dir)
        .mailbox()
        .background()
        .start()
        .await;
    let control = server.add_device("phone", Scope::Control).await;
    let client = server.client().await;
    let maildir = server.maildir();
    let original = snapshot(&maildir);

    let (s, halted) = client
        .post(
            "/api/chat",
            Some(&control),
            json!({"message": "trash three promo emails"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{halted}");
    assert_eq!(halted["status"], "awaiting_approval", "{halted}");
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let conversation = halted["conversation_id"].as_str().unwrap().to_string();
    let path = format!("/governance/approvals/{id}");
    let row = client.get(&path, &control).await;
    let items: Vec<String> = serde_json::from_value(row["items"].clone()).unwrap();
    assert_eq!(items.len(), 3, "{row}");
    assert_eq!(row["card"]["items_arg"], "ids", "{row}");
    let lines: Vec<String> = serde_json::from_value(row["card"]["lines"].clone()).unwrap();

    // A choice that does not fit: 400, nothing changes.
    for body in [
        json!({"decision": "reject", "items": [0]}),
        json!({"decision": "approve", "items": []}),
        json!({"decision": "approve", "items": [2, 2]}),
        json!({"decision": "approve", "items": [3]}),
        json!({"decision": "approve", "items": [0.5]}),
        json!({"decision": "approve", "items": "0,2"}),
    ] {
        let (s, refused) = client
            .post(&format!("{path}/respond"), Some(&control), body.clone())
            .await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body} → {refused}");
        assert!(refused["error"].as_str().is_some(), "{refused}");
    }
    // A whole number too large for an index is said as such, never as a float ("1e20").
    for (entry, said) in [
        (json!(1e20), "too large to be an index"),
        (json!(-1), "`-1`"),
    ] {
        let (s, refused) = client
            .post(
                &format!("{path}/respond"),
                Some(&control),
                json!({"decision": "approve", "items": [0, entry]}),
            )
            .await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{refused}");
        let error = refused["error"].as_str().unwrap();
        assert!(
            error.contains(said) && !error.contains("floating"),
            "{error}"
        );
    }
    let (_, refused) = client
        .post(
            &format!("{path}/respond"),
            Some(&control),
            json!({"decision": "approve", "items": [3]}),
        )
        .await;
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("this card has 3 items"),
        "{refused}"
    );
    assert_eq!(client.get(&path, &control).await["status"], "pending");
    assert_eq!(snapshot(&maildir), original, "a refused choice moved mail");

    // Approve the first and the third, named out of order.
    let (s, body) = client
        .post(
            &format!("{path}/respond"),
            Some(&control),
            json!({"decision": "approve", "items": [2, 0]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let answered = &body["approval"];
    assert_eq!(answered["approved_items"], json!([0, 2]), "{body}");
    let kept = vec![items[0].clone(), items[2].clone()];
    assert_eq!(answered["decided_call"]["tool"], "trash_email");
    assert_eq!(answered["decided_call"]["args"], json!({"ids": kept}));
    let decided_hash = answered["decided_call"]["call_hash"].as_str().unwrap();
    assert_eq!(decided_hash.len(), 64);
    assert_ne!(decided_hash, answered["call_hash"].as_str().unwrap());
    // The request's terms are as they were.
    assert_eq!(answered["args"], json!({"ids": items}));

    let row = client.wait_execution(&id, &control, "executed").await;
    assert_eq!(row["result"]["trashed"], 2, "{row}");
    let ran: Vec<&str> = row["result"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    assert_eq!(ran, kept, "{row}");
    assert_eq!(row["result"]["left_out"]["count"], 1, "{row}");
    assert_eq!(
        row["result"]["left_out"]["items"][0]["id"],
        items[1].as_str()
    );

    // Exactly two files moved, into Trash; the third item's file is where it was.
    let after = snapshot(&maildir);
    assert_eq!(after.len(), original.len(), "a file was lost");
    let (gone, arrived) = moved(&original, &after);
    assert_eq!(gone.len(), 2, "{gone:?}");
    assert!(
        arrived.iter().all(|k| k.starts_with(".Trash/cur/")),
        "{arrived:?}"
    );

    // The decision's audit entry says what was approved and what was left out.
    let audit = client
        .get(&format!("/api/audit?approval_id={id}"), &control)
        .await;
    let decision = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "decision")
        .cloned()
        .expect("the decision's entry");
    assert_eq!(
        decision["result"]["approved_items"],
        json!([0, 2]),
        "{decision}"
    );
    assert_eq!(decision["result"]["left_out"][0]["item"], items[1].as_str());
    assert_eq!(decision["result"]["left_out"][0]["line"], lines[1].as_str());

    // The resumed model was told which item was left out and that it was not touched.
    let reply = eventually("the resumed run's reply", || {
        let client = &client;
        let (c, t) = (conversation.clone(), control.clone());
        async move {
            let r = client.last_reply(&c, &t).await;
            r.starts_with("Moved 2 emails").then_some(r)
        }
    })
    .await;
    assert!(
        reply.contains("The owner approved 2 of 3; the other 1 was left out and not touched"),
        "{reply}"
    );
    assert!(reply.contains(lines[1].as_str()), "{reply}");

    // Every surface's words (the card, `iris approvals show`, Telegram) say so.
    let approval: iris_core::wire::Approval = serde_json::from_value(row.clone()).unwrap();
    let sentence = app::format::execution_sentence(&approval);
    assert!(
        sentence.starts_with(&format!(
            "Approved 2 of 3; left out, not touched: {}",
            lines[1].trim_end_matches('.')
        )),
        "{sentence}"
    );

    // The card's undo restores exactly the two, and every file is back.
    let (s, body) = client
        .post(&format!("{path}/undo"), Some(&control), json!({}))
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let mut undone: Vec<String> =
        serde_json::from_value(body["approval"]["undo"]["items"].clone()).unwrap();
    undone.sort();
    let mut expected = kept.clone();
    expected.sort();
    assert_eq!(undone, expected);
    assert_eq!(
        snapshot(&maildir),
        original,
        "the undo did not restore the two"
    );
}

#[tokio::test]
async fn a_card_of_one_item_is_all_or_nothing() {
    let model = support::ModelServer::start(&SCRIPT.replace("limit: 3", "limit: 1")).await;
    let dir = tempfile::tempdir().unwrap();
    iris_email::demo::write_demo_maildir(&dir.path().join("Maildir"), chrono::Utc::now()).unwrap();
    let server = TestApp::with_model(&model)
        .in_dir(dir)
        .mailbox()
        .start()
        .await;
    let control = server.add_device("phone", Scope::Control).await;
    let client = server.client().await;
    let (_, halted) = client
        .post(
            "/api/chat",
            Some(&control),
            json!({"message": "trash a promo email"}),
        )
        .await;
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let row: Value = client
        .get(&format!("/governance/approvals/{id}"), &control)
        .await;
    assert!(row["card"].get("items_arg").is_none(), "{row}");
    // All of its one item is a plain approval; the request's call is the one that runs.
    let (s, body) = client
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(&control),
            json!({"decision": "approve", "items": [0]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert!(body["approval"].get("approved_items").is_none(), "{body}");
    assert!(body["approval"].get("decided_call").is_none(), "{body}");
}
