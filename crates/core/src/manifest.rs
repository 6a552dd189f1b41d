//! Plugin manifests: YAML parsed into typed tools, the loader's refusals (DESIGN §4), the derived
//! gate and the one predicate that routes a call to the approval path (DESIGN §2).
//!
//! A [`Registry`] holds every loaded manifest and resolves a name the model wrote (an alias, a
//! near-miss spelling) to the canonical tool *before* any check, so no spelling slips past the
//! gate; a name no manifest declares is refused, never treated as read.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::wire::{Effect, PluginInfo, PluginList, PluginTool, ToolGate};

/// `confirm` on a write tool (DESIGN §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confirm {
    /// Ask once (advice; no row, no halt).
    Once,
    /// Never ask.
    Never,
}

/// `approval` on a write tool: only `pinned` exists (DESIGN §2 "approval: pinned").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// Route the write through per-call approval.
    Pinned,
}

/// Derived gate, shown in the Plugins panel (DESIGN §2 "gate").
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    /// Runs without asking.
    None,
    /// Write with `confirm: once`: advice only.
    Confirm,
    /// Destructive, or write with `approval: pinned`: approved per call.
    Approval,
}

/// One declared tool, after the loader's checks.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Canonical name (what rows pin).
    pub name: String,
    /// The plugin that declares it.
    pub plugin: String,
    /// What the model is told the tool does.
    pub description: String,
    /// Declared effect.
    pub effect: Effect,
    /// `confirm` (writes only).
    pub confirm: Option<Confirm>,
    /// `approval: pinned` (writes only).
    pub approval: Option<ApprovalMode>,
    /// The reversing tool (destructive only).
    pub undo: Option<String>,
    /// Days the undo stays possible (needs `undo`).
    pub undo_window_days: Option<u32>,
    /// The tool a write's reply offers to reverse it ("undo that"), for a write without a card
    /// (shown on the Plugins page; nothing runs it but the model on the owner's word: DESIGN §4
    /// keeps `undo` itself on destructive tools).
    pub reply_undo: Option<String>,
    /// Whether the tool's result is shown to the owner as the answer (never on destructive).
    pub answers_directly: bool,
    /// Other spellings that resolve to this tool.
    pub aliases: Vec<String>,
    /// JSON Schema of the arguments (an object schema).
    pub parameters: Value,
    /// The list argument that names the call's items (`items: ARG`), which an approval may
    /// narrow to some of them (docs/adr/0122-shaping-a-call.md); `None` when the tool declares
    /// none (its cards are all or nothing).
    pub items: Option<String>,
    /// The arguments the owner may edit before approving a call of this tool (`editable:
    /// [...]`; docs/adr/0122-shaping-a-call.md): parameters, never the `items` argument. Empty
    /// for most tools.
    pub editable: Vec<String>,
    /// Which fields of the tool's result carry text from outside the owner's control (`untrusted:
    /// [subject, body, snippet]` for mail): what a card's flags look in for argument values
    /// the owner never wrote (docs/adr/0123-how-a-card-came-about.md). The MCP gateway marks
    /// every field of an upstream's result ([`Untrusted::Every`]).
    pub untrusted: Untrusted,
}

/// Where a tool's result carries text from outside ([`ToolSpec::untrusted`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Untrusted {
    /// The values (strings, at any depth) under these keys, wherever an object in the result
    /// has them. Empty (the default): nothing in the result is marked.
    Fields(Vec<String>),
    /// Every string of the result (an MCP upstream's: IRIS cannot tell its fields apart).
    Every,
}

impl Default for Untrusted {
    fn default() -> Self {
        Untrusted::Fields(Vec::new())
    }
}

impl Untrusted {
    /// Whether nothing of the result is marked.
    pub fn is_none(&self) -> bool {
        matches!(self, Untrusted::Fields(fields) if fields.is_empty())
    }
}

impl ToolSpec {
    /// DESIGN §2 "gate": `approval` for destructive or pinned writes, `confirm` for
    /// write + confirm once, else `none`.
    pub fn gate(&self) -> Gate {
        if self.effect == Effect::Destructive || self.approval == Some(ApprovalMode::Pinned) {
            Gate::Approval
        } else if self.effect == Effect::Write && self.confirm == Some(Confirm::Once) {
            Gate::Confirm
        } else {
            Gate::None
        }
    }

