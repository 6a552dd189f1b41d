//! Tests on real mail nobody here wrote: the notmuch corpus (53 messages from the notmuch
//! mailing list, 2009). Switched on by `IRIS_CORPORA` (e.g. `IRIS_CORPORA=/work/shared/corpora`);
//! without it each test prints a skip line and passes, so a fresh clone's tests pass.

use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use iris_core::plugin::Plugin;
use serde_json::json;

/// Copies the corpus into a temp dir as a Maildir (the stored copy has only `cur/`).
fn corpus(test: &str) -> Option<(tempfile::TempDir, PathBuf)> {
    let Some(root) = std::env::var_os("IRIS_CORPORA") else {
        println!("skip {test}: IRIS_CORPORA is not set");
        return None;
    };
    let src = Path::new(&root).join("notmuch-default");
    assert!(
        src.join("cur").is_dir(),
        "IRIS_CORPORA has no notmuch-default/cur"
    );
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("Maildir");
    make_maildir(&dir);
    for e in std::fs::read_dir(src.join("cur")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join("cur").join(e.file_name())).unwrap();
    }
    Some((tmp, dir))
}

#[tokio::test]
async fn corpus_all_messages_sync_and_thread() {
    let Some((_tmp, dir)) = corpus("corpus_all_messages_sync_and_thread") else {
        return;
    };
    let p = plugin(&dir, &memory_store().await);
    let report = p.sync().await.unwrap();
    let acc = &report.accounts[0];
    assert_eq!(acc.added, 53, "{report:?}");
    assert_eq!(acc.messages, 53);
    assert!(
        acc.unreadable.is_empty() && acc.errors.is_empty(),
        "{report:?}"
    );

    let all = search(&p, json!({"limit": 200})).await;
    assert_eq!(all["count"], 53);
    assert_eq!(all["total"], 53);
    let results = all["results"].as_array().unwrap();
    let ids: std::collections::BTreeSet<&str> =
        results.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 53, "ids are distinct");

    // Threads from In-Reply-To: the "Working with Maildir storage?" thread has its root and
    // replies in one thread.
    let t = search(
        &p,
        json!({"query": "Working with Maildir storage", "limit": 200}),
    )
    .await;
    let threads: std::collections::BTreeSet<&str> = t["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["thread"].as_str().unwrap())
        .collect();
    assert!(t["count"].as_u64().unwrap() >= 5, "{t}");
    assert_eq!(threads.len(), 1, "{t}");
    // Fewer threads than messages overall.
    let all_threads: std::collections::BTreeSet<&str> = results
        .iter()
        .map(|r| r["thread"].as_str().unwrap())
        .collect();
    assert!(
        all_threads.len() < 53 && all_threads.len() > 5,
        "{}",
        all_threads.len()
    );
}

#[tokio::test]
async fn corpus_search_finds_a_known_subject() {
    let Some((_tmp, dir)) = corpus("corpus_search_finds_a_known_subject") else {
        return;
    };
    let p = plugin(&dir, &memory_store().await);
    p.sync().await.unwrap();
    let r = search(&p, json!({"query": "close MESSAGE file"})).await;
    assert!(r["count"].as_u64().unwrap() >= 1, "{r}");
    assert!(hits(&r)
        .iter()
        .all(|(_, s)| s.to_lowercase().contains("close message file")));
    let r = search(&p, json!({"query": "dottedmag"})).await;
    assert!(r["count"].as_u64().unwrap() >= 1, "sender search: {r}");
}

