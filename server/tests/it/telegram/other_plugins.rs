//! A files card in the owner's chat, as a mail card is: its lines as the disk gave them,
//! escaped, its undo sentence, the action's confirm, and Yes moves exactly the pinned file into
//! its root's quarantine once.

use crate::support;

use iris_core::ports::Scope;
use serde_json::json;
use support::telegram::{escape, FakeBot, OWNER, TOKEN};
use support::{eventually, ModelServer, TestApp};

use super::{card_keyboard, row};

const SCRIPT: &str = r#"
rules:
  - when: "(?i)clean up (.+)"
    steps:
      - call: list_files
        args: {root: downloads, glob: "$1"}
      - call: quarantine_files
        args: {paths: "$ids"}
      - reply: "{summary}"
fallback: "?"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_files_card_is_answered_from_the_owners_chat() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("logs")).unwrap();
    // A name with MarkdownV2 specials: it must arrive escaped.
    std::fs::write(root.path().join("logs/old_(1).log"), b"old lines\n").unwrap();
    let bot = FakeBot::start().await;
    let model = ModelServer::start(SCRIPT).await;
    let server = TestApp::with_model(&model)
        .files_root("downloads", root.path())
        .telegram(&bot.url, TOKEN, OWNER)
        .background()
        .start()
        .await;
    let control = server.add_device("phone", Scope::Control).await;
    let client = server.client().await;
    let (_, halted) = client
        .post(
            "/api/chat",
            Some(&control),
            json!({"message": "clean up logs/*.log"}),
        )
        .await;
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let card = row(&client, &control, &id).await;
    assert_eq!(card["card"]["action"], "Move 1 file to quarantine");

    let sent = eventually("the card message", || async {
        let sent = bot.calls("sendMessage");
        (!sent.is_empty()).then_some(sent)
    })
    .await;
    let text = sent[0]["text"].as_str().unwrap().to_string();
    let line = card["card"]["lines"][0].as_str().unwrap();
    assert!(line.starts_with("logs/old_(1).log — 10 bytes"), "{line}");
    assert!(text.contains(&escape(line)), "{line} in {text}");
    assert!(
        text.contains(&escape(card["card"]["undo_note"].as_str().unwrap())),
        "{text}"
    );
    assert_eq!(sent[0]["reply_markup"], card_keyboard(&card));

    let q = bot.tap(OWNER, OWNER, 1, &format!("a:{id}"));
    bot.answer(&q).await;
    assert!(
        root.path().join("logs/old_(1).log").exists(),
        "nothing before Yes"
    );
    let q = bot.tap(OWNER, OWNER, 1, &format!("y:{id}"));
    assert_eq!(bot.answer(&q).await, "Approved.");
    let done = client.wait_execution(&id, &control, "executed").await;
    assert_eq!(done["surface"], "telegram", "{done}");
    assert!(!root.path().join("logs/old_(1).log").exists());
}
