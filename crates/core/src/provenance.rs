//! "How this came about" (docs/adr/0123-how-a-card-came-about.md): what led to a pinned call,
//! frozen with its card as [`Card::trail`](crate::wire::Card::trail) and
//! [`Card::flags`](crate::wire::Card::flags).
//!
//! A [`Provenance`] is who asked (the owner's message, or the agent and its stated reason) and
//! the steps of the turn before the call, each one sentence in its plugin's words
//! ([`crate::plugin::Plugin::step_sentence`]), plus the text from outside the owner's control
//! those steps read: the result fields a manifest marks `untrusted`
//! ([`crate::manifest::Untrusted`]). A string argument of the call that the owner never wrote
//! but that occurs, whole, in such text is flagged on its card line. A flag says where a value
//! came from; it decides nothing (the card is answered as any other).

use serde_json::Value;

use crate::manifest::{ToolSpec, Untrusted};
use crate::model::Message;
use crate::plugin::Plugin;
use crate::toolbox::Toolbox;
use crate::wire::{clip, CardFlag};

/// The most steps a card's trail tells; earlier ones are counted in one sentence.
pub const MAX_STEPS: usize = 20;

/// The longest sentence of a trail, in characters (a longer one is clipped with "…").
pub const SENTENCE_CHARS: usize = 200;

/// The shortest argument value that is flagged, in characters: shorter ones ("yes", "re")
/// occur everywhere and would flag noise.
pub const FLAGGED_CHARS: usize = 4;

/// Statuses of an observation that say the call did not do its work (its result is not read
/// for outside text; the step says it did not run).
const NOT_DONE: &[&str] = &[
    "error", "denied", "refused", "not_run", "rejected", "expired", "failed", "unknown", "stale",
];

/// Text from outside the owner's control that a step of the turn read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutsideText {
    /// What it was part of, as a flag names it: "the email 'Payment overdue'".
    pub source: String,
    /// The text itself.
    pub text: String,
}

/// What led to a call: who asked, the steps of the turn before it, and the outside text those
/// steps read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Provenance {
    /// Who asked, one sentence: `You asked: “…”` or `Agent “name” asked: “…”`.
    pub asked: String,
    /// What the owner wrote this turn (empty for an agent's call through the gateway: its
    /// reason is the agent's words, not the owner's). A value in it is never flagged.
    pub owner_text: String,
    /// One sentence per step, oldest first (unclipped; [`Provenance::trail`] clips).
    pub steps: Vec<String>,
    /// The outside text the steps read, in the order read.
    pub outside: Vec<OutsideText>,
}

impl Provenance {
    /// A turn the owner started with `request` and no steps yet.
    pub fn owner_asked(request: &str) -> Provenance {
        Provenance {
            asked: format!("You asked: “{}”", clip(request.trim(), SENTENCE_CHARS - 14)),
            owner_text: request.to_owned(),
            ..Provenance::default()
        }
    }

    /// A call an agent made through the gateway, with the reason it gave (if any).
    pub fn agent_asked(agent: &str, reason: Option<&str>) -> Provenance {
        let agent = clip(agent, 60);
        let asked = match reason.map(str::trim).filter(|r| !r.is_empty()) {
            Some(reason) => format!("Agent “{agent}” asked, saying: “{}”", clip(reason, 120)),
            None => format!("Agent “{agent}” asked, giving no reason"),
        };
        Provenance {
            asked,
            ..Provenance::default()
        }
    }

