//! The card as a Telegram message (Telegram): MarkdownV2 text with every
//! user-supplied text escaped (title, lines, undo sentence, "You asked", names, reasons), and
//! the inline keyboards of each view: the card (action, Reject), the confirm (Yes, Cancel) and
//! none once the row is answered or lapsed.
//!
//! Wording follows the web card (`app::format`), so every surface says the same thing.

use app::format::{
    clip, execution_sentence, format_time, lapse_notice, overlap_line_text, overlap_lines,
    status_label, undo_sentence, who_and_where,
};
use iris_core::wire::{Approval, ApprovalKind, ApprovalStatus, Execution};

use super::bot_api::{InlineButton, InlineKeyboard};
use super::callback::{CallbackData, Step};

/// The characters MarkdownV2 reserves outside code entities
/// (<https://core.telegram.org/bots/api#markdownv2-style>): each must be preceded by `\` when
/// meant literally.
pub const MARKDOWN_V2_SPECIAL: &[char] = &[
    '_', '*', '[', ']', '(', ')', '~', '`', '>', '#', '+', '-', '=', '|', '{', '}', '.', '!', '\\',
];

/// How many characters of one card line are shown (a subject can be long).
const LINE_CHARS: usize = 160;
/// How many characters of the lines together are shown before "… and N more": keeps the whole
/// message well under Telegram's 4096-character limit.
const LINES_BUDGET: usize = 2400;
/// How many characters of "You asked" are shown (a request may be 4000 characters).
const REQUEST_CHARS: usize = 400;
/// How many characters of the title, the undo sentence, a name or a reason are shown.
const SHORT_CHARS: usize = 200;

/// How many lines of a card's preview (a file write's diff) a message shows.
const PREVIEW_LINES: usize = 12;

/// Escapes `text` for a MarkdownV2 code block, where only `` ` `` and `\` are reserved.
fn escape_code(text: &str) -> String {
    text.replace('\\', "\\\\").replace('`', "\\`")
}

