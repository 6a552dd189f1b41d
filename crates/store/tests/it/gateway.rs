//! The MCP gateway's unit on both engines: an agent's gated call is one row; the same call
//! (same agent, same call hash) within the attach window attaches to it, also when many arrive
//! at once on several connections; another agent, other arguments or an older card make a new
//! row. An agent has at most its cap of cards waiting, also when its calls arrive at once. An
//! executed call's result is first given to its agent once.

use crate::common;

use common::*;
use iris_core::ports::{GatewayStore, GatewayWrite};
use iris_core::wire::Event;

/// `agent`'s gated `files.write_file` of `content` to `/notes/plan.md`, written at `at`.
fn gateway_call(id: &str, agent: &str, content: &str, at: DateTime<Utc>) -> NewApproval {
    let mut row = trash_request(id, &["/notes/plan.md"]);
    row.tool = "files.write_file".into();
    row.args = json!({"path": "/notes/plan.md", "content": content});
    row.args_canonical = canonical_json(&row.args);
    row.call_hash = call_hash(&row.tool, &row.args);
    row.requested_by = Some(agent.into());
    row.created_at = at;
    row.expires_at = at + Duration::hours(1);
    row
}

/// A fresh database with the agent devices `claude` and `cursor` paired (an agent's rows belong
/// to its live device).
async fn open_with_agents(engine: Engine) -> TestDb {
    let db = engine.open().await;
    for name in ["claude", "cursor"] {
        pair_agent(&db.store, name).await;
    }
    db
}

/// The unit with at most `max_waiting` pending cards per agent.
async fn request_capped(store: &Store, row: &NewApproval, max_waiting: u32) -> GatewayWrite {
    let since = row.created_at - Duration::hours(24);
    let outbox = iris_core::ports::Outbox::of([Event::ApprovalRequested(row.pending_view())]);
    GatewayStore::request(store, row, since, max_waiting, &outbox)
        .await
        .expect("gateway request")
}

/// The unit with room to spare: (the row's id, attached).
async fn request(store: &Store, row: &NewApproval) -> (String, bool) {
    match request_capped(store, row, 100).await {
        GatewayWrite::Held(got) => (got.approval.id, got.attached),
        GatewayWrite::Full { waiting } => panic!("full at {waiting}"),
    }
}

/// The id a held call's row has (panics when the agent was full).
fn held(write: GatewayWrite) -> (String, bool) {
    match write {
        GatewayWrite::Held(got) => (got.approval.id, got.attached),
        GatewayWrite::Full { waiting } => panic!("full at {waiting}"),
    }
}

async fn an_agent_has_at_most_its_cap_of_cards_waiting(engine: Engine) {
    let db = open_with_agents(engine).await;
    let store = &db.store;
    let at = t0() + Duration::minutes(10);
    for (id, content) in [("a", "v1"), ("b", "v2")] {
        let row = gateway_call(id, "claude", content, at);
        assert_eq!(
            held(request_capped(store, &row, 2).await),
            (id.into(), false)
        );
    }

    // A third card: refused, nothing written, nothing announced.
    let third = gateway_call("c", "claude", "v3", at);
    assert_eq!(
        request_capped(store, &third, 2).await,
        GatewayWrite::Full { waiting: 2 }
    );
    assert!(store.approval("c").await.unwrap().is_none());
    assert_eq!(list(store, None).await.unwrap().len(), 2);

    // The same call as a waiting card still attaches (it makes no card).
    let again = gateway_call("a-again", "claude", "v1", at);
    assert_eq!(
        held(request_capped(store, &again, 2).await),
        ("a".into(), true)
    );
    // Another agent has its own room.
    let other = gateway_call("o", "cursor", "v3", at);
    assert_eq!(
        held(request_capped(store, &other, 2).await),
        ("o".into(), false)
    );

    // Once the owner answers one, there is room again.
    decide(store, "a", &response(ApprovalStatus::Rejected, "owner", at))
        .await
        .expect("decide");
    assert_eq!(
        held(request_capped(store, &third, 2).await),
        ("c".into(), false)
    );

    // A card past its lapse time no longer counts, marked expired or not (`b` and `c` lapse
    // an hour after they were made).
    let later = at + Duration::hours(1) + Duration::seconds(1);
    let after_lapse = gateway_call("d", "claude", "v4", later);
    assert_eq!(
        held(request_capped(store, &after_lapse, 2).await),
        ("d".into(), false)
    );
}

/// Eight calls of agent `claude` at once, spread over four connections to `db`: the i-th
/// call's row is `burst-{i}` with content `content(i)`, asked with at most `max_waiting`
/// pending. Their answers, in the calls' order.
async fn eight_at_once(
    db: &TestDb,
    content: fn(usize) -> String,
    max_waiting: u32,
) -> Vec<GatewayWrite> {
    let mut stores = vec![db.store.clone()];
    for _ in 0..3 {
        stores.push(connect(&db.url, &db.clock).await);
    }
    let barrier = Arc::new(Barrier::new(8));
    let mut calls = Vec::new();
    for i in 0..8 {
        let store = stores[i % stores.len()].clone();
        let barrier = barrier.clone();
        calls.push(tokio::spawn(async move {
            let row = gateway_call(&format!("burst-{i}"), "claude", &content(i), t0());
            barrier.wait().await;
            request_capped(&store, &row, max_waiting).await
        }));
    }
    let mut answers = Vec::new();
    for call in calls {
        answers.push(call.await.expect("task"));
    }
    answers
}

