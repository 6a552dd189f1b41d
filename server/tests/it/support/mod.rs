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
pub mod crash;
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
    maildir::{contents, copy_messages, moved, snapshot, trashed},
    model::{Fault, ModelServer},
    process::{
        no_redirects, post_pairing_form, session_cookie, wait_for_line, Client, Iris, World,
    },
    scripts::{CATEGORY_TRASH_SCRIPT, TRASH_SCRIPT},
};

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The `iris` binary cargo built beside this test binary (`target/debug/iris`; a test binary is
/// `target/debug/deps/NAME-HASH`), found when the test runs. Never `env!("CARGO_BIN_EXE_iris")`:
/// a path compiled in names the clone that built it, and the build cache serves clones at any
/// path (scripts/lib/commit_mtimes.py).
pub fn iris_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's own path");
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .expect("a test binary sits in target/debug/deps")
        .join("iris");
    assert!(
        bin.exists(),
        "{} is missing: cargo builds it for the integration tests",
        bin.display()
    );
    bin
}

/// The server package's folder (`server/`), found when the test runs (cargo runs a test from its
/// package's folder and names it in `CARGO_MANIFEST_DIR`); for the same reason as [`iris_bin`].
pub fn server_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::current_dir().expect("the working folder"))
}

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
