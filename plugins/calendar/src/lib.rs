//! IRIS calendar plugin: deleting calendar events under the same approval core as mail
//! (docs/DESIGN.md §4, ADR-0118 decision 1: "deleting a calendar event" is destructive).
//!
//! - [`CalendarPlugin`] implements [`iris_core::plugin::Plugin`] for the tools of
//!   `manifest.yaml` (`list_events`, `delete_events`, `restore_events`), dispatching each verb
//!   to the tool's module in [`tools`].
//! - [`backend`] holds the storage side: the [`CalendarBackend`] trait, shaped for CalDAV (hrefs,
//!   ETags, conditional deletes and creates), [`backend::CaldavBackend`] for any CalDAV server,
//!   and [`FolderBackend`], a local folder in the vdir layout (one `.ics` file per event).
//! - [`event`] reads an event resource (iCalendar, with the `icalendar` crate) into the facts a
//!   list entry and a card line show; [`id`] is the event id rule.
//! - [`demo`] writes the demo calendars (`iris serve --demo`).
//! - [`kept`] is the table of kept copies (`calendar_kept`, migration 0030): CalDAV has no
//!   trash, so what `delete_events` removes is kept byte for byte and `restore_events` puts it
//!   back.
//!
//! The core never learns a calendar word: it sees a manifest, card lines, items, preconditions
//! (each event's ETag) and an undo call.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
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
pub mod demo;
pub mod event;
pub mod id;
pub mod kept;
pub mod tools;

pub use backend::{BackendError, CalendarBackend, CalendarRef, FolderBackend, Resource};
use tools::delete_events::Precondition;

/// The manifest, as shipped (`plugins/calendar/manifest.yaml`).
pub const MANIFEST_YAML: &str = include_str!("../manifest.yaml");

/// One configured calendar account (`[[calendar.accounts]]` in `iris.toml`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccountConfig {
    /// The account's name; part of every event id.
    pub name: String,
    /// A local folder in the vdir layout: one calendar, or a folder of calendars.
    #[serde(default)]
    pub folder: Option<PathBuf>,
    /// A CalDAV calendar home or collection (`http://` only to loopback when a password is sent).
    #[serde(default)]
    pub url: Option<String>,
    /// The CalDAV login name.
    #[serde(default)]
    pub username: Option<String>,
    /// The environment variable holding the CalDAV password.
    #[serde(default)]
    pub password_env: Option<String>,
}

/// Why the plugin could not be built.
#[derive(Debug, thiserror::Error)]
pub enum CalendarError {
    /// The embedded manifest was refused by the loader (a build defect).
    #[error("calendar manifest refused: {0}")]
    Manifest(#[from] ManifestError),
    /// An account's configuration cannot be used; the message names the account and the rule.
    #[error("calendar account `{account}`: {reason}")]
    Account {
        /// The account.
        account: String,
        /// What is wrong.
        reason: String,
    },
}

/// One event resource found in an account, with what the plugin read of it.
#[derive(Debug, Clone)]
pub struct Found {
    /// Its id.
    pub id: String,
    /// The account.
    pub account: String,
    /// Its calendar.
    pub calendar: CalendarRef,
    /// The resource.
    pub resource: Resource,
    /// What it says.
    pub facts: event::EventFacts,
}

/// The calendar plugin: manifest, accounts, kept copies.
pub struct CalendarPlugin {
    manifest: Manifest,
    backends: Vec<Arc<dyn CalendarBackend>>,
    kept: kept::Kept,
    database: iris_store::Store,
    clock: Arc<dyn Clock>,
    /// The ETag each item's precondition check confirmed, by run and item: the delete is
    /// conditional on exactly that version (`If-Match`), never on one read later.
    checked: Mutex<HashMap<(String, String), Precondition>>,
    /// The owner's addresses, lower-case: an event they organize says "you organize".
    owner_addresses: Vec<String>,
}

impl std::fmt::Debug for CalendarPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CalendarPlugin")
            .field("backends", &self.backends)
            .finish_non_exhaustive()
    }
}

