//! `iris approvals approve ID` without `--yes` at a terminal: the CLI shows the card and asks
//! first; only a yes approves.

use crate::support;

use std::process::{Command, Stdio};

use iris_core::canonical::canonical_json;
use iris_core::ports::Scope;
use support::{snapshot, ModelServer, TestApp};

use super::{exit, finished, halt, moved, row, Run, SCRIPT};

/// `iris approvals approve ID` without `--yes` on a pseudo-terminal (util-linux `script`), with
/// `answer` typed; `script -e` exits with the CLI's own code.
async fn approve_at_a_terminal(url: &str, token: &str, id: &str, answer: &str) -> Run {
    use tokio::io::AsyncWriteExt;
    let line = format!(
        "'{}' approvals approve '{id}'",
        support::iris_bin().display()
    );
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

// Needs a process: the CLI, at a terminal (`script`); the server it talks to runs in process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_at_a_terminal_shows_the_card_and_asks_first() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!(
            "skipped: util-linux `script` (a pseudo-terminal for the prompt) is not installed"
        );
        return;
    }
    let model = ModelServer::start(SCRIPT).await;
    let server = TestApp::with_model(&model)
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

    // Anything but yes: the card was shown, the question asked, nothing sent.
    let declined = approve_at_a_terminal(&url, &laptop, &pending.id, "n\n").await;
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
    assert_eq!(snapshot(&maildir), before);

    // Yes: approved and run once.
    let approved = approve_at_a_terminal(&url, &laptop, &pending.id, "y\n").await;
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
    let (gone, arrived) = moved(&before, &snapshot(&maildir));
    assert_eq!((gone.len(), arrived.len()), (n, n));

    // Already answered: said at once, without asking.
    let again = approve_at_a_terminal(&url, &laptop, &pending.id, "y\n").await;
    assert_eq!(again.code, exit::ALREADY_DECIDED, "{again}");
    assert!(!again.stdout.contains("[y/N]"), "{again}");
    assert!(
        again
            .stdout
            .contains("was already approved by laptop via cli at"),
        "{again}"
    );
}
