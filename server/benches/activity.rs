//! Benchmark: Activity after a year of use. A server built in process (`iris::build`,
//! `iris::app`, requests through `tower::ServiceExt::oneshot`, as the in-process tests do) on
//! a SQLite file holding 10,000 answered approvals and 20 pending ones, made the way the
//! product makes them: each card is a halt's one commit (row, checkpoint, link, transcript)
//! and each answer goes through `ApprovalService::respond` (decision, audit, resume job; the
//! resume workers are not started, so no model is needed). Then, with the signed-in owner's
//! bearer token:
//!
//! - `GET /activity` (the server-rendered page) 200 times: p50, p99 and its size;
//! - `GET /governance/approvals?status=all&limit=50` 200 times: p50, p99;
//! - the process's resident memory (VmRSS) before and after 1,000 more page loads.
//!
//! Prints `RESULT bench=activity …` lines. Run it with `cargo bench -p server --bench
//! activity`; `IRIS_BENCH_ROWS` changes the 10,000.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use iris_core::approvals::Actor;
use iris_core::ports::{
    ApprovalStore, Checkpoint, Device, DeviceStore, HaltRecord, NewApproval, Scope, TurnCommit,
};
use iris_core::wire::{ApprovalKind, Card, Decision, Effect};
use serde_json::json;
use tower::ServiceExt;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const PENDING: usize = 20;

