//! Counting the database's work: the statements of each phase, by verb (from their trace
//! events), and, on PostgreSQL, the committed transactions `pg_stat_database` reports.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::Connection;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::Context;
use tracing_subscriber::Layer;

// ---------------------------------------------------------------- counting statements

/// Statements sqlx ran, by verb (its trace events; the transactions' BEGIN and COMMIT are not
/// among them, so commits are counted by the store).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct SqlCounts {
    pub(crate) by_verb: BTreeMap<String, u64>,
    /// The statements' first words, in order (shown with `IRIS_BENCH_SHOW_STATEMENTS=1`).
    pub(crate) log: Vec<String>,
}

impl SqlCounts {
    fn record(&mut self, sql: &str) {
        let upper = sql.trim_start().to_ascii_uppercase();
        let verb = upper.split_whitespace().next().unwrap_or("").to_string();
        *self.by_verb.entry(verb).or_default() += 1;
        self.log
            .push(sql.split_whitespace().take(6).collect::<Vec<_>>().join(" "));
    }

    pub(crate) fn statements(&self) -> u64 {
        self.by_verb.values().sum()
    }

    /// Adds `other`'s counts to these.
    pub(crate) fn add(&mut self, other: &SqlCounts) {
        for (verb, n) in &other.by_verb {
            *self.by_verb.entry(verb.clone()).or_default() += n;
        }
    }
}

/// A tracing layer that feeds every statement's event (`sqlx::query`, the SQLite writer's
/// `iris_store::STATEMENT_TARGET`) into [`SqlCounts`].
#[derive(Clone, Default)]
pub(crate) struct SqlCounter(Arc<Mutex<SqlCounts>>);

impl SqlCounter {
    pub(crate) fn take(&self) -> SqlCounts {
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
pub(crate) async fn settled_xact_commit(admin_url: &str, name: &str) -> i64 {
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
