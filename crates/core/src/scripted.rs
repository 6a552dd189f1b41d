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
mod tests {
    use super::*;

    fn user(s: &str) -> Message {
        Message::User { content: s.into() }
    }

    #[test]
    fn ids_come_from_results_or_the_first_list_of_objects_with_an_id() {
        let args = json!({"ids": "$ids"});
        let cases = [
            (
                json!({"results": [{"id": "m1"}], "events": [{"id": "x"}]}),
                json!(["m1"]),
            ),
            (
                json!({"total": 2, "events": [{"id": "e1"}, {"id": "e2"}]}),
                json!(["e1", "e2"]),
            ),
            (json!({"names": ["a"], "ids": ["i1"]}), json!(["i1"])),
        ];
        for (observation, ids) in cases {
            let (filled, empty) = fill_args(&args, Some(&observation), &[]);
            assert_eq!(filled, json!({"ids": ids}), "{observation}");
            assert!(!empty);
        }
        let (_, empty) = fill_args(&args, Some(&json!({"events": []})), &[]);
        assert!(empty, "an empty list leaves nothing to name");
    }

    #[test]
    fn demo_script_plays_search_then_trash_with_real_ids() {
        let m = ScriptedModel::from_yaml(DEMO_SCRIPT).unwrap();
        let mut t = vec![user("trash the promo emails from this week")];
        let first = m.next_turn(&t);
        assert_eq!(first.tool_calls[0].name, "search_inbox");
        t.push(Message::Assistant {
            content: None,
            tool_calls: first.tool_calls.clone(),
        });
        t.push(Message::Tool {
            tool_call_id: first.tool_calls[0].id.clone(),
            content: json!({"results": [{"id": "m1"}, {"id": "m2"}], "count": 2}),
        });
        let second = m.next_turn(&t);
        assert_eq!(second.tool_calls[0].name, "trash_email");
        assert_eq!(second.tool_calls[0].arguments, json!({"ids": ["m1", "m2"]}));
        t.push(Message::Assistant {
            content: None,
            tool_calls: second.tool_calls.clone(),
        });
        t.push(Message::Tool {
            tool_call_id: second.tool_calls[0].id.clone(),
            content: json!({"status": "rejected", "message": "the owner rejected this: no"}),
        });
        let third = m.next_turn(&t);
        assert!(third.content.unwrap().contains("Nothing was changed"));
    }

    /// Two cards waiting in one conversation: the older one answered after the newer request
    /// continues its own request (the notice names its call), never the newer request's steps,
    /// and never claims work that did not run.
    #[test]
    fn an_older_card_answered_after_a_newer_request_continues_its_own_request() {
        let m = ScriptedModel::from_yaml(DEMO_SCRIPT).unwrap();
        let mut t = Vec::new();
        let mut paused = Vec::new();
        for request in [
            "trash the promo emails from this week",
            "trash the promos please",
        ] {
            t.push(user(request));
            for name in ["search_inbox", "trash_email"] {
                let turn = m.next_turn(&t);
                assert_eq!(turn.tool_calls[0].name, name);
                let mut calls = turn.tool_calls.clone();
                calls[0].id = format!("call_{}", t.len());
                t.push(Message::Assistant {
                    content: None,
                    tool_calls: calls.clone(),
                });
                if name == "search_inbox" {
                    t.push(Message::Tool {
                        tool_call_id: calls[0].id.clone(),
                        content: json!({"results": [{"id": "m1"}], "count": 1}),
                    });
                } else {
                    paused.push((t.len(), calls[0].id.clone()));
                }
            }
        }
        // The first card is rejected: its result goes right after its call, the notice last.
        let (at, id) = paused[0].clone();
        t.insert(
            at,
            Message::Tool {
                tool_call_id: id.clone(),
                content: json!({"status": "rejected", "message": "the owner rejected this: no"}),
            },
        );
        t.push(Message::System {
            content: crate::agent::continue_notice(
                "rejected",
                "Trash 1 email",
                "trash_email",
                &id,
                "trash the promo emails from this week",
            ),
        });
        let reply = m.next_turn(&t).content.unwrap();
        assert_eq!(
            reply,
            "OK, I left them where they are. Nothing was changed, sent or deleted."
        );
        assert_eq!(crate::agent::continued_call_id("no notice here"), None);
    }

    /// A stale or unknown outcome never gets the success text.
    #[test]
    fn stale_and_unknown_outcomes_are_not_reported_as_done() {
        let m = ScriptedModel::from_yaml(DEMO_SCRIPT).unwrap();
        for (status, message, expected) in [
            ("stale", "stale: nothing done", STALE_TEXT),
            (
                "unknown",
                "unknown: it may or may not have run; it will not be run again",
                "I cannot tell whether that happened (unknown: it may or may not have run; it will not be run again). Please check before asking again.",
            ),
        ] {
            let mut t = vec![user("trash the promo emails from this week")];
            for (name, content) in [
                ("search_inbox", json!({"results": [{"id": "m1"}], "count": 1})),
                ("trash_email", json!({"status": status, "message": message})),
            ] {
                let turn = m.next_turn(&t);
                assert_eq!(turn.tool_calls[0].name, name);
                t.push(Message::Assistant {
                    content: None,
                    tool_calls: turn.tool_calls.clone(),
                });
                t.push(Message::Tool {
                    tool_call_id: turn.tool_calls[0].id.clone(),
                    content,
                });
            }
            assert_eq!(m.next_turn(&t).content.as_deref(), Some(expected), "{status}");
        }
    }

