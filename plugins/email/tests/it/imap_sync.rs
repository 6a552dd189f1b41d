//! Incremental sync on IMAP against a real Dovecot, store on SQLite and PostgreSQL:
//! an unchanged folder (UIDVALIDITY, UIDNEXT, MESSAGES) is not listed again, one new message is
//! the only one fetched, a changed UIDVALIDITY resyncs the folder, a malformed message never
//! stops a sync, and a Maildir account and an IMAP account share one store with distinct ids.

use crate::common;
use crate::dovecot;

use common::*;
use dovecot::Dovecot;
use iris_core::plugin::Plugin;
use iris_email::{AccountConfig, AccountKind, EmailPlugin};
use serde_json::json;

fn msg(subject: &str, id: &str) -> Vec<u8> {
    message(
        subject,
        "Anna <anna@example.net>",
        "Sat, 28 Nov 2026 10:15:00 +0100",
        id,
        "",
    )
    .into_bytes()
}

async fn unchanged_folders_are_not_listed_again(engine: Engine) {
    let d = Dovecot::start();
    d.deliver("INBOX", "1.host", &msg("One", "1@example.net"));
    d.deliver("INBOX", "2.host", &msg("Two", "2@example.net"));
    d.deliver("Archive", "3.host", &msg("Three", "3@example.net"));
    // Not a message at all: stored anyway (incomplete), never stops the sync.
    d.deliver("INBOX", "4.host", b"\x00\xff garbage without headers");
    let db = engine.open().await;
    let p = EmailPlugin::new(vec![d.account("work")], &db.store).unwrap();

    let r = p.sync().await.unwrap();
    let a = &r.accounts[0];
    assert_eq!((a.added, a.fetched, a.folders_skipped), (4, 4, 0), "{r:?}");
    assert_eq!(a.incomplete, 1, "{r:?}");
    assert!(a.errors.is_empty() && a.unreadable.is_empty(), "{r:?}");

    // Nothing changed: INBOX, Archive and Sent are skipped, nothing fetched.
    let r = p.sync().await.unwrap();
    let a = &r.accounts[0];
    assert_eq!(
        (a.added, a.removed, a.fetched, a.folders_skipped),
        (0, 0, 0, 3),
        "{r:?}"
    );
    assert_eq!(a.messages, 4);

    // One new message in INBOX: only it is fetched; the other folders stay skipped.
    d.deliver("INBOX", "5.host", &msg("Five", "5@example.net"));
    let r = p.sync().await.unwrap();
    let a = &r.accounts[0];
    assert_eq!(
        (a.added, a.removed, a.fetched, a.folders_skipped),
        (1, 0, 1, 2),
        "{r:?}"
    );
    id_of(&p, "Five").await;

    // A message removed by another client (count drops, UIDNEXT stays) is noticed.
    let three = std::fs::read_dir(d.folder_dir("Archive").join("cur"))
        .unwrap()
        .chain(std::fs::read_dir(d.folder_dir("Archive").join("new")).unwrap())
        .flatten()
        .next()
        .unwrap()
        .path();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::rename(three, elsewhere.path().join("three")).unwrap();
    let r = p.sync().await.unwrap();
    let a = &r.accounts[0];
    assert_eq!(
        (a.added, a.removed, a.fetched, a.folders_skipped),
        (0, 1, 0, 2),
        "{r:?}"
    );

    // IRIS's own trash changes INBOX: the next sync lists it and finds nothing to do.
    let two = id_of(&p, "Two").await;
    p.execute("trash_email", &json!({"ids": [two]}), &ctx())
        .await
        .unwrap();
    let r = p.sync().await.unwrap();
    let a = &r.accounts[0];
    assert_eq!(
        (a.added, a.removed, a.fetched, a.folders_skipped),
        (0, 0, 0, 2),
        "{r:?}"
    );
    let r = p.sync().await.unwrap();
    assert_eq!(r.accounts[0].folders_skipped, 3, "{r:?}");
    assert_eq!(r.accounts[0].messages, 3);
}

async fn a_new_uidvalidity_resyncs_the_folder(engine: Engine) {
    let d = Dovecot::start();
    d.deliver("INBOX", "1.host", &msg("Inbox one", "i1@example.net"));
    d.deliver("Lists", "2.host", &msg("List one", "l1@example.net"));
    d.deliver("Lists", "3.host", &msg("List two", "l2@example.net"));
    let db = engine.open().await;
    let p = EmailPlugin::new(vec![d.account("work")], &db.store).unwrap();
    p.sync().await.unwrap();
    let before = id_of(&p, "List one").await;
    let inbox = id_of(&p, "Inbox one").await;

    // The folder is deleted and made again (as a server rebuild would): new UIDVALIDITY.
    d.imap(&["DELETE Lists", "CREATE Lists"]);
    d.deliver("Lists", "2b.host", &msg("List one", "l1@example.net"));
    d.deliver("Lists", "3b.host", &msg("List two", "l2@example.net"));

    let r = p.sync().await.unwrap();
    let a = &r.accounts[0];
    assert_eq!(a.folders_reset, 1, "{r:?}\n{}", d.log());
    assert_eq!((a.added, a.removed, a.fetched), (2, 2, 2), "{r:?}");
    assert_eq!(a.messages, 3);
    // The folder's ids changed (they derive from the key); other folders keep theirs.
    assert_ne!(id_of(&p, "List one").await, before);
    assert_eq!(id_of(&p, "Inbox one").await, inbox);
    // And then it is stable again.
    let r = p.sync().await.unwrap();
    assert_eq!(r.accounts[0].folders_skipped, 3, "{r:?}");
}

async fn maildir_and_imap_accounts_share_one_store(engine: Engine) {
    let d = Dovecot::start();
    d.deliver(
        "INBOX",
        "1.host",
        &msg("Shared subject", "same@example.net"),
    );
    let home = tempfile::tempdir().unwrap();
    make_maildir(home.path());
    put(
        home.path(),
        "cur/1700000001.M1P1.host:2,S",
        &msg("Shared subject", "same@example.net"),
    );
    let db = engine.open().await;
    let accounts: Vec<AccountConfig> = vec![
        AccountConfig {
            name: "home".into(),
            address: "me@home.example".into(),
            kind: AccountKind::Maildir {
                path: home.path().to_path_buf(),
            },
        },
        d.account("work"),
    ];
    let p = EmailPlugin::new(accounts, &db.store).unwrap();
    let names: Vec<String> = p.accounts().into_iter().map(|a| a.name).collect();
    assert_eq!(names, ["home", "work"], "configuration order");
    let r = p.sync().await.unwrap();
    assert_eq!(r.accounts.len(), 2);
    assert_eq!(
        (r.accounts[0].account.as_str(), r.accounts[0].added),
        ("home", 1)
    );
    assert_eq!(
        (r.accounts[1].account.as_str(), r.accounts[1].added),
        ("work", 1)
    );

    let found = hits(&search(&p, json!({"query": "Shared subject"})).await);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_ne!(found[0].0, found[1].0, "ids are distinct across accounts");

    // Maildir is listed every time; IMAP skips its unchanged folders.
    let r = p.sync().await.unwrap();
    assert_eq!(r.accounts[0].folders_skipped, 0, "{r:?}");
    assert!(r.accounts[1].folders_skipped > 0, "{r:?}");
    assert_eq!(r.accounts[0].added + r.accounts[1].added, 0);
}

on_both_engines!(
    unchanged_folders_are_not_listed_again,
    a_new_uidvalidity_resyncs_the_folder,
    maildir_and_imap_accounts_share_one_store,
);
