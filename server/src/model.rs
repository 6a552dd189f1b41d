//! Model adapters: `IRIS_MODEL=openai:BASE_URL` (any OpenAI-compatible server: Ollama,
//! llama.cpp, vLLM, OpenAI) through async-openai, and `scripted:PATH` (core's scripted model).
//!
//! DESIGN §7: `tools` are sent as function definitions built from the manifests, and tool
//! results as `role: "tool"` messages whose content is a JSON object.

use std::sync::Arc;

use anyhow::Context;
use async_openai::config::OpenAIConfig;
use async_openai::Client;
use async_trait::async_trait;
use iris_core::manifest::ToolSpec;
use iris_core::model::{Message, Model, ModelError, ModelTurn, ToolCall};
use iris_core::scripted::{ScriptedModel, DEMO_SCRIPT};
use serde_json::{json, Value};

/// An OpenAI-compatible chat-completions client.
pub struct OpenAiModel {
    client: Client<OpenAIConfig>,
    model: String,
}

impl OpenAiModel {
    /// A client for `base_url` (e.g. `http://127.0.0.1:11434/v1`), model name and optional key.
    pub fn new(base_url: &str, model: &str, api_key: Option<&str>) -> Self {
        let config = OpenAIConfig::new()
            .with_api_base(base_url.trim_end_matches('/'))
            .with_api_key(api_key.unwrap_or("none"));
        OpenAiModel {
            client: Client::with_config(config),
            model: model.to_string(),
        }
    }
}

/// The request body: messages in OpenAI's shape and the manifests' tools as functions.
pub fn request_body(model: &str, messages: &[Message], tools: &[ToolSpec]) -> Value {
    let messages: Vec<Value> = messages
        .iter()
        .map(|m| match m {
            Message::System { content } => json!({"role": "system", "content": content}),
            Message::User { content } => json!({"role": "user", "content": content}),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut v = json!({"role": "assistant", "content": content});
                if !tool_calls.is_empty() {
                    v["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| {
                            json!({"id": c.id, "type": "function", "function": {
                                "name": c.name, "arguments": c.arguments.to_string()}})
                        })
                        .collect();
                }
                v
            }
            Message::Tool {
                tool_call_id,
                content,
            } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content.to_string()}),
        })
        .collect();
    let tools: Vec<Value> = tools
        .iter()
        .map(|t| {
            json!({"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.parameters}})
        })
        .collect();
    let mut body = json!({"model": model, "messages": messages, "stream": false});
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    body
}

/// Reads the first choice of a chat completion into a [`ModelTurn`].
///
/// # Errors
/// [`ModelError::Protocol`] when there is no choice or a call's arguments are not JSON.
pub fn parse_response(body: &Value) -> Result<ModelTurn, ModelError> {
    let message = body
        .pointer("/choices/0/message")
        .ok_or_else(|| ModelError::Protocol("no choices[0].message in the answer".into()))?;
    let content = message
        .get("content")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let mut tool_calls = Vec::new();
    for (i, c) in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = c
            .pointer("/function/name")
            .and_then(Value::as_str)
            .ok_or_else(|| ModelError::Protocol("a tool call has no function name".into()))?;
        let arguments = match c.pointer("/function/arguments") {
            Some(Value::String(s)) if s.trim().is_empty() => json!({}),
            Some(Value::String(s)) => serde_json::from_str(s).map_err(|e| {
                ModelError::Protocol(format!("arguments of `{name}` are not JSON: {e}"))
            })?,
            Some(other) => other.clone(),
            None => json!({}),
        };
        let id = c
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("call_{i}"));
        tool_calls.push(ToolCall {
            id,
            name: name.to_string(),
            arguments,
        });
    }
    Ok(ModelTurn {
        content,
        tool_calls,
    })
}

#[async_trait]
impl Model for OpenAiModel {
    async fn complete(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
    ) -> Result<ModelTurn, ModelError> {
        let body = request_body(&self.model, messages, tools);
        let answer: Value = self
            .client
            .chat()
            .create_byot(body)
            .await
            .map_err(|e| ModelError::Transport(e.to_string()))?;
        parse_response(&answer)
    }
}

/// Builds the model from `IRIS_MODEL` (`openai:BASE_URL` or `scripted:PATH`); `None` with
/// `demo` gives the demo script.
///
/// # Errors
/// When the setting is malformed or the script cannot be read or parsed.
pub fn from_setting(
    setting: Option<&str>,
    name: Option<&str>,
    api_key: Option<&str>,
    demo: bool,
) -> anyhow::Result<Arc<dyn Model>> {
    match setting {
        Some(s) if s.starts_with("openai:") => Ok(Arc::new(OpenAiModel::new(
            &s["openai:".len()..],
            name.unwrap_or("llama3.1"),
            api_key,
        ))),
        Some(s) if s.starts_with("scripted:") => {
            let path = &s["scripted:".len()..];
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading the model script {path} (IRIS_MODEL)"))?;
            Ok(Arc::new(ScriptedModel::from_yaml(&text)?))
        }
        Some(other) => anyhow::bail!(
            "IRIS_MODEL `{other}` is not understood: use `openai:BASE_URL` or `scripted:PATH`"
        ),
        None if demo => Ok(Arc::new(ScriptedModel::from_yaml(DEMO_SCRIPT)?)),
        None => anyhow::bail!(
            "no model configured: set IRIS_MODEL to `openai:BASE_URL` (with IRIS_MODEL_NAME) or `scripted:PATH`, or run `iris serve --demo`"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_results_are_json_objects_and_tools_are_functions() {
        let msgs = vec![
            Message::User {
                content: "hi".into(),
            },
            Message::Assistant {
                content: None,
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "search_inbox".into(),
                    arguments: json!({"query": "x"}),
                }],
            },
            Message::Tool {
                tool_call_id: "c1".into(),
                content: json!({"results": []}),
            },
        ];
        let body = request_body("m", &msgs, &[]);
        assert_eq!(body["messages"][2]["role"], "tool");
        let content: Value =
            serde_json::from_str(body["messages"][2]["content"].as_str().unwrap()).unwrap();
        assert!(content.is_object());
        assert_eq!(
            body["messages"][1]["tool_calls"][0]["function"]["arguments"],
            "{\"query\":\"x\"}"
        );
    }

    #[test]
    fn parses_calls_with_string_arguments() {
        let turn = parse_response(&json!({"choices": [{"message": {"content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "trash_email", "arguments": "{\"ids\":[\"m1\"]}"}}]}}]}))
        .unwrap();
        assert_eq!(turn.tool_calls[0].arguments, json!({"ids": ["m1"]}));
        assert!(parse_response(&json!({"choices": []})).is_err());
    }
}
