//! IRIS email plugin: the first real destructive tool (DESIGN §5).
//!
//! - [`EmailPlugin`] implements [`iris_core::plugin::Plugin`] for the tools of `manifest.yaml`
//!   (`search_inbox`, `list_by_category`, `trash_email`, `trash_category`, `restore_email`,
//!   `send_email`), dispatching each verb to the tool's module
//!   in [`tools`].
//! - [`backend`] holds the provider side: the [`MailBackend`] trait (shaped for Maildir, IMAP
//!   and Gmail), [`MaildirBackend`] for a real Maildir++ folder and [`ImapBackend`] for an IMAP
//!   server.
//! - The local store (tables `email_messages` and `email_trashed` in the project's database,
//!   SQLite or PostgreSQL: migrations `migrations/sqlite/0002_email.sql` and
//!   `migrations/postgres/0002_email.sql`, run by [`iris_store::Store::connect`]) holds the
//!   synced headers searches and cards read, and the trashed ledger restore uses;
//!   [`EmailPlugin::sync`] brings it in line with the mailboxes, incrementally where the
//!   provider reports folder marks (IMAP; table `email_sync_state`, migration 0012). The code:
//!   `store/` (the local store's reads and writes), `sync.rs` (one account's sync),
//!   `sync_state.rs` (the folder marks), [`parse`] (a raw RFC 5322 message into the header
//!   facts the store keeps).
//! - [`progress`] is how far the sync has come, and the gate tools wait at until the first one
//!   ends (the server listens before it: docs/liveness.md "start-up").
//! - [`outbox`] is where `send_email` hands mail (SMTP, or the demo outbox).
//! - [`id`] is the email id rule; [`category`] the triage rules, category paths and synonyms
//!   (`selection.rs` turns an owner's word into the messages it covers); [`demo`] writes the demo
//!   mailbox (`iris serve --demo`).
//!
//! Trash is always a move into the account's Trash, never a delete: the contract test
//! `tests/it/trash_is_reversible.rs` proves it on real files (DESIGN §4, last rule).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use iris_core::manifest::{Manifest, ManifestError};
use iris_core::plugin::{
    CallContext, Description, Hold, ItemOutcome, Plugin, ToolError, ToolOutput, UndoCall,
};
use iris_core::ports::{Clock, SystemClock};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub mod backend;
pub mod category;
pub mod demo;
pub mod id;
pub mod outbox;
pub mod parse;
pub mod progress;
mod selection;
mod store;
pub use store::SYNC_CHUNK;
mod sync;
mod sync_state;
pub mod tools;

pub use backend::{
    AccountInfo, Appended, BackendError, ImapBackend, ImapSettings, MailBackend, MaildirBackend,
};
pub use category::Category;
pub use outbox::Outbox;
pub use sync::{AccountSync, SyncReport};

/// The manifest, as shipped (`plugins/email/manifest.yaml`).
pub const MANIFEST_YAML: &str = include_str!("../manifest.yaml");

/// One configured mail account (`[[email.accounts]]` in `iris.toml`, DESIGN §7), in the fixed
/// order used to choose a sender.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountConfig {
    /// The account's name; part of every email id, so renaming an account renames its ids.
    pub name: String,
    /// The owner's address at this account.
    pub address: String,
    /// Where the mail lives.
    #[serde(flatten)]
    pub kind: AccountKind,
}

/// The backend of an account: `kind = "maildir"` with `path`, or `kind = "imap"` with `host`,
/// `port`, `user`, `password_env` (DESIGN §7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[non_exhaustive]
pub enum AccountKind {
    /// A Maildir++ folder on this machine.
    Maildir {
        /// The Maildir root (the folder holding INBOX's `cur/`).
        path: PathBuf,
    },
    /// An IMAP server (see [`backend::imap`] for the connection rules: plain TCP to loopback
    /// only, implicit TLS on 993 otherwise).
    Imap {
        /// The server's host name or address.
        host: String,
        /// Its port (993 for implicit TLS; any for loopback).
        port: u16,
        /// The login name.
        user: String,
        /// The environment variable holding the password.
        password_env: String,
    },
}

