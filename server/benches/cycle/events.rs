//! Events across servers: how long an event one server commits takes to reach another
//! server's subscribers on PostgreSQL (`LISTEN/NOTIFY` and the event log).

use std::time::{Duration, Instant};

use iris_core::model::ToolCall;
use iris_core::ports::{ApprovalStore, HaltRecord, TurnCommit};
use iris_core::wire::Event;
use iris_store::Store;
use serde_json::json;

use crate::{ms, percentile};

// ---------------------------------------------------------------- events across servers

/// Two servers' stores on one PostgreSQL database: A commits a card, B's subscriber receives
/// `approval.requested`. Prints p50/p99 of that delay over `rounds` cards.
pub(crate) async fn event_delay(url: &str, rounds: usize) {
    let a = Store::connect(url).await.expect("server A");
    let b = Store::connect(url).await.expect("server B");
    b.listen_for_events().await.expect("B listens");
    let mut feed = b.subscribe();
    let mut delays = Vec::with_capacity(rounds);
    for i in 0..rounds + 5 {
        let mut row = iris_core::ports::NewApproval {
            id: format!("event-{i}"),
            kind: iris_core::wire::ApprovalKind::Destructive,
            tool: "drop_record".into(),
            args: json!({"ids": [format!("rec-{i}")]}),
            args_canonical: String::new(),
            call_hash: String::new(),
            items: vec![format!("rec-{i}")],
            card: iris_core::wire::Card {
                title: "Drop 1 record".into(),
                action: "Drop 1 record".into(),
                effect: iris_core::wire::Effect::Destructive,
                lines: vec![],
                undo_tool: None,
                undo_window_days: None,
                request: "drop".into(),
                undo_note: None,
                undo_action: None,
                preview: Vec::new(),
                overlaps: Vec::new(),
                items_arg: None,
                editable: Vec::new(),
                trail: Vec::new(),
                flags: Vec::new(),
            },
            run_id: format!("run-{i}"),
            context_summary: "drop".into(),
            created_at: chrono::Utc::now(),
            expires_at: chrono::Utc::now() + chrono::Duration::hours(1),
            preconditions: vec![],
            passkey_required: false,
            requested_by: None,
        };
        row.args_canonical = iris_core::canonical::canonical_json(&row.args);
        row.call_hash = iris_core::canonical::call_hash(&row.tool, &row.args);
        let checkpoint = iris_core::ports::Checkpoint {
            id: format!("cp-{i}"),
            run_id: row.run_id.clone(),
            conversation_id: format!("c-{i}"),
            request: "drop".into(),
            messages: vec![],
            pending_call: ToolCall {
                id: "call".into(),
                name: "drop_record".into(),
                arguments: row.args.clone(),
            },
            approval_id: row.id.clone(),
            effects_executed: vec![],
        };
        let turn = TurnCommit {
            conversation_id: format!("c-{i}"),
            transcript: vec![],
            transcript_version: 0,
            lines: vec![],
            outbox: iris_core::ports::Outbox::of([Event::ApprovalRequested(row.pending_view())]),
            actions: Vec::new(),
            halt: Some(HaltRecord {
                approval: row,
                checkpoint,
            }),
        };
        let sent = Instant::now();
        a.commit_turn(&turn).await.expect("A commits");
        loop {
            match tokio::time::timeout(Duration::from_secs(10), feed.recv()).await {
                Ok(Ok(Event::ApprovalRequested(x))) if x.id == format!("event-{i}") => break,
                Ok(Ok(_)) => continue,
                other => panic!("B missed the event: {other:?}"),
            }
        }
        if i >= 5 {
            delays.push(sent.elapsed());
        }
    }
    delays.sort();
    println!(
        "\n## events across servers (PostgreSQL LISTEN/NOTIFY + event log, {rounds} cards)\nA's commit → B's subscriber: p50 {:.2} ms | p99 {:.2} ms | max {:.2} ms",
        ms(percentile(&delays, 0.5)),
        ms(percentile(&delays, 0.99)),
        ms(*delays.last().unwrap())
    );
    println!(
        "RESULT engine=postgres measure=event_a_to_b p50_ms={:.2} p99_ms={:.2}",
        ms(percentile(&delays, 0.5)),
        ms(percentile(&delays, 0.99))
    );
    a.pool().close().await;
    b.pool().close().await;
}
