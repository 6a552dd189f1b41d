//! Web Push's storage (DESIGN §9 "the owner's phone"): the server's VAPID key, each device's
//! subscriptions, and the outbox that makes delivery durable and shared by several servers.
//!
//! The outbox is written by the commit that carries the event: the service plans the unit's
//! [`Outbox`](super::Outbox) (each event [`PushMessage::for_event`](crate::push::PushMessage::for_event)
//! pushes for becomes one push there), and the store writes each push as one job per recipient
//! subscription, in the same transaction as the approval's change, so a card that waits
//! is never without its push and a push never announces a change that rolled back. When the
//! card closes, its waiting pushes not sent yet are dropped, and its closing push is written
//! once (however many `approval.responded` follow) for each subscription its waiting push
//! reached or is reaching, and not handed out before that one, so the phone never sees them in
//! the wrong order, nor the closing of a card it never saw.
//!
//! | call | what it does |
//! |---|---|
//! | [`PushStore::vapid_key`] | the key pair, made once by whichever server starts first |
//! | [`PushStore::claim_pushes`] | leases due jobs to this server (`FOR UPDATE SKIP LOCKED`) |
//! | [`PushStore::finish_push`] | `sent`, `retry` at a time, `gave_up`, or the subscription `gone` |

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::StoreError;
use crate::push::{NewSubscription, PushEndpoint, PushKeys, PushMessage, PushSubscription};

/// A job leased to one server: send `message` to `endpoint`, encrypted for `keys`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushJob {
    /// The job's id.
    pub id: i64,
    /// The subscription it goes to.
    pub subscription_id: String,
    /// Where to send it.
    pub endpoint: PushEndpoint,
    /// How to encrypt it.
    pub keys: PushKeys,
    /// What it says.
    pub message: PushMessage,
    /// This attempt's number (1 for the first).
    pub attempt: u32,
    /// The lease this claim holds; [`PushStore::finish_push`] is fenced by it.
    pub lease: String,
}

/// How a push attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushEnd {
    /// The push service took it (201).
    Sent,
    /// Try again at this instant (5xx, 429, a timeout, a refused connection).
    Retry(DateTime<Utc>),
    /// Never try again: the push service refused it for good (another 4xx), or its TTL or
    /// [`GIVE_UP_AFTER_SECS`](crate::push::GIVE_UP_AFTER_SECS) passed.
    GaveUp,
    /// The subscription no longer exists at the push service (404, 410): delete it with its
    /// jobs.
    Gone,
}

/// Web Push storage.
#[async_trait]
pub trait PushStore: Send + Sync {
    /// The server's VAPID key pair as `(private scalar, uncompressed public key)`, 32 and 65
    /// bytes. The first server to ask stores `fresh` (a pair the caller just made); every later
    /// call, on any server, returns that one and drops its own `fresh` (the key is never
    /// replaced, so subscriptions made against it stay valid).
    ///
    /// # Errors
    /// [`StoreError::Backend`], or [`StoreError::Corrupt`] when the stored key has the wrong
    /// length.
    async fn vapid_key(
        &self,
        fresh: ([u8; 32], [u8; 65]),
        at: DateTime<Utc>,
    ) -> Result<([u8; 32], [u8; 65]), StoreError>;

    /// Adds `subscription` for `device`: its id. The same endpoint again from the same device
    /// (a browser that subscribes anew) replaces its keys, keeping one row per endpoint; `None`
    /// when the endpoint is another device's subscription (nothing changes: a device never
    /// takes over another's).
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn add_subscription(
        &self,
        device: &str,
        subscription: &NewSubscription,
        at: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError>;

    /// `device`'s subscriptions, oldest first.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn subscriptions(&self, device: &str) -> Result<Vec<PushSubscription>, StoreError>;

    /// How many subscriptions each device has, by device name (devices with none are absent).
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn subscription_counts(
        &self,
    ) -> Result<std::collections::BTreeMap<String, u32>, StoreError>;

    /// Removes subscription `id` of `device` with its jobs: whether it existed (another
    /// device's subscription is never touched, and counts as absent).
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn remove_subscription(&self, device: &str, id: &str) -> Result<bool, StoreError>;

    /// Leases up to `limit` due jobs to `owner` for `lease_secs` seconds, oldest first: jobs
    /// never claimed or whose retry time came, and jobs whose holder's lease lapsed (its server
    /// died mid-send). A closing push waits while its subscription's push of the waiting card
    /// is still to go.
    ///
    /// # Errors
    /// [`StoreError::Backend`], or [`StoreError::Corrupt`] for a job that does not decode.
    async fn claim_pushes(
        &self,
        owner: &str,
        lease_secs: u32,
        limit: u32,
    ) -> Result<Vec<PushJob>, StoreError>;

    /// Records how `job`'s attempt ended, if `job`'s lease is still the job's (else nothing:
    /// another server took it over). Whether it was recorded.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    async fn finish_push(
        &self,
        job: &PushJob,
        end: &PushEnd,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError>;
}
