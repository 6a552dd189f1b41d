//! Server-side sweeps (DESIGN §3 steps 6 and 9): expire lapsed rows and resume every decided
//! row whose run has not resumed, exactly once. Resuming is separate from deciding, so a crash
//! between the two is picked up here at start-up and on every tick. A resume that failed is
//! never retried here, only on the owner's request (see [`resume_one`]).

use std::time::Duration;

use iris_core::ports::QueueStore;

use crate::state::AppState;

/// Resumes the run paused on `approval_id` in the background; a failure is recorded on the row
/// by the agent (shown on the card, retried on the owner's request).
pub fn spawn_resume(state: AppState, approval_id: String) {
    // Test-only (debug builds, `IRIS_FAILPOINT`): the decision is stored, the resume not
    // started; the sweep must pick it up after a crash here.
    iris_core::failpoint::hit(iris_core::failpoint::AFTER_DECISION);
    tokio::spawn(async move { resume_one(&state, &approval_id).await });
}

/// Resumes one run now. The checkpoint's compare-and-set makes a second call a no-op.
///
/// A failed resume (model unreachable, store error) is recorded on the row by the agent
/// (`resume_error`) and is **not** retried by the sweep: its checkpoint is taken, so
/// [`QueueStore::unresumed`] no longer lists it. Only the owner retries it
/// (`POST /governance/approvals/{id}/resume`), because a retry runs the model again and the
/// owner should see why it failed first; the pinned call itself never runs twice either way.
pub async fn resume_one(state: &AppState, approval_id: &str) {
    if let Err(e) = state.agent.resume(approval_id).await {
        tracing::error!(approval = %approval_id, error = %e, "resuming the paused run failed");
    }
}

/// Start-up recovery (DESIGN §8 "a resume after a crash picks up from the ledger"): every run
/// that was being resumed when the server stopped (its checkpoint taken, its run never ended)
/// is continued once more, in the background, from the ledger: an `executed`/`failed` call's
/// recorded result becomes the observation; an `unknown` one (the crash fell between
/// `executing` and its outcome) is never run again and the owner is told in the chat; a call
/// never claimed runs once. Must run before this process resumes anything (before the sweeps
/// and the routes): a run being resumed right now looks the same as an interrupted one.
///
/// # Errors
/// When the interrupted runs cannot be read.
pub async fn recover_interrupted(state: &AppState) -> anyhow::Result<()> {
    let interrupted = iris_core::ports::CheckpointStore::interrupted(&state.store).await?;
    if interrupted.is_empty() {
        return Ok(());
    }
    for (id, _) in &interrupted {
        tracing::warn!(approval = %id, "continuing a resume the server's stop interrupted");
    }
    let state = state.clone();
    tokio::spawn(async move {
        for (id, recoveries) in interrupted {
            if let Err(e) = state.agent.recover_interrupted(&id, recoveries).await {
                tracing::error!(approval = %id, error = %e, "continuing an interrupted resume failed");
            }
        }
    });
    Ok(())
}

/// One sweep: expire lapsed rows, then resume every decided, unresumed row.
pub async fn sweep_once(state: &AppState) {
    match state.governance.expire_lapsed().await {
        Ok(ids) => {
            for id in ids {
                tracing::info!(approval = %id, "approval lapsed; nothing was changed");
            }
        }
        Err(e) => tracing::error!(error = %e, "expiry sweep failed"),
    }
    match state.store.unresumed().await {
        Ok(ids) => {
            for id in ids {
                resume_one(state, &id).await;
            }
        }
        Err(e) => tracing::error!(error = %e, "resume sweep failed"),
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

/// Runs the email plugin's sync every `IRIS_MAIL_SYNC_SECS` seconds (0: never), so mail that
/// arrives after start-up reaches searches and category clean-ups. Incremental: an IMAP folder
/// whose UIDVALIDITY, UIDNEXT and count are unchanged is not listed again. A failed sync is
/// logged and retried at the next tick; it never stops the server.
pub fn spawn_mail_sync(state: AppState) {
    let secs = state.settings.mail_sync_secs;
    if secs == 0 {
        return;
    }
    let every = Duration::from_secs(secs);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        // The first tick fires at once, and start-up has just synced.
        tick.tick().await;
        loop {
            tick.tick().await;
            match state.email.sync().await {
                Ok(report) => {
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
