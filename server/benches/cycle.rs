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

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::future::BoxFuture;
use iris_core::agent::{Agent, Pausing};
use iris_core::approval::Ttl;
use iris_core::approvals::{Actor, ApprovalService, JobRuntime, LeaseSettings};
use iris_core::manifest::{Manifest, ToolSpec};
use iris_core::model::{Message, Model, ModelError, ModelTurn, ToolCall};
use iris_core::plugin::{CallContext, Description, ItemOutcome, Plugin, ToolError, ToolOutput};
use iris_core::ports::{ApprovalStore, HaltRecord, Scope, SystemClock, TurnCommit};
use iris_core::toolbox::Toolbox;
use iris_core::wire::{ApprovalStatus, Decision, Event, Execution, RunStatus};
use iris_store::{Store, StoreOptions, Synchronous};
use serde_json::{json, Value};
use sqlx::Connection;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// The server's allocator (as `iris` itself uses), so the cycle measures what production runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Warm-up cycles before the measured ones (not in the latency figures).
const WARMUP: usize = 10;

/// Measured cycles unless `IRIS_BENCH_CYCLES` says otherwise.
const DEFAULT_CYCLES: usize = 200;

/// Bare commits measured per engine.
const BARE_COMMITS: usize = 200;

// ---------------------------------------------------------------- the no-op destructive plugin

const MANIFEST: &str = r#"
plugin: bench
tools:
  - name: drop_record
    effect: destructive
    undo: keep_record
    undo_window_days: 1
    description: Drops the named records (a no-op for the benchmark).
    parameters:
      type: object
      additionalProperties: false
      required: [ids]
      properties:
        ids:
          type: array
          minItems: 1
          items: {type: string, minLength: 1}
  - name: keep_record
    effect: write
    confirm: never
    description: Brings dropped records back (never called).
"#;

/// A destructive tool that does nothing but count its executions.
struct NoopPlugin {
    manifest: Manifest,
    executions: AtomicUsize,
}

