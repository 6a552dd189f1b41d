//! IRIS files plugin: moving files out of the way under the same approval core as mail
//! (docs/DESIGN.md §4, ADR-0118 decision 1: "overwriting or quarantining a file" is
//! destructive), and never deleting one silently (docs/adr/0067-files-quarantine.md).
//!
//! - [`FilesPlugin`] implements [`iris_core::plugin::Plugin`] for the tools of `manifest.yaml`
//!   (`list_files`, `quarantine_files`, `restore_files`, `list_quarantine`,
//!   `purge_quarantine`), dispatching each verb to the tool's module in [`tools`].
//! - [`id`] is the entry id rule (`ROOT/relative/path`, percent-encoded where not UTF-8).
//! - [`root`] holds every file-system call, through descriptors beneath the root's
//!   (`openat2` `RESOLVE_BENEATH`, `renameat2` `RENAME_NOREPLACE`, fsync of both folders).
//! - [`entry`] is what a card pins of an entry ([`entry::Pin`]) and how it is read.
//! - [`journal`] is the table of moves (`files_journal`, migration 0031), written before each
//!   move, so a crash leaves a row saying where to look.
//! - [`demo`] writes the demo folder (`iris serve --demo`).
//! - `tests/` holds the contract tests (ADR-0067: quarantining deletes nothing, restoring
//!   brings each entry back as it was) on real folders and a real SQLite database.
//!
//! Its manifest names it `folders` (the Plugins page's heading): `files` is the name the
//! examples give an MCP filesystem server behind the gateway (`/mcp/files`), and a page with two
//! plugins of one name could not tell them apart.
//!
//! The core never learns a file word: it sees a manifest, card lines, items, preconditions
//! (each entry's [`entry::Pin`]) and an undo call.

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

pub mod demo;
pub mod entry;
pub mod id;
pub mod journal;
pub mod root;
pub mod tools;

pub use root::Root;

/// The manifest, as shipped (`plugins/files/manifest.yaml`).
pub const MANIFEST_YAML: &str = include_str!("../manifest.yaml");

/// One configured root (`[[files.roots]]` in `iris.toml`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RootConfig {
    /// The root's name; the first part of every entry id.
    pub name: String,
    /// The folder, an absolute path.
    pub path: PathBuf,
}

/// Why the plugin could not be built.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    /// The embedded manifest was refused by the loader (a build defect).
    #[error("files manifest refused: {0}")]
    Manifest(#[from] ManifestError),
    /// A root's configuration cannot be used; the message names the root and the rule.
    #[error("files root `{root}`: {reason}")]
    Root {
        /// The root.
        root: String,
        /// What is wrong.
        reason: String,
    },
}

/// A root's quarantine in short, for the Plugins page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuarantineSize {
    /// The root's name.
    pub root: String,
    /// The root's path.
    pub path: String,
    /// Entries in its quarantine.
    pub entries: u64,
    /// Their total size, bytes.
    pub bytes: u64,
}

/// The files plugin: manifest, roots, journal.
pub struct FilesPlugin {
    manifest: Manifest,
    roots: Vec<Root>,
    journal: journal::Journal,
    database: iris_store::Store,
    clock: Arc<dyn Clock>,
    hash_limit: u64,
    /// The pin each item's precondition check confirmed, by run and item: the move re-checks
    /// the entry against exactly that pin, through its descriptor, just before it moves it.
    checked: Mutex<HashMap<(String, String), entry::Pin>>,
}

impl std::fmt::Debug for FilesPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilesPlugin")
            .field("roots", &self.roots)
            .finish_non_exhaustive()
    }
}

impl FilesPlugin {
    /// Builds the plugin for configured roots over the project's database (its migrations,
    /// this plugin's `files_journal` included, ran on connect).
    ///
    /// # Errors
    /// [`FilesError::Root`] for an empty, repeated or `/`-holding name, or a path that is not an
    /// absolute path to an existing folder.
    pub fn new(roots: Vec<RootConfig>, store: &iris_store::Store) -> Result<Self, FilesError> {
        let mut opened: Vec<Root> = Vec::new();
        for r in roots {
            let bad = |reason: String| FilesError::Root {
                root: r.name.clone(),
                reason,
            };
            if r.name.trim().is_empty() || r.name.contains('/') || r.name.trim() != r.name {
                return Err(bad(
                    "a root needs a name without `/` or surrounding spaces: entry ids start with it"
                        .into(),
                ));
            }
            if opened.iter().any(|o| o.name() == r.name) {
                return Err(bad("each root needs a name of its own".into()));
            }
            opened.push(Root::open(&r.name, &r.path).map_err(bad)?);
        }
        Ok(FilesPlugin {
            manifest: Manifest::from_yaml(MANIFEST_YAML)?,
            roots: opened,
            journal: journal::Journal::of(store),
            database: store.clone(),
            clock: Arc::new(SystemClock),
            hash_limit: entry::HASH_LIMIT,
            checked: Mutex::new(HashMap::new()),
        })
    }

