//! Benchmark (issue 3): the whole consent cycle — halt → approve → execute → resume — on SQLite
//! (a file in a temp folder) and PostgreSQL (a fresh database), through the real core and store:
//! `Agent::run_turn` halts on a destructive call and writes the approval row and checkpoint,
//! `Governance::respond_to_approval` stores the decision, `Agent::resume` claims, runs the pinned
//! call (ledger `executing` → `executed`, audit) and lets the model finish. The model is a tiny
//! in-process one (it proposes the call, then says "Done") and the tool is a no-op destructive
//! plugin, so what is measured is the governance and the database, not a model or a mailbox.
//!
//! Reports cycles per second, p50/p99 latency per cycle (and per phase), and how many database
//! commits one cycle costs, counted two ways (see `BENCHMARKS.md`):
//!
//! - every statement sqlx runs is counted from its `sqlx::query` trace event and classified by
//!   its verb; every store call runs in autocommit mode (no explicit transactions), so each
//!   INSERT/UPDATE/DELETE is one write commit and each SELECT one read-only transaction;
//! - on PostgreSQL, also `pg_stat_database.xact_commit` of the bench's own database, read from
//!   another database after the pool closed (backends flush their counters when they exit).
//!   It counts every committed transaction, read-only ones included.
//!
//! Bounded: a fixed number of cycles (`IRIS_BENCH_CYCLES`, default 200, after 10 warm-up
//! cycles), then it stops. Run it with `cargo bench -p server --bench cycle`. Without cargo
//! bench's `--bench` argument (e.g. `cargo test --all-targets`) it only says how to run it.
//! `IRIS_BENCH_ENGINES=sqlite` or `=postgres` runs one engine; PostgreSQL is reached through
//! `IRIS_TEST_POSTGRES_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`).
//! `IRIS_BENCH_SHOW_STATEMENTS=1` prints the statements of the first measured cycle.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use iris_core::agent::Agent;
use iris_core::approval::Ttl;
use iris_core::kernel::{Actor, Governance};
use iris_core::manifest::{Manifest, ToolSpec};
use iris_core::model::{Message, Model, ModelError, ModelTurn, ToolCall};
use iris_core::plugin::{CallContext, Description, ItemOutcome, Plugin, ToolError, ToolOutput};
use iris_core::ports::{Notifier, QueueStore, Scope, SystemClock};
use iris_core::wire::{ApprovalStatus, Decision, Event, Execution, RunStatus};
use iris_store::Store;
use serde_json::{json, Value};
use sqlx::Connection;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// Warm-up cycles before the measured ones (not in the latency figures).
const WARMUP: usize = 10;

/// Measured cycles unless `IRIS_BENCH_CYCLES` says otherwise.
const DEFAULT_CYCLES: usize = 200;

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

struct QuietNotifier;

impl Notifier for QuietNotifier {
    fn notify(&self, _event: Event) {}
}

// ---------------------------------------------------------------- counting statements

/// Statements sqlx ran, by verb, and the commits they imply.
#[derive(Debug, Default, Clone, PartialEq)]
struct SqlCounts {
    by_verb: BTreeMap<String, u64>,
    /// Write commits: autocommit INSERT/UPDATE/DELETE, plus each COMMIT of an explicit
    /// transaction (none today).
    write_commits: u64,
    /// Read-only statements outside an explicit transaction (each its own transaction).
    read_transactions: u64,
    in_transaction: bool,
    /// The statements' first words, in order (shown with `IRIS_BENCH_SHOW_STATEMENTS=1`).
    log: Vec<String>,
}

impl SqlCounts {
    fn record(&mut self, sql: &str) {
        let upper = sql.trim_start().to_ascii_uppercase();
        let verb = upper.split_whitespace().next().unwrap_or("").to_string();
        let writes = match verb.as_str() {
            "INSERT" | "UPDATE" | "DELETE" | "REPLACE" => true,
            "WITH" => ["INSERT ", "UPDATE ", "DELETE "]
                .iter()
                .any(|w| upper.contains(w)),
            _ => false,
        };
        *self.by_verb.entry(verb.clone()).or_default() += 1;
        self.log
            .push(sql.split_whitespace().take(6).collect::<Vec<_>>().join(" "));
        match verb.as_str() {
            "BEGIN" => self.in_transaction = true,
            "COMMIT" | "END" => {
                self.in_transaction = false;
                self.write_commits += 1;
            }
            "ROLLBACK" => self.in_transaction = false,
            _ if self.in_transaction => {}
            _ if writes => self.write_commits += 1,
            _ => self.read_transactions += 1,
        }
    }

    fn statements(&self) -> u64 {
        self.by_verb.values().sum()
    }

