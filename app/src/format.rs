//! Pure wording helpers for the card: the undo sentence, the exact call, the outcome lines and
//! times. No reactivity here, so they are easy to test.

use chrono::{DateTime, Utc};
use iris_core::wire::{Approval, ApprovalStatus, Card, Execution, RunningJob};
use serde_json::Value;

mod overlap;
pub use overlap::{overlap_line_text, overlap_lines, overlap_notice, OverlapLine};

/// The undo sentence: the plugin's own words when it gave some, else one built from the undo
/// tool and window; `None` when nothing can undo this.
pub fn undo_sentence(card: &Card) -> Option<String> {
    if let Some(note) = card.undo_note.as_ref().filter(|n| !n.trim().is_empty()) {
        return Some(note.clone());
    }
    let tool = card.undo_tool.as_ref()?;
    Some(match card.undo_window_days {
        Some(1) => format!("You can undo this with {tool} for 1 day."),
        Some(days) => format!("You can undo this with {tool} for {days} days."),
        None => format!("You can undo this with {tool}."),
    })
}

/// "1 email" / "3 emails".
fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// How many things a result field names: an array's length or a number's value.
fn how_many(value: &Value) -> Option<usize> {
    match value {
        Value::Array(items) => Some(items.len()),
        Value::Number(n) => n.as_u64().and_then(|n| usize::try_from(n).ok()),
        _ => None,
    }
}

/// A readable sentence for an executed call's result: the plugin's own `summary` ("Deleted 2
/// events", its last full stop dropped), else one the result's shape tells ("Moved 3 emails to
/// Trash"), else its `message`; `None` when there is none (the card then shows the JSON).
pub fn result_summary(result: &Value) -> Option<String> {
    let object = result.as_object()?;
    if let Some(said) = object
        .get("summary")
        .and_then(Value::as_str)
        .map(|s| s.trim().trim_end_matches('.'))
        .filter(|s| !s.is_empty())
    {
        return Some(said.to_owned());
    }
    if let Some(n) = object.get("trashed").and_then(how_many) {
        let mut sentence = format!("Moved {} to Trash", count(n, "email", "emails"));
        let not_moved = object
            .get("items")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter(|i| {
                        i.get("status")
                            .and_then(Value::as_str)
                            .is_some_and(|s| s != "trashed")
                    })
                    .count()
            })
            .unwrap_or(0);
        if not_moved > 0 {
            sentence.push_str(&format!(
                "; {} not moved",
                count(not_moved, "email was", "emails were")
            ));
        }
        return Some(sentence);
    }
    if let Some(n) = object.get("restored").and_then(how_many) {
        return Some(format!(
            "Restored {} from Trash",
            count(n, "email", "emails")
        ));
    }
    object
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// A value as indented JSON, for the "Result" details and the exact call. The one way the
/// browser writes a JSON value (a second, e.g. `Display`'s compact one, would be a second
/// copy of serde_json's writer in the wasm); writing a `Value` into a `String` cannot fail.
pub fn pretty_json(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// The headline word of a status.
pub fn status_label(status: ApprovalStatus) -> &'static str {
    match status {
        ApprovalStatus::Pending => "Waiting for you",
        ApprovalStatus::Approved => "Approved",
        ApprovalStatus::Rejected => "Rejected",
        ApprovalStatus::Expired => "Expired",
    }
}

/// `text` cut to at most `max` characters, ending in "…" when cut (the one rule, in the wire
/// crate the server shares).
pub use iris_core::wire::clip;

/// The lapse notice every surface shows for an expired row, in plain words (DESIGN §3
/// step 9): that the request lapsed, when, and that nothing was done. `when` is the row's
/// `expires_at` as the surface writes times; never its `responded_at`, which is when the sweep
/// noticed (later, e.g. after the server was down).
pub fn lapse_notice(when: &str) -> String {
    format!("This request lapsed at {when} without an answer, so nothing was done.")
}

/// Who runs a decided card's job now ([`Approval::running`]), with `since` written by the
/// surface: "Running on iris@vm:4711-1a2b3c4d since 3 Dec 2026, 10:05:00." (no time for a job taken
/// before it was recorded).
pub fn running_sentence(job: &RunningJob, since: Option<&str>) -> String {
    let holder = clip(&job.holder, 80);
    match since {
        Some(since) => format!("Running on {holder} since {since}."),
        None => format!("Running on {holder}."),
    }
}

