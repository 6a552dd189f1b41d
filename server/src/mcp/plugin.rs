//! One upstream as a plugin of the gateway's toolbox: its declared tools named `UPSTREAM.TOOL`,
//! each with the server's own `inputSchema` as its parameters (so the toolbox checks arguments
//! against it before any card), the card made from IRIS's template, and the pinned call executed
//! on the upstream. The session is started again when the server has exited; a call the
//! upstream dropped mid-way is `unknown` in the ledger, never run again.

use std::sync::Arc;

use async_trait::async_trait;
use iris_core::manifest::{is_list_parameter, Manifest, ToolSpec};
use iris_core::mcp::{
    edit_diff, file_diff, fill, items, unreadable_preview, Preview, UpstreamManifest,
};
use iris_core::plugin::{CallContext, Description, Plugin, ToolError, ToolOutput};
use serde_json::{json, Value};
use tokio::sync::{Mutex, RwLock};

use super::upstream::{Upstream, UpstreamError};
use crate::config::UpstreamSetting;

/// How an upstream is reached (`[[mcp.upstreams]]` `command` or `url`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A program and its arguments, over stdio.
    Command(Vec<String>),
    /// A streamable HTTP endpoint.
    Url(String),
}

impl Source {
    /// The source of `setting`.
    ///
    /// # Errors
    /// A sentence naming the upstream when it has both or neither of `command` and `url`.
    pub fn of(setting: &UpstreamSetting) -> Result<Source, String> {
        match (&setting.command, &setting.url) {
            (Some(command), None) if !command.is_empty() => Ok(Source::Command(command.clone())),
            (None, Some(url)) if url.starts_with("http://") || url.starts_with("https://") => {
                Ok(Source::Url(url.clone()))
            }
            _ => Err(format!(
                "[[mcp.upstreams]] `{}` needs exactly one of `command` (a program and its arguments) or `url` (http:// or https://)",
                setting.name
            )),
        }
    }
}

/// The gateway's name of an upstream tool: `UPSTREAM.TOOL` (what the row pins and hashes, so
/// two upstreams' tools of one name never share a card).
pub fn gateway_tool(upstream: &str, tool: &str) -> String {
    format!("{upstream}.{tool}")
}

/// An upstream behind the gateway.
pub struct UpstreamPlugin {
    source: Source,
    manifest: Manifest,
    declared: UpstreamManifest,
    session: RwLock<Arc<Upstream>>,
    restarting: Mutex<()>,
}

impl UpstreamPlugin {
    /// Connects `declared`'s upstream from `source` and checks its tools.
    ///
    /// # Errors
    /// [`UpstreamError::Start`] or [`UpstreamError::Missing`].
    pub async fn start(
        declared: UpstreamManifest,
        source: Source,
    ) -> Result<UpstreamPlugin, UpstreamError> {
        let upstream = connect(&declared, &source).await?;
        let tools = declared
            .tools
            .iter()
            .map(|t| {
                let definition = upstream.definition(&t.spec.name);
                let parameters = definition
                    .map(|d| Value::Object((*d.input_schema).clone()))
                    .unwrap_or_else(|| json!({"type": "object"}));
                // The card's items argument may be narrowed where the upstream's own schema
                // says it is a list (docs/adr/0122-shaping-a-call.md); a single string is all
                // or nothing.
                let items = t
                    .card
                    .as_ref()
                    .map(|card| card.items.clone())
                    .filter(|arg| is_list_parameter(&parameters, arg));
                ToolSpec {
                    name: gateway_tool(&declared.upstream, &t.spec.name),
                    description: definition
                        .and_then(|d| d.description.as_deref())
                        .unwrap_or_default()
                        .to_owned(),
                    parameters,
                    items,
                    editable: t.editable.clone(),
                    ..t.spec.clone()
                }
            })
            .collect();
        let manifest = Manifest::checked(declared.upstream.clone(), tools).map_err(|e| {
            UpstreamError::Start {
                upstream: declared.upstream.clone(),
                command: String::new(),
                why: e.to_string(),
            }
        })?;
        Ok(UpstreamPlugin {
            source,
            manifest,
            declared,
            session: RwLock::new(Arc::new(upstream)),
            restarting: Mutex::new(()),
        })
    }

    /// The upstream's name (`/mcp/{name}`).
    pub fn name(&self) -> &str {
        &self.declared.upstream
    }

    /// IRIS's manifest for it (tool names as the upstream has them).
    pub fn declared(&self) -> &UpstreamManifest {
        &self.declared
    }

