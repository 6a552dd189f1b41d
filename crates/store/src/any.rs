//! The engine-neutral handle: [`Store`] is SQLite or PostgreSQL, chosen by the scheme of
//! `IRIS_DATABASE_URL` (DESIGN §7), and implements every storage trait of [`iris_core::ports`]
//! by delegating to the engine, so the server holds one type whatever the engine.

use chrono::{DateTime, Utc};
use iris_core::model::Message;
use iris_core::ports::{
    AuditLog, Checkpoint, CheckpointStore, ClaimOutcome, ConversationStore, Device, DeviceStore,
    Ledger, NewApproval, NewAuditEntry, PairingStore, QueueStore, Response, StoreError,
    TelegramCard, TelegramCardStore,
};
use iris_core::wire::{Approval, ApprovalStatus, AuditEntry, ChatLine};
use serde_json::Value;

use crate::postgres::PgStore;
use crate::sqlite::SqliteStore;

/// Storage on either engine. Both behave alike (same tables, rules, statements and results);
/// use [`Store::as_sqlite`] / [`Store::as_postgres`] for what only one engine has (its pool).
///
/// Cloning is cheap and shares the pool.
#[derive(Debug, Clone)]
pub enum Store {
    /// SQLite (`sqlite://PATH`, `sqlite::memory:`).
    Sqlite(SqliteStore),
    /// PostgreSQL (`postgres://…`, `postgresql://…`).
    Postgres(PgStore),
}

impl Store {
    /// Opens the database named by `url` (the value of `IRIS_DATABASE_URL`), choosing the engine
    /// by its scheme: `sqlite:` ([`SqliteStore::connect`]: the file is created when missing) or
    /// `postgres:` / `postgresql:` ([`PgStore::connect`]: the database must exist), and brings
    /// its schema up to date.
    ///
    /// # Errors
    /// [`StoreError::Backend`] naming `IRIS_DATABASE_URL` when the scheme is neither (the
    /// message shows the scheme only, never the rest of the url, which may hold a password);
    /// otherwise the engine's own errors.
    pub async fn connect(url: &str) -> Result<Store, StoreError> {
        if url.starts_with("sqlite:") {
            SqliteStore::connect(url).await.map(Store::Sqlite)
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            PgStore::connect(url).await.map(Store::Postgres)
        } else {
            let scheme = match url.split_once(':') {
                Some((scheme, _)) if !scheme.is_empty() => format!("`{scheme}:`"),
                _ => "no scheme".to_owned(),
            };
            Err(StoreError::Backend(format!(
                "IRIS_DATABASE_URL must start with `sqlite:` (e.g. `sqlite://./data/iris.db`) or \
                 `postgres:` / `postgresql:` (e.g. `postgres://USER@HOST/DATABASE`); it has {scheme}"
            )))
        }
    }

    /// The SQLite store, when this is SQLite.
    pub fn as_sqlite(&self) -> Option<&SqliteStore> {
        match self {
            Store::Sqlite(store) => Some(store),
            Store::Postgres(_) => None,
        }
    }

    /// The PostgreSQL store, when this is PostgreSQL.
    pub fn as_postgres(&self) -> Option<&PgStore> {
        match self {
            Store::Postgres(store) => Some(store),
            Store::Sqlite(_) => None,
        }
    }

    /// The engine's name: `sqlite` or `postgres` (for logs and status pages).
    pub fn engine(&self) -> &'static str {
        match self {
            Store::Sqlite(_) => "sqlite",
            Store::Postgres(_) => "postgres",
        }
    }
}

impl From<SqliteStore> for Store {
    fn from(store: SqliteStore) -> Store {
        Store::Sqlite(store)
    }
}

impl From<PgStore> for Store {
    fn from(store: PgStore) -> Store {
        Store::Postgres(store)
    }
}

/// Runs the same expression on whichever engine `self` holds.
macro_rules! delegate {
    ($self:ident, $store:ident => $call:expr) => {
        match $self {
            Store::Sqlite($store) => $call,
            Store::Postgres($store) => $call,
        }
    };
}

#[async_trait::async_trait]
impl QueueStore for Store {
    async fn insert(&self, row: &NewApproval) -> Result<(), StoreError> {
        delegate!(self, s => QueueStore::insert(s, row).await)
    }

