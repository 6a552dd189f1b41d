//! Opening a [`Store`]: the engine by the url's scheme (DESIGN §7 `IRIS_DATABASE_URL`), the
//! schema brought up to date, SQLite's durability (`IRIS_SQLITE_SYNCHRONOUS`).

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use iris_core::ports::StoreError;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use sqlx::{Connection, Executor, PgPool, SqlitePool};
use tokio::sync::broadcast;

use crate::unit::Writer;
use crate::{Engine, Store, TimeSource};

/// The embedded schemas: every file of `migrations/<engine>/` (core and plugins), in order.
static SQLITE_MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/sqlite");
static POSTGRES_MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/postgres");

/// How long a SQLite connection waits for another writer before failing (`busy_timeout`).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections in the pool of a SQLite file.
const SQLITE_POOL_SIZE: u32 = 8;
/// Connections in the pool of a PostgreSQL database.
const POSTGRES_POOL_SIZE: u32 = 10;
/// How long a statement waits for a free connection of the pool before failing.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// SQLite's `synchronous` in WAL mode (`IRIS_SQLITE_SYNCHRONOUS`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Synchronous {
    /// Every commit is flushed to the disk: survives a power cut (the default).
    #[default]
    Full,
    /// Commits are flushed at checkpoints: survives a crash of the process, not a power cut,
    /// which can lose the last commits.
    Normal,
}

impl Synchronous {
    /// Parses `full` / `normal` (any case).
    pub fn parse(text: &str) -> Option<Synchronous> {
        match text.to_ascii_lowercase().as_str() {
            "full" => Some(Synchronous::Full),
            "normal" => Some(Synchronous::Normal),
            _ => None,
        }
    }

    /// `full` or `normal`.
    pub fn as_str(self) -> &'static str {
        match self {
            Synchronous::Full => "full",
            Synchronous::Normal => "normal",
        }
    }
}

/// How to open a [`Store`].
#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
    /// SQLite's durability (ignored on PostgreSQL).
    pub synchronous: Synchronous,
    /// Where "now" comes from (the database's clock unless a test binds its own).
    pub time: TimeSource,
}

/// The engine's own pool, for libraries that need it (browser sessions).
#[derive(Debug, Clone)]
pub enum NativePool {
    /// SQLite.
    Sqlite(SqlitePool),
    /// PostgreSQL.
    Postgres(PgPool),
}

impl Store {
    /// Opens the database named by `url` with the default [`StoreOptions`].
    ///
    /// # Errors
    /// As [`Store::connect_with`].
    pub async fn connect(url: &str) -> Result<Store, StoreError> {
        Store::connect_with(url, StoreOptions::default()).await
    }

    /// Opens the database named by `url` (the value of `IRIS_DATABASE_URL`), choosing the engine
    /// by its scheme, and brings its schema up to date:
    ///
    /// - `sqlite://PATH` (the file and its folders are created when missing; WAL journal, 5 s
    ///   busy timeout, foreign keys on, `synchronous` from `options`, a pool of 8) or
    ///   `sqlite::memory:` (one private database on one connection that is never recycled);
    /// - `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE` (or `postgresql://`; the database
    ///   must exist; one connection is tried first so a refusal says why at once; a pool of 10).
    ///
    /// # Errors
    /// [`StoreError::Backend`] naming `IRIS_DATABASE_URL` for another scheme (showing the scheme
    /// only: the rest may hold a password), or when the database cannot be opened or migrated.
    /// Messages never show a password.
    pub async fn connect_with(url: &str, options: StoreOptions) -> Result<Store, StoreError> {
        sqlx::any::install_default_drivers();
        let (engine, pool, writer) = if url.starts_with("sqlite:") {
            let (pool, writer) = open_sqlite(url, options.synchronous).await?;
            (Engine::Sqlite, pool, writer)
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            (
                Engine::Postgres,
                open_postgres(url).await?,
                Writer::pooled(),
            )
        } else {
            let scheme = match url.split_once(':') {
                Some((scheme, _)) if !scheme.is_empty() => format!("`{scheme}:`"),
                _ => "no scheme".to_owned(),
            };
            return Err(StoreError::Backend(format!(
                "IRIS_DATABASE_URL must start with `sqlite:` (e.g. `sqlite://./data/iris.db`) or \
                 `postgres:` / `postgresql:` (e.g. `postgres://USER@HOST/DATABASE`); it has {scheme}"
            )));
        };
        let (feed, _) = broadcast::channel(1024);
        Ok(Store {
            pool,
            engine,
            url: Arc::from(url),
            time: options.time,
            writer: Arc::new(tokio::sync::Mutex::new(writer)),
            feed,
            locks: Arc::default(),
            commits: Arc::default(),
        })
    }

