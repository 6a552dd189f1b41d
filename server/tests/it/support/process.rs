//! The real `iris` binary as a test runs it: a [`World`] on disk (temp SQLite database, Maildir,
//! scripted model address) that runs `iris` commands and starts `iris serve` on port 0, the
//! running process ([`Iris`]) to pair browsers with, signal or kill, and a JSON [`Client`] of
//! it answering as a device token.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::eventually;

/// A running `iris serve` process.
pub struct Iris {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// What it printed on standard output after its "listening" line, as it comes.
    printed: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Iris {
    /// `child` (an `iris serve` whose standard output is piped) once it printed its
    /// "listening" line; the rest of what it prints is kept, read as it comes (so the child
    /// never blocks on a full pipe), for [`Iris::printed_line`].
    fn listening(mut child: Child) -> Iris {
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("iris printed its address before exiting")
                .unwrap();
            if let Some(rest) = line.strip_prefix("iris listening on ") {
                break rest.trim().to_string();
            }
        };
        let printed = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = printed.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        Iris {
            child,
            url,
            printed,
        }
    }

    /// The first line it printed on standard output after its "listening" line that starts
    /// with `prefix`, waiting for it up to `eventually`'s deadline.
    pub async fn printed_line(&self, prefix: &str) -> String {
        eventually(&format!("a printed line starting {prefix:?}"), || async {
            self.printed
                .lock()
                .unwrap()
                .iter()
                .find(|line| line.starts_with(prefix))
                .cloned()
        })
        .await
    }

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
        let mut c = Command::new(super::iris_bin());
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
        let child = self
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("iris starts");
        Iris::listening(child)
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
        (Iris::listening(child), rx)
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
        post_pairing_form(&format!("{}{path}", self.url), &self.url, name).await
    }
}

/// Posts the pairing form at `link` (a pairing link's full URL) as a browser on `origin` naming
/// itself `name`; asserts the 303 to the app and returns the `Cookie` header value
/// (`iris_session=…`) that browser then sends.
pub async fn post_pairing_form(link: &str, origin: &str, name: &str) -> String {
    let response = no_redirects()
        .post(link)
        .header("origin", origin)
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

    /// `POST /api/chat {"message": request}` as `token`, a turn that must halt on a card (200,
    /// `awaiting_approval`): its body (`approval_id`, `conversation_id`, …).
    pub async fn halt(&self, token: &str, request: &str) -> Value {
        let (status, halted) = self
            .post("/api/chat", Some(token), json!({"message": request}))
            .await;
        assert_eq!(status, reqwest::StatusCode::OK, "{halted}");
        assert_eq!(halted["status"], "awaiting_approval", "{halted}");
        halted
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
