//! The server in process, as the axum `testing` example builds it: [`TestApp`] is
//! `iris::build` + `iris::app` on a temp SQLite file, called with `tower::ServiceExt::oneshot`
//! (no process, no port), or served on an in-process listener on port 0 when a test needs a
//! real HTTP client ([`TestApp::listen`]). The background work (`iris::spawn_background`: the
//! resume workers, the sweeps) runs only when asked ([`Build::background`]), on the test's own
//! runtime, and ends with it.
//!
//! Start the real binary (`super::World`) only where a test needs a process: kill -9, a paused
//! process, shutdown, several servers on one database, busy locks held by another process, a
//! hung upstream the server must outlive, the CLI, a dropped client; a setting read from the
//! process's environment (`IRIS_FAILPOINT_*`, `IRIS_MCP_START_SECS`), `--demo`, `iris serve`'s
//! exit at start-up, or a signal seen only in the server's stderr log. Such a test says which,
//! in a `// Needs a process: …` line above it. The CLI is a process of its own, but the server
//! it talks to runs here, on [`TestApp::listen`].

use std::path::PathBuf;

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::response::Response;
use axum::Router;
use iris_core::ports::{Device, DeviceStore, Scope};
use serde_json::{json, Value};
use tower::ServiceExt;

use super::{Client, ModelServer};

/// A server built in process. `token` is a device token of the scope [`Build::scope`] asked
/// for (control by default), sent as `Authorization: Bearer` by [`TestApp::call`].
pub struct TestApp {
    /// `iris::app` over `state`; cloned per request.
    pub router: Router,
    /// What the routes share: the store, the service, the settings.
    pub state: iris::AppState,
    /// The device token the calls carry.
    pub token: String,
    /// The temp folder holding `iris.db` and, with [`Build::mailbox`], `Maildir/`.
    pub dir: tempfile::TempDir,
}

/// How a [`TestApp`] is built: the model, the mailbox, the device's scope, the Leptos options,
/// the folder, the database, the settings a test changes and whether the background work runs.
pub struct Build {
    dir: Option<tempfile::TempDir>,
    model: String,
    model_name: Option<String>,
    mailbox: bool,
    scope: Scope,
    leptos: Option<leptos::config::LeptosOptions>,
    background: bool,
    database_url: Option<String>,
    /// Every other setting, at its default until a builder method below changes it (the ones
    /// [`Build::start`] fills in itself are overwritten there).
    settings: iris::Settings,
}

impl TestApp {
    /// A server whose model is the scripted one served on loopback by `model`.
    pub fn with_model(model: &ModelServer) -> Build {
        Build::new(
            format!("openai:{}", model.base_url),
            Some("scripted".into()),
        )
    }

    /// A server whose model is the OpenAI-compatible one at `base_url` (`http://HOST:PORT/v1`):
    /// for a test that never asks the model, an address nothing answers (`http://127.0.0.1:9/v1`).
    pub fn with_model_url(base_url: &str) -> Build {
        Build::new(format!("openai:{base_url}"), Some("scripted".into()))
    }

    /// A server whose model is the scripted one read from the YAML file at `script` (no HTTP).
    pub fn with_script_file(script: &std::path::Path) -> Build {
        Build::new(format!("scripted:{}", script.display()), None)
    }

    /// The demo Maildir's path (written by [`Build::mailbox`]).
    pub fn maildir(&self) -> PathBuf {
        self.dir.path().join("Maildir")
    }

    /// Sends `request` as it is (add the token with [`TestApp::bearer`]); the response whole.
    pub async fn send(&self, request: Request<Body>) -> Response {
        self.router.clone().oneshot(request).await.unwrap()
    }

