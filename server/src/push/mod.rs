//! Web Push to the owner's devices (DESIGN §9 "the owner's phone"): the server's side of RFC
//! 8030 (delivery), RFC 8291 (`aes128gcm` message encryption, by `web-push-native`) and RFC 8292
//! (VAPID, signed here with `jwt-simple` so the token's audience keeps the endpoint's port).
//!
//! - [`PushSettings`]: `IRIS_VAPID_SUBJECT` (a `mailto:` or `https:` address); unset, push is
//!   off and the routes say how to turn it on.
//! - [`WebPush`]: the VAPID key pair (made once per database, [`PushStore::vapid_key`]) and one
//!   HTTP client; [`WebPush::send`] makes and sends one push and says how it ended.
//! - [`spawn`]: the sender every server runs: it claims due jobs from the outbox the commits
//!   wrote (so each push goes out from one server), sends them, records the outcome, and wakes
//!   on every event and every few seconds for retries.
//! - `api.rs`: `GET /api/push/key`, `POST|GET /api/push/subscriptions`,
//!   `DELETE /api/push/subscriptions/{id}`.

pub mod api;
pub(crate) mod vapid;

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use iris_core::ports::{PushEnd, PushJob, PushStore};
use iris_core::push::retry_delay;
use iris_store::Store;

use crate::config::{non_blank, Settings};
use crate::state::AppState;

pub use vapid::VapidKey;

/// How long one push request may take before it counts as failed (and is retried).
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a claim holds a job: longer than [`SEND_TIMEOUT`], so a live sender finishes first.
const LEASE_SECS: u32 = 60;

/// Jobs claimed at once.
const BATCH: u32 = 16;

/// How often the sender looks for due retries without a wake-up.
const TICK: Duration = Duration::from_secs(5);

/// Web Push's setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushSettings {
    /// `IRIS_VAPID_SUBJECT`: who the push services may contact about this sender (RFC 8292 §2.1
    /// `sub`): `mailto:owner@example.org` or `https://iris.example.org`.
    pub subject: String,
}

impl PushSettings {
    /// Reads `IRIS_VAPID_SUBJECT`: `None` when unset or blank (push is off).
    ///
    /// # Errors
    /// When it is set but neither a `mailto:` address nor an `https:` URL.
    pub fn from_settings(settings: &Settings) -> anyhow::Result<Option<PushSettings>> {
        let Some(subject) = non_blank(&settings.vapid_subject) else {
            return Ok(None);
        };
        let scheme = subject
            .split_once(':')
            .map(|(scheme, rest)| (scheme.to_ascii_lowercase(), rest));
        let valid = match scheme.as_ref().map(|(s, r)| (s.as_str(), *r)) {
            Some(("mailto", address)) => {
                let (local, domain) = address.split_once('@').unwrap_or_default();
                !local.is_empty() && domain.contains('.') && !address.contains(char::is_whitespace)
            }
            Some(("https", rest)) => {
                rest.starts_with("//") && rest.len() > 2 && !rest.contains(char::is_whitespace)
            }
            _ => false,
        };
        if !valid {
            anyhow::bail!(
                "IRIS_VAPID_SUBJECT must be a mailto: address (mailto:owner@example.org) or an \
                 https: URL (RFC 8292 §2.1); it is `{subject}`"
            );
        }
        Ok(Some(PushSettings {
            subject: subject.to_owned(),
        }))
    }
}

/// The sentence every push route answers with while push is off.
pub const PUSH_OFF: &str = "Web Push is off on this server: set IRIS_VAPID_SUBJECT to a mailto: \
     address or an https: URL and restart it";

/// This server's Web Push sender: the VAPID key, the subject, one HTTP client.
pub struct WebPush {
    key: VapidKey,
    subject: String,
    client: reqwest::Client,
}

impl std::fmt::Debug for WebPush {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The private key is never printed.
        f.debug_struct("WebPush")
            .field("subject", &self.subject)
            .field("public_key", &self.key.public_text())
            .finish()
    }
}

impl WebPush {
    /// Loads (or, on the database's first start, makes and stores) the VAPID key.
    ///
    /// # Errors
    /// When the store fails or holds a key that is not a P-256 key pair.
    pub async fn open(store: &Store, settings: PushSettings) -> anyhow::Result<WebPush> {
        let fresh = VapidKey::generate();
        let (private, _) = store
            .vapid_key((fresh.private_bytes(), fresh.public_bytes()), Utc::now())
            .await?;
        let key = VapidKey::from_private(&private)?;
        let client = reqwest::Client::builder()
            .timeout(SEND_TIMEOUT)
            .dns_resolver(std::sync::Arc::new(PublicResolver))
            .build()
            .map_err(|e| anyhow::anyhow!("building the Web Push HTTP client: {e}"))?;
        Ok(WebPush {
            key,
            subject: settings.subject,
            client,
        })
    }

