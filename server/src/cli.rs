//! CLI subcommands (DESIGN §7). `devices` talks to the database directly; `approvals` and `chat`
//! are a surface over HTTP (`IRIS_URL`, default `http://127.0.0.1:3000`, and `IRIS_TOKEN`), so
//! an answer from the CLI goes through the same `respond_to_approval` as every other surface
//! (surface `cli`). `remote` holds the HTTP side and the exit codes, `render` the terminal text,
//! `args` the top-level command line (`iris::Cli`, `iris::Command`), `at_server` the commands
//! for the person at the server (passkeys, audit), `shaping` the owner's choice of items and
//! edits for `approve` (docs/adr/0122-shaping-a-call.md), `stdout` every line it prints (a
//! closed pipe ends `iris` quietly).

#[macro_use]
pub mod stdout;
pub mod args;
pub mod at_server;
mod remote;
mod render;
mod shaping;

use std::io::{BufRead, IsTerminal, Write};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use chrono::Utc;
use clap::{Args, Subcommand};
use iris_core::ports::{Device, DeviceStore, Scope};
use iris_core::wire::{Approval, ApprovalList, ApprovalStatus, ChatResponse, RunStatus};
use iris_store::Store;
use serde_json::{json, Value};

use crate::auth;
use crate::config::Settings;
pub use remote::{ExitCode, EXIT_CODES_HELP};
use remote::{Failure, Remote};

/// `iris devices …`.
#[derive(Subcommand)]
pub enum DevicesCommand {
    /// Add a device; its token is printed on the last line (shown once).
    Add {
        /// Unique name.
        #[arg(long)]
        name: String,
        /// read, control, or agent (an AI agent's token for the MCP gateway: it reads only the
        /// approvals it requested and never answers one).
        #[arg(long, value_parser = ["read", "control", "agent"])]
        scope: String,
    },
    /// List live devices.
    List,
    /// Revoke a device by name.
    Revoke {
        /// The device's name.
        name: String,
    },
}

/// `--json` on every HTTP subcommand.
#[derive(Args, Debug, Clone, Copy)]
pub struct Output {
    /// Print the server's JSON as it answered (for scripts) instead of text. On a failure the
    /// server's error body, if any, goes to stdout; the sentence still goes to stderr.
    #[arg(long)]
    pub json: bool,
}

/// `iris approvals …`.
#[derive(Subcommand)]
pub enum ApprovalsCommand {
    /// List approvals as aligned rows (id, status, title, created, expires), newest first,
    /// every page of them (the API hands out 200 at a time), then how many it showed.
    List {
        /// Only rows in this state (`answered`: every row but the pending ones).
        #[arg(long, value_parser = ["pending", "approved", "rejected", "expired", "answered", "all"])]
        status: Option<String>,
        /// `--json`.
        #[command(flatten)]
        output: Output,
    },
    /// Show one approval: the card (title, every line, the undo sentence, what you asked),
    /// its status, who answered where and when, execution and result, and the exact call.
    Show {
        /// Approval id.
        id: String,
        /// `--json`.
        #[command(flatten)]
        output: Output,
    },
    /// Approve: the server runs exactly the pinned call, once. Shows the card and asks first
    /// when stdin is a terminal (unless --yes); from a script it approves at once.
    Approve {
        /// Approval id.
        id: String,
        /// Do not ask, even at a terminal.
        #[arg(long, short = 'y')]
        yes: bool,
        /// Approve only these items, by the numbers `iris approvals show` prints (1, 2, …),
        /// comma-separated: the call then runs for them alone and the others are left out.
        #[arg(long, value_delimiter = ',', value_name = "N,N,…")]
        only: Option<Vec<u32>>,
        /// Approve the call with FIELD set to VALUE (a field the card lets you edit, which
        /// `show` lists). A list field takes a comma-separated list or a JSON array; the server
        /// checks the edited call as it checks the model's. Repeatable.
        #[arg(long, value_name = "FIELD=VALUE")]
        edit: Vec<String>,
        /// As --edit, with VALUE read from the file PATH (UTF-8), e.g. a mail's body.
        #[arg(long, value_name = "FIELD=PATH")]
        edit_file: Vec<String>,
        /// `--json`.
        #[command(flatten)]
        output: Output,
    },
    /// Reject: nothing runs.
    Reject {
        /// Approval id.
        id: String,
        /// Why, stored on the row and shown on every surface.
        #[arg(long)]
        reason: Option<String>,
        /// `--json`.
        #[command(flatten)]
        output: Output,
    },
    /// Undo an executed card: its undo tool runs once for exactly the items that ran (mail
    /// comes back from Trash), within the card's undo window. Exit 7 when it was undone
    /// already or has nothing to undo, 8 when its window has closed.
    Undo {
        /// Approval id.
        id: String,
        /// `--json`.
        #[command(flatten)]
        output: Output,
    },
}

