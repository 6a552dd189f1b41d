//! What a card says about the other cards it repeats (docs/liveness.md "a card says what it
//! repeats"), in the same lines on every surface: the web card, `iris approvals show` and
//! Telegram.

use iris_core::wire::{CardOverlap, OverlapState};

use super::clip;

/// One line of what a card says about the cards it repeats: `overlap` as the line names it and,
/// for the runs of the same call, how many runs it stands for (`runs`, at least 1; `overlap`
/// is then the latest).
#[derive(Debug, Clone, PartialEq)]
pub struct OverlapLine {
    /// The card the line names.
    pub overlap: CardOverlap,
    /// How many runs of the same call the line counts (1 for a waiting card).
    pub runs: usize,
}

/// The lines a card's overlaps ([`Card::overlaps`]) are said in, the same on every surface:
/// each waiting card, and each card whose same call may have run (its outcome unknown), on a
/// line of its own, in the given order, then every run of the same call in the last hour as one
/// line naming the latest (a call asked for again and again would
/// otherwise bury the card under one line per run).
pub fn overlap_lines(overlaps: &[CardOverlap]) -> Vec<OverlapLine> {
    let mut lines: Vec<OverlapLine> = overlaps
        .iter()
        .filter(|o| matches!(o.state, OverlapState::Waiting | OverlapState::MayHaveRun))
        .map(|o| OverlapLine {
            overlap: o.clone(),
            runs: 1,
        })
        .collect();
    let ran: Vec<&CardOverlap> = overlaps
        .iter()
        .filter(|o| o.state == OverlapState::Ran)
        .collect();
    if let Some(latest) = ran.iter().max_by_key(|o| o.at) {
        lines.push(OverlapLine {
            overlap: (*latest).clone(),
            runs: ran.len(),
        });
    }
    lines
}

/// The words of one [`OverlapLine`], with `at` (its card's time) written by the surface.
pub fn overlap_line_text(line: &OverlapLine, at: &str) -> String {
    if line.runs > 1 {
        let title = clip(&line.overlap.title, 80);
        return format!(
            "The same call already ran {} times in the last hour, last at {at} (the card \"{title}\"): approving this does it again.",
            line.runs
        );
    }
    overlap_notice(&line.overlap, at)
}

/// What a card says about another card it repeats ([`Card::overlaps`]), in plain words, with
/// `at` written by the surface (its [`format_time`]): so nobody approves the same change
/// twice, or approves one that another card will already have done.
pub fn overlap_notice(overlap: &CardOverlap, at: &str) -> String {
    let title = clip(&overlap.title, 80);
    match (overlap.state, overlap.same_call) {
        (OverlapState::Waiting, true) => format!(
            "The same call is also on the card \"{title}\", waiting since {at}: approving both would do it twice."
        ),
        (OverlapState::Waiting, false) => format!(
            "{} also on the card \"{title}\", waiting since {at}.",
            count_with_verb(overlap.shared_items as usize, "item is", "items are")
        ),
        (OverlapState::Ran, _) => format!(
            "The same call already ran at {at} (the card \"{title}\"): approving this does it again."
        ),
        (OverlapState::MayHaveRun, _) => format!(
            "The same call may already have run at {at} (the card \"{title}\"; it is not known whether it did): check before approving this, or it may be done twice."
        ),
    }
}

/// "1 of these items is" / "3 of these items are".
fn count_with_verb(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 of these {one}")
    } else {
        format!("{n} of these {many}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn overlap(id: &str, state: OverlapState, minute: u32) -> CardOverlap {
        use chrono::TimeZone;
        CardOverlap {
            approval_id: id.into(),
            title: format!("Trash 5 emails ({id})"),
            state,
            at: Utc.with_ymd_and_hms(2026, 12, 5, 12, minute, 0).unwrap(),
            same_call: true,
            shared_items: 5,
        }
    }

    #[test]
    fn runs_of_the_same_call_are_one_line_naming_the_latest_and_waiting_cards_one_each() {
        let overlaps = vec![
            overlap("r1", OverlapState::Ran, 44),
            overlap("w1", OverlapState::Waiting, 50),
            overlap("r2", OverlapState::Ran, 48),
            overlap("r3", OverlapState::Ran, 46),
            overlap("w2", OverlapState::Waiting, 51),
        ];
        let lines = overlap_lines(&overlaps);
        let named: Vec<(&str, usize)> = lines
            .iter()
            .map(|l| (l.overlap.approval_id.as_str(), l.runs))
            .collect();
        assert_eq!(named, vec![("w1", 1), ("w2", 1), ("r2", 3)]);
        assert_eq!(
            overlap_line_text(&lines[2], "12:48"),
            "The same call already ran 3 times in the last hour, last at 12:48 (the card \"Trash 5 emails (r2)\"): approving this does it again."
        );
        assert_eq!(
            overlap_line_text(&lines[0], "12:50"),
            overlap_notice(&overlaps[1], "12:50")
        );
        // One run is said as before.
        let one = overlap_lines(&overlaps[..1]);
        assert_eq!(
            overlap_line_text(&one[0], "12:44"),
            overlap_notice(&overlaps[0], "12:44")
        );
        assert!(overlap_lines(&[]).is_empty());
    }

    /// A card whose same call may have run is never folded into the runs: it is its own line,
    /// and says the change may already be done.
    #[test]
    fn a_call_that_may_have_run_is_its_own_line_and_says_so() {
        let overlaps = vec![
            overlap("r1", OverlapState::Ran, 44),
            overlap("u1", OverlapState::MayHaveRun, 46),
            overlap("r2", OverlapState::Ran, 48),
        ];
        let lines = overlap_lines(&overlaps);
        let named: Vec<(&str, usize)> = lines
            .iter()
            .map(|l| (l.overlap.approval_id.as_str(), l.runs))
            .collect();
        assert_eq!(named, vec![("u1", 1), ("r2", 2)]);
        assert_eq!(
            overlap_line_text(&lines[0], "12:46"),
            "The same call may already have run at 12:46 (the card \"Trash 5 emails (u1)\"; it is not known whether it did): check before approving this, or it may be done twice."
        );
    }
}
