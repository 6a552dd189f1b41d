//! Benchmark: the whole consent cycle — halt → approve → execute → resume — through the real
//! approvals service and store, on SQLite (a file in a temp folder, at `synchronous` FULL and
//! NORMAL) and PostgreSQL (a fresh database):
//!
//! 1. halt: `ApprovalService::chat("drop record N")`: the model proposes a destructive call, the
//!    hook pins it, and the turn ends in one commit (row, checkpoint, link, transcript, lines);
//! 2. approve: `ApprovalService::respond`: one commit (decision, audit, resume job);
//! 3. execute + resume: `ApprovalService::run_job`: the claim's commit (lease + ledger
//!    `executing`), the no-op side effect, the outcome's commit (ledger `executed` + audit), the
//!    model's continuation, the end's commit (transcript, lines, job done).
//!
//! The model is a tiny in-process one (it proposes the call, then says "Done"; the anchor's model
//! is in process too) and the tool is a no-op destructive plugin, so what is measured is
//! governance and the database. In the same sitting, on the same settings, it measures one bare
//! commit (a one-row INSERT committed alone through the store's writer, the path every unit
//! takes), so the cycle can be read against
//! `commits per cycle × commit_us`.
//!
//! Commits are counted twice: by the store (every unit of work's committed transaction) and, on
//! PostgreSQL, by `pg_stat_database.xact_commit` (read-only transactions included). Statements
//! are counted from their trace events: sqlx's `sqlx::query` and the SQLite writer's
//! `iris_store::STATEMENT_TARGET`.
//!
//! Also on PostgreSQL: how long an event committed on one server (store) takes to reach another
//! server's subscribers through `LISTEN/NOTIFY` and the event log.
//!
//! Every engine prints one machine-readable line,
//! `RESULT engine=sqlite synchronous=full cycles_per_s=N p50_ms=N p99_ms=N commits_per_cycle=N commit_us=N`
//! (`engine=postgres synchronous=on`), the shape `../shared/anchors/langgraph_hitl.py` prints.
//! Bounded: `IRIS_BENCH_CYCLES` (default 200) after 10 warm-up cycles. Run it with
//! `cargo bench -p server --bench cycle`; `IRIS_BENCH_ENGINES=sqlite-full,sqlite-normal,postgres`
//! picks engines; PostgreSQL is reached through `IRIS_TEST_POSTGRES_URL`.
//!
//! The parts: `fixture.rs` (the plugin, the model and the service the cycle runs), `statements.rs`
//! (counting statements and PostgreSQL's commits), `events.rs` (events across servers); this
//! file runs the engines and prints their reports.

mod events;
mod fixture;
mod statements;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use iris_core::approvals::Actor;
use iris_core::manifest::Manifest;
use iris_core::ports::{ApprovalStore, Scope};
use iris_core::wire::{ApprovalStatus, Decision, Execution, RunStatus};
use iris_store::{Store, StoreOptions, Synchronous};
use sqlx::Connection;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

use fixture::{service, NoopPlugin, MANIFEST};
use statements::{settled_xact_commit, SqlCounter, SqlCounts};

/// The server's allocator (as `iris` itself uses), so the cycle measures what production runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Warm-up cycles before the measured ones (not in the latency figures).
const WARMUP: usize = 10;

/// Measured cycles unless `IRIS_BENCH_CYCLES` says otherwise.
const DEFAULT_CYCLES: usize = 200;

/// Bare commits measured per engine.
const BARE_COMMITS: usize = 200;
// ---------------------------------------------------------------- one engine

/// What one engine's run is: its name, settings and database.
struct Setup {
    engine: &'static str,
    synchronous: &'static str,
    url: String,
    options: StoreOptions,
    /// PostgreSQL: the admin url and the database's name, for `pg_stat_database`.
    pg: Option<(String, String)>,
}

struct Report {
    cycles: usize,
    elapsed: Duration,
    cycle: Vec<Duration>,
    phases: [Vec<Duration>; 3],
    /// Store commits per phase, over warm-up and measured cycles.
    commits: [u64; 3],
    /// Statements per phase, over warm-up and measured cycles.
    sql: [SqlCounts; 3],
    counted_cycles: usize,
    /// One bare commit, median, in µs.
    commit_us: f64,
    /// PostgreSQL: committed transactions per cycle from `pg_stat_database`.
    pg_xact_per_cycle: Option<f64>,
}

