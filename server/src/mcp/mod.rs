//! The MCP gateway (DESIGN §9 "any agent's tools behind the same card"): IRIS in front of other
//! MCP servers, with its own manifest for their tools (`iris_core::mcp`).
//!
//! - `upstream.rs`: one upstream server reached over stdio (a child process in its own process
//!   group), its tools checked against IRIS's manifest, arguments checked against the upstream's
//!   own `inputSchema` before anything else, and calls of declared tools only.

pub mod upstream;