    /// DESIGN §2 "approved per call": `effect == destructive || gate == approval`. The one
    /// predicate that routes a call to the approval path.
    pub fn approved_per_call(&self) -> bool {
        self.effect == Effect::Destructive || self.gate() == Gate::Approval
    }
}

/// A loaded manifest: the plugin's name and its tools in declaration order.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// Plugin name.
    pub plugin: String,
    /// Declared tools.
    pub tools: Vec<ToolSpec>,
}

/// Why the loader refused a manifest. Each names the tool and the rule (DESIGN §4).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ManifestError {
    /// Not YAML, or not the manifest's shape (includes a missing or unknown `effect`).
    #[error("manifest is not valid: {0} (DESIGN §4: `effect` is required and one of read | write | destructive)")]
    Parse(String),
    /// `confirm` on a read or destructive tool.
    #[error("tool `{tool}`: `confirm` is only allowed on a write tool, not on a {effect} tool (DESIGN §4)")]
    ConfirmNotOnWrite {
        /// The tool.
        tool: String,
        /// Its effect.
        effect: &'static str,
    },
    /// `answers_directly` on a destructive tool.
    #[error("tool `{tool}`: `answers_directly` is refused on a destructive tool (DESIGN §4)")]
    AnswersDirectlyOnDestructive {
        /// The tool.
        tool: String,
    },
    /// `undo` on a tool that is not destructive.
    #[error("tool `{tool}`: `undo` is only allowed on a destructive tool (DESIGN §4)")]
    UndoNotOnDestructive {
        /// The tool.
        tool: String,
    },
    /// `reply_undo` on a tool that is not a write without a card of its own (a destructive tool
    /// declares `undo`; a pinned write's card has none).
    #[error("tool `{tool}`: `reply_undo` is only allowed on a write tool that is not pinned; a destructive tool declares `undo` (DESIGN §4)")]
    ReplyUndoNotOnPlainWrite {
        /// The tool.
        tool: String,
    },
    /// `undo` names a tool the manifest does not declare.
    #[error("tool `{tool}`: undo tool `{undo}` is not declared in the same manifest (DESIGN §4)")]
    UndoUnknown {
        /// The tool.
        tool: String,
        /// The missing undo tool.
        undo: String,
    },
    /// The undo tool is not `effect: write` with `confirm: never`.
    #[error("tool `{tool}`: undo tool `{undo}` must be `effect: write` with `confirm: never` (DESIGN §4)")]
    UndoNotPlainWrite {
        /// The tool.
        tool: String,
        /// The undo tool.
        undo: String,
    },
    /// The undo tool is a pinned write.
    #[error("tool `{tool}`: undo tool `{undo}` has `approval: pinned`; a pinned tool cannot be an undo (DESIGN §4)")]
    UndoIsPinned {
        /// The tool.
        tool: String,
        /// The undo tool.
        undo: String,
    },
    /// `undo_window_days` without `undo`, or not a positive whole number.
    #[error("tool `{tool}`: `undo_window_days` needs `undo` and must be a positive whole number (DESIGN §4)")]
    BadUndoWindow {
        /// The tool.
        tool: String,
    },
    /// `approval: pinned` on a tool that is not a write.
    #[error("tool `{tool}`: `approval: pinned` is only allowed on a write tool (DESIGN §4)")]
    PinnedNotOnWrite {
        /// The tool.
        tool: String,
    },
    /// `approval: pinned` together with `confirm`.
    #[error("tool `{tool}`: `approval: pinned` excludes `confirm` (DESIGN §4)")]
    PinnedWithConfirm {
        /// The tool.
        tool: String,
    },
    /// Two tools (or a tool and an alias) share a name.
    #[error("tool `{tool}`: the name or alias `{name}` is declared twice (DESIGN §4: names resolve to one tool)")]
    DuplicateName {
        /// The tool.
        tool: String,
        /// The repeated name.
        name: String,
    },
    /// `items` does not name a list parameter of the tool.
    #[error("tool `{tool}`: `items: {arg}` must name a parameter of type `array` (the list of the call's items; docs/adr/0122-shaping-a-call.md)")]
    ItemsNotAList {
        /// The tool.
        tool: String,
        /// The name given.
        arg: String,
    },
    /// `editable` names something the owner may not edit: not a parameter, the `items`
    /// argument, or any argument of a tool that is not approved per call.
    #[error(
        "tool `{tool}`: `editable` may not name `{arg}`: {why} (docs/adr/0122-shaping-a-call.md)"
    )]
    BadEditable {
        /// The tool.
        tool: String,
        /// The name given.
        arg: String,
        /// Which rule it breaks.
        why: &'static str,
    },
    /// `parameters` is not an object schema.
    #[error("tool `{tool}`: `parameters` must be a JSON Schema object ({reason})")]
    BadParameters {
        /// The tool.
        tool: String,
        /// What is wrong.
        reason: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    plugin: String,
    tools: Vec<RawTool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    name: String,
    #[serde(default)]
    description: String,
    effect: Effect,
    #[serde(default)]
    confirm: Option<Confirm>,
    #[serde(default)]
    approval: Option<ApprovalMode>,
    #[serde(default)]
    undo: Option<String>,
    #[serde(default)]
    undo_window_days: Option<i64>,
    #[serde(default)]
    reply_undo: Option<String>,
    #[serde(default)]
    answers_directly: bool,
    #[serde(default)]
    aliases: Vec<String>,
    #[serde(default)]
    parameters: Option<Value>,
    #[serde(default)]
    items: Option<String>,
    #[serde(default)]
    editable: Vec<String>,
    #[serde(default)]
    untrusted: Vec<String>,
}

