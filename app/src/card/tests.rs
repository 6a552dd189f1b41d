//! The card rendered on the server: what the owner reads in each state.

use super::*;
use chrono::{TimeZone, Utc};
use iris_core::wire::Execution;
use serde_json::json;

fn destructive() -> Approval {
    Approval::sample()
}

fn owner() -> Viewer {
    Viewer {
        name: "owner".into(),
        can_answer: true,
    }
}

fn render(approval: Approval, viewer: Viewer) -> String {
    Owner::new().with(|| view! { <ApprovalCard approval viewer/> }.to_html())
}

#[test]
fn destructive_card_says_what_it_does() {
    let html = render(destructive(), owner());
    assert!(html.contains("card-destructive"), "{html}");
    assert!(html.contains("Deletes data"), "{html}");
    assert!(html.contains("Black Friday deals"), "{html}");
    assert!(html.contains("Weekly promo"), "{html}");
    assert!(html.contains("Last chance"), "{html}");
    assert!(
        html.contains("You can undo this with restore_email for 30 days."),
        "{html}"
    );
    assert!(html.contains("You asked: "), "{html}");
    // The request is isolated inside its quotes, so its own direction controls stay in it.
    assert!(
        html.contains("<q><bdi>trash the promo emails from this week</bdi></q>"),
        "{html}"
    );
    assert!(html.contains("Trash 3 emails"), "{html}");
    assert!(html.contains("data-testid=\"action-button\""), "{html}");
    assert!(html.contains("data-testid=\"reject-button\""), "{html}");
    assert!(html.contains("btn btn-danger"), "{html}");
    assert!(html.contains("trash_email"), "{html}");
    // The exact call: the canonical values in their order, one per line.
    let args = "{\n  \"ids\": [\n    \"m1\",\n    \"m2\",\n    \"m3\"\n  ]\n}";
    assert!(html.contains(&format!("<code>{args}</code>")), "{html}");
    // Card text is escaped, never markup.
    assert!(html.contains("Shop &lt;deals@shop.example&gt;"), "{html}");
    assert!(
        !html.contains("role=\"dialog\""),
        "the dialog opens only on click: {html}"
    );
}

#[test]
fn a_read_device_sees_no_answer_buttons() {
    let viewer = Viewer {
        name: "wall".into(),
        can_answer: false,
    };
    let html = render(destructive(), viewer);
    assert!(!html.contains("action-button"), "{html}");
    assert!(!html.contains("reject-button"), "{html}");
    assert!(html.contains("This device can only view"), "{html}");
    assert!(html.contains("Black Friday deals"), "{html}");
}

#[test]
fn pinned_write_acts_for_you_and_is_not_red() {
    let mut approval = destructive();
    approval.kind = ApprovalKind::PinnedWrite;
    approval.tool = "send_email".into();
    approval.card.effect = CallEffect::Write;
    approval.card.action = "Send email".into();
    approval.card.undo_tool = None;
    let html = render(approval, owner());
    assert!(html.contains("Acts for you"), "{html}");
    assert!(!html.contains("Deletes data"), "{html}");
    assert!(!html.contains("card-destructive"), "{html}");
    assert!(!html.contains("You can undo"), "{html}");
}

#[test]
fn executed_card_shows_the_outcome() {
    let mut approval = destructive();
    approval.status = ApprovalStatus::Approved;
    approval.responded_at = Some(Utc.with_ymd_and_hms(2025, 11, 30, 10, 5, 0).unwrap());
    approval.responded_by = Some("owner".into());
    approval.surface = Some("web".into());
    approval.execution = Execution::Executed;
    approval.result = Some(json!({"trashed": ["m1", "m2", "m3"]}));
    let html = render(approval, owner());
    assert!(html.contains("data-testid=\"outcome\""), "{html}");
    assert!(html.contains("Approved"), "{html}");
    assert!(html.contains(" by owner via web"), "{html}");
    assert!(html.contains("Moved 3 emails to Trash"), "{html}");
    assert!(!html.contains("action-button"), "{html}");
}

