//! Plugin contract test on IMAP (DESIGN §4, last rule; §5): `trash_email` moves messages into
//! Dovecot's Trash (UID MOVE), nothing is ever expunged, and `restore_email` puts the same
//! message back in the same folder with the same email id. Store on SQLite and PostgreSQL.

use crate::common;
use crate::dovecot;

use common::*;
use dovecot::Dovecot;
use iris_core::plugin::Plugin;
use iris_email::EmailPlugin;
use iris_store::Store;
use serde_json::json;

const DINNER: &str = "Dinner on Saturday?";
const PROMO: &str = "20% off winter jackets";
const KEEP: &str = "Keep me";
const RECEIPT: &str = "Old receipt";

fn mailbox(d: &Dovecot) {
    let m = |subject: &str, from: &str, id: &str| {
        message(subject, from, "Sat, 28 Nov 2026 10:15:00 +0100", id, "").into_bytes()
    };
    d.deliver(
        "INBOX",
        "1.host",
        &m(
            DINNER,
            "\"Anna Weber\" <anna@example.net>",
            "a1@example.net",
        ),
    );
    d.deliver(
        "INBOX",
        "2.host",
        &m(
            PROMO,
            "Northwind <deals@northwind.example>",
            "p1@northwind.example",
        ),
    );
    d.deliver(
        "INBOX",
        "3.host",
        &m(KEEP, "Tom <tom@example.net>", "k1@example.net"),
    );
    d.deliver(
        "Archive",
        "4.host",
        &m(RECEIPT, "Shop <billing@shop.example>", "r1@shop.example"),
    );
}

fn plugin(d: &Dovecot, store: &Store) -> EmailPlugin {
    EmailPlugin::new(vec![d.account("personal")], store).unwrap()
}

/// Messages per folder, and all of them (nothing expunged means the total never drops).
fn counts(d: &Dovecot) -> (usize, usize, usize) {
    (d.count("INBOX"), d.count("Archive"), d.count("Trash"))
}

fn holds(d: &Dovecot, folder: &str, message_id: &str) -> bool {
    let needle = format!("Message-ID: <{message_id}>");
    d.messages(folder)
        .iter()
        .any(|m| String::from_utf8_lossy(m).contains(&needle))
}

async fn imap_trash_is_reversible(engine: Engine) {
    let d = Dovecot::start();
    mailbox(&d);
    let db = engine.open().await;
    let p = plugin(&d, &db.store);
    let report = p.sync().await.unwrap();
    assert_eq!(report.accounts[0].added, 4, "{report:?}");
    let inbox_before = d.messages("INBOX");
    let archive_before = d.messages("Archive");

    let dinner = id_of(&p, DINNER).await;
    let promo = id_of(&p, PROMO).await;
    let receipt = id_of(&p, RECEIPT).await;

    let out = p
        .execute(
            "trash_email",
            &json!({"ids": [dinner, "m000000000000", promo]}),
            &ctx(),
        )
        .await
        .unwrap();
    assert_eq!(out.result["trashed"], 2, "{}", out.result);
    assert_eq!(out.items[0].item, dinner);
    assert_eq!(out.items[0].outcome["status"], "trashed");
    assert_eq!(out.items[1].item, "m000000000000");
    assert_eq!(out.items[1].outcome["status"], "missing");
    assert_eq!(out.items[2].outcome["status"], "trashed");

    // In Trash in between; nothing expunged.
    assert_eq!(counts(&d), (1, 1, 2), "{}", d.log());
    assert!(holds(&d, "Trash", "a1@example.net") && holds(&d, "Trash", "p1@northwind.example"));
    let listed = hits(&search(&p, json!({})).await);
    assert_eq!(listed.len(), 2);
    assert!(!listed.iter().any(|(i, _)| *i == dinner || *i == promo));
    // A sync does not bring them back (Trash is not synced).
    p.sync().await.unwrap();
    assert_eq!(hits(&search(&p, json!({})).await).len(), 2);

    // "Undo that": the same messages, same bytes, back in INBOX, with the same ids.
    let out = p
        .execute("restore_email", &json!({}), &ctx())
        .await
        .unwrap();
    assert_eq!(out.result["restored"], 2, "{}", out.result);
    assert_eq!(counts(&d), (3, 1, 0));
    assert_eq!(
        d.messages("INBOX"),
        inbox_before,
        "same bytes back in INBOX"
    );
    let listed = hits(&search(&p, json!({})).await);
    assert_eq!(listed.len(), 4);
    assert!(
        listed.iter().any(|(i, _)| *i == dinner),
        "same id after restore"
    );
    // The restored rows follow their new UIDs: a sync changes nothing.
    let report = p.sync().await.unwrap();
    let a = &report.accounts[0];
    assert_eq!((a.added, a.removed, a.moved), (0, 0, 0), "{report:?}");
    assert_eq!(id_of(&p, DINNER).await, dinner);

    // From a subfolder, restored by id; an id IRIS never trashed is named.
    let out = p
        .execute("trash_email", &json!({"ids": [receipt]}), &ctx())
        .await
        .unwrap();
    assert_eq!(out.result["trashed"], 1);
    assert_eq!(counts(&d), (3, 0, 1));
    let out = p
        .execute(
            "restore_email",
            &json!({"ids": [receipt, "mnotrashed00"]}),
            &ctx(),
        )
        .await
        .unwrap();
    assert_eq!(out.result["restored"], 1, "{}", out.result);
    assert_eq!(out.items[0].outcome["folder"], "Archive");
    assert_eq!(out.items[1].outcome["status"], "not_in_trash");
    assert_eq!(counts(&d), (3, 1, 0));
    assert_eq!(d.messages("Archive"), archive_before);
    assert_eq!(id_of(&p, RECEIPT).await, receipt);

    // Naming only emails that are not waiting in Trash brings nothing back: a failure that
    // says why for each, never a "done" that restored nothing.
    let refused = p
        .execute("restore_email", &json!({"ids": [receipt]}), &ctx())
        .await
        .unwrap_err();
    let said = refused.to_string();
    assert!(said.contains("no email was restored"), "{said}");
    assert!(said.contains(&receipt), "{said}");
    assert_eq!(counts(&d), (3, 1, 0), "nothing moved");
}

