//! Staleness with the real email plugin on a real Maildir: each item of a card pins the folder
//! and Message-ID the card saw; a message moved away between halt and approve is skipped
//! ("stale: nothing done") while the others are trashed, and the audit says so per item.

use crate::support;

use std::path::Path;
use std::sync::Arc;

use iris_core::agent::{Agent, Pausing};
use iris_core::approval::Ttl;
use iris_core::approvals::STALE;
use iris_core::ports::{ApprovalStore, ManualClock};
use iris_core::toolbox::Toolbox;
use iris_core::wire::{AuditKind, Decision, Execution, RunStatus};
use iris_store::TimeSource;
use serde_json::{json, Value};

use super::{owner, resume, t0, turn};

fn put_message(maildir: &Path, rel: &str, subject: &str, message_id: &str) {
    let path = maildir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text = format!(
        "From: Shop <deals@shop.example>\r\nTo: owner@example.org\r\nSubject: {subject}\r\n\
         Date: Fri, 27 Nov 2026 08:00:00 +0000\r\nMessage-ID: <{message_id}>\r\n\r\nBuy now.\r\n"
    );
    std::fs::write(path, text).unwrap();
}

fn make_folder(dir: &Path) {
    for sub in ["cur", "new", "tmp"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn a_message_moved_away_after_the_card_was_written_is_stale_and_not_trashed() {
    let tmp = tempfile::tempdir().unwrap();
    let maildir = tmp.path().join("Maildir");
    make_folder(&maildir);
    make_folder(&maildir.join(".Archive"));
    std::fs::write(maildir.join(".Archive/maildirfolder"), b"").unwrap();
    for n in 1..=3 {
        put_message(
            &maildir,
            &format!("cur/170000000{n}.M{n}P1.host:2,S"),
            &format!("Promo {n}"),
            &format!("p{n}@shop.example"),
        );
    }
    let clock = Arc::new(ManualClock::new(t0()));
    let store = iris_store::Store::connect_with(
        "sqlite::memory:",
        iris_store::StoreOptions {
            time: TimeSource::Clock(clock.clone()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let email = Arc::new(
        iris_email::EmailPlugin::new(
            vec![iris_email::AccountConfig {
                name: "maildir".into(),
                address: "owner@example.org".into(),
                kind: iris_email::AccountKind::Maildir {
                    path: maildir.clone(),
                },
            }],
            &store,
        )
        .unwrap(),
    );
    email.sync().await.unwrap();
    let script = r#"
rules:
  - when: "(?i)trash"
    steps:
      - call: search_inbox
        args: {query: promo}
      - call: trash_email
        args: {ids: "$ids"}
      - reply: "Done: moved {trashed} emails to Trash."
"#;
    let toolbox = Arc::new(Toolbox::new(vec![email.clone()]).unwrap());
    let agent = Agent::new(
        Arc::new(iris_core::scripted::ScriptedModel::from_yaml(script).unwrap()),
        toolbox,
        Pausing::Governed {
            ttl: Ttl::default(),
            clock: clock.clone(),
            passkeys: Default::default(),
        },
        vec![],
    );
    let g = support::service(&store, agent, clock.clone());

    let r = turn(&g, "trash the promos").await;
    assert_eq!(r.status, RunStatus::AwaitingApproval, "{}", r.reply);
    let id = r.approval_id.unwrap();
    let row = store.approval(&id).await.unwrap().unwrap();
    assert_eq!(row.items.len(), 3);
    // One precondition per item: the folder and Message-ID the card saw.
    let pinned: Vec<Value> = serde_json::from_str(
        &sqlx::query_scalar::<_, String>("SELECT preconditions FROM approvals WHERE id = $1")
            .bind(&id)
            .fetch_one(store.pool())
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(pinned.len(), 3);
    assert!(pinned.iter().all(|p| p["folder"] == "INBOX"), "{pinned:?}");
    let moved_at = row
        .card
        .lines
        .iter()
        .position(|l| l.starts_with("Promo 2"))
        .unwrap();
    let moved_id = row.items[moved_at].clone();

    // Between halt and approve, another client files Promo 2 in Archive, and a sync sees it.
    // (Without the precondition, trash_email would now trash it from Archive.)
    std::fs::rename(
        maildir.join("cur/1700000002.M2P1.host:2,S"),
        maildir.join(".Archive/cur/1700000002.M2P1.host:2,S"),
    )
    .unwrap();
    email.sync().await.unwrap();

    g.respond(&id, Decision::Approve, None, &owner())
        .await
        .unwrap();
    let done = resume(&g, &id).await.unwrap();
    assert_eq!(done.reply, "Done: moved 2 emails to Trash.");

    let row = store.approval(&id).await.unwrap().unwrap();
    assert_eq!(row.execution, Execution::Executed);
    let result = row.result.unwrap();
    assert_eq!(result["trashed"], 2);
    assert_eq!(
        result["stale"],
        json!([{"id": moved_id, "status": "stale", "message": STALE}])
    );
    // On disk: two in Trash, Promo 2 untouched in Archive.
    assert_eq!(files_in(&maildir.join(".Trash/cur")).len(), 2);
    assert_eq!(
        files_in(&maildir.join(".Archive/cur")),
        vec!["1700000002.M2P1.host:2,S".to_string()]
    );
    assert!(files_in(&maildir.join("cur")).is_empty());
    // The audit says so, one entry per item.
    let executions: Vec<_> = store
        .audit(Some(&id))
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == AuditKind::Execution)
        .collect();
    assert_eq!(executions.len(), 3);
    let stale: Vec<_> = executions
        .iter()
        .filter(|e| e.result["message"] == STALE)
        .collect();
    assert_eq!(stale.len(), 1);
    assert_eq!(stale[0].item.as_deref(), Some(moved_id.as_str()));
    assert!(!stale[0].undo_available);
    assert_eq!(
        executions
            .iter()
            .filter(|e| e.result["status"] == "trashed")
            .count(),
        2
    );
}