/// Whether `parameters` (an object schema) declares `arg` as a property of `type: array`.
pub fn is_list_parameter(parameters: &Value, arg: &str) -> bool {
    let ty = &parameters["properties"][arg]["type"];
    ty.as_str() == Some("array")
        || ty
            .as_array()
            .is_some_and(|types| types.iter().any(|t| t.as_str() == Some("array")))
}

impl Manifest {
    /// Parses and checks a manifest.
    ///
    /// # Errors
    /// [`ManifestError`] naming the tool and the DESIGN §4 rule it breaks; nothing is loaded.
    pub fn from_yaml(text: &str) -> Result<Manifest, ManifestError> {
        let raw: RawManifest =
            serde_norway::from_str(text).map_err(|e| ManifestError::Parse(e.to_string()))?;
        let mut tools = Vec::with_capacity(raw.tools.len());
        for t in raw.tools {
            let parameters = t.parameters.unwrap_or_else(
                || serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false}),
            );
            if parameters.get("type").and_then(Value::as_str) != Some("object") {
                return Err(ManifestError::BadParameters {
                    tool: t.name,
                    reason: "`type: object` is required".into(),
                });
            }
            if let Err(e) = jsonschema::validator_for(&parameters) {
                return Err(ManifestError::BadParameters {
                    tool: t.name,
                    reason: e.to_string(),
                });
            }
            let undo_window_days = match t.undo_window_days {
                None => None,
                Some(d) if d > 0 && d <= i64::from(u32::MAX) => Some(d as u32),
                Some(_) => return Err(ManifestError::BadUndoWindow { tool: t.name }),
            };
            tools.push(ToolSpec {
                name: t.name,
                plugin: raw.plugin.clone(),
                description: t.description,
                effect: t.effect,
                confirm: t.confirm,
                approval: t.approval,
                undo: t.undo,
                undo_window_days,
                reply_undo: t.reply_undo,
                answers_directly: t.answers_directly,
                aliases: t.aliases,
                parameters,
                items: t.items,
                editable: t.editable,
                untrusted: Untrusted::Fields(t.untrusted),
            });
        }
        let manifest = Manifest {
            plugin: raw.plugin,
            tools,
        };
        manifest.check()?;
        Ok(manifest)
    }

    /// A manifest of `tools` for `plugin`, checked by the same DESIGN §4 rules as one read from
    /// YAML (the MCP gateway's upstream manifests build their tools themselves).
    ///
    /// # Errors
    /// [`ManifestError`] naming the tool and the rule.
    pub fn checked(plugin: String, tools: Vec<ToolSpec>) -> Result<Manifest, ManifestError> {
        let manifest = Manifest { plugin, tools };
        manifest.check()?;
        Ok(manifest)
    }

    fn tool(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|t| t.name == name)
    }

    fn check(&self) -> Result<(), ManifestError> {
        let mut names: BTreeMap<String, &str> = BTreeMap::new();
        for t in &self.tools {
            for n in std::iter::once(&t.name).chain(t.aliases.iter()) {
                if names.insert(normalise_name(n), &t.name).is_some() {
                    return Err(ManifestError::DuplicateName {
                        tool: t.name.clone(),
                        name: n.clone(),
                    });
                }
            }
        }
        for t in &self.tools {
            let tool = t.name.clone();
            if t.confirm.is_some() && t.effect != Effect::Write {
                return Err(ManifestError::ConfirmNotOnWrite {
                    tool,
                    effect: t.effect.as_str(),
                });
            }
            if t.answers_directly && t.effect == Effect::Destructive {
                return Err(ManifestError::AnswersDirectlyOnDestructive { tool });
            }
            if t.approval.is_some() {
                if t.effect != Effect::Write {
                    return Err(ManifestError::PinnedNotOnWrite { tool });
                }
                if t.confirm.is_some() {
                    return Err(ManifestError::PinnedWithConfirm { tool });
                }
            }
            if let Some(arg) = &t.items {
                if !is_list_parameter(&t.parameters, arg) {
                    return Err(ManifestError::ItemsNotAList {
                        tool,
                        arg: arg.clone(),
                    });
                }
            }
            for arg in &t.editable {
                let why = if !t.approved_per_call() {
                    Some("only a call the owner approves per call can be edited before approving")
                } else if t.items.as_deref() == Some(arg.as_str()) {
                    Some("it is the `items` argument, which approving some of the items narrows")
                } else if t.parameters["properties"].get(arg).is_none() {
                    Some("it is not a parameter of the tool")
                } else {
                    None
                };
                if let Some(why) = why {
                    return Err(ManifestError::BadEditable {
                        tool,
                        arg: arg.clone(),
                        why,
                    });
                }
            }
            if t.undo_window_days.is_some() && t.undo.is_none() {
                return Err(ManifestError::BadUndoWindow { tool });
            }
            if let Some(undo) = &t.undo {
                if t.effect != Effect::Destructive {
                    return Err(ManifestError::UndoNotOnDestructive { tool });
                }
                self.check_undo_tool(&tool, undo)?;
            }
            if let Some(undo) = &t.reply_undo {
                if t.effect != Effect::Write || t.approval.is_some() {
                    return Err(ManifestError::ReplyUndoNotOnPlainWrite { tool });
                }
                self.check_undo_tool(&tool, undo)?;
            }
        }
        Ok(())
    }

    /// `undo` (from `tool`'s `undo` or `reply_undo`) names a tool of this manifest that is a
    /// plain write: `effect: write`, `confirm: never`, not pinned.
    fn check_undo_tool(&self, tool: &str, undo: &str) -> Result<(), ManifestError> {
        let Some(u) = self.tool(undo) else {
            return Err(ManifestError::UndoUnknown {
                tool: tool.to_owned(),
                undo: undo.to_owned(),
            });
        };
        if u.approval.is_some() {
            return Err(ManifestError::UndoIsPinned {
                tool: tool.to_owned(),
                undo: undo.to_owned(),
            });
        }
        if u.effect != Effect::Write || u.confirm != Some(Confirm::Never) {
            return Err(ManifestError::UndoNotPlainWrite {
                tool: tool.to_owned(),
                undo: undo.to_owned(),
            });
        }
        Ok(())
    }
}

