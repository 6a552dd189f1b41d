//! The owner's choice of items and the one call a claim may run.

use serde_json::json;

use super::*;
use crate::wire::ApprovalStatus;

/// The sample card with its items narrowable (`ids`), and the hash its request would have.
fn narrowable() -> Approval {
    let mut row = Approval::sample();
    row.card.items_arg = Some("ids".into());
    row.call_hash = call_hash(&row.tool, &row.args);
    row
}

/// `row` approved with `kept`, as the decision's commit leaves it.
fn approved(row: &Approval, kept: &[u32]) -> Approval {
    let terms = decided_terms(row, Decision::Approve, Some(kept))
        .unwrap()
        .expect("some of the items");
    let mut after = row.clone();
    after.status = ApprovalStatus::Approved;
    after.approved_items = Some(terms.items);
    after.decided_call = Some(terms.call);
    after
}

#[test]
fn a_card_may_be_narrowed_only_when_its_list_is_exactly_its_items_with_a_line_each() {
    let row = Approval::sample();
    let items = &row.items;
    let lines = &row.card.lines;
    assert_eq!(
        items_arg_for(Some("ids"), &row.args, items, lines).as_deref(),
        Some("ids")
    );
    // No `items` in the manifest, another argument, another order, a line missing, one item.
    assert_eq!(items_arg_for(None, &row.args, items, lines), None);
    assert_eq!(items_arg_for(Some("paths"), &row.args, items, lines), None);
    let swapped = json!({"ids": ["m2", "m1", "m3"]});
    assert_eq!(items_arg_for(Some("ids"), &swapped, items, lines), None);
    assert_eq!(
        items_arg_for(Some("ids"), &row.args, items, &lines[..2]),
        None
    );
    let one = json!({"ids": ["m1"]});
    assert_eq!(
        items_arg_for(Some("ids"), &one, &items[..1], &lines[..1]),
        None
    );
}

#[test]
fn some_items_make_a_narrowed_call_with_its_own_hash_and_all_of_them_a_plain_approval() {
    let row = narrowable();
    let terms = decided_terms(&row, Decision::Approve, Some(&[2, 0]))
        .unwrap()
        .unwrap();
    assert_eq!(terms.items, vec![0, 2], "taken sorted");
    assert_eq!(terms.call.args, json!({"ids": ["m1", "m3"]}));
    assert_eq!(terms.call.tool, "trash_email");
    assert_eq!(
        terms.call.call_hash,
        call_hash("trash_email", &terms.call.args)
    );
    assert_ne!(terms.call.call_hash, row.call_hash);
    assert_eq!(terms.args_canonical, canonical_json(&terms.call.args));
    assert_eq!(
        decided_terms(&row, Decision::Approve, Some(&[1, 2, 0])).unwrap(),
        None
    );
    assert_eq!(decided_terms(&row, Decision::Approve, None).unwrap(), None);
    assert_eq!(decided_terms(&row, Decision::Reject, None).unwrap(), None);
}

#[test]
fn a_choice_that_does_not_fit_is_refused_naming_the_rule() {
    let row = narrowable();
    let refused = |decision, items: &[u32]| decided_terms(&row, decision, Some(items)).unwrap_err();
    assert_eq!(refused(Decision::Reject, &[0]), ItemsRefusal::OnReject);
    assert_eq!(refused(Decision::Approve, &[]), ItemsRefusal::Empty);
    assert_eq!(
        refused(Decision::Approve, &[1, 1]),
        ItemsRefusal::Repeated(1)
    );
    assert_eq!(
        refused(Decision::Approve, &[0, 3]),
        ItemsRefusal::OutOfRange { index: 3, count: 3 }
    );
    assert!(refused(Decision::Approve, &[0, 3])
        .to_string()
        .contains("this card has 3 items (0 to 2)"));
    // A card that is all or nothing refuses a part, and takes all of them as a full approval.
    let whole = Approval::sample();
    assert_eq!(
        decided_terms(&whole, Decision::Approve, Some(&[0])).unwrap_err(),
        ItemsRefusal::NotNarrowable
    );
    assert_eq!(
        decided_terms(&whole, Decision::Approve, Some(&[0, 1, 2])).unwrap(),
        None
    );
}

