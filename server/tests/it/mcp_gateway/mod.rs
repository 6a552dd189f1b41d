//! IRIS as an MCP gateway, all real parts: `iris serve` with the official filesystem MCP server
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
//! This module holds what they share: the world with the filesystem upstream, one agent step,
//! a write, and reading and approving a card.

mod crashes;
mod pinned_writes;
mod waiting_cards;

use crate::support;

use serde_json::{json, Value};
use support::mcp::{files_upstream, world as mcp_world};
use support::Iris;

fn world(hold_secs: u64) -> (support::World, std::path::PathBuf) {
    mcp_world(hold_secs, &files_upstream())
}

async fn one(iris: &Iris, token: &str, step: Value) -> Value {
    support::mcp::one(iris, "files", token, step).await
}

fn write(content: &str) -> Value {
    json!({"call": "write_file", "args": {"path": "plan.md", "content": content}, "reason": "keep the plan current"})
}

async fn row(iris: &Iris, token: &str, id: &str) -> Value {
    support::mcp::row(iris, token, id).await
}

/// The owner's approval of `id`: the status and body.
async fn approve(iris: &Iris, owner: &str, id: &str) -> (reqwest::StatusCode, Value) {
    iris.client()
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(owner),
            json!({"decision": "approve"}),
        )
        .await
}