/// Why the plugin could not be built or synced.
#[derive(Debug, thiserror::Error)]
pub enum EmailError {
    /// The embedded manifest was refused by the loader (a build defect).
    #[error("email manifest refused: {0}")]
    Manifest(#[from] ManifestError),
    /// Two accounts share a name, or a name is empty (ids are derived from the name).
    #[error("email account name `{0}` is empty or used twice: each account needs its own name, email ids are derived from it")]
    AccountName(String),
    /// An account's backend could not be opened.
    #[error("email account `{account}`: {source}")]
    Backend {
        /// The account.
        account: String,
        /// The cause.
        #[source]
        source: BackendError,
    },
    /// The local store failed (are the migrations of `migrations/sqlite` or
    /// `migrations/postgres` applied? [`iris_store::Store::connect`] runs them).
    #[error("email local store (tables email_messages, email_trashed from 0002_email.sql): {0}")]
    Store(#[from] sqlx::Error),
    /// The lock on the mailboxes could not be taken (the database is unreachable).
    #[error("email sync: {0}")]
    Lock(String),
}

/// The email plugin: manifest, accounts, local store.
pub struct EmailPlugin {
    manifest: Manifest,
    backends: Vec<Arc<dyn MailBackend>>,
    store: store::LocalStore,
    clock: Arc<dyn Clock>,
    /// The project's store, for the lock that serialises sync, trash and restore: a sync that
    /// lists a folder while a trash moves a file out of it could otherwise put the trashed
    /// message back into the local store. Held across every server on the database (an
    /// advisory lock on PostgreSQL, DESIGN §9).
    database: iris_store::Store,
    /// Where `send_email` hands mail (`None`: sending is refused at normalise).
    outbox: Option<Outbox>,
    /// `IRIS_EMAIL_DEFAULT_SENDER`: an account name or address.
    default_sender: Option<String>,
    /// How far the syncs have come; tools wait on it until the first one ends.
    progress: Arc<progress::SyncProgress>,
}

impl std::fmt::Debug for EmailPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmailPlugin")
            .field("plugin", &self.manifest.plugin)
            .field("backends", &self.backends)
            .finish_non_exhaustive()
    }
}

impl EmailPlugin {
    /// Builds the plugin for configured accounts over the project's database, SQLite or
    /// PostgreSQL: `store` as opened by [`iris_store::Store::connect`], which also runs this
    /// plugin's migration. The plugin keeps a clone of the store's pool (cheap, shared). Does
    /// not sync: call [`EmailPlugin::sync`].
    ///
    /// # Errors
    /// [`EmailError::AccountName`] for an empty or repeated name; [`EmailError::Backend`] when a
    /// Maildir path is not a Maildir (no `cur/`), or an IMAP account would connect in plain text
    /// to a non-loopback host or its password variable is unset; [`EmailError::Manifest`] never in a released
    /// build.
    pub fn new(
        accounts: Vec<AccountConfig>,
        store: &iris_store::Store,
    ) -> Result<Self, EmailError> {
        let mut backends: Vec<Arc<dyn MailBackend>> = Vec::with_capacity(accounts.len());
        for a in accounts {
            let info = AccountInfo {
                name: a.name.clone(),
                address: a.address,
            };
            match a.kind {
                AccountKind::Maildir { path } => {
                    let b =
                        MaildirBackend::open(info, path).map_err(|source| EmailError::Backend {
                            account: a.name.clone(),
                            source,
                        })?;
                    backends.push(Arc::new(b));
                }
                AccountKind::Imap {
                    host,
                    port,
                    user,
                    password_env,
                } => {
                    let settings = backend::ImapSettings {
                        host,
                        port,
                        user,
                        password_env,
                    };
                    let b = backend::ImapBackend::open(info, settings).map_err(|source| {
                        EmailError::Backend {
                            account: a.name.clone(),
                            source,
                        }
                    })?;
                    backends.push(Arc::new(b));
                }
            }
        }
        Self::with_backends(backends, store)
    }

    /// Builds the plugin over ready backends (other providers, test doubles) and the project's
    /// database (see [`EmailPlugin::new`]).
    ///
    /// # Errors
    /// As [`EmailPlugin::new`].
    pub fn with_backends(
        backends: Vec<Arc<dyn MailBackend>>,
        store: &iris_store::Store,
    ) -> Result<Self, EmailError> {
        let mut names: Vec<&str> = Vec::new();
        for b in &backends {
            let name = b.account().name.as_str();
            if name.trim().is_empty() || names.contains(&name) {
                return Err(EmailError::AccountName(name.to_string()));
            }
            names.push(name);
        }
        Ok(EmailPlugin {
            manifest: Manifest::from_yaml(MANIFEST_YAML)?,
            backends,
            store: store::LocalStore::new(store::Db::of(store)),
            clock: Arc::new(SystemClock),
            database: store.clone(),
            outbox: None,
            default_sender: None,
            progress: Arc::new(progress::SyncProgress::default()),
        })
    }

