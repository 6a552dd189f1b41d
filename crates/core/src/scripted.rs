//! A scripted model for the demo and tests (`IRIS_MODEL=scripted:PATH`): rules match the owner's
//! latest message and play a fixed sequence of tool calls and a reply, reading ids from real
//! observations. It is stateless: the step is derived from the transcript, so a resumed run
//! continues where the paused one stopped.
//!
//! Script (YAML):
//!
//! ```yaml
//! rules:
//!   - when: "(?i)trash.*promo"          # regex on the owner's latest message
//!     steps:
//!       - call: search_inbox
//!         args: {category: promotions, since_days: 7}
//!       - call: trash_email
//!         args: {ids: "$ids"}            # "$ids": ids from the last observation's results
//!                                        # ("$id": the first of them, e.g. a reply_to_id;
//!                                        # "$1"…"$9": the `when` regex's capture groups)
//!         if_empty: "I found no promo emails from this week, so nothing was trashed."
//!       - reply: "Done: moved {trashed} emails to Trash."   # {field}: last observation field
//!                                                            # ({field.inner}: one level down)
//!         on_rejected: "OK, I left them alone. Nothing was changed."
//! fallback: "I can trash this week's promo emails, or undo that."
//! ```
//!
//! "Undo that" follows the conversation: a rule with `if_last_change: TOOL` applies only when
//! the newest call before this request to one of the script's `changes` (a top-level list of
//! tool names, e.g. `[trash_email, delete_events]`) was to `TOOL`.

use async_trait::async_trait;
use regex::Regex;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::manifest::ToolSpec;
use crate::model::{Message, Model, ModelError, ModelTurn, ToolCall};

/// The demo script `iris serve --demo` uses (trash this week's promos; undo that).
pub const DEMO_SCRIPT: &str = include_str!("demo_script.yaml");

#[derive(Debug, Clone, Deserialize)]
struct Script {
    rules: Vec<Rule>,
    #[serde(default)]
    fallback: Option<String>,
    /// The tools that change something, for `if_last_change`.
    #[serde(default)]
    changes: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct Rule {
    when: String,
    /// Applies only when the newest change before the request was a call to this tool.
    #[serde(default)]
    if_last_change: Option<String>,
    steps: Vec<Step>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Step {
    Call {
        call: String,
        #[serde(default)]
        args: Value,
        #[serde(default)]
        if_empty: Option<String>,
    },
    Reply {
        reply: String,
        #[serde(default)]
        on_rejected: Option<String>,
        #[serde(default)]
        on_expired: Option<String>,
        #[serde(default)]
        on_failed: Option<String>,
        /// When the call's outcome is `unknown` (it may or may not have run); `{message}` is
        /// the observation's message.
        #[serde(default)]
        on_unknown: Option<String>,
    },
}

/// Why a script could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// Not YAML of the script's shape.
    #[error("model script is not valid: {0}")]
    Parse(String),
    /// A `when` is not a valid regex.
    #[error("model script rule `{0}` is not a valid regular expression: {1}")]
    Regex(String, String),
}

/// The scripted model.
pub struct ScriptedModel {
    rules: Vec<(Regex, Option<String>, Vec<Step>)>,
    fallback: String,
    changes: Vec<String>,
}

impl ScriptedModel {
    /// Loads a script.
    ///
    /// # Errors
    /// [`ScriptError`] naming the rule that does not parse.
    pub fn from_yaml(text: &str) -> Result<ScriptedModel, ScriptError> {
        let script: Script =
            serde_norway::from_str(text).map_err(|e| ScriptError::Parse(e.to_string()))?;
        let mut rules = Vec::new();
        for r in script.rules {
            let re = Regex::new(&r.when)
                .map_err(|e| ScriptError::Regex(r.when.clone(), e.to_string()))?;
            rules.push((re, r.if_last_change, r.steps));
        }
        Ok(ScriptedModel {
            rules,
            fallback: script
                .fallback
                .unwrap_or_else(|| "I don't know how to do that.".into()),
            changes: script.changes,
        })
    }