    /// The engine's own pool on the same database, opened anew (for browser sessions, whose
    /// library needs it). On `sqlite::memory:` this is a second, separate database.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when it cannot be opened.
    pub async fn native_pool(&self) -> Result<NativePool, StoreError> {
        match self.engine {
            Engine::Sqlite => {
                let options = SqliteConnectOptions::from_str(&self.url)
                    .map_err(|e| StoreError::Backend(format!("database url: {e}")))?
                    .busy_timeout(BUSY_TIMEOUT);
                let pool = SqlitePoolOptions::new()
                    .max_connections(2)
                    .connect_with(options)
                    .await
                    .map_err(|e| StoreError::Backend(format!("opening the database: {e}")))?;
                Ok(NativePool::Sqlite(pool))
            }
            Engine::Postgres => {
                let options = PgConnectOptions::from_str(&self.url).map_err(|e| {
                    StoreError::Backend(format!("database url `{}`: {e}", redact_url(&self.url)))
                })?;
                let pool = PgPoolOptions::new()
                    .max_connections(4)
                    .acquire_timeout(ACQUIRE_TIMEOUT)
                    .connect_with(options)
                    .await
                    .map_err(|e| StoreError::Backend(format!("opening a pool: {e}")))?;
                Ok(NativePool::Postgres(pool))
            }
        }
    }

    /// The database url this store was opened with (it may hold a password: never log it).
    pub(crate) fn url(&self) -> &str {
        &self.url
    }
}

/// Whether `url` names an in-memory database (`sqlite::memory:`, `sqlite://:memory:`,
/// `?mode=memory`).
fn is_memory_url(url: &str) -> bool {
    url.contains(":memory:") || url.contains("mode=memory")
}

/// The pool, and the writer: a connection of its own for a file, the pool's one connection for
/// an in-memory database.
/// The page size of a new SQLite file, in bytes (a file keeps the size it was made with). A
/// unit of work touches many b-trees (the row, its checkpoint, the audit log, the job, their
/// indexes) with small rows each, and every touched page is written whole to the WAL: 1 KiB
/// pages write a quarter of 4 KiB ones for the same rows, which the cycle benchmark shows as
/// about a fifth more cycles per second (BENCHMARKS.md).
const NEW_FILE_PAGE_SIZE: u32 = 1024;

async fn open_sqlite(
    url: &str,
    synchronous: Synchronous,
) -> Result<(sqlx::AnyPool, Writer), StoreError> {
    let in_memory = is_memory_url(url);
    let mut file = None;
    if !in_memory {
        // Create the folders and the file, and switch the file to WAL (a setting the file
        // keeps), with the engine's own driver, which can do both.
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|e| StoreError::Backend(format!("database url `{url}`: {e}")))?
            .create_if_missing(true)
            .page_size(NEW_FILE_PAGE_SIZE)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(BUSY_TIMEOUT);
        file = Some(options.get_filename().to_path_buf());
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
        let mut conn = sqlx::SqliteConnection::connect_with(&options)
            .await
            .map_err(|e| StoreError::Backend(format!("opening the database: {e}")))?;
        SQLITE_MIGRATOR
            .run(&mut conn)
            .await
            .map_err(|e| StoreError::Backend(format!("migrating the database: {e}")))?;
        conn.close()
            .await
            .map_err(|e| StoreError::Backend(format!("closing the migration connection: {e}")))?;
    }
    let pragmas = format!(
        "PRAGMA foreign_keys = ON; PRAGMA busy_timeout = {}; PRAGMA synchronous = {};",
        BUSY_TIMEOUT.as_millis(),
        synchronous.as_str().to_ascii_uppercase()
    );
    let pool_options = if in_memory {
        AnyPoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
    } else {
        AnyPoolOptions::new().max_connections(SQLITE_POOL_SIZE)
    };
    let connect_pragmas = pragmas.clone();
    let pool = pool_options
        .after_connect(move |conn, _| {
            let pragmas = connect_pragmas.clone();
            Box::pin(async move {
                conn.execute(pragmas.as_str()).await?;
                Ok(())
            })
        })
        .connect_with(any_options(url)?)
        .await
        .map_err(|e| StoreError::Backend(format!("opening the database: {e}")))?;
    if in_memory {
        SQLITE_MIGRATOR
            .run(&pool)
            .await
            .map_err(|e| StoreError::Backend(format!("migrating the database: {e}")))?;
        return Ok((pool, Writer::pooled()));
    }
    let file = file.expect("a SQLite file's path is read before it is opened");
    let writer_pragmas = format!(
        "{pragmas} PRAGMA wal_autocheckpoint = {};",
        crate::checkpoint::WRITER_AUTOCHECKPOINT_PAGES
    );
    let writer = crate::unit::open_writer(&file, &writer_pragmas)?;
    Ok((pool.clone(), Writer::dedicated(writer, synchronous, pool)))
}

async fn open_postgres(url: &str) -> Result<sqlx::AnyPool, StoreError> {
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
    POSTGRES_MIGRATOR
        .run(&mut conn)
        .await
        .map_err(|e| StoreError::Backend(format!("migrating the database: {e}")))?;
    conn.close()
        .await
        .map_err(|e| StoreError::Backend(format!("closing the migration connection: {e}")))?;
    AnyPoolOptions::new()
        .max_connections(POSTGRES_POOL_SIZE)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .connect_with(any_options(url)?)
        .await
        .map_err(|e| StoreError::Backend(format!("opening the pool for `{shown}`: {e}")))
}

/// `url` as `Any` connect options.
fn any_options(url: &str) -> Result<AnyConnectOptions, StoreError> {
    AnyConnectOptions::from_str(url)
        .map_err(|e| StoreError::Backend(format!("database url `{}`: {e}", redact_url(url))))
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
