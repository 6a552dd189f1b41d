//! Plugin contract test (DESIGN §4, last rule): `trash_email` uses the reversible form. It moves
//! files into `.Trash/cur` byte-identical, deletes nothing, and `restore_email` puts them back.
//! Every test runs with the local store on SQLite (`sqlite::NAME`) and on PostgreSQL
//! (`postgres::NAME`, a fresh database; see `common/mod.rs`).

use crate::common;

use common::*;
use iris_core::plugin::Plugin;
use serde_json::json;

fn mailbox(dir: &std::path::Path) {
    make_maildir(dir);
    put(
        dir,
        "cur/1700000001.M1P1.host:2,S",
        message(
            "Dinner on Saturday?",
            "\"Anna Weber\" <anna@example.net>",
            "Sat, 28 Nov 2026 10:15:00 +0100",
            "a1@example.net",
            "",
        )
        .as_bytes(),
    );
    put(
        dir,
        "new/1700000002.M2P1.host",
        message(
            "20% off winter jackets",
            "Northwind <deals@northwind.example>",
            "Fri, 27 Nov 2026 08:00:00 +0000",
            "p1@northwind.example",
            "List-Unsubscribe: <mailto:u@northwind.example>\r\n",
        )
        .as_bytes(),
    );
    put(
        dir,
        ".Archive/cur/1700000003.M3P1.host:2,RS",
        message(
            "Old receipt",
            "Shop <billing@shop.example>",
            "Mon, 02 Nov 2026 09:00:00 +0000",
            "r1@shop.example",
            "",
        )
        .as_bytes(),
    );
    put(
        dir,
        "cur/1700000004.M4P1.host:2,",
        message(
            "Keep me",
            "Tom <tom@example.net>",
            "Thu, 26 Nov 2026 09:00:00 +0000",
            "k1@example.net",
            "",
        )
        .as_bytes(),
    );
    std::fs::write(dir.join(".Archive/maildirfolder"), b"").unwrap();
    make_maildir(&dir.join(".Archive"));
}

async fn trash_is_reversible(engine: Engine) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    mailbox(dir);
    let db = engine.open().await;
    let p = plugin(dir, &db.store);
    let report = p.sync().await.unwrap();
    assert_eq!(report.accounts[0].added, 4, "{report:?}");

    let before = snapshot(dir);
    let dinner = id_of(&p, "Dinner on Saturday?").await;
    let promo = id_of(&p, "20% off winter jackets").await;
    let archived = id_of(&p, "Old receipt").await;

    // Trash two: one from cur/, one unread from new/.
    let out = p
        .execute("trash_email", &json!({"ids": [dinner, promo]}), &ctx())
        .await
        .unwrap();
    assert_eq!(out.result["trashed"], 2, "{}", out.result);
    assert_eq!(out.result["undo"], "restore_email");
    assert_eq!(out.items.len(), 2);
    assert!(out.items.iter().all(|i| i.outcome["status"] == "trashed"));
    assert_eq!(out.items[0].item, dinner);

    let after = snapshot(dir);
    // Nothing deleted: the same number of messages, byte-identical, now in .Trash/cur.
    let msgs = |s: &std::collections::BTreeMap<String, Vec<u8>>| {
        s.iter()
            .filter(|(k, _)| k.contains("/cur/") || k.starts_with("cur/") || k.contains("new/"))
            .map(|(_, v)| v.clone())
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(msgs(&before), msgs(&after));
    // Every file is still there: the only new one is Maildir++'s empty `.Trash/maildirfolder`.
    assert_eq!(after.len(), before.len() + 1);
    assert_eq!(after[".Trash/maildirfolder"], b"");
    assert_eq!(
        after[".Trash/cur/1700000001.M1P1.host:2,S"],
        before["cur/1700000001.M1P1.host:2,S"]
    );
    assert_eq!(
        after[".Trash/cur/1700000002.M2P1.host:2,"],
        before["new/1700000002.M2P1.host"]
    );
    assert!(!dir.join("cur/1700000001.M1P1.host:2,S").exists());
    assert!(dir.join(".Trash/new").is_dir() && dir.join(".Trash/tmp").is_dir());

    // They left the listing; the others stay.
    let listed = hits(&search(&p, json!({})).await);
    let ids: Vec<&str> = listed.iter().map(|(i, _)| i.as_str()).collect();
    assert!(!ids.contains(&dinner.as_str()) && !ids.contains(&promo.as_str()));
    assert!(ids.contains(&archived.as_str()));
    assert_eq!(ids.len(), 2);

    // A sync does not bring them back (Trash is not synced).
    p.sync().await.unwrap();
    assert_eq!(hits(&search(&p, json!({})).await).len(), 2);

    // "Undo that": no ids restores the last batch to where each came from.
    let out = p
        .execute("restore_email", &json!({}), &ctx())
        .await
        .unwrap();
    assert_eq!(out.result["restored"], 2, "{}", out.result);
    assert_eq!(snapshot(dir), {
        let mut b = before.clone();
        // .Trash (created by trash) stays, with its marker file, empty of messages.
        b.insert(".Trash/maildirfolder".into(), Vec::new());
        b
    });
    let listed = hits(&search(&p, json!({})).await);
    assert_eq!(listed.len(), 4);
    assert!(
        listed.iter().any(|(i, _)| *i == dinner),
        "same id after restore"
    );

    // Nothing left to restore.
    let out = p
        .execute("restore_email", &json!({}), &ctx())
        .await
        .unwrap();
    assert_eq!(out.result["restored"], 0);

    // Trash from a subfolder and restore by id.
    let out = p
        .execute("trash_email", &json!({"ids": [archived]}), &ctx())
        .await
        .unwrap();
    assert_eq!(out.result["trashed"], 1);
    assert!(dir.join(".Trash/cur/1700000003.M3P1.host:2,RS").exists());
    let out = p
        .execute(
            "restore_email",
            &json!({"ids": [archived, "mnotrashed00"]}),
            &ctx(),
        )
        .await
        .unwrap();
    assert_eq!(out.result["restored"], 1, "{}", out.result);
    assert_eq!(out.items[1].outcome["status"], "not_in_trash");
    assert_eq!(
        std::fs::read(dir.join(".Archive/cur/1700000003.M3P1.host:2,RS")).unwrap(),
        before[".Archive/cur/1700000003.M3P1.host:2,RS"]
    );
    assert_eq!(hits(&search(&p, json!({})).await).len(), 4);
}