impl CalendarPlugin {
    /// Builds the plugin for configured accounts over the project's database (its migrations,
    /// this plugin's `calendar_kept` included, ran on connect).
    ///
    /// # Errors
    /// [`CalendarError::Account`] for an empty or repeated name, an account with neither or both
    /// of `folder` and `url`, a folder that is not one, a `url` that is not http(s) or would
    /// send a password in plain text to another machine, or a `password_env` that is unset.
    pub fn new(
        accounts: Vec<AccountConfig>,
        store: &iris_store::Store,
    ) -> Result<Self, CalendarError> {
        let mut backends: Vec<Arc<dyn CalendarBackend>> = Vec::new();
        for a in accounts {
            let bad = |reason: String| CalendarError::Account {
                account: a.name.clone(),
                reason,
            };
            match (&a.folder, &a.url) {
                (Some(folder), None) => {
                    let b = FolderBackend::open(a.name.clone(), folder.clone())
                        .map_err(|e| bad(e.to_string()))?;
                    backends.push(Arc::new(b));
                }
                (None, Some(url)) => {
                    let password = match &a.password_env {
                        Some(var) => Some(std::env::var(var).map_err(|_| {
                            bad(format!("password_env = {var:?}: that variable is not set"))
                        })?),
                        None => None,
                    };
                    if a.username.is_some() && password.is_none() {
                        return Err(bad(
                            "`username` needs `password_env`, the variable holding the password (never the password itself)".into(),
                        ));
                    }
                    let b = backend::CaldavBackend::open(
                        a.name.clone(),
                        backend::CaldavSettings {
                            url: url.clone(),
                            username: a.username.clone(),
                            password,
                        },
                    )
                    .map_err(|e| bad(e.to_string()))?;
                    backends.push(Arc::new(b));
                }
                _ => {
                    return Err(bad(
                        "give exactly one of `folder` (a local vdir folder) or `url` (CalDAV)"
                            .into(),
                    ))
                }
            }
        }
        Self::with_backends(backends, store)
    }

    /// Builds the plugin over ready backends (see [`CalendarPlugin::new`]).
    ///
    /// # Errors
    /// [`CalendarError::Account`] for an empty or repeated name.
    pub fn with_backends(
        backends: Vec<Arc<dyn CalendarBackend>>,
        store: &iris_store::Store,
    ) -> Result<Self, CalendarError> {
        let mut names: Vec<&str> = Vec::new();
        for b in &backends {
            let name = b.account();
            if name.trim().is_empty() || names.contains(&name) {
                return Err(CalendarError::Account {
                    account: name.to_string(),
                    reason: "each account needs a name of its own: event ids are derived from it"
                        .into(),
                });
            }
            names.push(name);
        }
        Ok(CalendarPlugin {
            manifest: Manifest::from_yaml(MANIFEST_YAML)?,
            backends,
            kept: kept::Kept::of(store),
            database: store.clone(),
            clock: Arc::new(SystemClock),
            checked: Mutex::new(HashMap::new()),
            owner_addresses: Vec::new(),
        })
    }

    /// Replaces the clock (kept copies' times); tests pin it.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The owner's addresses (e.g. the mail accounts'): an event whose `ORGANIZER` is one of
    /// them says "you organize" on its card. Compared without case.
    pub fn with_owner_addresses(mut self, addresses: impl IntoIterator<Item = String>) -> Self {
        self.owner_addresses = addresses
            .into_iter()
            .map(|a| a.trim().to_lowercase())
            .filter(|a| !a.is_empty())
            .collect();
        self
    }

    /// Whether `organizer` (an address, `mailto:` dropped) is the owner's.
    pub(crate) fn is_owner(&self, organizer: &str) -> bool {
        let organizer = organizer.trim().to_lowercase();
        self.owner_addresses.contains(&organizer)
    }