    /// `Bearer <token>`, for requests built by hand.
    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }

    /// `method path` with the token and, when `body` is given, as JSON: the status, the
    /// headers, and the body parsed as JSON (`Null` when it is not JSON).
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> (StatusCode, HeaderMap, Value) {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header("authorization", self.bearer());
        if body.is_some() {
            request = request.header("content-type", "application/json");
        }
        let request = request
            .body(body.map_or_else(Body::empty, Body::from))
            .unwrap();
        let response = self.send(request).await;
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), 64 << 20)
            .await
            .unwrap();
        let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, headers, value)
    }

    /// `POST /api/chat {"message": message}`, which must answer 200: its body.
    pub async fn chat(&self, message: &str) -> Value {
        let body = json!({ "message": message }).to_string().into_bytes();
        let (status, _, body) = self.call("POST", "/api/chat", Some(body)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    /// Adds a device named `name` of `scope`: its new token.
    pub async fn add_device(&self, name: &str, scope: Scope) -> String {
        let token = iris::auth::new_token();
        self.state
            .store
            .add(
                &Device {
                    name: name.into(),
                    scope,
                    created_at: chrono::Utc::now(),
                    last_used_at: None,
                },
                &iris::auth::token_hash(&token),
            )
            .await
            .unwrap();
        token
    }

    /// Serves the router on `127.0.0.1:0` in this process until the test's runtime ends:
    /// `http://127.0.0.1:PORT`.
    pub async fn listen(&self) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = self.router.clone();
        tokio::spawn(async move { axum::serve(listener, router).await });
        format!("http://{addr}")
    }

    /// Serves the router ([`TestApp::listen`]) and returns a JSON client of it, for the tests
    /// written against [`Client`]'s helpers (`wait_execution`, `last_reply`, …). Each call serves
    /// on a port of its own.
    pub async fn client(&self) -> Client {
        Client {
            http: reqwest::Client::new(),
            url: self.listen().await,
        }
    }

    /// Pairs a browser as device `name` with `scope` the way a person does, on the server at
    /// `url` (this app's, from [`TestApp::listen`] or [`TestApp::client`]): a one-time link
    /// stored as `iris pair` stores it (`iris::pairing::make_link`, made on `url`), then the
    /// pairing page's form posted from that site. Returns the `Cookie` header value
    /// (`iris_session=…`) that browser then sends.
    pub async fn pair_browser(&self, url: &str, scope: Scope, name: &str) -> String {
        let offer =
            iris::pairing::make_link(&self.state.store, scope, "cli", url, chrono::Utc::now())
                .await
                .expect("store the pairing link");
        super::post_pairing_form(&offer.url, url, name).await
    }

    /// Stops this server's job workers as a stop of `iris serve` does (the shutdown token
    /// cancelled: no new job is claimed, a running one records its outcome first) and returns
    /// its folder, for a second build on the same database: a restart. The sweeps and the mail
    /// sync of the stopped build run on until the test's runtime ends; every one of them is
    /// safe beside another server's.
    pub async fn stop(self) -> tempfile::TempDir {
        self.state.shutdown.cancel();
        self.state.workers.close();
        tokio::time::timeout(
            std::time::Duration::from_secs(30),
            self.state.workers.wait(),
        )
        .await
        .expect("the stopped server's running jobs end within 30 s");
        self.dir
    }
}

/// Eight hex digits, new each call (a device name no other build of the same database has).
fn device_suffix() -> String {
    iris::auth::new_token()[..8].to_string()
}

impl Build {
    fn new(model: String, model_name: Option<String>) -> Build {
        let mut settings = iris::Settings::defaults();
        settings.mail_sync_secs = 0;
        Build {
            dir: None,
            model,
            model_name,
            mailbox: false,
            scope: Scope::Control,
            leptos: None,
            background: false,
            database_url: None,
            settings,
        }
    }

    /// On the database at `url` (`postgres://…`, say a fresh one from
    /// `iris_store::testing::fresh_postgres_database`) instead of `iris.db` in the folder
    /// (`IRIS_DATABASE_URL`).
    pub fn database_url(mut self, url: &str) -> Build {
        self.database_url = Some(url.to_owned());
        self
    }

    /// Syncs the mailbox every `secs` seconds after start-up (`IRIS_MAIL_SYNC_SECS`; 0, the
    /// default here, syncs only at start-up). Runs with [`Build::background`].
    pub fn mail_sync_secs(mut self, secs: u64) -> Build {
        self.settings.mail_sync_secs = secs;
        self
    }

    /// The escalation judge's mode around `/api/chat` (`IRIS_ESCALATION`: off, the default,
    /// shadow or enforce).
    pub fn escalation(mut self, mode: iris_core::escalation::EscalationMode) -> Build {
        self.settings.escalation = mode;
        self
    }

    /// Web Push on, with `subject` as its contact (`IRIS_VAPID_SUBJECT`:
    /// `mailto:owner@example.org` or an `https:` URL). The sender runs with
    /// [`Build::background`].
    pub fn vapid_subject(mut self, subject: &str) -> Build {
        self.settings.vapid_subject = Some(subject.to_owned());
        self
    }