    /// Replaces the clock (`since_days` windows, ledger times); tests pin it.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Sets where `send_email` hands mail: [`Outbox::smtp`] from `IRIS_SMTP_URL`, or
    /// [`Outbox::demo`] for `iris serve --demo`. Without one, `send_email` is refused (DESIGN §5,
    /// fail closed).
    pub fn with_outbox(mut self, outbox: Outbox) -> Self {
        self.outbox = Some(outbox);
        self
    }

    /// Sets `IRIS_EMAIL_DEFAULT_SENDER` (an account name or address): the sender of a
    /// `send_email` that names no `from` and replies to nothing (DESIGN §5). One naming no
    /// account makes such a call refused.
    pub fn with_default_sender(mut self, sender: impl Into<String>) -> Self {
        let sender = sender.into();
        self.default_sender = (!sender.trim().is_empty()).then(|| sender.trim().to_string());
        self
    }

    pub(crate) fn outbox(&self) -> Option<&Outbox> {
        self.outbox.as_ref()
    }

    pub(crate) fn default_sender(&self) -> Option<&str> {
        self.default_sender.as_deref()
    }

    /// The accounts, in configuration order.
    pub fn accounts(&self) -> Vec<AccountInfo> {
        self.backends.iter().map(|b| b.account().clone()).collect()
    }

    /// Scans every account and brings the local store in line (see `sync.rs`: insert new, drop
    /// vanished, keyed by provider key). Run at start-up and whenever the mailbox may have
    /// changed. A malformed or unreadable message never stops it: the report names it.
    ///
    /// # Errors
    /// [`EmailError::Store`] when the database fails (nothing else aborts a sync).
    pub async fn sync(&self) -> Result<SyncReport, EmailError> {
        let guard = self.lock().await.map_err(EmailError::Lock)?;
        self.progress.started();
        let mut report = SyncReport::default();
        for b in &self.backends {
            match sync::sync_account(&self.store, b.as_ref(), self.now(), &self.progress).await {
                Ok(account) => report.accounts.push(account),
                Err(e) => {
                    self.progress.ended(Err(e.to_string()));
                    guard.release().await;
                    return Err(e.into());
                }
            }
        }
        self.progress
            .ended(Ok(report.accounts.iter().map(|a| a.messages).sum()));
        guard.release().await;
        Ok(report)
    }

    /// How far the syncs have come ([`progress::Progress`]).
    pub fn progress(&self) -> progress::Progress {
        self.progress.now()
    }

    /// Waits for the first sync, at most [`progress::TOOL_WAIT`]: every tool reads the local
    /// store, and half a mailbox must not answer as if it were whole.
    async fn synced(&self, tool: &str) -> Result<(), ToolError> {
        self.progress
            .ready(progress::TOOL_WAIT)
            .await
            .map_err(|reason| ToolError::Failed {
                tool: tool.to_string(),
                reason,
            })
    }

    pub(crate) fn store(&self) -> &store::LocalStore {
        &self.store
    }

    pub(crate) fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// Takes the lock on the plugin's mailboxes and local store (on every server,
    /// [`mail_changes_lock`]).
    ///
    /// # Errors
    /// A sentence when the database cannot be reached to take it (nothing was changed).
    pub(crate) async fn lock(&self) -> Result<iris_store::LockGuard, String> {
        self.database
            .lock(&mail_changes_lock())
            .await
            .map_err(|e| format!("taking the mailbox lock: {e}"))
    }

    /// `held` (the mailbox lock the core took with `Plugin::hold`), or the lock taken now.
    ///
    /// # Errors
    /// As [`EmailPlugin::lock`].
    pub(crate) async fn held_or_lock(
        &self,
        held: Option<iris_store::LockGuard>,
    ) -> Result<iris_store::LockGuard, String> {
        match held {
            Some(guard) => Ok(guard),
            None => self.lock().await,
        }
    }

    /// Each account's name and whether its backend reports provider buckets, in order.
    pub(crate) fn accounts_with_buckets(&self) -> Vec<(String, bool)> {
        self.backends
            .iter()
            .map(|b| (b.account().name.clone(), b.reports_buckets()))
            .collect()
    }