/// The `q` quantile of `sorted` (nearest rank).
pub(crate) fn percentile(sorted: &[Duration], q: f64) -> Duration {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// `d` in milliseconds.
pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The median of `BARE_COMMITS` one-row INSERTs, each committed alone through `store`'s writer
/// (the path of every unit of work), in µs.
async fn bare_commit_us(store: &Store) -> f64 {
    sqlx::query("CREATE TABLE IF NOT EXISTS bench_commit (n BIGINT NOT NULL)")
        .execute(store.pool())
        .await
        .expect("bench table");
    let mut times = Vec::with_capacity(BARE_COMMITS);
    for n in 0..BARE_COMMITS {
        let t = Instant::now();
        iris_store::testing::bare_commit(store, n as i64)
            .await
            .expect("bare commit");
        times.push(t.elapsed());
    }
    times.sort();
    percentile(&times, 0.5).as_secs_f64() * 1e6
}

/// Runs warm-up plus `cycles` cycles on `setup`'s database.
async fn run_engine(setup: &Setup, cycles: usize, counter: &SqlCounter) -> Report {
    // PostgreSQL: what merely connecting costs (the migrator's check), to subtract later.
    let mut pg_before = None;
    if let Some((admin, name)) = &setup.pg {
        let connect = || Store::connect_with(&setup.url, setup.options.clone());
        connect().await.expect("first connect").pool().close().await;
        let b1 = settled_xact_commit(admin, name).await;
        connect()
            .await
            .expect("second connect")
            .pool()
            .close()
            .await;
        let b2 = settled_xact_commit(admin, name).await;
        pg_before = Some((b2, b2 - b1));
    }

    let store = Store::connect_with(&setup.url, setup.options.clone())
        .await
        .expect("connecting the store");
    let commit_us = bare_commit_us(&store).await;
    let plugin = Arc::new(NoopPlugin {
        manifest: Manifest::from_yaml(MANIFEST).expect("bench manifest"),
        executions: AtomicUsize::new(0),
    });
    let service = service(&store, plugin.clone());
    let actor = Actor {
        name: "bench".into(),
        scope: Scope::Control,
        surface: iris_core::wire::Surface::Cli,
    };

    counter.take();
    let mut report = Report {
        cycles,
        elapsed: Duration::ZERO,
        cycle: Vec::with_capacity(cycles),
        phases: Default::default(),
        commits: [0; 3],
        sql: Default::default(),
        counted_cycles: WARMUP + cycles,
        commit_us,
        pg_xact_per_cycle: None,
    };
    let mut ids = Vec::with_capacity(WARMUP + cycles);
    let mut started = Instant::now();
    for i in 0..WARMUP + cycles {
        if i == WARMUP {
            started = Instant::now();
        }
        let c0 = store.commits();
        let t0 = Instant::now();
        let halted = service
            .chat(&actor, None, &format!("drop record {i}"))
            .await
            .expect("halt");
        assert_eq!(halted.status, RunStatus::AwaitingApproval, "{halted:?}");
        let id = halted.approval_id.expect("approval id");
        let (t1, c1) = (Instant::now(), store.commits());
        let halt_sql = counter.take();
        let row = service
            .respond(&id, Decision::Approve, None, &actor)
            .await
            .expect("respond");
        assert_eq!(row.status, ApprovalStatus::Approved);
        let (t2, c2) = (Instant::now(), store.commits());
        let approve_sql = counter.take();
        let resumed = service
            .run_job(&id)
            .await
            .expect("run the job")
            .and_then(|r| r.run)
            .expect("this caller resumes");
        assert_eq!(resumed.status, RunStatus::Done, "{resumed:?}");
        let (t3, c3) = (Instant::now(), store.commits());
        let shown = [halt_sql, approve_sql, counter.take()];
        if i == WARMUP && std::env::var_os("IRIS_BENCH_SHOW_STATEMENTS").is_some() {
            for (phase, counts) in ["halt", "approve", "execute + resume"].iter().zip(&shown) {
                println!("{} {phase}:", setup.engine);
                for line in &counts.log {
                    println!("    {line}");
                }
            }
        }
        for (total, phase) in report.sql.iter_mut().zip(&shown) {
            total.add(phase);
        }
        for (total, n) in report.commits.iter_mut().zip([c1 - c0, c2 - c1, c3 - c2]) {
            *total += n;
        }
        if i >= WARMUP {
            report.cycle.push(t3 - t0);
            report.phases[0].push(t1 - t0);
            report.phases[1].push(t2 - t1);
            report.phases[2].push(t3 - t2);
        }
        ids.push(id);
    }
    report.elapsed = started.elapsed();
    counter.take();

    // Every cycle executed its pinned call exactly once, and the ledger says so.
    assert_eq!(plugin.executions.load(Ordering::SeqCst), WARMUP + cycles);
    for id in [&ids[0], &ids[ids.len() / 2], &ids[ids.len() - 1]] {
        let row = store.approval(id).await.expect("get").expect("row");
        assert_eq!(row.execution, Execution::Executed, "{row:?}");
    }
    counter.take();

    store.pool().close().await;
    if let (Some((admin, name)), Some((before, connect_cost))) = (&setup.pg, pg_before) {
        let after = settled_xact_commit(admin, name).await;
        // Subtract the connect, the bare commits, the table, and the three verification reads.
        let during = after - before - connect_cost - BARE_COMMITS as i64 - 1 - 3;
        report.pg_xact_per_cycle = Some(during as f64 / (WARMUP + cycles) as f64);
    }
    report
}

fn print(setup: &Setup, report: &Report) {
    let mut cycle = report.cycle.clone();
    cycle.sort();
    let per = |n: u64| n as f64 / report.counted_cycles as f64;
    let cycles_per_s = report.cycles as f64 / report.elapsed.as_secs_f64();
    let commits: u64 = report.commits.iter().sum();
    println!(
        "\n## {} synchronous={} ({} measured cycles)",
        setup.engine, setup.synchronous, report.cycles
    );
    println!(
        "cycles/s {:.1} | cycle p50 {:.2} ms | p99 {:.2} ms | max {:.2} ms | one bare commit {:.0} µs",
        cycles_per_s,
        ms(percentile(&cycle, 0.50)),
        ms(percentile(&cycle, 0.99)),
        ms(*cycle.last().unwrap()),
        report.commit_us,
    );
    for (i, name) in [
        "halt (chat)",
        "approve (respond)",
        "execute + resume (run_job)",
    ]
    .iter()
    .enumerate()
    {
        let mut v = report.phases[i].clone();
        v.sort();
        println!(
            "  {name:<28} p50 {:.2} ms | p99 {:.2} ms | commits {:.2} | statements {:.2}: {}",
            ms(percentile(&v, 0.50)),
            ms(percentile(&v, 0.99)),
            per(report.commits[i]),
            per(report.sql[i].statements()),
            report.sql[i]
                .by_verb
                .iter()
                .map(|(verb, n)| format!("{verb} {:.2}", per(*n)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let commits_per_cycle = per(commits);
    println!(
        "commits per cycle {commits_per_cycle:.2}; their bare cost {:.2} ms; the cycle is {:.2}× that",
        commits_per_cycle * report.commit_us / 1000.0,
        ms(percentile(&cycle, 0.50)) / (commits_per_cycle * report.commit_us / 1000.0)
    );
    if let Some(x) = report.pg_xact_per_cycle {
        println!("pg_stat_database.xact_commit per cycle {x:.2} (every committed transaction, read-only ones included)");
    }
    println!(
        "RESULT engine={} synchronous={} cycles_per_s={:.1} p50_ms={:.2} p99_ms={:.2} commits_per_cycle={:.2} commit_us={:.0}",
        if setup.pg.is_some() { "postgres" } else { "sqlite" },
        setup.synchronous,
        cycles_per_s,
        ms(percentile(&cycle, 0.50)),
        ms(percentile(&cycle, 0.99)),
        commits_per_cycle,
        report.commit_us
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("cycle benchmark: run it with `cargo bench -p server --bench cycle` (skipped)");
        return;
    }
    let counter = SqlCounter::default();
    if std::env::var_os("IRIS_BENCH_NO_COUNT").is_none() {
        tracing_subscriber::registry()
            .with(
                counter.clone().with_filter(
                    tracing_subscriber::filter::Targets::new()
                        .with_target("sqlx::query", tracing::Level::TRACE)
                        .with_target(iris_store::STATEMENT_TARGET, tracing::Level::TRACE),
                ),
            )
            .init();
    }

    let cycles = std::env::var("IRIS_BENCH_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n: &usize| *n > 0)
        .unwrap_or(DEFAULT_CYCLES);
    let engines = std::env::var("IRIS_BENCH_ENGINES")
        .unwrap_or_else(|_| "sqlite-full,sqlite-normal,postgres".into());
    println!(
        "IRIS cycle benchmark: halt → approve → execute → resume, {cycles} cycles after {WARMUP} warm-up, sequential, {} CPUs",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );

    for (name, synchronous) in [
        ("sqlite-full", Synchronous::Full),
        ("sqlite-normal", Synchronous::Normal),
    ] {
        if !engines.split(',').any(|e| e == name) {
            continue;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let setup = Setup {
            engine: "SQLite (file, WAL)",
            synchronous: synchronous.as_str(),
            url: format!("sqlite://{}", dir.path().join("bench.db").display()),
            options: StoreOptions {
                synchronous,
                ..StoreOptions::default()
            },
            pg: None,
        };
        let report = run_engine(&setup, cycles, &counter).await;
        print(&setup, &report);
    }
    if engines.split(',').any(|e| e == "postgres") {
        let admin = iris_store::testing::postgres_admin_url();
        if sqlx::PgConnection::connect(&admin).await.is_err() {
            println!("\n## PostgreSQL: skipped, not reachable at {admin} (start it with `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`)");
            return;
        }
        let (url, database) = iris_store::testing::fresh_postgres_database().await;
        let name = url
            .rsplit('/')
            .next()
            .and_then(|s| s.split('?').next())
            .unwrap_or_default()
            .to_string();
        let setup = Setup {
            engine: "PostgreSQL",
            synchronous: "on",
            url: url.clone(),
            options: StoreOptions::default(),
            pg: Some((admin.clone(), name)),
        };
        let report = run_engine(&setup, cycles, &counter).await;
        print(&setup, &report);
        events::event_delay(&url, 200).await;
        drop(database);
    }
}
