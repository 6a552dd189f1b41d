//! A files card and a calendar card in the owner's chat, as a mail card is: their lines as the
//! disk or the calendar gave them, escaped, the undo sentence, the action's confirm, and Yes
//! runs exactly the pinned call once (the file into its root's quarantine, the event deleted).

use crate::support;

use iris_core::ports::Scope;
use serde_json::json;
use support::telegram::{escape, FakeBot, OWNER, TOKEN};
use support::{eventually, ModelServer, TestApp};

use super::{card_keyboard, row};

/// Asks with `message` on a server `build` configures (its model playing `script`, Telegram
/// on): the card (`action`, its first line `line`) arrives in the owner's chat escaped, with its
/// undo sentence and buttons; nothing runs before Yes (`ran` stays false), and Yes runs it once
/// from the `telegram` surface.
async fn answered_from_the_owners_chat(
    script: &str,
    build: impl FnOnce(support::app::Build) -> support::app::Build,
    message: &str,
    action: &str,
    line: &str,
    ran: impl Fn() -> bool,
) {
    let bot = FakeBot::start().await;
    let model = ModelServer::start(script).await;
    let server = build(TestApp::with_model(&model))
        .telegram(&bot.url, TOKEN, OWNER)
        .background()
        .start()
        .await;
    let control = server.add_device("phone", Scope::Control).await;
    let client = server.client().await;
    let (_, halted) = client
        .post("/api/chat", Some(&control), json!({ "message": message }))
        .await;
    let id = halted["approval_id"].as_str().unwrap().to_string();
    let card = row(&client, &control, &id).await;
    assert_eq!(card["card"]["action"], action);

    let sent = eventually("the card message", || async {
        let sent = bot.calls("sendMessage");
        (!sent.is_empty()).then_some(sent)
    })
    .await;
    let text = sent[0]["text"].as_str().unwrap().to_string();
    let first = card["card"]["lines"][0].as_str().unwrap();
    assert!(first.starts_with(line), "{first}");
    assert!(text.contains(&escape(first)), "{first} in {text}");
    assert!(
        text.contains(&escape(card["card"]["undo_note"].as_str().unwrap())),
        "{text}"
    );
    assert_eq!(sent[0]["reply_markup"], card_keyboard(&card));

    let q = bot.tap(OWNER, OWNER, 1, &format!("a:{id}"));
    bot.answer(&q).await;
    assert!(!ran(), "nothing before Yes");
    let q = bot.tap(OWNER, OWNER, 1, &format!("y:{id}"));
    assert_eq!(bot.answer(&q).await, "Approved.");
    let done = client.wait_execution(&id, &control, "executed").await;
    assert_eq!(done["surface"], "telegram", "{done}");
    assert!(ran());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_files_card_is_answered_from_the_owners_chat() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("logs")).unwrap();
    // A name with MarkdownV2 specials: it must arrive escaped.
    std::fs::write(root.path().join("logs/old_(1).log"), b"old lines\n").unwrap();
    let path = root.path().to_path_buf();
    answered_from_the_owners_chat(
        support::scripts::FILES_CLEANUP_SCRIPT,
        |app| app.files_root("downloads", &path),
        "clean up logs/*.log",
        "Move 1 file to quarantine",
        "logs/old_(1).log — 10 bytes",
        || !path.join("logs/old_(1).log").exists(),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calendar_card_is_answered_from_the_owners_chat() {
    // A summary with MarkdownV2 specials: it must arrive escaped.
    let folder = support::calendars::one_event("Dentist (check-up) #2 *urgent*");
    let path = folder.path().to_path_buf();
    answered_from_the_owners_chat(
        support::calendars::DELETE_SCRIPT,
        |app| app.calendar_folder("personal", &path),
        "delete dentist",
        "Delete 1 event",
        "Dentist (check-up) #2 *urgent* — Tue 8 Dec 2026, 10:00–11:00 (Europe/Berlin) · Home",
        || !support::calendars::still_there(&path),
    )
    .await;
}
