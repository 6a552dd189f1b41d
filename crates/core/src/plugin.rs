//! The plugin contract: a plugin supplies its manifest, its tools and a `describe(args)` per
//! destructive or pinned tool; the core never learns its vocabulary (DESIGN §6).
//!
//! Each plugin tool is one module with the same verbs: `normalise` (validate and bring the
//! arguments to the one form that gets pinned), `describe` (the card lines and items, called once
//! when the row is written) and `execute` (the side effect).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::manifest::Manifest;

/// What a tool call knows about the turn it runs in.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CallContext {
    /// The run this call belongs to.
    pub run_id: String,
    /// The conversation.
    pub conversation_id: String,
    /// What the owner said this turn (for "You asked" and recipient checks).
    pub request: String,
}

/// A plugin's description of one call, frozen into the card (DESIGN §2 "card").
///
/// `Default` is the empty description; build one with `..Default::default()` so a field added
/// later (as `preconditions` was) does not break every plugin.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Description {
    /// Card heading, e.g. "Trash 3 emails".
    pub title: String,
    /// The approve button's words, e.g. "Trash 3 emails".
    pub action: String,
    /// One line per item, in `items` order ("subject — sender, date").
    pub lines: Vec<String>,
    /// The things the call acts on (e.g. email ids), in the call's order.
    pub items: Vec<String>,
    /// How the owner can undo it, in the plugin's words (e.g. "You can restore these from
    /// Trash for 30 days"); `None` when there is no undo.
    #[serde(default)]
    pub undo_note: Option<String>,
    /// Staleness: one precondition per item, in `items` order, that must still hold
    /// when the approved call executes (for mail: the message is still in the folder it was in,
    /// with the same Message-ID). Opaque JSON only the plugin reads, pinned in the row
    /// (immutable) and handed back to [`Plugin::check_precondition`]. Empty (the default): the
    /// call pins none. Otherwise its length must equal `items`' or the call is refused.
    #[serde(default)]
    pub preconditions: Vec<Value>,
    /// The undo button's words for the whole call (e.g. "Restore 5 emails"), frozen into the
    /// card; `None` for a tool without an undo.
    #[serde(default)]
    pub undo_action: Option<String>,
    /// What will change, line by line (e.g. a diff), frozen into the card; empty for none.
    #[serde(default)]
    pub preview: Vec<String>,
}

/// One item's outcome of an executed call (one audit entry each).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemOutcome {
    /// The item (e.g. an email id).
    pub item: String,
    /// What happened to it, as JSON (e.g. `{"status":"trashed"}`).
    pub outcome: Value,
}

/// What an executed call returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The observation the model sees: always a JSON object.
    pub result: Value,
    /// Per-item outcomes (empty for calls that act on no items).
    pub items: Vec<ItemOutcome>,
}

impl ToolOutput {
    /// An output with no per-item outcomes.
    pub fn plain(result: Value) -> Self {
        ToolOutput {
            result,
            items: Vec::new(),
        }
    }
}

/// The call that undoes an executed one (DESIGN §9 "Undo from the card"): arguments for the
/// tool's manifest `undo` tool, acting on exactly `items`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UndoCall {
    /// Arguments for the undo tool (validated against its schema and normalised before it runs).
    pub args: Value,
    /// The items it acts on: those of the executed call that can be undone, in the call's order.
    pub items: Vec<String>,
    /// Its button's words for these items (e.g. "Restore 3 emails"); `None`: the card's.
    #[serde(default)]
    pub action: Option<String>,
}

/// Why a tool verb failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The plugin does not have this tool.
    #[error("plugin has no tool `{0}`")]
    UnknownTool(String),
    /// The arguments are not acceptable; nothing was done.
    #[error("invalid arguments for `{tool}`: {reason}")]
    InvalidArgs {
        /// The tool.
        tool: String,
        /// What is wrong, for the model and the owner.
        reason: String,
    },
    /// The side effect failed; what happened is in the message.
    #[error("`{tool}` failed: {reason}")]
    Failed {
        /// The tool.
        tool: String,
        /// What went wrong.
        reason: String,
    },
    /// The call never started: what it must hold while it runs (the plugin's lock) stayed
    /// taken by another change past the wait. Nothing was changed; trying again later can work.
    #[error("`{tool}` did not start: {reason}; nothing was changed, try again")]
    Busy {
        /// The tool.
        tool: String,
        /// What was busy.
        reason: String,
    },
    /// The call was sent and its answer was lost (the server it went to exited mid-call): it
    /// may or may not have run. The ledger records `unknown`; it is never run again.
    #[error("`{tool}` was interrupted: {reason}; it may or may not have run")]
    Interrupted {
        /// The tool.
        tool: String,
        /// What was lost.
        reason: String,
    },
}

/// [`ToolError::InvalidArgs`] for `tool`, saying what is wrong: the one spelling every plugin's
/// `normalise` uses.
pub fn invalid_args(tool: &str, reason: impl Into<String>) -> ToolError {
    ToolError::InvalidArgs {
        tool: tool.to_string(),
        reason: reason.into(),
    }
}

