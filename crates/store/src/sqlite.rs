//! The SQLite engine: [`SqliteStore`] implements every storage trait of [`iris_core::ports`] over
//! one `sqlx::SqlitePool`, with the schema of `migrations/sqlite/` (embedded, run on connect).
//!
//! Tables: `approvals` (the queue), `ledger` (side-effect ledger, one entry per approval),
//! `audit_log` (append-only), `checkpoints` (paused runs), `conversations` and
//! `conversation_lines`, `devices`, `telegram_cards` (which Telegram message shows which
//! approval). The schema's triggers refuse, in the database itself, any
//! change to an approval's request terms, a second response, any delete of an approval, and
//! any update or delete of the audit log (DESIGN §2, §6, §8).
//!
//! Conventions: timestamps are stored as RFC 3339 UTC text with a fixed nanosecond precision and a
//! `Z` suffix (see [`timestamp_text`]), so text order is time order in SQL; JSON values are stored
//! as text. Every compare-and-set (decide, claim, take-for-resume) is one SQL statement, so the
//! database serialises concurrent writers and exactly one of them wins. The trait
//! implementations (and their statements) are shared with the PostgreSQL engine
//! ([`crate::postgres`]); this module holds what is SQLite's own: opening the file, its pool,
//! its migrations and reading its rows.

use std::str::FromStr;
use std::time::Duration;

use iris_core::ports::StoreError;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow};
use sqlx::{Row, SqlitePool};

use crate::engine::{backend, impl_storage_traits, RowRead};

pub use crate::engine::timestamp_text;

/// The embedded schema: every file of `migrations/sqlite/` (core and plugins), in version order.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/sqlite");

/// How long a connection waits for another writer before failing (`busy_timeout`).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Connections in the pool of a file database.
const FILE_POOL_SIZE: u32 = 8;

/// Storage on SQLite: the approval queue, ledger, audit log, checkpoints, conversations and
/// devices, all in one database file (or one in-memory database).
///
/// Cloning is cheap and shares the pool.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating when missing) the database at `url` and brings its schema up to date.
    ///
    /// `url` is `sqlite://PATH` (the file and its parent directories are created when missing;
    /// WAL journal, 5 s busy timeout, foreign keys on, a pool of several connections) or
    /// `sqlite::memory:` (one private in-memory database held by a single connection that is
    /// never recycled, since each connection would otherwise see its own database).
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the url does not parse, the directory or file cannot be
    /// created, the database cannot be opened or a migration fails.
    pub async fn connect(url: &str) -> Result<SqliteStore, StoreError> {
        let in_memory = is_memory_url(url);
        let mut options = SqliteConnectOptions::from_str(url)
            .map_err(|e| StoreError::Backend(format!("database url `{url}`: {e}")))?
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let pool_options = if in_memory {
            SqlitePoolOptions::new()
                .max_connections(1)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
        } else {
            options = options
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal);
            if let Some(parent) = options.get_filename().parent() {
                if !parent.as_os_str().is_empty() {
                    tokio::fs::create_dir_all(parent).await.map_err(|e| {
                        StoreError::Backend(format!(
                            "creating the database directory `{}`: {e}",
                            parent.display()
                        ))
                    })?;
                }
            }
            SqlitePoolOptions::new().max_connections(FILE_POOL_SIZE)
        };
        let pool = pool_options
            .connect_with(options)
            .await
            .map_err(backend("opening the database"))?;
        MIGRATOR
            .run(&pool)
            .await
            .map_err(|e| StoreError::Backend(format!("migrating the database: {e}")))?;
        Ok(SqliteStore { pool })
    }

    /// The connection pool, for components that keep their own tables in the same database
    /// (the email plugin's local store, sessions).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }
}

/// Whether `url` names an in-memory database (`sqlite::memory:`, `sqlite://:memory:`,
/// `?mode=memory`).
fn is_memory_url(url: &str) -> bool {
    url.contains(":memory:") || url.contains("mode=memory")
}

impl RowRead for SqliteRow {
    fn opt_string(&self, column: &str) -> Result<Option<String>, sqlx::Error> {
        self.try_get(column)
    }

    fn integer(&self, column: &str) -> Result<i64, sqlx::Error> {
        self.try_get(column)
    }

    fn opt_integer(&self, column: &str) -> Result<Option<i64>, sqlx::Error> {
        self.try_get(column)
    }

    /// Booleans are stored as the integers 0 and 1; anything else is corrupt.
    fn boolean(&self, column: &str) -> Result<bool, String> {
        match self.try_get::<i64, _>(column) {
            Ok(0) => Ok(false),
            Ok(1) => Ok(true),
            Ok(other) => Err(format!("`{other}` is not 0 or 1")),
            Err(e) => Err(e.to_string()),
        }
    }
}

impl_storage_traits!(SqliteStore);
