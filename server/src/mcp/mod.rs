//! The MCP gateway (DESIGN §9 "any agent's tools behind the same card"): IRIS in front of other
//! MCP servers, with its own manifest for their tools (`iris_core::mcp`).
//!
//! - `upstream.rs`: one upstream server reached over stdio (a child process in its own process
//!   group) or streamable HTTP, its tools checked against IRIS's manifest, arguments checked
//!   against the upstream's own `inputSchema` before anything else, and calls of declared tools
//!   only.
//! - `plugin.rs`: an upstream as a plugin of the gateway's toolbox (the card from the
//!   manifest's template, the pinned call executed on the upstream by the approvals service).
//! - `endpoint.rs`: `/mcp/{name}`, the MCP server agents connect to with an `agent` token.
//! - `bridge.rs`: `iris mcp NAME`, the same endpoint over stdio for agents that spawn servers.
//! - `own.rs`: `/mcp/iris`, IRIS's own tools the owner lists in `[mcp.iris] tools`, as a plugin
//!   of the gateway's toolbox whose verbs are the owning plugins'.

pub mod bridge;
pub mod endpoint;
pub mod own;
pub mod plugin;
pub mod upstream;

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Context;
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use iris_core::mcp::UpstreamManifest;
use iris_core::plugin::Plugin;
use iris_core::ports::Scope;
use iris_core::toolbox::Toolbox;
use iris_core::wire::{PluginInfo, PluginList, ServerHints};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::auth::{authenticate, Identified};
use crate::config::Settings;
use crate::state::AppState;
use endpoint::{AgentDevice, Endpoint};
use plugin::{Source, UpstreamPlugin};

/// The configured upstreams, connected, and IRIS's own tools offered at `/mcp/iris`.
pub struct Gateway {
    upstreams: BTreeMap<String, Arc<UpstreamPlugin>>,
    own: Option<Arc<own::OwnTools>>,
}

impl Gateway {
    /// Reads each `[[mcp.upstreams]]` manifest and connects its upstream, and offers the tools
    /// of `plugins` (the owner's assistant's) that `[mcp.iris] tools` lists; `None` when there
    /// is neither.
    ///
    /// # Errors
    /// A sentence naming the upstream: a bad or reserved (`iris`) name, source or manifest, a
    /// manifest for another upstream, or a server that cannot be started or lacks a declared
    /// tool; or a listed tool IRIS does not have.
    pub async fn start(
        settings: &Settings,
        plugins: Vec<Arc<dyn Plugin>>,
    ) -> anyhow::Result<Option<Gateway>> {
        let listed = settings
            .mcp
            .iris
            .as_ref()
            .map(|i| i.tools.clone())
            .unwrap_or_default();
        if settings.mcp.upstreams.is_empty() && listed.is_empty() {
            return Ok(None);
        }
        let own = if listed.is_empty() {
            None
        } else {
            Some(Arc::new(own::OwnTools::new(plugins, &listed)?))
        };
        let mut upstreams = BTreeMap::new();
        for setting in &settings.mcp.upstreams {
            let name = &setting.name;
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
            {
                anyhow::bail!("[[mcp.upstreams]] name `{name}`: use lower-case letters, digits, `-` and `_` (it is the /mcp/{{name}} path)");
            }
            if upstreams.contains_key(name) {
                anyhow::bail!("[[mcp.upstreams]] name `{name}` is used twice");
            }
            if name == own::NAME {
                anyhow::bail!("[[mcp.upstreams]] name `{name}` is reserved: /mcp/iris offers IRIS's own tools ([mcp.iris] tools)");
            }
            let source = Source::of(setting).map_err(anyhow::Error::msg)?;
            let path = settings.config_dir.join(&setting.manifest);
            let text = std::fs::read_to_string(&path).with_context(|| {
                format!(
                    "reading the manifest of MCP upstream `{name}` at {}",
                    path.display()
                )
            })?;
            let manifest = UpstreamManifest::from_yaml(&text).with_context(|| {
                format!("the manifest of MCP upstream `{name}` ({})", path.display())
            })?;
            if &manifest.upstream != name {
                anyhow::bail!(
                    "the manifest {} is for upstream `{}`, not `{name}`",
                    path.display(),
                    manifest.upstream
                );
            }
            let plugin = UpstreamPlugin::start(manifest, source).await?;
            tracing::info!(upstream = %name, "MCP upstream connected");
            upstreams.insert(name.clone(), Arc::new(plugin));
        }
        Ok(Some(Gateway { upstreams, own }))
    }

    /// The gateway's toolbox: every upstream's declared tools as `UPSTREAM.TOOL`.
    ///
    /// # Errors
    /// When two upstreams' tools clash (they cannot: names are prefixed and unique).
    pub fn toolbox(&self) -> anyhow::Result<Toolbox> {
        let mut plugins: Vec<Arc<dyn Plugin>> = self
            .upstreams
            .values()
            .map(|p| p.clone() as Arc<dyn Plugin>)
            .collect();
        if let Some(own) = &self.own {
            plugins.push(own.clone());
        }
        Toolbox::new(plugins).context("loading the MCP upstreams' manifests")
    }

    /// The upstreams by name.
    pub fn upstreams(&self) -> &BTreeMap<String, Arc<UpstreamPlugin>> {
        &self.upstreams
    }

    /// IRIS's own tools offered at `/mcp/iris`, when `[mcp.iris] tools` lists any.
    pub fn own(&self) -> Option<&Arc<own::OwnTools>> {
        self.own.as_ref()
    }