    /// The live session, started again first when the server has exited.
    ///
    /// # Errors
    /// [`UpstreamError::Start`] when it cannot be started again.
    pub async fn session(&self) -> Result<Arc<Upstream>, UpstreamError> {
        let current = self.session.read().await.clone();
        if !current.is_closed() {
            return Ok(current);
        }
        let _one = self.restarting.lock().await;
        let current = self.session.read().await.clone();
        if !current.is_closed() {
            return Ok(current);
        }
        tracing::warn!(upstream = %self.name(), "the MCP upstream has stopped; starting it again");
        let fresh = Arc::new(connect(&self.declared, &self.source).await?);
        *self.session.write().await = fresh.clone();
        Ok(fresh)
    }

    /// Stops the upstream (its process group with it).
    pub async fn stop(&self) {
        self.session.read().await.close();
    }

    /// The target file as the upstream's `read_text_file` reads it now: its text, absent (the
    /// server says ENOENT: a new file), or unreadable (why).
    async fn read_target(&self, path: &str) -> FileSeen {
        match self.session().await {
            Ok(session) => match session.call("read_text_file", &json!({"path": path})).await {
                Ok(read) if read["isError"] != json!(true) => FileSeen::Text(result_text(&read)),
                Ok(read) if result_text(&read).contains("ENOENT") => FileSeen::Absent,
                Ok(read) => FileSeen::Unreadable(result_text(&read)),
                Err(e) => FileSeen::Unreadable(e.to_string()),
            },
            Err(e) => FileSeen::Unreadable(e.to_string()),
        }
    }

    /// The change a `write_file` (`content`) or `edit_file` (`edits`) call makes to `path`,
    /// against the file as `seen` (a file the upstream cannot read counts as absent).
    fn file_preview(args: &Value, seen: &FileSeen) -> Vec<String> {
        let path = args["path"].as_str().unwrap_or_default();
        let before = match seen {
            FileSeen::Text(text) => Some(text.as_str()),
            FileSeen::Absent | FileSeen::Unreadable(_) => None,
        };
        if let Some(content) = args["content"].as_str() {
            return match seen {
                FileSeen::Unreadable(why) => unreadable_preview(path, why, content),
                _ => file_diff(path, before, content),
            };
        }
        let edits: Vec<(String, String)> = args["edits"]
            .as_array()
            .map(|edits| {
                edits
                    .iter()
                    .map(|e| {
                        let text = |key: &str| e[key].as_str().unwrap_or_default().to_owned();
                        (text("oldText"), text("newText"))
                    })
                    .collect()
            })
            .unwrap_or_default();
        edit_diff(path, before, &edits)
    }

    /// The upstream's own name of gateway tool `tool` (`files.write_file` → `write_file`).
    fn upstream_tool<'t>(&self, tool: &'t str) -> Result<&'t str, ToolError> {
        tool.strip_prefix(self.name())
            .and_then(|t| t.strip_prefix('.'))
            .ok_or_else(|| ToolError::UnknownTool(tool.to_owned()))
    }
}

/// A previewed write's target as read through the upstream.
enum FileSeen {
    /// Its text.
    Text(String),
    /// No such file (a new one).
    Absent,
    /// It could not be read (why).
    Unreadable(String),
}

impl FileSeen {
    /// What a card pins of it: the SHA-256 of its text, that it is absent, or that it could
    /// not be read (then still unreadable is as the owner saw it).
    fn precondition(&self, path: &str) -> Value {
        use sha2::Digest;
        match self {
            FileSeen::Text(text) => json!({
                "path": path,
                "sha256": hex::encode(sha2::Sha256::digest(text.as_bytes())),
            }),
            FileSeen::Absent => json!({"path": path, "absent": true}),
            FileSeen::Unreadable(_) => json!({"path": path, "unreadable": true}),
        }
    }
}

/// How long an upstream has to start and list its tools, in seconds: a server that never
/// answers stops `iris serve` with a sentence instead of hanging it (the child is killed when
/// its transport is dropped).
pub const START_SECS: u64 = 30;

