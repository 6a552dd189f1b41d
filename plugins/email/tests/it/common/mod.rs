//! Shared test helpers: a migrated database of either engine, Maildir builders, file snapshots.
//!
//! PostgreSQL: [`Engine::Postgres`] creates its own database `iris_test_<uuid>` through the admin
//! url in `IRIS_TEST_POSTGRES_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`) and
//! drops it when the test ends (as `crates/store/tests/it/store.rs` does). An unreachable server
//! fails the test with how to start it; it never passes silently.
#![allow(dead_code, missing_docs)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use iris_core::plugin::{CallContext, Plugin};
use iris_email::{AccountConfig, AccountKind, EmailPlugin};
use iris_store::testing::{fresh_postgres_database, DropDatabase};
use iris_store::Store;
use serde_json::Value;

/// Which engine a test body runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

/// A fresh database of one engine with every migration applied, removed when dropped.
pub struct TestDb {
    /// The store on it.
    pub store: Store,
    /// Drops the PostgreSQL database (declared last, so it is dropped after the store).
    _cleanup: Option<DropDatabase>,
}

impl Engine {
    /// A fresh database: SQLite in memory, or a new PostgreSQL database.
    pub async fn open(self) -> TestDb {
        match self {
            Engine::Sqlite => TestDb {
                store: memory_store().await,
                _cleanup: None,
            },
            Engine::Postgres => {
                let (url, guard) = fresh_postgres_database().await;
                let store = Store::connect(&url)
                    .await
                    .unwrap_or_else(|e| panic!("connecting to the test database: {e}"));
                assert_eq!(store.engine(), iris_store::Engine::Postgres);
                TestDb {
                    store,
                    _cleanup: Some(guard),
                }
            }
        }
    }
}

/// A fresh in-memory SQLite database with every migration of `migrations/sqlite` applied.
pub async fn memory_store() -> Store {
    Store::connect("sqlite::memory:")
        .await
        .expect("migrated in-memory store")
}

/// Defines `mod sqlite` and `mod postgres`, each with one `#[tokio::test]` per listed body
/// (`async fn NAME(engine: Engine)` in the test file), run on that engine.
#[macro_export]
macro_rules! on_both_engines {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name($crate::common::Engine::Sqlite).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name($crate::common::Engine::Postgres).await;
                }
            )*
        }
    };
}

/// Creates `cur/ new/ tmp/` under `dir`.
pub fn make_maildir(dir: &Path) {
    for sub in ["cur", "new", "tmp"] {
        fs::create_dir_all(dir.join(sub)).unwrap();
    }
}

/// Writes one message file.
pub fn put(dir: &Path, rel: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(&p, bytes).unwrap();
    p
}

/// A plain RFC 5322 message.
pub fn message(subject: &str, from: &str, date: &str, message_id: &str, extra: &str) -> String {
    format!(
        "From: {from}\r\nTo: owner@example.org\r\nSubject: {subject}\r\nDate: {date}\r\nMessage-ID: <{message_id}>\r\n{extra}\r\nHello.\r\n"
    )
}

/// Every file under `dir`, relative path → bytes.
pub fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, d: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The plugin over one Maildir account named "personal".
pub fn plugin(dir: &Path, store: &Store) -> EmailPlugin {
    EmailPlugin::new(
        vec![AccountConfig {
            name: "personal".into(),
            address: "owner@example.org".into(),
            kind: AccountKind::Maildir {
                path: dir.to_path_buf(),
            },
        }],
        store,
    )
    .unwrap()
}

pub fn ctx() -> CallContext {
    // One conversation: "undo that" (restore_email without ids) undoes its last action.
    CallContext {
        conversation_id: "conversation-1".into(),
        ..CallContext::default()
    }
}

/// Runs `search_inbox` and returns its result object.
pub async fn search(p: &EmailPlugin, args: Value) -> Value {
    p.execute("search_inbox", &args, &ctx())
        .await
        .unwrap()
        .result
}

/// (id, subject) of every search result.
pub fn hits(result: &Value) -> Vec<(String, String)> {
    result["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_string(),
                r["subject"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The id of the one message whose subject is exactly `subject`.
pub async fn id_of(p: &EmailPlugin, subject: &str) -> String {
    let r = search(p, serde_json::json!({"query": subject, "limit": 200})).await;
    let found: Vec<(String, String)> = hits(&r).into_iter().filter(|(_, s)| s == subject).collect();
    assert_eq!(
        found.len(),
        1,
        "exactly one message titled {subject:?}: {r}"
    );
    found[0].0.clone()
}