/// [`ToolError::Failed`] for `tool`, saying what went wrong.
pub fn tool_failed(tool: &str, reason: impl std::fmt::Display) -> ToolError {
    ToolError::Failed {
        tool: tool.to_string(),
        reason: reason.to_string(),
    }
}

/// `args` as a JSON object with only `allowed` keys: the rule every manifest states with
/// `additionalProperties: false`, checked again in `normalise` so it stands on its own.
///
/// # Errors
/// [`ToolError::InvalidArgs`] for a non-object, or naming the first unknown key and the
/// allowed ones.
pub fn args_object<'a>(
    tool: &str,
    args: &'a Value,
    allowed: &[&str],
) -> Result<&'a serde_json::Map<String, Value>, ToolError> {
    let Value::Object(obj) = args else {
        return Err(invalid_args(tool, "arguments must be a JSON object"));
    };
    if let Some(k) = obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(invalid_args(
            tool,
            format!("unknown argument `{k}` (allowed: {})", allowed.join(", ")),
        ));
    }
    Ok(obj)
}

/// What a plugin holds while one of its tools changes something (for mail: the mailbox lock,
/// shared by every server). The core takes it with [`Plugin::hold`] before it writes an undo's
/// claim or starts a side effect's deadline, so waiting for it is never mistaken for a side
/// effect that overran (docs/liveness.md "busy locks"), and gives it to
/// [`Plugin::execute_held`]. Dropping it releases what it holds.
pub struct Hold(Box<dyn std::any::Any + Send>);

impl Hold {
    /// Wraps what the plugin holds (e.g. a lock guard).
    pub fn new<T: std::any::Any + Send>(held: T) -> Self {
        Hold(Box::new(held))
    }

    /// What [`Hold::new`] wrapped, if it is a `T`.
    pub fn into_inner<T: std::any::Any>(self) -> Option<T> {
        self.0.downcast::<T>().ok().map(|b| *b)
    }
}

impl std::fmt::Debug for Hold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hold")
    }
}

/// A plugin: manifest plus the three verbs per tool.
#[async_trait]
pub trait Plugin: Send + Sync {
    /// The checked manifest (parsed with [`Manifest::from_yaml`]).
    fn manifest(&self) -> &Manifest;

    /// Validates `args` (already checked against the tool's JSON Schema) and returns the one
    /// normal form that is pinned and hashed (e.g. ids trimmed, de-duplicated, order kept).
    ///
    /// # Errors
    /// [`ToolError::InvalidArgs`] naming what is wrong; nothing is written.
    async fn normalise(
        &self,
        tool: &str,
        args: Value,
        ctx: &CallContext,
    ) -> Result<Value, ToolError>;

    /// Describes a destructive or pinned call for its card; called once, when the row is written.
    ///
    /// # Errors
    /// [`ToolError::InvalidArgs`] when an item does not exist (the call is refused, no row).
    async fn describe(
        &self,
        tool: &str,
        args: &Value,
        ctx: &CallContext,
    ) -> Result<Description, ToolError>;

    /// Runs the call. For approved-per-call tools only the executor calls this, with the
    /// arguments read from the approval row.
    ///
    /// # Errors
    /// [`ToolError`] when the side effect failed or the arguments are unusable.
    async fn execute(
        &self,
        tool: &str,
        args: &Value,
        ctx: &CallContext,
    ) -> Result<ToolOutput, ToolError>;

    /// Whether `item`'s pinned `precondition` (from [`Description::preconditions`]) still holds,
    /// checked just before the approved call executes (staleness). `false` means the
    /// item is stale: it is skipped ("stale: nothing done") and the others proceed. A plugin
    /// that cannot tell (its store unreachable, the precondition unreadable) answers `false`:
    /// fail closed. The default, for plugins that pin no preconditions, is `true`.
    async fn check_precondition(
        &self,
        tool: &str,
        item: &str,
        precondition: &Value,
        ctx: &CallContext,
    ) -> bool {
        let _ = (tool, item, precondition, ctx);
        true
    }

    /// The undo of an executed call of `tool` (one whose manifest declares `undo`), built from
    /// the per-item `outcomes` its execution recorded, in the call's order: arguments for the
    /// undo tool that reverse exactly the items that ran. `None` when nothing that ran can be
    /// undone. The core never builds these itself: it knows the undo tool's name, not its
    /// arguments. The default, for plugins whose tools declare no undo: `None`.
    fn undo_call(&self, tool: &str, outcomes: &[ItemOutcome]) -> Option<UndoCall> {
        let _ = (tool, outcomes);
        None
    }

    /// Whether `tool` can run here now: `Err` with a sentence naming what is missing (for mail:
    /// "no mail account is configured") when its backend is absent. A tool that cannot run is
    /// not offered to the model, and an approved call whose backend has gone is not run and
    /// says so (never "stale"). The default: every tool can run.
    ///
    /// # Errors
    /// The sentence above.
    fn available(&self, tool: &str) -> Result<(), String> {
        let _ = tool;
        Ok(())
    }

