//! Concurrency across surfaces (Tests: web, CLI and Telegram answering one row at the same
//! moment): one pending row answered (approve) at the same moment by several
//! `iris approvals approve ID --yes` processes, the web app's server function and the API with a
//! paired browser's cookie, bearer API calls, and a Telegram "Yes" tap from the fake Bot API
//! ([`support::telegram`]): exactly one wins, every other is told it was already decided (by
//! whom), the pinned call runs once (Maildir, ledger, audit), and the Telegram message ends
//! showing the outcome. Three rounds, on SQLite and PostgreSQL. The CLI runs as processes; the
//! server they answer runs in process (`support::TestApp` on a listener).

use crate::support;

use std::sync::Arc;

use iris_core::ports::Scope;
use leptos::server_fn::ServerFn;
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::telegram::{escape, FakeBot, OWNER, TOKEN};
use support::{eventually, snapshot, Client, ModelServer, TestApp};
use tokio::sync::Barrier;

use super::{cli_command, exit, finished, halt, moved, row, Run, SCRIPT};

/// Which surface an answer came from, and what it got.
#[derive(Debug)]
enum Answer {
    /// `iris approvals approve ID --yes` as this device.
    Cli { device: String, run: Run },
    /// An HTTP request as `device`; `surface` is what the row records if it wins.
    Http {
        device: String,
        surface: &'static str,
        path: String,
        status: StatusCode,
        body: String,
    },
    /// A "Yes" tap in the owner's Telegram chat (as `@owner`); `text` is what the tap was
    /// answered (`answerCallbackQuery`).
    Telegram { text: String },
}

impl Answer {
    fn won(&self) -> bool {
        match self {
            Answer::Cli { run, .. } => run.code == exit::DONE,
            Answer::Http { status, .. } => *status == StatusCode::OK,
            Answer::Telegram { text } => text == "Approved.",
        }
    }

    /// (device, surface) the row records if this answer won.
    fn who(&self) -> (String, &'static str) {
        match self {
            Answer::Cli { device, .. } => (device.clone(), "cli"),
            Answer::Http {
                device, surface, ..
            } => (device.clone(), surface),
            Answer::Telegram { .. } => ("@owner".to_string(), "telegram"),
        }
    }
}

/// A loopback TCP proxy in front of the server for the CLI processes: it holds each of the first
/// `held` connections, with the request bytes it has read, until `barrier` releases everyone,
/// so the CLI (whose process start takes longer than an HTTP request) answers at the same moment
/// as the HTTP surfaces. Later connections (the winner's polling) pass straight through.
async fn holding_proxy(upstream: String, held: usize, barrier: Arc<Barrier>) -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let upstream = upstream.trim_start_matches("http://").to_string();
    let accepted = Arc::new(AtomicUsize::new(0));
    tokio::spawn(async move {
        loop {
            let Ok((mut inbound, _)) = listener.accept().await else {
                return;
            };
            let (barrier, upstream) = (barrier.clone(), upstream.clone());
            let hold = accepted.fetch_add(1, Ordering::SeqCst) < held;
            tokio::spawn(async move {
                let mut first = vec![0u8; 16 * 1024];
                let n = inbound.read(&mut first).await.unwrap_or(0);
                if hold {
                    barrier.wait().await;
                }
                let Ok(mut outbound) = tokio::net::TcpStream::connect(&upstream).await else {
                    return;
                };
                if outbound.write_all(&first[..n]).await.is_err() {
                    return;
                }
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            });
        }
    });
    format!("http://{addr}")
}

