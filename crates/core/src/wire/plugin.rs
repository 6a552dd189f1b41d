//! The plugin shapes of `GET /api/plugins` (DESIGN §7): each loaded plugin, its tools with
//! their declared effect and derived gate (DESIGN §2 "gate"), and an MCP upstream's own hints.

use serde::{Deserialize, Serialize};

use super::Effect;

/// A tool's gate as the Plugins panel shows it (DESIGN §2 "gate"), derived from the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ToolGate {
    /// Runs without asking.
    None,
    /// A write with `confirm: once`: advice only, no row, no halt.
    Confirm,
    /// Destructive, or a write with `approval: pinned`: the owner approves each call.
    Approval,
}

impl ToolGate {
    /// The manifest-side spelling: `none`, `confirm` or `approval`.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolGate::None => "none",
            ToolGate::Confirm => "confirm",
            ToolGate::Approval => "approval",
        }
    }
}

/// One declared tool as `GET /api/plugins` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PluginTool {
    /// Canonical name (what approval rows pin).
    pub name: String,
    /// What the model is told the tool does.
    pub description: String,
    /// Declared effect.
    pub effect: Effect,
    /// Derived gate.
    pub gate: ToolGate,
    /// DESIGN §2 "approved per call": every call waits for the owner's approval of that call.
    pub approved_per_call: bool,
    /// The tool that reverses this one (destructive tools only), if declared.
    pub undo: Option<String>,
    /// For how many days the undo stays possible, if declared.
    pub undo_window_days: Option<u32>,
    /// A write without a card: the tool its reply offers for "undo that" (`reply_undo` in the
    /// manifest), if declared. Shown on the web app's Plugins page; `GET /api/plugins` leaves
    /// it out (DESIGN §7's tool shape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_undo: Option<String>,
    /// Other spellings that resolve to this tool.
    pub aliases: Vec<String>,
    /// For an MCP upstream's tool: the hints the server itself gives (MCP tool annotations).
    /// Shown beside IRIS's own effect, never trusted: IRIS's manifest decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_hints: Option<ServerHints>,
}

/// An MCP server's own annotations of a tool (`readOnlyHint`, `destructiveHint`,
/// `idempotentHint`, `openWorldHint`); each `None` when the server does not say. The MCP spec
/// tells clients to treat them as untrusted; IRIS only shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ServerHints {
    /// The server says the tool changes nothing.
    pub read_only: Option<bool>,
    /// The server says the tool may destroy or overwrite.
    pub destructive: Option<bool>,
    /// The server says calling it twice does no more than once.
    pub idempotent: Option<bool>,
    /// The server says it reaches beyond a closed world (the internet).
    pub open_world: Option<bool>,
}

/// One loaded plugin and its tools, in declaration order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PluginInfo {
    /// The plugin's name (its manifest's `plugin`).
    pub name: String,
    /// Its tools.
    pub tools: Vec<PluginTool>,
    /// For an MCP upstream behind the gateway: the path agents connect to (`/mcp/files`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_path: Option<String>,
    /// What the plugin says of its state now, one sentence each (e.g. "downloads: 3 entries in
    /// quarantine, 1.2 MB"); empty when it says nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status: Vec<String>,
}

/// `GET /api/plugins` body: every loaded plugin, in load order.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PluginList {
    /// The plugins.
    pub plugins: Vec<PluginInfo>,
}
