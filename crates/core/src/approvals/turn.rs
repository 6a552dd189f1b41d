//! The request phase (DESIGN §3 steps 1-4): one owner turn runs the agent loop and ends in one
//! commit, with its reply, or with a whole card (row, checkpoint, link) and its halt message,
//! both in the conversation. Every chat surface goes through [`ApprovalService::chat`], which
//! also runs the escalation judge when it is configured (DESIGN §2 "escalation").

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;

use super::{Actor, ApprovalService};
use crate::agent::{Agent, RunEnd, TranscriptChange, UndoRun};
use crate::escalation::{Escalator, FinishedTurn, TurnRunner};
use crate::plugin::CallContext;
use crate::ports::{ApprovalStore, HaltRecord, Outbox, StoreError, StoredTranscript, TurnCommit};
use crate::wire::{ChatLine, ChatResponse, Event};

pub use crate::wire::MAX_MESSAGE_CHARS;

/// The one check every chat surface applies before a turn runs: the message, trimmed, is not
/// empty and at most [`MAX_MESSAGE_CHARS`] characters.
///
/// # Errors
/// A sentence saying what is wrong and that nothing was done.
pub fn chat_message(message: &str) -> Result<&str, String> {
    let message = message.trim();
    if message.is_empty() {
        return Err("The message is empty; nothing was done.".into());
    }
    let count = message.chars().count();
    if count > MAX_MESSAGE_CHARS {
        return Err(format!(
            "The message is {count} characters long; at most {MAX_MESSAGE_CHARS} are accepted, so nothing was done."
        ));
    }
    Ok(message)
}

/// The longest conversation id a surface may give, in characters (a UUID has 36).
pub const MAX_CONVERSATION_ID_CHARS: usize = 128;

/// The one check of a conversation id a chat surface gives: not empty, at most
/// [`MAX_CONVERSATION_ID_CHARS`] characters, no control characters (it is shown and used in
/// links).
///
/// # Errors
/// A sentence saying what is wrong and that nothing was done.
pub fn conversation_id(id: &str) -> Result<&str, String> {
    if id.is_empty() {
        return Err(
            "The conversation id is empty: leave it out to start a new conversation. Nothing was done."
                .into(),
        );
    }
    let count = id.chars().count();
    if count > MAX_CONVERSATION_ID_CHARS {
        return Err(format!(
            "The conversation id is {count} characters long; at most {MAX_CONVERSATION_ID_CHARS} are accepted, so nothing was done."
        ));
    }
    if id.chars().any(char::is_control) {
        return Err("The conversation id holds control characters; nothing was done.".into());
    }
    Ok(id)
}

