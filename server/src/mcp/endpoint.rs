//! `/mcp/{name}`: one upstream as an MCP server agents connect to (streamable HTTP, by `rmcp`).
//! It offers the tools IRIS's manifest declares (as the upstream defines them) and nothing
//! else. `/mcp/iris` is the same endpoint over IRIS's own tools the owner listed
//! (`super::own`). Reads and ungated writes pass through with their results untouched; a gated
//! call is held on its card ([`iris_core::approvals::ApprovalService::gateway_request`]) for up to
//! `IRIS_MCP_HOLD_SECS`, with progress notifications when the client sent a progress token,
//! then answers from the row: the result of its one execution, the rejection, the lapse, or
//! "waiting: call again with the same arguments".

use std::sync::Arc;
use std::time::Duration;

use iris_core::approvals::gateway::ATTACH_HOURS;
use iris_core::approvals::{AgentCall, GatewayAnswer, GatewayError, UNKNOWN_OUTCOME};
use iris_core::wire::{Approval, Event};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock as Content,
    Implementation, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ServerCapabilities,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{json, Value};

use super::own::OwnTools;
use super::plugin::{gateway_tool, UpstreamPlugin};
use super::upstream::UpstreamError;
use crate::state::AppState;

/// The agent device a request was authenticated as (put there by `super::agent_only`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDevice(pub String);

/// The `_meta` key of the reason an agent gives for a call (shown on the card, not hashed).
pub const REASON_KEY: &str = "iris/reason";

/// The `_meta` key an agent sets to `true` to ask the owner on a new card for a call that
/// already has one (to do again a call that ran).
pub const AGAIN_KEY: &str = "iris/again";

/// How often a held call re-reads its row even without an event (a missed event never holds
/// a call to its whole budget), and sends a progress notification.
const RECHECK: Duration = Duration::from_secs(2);

/// What an endpoint offers: an upstream's declared tools, or IRIS's own listed ones.
#[derive(Clone)]
enum Offered {
    Upstream(Arc<UpstreamPlugin>),
    Own(Arc<OwnTools>),
}

/// One upstream's MCP endpoint (one per session; cheap to clone).
#[derive(Clone)]
pub struct Endpoint {
    offered: Offered,
    state: AppState,
}

impl Endpoint {
    /// The endpoint of `upstream`.
    pub fn new(upstream: Arc<UpstreamPlugin>, state: AppState) -> Endpoint {
        Endpoint {
            offered: Offered::Upstream(upstream),
            state,
        }
    }

    /// `/mcp/iris`: the endpoint of IRIS's own listed tools.
    pub fn own(tools: Arc<OwnTools>, state: AppState) -> Endpoint {
        Endpoint {
            offered: Offered::Own(tools),
            state,
        }
    }

    /// The name agents see (`/mcp/{name}`).
    fn name(&self) -> &str {
        match &self.offered {
            Offered::Upstream(u) => u.name(),
            Offered::Own(_) => super::own::NAME,
        }
    }

    /// The card's page in the web app.
    fn card_url(&self, id: &str) -> String {
        let base = crate::pairing::configured_base(&self.state.settings)
            .unwrap_or_else(|_| "http://localhost:3000".into());
        format!("{base}/activity/{id}")
    }

    /// Holds a gated call until its row is final or `IRIS_MCP_HOLD_SECS` have passed.
    async fn hold(&self, row: Approval, context: &RequestContext<RoleServer>) -> Approval {
        let mut events = self.state.store.subscribe();
        let budget = Duration::from_secs(self.state.settings.mcp_hold_secs);
        let started = tokio::time::Instant::now();
        let deadline = started + budget;
        let progress = context.meta.get_progress_token();
        let mut row = row;
        loop {
            if GatewayAnswer::of(&row).is_final() || tokio::time::Instant::now() >= deadline {
                return row;
            }
            if let Some(token) = &progress {
                let waited = started.elapsed().as_secs_f64();
                let _ = context
                    .peer
                    .notify_progress(
                        ProgressNotificationParam::new(token.clone(), waited)
                            .with_total(budget.as_secs_f64())
                            .with_message(format!(
                                "Waiting for the owner to answer “{}”",
                                row.card.title
                            )),
                    )
                    .await;
            }
            let wake =
                tokio::time::sleep_until(deadline.min(tokio::time::Instant::now() + RECHECK));
            tokio::select! {
                () = wake => {}
                () = context.ct.cancelled() => return row,
                () = about(&mut events, &row.id) => {}
            }
            match self.state.service.approval(&row.id).await {
                Ok(Some(now)) => row = now,
                Ok(None) => return row,
                Err(e) => {
                    tracing::warn!(approval = %row.id, error = %e, "re-reading a held gateway call failed");
                }
            }
        }
    }

