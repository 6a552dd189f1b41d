//! Browser sessions (Devices, sessions, scopes): a paired browser holds only a random
//! session id in the cookie [`SESSION_COOKIE`] (HttpOnly, SameSite=Strict, Secure when the
//! server is reached over TLS, i.e. `IRIS_PUBLIC_URL` starts with `https://`); the session row,
//! in the same database as the approval queue (tower-sessions' SQL stores), names the device
//! ([`SessionDevice`]). Every request re-checks that device, so revoking it ends its sessions
//! at once.

use iris_store::{NativePool, Store};
use serde::{Deserialize, Serialize};
use tower_sessions::cookie::time::Duration;
use tower_sessions::cookie::SameSite;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, ExpiredDeletion, SessionStore};
use tower_sessions::{Expiry, SessionManagerLayer};
use tower_sessions_sqlx_store::{PostgresStore, SqliteStore};

/// Name of the browser's session cookie.
pub const SESSION_COOKIE: &str = "iris_session";

/// Session key holding the [`SessionDevice`].
pub const DEVICE_KEY: &str = "device";

/// A session lapses after this many days without a request (the paired browser then shows
/// "not paired" and needs a new link).
pub const SESSION_IDLE_DAYS: i64 = 30;

/// Which device a browser session belongs to. The token hash (never the token) is what the
/// device table is searched by, so a revoked device's sessions stop at their next request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionDevice {
    /// The device's name (as cards show who answered).
    pub name: String,
    /// Hex SHA-256 of the device's token, as in the device table.
    pub token_hash: String,
}

/// The session records on the server's own database engine.
#[derive(Debug, Clone)]
pub enum SessionRecords {
    /// Table `tower_sessions` in the SQLite file.
    Sqlite(SqliteStore),
    /// Table `tower_sessions.session` in the PostgreSQL database.
    Postgres(PostgresStore),
}

impl SessionRecords {
    /// The session records beside `store`'s tables (same database), with their table created
    /// when missing.
    ///
    /// # Errors
    /// The database's error when the session table cannot be created.
    pub async fn open(store: &Store) -> anyhow::Result<SessionRecords> {
        // The session library needs the engine's own pool (it is not written for sqlx's `Any`).
        let records = match store.native_pool().await? {
            NativePool::Sqlite(pool) => {
                let records = SqliteStore::new(pool);
                records.migrate().await?;
                SessionRecords::Sqlite(records)
            }
            NativePool::Postgres(pool) => {
                let records = PostgresStore::new(pool);
                records.migrate().await?;
                SessionRecords::Postgres(records)
            }
        };
        Ok(records)
    }

    /// The session layer: cookie [`SESSION_COOKIE`], HttpOnly, SameSite=Strict, whole site,
    /// `Secure` when `secure` (the server is reached over TLS), lapsing after
    /// [`SESSION_IDLE_DAYS`] without use.
    pub fn layer(&self, secure: bool) -> SessionManagerLayer<SessionRecords> {
        SessionManagerLayer::new(self.clone())
            .with_name(SESSION_COOKIE)
            .with_http_only(true)
            .with_same_site(SameSite::Strict)
            .with_secure(secure)
            .with_path("/")
            .with_expiry(Expiry::OnInactivity(Duration::days(SESSION_IDLE_DAYS)))
    }
}

#[async_trait::async_trait]
impl SessionStore for SessionRecords {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        match self {
            SessionRecords::Sqlite(s) => s.create(record).await,
            SessionRecords::Postgres(s) => s.create(record).await,
        }
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        match self {
            SessionRecords::Sqlite(s) => s.save(record).await,
            SessionRecords::Postgres(s) => s.save(record).await,
        }
    }

    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        match self {
            SessionRecords::Sqlite(s) => s.load(id).await,
            SessionRecords::Postgres(s) => s.load(id).await,
        }
    }

    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        match self {
            SessionRecords::Sqlite(s) => s.delete(id).await,
            SessionRecords::Postgres(s) => s.delete(id).await,
        }
    }
}

#[async_trait::async_trait]
impl ExpiredDeletion for SessionRecords {
    async fn delete_expired(&self) -> session_store::Result<()> {
        match self {
            SessionRecords::Sqlite(s) => s.delete_expired().await,
            SessionRecords::Postgres(s) => s.delete_expired().await,
        }
    }
}
