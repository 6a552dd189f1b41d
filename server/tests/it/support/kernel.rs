//! The approvals service in process, as the kernel suites (`loop_rules`, `lifecycle`, `undo`)
//! drive it: the store on either engine, the service over it with a job runtime the test drives,
//! and the owner as an actor; and a card seeded into a store as a halt writes it (`in_process`,
//! `cli`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

/// The store the kernel suites (`loop_rules`, `lifecycle`) run on: in-memory SQLite, or a fresh
/// PostgreSQL database when `IRIS_KERNEL_ENGINE=postgres` (the test command runs those suites
/// once per engine). The guard drops the PostgreSQL database when the test ends.
pub async fn kernel_store() -> (iris_store::Store, Option<iris_store::testing::DropDatabase>) {
    kernel_store_on(iris_store::TimeSource::Database).await
}

/// [`kernel_store`] with `time` as the store's time source (a test clock for expiry and leases).
pub async fn kernel_store_on(
    time: iris_store::TimeSource,
) -> (iris_store::Store, Option<iris_store::testing::DropDatabase>) {
    let options = iris_store::StoreOptions {
        time,
        ..iris_store::StoreOptions::default()
    };
    match std::env::var("IRIS_KERNEL_ENGINE").as_deref() {
        Ok("postgres") => {
            let (url, guard) = iris_store::testing::fresh_postgres_database().await;
            let store = iris_store::Store::connect_with(&url, options)
                .await
                .expect("test database");
            (store, Some(guard))
        }
        Ok("sqlite") | Err(_) => (
            iris_store::Store::connect_with("sqlite::memory:", options)
                .await
                .expect("in-memory store"),
            None,
        ),
        Ok(other) => panic!("IRIS_KERNEL_ENGINE `{other}` is not sqlite or postgres"),
    }
}

/// The job runtime of the in-process suites: wake-ups are ignored (the test runs the jobs
/// itself, so it decides when a resume happens), sleeps are tokio's.
pub struct TestJobs;

impl iris_core::approvals::JobRuntime for TestJobs {
    fn job_ready(&self) {}

    fn sleep(&self, duration: Duration) -> futures::future::BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// The approvals service over `store` and `agent`, stamping rows with `clock`, with 30 s leases
/// held by one test server.
pub fn service(
    store: &iris_store::Store,
    agent: iris_core::agent::Agent,
    clock: Arc<dyn iris_core::ports::Clock>,
) -> iris_core::approvals::ApprovalService {
    iris_core::approvals::ApprovalService::new(
        Arc::new(store.clone()),
        Arc::new(agent),
        clock,
        iris_core::approvals::LeaseSettings {
            owner: "test-server".into(),
            ..iris_core::approvals::LeaseSettings::for_this_process(30)
        },
        Arc::new(TestJobs),
    )
}

/// The owner's control device on the web surface.
pub fn owner() -> iris_core::approvals::Actor {
    iris_core::approvals::Actor {
        name: "owner".into(),
        scope: iris_core::ports::Scope::Control,
        surface: iris_core::wire::Surface::Web,
    }
}

/// Writes a pending `trash_email` card `id` for item `id` into `store`, created `minutes` after
/// `t`, its item line `line`, as a halt would (row, checkpoint, link in one commit).
pub async fn seed_card(
    store: &iris_store::Store,
    id: &str,
    t: chrono::DateTime<chrono::Utc>,
    minutes: i64,
    line: &str,
) {
    use iris_core::ports::{ApprovalStore, Checkpoint, HaltRecord, NewApproval, TurnCommit};
    use iris_core::wire::{ApprovalKind, Card, Effect};
    let args = json!({"ids": [id]});
    let created_at = t + chrono::Duration::minutes(minutes);
    let approval = NewApproval {
        id: id.into(),
        kind: ApprovalKind::Destructive,
        tool: "trash_email".into(),
        args_canonical: iris_core::canonical::canonical_json(&args),
        call_hash: iris_core::canonical::call_hash("trash_email", &args),
        args: args.clone(),
        items: vec![id.into()],
        card: Card {
            title: "Trash 1 email".into(),
            action: "Trash 1 email".into(),
            effect: Effect::Destructive,
            lines: vec![line.into()],
            undo_tool: Some("restore_email".into()),
            undo_window_days: Some(30),
            request: "tidy up".into(),
            undo_note: None,
            undo_action: None,
            preview: Vec::new(),
            overlaps: Vec::new(),
            items_arg: None,
            editable: Vec::new(),
            trail: Vec::new(),
            flags: Vec::new(),
        },
        run_id: format!("run-{id}"),
        context_summary: "tidy up".into(),
        created_at,
        expires_at: created_at + chrono::Duration::hours(1),
        preconditions: vec![],
        passkey_required: false,
        requested_by: None,
    };
    let checkpoint = Checkpoint {
        id: format!("cp-{id}"),
        run_id: approval.run_id.clone(),
        conversation_id: format!("c-{id}"),
        request: "tidy up".into(),
        messages: vec![],
        pending_call: iris_core::model::ToolCall {
            id: "call".into(),
            name: "trash_email".into(),
            arguments: args,
        },
        approval_id: id.into(),
        effects_executed: vec![],
    };
    store
        .commit_turn(&TurnCommit {
            conversation_id: format!("c-{id}"),
            transcript: vec![],
            transcript_version: 0,
            lines: vec![],
            outbox: iris_core::ports::Outbox::default(),
            actions: Vec::new(),
            halt: Some(HaltRecord {
                approval,
                checkpoint,
            }),
        })
        .await
        .unwrap();
}
