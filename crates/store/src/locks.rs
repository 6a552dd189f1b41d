//! Named locks that hold across every server on the database (DESIGN §9 "per-process locks
//! become advisory locks"): on PostgreSQL a session-level advisory lock on a connection the
//! guard holds (a server that dies drops its connection, and with it the lock); on SQLite, one
//! server per file, an in-process lock.

use std::collections::HashMap;
use std::sync::Arc;

use iris_core::plugin::{Hold, ToolError};
use iris_core::ports::StoreError;
use sqlx::pool::PoolConnection;
use sqlx::Any;

use crate::rows::backend;
use crate::{Engine, Store};

/// A lock's name. The plugin or surface that takes a lock owns its name and says what it
/// protects (the email plugin its mail changes, Telegram its poller and each chat's edits; the
/// calendar and files plugins will name theirs the same way); the store knows no names. The key
/// is `iris:{owner}-{what}`: `NamedLock::new("mail", "changes")` is `iris:mail-changes`, the
/// same key on every server of one database and across versions.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NamedLock {
    key: String,
}

impl NamedLock {
    /// The lock `what` of `owner` (a plugin's or a surface's name: `mail`, `telegram`).
    pub fn new(owner: &str, what: &str) -> NamedLock {
        NamedLock {
            key: format!("iris:{owner}-{what}"),
        }
    }

    fn key(&self) -> String {
        self.key.clone()
    }
}

/// In-process locks by name (SQLite).
#[derive(Debug, Default)]
pub(crate) struct LocalLocks {
    named: std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl LocalLocks {
    fn get(&self, key: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut named = self
            .named
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        named.entry(key.to_string()).or_default().clone()
    }
}

/// A held lock; released by [`LockGuard::release`], or when dropped (on PostgreSQL then in the
/// background; a server that dies drops its connection, which releases it).
#[derive(Debug)]
pub struct LockGuard {
    held: Held,
}

#[derive(Debug)]
enum Held {
    Local(#[allow(dead_code)] tokio::sync::OwnedMutexGuard<()>),
    Advisory {
        conn: Option<PoolConnection<Any>>,
        key: String,
    },
}

impl LockGuard {
    /// Releases the lock (on PostgreSQL, unlocks and gives the connection back to the pool).
    pub async fn release(mut self) {
        if let Held::Advisory { conn, key } = &mut self.held {
            if let Some(mut c) = conn.take() {
                let unlocked = sqlx::query("SELECT pg_advisory_unlock(hashtext($1))")
                    .bind(key.as_str())
                    .execute(&mut *c)
                    .await;
                if unlocked.is_err() {
                    c.close_on_drop();
                }
            }
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let Held::Advisory { conn, key } = &mut self.held else {
            return;
        };
        let Some(mut c) = conn.take() else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let key = std::mem::take(key);
                runtime.spawn(async move {
                    let unlocked = sqlx::query("SELECT pg_advisory_unlock(hashtext($1))")
                        .bind(key.as_str())
                        .execute(&mut *c)
                        .await;
                    if unlocked.is_err() {
                        c.close_on_drop();
                    }
                });
            }
            // No runtime to unlock on: close the connection, which ends its session's locks.
            Err(_) => c.close_on_drop(),
        }
    }
}

/// A connection whose advisory lock request is in flight: closed, not pooled, if dropped before
/// the request's answer was read.
struct PendingLock(Option<PoolConnection<Any>>);

impl Drop for PendingLock {
    fn drop(&mut self) {
        if let Some(conn) = self.0.as_mut() {
            conn.close_on_drop();
        }
    }
}

impl Store {
    /// Waits for `lock` and holds it until the guard is released or dropped. Safe to cancel:
    /// a wait given up takes nothing and leaves nothing behind (on PostgreSQL it polls with a
    /// try-lock, 10 ms doubling to 200 ms, on a connection closed if the wait is dropped).
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the database cannot be reached.
    pub async fn lock(&self, lock: &NamedLock) -> Result<LockGuard, StoreError> {
        self.take_lock(lock, true)
            .await
            .map(|g| g.expect("a waiting lock is always taken"))
    }

    /// Takes `lock` when it is free; `Ok(None)` when someone (any server) holds it.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the database cannot be reached.
    pub async fn try_lock(&self, lock: &NamedLock) -> Result<Option<LockGuard>, StoreError> {
        self.take_lock(lock, false).await
    }

