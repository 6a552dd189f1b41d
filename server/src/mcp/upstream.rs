//! One upstream MCP server over stdio or streamable HTTP, by `rmcp`'s client: over stdio started
//! as a child process in a process group of its own (so a stop leaves none of its children behind), its tools listed
//! once and checked against IRIS's manifest (a declared tool the server lacks stops the
//! connection with a sentence), arguments checked against the upstream's own `inputSchema`
//! before any card or call, and only declared tools called.

use std::collections::BTreeMap;

use iris_core::mcp::{UpstreamManifest, UpstreamTool};
use rmcp::model::{CallToolRequestParams, Tool};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

/// Why an upstream could not be used, or a call was refused before it reached the upstream.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// The command could not be started, or the MCP handshake failed.
    #[error("the MCP upstream `{upstream}` could not be started ({command}): {why}")]
    Start {
        /// The upstream's name.
        upstream: String,
        /// The command line.
        command: String,
        /// What failed.
        why: String,
    },
    /// IRIS's manifest declares a tool the upstream does not offer.
    #[error("the MCP upstream `{upstream}` does not offer `{tool}`, which its manifest declares; fix the manifest or the server")]
    Missing {
        /// The upstream's name.
        upstream: String,
        /// The tool.
        tool: String,
    },
    /// A tool the manifest does not declare: never offered, never called.
    #[error("`{0}` is not a tool IRIS's manifest declares for this upstream; nothing was called")]
    Undeclared(String),
    /// The arguments do not fit the upstream's `inputSchema`.
    #[error("the arguments of `{tool}` do not fit its input schema: {why}; nothing was called")]
    BadArguments {
        /// The tool.
        tool: String,
        /// The first violation.
        why: String,
    },
    /// The upstream answered the call with a protocol error (it refused it).
    #[error("the MCP upstream `{upstream}` refused `{tool}`: {why}")]
    Call {
        /// The upstream's name.
        upstream: String,
        /// The tool.
        tool: String,
        /// What failed.
        why: String,
    },
    /// The call was sent and no answer came (the server exited, the connection dropped): it
    /// may or may not have acted.
    #[error("the MCP upstream `{upstream}` stopped answering during `{tool}`: {why}")]
    Lost {
        /// The upstream's name.
        upstream: String,
        /// The tool.
        tool: String,
        /// What failed.
        why: String,
    },
}

/// Where util-linux's `setpriv` may be (see [`Upstream::stdio`]).
const PDEATHSIG: [&str; 2] = ["/usr/bin/setpriv", "/bin/setpriv"];

/// A connected upstream: its manifest, each declared tool's input schema, and the session.
pub struct Upstream {
    manifest: UpstreamManifest,
    schemas: BTreeMap<String, Value>,
    tools: BTreeMap<String, Tool>,
    session: RunningService<RoleClient, ()>,
}

impl Upstream {
    /// Starts `command` (program and arguments) for `manifest`'s upstream over stdio and
    /// checks its tools against the manifest.
    ///
    /// # Errors
    /// [`UpstreamError::Start`], or [`UpstreamError::Missing`] for a declared tool the server
    /// does not offer (the process is stopped).
    pub async fn stdio(
        manifest: UpstreamManifest,
        command: &[String],
    ) -> Result<Upstream, UpstreamError> {
        let upstream = manifest.upstream.clone();
        let shown = command.join(" ");
        let start = |why: String| UpstreamError::Start {
            upstream: upstream.clone(),
            command: shown.clone(),
            why,
        };
        let (program, args) = command
            .split_first()
            .ok_or_else(|| start("the command is empty".into()))?;
        // It dies with IRIS, however IRIS ends (SIGKILL included, or an error before any
        // cleanup could run), so a server that ignores its closed stdin is not left behind:
        // util-linux's `setpriv --pdeathsig KILL` (Debian's essential set) asks the kernel for
        // that, then becomes the server itself (the workspace forbids the `unsafe` prctl call).
        let mut cmd = match PDEATHSIG.iter().find(|p| std::path::Path::new(p).exists()) {
            Some(setpriv) => {
                let mut cmd = tokio::process::Command::new(setpriv);
                cmd.args(["--pdeathsig", "KILL", "--", program]);
                cmd
            }
            None => tokio::process::Command::new(program),
        };
        cmd.args(args);
        // Its own process group: stopping it stops whatever it started (npx starts node).
        #[cfg(unix)]
        cmd.process_group(0);
        let transport = TokioChildProcess::new(cmd).map_err(|e| start(e.to_string()))?;
        let session = ().serve(transport).await.map_err(|e| start(e.to_string()))?;
        Upstream::checked(manifest, session, &shown).await
    }

    /// Reaches `url` (streamable HTTP) for `manifest`'s upstream and checks its tools against
    /// the manifest.
    ///
    /// # Errors
    /// As [`Upstream::stdio`].
    pub async fn http(manifest: UpstreamManifest, url: &str) -> Result<Upstream, UpstreamError> {
        crate::tls::use_ring();
        let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
        let session =
            ().serve(transport)
                .await
                .map_err(|e| UpstreamError::Start {
                    upstream: manifest.upstream.clone(),
                    command: url.to_owned(),
                    why: e.to_string(),
                })?;
        Upstream::checked(manifest, session, url).await
    }

