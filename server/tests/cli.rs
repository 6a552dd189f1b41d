//! The CLI surface end to end (CLI; DESIGN §7): the real `iris` binary run as a
//! subprocess with `IRIS_URL` and `IRIS_TOKEN` against a real `iris serve` (temp SQLite, demo
//! Maildir, scripted model on loopback).
//!
//! - Readable output: `iris chat` shows the reply and the card it waits on; `list` shows aligned
//!   rows; `show` shows the title, every line, the undo sentence, "You asked: …", the status and
//!   the exact call (tool and canonical arguments); after the answer, who answered where and
//!   when, and the result. `--json` prints the server's JSON.
//! - One exit code per failure, each checked: unreachable 3, unauthorized 4 (bad or missing
//!   token), forbidden 5 (read device), not found 6, already decided 7 (naming who, where,
//!   when), expired 8 (short TTL), and 2 for `approve` without `--yes` when nobody can confirm.
//! - Concurrency across surfaces (Tests: web, CLI and Telegram answering one row at
//!   the same moment): one pending row answered (approve) at the same moment by several
//!   `iris approvals approve ID --yes` processes, the web app's server function and the API with
//!   a paired browser's cookie, bearer API calls, and a Telegram "Yes" tap from the fake Bot API
//!   ([`support::telegram`]): exactly one wins, every other is told it was already decided (by
//!   whom), the pinned call runs once (Maildir, ledger, audit), and the Telegram message ends
//!   showing the outcome. Three rounds, on SQLite and PostgreSQL.

mod support;

use std::collections::BTreeMap;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use iris_core::canonical::canonical_json;
use iris_core::wire::Approval;
use leptos::server_fn::ServerFn;
use reqwest::StatusCode;
use serde_json::{json, Value};
use support::telegram::{escape, FakeBot, OWNER};
use support::{eventually, snapshot, Client, ModelServer, World};
use tokio::sync::Barrier;

use support::CATEGORY_TRASH_SCRIPT as SCRIPT;

/// The documented exit codes (`iris approvals --help`).
mod exit {
    pub const DONE: i32 = 0;
    pub const USAGE: i32 = 2;
    pub const UNREACHABLE: i32 = 3;
    pub const UNAUTHORIZED: i32 = 4;
    pub const FORBIDDEN: i32 = 5;
    pub const NOT_FOUND: i32 = 6;
    pub const ALREADY_DECIDED: i32 = 7;
    pub const EXPIRED: i32 = 8;
}

/// `iris ARGS` as a CLI user runs it: only `IRIS_URL` and `IRIS_TOKEN` (when given) from the
/// environment that matters, stdin not a terminal.
fn cli_command(url: &str, token: Option<&str>, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iris"));
    c.args(args)
        .env_remove("IRIS_TOKEN")
        .env("IRIS_URL", url)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null());
    if let Some(t) = token {
        c.env("IRIS_TOKEN", t);
    }
    c
}

/// A finished CLI run.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