    /// The address the owner's browsers open (`IRIS_PUBLIC_URL`, an origin such as
    /// `http://localhost:9`): pairing links, the same-origin check and the passkeys' relying
    /// party follow it.
    pub fn public_url(mut self, origin: &str) -> Build {
        self.settings.public_url = Some(origin.to_owned());
        self
    }

    /// Which approvals need the owner's passkey (`IRIS_PASSKEY_REQUIRED`: `never`, the
    /// default, `destructive` or `approvals`).
    pub fn passkey_required(mut self, policy: &str) -> Build {
        self.settings.passkey_required = Some(policy.to_owned());
        self
    }

    /// `send_email`'s transport (`IRIS_SMTP_URL`, `smtp://127.0.0.1:PORT`); without it (and
    /// outside the demo) `send_email` is refused before any card.
    pub fn smtp_url(mut self, url: &str) -> Build {
        self.settings.smtp_url = Some(url.to_owned());
        self
    }

    /// How long a destructive card (and a pinned write) waits for its answer before it lapses,
    /// in seconds (`IRIS_DESTRUCTIVE_TTL_SECS`, default 3600). The lapse is the expiry sweep's,
    /// so pair it with a short [`Build::sweep_secs`] and [`Build::background`].
    pub fn destructive_ttl_secs(mut self, secs: u64) -> Build {
        self.settings.destructive_ttl_secs = secs;
        self
    }

    /// How often the expiry and resume sweeps run, in seconds (`IRIS_SWEEP_SECS`, default 15).
    /// They run with [`Build::background`].
    pub fn sweep_secs(mut self, secs: u64) -> Build {
        self.settings.sweep_secs = secs;
        self
    }

    /// How long a server's lease on a resume job lasts without a heartbeat, in seconds
    /// (`IRIS_LEASE_SECS`, default 30); past it the resume sweep takes the job over. Short
    /// leases let a test see a job left behind taken over soon. Runs with [`Build::background`].
    pub fn lease_secs(mut self, secs: u32) -> Build {
        self.settings.lease_secs = secs;
        self
    }

    /// Asks the `openai:` model for streamed answers (`IRIS_MODEL_STREAM=true`: server-sent
    /// chunks assembled into the same turn) instead of whole ones.
    pub fn model_stream(mut self) -> Build {
        self.settings.model_stream = true;
        self
    }

    /// A model call that has not answered (or, streaming, sent its next chunk) within `secs`
    /// seconds is a failed call (`IRIS_MODEL_TIMEOUT_SECS`, default 120).
    pub fn model_timeout_secs(mut self, secs: u64) -> Build {
        self.settings.model_timeout_secs = secs;
        self
    }

    /// The deadline of one approved call's side effect, in seconds
    /// (`IRIS_EXECUTE_TIMEOUT_SECS`, default 120): past it the call is `unknown`.
    pub fn execute_timeout_secs(mut self, secs: u64) -> Build {
        self.settings.execute_timeout_secs = secs;
        self
    }

    /// The Telegram surface (`IRIS_TELEGRAM_API_URL`, `IRIS_TELEGRAM_TOKEN`,
    /// `IRIS_TELEGRAM_CHAT_ID`): the Bot API at `api_url` (`http://127.0.0.1:PORT`), the bot's
    /// `token` (`123456:secret`) and the owner's chat id (`4242`). It runs with
    /// [`Build::background`].
    pub fn telegram(mut self, api_url: &str, token: &str, chat_id: i64) -> Build {
        self.settings.telegram_api_url = Some(api_url.to_owned());
        self.settings.telegram_token = Some(token.to_owned());
        self.settings.telegram_chat_id = Some(chat_id.to_string());
        self
    }

    /// One more mail account, after the demo mailbox when there is one (an `[[email.accounts]]`
    /// entry of `iris.toml`: a `maildir` with its `path`, or an `imap` with `host`, `port`,
    /// `user` and `password_env`, the name of the environment variable holding its password).
    pub fn email_account(mut self, account: iris::config::AccountSetting) -> Build {
        self.settings.email.accounts.push(account);
        self
    }

    /// One calendar account over a local vdir folder (a `[[calendar.accounts]]` entry of
    /// `iris.toml` with `name` and `folder`).
    pub fn calendar_folder(mut self, name: &str, folder: &std::path::Path) -> Build {
        self.settings
            .calendar
            .accounts
            .push(iris_calendar::AccountConfig {
                name: name.into(),
                folder: Some(folder.to_path_buf()),
                url: None,
                username: None,
                password_env: None,
            });
        self
    }

