//! What a running server holds, and how it is put together from [`Settings`]: the store, the
//! email plugin with its accounts synced, the model, the agent and the approvals service.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::extract::FromRef;
use chrono::Utc;
use futures::future::BoxFuture;
use iris_core::agent::{Agent, Pausing};
use iris_core::approval::Ttl;
use iris_core::approvals::{
    ApprovalService, EscalationSettings, GatewaySettings, JobRuntime, LeaseSettings,
    PasskeySettings, MAX_WAITING_PER_AGENT,
};
use iris_core::hooks::DestructiveApprovalHook;
use iris_core::plugin::Plugin;
use iris_core::ports::{Clock, DatabaseClock, Device, DeviceStore, Scope};
use iris_core::toolbox::Toolbox;
use iris_email::{AccountConfig, AccountKind, EmailPlugin, Outbox};
use iris_store::{Store, StoreOptions, Synchronous};
use leptos::config::LeptosOptions;

use crate::auth;
use crate::config::Settings;

/// Device name of the browser the demo signs in as the owner.
pub const DEMO_DEVICE: &str = "demo-owner-browser";

/// Shared server state (cheap to clone).
#[derive(Clone)]
pub struct AppState {
    /// The approvals service: every surface's one way into an approval's life.
    pub service: Arc<ApprovalService>,
    /// The store (also the device table and the event feed).
    pub store: Store,
    /// Wakes this server's job workers.
    pub jobs: Arc<TokioJobs>,
    /// In `--demo`: the token a browser without credentials is signed in with.
    pub demo_token: Option<Arc<String>>,
    /// The origin of `IRIS_PUBLIC_URL` (`crate::pairing::public_origin`), checked once at
    /// start: pairing links, the CSRF check behind a proxy, the `Secure` cookie.
    pub public_origin: Option<Arc<str>>,
    /// Leptos settings (site root, pkg dir, output name).
    pub leptos: LeptosOptions,
    /// Settings as loaded.
    pub settings: Arc<Settings>,
    /// The email plugin (also among the agent's plugins), for the periodic mail sync.
    pub email: Arc<EmailPlugin>,
    /// Browser sessions, in the same database.
    pub sessions: crate::session::SessionRecords,
    /// Cancelled when the server is asked to stop (SIGINT, SIGTERM): job workers claim no new
    /// job, event streams end, so the HTTP server can finish and the process exit.
    pub shutdown: tokio_util::sync::CancellationToken,
    /// The job workers: a stop waits for the job each one runs to record its outcome.
    pub workers: tokio_util::task::TaskTracker,
    /// Web Push (`IRIS_VAPID_SUBJECT`), `None` while it is off.
    pub push: Option<Arc<crate::push::WebPush>>,
    /// Passkeys: the relying party (or why they are off) and `IRIS_PASSKEY_REQUIRED`.
    pub passkeys: Arc<crate::passkeys::Passkeys>,
    /// This server's clock: the database's, as last aligned (every sweep re-aligns it); every
    /// stamp the service writes comes from it.
    pub clock: Arc<DatabaseClock>,
    /// The MCP gateway's upstreams (`[[mcp.upstreams]]`), `None` when there are none.
    pub gateway: Option<Arc<crate::mcp::Gateway>>,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos.clone()
    }
}

/// The job runtime on tokio: a [`tokio::sync::Notify`] the workers wait on, and tokio's timer.
#[derive(Debug, Default)]
pub struct TokioJobs {
    /// Notified when a job becomes ready on this server.
    pub ready: tokio::sync::Notify,
}

