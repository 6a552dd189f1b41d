//! The PostgreSQL engine: [`PgStore`] implements every storage trait of [`iris_core::ports`] over
//! one `sqlx::PgPool`, with the schema of `migrations/postgres/` (embedded, run on connect).
//!
//! Same tables, columns, rules and statements as the SQLite engine ([`crate::sqlite`]); the trait
//! implementations are shared (see `engine.rs`), so both engines behave alike by construction.
//! The schema's PL/pgSQL triggers refuse, in the database itself, any change to an approval's
//! request terms, a second response, a ledger entry that bypasses the claim rule, any delete
//! (or TRUNCATE) of approvals, ledger entries and checkpoints, and any update or delete of the
//! audit log, with the same messages as on SQLite (DESIGN §2, §6, §8).
//!
//! Conventions: timestamps are RFC 3339 UTC text with nanoseconds in "C"-collated columns
//! ([`crate::timestamp_text`]), exactly as on SQLite, so instants round-trip to the nanosecond
//! and text order is time order; JSON values are text. Under PostgreSQL's default isolation
//! (read committed) each compare-and-set statement (decide, claim, take-for-resume) waits for a
//! concurrent writer of the same row and then re-checks its `WHERE`, so exactly one wins.

use std::str::FromStr;
use std::time::Duration;

use iris_core::ports::StoreError;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions, PgRow};
use sqlx::{Connection, PgPool, Row};

use crate::engine::{impl_storage_traits, RowRead};

/// The embedded schema: every file of `migrations/postgres/`, in version order.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/postgres");

/// Connections in the pool.
const POOL_SIZE: u32 = 10;

/// How long a statement waits for a free connection of the pool before failing.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// Storage on PostgreSQL: the approval queue, ledger, audit log, checkpoints, conversations and
/// devices, in one database.
///
/// Cloning is cheap and shares the pool.
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
}

impl PgStore {
    /// Connects to the database at `url` (`postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`,
    /// or `postgresql://…`, with libpq-style query parameters such as `sslmode`) and brings its
    /// schema up to date. Unlike SQLite, the database itself must already exist.
    ///
    /// One connection is opened first, so an unreachable server, a refused login or a missing
    /// database fails at once with the server's reason (no retrying); the pool (10 connections)
    /// is opened after the migrations ran.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the url does not parse, the server cannot be reached or
    /// refuses the login, the database does not exist, or a migration fails. Messages never
    /// show the url's password.
    pub async fn connect(url: &str) -> Result<PgStore, StoreError> {
        let shown = redact_url(url);
        let options = PgConnectOptions::from_str(url)
            .map_err(|e| StoreError::Backend(format!("database url `{shown}`: {e}")))?;
        let mut conn = PgConnection::connect_with(&options).await.map_err(|e| {
            let hint = if e.to_string().contains("does not exist") {
                " (create the database first, e.g. `createdb NAME`)"
            } else {
                ""
            };
            StoreError::Backend(format!("connecting to PostgreSQL at `{shown}`: {e}{hint}"))
        })?;
        MIGRATOR
            .run(&mut conn)
            .await
            .map_err(|e| StoreError::Backend(format!("migrating the database: {e}")))?;
        conn.close()
            .await
            .map_err(|e| StoreError::Backend(format!("closing the migration connection: {e}")))?;
        let pool = PgPoolOptions::new()
            .max_connections(POOL_SIZE)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(|e| StoreError::Backend(format!("opening the pool for `{shown}`: {e}")))?;
        Ok(PgStore { pool })
    }

    /// The connection pool, for components that keep their own tables in the same database.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

/// `url` with its password (in the user part or a `password=` parameter) replaced by `***`, for
/// error messages.
pub(crate) fn redact_url(url: &str) -> String {
    let mut shown = url.to_owned();
    if let Some(scheme_end) = shown.find("://") {
        let rest = scheme_end + 3;
        let authority_end = shown[rest..]
            .find(['/', '?'])
            .map_or(shown.len(), |i| rest + i);
        if let Some(at) = shown[rest..authority_end].rfind('@') {
            let userinfo = rest..rest + at;
            if let Some(colon) = shown[userinfo.clone()].find(':') {
                shown.replace_range(rest + colon + 1..userinfo.end, "***");
            }
        }
    }
    if let Some(query_start) = shown.find('?') {
        let query: Vec<String> = shown[query_start + 1..]
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                _ => pair.to_owned(),
            })
            .collect();
        shown.replace_range(query_start + 1.., &query.join("&"));
    }
    shown
}

impl RowRead for PgRow {
    fn opt_string(&self, column: &str) -> Result<Option<String>, sqlx::Error> {
        self.try_get(column)
    }

    fn integer(&self, column: &str) -> Result<i64, sqlx::Error> {
        self.try_get(column)
    }

    fn opt_integer(&self, column: &str) -> Result<Option<i64>, sqlx::Error> {
        self.try_get(column)
    }

    /// Booleans are stored as `BOOLEAN`.
    fn boolean(&self, column: &str) -> Result<bool, String> {
        self.try_get(column).map_err(|e: sqlx::Error| e.to_string())
    }
}

impl_storage_traits!(PgStore);

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact_url("postgres://iris:s3cret@db.example:5432/iris?sslmode=require"),
            "postgres://iris:***@db.example:5432/iris?sslmode=require"
        );
        assert_eq!(
            redact_url("postgresql://iris@db/iris?password=s3cret&sslmode=disable"),
            "postgresql://iris@db/iris?password=***&sslmode=disable"
        );
        assert_eq!(
            redact_url("postgres://postgres@127.0.0.1:5432/postgres"),
            "postgres://postgres@127.0.0.1:5432/postgres"
        );
        assert_eq!(redact_url("postgres://a:b:c@h"), "postgres://a:***@h");
    }
}
