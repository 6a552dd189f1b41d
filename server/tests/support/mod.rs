//! Test support: a scripted OpenAI-compatible model server on loopback (plain answers, or
//! server-sent chunks when a request says `"stream": true`), the real `iris` binary started on
//! port 0 against a temp SQLite database and a Maildir, and small HTTP helpers. [`telegram`] is
//! the fake Telegram Bot API.

#![allow(dead_code)]

pub mod authenticator;
pub mod mcp;
pub mod push;
pub mod telegram;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

/// A running `iris serve` process.
pub struct Iris {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
}

impl Iris {
    /// An HTTP client for this server.
    pub fn client(&self) -> Client {
        Client {
            http: reqwest::Client::new(),
            url: self.url.clone(),
        }
    }

    /// Kills the process with SIGKILL (`Child::kill` on Unix) and reaps it: a crash, with no
    /// chance to write anything more.
    pub fn kill(mut self) {
        self.child.kill().expect("SIGKILL the server");
        let status = self.child.wait().expect("reap the server");
        assert!(!status.success(), "killed, not exited: {status}");
    }
}

impl Iris {
    /// Sends `signal` (`TERM`, `INT`) to the server, as `kill -SIGNAL PID` would.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal}: {status}");
    }

    /// Waits for the server to exit by itself, at most `limit` (it is killed and the test
    /// fails past that): its exit status.
    pub fn wait_exit(mut self, limit: std::time::Duration) -> std::process::ExitStatus {
        let deadline = std::time::Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("poll the server") {
                return status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the server did not exit within {limit:?} of being asked to stop"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Drop for Iris {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Everything a test server needs on disk.
pub struct World {
    /// Temp root.
    pub dir: tempfile::TempDir,
    /// The Maildir.
    pub maildir: PathBuf,
    /// `sqlite://…`.
    pub database_url: String,
    /// `openai:…`.
    pub model: String,
    /// More environment for every `iris` command (e.g. `IRIS_MODEL_STREAM`).
    pub env: Vec<(String, String)>,
}

impl World {
    /// A temp world with an empty Maildir and a database path.
    pub fn new(model_base: &str) -> World {
        let dir = tempfile::tempdir().unwrap();
        let maildir = dir.path().join("Maildir");
        for sub in ["cur", "new", "tmp"] {
            std::fs::create_dir_all(maildir.join(sub)).unwrap();
        }
        let database_url = format!("sqlite://{}", dir.path().join("iris.db").display());
        World {
            dir,
            maildir,
            database_url,
            model: format!("openai:{model_base}"),
            env: Vec::new(),
        }
    }

    /// `iris ARGS` with this world's environment (not started).
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_iris"));
        c.args(args)
            .current_dir(self.dir.path())
            .env("IRIS_DATABASE_URL", &self.database_url)
            .env("IRIS_MAILDIR", &self.maildir)
            .env("IRIS_MODEL", &self.model)
            .env("IRIS_MODEL_NAME", "scripted")
            .env("IRIS_BIND", "127.0.0.1:0")
            .env("IRIS_CONFIG", self.dir.path().join("iris.toml"))
            .env("RUST_LOG", "warn")
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        c
    }

    /// Starts `iris serve` and waits for its "listening" line.
    pub fn start(&self) -> Iris {
        self.start_with(&["serve"])
    }

    /// Starts `iris ARGS` (e.g. `serve --demo`) and waits for its "listening" line.
    pub fn start_with(&self, args: &[&str]) -> Iris {
        let mut child = self
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("iris starts");
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("iris printed its address before exiting")
                .unwrap();
            if let Some(rest) = line.strip_prefix("iris listening on ") {
                break rest.trim().to_string();
            }
        };
        // Keep draining stdout so the child never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Iris { child, url }
    }

    /// Starts `iris serve` with `extra` environment (e.g. `IRIS_FAILPOINT`) and its stderr
    /// piped: every stderr line is echoed to the test's stderr and sent on the returned
    /// channel, so a test can wait for a line such as `failpoint reached: NAME`.
    pub fn start_watched(
        &self,
        extra: &[(&str, &str)],
    ) -> (Iris, std::sync::mpsc::Receiver<String>) {
        let mut child = self
            .command(&["serve"])
            .envs(extra.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("iris starts");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                eprintln!("[iris] {line}");
                let _ = tx.send(line);
            }
        });
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("iris printed its address before exiting")
                .unwrap();
            if let Some(rest) = line.strip_prefix("iris listening on ") {
                break rest.trim().to_string();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        (Iris { child, url }, rx)
    }

    /// `iris ARGS` against this world, which must succeed: its standard output.
    pub fn run_ok(&self, args: &[&str]) -> Vec<u8> {
        let out = self.command(args).output().unwrap();
        assert!(
            out.status.success(),
            "iris {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    /// `iris devices add`; returns the token (the last line).
    pub fn add_device(&self, name: &str, scope: &str) -> String {
        let out = self.run_ok(&["devices", "add", "--name", name, "--scope", scope]);
        String::from_utf8(out)
            .unwrap()
            .lines()
            .last()
            .unwrap()
            .trim()
            .to_string()
    }
}

impl World {
    /// `iris pair --scope SCOPE`; returns the whole output (the link is the last line).
    pub fn pair_output(&self, scope: &str) -> String {
        let out = self.command(&["pair", "--scope", scope]).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// `iris pair --scope SCOPE`; returns the link's path (`/pair/CODE`), to be opened on the
    /// test server's own address (the link is made on IRIS_BIND, which is port 0 in tests).
    pub fn pair_path(&self, scope: &str) -> String {
        let output = self.pair_output(scope);
        let link = output.lines().last().unwrap().trim();
        let at = link.find("/pair/").expect("a pairing link");
        link[at..].to_string()
    }
}

impl Iris {
    /// Pairs a browser as device `name` with `scope` the way a person does: `iris pair`, then
    /// the pairing page's form posted from this site. Returns the `Cookie` header value
    /// (`iris_session=…`) that browser then sends.
    pub async fn pair_browser(&self, world: &World, scope: &str, name: &str) -> String {
        let path = world.pair_path(scope);
        let response = no_redirects()
            .post(format!("{}{path}", self.url))
            .header("origin", &self.url)
            .form(&[("name", name)])
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            303,
            "pairing `{name}` redirects to the app"
        );
        session_cookie(&response).expect("pairing sets the session cookie")
    }
}

/// A client that does not follow redirects (to read a pairing's 303 and its cookie).
pub fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The `iris_session=…` pair of a response's `Set-Cookie`, if it sets one.
pub fn session_cookie(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| {
            let pair = v.split(';').next()?.trim();
            pair.starts_with("iris_session=").then(|| pair.to_string())
        })
}