impl ApprovalsCommand {
    fn output(&self) -> Output {
        match self {
            ApprovalsCommand::List { output, .. }
            | ApprovalsCommand::Show { output, .. }
            | ApprovalsCommand::Approve { output, .. }
            | ApprovalsCommand::Reject { output, .. }
            | ApprovalsCommand::Undo { output, .. } => *output,
        }
    }
}

/// `iris chat MESSAGE`.
#[derive(Args)]
pub struct ChatArgs {
    /// What to say.
    pub message: String,
    /// Continue this conversation.
    #[arg(long)]
    pub conversation: Option<String>,
    /// `--json`.
    #[command(flatten)]
    pub output: Output,
}

/// A database URL as the CLI shows it: without a password (`postgres://user@host/db`).
fn shown_database(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            let user = credentials.split(':').next().unwrap_or_default();
            format!("{}{user}{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}

async fn open_store() -> anyhow::Result<Store> {
    let settings = Settings::load().context("reading settings (iris.toml, IRIS_*)")?;
    Store::connect(&settings.database_url)
        .await
        .with_context(|| format!("opening the database {}", settings.database_url))
}

/// Runs `iris devices …`.
///
/// # Errors
/// When the database cannot be opened or the name is taken / unknown.
pub async fn devices(command: DevicesCommand) -> anyhow::Result<()> {
    let store = open_store().await?;
    match command {
        DevicesCommand::Add { name, scope } => {
            // The same rule as the pairing page: names are shown on cards and in terminals.
            let name = iris_core::pairing::check_device_name(&name)
                .with_context(|| format!("--name {name:?}"))?;
            let scope = Scope::parse(&scope).context("scope must be read, control or agent")?;
            let token = auth::new_token();
            store
                .add(
                    &Device {
                        name: name.clone(),
                        scope,
                        created_at: Utc::now(),
                        last_used_at: None,
                    },
                    &auth::token_hash(&token),
                )
                .await
                // The store's sentence says why (a name taken, a token paired, a busy
                // database), so it is the message itself, not a cause below a guess.
                .map_err(|e| anyhow::anyhow!("adding device `{name}`: {e}"))?;
            // Which database: the demo's is data/demo.db, not the default data/iris.db.
            let database = Settings::load()
                .map(|s| shown_database(&s.database_url))
                .unwrap_or_default();
            outln!(
                "added device `{name}` with scope {} to {database}",
                scope.as_str()
            );
            outln!("{token}");
        }
        DevicesCommand::List => {
            for d in store.list().await? {
                outln!(
                    "{}\t{}\tadded {}\tlast used {}",
                    d.name,
                    d.scope.as_str(),
                    iris_core::wire::when_utc(d.created_at),
                    d.last_used_at
                        .map(iris_core::wire::when_utc)
                        .unwrap_or_else(|| "never".into())
                );
            }
        }
        DevicesCommand::Revoke { name } => {
            if !store.revoke(&name).await? {
                bail!("no live device is named `{name}`");
            }
            outln!("revoked `{name}`");
        }
    }
    Ok(())
}

/// Runs `iris pair --scope read|control`: stores a one-time link (10 minutes) and prints it on
/// the last line, with what it grants and until when above it.
///
/// # Errors
/// When the settings or the database cannot be read, or the link cannot be stored.
pub async fn pair(scope: &str) -> anyhow::Result<()> {
    let settings = Settings::load().context("reading settings (iris.toml, IRIS_*)")?;
    let store = Store::connect(&settings.database_url)
        .await
        .with_context(|| format!("opening the database {}", settings.database_url))?;
    let scope = Scope::parse(scope)
        .filter(|s| s.pairable())
        .context("a browser is paired as read or control (an agent's token is made with `iris devices add --scope agent`)")?;
    let base = crate::pairing::configured_base(&settings).map_err(anyhow::Error::msg)?;
    let offer = crate::pairing::make_link(&store, scope, "cli", &base, Utc::now())
        .await
        .context("storing the pairing link")?;
    let grant = match scope {
        Scope::Read => "a read device (sees cards, never answers them)",
        Scope::Control => "a control device (sees and answers cards, chats)",
        // Refused above: an agent is never paired.
        Scope::Agent => "an agent",
    };
    outln!("Open this link in the browser to pair it as {grant}.");
    outln!(
        "It works once, until {} (10 minutes).",
        iris_core::wire::when_utc(offer.expires_at)
    );
    if crate::config::non_blank(&settings.public_url).is_none() {
        outln!("(Made on {base}; set IRIS_PUBLIC_URL to the address your phone opens.)");
    }
    // Which server it works on: the one using this database (a password is not shown).
    let database = match settings.database_url.split_once('@') {
        Some((_, rest)) => format!("postgres://…@{rest}"),
        None => settings.database_url.clone(),
    };
    outln!("(Stored in {database}: only a server on this database knows the link.)");
    outln!("{}", offer.url);
    Ok(())
}

/// How long `approve` waits for the pinned call's outcome before it leaves it to the server.
const EXECUTION_WAIT: Duration = Duration::from_secs(15);

/// A path segment with everything but unreserved characters percent-encoded, so an id typed
/// with `/` or `?` names one approval and nothing else.
fn segment(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn approval_path(id: &str) -> String {
    format!("/governance/approvals/{}", segment(id))
}

/// Reads the server's JSON as `T`.
fn parse<T: serde::de::DeserializeOwned>(value: Value, what: &str) -> Result<T, Failure> {
    serde_json::from_value(value)
        .map_err(|e| Failure::Other(format!("the server's {what} did not parse: {e}")))
}

fn print_json(value: &Value) {
    outln!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
    );
}

/// Prints the outcome of a command and gives its exit code: on failure the sentence goes to
/// stderr and, with `--json`, the server's error body to stdout.
fn conclude(result: Result<(), Failure>, output: Output) -> ExitCode {
    let code = match result {
        Ok(()) => ExitCode::Done,
        Err(failure) => {
            if output.json {
                if let Some(body) = failure.body() {
                    print_json(body);
                }
            }
            eprintln!("iris: {}", failure.message());
            failure.exit_code()
        }
    };
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    code
}

/// Rows asked for per page by `iris approvals list` (the API's most).
const LIST_PAGE: u32 = 200;

/// Runs `iris approvals …` over HTTP and gives the exit code ([`ExitCode`]).
pub async fn approvals(command: ApprovalsCommand) -> ExitCode {
    let output = command.output();
    conclude(run_approvals(command).await, output)
}

async fn run_approvals(command: ApprovalsCommand) -> Result<(), Failure> {
    let remote = Remote::from_env()?;
    match command {
        ApprovalsCommand::List { status, output } => {
            let mut all = ApprovalList {
                approvals: Vec::new(),
                next: None,
            };
            let mut before: Option<String> = None;
            loop {
                let mut path = format!("/governance/approvals?limit={LIST_PAGE}");
                if let Some(s) = &status {
                    path.push_str(&format!("&status={s}"));
                }
                if let Some(cursor) = &before {
                    path.push_str(&format!("&before={cursor}"));
                }
                let page: ApprovalList =
                    parse(remote.get(&path, None).await?, "list of approvals")?;
                all.approvals.extend(page.approvals);
                match page.next {
                    Some(next) => before = Some(next),
                    None => break,
                }
            }
            if output.json {
                print_json(&serde_json::to_value(&all).unwrap_or_default());
                return Ok(());
            }
            if all.approvals.is_empty() {
                match status.as_deref().filter(|s| *s != "all") {
                    Some(s) => outln!("No {s} approvals."),
                    None => outln!("No approvals."),
                }
            } else {
                out!("{}", render::rows(&all.approvals, Utc::now()));
                let n = all.approvals.len();
                outln!("{n} approval{}.", if n == 1 { "" } else { "s" });
            }
        }
        ApprovalsCommand::Show { id, output } => {
            let value = remote.get(&approval_path(&id), Some(&id)).await?;
            if output.json {
                print_json(&value);
                return Ok(());
            }
            let row: Approval = parse(value, "approval")?;
            out!("{}", render::card(&row, Utc::now()));
        }
        ApprovalsCommand::Approve {
            id,
            yes,
            only,
            edit,
            edit_file,
            output,
        } => {
            let items = match &only {
                Some(numbers) => Some(shaping::chosen_items(&remote, &id, numbers).await?),
                None => None,
            };
            let edits = if edit.is_empty() && edit_file.is_empty() {
                None
            } else {
                Some(shaping::edits_of(&remote, &id, &edit, &edit_file).await?)
            };
            if !yes {
                confirm(&remote, &id, items.as_deref()).await?;
            }
            let mut body = json!({"decision": "approve"});
            if let Some(items) = &items {
                body["items"] = json!(items);
            }
            if let Some(edits) = edits {
                body["edits"] = Value::Object(edits);
            }
            let value = remote
                .post(&format!("{}/respond", approval_path(&id)), &body, Some(&id))
                .await?;
            if output.json {
                print_json(&value);
                return Ok(());
            }
            let row: Approval = parse(value["approval"].clone(), "answer")?;
            let share = row
                .approved_share()
                .map(|(kept, of)| format!(" ({kept} of {of} items; the others are left out)"))
                .unwrap_or_default();
            outln!(
                "Approved \u{201c}{}\u{201d}{share} {}.",
                render::printable(&row.card.title),
                render::answered_by(&row)
            );
            report_execution(&remote, row).await;
        }
        ApprovalsCommand::Reject { id, reason, output } => {
            let value = remote
                .post(
                    &format!("{}/respond", approval_path(&id)),
                    &json!({"decision": "reject", "reason": reason}),
                    Some(&id),
                )
                .await?;
            if output.json {
                print_json(&value);
                return Ok(());
            }
            let row: Approval = parse(value["approval"].clone(), "answer")?;
            outln!(
                "Rejected \u{201c}{}\u{201d} {}. Nothing will run.",
                render::printable(&row.card.title),
                render::answered_by(&row)
            );
        }
        ApprovalsCommand::Undo { id, output } => {
            let value = remote
                .post(
                    &format!("{}/undo", approval_path(&id)),
                    &json!({}),
                    Some(&id),
                )
                .await
                .map_err(in_the_servers_words)?;
            if output.json {
                print_json(&value);
                return Ok(());
            }
            let row: Approval = parse(value["approval"].clone(), "undo")?;
            let Some(undo) = &row.undo else {
                return Err(Failure::Other(
                    "the server answered without the undo".into(),
                ));
            };
            let (head, detail) = app::undo::undo_words(undo);
            let line = render::printable(&format!(
                "{head}: \u{201c}{}\u{201d}{}",
                row.card.title,
                detail.map(|d| format!(" \u{2014} {d}")).unwrap_or_default()
            ));
            if undo.state == iris_core::wire::UndoState::Done {
                outln!("{line}");
            } else {
                return Err(Failure::Other(line));
            }
        }
    }
    Ok(())
}

/// An undo refused with 409 or 410 is told in the server's own sentence (already undone by
/// whom, nothing to undo, the window closed); the row's decision is not what it is about.
fn in_the_servers_words(failure: Failure) -> Failure {
    match failure {
        Failure::Refused {
            status,
            error,
            body,
            url,
            id,
            ..
        } => Failure::Refused {
            status,
            error,
            approval: None,
            body,
            url,
            id,
        },
        other => other,
    }
}

/// Before `approve` without `--yes`: with a person at a terminal, shows the card (on stderr, so
/// stdout keeps only the outcome) and asks. A row already answered or past its expiry is
/// reported without asking. Without a terminal (a script) there is nobody to ask: the command
/// itself is the consent, as DESIGN §7's `iris approvals approve ID` promises.
///
/// # Errors
/// [`Failure::Settled`] when the row cannot be approved any more; [`Failure::NotConfirmed`]
/// unless the answer is y or yes.
async fn confirm(remote: &Remote, id: &str, items: Option<&[u32]>) -> Result<(), Failure> {
    if !std::io::stdin().is_terminal() {
        return Ok(());
    }
    let row: Approval = parse(remote.get(&approval_path(id), Some(id)).await?, "approval")?;
    let now = Utc::now();
    if row.status != ApprovalStatus::Pending || row.lapsed_at(now) {
        return Err(Failure::Settled(Box::new(row)));
    }
    // Nothing to confirm here: the server refuses it without the owner's passkey (exit 10,
    // with the card's link), so the owner is not asked a question whose yes cannot work.
    if row.passkey_required {
        return Ok(());
    }
    let mut err = std::io::stderr();
    let question = match items.filter(|kept| kept.len() < row.items.len()) {
        Some(kept) => format!(
            "{} \u{2014} only {} of {} ({})? This runs the call above for those items alone, once; the others are left out.",
            render::printable(&row.card.action),
            kept.len(),
            row.items.len(),
            kept.iter().map(|i| (i + 1).to_string()).collect::<Vec<_>>().join(", ")
        ),
        None => format!(
            "{}? This runs exactly the call above, once.",
            render::printable(&row.card.action)
        ),
    };
    let _ = write!(err, "{}\n{question} [y/N] ", render::card(&row, now));
    let _ = err.flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| Failure::Other(format!("reading your answer: {e}")))?;
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(()),
        _ => Err(Failure::NotConfirmed),
    }
}