    /// The next turn for a transcript: pure, so an HTTP test server can serve it too.
    ///
    /// The request it follows is the latest owner message, except when the transcript ends
    /// with IRIS's notice that an older card was answered ([`crate::agent::continue_notice`]):
    /// then the request that card's call was made for, and only what followed it up to the
    /// next owner message (so a card answered after a newer request never borrows that
    /// request's steps and claims work that did not run).
    pub fn next_turn(&self, messages: &[Message]) -> ModelTurn {
        let continued = match messages.last() {
            Some(Message::System { content }) => crate::agent::continued_call_id(content),
            _ => None,
        };
        let asked_at = continued.and_then(|id| {
            messages.iter().position(|m| {
                matches!(m, Message::Assistant { tool_calls, .. } if tool_calls.iter().any(|c| c.id == id))
            })
        });
        let before = asked_at.unwrap_or(messages.len());
        let Some(user_at) = messages[..before]
            .iter()
            .rposition(|m| matches!(m, Message::User { .. }))
        else {
            return reply(&self.fallback);
        };
        let until = match asked_at {
            Some(at) => messages[at..]
                .iter()
                .position(|m| matches!(m, Message::User { .. }))
                .map_or(messages.len(), |n| at + n),
            None => messages.len(),
        };
        let Message::User { content: request } = &messages[user_at] else {
            return reply(&self.fallback);
        };
        let last_change = messages[..user_at]
            .iter()
            .rev()
            .filter_map(|m| match m {
                Message::Assistant { tool_calls, .. } => Some(tool_calls),
                _ => None,
            })
            .flat_map(|calls| calls.iter().rev())
            .find(|c| self.changes.contains(&c.name))
            .map(|c| c.name.as_str());
        let Some((re, _, steps)) = self.rules.iter().find(|(re, after, _)| {
            re.is_match(request) && after.as_deref().is_none_or(|t| Some(t) == last_change)
        }) else {
            return reply(&self.fallback);
        };
        let captures: Vec<String> = re
            .captures(request)
            .map(|c| {
                c.iter()
                    .map(|m| m.map_or(String::new(), |m| m.as_str().to_string()))
                    .collect()
            })
            .unwrap_or_default();
        let after = &messages[user_at + 1..until];
        let step_index = after
            .iter()
            .filter(
                |m| matches!(m, Message::Assistant { tool_calls, .. } if !tool_calls.is_empty()),
            )
            .count();
        let last = after.iter().rev().find_map(|m| match m {
            Message::Tool { content, .. } => Some(content.clone()),
            _ => None,
        });
        let last_status = last
            .as_ref()
            .and_then(|v| v.get("status"))
            .and_then(Value::as_str)
            .unwrap_or("");
        match steps.get(step_index) {
            Some(Step::Call {
                call,
                args,
                if_empty,
            }) => {
                if matches!(
                    last_status,
                    "rejected" | "expired" | "refused" | "denied" | "error" | "not_run" | "failed"
                ) {
                    return reply(&failed_text(last.as_ref(), None));
                }
                let (args, empty) = fill_args(args, last.as_ref(), &captures);
                if empty {
                    return reply(
                        if_empty
                            .as_deref()
                            .unwrap_or("There was nothing to act on; nothing was changed."),
                    );
                }
                ModelTurn {
                    content: None,
                    tool_calls: vec![ToolCall {
                        id: format!("call_{}_{}", user_at, step_index),
                        name: call.clone(),
                        arguments: args,
                    }],
                }
            }
            Some(Step::Reply {
                reply: text,
                on_rejected,
                on_expired,
                on_failed,
                on_unknown,
            }) => {
                let chosen = match last_status {
                    "rejected" => on_rejected.clone().unwrap_or_else(|| {
                        "You rejected it, so nothing was changed, sent or deleted.".into()
                    }),
                    "expired" => on_expired
                        .clone()
                        .unwrap_or_else(|| "The approval lapsed; nothing was changed.".into()),
                    // Never the success text for an outcome nobody can vouch for: its
                    // placeholders would stay unfilled and it would claim what may not be true.
                    "unknown" => outcome_text(
                        last.as_ref(),
                        on_unknown.as_deref(),
                        "the outcome is unknown",
                        |m| {
                            format!("I cannot tell whether that happened ({m}). Please check before asking again.")
                        },
                    ),
                    // A stale item did nothing (the mail changed since the card): said in
                    // words, not the executor's "stale: nothing done".
                    "stale" => on_failed.clone().unwrap_or_else(|| STALE_TEXT.into()),
                    "refused" | "denied" | "error" | "not_run" | "failed" => {
                        failed_text(last.as_ref(), on_failed.as_deref())
                    }
                    _ => fill_text(text, last.as_ref()),
                };
                reply(&chosen)
            }
            None => reply(&fill_text("Done.", last.as_ref())),
        }
    }
}

/// The reply for an outcome that is not a success: `template` with `{message}` replaced by the
/// observation's message (`fallback` when it has none), else `default(message)`.
fn outcome_text(
    last: Option<&Value>,
    template: Option<&str>,
    fallback: &str,
    default: impl FnOnce(&str) -> String,
) -> String {
    let message = last
        .and_then(|v| v.get("message"))
        .and_then(Value::as_str)
        .unwrap_or(fallback);
    match template {
        Some(t) => t.replace("{message}", message),
        None => default(message),
    }
}

/// The reply when the call did not happen (refused, denied, failed, stale, ...).
fn failed_text(last: Option<&Value>, template: Option<&str>) -> String {
    outcome_text(last, template, "it did not run", |m| {
        format!("That did not happen: {m}. Nothing was changed.")
    })
}

fn reply(text: &str) -> ModelTurn {
    ModelTurn {
        content: Some(text.to_string()),
        tool_calls: Vec::new(),
    }
}

/// Replaces `"$ids"` with the ids found in the last observation (`results[].id`, else the
/// first list of objects with an `id`, whatever the tool calls it, else `ids`),
/// `"$id"` with the first of them (the newest match, e.g. the email to reply to), and `"$1"` to
/// `"$9"` with the rule's regex captures (`captures[0]` is the whole match). Returns whether a
/// placeholder resolved to nothing.
fn fill_args(args: &Value, last: Option<&Value>, captures: &[String]) -> (Value, bool) {
    let ids: Vec<Value> = last
        .map(|v| {
            let listed = v.get("results").and_then(Value::as_array).or_else(|| {
                v.as_object()?.values().find_map(|field| {
                    let list = field.as_array()?;
                    list.first()?.get("id").is_some().then_some(list)
                })
            });
            if let Some(results) = listed {
                results
                    .iter()
                    .filter_map(|r| r.get("id").cloned())
                    .collect()
            } else {
                v.get("ids")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
            }
        })
        .unwrap_or_default();
    let mut empty = false;
    let filled = match args {
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                if v == "$ids" {
                    empty |= ids.is_empty();
                    out.insert(k.clone(), Value::Array(ids.clone()));
                } else if v == "$id" {
                    empty |= ids.is_empty();
                    out.insert(k.clone(), ids.first().cloned().unwrap_or(Value::Null));
                } else if let Some(group) = v
                    .as_str()
                    .and_then(|t| t.strip_prefix('$'))
                    .and_then(|n| n.parse::<usize>().ok())
                    .filter(|n| (1..=9).contains(n))
                {
                    let text = captures.get(group).cloned().unwrap_or_default();
                    empty |= text.is_empty();
                    out.insert(k.clone(), Value::String(text));
                } else {
                    out.insert(k.clone(), v.clone());
                }
            }
            Value::Object(out)
        }
        Value::Null => json!({}),
        other => other.clone(),
    };
    (filled, empty)
}