async fn a_vanished_uid_does_not_fail_the_batch(engine: Engine) {
    let d = Dovecot::start();
    mailbox(&d);
    let db = engine.open().await;
    let p = plugin(&d, &db.store);
    p.sync().await.unwrap();
    let dinner = id_of(&p, DINNER).await;
    let keep = id_of(&p, KEEP).await;
    // Another client removes the dinner message after the sync (moved out of the mailbox).
    let elsewhere = tempfile::tempdir().unwrap();
    for sub in ["cur", "new"] {
        for e in std::fs::read_dir(d.folder_dir("INBOX").join(sub))
            .unwrap()
            .flatten()
        {
            if String::from_utf8_lossy(&std::fs::read(e.path()).unwrap()).contains(DINNER) {
                std::fs::rename(e.path(), elsewhere.path().join("dinner")).unwrap();
            }
        }
    }
    let out = p
        .execute("trash_email", &json!({"ids": [dinner, keep]}), &ctx())
        .await
        .unwrap();
    assert_eq!(out.result["trashed"], 1, "{}", out.result);
    assert_eq!(out.items[0].outcome["status"], "missing");
    assert_eq!(out.items[1].outcome["status"], "trashed");
    assert_eq!(counts(&d), (1, 1, 1));
    let out = p
        .execute("restore_email", &json!({}), &ctx())
        .await
        .unwrap();
    assert_eq!(out.result["restored"], 1, "{}", out.result);
    assert_eq!(out.items.len(), 1);
    assert_eq!(counts(&d), (2, 1, 0));
}

async fn restore_finds_the_message_by_message_id(engine: Engine) {
    let d = Dovecot::start();
    mailbox(&d);
    let db = engine.open().await;
    let p = plugin(&d, &db.store);
    p.sync().await.unwrap();
    let keep = id_of(&p, KEEP).await;
    p.execute("trash_email", &json!({"ids": [keep]}), &ctx())
        .await
        .unwrap();
    // Another client moves everything out of Trash and back: the message gets a new UID, so
    // the one IRIS stored names nothing any more.
    let said = d.imap(&[
        "CREATE Shuffle",
        "SELECT Trash",
        "UID SEARCH ALL",
        "MOVE 1:* Shuffle",
        "SELECT Shuffle",
        "MOVE 1:* Trash",
        "SELECT Trash",
        "UID SEARCH ALL",
    ]);
    assert!(
        said.contains("* SEARCH 1\r\n") && said.contains("* SEARCH 2\r\n"),
        "the trashed message went from UID 1 to UID 2 in Trash:\n{said}"
    );
    let out = p
        .execute("restore_email", &json!({"ids": [keep]}), &ctx())
        .await
        .unwrap();
    assert_eq!(out.result["restored"], 1, "{}", out.result);
    assert_eq!(counts(&d), (3, 1, 0), "{}", d.log());
    assert!(holds(&d, "INBOX", "k1@example.net"));
    assert_eq!(id_of(&p, KEEP).await, keep);
}

on_both_engines!(
    imap_trash_is_reversible,
    a_vanished_uid_does_not_fail_the_batch,
    restore_finds_the_message_by_message_id,
);