fn finished(out: Output) -> Run {
    Run {
        code: out.status.code().expect("the CLI exited, not killed"),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Runs the CLI to the end without blocking the test's runtime (the scripted model answers on
/// it while `iris chat` and `approve` wait).
async fn iris(url: &str, token: Option<&str>, args: &[&str]) -> Run {
    let mut command = tokio::process::Command::from(cli_command(url, token, args));
    command.kill_on_drop(true);
    finished(command.output().await.expect("iris runs"))
}

/// A halted trash approval for `request` (through the API); the row as the API shows it.
async fn halt(client: &Client, token: &str, request: &str) -> Approval {
    let (s, halted) = client
        .post("/api/chat", Some(token), json!({"message": request}))
        .await;
    assert_eq!(s, StatusCode::OK, "{halted}");
    assert_eq!(halted["status"], "awaiting_approval", "{halted}");
    let id = halted["approval_id"].as_str().unwrap();
    serde_json::from_value(
        client
            .get(&format!("/governance/approvals/{id}"), token)
            .await,
    )
    .unwrap()
}

async fn row(client: &Client, token: &str, id: &str) -> Approval {
    serde_json::from_value(
        client
            .get(&format!("/governance/approvals/{id}"), token)
            .await,
    )
    .unwrap()
}

/// A loopback URL nothing listens on (a port just bound and released).
fn unreachable_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// Files present in `before` but not in `after`, and the reverse.
fn moved(
    before: &BTreeMap<String, Vec<u8>>,
    after: &BTreeMap<String, Vec<u8>>,
) -> (Vec<String>, Vec<String>) {
    let gone = before
        .keys()
        .filter(|k| !after.contains_key(*k))
        .cloned()
        .collect();
    let arrived = after
        .keys()
        .filter(|k| !before.contains_key(*k))
        .cloned()
        .collect();
    (gone, arrived)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_shows_cards_readably_and_exits_with_one_code_per_failure() {
    let model = ModelServer::start(SCRIPT).await;
    let world = World::new(&model.base_url);
    iris_email::demo::write_demo_maildir(&world.maildir, chrono::Utc::now()).unwrap();
    let laptop = world.add_device("laptop", "control");
    let wall = world.add_device("wall", "read");
    let server = world.start();
    let client = server.client();
    let url = server.url.clone();
    let original = snapshot(&world.maildir);

    // `iris chat` halts and shows the card it waits on, with how to answer it.
    let chat = iris(&url, Some(&laptop), &["chat", "trash the promo emails"]).await;
    assert_eq!(chat.code, exit::DONE, "{chat}");
    let id = chat
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("Approve: iris approvals approve "))
        .unwrap_or_else(|| panic!("no approval in the chat output: {chat}"))
        .trim()
        .to_string();
    let pending = row(&client, &laptop, &id).await;
    let n = pending.items.len();
    assert!(n > 0);
    assert!(chat.stdout.contains(&pending.card.title), "{chat}");
    assert!(
        chat.stdout
            .contains(&format!("Web:     {url}/activity/{id}\n")),
        "{chat}"
    );
    assert!(
        chat.stdout
            .contains("You asked: \u{201c}trash the promo emails\u{201d}"),
        "{chat}"
    );
    let chat_json = iris(&url, Some(&laptop), &["chat", "--json", "hello"]).await;
    assert_eq!(chat_json.code, exit::DONE, "{chat_json}");
    let parsed: Value = serde_json::from_str(&chat_json.stdout).expect("chat --json parses");
    assert_eq!(parsed["reply"], "?", "{parsed}");

    // `list`: aligned rows with a header; the pending card's id, status, title, times.
    let list = iris(&url, Some(&laptop), &["approvals", "list"]).await;
    assert_eq!(list.code, exit::DONE, "{list}");
    let lines: Vec<&str> = list.stdout.lines().collect();
    assert!(
        lines[0].starts_with("ID") && lines[0].contains("STATUS") && lines[0].contains("EXPIRES"),
        "{list}"
    );
    let line = lines
        .iter()
        .find(|l| l.starts_with(&id))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(line.contains("pending"), "{line}");
    assert!(line.contains(&pending.card.title), "{line}");
    assert_eq!(
        line.find("pending"),
        lines[0].find("STATUS"),
        "columns align: {list}"
    );
    let expires = pending
        .expires_at
        .format("%Y-%m-%d %H:%M:%S UTC")
        .to_string();
    assert!(line.ends_with(&expires), "{line}");
    let listed = iris(
        &url,
        Some(&wall),
        &["approvals", "list", "--status", "pending", "--json"],
    )
    .await;
    assert_eq!(listed.code, exit::DONE, "{listed}");
    let listed: Value = serde_json::from_str(&listed.stdout).expect("list --json parses");
    assert_eq!(listed["approvals"].as_array().unwrap().len(), 1);
    assert_eq!(listed["approvals"][0]["id"], id.as_str());

    // `show`: every part of the card and the exact call; a read device may look.
    let show = iris(&url, Some(&wall), &["approvals", "show", &id]).await;
    assert_eq!(show.code, exit::DONE, "{show}");
    assert!(
        show.stdout
            .starts_with(&format!("{}\n", pending.card.title)),
        "{show}"
    );
    for line in &pending.card.lines {
        assert!(
            show.stdout.contains(&format!("  - {line}\n")),
            "{line}: {show}"
        );
    }
    let undo = app::format::undo_sentence(&pending.card).expect("trash has an undo");
    assert!(show.stdout.contains(&undo), "{undo}: {show}");
    assert!(
        show.stdout
            .contains("You asked: \u{201c}trash the promo emails\u{201d}"),
        "{show}"
    );
    assert!(
        show.stdout
            .contains(&format!("pending: waiting for your answer until {expires}")),
        "{show}"
    );
    let call = format!("Call:      trash_email {}\n", canonical_json(&pending.args));
    assert!(show.stdout.contains(&call), "{call}: {show}");
    assert!(show.stdout.contains(&pending.call_hash), "{show}");
    let shown = iris(&url, Some(&wall), &["approvals", "show", &id, "--json"]).await;
    assert_eq!(shown.code, exit::DONE, "{shown}");
    let shown: Approval = serde_json::from_str(&shown.stdout).expect("show --json parses");
    assert_eq!(shown, pending);

    // Failures, each with its own exit code; none of them changes anything.
    let read = iris(&url, Some(&wall), &["approvals", "approve", &id, "--yes"]).await;
    assert_eq!(read.code, exit::FORBIDDEN, "{read}");
    assert!(
        read.stderr.contains("read scope") && read.stderr.contains("can only view"),
        "{read}"
    );
    let read = iris(&url, Some(&wall), &["approvals", "reject", &id]).await;
    assert_eq!(read.code, exit::FORBIDDEN, "{read}");
    let bad = iris(&url, Some("iris_not_a_device"), &["approvals", "list"]).await;
    assert_eq!(bad.code, exit::UNAUTHORIZED, "{bad}");
    assert!(bad.stderr.contains("did not accept IRIS_TOKEN"), "{bad}");
    let none = iris(&url, None, &["approvals", "approve", &id, "--yes"]).await;
    assert_eq!(none.code, exit::UNAUTHORIZED, "{none}");
    assert!(none.stderr.contains("IRIS_TOKEN is not set"), "{none}");
    for args in [
        vec!["approvals", "show", "no-such-id"],
        vec!["approvals", "approve", "no-such-id", "--yes"],
        vec!["approvals", "reject", "no/such?id"],
    ] {
        let missing = iris(&url, Some(&laptop), &args).await;
        assert_eq!(missing.code, exit::NOT_FOUND, "{args:?}: {missing}");
        assert!(
            missing.stderr.contains("no approval has the id"),
            "{missing}"
        );
    }
    let gone = unreachable_url();
    let away = iris(
        &gone,
        Some(&laptop),
        &["approvals", "approve", &id, "--yes"],
    )
    .await;
    assert_eq!(away.code, exit::UNREACHABLE, "{away}");
    assert!(away.stderr.contains("cannot be reached"), "{away}");
    // An IRIS_URL that is not a URL is wrong usage; nothing is sent.
    let bad = iris("not a url", Some(&laptop), &["approvals", "approve", &id]).await;
    assert_eq!(bad.code, exit::USAGE, "{bad}");
    assert_eq!(
        row(&client, &laptop, &id).await,
        pending,
        "a failure changed the row"
    );
    assert_eq!(snapshot(&world.maildir), original, "a failure moved mail");

    // Approve from a script (stdin not a terminal, no --yes: DESIGN §7's `iris approvals approve
    // ID`): the outcome, then the execution's result.
    let approve = iris(&url, Some(&laptop), &["approvals", "approve", &id]).await;
    assert_eq!(approve.code, exit::DONE, "{approve}");
    assert!(
        approve.stdout.starts_with(&format!(
            "Approved \u{201c}{}\u{201d} by laptop via cli at ",
            pending.card.title
        )),
        "{approve}"
    );
    assert!(
        approve
            .stdout
            .contains(&format!("Moved {n} emails to Trash")),
        "{approve}"
    );
    let (gone_files, arrived) = moved(&original, &snapshot(&world.maildir));
    assert_eq!((gone_files.len(), arrived.len()), (n, n));

    // A second answer from any command: already decided, saying by whom, where and when.
    let approved = row(&client, &laptop, &id).await;
    let at = approved
        .responded_at
        .unwrap()
        .format("%Y-%m-%d %H:%M:%S UTC")
        .to_string();
    for args in [
        vec!["approvals", "approve", id.as_str(), "--yes"],
        vec!["approvals", "reject", id.as_str(), "--reason", "late"],
    ] {
        let again = iris(&url, Some(&laptop), &args).await;
        assert_eq!(again.code, exit::ALREADY_DECIDED, "{again}");
        assert!(
            again
                .stderr
                .contains(&format!("was already approved by laptop via cli at {at}")),
            "{again}"
        );
    }
    let again = iris(
        &url,
        Some(&laptop),
        &["approvals", "approve", &id, "--yes", "--json"],
    )
    .await;
    assert_eq!(again.code, exit::ALREADY_DECIDED, "{again}");
    let body: Value = serde_json::from_str(&again.stdout).expect("the 409 body parses");
    assert_eq!(body["approval"]["responded_by"], "laptop", "{body}");
    let show = iris(&url, Some(&laptop), &["approvals", "show", &id]).await;
    assert!(
        show.stdout
            .contains(&format!("Status:    approved by laptop via cli at {at}")),
        "{show}"
    );
    assert!(
        show.stdout
            .contains(&format!("Execution: Moved {n} emails to Trash (executed)")),
        "{show}"
    );
    assert!(show.stdout.contains("Result:    "), "{show}");
    assert!(
        show.stdout
            .contains(&format!("Undo:      Restore {n} emails possible until")),
        "{show}"
    );

    // Undo from the CLI: the mail comes back once; a second undo exits 7 in the server's words.
    let undo = iris(&url, Some(&laptop), &["approvals", "undo", &id]).await;
    assert_eq!(undo.code, exit::DONE, "{undo}");
    assert!(
        undo.stdout.starts_with(&format!(
            "Undone by laptop via cli: \u{201c}{}\u{201d} \u{2014} Restored {n} emails",
            pending.card.title
        )),
        "{undo}"
    );
    assert_eq!(
        snapshot(&world.maildir),
        original,
        "the undo restored every file"
    );
    let again = iris(&url, Some(&laptop), &["approvals", "undo", &id]).await;
    assert_eq!(again.code, exit::ALREADY_DECIDED, "{again}");
    assert!(
        again.stderr.contains("already undone by laptop via cli"),
        "{again}"
    );
    assert_eq!(
        snapshot(&world.maildir),
        original,
        "a second undo moved mail"
    );
    let show = iris(&url, Some(&laptop), &["approvals", "show", &id]).await;
    assert!(
        show.stdout
            .contains("Undo:      Undone by laptop via cli at"),
        "{show}"
    );
    assert!(!show.stdout.contains("You can restore"), "{show}");

    // Reject with a reason: nothing runs; the card says who and why.
    let second = halt(&client, &laptop, "trash the newsletters").await;
    let before = snapshot(&world.maildir);
    let reject = iris(
        &url,
        Some(&laptop),
        &["approvals", "reject", &second.id, "--reason", "not these"],
    )
    .await;
    assert_eq!(reject.code, exit::DONE, "{reject}");
    assert!(reject.stdout.contains("Rejected"), "{reject}");
    assert!(reject.stdout.contains("Nothing will run."), "{reject}");
    let show = iris(&url, Some(&laptop), &["approvals", "show", &second.id]).await;
    assert!(
        show.stdout
            .contains("Status:    rejected by laptop via cli at"),
        "{show}"
    );
    assert!(show.stdout.contains("Reason:    not these"), "{show}");
    assert_eq!(
        snapshot(&world.maildir),
        before,
        "a rejected call moved mail"
    );
    let list = iris(
        &url,
        Some(&laptop),
        &["approvals", "list", "--status", "pending"],
    )
    .await;
    assert_eq!(list.stdout, "No pending approvals.\n", "{list}");
    drop(server);
}

/// `iris approvals approve ID` without `--yes` on a pseudo-terminal (util-linux `script`), with
/// `answer` typed; `script -e` exits with the CLI's own code.
async fn approve_at_a_terminal(url: &str, token: &str, id: &str, answer: &str) -> Run {
    use tokio::io::AsyncWriteExt;
    let line = format!("'{}' approvals approve '{id}'", env!("CARGO_BIN_EXE_iris"));
    let mut child = tokio::process::Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env_remove("IRIS_TOKEN")
        .env("IRIS_URL", url)
        .env("IRIS_TOKEN", token)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("script runs");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(answer.as_bytes()).await.unwrap();
    drop(stdin);
    finished(child.wait_with_output().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_at_a_terminal_shows_the_card_and_asks_first() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!(
            "skipped: util-linux `script` (a pseudo-terminal for the prompt) is not installed"
        );
        return;
    }
    let model = ModelServer::start(SCRIPT).await;
    let world = World::new(&model.base_url);
    iris_email::demo::write_demo_maildir(&world.maildir, chrono::Utc::now()).unwrap();
    let laptop = world.add_device("laptop", "control");
    let server = world.start();
    let client = server.client();
    let pending = halt(&client, &laptop, "trash the promo emails").await;
    let before = snapshot(&world.maildir);

    // Anything but yes: the card was shown, the question asked, nothing sent.
    let declined = approve_at_a_terminal(&server.url, &laptop, &pending.id, "n\n").await;
    assert_eq!(declined.code, 9, "{declined}");
    assert!(declined.stdout.contains(&pending.card.title), "{declined}");
    assert!(declined.stdout.contains("You asked: "), "{declined}");
    assert!(
        declined.stdout.contains(&format!(
            "Call:      trash_email {}",
            canonical_json(&pending.args)
        )),
        "{declined}"
    );
    assert!(
        declined.stdout.contains(&format!(
            "{}? This runs exactly the call above, once. [y/N]",
            pending.card.action
        )),
        "{declined}"
    );
    assert!(declined.stdout.contains("Nothing was sent."), "{declined}");
    assert_eq!(row(&client, &laptop, &pending.id).await, pending);
    assert_eq!(snapshot(&world.maildir), before);

    // Yes: approved and run once.
    let approved = approve_at_a_terminal(&server.url, &laptop, &pending.id, "y\n").await;
    assert_eq!(approved.code, exit::DONE, "{approved}");
    assert!(
        approved.stdout.contains("Approved \u{201c}Trash "),
        "{approved}"
    );
    let n = pending.items.len();
    assert!(
        approved
            .stdout
            .contains(&format!("Moved {n} emails to Trash.")),
        "{approved}"
    );
    let (gone, arrived) = moved(&before, &snapshot(&world.maildir));
    assert_eq!((gone.len(), arrived.len()), (n, n));

    // Already answered: said at once, without asking.
    let again = approve_at_a_terminal(&server.url, &laptop, &pending.id, "y\n").await;
    assert_eq!(again.code, exit::ALREADY_DECIDED, "{again}");
    assert!(!again.stdout.contains("[y/N]"), "{again}");
    assert!(
        again
            .stdout
            .contains("was already approved by laptop via cli at"),
        "{again}"
    );
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_card_exits_with_its_own_code_and_nothing_runs() {
    let model = ModelServer::start(SCRIPT).await;
    let mut world = World::new(&model.base_url);
    world
        .env
        .push(("IRIS_DESTRUCTIVE_TTL_SECS".into(), "1".into()));
    iris_email::demo::write_demo_maildir(&world.maildir, chrono::Utc::now()).unwrap();
    let laptop = world.add_device("laptop", "control");
    let server = world.start();
    let client = server.client();
    let pending = halt(&client, &laptop, "trash the promo emails").await;
    let before = snapshot(&world.maildir);
    // Wait (on the clock, with a deadline) until the row's own expiry has passed.
    eventually("the one-second TTL to pass", || async {
        (chrono::Utc::now() > pending.expires_at).then_some(())
    })
    .await;
    let late = iris(
        &server.url,
        Some(&laptop),
        &["approvals", "approve", &pending.id, "--yes"],
    )
    .await;
    assert_eq!(late.code, exit::EXPIRED, "{late}");
    let expired_at = pending
        .expires_at
        .format("%Y-%m-%d %H:%M:%S UTC")
        .to_string();
    assert!(
        late.stderr.contains(&format!("expired at {expired_at}"))
            && late.stderr.contains("nothing ran"),
        "{late}"
    );
    let late = iris(
        &server.url,
        Some(&laptop),
        &["approvals", "reject", &pending.id],
    )
    .await;
    assert_eq!(late.code, exit::EXPIRED, "{late}");
    let stored = row(&client, &laptop, &pending.id).await;
    assert_eq!(stored.status.as_str(), "expired");
    assert_eq!(stored.execution.as_str(), "none");
    let show = iris(
        &server.url,
        Some(&laptop),
        &["approvals", "show", &pending.id],
    )
    .await;
    // `show` and `list` say in plain words that it lapsed, when, and that nothing ran.
    assert!(
        show.stdout.contains(&format!(
            "Status:    expired. This request lapsed at {expired_at} without an answer, so nothing was done.\n"
        )),
        "{show}"
    );
    let list = iris(&server.url, Some(&laptop), &["approvals", "list"]).await;
    assert_eq!(list.code, exit::DONE, "{list}");
    let line = list
        .stdout
        .lines()
        .find(|l| l.starts_with(&pending.id))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(line.contains("expired (nothing ran)"), "{line}");
    assert_eq!(
        snapshot(&world.maildir),
        before,
        "an expired call moved mail"
    );
    drop(server);
}

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

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
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
    world: &World,
    client: &Client,
    devices: &Devices,
    bot: &FakeBot,
    request: &str,
) -> (String, &'static str) {
    let pending = halt(client, &devices.owner, request).await;
    let id = pending.id.clone();
    let n = pending.items.len();
    assert!(n > 0);
    let before = snapshot(&world.maildir);
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
    let after = snapshot(&world.maildir);
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
/// a fake Bot API.
async fn race_across_surfaces(mut world: World) {
    let bot = FakeBot::start().await;
    world.env.extend(bot.env());
    iris_email::demo::write_demo_maildir(&world.maildir, chrono::Utc::now()).unwrap();
    let devices = Devices {
        owner: world.add_device("owner", "control"),
        cli: (0..4)
            .map(|i| {
                let name = format!("cli-{i}");
                let token = world.add_device(&name, "control");
                (name, token)
            })
            .collect(),
        browser: String::new(),
        phone: world.add_device("phone", "control"),
    };
    let server = world.start();
    let devices = Devices {
        browser: server.pair_browser(&world, "control", "browser").await,
        ..devices
    };
    let client = server.client();
    let mut winners = Vec::new();
    for request in [
        "trash the promo emails",
        "trash the newsletters",
        "trash the order emails",
    ] {
        winners.push(cross_surface_round(&world, &client, &devices, &bot, request).await);
    }
    eprintln!("winners per round: {winners:?}");
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cli_web_api_and_telegram_answering_at_once_decide_once_on_sqlite() {
    let model = ModelServer::start(SCRIPT).await;
    race_across_surfaces(World::new(&model.base_url)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cli_web_api_and_telegram_answering_at_once_decide_once_on_postgres() {
    let (url, _database) = iris_store::testing::fresh_postgres_database().await;
    let model = ModelServer::start(SCRIPT).await;
    let mut world = World::new(&model.base_url);
    world.database_url = url;
    race_across_surfaces(world).await;
}

/// `iris approvals list` follows `next` through every page: more rows than one page (200)
/// are all listed, each once, and the last line says how many.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_follows_every_page_and_counts_them() {
    let model = ModelServer::start(SCRIPT).await;
    let world = World::new(&model.base_url);
    let rows = 450;
    {
        let store = iris_store::Store::connect(&world.database_url)
            .await
            .unwrap();
        let t = chrono::Utc::now() - chrono::Duration::minutes(30);
        for i in 0..rows {
            support::seed_card(&store, &format!("card-{i:03}"), t, 0, &format!("Mail {i}")).await;
        }
    }
    let laptop = world.add_device("laptop", "control");
    let server = world.start();

    let list = iris(&server.url, Some(&laptop), &["approvals", "list"]).await;
    assert_eq!(list.code, exit::DONE, "{list}");
    let listed: Vec<&str> = list
        .stdout
        .lines()
        .filter(|l| l.starts_with("card-"))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(listed.len(), rows, "every row once");
    let distinct: std::collections::BTreeSet<&str> = listed.iter().copied().collect();
    assert_eq!(distinct.len(), rows, "no row twice");
    assert_eq!(
        list.stdout.lines().last(),
        Some("450 approvals."),
        "{}",
        list.stdout.lines().last().unwrap_or_default()
    );

    let json = iris(&server.url, Some(&laptop), &["approvals", "list", "--json"]).await;
    let parsed: Value = serde_json::from_str(&json.stdout).expect("list --json parses");
    assert_eq!(parsed["approvals"].as_array().unwrap().len(), rows);
    assert_eq!(parsed["next"], Value::Null);
}