fn ids(args: &Value) -> Vec<String> {
    args["ids"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

#[async_trait]
impl Plugin for NoopPlugin {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    async fn normalise(
        &self,
        _tool: &str,
        args: Value,
        _ctx: &CallContext,
    ) -> Result<Value, ToolError> {
        Ok(args)
    }

    async fn describe(
        &self,
        _tool: &str,
        args: &Value,
        _ctx: &CallContext,
    ) -> Result<Description, ToolError> {
        let items = ids(args);
        Ok(Description {
            title: format!("Drop {} record(s)", items.len()),
            action: format!("Drop {} record(s)", items.len()),
            lines: items.iter().map(|i| format!("Record {i}")).collect(),
            items,
            ..Default::default()
        })
    }

    async fn execute(
        &self,
        _tool: &str,
        args: &Value,
        _ctx: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        self.executions.fetch_add(1, Ordering::SeqCst);
        let items = ids(args);
        Ok(ToolOutput {
            result: json!({"dropped": items.len()}),
            items: items
                .into_iter()
                .map(|item| ItemOutcome {
                    item,
                    outcome: json!({"status": "dropped"}),
                })
                .collect(),
        })
    }
}

// ---------------------------------------------------------------- the scripted model

/// Proposes `drop_record(ids=[rec-N])` for "drop record N", then answers "Done".
struct BenchModel;

#[async_trait]
impl Model for BenchModel {
    async fn complete(
        &self,
        messages: &[Message],
        _tools: &[ToolSpec],
    ) -> Result<ModelTurn, ModelError> {
        match messages.last() {
            Some(Message::User { content }) => {
                let n = content.rsplit(' ').next().unwrap_or("0");
                Ok(ModelTurn {
                    content: None,
                    tool_calls: vec![ToolCall {
                        id: "call-1".into(),
                        name: "drop_record".into(),
                        arguments: json!({"ids": [format!("rec-{n}")]}),
                    }],
                })
            }
            _ => Ok(ModelTurn {
                content: Some("Done: the record was dropped.".into()),
                tool_calls: Vec::new(),
            }),
        }
    }
}

// ---------------------------------------------------------------- counting statements

/// Statements sqlx ran, by verb (its trace events; the transactions' BEGIN and COMMIT are not
/// among them, so commits are counted by the store).
#[derive(Debug, Default, Clone, PartialEq)]
struct SqlCounts {
    by_verb: BTreeMap<String, u64>,
    /// The statements' first words, in order (shown with `IRIS_BENCH_SHOW_STATEMENTS=1`).
    log: Vec<String>,
}

impl SqlCounts {
    fn record(&mut self, sql: &str) {
        let upper = sql.trim_start().to_ascii_uppercase();
        let verb = upper.split_whitespace().next().unwrap_or("").to_string();
        *self.by_verb.entry(verb).or_default() += 1;
        self.log
            .push(sql.split_whitespace().take(6).collect::<Vec<_>>().join(" "));
    }

    fn statements(&self) -> u64 {
        self.by_verb.values().sum()
    }

    /// Adds `other`'s counts to these.
    fn add(&mut self, other: &SqlCounts) {
        for (verb, n) in &other.by_verb {
            *self.by_verb.entry(verb.clone()).or_default() += n;
        }
    }
}

/// A tracing layer that feeds every statement's event (`sqlx::query`, the SQLite writer's
/// `iris_store::STATEMENT_TARGET`) into [`SqlCounts`].
#[derive(Clone, Default)]
struct SqlCounter(Arc<Mutex<SqlCounts>>);

impl SqlCounter {
    fn take(&self) -> SqlCounts {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

#[derive(Default)]
struct StatementText {
    summary: String,
    statement: String,
}

impl Visit for StatementText {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "summary" => self.summary = value.to_string(),
            "db.statement" => self.statement = value.to_string(),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "summary" => self.summary = format!("{value:?}").trim_matches('"').to_string(),
            "db.statement" => self.statement = format!("{value:?}"),
            _ => {}
        }
    }
}

impl<S: tracing::Subscriber> Layer<S> for SqlCounter {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let target = event.metadata().target();
        if target != "sqlx::query" && target != iris_store::STATEMENT_TARGET {
            return;
        }
        let mut text = StatementText::default();
        event.record(&mut text);
        let sql = if text.statement.trim().is_empty() {
            text.summary
        } else {
            text.statement
        };
        self.0.lock().unwrap().record(&sql);
    }
}

// ---------------------------------------------------------------- PostgreSQL's own counter

/// `xact_commit` of database `name`, read from the admin database once it stops changing
/// (backends report when they exit, a moment after the pool closed).
async fn settled_xact_commit(admin_url: &str, name: &str) -> i64 {
    let mut conn = sqlx::PgConnection::connect(admin_url)
        .await
        .expect("admin connection");
    let mut last = -1;
    let mut same = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now: i64 = sqlx::query_scalar(
            "SELECT COALESCE(xact_commit, 0) FROM pg_stat_database WHERE datname = $1",
        )
        .bind(name)
        .fetch_optional(&mut conn)
        .await
        .expect("reading pg_stat_database")
        .unwrap_or(0);
        if now == last {
            same += 1;
            if same >= 3 {
                break;
            }
        } else {
            same = 0;
            last = now;
        }
        if Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let _ = conn.close().await;
    last
}

/// The bench's job runtime: nothing to wake (the bench runs each job itself), tokio's timer.
struct BenchJobs;

impl JobRuntime for BenchJobs {
    fn job_ready(&self) {}

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

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

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn ms(d: Duration) -> f64 {
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

/// The service over `store`: the no-op plugin, the bench model, default TTLs.
fn service(store: &Store, plugin: Arc<NoopPlugin>) -> ApprovalService {
    let toolbox = Arc::new(Toolbox::new(vec![plugin]).expect("toolbox"));
    let agent = Agent::new(
        Arc::new(BenchModel),
        toolbox,
        Pausing::Governed {
            ttl: Ttl::default(),
            clock: Arc::new(SystemClock),
            passkeys: Default::default(),
        },
        Vec::new(),
    );
    ApprovalService::new(
        Arc::new(store.clone()),
        Arc::new(agent),
        Arc::new(SystemClock),
        LeaseSettings::for_this_process(30),
        Arc::new(BenchJobs),
    )
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
        surface: "cli".into(),
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

// ---------------------------------------------------------------- events across servers

/// Two servers' stores on one PostgreSQL database: A commits a card, B's subscriber receives
/// `approval.requested`. Prints p50/p99 of that delay over `rounds` cards.
async fn event_delay(url: &str, rounds: usize) {
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
            events: vec![Event::ApprovalRequested(row.pending_view())],
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
        event_delay(&url, 200).await;
        drop(database);
    }
}