/// Escapes `text` for MarkdownV2: every reserved character gets a `\` before it, so text from
/// mail, the model or the owner is shown as written and can never open a link, bold or code.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    for c in text.chars() {
        if MARKDOWN_V2_SPECIAL.contains(&c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The card's body, shared by every view: title, badge, lines, undo sentence (while it still
/// applies), "You asked".
fn body(approval: &Approval) -> String {
    let card = &approval.card;
    let mut text = format!("*{}*\n", escape(&clip(&card.title, SHORT_CHARS)));
    let badge = match approval.kind {
        ApprovalKind::Destructive => "Deletes data",
        ApprovalKind::PinnedWrite => "Acts for you",
        ApprovalKind::Evaluator => "Paused for review",
    };
    text.push_str(&format!("_{}_\n", escape(badge)));
    if !card.lines.is_empty() {
        text.push('\n');
        let mut used = 0;
        for (shown, line) in card.lines.iter().enumerate() {
            let line = clip(line, LINE_CHARS);
            used += line.chars().count();
            if used > LINES_BUDGET {
                let more = card.lines.len() - shown;
                text.push_str(&escape(&format!("… and {more} more")));
                text.push('\n');
                break;
            }
            text.push_str(&format!("• {}\n", escape(&line)));
            // Where a value on this line came from, when not from the owner
            // (docs/adr/0123-how-a-card-came-about.md).
            for flag in card.flags.iter().filter(|f| f.line as usize == shown) {
                text.push_str(&format!(
                    "  ⚠️ {}\n",
                    escape(&clip(&flag.note, SHORT_CHARS))
                ));
            }
        }
    }
    if !card.preview.is_empty() {
        // The change itself, as far as a message holds it; the whole diff is on the card's page.
        let shown: Vec<String> = card
            .preview
            .iter()
            .take(PREVIEW_LINES)
            .map(|l| clip(l, LINE_CHARS))
            .collect();
        text.push_str(&format!("```\n{}\n```\n", escape_code(&shown.join("\n"))));
        if card.preview.len() > PREVIEW_LINES {
            let more = card.preview.len() - PREVIEW_LINES;
            text.push_str(&escape(&format!(
                "… and {more} more lines on the card's page"
            )));
            text.push('\n');
        }
    }
    // As on the web card: the undo sentence matters while the call may still run or after it
    // ran, not after a "no".
    let undo_applies = approval.status == ApprovalStatus::Pending
        || (approval.status == ApprovalStatus::Approved && approval.execution != Execution::Failed);
    if let Some(undo) = undo_sentence(card).filter(|_| undo_applies) {
        text.push('\n');
        text.push_str(&escape(&clip(&undo, SHORT_CHARS)));
        text.push('\n');
    }
    if approval.status == ApprovalStatus::Pending {
        for line in overlap_lines(&card.overlaps) {
            let notice = overlap_line_text(&line, &format_time(line.overlap.at, None));
            text.push_str(&format!("\n⚠️ {}\n", escape(&clip(&notice, SHORT_CHARS))));
        }
    }
    let (asker, asked) = approval.asked();
    text.push_str(&format!(
        "\n{}: “{}”",
        escape(&asker),
        escape(&clip(&asked, REQUEST_CHARS))
    ));
    text
}

/// The pending card: body and when it expires. Sent with [`card_keyboard`].
pub fn card_text(approval: &Approval) -> String {
    let passkey = if approval.passkey_required {
        format!("\n{}", escape(NEEDS_PASSKEY))
    } else {
        String::new()
    };
    format!(
        "{}\n{}{passkey}",
        body(approval),
        escape(&format!(
            "Expires {}.",
            format_time(approval.expires_at, None)
        ))
    )
}

/// The confirm view after the action was tapped: the card, then "Trash 3 emails?" in bold.
/// Sent with [`confirm_keyboard`].
pub fn confirm_text(approval: &Approval) -> String {
    format!(
        "{}\n\n*{}*",
        card_text(approval),
        escape(&format!("{}?", clip(&approval.card.action, SHORT_CHARS)))
    )
}

/// The answered or lapsed card: the body, then the outcome in plain words (who answered, on
/// which surface, when, and what ran), or the lapse notice. Sent without buttons.
pub fn outcome_text(approval: &Approval) -> String {
    format!("{}\n\n{}", body(approval), outcome(approval))
}

/// The outcome paragraph of [`outcome_text`]. A lapse is dated by the row's expiry, not by
/// when the sweep noticed it (later, e.g. after the server was down).
fn outcome(approval: &Approval) -> String {
    let at = approval.responded_at.unwrap_or(approval.expires_at);
    let when = format_time(at, None);
    match approval.status {
        ApprovalStatus::Expired => escape(&lapse_notice(&format_time(approval.expires_at, None))),
        ApprovalStatus::Pending => escape("Waiting for an answer."),
        status => {
            let who = clip(&who_and_where(approval), SHORT_CHARS);
            let mut text = format!(
                "*{}*{}",
                escape(status_label(status)),
                escape(&format!("{who} at {when}."))
            );
            if let Some(reason) = approval.reason.as_deref().filter(|r| !r.is_empty()) {
                text.push_str(&format!(
                    "\n{}",
                    escape(&format!("Reason: {}", clip(reason, SHORT_CHARS)))
                ));
            }
            if status == ApprovalStatus::Approved {
                text.push_str(&format!("\n{}", escape(&execution_sentence(approval))));
            } else {
                text.push_str(&format!(
                    "\n{}",
                    escape("Nothing was changed, sent or deleted.")
                ));
            }
            if let Some(error) = approval.resume_error.as_deref() {
                text.push_str(&format!(
                    "\n{}",
                    escape(&format!(
                        "Continuing the chat failed: {}",
                        clip(error, SHORT_CHARS)
                    ))
                ));
            }
            text
        }
    }
}

/// One button carrying `step` for this row.
fn button(text: &str, step: Step, approval: &Approval) -> InlineButton {
    InlineButton {
        text: clip(text, 60),
        callback_data: CallbackData {
            step,
            approval_id: approval.id.clone(),
        }
        .encode(),
        url: None,
    }
}

/// The words of a card that needs the owner's passkey (ADR-0118 decision 4): Telegram cannot
/// approve it.
pub const NEEDS_PASSKEY: &str =
    "This card needs your passkey: open the card to approve it. You can still reject it here.";

/// The card's two buttons: the action (the card's `action`, e.g. "Trash 3 emails") and Reject.
/// A card that needs the owner's passkey gets "Open the card" (a link to `link`, the card's page
/// in the web app) instead of the action.
pub fn card_keyboard(approval: &Approval, link: &str) -> InlineKeyboard {
    let first = if approval.passkey_required {
        InlineButton {
            text: "Open the card".into(),
            callback_data: String::new(),
            url: Some(link.to_string()),
        }
    } else {
        button(&approval.card.action, Step::Ask, approval)
    };
    let mut rows = vec![vec![first, button("Reject", Step::Reject, approval)]];
    // Approving some of the items takes the card's checkboxes: a link to the card in the app
    // (docs/adr/0122-shaping-a-call.md). Telegram's own buttons answer the whole card. Only a
    // link Telegram can open (not loopback: Telegram refuses a message whose button points
    // there, and the card would not arrive at all).
    if approval.narrowable() && !approval.passkey_required && reachable_link(link) {
        rows.push(vec![InlineButton {
            text: "Choose in the app".into(),
            callback_data: String::new(),
            url: Some(link.to_string()),
        }]);
    }
    InlineKeyboard {
        inline_keyboard: rows,
    }
}

/// Whether `link` names a host other than this machine (Telegram opens it on the owner's
/// phone, and refuses a button to `localhost` or a loopback address).
fn reachable_link(link: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(link) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => !ip.is_loopback(),
        Err(_) => host != "localhost" && !host.ends_with(".localhost"),
    }
}

