//! `/mcp/iris`: IRIS's own tools offered to MCP clients, as a plugin of the gateway's toolbox
//! (DESIGN §10 "IRIS's own tools for agents"). Only the tools `[mcp.iris] tools` lists are
//! offered (none by default, so no agent reads mail unless the owner lists `search_inbox`);
//! each is named `iris.TOOL` in the gateway (what its cards pin) and `TOOL` to the agent.
//!
//! Every verb is the owning plugin's (email, calendar, files): the card an agent's
//! `quarantine_files` makes is the one the owner's assistant would make, its preconditions are
//! pinned and checked the same way, and its approved call runs through the same plugin under its
//! lock. The agent's calls share the gateway's rules (an `agent` token, the hold, attaching a
//! repeat to its card, the cap on waiting cards). An undo tool is not offered with them: the
//! card's undo runs only for the owner's own assistant's calls.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use iris_core::manifest::{Manifest, ToolSpec};
use iris_core::plugin::{
    CallContext, Description, Hold, ItemOutcome, Plugin, ToolError, ToolOutput, UndoCall,
};
use iris_core::toolbox::Toolbox;
use serde_json::Value;

use super::plugin::gateway_tool;

/// The reserved upstream name of IRIS's own tools (`/mcp/iris`).
pub const NAME: &str = "iris";

/// IRIS's own tools the owner listed, behind the gateway.
pub struct OwnTools {
    manifest: Manifest,
    plugins: Toolbox,
}

impl std::fmt::Debug for OwnTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnTools")
            .field("tools", &self.offered())
            .finish_non_exhaustive()
    }
}

impl OwnTools {
    /// The tools `listed` of `plugins` (the owner's assistant's plugins), in the list's order.
    ///
    /// # Errors
    /// A sentence naming a listed tool no plugin has (an alias is not enough: the list names
    /// tools), or one listed twice.
    pub fn new(plugins: Vec<Arc<dyn Plugin>>, listed: &[String]) -> anyhow::Result<OwnTools> {
        let plugins = Toolbox::new(plugins)?;
        let mut tools: Vec<ToolSpec> = Vec::with_capacity(listed.len());
        for name in listed {
            let Some(spec) = plugins.registry().tools().iter().find(|t| &t.name == name) else {
                let known: Vec<&str> = plugins
                    .registry()
                    .tools()
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect();
                anyhow::bail!(
                    "[mcp.iris] tools: IRIS has no tool `{name}` (its tools: {})",
                    known.join(", ")
                );
            };
            let offered = gateway_tool(NAME, name);
            if tools.iter().any(|t| t.name == offered) {
                anyhow::bail!("[mcp.iris] tools: `{name}` is listed twice");
            }
            tools.push(ToolSpec {
                name: offered,
                plugin: NAME.into(),
                aliases: Vec::new(),
                undo: None,
                undo_window_days: None,
                reply_undo: None,
                ..spec.clone()
            });
        }
        let manifest = Manifest::checked(NAME.into(), tools)?;
        Ok(OwnTools { manifest, plugins })
    }

    /// The offered tools' own names (what the agent calls), in order.
    pub fn offered(&self) -> Vec<String> {
        self.manifest
            .tools
            .iter()
            .map(|t| own_name(&t.name).to_string())
            .collect()
    }

    /// The offered spec of `tool` (its own name), if offered.
    pub fn spec(&self, tool: &str) -> Option<&ToolSpec> {
        let offered = gateway_tool(NAME, tool);
        self.manifest.tools.iter().find(|t| t.name == offered)
    }

    /// Runs an offered tool that needs no card (a read, or a write with no gate) for `agent`:
    /// the arguments checked against its schema, normalised and executed by its plugin.
    ///
    /// # Errors
    /// [`ToolError::InvalidArgs`] for arguments its schema or plugin refuses; the plugin's own
    /// errors.
    pub async fn run(&self, tool: &str, args: &Value, agent: &str) -> Result<Value, ToolError> {
        let (plugin, spec) = self.owner(tool)?;
        let checked = self
            .plugins
            .validate(spec, args)
            .map_err(|reason| iris_core::plugin::invalid_args(tool, reason))?;
        let ctx = CallContext {
            run_id: format!("mcp-{agent}-{}", uuid::Uuid::new_v4()),
            conversation_id: format!("mcp:{agent}"),
            request: String::new(),
        };
        let args = plugin.normalise(tool, checked, &ctx).await?;
        Ok(plugin.execute(tool, &args, &ctx).await?.result)
    }

