//! The scripted model on loopback: a [`ScriptedModel`] served over the OpenAI chat-completions
//! protocol (plain answers, or server-sent chunks when a request says `"stream": true`), which a
//! test can take down, make misbehave ([`Fault`]) or hold after a number of answers.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use iris_core::model::{Message, ToolCall};
use iris_core::scripted::ScriptedModel;
use serde_json::{json, Value};

/// A scripted model served over the OpenAI chat-completions protocol.
pub struct ModelServer {
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    /// Every request body received, in order.
    pub requests: Arc<Mutex<Vec<Value>>>,
    /// While true, every request is answered `503 Service Unavailable` (the model is down);
    /// requests are still recorded.
    pub down: Arc<std::sync::atomic::AtomicBool>,
    /// How the model misbehaves, if it does.
    pub fault: Arc<Mutex<Fault>>,
    /// How many requests may be answered (`usize::MAX`: all); a request beyond it waits until
    /// [`ModelServer::release`] lets it through.
    gate: tokio::sync::watch::Sender<usize>,
}

/// A model server's misbehaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fault {
    /// Answers as the script says.
    #[default]
    None,
    /// Streams the answer's first chunks, then ends the stream without its final chunk (no
    /// `finish_reason`, no `[DONE]`).
    CutOff,
    /// Accepts the request and never answers.
    Silent,
}

#[derive(Clone)]
struct ModelState {
    script: Arc<ScriptedModel>,
    requests: Arc<Mutex<Vec<Value>>>,
    down: Arc<std::sync::atomic::AtomicBool>,
    fault: Arc<Mutex<Fault>>,
    gate: tokio::sync::watch::Receiver<usize>,
}

/// OpenAI messages back into the core's transcript (the inverse of the server's adapter).
fn to_core(messages: &[Value]) -> Vec<Message> {
    messages
        .iter()
        .map(|m| {
            let text = m["content"].as_str().map(str::to_string);
            match m["role"].as_str().unwrap_or_default() {
                "system" => Message::System {
                    content: text.unwrap_or_default(),
                },
                "user" => Message::User {
                    content: text.unwrap_or_default(),
                },
                "assistant" => Message::Assistant {
                    content: text,
                    tool_calls: m["tool_calls"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|c| ToolCall {
                            id: c["id"].as_str().unwrap_or_default().to_string(),
                            name: c["function"]["name"]
                                .as_str()
                                .unwrap_or_default()
                                .to_string(),
                            arguments: serde_json::from_str(
                                c["function"]["arguments"].as_str().unwrap_or("{}"),
                            )
                            .expect("arguments are JSON text"),
                        })
                        .collect(),
                },
                "tool" => Message::Tool {
                    tool_call_id: m["tool_call_id"].as_str().unwrap_or_default().to_string(),
                    content: serde_json::from_str(
                        m["content"].as_str().expect("tool content is text"),
                    )
                    .expect("tool content is JSON"),
                },
                other => panic!("unexpected role {other}"),
            }
        })
        .collect()
}

