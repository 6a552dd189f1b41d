//! [`PushStore`] on both engines (migration 0020), and the outbox jobs a commit writes for the
//! pushes its [`Outbox`](iris_core::ports::Outbox) carries ([`Store::stage_pushes`], called by
//! `stage_outbox`).

use async_trait::async_trait;
use base64ct::{Base64UrlUnpadded, Encoding};
use chrono::{DateTime, Utc};
use iris_core::ports::{OutboxPush, PushEnd, PushJob, PushStore, StoreError};
use iris_core::push::{
    NewSubscription, PushEndpoint, PushKeys, PushKind, PushMessage, PushSubscription,
};
use sqlx::Row;

use crate::rows::{backend, to_json, Cols, Record};
use crate::unit::{Stmt, WriteTx};
use crate::{timestamp_text, Store};

/// Finished jobs (sent or given up) are kept this long for a look at what went out, then
/// deleted by the next claim, in seconds.
const KEEP_FINISHED_SECS: i64 = 24 * 3600;

impl Store {
    /// Stages in `tx` one outbox job per recipient subscription for each of `pushes`, as the
    /// service planned them (what pushes, and what it says, is
    /// [`Outbox`](iris_core::ports::Outbox)'s rule); a job already written for the same
    /// subscription, approval and kind is left as it is (the closing push is written once,
    /// however many `approval.responded` follow).
    pub(crate) async fn stage_pushes(
        &self,
        tx: &mut WriteTx,
        pushes: &[OutboxPush],
    ) -> Result<(), StoreError> {
        for push in pushes {
            let message = &push.message;
            // Who gets it. A waiting card: every subscription the browser has not said expired.
            // Its closing: only the subscriptions its waiting push reached or is reaching now; a
            // waiting push not sent yet is dropped (the card is no longer waiting), and a
            // device that subscribed later never saw the card. (A WHERE clause is also what
            // lets SQLite parse INSERT … SELECT … ON CONFLICT.)
            let recipients = match message.kind {
                PushKind::Requested => {
                    "SELECT id AS sub FROM push_subscriptions \
                     WHERE (expires_at IS NULL OR expires_at > {now})"
                }
                PushKind::Closed => {
                    tx.exec(
                        self.timed(
                            "UPDATE push_outbox SET state = 'gave_up', updated_at = {now} \
                             WHERE approval_id = $2 AND kind = 'requested' \
                             AND state = 'pending' \
                             AND (lease_until IS NULL OR lease_until <= {now})",
                        )
                        .text(&message.approval_id),
                        "dropping the waiting pushes of a closed card",
                    )
                    .await?;
                    "SELECT subscription_id AS sub FROM push_outbox \
                     WHERE approval_id = $2 AND kind = 'requested' \
                     AND state IN ('sent', 'pending')"
                }
            };
            tx.exec(
                self.timed(&format!(
                    "INSERT INTO push_outbox (subscription_id, approval_id, kind, message, \
                     deliver_until, give_up_at, state, attempts, next_at, created_at, updated_at) \
                     SELECT r.sub, $2, $3, $4, $5, $6, 'pending', 0, {{now}}, {{now}}, {{now}} \
                     FROM ({recipients}) AS r WHERE true \
                     ON CONFLICT (subscription_id, approval_id, kind) DO NOTHING"
                ))
                .text(&message.approval_id)
                .text(message.kind.as_str())
                .text(&to_json(message, "a push")?)
                .text(&timestamp_text(push.deliver_until))
                .text(&timestamp_text(push.give_up_at)),
                "writing the pushes of an event",
            )
            .await?;
        }
        Ok(())
    }

    /// Deletes `device`'s subscriptions with their jobs (a revoked device gets no more pushes).
    pub(crate) async fn remove_device_subscriptions<'c, E>(
        executor: E,
        device: &str,
    ) -> Result<(), StoreError>
    where
        E: sqlx::Executor<'c, Database = sqlx::Any>,
    {
        sqlx::query("DELETE FROM push_subscriptions WHERE device = $1")
            .bind(device)
            .execute(executor)
            .await
            .map_err(backend("removing a revoked device's push subscriptions"))?;
        Ok(())
    }
}

