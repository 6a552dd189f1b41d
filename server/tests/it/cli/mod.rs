//! The CLI surface end to end (CLI; DESIGN §7): the real `iris` binary run as a
//! subprocess with `IRIS_URL` and `IRIS_TOKEN` against the server in process
//! (`support::TestApp` on a listener: temp SQLite, demo Maildir, scripted model on loopback).
//! Only the CLI needs a process; the server it talks to is the same code `iris serve` runs.
//!
//! - [`cards_and_exit_codes`]: readable output: `iris chat` shows the reply and the card it
//!   waits on; `list` shows aligned rows, following every page; `show` shows the title, every
//!   line, the undo sentence, "You asked: …", the status and the exact call (tool and canonical
//!   arguments); after the answer, who answered where and when, and the result. `--json` prints
//!   the server's JSON. One exit code per failure, each checked: unreachable 3, unauthorized 4
//!   (bad or missing token), forbidden 5 (read device), not found 6, already decided 7 (naming
//!   who, where, when), expired 8 (short TTL, nothing runs), and 2 for `approve` without
//!   `--yes` when nobody can confirm.
//! - [`terminal`]: `approve` without `--yes` at a terminal shows the card and asks first.
//! - [`across_surfaces`]: concurrency across surfaces (Tests: web, CLI and Telegram answering
//!   one row at the same moment): exactly one wins, every other is told it was already decided
//!   (by whom), the pinned call runs once, and the Telegram message ends showing the outcome.
//!
//! This module holds what they share: the exit codes, running the CLI, and reading rows and
//! the Maildir.

mod across_surfaces;
mod cards_and_exit_codes;
mod other_plugins;
mod some_items;
mod terminal;

use crate::support::moved;
use std::process::{Command, Output, Stdio};

use iris_core::wire::Approval;

use crate::support::Client;

use crate::support::CATEGORY_TRASH_SCRIPT as SCRIPT;

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
    let mut c = Command::new(crate::support::iris_bin());
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
    let halted = client.halt(token, request).await;
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

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}
