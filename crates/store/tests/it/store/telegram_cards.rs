//! Telegram cards (migration 0015), which message shows which approval: a card is claimed once
//! per chat and survives reopening the database, the unsettled cards are those answered or
//! lapsed, and twenty concurrent claims have exactly one winner.

use crate::common;

use common::*;

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
// The suite, once per engine.
// ---------------------------------------------------------------------------------------------

/// Every engine-generic test body of this module, with its runtime.
macro_rules! suite {
    ($engine:expr) => {
        engine_tests! { $engine;
            #[tokio::test] a_telegram_card_is_claimed_once_per_chat_and_survives_reopening,
            #[tokio::test] unsettled_telegram_cards_are_those_answered_or_lapsed,
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            twenty_concurrent_telegram_claims_have_exactly_one_winner,
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
