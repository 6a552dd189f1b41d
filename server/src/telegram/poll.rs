//! Taps from Telegram: long polling `getUpdates` while this server holds the bot's poller lock
//! (Telegram refuses two concurrent pollers for one token), with back-off after errors.

use std::time::Duration;

use super::bot_api::{BotApiError, Update};
use super::{Backoff, Bridge};

/// How often a server without the poller lock tries to take it.
const POLLER_RETRY: Duration = Duration::from_secs(5);

impl Bridge {
    /// Polls for taps while this server holds the bot's poller lock; without it, tries again
    /// every few seconds (another server polls meanwhile).
    pub(super) async fn lead_polling(self, lock: iris_store::NamedLock) {
        loop {
            match self.state.store.try_lock(&lock).await {
                Ok(Some(_held)) => {
                    tracing::info!("Telegram: this server polls for taps");
                    self.poll_updates().await;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "Telegram: taking the poller lock failed"),
            }
            tokio::time::sleep(POLLER_RETRY).await;
        }
    }

    /// Long-polls `getUpdates` forever, handling each tap in order; errors back off (or wait as
    /// long as Telegram asks) and retry.
    async fn poll_updates(&self) {
        let mut offset = 0_i64;
        let mut backoff = Backoff::new();
        loop {
            match self.api.get_updates(offset).await {
                Ok(updates) => {
                    backoff.reset();
                    for update in updates {
                        match update {
                            Ok(Update {
                                update_id,
                                callback_query,
                            }) => {
                                offset = offset.max(update_id + 1);
                                if let Some(query) = callback_query {
                                    self.on_tap(query).await;
                                }
                            }
                            Err(update_id) => {
                                offset = offset.max(update_id + 1);
                                tracing::warn!(
                                    update_id,
                                    "Telegram: skipped an update that does not decode"
                                );
                            }
                        }
                    }
                }
                Err(e) => {
                    let wait = match &e {
                        BotApiError::Refused {
                            retry_after: Some(secs),
                            ..
                        } => Duration::from_secs(*secs),
                        _ => backoff.next_wait(),
                    };
                    tracing::warn!(error = %e, retry_in_secs = wait.as_secs(), "Telegram: polling for updates failed; retrying");
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }
}
