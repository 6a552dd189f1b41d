//! The MCP gateway's upstream manifests: IRIS's own declaration of another server's tools
//! (never the server's `destructiveHint`/`readOnlyHint`, which the MCP spec says a client must
//! treat as untrusted). Each declared tool has an `effect` and the plugin manifest's options,
//! checked by the same DESIGN §4 rules ([`Manifest::checked`]); every gated tool (destructive, or
//! a pinned write) has a card template, so the card shows what executes: nobody approves bytes
//! they did not see. A tool the manifest does not declare is not offered and is refused.
//!
//! ```yaml
//! upstream: files
//! tools:
//!   - name: write_file
//!     effect: destructive
//!     card:
//!       title: "Overwrite {path}"
//!       action: "Write {path}"
//!       items: path          # the argument naming the items: a string or a list of strings
//!       line: "{path}"       # one line per item; {item} is the item itself
//!       preview: file_diff   # the change against the file as it is when the card is made
//! ```

use serde::Deserialize;
use serde_json::Value;

use crate::manifest::{ApprovalMode, Confirm, Manifest, ManifestError, ToolSpec};
use crate::wire::Effect;

/// Longest text a template fills in, in characters (an argument beyond it is cut with "…").
const FILLED_CHARS: usize = 200;

/// Most lines a card's preview shows; the rest is counted in one last line ("N more lines").
pub const PREVIEW_LINES: usize = 40;

/// What a card previews beside its lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Preview {
    /// A unified diff of the change against the file as it is when the card is made, for the
    /// filesystem server's `write_file` (`path`, `content`) and `edit_file` (`path`, `edits`
    /// of `oldText`/`newText`), bounded with an "N more lines" count ([`file_diff`],
    /// [`edit_diff`]).
    FileDiff,
}

/// A gated tool's card, as templates over the call's arguments (`{name}` is the argument
/// `name`; `{item}` one item).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardTemplate {
    /// The card's title ("Overwrite {path}").
    pub title: String,
    /// The action button's words ("Write {path}").
    pub action: String,
    /// The argument that names the items (a string, or a list of strings).
    pub items: String,
    /// One line per item ("{item}", "{path}").
    #[serde(default = "default_line")]
    pub line: String,
    /// What the card previews beside its lines, if anything.
    #[serde(default)]
    pub preview: Option<Preview>,
}

fn default_line() -> String {
    "{item}".into()
}

/// One upstream tool as IRIS declares it: the checked tool and, when gated, its card.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamTool {
    /// The tool, checked by DESIGN §4's rules (its `parameters` are the upstream's
    /// `inputSchema` once the upstream has listed its tools).
    pub spec: ToolSpec,
    /// Its card (every gated tool has one).
    pub card: Option<CardTemplate>,
    /// The arguments the owner may edit before approving (`editable: [...]`), checked against
    /// the upstream's `inputSchema` once it lists its tools (the spec's own `editable` is set
    /// then; docs/adr/0122-shaping-a-call.md).
    pub editable: Vec<String>,
}

/// An upstream's manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamManifest {
    /// The upstream's name (`[[mcp.upstreams]] name`, the `/mcp/{name}` path).
    pub upstream: String,
    /// The declared tools, in declaration order.
    pub tools: Vec<UpstreamTool>,
}