    /// The accounts' names, in configuration order.
    pub fn accounts(&self) -> Vec<String> {
        self.backends
            .iter()
            .map(|b| b.account().to_string())
            .collect()
    }

    pub(crate) fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// The kept copies (table `calendar_kept`): what a delete took and a restore puts back.
    pub fn kept(&self) -> &kept::Kept {
        &self.kept
    }

    pub(crate) fn backend(&self, account: &str) -> Option<&Arc<dyn CalendarBackend>> {
        self.backends.iter().find(|b| b.account() == account)
    }

    /// The display name of a calendar of `account` (its href when it cannot be listed).
    pub(crate) async fn calendar_name(&self, account: &str, href: &str) -> String {
        let Some(backend) = self.backend(account) else {
            return href.to_string();
        };
        match backend.calendars().await {
            Ok(cals) => cals
                .into_iter()
                .find(|c| c.href == href)
                .map_or_else(|| href.to_string(), |c| c.name),
            Err(_) => href.to_string(),
        }
    }

    /// Every event resource of every account, read (a series' first occurrence in `window` when
    /// one is given).
    ///
    /// # Errors
    /// [`ToolError::Failed`] naming the account when one cannot be read.
    pub async fn all_events(
        &self,
        tool: &str,
        window: Option<(DateTime<Utc>, DateTime<Utc>)>,
    ) -> Result<Vec<Found>, ToolError> {
        let mut out = Vec::new();
        for backend in &self.backends {
            let account = backend.account();
            let calendars = backend
                .calendars()
                .await
                .map_err(|e| tools::failed(tool, format!("calendar account `{account}`: {e}")))?;
            for calendar in calendars {
                let resources = backend.resources(&calendar).await.map_err(|e| {
                    tools::failed(
                        tool,
                        format!("calendar `{}` of `{account}`: {e}", calendar.name),
                    )
                })?;
                for resource in resources {
                    out.push(Found {
                        id: id::event_id(account, &calendar.href, &resource.href),
                        account: account.to_string(),
                        facts: event::EventFacts::parse_in(&resource.bytes, window),
                        calendar: calendar.clone(),
                        resource,
                    });
                }
            }
        }
        Ok(out)
    }

    fn checked_key(run: &str, item: &str) -> (String, String) {
        (run.to_string(), item.to_string())
    }

    pub(crate) fn remember_checked(&self, run: &str, item: &str, pinned: Precondition) {
        if let Ok(mut map) = self.checked.lock() {
            map.insert(Self::checked_key(run, item), pinned);
        }
    }

    pub(crate) fn take_checked(&self, run: &str, item: &str) -> Option<Precondition> {
        self.checked
            .lock()
            .ok()
            .and_then(|mut map| map.remove(&Self::checked_key(run, item)))
    }
}

#[async_trait]
impl Plugin for CalendarPlugin {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// A listing as a step of a turn (docs/adr/0123-how-a-card-came-about.md).
    fn step_sentence(&self, tool: &str, args: &Value, result: &Value) -> Option<String> {
        (tool == tools::list_events::NAME).then(|| tools::list_events::step(args, result))
    }

    /// An event of a result: "the event 'Board meeting'".
    fn source_name(&self, _tool: &str, record: &Value) -> Option<String> {
        let summary: String = record.get("summary")?.as_str()?.chars().take(80).collect();
        Some(format!("the event '{summary}'"))
    }

    /// Every calendar tool needs a calendar account.
    fn available(&self, _tool: &str) -> Result<(), String> {
        if self.backends.is_empty() {
            return Err(
                "no calendar account is configured (add [[calendar.accounts]] to iris.toml)".into(),
            );
        }
        Ok(())
    }

    async fn normalise(
        &self,
        tool: &str,
        args: Value,
        _ctx: &CallContext,
    ) -> Result<Value, ToolError> {
        match tool {
            tools::list_events::NAME => tools::list_events::normalise(&args),
            tools::delete_events::NAME => tools::delete_events::normalise(&args),
            tools::restore_events::NAME => tools::restore_events::normalise(&args),
            other => Err(ToolError::UnknownTool(other.to_string())),
        }
    }

