//! `iris approvals approve ID --only 1,3` and `--edit` (docs/adr/0122-shaping-a-call.md): `show` numbers the
//! lines of a card that may be approved in part, `--only` takes those numbers (checked before
//! anything is sent: 0, a number past the last line, or one named twice is exit 2 and nothing
//! changes), and the approval runs the call for those items alone.

use crate::support;

use iris_core::ports::Scope;
use support::{snapshot, ModelServer, TestApp};

use super::{exit, halt, iris, moved, row, SCRIPT};

// Needs a process: the CLI; the server it talks to runs in process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_only_takes_the_numbers_show_prints_and_runs_for_those_items_alone() {
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
    let original = snapshot(&maildir);
    let pending = halt(&client, &laptop, "trash the promo emails").await;
    let id = pending.id.clone();
    let n = pending.items.len();
    assert!(n >= 3, "the demo's promos: {n}");
    assert_eq!(pending.card.items_arg.as_deref(), Some("ids"));

    let show = iris(&url, Some(&laptop), &["approvals", "show", &id]).await;
    assert_eq!(show.code, exit::DONE, "{show}");
    for (i, line) in pending.card.lines.iter().enumerate() {
        assert!(
            show.stdout.contains(&format!("  {}. {line}\n", i + 1)),
            "{show}"
        );
    }
    assert!(
        show.stdout.contains(&format!(
            "Some only: iris approvals approve {id} --only 1,{n}"
        )),
        "{show}"
    );

    // Numbers that do not fit: exit 2 before anything is sent; nothing changes.
    let past = (n + 1).to_string();
    for only in ["0", past.as_str(), "1,1", "x"] {
        let refused = iris(
            &url,
            Some(&laptop),
            &["approvals", "approve", &id, "--only", only],
        )
        .await;
        assert_eq!(refused.code, exit::USAGE, "--only {only}: {refused}");
    }
    assert_eq!(row(&client, &laptop, &id).await.status.as_str(), "pending");
    assert_eq!(snapshot(&maildir), original);

    // The first and the third.
    let approve = iris(
        &url,
        Some(&laptop),
        &["approvals", "approve", &id, "--only", "3,1"],
    )
    .await;
    assert_eq!(approve.code, exit::DONE, "{approve}");
    assert!(
        approve
            .stdout
            .contains(&format!("(2 of {n} items; the others are left out)")),
        "{approve}"
    );
    let answered = row(&client, &laptop, &id).await;
    assert_eq!(answered.approved_items, Some(vec![0, 2]));
    let decided = answered.decided_call.clone().expect("decided call");
    assert_eq!(
        decided.args,
        serde_json::json!({"ids": [pending.items[0], pending.items[2]]})
    );
    let done = client.wait_execution(&id, &laptop, "executed").await;
    assert_eq!(done["result"]["trashed"], 2, "{done}");
    let (gone, arrived) = moved(&original, &snapshot(&maildir));
    assert_eq!(gone.len(), 2, "{gone:?}");
    assert!(
        arrived.iter().all(|k| k.starts_with(".Trash/cur/")),
        "{arrived:?}"
    );

    // `show` marks the lines left out and names the call that ran.
    let show = iris(&url, Some(&laptop), &["approvals", "show", &id]).await;
    assert!(
        show.stdout
            .contains(&format!("  2. {}  (left out)\n", pending.card.lines[1])),
        "{show}"
    );
    assert!(
        show.stdout.contains(&format!(
            "Items:     Approved 2 of {n}; left out, not touched: "
        )),
        "{show}"
    );
    assert!(show.stdout.contains("Runs:      trash_email "), "{show}");
}

/// `iris approvals approve ID --edit FIELD=VALUE` and `--edit-file FIELD=PATH`: `show` lists the
/// fields the card lets the owner edit; a field it does not is exit 2 before anything is sent;
/// the edited reply is sent once, as edited.
// Needs a process: the CLI; the server it talks to runs in process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_edit_sends_the_reply_as_edited_once() {
    let sink = crate::smtp_sink::SmtpSink::start();
    let model = ModelServer::start(iris_core::scripted::DEMO_SCRIPT).await;
    let server = TestApp::with_model(&model)
        .mailbox()
        .smtp_url(&sink.url())
        .background()
        .start()
        .await;
    let laptop = server.add_device("laptop", Scope::Control).await;
    let client = server.client().await;
    let url = client.url.clone();
    let pending = halt(&client, &laptop, "reply to Anna that Thursday works").await;
    let id = pending.id.clone();

    let show = iris(&url, Some(&laptop), &["approvals", "show", &id]).await;
    assert!(
        show.stdout.contains(&format!(
            "Editable:  to, subject, body (iris approvals approve {id} --edit FIELD=VALUE)"
        )),
        "{show}"
    );
    let refused = iris(
        &url,
        Some(&laptop),
        &[
            "approvals",
            "approve",
            &id,
            "--edit",
            "from=robin@example.org",
        ],
    )
    .await;
    assert_eq!(refused.code, exit::USAGE, "{refused}");
    assert!(
        refused.stderr.contains("`from` cannot be edited"),
        "{refused}"
    );

    let body = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        body.path(),
        "Thursday works. I will bring the salad.\n\nRobin",
    )
    .unwrap();
    let approve = iris(
        &url,
        Some(&laptop),
        &[
            "approvals",
            "approve",
            &id,
            "--edit",
            "subject=Re: Thursday",
            "--edit-file",
            &format!("body={}", body.path().display()),
        ],
    )
    .await;
    assert_eq!(approve.code, exit::DONE, "{approve}");
    let answered = row(&client, &laptop, &id).await;
    assert_eq!(
        answered.edited_fields,
        Some(vec!["body".to_string(), "subject".to_string()])
    );
    client.wait_execution(&id, &laptop, "executed").await;
    let sent = sink.messages();
    assert_eq!(sent.len(), 1);
    let raw = String::from_utf8(sent[0].clone()).unwrap();
    assert!(raw.contains("I will bring the salad."), "{raw}");
    assert!(raw.contains("Subject: Re: Thursday"), "{raw}");
    let show = iris(&url, Some(&laptop), &["approvals", "show", &id]).await;
    assert!(
        show.stdout
            .contains("Edited:    body, subject (by you, before approving)"),
        "{show}"
    );
}