    /// Adds `other`'s counts to these.
    fn add(&mut self, other: &SqlCounts) {
        for (verb, n) in &other.by_verb {
            *self.by_verb.entry(verb.clone()).or_default() += n;
        }
        self.write_commits += other.write_commits;
        self.read_transactions += other.read_transactions;
    }
}

/// A tracing layer that feeds every `sqlx::query` event into [`SqlCounts`].
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
        if event.metadata().target() != "sqlx::query" {
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

async fn close(store: &Store) {
    match store {
        Store::Sqlite(s) => s.pool().close().await,
        Store::Postgres(p) => p.pool().close().await,
    }
}

// ---------------------------------------------------------------- one engine

struct Report {
    engine: &'static str,
    cycles: usize,
    elapsed: Duration,
    cycle: Vec<Duration>,
    halt: Vec<Duration>,
    approve: Vec<Duration>,
    resume: Vec<Duration>,
    /// Counted over warm-up and measured cycles together.
    sql: SqlCounts,
    /// The same, per phase: halt, approve, execute + resume.
    phases: [SqlCounts; 3],
    counted_cycles: usize,
    /// PostgreSQL: committed transactions per cycle from `pg_stat_database`.
    pg_xact_per_cycle: Option<f64>,
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

/// Runs warm-up plus `cycles` cycles on the store at `url`.
async fn run_engine(
    engine: &'static str,
    url: &str,
    cycles: usize,
    counter: &SqlCounter,
    pg: Option<(&str, &str)>,
) -> Report {
    // PostgreSQL: what merely connecting costs (the migrator's check), to subtract later.
    let mut pg_before = None;
    if let Some((admin, name)) = pg {
        close(
            &Store::connect(url)
                .await
                .expect("first connect (migrations)"),
        )
        .await;
        let b1 = settled_xact_commit(admin, name).await;
        close(&Store::connect(url).await.expect("second connect")).await;
        let b2 = settled_xact_commit(admin, name).await;
        pg_before = Some((b2, b2 - b1));
    }

    let store = Store::connect(url).await.expect("connecting the store");
    let store_arc = Arc::new(store.clone());
    let governance = Governance {
        queue: store_arc.clone(),
        ledger: store_arc.clone(),
        audit: store_arc.clone(),
        checkpoints: Some(store_arc.clone()),
        notifier: Arc::new(QuietNotifier),
        clock: Arc::new(SystemClock),
        ttl: Ttl::default(),
        enabled: true,
    };
    let plugin = Arc::new(NoopPlugin {
        manifest: Manifest::from_yaml(MANIFEST).expect("bench manifest"),
        executions: AtomicUsize::new(0),
    });
    let agent = Agent::new(
        Arc::new(BenchModel),
        vec![plugin.clone()],
        store_arc.clone(),
        Some(governance.clone()),
        Vec::new(),
    )
    .expect("agent");
    let actor = Actor {
        name: "bench".into(),
        scope: Scope::Control,
        surface: "cli".into(),
    };

    counter.take();
    let mut report = Report {
        engine,
        cycles,
        elapsed: Duration::ZERO,
        cycle: Vec::with_capacity(cycles),
        halt: Vec::with_capacity(cycles),
        approve: Vec::with_capacity(cycles),
        resume: Vec::with_capacity(cycles),
        sql: SqlCounts::default(),
        phases: Default::default(),
        counted_cycles: WARMUP + cycles,
        pg_xact_per_cycle: None,
    };
    let mut ids = Vec::with_capacity(WARMUP + cycles);
    let mut started = Instant::now();
    for i in 0..WARMUP + cycles {
        if i == WARMUP {
            started = Instant::now();
        }
        let t0 = Instant::now();
        let halted = agent
            .run_turn(None, &format!("drop record {i}"))
            .await
            .expect("run_turn");
        assert_eq!(halted.status, RunStatus::AwaitingApproval, "{halted:?}");
        let id = halted.approval_id.expect("approval id");
        let t1 = Instant::now();
        let mut shown = [counter.take(), SqlCounts::default(), SqlCounts::default()];
        let row = governance
            .respond_to_approval(&id, Decision::Approve, None, &actor)
            .await
            .expect("respond_to_approval");
        assert_eq!(row.status, ApprovalStatus::Approved);
        let t2 = Instant::now();
        shown[1] = counter.take();
        let resumed = agent
            .resume(&id)
            .await
            .expect("resume")
            .expect("this caller resumes");
        assert_eq!(resumed.status, RunStatus::Done, "{resumed:?}");
        let t3 = Instant::now();
        shown[2] = counter.take();
        if i == WARMUP && std::env::var_os("IRIS_BENCH_SHOW_STATEMENTS").is_some() {
            for (phase, counts) in ["halt", "approve", "execute + resume"].iter().zip(&shown) {
                println!("{engine} {phase}:");
                for line in &counts.log {
                    println!("    {line}");
                }
            }
        }
        for (total, phase) in report.phases.iter_mut().zip(&shown) {
            total.add(phase);
        }
        if i >= WARMUP {
            report.cycle.push(t3 - t0);
            report.halt.push(t1 - t0);
            report.approve.push(t2 - t1);
            report.resume.push(t3 - t2);
        }
        ids.push(id);
    }
    report.elapsed = started.elapsed();
    for phase in &report.phases {
        report.sql.add(phase);
    }
    counter.take();

    // Every cycle executed its pinned call exactly once, and the ledger says so.
    assert_eq!(plugin.executions.load(Ordering::SeqCst), WARMUP + cycles);
    for id in [&ids[0], &ids[ids.len() / 2], &ids[ids.len() - 1]] {
        let row = store.get(id).await.expect("get").expect("row");
        assert_eq!(row.execution, Execution::Executed, "{row:?}");
    }
    counter.take();

    close(&store).await;
    if let (Some((admin, name)), Some((before, connect_cost))) = (pg, pg_before) {
        let after = settled_xact_commit(admin, name).await;
        // Subtract the connect (migrator check) and the three verification reads above.
        let during = after - before - connect_cost - 3;
        report.pg_xact_per_cycle = Some(during as f64 / (WARMUP + cycles) as f64);
    }
    report
}

fn print(report: &Report) {
    let mut cycle = report.cycle.clone();
    cycle.sort();
    let sorted = |v: &Vec<Duration>| {
        let mut v = v.clone();
        v.sort();
        v
    };
    let (halt, approve, resume) = (
        sorted(&report.halt),
        sorted(&report.approve),
        sorted(&report.resume),
    );
    let per = |n: u64| n as f64 / report.counted_cycles as f64;
    println!("\n## {} ({} measured cycles)", report.engine, report.cycles);
    println!(
        "cycles/s {:.1} | cycle p50 {} ms | p99 {} ms | max {} ms",
        report.cycles as f64 / report.elapsed.as_secs_f64(),
        ms(percentile(&cycle, 0.50)),
        ms(percentile(&cycle, 0.99)),
        ms(*cycle.last().unwrap()),
    );
    for ((name, v), sql) in [
        ("halt (run_turn)", &halt),
        ("approve (respond_to_approval)", &approve),
        ("execute + resume (resume)", &resume),
    ]
    .into_iter()
    .zip(&report.phases)
    {
        println!(
            "  {name:<32} p50 {} ms | p99 {} ms | write commits {:.2} | reads {:.2} | {}",
            ms(percentile(v, 0.50)),
            ms(percentile(v, 0.99)),
            per(sql.write_commits),
            per(sql.read_transactions),
            sql.by_verb
                .iter()
                .map(|(verb, n)| format!("{verb} {:.2}", per(*n)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    println!(
        "statements per cycle {:.2}: {}",
        per(report.sql.statements()),
        report
            .sql
            .by_verb
            .iter()
            .map(|(verb, n)| format!("{verb} {:.2}", per(*n)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "write commits per cycle {:.2} (autocommit INSERT/UPDATE/DELETE); read-only transactions {:.2}",
        per(report.sql.write_commits),
        per(report.sql.read_transactions)
    );
    if let Some(x) = report.pg_xact_per_cycle {
        println!("pg_stat_database.xact_commit per cycle {x:.2} (all committed transactions, read-only included)");
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("cycle benchmark: run it with `cargo bench -p server --bench cycle` (skipped)");
        return;
    }
    let counter = SqlCounter::default();
    tracing_subscriber::registry()
        .with(
            counter.clone().with_filter(
                tracing_subscriber::filter::Targets::new()
                    .with_target("sqlx::query", tracing::Level::TRACE),
            ),
        )
        .init();

    let cycles = std::env::var("IRIS_BENCH_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n: &usize| *n > 0)
        .unwrap_or(DEFAULT_CYCLES);
    let engines = std::env::var("IRIS_BENCH_ENGINES").unwrap_or_else(|_| "sqlite,postgres".into());
    println!(
        "IRIS cycle benchmark: halt → approve → execute → resume, {cycles} cycles after {WARMUP} warm-up, sequential, {} CPUs",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );

    if engines.contains("sqlite") {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("bench.db").display());
        let report = run_engine("SQLite (file, WAL)", &url, cycles, &counter, None).await;
        print(&report);
    }
    if engines.contains("postgres") {
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
        let report = run_engine(
            "PostgreSQL",
            &url,
            cycles,
            &counter,
            Some((admin.as_str(), name.as_str())),
        )
        .await;
        print(&report);
        drop(database);
    }
}