    /// Runs the approved call for every item except `stale` (a non-empty subset of the row's
    /// items whose preconditions failed), returning outcomes for the items it acted on only.
    /// The executor calls this instead of [`Plugin::execute`] when some items are stale; the
    /// arguments are still the row's pinned ones, so the plugin can only act on fewer items
    /// than were approved, never on others.
    ///
    /// The default refuses (nothing is done): a plugin that pins preconditions must implement
    /// this for the tools that pin them.
    ///
    /// # Errors
    /// [`ToolError::Failed`] from the default; otherwise as [`Plugin::execute`].
    async fn execute_skipping(
        &self,
        tool: &str,
        args: &Value,
        stale: &[String],
        ctx: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        let _ = (args, ctx);
        Err(ToolError::Failed {
            tool: tool.to_string(),
            reason: format!(
                "{} item(s) are stale and this plugin cannot leave items out of a call; nothing was done",
                stale.len()
            ),
        })
    }

    /// One sentence saying what a call of `tool` did in a turn, for the "How this came about"
    /// of a card made later in that turn ("Searched the inbox for 'invoice': 12 emails");
    /// `args` are the call's, `result` its observation (never an error: the core words
    /// those). At most 200 characters (longer is clipped). `None` (the default): the core's
    /// generic sentence naming the tool and its arguments (docs/adr/0123-how-a-card-came-about.md).
    fn step_sentence(&self, tool: &str, args: &Value, result: &Value) -> Option<String> {
        let _ = (tool, args, result);
        None
    }

    /// What to call one record of `tool`'s result that holds text from outside (an object with
    /// a field the manifest marks `untrusted`), as a card's flag names it: "the email 'Payment
    /// overdue'". `None` (the default): "the result of TOOL for “its first string
    /// argument”".
    fn source_name(&self, tool: &str, record: &Value) -> Option<String> {
        let _ = (tool, record);
        None
    }

    /// What the Plugins page says of the plugin's state now, one sentence each (e.g. how much
    /// a folder's quarantine holds); empty (the default) for nothing to say. Called when the
    /// page or `GET /api/plugins` is read, so it must be quick and must not fail: a state it
    /// cannot read is a sentence saying so.
    async fn status(&self) -> Vec<String> {
        Vec::new()
    }

    /// How the owner can see for themselves whether a call of `tool` ran, when its outcome is
    /// `unknown` (for mail: "look in Trash …"); a short clause, no final full stop. `None`
    /// (the default) when the plugin has nothing to point at.
    fn how_to_check(&self, tool: &str) -> Option<String> {
        let _ = tool;
        None
    }

    /// Where each item of an approved call of `tool` stands now, when its outcome is
    /// `unknown` (its server stopped while it ran: the takeover rule never runs it again).
    /// `Some` output whose `items` give one outcome per item it can place, in the shape its
    /// execution gives (so [`Plugin::undo_call`] builds the undo of those that did change),
    /// each with a `message` ("in quarantine: …", "not moved: it is still at its path") and
    /// optionally a `label` naming the item as the card does; its `result` has a `summary`
    /// sentence. `items` and `preconditions` are the card's, one pin per item. It reads, never
    /// changes; the core bounds it by the execution deadline. `None` (the default): the plugin
    /// cannot tell, and the card only says how to check.
    async fn locate(
        &self,
        tool: &str,
        args: &Value,
        items: &[String],
        preconditions: &[Value],
    ) -> Option<ToolOutput> {
        let _ = (tool, args, items, preconditions);
        None
    }

    /// Takes what `tool` must hold while it changes something (its lock), waiting at most
    /// `wait`; `Ok(None)` for a tool that needs nothing held. The core calls this before it
    /// writes an undo's claim or starts an approved call's deadline, and passes the hold to
    /// [`Plugin::execute_held`]. The default: nothing to hold.
    ///
    /// # Errors
    /// [`ToolError::Busy`] when it stayed taken for `wait` (nothing was started);
    /// [`ToolError::Failed`] when it could not be asked for (the database unreachable).
    async fn hold(&self, tool: &str, wait: std::time::Duration) -> Result<Option<Hold>, ToolError> {
        let _ = (tool, wait);
        Ok(None)
    }

    /// Runs the call while holding `hold` (from [`Plugin::hold`] for the same tool): every item
    /// except `stale` ([`Plugin::execute_skipping`] when some are stale, else
    /// [`Plugin::execute`]). The default drops the hold first and runs the call as usual, for
    /// plugins that hold nothing.
    ///
    /// # Errors
    /// As [`Plugin::execute`] and [`Plugin::execute_skipping`].
    async fn execute_held(
        &self,
        tool: &str,
        args: &Value,
        stale: &[String],
        ctx: &CallContext,
        hold: Option<Hold>,
    ) -> Result<ToolOutput, ToolError> {
        drop(hold);
        if stale.is_empty() {
            self.execute(tool, args, ctx).await
        } else {
            self.execute_skipping(tool, args, stale, ctx).await
        }
    }
}