/// The title of the card that already did what this one's call found done
/// (`result.handled_by`), when the executor found one.
fn handled_by(approval: &Approval) -> Option<String> {
    let first = approval.result.as_ref()?.get("handled_by")?;
    Some(first.get("title")?.as_str()?.to_owned())
}

/// What the side-effect ledger says, as a sentence for an approved card.
pub fn execution_sentence(approval: &Approval) -> String {
    let sentence = ran_sentence(approval);
    match left_out_sentence(approval) {
        Some(left_out) => format!("{left_out} {sentence}"),
        None => sentence,
    }
}

/// The card's action words for `kept` of its `of` items: the count in them becomes "K of N"
/// ("Trash 3 emails" → "Trash 2 of 3 emails"); words without the count get " (K of N)".
pub fn narrowed_action(action: &str, kept: usize, of: usize) -> String {
    let count = of.to_string();
    let mut replaced = false;
    let words: Vec<String> = action
        .split(' ')
        .map(|word| {
            if !replaced && word == count {
                replaced = true;
                format!("{kept} of {of}")
            } else {
                word.to_owned()
            }
        })
        .collect();
    if replaced {
        words.join(" ")
    } else {
        format!("{action} ({kept} of {of})")
    }
}

/// What an approval of some items says first on every surface: "Approved 3 of 5; left out,
/// not touched: LINE; LINE."; of an edited call: "Approved as you edited it (subject)."
/// (`None` for any other card).
pub fn left_out_sentence(approval: &Approval) -> Option<String> {
    if let Some(fields) = approval.edited_fields.as_ref().filter(|f| !f.is_empty()) {
        return Some(format!(
            "Approved as you edited it ({}).",
            clip(&fields.join(", "), 200)
        ));
    }
    let share = approval.approved_share_text()?;
    let lines = approval.left_out_lines();
    Some(format!(
        "{share}; left out, not touched: {}.",
        clip(lines.join("; ").trim_end_matches('.'), 300)
    ))
}

/// What happened to the call that ran ([`execution_sentence`] without the items left out).
fn ran_sentence(approval: &Approval) -> String {
    match approval.execution {
        Execution::None => "Approved; it will run in a moment.".to_owned(),
        Execution::Executing => "Running now…".to_owned(),
        Execution::Executed => approval
            .result
            .as_ref()
            .and_then(result_summary)
            .unwrap_or_else(|| "Done.".to_owned()),
        Execution::Failed if wholly_stale(approval) => match handled_by(approval) {
            Some(title) => format!(
                "Nothing was done: the card \"{}\", approved first, already did it; it will not be tried again.",
                clip(&title, 80)
            ),
            None => "Nothing was done; it will not be tried again.".to_owned(),
        },
        Execution::Failed => "It failed; nothing more will be tried.".to_owned(),
        Execution::Unknown => match located_summary(approval) {
            Some(found) => format!(
                "It is not known whether this finished; it will not be run again. Where its items were after the restart: {found}."
            ),
            None => "It is not known whether this ran; it will not be run again.".to_owned(),
        },
    }
}

/// The plugin's sentence of where an unknown call's items are now ("1 in quarantine, 1 still
/// at its path"), when it found them after the takeover ([`Approval::located`]).
fn located_summary(approval: &Approval) -> Option<String> {
    approval
        .located
        .as_ref()
        .map(|l| l.summary.trim().trim_end_matches('.').to_owned())
        .filter(|s| !s.is_empty())
        .map(|s| clip(&s, 200))
}

/// Where each item of an unknown call is now, as its plugin found them after the takeover:
/// `(item as shown, status word, sentence)` in the call's order; empty when it found nothing.
pub fn located_items(approval: &Approval) -> Vec<(String, String, String)> {
    approval
        .located
        .iter()
        .flat_map(|l| &l.items)
        .map(|i| (clip(&i.label, 300), i.status.clone(), clip(&i.message, 300)))
        .collect()
}

