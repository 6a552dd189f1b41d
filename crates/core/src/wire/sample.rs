//! A card to start tests from ([`Approval::sample`]), for this crate's tests and, with the
//! `testing` feature, for other crates' tests: one literal instead of one per test module.

use chrono::{TimeZone, Utc};
use serde_json::json;

use super::{Approval, ApprovalKind, ApprovalStatus, Card, Effect, Execution};

impl Approval {
    /// A pending destructive card: id `a1`, `trash_email` of three emails (`m1`..`m3`, one card
    /// line each), asked as "trash the promo emails from this week", made at
    /// 2025-11-30T10:00:00Z and lapsing an hour later, undoable by `restore_email` for 30 days.
    /// Change what a test needs with struct update syntax.
    pub fn sample() -> Approval {
        Approval {
            id: "a1".into(),
            kind: ApprovalKind::Destructive,
            status: ApprovalStatus::Pending,
            tool: "trash_email".into(),
            args: json!({"ids": ["m1", "m2", "m3"]}),
            call_hash: "abc123".into(),
            items: vec!["m1".into(), "m2".into(), "m3".into()],
            card: Card {
                title: "Trash 3 emails".into(),
                action: "Trash 3 emails".into(),
                effect: Effect::Destructive,
                lines: vec![
                    "Black Friday deals — Shop <deals@shop.example>, 28 Nov".into(),
                    "Weekly promo — News <promo@news.example>, 27 Nov".into(),
                    "Last chance — Store <hi@store.example>, 26 Nov".into(),
                ],
                undo_tool: Some("restore_email".into()),
                undo_window_days: Some(30),
                request: "trash the promo emails from this week".into(),
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
            created_at: Utc.with_ymd_and_hms(2025, 11, 30, 10, 0, 0).unwrap(),
            expires_at: Utc.with_ymd_and_hms(2025, 11, 30, 11, 0, 0).unwrap(),
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    #[test]
    fn a_pending_card_lapses_at_its_expiry_instant_and_an_answered_one_never() {
        let card = Approval::sample();
        let at = card.expires_at;
        assert!(!card.lapsed_at(at - Duration::milliseconds(1)));
        assert!(card.lapsed_at(at), "the instant itself counts as lapsed");
        assert!(card.lapsed_at(at + Duration::days(1)));
        for status in [
            ApprovalStatus::Approved,
            ApprovalStatus::Rejected,
            ApprovalStatus::Expired,
        ] {
            let answered = Approval {
                status,
                ..Approval::sample()
            };
            assert!(!answered.lapsed_at(at + Duration::days(1)), "{status:?}");
        }
    }

    #[test]
    fn edited_fields_are_said_with_their_articles() {
        let with = |fields: &[&str]| Approval {
            edited_fields: Some(fields.iter().map(|f| f.to_string()).collect()),
            ..Approval::sample()
        };
        assert_eq!(Approval::sample().edited_words(), None);
        assert_eq!(with(&[]).edited_words(), None);
        assert_eq!(with(&["body"]).edited_words().unwrap(), "the body");
        assert_eq!(
            with(&["subject", "body"]).edited_words().unwrap(),
            "the subject and the body"
        );
        assert_eq!(
            with(&["to", "subject", "body"]).edited_words().unwrap(),
            "the recipients, the subject and the body"
        );
    }

    /// An unknown call offers its undo only when its plugin found items it can put back, and
    /// the button then names those (docs/liveness.md "truthful records").
    #[test]
    fn an_unknown_call_offers_its_undo_only_for_items_found_to_put_back() {
        let now = Approval::sample().expires_at;
        let unknown = Approval {
            status: ApprovalStatus::Approved,
            execution: Execution::Unknown,
            ..Approval::sample()
        };
        assert!(!unknown.undo_offered(now));
        let found = |undo_action: Option<&str>| Approval {
            located: Some(super::super::Located {
                summary: "2 in Trash.".into(),
                items: Vec::new(),
                undo_action: undo_action.map(str::to_owned),
            }),
            ..unknown.clone()
        };
        assert!(!found(None).undo_offered(now), "nothing to put back");
        assert!(found(Some("Restore 2 emails")).undo_offered(now));
        assert_eq!(
            found(Some("Restore 2 emails")).undo_label(),
            "Restore 2 emails"
        );
        let executed = Approval {
            execution: Execution::Executed,
            ..Approval::sample()
        };
        assert!(!executed.undo_offered(now), "not approved");
    }
}
