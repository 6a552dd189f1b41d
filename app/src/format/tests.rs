//! The card's words, as every surface says them.

use super::*;
use chrono::FixedOffset;
use iris_core::wire::Effect;
use serde_json::json;

fn card() -> Card {
    Card {
        title: "Trash 2 emails".into(),
        action: "Trash 2 emails".into(),
        effect: Effect::Destructive,
        lines: vec!["a".into(), "b".into()],
        undo_tool: Some("restore_email".into()),
        undo_window_days: Some(30),
        request: "trash".into(),
        undo_note: None,
        undo_action: None,
        preview: Vec::new(),
        overlaps: Vec::new(),
        items_arg: None,
        editable: Vec::new(),
        trail: Vec::new(),
        flags: Vec::new(),
    }
}

#[test]
fn clip_counts_characters_and_marks_the_cut() {
    assert_eq!(clip("abc", 3), "abc");
    assert_eq!(clip("abcdef", 4), "abc…");
    assert_eq!(clip("Grüße aus Köln", 6), "Grüße…");
}

#[test]
fn undo_sentence_prefers_the_plugins_words() {
    let mut c = card();
    assert_eq!(
        undo_sentence(&c).as_deref(),
        Some("You can undo this with restore_email for 30 days.")
    );
    c.undo_note = Some("You can restore these from Trash for 30 days.".into());
    assert_eq!(
        undo_sentence(&c).as_deref(),
        Some("You can restore these from Trash for 30 days.")
    );
    c.undo_note = None;
    c.undo_tool = None;
    assert_eq!(undo_sentence(&c), None);
}

#[test]
fn results_read_as_sentences() {
    assert_eq!(
        result_summary(&json!({"trashed": ["1", "2", "3"]})).as_deref(),
        Some("Moved 3 emails to Trash")
    );
    assert_eq!(
        result_summary(&json!({"trashed": 1})).as_deref(),
        Some("Moved 1 email to Trash")
    );
    assert_eq!(
        result_summary(&json!({"trashed": 2, "items": [
            {"id": "a", "status": "trashed"},
            {"id": "b", "status": "trashed"},
            {"id": "c", "status": "missing"}
        ]}))
        .as_deref(),
        Some("Moved 2 emails to Trash; 1 email was not moved")
    );
    assert_eq!(result_summary(&json!({"other": true})), None);
    assert_eq!(result_summary(&json!([1])), None);
}