#[async_trait]
impl PushStore for Store {
    async fn vapid_key(
        &self,
        fresh: ([u8; 32], [u8; 65]),
        at: DateTime<Utc>,
    ) -> Result<([u8; 32], [u8; 65]), StoreError> {
        sqlx::query(
            "INSERT INTO push_vapid (id, private_key, public_key, created_at) \
             VALUES (1, $1, $2, $3) ON CONFLICT (id) DO NOTHING",
        )
        .bind(Base64UrlUnpadded::encode_string(&fresh.0))
        .bind(Base64UrlUnpadded::encode_string(&fresh.1))
        .bind(timestamp_text(at))
        .execute(&self.pool)
        .await
        .map_err(backend("storing the VAPID key"))?;
        let row = sqlx::query("SELECT private_key, public_key FROM push_vapid WHERE id = 1")
            .fetch_one(&self.pool)
            .await
            .map_err(backend("reading the VAPID key"))?;
        let corrupt = |reason: &str| StoreError::Corrupt {
            id: "push_vapid row 1".into(),
            reason: reason.into(),
        };
        let private: String = row
            .try_get("private_key")
            .map_err(|e| corrupt(&e.to_string()))?;
        let public: String = row
            .try_get("public_key")
            .map_err(|e| corrupt(&e.to_string()))?;
        let private: [u8; 32] = Base64UrlUnpadded::decode_vec(&private)
            .ok()
            .and_then(|v| v.try_into().ok())
            .ok_or_else(|| corrupt("the private key is not 32 bytes of base64url"))?;
        let public: [u8; 65] = Base64UrlUnpadded::decode_vec(&public)
            .ok()
            .and_then(|v| v.try_into().ok())
            .ok_or_else(|| corrupt("the public key is not 65 bytes of base64url"))?;
        Ok((private, public))
    }

    async fn add_subscription(
        &self,
        device: &str,
        subscription: &NewSubscription,
        at: DateTime<Utc>,
    ) -> Result<Option<String>, StoreError> {
        sqlx::query_scalar::<_, String>(
            "INSERT INTO push_subscriptions (id, device, endpoint, p256dh, auth, expires_at, \
             created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (endpoint) DO UPDATE SET p256dh = excluded.p256dh, \
             auth = excluded.auth, expires_at = excluded.expires_at \
             WHERE push_subscriptions.device = excluded.device \
             RETURNING id",
        )
        .bind(uuid::Uuid::new_v4().to_string())
        .bind(device)
        .bind(subscription.endpoint.as_str())
        .bind(subscription.keys.p256dh_text())
        .bind(subscription.keys.auth_text())
        .bind(subscription.expires_at.map(timestamp_text))
        .bind(timestamp_text(at))
        .fetch_optional(&self.pool)
        .await
        .map_err(backend("adding a push subscription"))
    }