async fn completions(State(state): State<ModelState>, Json(body): Json<Value>) -> Response {
    let index = {
        let mut requests = state.requests.lock().unwrap();
        requests.push(body.clone());
        requests.len()
    };
    let mut gate = state.gate.clone();
    let _ = gate.wait_for(|allowed| index <= *allowed).await;
    let fault = *state.fault.lock().unwrap();
    if fault == Fault::Silent {
        std::future::pending::<()>().await;
    }
    if state.down.load(std::sync::atomic::Ordering::SeqCst) {
        return (
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "the model is down (test)",
        )
            .into_response();
    }
    let messages = to_core(body["messages"].as_array().expect("messages"));
    let turn = state.script.next_turn(&messages);
    if body["stream"] == true {
        return stream_turn(&turn, &body["model"], fault == Fault::CutOff).into_response();
    }
    let tool_calls: Vec<Value> = turn
        .tool_calls
        .iter()
        .map(|c| {
            json!({"id": c.id, "type": "function",
                   "function": {"name": c.name, "arguments": c.arguments.to_string()}})
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": turn.content});
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    Json(json!({
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": body["model"],
        "choices": [{"index": 0, "message": message,
                     "finish_reason": if turn.tool_calls.is_empty() { "stop" } else { "tool_calls" }}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    }))
    .into_response()
}

/// Splits text into pieces of at most `n` characters.
fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

/// The chunks a streaming OpenAI server sends for one turn (`"stream": true`): a role chunk,
/// the content in 3-character deltas, every tool call opened with its index, id and name and
/// then its arguments in 4-character fragments, a finish chunk and a usage chunk without
/// choices, then `[DONE]`.
pub fn stream_chunks(turn: &iris_core::model::ModelTurn, model: &Value) -> Vec<Value> {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0,
               "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut chunks = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    for piece in pieces(turn.content.as_deref().unwrap_or_default(), 3) {
        chunks.push(chunk(json!({"content": piece}), Value::Null));
    }
    for (index, call) in turn.tool_calls.iter().enumerate() {
        chunks.push(chunk(
            json!({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                                   "function": {"name": call.name, "arguments": ""}}]}),
            Value::Null,
        ));
        for piece in pieces(&call.arguments.to_string(), 4) {
            chunks.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
    let finish = if turn.tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    chunks.push(chunk(json!({}), json!(finish)));
    chunks.push(
        json!({"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0,
                       "model": model, "choices": [],
                       "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}),
    );
    chunks
}

/// One turn as a server-sent event stream; `cut_off` ends it after its first two chunks,
/// before the final one.
fn stream_turn(
    turn: &iris_core::model::ModelTurn,
    model: &Value,
    cut_off: bool,
) -> Sse<impl futures::Stream<Item = Result<SseEvent, std::convert::Infallible>>> {
    let mut events: Vec<Result<SseEvent, std::convert::Infallible>> = stream_chunks(turn, model)
        .into_iter()
        .map(|c| Ok(SseEvent::default().data(c.to_string())))
        .collect();
    if cut_off {
        events.truncate(2);
    } else {
        events.push(Ok(SseEvent::default().data("[DONE]")));
    }
    Sse::new(futures::stream::iter(events))
}

impl ModelServer {
    /// Starts the scripted server on a free loopback port.
    pub async fn start(script_yaml: &str) -> ModelServer {
        let (gate, gate_rx) = tokio::sync::watch::channel(usize::MAX);
        let state = ModelState {
            script: Arc::new(ScriptedModel::from_yaml(script_yaml).expect("script parses")),
            requests: Arc::new(Mutex::new(Vec::new())),
            down: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            fault: Arc::new(Mutex::new(Fault::None)),
            gate: gate_rx,
        };
        let requests = state.requests.clone();
        let down = state.down.clone();
        let fault = state.fault.clone();
        let app = Router::new()
            .route("/v1/chat/completions", post(completions))
            .with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        ModelServer {
            base_url: format!("http://{addr}/v1"),
            requests,
            down,
            fault,
            gate,
        }
    }

    /// Takes the model down (`true`: every request gets 503) or brings it back.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, std::sync::atomic::Ordering::SeqCst);
    }

    /// Makes the model misbehave (or behave again).
    pub fn set_fault(&self, fault: Fault) {
        *self.fault.lock().unwrap() = fault;
    }

    /// From now on only the first `answered` requests are answered; later ones wait for
    /// [`ModelServer::release`].
    pub fn hold_after(&self, answered: usize) {
        self.gate.send_replace(answered);
    }

    /// Lets requests through up to the `answered`-th (`usize::MAX`: all).
    pub fn release(&self, answered: usize) {
        self.gate.send_replace(answered);
    }

    /// How many requests arrived so far (answered or waiting).
    pub fn received(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}