/// One round: a pending row answered (approve) at once by `cli` CLI processes, over HTTP by the
/// web app's server function with the cookie, the API with the cookie and the API with a bearer
/// token, and by a "Yes" tap on the row's Telegram message. Checks one winner, every other
/// "already decided", one execution, and the message showing the outcome.
async fn cross_surface_round(
    maildir: &std::path::Path,
    client: &Client,
    devices: &Devices,
    bot: &FakeBot,
    request: &str,
) -> (String, &'static str) {
    let pending = halt(client, &devices.owner, request).await;
    let id = pending.id.clone();
    let n = pending.items.len();
    assert!(n > 0);
    let before = snapshot(maildir);
    // On Telegram, Yes approves from the confirm view: the owner opens it first (the action
    // button), so the tap at the barrier is the approving one.
    let message_id = bot.message_of(&id).await;
    let ask = bot.tap(OWNER, OWNER, message_id, &format!("a:{id}"));
    assert_eq!(bot.answer(&ask).await, format!("{}?", pending.card.action));
    let respond_fn = format!(
        "{}{}",
        client.url,
        <app::api::RespondApproval as ServerFn>::PATH
    );
    let api_path = format!("{}/governance/approvals/{id}/respond", client.url);

    // Everyone is released together: the CLI processes' requests (held at the proxy), the HTTP
    // requests and the Telegram tap (delivered to the poller's long poll at the barrier).
    let participants = devices.cli.len() + 6 + 1;
    let barrier = Arc::new(Barrier::new(participants));
    let yes = bot.tap_when_released(
        barrier.clone(),
        OWNER,
        OWNER,
        message_id,
        &format!("y:{id}"),
    );
    let cli_url = holding_proxy(client.url.clone(), devices.cli.len(), barrier.clone()).await;
    let mut tasks: Vec<tokio::task::JoinHandle<Answer>> = Vec::new();
    for (device, token) in devices.cli.clone() {
        let (url, id) = (cli_url.clone(), id.clone());
        tasks.push(tokio::spawn(async move {
            let mut command = tokio::process::Command::from(cli_command(
                &url,
                Some(&token),
                &["approvals", "approve", &id, "--yes"],
            ));
            command.kill_on_drop(true);
            let out = command.output().await.expect("iris runs");
            Answer::Cli {
                device,
                run: finished(out),
            }
        }));
    }
    // (device, token, path, body, cookie?, surface the row would record)
    let mut http: Vec<(String, String, String, Value, bool, &'static str)> = Vec::new();
    for _ in 0..2 {
        http.push((
            "browser".into(),
            devices.browser.clone(),
            respond_fn.clone(),
            json!({"id": id, "decision": "approve", "reason": null}),
            true,
            "web",
        ));
        http.push((
            "browser".into(),
            devices.browser.clone(),
            api_path.clone(),
            json!({"decision": "approve"}),
            true,
            "web",
        ));
        http.push((
            "phone".into(),
            devices.phone.clone(),
            api_path.clone(),
            json!({"decision": "approve"}),
            false,
            "api",
        ));
    }
    for (device, token, path, body, cookie, surface) in http {
        let (barrier, http, origin) = (barrier.clone(), client.http.clone(), client.url.clone());
        tasks.push(tokio::spawn(async move {
            let mut request = http.post(&path).json(&body);
            request = if cookie {
                // `token` is the paired browser's session cookie (`iris_session=…`).
                request.header("cookie", token).header("origin", origin)
            } else {
                request.bearer_auth(&token)
            };
            barrier.wait().await;
            let response = request.send().await.unwrap();
            let status = response.status();
            Answer::Http {
                device,
                surface,
                path,
                status,
                body: response.text().await.unwrap_or_default(),
            }
        }));
    }
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    answers.push(Answer::Telegram {
        text: bot.answer(&yes).await,
    });
    let winners: Vec<&Answer> = answers.iter().filter(|a| a.won()).collect();
    assert_eq!(winners.len(), 1, "exactly one answer wins: {answers:#?}");
    let (device, surface) = winners[0].who();
    let decided = row(client, &devices.owner, &id).await;
    assert_eq!(decided.status.as_str(), "approved");
    assert_eq!(decided.responded_by.as_deref(), Some(device.as_str()));
    assert_eq!(decided.surface.as_deref(), Some(surface));
    let said = format!("already approved by {device} via {surface}");
    for a in answers.iter().filter(|a| !a.won()) {
        match a {
            Answer::Cli { run, .. } => {
                assert_eq!(run.code, exit::ALREADY_DECIDED, "{run}");
                assert!(run.stderr.contains(&said), "{said}: {run}");
            }
            Answer::Http {
                path, status, body, ..
            } => {
                // The API and the app's server function alike: 409 with the same sentence.
                assert_eq!(*status, StatusCode::CONFLICT, "{path}: {body}");
                assert!(body.contains(&said), "{said}: {path}: {body}");
            }
            Answer::Telegram { text } => {
                assert!(text.contains(&said), "{said}: telegram: {text}");
            }
        }
    }

    // One execution: the ledger says executed once, exactly the pinned mail moved once, the
    // audit holds one decision and one execution entry per item, and no second claim.
    let executed = eventually("the pinned call to execute", || async {
        let r = row(client, &devices.owner, &id).await;
        (r.execution.as_str() == "executed").then_some(r)
    })
    .await;
    assert_eq!(executed.result.as_ref().unwrap()["trashed"], n);
    let after = snapshot(maildir);
    let (gone, arrived) = moved(&before, &after);
    assert_eq!(gone.len(), n, "exactly the pinned mail moved: {gone:?}");
    assert_eq!(arrived.len(), n, "each moved once: {arrived:?}");
    assert!(
        arrived.iter().all(|k| k.starts_with(".Trash/cur/")),
        "{arrived:?}"
    );
    let audit = client.audit_with_executions(&id, &devices.owner, n).await;
    let entries = audit["entries"].as_array().unwrap();
    let count = |kind: &str| entries.iter().filter(|e| e["kind"] == kind).count();
    assert_eq!(count("decision"), 1, "{audit}");
    assert_eq!(count("execution"), n, "{audit}");
    assert_eq!(count("denial"), 0, "{audit}");
    let decision = entries.iter().find(|e| e["kind"] == "decision").unwrap();
    assert_eq!(decision["actor"], device.as_str());
    assert_eq!(decision["surface"], surface);

    // The Telegram message ends showing the outcome, whichever surface won: who, where, what
    // ran, and no buttons left to tap.
    let decided_by = format!(
        "*Approved*{}",
        escape(&format!(" by {device} via {surface} at"))
    );
    let ran = format!("Moved {n} emails to Trash");
    let shows_outcome = |edit: &Value| {
        let text = edit["text"].as_str().unwrap_or_default();
        text.contains(&decided_by) && text.contains(&ran) && edit.get("reply_markup").is_none()
    };
    let edits = eventually("the Telegram message to show the outcome", || async {
        let edits = bot.edits_of(message_id);
        edits.last().is_some_and(shows_outcome).then_some(edits)
    })
    .await;
    // Once shown, the outcome is never replaced by an older view (a late tap's stale row).
    let first = edits.iter().position(shows_outcome).unwrap();
    assert!(
        edits[first..].iter().all(shows_outcome),
        "the message went back after showing the outcome: {edits:#?}"
    );
    (device, surface)
}

/// The devices of the cross-surface race.
struct Devices {
    /// Control device that asks (bearer).
    owner: String,
    /// One control device per CLI process: (name, token).
    cli: Vec<(String, String)>,
    /// The session cookie of a browser paired as a control device (`iris_session=…`).
    browser: String,
    /// Control device calling the API with a bearer token.
    phone: String,
}

/// Three rounds (three different requests, so one lucky interleaving cannot hide a broken
/// compare-and-set) of [`cross_surface_round`] on one server with the Telegram surface pointed at
/// a fake Bot API, on the database at `database_url` (the folder's SQLite file without one).
async fn race_across_surfaces(database_url: Option<&str>) {
    let model = ModelServer::start(SCRIPT).await;
    let bot = FakeBot::start().await;
    let mut build = TestApp::with_model(&model)
        .mailbox()
        .telegram(&bot.url, TOKEN, OWNER)
        .background();
    if let Some(url) = database_url {
        build = build.database_url(url);
    }
    let server = build.start().await;
    let mut cli = Vec::new();
    for i in 0..4 {
        let name = format!("cli-{i}");
        let token = server.add_device(&name, Scope::Control).await;
        cli.push((name, token));
    }
    let client = server.client().await;
    let devices = Devices {
        owner: server.add_device("owner", Scope::Control).await,
        cli,
        browser: server
            .pair_browser(&client.url, Scope::Control, "browser")
            .await,
        phone: server.add_device("phone", Scope::Control).await,
    };
    let maildir = server.maildir();
    let mut winners = Vec::new();
    for request in [
        "trash the promo emails",
        "trash the newsletters",
        "trash the order emails",
    ] {
        winners.push(cross_surface_round(&maildir, &client, &devices, &bot, request).await);
    }
    eprintln!("winners per round: {winners:?}");
}

// Needs a process: the CLI (`iris approvals approve` processes race the other surfaces); the
// server they answer runs in process.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cli_web_api_and_telegram_answering_at_once_decide_once_on_sqlite() {
    race_across_surfaces(None).await;
}

// Needs a process: the CLI (`iris approvals approve` processes race the other surfaces); the
// server they answer runs in process.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cli_web_api_and_telegram_answering_at_once_decide_once_on_postgres() {
    let (url, _database) = iris_store::testing::fresh_postgres_database().await;
    race_across_surfaces(Some(&url)).await;
}
