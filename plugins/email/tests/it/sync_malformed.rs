//! A malformed message never stops a sync: what parses is stored. Each test runs with the local
//! store on SQLite (`sqlite::NAME`) and on PostgreSQL (`postgres::NAME`).

use crate::common;

use common::*;
use serde_json::json;

async fn malformed_messages_do_not_stop_sync(engine: Engine) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    make_maildir(dir);
    put(
        dir,
        "cur/1.good:2,S",
        message(
            "A good one",
            "a@example.net",
            "Sat, 28 Nov 2026 10:15:00 +0000",
            "good@x",
            "",
        )
        .as_bytes(),
    );
    // No Date, no Message-ID.
    put(
        dir,
        "cur/2.nodate:2,S",
        b"From: b@example.net\r\nSubject: Undated\r\n\r\nbody\r\n",
    );
    // Raw 8-bit Latin-1 in headers.
    put(dir, "cur/3.latin1:2,S", b"From: \xc9lodie <e@example.net>\r\nSubject: Caf\xe9 cr\xe8me\r\nDate: Sat, 28 Nov 2026 10:15:00 +0000\r\n\r\n\xe9t\xe9\r\n");
    // Broken MIME: a multipart with no boundary and a bad base64 part.
    put(dir, "cur/4.mime:2,S", b"From: c@example.net\r\nSubject: Broken MIME\r\nContent-Type: multipart/mixed\r\nMessage-ID: <m@x>\r\n\r\n--nope\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!!not base64\r\n");
    // Not a message at all, and an empty file.
    put(dir, "new/5.binary", &[0u8, 159, 146, 150, 255, 0, 1, 2]);
    put(dir, "new/6.empty", b"");
    // A nonsense date.
    put(dir, "cur/7.baddate:2,S", b"From: d@example.net\r\nSubject: Bad date\r\nDate: Thu, 45 Smarch 20x6 99:99:99 +9999\r\nMessage-ID: <d@x>\r\n\r\nbody\r\n");

    let db = engine.open().await;
    let p = plugin(dir, &db.store);
    let report = p.sync().await.unwrap();
    let acc = &report.accounts[0];
    assert_eq!(acc.added, 7, "{report:?}");
    assert_eq!(acc.messages, 7);
    assert!(acc.incomplete >= 5, "{report:?}");
    assert!(
        acc.unreadable.is_empty() && acc.errors.is_empty(),
        "{report:?}"
    );

    let all = hits(&search(&p, json!({"limit": 200})).await);
    assert_eq!(all.len(), 7);
    let subjects: Vec<&str> = all.iter().map(|(_, s)| s.as_str()).collect();
    for s in ["A good one", "Undated", "Broken MIME", "Bad date"] {
        assert!(subjects.contains(&s), "{s} in {subjects:?}");
    }
    // The good one is searchable by sender and still dated.
    let r = search(&p, json!({"query": "a@example.net"})).await;
    assert_eq!(r["count"], 1);
    assert!(r["results"][0]["date"]
        .as_str()
        .unwrap()
        .starts_with("2026-11-28"));

    // A second sync changes nothing and malformed rows keep their ids.
    let again = p.sync().await.unwrap();
    assert_eq!((again.accounts[0].added, again.accounts[0].removed), (0, 0));
    assert_eq!(hits(&search(&p, json!({"limit": 200})).await), all);
}

