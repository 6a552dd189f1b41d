//! Readable output and one exit code per failure: `iris chat` shows the reply and the card it
//! waits on; `list` shows aligned rows and follows `next` through every page; `show` shows the
//! title, every line, the undo sentence, "You asked: …", the status and the exact call (tool and
//! canonical arguments); after the answer, who answered where and when, and the result.
//! `--json` prints the server's JSON. Unreachable 3, unauthorized 4 (bad or missing token),
//! forbidden 5 (read device), not found 6, already decided 7 (naming who, where, when), expired 8
//! (short TTL; nothing runs), and 2 for `approve` without `--yes` when nobody can confirm.

use crate::support;

use iris_core::canonical::canonical_json;
use iris_core::ports::Scope;
use iris_core::wire::Approval;
use serde_json::Value;
use support::{eventually, snapshot, ModelServer, TestApp};

use super::{exit, halt, iris, moved, row, SCRIPT};

/// A loopback URL nothing listens on (a port just bound and released).
fn unreachable_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

// Needs a process: the CLI (`iris chat`, `iris approvals`: their output and exit codes); the
// server it talks to runs in process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_shows_cards_readably_and_exits_with_one_code_per_failure() {
    let model = ModelServer::start(SCRIPT).await;
    let server = TestApp::with_model(&model)
        .mailbox()
        .background()
        .start()
        .await;
    let laptop = server.add_device("laptop", Scope::Control).await;
    let wall = server.add_device("wall", Scope::Read).await;
    let client = server.client().await;
    let url = client.url.clone();
    let maildir = server.maildir();
    let original = snapshot(&maildir);

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
    let expires = iris_core::wire::when_utc(pending.expires_at);
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
    // A card that may be approved in part numbers its lines (`approve --only` takes them).
    let numbered = pending.card.items_arg.is_some();
    for (i, line) in pending.card.lines.iter().enumerate() {
        let shown = if numbered {
            format!("  {}. {line}\n", i + 1)
        } else {
            format!("  - {line}\n")
        };
        assert!(show.stdout.contains(&shown), "{line}: {show}");
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
    assert_eq!(snapshot(&maildir), original, "a failure moved mail");

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
    let (gone_files, arrived) = moved(&original, &snapshot(&maildir));
    assert_eq!((gone_files.len(), arrived.len()), (n, n));

    // A second answer from any command: already decided, saying by whom, where and when.
    let approved = row(&client, &laptop, &id).await;
    let at = iris_core::wire::when_utc(approved.responded_at.unwrap());
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
    assert_eq!(snapshot(&maildir), original, "the undo restored every file");
    let again = iris(&url, Some(&laptop), &["approvals", "undo", &id]).await;
    assert_eq!(again.code, exit::ALREADY_DECIDED, "{again}");
    assert!(
        again.stderr.contains("already undone by laptop via cli"),
        "{again}"
    );
    assert_eq!(snapshot(&maildir), original, "a second undo moved mail");
    let show = iris(&url, Some(&laptop), &["approvals", "show", &id]).await;
    assert!(
        show.stdout
            .contains("Undo:      Undone by laptop via cli at"),
        "{show}"
    );
    assert!(!show.stdout.contains("You can restore"), "{show}");

    // Reject with a reason: nothing runs; the card says who and why.
    let second = halt(&client, &laptop, "trash the newsletters").await;
    let before = snapshot(&maildir);
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
    assert_eq!(snapshot(&maildir), before, "a rejected call moved mail");
    let list = iris(
        &url,
        Some(&laptop),
        &["approvals", "list", "--status", "pending"],
    )
    .await;
    assert_eq!(list.stdout, "No pending approvals.\n", "{list}");
}