    async fn subscriptions(&self, device: &str) -> Result<Vec<PushSubscription>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, device, endpoint, expires_at, created_at FROM push_subscriptions \
             WHERE device = $1 ORDER BY created_at, id",
        )
        .bind(device)
        .fetch_all(&self.pool)
        .await
        .map_err(backend("listing push subscriptions"))?;
        rows.iter()
            .map(|row| {
                let c = Cols::new(row, "push_subscriptions", "id")?;
                Ok(PushSubscription {
                    id: c.id.clone(),
                    device: c.text("device")?,
                    endpoint: PushEndpoint::parse(&c.text("endpoint")?)
                        .map_err(|e| c.corrupt("endpoint", e))?,
                    expires_at: c.opt_time("expires_at")?,
                    created_at: c.time("created_at")?,
                })
            })
            .collect()
    }

    async fn subscription_counts(
        &self,
    ) -> Result<std::collections::BTreeMap<String, u32>, StoreError> {
        let rows = sqlx::query_as::<_, (String, i64)>(
            "SELECT device, COUNT(*) FROM push_subscriptions GROUP BY device",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(backend("counting push subscriptions"))?;
        Ok(rows
            .into_iter()
            .map(|(device, n)| (device, u32::try_from(n).unwrap_or(u32::MAX)))
            .collect())
    }

    async fn remove_subscription(&self, device: &str, id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM push_subscriptions WHERE id = $1 AND device = $2")
            .bind(id)
            .bind(device)
            .execute(&self.pool)
            .await
            .map_err(backend("removing a push subscription"))?;
        Ok(done.rows_affected() > 0)
    }

    async fn claim_pushes(
        &self,
        owner: &str,
        lease_secs: u32,
        limit: u32,
    ) -> Result<Vec<PushJob>, StoreError> {
        // A read first, off the writer: most wake-ups (every event) find nothing due, and on
        // SQLite a write transaction would queue behind (and hold up) the approvals' commits.
        let due: Option<i64> = sqlx::query_scalar(&format!(
            "SELECT id FROM push_outbox WHERE state = 'pending' \
             AND (next_at <= {now} OR give_up_at <= {now}) LIMIT 1",
            now = self.now_sql()
        ))
        .bind(self.now_param())
        .fetch_optional(&self.pool)
        .await
        .map_err(backend("looking for due pushes"))?;
        if due.is_none() {
            return Ok(Vec::new());
        }
        let lease = format!("{owner}#{}", uuid::Uuid::new_v4().simple());
        let cutoff = timestamp_text(Utc::now() - chrono::Duration::seconds(KEEP_FINISHED_SECS));
        let mut tx = self.begin_write().await?;
        let claimed = async {
            tx.exec(
                Stmt::new("DELETE FROM push_outbox WHERE state <> 'pending' AND updated_at < $1")
                    .text(&cutoff),
                "deleting old finished pushes",
            )
            .await?;
            tx.exec(
                self.timed(
                    "UPDATE push_outbox SET state = 'gave_up', lease_owner = NULL, \
                     lease_until = NULL, updated_at = {now} \
                     WHERE state = 'pending' AND give_up_at <= {now}",
                ),
                "giving up pushes past their time",
            )
            .await?;
            tx.exec(
                self.timed(&format!(
                    "UPDATE push_outbox SET lease_owner = $3, lease_until = {{until}}, \
                     attempts = attempts + 1, updated_at = {{now}} \
                     WHERE id IN (SELECT o.id FROM push_outbox o \
                     WHERE o.state = 'pending' AND o.next_at <= {{now}} \
                     AND (o.lease_until IS NULL OR o.lease_until <= {{now}}) \
                     AND NOT (o.kind = 'closed' AND EXISTS (SELECT 1 FROM push_outbox r \
                     WHERE r.subscription_id = o.subscription_id \
                     AND r.approval_id = o.approval_id AND r.kind = 'requested' \
                     AND r.state = 'pending')) \
                     ORDER BY o.id LIMIT $4{lock})",
                    lock = self.engine.claim_lock()
                ))
                .int(i64::from(lease_secs))
                .text(&lease)
                .int(i64::from(limit)),
                "leasing pushes",
            )
            .await?;
            tx.fetch(
                Stmt::new(
                    "SELECT o.id AS job, o.subscription_id AS sub, o.message, o.deliver_until, \
                     o.attempts, s.endpoint, s.p256dh, s.auth \
                     FROM push_outbox o JOIN push_subscriptions s ON s.id = o.subscription_id \
                     WHERE o.lease_owner = $1 AND o.state = 'pending' ORDER BY o.id",
                )
                .text(&lease),
                "reading leased pushes",
            )
            .await
        }
        .await;
        let rows = match claimed {
            Ok(rows) => {
                tx.commit().await?;
                rows
            }
            Err(e) => {
                tx.rollback().await;
                return Err(e);
            }
        };
        rows.iter().map(|row| job_from_row(row, &lease)).collect()
    }

    async fn finish_push(
        &self,
        job: &PushJob,
        end: &PushEnd,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let fenced = "WHERE id = $2 AND lease_owner = $3 AND state = 'pending'";
        let stmt = match end {
            PushEnd::Sent | PushEnd::GaveUp => Stmt::new(format!(
                "UPDATE push_outbox SET state = $4, lease_owner = NULL, lease_until = NULL, \
                 updated_at = $1 {fenced}"
            ))
            .text(&timestamp_text(at))
            .int(job.id)
            .text(&job.lease)
            .text(if *end == PushEnd::Sent {
                "sent"
            } else {
                "gave_up"
            }),
            // A waiting push whose card closed meanwhile is not tried again.
            PushEnd::Retry(next) => Stmt::new(format!(
                "UPDATE push_outbox SET next_at = $4, lease_owner = NULL, lease_until = NULL, \
                 state = CASE WHEN $4 >= give_up_at OR (kind = 'requested' AND EXISTS \
                 (SELECT 1 FROM push_outbox c WHERE c.approval_id = push_outbox.approval_id \
                 AND c.kind = 'closed')) THEN 'gave_up' ELSE 'pending' END, \
                 updated_at = $1 {fenced}"
            ))
            .text(&timestamp_text(at))
            .int(job.id)
            .text(&job.lease)
            .text(&timestamp_text(*next)),
            // The subscription goes, and its jobs with it (ON DELETE CASCADE).
            PushEnd::Gone => Stmt::new(
                "DELETE FROM push_subscriptions WHERE id = (SELECT subscription_id \
                 FROM push_outbox WHERE id = $2 AND lease_owner = $3 AND state = 'pending' \
                 AND $1 IS NOT NULL)",
            )
            .text(&timestamp_text(at))
            .int(job.id)
            .text(&job.lease),
        };
        let mut tx = self.begin_write().await?;
        let written = async {
            tx.exec_cas(stmt, "recording a push attempt").await?;
            // A waiting push that will never arrive (given up, e.g. its card closed while it
            // was being sent and the attempt failed) takes that card's closing push to this
            // subscription with it: the phone never showed the card.
            tx.exec(
                Stmt::new(
                    "UPDATE push_outbox SET state = 'gave_up', updated_at = $1 \
                     WHERE subscription_id = $2 AND approval_id = $3 AND kind = 'closed' \
                     AND state = 'pending' AND EXISTS (SELECT 1 FROM push_outbox r \
                     WHERE r.id = $4 AND r.kind = 'requested' AND r.state = 'gave_up')",
                )
                .text(&timestamp_text(at))
                .text(&job.subscription_id)
                .text(&job.message.approval_id)
                .int(job.id),
                "dropping the closing of a card whose waiting push never arrived",
            )
            .await
        }
        .await;
        crate::writes::finish_cas(tx, written).await
    }
}

/// A leased job from one row of the claim's read.
fn job_from_row(row: &Record, lease: &str) -> Result<PushJob, StoreError> {
    let c = Cols::new(row, "push_outbox", "sub")?;
    let id = c.integer("job")?;
    let message: PushMessage = c.json("message")?;
    let keys = PushKeys::parse(&c.text("p256dh")?, &c.text("auth")?)
        .map_err(|e| c.corrupt("p256dh", e))?;
    let endpoint =
        PushEndpoint::parse(&c.text("endpoint")?).map_err(|e| c.corrupt("endpoint", e))?;
    let deliver_until = c.time("deliver_until")?;
    let attempt = u32::try_from(c.integer("attempts")?).unwrap_or(u32::MAX);
    Ok(PushJob {
        id,
        subscription_id: c.id.clone(),
        endpoint,
        keys,
        message: PushMessage {
            deliver_until: Some(deliver_until),
            ..message
        },
        attempt,
        lease: lease.to_owned(),
    })
}