/// Folds a spelling for near-miss matching: lower case, `-` and spaces as `_`.
fn normalise_name(name: &str) -> String {
    name.trim()
        .to_lowercase()
        .chars()
        .map(|c| if c == '-' || c == ' ' { '_' } else { c })
        .collect()
}

/// Why a name did not resolve.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ResolveError {
    /// No manifest declares this name (DESIGN §4: never treated as read).
    #[error("tool `{0}` is not declared by any manifest; it was not run")]
    Unknown(String),
}

/// Every loaded manifest, with name resolution.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    tools: Vec<ToolSpec>,
    names: BTreeMap<String, usize>,
}

impl Registry {
    /// Builds a registry from checked manifests.
    ///
    /// # Errors
    /// [`ManifestError::DuplicateName`] when two manifests declare the same name or alias.
    pub fn new(manifests: impl IntoIterator<Item = Manifest>) -> Result<Registry, ManifestError> {
        let mut reg = Registry::default();
        for m in manifests {
            for t in m.tools {
                let idx = reg.tools.len();
                for n in std::iter::once(&t.name).chain(t.aliases.iter()) {
                    if reg.names.insert(normalise_name(n), idx).is_some() {
                        return Err(ManifestError::DuplicateName {
                            tool: t.name.clone(),
                            name: n.clone(),
                        });
                    }
                }
                reg.tools.push(t);
            }
        }
        Ok(reg)
    }

