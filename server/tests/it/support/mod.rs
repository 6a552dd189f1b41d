//! Test support. The scripted model on loopback ([`model`]), the real `iris` binary started on
//! port 0 against a temp SQLite database and a Maildir with a JSON client of it ([`process`]),
//! what a Maildir holds on disk ([`maildir`]), the in-process approvals service of the kernel
//! suites ([`kernel`]) with its counting plugin ([`files_plugin`]), and the in-process app
//! ([`app`]). [`telegram`] is the fake Telegram Bot API, [`push`] the push service, [`mcp`] the
//! MCP upstream and agent, [`authenticator`] a passkey authenticator, [`scripts`] the shared
//! model scripts. Everything a test names is re-exported here (`support::World`, …).

#![allow(dead_code)]

pub mod app;
pub mod authenticator;
pub mod calendars;
pub mod files_plugin;
pub mod kernel;
pub mod maildir;
pub mod mcp;
pub mod model;
pub mod process;
pub mod push;
pub mod scripts;
pub mod telegram;

// Two binaries include this module (`it` and `faults`), each using part of what it names.
#[allow(unused_imports)]
pub use {
    app::TestApp,
    kernel::{kernel_store, kernel_store_on, owner, seed_card, service},
    maildir::{contents, copy_messages, snapshot, trashed},
    model::{Fault, ModelServer},
    process::{
        no_redirects, post_pairing_form, session_cookie, wait_for_line, Client, Iris, World,
    },
    scripts::{CATEGORY_TRASH_SCRIPT, TRASH_SCRIPT},
};

use std::time::{Duration, Instant};

/// Polls `check` until it returns `Some`, up to 30 s (the server resumes runs in the
/// background; this waits on observable state, with a deadline, not a fixed sleep).
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