/// How an answered card's outcome looks. Only a call that ran with every item done is a
/// success; a failure, a stale call (nothing done), a partly stale one and an unknown outcome
/// must never look like one (failed/unknown; DESIGN §8 fail closed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutcomeTone {
    /// Not a result: pending, rejected, expired, or approved and not finished yet.
    Neutral,
    /// Approved and executed, every item done.
    Success,
    /// Approved, but nothing or not everything was done (stale), or nobody knows whether it ran.
    Warning,
    /// Approved, and the call failed or was refused.
    Failed,
}

impl OutcomeTone {
    /// The CSS/test spelling: `neutral`, `success`, `warning`, `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeTone::Neutral => "neutral",
            OutcomeTone::Success => "success",
            OutcomeTone::Warning => "warning",
            OutcomeTone::Failed => "failed",
        }
    }
}

/// The items the executor skipped as stale (`result.stale`, staleness).
fn stale_items(approval: &Approval) -> usize {
    approval
        .result
        .as_ref()
        .and_then(|r| r.get("stale"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

/// The whole call was stale: the executor ran nothing (`result.status == "stale"`).
fn wholly_stale(approval: &Approval) -> bool {
    approval
        .result
        .as_ref()
        .and_then(|r| r.get("status"))
        .and_then(Value::as_str)
        == Some("stale")
}

/// The tone of `approval`'s outcome (see [`OutcomeTone`]).
pub fn outcome_tone(approval: &Approval) -> OutcomeTone {
    if approval.status != ApprovalStatus::Approved {
        return OutcomeTone::Neutral;
    }
    match approval.execution {
        Execution::None | Execution::Executing => OutcomeTone::Neutral,
        Execution::Executed if stale_items(approval) > 0 => OutcomeTone::Warning,
        Execution::Executed => OutcomeTone::Success,
        Execution::Failed if wholly_stale(approval) => OutcomeTone::Warning,
        Execution::Failed => OutcomeTone::Failed,
        Execution::Unknown => OutcomeTone::Warning,
    }
}

/// The card's status badge: the status word for a pending, rejected or lapsed card and a call
/// that succeeded or is on its way; else what happened to the call. It agrees with the
/// headline: an unknown outcome is not "not done" (it may have run; DESIGN §8 fail closed), and
/// a partly stale run did part of its work.
pub fn badge_label(approval: &Approval) -> &'static str {
    match (outcome_tone(approval), approval.execution) {
        (OutcomeTone::Failed, _) => "Failed",
        (OutcomeTone::Warning, Execution::Unknown) => "Outcome unknown",
        (OutcomeTone::Warning, Execution::Executed) => "Partly done",
        (OutcomeTone::Warning, _) => "Not done",
        (OutcomeTone::Neutral | OutcomeTone::Success, _) => status_label(approval.status),
    }
}

/// What an approved card's outcome line adds after who approved it and when ("Approved by phone
/// via web at 3 Dec 2026, 09:07:00, but nothing was done."): `None` for a success or a call still on
/// its way, else words that say it did not (fully) happen.
pub fn approved_problem(approval: &Approval) -> Option<&'static str> {
    match (approval.execution, outcome_tone(approval)) {
        (Execution::Failed, OutcomeTone::Warning) => Some("but nothing was done"),
        (Execution::Failed, _) => Some("but it failed"),
        (Execution::Unknown, _) => Some("outcome unknown"),
        (_, OutcomeTone::Warning) => Some("partly done"),
        _ => None,
    }
}

/// Why an approved call did not (fully) happen, in plain words; `None` for a success or a call
/// still on its way. The executor's own message comes first (`result.message`), else the
/// resume error.
pub fn outcome_problem(approval: &Approval) -> Option<String> {
    let message = approval
        .result
        .as_ref()
        .and_then(|r| r.get("message"))
        .and_then(Value::as_str)
        .filter(|m| !m.trim().is_empty())
        .map(str::to_owned);
    match outcome_tone(approval) {
        OutcomeTone::Neutral | OutcomeTone::Success => None,
        // Where each item of an unknown call is now says more than how to check it (the
        // outcome's list); the message would only repeat it.
        _ if approval.execution == Execution::Unknown && approval.located.is_some() => None,
        _ if approval.execution == Execution::Executed => {
            let n = stale_items(approval);
            Some(format!(
                "{} changed since you saw {} and {} left alone.",
                count(n, "item", "items"),
                if n == 1 { "it" } else { "them" },
                if n == 1 { "was" } else { "were" }
            ))
        }
        _ if wholly_stale(approval) => Some(match handled_by(approval) {
            Some(title) => format!(
                "The card \"{}\", approved first, already did this, so nothing was run.",
                clip(&title, 80)
            ),
            None => {
                "Everything on the card changed since you saw it, so nothing was run.".to_owned()
            }
        }),
        // The execution sentence already says it is unknown and never runs again: keep only
        // how to check ("To check: …").
        _ if approval.execution == Execution::Unknown => message
            .map(|m| {
                m.strip_prefix(iris_core::wire::UNKNOWN_OUTCOME)
                    .map(|rest| rest.trim_start_matches(['.', ':', ' ']).to_owned())
                    .unwrap_or(m)
            })
            .filter(|m| !m.is_empty())
            .or_else(|| approval.resume_error.clone()),
        _ => message
            .or_else(|| approval.resume_error.clone())
            .or_else(|| {
                (approval.execution == Execution::Failed)
                    .then(|| "No reason was recorded.".to_owned())
            }),
    }
}

/// A moment as every surface writes it ([`iris_core::wire::when`]): "6 Dec 2026, 15:05:09" in
/// the reader's offset once known (the page's cookie tells the server: `crate::live`), else in
/// UTC with a "UTC" suffix.
pub fn format_time(at: DateTime<Utc>, offset_minutes: Option<i32>) -> String {
    iris_core::wire::when(at, offset_minutes)
}

/// "by phone via cli" (each part only when known), and "with a passkey" for an approval that
/// needed one (it is approved only with one; ADR-0118 decision 4).
pub fn who_and_where(approval: &Approval) -> String {
    let mut words = String::new();
    if let Some(by) = approval.responded_by.as_deref().filter(|s| !s.is_empty()) {
        words.push_str(" by ");
        words.push_str(by);
    }
    if let Some(surface) = approval.surface.as_deref().filter(|s| !s.is_empty()) {
        words.push_str(" via ");
        words.push_str(surface);
    }
    if approval.passkey_required && approval.status == iris_core::wire::ApprovalStatus::Approved {
        words.push_str(" with a passkey");
    }
    words
}

/// Where in `text` the app-relative link `/activity/<id>` sits, widened to the whole
/// whitespace-delimited token (so `http://host/activity/<id>` is one link): start and end byte.
pub fn find_card_link(text: &str, approval_id: &str) -> Option<(usize, usize)> {
    let path = format!("/activity/{approval_id}");
    let at = text.find(&path)?;
    let start = text[..at]
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace() || *c == '(' || *c == '<')
        .map(|(i, c)| i + c.len_utf8())
        .unwrap_or(0);
    Some((start, at + path.len()))
}

/// The mark a plugin puts before each line of quoted text on a card (a mail's body): `│ `.
pub const QUOTE_MARK: char = '│';

/// A card's lines as the card draws them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CardPart {
    /// One row (an item, a header such as "To: …").
    Line(String),
    /// A run of quoted lines ([`QUOTE_MARK`] first) as one block of text, blank lines kept,
    /// the marks gone: a mail reads as a mail.
    Quote(String),
}

/// `lines` grouped into [`CardPart`]s, in order.
pub fn card_parts(lines: &[String]) -> Vec<CardPart> {
    let mut parts: Vec<CardPart> = Vec::new();
    for line in lines {
        match line.strip_prefix(QUOTE_MARK) {
            Some(rest) => {
                let text = rest.strip_prefix(' ').unwrap_or(rest);
                if let Some(CardPart::Quote(block)) = parts.last_mut() {
                    block.push('\n');
                    block.push_str(text);
                } else {
                    parts.push(CardPart::Quote(text.to_owned()));
                }
            }
            None => parts.push(CardPart::Line(line.clone())),
        }
    }
    parts
}

#[cfg(test)]
mod tests;
