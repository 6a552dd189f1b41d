//! The server in process, as the axum `testing` example builds it: [`TestApp`] is
//! `iris::build` + `iris::app` on a temp SQLite file, called with `tower::ServiceExt::oneshot`
//! (no process, no port), or served on an in-process listener on port 0 when a test needs a
//! real HTTP client ([`TestApp::listen`]). The background work (`iris::spawn_background`: the
//! resume workers, the sweeps) runs only when asked ([`Build::background`]), on the test's own
//! runtime, and ends with it.
//!
//! Start the real binary (`super::World`) only where a test needs a process: kill -9, a paused
//! process, shutdown, several servers on one database, busy locks held by another process, a
//! hung upstream the server must outlive, the CLI, a dropped client.

use std::path::PathBuf;

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::response::Response;
use axum::Router;
use iris_core::ports::{Device, DeviceStore, Scope};
use serde_json::{json, Value};
use tower::ServiceExt;

use super::ModelServer;

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
/// the folder and whether the background work runs.
pub struct Build {
    dir: Option<tempfile::TempDir>,
    model: String,
    model_name: Option<String>,
    mailbox: bool,
    scope: Scope,
    leptos: Option<leptos::config::LeptosOptions>,
    background: bool,
}

impl TestApp {
    /// A server whose model is the scripted one served on loopback by `model`.
    pub fn with_model(model: &ModelServer) -> Build {
        Build::new(
            format!("openai:{}", model.base_url),
            Some("scripted".into()),
        )
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
}

/// Eight hex digits, new each call (a device name no other build of the same database has).
fn device_suffix() -> String {
    iris::auth::new_token()[..8].to_string()
}

impl Build {
    fn new(model: String, model_name: Option<String>) -> Build {
        Build {
            dir: None,
            model,
            model_name,
            mailbox: false,
            scope: Scope::Control,
            leptos: None,
            background: false,
        }
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
        let mut settings = iris::Settings::defaults();
        settings.database_url = format!("sqlite://{}", dir.path().join("iris.db").display());
        settings.model = Some(self.model);
        settings.model_name = self.model_name;
        settings.mail_sync_secs = 0;
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