#[test]
fn unknown_execution_is_said_plainly() {
    let mut approval = destructive();
    approval.status = ApprovalStatus::Approved;
    approval.execution = Execution::Unknown;
    approval.resume_error = Some("model unreachable".into());
    let html = render(approval, owner());
    assert!(
        html.contains("It is not known whether this ran; it will not be run again"),
        "{html}"
    );
    assert!(html.contains("model unreachable"), "{html}");
}

fn approved(execution: Execution, result: Option<serde_json::Value>) -> Approval {
    let mut approval = destructive();
    approval.status = ApprovalStatus::Approved;
    approval.responded_at = Some(Utc.with_ymd_and_hms(2025, 11, 30, 10, 5, 0).unwrap());
    approval.responded_by = Some("owner".into());
    approval.surface = Some("web".into());
    approval.execution = execution;
    approval.result = result;
    approval
}

/// The outcome's first line as text (tags and hydration markers left out).
fn outcome_head(html: &str) -> String {
    let start = html
        .find("class=\"outcome-head\"")
        .expect("an outcome line");
    let head = &html[start..];
    let head = &head[head.find('>').unwrap() + 1..head.find("</p>").unwrap()];
    let mut text = String::new();
    let mut in_tag = false;
    for c in head.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text
}

/// Only a call that ran with every item done may look like a success.
#[test]
fn a_success_is_green_and_says_approved() {
    let html = render(
        approved(
            Execution::Executed,
            Some(json!({"trashed": ["m1", "m2", "m3"]})),
        ),
        owner(),
    );
    assert!(html.contains("outcome-tone-success"), "{html}");
    assert!(html.contains("data-outcome=\"success\""), "{html}");
    assert!(!html.contains("outcome-problem"), "{html}");
}

#[test]
fn a_failed_execution_is_red_with_its_reason() {
    let html = render(
        approved(
            Execution::Failed,
            Some(json!({"status": "failed", "message": "IMAP server refused the move"})),
        ),
        owner(),
    );
    assert!(html.contains("outcome-tone-failed"), "{html}");
    assert!(!html.contains("outcome-tone-success"), "{html}");
    assert_eq!(
        outcome_head(&html),
        "Approved by owner via web at 30 Nov 2025, 10:05:00 UTC, but it failed."
    );
    assert!(html.contains("IMAP server refused the move"), "{html}");
    assert!(
        html.contains("badge-status status-approved tone-failed\">Failed</span>"),
        "{html}"
    );
    assert!(
        html.contains("<strong>but it failed</strong>"),
        "the problem stands out: {html}"
    );
}

#[test]
fn a_stale_call_says_nothing_was_done() {
    let html = render(
        approved(
            Execution::Failed,
            Some(
                json!({"status": "stale", "message": "stale: nothing done", "changed": false,
                "stale": [{"id": "m1", "status": "stale", "message": "stale: nothing done"}]}),
            ),
        ),
        owner(),
    );
    assert!(html.contains("outcome-tone-warning"), "{html}");
    assert_eq!(
        outcome_head(&html),
        "Approved by owner via web at 30 Nov 2025, 10:05:00 UTC, but nothing was done."
    );
    assert!(html.contains("so nothing was run"), "{html}");
    assert!(!html.contains("outcome-tone-success"), "{html}");
}

#[test]
fn a_partly_stale_call_is_a_warning_naming_the_skipped_items() {
    let html = render(
        approved(
            Execution::Executed,
            Some(json!({"trashed": ["m2", "m3"],
                "stale": [{"id": "m1", "status": "stale", "message": "stale: nothing done"}]})),
        ),
        owner(),
    );
    assert!(html.contains("outcome-tone-warning"), "{html}");
    assert_eq!(
        outcome_head(&html),
        "Approved by owner via web at 30 Nov 2025, 10:05:00 UTC, partly done."
    );
    assert!(
        html.contains("1 item changed since you saw it and was left alone."),
        "{html}"
    );
    assert!(html.contains("Moved 2 emails to Trash"), "{html}");
}