// Needs a process: the CLI (`iris approvals approve`'s exit code); the server it talks to runs
// in process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_card_exits_with_its_own_code_and_nothing_runs() {
    let model = ModelServer::start(SCRIPT).await;
    let server = TestApp::with_model(&model)
        .destructive_ttl_secs(1)
        .mailbox()
        .background()
        .start()
        .await;
    let laptop = server.add_device("laptop", Scope::Control).await;
    let client = server.client().await;
    let url = client.url.clone();
    let maildir = server.maildir();
    let pending = halt(&client, &laptop, "trash the promo emails").await;
    let before = snapshot(&maildir);
    // Wait (on the clock, with a deadline) until the row's own expiry has passed.
    eventually("the one-second TTL to pass", || async {
        (chrono::Utc::now() > pending.expires_at).then_some(())
    })
    .await;
    let late = iris(
        &url,
        Some(&laptop),
        &["approvals", "approve", &pending.id, "--yes"],
    )
    .await;
    assert_eq!(late.code, exit::EXPIRED, "{late}");
    let expired_at = iris_core::wire::when_utc(pending.expires_at);
    assert!(
        late.stderr.contains(&format!("expired at {expired_at}"))
            && late.stderr.contains("nothing ran"),
        "{late}"
    );
    let late = iris(&url, Some(&laptop), &["approvals", "reject", &pending.id]).await;
    assert_eq!(late.code, exit::EXPIRED, "{late}");
    let stored = row(&client, &laptop, &pending.id).await;
    assert_eq!(stored.status.as_str(), "expired");
    assert_eq!(stored.execution.as_str(), "none");
    let show = iris(&url, Some(&laptop), &["approvals", "show", &pending.id]).await;
    // `show` and `list` say in plain words that it lapsed, when, and that nothing ran.
    assert!(
        show.stdout.contains(&format!(
            "Status:    expired. This request lapsed at {expired_at} without an answer, so nothing was done.\n"
        )),
        "{show}"
    );
    let list = iris(&url, Some(&laptop), &["approvals", "list"]).await;
    assert_eq!(list.code, exit::DONE, "{list}");
    let line = list
        .stdout
        .lines()
        .find(|l| l.starts_with(&pending.id))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(line.contains("expired (nothing ran)"), "{line}");
    assert_eq!(snapshot(&maildir), before, "an expired call moved mail");
}

/// `iris approvals list` follows `next` through every page: more rows than one page (200)
/// are all listed, each once, and the last line says how many.
// Needs a process: the CLI (`iris approvals list`); the server it talks to runs in process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_follows_every_page_and_counts_them() {
    let model = ModelServer::start(SCRIPT).await;
    let server = TestApp::with_model(&model).background().start().await;
    let rows = 450;
    let t = chrono::Utc::now() - chrono::Duration::minutes(30);
    for i in 0..rows {
        support::seed_card(
            &server.state.store,
            &format!("card-{i:03}"),
            t,
            0,
            &format!("Mail {i}"),
        )
        .await;
    }
    let laptop = server.add_device("laptop", Scope::Control).await;
    let url = server.listen().await;

    let list = iris(&url, Some(&laptop), &["approvals", "list"]).await;
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

    let json = iris(&url, Some(&laptop), &["approvals", "list", "--json"]).await;
    let parsed: Value = serde_json::from_str(&json.stdout).expect("list --json parses");
    assert_eq!(parsed["approvals"].as_array().unwrap().len(), rows);
    assert_eq!(parsed["next"], Value::Null);

    // A reader that has gone (`iris approvals list | head -1`): the pipe's read end is closed
    // before the CLI prints a line, so its first write fails with EPIPE. It ends quietly with
    // exit 0, as Unix tools do, not with `println!`'s panic.
    for args in [
        &["approvals", "list"][..],
        &["approvals", "list", "--json"][..],
    ] {
        let mut command =
            tokio::process::Command::from(super::cli_command(&url, Some(&laptop), args));
        command
            .kill_on_drop(true)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = command.spawn().expect("iris runs");
        drop(child.stdout.take());
        let out = child.wait_with_output().await.expect("iris ends");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(exit::DONE), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(
            stderr.trim(),
            "",
            "{args:?} says nothing of the closed pipe"
        );
    }
}
