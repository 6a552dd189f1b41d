//! Corrupt rows fail closed: a corrupt card, an unknown kind or bad times are reported as
//! corrupt, never panicked on.

use crate::common;

use common::*;

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
// The suite, once per engine.
// ---------------------------------------------------------------------------------------------

/// Every engine-generic test body of this module, with its runtime.
macro_rules! suite {
    ($engine:expr) => {
        engine_tests! { $engine;
            #[tokio::test] a_corrupt_card_is_reported_not_panicked_on,
            #[tokio::test] unknown_kind_or_bad_times_are_corrupt,
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
