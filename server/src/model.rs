//! Model adapters: `IRIS_MODEL=openai:BASE_URL` (any OpenAI-compatible server: Ollama,
//! llama.cpp, vLLM, OpenAI) through async-openai, and `scripted:PATH` (core's scripted model).
//!
//! DESIGN §7: `tools` are sent as function definitions built from the manifests, and tool
//! results as `role: "tool"` messages whose content is a JSON object.
//!
//! With `IRIS_MODEL_STREAM=true` the OpenAI-compatible adapter asks for `"stream": true` and
//! assembles the server-sent chunks ([`StreamAssembler`]: content deltas, and tool-call deltas by
//! `index` with `id`, `name` and `arguments` fragments) into the same [`ModelTurn`] a plain
//! answer gives, through the same [`parse_response`]. The loop cannot tell the two apart, so
//! `effects_executed` and every governance rule behave the same on both paths.

use std::sync::Arc;

use anyhow::Context;
use async_openai::config::OpenAIConfig;
use async_openai::Client;
use async_trait::async_trait;
use futures::StreamExt;
use iris_core::manifest::ToolSpec;
use iris_core::model::{Message, Model, ModelError, ModelTurn, ToolCall};
use iris_core::scripted::{ScriptedModel, DEMO_SCRIPT};
use serde_json::{json, Value};

/// An OpenAI-compatible chat-completions client.
pub struct OpenAiModel {
    client: Client<OpenAIConfig>,
    model: String,
    stream: bool,
    timeout: std::time::Duration,
}

impl OpenAiModel {
    /// A client for `base_url` (e.g. `http://127.0.0.1:11434/v1`), model name and optional key.
    /// It asks for plain (non-streamed) answers; see [`OpenAiModel::streaming`].
    pub fn new(base_url: &str, model: &str, api_key: Option<&str>) -> Self {
        let config = OpenAIConfig::new()
            .with_api_base(base_url.trim_end_matches('/'))
            .with_api_key(api_key.unwrap_or("none"));
        crate::tls::use_ring();
        OpenAiModel {
            client: Client::with_config(config),
            model: model.to_string(),
            stream: false,
            timeout: std::time::Duration::from_secs(120),
        }
    }

    /// `IRIS_MODEL_TIMEOUT_SECS`: a call whose answer (or, when streaming, whose next chunk)
    /// has not arrived within `timeout` fails, so a model that goes silent is a failed call
    /// the card shows and the owner can retry, not a wait without end.
    pub fn with_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The error of a model that went silent for [`OpenAiModel::with_timeout`].
    fn silent(&self, waiting_for: &str) -> ModelError {
        ModelError::Transport(format!(
            "the model sent no {waiting_for} within {} s (IRIS_MODEL_TIMEOUT_SECS)",
            self.timeout.as_secs()
        ))
    }

    /// `IRIS_MODEL_STREAM`: with `true`, requests carry `"stream": true` and the streamed chunks
    /// are assembled into one [`ModelTurn`] ([`StreamAssembler`]).
    pub fn streaming(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }
}