    /// Takes `lock` if it comes free within `wait` (tried every 20 ms, backing off to 500 ms; a
    /// pending wait is never left behind on a pooled connection); `Ok(None)` when it stayed
    /// taken that long.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the database cannot be reached.
    pub async fn lock_within(
        &self,
        lock: &NamedLock,
        wait: std::time::Duration,
    ) -> Result<Option<LockGuard>, StoreError> {
        let deadline = tokio::time::Instant::now() + wait;
        let mut pause = std::time::Duration::from_millis(20);
        loop {
            if let Some(guard) = self.try_lock(lock).await? {
                return Ok(Some(guard));
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(pause.min(deadline - now)).await;
            pause = (pause * 2).min(std::time::Duration::from_millis(500));
        }
    }

    /// A plugin's `Plugin::hold` for `tool` on its `lock` (docs/liveness.md "busy locks"):
    /// [`Store::lock_within`] `wait`, as a [`Hold`] the core passes back to `execute_held`.
    /// `busy` says what was busy, for the owner ("the mailbox was busy with another change");
    /// `lock_name` names the lock in a failure ("the mailbox lock").
    ///
    /// # Errors
    /// [`ToolError::Busy`] "`busy` for N s" when it stayed taken (nothing was started);
    /// [`ToolError::Failed`] "taking `lock_name`: …; nothing was changed" when the database
    /// cannot be reached.
    pub async fn hold_for(
        &self,
        lock: &NamedLock,
        tool: &str,
        wait: std::time::Duration,
        busy: &str,
        lock_name: &str,
    ) -> Result<Hold, ToolError> {
        match self.lock_within(lock, wait).await {
            Ok(Some(guard)) => Ok(Hold::new(guard)),
            Ok(None) => Err(ToolError::Busy {
                tool: tool.to_string(),
                reason: format!("{busy} for {} s", wait.as_secs()),
            }),
            Err(e) => Err(ToolError::Failed {
                tool: tool.to_string(),
                reason: format!("taking {lock_name}: {e}; nothing was changed"),
            }),
        }
    }

    async fn take_lock(
        &self,
        lock: &NamedLock,
        wait: bool,
    ) -> Result<Option<LockGuard>, StoreError> {
        let key = lock.key();
        match self.engine {
            Engine::Sqlite => {
                let mutex = self.locks.get(&key);
                let guard = if wait {
                    mutex.lock_owned().await
                } else {
                    match mutex.try_lock_owned() {
                        Ok(g) => g,
                        Err(_) => return Ok(None),
                    }
                };
                Ok(Some(LockGuard {
                    held: Held::Local(guard),
                }))
            }
            Engine::Postgres => {
                let conn = self
                    .pool
                    .acquire()
                    .await
                    .map_err(backend("taking a connection for a lock"))?;
                // Until the lock is ours, a caller that gives up (a deadline, a dropped
                // request) closes this connection instead of handing it back to the pool: an
                // abandoned lock request must never complete later on a pooled connection that
                // then holds the lock, idle, for every server (docs/liveness.md). And the wait
                // is a try-lock with back-off, never a pending `pg_advisory_lock`.
                let mut pending = PendingLock(Some(conn));
                let mut pause = std::time::Duration::from_millis(10);
                loop {
                    let taken: bool =
                        sqlx::query_scalar("SELECT pg_try_advisory_lock(hashtext($1))")
                            .bind(key.as_str())
                            .fetch_one(&mut **pending.0.as_mut().expect("held until taken"))
                            .await
                            .map_err(backend("trying an advisory lock"))?;
                    if taken {
                        break;
                    }
                    if !wait {
                        // Not ours: the connection goes back to the pool as it is.
                        pending.0.take();
                        return Ok(None);
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(std::time::Duration::from_millis(200));
                }
                let conn = pending.0.take().expect("held until taken");
                Ok(Some(LockGuard {
                    held: Held::Advisory {
                        conn: Some(conn),
                        key,
                    },
                }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::NamedLock;

    /// The keys servers of one database agree on, the same before and after the names moved to
    /// their owners (a server of the older version beside a newer one must take the same lock).
    #[test]
    fn a_lock_key_is_its_owners_name_and_what_it_protects() {
        assert_eq!(NamedLock::new("mail", "changes").key(), "iris:mail-changes");
        assert_eq!(
            NamedLock::new("telegram", "chat:42").key(),
            "iris:telegram-chat:42"
        );
        assert_eq!(
            NamedLock::new("telegram", "poller:0123456789abcdef").key(),
            "iris:telegram-poller:0123456789abcdef"
        );
    }
}
