//! The engines: both behave alike where their defaults differ (instants round-trip to the
//! nanosecond); `Store::connect` chooses the engine by the URL's scheme; an in-memory SQLite
//! database is one connection; a missing PostgreSQL database and an unknown scheme are clear
//! errors that never show the password.

use crate::common;

use common::*;

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

/// Every engine-generic test body of this module, with its runtime.
macro_rules! suite {
    ($engine:expr) => {
        engine_tests! { $engine;
            #[tokio::test] instants_round_trip_to_the_nanosecond,
        }
    };
}

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

mod postgres {
    use super::*;

    suite!(Engine::Postgres);

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