    /// Each upstream as the Plugins page lists it: its declared tools (as `UPSTREAM.TOOL`, what
    /// cards pin) with IRIS's effect and gate, the server's own hints beside them, and the
    /// path agents connect to.
    pub async fn plugin_infos(&self) -> Vec<PluginInfo> {
        let mut infos = Vec::new();
        for (name, upstream) in &self.upstreams {
            let session = upstream.session().await.ok();
            let mut tools = upstream
                .manifest()
                .tools
                .iter()
                .map(|t| t.to_wire())
                .collect::<Vec<_>>();
            for (tool, declared) in tools.iter_mut().zip(&upstream.declared().tools) {
                let hints = session
                    .as_ref()
                    .and_then(|s| s.definition(&declared.spec.name))
                    .and_then(|d| d.annotations.as_ref());
                tool.server_hints =
                    Some(hints.map_or_else(ServerHints::default, |a| ServerHints {
                        read_only: a.read_only_hint,
                        destructive: a.destructive_hint,
                        idempotent: a.idempotent_hint,
                        open_world: a.open_world_hint,
                    }));
            }
            infos.push(PluginInfo {
                name: name.clone(),
                tools,
                mcp_path: Some(format!("/mcp/{name}")),
                status: Vec::new(),
            });
        }
        if let Some(own) = &self.own {
            infos.push(PluginInfo {
                name: own::NAME.into(),
                tools: own.manifest().tools.iter().map(|t| t.to_wire()).collect(),
                mcp_path: Some(format!("/mcp/{}", own::NAME)),
                status: vec![format!(
                    "IRIS's own tools for MCP clients with an agent token: {}.",
                    own.offered().join(", ")
                )],
            });
        }
        infos
    }

    /// Stops every upstream (their process groups with them).
    pub async fn stop(&self) {
        for upstream in self.upstreams.values() {
            upstream.stop().await;
        }
    }
}

/// Every plugin the owner's assistant has, then every MCP upstream behind the gateway
/// (`GET /api/plugins` and the Plugins page).
pub async fn plugin_list(state: &AppState) -> PluginList {
    let mut list = state.service.agent().toolbox().plugin_list().await;
    if let Some(gateway) = &state.gateway {
        list.plugins.extend(gateway.plugin_infos().await);
    }
    list
}

/// `/mcp/{name}` for each upstream, and `/mcp/iris` when `[mcp.iris] tools` lists any, behind
/// [`agent_only`].
pub fn routes(state: &AppState) -> Router<AppState> {
    // Any other /mcp/ path: a sentence naming what is configured, never the web app's page.
    let configured: Vec<String> = state
        .gateway
        .as_ref()
        .map(|g| {
            let mut names: Vec<String> = g.upstreams().keys().cloned().collect();
            if g.own().is_some() {
                names.push(own::NAME.to_owned());
            }
            names
        })
        .unwrap_or_default();
    let no_upstream = move |Path(rest): Path<String>| {
        let name = rest.split('/').next().unwrap_or_default().to_owned();
        let configured = configured.clone();
        async move {
            let here = if configured.is_empty() {
                "this IRIS has no MCP upstreams ([[mcp.upstreams]] in iris.toml) and offers none of its own tools ([mcp.iris] tools)".to_owned()
            } else {
                format!("configured: {}", configured.join(", "))
            };
            (
                StatusCode::NOT_FOUND,
                format!("no MCP upstream `{name}` here ({here})"),
            )
        }
    };
    let mut router = Router::new().route("/mcp/{*rest}", any(no_upstream));
    let Some(gateway) = &state.gateway else {
        return router.layer(middleware::from_fn_with_state(state.clone(), agent_only));
    };
    let own = gateway.own().map(|own| {
        (
            own::NAME.to_owned(),
            Endpoint::own(own.clone(), state.clone()),
        )
    });
    let upstreams = gateway
        .upstreams()
        .iter()
        .map(|(name, upstream)| (name.clone(), Endpoint::new(upstream.clone(), state.clone())));
    for (name, endpoint) in upstreams.chain(own) {
        // Only bearer tokens are accepted here (no cookie, no ambient credential), so the
        // DNS-rebinding guard on Host and Origin has nothing to protect and would refuse an
        // IRIS reached by its public name.
        let config = StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .disable_allowed_origins()
            .with_cancellation_token(state.shutdown.child_token());
        let service = StreamableHttpService::new(
            move || Ok(endpoint.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        router = router.nest_service(&format!("/mcp/{name}"), service);
    }
    router.layer(middleware::from_fn_with_state(state.clone(), agent_only))
}

/// Lets through requests with the bearer token of a live `agent` device (marking them with
/// [`AgentDevice`]); 401 without one, 403 for another scope.
pub async fn agent_only(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    if crate::auth::bearer_token(req.headers()).is_none() {
        return (
            StatusCode::UNAUTHORIZED,
            "an MCP agent connects with `Authorization: Bearer TOKEN` of an agent device (`iris devices add --name NAME --scope agent`)",
        )
            .into_response();
    }
    match authenticate(&state.store, req.headers(), req.extensions()).await {
        Ok(Identified::Device { device, .. }) if device.scope == Scope::Agent => {
            req.extensions_mut().insert(AgentDevice(device.name));
            next.run(req).await
        }
        Ok(Identified::Device { device, .. }) => (
            StatusCode::FORBIDDEN,
            format!(
                "device `{}` has {} scope; /mcp/ is for devices of the agent scope (`iris devices add --name NAME --scope agent`)",
                device.name,
                device.scope.as_str()
            ),
        )
            .into_response(),
        Ok(_) => (
            StatusCode::UNAUTHORIZED,
            "the token names no live device (unknown or revoked)",
        )
            .into_response(),
        Err(e) => crate::error::ApiError::from(e).into_response(),
    }
}
