//! `iris mcp NAME`: a stdio MCP server for agents that spawn their servers (Claude Desktop,
//! Cursor), bridged to `IRIS_URL/mcp/NAME` over streamable HTTP with `IRIS_TOKEN` (an `agent`
//! device's token). It decides nothing: every list and call goes to the gateway as it came
//! (with its `_meta`, so `iris/reason` and a progress token reach IRIS), and every answer comes
//! back as it was sent; the gateway's progress notifications are passed on to the agent.

use std::sync::Arc;

use anyhow::Context;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{
    ClientHandler, ErrorData as McpError, RoleClient, RoleServer, ServerHandler, ServiceExt,
};
use tokio::sync::Mutex;

/// The gateway side: passes the gateway's progress notifications on to the agent.
#[derive(Clone, Default)]
struct Upward {
    agent: Arc<Mutex<Option<Peer<RoleServer>>>>,
}

impl ClientHandler for Upward {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(agent) = self.agent.lock().await.clone() {
            let _ = agent.notify_progress(params).await;
        }
    }
}

/// The agent side: forwards to the gateway.
#[derive(Clone)]
struct Bridge {
    gateway: Arc<RunningService<RoleClient, Upward>>,
    upward: Upward,
}

impl ServerHandler for Bridge {
    fn get_info(&self) -> InitializeResult {
        match self.gateway.peer_info() {
            Some(info) => {
                let mut answer = InitializeResult::new(info.capabilities.clone());
                if let Some(server) = info.server_info.clone() {
                    answer = answer.with_server_info(server);
                }
                if let Some(instructions) = &info.instructions {
                    answer = answer.with_instructions(instructions.clone());
                }
                answer
            }
            None => InitializeResult::new(ServerCapabilities::builder().enable_tools().build()),
        }
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        *self.upward.agent.lock().await = Some(context.peer.clone());
        self.gateway
            .list_tools(request)
            .await
            .map_err(|e| McpError::internal_error(format!("the IRIS gateway: {e}"), None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        *self.upward.agent.lock().await = Some(context.peer.clone());
        let mut request = request;
        // The agent's `_meta` (its reason, its progress token) travels with the call.
        if request.meta.is_none() && !context.meta.0 .0.is_empty() {
            request.meta = Some(context.meta.clone());
        }
        self.gateway
            .call_tool(request)
            .await
            .map(CallToolResponse::from)
            .map_err(|e| McpError::internal_error(format!("the IRIS gateway: {e}"), None))
    }
}

/// Runs the bridge until the agent closes stdin.
///
/// # Errors
/// `IRIS_URL` or `IRIS_TOKEN` missing or wrong, or the gateway cannot be reached; the message
/// says which (on stderr: stdout carries the protocol).
pub async fn run(name: &str) -> anyhow::Result<()> {
    let base = std::env::var("IRIS_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| "http://127.0.0.1:3000".into());
    let token = std::env::var("IRIS_TOKEN")
        .ok()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .context("IRIS_TOKEN is not set: give the token of an agent device (`iris devices add --name NAME --scope agent`)")?;
    let url = format!("{}/mcp/{name}", base.trim().trim_end_matches('/'));
    crate::tls::use_ring();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.clone()).auth_header(token),
    );
    let upward = Upward::default();
    let gateway = upward
        .clone()
        .serve(transport)
        .await
        .with_context(|| format!("connecting to the IRIS gateway at {url}"))?;
    let bridge = Bridge {
        gateway: Arc::new(gateway),
        upward,
    };
    let agent = bridge
        .serve(rmcp::transport::stdio())
        .await
        .context("starting the stdio side")?;
    agent.waiting().await.context("serving the agent")?;
    Ok(())
}
