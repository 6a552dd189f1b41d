//! How the CLI shows approvals in a terminal (DESIGN §2 "card", CLI): the card as the
//! web shows it (title, every line, the undo sentence, "You asked: …"), where the row stands
//! (status, expiry or answer, execution and result) and the exact call (tool and canonical
//! arguments), plus the aligned rows of `iris approvals list`.
//!
//! Every text that came from outside (mail subjects and senders in card lines, the owner's
//! request and reason, device names, results) passes through [`printable`] first: a mail subject
//! must not be able to move the cursor, recolour the terminal or reorder a line with bidi
//! controls, so what the owner reads is what the row holds.

use std::fmt::Write as _;

use app::format::{
    clip, execution_sentence, lapse_notice, located_items, result_summary, undo_sentence,
};
use chrono::{DateTime, Utc};
use iris_core::canonical::canonical_json;
use iris_core::wire::{Approval, ApprovalKind, ApprovalStatus, Execution};

/// Whether `c` is a Unicode bidirectional formatting character (U+061C, U+200E–U+200F,
/// U+202A–U+202E, U+2066–U+2069): they can reorder what a terminal shows.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `text` safe to print on one terminal line: control characters (C0 and C1, so also ESC and
/// newlines) and bidi controls are shown as visible escapes (`\u{1b}`), everything else as is.
/// Escaping, not dropping, keeps the exact call exact: nothing in it is silently lost.
pub fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() || is_bidi_control(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// "30 Nov 2026, 14:05:03 UTC" ([`iris_core::wire::when_utc`]: one format on every surface).
pub fn when(at: DateTime<Utc>) -> String {
    iris_core::wire::when_utc(at)
}

/// "in 59 min" / "3 min ago" / "in 2 h 5 min" relative to `now`, to the minute ("in under a
/// minute" / "under a minute ago" below that).
pub fn relative(at: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let seconds = (at - now).num_seconds();
    let minutes = seconds.abs() / 60;
    let span = if minutes == 0 {
        "under a minute".to_string()
    } else if minutes < 60 {
        format!("{minutes} min")
    } else if minutes < 48 * 60 {
        format!("{} h {} min", minutes / 60, minutes % 60)
    } else {
        format!("{} days", minutes / (24 * 60))
    };
    if seconds >= 0 {
        format!("in {span}")
    } else {
        format!("{span} ago")
    }
}

/// The tag under the title: what kind of call waits (the web card's badge words).
fn kind_words(approval: &Approval) -> &'static str {
    match approval.kind {
        ApprovalKind::Destructive => "destructive: deletes data",
        ApprovalKind::PinnedWrite => "pinned write: acts for you",
        ApprovalKind::Evaluator => "evaluator halt: a check stopped the run",
    }
}

/// "by laptop via cli at 30 Nov 2026, 14:05:03 UTC" (each part only when known).
pub fn answered_by(approval: &Approval) -> String {
    let mut words = String::new();
    if let Some(by) = approval.responded_by.as_deref().filter(|s| !s.is_empty()) {
        let _ = write!(words, " by {}", printable(by));
    }
    if let Some(surface) = approval.surface.as_deref().filter(|s| !s.is_empty()) {
        let _ = write!(words, " via {}", printable(surface));
    }
    if let Some(at) = approval.responded_at {
        let _ = write!(words, " at {}", when(at));
    }
    words.trim_start().to_string()
}

/// The exact call the row pins: `tool {canonical args}` (the bytes `call_hash` covers).
pub fn exact_call(approval: &Approval) -> String {
    format!(
        "{} {}",
        printable(&approval.tool),
        printable(&canonical_json(&approval.args))
    )
}