/// The confirm view's two buttons: Yes (approves) and Cancel (back to the card).
pub fn confirm_keyboard(approval: &Approval) -> InlineKeyboard {
    InlineKeyboard {
        inline_keyboard: vec![vec![
            button("Yes", Step::Yes, approval),
            button("Cancel", Step::Cancel, approval),
        ]],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use iris_core::wire::{Card, Effect};
    use serde_json::json;

    fn approval() -> Approval {
        Approval {
            id: "0f8e2f4e-5b7c-4c1e-9a47-3c1f7d2b9e10".into(),
            kind: ApprovalKind::Destructive,
            status: ApprovalStatus::Pending,
            tool: "trash_email".into(),
            args: json!({"ids": ["m1", "m2"]}),
            call_hash: "abc".into(),
            items: vec!["m1".into(), "m2".into()],
            card: Card {
                title: "Trash 2 emails".into(),
                action: "Trash 2 emails".into(),
                effect: Effect::Destructive,
                lines: vec![
                    "50% off *today* [click](http://x.example) — shop_news <a@b.example>".into(),
                    "Re: `code` ~strike~ #tag +1 -1 = |pipe| {brace} done! back\\slash".into(),
                ],
                undo_tool: Some("restore_email".into()),
                undo_window_days: Some(30),
                request: "trash the promo mails (all of them) - thanks!".into(),
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
            created_at: Utc.with_ymd_and_hms(2026, 11, 30, 10, 0, 0).unwrap(),
            expires_at: Utc.with_ymd_and_hms(2026, 11, 30, 11, 0, 0).unwrap(),
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

    /// Every reserved character is escaped, and nothing else is touched.
    #[test]
    fn escapes_every_markdown_v2_special_character() {
        let all = "_*[]()~`>#+-=|{}.!\\";
        assert_eq!(
            escape(all),
            "\\_\\*\\[\\]\\(\\)\\~\\`\\>\\#\\+\\-\\=\\|\\{\\}\\.\\!\\\\"
        );
        for c in MARKDOWN_V2_SPECIAL {
            assert_eq!(escape(&c.to_string()), format!("\\{c}"), "{c}");
        }
        assert_eq!(MARKDOWN_V2_SPECIAL.len(), 19);
        assert_eq!(
            escape("plain words, “quotes” & ü?"),
            "plain words, “quotes” & ü?"
        );
        assert_eq!(escape(""), "");
    }

    /// Unescaped reserved characters outside the renderer's own `*…*` and `_…_` markers.
    fn stray_specials(text: &str) -> Vec<char> {
        let mut stray = Vec::new();
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                chars.next();
            } else if MARKDOWN_V2_SPECIAL.contains(&c) && c != '*' && c != '_' {
                stray.push(c);
            }
        }
        stray
    }

    #[test]
    fn card_text_escapes_every_user_supplied_text() {
        let a = approval();
        let text = card_text(&a);
        assert!(
            text.starts_with("*Trash 2 emails*\n_Deletes data_\n"),
            "{text}"
        );
        for line in &a.card.lines {
            assert!(text.contains(&format!("• {}", escape(line))), "{text}");
        }
        assert!(text.contains(&escape(a.card.undo_note.as_deref().unwrap())));
        assert!(text.contains(&format!("You asked: “{}”", escape(&a.card.request))));
        assert!(
            text.contains("Expires 30 Nov 2026, 11:00:00 UTC\\."),
            "{text}"
        );
        assert_eq!(stray_specials(&text), Vec::<char>::new(), "{text}");
        // Only the renderer's own bold and italic markers are unescaped.
        let markers = text.replace("\\*", "").replace("\\_", "");
        assert_eq!(markers.matches('*').count(), 2, "{text}");
        assert_eq!(markers.matches('_').count(), 2, "{text}");
    }

    #[test]
    fn a_hostile_title_cannot_format() {
        let mut a = approval();
        a.card.title = "*bold* _it_ [link](tg://x)".into();
        a.card.action = "Do *it*".into();
        let text = confirm_text(&a);
        assert!(
            text.starts_with("*\\*bold\\* \\_it\\_ \\[link\\]\\(tg://x\\)*\n"),
            "{text}"
        );
        assert!(text.ends_with("\n\n*Do \\*it\\*?*"), "{text}");
        assert_eq!(stray_specials(&text), Vec::<char>::new(), "{text}");
    }

    #[test]
    fn a_flag_is_told_under_its_line_escaped() {
        let mut a = approval();
        a.card.lines = vec!["From: me".into(), "To: pay_me@evil.example".into()];
        a.card.flags = vec![iris_core::wire::CardFlag {
            line: 1,
            note: "“pay_me@evil.example” is from the text of the email 'x' (not from you)".into(),
        }];
        let text = card_text(&a);
        assert!(
            text.contains("• To: pay\\_me@evil\\.example\n  ⚠️ “pay\\_me@evil\\.example” is from the text of the email 'x' \\(not from you\\)\n"),
            "{text}"
        );
        assert_eq!(stray_specials(&text), Vec::<char>::new(), "{text}");
    }

    #[test]
    fn a_card_of_several_items_links_to_the_app_to_choose_some_where_telegram_can_open_it() {
        let mut a = approval();
        a.items = vec!["m1".into(), "m2".into()];
        a.card.lines = vec!["one".into(), "two".into()];
        a.card.items_arg = Some("ids".into());
        let choose = |a: &Approval, link: &str| {
            card_keyboard(a, link)
                .inline_keyboard
                .iter()
                .flatten()
                .any(|b| b.text == "Choose in the app" && b.url.as_deref() == Some(link))
        };
        assert!(choose(&a, "https://iris.example.org/activity/x"));
        for loopback in [
            "http://localhost:3000/activity/x",
            "http://127.0.0.1:3000/activity/x",
            "http://[::1]:3000/activity/x",
        ] {
            assert!(!choose(&a, loopback), "{loopback}");
        }
        // All or nothing: no link.
        a.card.items_arg = None;
        assert!(!choose(&a, "https://iris.example.org/activity/x"));
    }

    #[test]
    fn keyboards_name_the_row_and_the_step() {
        let a = approval();
        let k = card_keyboard(&a, "http://localhost:3000/activity/x");
        assert_eq!(k.inline_keyboard.len(), 1);
        let row = &k.inline_keyboard[0];
        assert_eq!(row[0].text, "Trash 2 emails");
        assert_eq!(row[0].callback_data, format!("a:{}", a.id));
        assert_eq!(row[1].text, "Reject");
        assert_eq!(row[1].callback_data, format!("r:{}", a.id));
        let k = confirm_keyboard(&a);
        let row = &k.inline_keyboard[0];
        assert_eq!(row[0].text, "Yes");
        assert_eq!(row[0].callback_data, format!("y:{}", a.id));
        assert_eq!(row[1].text, "Cancel");
        assert_eq!(row[1].callback_data, format!("c:{}", a.id));
        // Telegram allows at most 64 bytes of callback data.
        assert!(row.iter().all(|b| b.callback_data.len() <= 64));
    }

    #[test]
    fn outcome_says_who_where_when_and_what_ran() {
        let mut a = approval();
        a.status = ApprovalStatus::Approved;
        a.responded_by = Some("@own_er".into());
        a.surface = Some("telegram".into());
        a.responded_at = Some(Utc.with_ymd_and_hms(2026, 11, 30, 10, 5, 0).unwrap());
        a.execution = Execution::Executed;
        a.result = Some(json!({"trashed": 2}));
        let text = outcome_text(&a);
        assert!(
            text.contains("*Approved* by @own\\_er via telegram at 30 Nov 2026, 10:05:00 UTC\\."),
            "{text}"
        );
        assert!(text.contains("Moved 2 emails to Trash"), "{text}");
        assert!(!text.contains("Expires"), "{text}");
        assert_eq!(stray_specials(&text), Vec::<char>::new(), "{text}");

        a.status = ApprovalStatus::Rejected;
        a.execution = Execution::None;
        a.reason = Some("not (these)".into());
        let text = outcome_text(&a);
        assert!(
            text.contains("*Rejected* by @own\\_er via telegram"),
            "{text}"
        );
        assert!(text.contains("Reason: not \\(these\\)"), "{text}");
        assert!(
            text.contains("Nothing was changed, sent or deleted\\."),
            "{text}"
        );
        assert!(
            !text.contains("restore these"),
            "no undo after a no: {text}"
        );
    }

    #[test]
    fn lapse_notice_in_plain_words() {
        let mut a = approval();
        a.status = ApprovalStatus::Expired;
        a.responded_by = Some("iris".into());
        a.surface = Some("sweep".into());
        // Marked by the sweep three hours late (the server was down): still dated by its expiry.
        a.responded_at = Some(Utc.with_ymd_and_hms(2026, 11, 30, 14, 0, 0).unwrap());
        let text = outcome_text(&a);
        assert!(
            text.ends_with(
                "This request lapsed at 30 Nov 2026, 11:00:00 UTC without an answer, so nothing was done\\."
            ),
            "{text}"
        );
        assert!(!text.contains("14:00"), "{text}");
        assert!(
            !text.contains("restore these"),
            "no undo after a lapse: {text}"
        );
    }

    #[test]
    fn long_cards_stay_under_telegrams_limit() {
        let mut a = approval();
        a.card.lines = (0..200)
            .map(|i| format!("{i}: {}", "x".repeat(300)))
            .collect();
        a.card.request = "y".repeat(4000);
        let text = confirm_text(&a);
        assert!(text.chars().count() < 4096, "{}", text.chars().count());
        assert!(text.contains("more"), "{text}");
    }
}