    /// Every tool, in load order.
    pub fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }

    /// The tool with exactly this canonical name.
    pub fn get(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The destructive tools that declare `tool` as their `undo` (DESIGN §4), in load order.
    pub fn undone_by(&self, tool: &str) -> Vec<&ToolSpec> {
        self.tools
            .iter()
            .filter(|t| t.undo.as_deref() == Some(tool))
            .collect()
    }

    /// Whether some tool declares `tool` as its `undo`.
    pub fn is_undo_tool(&self, tool: &str) -> bool {
        !self.undone_by(tool).is_empty()
    }

    /// Resolves what the model wrote to the canonical tool: exact name, alias, or a near miss
    /// (case, `-`/`_`/space, a plural `s`). Runs before any check (DESIGN §3 step 2).
    ///
    /// # Errors
    /// [`ResolveError::Unknown`] when nothing matches.
    pub fn resolve(&self, name: &str) -> Result<&ToolSpec, ResolveError> {
        let folded = normalise_name(name);
        let candidates = [
            folded.clone(),
            folded.strip_suffix('s').unwrap_or(&folded).to_string(),
            folded.strip_suffix("es").unwrap_or(&folded).to_string(),
            format!("{folded}s"),
            folded.replace("emails", "email"),
        ];
        for c in candidates {
            if let Some(&idx) = self.names.get(&c) {
                return Ok(&self.tools[idx]);
            }
        }
        Err(ResolveError::Unknown(name.to_string()))
    }

    /// What the Plugins panel and `GET /api/plugins` show: every plugin in load order, each
    /// with its tools in declaration order, their effect, derived gate and undo.
    pub fn plugin_list(&self) -> PluginList {
        let mut plugins: Vec<PluginInfo> = Vec::new();
        for t in &self.tools {
            let tool = t.to_wire();
            match plugins.iter_mut().find(|p| p.name == t.plugin) {
                Some(p) => p.tools.push(tool),
                None => plugins.push(PluginInfo {
                    name: t.plugin.clone(),
                    tools: vec![tool],
                    mcp_path: None,
                    status: Vec::new(),
                }),
            }
        }
        PluginList { plugins }
    }
}

impl From<Gate> for ToolGate {
    fn from(gate: Gate) -> Self {
        match gate {
            Gate::None => ToolGate::None,
            Gate::Confirm => ToolGate::Confirm,
            Gate::Approval => ToolGate::Approval,
        }
    }
}

impl ToolSpec {
    /// The tool as the wire lists it ([`PluginTool`]).
    pub fn to_wire(&self) -> PluginTool {
        PluginTool {
            name: self.name.clone(),
            description: self.description.clone(),
            effect: self.effect,
            gate: self.gate().into(),
            approved_per_call: self.approved_per_call(),
            undo: self.undo.clone(),
            undo_window_days: self.undo_window_days,
            reply_undo: self.reply_undo.clone(),
            aliases: self.aliases.clone(),
            server_hints: None,
        }
    }
}

#[cfg(test)]
mod tests;
