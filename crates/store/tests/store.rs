//! The store suite, run against both engines: every test body below is written once over the
//! engine-neutral [`Store`] and run twice, as `sqlite::NAME` (a fresh SQLite file) and
//! `postgres::NAME` (a fresh PostgreSQL database). Together they show that the database itself
//! refuses changing what was approved (DESIGN §2, §6), that compare-and-set writes have exactly
//! one winner (DESIGN §3, §8), that corrupt rows fail closed, and that both engines behave alike.
//!
//! PostgreSQL: each test creates its own database `iris_test_<random>` through the admin url in
//! `IRIS_TEST_POSTGRES_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`) and drops it
//! at the end (best effort). When the server is unreachable the PostgreSQL tests fail, saying how
//! to start it; they never pass silently.

mod common;

use common::*;

// ---------------------------------------------------------------------------------------------
// Request terms are immutable, enforced by the database (one test per column).
// ---------------------------------------------------------------------------------------------

/// Asserts that `UPDATE approvals SET {column} = {value}` is refused on a pending row and on an
/// approved one, naming the rule and the column, and that the stored value did not change.
async fn assert_column_immutable(engine: Engine, column: &str, value: &str) {
    let db = engine.open().await;
    let store = db.store.clone();
    insert(&store, &trash_request("a1", &["m1"]))
        .await
        .expect("insert");
    approved(&store, "a2").await;
    for id in ["a1", "a2"] {
        let before = raw_column(&store, id, column).await;
        let message = refused(
            &store,
            &format!("UPDATE approvals SET {column} = {value} WHERE id = '{id}'"),
        )
        .await;
        assert!(
            message.contains("approval request terms are immutable (DESIGN §2)"),
            "{message}"
        );
        assert!(message.contains(column), "{message}");
        assert_eq!(raw_column(&store, id, column).await, before);
    }
}

async fn id_is_immutable(engine: Engine) {
    assert_column_immutable(engine, "id", "'forged'").await;
}

async fn kind_is_immutable(engine: Engine) {
    assert_column_immutable(engine, "kind", "'evaluator'").await;
}

async fn tool_is_immutable(engine: Engine) {
    assert_column_immutable(engine, "tool", "'delete_everything'").await;
}