    /// Replaces the clock (ages, journal times); tests pin it.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Replaces the largest size whose content is hashed for a pin (bytes); tests lower it.
    pub fn with_hash_limit(mut self, bytes: u64) -> Self {
        self.hash_limit = bytes;
        self
    }

    /// The roots' names, in configuration order.
    pub fn roots(&self) -> Vec<String> {
        self.roots.iter().map(|r| r.name().to_string()).collect()
    }

    /// Each root's quarantine: entries and bytes (the Plugins page).
    ///
    /// # Errors
    /// The database's, as text.
    pub async fn quarantine_sizes(&self) -> Result<Vec<QuarantineSize>, String> {
        let mut out = Vec::new();
        for root in &self.roots {
            let rows = self
                .journal
                .in_quarantine(root.name())
                .await
                .map_err(|e| e.to_string())?;
            out.push(QuarantineSize {
                root: root.name().to_string(),
                path: root.path().display().to_string(),
                entries: rows.len() as u64,
                bytes: rows
                    .iter()
                    .map(|r| u64::try_from(r.size).unwrap_or(0))
                    .sum(),
            });
        }
        Ok(out)
    }

    pub(crate) fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    pub(crate) fn hash_limit(&self) -> u64 {
        self.hash_limit
    }

    pub(crate) fn journal(&self) -> &journal::Journal {
        &self.journal
    }

    /// The root named `name`.
    pub(crate) fn root(&self, name: &str) -> Option<&Root> {
        self.roots.iter().find(|r| r.name() == name)
    }

    fn checked_key(run: &str, item: &str) -> (String, String) {
        (run.to_string(), item.to_string())
    }

    pub(crate) fn remember_checked(&self, run: &str, item: &str, pin: entry::Pin) {
        if let Ok(mut map) = self.checked.lock() {
            map.insert(Self::checked_key(run, item), pin);
        }
    }

    pub(crate) fn take_checked(&self, run: &str, item: &str) -> Option<entry::Pin> {
        self.checked
            .lock()
            .ok()
            .and_then(|mut map| map.remove(&Self::checked_key(run, item)))
    }
}

#[async_trait]
impl Plugin for FilesPlugin {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// A listing as a step of a turn (docs/adr/0123-how-a-card-came-about.md).
    fn step_sentence(&self, tool: &str, args: &Value, result: &Value) -> Option<String> {
        (tool == tools::list_files::NAME).then(|| tools::list_files::step(args, result))
    }