    async fn get(&self, id: &str) -> Result<Option<Approval>, StoreError> {
        delegate!(self, s => QueueStore::get(s, id).await)
    }

    async fn list(&self, status: Option<ApprovalStatus>) -> Result<Vec<Approval>, StoreError> {
        delegate!(self, s => QueueStore::list(s, status).await)
    }

    async fn decide(&self, id: &str, response: &Response) -> Result<bool, StoreError> {
        delegate!(self, s => QueueStore::decide(s, id, response).await)
    }

    async fn lapsed(&self, now: DateTime<Utc>) -> Result<Vec<String>, StoreError> {
        delegate!(self, s => QueueStore::lapsed(s, now).await)
    }

    async fn link_checkpoint(&self, id: &str, checkpoint_id: &str) -> Result<(), StoreError> {
        delegate!(self, s => QueueStore::link_checkpoint(s, id, checkpoint_id).await)
    }

    async fn unresumed(&self) -> Result<Vec<String>, StoreError> {
        delegate!(self, s => QueueStore::unresumed(s).await)
    }

    async fn set_resume_error(&self, id: &str, error: Option<&str>) -> Result<(), StoreError> {
        delegate!(self, s => QueueStore::set_resume_error(s, id, error).await)
    }

    async fn preconditions(&self, id: &str) -> Result<Vec<Value>, StoreError> {
        delegate!(self, s => QueueStore::preconditions(s, id).await)
    }
}

#[async_trait::async_trait]
impl Ledger for Store {
    async fn claim(
        &self,
        approval_id: &str,
        tool: &str,
        args_canonical: &str,
        at: DateTime<Utc>,
    ) -> Result<ClaimOutcome, StoreError> {
        delegate!(self, s => Ledger::claim(s, approval_id, tool, args_canonical, at).await)
    }

    async fn finish(
        &self,
        approval_id: &str,
        executed: bool,
        result: &Value,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        delegate!(self, s => Ledger::finish(s, approval_id, executed, result, at).await)
    }

    async fn mark_unknown(&self) -> Result<Vec<String>, StoreError> {
        delegate!(self, s => Ledger::mark_unknown(s).await)
    }
}

#[async_trait::async_trait]
impl AuditLog for Store {
    async fn append(&self, entry: &NewAuditEntry) -> Result<(), StoreError> {
        delegate!(self, s => AuditLog::append(s, entry).await)
    }

    async fn entries(&self, approval_id: Option<&str>) -> Result<Vec<AuditEntry>, StoreError> {
        delegate!(self, s => AuditLog::entries(s, approval_id).await)
    }
}

#[async_trait::async_trait]
impl CheckpointStore for Store {
    async fn save(&self, checkpoint: &Checkpoint) -> Result<(), StoreError> {
        delegate!(self, s => CheckpointStore::save(s, checkpoint).await)
    }

    async fn take_for_resume(&self, approval_id: &str) -> Result<Option<Checkpoint>, StoreError> {
        delegate!(self, s => CheckpointStore::take_for_resume(s, approval_id).await)
    }

    async fn take_for_retry(&self, approval_id: &str) -> Result<Option<Checkpoint>, StoreError> {
        delegate!(self, s => CheckpointStore::take_for_retry(s, approval_id).await)
    }

    async fn conversation_of(&self, approval_id: &str) -> Result<Option<String>, StoreError> {
        delegate!(self, s => CheckpointStore::conversation_of(s, approval_id).await)
    }

    async fn finish_resume(&self, approval_id: &str) -> Result<(), StoreError> {
        delegate!(self, s => CheckpointStore::finish_resume(s, approval_id).await)
    }

    async fn interrupted(&self) -> Result<Vec<(String, i64)>, StoreError> {
        delegate!(self, s => CheckpointStore::interrupted(s).await)
    }

    async fn take_interrupted(
        &self,
        approval_id: &str,
        recoveries: i64,
    ) -> Result<Option<Checkpoint>, StoreError> {
        delegate!(self, s => CheckpointStore::take_interrupted(s, approval_id, recoveries).await)
    }
}

#[async_trait::async_trait]
impl ConversationStore for Store {
    async fn transcript(&self, conversation_id: &str) -> Result<Vec<Message>, StoreError> {
        delegate!(self, s => ConversationStore::transcript(s, conversation_id).await)
    }

