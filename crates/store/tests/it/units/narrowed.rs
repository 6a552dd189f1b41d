//! An approval of some of a card's items, or of an edited call (docs/adr/0122-shaping-a-call.md):
//! its decided call is written once, whole, with the decision and never after; a claim of that
//! row must name the decided call, and the request's whole call is refused, consumed and never
//! run.

use crate::common;

use common::*;
use iris_core::ports::{ClaimPlan, DecidedTerms, JobPick, JobSnapshot, LedgerStep};
use iris_core::wire::DecidedCall;

use super::{claim, job_state};

/// The terms of approving `kept` of `ids` (a `trash_email` call).
fn terms(kept: &[u32], ids: &[&str]) -> DecidedTerms {
    let args = json!({"ids": kept.iter().map(|&i| ids[i as usize]).collect::<Vec<_>>()});
    DecidedTerms {
        items: kept.to_vec(),
        edited_fields: Vec::new(),
        args_canonical: canonical_json(&args),
        call: DecidedCall {
            tool: "trash_email".into(),
            call_hash: call_hash("trash_email", &args),
            args,
            items: Vec::new(),
        },
    }
}

/// Inserts `id` over m1..m3 and approves m1 and m3 only.
async fn approve_two_of_three(store: &Store, id: &str) {
    let ids = ["m1", "m2", "m3"];
    insert(store, &trash_request(id, &ids)).await.unwrap();
    let answer = Response {
        decided: Some(terms(&[0, 2], &ids)),
        ..response(ApprovalStatus::Approved, "owner", t0())
    };
    assert!(decide(store, id, &answer).await.unwrap());
}

/// A plan claiming `args_canonical` of the snapshot's row.
fn claiming(args_canonical: &'static str) -> impl Fn(&JobSnapshot) -> ClaimPlan + Send + Sync {
    move |s: &JobSnapshot| ClaimPlan {
        ledger: LedgerStep::Claim {
            tool: s
                .approval
                .as_ref()
                .map_err(String::as_str)
                .expect("row")
                .tool
                .clone(),
            args_canonical: args_canonical.into(),
        },
        ..ClaimPlan::lease_only()
    }
}

async fn the_decided_call_is_written_once_with_the_approval(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    approve_two_of_three(&store, "n1").await;
    let row = store.approval("n1").await.unwrap().unwrap();
    assert_eq!(row.status, ApprovalStatus::Approved);
    assert_eq!(row.approved_items, Some(vec![0, 2]));
    let decided = row.decided_call.clone().expect("decided call");
    assert_eq!(decided.args, json!({"ids": ["m1", "m3"]}));
    assert_eq!(decided.call_hash, call_hash("trash_email", &decided.args));
    // The request's terms are as they were.
    assert_eq!(row.args, json!({"ids": ["m1", "m2", "m3"]}));
    assert_eq!(row.items, vec!["m1", "m2", "m3"]);

    // Never changed after the decision, not even to the same shape with another item.
    let message = refused(
        &store,
        r#"UPDATE approvals SET decided_args = '{"ids":["m1","m2"]}' WHERE id = 'n1'"#,
    )
    .await;
    assert!(
        message.contains("a decided call is written once"),
        "{message}"
    );
    let message = refused(
        &store,
        "UPDATE approvals SET approved_items = NULL, decided_args = NULL, \
         decided_args_canonical = NULL, decided_call_hash = NULL WHERE id = 'n1'",
    )
    .await;
    assert!(
        message.contains("a decided call is written once"),
        "{message}"
    );

    // Only with an approval: not on a new row, a rejection, or in part.
    insert(&store, &trash_request("r1", &["m1", "m2"]))
        .await
        .unwrap();
    let message = refused(
        &store,
        r#"UPDATE approvals SET status = 'rejected', responded_at = created_at, responded_by = 'x',
           surface = 'web', approved_items = '[0]', decided_args = '{"ids":["m1"]}',
           decided_args_canonical = '{"ids":["m1"]}', decided_call_hash = 'h' WHERE id = 'r1'"#,
    )
    .await;
    assert!(
        message.contains("a decided call is written once"),
        "{message}"
    );
    let message = refused(
        &store,
        r#"UPDATE approvals SET status = 'approved', responded_at = created_at, responded_by = 'x',
           surface = 'web', approved_items = '[0]' WHERE id = 'r1'"#,
    )
    .await;
    assert!(message.contains("whole"), "{message}");
    let message = refused(
        &store,
        "INSERT INTO approvals (id, kind, tool, args, args_canonical, call_hash, items, card, \
         run_id, context_summary, created_at, expires_at, preconditions, approved_items) \
         SELECT 'copy', kind, tool, args, args_canonical, call_hash, items, card, run_id, \
         context_summary, created_at, expires_at, preconditions, '[0]' FROM approvals \
         WHERE id = 'r1'",
    )
    .await;
    assert!(
        message.contains("a new approval row has no decided call"),
        "{message}"
    );
    let untouched = store.approval("r1").await.unwrap().unwrap();
    assert_eq!(untouched.status, ApprovalStatus::Pending);
    assert_eq!(untouched.decided_call, None);
}