#[test]
fn an_unknown_outcome_is_a_warning_not_a_success() {
    let mut approval = approved(Execution::Unknown, None);
    approval.resume_error = Some("server restarted mid-call".into());
    let html = render(approval, owner());
    assert!(html.contains("outcome-tone-warning"), "{html}");
    assert_eq!(
        outcome_head(&html),
        "Approved by owner via web at 30 Nov 2025, 10:05:00 UTC, outcome unknown."
    );
    assert!(html.contains("server restarted mid-call"), "{html}");
    assert!(!html.contains("outcome-tone-success"), "{html}");
    // "You can undo this" would say it ran; an executed card still offers it.
    assert!(!html.contains("You can undo this"), "{html}");
    let executed = render(
        approved(Execution::Executed, Some(json!({"trashed": ["m1"]}))),
        owner(),
    );
    assert!(executed.contains("You can undo this"), "{executed}");
}

/// A lapsed card says, in plain words, that it lapsed, when (its own expiry, not
/// the later moment the sweep noticed) and that nothing was done; no answer buttons.
#[test]
fn a_lapsed_card_says_when_it_lapsed_and_that_nothing_was_done() {
    let mut approval = destructive();
    approval.status = ApprovalStatus::Expired;
    // The server was down: the sweep marked it three hours after it lapsed.
    approval.responded_at = Some(Utc.with_ymd_and_hms(2025, 11, 30, 14, 0, 0).unwrap());
    approval.responded_by = Some("iris".into());
    approval.surface = Some("sweep".into());
    approval.reason = None;
    let html = render(approval, owner());
    assert!(
        html.contains(
            "This request lapsed at 30 Nov 2025, 11:00:00 UTC without an answer, so nothing was done."
        ),
        "{html}"
    );
    assert!(!html.contains("14:00"), "dated by the sweep: {html}");
    assert!(html.contains("data-status=\"expired\""), "{html}");
    assert!(!html.contains("action-button"), "{html}");
    assert!(!html.contains("reject-button"), "{html}");
}

#[test]
fn the_dialog_repeats_the_action_words() {
    let html = Owner::new().with(|| {
        let state = CardState::new();
        state.dialog_open.set(true);
        view! { <ApprovalCard approval=destructive() viewer=owner() state/> }.to_html()
    });
    assert!(html.contains("role=\"dialog\""), "{html}");
    assert!(html.contains("aria-modal=\"true\""), "{html}");
    assert!(html.contains("Trash 3 emails?"), "{html}");
    assert!(html.contains("data-testid=\"dialog-confirm\""), "{html}");
}

/// The keyed lists redraw a card exactly when what it shows changed: every field the key
/// covers moves it, and two cards never share one.
#[test]
fn the_card_key_follows_what_the_card_shows() {
    let waiting = destructive();
    let key = card_key(&waiting);
    assert_eq!(key, card_key(&waiting.clone()));
    let changes: Vec<fn(&mut Approval)> = vec![
        |a| a.id = "a2".into(),
        |a| a.status = ApprovalStatus::Approved,
        |a| a.execution = Execution::Executed,
        |a| a.responded_at = Some(Utc.with_ymd_and_hms(2025, 11, 30, 10, 5, 0).unwrap()),
        |a| a.result = Some(json!({"trashed": 3})),
        |a| a.resume_error = Some("model unreachable".into()),
        |a| {
            a.undo = Some(iris_core::wire::UndoRecord {
                state: iris_core::wire::UndoState::Running,
                items: vec!["m1".into()],
                by: "phone".into(),
                surface: "web".into(),
                at: Utc.with_ymd_and_hms(2025, 11, 30, 10, 9, 0).unwrap(),
                finished_at: None,
                result: None,
            })
        },
    ];
    for change in &changes {
        let mut changed = waiting.clone();
        change(&mut changed);
        assert_ne!(card_key(&changed), key);
    }
    // A resume error cannot pass for a result: the same text split differently keys apart.
    let mut one = waiting.clone();
    one.resume_error = Some("x|".into());
    one.result = Some(json!("y"));
    let mut other = waiting;
    other.resume_error = Some("x".into());
    other.result = Some(json!("|y"));
    assert_ne!(card_key(&one), card_key(&other));
}