    async fn save_transcript(
        &self,
        conversation_id: &str,
        messages: &[Message],
    ) -> Result<(), StoreError> {
        delegate!(self, s => ConversationStore::save_transcript(s, conversation_id, messages).await)
    }

    async fn append_line(&self, conversation_id: &str, line: &ChatLine) -> Result<(), StoreError> {
        delegate!(self, s => ConversationStore::append_line(s, conversation_id, line).await)
    }

    async fn lines(&self, conversation_id: &str) -> Result<Vec<ChatLine>, StoreError> {
        delegate!(self, s => ConversationStore::lines(s, conversation_id).await)
    }
}

#[async_trait::async_trait]
impl DeviceStore for Store {
    async fn add(&self, device: &Device, token_hash: &str) -> Result<(), StoreError> {
        delegate!(self, s => DeviceStore::add(s, device, token_hash).await)
    }

    async fn authenticate(
        &self,
        token_hash: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<Device>, StoreError> {
        delegate!(self, s => DeviceStore::authenticate(s, token_hash, at).await)
    }

    async fn is_live(&self, token_hash: &str) -> Result<bool, StoreError> {
        delegate!(self, s => DeviceStore::is_live(s, token_hash).await)
    }

    async fn list(&self) -> Result<Vec<Device>, StoreError> {
        delegate!(self, s => DeviceStore::list(s).await)
    }

    async fn revoke(&self, name: &str) -> Result<bool, StoreError> {
        delegate!(self, s => DeviceStore::revoke(s, name).await)
    }
}

#[async_trait::async_trait]
impl PairingStore for Store {
    async fn create_pairing(
        &self,
        code_hash: &str,
        link: &iris_core::pairing::PairingLink,
    ) -> Result<(), StoreError> {
        delegate!(self, s => PairingStore::create_pairing(s, code_hash, link).await)
    }

    async fn pairing(
        &self,
        code_hash: &str,
    ) -> Result<Option<iris_core::pairing::PairingLink>, StoreError> {
        delegate!(self, s => PairingStore::pairing(s, code_hash).await)
    }

    async fn redeem_pairing(
        &self,
        code_hash: &str,
        device_name: &str,
        token_hash: &str,
        at: DateTime<Utc>,
    ) -> Result<iris_core::pairing::Redemption, StoreError> {
        delegate!(self, s => PairingStore::redeem_pairing(s, code_hash, device_name, token_hash, at).await)
    }
}

#[async_trait::async_trait]
impl TelegramCardStore for Store {
    async fn claim_telegram_card(
        &self,
        chat_id: i64,
        approval_id: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        delegate!(self, s => TelegramCardStore::claim_telegram_card(s, chat_id, approval_id, at).await)
    }

    async fn release_telegram_card(
        &self,
        chat_id: i64,
        approval_id: &str,
    ) -> Result<(), StoreError> {
        delegate!(self, s => TelegramCardStore::release_telegram_card(s, chat_id, approval_id).await)
    }

    async fn release_unsent_telegram_cards(&self, chat_id: i64) -> Result<Vec<String>, StoreError> {
        delegate!(self, s => TelegramCardStore::release_unsent_telegram_cards(s, chat_id).await)
    }

    async fn record_telegram_card(&self, card: &TelegramCard) -> Result<(), StoreError> {
        delegate!(self, s => TelegramCardStore::record_telegram_card(s, card).await)
    }

    async fn telegram_card(
        &self,
        chat_id: i64,
        approval_id: &str,
    ) -> Result<Option<TelegramCard>, StoreError> {
        delegate!(self, s => TelegramCardStore::telegram_card(s, chat_id, approval_id).await)
    }

    async fn unsent_telegram_cards(
        &self,
        chat_id: i64,
        now: DateTime<Utc>,
    ) -> Result<Vec<String>, StoreError> {
        delegate!(self, s => TelegramCardStore::unsent_telegram_cards(s, chat_id, now).await)
    }

    async fn unsettled_telegram_cards(
        &self,
        chat_id: i64,
    ) -> Result<Vec<TelegramCard>, StoreError> {
        delegate!(self, s => TelegramCardStore::unsettled_telegram_cards(s, chat_id).await)
    }
}
