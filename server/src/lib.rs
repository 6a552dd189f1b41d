//! The `iris` server as a library (DESIGN §6, §9): [`build`] puts a server together from
//! [`Settings`] ([`AppState`]: the store, the email plugin, the agent, the approvals service),
//! [`app`] is its router (the JSON API, the pairing pages, the web app, with sessions, CSRF, a
//! request id and a trace span on every request), and [`spawn_background`] starts what runs
//! beside the routes (job workers, sweeps, mail sync, the event listener, Telegram, the Web
//! Push sender). `main.rs`
//! is a thin binary over [`run`]; tests build the router in process and call it with
//! `tower::ServiceExt::oneshot`.
//!
//! - `api.rs`, `api_routes.rs`, `openapi.rs`, `error.rs`: the JSON API of DESIGN §7, its route
//!   table and OpenAPI document, and the one mapping of domain errors to HTTP;
//! - `json.rs`: strict JSON bodies (a duplicated key is refused);
//! - `auth.rs`, `session.rs`, `pairing.rs`: devices, browser sessions, pairing links;
//! - `web.rs`: the Leptos app and its server functions; `assets.rs`: compression and the static
//!   site's caching rules;
//! - `telegram/`: the Telegram surface; `cli/`: the CLI (its command line, [`Cli`], in
//!   `cli/args.rs`);
//! - `push/`: Web Push (the routes, the VAPID key, the sender);
//! - `sweeps.rs`: the background work; `model.rs`: the model adapters; `tls.rs`: the one TLS
//!   crypto provider of outgoing HTTPS (ring);
//! - `state.rs`: [`AppState`] and [`build`]; `config.rs`: the settings (`iris.toml`, `IRIS_*`);
//!   `email_accounts.rs`: an `[[email.accounts]]` setting as the email plugin's account;
//! - `card_form.rs`: the card's own HTML form (answering before the page's wasm arrived);
//!   `headers.rs`: the security headers every response carries;
//! - `mcp/`: the MCP gateway (IRIS in front of other MCP servers, ADR-0121); `passkeys/`: the
//!   passkey routes and `iris audit verify` (ADR-0118 decision 4);
//! - `single_server.rs`: one server per SQLite file.

pub mod api;
pub mod api_routes;
pub mod assets;
pub mod auth;
pub mod card_form;
pub mod cli;
pub mod config;
pub mod email_accounts;
pub mod error;
pub mod headers;
pub mod json;
pub mod mcp;
pub mod model;
pub mod openapi;
pub mod pairing;
pub mod passkeys;
pub mod push;
pub mod session;
pub mod single_server;
pub mod state;
pub mod sweeps;
pub mod telegram;
pub mod tls;
pub mod web;

use anyhow::Context;
use axum::http::{HeaderName, Request};
use axum::middleware;
use axum::Router;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

pub use cli::args::{Cli, Command};
pub use config::Settings;
pub use state::{build, AppState};

/// The header that carries every request's id (set when the client sent none, echoed back).
pub const REQUEST_ID: &str = "x-request-id";

/// The server's router: the JSON API, the pairing pages and the web app, behind the CSRF guard,
/// the demo sign-in, browser sessions and the same-site bounce, with a request id and a trace
/// span on every request, every response compressed when the client accepts it (never the
/// event stream) and the static site's `Cache-Control` set by its file names.
pub fn app(state: AppState) -> Router {
    let request_id = HeaderName::from_static(REQUEST_ID);
    api::routes()
        .merge(pairing::routes())
        .merge(web::routes(&state))
        .merge(mcp::routes(&state))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            web::csrf_guard,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            web::demo_sign_in,
        ))
        .layer(
            state
                .sessions
                .layer(pairing::secure_cookies(state.public_origin.as_deref())),
        )
        .layer(middleware::from_fn(web::same_site_bounce))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            assets::cache_control,
        ))
        .layer(assets::compression())
        .layer(middleware::from_fn(headers::security_headers))
        .layer(axum::extract::DefaultBodyLimit::max(api::MAX_BODY_BYTES))
        .layer(PropagateRequestIdLayer::new(request_id.clone()))
        .layer(
            TraceLayer::new_for_http().make_span_with(|request: &Request<_>| {
                let id = request
                    .headers()
                    .get(REQUEST_ID)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("-");
                tracing::info_span!("request", method = %request.method(), path = %request.uri().path(), request_id = %id)
            }),
        )
        .layer(SetRequestIdLayer::new(request_id, MakeRequestUuid))
        .with_state(state)
}

