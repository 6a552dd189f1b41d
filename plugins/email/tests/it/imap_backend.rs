//! The IMAP backend against a real Dovecot on loopback (`tests/it/dovecot/`): folders with their
//! special-use roles, UID keys, batched reads that never set `\Seen`, the Sent copy, and a
//! session the server dropped being reopened.

use crate::common;
use crate::dovecot;

use std::process::Command;

use common::message;
use dovecot::{Dovecot, PASSWORD_ENV, USER};
use iris_email::backend::{FolderRole, MessageRef};
use iris_email::{AccountInfo, ImapBackend, ImapSettings, MailBackend};

fn backend(d: &Dovecot) -> ImapBackend {
    // Starting the Dovecot sets the password variable.
    ImapBackend::open(
        AccountInfo {
            name: "personal".into(),
            address: "owner@example.org".into(),
        },
        ImapSettings {
            host: "127.0.0.1".into(),
            port: d.port,
            user: USER.into(),
            password_env: PASSWORD_ENV.into(),
        },
    )
    .unwrap()
}

fn msg(n: usize) -> Vec<u8> {
    message(
        &format!("Message {n}"),
        "Anna <anna@example.net>",
        "Sat, 28 Nov 2026 10:15:00 +0100",
        &format!("m{n}@example.net"),
        "",
    )
    .into_bytes()
}

/// Every flag letter Dovecot wrote into the folder's file names.
fn flags(d: &Dovecot, folder: &str) -> String {
    let mut out = String::new();
    for sub in ["cur", "new"] {
        if let Ok(rd) = std::fs::read_dir(d.folder_dir(folder).join(sub)) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some((_, f)) = name.split_once(":2,") {
                    out.push_str(f);
                }
            }
        }
    }
    out
}

#[tokio::test]
async fn folders_keys_and_reads_without_seen() {
    let d = Dovecot::start();
    d.deliver("INBOX", "1.host", &msg(1));
    d.deliver("INBOX", "2.host", &msg(2));
    d.deliver("Archive", "3.host", &msg(3));
    let b = backend(&d);

    let folders = b.folders().await.unwrap();
    let role = |name: &str| folders.iter().find(|f| f.name == name).map(|f| f.role);
    assert_eq!(role("INBOX"), Some(FolderRole::Inbox), "{folders:?}");
    assert_eq!(role("Trash"), Some(FolderRole::Trash), "{folders:?}");
    assert_eq!(role("Sent"), Some(FolderRole::Sent), "{folders:?}");
    assert_eq!(role("Archive"), Some(FolderRole::Other), "{folders:?}");

    let listed = b.list("INBOX").await.unwrap();
    assert_eq!(listed.len(), 2);
    let status = b.folder_status("INBOX").await.unwrap().unwrap();
    assert_eq!(status.count, 2);
    for l in &listed {
        let (v, u) = l.key.split_once(':').expect("UIDVALIDITY:UID");
        assert_eq!(v.parse::<u64>().unwrap(), status.validity);
        assert!(u.parse::<u64>().unwrap() < status.next);
        assert!(l.labels.is_empty(), "IMAP reports no provider buckets");
    }

    let refs: Vec<MessageRef> = listed
        .iter()
        .map(|l| MessageRef {
            folder: "INBOX".into(),
            key: l.key.clone(),
            location: l.location.clone(),
        })
        .collect();
    let mut bodies: Vec<Vec<u8>> = b
        .read_batch(&refs)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.unwrap().unwrap())
        .collect();
    bodies.sort();
    assert_eq!(bodies, vec![msg(1), msg(2)]);
    assert_eq!(
        b.read(&refs[0]).await.unwrap().as_deref().map(<[u8]>::len),
        Some(bodies[0].len())
    );
    assert!(
        !flags(&d, "INBOX").contains('S'),
        "BODY.PEEK must not set \\Seen: {}",
        flags(&d, "INBOX")
    );

    // A key of another UIDVALIDITY, or a UID not there, names nothing.
    let gone = MessageRef {
        folder: "INBOX".into(),
        key: format!("{}:999", status.validity),
        location: String::new(),
    };
    assert_eq!(b.read(&gone).await.unwrap(), None);
    let other_validity = MessageRef {
        key: format!("{}:1", status.validity + 1),
        ..gone
    };
    assert_eq!(b.read(&other_validity).await.unwrap(), None);
}

#[tokio::test]
async fn reads_in_batches_across_many_messages() {
    let d = Dovecot::start();
    for n in 0..120 {
        d.deliver("INBOX", &format!("{n}.host"), &msg(n));
    }
    let b = backend(&d);
    let refs: Vec<MessageRef> = b
        .list("INBOX")
        .await
        .unwrap()
        .into_iter()
        .map(|l| MessageRef {
            folder: "INBOX".into(),
            key: l.key,
            location: l.location,
        })
        .collect();
    assert_eq!(refs.len(), 120);
    let read = b.read_batch(&refs).await.unwrap();
    let mut bodies: Vec<Vec<u8>> = read.into_iter().map(|r| r.unwrap().unwrap()).collect();
    bodies.sort();
    let mut want: Vec<Vec<u8>> = (0..120).map(msg).collect();
    want.sort();
    assert_eq!(bodies, want);
}

#[tokio::test]
async fn sent_copy_is_seen_and_listed() {
    let d = Dovecot::start();
    let b = backend(&d);
    let raw = msg(7);
    let appended = b.append_sent(&raw).await.unwrap();
    assert_eq!(appended.folder, "Sent");
    let listed = b.list("Sent").await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].key, appended.listed.key);
    let stored = b
        .read(&MessageRef {
            folder: "Sent".into(),
            key: appended.listed.key.clone(),
            location: String::new(),
        })
        .await
        .unwrap();
    assert_eq!(
        stored,
        Some(raw),
        "the same bytes (Dovecot keeps LF on disk, IMAP gives CRLF)"
    );
    assert_eq!(d.count("Sent"), 1);
    assert!(flags(&d, "Sent").contains('S'), "the Sent copy is \\Seen");
    assert_eq!(d.count("INBOX"), 0, "nothing else touched");
}

#[tokio::test]
async fn a_dropped_session_is_reopened() {
    let d = Dovecot::start();
    d.deliver("INBOX", "1.host", &msg(1));
    let b = backend(&d);
    assert_eq!(b.list("INBOX").await.unwrap().len(), 1);
    // The server drops every session of the user.
    let out = Command::new("doveadm")
        .arg("-c")
        .arg(d.root().join("dovecot.conf"))
        .args(["kick", USER])
        .output()
        .expect("doveadm");
    assert!(out.status.success(), "doveadm kick: {out:?}\n{}", d.log());
    // Wait until Dovecot logged the disconnect (poll, no fixed sleep).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !d.log().contains("Disconnected") && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(b.list("INBOX").await.unwrap().len(), 1, "{}", d.log());
}
