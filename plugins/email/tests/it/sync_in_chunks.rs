//! A sync larger than one write transaction (`SYNC_CHUNK` statements) is written in several and
//! still lands whole: every message added, every one moved, every one removed, and the threads
//! computed over all of them. Each test runs on SQLite and on PostgreSQL.

use crate::common;

use common::*;
use iris_email::SYNC_CHUNK;
use serde_json::json;

async fn a_sync_bigger_than_one_transaction_lands_whole(engine: Engine) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    make_maildir(dir);
    let n = SYNC_CHUNK * 2 + 17;
    for i in 0..n {
        // Every message after the first replies to the one before: one thread over chunks.
        let reply = if i == 0 {
            String::new()
        } else {
            format!("In-Reply-To: <m{}@x>\r\n", i - 1)
        };
        put(
            dir,
            &format!("cur/{i}.msg:2,S"),
            message(
                &format!("Message {i}"),
                "a@example.net",
                "Sat, 28 Nov 2026 10:15:00 +0000",
                &format!("m{i}@x"),
                &reply,
            )
            .as_bytes(),
        );
    }
    let db = engine.open().await;
    let p = plugin(dir, &db.store);
    let report = p.sync().await.unwrap();
    assert_eq!(report.accounts[0].added, n, "{report:?}");
    assert_eq!(report.accounts[0].messages, n as u64);
    let found = search(&p, json!({"limit": 200})).await;
    let threads: std::collections::BTreeSet<String> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["thread"].as_str().unwrap_or("none").to_owned())
        .collect();
    assert_eq!(
        threads.len(),
        1,
        "one thread across the chunks: {threads:?}"
    );
    assert!(!threads.contains("none"), "{threads:?}");

    // All of them go away: removed in several transactions too.
    for i in 0..n {
        std::fs::remove_file(dir.join(format!("cur/{i}.msg:2,S"))).unwrap();
    }
    let report = p.sync().await.unwrap();
    assert_eq!(report.accounts[0].removed, n, "{report:?}");
    assert_eq!(report.accounts[0].messages, 0);
}

on_both_engines!(a_sync_bigger_than_one_transaction_lands_whole,);