    pub(crate) fn backend(&self, account: &str) -> Option<&Arc<dyn MailBackend>> {
        self.backends.iter().find(|b| b.account().name == account)
    }
}

#[async_trait]
impl Plugin for EmailPlugin {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// A step of a turn in mail's words (docs/adr/0123-how-a-card-came-about.md).
    fn step_sentence(&self, tool: &str, args: &Value, result: &Value) -> Option<String> {
        Some(match tool {
            tools::search_inbox::NAME => tools::search_inbox::step(args, result),
            tools::list_by_category::NAME => tools::list_by_category::step(args, result),
            tools::trash_category::NAME => tools::trash_category::step(args, result),
            tools::trash_email::NAME => tools::trash_email::step(result),
            tools::restore_email::NAME => tools::restore_email::step(result),
            tools::send_email::NAME => tools::send_email::step(result),
            _ => return None,
        })
    }

    /// An email of a result: "the email 'Payment overdue'".
    fn source_name(&self, _tool: &str, record: &Value) -> Option<String> {
        tools::source_name(record)
    }

    /// Every email tool needs a mail account; without one none is offered, and an approved
    /// call whose accounts have gone says so instead of "stale".
    fn available(&self, _tool: &str) -> Result<(), String> {
        if self.backends.is_empty() {
            return Err(
                "no mail account is configured (set IRIS_MAILDIR or add [[email.accounts]] to iris.toml)"
                    .into(),
            );
        }
        Ok(())
    }

    async fn normalise(
        &self,
        tool: &str,
        args: Value,
        ctx: &CallContext,
    ) -> Result<Value, ToolError> {
        if tool == tools::send_email::NAME {
            // Its reply_to_id is looked up in the local store.
            self.synced(tool).await?;
        }
        match tool {
            tools::send_email::NAME => tools::send_email::normalise(self, &args, ctx).await,
            tools::search_inbox::NAME => tools::search_inbox::normalise(&args),
            tools::trash_email::NAME => tools::trash_email::normalise(&args),
            tools::restore_email::NAME => tools::restore_email::normalise(&args),
            tools::list_by_category::NAME => tools::list_by_category::normalise(&args),
            tools::trash_category::NAME => tools::trash_category::normalise(&args),
            other => Err(ToolError::UnknownTool(other.to_string())),
        }
    }

    async fn describe(
        &self,
        tool: &str,
        args: &Value,
        ctx: &CallContext,
    ) -> Result<Description, ToolError> {
        self.synced(tool).await?;
        match tool {
            tools::search_inbox::NAME => tools::search_inbox::describe(args),
            tools::trash_email::NAME => tools::trash_email::describe(self, args).await,
            tools::restore_email::NAME => {
                tools::restore_email::describe(self, args, &ctx.conversation_id).await
            }
            tools::list_by_category::NAME => tools::list_by_category::describe(args),
            tools::trash_category::NAME => tools::trash_category::describe(args),
            tools::send_email::NAME => tools::send_email::describe(self, args).await,
            other => Err(ToolError::UnknownTool(other.to_string())),
        }
    }

    async fn execute(
        &self,
        tool: &str,
        args: &Value,
        ctx: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        self.synced(tool).await?;
        // The conversation is where "undo that" looks for the last action (DESIGN §5).
        let conversation = ctx.conversation_id.as_str();
        match tool {
            tools::search_inbox::NAME => tools::search_inbox::execute(self, args).await,
            tools::trash_email::NAME => {
                tools::trash_email::execute(self, args, conversation, None).await
            }
            tools::restore_email::NAME => {
                tools::restore_email::execute(self, args, conversation, None).await
            }
            tools::list_by_category::NAME => tools::list_by_category::execute(self, args).await,
            tools::trash_category::NAME => {
                tools::trash_category::execute(self, args, conversation, None).await
            }
            tools::send_email::NAME => tools::send_email::execute(self, args, conversation).await,
            other => Err(ToolError::UnknownTool(other.to_string())),
        }
    }

    /// Each account's messages, or how far the first sync has come: "synced 42,000 of 100,000
    /// new messages".
    async fn status(&self) -> Vec<String> {
        let p = self.progress.now();
        let mut lines = Vec::new();
        if p.running && p.total > 0 {
            lines.push(format!(
                "Syncing: synced {} of {} new messages.",
                progress::thousands(p.done),
                progress::thousands(p.total)
            ));
        } else if !p.first_done {
            lines.push("The first mail sync has not ended yet.".to_string());
        }
        if p.first_done {
            lines.push(format!(
                "{} messages in the local store.",
                progress::thousands(p.messages)
            ));
        }
        if let Some(e) = p.failed {
            lines.push(format!("The last sync failed ({e}); it is retried."));
        }
        lines
    }