/// Why an upstream manifest was refused: the plugin manifest's rules, or a card's.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UpstreamManifestError {
    /// Not YAML, or not the shape above.
    #[error("upstream manifest is not valid: {0}")]
    Parse(String),
    /// A DESIGN §4 rule.
    #[error(transparent)]
    Rule(#[from] ManifestError),
    /// A gated tool without a card.
    #[error("tool `{0}` is gated (destructive, or a pinned write) but has no `card`: the card must show what executes")]
    NoCard(String),
    /// A card on a tool that never makes one.
    #[error("tool `{0}` has a `card` but is not gated (only destructive tools and pinned writes make cards)")]
    CardNotGated(String),
    /// A card names an argument the upstream's `inputSchema` does not have (checked when the
    /// upstream lists its tools).
    #[error("tool `{tool}`: the card's {field} names `{name}`, which is not an argument of the server's input schema ({known})")]
    UnknownArgument {
        /// The tool.
        tool: String,
        /// `title`, `action`, `line` or `items`.
        field: &'static str,
        /// The argument named.
        name: String,
        /// The schema's arguments, joined.
        known: String,
    },
    /// A template names no argument, or an unclosed `{`.
    #[error(
        "tool `{tool}`: the card's {field} `{template}` is not a template of `{{argument}}` names"
    )]
    BadTemplate {
        /// The tool.
        tool: String,
        /// `title`, `action` or `line`.
        field: &'static str,
        /// The template.
        template: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUpstream {
    upstream: String,
    tools: Vec<RawUpstreamTool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUpstreamTool {
    name: String,
    effect: Effect,
    #[serde(default)]
    confirm: Option<Confirm>,
    #[serde(default)]
    approval: Option<ApprovalMode>,
    #[serde(default)]
    undo: Option<String>,
    #[serde(default)]
    undo_window_days: Option<u32>,
    #[serde(default)]
    card: Option<CardTemplate>,
    #[serde(default)]
    editable: Vec<String>,
}

impl UpstreamManifest {
    /// Parses and checks an upstream manifest.
    ///
    /// # Errors
    /// [`UpstreamManifestError`] naming the tool and the rule; nothing is loaded.
    pub fn from_yaml(text: &str) -> Result<UpstreamManifest, UpstreamManifestError> {
        let raw: RawUpstream = serde_norway::from_str(text)
            .map_err(|e| UpstreamManifestError::Parse(e.to_string()))?;
        let mut specs = Vec::with_capacity(raw.tools.len());
        let mut cards = Vec::with_capacity(raw.tools.len());
        for t in raw.tools {
            // DESIGN §4: a positive whole number of days.
            if t.undo_window_days == Some(0) {
                return Err(ManifestError::BadUndoWindow { tool: t.name }.into());
            }
            specs.push(ToolSpec {
                name: t.name,
                plugin: raw.upstream.clone(),
                description: String::new(),
                effect: t.effect,
                confirm: t.confirm,
                approval: t.approval,
                undo: t.undo,
                undo_window_days: t.undo_window_days,
                reply_undo: None,
                answers_directly: false,
                aliases: Vec::new(),
                parameters: serde_json::json!({"type": "object"}),
                // Set once the upstream lists its tools: only a list parameter may be narrowed.
                items: None,
                editable: Vec::new(),
                // An upstream's result is all outside text: IRIS cannot tell its fields apart
                // (docs/adr/0123-how-a-card-came-about.md).
                untrusted: crate::manifest::Untrusted::Every,
            });
            cards.push((t.card, t.editable));
        }
        let manifest = Manifest::checked(raw.upstream.clone(), specs)?;
        let mut tools = Vec::with_capacity(manifest.tools.len());
        for (spec, (card, editable)) in manifest.tools.into_iter().zip(cards) {
            match (&card, spec.approved_per_call()) {
                (None, true) => return Err(UpstreamManifestError::NoCard(spec.name)),
                (Some(_), false) => return Err(UpstreamManifestError::CardNotGated(spec.name)),
                (Some(c), true) => {
                    for (field, template) in [
                        ("title", &c.title),
                        ("action", &c.action),
                        ("line", &c.line),
                    ] {
                        if placeholders(template).is_none() {
                            return Err(UpstreamManifestError::BadTemplate {
                                tool: spec.name.clone(),
                                field,
                                template: template.clone(),
                            });
                        }
                    }
                }
                (None, false) => {}
            }
            tools.push(UpstreamTool {
                spec,
                card,
                editable,
            });
        }
        Ok(UpstreamManifest {
            upstream: raw.upstream,
            tools,
        })
    }

    /// Checks that every argument tool `name`'s card names (its templates' `{argument}`s and its
    /// `items`) is a property of the upstream's own `input_schema` for it, so a card can never
    /// leave out what it was meant to show. Tools without a card pass.
    ///
    /// # Errors
    /// [`UpstreamManifestError::UnknownArgument`] naming the tool, the field and the argument.
    pub fn check_schema(
        &self,
        name: &str,
        input_schema: &Value,
    ) -> Result<(), UpstreamManifestError> {
        let Some(card) = self.tool(name).and_then(|t| t.card.as_ref()) else {
            return Ok(());
        };
        let properties = input_schema.get("properties").and_then(Value::as_object);
        let has = |argument: &str| properties.is_some_and(|p| p.contains_key(argument));
        let known = || {
            properties
                .map(|p| p.keys().cloned().collect::<Vec<_>>().join(", "))
                .unwrap_or_default()
        };
        let unknown =
            |field: &'static str, argument: &str| UpstreamManifestError::UnknownArgument {
                tool: name.to_owned(),
                field,
                name: argument.to_owned(),
                known: known(),
            };
        if !has(&card.items) {
            return Err(unknown("items", &card.items));
        }
        for (field, template) in [
            ("title", &card.title),
            ("action", &card.action),
            ("line", &card.line),
        ] {
            for argument in placeholders(template).unwrap_or_default() {
                if argument != "item" && !has(argument) {
                    return Err(unknown(field, argument));
                }
            }
        }
        Ok(())
    }

    /// The declared tool `name`, if any (an undeclared one is never offered and is refused).
    pub fn tool(&self, name: &str) -> Option<&UpstreamTool> {
        self.tools.iter().find(|t| t.spec.name == name)
    }
}

/// The `{name}` placeholders of `template`, in order; `None` when a brace is unclosed or a
/// name is empty.
fn placeholders(template: &str) -> Option<Vec<&str>> {
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let close = after.find('}')?;
        let name = &after[..close];
        if name.is_empty() || name.contains('{') {
            return None;
        }
        names.push(name);
        rest = &after[close + 1..];
    }
    if rest.contains('}') {
        return None;
    }
    Some(names)
}