    #[test]
    fn arguments_take_the_requests_capture_groups() {
        let m = ScriptedModel::from_yaml(
            r#"
rules:
  - when: "trash promo (\\d+)"
    steps:
      - call: search_inbox
        args: {query: "$1", limit: 1}
"#,
        )
        .unwrap();
        let turn = m.next_turn(&[user("trash promo 17")]);
        assert_eq!(
            turn.tool_calls[0].arguments,
            json!({"query": "17", "limit": 1})
        );
    }

    #[test]
    fn demo_script_does_not_match_lookalike_requests() {
        let m = ScriptedModel::from_yaml(DEMO_SCRIPT).unwrap();
        for request in [
            "delete the sales report from Priya",
            "don't reply to Anna",
            "reply to Joanna that Friday works",
        ] {
            let turn = m.next_turn(&[user(request)]);
            assert!(
                turn.tool_calls.iter().all(|c| c.name != "trash_category"
                    && c.name != "trash_email"
                    && c.name != "send_email"),
                "{request}: {turn:?}"
            );
        }
        let turn = m.next_turn(&[user("Delete my promo emails from this week")]);
        assert_eq!(turn.tool_calls[0].name, "trash_category");
    }

    #[test]
    fn demo_script_replies_to_the_newest_match() {
        let m = ScriptedModel::from_yaml(DEMO_SCRIPT).unwrap();
        let mut t = vec![user("reply to Anna that Thursday works")];
        let first = m.next_turn(&t);
        assert_eq!(first.tool_calls[0].name, "search_inbox");
        t.push(Message::Assistant {
            content: None,
            tool_calls: first.tool_calls.clone(),
        });
        t.push(Message::Tool {
            tool_call_id: first.tool_calls[0].id.clone(),
            content: json!({"results": [{"id": "m9"}, {"id": "m2"}], "count": 2}),
        });
        let second = m.next_turn(&t);
        assert_eq!(second.tool_calls[0].name, "send_email");
        assert_eq!(second.tool_calls[0].arguments["reply_to_id"], "m9");
        assert!(second.tool_calls[0].arguments.get("to").is_none());
        // An empty search never reaches send_email.
        let mut empty = vec![user("reply to Anna that Thursday works")];
        empty.push(Message::Assistant {
            content: None,
            tool_calls: first.tool_calls.clone(),
        });
        empty.push(Message::Tool {
            tool_call_id: first.tool_calls[0].id.clone(),
            content: json!({"results": [], "count": 0}),
        });
        assert!(m.next_turn(&empty).tool_calls.is_empty());
    }

    /// A card answered after a newer request in the same chat resumes the older run, while the
    /// rule follows the newer request: its reply's `{summary}` has nothing to fill, so the owner
    /// reads a plain "Done." line, never the braces.
    #[test]
    fn a_reply_never_shows_an_unfilled_placeholder() {
        let m = ScriptedModel::from_yaml(DEMO_SCRIPT).unwrap();
        let call = |name: &str, id: &str| Message::Assistant {
            content: None,
            tool_calls: vec![ToolCall {
                id: id.into(),
                name: name.into(),
                arguments: json!({}),
            }],
        };
        let result = |id: &str, content: Value| Message::Tool {
            tool_call_id: id.into(),
            content,
        };
        let t = vec![
            user("trash the promo emails from this week"),
            call("search_inbox", "c1"),
            result("c1", json!({"results": [{"id": "m1"}], "count": 1})),
            call("trash_email", "c2"),
            // The trash card, approved after the next request: its result placed at its call.
            result("c2", json!({"trashed": 1, "restorable": ["m1"]})),
            user("reply to Anna that Thursday works"),
            call("search_inbox", "c3"),
            result("c3", json!({"results": [{"id": "m9"}], "count": 1})),
            call("send_email", "c4"),
            result("c4", json!({"status": "pending"})),
        ];
        let reply = m.next_turn(&t).content.unwrap();
        assert_eq!(reply, DONE_TEXT);
        assert!(!has_placeholder(&reply));
        // A template whose fields are there is filled as written.
        assert_eq!(
            fill_text(
                "Moved {trashed} of {count}.",
                Some(&json!({"trashed": 2, "count": 3}))
            ),
            "Moved 2 of 3."
        );
        assert!(has_placeholder("Done: {trashed} emails"));
        assert!(!has_placeholder("a {} set, {1} or { spaced }"));
    }

    #[test]
    fn empty_search_replies_instead_of_calling() {
        let m = ScriptedModel::from_yaml(DEMO_SCRIPT).unwrap();
        let mut t = vec![user("trash the promo emails from this week")];
        let first = m.next_turn(&t);
        t.push(Message::Assistant {
            content: None,
            tool_calls: first.tool_calls.clone(),
        });
        t.push(Message::Tool {
            tool_call_id: first.tool_calls[0].id.clone(),
            content: json!({"results": [], "count": 0}),
        });
        let second = m.next_turn(&t);
        assert!(second.tool_calls.is_empty());
        assert!(second.content.unwrap().contains("nothing"));
    }
}