/// Starts what runs beside the routes: on SQLite, the leases of a stopped server lapse at once
/// (one server per file); on PostgreSQL, the listener that carries events across servers; the
/// job workers, the expiry sweep, the mail sync, the session clean-up, and Telegram and the Web
/// Push sender when configured (docs/ARCHITECTURE.md §4).
///
/// # Errors
/// When the event listener cannot connect, or the Telegram settings are incomplete.
pub async fn spawn_background(state: &AppState) -> anyhow::Result<()> {
    let telegram = telegram::TelegramSettings::from_settings(&state.settings)?;
    let lapsed = state
        .store
        .lapse_leases_of_dead_servers()
        .await
        .context("taking over the resume jobs of the stopped server")?;
    if lapsed > 0 {
        tracing::warn!(
            jobs = lapsed,
            "continuing resumes the server's stop interrupted"
        );
    }
    state
        .store
        .listen_for_events()
        .await
        .context("listening for events of the other servers")?;
    sweeps::spawn_workers(state);
    sweeps::spawn_mail_sync(state.clone());
    sweeps::spawn_session_expiry(state.sessions.clone());
    if let Some(telegram) = telegram {
        telegram::spawn(state.clone(), telegram);
    }
    sweeps::spawn_sweeps(state.clone());
    if let Some(push) = &state.push {
        push::spawn(state.clone(), push.clone());
    }
    Ok(())
}

/// `iris serve [--demo]`: loads the settings, refuses a second server on one SQLite file,
/// builds, binds `IRIS_BIND`, starts the background work and serves until Ctrl-C.
///
/// # Errors
/// When the settings, the database, the address or the background work cannot be used.
pub async fn serve(demo: bool) -> anyhow::Result<()> {
    let settings = Settings::load().context("reading settings (iris.toml, IRIS_*)")?;
    let _one_server = single_server::claim(&settings, demo)?;
    let bind = settings.bind.clone();
    let conf = leptos::config::get_configuration(None).context("reading Leptos settings")?;
    // Checked before anything starts, so a bad Telegram setting stops the server at once.
    telegram::TelegramSettings::from_settings(&settings)?;
    push::PushSettings::from_settings(&settings)?;
    let state = build(settings, demo, conf.leptos_options).await?;
    let router = app(state.clone());
    let listener = tokio::net::TcpListener::bind(&bind)
        .await
        .with_context(|| format!("binding {bind} (IRIS_BIND)"))?;
    let addr = listener.local_addr()?;
    spawn_background(&state).await?;
    // Tests and scripts read this line to learn the port when IRIS_BIND ends in :0.
    println!("iris listening on http://{addr}");
    if let Some(gateway) = &state.gateway {
        for name in gateway.upstreams().keys() {
            println!(
                "MCP gateway: agents connect at http://{addr}/mcp/{name} (or `iris mcp {name}`)"
            );
        }
    }
    if demo {
        println!("demo: open http://{addr}/ and ask \"trash the promo emails from this week\"");
        let sent = match crate::config::non_blank(&state.settings.smtp_url) {
            Some(_) => "sent through IRIS_SMTP_URL".to_string(),
            None => format!(
                "saved to {}/, not sent, unless IRIS_SMTP_URL is set",
                state::demo_outbox_dir(&state.settings).display()
            ),
        };
        println!("demo: or \"reply to Anna that Thursday works\" ({sent})");
    }
    let stop = state.shutdown.clone();
    tokio::spawn(async move {
        stop_requested().await;
        tracing::info!("stopping: no new resume jobs; running ones finish first");
        stop.cancel();
    });
    axum::serve(listener, router)
        .with_graceful_shutdown(state.shutdown.clone().cancelled_owned())
        .await?;
    // Every job a worker runs now records its outcome before the process exits; one that
    // cannot in time is left to the next start, which marks it `unknown` (DESIGN §8).
    state.workers.close();
    if tokio::time::timeout(STOP_GRACE, state.workers.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            secs = STOP_GRACE.as_secs(),
            "stopping with resume jobs still running; the next start marks them unknown"
        );
    }
    // After the jobs: a job may be executing a gateway call on an upstream.
    if let Some(gateway) = &state.gateway {
        gateway.stop().await;
    }
    Ok(())
}

/// How long a stop waits for running resume jobs to record their outcome.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(20);

/// Ctrl-C (SIGINT) or SIGTERM (what systemd and container runtimes send).
async fn stop_requested() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    {
        let terminate = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut signal) => {
                    signal.recv().await;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot listen for SIGTERM; Ctrl-C still stops");
                    std::future::pending::<()>().await;
                }
            }
        };
        tokio::select! {
            () = interrupt => {}
            () = terminate => {}
        }
    }
    #[cfg(not(unix))]
    interrupt.await;
}

/// Runs the `iris` binary's command line.
///
/// # Errors
/// What the command failed with (the HTTP commands exit with their own codes instead).
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve { demo } => serve(demo).await,
        Command::Devices { command } => cli::devices(command).await,
        // The HTTP commands end with their own exit code (`cli::ExitCode`, documented in
        // `iris approvals --help`), so scripts can tell the failures apart.
        Command::Approvals { command } => std::process::exit(cli::approvals(command).await as i32),
        Command::Chat(args) => std::process::exit(cli::chat(args).await as i32),
        Command::Pair { scope } => cli::pair(&scope).await,
        Command::Passkeys { command } => cli::at_server::passkeys(command).await,
        Command::Audit { command } => cli::at_server::audit(command).await,
        Command::Mcp { name } => mcp::bridge::run(&name).await,
    }
}