async fn a_missing_file_does_not_fail_the_batch(engine: Engine) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    mailbox(dir);
    let db = engine.open().await;
    let p = plugin(dir, &db.store);
    p.sync().await.unwrap();
    let keep = id_of(&p, "Keep me").await;
    let dinner = id_of(&p, "Dinner on Saturday?").await;
    // Another client moves the file away after the sync (the test's own rename, not the plugin's).
    std::fs::rename(
        dir.join("cur/1700000001.M1P1.host:2,S"),
        tmp.path().join("elsewhere"),
    )
    .unwrap();
    let out = p
        .execute("trash_email", &json!({"ids": [dinner, keep]}), &ctx())
        .await
        .unwrap();
    assert_eq!(out.result["trashed"], 1, "{}", out.result);
    assert_eq!(out.items[0].outcome["status"], "missing");
    assert_eq!(out.items[1].outcome["status"], "trashed");
    // The missing one is not offered for restore; the trashed one is.
    let out = p
        .execute("restore_email", &json!({}), &ctx())
        .await
        .unwrap();
    assert_eq!(out.result["restored"], 1, "{}", out.result);
    assert_eq!(out.items.len(), 1);
}

async fn restore_does_not_overwrite(engine: Engine) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    mailbox(dir);
    let db = engine.open().await;
    let p = plugin(dir, &db.store);
    p.sync().await.unwrap();
    let keep = id_of(&p, "Keep me").await;
    p.execute("trash_email", &json!({"ids": [keep]}), &ctx())
        .await
        .unwrap();
    // Another client put a file with the same name back meanwhile.
    put(dir, "cur/1700000004.M4P1.host:2,", b"someone else's copy");
    let err = p
        .execute("restore_email", &json!({}), &ctx())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not overwritten"), "{err}");
    assert_eq!(
        std::fs::read(dir.join("cur/1700000004.M4P1.host:2,")).unwrap(),
        b"someone else's copy"
    );
    assert!(dir.join(".Trash/cur/1700000004.M4P1.host:2,").exists());
}

on_both_engines!(
    trash_is_reversible,
    a_missing_file_does_not_fail_the_batch,
    restore_does_not_overwrite,
);
