use super::tap::{actor_name, from_owner};
use super::*;
use bot_api::{CallbackQuery, Chat, MessageRef, User};
use iris_core::wire::Execution;

fn tap(from: i64, chat: Option<i64>) -> CallbackQuery {
    CallbackQuery {
        id: "q".into(),
        from: User {
            id: from,
            first_name: "Anna".into(),
            username: None,
        },
        message: chat.map(|id| MessageRef {
            message_id: 1,
            chat: Chat { id },
        }),
        data: None,
    }
}

#[test]
fn only_the_owners_chat_may_answer() {
    assert!(from_owner(42, &tap(42, Some(42))));
    assert!(!from_owner(42, &tap(7, Some(7))), "another chat");
    assert!(
        !from_owner(42, &tap(7, Some(42))),
        "another person in the owner's chat id"
    );
    assert!(
        !from_owner(42, &tap(42, Some(7))),
        "the owner, in another chat"
    );
    assert!(!from_owner(42, &tap(42, None)), "no message to check");
    // A group as the owner's chat: its members answer; other chats do not.
    assert!(from_owner(-100, &tap(7, Some(-100))));
    assert!(!from_owner(-100, &tap(7, Some(-101))));
}

#[test]
fn actor_names() {
    let mut user = tap(42, None).from;
    assert_eq!(actor_name(&user), "Anna");
    user.username = Some("anna".into());
    assert_eq!(actor_name(&user), "@anna");
    user.username = None;
    user.first_name = "  ".into();
    assert_eq!(actor_name(&user), "telegram user 42");
}

/// Start-up skips messages whose outcome will not change; an approved call still on its
/// way is not one of them.
#[test]
fn only_a_final_outcome_is_settled() {
    use chrono::{TimeZone, Utc};
    use iris_core::wire::{ApprovalKind, Card, Effect};
    let at = Utc.with_ymd_and_hms(2026, 11, 30, 10, 0, 0).unwrap();
    let mut row = Approval {
        id: "a1".into(),
        kind: ApprovalKind::Destructive,
        status: ApprovalStatus::Pending,
        tool: "trash_email".into(),
        args: serde_json::json!({"ids": ["m1"]}),
        call_hash: "h".into(),
        items: vec!["m1".into()],
        card: Card {
            title: "Trash 1 email".into(),
            action: "Trash 1 email".into(),
            effect: Effect::Destructive,
            lines: vec![],
            undo_tool: None,
            undo_window_days: None,
            request: "trash it".into(),
            undo_note: None,
            undo_action: None,
            preview: Vec::new(),
            overlaps: Vec::new(),
            items_arg: None,
            editable: Vec::new(),
            trail: Vec::new(),
            flags: Vec::new(),
        },
        run_id: "r1".into(),
        created_at: at,
        expires_at: at,
        responded_at: None,
        responded_by: None,
        surface: None,
        reason: None,
        execution: Execution::None,
        result: None,
        resume_error: None,
        undo: None,
        passkey_required: false,
        requested_by: None,
        running: None,
        undo_left: None,
        located: None,
        approved_items: None,
        decided_call: None,
        edited_fields: None,
    };
    assert!(!settled(&row));
    row.status = ApprovalStatus::Approved;
    assert!(!settled(&row), "approved, not yet run");
    row.execution = Execution::Executing;
    assert!(!settled(&row), "running");
    for done in [Execution::Executed, Execution::Failed, Execution::Unknown] {
        row.execution = done;
        assert!(settled(&row), "{done:?}");
    }
    row.execution = Execution::None;
    for status in [ApprovalStatus::Rejected, ApprovalStatus::Expired] {
        row.status = status;
        assert!(settled(&row), "{status:?}");
    }
}

#[test]
fn backoff_doubles_to_a_minute_and_resets() {
    let mut b = Backoff::new();
    let waits: Vec<u64> = (0..8).map(|_| b.next_wait().as_secs()).collect();
    assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60]);
    b.reset();
    assert_eq!(b.next_wait().as_secs(), 1);
}

#[test]
#[allow(clippy::result_large_err)]
fn settings_from_the_environment() {
    figment::Jail::expect_with(|jail| {
        let load = || Settings::load().map_err(|e| *e);
        assert_eq!(TelegramSettings::from_settings(&load()?), Ok(None));
        jail.set_env("IRIS_TELEGRAM_TOKEN", "123:abc");
        assert_eq!(
            TelegramSettings::from_settings(&load()?),
            Err(TelegramSettingsError::MissingChatId)
        );
        jail.set_env("IRIS_TELEGRAM_CHAT_ID", "4242");
        let s = TelegramSettings::from_settings(&load()?).unwrap().unwrap();
        assert_eq!(s.owner_chat_id, 4242);
        assert_eq!(s.api_url, DEFAULT_API_URL);
        assert!(
            !format!("{s:?}").contains("abc"),
            "the token is never printed"
        );
        jail.set_env("IRIS_TELEGRAM_CHAT_ID", "-1001234567890");
        jail.set_env("IRIS_TELEGRAM_API_URL", "http://127.0.0.1:9/");
        let s = TelegramSettings::from_settings(&load()?).unwrap().unwrap();
        assert_eq!(s.owner_chat_id, -1001234567890);
        assert_eq!(s.api_url, "http://127.0.0.1:9");
        // In iris.toml the chat id may be written as a number too.
        jail.create_file("iris.toml", "telegram_chat_id = 99\n")?;
        std::env::remove_var("IRIS_TELEGRAM_CHAT_ID");
        let s = TelegramSettings::from_settings(&load()?).unwrap().unwrap();
        assert_eq!(s.owner_chat_id, 99);
        jail.set_env("IRIS_TELEGRAM_CHAT_ID", "@owner");
        assert_eq!(
            TelegramSettings::from_settings(&load()?),
            Err(TelegramSettingsError::BadChatId("@owner".into()))
        );
        for placeholder in ["0", "12.5"] {
            jail.set_env("IRIS_TELEGRAM_CHAT_ID", placeholder);
            assert_eq!(
                TelegramSettings::from_settings(&load()?),
                Err(TelegramSettingsError::BadChatId(placeholder.into()))
            );
        }
        Ok(())
    });
}