    /// The turn of `transcript` that ends at its last owner message: who asked (`request`)
    /// and every call answered since, in order, each read through its tool's plugin in
    /// `toolbox`. A call of a tool the toolbox does not know is told by name only.
    pub fn of_turn(request: &str, transcript: &[Message], toolbox: &Toolbox) -> Provenance {
        let mut provenance = Provenance::owner_asked(request);
        let start = transcript
            .iter()
            .rposition(|m| matches!(m, Message::User { .. }))
            .map_or(0, |i| i + 1);
        let mut calls: Vec<(&str, &str, &Value)> = Vec::new();
        for message in &transcript[start..] {
            match message {
                Message::Assistant { tool_calls, .. } => calls.extend(
                    tool_calls
                        .iter()
                        .map(|c| (c.id.as_str(), c.name.as_str(), &c.arguments)),
                ),
                Message::Tool {
                    tool_call_id,
                    content,
                } => {
                    let Some(&(_, name, args)) = calls.iter().find(|(id, ..)| id == tool_call_id)
                    else {
                        continue;
                    };
                    match toolbox.registry().resolve(name) {
                        Ok(spec) => {
                            let plugin = toolbox.plugin(spec);
                            provenance.record(spec, plugin.map(|p| p.as_ref()), args, content);
                        }
                        Err(_) => provenance.steps.push(format!(
                            "Asked for a tool named “{}” that does not exist.",
                            clip(name, 60)
                        )),
                    }
                }
                _ => {}
            }
        }
        provenance
    }

    /// Adds one step: a call of `spec` (through `plugin`, if still loaded) with `args` that
    /// answered `result`. A call that did not do its work (its result's `status` says so, or
    /// it was never run) is told as such and its result is not read; one that did adds the
    /// result's outside text.
    pub fn record(
        &mut self,
        spec: &ToolSpec,
        plugin: Option<&dyn Plugin>,
        args: &Value,
        result: &Value,
    ) {
        let status = result.get("status").and_then(Value::as_str);
        if status.is_some_and(|s| NOT_DONE.contains(&s)) {
            if status == Some("not_run") {
                return;
            }
            let why = result
                .get("message")
                .and_then(Value::as_str)
                .map(|m| format!(": {m}"))
                .unwrap_or_default();
            self.steps.push(format!(
                "Tried {} ({}){why}",
                spec.name,
                status.unwrap_or_default()
            ));
            return;
        }
        let sentence = plugin
            .and_then(|p| p.step_sentence(&spec.name, args, result))
            .unwrap_or_else(|| generic_sentence(&spec.name, args));
        self.steps.push(sentence);
        // The call's first string argument says which result it was ("the result of
        // files.read_text_file for “todo.md”").
        let about = args
            .as_object()
            .and_then(|a| a.values().find_map(Value::as_str))
            .map(|s| format!(" for “{}”", clip(s, 60)))
            .unwrap_or_default();
        let name = |record: &Value| {
            plugin
                .and_then(|p| p.source_name(&spec.name, record))
                .unwrap_or_else(|| format!("the result of {}{about}", spec.name))
        };
        match &spec.untrusted {
            Untrusted::Every => {
                let mut texts = Vec::new();
                strings(result, &mut texts);
                if !texts.is_empty() {
                    self.outside.push(OutsideText {
                        source: name(result),
                        text: texts.join("\n"),
                    });
                }
            }
            Untrusted::Fields(fields) if !fields.is_empty() => {
                marked(result, fields, &name, &mut self.outside);
            }
            Untrusted::Fields(_) => {}
        }
    }

    /// The card's trail: who asked, then the last [`MAX_STEPS`] steps (the first of them, when
    /// more were taken, counting the earlier ones), each clipped to [`SENTENCE_CHARS`].
    pub fn trail(&self) -> Vec<String> {
        let mut trail = vec![clip(&self.asked, SENTENCE_CHARS)];
        let shown = if self.steps.len() > MAX_STEPS {
            let hidden = self.steps.len() - (MAX_STEPS - 1);
            trail.push(format!("{hidden} earlier steps are not shown."));
            &self.steps[hidden..]
        } else {
            &self.steps[..]
        };
        trail.extend(shown.iter().map(|s| clip(s, SENTENCE_CHARS)));
        trail
    }