    /// The tool result an agent gets for its gated call, from the row as it stands: an
    /// executed call's result once, then "it ran before" (the service's rule).
    async fn answer(&self, tool: &str, row: &Approval) -> CallToolResult {
        let answer = match self.state.service.gateway_answer(row).await {
            Ok(answer) => answer,
            Err(e) => {
                tracing::error!(approval = %row.id, error = %e, "recording a gateway result's delivery failed");
                return refused(format!(
                    "IRIS could not record that this result was given to you ({e}); call `{tool}` again with the same arguments. Nothing was run again."
                ));
            }
        };
        let url = self.card_url(&row.id);
        let status = match &answer {
            GatewayAnswer::Waiting => "pending",
            GatewayAnswer::Executed(_) => "executed",
            GatewayAnswer::ExecutedBefore { .. } => "executed_before",
            GatewayAnswer::Failed(_) => "failed",
            GatewayAnswer::Rejected(_) => "rejected",
            GatewayAnswer::Lapsed => "expired",
            GatewayAnswer::Unknown => "unknown",
        };
        let ran_before = match &answer {
            GatewayAnswer::ExecutedBefore { ran_at } => Some(*ran_at),
            _ => None,
        };
        let mut result = match answer {
            GatewayAnswer::Waiting => CallToolResult::success(vec![Content::text(format!(
                "This call waits for the owner's approval on IRIS: “{}” ({url}). Nothing has run yet. Call `{tool}` again with the same arguments to get its result once the owner has answered; if nobody answers, the card lapses at {}.",
                row.card.title,
                utc(row.expires_at)
            ))]),
            GatewayAnswer::Executed(recorded) => {
                serde_json::from_value::<CallToolResult>(recorded["mcp"].clone()).unwrap_or_else(
                    |_| CallToolResult::success(vec![Content::text(recorded.to_string())]),
                )
            }
            GatewayAnswer::ExecutedBefore { ran_at } => {
                CallToolResult::success(vec![Content::text(format!(
                    "This exact call already ran, once, at {} (the card “{}”, {url}), and its result was given to you then. It was not run again. To do it again, call `{tool}` with `_meta` \"{AGAIN_KEY}\": true: the owner gets a new card.",
                    utc(ran_at),
                    row.card.title
                ))])
            }
            GatewayAnswer::Failed(recorded) if recorded["status"] == "stale" => {
                CallToolResult::error(vec![Content::text(format!(
                    "The owner approved this, but its target changed since the card showed it, so nothing was written ({}). Read it again; a call with new arguments asks the owner on a new card.",
                    recorded["message"].as_str().unwrap_or("changed since you saw it")
                ))])
            }
            GatewayAnswer::Failed(recorded) => CallToolResult::error(vec![Content::text(format!(
                "The owner approved this, but it did not complete: {}. It will not be run again.",
                recorded["message"].as_str().unwrap_or("no reason recorded")
            ))]),
            GatewayAnswer::Rejected(reason) => CallToolResult::error(vec![Content::text(format!(
                "The owner rejected this: {reason}. Nothing was changed."
            ))]),
            GatewayAnswer::Lapsed => CallToolResult::error(vec![Content::text(format!(
                "The owner did not answer in time: the approval lapsed; nothing was changed. The same call asks the owner again on a new card from {}.",
                utc(row.created_at + chrono::Duration::hours(ATTACH_HOURS))
            ))]),
            GatewayAnswer::Unknown => CallToolResult::error(vec![Content::text(format!(
                "It was interrupted while running: {UNKNOWN_OUTCOME}."
            ))]),
        };
        let mut meta = result.meta.take().unwrap_or_default();
        meta.0.insert("iris/approval_id".into(), json!(row.id));
        meta.0.insert("iris/status".into(), json!(status));
        meta.0.insert("iris/url".into(), json!(url));
        if let Some(ran_at) = ran_before {
            meta.0
                .insert("iris/ran_at".into(), json!(ran_at.to_rfc3339()));
        }
        // The owner shaped the call (docs/adr/0122-shaping-a-call.md): the agent is told the
        // call that ran, so it does not mistake its own arguments for what happened.
        if let Some(decided) = &row.decided_call {
            meta.0
                .insert("iris/edited".into(), json!(row.edited_fields.is_some()));
            meta.0.insert(
                "iris/decided_call".into(),
                json!({"tool": decided.tool, "args": decided.args, "call_hash": decided.call_hash}),
            );
            if let Some(kept) = &row.approved_items {
                meta.0.insert("iris/approved_items".into(), json!(kept));
            }
        }
        result.meta = Some(meta);
        result
    }
}

/// `at` as an agent reads it ("2 Dec 2026, 14:05:00 UTC": the one format of every surface).
fn utc(at: chrono::DateTime<chrono::Utc>) -> String {
    iris_core::wire::when_utc(at)
}

/// Completes when `events` carries a change of approval `id` (or falls behind or closes).
async fn about(events: &mut tokio::sync::broadcast::Receiver<Event>, id: &str) {
    loop {
        match events.recv().await {
            Ok(Event::ApprovalResponded(row) | Event::ApprovalLapsed(row)) if row.id == id => {
                return
            }
            Ok(_) => continue,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => return,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                std::future::pending::<()>().await
            }
        }
    }
}