async fn sync_follows_flag_changes_moves_and_deletions(engine: Engine) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    make_maildir(dir);
    make_maildir(&dir.join(".Archive"));
    put(
        dir,
        "new/1.a",
        message(
            "First",
            "a@example.net",
            "Sat, 28 Nov 2026 10:15:00 +0000",
            "1@x",
            "",
        )
        .as_bytes(),
    );
    put(
        dir,
        "cur/2.b:2,",
        message(
            "Second",
            "a@example.net",
            "Sat, 28 Nov 2026 11:15:00 +0000",
            "2@x",
            "",
        )
        .as_bytes(),
    );
    put(
        dir,
        "cur/3.c:2,",
        message(
            "Third",
            "a@example.net",
            "Sat, 28 Nov 2026 12:15:00 +0000",
            "3@x",
            "",
        )
        .as_bytes(),
    );
    let db = engine.open().await;
    let p = plugin(dir, &db.store);
    p.sync().await.unwrap();
    let first = id_of(&p, "First").await;
    let second = id_of(&p, "Second").await;

    // A client reads the first (new/ → cur/ with flags), archives the second, deletes the third.
    std::fs::rename(dir.join("new/1.a"), dir.join("cur/1.a:2,S")).unwrap();
    std::fs::rename(dir.join("cur/2.b:2,"), dir.join(".Archive/cur/2.b:2,S")).unwrap();
    std::fs::rename(dir.join("cur/3.c:2,"), tmp.path().join("gone")).unwrap();
    let r = p.sync().await.unwrap();
    let acc = &r.accounts[0];
    assert_eq!((acc.added, acc.removed, acc.moved), (0, 1, 1), "{r:?}");
    assert_eq!(id_of(&p, "First").await, first, "id survives a flag change");
    assert_eq!(
        id_of(&p, "Second").await,
        second,
        "id survives a folder move"
    );
    let res = search(&p, json!({"query": "second"})).await;
    assert_eq!(res["results"][0]["folder"], "Archive");

    // The moved and re-flagged messages can still be trashed by id.
    let out = iris_core::plugin::Plugin::execute(
        &p,
        "trash_email",
        &json!({"ids": [first, second]}),
        &ctx(),
    )
    .await
    .unwrap();
    assert_eq!(out.result["trashed"], 2, "{}", out.result);
}

/// NUL characters (raw, or decoded from an encoded word or a quoted-printable body) cannot be
/// stored in PostgreSQL text: they are dropped on both engines, and the message is stored.
async fn nul_characters_do_not_stop_sync(engine: Engine) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    make_maildir(dir);
    put(
        dir,
        "cur/1.good:2,S",
        message(
            "A good one",
            "a@example.net",
            "Sat, 28 Nov 2026 10:15:00 +0000",
            "good@x",
            "",
        )
        .as_bytes(),
    );
    put(
        dir,
        "cur/2.nul:2,S",
        b"From: \"Nu\0ll\" <n\0l@example.net>\r\nTo: o\0@example.org\r\n\
          Subject: Zero\0byte =?utf-8?q?enc=00oded?=\r\nDate: Sat, 28 Nov 2026 09:00:00 +0000\r\n\
          Message-ID: <n\0ul@x>\r\nIn-Reply-To: <good\0@x>\r\nReferences: <good@x> <r\0@x>\r\n\
          Content-Type: text/plain\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n\
          bo\0dy =00qp\r\n",
    );
    let db = engine.open().await;
    let p = plugin(dir, &db.store);
    let report = p.sync().await.unwrap();
    let acc = &report.accounts[0];
    assert_eq!((acc.added, acc.messages), (2, 2), "{report:?}");
    assert!(
        acc.unreadable.is_empty() && acc.errors.is_empty(),
        "{report:?}"
    );

    let r = search(&p, json!({"query": "zerobyte"})).await;
    assert_eq!(r["count"], 1, "{r}");
    let found = &r["results"][0];
    let text = found.to_string();
    assert!(!text.contains("\\u0000"), "no NUL is stored: {found}");
    assert!(
        found["subject"].as_str().unwrap().starts_with("Zerobyte"),
        "{found}"
    );

    // A second sync changes nothing; the message can be trashed and restored.
    let again = p.sync().await.unwrap();
    assert_eq!((again.accounts[0].added, again.accounts[0].removed), (0, 0));
    let id = found["id"].as_str().unwrap().to_string();
    let out = iris_core::plugin::Plugin::execute(&p, "trash_email", &json!({"ids": [id]}), &ctx())
        .await
        .unwrap();
    assert_eq!(out.result["trashed"], 1, "{}", out.result);
    let out = iris_core::plugin::Plugin::execute(&p, "restore_email", &json!({}), &ctx())
        .await
        .unwrap();
    assert_eq!(out.result["restored"], 1, "{}", out.result);
    assert_eq!(search(&p, json!({"query": "zerobyte"})).await["count"], 1);
}

on_both_engines!(
    nul_characters_do_not_stop_sync,
    malformed_messages_do_not_stop_sync,
    sync_follows_flag_changes_moves_and_deletions,
);