/// Why a chat turn did not run.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    /// A read device tried to chat (403).
    #[error(transparent)]
    Forbidden(#[from] super::NotControl),
    /// The message is empty or too long (400); nothing was done.
    #[error("{0}")]
    Invalid(String),
    /// The conversation could not be read or the turn's end written (500); no card exists.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Runs turns and writes their ends: what the escalator re-runs.
pub struct Turns {
    store: Arc<dyn ApprovalStore>,
    agent: Arc<Agent>,
}

impl Turns {
    /// Turns of `agent`, written to `store`.
    pub fn new(store: Arc<dyn ApprovalStore>, agent: Arc<Agent>) -> Turns {
        Turns { store, agent }
    }

    /// One owner turn: reads the conversation, runs the loop, writes its end in one commit.
    ///
    /// # Errors
    /// [`StoreError`]: nothing was written.
    pub async fn run(
        &self,
        conversation_id: Option<String>,
        message: &str,
    ) -> Result<ChatResponse, StoreError> {
        Ok(self.run_with_undos(conversation_id, message).await?.0)
    }

    /// [`Turns::run`], also returning the undo tools that ran in the turn (for their cards).
    ///
    /// # Errors
    /// [`StoreError`]: nothing was written.
    pub async fn run_with_undos(
        &self,
        conversation_id: Option<String>,
        message: &str,
    ) -> Result<(ChatResponse, Vec<UndoRun>), StoreError> {
        // A new conversation has nothing to read.
        let (conversation_id, read) = match conversation_id {
            Some(id) => {
                let read = self.store.transcript(&id).await?;
                (id, read)
            }
            None => (
                uuid::Uuid::new_v4().to_string(),
                StoredTranscript::default(),
            ),
        };
        let ctx = CallContext {
            run_id: uuid::Uuid::new_v4().to_string(),
            conversation_id,
            request: message.to_string(),
        };
        let transcript = self.agent.opening(read.messages.clone(), message);
        let mut end = self.agent.run(ctx, transcript, Vec::new(), false).await;
        super::overlap::annotate(self.store.as_ref(), &mut end).await;
        let change = TranscriptChange::between(&read.messages, &end.transcript, None);
        let owner = ChatLine {
            role: "owner".into(),
            text: message.to_string(),
            approval_id: None,
            approval_status: None,
        };
        let commit = turn_commit(&end, vec![owner], None, read.version);
        landing(self.store.as_ref(), commit, &change, |commit| async move {
            self.store.commit_turn(&commit).await
        })
        .await?;
        Ok((end.response(), end.undo_runs))
    }
}

#[async_trait]
impl TurnRunner for Turns {
    async fn run_turn(
        &self,
        conversation_id: Option<String>,
        message: &str,
    ) -> Result<ChatResponse, StoreError> {
        self.run(conversation_id, message).await
    }
}

/// The commit that ends a run: `lines_before` (the owner's message, what the owner must be
/// told), the reply (linked to the card when the run halted, else to `about`), the card itself,
/// and `approval.requested` for it.
pub(crate) fn turn_commit(
    end: &RunEnd,
    lines_before: Vec<ChatLine>,
    about: Option<&str>,
    transcript_version: i64,
) -> TurnCommit {
    let halt = end.halt.as_ref().map(|h| HaltRecord {
        approval: h.approval.clone(),
        checkpoint: end
            .checkpoint()
            .expect("a run with a halt has a checkpoint"),
    });
    let mut lines = lines_before;
    lines.push(ChatLine {
        role: "assistant".into(),
        text: end.reply.clone(),
        approval_id: end
            .halt
            .as_ref()
            .map(|h| h.approval.id.clone())
            .or_else(|| about.map(str::to_string)),
        approval_status: None,
    });
    let outbox = Outbox::of(
        halt.iter()
            .map(|h| Event::ApprovalRequested(h.approval.pending_view())),
    );
    TurnCommit {
        conversation_id: end.ctx.conversation_id.clone(),
        transcript: end.transcript.clone(),
        transcript_version,
        lines,
        halt,
        actions: end.actions.clone(),
        outbox,
    }
}

/// How many times a run's end is applied again to a transcript that moved under it before the
/// commit gives up (each retry means another run's commit landed in between: they end).
const REBASES: usize = 16;

/// Lands `turn` (a run's end, written over the transcript version it read) with `unit`. When
/// another run's messages landed first ([`StoreError::TranscriptMoved`]), re-reads the
/// transcript, applies `change` to it (DESIGN §8 "nothing is lost": appended, never
/// overwritten) and tries again, up to [`REBASES`] times.
///
/// # Errors
/// What `unit` or the re-read fails with; [`StoreError::TranscriptMoved`] when it still moved
/// after the last try (nothing was written).
pub(crate) async fn landing<T, F, Fut>(
    store: &dyn ApprovalStore,
    mut turn: TurnCommit,
    change: &TranscriptChange,
    mut unit: F,
) -> Result<T, StoreError>
where
    F: FnMut(TurnCommit) -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    for _ in 0..REBASES {
        match unit(turn.clone()).await {
            Err(StoreError::TranscriptMoved(conversation)) => {
                tracing::info!(%conversation, "another run's messages landed first; appending after them");
                let now = store.transcript(&turn.conversation_id).await?;
                turn.transcript = change.apply(now.messages);
                turn.transcript_version = now.version;
            }
            done => return done,
        }
    }
    unit(turn).await
}

impl ApprovalService {
    /// One owner turn through any chat surface: control scope only, the message checked, the
    /// turn run and written in one commit, then judged by the escalation judge when configured
    /// (in enforce mode it may re-run a turn that changed nothing; never a resumed one).
    ///
    /// The caller should run this on a task of its own: once the message is accepted, the turn
    /// must run to its end whatever the client does.
    ///
    /// # Errors
    /// [`ChatError::Forbidden`] for read scope, [`ChatError::Invalid`] for a bad message or
    /// conversation id (both change nothing), [`ChatError::Store`].
    pub async fn chat(
        &self,
        actor: &Actor,
        conversation_id: Option<String>,
        message: &str,
    ) -> Result<ChatResponse, ChatError> {
        actor.require_control("chat")?;
        let message = chat_message(message).map_err(ChatError::Invalid)?;
        if let Some(id) = &conversation_id {
            self::conversation_id(id).map_err(ChatError::Invalid)?;
        }
        let (response, undo_runs) = self.turns.run_with_undos(conversation_id, message).await?;
        self.link_undos(actor, &undo_runs).await;
        let Some(escalation) = &self.escalation else {
            return Ok(response);
        };
        let escalator = Escalator {
            mode: escalation.mode,
            judge: escalation.judge.clone(),
            curator: escalation.curator.clone(),
            runner: self.turns.clone(),
            clock: self.clock.clone(),
            max_hops: escalation.max_hops,
        };
        let outcome = escalator
            .maybe_escalate(FinishedTurn::from_response(message, &response))
            .await;
        if let Some(error) = &outcome.error {
            tracing::warn!(run = %response.run_id, %error, "escalation stopped early; the previous answer stands");
        }
        Ok(outcome.turn.to_response())
    }
}