    /// `trash_email`'s undo: `restore_email` for the ids it trashed; other tools have none.
    fn undo_call(&self, tool: &str, outcomes: &[ItemOutcome]) -> Option<UndoCall> {
        match tool {
            tools::trash_email::NAME => tools::trash_email::undo_call(outcomes),
            _ => None,
        }
    }

    /// `trash_email` pins where each message was (staleness); other tools pin none.
    async fn check_precondition(
        &self,
        tool: &str,
        item: &str,
        precondition: &Value,
        _ctx: &CallContext,
    ) -> bool {
        match tool {
            tools::trash_email::NAME => {
                tools::trash_email::check_precondition(self, item, precondition).await
            }
            _ => true,
        }
    }

    async fn execute_skipping(
        &self,
        tool: &str,
        args: &Value,
        stale: &[String],
        ctx: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        match tool {
            tools::trash_email::NAME => {
                tools::trash_email::execute_skipping(self, args, stale, &ctx.conversation_id, None)
                    .await
            }
            other => Err(ToolError::Failed {
                tool: other.to_string(),
                reason:
                    "this tool pins no preconditions, so no item can be stale; nothing was done"
                        .into(),
            }),
        }
    }

    /// Where the owner can see whether a call ran: the mail moves or is sent where they can look.
    fn how_to_check(&self, tool: &str) -> Option<String> {
        match tool {
            tools::trash_email::NAME | tools::trash_category::NAME => Some(
                "look in Trash: an email it moved is there, and can be put back from there".into(),
            ),
            tools::restore_email::NAME => {
                Some("look in the folders the emails came from, and in Trash".into())
            }
            tools::send_email::NAME => Some(
                "look in your Sent folder (or ask the recipient) before sending it again".into(),
            ),
            _ => None,
        }
    }

    /// The tools that change the mailboxes hold the mailbox lock (every server's), taken here
    /// before the core writes an undo's claim or starts a call's deadline.
    async fn hold(&self, tool: &str, wait: Duration) -> Result<Option<Hold>, ToolError> {
        match tool {
            tools::trash_email::NAME | tools::restore_email::NAME | tools::trash_category::NAME => {
                // The first sync holds the lock too; an approved call resumed at start-up waits
                // for it here, before its deadline, never runs on half a mailbox.
                self.progress
                    .ready(wait)
                    .await
                    .map_err(|reason| ToolError::Busy {
                        tool: tool.to_string(),
                        reason,
                    })?;
                self.database
                    .hold_for(
                        &mail_changes_lock(),
                        tool,
                        wait,
                        "the mailbox was busy with another change (a sync, a trash or a restore)",
                        "the mailbox lock",
                    )
                    .await
                    .map(Some)
            }
            _ => Ok(None),
        }
    }

    async fn execute_held(
        &self,
        tool: &str,
        args: &Value,
        stale: &[String],
        ctx: &CallContext,
        hold: Option<Hold>,
    ) -> Result<ToolOutput, ToolError> {
        let held = hold.and_then(Hold::into_inner::<iris_store::LockGuard>);
        self.synced(tool).await?;
        let conversation = ctx.conversation_id.as_str();
        match tool {
            tools::trash_email::NAME if !stale.is_empty() => {
                tools::trash_email::execute_skipping(self, args, stale, conversation, held).await
            }
            tools::trash_email::NAME => {
                tools::trash_email::execute(self, args, conversation, held).await
            }
            tools::restore_email::NAME => {
                tools::restore_email::execute(self, args, conversation, held).await
            }
            tools::trash_category::NAME => {
                tools::trash_category::execute(self, args, conversation, held).await
            }
            _ if stale.is_empty() => self.execute(tool, args, ctx).await,
            _ => self.execute_skipping(tool, args, stale, ctx).await,
        }
    }
}

/// The lock this plugin owns (`iris:mail-changes`): its changes (sync, trash, restore, a sent
/// copy) hold it, because its local store and the mailboxes must move together, on every server
/// of one database.
pub fn mail_changes_lock() -> iris_store::NamedLock {
    iris_store::NamedLock::new("mail", "changes")
}