/// A tool error result saying `text`.
fn refused(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![Content::text(text.into())])
}

impl ServerHandler for Endpoint {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                format!("iris-{}", self.name()),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(match &self.offered {
                Offered::Upstream(u) => format!(
                    "IRIS in front of the MCP server `{}`. Calls that change or delete something wait for the owner's approval of that exact call; when a result says it waits, call the same tool again with the same arguments later. Give the owner your reason in the request's _meta as \"{REASON_KEY}\".",
                    u.name()
                ),
                Offered::Own(_) => format!(
                    "IRIS's own tools, those its owner chose to offer. Calls that change or delete something wait for the owner's approval of that exact call; when a result says it waits, call the same tool again with the same arguments later. Give the owner your reason in the request's _meta as \"{REASON_KEY}\"."
                ),
            })
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let upstream = match &self.offered {
            Offered::Upstream(u) => u,
            Offered::Own(own) => {
                let tools = own
                    .offered()
                    .into_iter()
                    .filter_map(|name| {
                        let spec = own.spec(&name)?;
                        let schema = spec.parameters.as_object().cloned().unwrap_or_default();
                        Some(rmcp::model::Tool::new(
                            name,
                            spec.description.clone(),
                            Arc::new(schema),
                        ))
                    })
                    .collect();
                return Ok(ListToolsResult::with_all_items(tools));
            }
        };
        let session = upstream
            .session()
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let tools = upstream
            .declared()
            .tools
            .iter()
            .filter_map(|t| {
                let mut tool = session.definition(&t.spec.name)?.clone();
                // A held call answers "waiting" (or the rejection) instead of the tool's own
                // output, so a gated tool's output schema is not offered: a client would refuse
                // the answer for lacking structured content.
                if t.spec.approved_per_call() {
                    tool.output_schema = None;
                }
                Some(tool)
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(agent) = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<AgentDevice>())
            .cloned()
        else {
            return Err(McpError::invalid_request(
                "no agent device on this request (an `agent` token is required)",
                None,
            ));
        };
        let name = request.name.to_string();
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        // What a call that needs no card read is kept for the agent's next card
        // (docs/adr/0123-how-a-card-came-about.md).
        let keep = |result: &Value| {
            self.state.service.gateway_read(
                &agent.0,
                &gateway_tool(self.name(), &name),
                &args,
                result,
            );
        };
        // A call that needs no card passes through now; a gated one goes on to its card.
        match &self.offered {
            Offered::Upstream(upstream) => {
                let Some(declared) = upstream.declared().tool(&name) else {
                    return Ok(refused(UpstreamError::Undeclared(name).to_string()).into());
                };
                if !declared.spec.approved_per_call() {
                    let session = match upstream.session().await {
                        Ok(s) => s,
                        Err(e) => return Ok(refused(e.to_string()).into()),
                    };
                    return Ok(match session.call(&name, &args).await {
                        Ok(result) => {
                            keep(&result);
                            serde_json::from_value::<CallToolResult>(result)
                                .map_err(|e| McpError::internal_error(e.to_string(), None))?
                        }
                        Err(e) => refused(e.to_string()),
                    }
                    .into());
                }
            }
            Offered::Own(own) => {
                let Some(spec) = own.spec(&name) else {
                    return Ok(refused(format!(
                        "IRIS does not offer `{name}` here: the owner offers {} ([mcp.iris] tools in iris.toml)",
                        own.offered().join(", ")
                    ))
                    .into());
                };
                if !spec.approved_per_call() {
                    return Ok(match own.run(&name, &args, &agent.0).await {
                        Ok(result) => {
                            keep(&result);
                            CallToolResult::success(vec![Content::text(result.to_string())])
                        }
                        Err(e) => refused(e.to_string()),
                    }
                    .into());
                }
            }
        }
        let meta = |key: &str| {
            request
                .meta
                .as_ref()
                .and_then(|m| m.0 .0.get(key))
                .or_else(|| context.meta.0 .0.get(key))
                .cloned()
        };
        let reason = meta(REASON_KEY)
            .as_ref()
            .and_then(Value::as_str)
            .map(str::to_owned);
        let again = meta(AGAIN_KEY) == Some(Value::Bool(true));
        let tool = gateway_tool(self.name(), &name);
        let requested = self
            .state
            .service
            .gateway_request(AgentCall {
                agent: &agent.0,
                tool: &tool,
                args: &args,
                reason: reason.as_deref(),
                again,
            })
            .await;
        let row = match requested {
            Ok(r) => r.approval,
            Err(GatewayError::Store(e)) => {
                return Err(McpError::internal_error(
                    format!("{e}; nothing was called"),
                    None,
                ))
            }
            Err(e) => return Ok(refused(e.to_string()).into()),
        };
        let row = self.hold(row, &context).await;
        Ok(self.answer(&name, &row).await.into())
    }
}