    /// One files root over a local folder (a `[[files.roots]]` entry of `iris.toml` with `name`
    /// and `path`).
    pub fn files_root(mut self, name: &str, folder: &std::path::Path) -> Build {
        self.settings.files.roots.push(iris_files::RootConfig {
            name: name.into(),
            path: folder.to_path_buf(),
        });
        self
    }

    /// IRIS's own tools offered at `/mcp/iris` (`[mcp.iris] tools`).
    pub fn mcp_own_tools(mut self, tools: &[&str]) -> Build {
        self.settings.mcp.iris = Some(iris::config::OwnToolsSetting {
            tools: tools.iter().map(|t| (*t).to_owned()).collect(),
        });
        self
    }

    /// One more upstream behind the MCP gateway (an `[[mcp.upstreams]]` entry of `iris.toml`:
    /// its `name`, served at `/mcp/{name}`; a `command` run over stdio or a streamable HTTP
    /// `url`; IRIS's `manifest` for its tools, an absolute path here). The upstream starts
    /// with the build.
    pub fn mcp_upstream(mut self, upstream: iris::config::UpstreamSetting) -> Build {
        self.settings.mcp.upstreams.push(upstream);
        self
    }

    /// How long the gateway holds an agent's gated call waiting for the owner, in seconds,
    /// before it answers "waiting, call again" (`IRIS_MCP_HOLD_SECS`, default 50).
    pub fn mcp_hold_secs(mut self, secs: u64) -> Build {
        self.settings.mcp_hold_secs = secs;
        self
    }

    /// The most cards one agent may have waiting for the owner at once
    /// (`[mcp] max_waiting_per_agent`, default 20; 0 is not a setting).
    pub fn max_waiting_per_agent(mut self, cards: std::num::NonZeroU32) -> Build {
        self.settings.mcp.max_waiting_per_agent = Some(cards);
        self
    }

    /// On `dir` (kept: a second build on the same folder sees the same rows and mailbox).
    pub fn in_dir(mut self, dir: tempfile::TempDir) -> Build {
        self.dir = Some(dir);
        self
    }

    /// With the demo mailbox (written into the folder unless it is there already) as the mail
    /// account.
    pub fn mailbox(mut self) -> Build {
        self.mailbox = true;
        self
    }

    /// The token's device has `scope` (control by default).
    pub fn scope(mut self, scope: Scope) -> Build {
        self.scope = scope;
        self
    }

    /// These Leptos options (a site root, say) instead of the defaults with output name `iris`.
    pub fn leptos(mut self, options: leptos::config::LeptosOptions) -> Build {
        self.leptos = Some(options);
        self
    }

    /// Also starts the background work (`iris::spawn_background`): resume workers, sweeps.
    pub fn background(mut self) -> Build {
        self.background = true;
        self
    }

    /// Builds the server and adds the token's device.
    pub async fn start(self) -> TestApp {
        let dir = self.dir.unwrap_or_else(|| tempfile::tempdir().unwrap());
        let mut settings = self.settings;
        settings.database_url = self
            .database_url
            .unwrap_or_else(|| format!("sqlite://{}", dir.path().join("iris.db").display()));
        settings.model = Some(self.model);
        settings.model_name = self.model_name;
        if self.mailbox {
            let maildir = dir.path().join("Maildir");
            if !maildir.exists() {
                iris_email::demo::write_demo_maildir(&maildir, chrono::Utc::now()).unwrap();
            }
            settings.maildir = Some(maildir);
        }
        let leptos = self.leptos.unwrap_or_else(|| {
            leptos::config::LeptosOptions::builder()
                .output_name("iris")
                .build()
        });
        let state = iris::build(settings, false, leptos).await.expect("build");
        // The server syncs mail behind its listener (iris::spawn_background); a test begins
        // from a synced mailbox, as a server does once its first sync has ended.
        state.email.sync().await.expect("the first mail sync");
        if self.background {
            iris::spawn_background(&state)
                .await
                .expect("background work");
        }
        let mut app = TestApp {
            router: iris::app(state.clone()),
            state,
            token: String::new(),
            dir,
        };
        // Unique per build: a second build on the same database adds its own device.
        let name = format!("phone-{}", &device_suffix());
        app.token = app.add_device(&name, self.scope).await;
        app
    }
}