/// The reply when everything a card named changed after it was made, so nothing ran.
const STALE_TEXT: &str = "That did not happen: what the card named had changed since you saw it (it may have been done already), so nothing was changed.";

/// The reply when the template names a field the last observation does not have.
const DONE_TEXT: &str = "Done. Activity shows what changed.";

/// Replaces `{field}` with the last observation's top-level field (numbers and strings). When a
/// `{field}` is left unfilled the reply is [`DONE_TEXT`] instead: the last observation is not
/// the one the template was written for (the rule follows the latest request, and a card
/// answered after a newer request resumes the older one), and the owner must never read a
/// template's braces.
fn fill_text(template: &str, last: Option<&Value>) -> String {
    fn scalar(v: &Value) -> Option<String> {
        match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }
    let mut out = template.to_string();
    if let Some(Value::Object(map)) = last {
        for (k, v) in map {
            if let Some(text) = scalar(v) {
                out = out.replace(&format!("{{{k}}}"), &text);
            } else if let Value::Object(inner) = v {
                // One level down: `{left_out.message}`.
                for (k2, v2) in inner {
                    if let Some(text) = scalar(v2) {
                        out = out.replace(&format!("{{{k}.{k2}}}"), &text);
                    }
                }
            }
        }
    }
    if has_placeholder(&out) {
        return DONE_TEXT.to_owned();
    }
    out
}

/// Whether `text` still holds a `{field}` or `{field.inner}` (a letter or `_`, then letters,
/// digits, `_` or `.`).
fn has_placeholder(text: &str) -> bool {
    text.split('{').skip(1).any(|rest| {
        rest.split_once('}').is_some_and(|(name, _)| {
            name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        })
    })
}

#[async_trait]
impl Model for ScriptedModel {
    async fn complete(
        &self,
        messages: &[Message],
        _tools: &[ToolSpec],
    ) -> Result<ModelTurn, ModelError> {
        Ok(self.next_turn(messages))
    }
}

#[cfg(test)]
mod tests;