    /// The flags of a call with `args` on a card of `lines`: every string argument value (at
    /// any depth) of at least [`FLAGGED_CHARS`] characters that is not one of `minted` (ids
    /// IRIS made itself, which the owner never types), does not occur in what the owner wrote
    /// ([`Provenance::owner_text`]), and occurs whole (not inside a longer word), ignoring
    /// case, in outside text the turn read. Each is flagged once, on the first line that shows
    /// it (else the first line), naming the first text it occurs in. None when `lines` is
    /// empty.
    pub fn flags(&self, args: &Value, lines: &[String], minted: &[String]) -> Vec<CardFlag> {
        if self.outside.is_empty() || lines.is_empty() {
            return Vec::new();
        }
        let owner = self.owner_text.to_lowercase();
        let mut values = Vec::new();
        strings(args, &mut values);
        let mut seen: Vec<String> = Vec::new();
        let mut flags = Vec::new();
        for value in values {
            let value = value.trim();
            let lower = value.to_lowercase();
            if value.chars().count() < FLAGGED_CHARS
                || minted.iter().any(|m| m == value)
                || owner.contains(&lower)
                || seen.contains(&lower)
            {
                continue;
            }
            let Some(source) = self
                .outside
                .iter()
                .find(|o| contains_whole(&o.text.to_lowercase(), &lower))
            else {
                continue;
            };
            seen.push(lower.clone());
            let line = lines
                .iter()
                .position(|l| l.to_lowercase().contains(&lower))
                .unwrap_or(0);
            flags.push(CardFlag {
                line: u32::try_from(line).unwrap_or(0),
                note: format!(
                    "“{}” is from the text of {} (not from you)",
                    clip(value, 80),
                    source.source
                ),
            });
        }
        flags
    }
}

/// A step told by the tool's name and its scalar arguments: `Used list_files (root
/// “downloads”, glob “*.log”)`.
fn generic_sentence(tool: &str, args: &Value) -> String {
    let named: Vec<String> = args
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(key, value)| match value {
            Value::String(s) => Some(format!("{key} “{}”", clip(s, 40))),
            Value::Number(n) => Some(format!("{key} {n}")),
            Value::Bool(b) => Some(format!("{key} {b}")),
            Value::Array(list) => Some(format!("{key}: {} entries", list.len())),
            _ => None,
        })
        .collect();
    if named.is_empty() {
        format!("Used {tool}")
    } else {
        format!("Used {tool} ({})", named.join(", "))
    }
}

/// Every string in `value`, at any depth, in document order.
fn strings(value: &Value, into: &mut Vec<String>) {
    match value {
        Value::String(s) => into.push(s.clone()),
        Value::Array(list) => list.iter().for_each(|v| strings(v, into)),
        Value::Object(map) => map.values().for_each(|v| strings(v, into)),
        _ => {}
    }
}

/// The outside text of every object in `value` (at any depth) that has one of `fields`: the
/// strings under those keys, named by `name(object)`.
fn marked(
    value: &Value,
    fields: &[String],
    name: &dyn Fn(&Value) -> String,
    into: &mut Vec<OutsideText>,
) {
    match value {
        Value::Array(list) => list.iter().for_each(|v| marked(v, fields, name, into)),
        Value::Object(map) => {
            let mut texts = Vec::new();
            for field in fields {
                if let Some(v) = map.get(field) {
                    strings(v, &mut texts);
                }
            }
            if !texts.is_empty() {
                into.push(OutsideText {
                    source: name(value),
                    text: texts.join("\n"),
                });
            }
            for (key, v) in map {
                if !fields.contains(key) {
                    marked(v, fields, name, into);
                }
            }
        }
        _ => {}
    }
}

/// Whether `needle` occurs in `haystack` as a whole: not preceded or followed by a letter or
/// digit (so "anna@example.com" is not found in "hanna@example.com").
fn contains_whole(haystack: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return false;
    }
    let mut from = 0;
    while let Some(at) = haystack[from..].find(needle) {
        let start = from + at;
        let end = start + needle.len();
        let before = haystack[..start].chars().next_back();
        let after = haystack[end..].chars().next();
        if !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric) {
            return true;
        }
        from = start + needle.chars().next().map_or(1, char::len_utf8);
    }
    false
}

#[cfg(test)]
mod tests;