async fn connect(declared: &UpstreamManifest, source: &Source) -> Result<Upstream, UpstreamError> {
    let started = async {
        match source {
            Source::Command(command) => Upstream::stdio(declared.clone(), command).await,
            Source::Url(url) => Upstream::http(declared.clone(), url).await,
        }
    };
    let limit = std::time::Duration::from_secs(start_secs());
    match tokio::time::timeout(limit, started).await {
        Ok(connected) => connected,
        Err(_) => Err(UpstreamError::Start {
            upstream: declared.upstream.clone(),
            command: match source {
                Source::Command(command) => command.join(" "),
                Source::Url(url) => url.clone(),
            },
            why: format!(
                "it did not complete the MCP handshake and list its tools within {} s (is it an MCP server speaking {}?)",
                limit.as_secs(),
                match source {
                    Source::Command(_) => "stdio",
                    Source::Url(_) => "streamable HTTP",
                }
            ),
        }),
    }
}

/// [`START_SECS`], or `IRIS_MCP_START_SECS` when set to a positive number of seconds.
fn start_secs() -> u64 {
    std::env::var("IRIS_MCP_START_SECS")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .filter(|s| *s > 0)
        .unwrap_or(START_SECS)
}

/// The text of an MCP tool result's text blocks, joined (what an error result says).
pub fn result_text(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[async_trait]
impl Plugin for UpstreamPlugin {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The arguments as the agent sent them (checked against the upstream's schema): the
    /// canonical JSON of exactly these is pinned and hashed.
    async fn normalise(
        &self,
        _tool: &str,
        args: Value,
        _ctx: &CallContext,
    ) -> Result<Value, ToolError> {
        Ok(args)
    }

    async fn describe(
        &self,
        tool: &str,
        args: &Value,
        _ctx: &CallContext,
    ) -> Result<Description, ToolError> {
        let name = self.upstream_tool(tool)?;
        let card = self
            .declared
            .tool(name)
            .and_then(|t| t.card.as_ref())
            .ok_or_else(|| ToolError::UnknownTool(tool.to_owned()))?;
        let acted_on = items(card, args).map_err(|reason| ToolError::InvalidArgs {
            tool: tool.to_owned(),
            reason,
        })?;
        let lines = acted_on
            .iter()
            .map(|item| fill(&card.line, args, Some(item)))
            .collect();
        // A write against a file the card previews pins the file as the card showed it, on
        // every item: just before it runs, the file is read again and the write refused
        // ("changed since you saw it") when it differs (docs/liveness.md "gateway writes").
        let (preview, preconditions) = match card.preview {
            Some(Preview::FileDiff) => {
                let path = args["path"].as_str().unwrap_or_default();
                let seen = self.read_target(path).await;
                let pinned = seen.precondition(path);
                (
                    Self::file_preview(args, &seen),
                    vec![pinned; acted_on.len()],
                )
            }
            None => (Vec::new(), Vec::new()),
        };
        Ok(Description {
            title: fill(&card.title, args, None),
            action: fill(&card.action, args, None),
            lines,
            items: acted_on,
            preview,
            preconditions,
            ..Description::default()
        })
    }

    /// The target file is still as the card showed it (`{"path", "sha256"}`, `{"path",
    /// "absent": true}` or `{"path", "unreadable": true}`), read again through the upstream.
    async fn check_precondition(
        &self,
        _tool: &str,
        _item: &str,
        precondition: &Value,
        _ctx: &CallContext,
    ) -> bool {
        let Some(path) = precondition["path"].as_str() else {
            // Nothing pinned (not a previewed write): nothing to compare.
            return precondition.is_null();
        };
        self.read_target(path).await.precondition(path) == *precondition
    }

    /// Calls the upstream with the pinned arguments: `{"status": "executed", "summary": TEXT,
    /// "mcp": RESULT}` with the upstream's result as it came (and its text, escaped and cut, for
    /// the card); an error result is a failure, a dropped call `unknown`.
    async fn execute(
        &self,
        tool: &str,
        args: &Value,
        _ctx: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        let name = self.upstream_tool(tool)?;
        let failed = |reason: String| ToolError::Failed {
            tool: tool.to_owned(),
            reason,
        };
        let session = self.session().await.map_err(|e| failed(e.to_string()))?;
        let result = session.call(name, args).await.map_err(|e| match e {
            UpstreamError::Lost { .. } => ToolError::Interrupted {
                tool: tool.to_owned(),
                reason: e.to_string(),
            },
            refused => failed(refused.to_string()),
        })?;
        if result["isError"] == json!(true) {
            return Err(failed(format!(
                "the upstream answered with an error: {}",
                result_text(&result)
            )));
        }
        // The card's outcome line: what the server said it did.
        let summary = iris_core::mcp::escaped(&result_text(&result));
        Ok(ToolOutput::plain(
            json!({"status": "executed", "summary": summary, "mcp": result}),
        ))
    }
}