/// The whole card and row for `iris approvals show`, as of `now` (for "in 59 min").
pub fn card(approval: &Approval, now: DateTime<Utc>) -> String {
    let mut out = String::new();
    let card = &approval.card;
    let _ = writeln!(out, "{}", printable(&card.title));
    let _ = writeln!(out, "  ({})", kind_words(approval));
    // A card that can be approved in part numbers its item lines: `approve --only` takes
    // those numbers; once approved in part, the lines left out say so.
    let numbered = card.items_arg.is_some() && card.lines.len() == approval.items.len();
    let left_out = approval.left_out_indices();
    for (i, line) in card.lines.iter().enumerate() {
        let mark = if left_out.contains(&i) {
            "  (left out)"
        } else {
            ""
        };
        if numbered {
            let _ = writeln!(out, "  {}. {}{mark}", i + 1, printable(line));
        } else {
            let _ = writeln!(out, "  - {}{mark}", printable(line));
        }
        // Where a value on this line came from, when not from the owner
        // (docs/adr/0123-how-a-card-came-about.md).
        for flag in card.flags.iter().filter(|f| f.line as usize == i) {
            let _ = writeln!(out, "      ! {}", printable(&flag.note));
        }
    }
    for line in &card.preview {
        let _ = writeln!(out, "    {}", printable(line));
    }
    // Once its undo was asked for, the "Undo:" line below says what came back instead (and
    // "cannot be undone" would be false).
    if approval.undo.is_none() {
        match undo_sentence(card) {
            Some(sentence) => {
                let _ = writeln!(out, "{}", printable(&sentence));
            }
            None if approval.kind == ApprovalKind::Destructive => {
                let _ = writeln!(out, "This cannot be undone.");
            }
            None => {}
        }
    }
    if approval.status == ApprovalStatus::Pending {
        for line in app::format::overlap_lines(&card.overlaps) {
            let notice = app::format::overlap_line_text(&line, &when(line.overlap.at));
            let _ = writeln!(out, "Note: {}", printable(&notice));
        }
    }
    let (asker, asked) = approval.asked();
    let _ = writeln!(
        out,
        "{}: \u{201c}{}\u{201d}",
        printable(&asker),
        printable(&asked)
    );
    // The turn that led to the call, after who asked (the trail's first sentence says it
    // again, for surfaces that show the trail alone).
    if card.trail.len() > 1 {
        let _ = writeln!(out, "How this came about:");
        for sentence in &card.trail {
            let _ = writeln!(out, "  · {}", printable(sentence));
        }
    }
    let _ = writeln!(out);
    let status = match approval.status {
        // Past its expiry but not yet marked by the sweep: already lapsed for every answer.
        ApprovalStatus::Pending if approval.lapsed_at(now) => format!(
            "lapsed ({}). {} It can no longer be approved.",
            relative(approval.expires_at, now),
            lapse_notice(&when(approval.expires_at))
        ),
        ApprovalStatus::Pending if approval.passkey_required => format!(
            "pending: waiting for your answer until {} ({}). Approving needs your passkey, on \
             the card in the web app; you can reject it here.",
            when(approval.expires_at),
            relative(approval.expires_at, now)
        ),
        ApprovalStatus::Pending => format!(
            "pending: waiting for your answer until {} ({})",
            when(approval.expires_at),
            relative(approval.expires_at, now)
        ),
        ApprovalStatus::Approved => format!("approved {}", answered_by(approval)),
        ApprovalStatus::Rejected => format!("rejected {}", answered_by(approval)),
        ApprovalStatus::Expired => {
            format!("expired. {}", lapse_notice(&when(approval.expires_at)))
        }
    };
    let _ = writeln!(out, "Status:    {status}");
    if let Some(share) = approval.approved_share_text() {
        let _ = writeln!(
            out,
            "Items:     {share}; left out, not touched: {}",
            printable(&approval.left_out_lines().join("; "))
        );
    } else if let Some(fields) = &approval.edited_fields {
        let _ = writeln!(
            out,
            "Edited:    {} (by you, before approving)",
            printable(&fields.join(", "))
        );
    } else if approval.status == ApprovalStatus::Pending
        && !approval.card.editable.is_empty()
        && !approval.lapsed_at(now)
    {
        let _ = writeln!(
            out,
            "Editable:  {} (iris approvals approve {} --edit FIELD=VALUE)",
            printable(&approval.card.editable.join(", ")),
            approval.id
        );
    }
    if approval.status == ApprovalStatus::Pending
        && approval.narrowable()
        && !approval.lapsed_at(now)
    {
        let _ = writeln!(
            out,
            "Some only: iris approvals approve {} --only 1,{}",
            approval.id,
            approval.items.len()
        );
    }
    if let Some(reason) = approval.reason.as_deref().filter(|r| !r.is_empty()) {
        let _ = writeln!(out, "Reason:    {}", printable(reason));
    }
    let execution = match (approval.status, approval.execution) {
        (ApprovalStatus::Approved, _) => printable(&execution_sentence(approval)),
        (_, Execution::None) => "nothing ran".to_string(),
        // A row that was not approved yet has a ledger entry: say exactly what it says.
        (_, other) => other.as_str().to_string(),
    };
    let _ = writeln!(
        out,
        "Execution: {} ({})",
        execution,
        approval.execution.as_str()
    );
    if let Some(job) = &approval.running {
        let lease = job
            .lease_until
            .map(|until| {
                format!(
                    " (its lease lasts until {}; then any server takes it over)",
                    when(until)
                )
            })
            .unwrap_or_default();
        let sentence = app::format::running_sentence(job, job.since.map(when).as_deref());
        let _ = writeln!(out, "Running:   {}{lease}", printable(&sentence));
    }
    // Where each item of an unknown call is now, one line each.
    for (item, _, sentence) in located_items(approval) {
        let _ = writeln!(
            out,
            "  Now:     {} — {}",
            printable(&item),
            printable(&sentence)
        );
    }
    if let Some(result) = &approval.result {
        let summary = result_summary(result)
            .map(|s| format!("{} ", printable(&s)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "Result:    {summary}{}",
            printable(&canonical_json(result))
        );
    }
    if let Some(undo) = &approval.undo {
        let (head, detail) = app::undo::undo_words(undo);
        let detail = detail.map(|d| format!(": {d}")).unwrap_or_default();
        let at = when(app::undo::undo_time(undo));
        let _ = writeln!(
            out,
            "Undo:      {}",
            printable(&format!("{head} at {at}{detail}"))
        );
    } else if approval.undo_offered(now) {
        let until = approval
            .undo_until()
            .map(|u| format!(" until {}", when(u)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "Undo:      {} possible{until} (POST /governance/approvals/{}/undo)",
            printable(&approval.undo_label()),
            approval.id
        );
    }
    if let Some(error) = approval.resume_error.as_deref() {
        let _ = writeln!(
            out,
            "Resume:    failed: {} (retry with POST /governance/approvals/{}/resume)",
            printable(error),
            approval.id
        );
    }
    let _ = writeln!(out, "Call:      {}", exact_call(approval));
    if let Some(decided) = &approval.decided_call {
        let why = match &approval.edited_fields {
            Some(fields) => format!("as you edited it: {}", fields.join(", ")),
            None => "the items you approved".to_owned(),
        };
        let _ = writeln!(
            out,
            "Runs:      {} {} ({})",
            printable(&decided.tool),
            printable(&canonical_json(&decided.args)),
            printable(&why)
        );
    }
    let _ = writeln!(out, "Call hash: {}", approval.call_hash);
    let _ = writeln!(out, "Id:        {}", approval.id);
    let _ = writeln!(out, "Created:   {}", when(approval.created_at));
    out
}

/// The longest title `list` shows, in characters.
const TITLE_WIDTH: usize = 48;

/// The STATUS cell of `iris approvals list` as of `now`: the execution for approved rows, and
/// for a lapsed row (expired, or pending past its expiry before the sweep marked it) that
/// nothing ran (every surface says a lapse plainly).
fn status_cell(approval: &Approval, now: DateTime<Utc>) -> String {
    match approval.status {
        ApprovalStatus::Approved => format!("approved ({})", approval.execution.as_str()),
        ApprovalStatus::Expired => "expired (nothing ran)".to_string(),
        ApprovalStatus::Pending if approval.lapsed_at(now) => "lapsed (nothing ran)".to_string(),
        other => other.as_str().to_string(),
    }
}

/// The rows of `iris approvals list` as of `now`, with a header, columns aligned: id, status
/// ([`status_cell`]), title, created, expires.
pub fn rows(approvals: &[Approval], now: DateTime<Utc>) -> String {
    let header = ["ID", "STATUS", "TITLE", "CREATED", "EXPIRES"].map(str::to_string);
    let mut table: Vec<[String; 5]> = vec![header];
    for a in approvals {
        let status = status_cell(a, now);
        table.push([
            a.id.clone(),
            status,
            clip(&printable(&a.card.title), TITLE_WIDTH),
            when(a.created_at),
            when(a.expires_at),
        ]);
    }
    let mut widths = [0usize; 5];
    for row in &table {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &table {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(widths).enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                let pad = w - cell.chars().count();
                let _ = write!(line, "{cell}{}  ", " ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use iris_core::wire::{Card, Effect};
    use serde_json::json;

    fn pending() -> Approval {
        let created = Utc.with_ymd_and_hms(2026, 11, 30, 14, 0, 0).unwrap();
        Approval {
            id: "0b5c".into(),
            kind: ApprovalKind::Destructive,
            status: ApprovalStatus::Pending,
            tool: "trash_email".into(),
            args: json!({"ids": ["m2", "m1"], "account": "personal"}),
            call_hash: "ab".repeat(32),
            items: vec!["m2".into(), "m1".into()],
            card: Card {
                title: "Trash 2 emails".into(),
                action: "Trash 2 emails".into(),
                effect: Effect::Destructive,
                lines: vec![
                    "Sale \u{1b}[2J now \u{202e}gpj.exe — shop@example.com, 29 Nov".into(),
                    "Weekly deals — deals@example.com, 28 Nov".into(),
                ],
                undo_tool: Some("restore_email".into()),
                undo_window_days: Some(30),
                request: "trash the promo emails".into(),
                undo_note: Some("You can restore these from Trash for 30 days.".into()),
                undo_action: None,
                preview: Vec::new(),
                overlaps: Vec::new(),
                items_arg: None,
                editable: Vec::new(),
                trail: Vec::new(),
                flags: Vec::new(),
            },
            run_id: "r1".into(),
            created_at: created,
            expires_at: created + chrono::Duration::hours(1),
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
        }
    }

    #[test]
    fn escapes_terminal_controls_and_bidi_but_keeps_text() {
        assert_eq!(printable("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(printable("x\u{202e}y\nz"), "x\\u{202e}y\\u{a}z");
        assert_eq!(printable("Grüße — ok"), "Grüße — ok");
        assert_eq!(printable("\u{9b}31m"), "\\u{9b}31m", "C1 CSI");
    }

    /// `show` prints how the card came about and, under its line, where a value came from;
    /// a card without a turn's steps prints no such section.
    #[test]
    fn show_tells_how_the_card_came_about_and_flags_a_value_on_its_line() {
        let mut a = pending();
        let plain = card(&a, a.created_at);
        assert!(!plain.contains("How this came about"), "{plain}");
        a.card.trail = vec![
            "You asked: “trash the promo emails”".into(),
            "Searched the inbox in promotions: 2 emails".into(),
        ];
        a.card.flags = vec![iris_core::wire::CardFlag {
            line: 1,
            note: "“Weekly deals” is from the text of the email 'x' (not from you)".into(),
        }];
        let text = card(&a, a.created_at);
        assert!(
            text.contains(
                "  - Weekly deals — deals@example.com, 28 Nov\n      ! “Weekly deals” is from the text of the email 'x' (not from you)\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "How this came about:\n  · You asked: “trash the promo emails”\n  · Searched the inbox in promotions: 2 emails\n"
            ),
            "{text}"
        );
    }

    /// A waiting card names the cards it repeats, in plain words, and only while it waits.
    #[test]
    fn a_waiting_card_names_the_cards_it_repeats() {
        let mut a = pending();
        let at = a.created_at - chrono::Duration::minutes(3);
        a.card.overlaps = vec![
            iris_core::wire::CardOverlap {
                approval_id: "a0".into(),
                title: "Trash 3 emails".into(),
                state: iris_core::wire::OverlapState::Waiting,
                at,
                same_call: false,
                shared_items: 2,
            },
            iris_core::wire::CardOverlap {
                approval_id: "a1".into(),
                title: "Trash 2 emails".into(),
                state: iris_core::wire::OverlapState::Ran,
                at,
                same_call: true,
                shared_items: 2,
            },
        ];
        let now = a.created_at + chrono::Duration::minutes(1);
        let text = card(&a, now);
        let stamp = when(at);
        assert!(
            text.contains(&format!(
                "Note: 2 of these items are also on the card \"Trash 3 emails\", waiting since {stamp}.\n"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "Note: The same call already ran at {stamp} (the card \"Trash 2 emails\"): approving this does it again.\n"
            )),
            "{text}"
        );
        a.status = ApprovalStatus::Rejected;
        assert!(!card(&a, now).contains("Note:"));
    }

    /// An undone card says what its undo did, never that it cannot be undone.
    #[test]
    fn an_undone_card_never_says_it_cannot_be_undone() {
        let mut a = pending();
        a.status = ApprovalStatus::Approved;
        a.execution = Execution::Executed;
        a.responded_at = Some(a.created_at + chrono::Duration::minutes(1));
        a.undo = Some(iris_core::wire::UndoRecord {
            state: iris_core::wire::UndoState::Done,
            items: a.items.clone(),
            by: "laptop".into(),
            surface: "web".into(),
            at: a.created_at + chrono::Duration::minutes(2),
            finished_at: Some(a.created_at + chrono::Duration::minutes(2)),
            result: Some(json!({"summary": "Restored 2 emails."})),
        });
        let text = card(&a, a.created_at + chrono::Duration::minutes(3));
        assert!(!text.contains("cannot be undone"), "{text}");
        assert!(!text.contains("You can restore these"), "{text}");
        assert!(text.contains("Undo:      "), "{text}");
    }

    #[test]
    fn card_shows_title_lines_undo_request_status_and_exact_call() {
        let a = pending();
        let now = a.created_at + chrono::Duration::minutes(1);
        let text = card(&a, now);
        assert!(text.starts_with("Trash 2 emails\n"), "{text}");
        assert!(text.contains("destructive: deletes data"), "{text}");
        assert!(
            text.contains("  - Sale \\u{1b}[2J now \\u{202e}gpj.exe — shop@example.com, 29 Nov\n"),
            "{text}"
        );
        assert!(!text.contains('\u{1b}') && !text.contains('\u{202e}'));
        assert!(text.contains("  - Weekly deals — deals@example.com, 28 Nov\n"));
        assert!(text.contains("You can restore these from Trash for 30 days.\n"));
        assert!(text.contains("You asked: \u{201c}trash the promo emails\u{201d}\n"));
        assert!(
            text.contains(
                "pending: waiting for your answer until 30 Nov 2026, 15:00:00 UTC (in 59 min)"
            ),
            "{text}"
        );
        assert!(text.contains("Execution: nothing ran (none)"), "{text}");
        // Canonical: keys sorted, array order kept (the pinned order).
        assert!(
            text.contains(r#"Call:      trash_email {"account":"personal","ids":["m2","m1"]}"#),
            "{text}"
        );
    }

    #[test]
    fn card_shows_who_answered_and_the_result() {
        let mut a = pending();
        a.status = ApprovalStatus::Approved;
        a.responded_by = Some("laptop".into());
        a.surface = Some("cli".into());
        a.responded_at = Some(a.created_at + chrono::Duration::minutes(2));
        a.execution = Execution::Executed;
        a.result = Some(json!({"trashed": 2}));
        let text = card(&a, a.created_at);
        assert!(
            text.contains("Status:    approved by laptop via cli at 30 Nov 2026, 14:02:00 UTC"),
            "{text}"
        );
        assert!(
            text.contains("Undo:      Undo possible until"),
            "an executed card with an undo tool offers it: {text}"
        );
        assert!(
            text.contains("Execution: Moved 2 emails to Trash (executed)"),
            "{text}"
        );
        assert!(
            text.contains(r#"Result:    Moved 2 emails to Trash {"trashed":2}"#),
            "{text}"
        );
    }

    #[test]
    fn a_lapsed_pending_row_says_it_can_no_longer_be_approved() {
        let a = pending();
        let text = card(&a, a.expires_at + chrono::Duration::minutes(5));
        assert!(text.contains("can no longer be approved"), "{text}");
        assert!(text.contains("5 min ago"), "{text}");
        assert!(
            text.contains(
                "This request lapsed at 30 Nov 2026, 15:00:00 UTC without an answer, so nothing was done."
            ),
            "{text}"
        );
    }

    /// An expired row says it lapsed, when (its expiry, not the sweep's later mark)
    /// and that nothing was done, in `show` and in `list`.
    #[test]
    fn an_expired_row_says_it_lapsed_and_nothing_ran() {
        let mut a = pending();
        a.status = ApprovalStatus::Expired;
        a.responded_at = Some(a.expires_at + chrono::Duration::hours(3));
        a.responded_by = Some("iris".into());
        a.surface = Some("sweep".into());
        let later = a.expires_at + chrono::Duration::hours(4);
        let text = card(&a, later);
        assert!(
            text.contains(
                "Status:    expired. This request lapsed at 30 Nov 2026, 15:00:00 UTC without an answer, so nothing was done.\n"
            ),
            "{text}"
        );
        assert!(!text.contains("18:00:00"), "dated by the sweep: {text}");
        let list = rows(&[a.clone(), pending()], later);
        let lines: Vec<&str> = list.lines().collect();
        assert!(lines[1].contains("expired (nothing ran)"), "{list}");
        assert!(lines[2].contains("lapsed (nothing ran)"), "{list}");
        let list = rows(&[pending()], a.created_at);
        assert!(list.lines().nth(1).unwrap().contains("pending"), "{list}");
    }

    #[test]
    fn rows_are_aligned_under_the_header() {
        let a = pending();
        let t = a.created_at;
        let mut b = pending();
        b.id = "1234567890".into();
        b.status = ApprovalStatus::Approved;
        b.execution = Execution::Executed;
        b.card.title = "x".repeat(80);
        let text = rows(&[a, b], t);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        let status_col = lines[0].find("STATUS").unwrap();
        let title_col = lines[0].find("TITLE").unwrap();
        for line in &lines[1..] {
            let chars: Vec<char> = line.chars().collect();
            assert_ne!(chars[status_col], ' ', "{text}");
            assert_eq!(chars[status_col - 1], ' ', "{text}");
            assert_ne!(chars[title_col], ' ', "{text}");
        }
        assert!(lines[2].contains("approved (executed)"), "{text}");
        assert!(lines[2].contains(&format!("{}…", "x".repeat(TITLE_WIDTH - 1))));
        assert!(!lines[2].contains(&"x".repeat(TITLE_WIDTH + 1)));
    }

    #[test]
    fn relative_times_read_naturally() {
        let now = Utc.with_ymd_and_hms(2026, 11, 30, 14, 0, 0).unwrap();
        assert_eq!(
            relative(now + chrono::Duration::seconds(30), now),
            "in under a minute"
        );
        assert_eq!(
            relative(now - chrono::Duration::minutes(3), now),
            "3 min ago"
        );
        assert_eq!(
            relative(now + chrono::Duration::minutes(125), now),
            "in 2 h 5 min"
        );
    }
}