/// An argument's value as card text: a string as it is, a list of strings joined with ", ",
/// anything else as compact JSON; control and text-direction characters shown as `\u{…}`
/// escapes; cut at [`FILLED_CHARS`].
fn shown(value: Option<&Value>) -> String {
    let text = match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => items
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(", "),
        Some(other) => other.to_string(),
    };
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == FILLED_CHARS {
            out.push('…');
            break;
        }
        if c.is_control()
            || matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
        {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` as card text: control and text-direction characters shown as `\u{…}` escapes, cut
/// at [`FILLED_CHARS`] characters with "…".
pub fn escaped(text: &str) -> String {
    shown(Some(&Value::String(text.to_owned())))
}

/// The change `after` makes to `path`, which holds `before` now (`None`: it does not exist or
/// cannot be read), as unified diff lines (`--- path`, `+++ path`, `@@ … @@`, `-old`, `+new`,
/// ` context`), each [`escaped`]; past [`PREVIEW_LINES`] one last line "N more lines". When
/// nothing changes, one line saying so.
pub fn file_diff(path: &str, before: Option<&str>, after: &str) -> Vec<String> {
    if before == Some(after) {
        return vec!["No change: the file already holds exactly this.".into()];
    }
    let old = before.unwrap_or_default();
    let diff = similar::TextDiff::from_lines(old, after);
    let header_old = if before.is_some() {
        path
    } else {
        "(a new file)"
    };
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(header_old, path)
        .to_string();
    bounded(text.lines().map(|l| l.trim_end_matches('\n').to_owned()))
}

/// The preview of writing `after` to `path` when the file cannot be read now for another
/// reason than being absent (`why`, escaped): a sentence saying so, then the content as sent.
pub fn unreadable_preview(path: &str, why: &str, after: &str) -> Vec<String> {
    let first = format!("{path} cannot be read now ({why}); the content as sent:");
    bounded(std::iter::once(first).chain(after.lines().map(|l| format!("+{l}"))))
}

/// The change `edits` (each `(oldText, newText)`, applied in order to the first exact
/// occurrence) make to `path`, which holds `before` now: [`file_diff`] when every old text is
/// in the file exactly; otherwise the edits themselves (`-old`, `+new` per edit) after a line
/// saying which edit's text is not in the file as it is now.
pub fn edit_diff(path: &str, before: Option<&str>, edits: &[(String, String)]) -> Vec<String> {
    let mut after = before.map(str::to_owned);
    let mut missing = None;
    for (n, (old, new)) in edits.iter().enumerate() {
        match after.as_mut() {
            Some(text) if text.contains(old.as_str()) => {
                *text = text.replacen(old.as_str(), new, 1)
            }
            _ => {
                missing = Some(n + 1);
                break;
            }
        }
    }
    match (missing, after) {
        (None, Some(after)) => file_diff(path, before, &after),
        (missing, _) => {
            let mut lines = vec![match missing {
                Some(n) if before.is_some() => format!("Edit {n}'s text is not in {path} as it is now; the server may match it loosely or refuse. The edits as sent:"),
                _ => format!("{path} cannot be read now. The edits as sent:"),
            }];
            for (n, (old, new)) in edits.iter().enumerate() {
                lines.push(format!("@@ edit {} of {} @@", n + 1, edits.len()));
                lines.extend(old.lines().map(|l| format!("-{l}")));
                lines.extend(new.lines().map(|l| format!("+{l}")));
            }
            bounded(lines.into_iter())
        }
    }
}

/// `lines` escaped, at most [`PREVIEW_LINES`] of them, then "N more lines".
fn bounded(lines: impl Iterator<Item = String>) -> Vec<String> {
    let all: Vec<String> = lines.collect();
    let mut shown_lines: Vec<String> = all.iter().take(PREVIEW_LINES).map(|l| escaped(l)).collect();
    if all.len() > PREVIEW_LINES {
        let more = all.len() - PREVIEW_LINES;
        shown_lines.push(format!(
            "{more} more line{}",
            if more == 1 { "" } else { "s" }
        ));
    }
    shown_lines
}

/// `template` filled from `args` (and `item` for `{item}`).
pub fn fill(template: &str, args: &Value, item: Option<&str>) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            return out;
        };
        let name = &after[..close];
        if name == "item" {
            if let Some(item) = item {
                out.push_str(&shown(Some(&Value::String(item.to_owned()))));
            }
        } else {
            out.push_str(&shown(args.get(name)));
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

/// The items a call acts on: the `items` argument as one string or a list of strings.
///
/// # Errors
/// A sentence naming the argument when it is missing or not text.
pub fn items(template: &CardTemplate, args: &Value) -> Result<Vec<String>, String> {
    match args.get(&template.items) {
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(list)) if !list.is_empty() && list.iter().all(Value::is_string) => {
            Ok(list
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect())
        }
        _ => Err(format!(
            "the argument `{}` must name the items (a string or a list of strings)",
            template.items
        )),
    }
}

#[cfg(test)]
mod tests;