    /// Lists the connected server's tools and keeps the declared ones (a declared tool the
    /// server lacks stops the session).
    async fn checked(
        manifest: UpstreamManifest,
        session: RunningService<RoleClient, ()>,
        shown: &str,
    ) -> Result<Upstream, UpstreamError> {
        let upstream = manifest.upstream.clone();
        let offered = match session.list_all_tools().await {
            Ok(tools) => tools,
            Err(e) => {
                let _ = session.cancel().await;
                return Err(UpstreamError::Start {
                    upstream,
                    command: shown.to_owned(),
                    why: format!("listing its tools failed: {e}"),
                });
            }
        };
        let mut tools = BTreeMap::new();
        for declared in &manifest.tools {
            let name = &declared.spec.name;
            let Some(tool) = offered.iter().find(|t| t.name == name.as_str()) else {
                let _ = session.cancel().await;
                return Err(UpstreamError::Missing {
                    upstream,
                    tool: name.clone(),
                });
            };
            let schema = Value::Object((*tool.input_schema).clone());
            if let Err(wrong) = manifest.check_schema(name, &schema) {
                let _ = session.cancel().await;
                return Err(UpstreamError::Start {
                    upstream,
                    command: shown.to_owned(),
                    why: wrong.to_string(),
                });
            }
            tools.insert(name.clone(), tool.clone());
        }
        let schemas = tools
            .iter()
            .map(|(name, tool)| (name.clone(), Value::Object((*tool.input_schema).clone())))
            .collect();
        Ok(Upstream {
            manifest,
            schemas,
            tools,
            session,
        })
    }

    /// IRIS's manifest for this upstream.
    pub fn manifest(&self) -> &UpstreamManifest {
        &self.manifest
    }

    /// The server's own definition of declared tool `name` (its description, `inputSchema` and
    /// annotations, shown to agents as they are and never trusted).
    pub fn definition(&self, name: &str) -> Option<&Tool> {
        self.tools.get(name)
    }

    /// Whether the session has ended (the server exited or the connection dropped).
    pub fn is_closed(&self) -> bool {
        self.session.is_closed() || self.session.peer().is_transport_closed()
    }

    /// The declared tool `name` (what agents are offered).
    ///
    /// # Errors
    /// [`UpstreamError::Undeclared`].
    pub fn tool(&self, name: &str) -> Result<&UpstreamTool, UpstreamError> {
        self.manifest
            .tool(name)
            .ok_or_else(|| UpstreamError::Undeclared(name.to_owned()))
    }

    /// Checks `args` for tool `name` against the upstream's own `inputSchema` (before any card).
    ///
    /// # Errors
    /// [`UpstreamError::Undeclared`], [`UpstreamError::BadArguments`].
    pub fn check_args(&self, name: &str, args: &Value) -> Result<(), UpstreamError> {
        self.tool(name)?;
        let schema = self
            .schemas
            .get(name)
            .ok_or_else(|| UpstreamError::Undeclared(name.to_owned()))?;
        let validator =
            jsonschema::validator_for(schema).map_err(|e| UpstreamError::BadArguments {
                tool: name.to_owned(),
                why: format!("its input schema does not compile ({e})"),
            })?;
        if let Some(error) = validator.iter_errors(args).next() {
            return Err(UpstreamError::BadArguments {
                tool: name.to_owned(),
                why: error.to_string(),
            });
        }
        Ok(())
    }

    /// Calls declared tool `name` with `args` (checked first): the upstream's result as JSON
    /// (`{"content": [...], "isError": …}`).
    ///
    /// # Errors
    /// [`UpstreamError::Undeclared`], [`UpstreamError::BadArguments`] (nothing was called),
    /// [`UpstreamError::Call`] (the server refused it), [`UpstreamError::Lost`] (no answer).
    pub async fn call(&self, name: &str, args: &Value) -> Result<Value, UpstreamError> {
        self.check_args(name, args)?;
        let arguments = args.as_object().cloned().unwrap_or_default();
        let result = self
            .session
            .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments))
            .await
            .map_err(|e| {
                let (upstream, tool) = (self.manifest.upstream.clone(), name.to_owned());
                match e {
                    ServiceError::McpError(refusal) => UpstreamError::Call {
                        upstream,
                        tool,
                        why: refusal.to_string(),
                    },
                    lost => UpstreamError::Lost {
                        upstream,
                        tool,
                        why: lost.to_string(),
                    },
                }
            })?;
        serde_json::to_value(result).map_err(|e| UpstreamError::Call {
            upstream: self.manifest.upstream.clone(),
            tool: name.to_owned(),
            why: e.to_string(),
        })
    }

    /// Stops the session and its process group.
    pub async fn stop(self) {
        let _ = self.session.cancel().await;
    }

    /// Stops the session (its process group with it) from a shared handle.
    pub fn close(&self) {
        self.session.cancellation_token().cancel();
    }
}