#[tokio::test]
async fn corpus_trash_and_restore_are_byte_identical() {
    let Some((_tmp, dir)) = corpus("corpus_trash_and_restore_are_byte_identical") else {
        return;
    };
    let p = plugin(&dir, &memory_store().await);
    p.sync().await.unwrap();
    let before = snapshot(&dir);
    let r = search(&p, json!({"query": "archive", "limit": 200})).await;
    let ids: Vec<String> = hits(&r).into_iter().map(|(i, _)| i).collect();
    assert!(ids.len() >= 3, "{r}");

    let d = p
        .describe("trash_email", &json!({"ids": ids}), &ctx())
        .await
        .unwrap();
    assert_eq!(d.items, ids);
    assert!(
        d.lines
            .iter()
            .all(|l| l.contains(" — ") && l.contains("2009")),
        "{:?}",
        d.lines
    );

    let out = p
        .execute("trash_email", &json!({"ids": ids}), &ctx())
        .await
        .unwrap();
    assert_eq!(out.result["trashed"], ids.len(), "{}", out.result);
    let mid = snapshot(&dir);
    let count = |s: &std::collections::BTreeMap<String, Vec<u8>>| {
        s.keys().filter(|k| k.contains("cur/")).count()
    };
    assert_eq!(count(&mid), 53, "nothing deleted");
    let trashed: Vec<&Vec<u8>> = mid
        .iter()
        .filter(|(k, _)| k.starts_with(".Trash/cur/"))
        .map(|(_, v)| v)
        .collect();
    assert_eq!(trashed.len(), ids.len());
    for t in trashed {
        assert!(before.values().any(|b| b == t), "byte-identical in Trash");
    }
    assert_eq!(
        search(&p, json!({"limit": 200})).await["count"],
        53 - ids.len()
    );

    let out = p
        .execute("restore_email", &json!({}), &ctx())
        .await
        .unwrap();
    assert_eq!(out.result["restored"], ids.len(), "{}", out.result);
    let mut after = snapshot(&dir);
    after.remove(".Trash/maildirfolder");
    assert_eq!(after, before, "every file back, byte-identical, same name");
    assert_eq!(search(&p, json!({"limit": 200})).await["count"], 53);
}

/// Card lines for real mail with odd headers: an encoded-word subject and an
/// encoded-word sender name decode to readable text; categories and paths are set for every
/// message (the list mail files under `newsletters/<list>`).
#[tokio::test]
async fn corpus_card_lines_for_odd_headers() {
    let Some((_tmp, dir)) = corpus("corpus_card_lines_for_odd_headers") else {
        return;
    };
    let p = plugin(&dir, &memory_store().await);
    p.sync().await.unwrap();
    let id = id_of(&p, "Essai accentué").await;
    let d = p
        .describe("trash_email", &json!({"ids": [id]}), &ctx())
        .await
        .unwrap();
    assert_eq!(
        d.lines,
        vec!["Essai accentué — Olivier Berger, 16 Dec 2010".to_string()]
    );
    let r = search(&p, json!({"query": "Boulogne", "limit": 5})).await;
    assert!(
        r["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["from"].as_str().unwrap().starts_with("François Boulogne")),
        "{r}"
    );
    let all = search(&p, json!({"limit": 200})).await;
    for m in all["results"].as_array().unwrap() {
        let path = m["category_path"].as_str().unwrap();
        assert!(!path.is_empty() && !path.ends_with('/'), "{m}");
    }
    // The list's own name selects its path; the window is counted from a clock in 2011.
    let then = chrono::DateTime::parse_from_rfc3339("2011-01-01T00:00:00Z").unwrap();
    let p = p.with_clock(std::sync::Arc::new(iris_core::ports::ManualClock::new(
        then.with_timezone(&chrono::Utc),
    )));
    let with_list_id = std::fs::read_dir(dir.join("cur"))
        .unwrap()
        .filter(|e| {
            let bytes = std::fs::read(e.as_ref().unwrap().path()).unwrap();
            String::from_utf8_lossy(&bytes)
                .lines()
                .take_while(|l| !l.is_empty())
                .any(|l| l.to_ascii_lowercase().starts_with("list-id:"))
        })
        .count();
    assert!(with_list_id > 0);
    let lists = p
        .execute(
            "list_by_category",
            &json!({"category": "notmuch", "since_days": 3650, "limit": 200}),
            &ctx(),
        )
        .await
        .unwrap();
    assert_eq!(lists.result["categories"], json!(["newsletters/notmuch"]));
    assert_eq!(lists.result["total"], with_list_id);
}
