//! Real mail through IMAP: the notmuch corpus (`$IRIS_CORPORA/notmuch-default`, 53 messages)
//! loaded into Dovecot's Maildir and into a plain Maildir account, plus three odd messages
//! (encoded words, a very long subject, no Date). Both accounts sync into one store: counts,
//! thread counts and card lines agree, and the odd headers give sane card lines. Switched on by
//! `IRIS_CORPORA` like `tests/corpus.rs`; without it the test prints a skip line and passes.

use crate::common;
use crate::dovecot;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;
use dovecot::Dovecot;
use iris_core::plugin::Plugin;
use iris_email::{AccountConfig, AccountKind, EmailPlugin};
use serde_json::{json, Value};

fn odd_messages() -> Vec<(&'static str, Vec<u8>)> {
    let long = "A very long subject ".repeat(20);
    vec![
        (
            "odd1.host",
            b"From: =?UTF-8?Q?J=C3=BCrgen_M=C3=BCller?= <jm@example.de>\r\nTo: owner@example.org\r\nSubject: =?UTF-8?B?R3LDvMOfZSBhdXMgTcO8bmNoZW4=?=\r\nDate: Tue, 01 Dec 2009 10:00:00 +0100\r\nMessage-ID: <odd1@example.de>\r\n\r\nHallo.\r\n"
                .to_vec(),
        ),
        (
            "odd2.host",
            format!(
                "From: Long <long@example.net>\r\nTo: owner@example.org\r\nSubject: {long}\r\nDate: Tue, 01 Dec 2009 11:00:00 +0100\r\nMessage-ID: <odd2@example.net>\r\n\r\nBody.\r\n"
            )
            .into_bytes(),
        ),
        (
            "odd3.host",
            b"From: No Date <nodate@example.net>\r\nTo: owner@example.org\r\nSubject: Undated\r\nMessage-ID: <odd3@example.net>\r\n\r\nBody.\r\n"
                .to_vec(),
        ),
    ]
}

/// The card lines of every message of one account, sorted, and its number of threads.
async fn account_view(p: &EmailPlugin, results: &[Value], account: &str) -> (Vec<String>, usize) {
    let ids: Vec<&str> = results
        .iter()
        .filter(|r| r["account"] == account)
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let threads: std::collections::BTreeSet<&str> = results
        .iter()
        .filter(|r| r["account"] == account)
        .map(|r| r["thread"].as_str().unwrap())
        .collect();
    let d = p
        .describe("trash_email", &json!({ "ids": ids }), &ctx())
        .await
        .unwrap();
    let mut lines = d.lines;
    lines.sort();
    (lines, threads.len())
}

#[tokio::test]
async fn corpus_through_imap_matches_maildir() {
    let Some(root) = std::env::var_os("IRIS_CORPORA") else {
        println!("skip corpus_through_imap_matches_maildir: IRIS_CORPORA is not set");
        return;
    };
    let src = Path::new(&root).join("notmuch-default").join("cur");
    assert!(src.is_dir(), "IRIS_CORPORA has no notmuch-default/cur");

    let d = Dovecot::start();
    let plain = tempfile::tempdir().unwrap();
    make_maildir(plain.path());
    let mut n = 0;
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        let bytes = std::fs::read(e.path()).unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        let base = name.split(":2,").next().unwrap().to_string();
        d.deliver("INBOX", &base, &bytes);
        put(plain.path(), &format!("cur/{name}"), &bytes);
        n += 1;
    }
    assert_eq!(n, 53);
    for (name, bytes) in odd_messages() {
        d.deliver("INBOX", name, &bytes);
        put(plain.path(), &format!("new/{name}"), &bytes);
    }

    let db = memory_store().await;
    let accounts: Vec<AccountConfig> = vec![
        AccountConfig {
            name: "plain".into(),
            address: "owner@example.org".into(),
            kind: AccountKind::Maildir {
                path: plain.path().to_path_buf(),
            },
        },
        d.account("imap"),
    ];
    let p = EmailPlugin::new(accounts, &db).unwrap();
    let report = p.sync().await.unwrap();
    for a in &report.accounts {
        assert_eq!(a.added, 56, "{report:?}");
        assert!(a.unreadable.is_empty() && a.errors.is_empty(), "{report:?}");
    }
    assert_eq!(report.accounts[1].fetched, 56);

    let all = search(&p, json!({"limit": 200})).await;
    let results = all["results"].as_array().unwrap().clone();
    assert_eq!(results.len(), 112);
    let (plain_lines, plain_threads) = account_view(&p, &results, "plain").await;
    let (imap_lines, imap_threads) = account_view(&p, &results, "imap").await;
    assert_eq!(plain_threads, imap_threads, "thread counts agree");
    assert!(imap_threads > 5 && imap_threads < 56, "{imap_threads}");
    assert_eq!(plain_lines, imap_lines, "card lines agree");

    let by_subject: BTreeMap<String, &Value> = results
        .iter()
        .filter(|r| r["account"] == "imap")
        .map(|r| (r["subject"].as_str().unwrap().to_string(), r))
        .collect();
    assert!(
        by_subject.contains_key("Grüße aus München"),
        "encoded words decoded"
    );
    let juergen = by_subject["Grüße aus München"];
    assert!(
        juergen["from"].as_str().unwrap().contains("Jürgen Müller"),
        "{juergen}"
    );
    assert!(by_subject["Undated"]["date"].is_null());
    for line in &imap_lines {
        assert!(line.contains(" — "), "{line}");
        assert!(!line.contains("=?"), "undecoded encoded word: {line}");
        assert!(!line.trim().is_empty());
        assert!(line.chars().count() < 600, "{line}");
    }
}