    /// Every files tool needs a root.
    fn available(&self, _tool: &str) -> Result<(), String> {
        if self.roots.is_empty() {
            return Err("no files root is configured (add [[files.roots]] to iris.toml)".into());
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
            tools::list_files::NAME => tools::list_files::normalise(self, &args),
            tools::quarantine_files::NAME => tools::quarantine_files::normalise(self, &args),
            tools::restore_files::NAME => tools::restore_files::normalise(self, &args),
            tools::list_quarantine::NAME => tools::list_quarantine::normalise(self, &args),
            tools::purge_quarantine::NAME => tools::purge_quarantine::normalise(self, &args),
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
            tools::quarantine_files::NAME => tools::quarantine_files::describe(self, args).await,
            tools::purge_quarantine::NAME => tools::purge_quarantine::describe(self, args).await,
            tools::restore_files::NAME => tools::restore_files::describe(self, args),
            tools::list_files::NAME | tools::list_quarantine::NAME => Ok(Description {
                title: format!("Run {tool}"),
                action: format!("Run {tool}"),
                ..Description::default()
            }),
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

    /// `quarantine_files`' undo: `restore_files` for the entries it moved.
    fn undo_call(&self, tool: &str, outcomes: &[ItemOutcome]) -> Option<UndoCall> {
        match tool {
            tools::quarantine_files::NAME => tools::quarantine_files::undo_call(outcomes),
            _ => None,
        }
    }

    /// After a crash, `quarantine_files` finds each entry by its pinned inode (at its path or
    /// in quarantine); the other tools cannot tell.
    async fn locate(
        &self,
        tool: &str,
        _args: &Value,
        items: &[String],
        preconditions: &[Value],
    ) -> Option<ToolOutput> {
        match tool {
            tools::quarantine_files::NAME => {
                Some(tools::quarantine_files::locate(self, items, preconditions).await)
            }
            _ => None,
        }
    }

    /// `quarantine_files` and `purge_quarantine` pin each entry ([`entry::Pin`]).
    async fn check_precondition(
        &self,
        tool: &str,
        item: &str,
        precondition: &Value,
        ctx: &CallContext,
    ) -> bool {
        match tool {
            tools::quarantine_files::NAME | tools::purge_quarantine::NAME => {
                tools::check_pin(self, &ctx.run_id, item, precondition)
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

    /// Each root's quarantine: "downloads (/home/owner/Downloads): 3 entries in quarantine,
    /// 1.2 MB".
    async fn status(&self) -> Vec<String> {
        match self.quarantine_sizes().await {
            Ok(sizes) => sizes
                .into_iter()
                .map(|q| {
                    let held = match q.entries {
                        0 => "its quarantine is empty".to_string(),
                        1 => format!("1 entry in quarantine, {}", entry::size_text(q.bytes)),
                        n => format!("{n} entries in quarantine, {}", entry::size_text(q.bytes)),
                    };
                    format!("{} ({}): {held}", q.root, q.path)
                })
                .collect(),
            Err(e) => vec![format!("The quarantine sizes cannot be read now: {e}")],
        }
    }

    /// Where the owner can see whether a call ran.
    fn how_to_check(&self, tool: &str) -> Option<String> {
        match tool {
            tools::quarantine_files::NAME => Some(
                "look for the files at their paths and in the root's .iris-quarantine folder: a file still at its path was not moved".into(),
            ),
            tools::restore_files::NAME => Some("look for the files at their paths".into()),
            tools::purge_quarantine::NAME => Some(
                "look in the root's .iris-quarantine folder: an entry still there was not deleted"
                    .into(),
            ),
            _ => None,
        }
    }

    /// Moves, restores and purges hold the files lock, so two never interleave.
    async fn hold(&self, tool: &str, wait: Duration) -> Result<Option<Hold>, ToolError> {
        match tool {
            tools::list_files::NAME | tools::list_quarantine::NAME => Ok(None),
            _ => self
                .database
                .hold_for(
                    &files_changes_lock(),
                    tool,
                    wait,
                    "the files were busy with another change",
                    "the files lock",
                )
                .await
                .map(Some),
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
        let reads = matches!(tool, tools::list_files::NAME | tools::list_quarantine::NAME);
        let guard = match (
            reads,
            hold.and_then(Hold::into_inner::<iris_store::LockGuard>),
        ) {
            (true, _) => None,
            (false, Some(guard)) => Some(guard),
            (false, None) => Some(
                self.database
                    .lock(&files_changes_lock())
                    .await
                    .map_err(|e| tools::failed(tool, format!("taking the files lock: {e}")))?,
            ),
        };
        let ran = match tool {
            tools::list_files::NAME => tools::list_files::execute(self, args),
            tools::list_quarantine::NAME => tools::list_quarantine::execute(self, args).await,
            tools::quarantine_files::NAME => {
                tools::quarantine_files::execute(self, args, stale, &ctx.run_id, conversation).await
            }
            tools::restore_files::NAME => {
                tools::restore_files::execute(self, args, conversation).await
            }
            tools::purge_quarantine::NAME => {
                tools::purge_quarantine::execute(self, args, stale, &ctx.run_id).await
            }
            other => Err(ToolError::UnknownTool(other.to_string())),
        };
        if let Some(guard) = guard {
            guard.release().await;
        }
        ran
    }
}

/// The lock this plugin owns (`iris:files-changes`): its moves, restores and purges hold it,
/// on every server of one database, so a restore never races the move it undoes.
pub fn files_changes_lock() -> iris_store::NamedLock {
    iris_store::NamedLock::new("files", "changes")
}

#[cfg(test)]
mod tests;