    /// The owning plugin of `tool` (its own name) and its spec there.
    fn owner(&self, tool: &str) -> Result<(&Arc<dyn Plugin>, &ToolSpec), ToolError> {
        let spec = self
            .plugins
            .registry()
            .tools()
            .iter()
            .find(|t| t.name == tool)
            .ok_or_else(|| ToolError::UnknownTool(tool.to_string()))?;
        let plugin = self
            .plugins
            .plugin(spec)
            .ok_or_else(|| ToolError::UnknownTool(tool.to_string()))?;
        Ok((plugin, spec))
    }

    /// The owning plugin of the gateway's `iris.TOOL`, and `TOOL`.
    fn inner<'n>(&self, tool: &'n str) -> Result<(&Arc<dyn Plugin>, &'n str), ToolError> {
        let own = own_name(tool);
        if own == tool {
            return Err(ToolError::UnknownTool(tool.to_string()));
        }
        Ok((self.owner(own)?.0, own))
    }
}

/// `TOOL` of `iris.TOOL`.
fn own_name(tool: &str) -> &str {
    tool.strip_prefix(NAME)
        .and_then(|t| t.strip_prefix('.'))
        .unwrap_or(tool)
}

#[async_trait]
impl Plugin for OwnTools {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    fn available(&self, tool: &str) -> Result<(), String> {
        let (plugin, own) = self.inner(tool).map_err(|e| e.to_string())?;
        plugin.available(own)
    }

    async fn normalise(
        &self,
        tool: &str,
        args: Value,
        ctx: &CallContext,
    ) -> Result<Value, ToolError> {
        let (plugin, own) = self.inner(tool)?;
        plugin.normalise(own, args, ctx).await
    }

    async fn describe(
        &self,
        tool: &str,
        args: &Value,
        ctx: &CallContext,
    ) -> Result<Description, ToolError> {
        let (plugin, own) = self.inner(tool)?;
        plugin.describe(own, args, ctx).await
    }

    async fn execute(
        &self,
        tool: &str,
        args: &Value,
        ctx: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        let (plugin, own) = self.inner(tool)?;
        plugin.execute(own, args, ctx).await
    }

    async fn check_precondition(
        &self,
        tool: &str,
        item: &str,
        precondition: &Value,
        ctx: &CallContext,
    ) -> bool {
        match self.inner(tool) {
            Ok((plugin, own)) => {
                plugin
                    .check_precondition(own, item, precondition, ctx)
                    .await
            }
            Err(_) => false,
        }
    }

    /// None: an agent's call has no undo from its card (see the module docs).
    fn undo_call(&self, _tool: &str, _outcomes: &[ItemOutcome]) -> Option<UndoCall> {
        None
    }

    async fn execute_skipping(
        &self,
        tool: &str,
        args: &Value,
        stale: &[String],
        ctx: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        let (plugin, own) = self.inner(tool)?;
        plugin.execute_skipping(own, args, stale, ctx).await
    }

    fn how_to_check(&self, tool: &str) -> Option<String> {
        let (plugin, own) = self.inner(tool).ok()?;
        plugin.how_to_check(own)
    }

    async fn hold(&self, tool: &str, wait: Duration) -> Result<Option<Hold>, ToolError> {
        let (plugin, own) = self.inner(tool)?;
        plugin.hold(own, wait).await
    }

    async fn execute_held(
        &self,
        tool: &str,
        args: &Value,
        stale: &[String],
        ctx: &CallContext,
        hold: Option<Hold>,
    ) -> Result<ToolOutput, ToolError> {
        let (plugin, own) = self.inner(tool)?;
        plugin.execute_held(own, args, stale, ctx, hold).await
    }
}
