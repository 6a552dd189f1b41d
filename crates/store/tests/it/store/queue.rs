//! The approval queue (DESIGN §3, §8): a row round-trips; the store refuses args that are not
//! what is hashed; fifty concurrent decides have exactly one winner; the list puts pending rows
//! first, oldest first, then the newest answer first; and the database refuses a ledger entry
//! that bypasses the claim rule.

use crate::common;

use common::*;

// ---------------------------------------------------------------------------------------------
// Queue behaviour.
// ---------------------------------------------------------------------------------------------

async fn insert_and_get_round_trip(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    let request = trash_request("a1", &["m1", "m2", "m3"]);
    insert(&store, &request).await.expect("insert");
    let row = store.approval("a1").await.expect("get").expect("row");
    assert_eq!(row.kind, ApprovalKind::Destructive);
    assert_eq!(row.status, ApprovalStatus::Pending);
    assert_eq!(row.tool, request.tool);
    assert_eq!(row.args, request.args);
    assert_eq!(row.call_hash, request.call_hash);
    assert_eq!(row.items, request.items);
    assert_eq!(row.card, request.card);
    assert_eq!(row.run_id, request.run_id);
    assert_eq!(row.created_at, request.created_at);
    assert_eq!(row.expires_at, request.expires_at);
    assert_eq!(row.responded_at, None);
    assert_eq!(row.execution, Execution::None);
    assert_eq!(row.result, None);
    assert!(store.approval("missing").await.expect("get").is_none());
    assert_eq!(
        raw_column(&store, "a1", "args_canonical").await.as_deref(),
        Some(request.args_canonical.as_str())
    );
}

async fn insert_refuses_args_that_are_not_what_is_hashed(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    let mut request = trash_request("a1", &["m1"]);
    request.args_canonical = r#"{"ids":["m2"]}"#.to_owned();
    assert!(matches!(
        insert(&store, &request).await,
        Err(StoreError::Refused(_))
    ));
    let mut request = trash_request("a2", &["m1"]);
    request.call_hash = call_hash("restore_email", &request.args);
    assert!(matches!(
        insert(&store, &request).await,
        Err(StoreError::Refused(_))
    ));
    assert!(store.approval("a1").await.expect("get").is_none());
    assert!(store.approval("a2").await.expect("get").is_none());
}

async fn fifty_concurrent_decides_have_exactly_one_winner(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    // Several rounds, so a lucky interleaving cannot hide a broken compare-and-set.
    for round in 0..3 {
        let id = format!("a{round}");
        insert(&store, &trash_request(&id, &["m1"]))
            .await
            .expect("insert");
        let barrier = Arc::new(Barrier::new(50));
        let mut tasks = Vec::new();
        for i in 0..50 {
            let (store, barrier, id) = (store.clone(), barrier.clone(), id.clone());
            tasks.push(tokio::spawn(async move {
                let status = if i % 2 == 0 {
                    ApprovalStatus::Approved
                } else {
                    ApprovalStatus::Rejected
                };
                let who = format!("device-{i}");
                barrier.wait().await;
                let won = decide(
                    &store,
                    &id,
                    &response(status, &who, t0() + Duration::seconds(i)),
                )
                .await
                .expect("decide");
                (won, status, who)
            }));
        }
        let mut winners = Vec::new();
        for task in tasks {
            let (won, status, who) = task.await.expect("task");
            if won {
                winners.push((status, who));
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
        let row = store.approval(&id).await.expect("get").expect("row");
        assert_eq!(row.status, winners[0].0);
        assert_eq!(row.responded_by.as_deref(), Some(winners[0].1.as_str()));
    }
}

async fn list_puts_pending_first_oldest_first_then_newest_answer_first(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    for (i, id) in ["p-old", "p-new", "d-early", "d-late", "d-mid"]
        .iter()
        .enumerate()
    {
        let mut request = trash_request(id, &["m1"]);
        let offset = i64::try_from(i).expect("small");
        request.created_at = t0() + Duration::minutes(offset);
        request.expires_at = request.created_at + Duration::hours(1);
        insert(&store, &request).await.expect("insert");
    }
    let at = |m: i64| t0() + Duration::minutes(m);
    assert!(decide(
        &store,
        "d-early",
        &response(ApprovalStatus::Approved, "web", at(10))
    )
    .await
    .expect("decide"));
    assert!(decide(
        &store,
        "d-late",
        &response(ApprovalStatus::Rejected, "web", at(30))
    )
    .await
    .expect("decide"));
    assert!(decide(
        &store,
        "d-mid",
        &response(ApprovalStatus::Approved, "web", at(20))
    )
    .await
    .expect("decide"));

    let ids =
        |rows: Vec<iris_core::wire::Approval>| rows.into_iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(
        ids(list(&store, None).await.expect("list")),
        ["p-old", "p-new", "d-late", "d-mid", "d-early"]
    );
    assert_eq!(
        ids(list(&store, Some(ApprovalStatus::Pending))
            .await
            .expect("list")),
        ["p-old", "p-new"]
    );
    assert_eq!(
        ids(list(&store, Some(ApprovalStatus::Approved))
            .await
            .expect("list")),
        ["d-mid", "d-early"]
    );
    assert!(list(&store, Some(ApprovalStatus::Expired))
        .await
        .expect("list")
        .is_empty());
}

// ---------------------------------------------------------------------------------------------
// Claim and the side-effect ledger.
// ---------------------------------------------------------------------------------------------

async fn the_database_refuses_a_ledger_entry_that_bypasses_the_claim_rule(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    insert(&store, &trash_request("pending", &["m1"]))
        .await
        .expect("insert");
    let message = refused(
        &store,
        "INSERT INTO ledger (approval_id, tool, args_canonical, state, claimed_at) \
         SELECT id, tool, args_canonical, 'executing', created_at FROM approvals WHERE id = 'pending'",
    )
    .await;
    assert!(
        message.contains("a claim needs an approved row"),
        "{message}"
    );
}

// ---------------------------------------------------------------------------------------------
// The suite, once per engine.
// ---------------------------------------------------------------------------------------------

/// Every engine-generic test body of this module, with its runtime.
macro_rules! suite {
    ($engine:expr) => {
        engine_tests! { $engine;
            #[tokio::test] insert_and_get_round_trip,
            #[tokio::test] insert_refuses_args_that_are_not_what_is_hashed,
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            fifty_concurrent_decides_have_exactly_one_winner,
            #[tokio::test] list_puts_pending_first_oldest_first_then_newest_answer_first,
            #[tokio::test] the_database_refuses_a_ledger_entry_that_bypasses_the_claim_rule,
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