/// A request near the chat's limit is quoted in part, so the card's buttons stay near its
/// title; the whole of it is in "Show the whole request".
#[test]
fn a_long_request_is_quoted_in_part_with_the_whole_a_tap_away() {
    let mut approval = destructive();
    let long = format!("trash the promo emails {}", "x".repeat(3967));
    approval.card.request = long.clone();
    let html = render(approval, owner());
    let quote_start = html.find("<q><bdi>").unwrap() + 8;
    let quote = &html[quote_start..quote_start + html[quote_start..].find("</bdi></q>").unwrap()];
    assert_eq!(quote.chars().count(), 280, "{quote}");
    assert!(quote.starts_with("trash the promo emails xxx") && quote.ends_with('…'));
    assert!(html.contains("data-testid=\"card-asked-all\""), "{html}");
    assert!(html.contains("Show the whole request"), "{html}");
    assert!(html.contains(&long), "the whole request is on the card");
    // A short one is quoted whole, with nothing to open.
    let html = render(destructive(), owner());
    assert!(!html.contains("card-asked-all"), "{html}");
}

#[test]
fn a_waiting_card_says_when_it_was_asked_and_until_when_it_waits() {
    let html = render(destructive(), owner());
    assert!(html.contains("Asked "), "{html}");
    assert!(
        html.contains("datetime=\"2025-11-30T10:00:00+00:00\""),
        "{html}"
    );
    assert!(html.contains(" · expires "), "{html}");
    assert!(
        html.contains("datetime=\"2025-11-30T11:00:00+00:00\""),
        "{html}"
    );
}

#[test]
fn a_card_that_may_be_narrowed_or_edited_shows_neither_before_the_page_is_live() {
    // Checkboxes and the edit form come with the live page (no narrowing or editing before
    // hydration): the server's card has plain lines and no open form.
    let mut row = destructive();
    row.card.items_arg = Some("ids".into());
    row.card.editable = vec!["note".into()];
    let before = {
        let row = row.clone();
        Owner::new().with(|| {
            provide_context(crate::PageState::new());
            view! { <ApprovalCard approval=row viewer=owner()/> }.to_html()
        })
    };
    assert!(!before.contains("type=\"checkbox\""), "{before}");
    assert!(before.contains("data-testid=\"card-lines\""), "{before}");
    // Live: a checkbox per line, each ticked, and "Edit".
    let live = render(row, owner());
    assert_eq!(live.matches("type=\"checkbox\"").count(), 3, "{live}");
    assert!(live.contains("data-testid=\"edit-button\""), "{live}");
    assert!(
        !live.contains("data-testid=\"card-edit\""),
        "the form opens on Edit: {live}"
    );
}

/// How this came about: collapsed when nothing is flagged, open with a count when something
/// is, each flag under its line, every text escaped; nothing shown for a card without a trail.
#[test]
fn the_trail_is_collapsed_unless_a_value_came_from_outside_and_a_flag_sits_on_its_line() {
    let plain = render(destructive(), owner());
    assert!(
        !plain.contains("card-origin"),
        "no trail, no section: {plain}"
    );

    let mut a = destructive();
    a.card.trail = vec![
        "You asked: “trash the promo emails from this week”".into(),
        "Searched the inbox in <b>promotions</b>: 3 emails".into(),
    ];
    let html = render(a.clone(), owner());
    assert!(html.contains("data-testid=\"card-origin\""), "{html}");
    assert!(!html.contains(" open"), "collapsed: {html}");
    assert!(
        html.contains("<summary>How this came about</summary>"),
        "{html}"
    );
    assert!(
        html.contains("<li>Searched the inbox in &lt;b&gt;promotions&lt;/b&gt;: 3 emails</li>"),
        "escaped: {html}"
    );

    a.card.flags = vec![iris_core::wire::CardFlag {
        line: 1,
        note: "“<x>” is from the text of the email 'y' (not from you)".into(),
    }];
    let html = render(a, owner());
    assert!(
        html.contains("How this came about · 1 value not from you"),
        "{html}"
    );
    assert!(html.contains("data-flagged=\"1\" open"), "open: {html}");
    let flag = "“&lt;x&gt;” is from the text of the email 'y' (not from you)";
    let at = html.find(flag).expect("the flag");
    let second = html.find("Weekly promo").expect("line 2");
    let third = html.find("Last chance").expect("line 3");
    assert!(second < at && at < third, "under its line: {html}");
}