/// A trash card for `n`, as the mail plugin describes one (five item lines).
fn card_row(n: usize, created_at: chrono::DateTime<chrono::Utc>) -> (NewApproval, Checkpoint) {
    let ids: Vec<String> = (0..5).map(|k| format!("msg-{n}-{k}")).collect();
    let args = json!({ "ids": ids });
    let id = uuid::Uuid::new_v4().to_string();
    let tool = if n.is_multiple_of(10) {
        "send_email"
    } else {
        "trash_email"
    };
    let approval = NewApproval {
        id: id.clone(),
        kind: ApprovalKind::Destructive,
        tool: tool.into(),
        args_canonical: iris_core::canonical::canonical_json(&args),
        call_hash: iris_core::canonical::call_hash(tool, &args),
        args: args.clone(),
        items: ids.clone(),
        card: Card {
            title: "Trash 5 emails".into(),
            action: "Move 5 emails to Trash".into(),
            effect: Effect::Destructive,
            lines: ids
                .iter()
                .map(|i| format!("Weekly deals {i} — shop@example.com · 3 days ago"))
                .collect(),
            undo_tool: Some("restore_email".into()),
            undo_window_days: Some(30),
            request: format!("trash the promo emails from week {n}"),
            undo_note: Some("You can restore these from Trash for 30 days.".into()),
            undo_action: None,
            preview: Vec::new(),
            overlaps: Vec::new(),
            items_arg: None,
            editable: Vec::new(),
            trail: Vec::new(),
            flags: Vec::new(),
        },
        run_id: format!("run-{id}"),
        context_summary: "trash the promo emails".into(),
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
        request: approval.card.request.clone(),
        messages: vec![],
        pending_call: iris_core::model::ToolCall {
            id: "call".into(),
            name: approval.tool.clone(),
            arguments: args,
        },
        approval_id: id,
        effects_executed: vec![],
    };
    (approval, checkpoint)
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1000.0
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("activity benchmark: run it with `cargo bench -p server --bench activity`");
        return;
    }
    let rows: usize = std::env::var("IRIS_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    // Seeding runs in this process; the measuring runs in a fresh one on the seeded file, so
    // its memory is a server's that serves pages, not one that wrote 10,000 cards.
    let seeded = std::env::var_os("IRIS_BENCH_SEEDED_DIR").map(std::path::PathBuf::from);
    let temp = tempfile::tempdir().expect("temp dir");
    let dir = seeded.clone().unwrap_or_else(|| temp.path().to_path_buf());
    let mut settings = iris::Settings::defaults();
    settings.database_url = format!("sqlite://{}", dir.join("iris.db").display());
    settings.mail_sync_secs = 0;
    // The page never calls the model; the server still needs one configured.
    let script = dir.join("model.yaml");
    std::fs::write(&script, "rules: []\nfallback: \"ok\"\n").expect("script");
    settings.model = Some(format!("scripted:{}", script.display()));
    let leptos = leptos::config::LeptosOptions::builder()
        .output_name("iris")
        .build();
    let state = iris::build(settings, false, leptos).await.expect("build");
    let token = match (&seeded, std::env::var("IRIS_BENCH_TOKEN")) {
        (Some(_), Ok(token)) => token,
        _ => iris::auth::new_token(),
    };
    if seeded.is_none() {
        state
            .store
            .add(
                &Device {
                    name: "owner-phone".into(),
                    scope: Scope::Control,
                    created_at: chrono::Utc::now(),
                    last_used_at: None,
                },
                &iris::auth::token_hash(&token),
            )
            .await
            .expect("device");
        let actor = Actor {
            name: "owner-phone".into(),
            scope: Scope::Control,
            surface: iris_core::wire::Surface::Web,
        };
        // The year: `rows` answered cards, then `PENDING` waiting ones.
        let seeding = Instant::now();
        let now = chrono::Utc::now();
        for n in 0..rows + PENDING {
            // Within the last hour, so each card is still answerable (its TTL is an hour): what
            // is measured is how many rows there are, not how old they are.
            let created = if n < rows {
                now - chrono::Duration::minutes(58)
                    + chrono::Duration::milliseconds((n as i64 * 3_000_000) / rows as i64)
            } else {
                now - chrono::Duration::seconds((rows + PENDING - n) as i64)
            };
            let (approval, checkpoint) = card_row(n, created);
            let id = approval.id.clone();
            state
                .store
                .commit_turn(&TurnCommit {
                    conversation_id: checkpoint.conversation_id.clone(),
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
                .expect("halt");
            if n < rows {
                let decision = if n.is_multiple_of(3) {
                    Decision::Approve
                } else {
                    Decision::Reject
                };
                state
                    .service
                    .respond(&id, decision, None, &actor)
                    .await
                    .expect("respond");
            }
        }
        println!(
            "seeded {rows} answered + {PENDING} pending approvals in {:.1} s (halt commit + ApprovalService::respond each)",
            seeding.elapsed().as_secs_f64()
        );
        drop(state);
        let status = std::process::Command::new(std::env::current_exe().expect("own path"))
            .arg("--bench")
            .env("IRIS_BENCH_SEEDED_DIR", &dir)
            .env("IRIS_BENCH_TOKEN", &token)
            .status()
            .expect("the measuring process");
        assert!(status.success(), "the measuring process failed: {status}");
        return;
    }

    let router = iris::app(state.clone());
    let get = |path: &'static str| {
        let router = router.clone();
        let token = token.clone();
        async move {
            let request = Request::builder()
                .uri(path)
                .header("authorization", format!("Bearer {token}"))
                .body(Body::empty())
                .unwrap();
            let t = Instant::now();
            let response = router.oneshot(request).await.unwrap();
            assert_eq!(response.status(), StatusCode::OK, "{path}");
            let bytes = axum::body::to_bytes(response.into_body(), 256 << 20)
                .await
                .unwrap();
            (t.elapsed(), bytes.len())
        }
    };

    for (name, path) in [
        ("activity_page", "/activity"),
        (
            "api_list_all_50",
            "/governance/approvals?status=all&limit=50",
        ),
    ] {
        for _ in 0..10 {
            get(path).await;
        }
        let mut times = Vec::new();
        let mut size = 0;
        for _ in 0..200 {
            let (t, n) = get(path).await;
            times.push(t);
            size = n;
        }
        times.sort();
        println!(
            "RESULT bench=activity measure={name} rows={rows} pending={PENDING} p50_ms={:.2} p99_ms={:.2} bytes={size}",
            pct(&times, 0.5),
            pct(&times, 0.99)
        );
    }
    let before = rss_kib();
    for _ in 0..1000 {
        get("/activity").await;
    }
    let after = rss_kib();
    println!(
        "RESULT bench=activity measure=rss_after_1000_page_loads rss_before_mib={:.1} rss_after_mib={:.1}",
        before as f64 / 1024.0,
        after as f64 / 1024.0
    );
}