    /// The public key browsers subscribe with (`applicationServerKey`): uncompressed P-256,
    /// unpadded base64url.
    pub fn public_key(&self) -> String {
        self.key.public_text()
    }

    /// Encrypts and sends `job` once: how it ended. Never fails: every failure is a
    /// [`PushEnd`] (a retry, or giving up).
    pub async fn send(&self, job: &PushJob) -> PushEnd {
        let now = Utc::now();
        let ttl = job.message.ttl_secs(now);
        if ttl == 0 {
            return PushEnd::GaveUp;
        }
        let body = match vapid::encrypt(&job.message.payload(), &job.keys) {
            Ok(body) => body,
            Err(e) => {
                tracing::warn!(subscription = %job.subscription_id, error = %e, "a push subscription's keys do not work; giving the push up");
                return PushEnd::GaveUp;
            }
        };
        let authorization = match self.key.authorization(&job.endpoint, &self.subject, ttl) {
            Ok(value) => value,
            Err(e) => {
                tracing::error!(error = %e, "signing a VAPID token failed; retrying the push");
                return retry(job, None);
            }
        };
        let sent = self
            .client
            .post(job.endpoint.as_str())
            .header("TTL", ttl.to_string())
            .header("Urgency", job.message.urgency())
            .header("Topic", job.message.topic())
            .header("Content-Encoding", "aes128gcm")
            .header("Content-Type", "application/octet-stream")
            .header("Authorization", authorization)
            .body(body)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(e) => {
                // reqwest's own sentence ("error sending request") hides the cause: the chain.
                let mut why = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(cause) = source {
                    why.push_str(": ");
                    why.push_str(&cause.to_string());
                    source = cause.source();
                }
                tracing::warn!(subscription = %job.subscription_id, error = %why, "a push could not be delivered; retrying");
                return retry(job, None);
            }
        };
        let status = response.status();
        let retry_after = response
            .headers()
            .get("Retry-After")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        match status.as_u16() {
            200..=299 => PushEnd::Sent,
            404 | 410 => {
                tracing::info!(subscription = %job.subscription_id, %status, "the push service no longer knows this subscription; removing it");
                PushEnd::Gone
            }
            429 | 500..=599 => {
                tracing::warn!(subscription = %job.subscription_id, %status, "the push service asked to retry");
                retry(job, retry_after)
            }
            _ => {
                tracing::warn!(subscription = %job.subscription_id, %status, "the push service refused a push; giving it up");
                PushEnd::GaveUp
            }
        }
    }
}

/// The retry of `job` after its attempt failed.
fn retry(job: &PushJob, retry_after: Option<u64>) -> PushEnd {
    let delay = retry_delay(job.attempt, retry_after);
    PushEnd::Retry(Utc::now() + chrono::Duration::from_std(delay).unwrap_or_default())
}

/// Sends every due job once: claims a batch, sends each, records how it ended; until none is
/// left. Returns how many attempts it made.
///
/// # Errors
/// When the store fails (the jobs stay in the outbox for the next round or another server).
pub async fn deliver_due(store: &Store, push: &WebPush, owner: &str) -> anyhow::Result<usize> {
    let mut attempts = 0;
    loop {
        let jobs = store.claim_pushes(owner, LEASE_SECS, BATCH).await?;
        if jobs.is_empty() {
            return Ok(attempts);
        }
        for job in &jobs {
            let end = push.send(job).await;
            attempts += 1;
            if !store.finish_push(job, &end, Utc::now()).await? {
                tracing::warn!(
                    job = job.id,
                    "a push's lease was taken over before its outcome was recorded"
                );
            }
        }
    }
}

/// Starts the sender of this server (when push is on): after every event and every [`TICK`],
/// it sends what is due; it stops with the server.
pub fn spawn(state: AppState, push: Arc<WebPush>) {
    let owner = format!("push-{}", uuid::Uuid::new_v4().simple());
    tokio::spawn(async move {
        let mut events = state.store.subscribe();
        while !state.shutdown.is_cancelled() {
            if let Err(e) = deliver_due(&state.store, &push, &owner).await {
                tracing::error!(error = %e, "sending pushes failed; trying again shortly");
            }
            tokio::select! {
                // A lagged receiver only means "something happened": look again.
                _ = events.recv() => {}
                () = tokio::time::sleep(TICK) => {}
                () = state.shutdown.cancelled() => {}
            }
        }
    });
}

/// Resolves a push service's name and lets a push connect only when every address it resolves
/// to is public ([`iris_core::push::admit_resolved`]): a subscription names its push service,
/// and a name pointed at the machines around this one (or re-pointed after it was stored) must
/// not make the server post there. Judged at each connection, on the addresses it then uses.
struct PublicResolver;

impl reqwest::dns::Resolve for PublicResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<std::net::SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let admitted = iris_core::push::admit_resolved(&host, addrs)?;
            Ok(Box::new(admitted.into_iter()) as reqwest::dns::Addrs)
        })
    }
}
