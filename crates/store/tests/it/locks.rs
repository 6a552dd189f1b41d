//! Named locks across servers on PostgreSQL (docs/liveness.md): a wait for a lock that is
//! given up (a deadline, a dropped request) takes nothing and leaves nothing behind. Before,
//! the abandoned `pg_advisory_lock` completed later on a pooled connection, which then held
//! the mail lock, idle, and stalled every server's mail changes.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use iris_store::NamedLock;

#[tokio::test]
async fn a_lock_wait_given_up_leaves_nothing_held() {
    let (url, _db) = iris_store::testing::fresh_postgres_database().await;
    let clock = Arc::new(ManualClock::new(t0()));
    let holder = connect(&url, &clock).await;
    let waiter = connect(&url, &clock).await;
    let third = connect(&url, &clock).await;

    let held = holder
        .lock(&NamedLock::new("mail", "changes"))
        .await
        .unwrap();
    // The waiter gives up while the holder holds it.
    let gave_up = tokio::time::timeout(
        Duration::from_millis(300),
        waiter.lock(&NamedLock::new("mail", "changes")),
    )
    .await;
    assert!(
        gave_up.is_err(),
        "the lock was held: the wait cannot have won"
    );
    held.release().await;

    // Nobody holds it now: the abandoned wait did not take it behind everyone's back, on any
    // of the waiter's pooled connections.
    for _ in 0..3 {
        let taken = third
            .try_lock(&NamedLock::new("mail", "changes"))
            .await
            .unwrap()
            .expect("the lock is free once its holder released it");
        taken.release().await;
        let again = waiter
            .try_lock(&NamedLock::new("mail", "changes"))
            .await
            .unwrap()
            .expect("the waiter's server can take it too");
        again.release().await;
    }
}
