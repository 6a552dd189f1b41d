//! Events published by the lifecycle's commits (DESIGN §2 "channel router", §9 "events cross
//! servers"). An event is published only when the commit that carries it lands.
//!
//! - SQLite (one server): the store's in-process channel, sent right after the commit.
//! - PostgreSQL (many servers): the commit appends each event to the `events` table (under a
//!   transaction-level advisory lock, so `seq` order is commit order) and sends
//!   `NOTIFY iris_events` as a wake-up. Every server's listener ([`Store::listen_for_events`])
//!   reads what is new by `seq` and hands it to its own subscribers: on every wake-up, after any
//!   reconnect of its `LISTEN` connection (so events of the gap still arrive), and every few
//!   seconds as a safety net.

use std::time::Duration;

use iris_core::ports::{Outbox, StoreError};
use iris_core::wire::Event;
use sqlx::postgres::PgListener;

use crate::rows::{backend, to_json};
use crate::unit::{Stmt, WriteTx};
use crate::{Engine, Store};

/// The `LISTEN`/`NOTIFY` channel.
const CHANNEL: &str = "iris_events";

/// The advisory lock key that orders event appends (any fixed 64-bit number; "IRISEVNT").
const EVENTS_LOCK: i64 = 0x4952_4953_4556_4e54;

/// How often a listener reads the event log even without a wake-up.
const SAFETY_NET: Duration = Duration::from_secs(2);

/// How long events stay in the log (a listener that was away longer resyncs from the tables
/// themselves: every surface refetches rows when it reconnects).
const KEEP_EVENTS_SECS: i64 = 3600;

impl Store {
    /// Writes `outbox` inside `tx`, as the service planned it: its pushes as outbox jobs
    /// (crates/core/src/ports/push.rs, on both engines); its events, on PostgreSQL, appended to
    /// the event log with a wake-up, both taking effect at commit (on SQLite nothing happens to
    /// them until [`Store::deliver`] after the commit).
    pub(crate) async fn stage_outbox(
        &self,
        tx: &mut WriteTx,
        outbox: &Outbox,
    ) -> Result<(), StoreError> {
        self.stage_pushes(tx, outbox.pushes()).await?;
        let events = outbox.events();
        if events.is_empty() || self.engine == Engine::Sqlite {
            return Ok(());
        }
        tx.exec(
            Stmt::new("SELECT pg_advisory_xact_lock($1)").int(EVENTS_LOCK),
            "ordering events",
        )
        .await?;
        let mut sql = format!(
            "INSERT INTO events (payload, at) VALUES ($2, {})",
            self.now_sql()
        );
        for i in 1..events.len() {
            sql.push_str(&format!(", (${}, {})", i + 2, self.now_sql()));
        }
        let mut insert = Stmt::new(sql).opt_text(self.now_param().as_deref());
        for event in events {
            insert = insert.text(&to_json(event, "an event")?);
        }
        tx.exec(insert, "appending events").await?;
        tx.exec(
            Stmt::new("SELECT pg_notify($1, '')").text(CHANNEL),
            "sending an event wake-up",
        )
        .await
    }

    /// After a commit landed: on SQLite hands `outbox`'s events to this process's subscribers
    /// (on PostgreSQL the listener does, for every server).
    pub(crate) fn deliver(&self, outbox: &Outbox) {
        if self.engine == Engine::Sqlite {
            for event in outbox.events() {
                // No subscriber is not an error: surfaces refetch when they connect.
                let _ = self.feed.send(event.clone());
            }
        }
    }

    /// PostgreSQL: starts this server's listener of the event log in the background, from the
    /// newest event now (earlier events are not replayed); it runs while the process does and
    /// reconnects by itself. SQLite: nothing to start.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the first `LISTEN` connection cannot be made.
    pub async fn listen_for_events(&self) -> Result<(), StoreError> {
        if self.engine == Engine::Sqlite {
            return Ok(());
        }
        let mut listener = PgListener::connect(self.url())
            .await
            .map_err(backend("connecting the event listener"))?;
        listener
            .listen(CHANNEL)
            .await
            .map_err(backend("listening for events"))?;
        let last: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM events")
            .fetch_one(&self.pool)
            .await
            .map_err(backend("reading the event log"))?;
        let store = self.clone();
        tokio::spawn(async move { store.relay(listener, last).await });
        Ok(())
    }

    /// The listener's loop: wait for a wake-up (or a reconnect, or the safety net), then hand
    /// every event after `last` to the subscribers.
    async fn relay(&self, mut listener: PgListener, mut last: i64) {
        loop {
            match tokio::time::timeout(SAFETY_NET, listener.try_recv()).await {
                // A wake-up; or the connection was lost and made again (events of the gap are
                // in the log); or the safety net.
                Ok(Ok(_)) | Err(_) => {}
                Ok(Err(error)) => {
                    tracing::warn!(%error, "the event listener's connection failed; reconnecting");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
            match self.relay_since(last).await {
                Ok(seq) => last = seq,
                Err(error) => tracing::warn!(%error, "reading the event log failed; retrying"),
            }
        }
    }

    /// Hands every event after `last` to the subscribers, in order; returns the newest seq.
    async fn relay_since(&self, mut last: i64) -> Result<i64, StoreError> {
        loop {
            let rows: Vec<(i64, String)> = sqlx::query_as(
                "SELECT seq, payload FROM events WHERE seq > $1 ORDER BY seq LIMIT 500",
            )
            .bind(last)
            .fetch_all(&self.pool)
            .await
            .map_err(backend("reading the event log"))?;
            let more = rows.len() == 500;
            for (seq, payload) in rows {
                last = seq;
                match serde_json::from_str::<Event>(&payload) {
                    Ok(event) => {
                        let _ = self.feed.send(event);
                    }
                    Err(error) => {
                        tracing::warn!(seq, %error, "skipping an event that does not parse")
                    }
                }
            }
            if !more {
                return Ok(last);
            }
        }
    }

    /// Deletes events older than an hour from the log (PostgreSQL; SQLite keeps none). Safe
    /// on every server.
    ///
    /// # Errors
    /// [`StoreError::Backend`].
    pub async fn prune_events(&self) -> Result<u64, StoreError> {
        if self.engine == Engine::Sqlite {
            return Ok(0);
        }
        let sql = format!(
            "DELETE FROM events WHERE at < {}",
            self.engine.now_plus("$1", "$2")
        );
        let done = sqlx::query(&sql)
            .bind(self.now_param())
            .bind(-KEEP_EVENTS_SECS)
            .execute(&self.pool)
            .await
            .map_err(backend("pruning the event log"))?;
        Ok(done.rows_affected())
    }
}
