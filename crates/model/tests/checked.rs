//! The lifecycle model checked exhaustively (docs/liveness.md "the checked model"): with the
//! fence as the code keeps it, no property has a counterexample for 2 servers and 2 approvals
//! with one crash, one stall past a lease and one unit that fails for good; without the
//! fence, "one story" has one; when a server never retakes a lease of its own and a failed
//! unit leaves its job running, "every decided card ends" has one: the properties can fail. `IRIS_MODEL_SERVERS=3` (with
//! `--ignored`) checks 3 servers, a longer run.

use iris_model::{Fence, LifecycleModel, Retake};
use stateright::{Checker, Model};

fn check(servers: usize, cards: usize, fence: Fence) -> impl Checker<LifecycleModel> {
    LifecycleModel::new(servers, cards, fence)
        .checker()
        .threads(2)
        .spawn_bfs()
        .join()
}

#[test]
fn with_the_fence_every_property_holds_for_two_servers_and_two_approvals() {
    let checker = check(2, 2, Fence::Kept);
    checker.assert_properties();
    eprintln!(
        "2 servers, 2 approvals: {} states ({} unique), depth {}",
        checker.state_count(),
        checker.unique_state_count(),
        checker.max_depth()
    );
    assert!(
        checker.unique_state_count() > 1_000,
        "the exploration reached {} states",
        checker.unique_state_count()
    );
}

#[test]
fn without_the_fence_a_takeover_and_a_late_outcome_tell_two_stories() {
    let checker = check(2, 1, Fence::Removed);
    let path = checker.assert_any_discovery("one story");
    let last = path.last_state();
    assert!(last.cards.iter().any(|c| c.told.len() == 2), "{:?}", last);
    checker.assert_no_discovery("at most once");
}

#[test]
fn when_a_server_never_retakes_its_own_lease_a_card_can_stall_for_ever() {
    let mut model = LifecycleModel::new(1, 1, Fence::Kept);
    model.retake = Retake::OthersOnly;
    let checker = model.checker().threads(2).spawn_bfs().join();
    let path = checker.assert_any_discovery("every decided card ends");
    assert!(
        !path.last_state().cards.iter().all(iris_model::ended),
        "{:?}",
        path.last_state()
    );
}

#[test]
#[ignore = "the longer run: IRIS_MODEL_SERVERS=3 cargo test -p iris-model -- --ignored"]
fn with_the_fence_every_property_holds_for_more_servers() {
    let servers = std::env::var("IRIS_MODEL_SERVERS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3);
    let checker = check(servers, 2, Fence::Kept);
    checker.assert_properties();
    eprintln!(
        "{servers} servers, 2 approvals: {} unique states, depth {}",
        checker.unique_state_count(),
        checker.max_depth()
    );
}