    async fn describe(
        &self,
        tool: &str,
        args: &Value,
        _ctx: &CallContext,
    ) -> Result<Description, ToolError> {
        match tool {
            tools::list_events::NAME => tools::list_events::describe(args),
            tools::delete_events::NAME => tools::delete_events::describe(self, args).await,
            tools::restore_events::NAME => tools::restore_events::describe(args),
            other => Err(ToolError::UnknownTool(other.to_string())),
        }
    }

    async fn execute(
        &self,
        tool: &str,
        args: &Value,
        ctx: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        self.execute_held(tool, args, &[], ctx, None).await
    }

    /// `delete_events`' undo: `restore_events` for the ids it deleted.
    fn undo_call(&self, tool: &str, outcomes: &[ItemOutcome]) -> Option<UndoCall> {
        match tool {
            tools::delete_events::NAME => tools::delete_events::undo_call(outcomes),
            _ => None,
        }
    }

    /// After a crash, `delete_events` finds each event by its kept copy and the calendar; the
    /// other tools cannot tell.
    async fn locate(
        &self,
        tool: &str,
        _args: &Value,
        items: &[String],
        _preconditions: &[Value],
    ) -> Option<ToolOutput> {
        match tool {
            tools::delete_events::NAME => Some(tools::delete_events::locate(self, items).await),
            _ => None,
        }
    }

    /// `delete_events` pins each event's ETag (staleness); other tools pin none.
    async fn check_precondition(
        &self,
        tool: &str,
        item: &str,
        precondition: &Value,
        ctx: &CallContext,
    ) -> bool {
        match tool {
            tools::delete_events::NAME => {
                tools::delete_events::check_precondition(self, &ctx.run_id, item, precondition)
                    .await
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
        self.execute_held(tool, args, stale, ctx, None).await
    }

    /// Where the owner can see whether a call ran.
    fn how_to_check(&self, tool: &str) -> Option<String> {
        match tool {
            tools::delete_events::NAME => Some(
                "look for the events in your calendar app: one still there was not deleted".into(),
            ),
            tools::restore_events::NAME => Some("look for the events in your calendar app".into()),
            _ => None,
        }
    }

    /// Deletes and restores hold the calendar lock (every server's), so two never interleave.
    async fn hold(&self, tool: &str, wait: Duration) -> Result<Option<Hold>, ToolError> {
        match tool {
            tools::delete_events::NAME | tools::restore_events::NAME => self
                .database
                .hold_for(
                    &calendar_changes_lock(),
                    tool,
                    wait,
                    "the calendars were busy with another change",
                    "the calendar lock",
                )
                .await
                .map(Some),
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
        let conversation = ctx.conversation_id.as_str();
        let guard = match (
            tool,
            hold.and_then(Hold::into_inner::<iris_store::LockGuard>),
        ) {
            (tools::list_events::NAME, _) => None,
            (_, Some(guard)) => Some(guard),
            (_, None) => Some(
                self.database
                    .lock(&calendar_changes_lock())
                    .await
                    .map_err(|e| tools::failed(tool, format!("taking the calendar lock: {e}")))?,
            ),
        };
        let ran = match tool {
            tools::list_events::NAME => tools::list_events::execute(self, args).await,
            tools::delete_events::NAME => {
                tools::delete_events::execute(self, args, stale, &ctx.run_id, conversation).await
            }
            tools::restore_events::NAME => {
                tools::restore_events::execute(self, args, conversation).await
            }
            other => Err(ToolError::UnknownTool(other.to_string())),
        };
        if let Some(guard) = guard {
            guard.release().await;
        }
        ran
    }
}

/// The lock this plugin owns (`iris:calendar-changes`): its deletes and restores hold it, on
/// every server of one database, so a restore never races the delete it undoes.
pub fn calendar_changes_lock() -> iris_store::NamedLock {
    iris_store::NamedLock::new("calendar", "changes")
}