/// Copies a Maildir's `cur/` messages into `dest` (a Maildir with cur/new/tmp).
pub fn copy_messages(from_cur: &Path, dest: &Path) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(from_cur).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dest.join("cur").join(entry.file_name())).unwrap();
        n += 1;
    }
    n
}

/// Every message file under a Maildir (in a `cur/` or `new/` folder), relative path → bytes.
pub fn snapshot(maildir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut std::collections::BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if matches!(
                p.parent()
                    .and_then(|d| d.file_name())
                    .and_then(|n| n.to_str()),
                Some("cur" | "new")
            ) {
                out.insert(
                    p.strip_prefix(root).unwrap().display().to_string(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(maildir, maildir, &mut out);
    out
}

/// The script of the crash and liveness tests: the week's promotions found, then one trash
/// card for them; the reply after the card says whether its outcome was unknown.
pub const TRASH_SCRIPT: &str = r#"
rules:
  - when: "(?i)trash"
    steps:
      - call: search_inbox
        args: {category: promotions, since_days: 7}
      - call: trash_email
        args: {ids: "$ids"}
        if_empty: "Nothing matched; nothing was trashed."
      - reply: "Finished."
        on_unknown: "Finished (unknown)."
fallback: "?"
"#;

/// Every message file's bytes, sorted: equal before and after means no file lost and none
/// duplicated, whatever folder each is in.
pub fn contents(maildir: &Path) -> Vec<Vec<u8>> {
    let mut all: Vec<Vec<u8>> = snapshot(maildir).into_values().collect();
    all.sort();
    all
}

/// How many message files are in `.Trash/`.
pub fn trashed(maildir: &Path) -> usize {
    snapshot(maildir)
        .keys()
        .filter(|k| k.starts_with(".Trash/"))
        .count()
}

/// Polls `check` until it returns `Some`, up to 30 s (the server resumes runs in the
/// background; this waits on observable state, with a deadline, not a fixed sleep).
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A JSON client of one server, answering as a device token.
pub struct Client {
    /// The HTTP client.
    pub http: reqwest::Client,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
}

impl Client {
    /// POSTs JSON with an optional bearer token; the status and the JSON body (Null if none).
    pub async fn post(
        &self,
        path: &str,
        token: Option<&str>,
        body: Value,
    ) -> (reqwest::StatusCode, Value) {
        let mut r = self.http.post(format!("{}{path}", self.url)).json(&body);
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        let resp = r.send().await.unwrap();
        let status = resp.status();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    /// GETs JSON with a bearer token; fails the test on a non-2xx status.
    pub async fn get(&self, path: &str, token: &str) -> Value {
        let resp = self
            .http
            .get(format!("{}{path}", self.url))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_success(), "GET {path}: {}", resp.status());
        resp.json().await.unwrap()
    }

    /// Waits (see [`eventually`]) until approval `id` reaches `execution` (`executed`, `failed`,
    /// `unknown`) and returns the row.
    pub async fn wait_execution(&self, id: &str, token: &str, execution: &str) -> Value {
        let what = format!("approval {id} to reach execution `{execution}`");
        eventually(&what, || async move {
            let row = self
                .get(&format!("/governance/approvals/{id}"), token)
                .await;
            (row["execution"] == execution).then_some(row)
        })
        .await
    }

    /// The audit of approval `id` once it holds at least `n` execution entries (they are written
    /// right after the ledger says `executed`), so exact counts can then be checked.
    pub async fn audit_with_executions(&self, id: &str, token: &str, n: usize) -> Value {
        eventually("the execution audit entries", || async move {
            let audit = self
                .get(&format!("/api/audit?approval_id={id}"), token)
                .await;
            let executions = audit["entries"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["kind"] == "execution")
                .count();
            (executions >= n).then_some(audit)
        })
        .await
    }

    /// The last line of a conversation.
    pub async fn last_reply(&self, conversation: &str, token: &str) -> String {
        let c = self
            .get(&format!("/api/conversations/{conversation}"), token)
            .await;
        c["lines"]
            .as_array()
            .unwrap()
            .last()
            .map(|l| l["text"].as_str().unwrap().to_string())
            .unwrap_or_default()
    }
}

/// The store the kernel suites (`loop_rules`, `lifecycle`) run on: in-memory SQLite, or a fresh
/// PostgreSQL database when `IRIS_KERNEL_ENGINE=postgres` (the test command runs those suites
/// once per engine). The guard drops the PostgreSQL database when the test ends.
pub async fn kernel_store() -> (iris_store::Store, Option<iris_store::testing::DropDatabase>) {
    kernel_store_on(iris_store::TimeSource::Database).await
}

/// [`kernel_store`] with `time` as the store's time source (a test clock for expiry and leases).
pub async fn kernel_store_on(
    time: iris_store::TimeSource,
) -> (iris_store::Store, Option<iris_store::testing::DropDatabase>) {
    let options = iris_store::StoreOptions {
        time,
        ..iris_store::StoreOptions::default()
    };
    match std::env::var("IRIS_KERNEL_ENGINE").as_deref() {
        Ok("postgres") => {
            let (url, guard) = iris_store::testing::fresh_postgres_database().await;
            let store = iris_store::Store::connect_with(&url, options)
                .await
                .expect("test database");
            (store, Some(guard))
        }
        Ok("sqlite") | Err(_) => (
            iris_store::Store::connect_with("sqlite::memory:", options)
                .await
                .expect("in-memory store"),
            None,
        ),
        Ok(other) => panic!("IRIS_KERNEL_ENGINE `{other}` is not sqlite or postgres"),
    }
}

/// The job runtime of the in-process suites: wake-ups are ignored (the test runs the jobs
/// itself, so it decides when a resume happens), sleeps are tokio's.
pub struct TestJobs;

impl iris_core::approvals::JobRuntime for TestJobs {
    fn job_ready(&self) {}

    fn sleep(&self, duration: Duration) -> futures::future::BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// The approvals service over `store` and `agent`, stamping rows with `clock`, with 30 s leases
/// held by one test server.
pub fn service(
    store: &iris_store::Store,
    agent: iris_core::agent::Agent,
    clock: Arc<dyn iris_core::ports::Clock>,
) -> iris_core::approvals::ApprovalService {
    iris_core::approvals::ApprovalService::new(
        Arc::new(store.clone()),
        Arc::new(agent),
        clock,
        iris_core::approvals::LeaseSettings {
            owner: "test-server".into(),
            ..iris_core::approvals::LeaseSettings::for_this_process(30)
        },
        Arc::new(TestJobs),
    )
}

/// The owner's control device on the web surface.
pub fn owner() -> iris_core::approvals::Actor {
    iris_core::approvals::Actor {
        name: "owner".into(),
        scope: iris_core::ports::Scope::Control,
        surface: "web".into(),
    }
}

/// A scripted model that trashes a whole category on a card: a request naming "promo",
/// "newsletter" or "order" searches that category and calls `trash_email` with the ids found.
/// Shared by the suites that race answers on one card (`races.rs`, `cli.rs`).
pub const CATEGORY_TRASH_SCRIPT: &str = r#"
rules:
  - when: "(?i)promo"
    steps:
      - call: search_inbox
        args: {category: promotions}
      - call: trash_email
        args: {ids: "$ids"}
        if_empty: "Nothing matched; nothing was trashed."
      - reply: "Done: moved {trashed} emails to Trash."
        on_rejected: "OK, I left them alone. Nothing was changed, sent or deleted."
  - when: "(?i)newsletter"
    steps:
      - call: search_inbox
        args: {category: newsletters}
      - call: trash_email
        args: {ids: "$ids"}
        if_empty: "Nothing matched; nothing was trashed."
      - reply: "Done: moved {trashed} emails to Trash."
        on_rejected: "OK, I left them alone. Nothing was changed, sent or deleted."
  - when: "(?i)order"
    steps:
      - call: search_inbox
        args: {category: orders}
      - call: trash_email
        args: {ids: "$ids"}
        if_empty: "Nothing matched; nothing was trashed."
      - reply: "Done: moved {trashed} emails to Trash."
        on_rejected: "OK, I left them alone. Nothing was changed, sent or deleted."
fallback: "?"
"#;

/// Writes a pending `trash_email` card `id` for item `id` into `store`, created `minutes` after
/// `t`, its item line `line`, as a halt would (row, checkpoint, link in one commit).
pub async fn seed_card(
    store: &iris_store::Store,
    id: &str,
    t: chrono::DateTime<chrono::Utc>,
    minutes: i64,
    line: &str,
) {
    use iris_core::ports::{ApprovalStore, Checkpoint, HaltRecord, NewApproval, TurnCommit};
    use iris_core::wire::{ApprovalKind, Card, Effect};
    let args = json!({"ids": [id]});
    let created_at = t + chrono::Duration::minutes(minutes);
    let approval = NewApproval {
        id: id.into(),
        kind: ApprovalKind::Destructive,
        tool: "trash_email".into(),
        args_canonical: iris_core::canonical::canonical_json(&args),
        call_hash: iris_core::canonical::call_hash("trash_email", &args),
        args: args.clone(),
        items: vec![id.into()],
        card: Card {
            title: "Trash 1 email".into(),
            action: "Trash 1 email".into(),
            effect: Effect::Destructive,
            lines: vec![line.into()],
            undo_tool: Some("restore_email".into()),
            undo_window_days: Some(30),
            request: "tidy up".into(),
            undo_note: None,
            undo_action: None,
            preview: Vec::new(),
            overlaps: Vec::new(),
        },
        run_id: format!("run-{id}"),
        context_summary: "tidy up".into(),
        created_at,
        expires_at: created_at + chrono::Duration::hours(1),
        preconditions: vec![],
        passkey_required: false,
        requested_by: None,
    };
    let checkpoint = Checkpoint {
        id: format!("cp-{id}"),
        run_id: approval.run_id.clone(),
        conversation_id: format!("c-{id}"),
        request: "tidy up".into(),
        messages: vec![],
        pending_call: iris_core::model::ToolCall {
            id: "call".into(),
            name: "trash_email".into(),
            arguments: args,
        },
        approval_id: id.into(),
        effects_executed: vec![],
    };
    store
        .commit_turn(&TurnCommit {
            conversation_id: format!("c-{id}"),
            transcript: vec![],
            transcript_version: 0,
            lines: vec![],
            events: vec![],
            actions: Vec::new(),
            halt: Some(HaltRecord {
                approval,
                checkpoint,
            }),
        })
        .await
        .unwrap();
}

/// Waits (on a blocking thread, with a deadline) for a stderr line containing `marker`.
pub async fn wait_for_line(
    rx: std::sync::mpsc::Receiver<String>,
    marker: String,
) -> std::sync::mpsc::Receiver<String> {
    tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) if line.contains(&marker) => return rx,
                Ok(_) => {}
                Err(e) => panic!("no `{marker}` line on the server's stderr: {e}"),
            }
        }
    })
    .await
    .unwrap()
}