impl JobRuntime for TokioJobs {
    fn job_ready(&self) {
        self.ready.notify_waiters();
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

fn maildir_account(name: &str, address: &str, path: PathBuf) -> AccountConfig {
    AccountConfig {
        name: name.to_string(),
        address: address.to_string(),
        kind: AccountKind::Maildir { path },
    }
}

/// Where the demo keeps its files: `./data/`.
fn demo_dir() -> PathBuf {
    PathBuf::from("data")
}

/// Where the demo saves the mail it would send (without IRIS_SMTP_URL): `demo-outbox/` beside
/// the demo mailbox (`data/demo-outbox` by default; the end-to-end tests' own run folder when
/// they set IRIS_MAILDIR), never inside someone's checkout by accident.
pub(crate) fn demo_outbox_dir(settings: &Settings) -> PathBuf {
    settings
        .maildir
        .as_deref()
        .and_then(std::path::Path::parent)
        .map_or_else(demo_dir, std::path::Path::to_path_buf)
        .join("demo-outbox")
}

/// Where the demo keeps its calendars: `demo-calendar/` beside the demo mailbox, as the outbox.
fn demo_calendar_dir(settings: &Settings) -> PathBuf {
    demo_outbox_dir(settings).with_file_name("demo-calendar")
}

/// Where the demo keeps its files root `downloads`: `demo-downloads/` beside the demo mailbox.
fn demo_files_dir(settings: &Settings) -> PathBuf {
    demo_outbox_dir(settings).with_file_name("demo-downloads")
}

/// Builds the state: connects the database (running migrations), syncs the mail accounts, and,
/// with `demo`, writes the demo mailbox and signs in a demo owner device. Starts nothing in the
/// background: see [`crate::spawn_background`].
///
/// The parts are built in this order, each by its own builder: the store (`open_store`), the
/// email plugin (`open_mail`), the agent with the clock and rules its pauses follow
/// (`build_agent`), the approvals service with the MCP gateway (`build_service`).
///
/// # Errors
/// When the database, a mail account, the model setting or `IRIS_PUBLIC_URL` cannot be used;
/// the message names it.
pub async fn build(
    mut settings: Settings,
    demo: bool,
    leptos: LeptosOptions,
) -> anyhow::Result<AppState> {
    let public_origin = crate::pairing::public_origin(&settings)
        .map_err(anyhow::Error::msg)?
        .map(Arc::from);
    if demo {
        if std::env::var_os("IRIS_DATABASE_URL").is_none() {
            settings.database_url = "sqlite://data/demo.db".into();
        }
        if settings.maildir.is_none() && settings.email.accounts.is_empty() {
            settings.maildir = Some(demo_dir().join("demo-maildir"));
        }
    }
    let store = open_store(&settings).await?;
    let email = Arc::new(open_mail(&settings, demo, &store).await?);
    // An event the owner organizes says so on its card: the owner is the mail accounts' owner.
    let owner_addresses = email.accounts().into_iter().map(|a| a.address);
    let calendar =
        Arc::new(open_calendar(&mut settings, demo, &store)?.with_owner_addresses(owner_addresses));
    let files = Arc::new(open_files(&mut settings, demo, &store)?);
    let plugins: Vec<Arc<dyn Plugin>> = vec![email.clone(), calendar, files];
    let BuiltAgent {
        agent,
        clock,
        passkeys,
        ttl,
    } = build_agent(&settings, demo, &store, plugins.clone()).await?;
    let BuiltService {
        service,
        jobs,
        gateway,
    } = build_service(&settings, &store, agent, &clock, ttl, &passkeys, plugins).await?;
    let demo_token = if demo {
        Some(Arc::new(sign_in_demo_owner(&store).await?))
    } else {
        None
    };
    let sessions = crate::session::SessionRecords::open(&store)
        .await
        .context("creating the browser session table")?;
    let push = match crate::push::PushSettings::from_settings(&settings)? {
        Some(push) => Some(Arc::new(
            crate::push::WebPush::open(&store, push)
                .await
                .context("loading the Web Push (VAPID) key")?,
        )),
        None => None,
    };

    Ok(AppState {
        service: Arc::new(service),
        email,
        store,
        jobs,
        demo_token,
        public_origin,
        leptos,
        settings: Arc::new(settings),
        sessions,
        shutdown: tokio_util::sync::CancellationToken::new(),
        workers: tokio_util::task::TaskTracker::new(),
        push,
        passkeys,
        gateway,
        clock,
    })
}

/// The store: the database of `IRIS_DATABASE_URL`, connected with `IRIS_SQLITE_SYNCHRONOUS`
/// (its migrations run on connect).
async fn open_store(settings: &Settings) -> anyhow::Result<Store> {
    let synchronous = Synchronous::parse(&settings.sqlite_synchronous).with_context(|| {
        format!(
            "IRIS_SQLITE_SYNCHRONOUS must be `full` or `normal`, not `{}`",
            settings.sqlite_synchronous
        )
    })?;
    Store::connect_with(
        &settings.database_url,
        StoreOptions {
            synchronous,
            ..StoreOptions::default()
        },
    )
    .await
    .with_context(|| format!("opening the database {}", settings.database_url))
}

/// The calendar plugin over `[[calendar.accounts]]`; in the demo, when there are none, the demo
/// calendars (written once into `demo-calendar/` beside the demo mailbox) as account `personal`.
fn open_calendar(
    settings: &mut Settings,
    demo: bool,
    store: &Store,
) -> anyhow::Result<iris_calendar::CalendarPlugin> {
    if demo && settings.calendar.accounts.is_empty() {
        let folder = demo_calendar_dir(settings);
        let written = iris_calendar::demo::write_demo_calendar(&folder, Utc::now())
            .with_context(|| format!("writing the demo calendar at {}", folder.display()))?;
        if written > 0 {
            tracing::info!(written, path = %folder.display(), "wrote the demo calendar");
        }
        settings
            .calendar
            .accounts
            .push(iris_calendar::AccountConfig {
                name: "personal".into(),
                folder: Some(folder),
                url: None,
                username: None,
                password_env: None,
            });
    }
    iris_calendar::CalendarPlugin::new(settings.calendar.accounts.clone(), store)
        .context("loading the calendar plugin ([[calendar.accounts]])")
}

/// The files plugin over `[[files.roots]]` (a relative path is read from the working folder);
/// in the demo, when there are none, the demo folder (written once into `demo-downloads/`
/// beside the demo mailbox) as root `downloads`.
fn open_files(
    settings: &mut Settings,
    demo: bool,
    store: &Store,
) -> anyhow::Result<iris_files::FilesPlugin> {
    if demo && settings.files.roots.is_empty() {
        let folder = demo_files_dir(settings);
        let written = iris_files::demo::write_demo_folder(&folder, Utc::now())
            .with_context(|| format!("writing the demo folder at {}", folder.display()))?;
        if written > 0 {
            tracing::info!(written, path = %folder.display(), "wrote the demo folder");
        }
        settings.files.roots.push(iris_files::RootConfig {
            name: "downloads".into(),
            path: folder,
        });
    }
    let mut roots = settings.files.roots.clone();
    for root in &mut roots {
        root.path = std::path::absolute(&root.path)
            .with_context(|| format!("files root `{}`: its path", root.name))?;
    }
    iris_files::FilesPlugin::new(roots, store).context("loading the files plugin ([[files.roots]])")
}

/// The email plugin: its accounts (`IRIS_MAILDIR`, with the demo mailbox written there in the
/// demo, then `[[email.accounts]]`), its outbox and default sender, synced into the store once
/// before the server answers anything.
async fn open_mail(settings: &Settings, demo: bool, store: &Store) -> anyhow::Result<EmailPlugin> {
    let mut accounts = Vec::new();
    if let Some(path) = &settings.maildir {
        if demo {
            let written = iris_email::demo::write_demo_maildir(path, Utc::now())
                .with_context(|| format!("writing the demo mailbox at {}", path.display()))?;
            if written > 0 {
                tracing::info!(written, path = %path.display(), "wrote the demo mailbox");
            }
        }
        accounts.push(maildir_account(
            "maildir",
            "owner@example.org",
            path.clone(),
        ));
    }
    for a in &settings.email.accounts {
        // kind maildir or imap (crate::email_accounts names what is missing).
        accounts.push(crate::email_accounts::account(a)?);
    }
    let mut email = EmailPlugin::new(accounts, store).context("loading the email plugin")?;
    // send_email's transport (DESIGN §5): IRIS_SMTP_URL, else in the demo a local outbox folder
    // (saved, not sent), else none: send_email is then refused before any card.
    if let Some(url) = crate::config::non_blank(&settings.smtp_url) {
        email = email.with_outbox(Outbox::smtp(url)?);
    } else if demo {
        email = email.with_outbox(Outbox::demo(demo_outbox_dir(settings)));
    }
    if let Some(sender) = &settings.email_default_sender {
        email = email.with_default_sender(sender.clone());
    }
    // Not synced here: the server listens first and the first sync runs in the background
    // (crate::sweeps::spawn_mail_sync; docs/liveness.md "start-up"); its tools wait for it.
    Ok(email)
}

/// The agent and the rules its pauses follow, which the service and the gateway share too.
struct BuiltAgent {
    agent: Agent,
    /// This server's clock, the database's (first aligned here).
    clock: Arc<DatabaseClock>,
    /// The passkey settings (`IRIS_PASSKEY_REQUIRED`, the relying party).
    passkeys: Arc<crate::passkeys::Passkeys>,
    /// How long a card waits for an answer, by kind.
    ttl: Ttl,
}

/// The agent: the model of the settings (the demo's scripted one in the demo), the plugins'
/// tools (email, calendar), pauses governed by the database's clock, the TTLs and the passkey policy
/// (or ungoverned with `IRIS_APPROVALS_ENABLED=false`), and the PostStep evaluators of
/// `IRIS_EVALUATOR_RULES`.
async fn build_agent(
    settings: &Settings,
    demo: bool,
    store: &Store,
    plugins: Vec<Arc<dyn Plugin>>,
) -> anyhow::Result<BuiltAgent> {
    let model = crate::model::from_setting(
        &crate::model::ModelSetting {
            model: settings.model.as_deref(),
            name: settings.model_name.as_deref(),
            api_key: settings.model_api_key.as_deref(),
            stream: settings.model_stream,
            timeout: Duration::from_secs(settings.model_timeout_secs.max(1)),
        },
        demo,
    )?;

    // Stamps in the database's time, whatever this machine's clock says (docs/liveness.md
    // "truthful records"); re-aligned on every sweep.
    let database_clock = Arc::new(DatabaseClock::new(iris_core::failpoint::wall_clock()));
    if let Err(error) = database_clock.align(store).await {
        tracing::warn!(%error, "reading the database's clock failed; stamping with this machine's until the next sweep");
    }
    let clock: Arc<dyn Clock> = database_clock.clone();
    let toolbox = Arc::new(Toolbox::new(plugins).context("loading the manifests")?);
    let passkeys = Arc::new(crate::passkeys::Passkeys::from_settings(settings)?);
    let ttl = Ttl {
        destructive: chrono::Duration::seconds(settings.destructive_ttl_secs as i64),
        evaluator: chrono::Duration::seconds(settings.evaluator_ttl_secs as i64),
    };
    let pausing = if settings.approvals_enabled {
        Pausing::Governed {
            ttl,
            clock,
            passkeys: passkeys.policy,
        }
    } else {
        Pausing::Ungoverned("approvals are switched off (IRIS_APPROVALS_ENABLED=false)".into())
    };
    let agent = Agent::new(model, toolbox, pausing, Vec::new());
    // PostStep evaluators (DESIGN §2 kind `evaluator`) from IRIS_EVALUATOR_RULES, if set.
    let agent = match &settings.evaluator_rules {
        None => agent,
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading IRIS_EVALUATOR_RULES file {}", path.display()))?;
            let rules = iris_core::evaluator::RuleEvaluator::from_yaml(&text)
                .with_context(|| format!("IRIS_EVALUATOR_RULES file {}", path.display()))?;
            agent.with_evaluators(vec![Arc::new(rules)])
        }
    };
    Ok(BuiltAgent {
        agent,
        clock: database_clock,
        passkeys,
        ttl,
    })
}

/// The approvals service and what it runs beside: the job runtime that wakes this server's
/// workers, and the MCP gateway when upstreams are configured.
struct BuiltService {
    service: ApprovalService,
    jobs: Arc<TokioJobs>,
    gateway: Option<Arc<crate::mcp::Gateway>>,
}

/// The approvals service over the store and `agent`: this server's leases and execution
/// bounds, the escalation judge, the passkey check, and the MCP gateway (its upstreams started
/// here) with its tools run by the same service.
async fn build_service(
    settings: &Settings,
    store: &Store,
    agent: Agent,
    database_clock: &Arc<DatabaseClock>,
    ttl: Ttl,
    passkeys: &Arc<crate::passkeys::Passkeys>,
    plugins: Vec<Arc<dyn Plugin>>,
) -> anyhow::Result<BuiltService> {
    let clock: Arc<dyn Clock> = database_clock.clone();
    let jobs = Arc::new(TokioJobs::default());
    let service = ApprovalService::new(
        Arc::new(store.clone()),
        Arc::new(agent),
        clock.clone(),
        LeaseSettings {
            owner: lease_owner(),
            ..LeaseSettings::for_this_process(settings.lease_secs)
        }
        .with_execution_bounds(settings.execute_timeout_secs, settings.execute_grace_secs),
        jobs.clone(),
    )
    .with_escalation(EscalationSettings {
        mode: settings.escalation,
        judge: Arc::new(iris_core::escalation::RuleJudge),
        curator: Arc::new(store.clone()),
        max_hops: settings.escalation_max_hops,
    })
    .with_passkeys(PasskeySettings {
        check: passkeys.clone(),
        store: Arc::new(store.clone()),
    });
    // The MCP gateway: its upstreams started (each in its own process group), and the
    // assistant's own tools `[mcp.iris]` offers, all run by the same service.
    let gateway = crate::mcp::Gateway::start(settings, plugins)
        .await?
        .map(Arc::new);
    let service = match &gateway {
        None => service,
        Some(gateway) => service.with_gateway(GatewaySettings {
            toolbox: Arc::new(gateway.toolbox()?),
            store: Arc::new(store.clone()),
            pin: DestructiveApprovalHook {
                clock: clock.clone(),
                ttl,
                passkeys: passkeys.policy,
            },
            max_waiting: settings
                .mcp
                .max_waiting_per_agent
                .map_or(MAX_WAITING_PER_AGENT, std::num::NonZeroU32::get),
            reads: Default::default(),
        }),
    };
    Ok(BuiltService {
        service,
        jobs,
        gateway,
    })
}

/// The demo's owner: the device [`DEMO_DEVICE`] (control scope) added anew with a fresh token,
/// which a browser without credentials is signed in with. Returns the token.
async fn sign_in_demo_owner(store: &Store) -> anyhow::Result<String> {
    let token = auth::new_token();
    store.revoke(DEMO_DEVICE).await?;
    store
        .add(
            &Device {
                name: DEMO_DEVICE.into(),
                scope: Scope::Control,
                created_at: Utc::now(),
                last_used_at: None,
            },
            &auth::token_hash(&token),
        )
        .await?;
    Ok(token)
}

/// This server's name on the leases it holds, as the card says who runs a job:
/// `iris@HOST:PID-XXXXXXXX` (the machine's host name, the process id, 8 random hex digits so
/// a restarted process with a reused pid is another holder). Never a comma: the claim passes
/// the busy holders as a comma-separated list.
fn lease_owner() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| {
            h.trim()
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
                .take(64)
                .collect::<String>()
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string());
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    format!("iris@{host}:{}-{}", std::process::id(), &nonce[..8])
}