/// After an approval: waits (up to [`EXECUTION_WAIT`], polling the row) for the ledger's outcome
/// and prints it; past the wait, says where to look. Never answers or runs anything itself.
async fn report_execution(remote: &Remote, mut row: Approval) {
    let deadline = Instant::now() + EXECUTION_WAIT;
    let path = approval_path(&row.id);
    while !row.execution.has_outcome() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
        match remote.get(&path, Some(&row.id)).await {
            Ok(value) => match serde_json::from_value::<Approval>(value) {
                Ok(fresh) => row = fresh,
                Err(_) => break,
            },
            Err(_) => break,
        }
    }
    if !row.execution.has_outcome() {
        outln!(
            "The call runs on the server; `iris approvals show {}` shows its result.",
            row.id
        );
    } else {
        let sentence = render::printable(&app::format::execution_sentence(&row));
        let stop = if sentence.ends_with(['.', '!', '?', '…']) {
            ""
        } else {
            "."
        };
        outln!("{sentence}{stop}");
    }
}

/// Runs `iris chat MESSAGE` over HTTP: prints the reply and, when the turn waits for an
/// approval, its card and how to answer it. Gives the exit code ([`ExitCode`]).
pub async fn chat(args: ChatArgs) -> ExitCode {
    let output = args.output;
    conclude(run_chat(args).await, output)
}

async fn run_chat(args: ChatArgs) -> Result<(), Failure> {
    let remote = Remote::from_env()?;
    let value = remote
        .post(
            "/api/chat",
            &json!({"message": args.message, "conversation_id": args.conversation}),
            None,
        )
        .await?;
    if args.output.json {
        print_json(&value);
        return Ok(());
    }
    let response: ChatResponse = parse(value, "chat answer")?;
    for line in response.reply.lines() {
        outln!("{}", render::printable(line));
    }
    if let (RunStatus::AwaitingApproval, Some(id)) = (response.status, &response.approval_id) {
        outln!();
        let row: Approval = parse(remote.get(&approval_path(id), Some(id)).await?, "approval")?;
        out!("{}", render::card(&row, Utc::now()));
        outln!();
        outln!("Web:     {}/activity/{}", remote.base, segment(id));
        if row.passkey_required {
            outln!("Approve: on the card in the web app (it needs your passkey)");
        } else {
            outln!("Approve: iris approvals approve {id}");
        }
        outln!("Reject:  iris approvals reject {id} --reason \"…\"");
    }
    outln!(
        "(conversation {}; continue with --conversation {})",
        response.conversation_id,
        response.conversation_id
    );
    Ok(())
}