/// The request body: messages in OpenAI's shape, the manifests' tools as functions, and
/// `"stream"` as asked.
pub fn request_body(model: &str, messages: &[Message], tools: &[ToolSpec], stream: bool) -> Value {
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
    let mut body = json!({"model": model, "messages": messages, "stream": stream});
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
    for c in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
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
        // A call without an id keeps it empty here: the agent mints one unique in the
        // conversation (`agent::mint_call_ids`).
        let id = c
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_default();
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

/// One tool call being assembled from stream deltas.
#[derive(Debug, Default)]
struct PartialCall {
    index: u64,
    id: Option<String>,
    name: String,
    arguments: String,
}

/// Assembles a streamed chat completion (`chat.completion.chunk` objects) into the answer a
/// plain request would have given.
///
/// Per chunk, only choice 0 counts (its `delta`): `content` fragments are appended in order;
/// each entry of `tool_calls` names its call by `index` (a server that omits it continues the
/// call with the same `id`, or the last one) and carries an `id` (kept), and `function.name`
/// and `function.arguments` fragments (appended). Chunks without choices (usage) are skipped.
/// [`StreamAssembler::finish`] orders the calls by index and reads the result with
/// [`parse_response`], so both paths share every rule (arguments must be JSON, a missing id
/// becomes `call_N`).
#[derive(Debug, Default)]
pub struct StreamAssembler {
    chunks: usize,
    content: String,
    calls: Vec<PartialCall>,
    /// Whether choice 0's final chunk (`finish_reason`) arrived: a stream cut off before it is
    /// a failed call, never a finished (possibly empty) answer.
    finished: bool,
}

impl StreamAssembler {
    /// An empty assembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one chunk.
    ///
    /// # Errors
    /// [`ModelError::Protocol`] when the chunk is an error object, or a call's fragments are not
    /// text.
    pub fn push(&mut self, chunk: &Value) -> Result<(), ModelError> {
        self.chunks += 1;
        if let Some(error) = chunk.get("error") {
            return Err(ModelError::Protocol(format!(
                "the model server sent an error in the stream: {error}"
            )));
        }
        let Some(choices) = chunk.get("choices").and_then(Value::as_array) else {
            return Ok(());
        };
        let Some(choice) = choices
            .iter()
            .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
        else {
            return Ok(());
        };
        if choice
            .get("finish_reason")
            .is_some_and(|reason| !reason.is_null())
        {
            self.finished = true;
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(());
        };
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            self.content.push_str(text);
        }
        for fragment in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.push_call(fragment)?;
        }
        Ok(())
    }

    fn push_call(&mut self, fragment: &Value) -> Result<(), ModelError> {
        let id = fragment
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let index = match fragment.get("index").and_then(Value::as_u64) {
            Some(i) => i,
            None => match id.and_then(|id| self.calls.iter().find(|c| c.id.as_deref() == Some(id)))
            {
                Some(call) => call.index,
                None if id.is_some() || self.calls.is_empty() => {
                    self.calls.iter().map(|c| c.index + 1).max().unwrap_or(0)
                }
                None => self.calls.last().map(|c| c.index).unwrap_or(0),
            },
        };
        let position = match self.calls.iter().position(|c| c.index == index) {
            Some(p) => p,
            None => {
                self.calls.push(PartialCall {
                    index,
                    ..PartialCall::default()
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[position];
        if let Some(id) = id {
            call.id = Some(id.to_string());
        }
        let Some(function) = fragment.get("function") else {
            return Ok(());
        };
        match function.get("name") {
            None | Some(Value::Null) => {}
            Some(Value::String(name)) => call.name.push_str(name),
            Some(other) => {
                return Err(ModelError::Protocol(format!(
                    "a streamed tool call name is not text: {other}"
                )))
            }
        }
        match function.get("arguments") {
            None | Some(Value::Null) => {}
            Some(Value::String(part)) => call.arguments.push_str(part),
            // Some servers send the whole object at once.
            Some(object @ Value::Object(_)) => call.arguments.push_str(&object.to_string()),
            Some(other) => {
                return Err(ModelError::Protocol(format!(
                    "streamed arguments of `{}` are not text: {other}",
                    call.name
                )))
            }
        }
        Ok(())
    }

    /// The assembled answer.
    ///
    /// # Errors
    /// [`ModelError::Protocol`] when the stream carried no chunk, ended before its final
    /// chunk (no `finish_reason`), or what [`parse_response`] refuses (a call without a name,
    /// arguments that are not JSON).
    pub fn finish(mut self) -> Result<ModelTurn, ModelError> {
        if self.chunks == 0 {
            return Err(ModelError::Protocol(
                "the model's stream ended without a chunk".into(),
            ));
        }
        if !self.finished {
            return Err(ModelError::Protocol(
                "the model's stream was cut off before its final chunk (no finish_reason)".into(),
            ));
        }
        self.calls.sort_by_key(|c| c.index);
        let tool_calls: Vec<Value> = self
            .calls
            .iter()
            .map(|c| {
                let mut call = json!({"type": "function",
                    "function": {"name": c.name, "arguments": c.arguments}});
                if let Some(id) = &c.id {
                    call["id"] = json!(id);
                }
                call
            })
            .collect();
        let mut message = json!({"role": "assistant", "content": self.content});
        if !tool_calls.is_empty() {
            message["tool_calls"] = Value::Array(tool_calls);
        }
        parse_response(&json!({"choices": [{"index": 0, "message": message}]}))
    }
}

#[async_trait]
impl Model for OpenAiModel {
    async fn complete(
        &self,
        messages: &[Message],
        tools: &[ToolSpec],
    ) -> Result<ModelTurn, ModelError> {
        let body = request_body(&self.model, messages, tools, self.stream);
        if !self.stream {
            let answer: Value =
                tokio::time::timeout(self.timeout, self.client.chat().create_byot(body))
                    .await
                    .map_err(|_| self.silent("answer"))?
                    .map_err(|e| ModelError::Transport(e.to_string()))?;
            return parse_response(&answer);
        }
        let mut chunks = tokio::time::timeout(
            self.timeout,
            self.client.chat().create_stream_byot::<Value, Value>(body),
        )
        .await
        .map_err(|_| self.silent("answer"))?
        .map_err(|e| ModelError::Transport(e.to_string()))?;
        let mut assembler = StreamAssembler::new();
        loop {
            let next = tokio::time::timeout(self.timeout, chunks.next())
                .await
                .map_err(|_| self.silent("next chunk"))?;
            let Some(chunk) = next else { break };
            let chunk = chunk.map_err(|e| ModelError::Transport(e.to_string()))?;
            assembler.push(&chunk)?;
        }
        assembler.finish()
    }
}

/// The model settings: `IRIS_MODEL`, `IRIS_MODEL_NAME`, `IRIS_MODEL_API_KEY`,
/// `IRIS_MODEL_STREAM`, `IRIS_MODEL_TIMEOUT_SECS`.
#[derive(Debug, Clone)]
pub struct ModelSetting<'a> {
    /// `openai:BASE_URL` or `scripted:PATH`.
    pub model: Option<&'a str>,
    /// The model's name on an OpenAI-compatible server.
    pub name: Option<&'a str>,
    /// Its API key.
    pub api_key: Option<&'a str>,
    /// Ask for streamed answers (`openai:` only).
    pub stream: bool,
    /// How long a model call may stay silent (`openai:` only).
    pub timeout: std::time::Duration,
}

/// Builds the model from `IRIS_MODEL` (`openai:BASE_URL` or `scripted:PATH`); `None` with
/// `demo` gives the demo script.
///
/// # Errors
/// When the setting is malformed or the script cannot be read or parsed.
pub fn from_setting(setting: &ModelSetting<'_>, demo: bool) -> anyhow::Result<Arc<dyn Model>> {
    match setting.model {
        Some(s) if s.starts_with("openai:") => Ok(Arc::new(
            OpenAiModel::new(
                &s["openai:".len()..],
                setting.name.unwrap_or("llama3.1"),
                setting.api_key,
            )
            .streaming(setting.stream)
            .with_timeout(setting.timeout),
        )),
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
        let body = request_body("m", &msgs, &[], false);
        assert_eq!(body["stream"], false);
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

    fn chunk(delta: Value) -> Value {
        json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]})
    }

    /// The final chunk of choice 0.
    fn finished(reason: &str) -> Value {
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    }

    #[test]
    fn assembles_content_and_interleaved_tool_call_fragments() {
        let mut a = StreamAssembler::new();
        let chunks = vec![
            chunk(json!({"role": "assistant", "content": ""})),
            chunk(json!({"content": "Look"})),
            chunk(json!({"content": "ing…"})),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "c0", "type": "function",
                "function": {"name": "search_", "arguments": ""}}]}),
            ),
            chunk(
                json!({"tool_calls": [{"index": 1, "id": "c1", "type": "function",
                "function": {"name": "trash_email", "arguments": "{\"ids\":"}}]}),
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"name": "inbox", "arguments": "{\"que"}}]}),
            ),
            chunk(
                json!({"tool_calls": [{"index": 1, "function": {"arguments": "[\"m1\",\"m2\"]}"}}]}),
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "c0", "function": {"arguments": "ry\":\"é x\"}"}}]}),
            ),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"total_tokens": 3}}),
        ];
        for c in &chunks {
            a.push(c).unwrap();
        }
        let turn = a.finish().unwrap();
        assert_eq!(turn.content.as_deref(), Some("Looking…"));
        assert_eq!(
            turn.tool_calls,
            vec![
                ToolCall {
                    id: "c0".into(),
                    name: "search_inbox".into(),
                    arguments: json!({"query": "é x"}),
                },
                ToolCall {
                    id: "c1".into(),
                    name: "trash_email".into(),
                    arguments: json!({"ids": ["m1", "m2"]}),
                },
            ]
        );
    }

    #[test]
    fn a_streamed_answer_parses_like_the_plain_one() {
        let plain = json!({"choices": [{"message": {"content": "Hi", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "trash_email", "arguments": "{\"ids\":[\"m1\"]}"}},
            {"type": "function", "function": {"name": "search_inbox", "arguments": ""}}]}}]});
        let mut a = StreamAssembler::new();
        for c in [
            chunk(json!({"content": "H"})),
            chunk(json!({"content": "i"})),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "trash_email", "arguments": "{\"ids\""}}]}),
            ),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": ":[\"m1\"]}"}}]})),
            chunk(json!({"tool_calls": [{"index": 1, "function": {"name": "search_inbox"}}]})),
            finished("tool_calls"),
        ] {
            a.push(&c).unwrap();
        }
        assert_eq!(a.finish().unwrap(), parse_response(&plain).unwrap());
    }

    #[test]
    fn calls_without_an_index_continue_by_id() {
        let mut a = StreamAssembler::new();
        for c in [
            chunk(
                json!({"tool_calls": [{"id": "x", "function": {"name": "restore_email", "arguments": "{"}}]}),
            ),
            chunk(json!({"tool_calls": [{"id": "x", "function": {"arguments": "}"}}]})),
            chunk(
                json!({"tool_calls": [{"id": "y", "function": {"name": "search_inbox", "arguments": {"limit": 2}}}]}),
            ),
            finished("tool_calls"),
        ] {
            a.push(&c).unwrap();
        }
        let turn = a.finish().unwrap();
        assert_eq!(turn.content, None);
        assert_eq!(turn.tool_calls.len(), 2);
        assert_eq!(turn.tool_calls[0].arguments, json!({}));
        assert_eq!(turn.tool_calls[1].arguments, json!({"limit": 2}));
    }

    #[test]
    fn a_broken_stream_is_a_protocol_error() {
        assert!(matches!(
            StreamAssembler::new().finish(),
            Err(ModelError::Protocol(_))
        ));
        let mut a = StreamAssembler::new();
        assert!(a
            .push(&json!({"error": {"message": "overloaded"}}))
            .is_err());
        let mut a = StreamAssembler::new();
        a.push(&chunk(json!({"tool_calls": [{"index": 0, "function": {"name": "trash_email", "arguments": "{\"ids\":["}}]})))
            .unwrap();
        a.push(&finished("tool_calls")).unwrap();
        assert!(matches!(a.finish(), Err(ModelError::Protocol(m)) if m.contains("not JSON")));
    }

    #[test]
    fn a_stream_cut_off_before_its_final_chunk_is_no_answer() {
        // Whole-looking content, even a whole call, but the final chunk never came.
        let mut a = StreamAssembler::new();
        a.push(&chunk(json!({"content": "Done."}))).unwrap();
        assert!(
            matches!(a.finish(), Err(ModelError::Protocol(m)) if m.contains("cut off")),
            "an unfinished stream was taken as a finished answer"
        );
        let mut a = StreamAssembler::new();
        a.push(&chunk(json!({"content": "Done."}))).unwrap();
        a.push(&finished("stop")).unwrap();
        assert_eq!(a.finish().unwrap().content.as_deref(), Some("Done."));
    }

    /// A loopback OpenAI-compatible server that streams one fixed answer as server-sent events.
    async fn sse_server(chunks: Vec<Value>) -> (String, Arc<std::sync::Mutex<Vec<Value>>>) {
        use axum::response::sse::{Event, Sse};
        use axum::routing::post;
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen2 = seen.clone();
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            post(move |axum::Json(body): axum::Json<Value>| {
                let chunks = chunks.clone();
                let seen = seen2.clone();
                async move {
                    seen.lock().unwrap().push(body);
                    let mut events: Vec<Result<Event, std::convert::Infallible>> = chunks
                        .iter()
                        .map(|c| Ok(Event::default().data(c.to_string())))
                        .collect();
                    events.push(Ok(Event::default().data("[DONE]")));
                    Sse::new(futures::stream::iter(events))
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (format!("http://{addr}/v1"), seen)
    }

    #[tokio::test]
    async fn the_adapter_streams_from_a_loopback_server() {
        let args = r#"{"ids":["m1","m2","m3"]}"#;
        let mut chunks = vec![chunk(json!({"role": "assistant", "content": null}))];
        chunks.push(chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_9", "type": "function",
            "function": {"name": "trash_email", "arguments": ""}}]}),
        ));
        let chars: Vec<char> = args.chars().collect();
        for piece in chars.chunks(3) {
            chunks.push(chunk(json!({"tool_calls": [{"index": 0,
                "function": {"arguments": piece.iter().collect::<String>()}}]})));
        }
        chunks.push(finished("tool_calls"));
        let (base, seen) = sse_server(chunks).await;
        let model = OpenAiModel::new(&base, "m", None).streaming(true);
        let turn = model
            .complete(
                &[Message::User {
                    content: "trash them".into(),
                }],
                &[],
            )
            .await
            .unwrap();
        assert_eq!(
            turn.tool_calls,
            vec![ToolCall {
                id: "call_9".into(),
                name: "trash_email".into(),
                arguments: json!({"ids": ["m1", "m2", "m3"]}),
            }]
        );
        assert_eq!(turn.content, None);
        assert_eq!(seen.lock().unwrap()[0]["stream"], true);
    }
}