/// Only an executed call with every item done is a success; nothing in flight is a result.
#[test]
fn only_a_full_execution_is_a_success() {
    use chrono::TimeZone;
    use iris_core::wire::ApprovalKind;
    let mut approval = Approval {
        id: "a1".into(),
        kind: ApprovalKind::Destructive,
        status: ApprovalStatus::Approved,
        tool: "trash_email".into(),
        args: json!({}),
        call_hash: "h".into(),
        items: vec!["m1".into()],
        card: card(),
        run_id: "r1".into(),
        created_at: Utc.with_ymd_and_hms(2025, 11, 30, 10, 0, 0).unwrap(),
        expires_at: Utc.with_ymd_and_hms(2025, 11, 30, 11, 0, 0).unwrap(),
        responded_at: None,
        responded_by: None,
        surface: None,
        reason: None,
        execution: Execution::Executing,
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
    assert_eq!(outcome_tone(&approval), OutcomeTone::Neutral);
    approval.execution = Execution::Executed;
    approval.result = Some(json!({"trashed": ["m1"]}));
    assert_eq!(outcome_tone(&approval), OutcomeTone::Success);
    assert_eq!(outcome_problem(&approval), None);
    approval.execution = Execution::Failed;
    approval.result = Some(json!({"status": "failed"}));
    assert_eq!(outcome_tone(&approval), OutcomeTone::Failed);
    assert_eq!(
        outcome_problem(&approval).as_deref(),
        Some("No reason was recorded.")
    );
    approval.status = ApprovalStatus::Rejected;
    assert_eq!(outcome_tone(&approval), OutcomeTone::Neutral);

    // The badge says what is known: unknown is not "not done", partly stale is partly done.
    approval.status = ApprovalStatus::Approved;
    let badges = [
        (Execution::Unknown, None, "Outcome unknown"),
        (
            Execution::Executed,
            Some(json!({"trashed": ["m1"], "stale": ["m2"]})),
            "Partly done",
        ),
        (
            Execution::Failed,
            Some(json!({"status": "stale"})),
            "Not done",
        ),
        (
            Execution::Failed,
            Some(json!({"status": "failed"})),
            "Failed",
        ),
        (
            Execution::Executed,
            Some(json!({"trashed": ["m1"]})),
            "Approved",
        ),
    ];
    for (execution, result, want) in badges {
        approval.execution = execution;
        approval.result = result;
        assert_eq!(badge_label(&approval), want, "{execution:?}");
    }

    // An unknown call whose items were found after the takeover says where they are, and
    // lists each as shown (escaped), never as done.
    approval.execution = Execution::Unknown;
    approval.result = Some(
        json!({"status": "unknown", "message": format!("{}. To check: look in Trash", iris_core::wire::UNKNOWN_OUTCOME)}),
    );
    assert_eq!(
        execution_sentence(&approval),
        "It is not known whether this ran; it will not be run again."
    );
    // The problem line keeps only how to check: the sentence above says the rest.
    assert_eq!(
        outcome_problem(&approval).as_deref(),
        Some("To check: look in Trash")
    );
    approval.located = Some(iris_core::wire::Located {
        summary: "1 in quarantine, 1 still at its path.".into(),
        items: vec![iris_core::wire::LocatedItem {
            id: "downloads/a\u{202e}.log".into(),
            label: "downloads/a\\u{202e}.log".into(),
            status: "quarantined".into(),
            message: "in quarantine: .iris-quarantine/b/a.log".into(),
        }],
        undo_action: Some("Restore 1 file".into()),
    });
    assert_eq!(
        execution_sentence(&approval),
        "It is not known whether this finished; it will not be run again. Where its items were after the restart: 1 in quarantine, 1 still at its path."
    );
    assert_eq!(badge_label(&approval), "Outcome unknown");
    assert_eq!(
        located_items(&approval),
        vec![(
            "downloads/a\\u{202e}.log".to_owned(),
            "quarantined".to_owned(),
            "in quarantine: .iris-quarantine/b/a.log".to_owned()
        )]
    );
}

/// The lapse notice says it lapsed, when, and that nothing was done.
#[test]
fn the_lapse_notice_says_when_and_that_nothing_was_done() {
    assert_eq!(
        lapse_notice("30 Nov, 11:00 UTC"),
        "This request lapsed at 30 Nov, 11:00 UTC without an answer, so nothing was done."
    );
}

#[test]
fn card_links_cover_the_whole_url() {
    let text = "Approve it here: http://h:1/activity/abc. Thanks";
    let (s, e) = find_card_link(text, "abc").unwrap();
    assert_eq!(&text[s..e], "http://h:1/activity/abc");
    let text = "See /activity/abc";
    let (s, e) = find_card_link(text, "abc").unwrap();
    assert_eq!(&text[s..e], "/activity/abc");
    assert_eq!(find_card_link("nothing", "abc"), None);
}

#[test]
fn times_are_utc_until_the_browser_says() {
    let at = DateTime::parse_from_rfc3339("2025-11-30T14:05:07Z")
        .unwrap()
        .with_timezone(&Utc);
    assert_eq!(format_time(at, None), "30 Nov 2025, 14:05:07 UTC");
    assert_eq!(format_time(at, Some(60)), "30 Nov 2025, 15:05:07");
}

/// The hand-written time reads exactly as chrono's `%-d %b %Y, %H:%M:%S` would, every month,
/// in offsets both sides of UTC.
#[test]
fn times_read_as_chronos_format_string() {
    let start = DateTime::parse_from_rfc3339("2024-12-31T23:07:11Z")
        .unwrap()
        .with_timezone(&Utc);
    for step in 0..400 {
        let at = start + chrono::Duration::seconds(step * 80_221);
        for offset in [None, Some(-570), Some(0), Some(60), Some(330), Some(765)] {
            let expected = match offset.and_then(|m| FixedOffset::east_opt(m * 60)) {
                Some(o) => at
                    .with_timezone(&o)
                    .format("%-d %b %Y, %H:%M:%S")
                    .to_string(),
                None => format!("{} UTC", at.format("%-d %b %Y, %H:%M:%S")),
            };
            assert_eq!(format_time(at, offset), expected, "{at} {offset:?}");
        }
    }
}

/// The page's offset cookie is read strictly: a whole number of minutes within ±14 h.
#[test]
fn the_offset_cookie_is_read_strictly() {
    use crate::live::offset_in_cookies;
    assert_eq!(offset_in_cookies("iris_utc_offset=60"), Some(60));
    assert_eq!(
        offset_in_cookies("a=1; iris_utc_offset=-330; b=2"),
        Some(-330)
    );
    assert_eq!(offset_in_cookies("iris_utc_offset=841"), None);
    assert_eq!(offset_in_cookies("iris_utc_offset=1e3"), None);
    assert_eq!(offset_in_cookies("xiris_utc_offset=60"), None);
    assert_eq!(offset_in_cookies(""), None);
}

#[test]
fn quoted_lines_are_one_block_with_their_blank_lines() {
    let lines: Vec<String> = [
        "To: Anna",
        "Subject: Re: Dinner",
        "│ Hi Anna,",
        "│ ",
        "│ Thursday works for me.",
        "│",
        "│ Robin",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(
        card_parts(&lines),
        vec![
            CardPart::Line("To: Anna".into()),
            CardPart::Line("Subject: Re: Dinner".into()),
            CardPart::Quote("Hi Anna,\n\nThursday works for me.\n\nRobin".into()),
        ]
    );
    let items = vec!["Flash sale".to_owned(), "Black Friday".to_owned()];
    assert_eq!(
        card_parts(&items),
        vec![
            CardPart::Line("Flash sale".into()),
            CardPart::Line("Black Friday".into())
        ]
    );
}

#[test]
fn the_action_words_name_how_many_of_the_items_are_kept() {
    assert_eq!(
        narrowed_action("Trash 5 emails", 4, 5),
        "Trash 4 of 5 emails"
    );
    assert_eq!(
        narrowed_action("Quarantine 3 files", 1, 3),
        "Quarantine 1 of 3 files"
    );
    // Only the count is replaced, once; words without it say the share after them.
    assert_eq!(
        narrowed_action("Move 2 to 2024", 1, 2),
        "Move 1 of 2 to 2024"
    );
    assert_eq!(
        narrowed_action("Delete events", 2, 3),
        "Delete events (2 of 3)"
    );
}
