//! IRIS as an MCP gateway, all real parts: the server (in process, `support::TestApp` on a
//! listener; the real `iris serve` where a test kills it) with the official filesystem MCP server
//! (npm `@modelcontextprotocol/server-filesystem`) as its upstream over stdio, and the official
//! Python MCP SDK (PyPI `mcp`) as the agent, over streamable HTTP at `/mcp/files` and through
//! `iris mcp files` over stdio.
//!
//! Reads pass without a card; a write is one pinned card that says which agent asks; the owner's
//! approval executes exactly the pinned call once, whatever the agent retries; other content is
//! another card; a rejection leaves the file as it was and tells the agent; an undeclared tool
//! is refused; an agent token cannot answer; the hold ends at its budget with "waiting".
//!
//! - [`pinned_writes`]: reads pass, a write runs once as pinned only after the owner approves,
//!   a file changed since its card is not written, a held call reports progress, and the stdio
//!   bridge behaves like the endpoint.
//! - [`crashes`]: a SIGKILL between approval and execution writes exactly once after the
//!   restart; one after the write and before its outcome never writes again.
//! - [`waiting_cards`]: a card nobody answers lapses and the agent is told; an agent gets at most
//!   its cap of waiting cards; revoking an agent rejects its waiting cards and its name inherits
//!   nothing.
//!
//! This module holds what they share: the server (in process or a world) with the filesystem
//! upstream, one agent step, a write, and reading and approving a card; the helpers take the
//! server's address.

mod crashes;
mod own_tools;
mod pinned_writes;
mod waiting_cards;

use crate::support;

use serde_json::{json, Value};
use support::app::Build;
use support::mcp::{files_upstream, files_upstream_on, world as mcp_world};
use support::TestApp;

fn world(hold_secs: u64) -> (support::World, std::path::PathBuf) {
    mcp_world(hold_secs, &files_upstream())
}

/// A server in process with the filesystem upstream on its `notes/` folder and what `configure`
/// sets: the server, its address and the folder.
async fn app(
    hold_secs: u64,
    configure: impl FnOnce(Build) -> Build,
) -> (TestApp, String, std::path::PathBuf) {
    support::mcp::app(hold_secs, files_upstream_on, configure).await
}

async fn one(url: &str, token: &str, step: Value) -> Value {
    support::mcp::one(url, "files", token, step).await
}

fn write(content: &str) -> Value {
    json!({"call": "write_file", "args": {"path": "plan.md", "content": content}, "reason": "keep the plan current"})
}

async fn row(url: &str, token: &str, id: &str) -> Value {
    support::mcp::row(url, token, id).await
}

/// The owner's approval of `id`: the status and body.
async fn approve(url: &str, owner: &str, id: &str) -> (reqwest::StatusCode, Value) {
    support::mcp::client(url)
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(owner),
            json!({"decision": "approve"}),
        )
        .await
}