#[test]
fn the_call_to_run_is_the_request_or_exactly_the_request_narrowed() {
    let row = narrowable();
    let preconditions = vec![json!("p1"), json!("p2"), json!("p3")];
    let full = call_to_run(&row, &preconditions).unwrap();
    assert_eq!(full.args, row.args);
    assert_eq!(full.items, row.items);
    assert_eq!(full.preconditions, preconditions);

    let after = approved(&row, &[0, 2]);
    let narrowed = call_to_run(&after, &preconditions).unwrap();
    assert_eq!(narrowed.args, json!({"ids": ["m1", "m3"]}));
    assert_eq!(narrowed.items, vec!["m1", "m3"]);
    assert_eq!(narrowed.preconditions, vec![json!("p1"), json!("p3")]);
    assert_eq!(narrowed.args_canonical, r#"{"ids":["m1","m3"]}"#);
    assert!(call_to_run(&after, &[]).unwrap().preconditions.is_empty());
    assert_eq!(after.left_out_indices(), vec![1]);
    assert_eq!(
        after.approved_share_text().as_deref(),
        Some("Approved 2 of 3")
    );
}

#[test]
fn a_decided_call_that_is_not_the_request_narrowed_never_runs() {
    let row = narrowable();
    let after = approved(&row, &[0, 2]);
    // Another item slipped in, with its hash made to match.
    let mut forged = after.clone();
    let call = forged.decided_call.as_mut().unwrap();
    call.args = json!({"ids": ["m1", "m9"]});
    call.call_hash = call_hash("trash_email", &call.args);
    assert!(call_to_run(&forged, &[])
        .unwrap_err()
        .contains("not its request narrowed"));
    // Another tool.
    let mut forged = after.clone();
    forged.decided_call.as_mut().unwrap().tool = "purge_quarantine".into();
    assert!(call_to_run(&forged, &[]).is_err());
    // A hash that does not cover the arguments.
    let mut forged = after.clone();
    forged.decided_call.as_mut().unwrap().call_hash = "00".into();
    assert!(call_to_run(&forged, &[]).unwrap_err().contains("hash"));
    // Kept items out of order, or the items without the call, or the call without the items.
    let mut forged = after.clone();
    forged.approved_items = Some(vec![2, 0]);
    assert!(call_to_run(&forged, &[]).is_err());
    let mut forged = after.clone();
    forged.decided_call = None;
    assert!(call_to_run(&forged, &[]).is_err());
    let mut forged = after;
    forged.approved_items = None;
    assert!(call_to_run(&forged, &[]).is_err());
}

/// A `send_email`-like row whose `subject` and `body` the owner may edit, approved with `body`
/// changed.
fn edited() -> Approval {
    let mut row = Approval::sample();
    row.tool = "send_email".into();
    row.args = json!({"to": ["anna@example.net"], "subject": "Hi", "body": "old", "account": "a"});
    row.items = vec!["anna@example.net".into()];
    row.card.editable = vec!["subject".into(), "body".into()];
    let args = json!({"to": ["anna@example.net"], "subject": "Hi", "body": "new", "account": "a"});
    row.status = ApprovalStatus::Approved;
    row.edited_fields = Some(vec!["body".into()]);
    row.decided_call = Some(DecidedCall {
        tool: row.tool.clone(),
        call_hash: call_hash(&row.tool, &args),
        args,
        items: row.items.clone(),
    });
    row
}

#[test]
fn an_edited_call_runs_as_edited_and_a_forged_one_never_runs() {
    let row = edited();
    let call = call_to_run(&row, &[]).unwrap();
    assert_eq!(call.args["body"], "new");
    assert_eq!(call.items, row.items);
    // A field outside `editable` changed (its hash made to match), or not among the edited
    // ones, or a tool swapped: never run.
    let forge = |change: &dyn Fn(&mut Approval)| {
        let mut forged = edited();
        change(&mut forged);
        if let Some(d) = forged.decided_call.as_mut() {
            d.call_hash = call_hash(&d.tool, &d.args);
        }
        call_to_run(&forged, &[])
    };
    let account = forge(&|r| r.decided_call.as_mut().unwrap().args["account"] = json!("b"));
    assert!(account.unwrap_err().contains("`account`"));
    let unlisted = forge(&|r| r.decided_call.as_mut().unwrap().args["subject"] = json!("Yo"));
    assert!(unlisted.unwrap_err().contains("`subject`"));
    assert!(forge(&|r| r.decided_call.as_mut().unwrap().tool = "trash_email".into()).is_err());
    assert!(forge(&|r| r.approved_items = Some(vec![0])).is_err());
    // A hash that does not cover the arguments.
    let mut bad_hash = edited();
    bad_hash.decided_call.as_mut().unwrap().call_hash = "00".into();
    assert!(call_to_run(&bad_hash, &[]).unwrap_err().contains("hash"));
    // Other items than the pinned preconditions name: never run.
    let mut other_items = edited();
    other_items.decided_call.as_mut().unwrap().items = vec!["bob@example.net".into()];
    assert!(call_to_run(&other_items, &[json!("p")]).is_err());
    assert!(call_to_run(&other_items, &[]).is_ok());
}