async fn only_the_decided_call_is_claimed(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    // The decided call is claimed.
    approve_two_of_three(&store, "n1").await;
    let job = claim(
        &store,
        JobPick::Approval("n1"),
        "s",
        claiming(r#"{"ids":["m1","m3"]}"#),
    )
    .await
    .expect("the decided call's claim");
    assert_eq!(job.lease.approval_id, "n1");
    assert_eq!(
        store.approval("n1").await.unwrap().unwrap().execution,
        Execution::Executing
    );

    // The request's whole call (the item the owner left out with it) is refused: consumed,
    // never run, the job ended.
    approve_two_of_three(&store, "n2").await;
    assert!(claim(
        &store,
        JobPick::Approval("n2"),
        "s",
        claiming(r#"{"ids":["m1","m2","m3"]}"#),
    )
    .await
    .is_none());
    let n2 = store.approval("n2").await.unwrap().unwrap();
    assert_eq!(n2.execution, Execution::Failed, "consumed, never run");
    assert_eq!(
        job_state(&store, "n2").await.map(|j| j.0),
        Some("failed".into())
    );
    let message = n2.result.unwrap()["message"].as_str().unwrap().to_string();
    assert!(message.contains("exactly these arguments"), "{message}");

    // The database refuses a ledger entry that names the request's call of such a row.
    approve_two_of_three(&store, "n3").await;
    let message = refused(
        &store,
        "INSERT INTO ledger (approval_id, tool, args_canonical, state, claimed_at) \
         SELECT id, tool, args_canonical, 'executing', created_at FROM approvals WHERE id = 'n3'",
    )
    .await;
    assert!(
        message.contains("a claim needs an approved row"),
        "{message}"
    );
}

async fn an_edited_call_is_written_whole_and_claimed_as_edited(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    insert(&store, &trash_request("e1", &["m1", "m2"]))
        .await
        .unwrap();
    let args = json!({"ids": ["m1", "m2"], "note": "edited"});
    let answer = Response {
        decided: Some(DecidedTerms {
            items: Vec::new(),
            edited_fields: vec!["note".into()],
            args_canonical: canonical_json(&args),
            call: DecidedCall {
                tool: "trash_email".into(),
                call_hash: call_hash("trash_email", &args),
                args: args.clone(),
                items: vec!["m1".into(), "m2".into()],
            },
        }),
        ..response(ApprovalStatus::Approved, "owner", t0())
    };
    assert!(decide(&store, "e1", &answer).await.unwrap());
    let row = store.approval("e1").await.unwrap().unwrap();
    assert_eq!(row.edited_fields, Some(vec!["note".to_string()]));
    assert_eq!(row.approved_items, None);
    let decided = row.decided_call.expect("decided call");
    assert_eq!(decided.args, args);
    assert_eq!(decided.items, vec!["m1", "m2"]);
    // The edited call's items go with its fields, never alone.
    let message = refused(
        &store,
        "UPDATE approvals SET decided_items = NULL WHERE id = 'e1'",
    )
    .await;
    assert!(
        message.contains("a decided call is written once"),
        "{message}"
    );
    // Claimed as edited.
    let job = claim(
        &store,
        JobPick::Approval("e1"),
        "s",
        claiming(r#"{"ids":["m1","m2"],"note":"edited"}"#),
    )
    .await;
    assert!(job.is_some());
}

// ---------------------------------------------------------------------------------------------
// The suite, once per engine.
// ---------------------------------------------------------------------------------------------

macro_rules! suite {
    ($engine:expr) => {
        #[tokio::test]
        async fn the_decided_call_is_written_once_with_the_approval() {
            super::the_decided_call_is_written_once_with_the_approval($engine).await;
        }
        #[tokio::test]
        async fn an_edited_call_is_written_whole_and_claimed_as_edited() {
            super::an_edited_call_is_written_whole_and_claimed_as_edited($engine).await;
        }
        #[tokio::test]
        async fn only_the_decided_call_is_claimed() {
            super::only_the_decided_call_is_claimed($engine).await;
        }
    };
}

mod sqlite {
    use super::*;
    suite!(Engine::Sqlite);
}

mod postgres {
    use super::*;
    suite!(Engine::Postgres);
}
