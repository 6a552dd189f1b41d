//! How far the mail sync has come, and the gate the tools wait at until the first one ends.
//!
//! The server listens before the first sync (docs/liveness.md "start-up"): a large mailbox is
//! read in the background, in chunks of [`CHUNK`] new messages, each chunk stored as it is read
//! and counted here. Until the first sync has ended, a tool that reads the local store waits a
//! little ([`SyncProgress::ready`]) and then says the mailbox is still syncing, with the count,
//! rather than answering from half a mailbox.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::watch;

/// New messages read and stored per step of a sync.
pub const CHUNK: usize = 1_000;

/// The failpoint (`IRIS_FAILPOINT_PAUSE`, debug builds) where a sync pauses after each chunk.
pub const PAUSE_AFTER_CHUNK: &str = "mail_sync_chunk";

/// Longest a tool waits for the first sync before it says the mailbox is still syncing.
pub const TOOL_WAIT: Duration = Duration::from_secs(10);

/// The state of the syncs, shared by the plugin and its readers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    /// Whether a sync has ended since start (with or without errors the report names).
    pub first_done: bool,
    /// Whether a sync is running now.
    pub running: bool,
    /// New messages read and stored by the running (or last) sync.
    pub done: u64,
    /// New messages the running (or last) sync found to read.
    pub total: u64,
    /// Messages in the local store after the last sync that ended.
    pub messages: u64,
    /// Why the last sync failed, when it did (it is retried at the next tick).
    pub failed: Option<String>,
}

/// The shared [`Progress`] and its log pacing.
#[derive(Debug)]
pub struct SyncProgress {
    state: watch::Sender<Progress>,
    logged: Mutex<Option<Instant>>,
}

impl Default for SyncProgress {
    fn default() -> Self {
        SyncProgress {
            state: watch::Sender::new(Progress::default()),
            logged: Mutex::new(None),
        }
    }
}

impl SyncProgress {
    /// The state now.
    pub fn now(&self) -> Progress {
        self.state.borrow().clone()
    }

    /// A sync starts.
    pub fn started(&self) {
        self.state.send_modify(|p| {
            p.running = true;
            p.done = 0;
            p.total = 0;
        });
    }

    /// `n` more new messages were found to read.
    pub fn found(&self, n: usize) {
        self.state
            .send_modify(|p| p.total = p.total.saturating_add(n as u64));
    }

    /// `n` more were read and stored; logs "synced N of M" at most every two seconds.
    pub fn stored(&self, account: &str, n: usize) {
        self.state
            .send_modify(|p| p.done = p.done.saturating_add(n as u64));
        let p = self.now();
        let due = match self.logged.lock() {
            Ok(mut last) => {
                let due =
                    last.is_none_or(|t| t.elapsed() >= Duration::from_secs(2)) || p.done == p.total;
                if due {
                    *last = Some(Instant::now());
                }
                due
            }
            Err(_) => true,
        };
        if due {
            tracing::info!(
                account,
                "mail sync: synced {} of {} new messages",
                thousands(p.done),
                thousands(p.total)
            );
        }
    }

    /// The sync ended: `Ok(messages in the store)` or the error it failed with.
    pub fn ended(&self, result: Result<u64, String>) {
        self.state.send_modify(|p| {
            p.running = false;
            match result {
                Ok(messages) => {
                    p.first_done = true;
                    p.messages = messages;
                    p.failed = None;
                }
                Err(e) => p.failed = Some(e),
            }
        });
    }

    /// Waits until the first sync has ended, at most `within`.
    ///
    /// # Errors
    /// A sentence with the count so far when it has not ended by then.
    pub async fn ready(&self, within: Duration) -> Result<(), String> {
        let mut rx = self.state.subscribe();
        let waited = tokio::time::timeout(within, rx.wait_for(|p| p.first_done)).await;
        if matches!(waited, Ok(Ok(_))) {
            return Ok(());
        }
        Err(self.still_syncing())
    }

    /// "the mailbox is still syncing: synced 42,000 of 100,000 new messages; ask again in a
    /// minute".
    pub fn still_syncing(&self) -> String {
        let p = self.now();
        let so_far = if p.total > 0 {
            format!(
                ": synced {} of {} new messages",
                thousands(p.done),
                thousands(p.total)
            )
        } else {
            String::new()
        };
        let failed = p
            .failed
            .map(|e| format!(" (the last try failed: {e}; it is retried)"))
            .unwrap_or_default();
        format!("the mailbox is still syncing{so_far}{failed}; nothing was read from half a mailbox, ask again in a minute")
    }
}

/// 42000 → "42,000".
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_as_people_write_them() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(42_000), "42,000");
        assert_eq!(thousands(1_250_000), "1,250,000");
    }

    #[tokio::test]
    async fn tools_wait_for_the_first_sync_then_say_how_far_it_is() {
        let p = SyncProgress::default();
        p.started();
        p.found(3_000);
        p.stored("a", 1_000);
        let e = p.ready(Duration::from_millis(10)).await.unwrap_err();
        assert!(e.contains("synced 1,000 of 3,000"), "{e}");
        p.ended(Err("disk gone".into()));
        let e = p.ready(Duration::from_millis(10)).await.unwrap_err();
        assert!(e.contains("the last try failed: disk gone"), "{e}");
        p.ended(Ok(3_000));
        p.ready(Duration::from_millis(10)).await.unwrap();
        assert_eq!(p.now().messages, 3_000);
    }
}
