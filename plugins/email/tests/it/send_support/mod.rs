//! Fixtures of the `send_email` tests: two Maildir accounts with a few real people in them, and
//! an SMTP sink (`smtp_sink`). Included with `#[path]` by each send test file.
#![allow(dead_code, missing_docs)]

pub mod smtp_sink;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use iris_core::plugin::CallContext;
use iris_core::ports::ManualClock;
use iris_email::{AccountConfig, AccountKind, EmailPlugin, Outbox};
use iris_store::Store;

use crate::common::{make_maildir, put};

/// The instant the plugin clock stands at (Date of sent mail).
pub fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-30T09:30:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

/// Anna's dinner mail (personal account): From Anna, Cc Carol, part of a thread.
pub const DINNER: &str = "From: Anna Weber <anna.weber@example.net>\r\nTo: owner@example.org\r\nCc: Carol Jones <carol@example.net>\r\nSubject: Dinner on Saturday?\r\nDate: Fri, 27 Nov 2026 18:00:00 +0000\r\nMessage-ID: <dinner-2@example.net>\r\nIn-Reply-To: <dinner-1@example.org>\r\nReferences: <dinner-0@example.net> <dinner-1@example.org>\r\n\r\nAre you free on Saturday?\r\n";

/// A mail whose replies go elsewhere (Reply-To), already "Re:".
pub const CLUB: &str = "From: Book Club <club@books.example>\r\nReply-To: Mia Club <mia@books.example>\r\nTo: owner@example.org\r\nSubject: Re: Next book\r\nDate: Thu, 26 Nov 2026 12:00:00 +0000\r\nMessage-ID: <club-7@books.example>\r\n\r\nWhat shall we read next?\r\n";

/// The work account's mail: From the boss, To the owner and Dave.
pub const BUDGET: &str = "From: Bo Boss <boss@work.example>\r\nTo: owner@work.example, Dave Doe <dave@work.example>\r\nSubject: Budget\r\nDate: Wed, 25 Nov 2026 08:00:00 +0000\r\nMessage-ID: <budget-1@work.example>\r\n\r\nPlease send the numbers.\r\n";

/// Two Maildir accounts, "personal" (owner@example.org) then "work" (owner@work.example).
pub struct Mailboxes {
    pub root: tempfile::TempDir,
}

impl Mailboxes {
    pub fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let personal = root.path().join("personal");
        let work = root.path().join("work");
        make_maildir(&personal);
        make_maildir(&work);
        put(
            &personal,
            "cur/1700000001.dinner.host:2,S",
            DINNER.as_bytes(),
        );
        put(&personal, "cur/1700000002.club.host:2,S", CLUB.as_bytes());
        put(&work, "cur/1700000003.budget.host:2,S", BUDGET.as_bytes());
        Mailboxes { root }
    }

    pub fn personal(&self) -> PathBuf {
        self.root.path().join("personal")
    }

    pub fn work(&self) -> PathBuf {
        self.root.path().join("work")
    }

    pub fn accounts(&self) -> Vec<AccountConfig> {
        vec![
            AccountConfig {
                name: "personal".into(),
                address: "owner@example.org".into(),
                kind: AccountKind::Maildir {
                    path: self.personal(),
                },
            },
            AccountConfig {
                name: "work".into(),
                address: "owner@work.example".into(),
                kind: AccountKind::Maildir { path: self.work() },
            },
        ]
    }

    /// The plugin over both accounts, synced, with a pinned clock and no outbox.
    pub async fn plugin_without_outbox(&self, store: &Store) -> EmailPlugin {
        let p = EmailPlugin::new(self.accounts(), store)
            .unwrap()
            .with_clock(Arc::new(ManualClock::new(now())));
        p.sync().await.unwrap();
        p
    }

    /// The plugin with `outbox`.
    pub async fn plugin(&self, store: &Store, outbox: Outbox) -> EmailPlugin {
        self.plugin_without_outbox(store).await.with_outbox(outbox)
    }
}

/// A call context whose owner said `request`.
pub fn said(request: &str) -> CallContext {
    CallContext {
        run_id: "run-1".into(),
        conversation_id: "conv-1".into(),
        request: request.into(),
    }
}

/// The Sent folder of a Maildir account: files under `.Sent/cur` and `.Sent/new`.
pub fn sent_copies(maildir: &Path) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for sub in ["cur", "new"] {
        let d = maildir.join(".Sent").join(sub);
        if let Ok(rd) = std::fs::read_dir(&d) {
            for e in rd {
                out.push(std::fs::read(e.unwrap().path()).unwrap());
            }
        }
    }
    out
}