async fn an_agents_calls_at_once_never_pass_its_cap(engine: Engine) {
    let db = open_with_agents(engine).await;
    let answers = eight_at_once(&db, |i| format!("v{i}"), 3).await;
    let mut written = 0;
    let mut full = 0;
    for answer in answers {
        match answer {
            GatewayWrite::Held(got) => {
                assert!(!got.attached);
                written += 1;
            }
            GatewayWrite::Full { waiting } => {
                assert_eq!(waiting, 3);
                full += 1;
            }
        }
    }
    assert_eq!((written, full), (3, 5));
    assert_eq!(list(&db.store, None).await.unwrap().len(), 3);
}

async fn the_same_call_attaches_within_a_day_and_nothing_else_does(engine: Engine) {
    let db = open_with_agents(engine).await;
    let store = &db.store;
    let first = gateway_call("a1", "claude", "v2", t0());
    assert_eq!(request(store, &first).await, ("a1".into(), false));
    let row = store.approval("a1").await.unwrap().expect("written");
    assert_eq!(row.requested_by.as_deref(), Some("claude"));
    assert_eq!(row.status, ApprovalStatus::Pending);

    // The same call an hour later: the first row, nothing written.
    let again = gateway_call("a2", "claude", "v2", t0() + Duration::hours(1));
    assert_eq!(request(store, &again).await, ("a1".into(), true));
    assert!(store.approval("a2").await.unwrap().is_none());

    // Also once it is answered: the agent then reads its outcome.
    decide(
        store,
        "a1",
        &response(ApprovalStatus::Rejected, "owner", t0()),
    )
    .await
    .expect("decide");
    let answered = gateway_call("a3", "claude", "v2", t0() + Duration::hours(2));
    assert_eq!(request(store, &answered).await, ("a1".into(), true));

    // Other content, another agent: other cards.
    let other_content = gateway_call("b1", "claude", "v3", t0() + Duration::hours(2));
    assert_eq!(request(store, &other_content).await, ("b1".into(), false));
    let other_agent = gateway_call("c1", "cursor", "v2", t0() + Duration::hours(2));
    assert_eq!(request(store, &other_agent).await, ("c1".into(), false));

    // More than a day after the card: a new card.
    let next_day = gateway_call("d1", "claude", "v2", t0() + Duration::hours(25));
    assert_eq!(request(store, &next_day).await, ("d1".into(), false));
    // A row of IRIS's own agent (no `requested_by`) for the same call never takes an agent's.
    let mut own = gateway_call("own", "claude", "v4", t0() + Duration::hours(25));
    own.requested_by = None;
    insert(store, &own).await.expect("own row");
    let agents = gateway_call("e1", "claude", "v4", t0() + Duration::hours(25));
    assert_eq!(request(store, &agents).await, ("e1".into(), false));
    assert_eq!(list(store, None).await.unwrap().len(), 6);
}

async fn identical_calls_at_once_on_several_connections_make_one_row(engine: Engine) {
    let db = open_with_agents(engine).await;
    let answers: Vec<(String, bool)> = eight_at_once(&db, |_| "v2".into(), 100)
        .await
        .into_iter()
        .map(held)
        .collect();
    let written: Vec<_> = answers.iter().filter(|(_, attached)| !attached).collect();
    assert_eq!(written.len(), 1, "{answers:?}");
    let id = &written[0].0;
    assert!(answers.iter().all(|(a, _)| a == id), "{answers:?}");
    assert_eq!(list(&db.store, None).await.unwrap().len(), 1);
}

/// A gateway result is first given once: the first delivery is told so, every later one (and
/// all but one of several at once) gets the first's time; the database keeps the first.
async fn a_result_is_first_given_once(engine: Engine) {
    let db = open_with_agents(engine).await;
    let store = &db.store;
    let row = gateway_call("a", "claude", "v1", t0());
    request(store, &row).await;
    let first = t0() + Duration::minutes(5);
    assert_eq!(store.deliver_result("a", first).await.unwrap(), None);
    let later = store
        .deliver_result("a", first + Duration::minutes(1))
        .await
        .unwrap();
    assert_eq!(later, Some(first));
    // Four at once on four connections: the first stays the first.
    let mut at_once = Vec::new();
    for _ in 0..4 {
        let other = connect(&db.url, &db.clock).await;
        at_once.push(tokio::spawn(async move {
            other
                .deliver_result("a", first + Duration::minutes(2))
                .await
        }));
    }
    for told in at_once {
        assert_eq!(told.await.expect("task").unwrap(), Some(first));
    }
    let refused = refused(store, "UPDATE gateway_deliveries SET delivered_at = 'x'").await;
    assert!(refused.contains("delivered once"), "{refused}");
}

macro_rules! suite {
    ($engine:expr) => {
        #[tokio::test]
        async fn a_result_is_first_given_once() {
            super::a_result_is_first_given_once($engine).await;
        }
        #[tokio::test]
        async fn the_same_call_attaches_within_a_day_and_nothing_else_does() {
            super::the_same_call_attaches_within_a_day_and_nothing_else_does($engine).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn identical_calls_at_once_on_several_connections_make_one_row() {
            super::identical_calls_at_once_on_several_connections_make_one_row($engine).await;
        }
        #[tokio::test]
        async fn an_agent_has_at_most_its_cap_of_cards_waiting() {
            super::an_agent_has_at_most_its_cap_of_cards_waiting($engine).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn an_agents_calls_at_once_never_pass_its_cap() {
            super::an_agents_calls_at_once_never_pass_its_cap($engine).await;
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
