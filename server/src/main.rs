//! The `iris` binary (DESIGN §7): `iris serve [--demo]` runs the server (axum routes, the Leptos
//! app, SSE, sweeps, the Telegram surface when `IRIS_TELEGRAM_TOKEN` is set); `iris devices …`
//! talks to the database directly, for the person at the server; `iris approvals …` and
//! `iris chat` talk to a running server over HTTP with `IRIS_URL` and `IRIS_TOKEN`.

mod api;
mod api_routes;
mod auth;
mod cli;
mod config;
mod email_accounts;
mod error;
mod events;
mod model;
mod openapi;
mod pairing;
mod session;
mod state;
mod sweeps;
mod telegram;
mod web;

use anyhow::Context;
use axum::middleware;
use clap::{Parser, Subcommand};

/// IRIS approvals: destructive calls run only after the owner approves that exact call.
#[derive(Parser)]
#[command(name = "iris", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server (IRIS_BIND, default 127.0.0.1:3000).
    Serve {
        /// Load the demo mailbox and the demo model.
        #[arg(long)]
        demo: bool,
    },
    /// Paired devices (talks to the database directly).
    Devices {
        #[command(subcommand)]
        command: cli::DevicesCommand,
    },
    /// Approvals over HTTP (IRIS_URL, IRIS_TOKEN).
    #[command(after_help = cli::EXIT_CODES_HELP)]
    Approvals {
        #[command(subcommand)]
        command: cli::ApprovalsCommand,
    },
    /// One chat turn over HTTP (IRIS_URL, IRIS_TOKEN); prints the reply and any card it waits on.
    #[command(after_help = cli::EXIT_CODES_HELP)]
    Chat(cli::ChatArgs),
    /// A one-time pairing link for a browser: open it within 10 minutes to pair that browser
    /// as a device with this scope (talks to the database directly; the link is made on
    /// IRIS_PUBLIC_URL, default http:// + IRIS_BIND). The link is the last line.
    Pair {
        /// read (sees cards, never answers) or control (may answer cards and chat).
        #[arg(long, value_parser = ["read", "control"])]
        scope: String,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,sqlx=warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Serve { demo } => serve(demo).await,
        Command::Devices { command } => cli::devices(command).await,
        // The HTTP commands end with their own exit code (`cli::ExitCode`, documented in
        // `iris approvals --help`), so scripts can tell the failures apart.
        Command::Approvals { command } => std::process::exit(cli::approvals(command).await as i32),
        Command::Chat(args) => std::process::exit(cli::chat(args).await as i32),
        Command::Pair { scope } => cli::pair(&scope).await,
    }
}

async fn serve(demo: bool) -> anyhow::Result<()> {
    let settings = config::Settings::load().context("reading settings (iris.toml, IRIS_*)")?;
    let bind = settings.bind.clone();
    let conf = leptos::config::get_configuration(None).context("reading Leptos settings")?;
    let telegram = telegram::TelegramSettings::from_settings(&settings)?;
    let state = state::build(settings, demo, conf.leptos_options).await?;

    let sessions = session::SessionRecords::open(&state.store)
        .await
        .context("creating the browser session table")?;
    let app = api::routes()
        .merge(pairing::routes())
        .merge(web::routes(&state))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            web::csrf_guard,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            web::demo_sign_in,
        ))
        .layer(sessions.layer(pairing::secure_cookies(state.public_origin.as_deref())))
        .layer(middleware::from_fn(web::same_site_bounce))
        .with_state(state.clone());

    let listener = tokio::net::TcpListener::bind(&bind)
        .await
        .with_context(|| format!("binding {bind} (IRIS_BIND)"))?;
    let addr = listener.local_addr()?;
    sweeps::recover_interrupted(&state)
        .await
        .context("finding resumes a stop interrupted")?;
    sweeps::spawn_mail_sync(state.clone());
    sweeps::spawn_session_expiry(sessions);
    // The Telegram surface, when IRIS_TELEGRAM_TOKEN is set: background tasks only.
    if let Some(telegram) = telegram {
        telegram::spawn(state.clone(), telegram);
    }
    sweeps::spawn_sweeps(state);
    // Tests and scripts read this line to learn the port when IRIS_BIND ends in :0.
    println!("iris listening on http://{addr}");
    if demo {
        println!("demo: open http://{addr}/ and ask \"trash the promo emails from this week\"");
        println!("demo: or \"reply to Anna that Thursday works\" (saved to data/demo-outbox/, not sent, unless IRIS_SMTP_URL is set)");
    }
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