async fn args_are_immutable(engine: Engine) {
    assert_column_immutable(engine, "args", r#"'{"ids":["m1","m9"]}'"#).await;
}

async fn args_canonical_is_immutable(engine: Engine) {
    assert_column_immutable(engine, "args_canonical", r#"'{"ids":["m9"]}'"#).await;
}

async fn call_hash_is_immutable(engine: Engine) {
    assert_column_immutable(engine, "call_hash", "'00'").await;
}

async fn items_are_immutable(engine: Engine) {
    assert_column_immutable(engine, "items", r#"'["m9"]'"#).await;
}

async fn card_is_immutable(engine: Engine) {
    let edit = engine.pick(
        "json_set(card, '$.title', 'Trash 1 email')",
        "jsonb_set(card::jsonb, '{title}', '\"Trash 1 email\"')::text",
    );
    assert_column_immutable(engine, "card", edit).await;
}

async fn run_id_is_immutable(engine: Engine) {
    assert_column_immutable(engine, "run_id", "'run-other'").await;
}

async fn context_summary_is_immutable(engine: Engine) {
    assert_column_immutable(engine, "context_summary", "'delete everything'").await;
}

async fn created_at_is_immutable(engine: Engine) {
    assert_column_immutable(engine, "created_at", "'2026-03-01T10:00:00.000000000Z'").await;
}

async fn expires_at_is_immutable(engine: Engine) {
    assert_column_immutable(engine, "expires_at", "'2099-01-01T00:00:00.000000000Z'").await;
}

async fn preconditions_are_immutable(engine: Engine) {
    assert_column_immutable(engine, "preconditions", r#"'[]'"#).await;
}

// ---------------------------------------------------------------------------------------------
// The response is written once; nothing is deleted; the audit log is append-only.
// ---------------------------------------------------------------------------------------------

async fn response_is_written_once(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    approved(&store, "a1").await;
    for assignment in [
        "status = 'rejected'",
        "status = 'pending'",
        "responded_by = 'agent'",
        "surface = 'telegram'",
        "reason = 'changed my mind'",
        "responded_at = '2026-03-01T09:30:00.000000000Z'",
    ] {
        let message = refused(
            &store,
            &format!("UPDATE approvals SET {assignment} WHERE id = 'a1'"),
        )
        .await;
        assert!(
            message.contains("an approval response is written once (DESIGN §2)"),
            "{assignment}: {message}"
        );
    }
    let row = store.approval("a1").await.expect("get").expect("row");
    assert_eq!(row.status, ApprovalStatus::Approved);
    assert_eq!(row.responded_by.as_deref(), Some("owner-phone"));
    assert_eq!(row.surface.as_deref(), Some("web"));

    // The store's own compare-and-set also loses now.
    let late = decide(
        &store,
        "a1",
        &response(ApprovalStatus::Rejected, "cli", t0() + Duration::minutes(2)),
    )
    .await
    .expect("decide");
    assert!(!late);
}

async fn a_pending_row_takes_a_response_only_with_its_decision(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    insert(&store, &trash_request("a1", &["m1"]))
        .await
        .expect("insert");
    let message = refused(
        &store,
        "UPDATE approvals SET responded_by = 'agent' WHERE id = 'a1'",
    )
    .await;
    assert!(
        message.contains("written together with its decision"),
        "{message}"
    );
    let message = refused(
        &store,
        "UPDATE approvals SET status = 'approved' WHERE id = 'a1'",
    )
    .await;
    assert!(
        message.contains("a decision records who answered"),
        "{message}"
    );
    let message = refused(
        &store,
        "INSERT INTO approvals (id, kind, status, tool, args, args_canonical, call_hash, items, \
         card, run_id, context_summary, created_at, expires_at, responded_at, responded_by, surface) \
         SELECT 'born-approved', kind, 'approved', tool, args, args_canonical, call_hash, items, \
         card, run_id, context_summary, created_at, expires_at, created_at, 'agent', 'api' \
         FROM approvals WHERE id = 'a1'",
    )
    .await;
    assert!(
        message.contains("a new approval row is pending and unanswered"),
        "{message}"
    );
    assert_eq!(
        store
            .approval("a1")
            .await
            .expect("get")
            .expect("row")
            .status,
        ApprovalStatus::Pending
    );
}

async fn approvals_are_never_deleted(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    insert(&store, &trash_request("a1", &["m1"]))
        .await
        .expect("insert");
    approved(&store, "a2").await;
    for id in ["a1", "a2"] {
        let message = refused(&store, &format!("DELETE FROM approvals WHERE id = '{id}'")).await;
        assert!(
            message.contains("approval rows are never deleted"),
            "{message}"
        );
        assert!(store.approval(id).await.expect("get").is_some());
    }
}

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
// Telegram cards (migration 0015): which message shows which approval.
// ---------------------------------------------------------------------------------------------

/// The owner's chat in these tests.
const CHAT: i64 = 4242;

/// A sent card of `approval_id` in [`CHAT`] showing `view`.
fn telegram_card(approval_id: &str, message_id: i64, view: TelegramView) -> TelegramCard {
    TelegramCard {
        chat_id: CHAT,
        approval_id: approval_id.to_owned(),
        message_id: Some(message_id),
        view,
        shown_text: Some(format!("*{approval_id}* as {}", view.as_str())),
        settled: false,
        sent_at: t0(),
        updated_at: t0() + Duration::seconds(1),
    }
}

async fn a_telegram_card_is_claimed_once_per_chat_and_survives_reopening(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    let mut later = trash_request("a2", &["m2"]);
    later.created_at = t0() + Duration::minutes(1);
    later.expires_at = later.created_at + Duration::hours(1);
    insert(&store, &trash_request("a1", &["m1"]))
        .await
        .expect("insert");
    insert(&store, &later).await.expect("insert");
    let unsent = |store: Store| async move {
        store
            .unsent_telegram_cards(CHAT, t0() + Duration::minutes(2))
            .await
            .expect("unsent")
    };
    // Oldest first; none sent yet.
    assert_eq!(unsent(store.clone()).await, ["a1", "a2"]);

    // A claim wins once per chat; another chat has its own.
    assert!(store
        .claim_telegram_card(CHAT, "a1", t0())
        .await
        .expect("claim"));
    assert!(!store
        .claim_telegram_card(CHAT, "a1", t0())
        .await
        .expect("claim"));
    assert!(store
        .claim_telegram_card(7, "a1", t0())
        .await
        .expect("claim"));
    assert_eq!(unsent(store.clone()).await, ["a2"]);
    let claimed = store
        .telegram_card(CHAT, "a1")
        .await
        .expect("read")
        .expect("claimed");
    assert_eq!(claimed.message_id, None);
    assert_eq!(claimed.view, TelegramView::Card);
    assert_eq!(claimed.sent_at, t0());
    assert!(
        store
            .claim_telegram_card(CHAT, "no-such", t0())
            .await
            .is_err(),
        "foreign key"
    );

    // A crash mid-send leaves the claim; start-up gives it up, so it is sent again.
    assert_eq!(
        store
            .release_unsent_telegram_cards(CHAT)
            .await
            .expect("release"),
        ["a1"]
    );
    assert_eq!(unsent(store.clone()).await, ["a1", "a2"]);
    assert!(
        store.telegram_card(7, "a1").await.expect("read").is_some(),
        "other chat kept"
    );

    // Sent: the message is recorded; releasing leaves a sent card alone.
    assert!(store
        .claim_telegram_card(CHAT, "a1", t0())
        .await
        .expect("claim"));
    let sent = telegram_card("a1", 10, TelegramView::Card);
    store.record_telegram_card(&sent).await.expect("record");
    store
        .release_telegram_card(CHAT, "a1")
        .await
        .expect("release");
    assert!(store
        .release_unsent_telegram_cards(CHAT)
        .await
        .expect("release")
        .is_empty());
    assert_eq!(
        store.telegram_card(CHAT, "a1").await.expect("read"),
        Some(sent.clone())
    );

    // The confirm view, then a restart: what the message shows is still known.
    let confirm = telegram_card("a1", 10, TelegramView::Confirm);
    store.record_telegram_card(&confirm).await.expect("record");
    close(&store).await;
    let store = Store::connect(&db.url).await.expect("reopen");
    assert_eq!(
        store.telegram_card(CHAT, "a1").await.expect("read"),
        Some(confirm)
    );
    assert_eq!(unsent(store.clone()).await, ["a2"]);
    // A lapsed pending row is not sent.
    assert!(store
        .unsent_telegram_cards(CHAT, later.expires_at)
        .await
        .expect("unsent")
        .is_empty());
    // A message learnt from a tap is recorded without a claim; `sent_at` is the first one.
    let mut learnt = telegram_card("a2", 11, TelegramView::Card);
    learnt.shown_text = None;
    store.record_telegram_card(&learnt).await.expect("record");
    let mut again = learnt.clone();
    again.sent_at = t0() + Duration::hours(5);
    store.record_telegram_card(&again).await.expect("record");
    assert_eq!(
        store
            .telegram_card(CHAT, "a2")
            .await
            .expect("read")
            .expect("learnt")
            .sent_at,
        learnt.sent_at
    );
}

async fn unsettled_telegram_cards_are_those_answered_or_lapsed(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    for id in ["a1", "a2", "a3"] {
        insert(&store, &trash_request(id, &["m1"]))
            .await
            .expect("insert");
        store
            .record_telegram_card(&telegram_card(id, 1, TelegramView::Card))
            .await
            .expect("record");
    }
    let ids = |cards: Vec<TelegramCard>| -> Vec<String> {
        cards.into_iter().map(|c| c.approval_id).collect()
    };
    // All pending: nothing to edit.
    assert!(store
        .unsettled_telegram_cards(CHAT)
        .await
        .expect("read")
        .is_empty());
    decide(
        &store,
        "a2",
        &response(
            ApprovalStatus::Rejected,
            "phone",
            t0() + Duration::minutes(2),
        ),
    )
    .await
    .expect("decide");
    decide(
        &store,
        "a1",
        &response(
            ApprovalStatus::Approved,
            "phone",
            t0() + Duration::minutes(3),
        ),
    )
    .await
    .expect("decide");
    // Oldest answer first.
    assert_eq!(
        ids(store.unsettled_telegram_cards(CHAT).await.expect("read")),
        ["a2", "a1"]
    );
    assert!(store
        .unsettled_telegram_cards(7)
        .await
        .expect("read")
        .is_empty());
    // Closed on a final outcome: settled, no longer listed. Closed on one still changing: listed.
    let mut rejected = telegram_card("a2", 1, TelegramView::Closed);
    rejected.settled = true;
    store.record_telegram_card(&rejected).await.expect("record");
    store
        .record_telegram_card(&telegram_card("a1", 1, TelegramView::Closed))
        .await
        .expect("record");
    assert_eq!(
        ids(store.unsettled_telegram_cards(CHAT).await.expect("read")),
        ["a1"]
    );
    // The database refuses what cannot be: a confirm view or a settled outcome without a sent
    // message, or a settled card that shows no outcome.
    let mut unsent_confirm = telegram_card("a3", 1, TelegramView::Confirm);
    unsent_confirm.message_id = None;
    assert!(store.record_telegram_card(&unsent_confirm).await.is_err());
    let mut settled_card = telegram_card("a3", 1, TelegramView::Card);
    settled_card.settled = true;
    assert!(store.record_telegram_card(&settled_card).await.is_err());
}

async fn twenty_concurrent_telegram_claims_have_exactly_one_winner(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    insert(&store, &trash_request("a1", &["m1"]))
        .await
        .expect("insert");
    let barrier = Arc::new(Barrier::new(20));
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let (store, barrier) = (store.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            store
                .claim_telegram_card(CHAT, "a1", t0())
                .await
                .expect("claim")
        }));
    }
    let mut won = 0;
    for task in tasks {
        won += usize::from(task.await.expect("task"));
    }
    assert_eq!(won, 1);
}

// ---------------------------------------------------------------------------------------------
// Corrupt rows fail closed.
// ---------------------------------------------------------------------------------------------

async fn a_corrupt_card_is_reported_not_panicked_on(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    insert(&store, &trash_request("good", &["m1"]))
        .await
        .expect("insert");
    exec(
        &store,
        "INSERT INTO approvals (id, kind, tool, args, args_canonical, call_hash, items, card, \
         run_id, context_summary, created_at, expires_at) \
         SELECT 'bad', kind, tool, args, args_canonical, call_hash, items, '{\"title\": ', \
         run_id, context_summary, created_at, expires_at FROM approvals WHERE id = 'good'",
    )
    .await
    .expect("raw insert");
    match store.approval("bad").await {
        Err(StoreError::Corrupt { id, reason }) => {
            assert_eq!(id, "bad");
            assert!(reason.contains("card"), "{reason}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert!(matches!(
        list(&store, None).await,
        Err(StoreError::Corrupt { .. })
    ));
    assert!(store.approval("good").await.expect("get").is_some());
}

async fn unknown_kind_or_bad_times_are_corrupt(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    insert(&store, &trash_request("good", &["m1"]))
        .await
        .expect("insert");
    let inserts: Vec<String> = [
        ("odd-kind", "'launch_missiles'", "created_at"),
        ("odd-time", "kind", "'yesterday'"),
    ]
    .iter()
    .map(|(id, kind, created)| {
        format!(
            "INSERT INTO approvals (id, kind, tool, args, args_canonical, call_hash, items, card, \
             run_id, context_summary, created_at, expires_at) \
             SELECT '{id}', {kind}, tool, args, args_canonical, call_hash, items, card, run_id, \
             context_summary, {created}, expires_at FROM approvals WHERE id = 'good'"
        )
    })
    .collect();
    exec_without_check_constraints(&store, &inserts).await;
    match store.approval("odd-kind").await {
        Err(StoreError::Corrupt { id, reason }) => {
            assert_eq!(id, "odd-kind");
            assert!(reason.contains("launch_missiles"), "{reason}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    match store.approval("odd-time").await {
        Err(StoreError::Corrupt { id, reason }) => {
            assert_eq!(id, "odd-time");
            assert!(reason.contains("created_at"), "{reason}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Conversations and devices.
// ---------------------------------------------------------------------------------------------

async fn devices_add_authenticate_list_revoke(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    let phone = Device {
        name: "phone".to_owned(),
        scope: Scope::Control,
        created_at: t0(),
        last_used_at: None,
    };
    let wall = Device {
        name: "wall".to_owned(),
        scope: Scope::Read,
        created_at: t0(),
        last_used_at: None,
    };
    store.add(&phone, "hash-phone").await.expect("add");
    store.add(&wall, "hash-wall").await.expect("add");
    assert!(matches!(
        store.add(&phone, "hash-other").await,
        Err(StoreError::Backend(m)) if m.contains("already exists")
    ));
    assert!(matches!(
        store.add(&Device { name: "tablet".to_owned(), ..wall.clone() }, "hash-wall").await,
        Err(StoreError::Backend(m)) if m.contains("token")
    ));

    let used = t0() + Duration::minutes(7);
    let got = store
        .authenticate("hash-phone", used)
        .await
        .expect("auth")
        .expect("device");
    assert_eq!(got.name, "phone");
    assert_eq!(got.scope, Scope::Control);
    assert_eq!(got.last_used_at, Some(used));
    assert!(store
        .authenticate("hash-nobody", used)
        .await
        .expect("auth")
        .is_none());

    let listed = DeviceStore::list(&store).await.expect("list");
    assert_eq!(
        listed.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
        ["phone", "wall"]
    );
    assert_eq!(listed[0].last_used_at, Some(used));
    assert_eq!(listed[1].scope, Scope::Read);
    // Recorded at most once a minute: a use 30 s later is not a write; one a minute later is.
    let soon = used + Duration::seconds(30);
    let again = store
        .authenticate("hash-phone", soon)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.last_used_at, Some(used));
    let later = used + Duration::seconds(60);
    let again = store
        .authenticate("hash-phone", later)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.last_used_at, Some(later));
    let listed = DeviceStore::list(&store).await.expect("list");
    assert_eq!(listed[0].last_used_at, Some(later));

    assert!(store.is_live("hash-phone").await.expect("live"));
    assert!(!store.is_live("hash-nobody").await.expect("live"));
    assert!(store.revoke("phone").await.expect("revoke"));
    assert!(!store.is_live("hash-phone").await.expect("live"), "revoked");
    assert!(!store.revoke("phone").await.expect("revoke"));
    assert!(!store.revoke("nobody").await.expect("revoke"));
    assert!(store
        .authenticate("hash-phone", used)
        .await
        .expect("auth")
        .is_none());
    assert_eq!(
        DeviceStore::list(&store)
            .await
            .expect("list")
            .iter()
            .map(|d| d.name.as_str())
            .collect::<Vec<_>>(),
        ["wall"]
    );
    // A revoked name can be paired again with a new token; the revocation itself is final.
    store.add(&phone, "hash-phone-2").await.expect("re-add");
    assert!(store
        .authenticate("hash-phone-2", used)
        .await
        .expect("auth")
        .is_some());
    let message = refused(
        &store,
        "UPDATE devices SET revoked_at = NULL WHERE token_hash = 'hash-phone'",
    )
    .await;
    assert!(message.contains("a revocation is final"), "{message}");
    let message = refused(
        &store,
        "UPDATE devices SET scope = 'control' WHERE name = 'wall'",
    )
    .await;
    assert!(
        message.contains("keeps its name, scope and token"),
        "{message}"
    );
}

// ---------------------------------------------------------------------------------------------
// One-time pairing links.
// ---------------------------------------------------------------------------------------------

async fn a_pairing_link_pairs_one_device_once_before_it_lapses(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    let made = t0();
    let link = PairingLink::new(Scope::Read, "cli", made);
    store.create_pairing("code-1", &link).await.expect("create");
    assert_eq!(
        store.pairing("code-1").await.expect("read"),
        Some(link.clone())
    );
    assert_eq!(store.pairing("code-x").await.expect("read"), None);
    assert_eq!(
        store
            .redeem_pairing("code-x", "tablet", "hash-t", made)
            .await
            .expect("redeem"),
        Redemption::Unknown
    );

    // A live device's name is refused and the link stays usable.
    let phone = Device {
        name: "phone".to_owned(),
        scope: Scope::Control,
        created_at: made,
        last_used_at: None,
    };
    store.add(&phone, "hash-phone").await.expect("add");
    let at = made + Duration::minutes(3);
    assert_eq!(
        store
            .redeem_pairing("code-1", "phone", "hash-t", at)
            .await
            .expect("redeem"),
        Redemption::NameTaken
    );
    assert!(store
        .pairing("code-1")
        .await
        .expect("read")
        .expect("link")
        .usable_at(at));

    let paired = store
        .redeem_pairing("code-1", "kitchen tablet", "hash-t", at)
        .await
        .expect("redeem");
    let Redemption::Paired(device) = paired else {
        panic!("expected a pairing, got {paired:?}");
    };
    assert_eq!(
        (device.name.as_str(), device.scope),
        ("kitchen tablet", Scope::Read)
    );
    let got = store
        .authenticate("hash-t", at)
        .await
        .expect("auth")
        .expect("the new device authenticates");
    assert_eq!(got.scope, Scope::Read, "the link's scope, nothing else");
    assert_eq!(
        store
            .redeem_pairing("code-1", "second", "hash-2", at)
            .await
            .expect("redeem"),
        Redemption::AlreadyUsed {
            device_name: "kitchen tablet".into(),
            used_at: at
        }
    );
    assert!(store
        .authenticate("hash-2", at)
        .await
        .expect("auth")
        .is_none());

    // Ten minutes after it was made, an unused link pairs nobody.
    store
        .create_pairing("code-2", &PairingLink::new(Scope::Control, "cli", made))
        .await
        .expect("create");
    assert_eq!(
        store
            .redeem_pairing("code-2", "late", "hash-late", made + Duration::minutes(10))
            .await
            .expect("redeem"),
        Redemption::Lapsed {
            expires_at: made + Duration::minutes(10)
        }
    );
    assert!(store
        .authenticate("hash-late", made)
        .await
        .expect("auth")
        .is_none());

    // The database keeps a used link used and its terms fixed.
    let message = refused(
        &store,
        "UPDATE pairing_links SET used_at = NULL, device_name = NULL WHERE code_hash = 'code-1'",
    )
    .await;
    assert!(message.contains("pairs one device once"), "{message}");
    let message = refused(
        &store,
        "UPDATE pairing_links SET scope = 'read' WHERE code_hash = 'code-2'",
    )
    .await;
    assert!(message.contains("terms never change"), "{message}");
    let message = refused(&store, "UPDATE pairing_links SET expires_at = '2999-01-01T00:00:00.000000000Z' WHERE code_hash = 'code-2'").await;
    assert!(message.contains("terms never change"), "{message}");
}

async fn concurrent_redemptions_of_one_link_pair_one_device(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    for round in 0..3 {
        let code = format!("code-{round}");
        store
            .create_pairing(&code, &PairingLink::new(Scope::Control, "cli", t0()))
            .await
            .expect("create");
        let barrier = Arc::new(Barrier::new(10));
        let mut tasks = Vec::new();
        for i in 0..10 {
            let (store, barrier, code) = (store.clone(), barrier.clone(), code.clone());
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                store
                    .redeem_pairing(
                        &code,
                        &format!("browser-{round}-{i}"),
                        &format!("hash-{round}-{i}"),
                        t0() + Duration::seconds(1),
                    )
                    .await
                    .expect("redeem")
            }));
        }
        let mut paired = 0;
        for task in tasks {
            match task.await.expect("task") {
                Redemption::Paired(_) => paired += 1,
                Redemption::AlreadyUsed { .. } => {}
                other => panic!("round {round}: unexpected {other:?}"),
            }
        }
        assert_eq!(paired, 1, "round {round}");
    }
    assert_eq!(DeviceStore::list(&store).await.expect("list").len(), 3);
}

// ---------------------------------------------------------------------------------------------
// Nothing is lost: reopening the same database.
// ---------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------
// Both engines behave alike where their defaults differ.
// ---------------------------------------------------------------------------------------------

async fn instants_round_trip_to_the_nanosecond(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    let mut request = trash_request("a1", &["m1"]);
    request.created_at = t0() + Duration::nanoseconds(123_456_789);
    request.expires_at = request.created_at + Duration::hours(1);
    insert(&store, &request).await.expect("insert");
    let answered = request.created_at + Duration::nanoseconds(1);
    assert!(decide(
        &store,
        "a1",
        &response(ApprovalStatus::Approved, "web", answered)
    )
    .await
    .expect("decide"));
    let row = store.approval("a1").await.expect("get").expect("row");
    assert_eq!(row.created_at, request.created_at);
    assert_eq!(row.responded_at, Some(answered));
    assert_eq!(
        raw_column(&store, "a1", "created_at").await.as_deref(),
        Some("2026-03-01T09:00:00.123456789Z")
    );
    // One nanosecond before expiry still counts as in time.
    insert(&store, &trash_request("a2", &["m2"]))
        .await
        .expect("insert");
    let expiry = t0() + Duration::hours(1);
    assert!(decide(
        &store,
        "a2",
        &response(
            ApprovalStatus::Approved,
            "web",
            expiry - Duration::nanoseconds(1)
        )
    )
    .await
    .expect("decide"));
}

// ---------------------------------------------------------------------------------------------
// The suite, once per engine.
// ---------------------------------------------------------------------------------------------

/// Defines one `#[tokio::test]` per listed body, running it on `$engine`.
macro_rules! engine_tests {
    ($engine:expr; $( $(#[$attr:meta])* $name:ident ),* $(,)?) => {
        $(
            $(#[$attr])*
            async fn $name() {
                super::$name($engine).await;
            }
        )*
    };
}

/// Every engine-generic test body, with its runtime.
macro_rules! suite {
    ($engine:expr) => {
        engine_tests! { $engine;
            #[tokio::test] id_is_immutable,
            #[tokio::test] kind_is_immutable,
            #[tokio::test] tool_is_immutable,
            #[tokio::test] args_are_immutable,
            #[tokio::test] args_canonical_is_immutable,
            #[tokio::test] call_hash_is_immutable,
            #[tokio::test] items_are_immutable,
            #[tokio::test] card_is_immutable,
            #[tokio::test] run_id_is_immutable,
            #[tokio::test] context_summary_is_immutable,
            #[tokio::test] created_at_is_immutable,
            #[tokio::test] expires_at_is_immutable,
            #[tokio::test] preconditions_are_immutable,
            #[tokio::test] response_is_written_once,
            #[tokio::test] a_pending_row_takes_a_response_only_with_its_decision,
            #[tokio::test] approvals_are_never_deleted,
            #[tokio::test] insert_and_get_round_trip,
            #[tokio::test] insert_refuses_args_that_are_not_what_is_hashed,
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            fifty_concurrent_decides_have_exactly_one_winner,
            #[tokio::test] list_puts_pending_first_oldest_first_then_newest_answer_first,
            #[tokio::test] the_database_refuses_a_ledger_entry_that_bypasses_the_claim_rule,
            #[tokio::test] a_telegram_card_is_claimed_once_per_chat_and_survives_reopening,
            #[tokio::test] unsettled_telegram_cards_are_those_answered_or_lapsed,
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            twenty_concurrent_telegram_claims_have_exactly_one_winner,
            #[tokio::test] a_corrupt_card_is_reported_not_panicked_on,
            #[tokio::test] unknown_kind_or_bad_times_are_corrupt,
            #[tokio::test] devices_add_authenticate_list_revoke,
            #[tokio::test] a_pairing_link_pairs_one_device_once_before_it_lapses,
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            concurrent_redemptions_of_one_link_pair_one_device,
            #[tokio::test] instants_round_trip_to_the_nanosecond,
        }
    };
}

/// The suite on SQLite files, plus what only SQLite has.
mod sqlite {
    use super::*;

    suite!(Engine::Sqlite);

    #[tokio::test]
    async fn in_memory_database_works_with_one_connection() {
        let clock = Arc::new(ManualClock::new(t0()));
        let store = connect("sqlite::memory:", &clock).await;
        insert(&store, &trash_request("a1", &["m1"]))
            .await
            .expect("insert");
        assert!(store.approval("a1").await.expect("get").is_some());
        let other = connect("sqlite::memory:", &clock).await;
        assert!(other.approval("a1").await.expect("get").is_none());
        assert_eq!(store.pool().size(), 1);
    }

    #[tokio::test]
    async fn store_connect_chooses_sqlite_by_scheme() {
        let store = Store::connect("sqlite::memory:").await.expect("connect");
        assert_eq!(store.engine(), iris_store::Engine::Sqlite);
    }
}

/// The suite on PostgreSQL databases, plus what only PostgreSQL has.
mod postgres {
    use super::*;

    suite!(Engine::Postgres);

    #[tokio::test]
    async fn truncate_is_refused_like_delete() {
        let db = Engine::Postgres.open().await;
        approved(&db.store, "a1").await;
        for (table, rule) in [
            ("audit_log", "the audit log is append-only"),
            ("checkpoints", "checkpoints are never deleted"),
            ("ledger", "ledger entries are never deleted"),
            ("approvals", "approval rows are never deleted"),
        ] {
            let message = refused(&db.store, &format!("TRUNCATE {table} CASCADE")).await;
            assert!(message.contains(rule), "{table}: {message}");
        }
        assert!(db.store.approval("a1").await.expect("get").is_some());
    }

    #[tokio::test]
    async fn store_connect_chooses_postgres_by_either_scheme() {
        let (url, _guard) = fresh_postgres_database().await;
        let store = Store::connect(&url).await.expect("connect");
        assert_eq!(store.engine(), iris_store::Engine::Postgres);
        let long = url.replacen("postgres://", "postgresql://", 1);
        assert!(long.starts_with("postgresql://"), "{long}");
        let again = Store::connect(&long).await.expect("connect postgresql://");
        insert(&again, &trash_request("a1", &["m1"]))
            .await
            .expect("insert");
        // Migrations ran once: the second connect found the schema in place.
        assert!(store.approval("a1").await.expect("get").is_some());
        close(&store).await;
        close(&again).await;
    }

    #[tokio::test]
    async fn a_missing_database_is_a_clear_error() {
        // Reachability first, so an absent server fails with the start-it message.
        let admin_url = postgres_admin_url();
        let _ = admin_connection(&admin_url).await.close().await;
        let url = with_database(&admin_url, "iris_test_does_not_exist");
        match Store::connect(&url).await {
            Err(StoreError::Backend(message)) => {
                assert!(message.contains("does not exist"), "{message}");
                assert!(message.contains("create the database"), "{message}");
            }
            other => panic!("expected Backend, got {other:?}"),
        }
    }
}

/// Choosing the engine, without any database.
mod connect {
    use super::*;

    #[tokio::test]
    async fn an_unknown_scheme_names_the_setting_and_not_the_password() {
        for url in ["mysql://iris:s3cret@db/iris", "./data/iris.db", ""] {
            match Store::connect(url).await {
                Err(StoreError::Backend(message)) => {
                    assert!(message.contains("IRIS_DATABASE_URL"), "{message}");
                    assert!(message.contains("sqlite:"), "{message}");
                    assert!(message.contains("postgres:"), "{message}");
                    assert!(!message.contains("s3cret"), "{message}");
                }
                other => panic!("{url}: expected Backend, got {other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn postgres_errors_never_show_the_password() {
        // Port 1: nothing listens, the connection is refused at once.
        match Store::connect("postgres://iris:s3cret@127.0.0.1:1/iris").await {
            Err(StoreError::Backend(message)) => {
                assert!(message.contains("connecting to PostgreSQL"), "{message}");
                assert!(message.contains("iris:***@127.0.0.1:1"), "{message}");
                assert!(!message.contains("s3cret"), "{message}");
            }
            other => panic!("expected Backend, got {other:?}"),
        }
    }
}
