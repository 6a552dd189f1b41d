//! This server's background work (DESIGN §3 steps 6 and 9, §9): job workers that claim and run
//! resume jobs, the expiry sweep, the mail sync and the session clean-up. Every one is safe on
//! every server at once: the store's leases and compare-and-sets decide who does what. The
//! lifecycle itself is the approvals service's; this module only schedules it.

use std::time::Duration;

use crate::state::AppState;

/// How many jobs this server runs at once (one slow model call does not hold up the others).
pub const WORKERS: usize = 4;

/// Starts [`WORKERS`] job workers on `state.workers`. Each waits for a job to become ready on
/// this server (or the sweep's tick, for jobs of other servers and lapsed leases) and runs jobs
/// until none is left, until the server stops: then it claims no new job, and the one it runs
/// finishes and records its outcome (DESIGN §8: a stop must not leave an `unknown` it could
/// have avoided).
pub fn spawn_workers(state: &AppState) {
    for _ in 0..WORKERS {
        let state = state.clone();
        state
            .workers
            .clone()
            .spawn(async move { work(state).await });
    }
}

async fn work(state: AppState) {
    let tick = Duration::from_secs(state.settings.sweep_secs.max(1));
    while !state.shutdown.is_cancelled() {
        // Registered before draining, so a job made ready while this worker drains is not missed.
        let ready = state.jobs.ready.notified();
        tokio::pin!(ready);
        ready.as_mut().enable();
        drain(&state).await;
        tokio::select! {
            () = &mut ready => {}
            () = tokio::time::sleep(tick) => {}
            () = state.shutdown.cancelled() => {}
        }
    }
}

/// Runs jobs until none is claimable (or the server stops); a failure is logged and waits for
/// the next wake-up.
pub async fn drain(state: &AppState) {
    while !state.shutdown.is_cancelled() {
        match state.service.run_next_job().await {
            Ok(Some(report)) => {
                tracing::info!(approval = %report.approval_id, resumed = report.run.is_some(), "resume job done");
            }
            Ok(None) => return,
            Err(iris_core::ports::StoreError::LeaseLost(id)) => {
                tracing::warn!(approval = %id, "another server took this resume job over; its writes win");
            }
            Err(error) => {
                // The service has ended the job `failed` (the card says so), or, when even that
                // could not be written, its lease lapses and any server takes it over, this one
                // included (docs/liveness.md).
                tracing::error!(%error, "running a resume job failed");
                return;
            }
        }
    }
}

/// One expiry sweep: aligns this server's clock to the database's, expires every lapsed row (each then has a resume job), rejects the cards of
/// revoked devices, marks undos whose
/// server stopped while they ran `unknown` (never run again), and prunes the event log.
pub async fn sweep_once(state: &AppState) {
    if let Err(error) = state.clock.align(&state.store).await {
        tracing::warn!(%error, "reading the database's clock failed; the last offset stays");
    }
    match state.service.expire_lapsed().await {
        Ok(rows) => {
            for row in rows {
                tracing::info!(approval = %row.id, "approval lapsed; nothing was changed");
            }
        }
        Err(e) => tracing::error!(error = %e, "expiry sweep failed"),
    }
    // A device revoked from the CLI (or on another server) has its cards rejected here, and
    // every surface told, within one sweep (docs/liveness.md "revoked devices").
    match state.service.reject_revoked().await {
        Ok(rows) => {
            for row in rows {
                tracing::info!(approval = %row.id, device = ?row.requested_by, "card of a revoked device rejected; nothing ran");
            }
        }
        Err(e) => tracing::error!(error = %e, "rejecting the cards of revoked devices failed"),
    }
    match state.service.lapse_undos().await {
        Ok(0) => {}
        Ok(n) => tracing::warn!(
            undos = n,
            "undos whose server stopped while they ran are now unknown; they will not run again"
        ),
        Err(e) => tracing::error!(error = %e, "marking stopped undos unknown failed"),
    }
    if let Err(e) = state.store.prune_events().await {
        tracing::warn!(error = %e, "pruning the event log failed");
    }
    tracing::debug!("sweep finished");
}

/// Runs [`sweep_once`] now and then every `IRIS_SWEEP_SECS` seconds, forever.
pub fn spawn_sweeps(state: AppState) {
    let every = Duration::from_secs(state.settings.sweep_secs.max(1));
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            sweep_once(&state).await;
        }
    });
}

/// Runs the email plugin's first sync at once, behind the listening server (a large mailbox
/// takes minutes; its progress is logged and shown on the Plugins page, and the mail tools wait
/// for it: docs/liveness.md "start-up"), then every `IRIS_MAIL_SYNC_SECS` seconds (0: only the
/// first), so mail that arrives later reaches searches and category clean-ups. Incremental: an
/// IMAP folder whose UIDVALIDITY, UIDNEXT and count are unchanged is not listed again. A failed
/// sync is logged and retried at the next tick (the first one within a minute when ticks are
/// off or slower); it never stops the server.
pub fn spawn_mail_sync(state: AppState) {
    let secs = state.settings.mail_sync_secs;
    tokio::spawn(async move {
        let started = std::time::Instant::now();
        loop {
            let first = !state.email.progress().first_done;
            match state.email.sync().await {
                Ok(report) => {
                    if first {
                        tracing::info!(
                            messages = report.accounts.iter().map(|a| a.messages).sum::<u64>(),
                            secs = started.elapsed().as_secs_f64(),
                            "mail sync: the first sync ended"
                        );
                    }
                    for a in report
                        .accounts
                        .iter()
                        .filter(|a| a.added + a.removed + a.moved > 0)
                    {
                        tracing::info!(
                            account = a.account,
                            added = a.added,
                            removed = a.removed,
                            moved = a.moved,
                            "mail sync"
                        );
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "mail sync failed; retrying at the next tick")
                }
            }
            let done = state.email.progress().first_done;
            let wait = match (secs, done) {
                (0, true) => return,
                (0, false) => 60,
                (s, true) => s,
                (s, false) => s.min(60),
            };
            tokio::time::sleep(Duration::from_secs(wait)).await;
        }
    });
}

/// Deletes lapsed browser sessions (idle longer than `session::SESSION_IDLE_DAYS`) once an hour,
/// so the session table does not grow without end. A failure is logged and retried.
pub fn spawn_session_expiry(sessions: crate::session::SessionRecords) {
    use tower_sessions::session_store::ExpiredDeletion;
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(3600));
        loop {
            tick.tick().await;
            if let Err(e) = sessions.delete_expired().await {
                tracing::warn!(error = %e, "deleting lapsed browser sessions failed; retrying in an hour");
            }
        }
    });
}
