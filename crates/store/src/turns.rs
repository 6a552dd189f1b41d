//! The writes of a turn's end and of a new card, shared by the units that make them
//! (`commit_turn`, `finish_job`, the gateway's request): the row with its request terms, the
//! checkpoint and its link, the transcript, the lines the owner sees.

use iris_core::ports::{
    card_search_text, ActionRecord, HaltRecord, NewApproval, StoreError, TurnCommit,
};
use iris_core::wire::ChatLine;

use crate::rows::{check_new_approval, live_device, to_json};
use crate::unit::{is_assertion, Stmt, WriteTx};
use crate::{timestamp_text, Store};

impl Store {
    /// A turn's writes in `tx`: its card (when it halted), the transcript, the lines.
    pub(crate) async fn write_turn(
        &self,
        tx: &mut WriteTx,
        turn: &TurnCommit,
    ) -> Result<(), StoreError> {
        if let Some(halt) = &turn.halt {
            self.write_halt(tx, halt).await?;
        }
        // DESIGN §8 "nothing is lost": the transcript is written only over the version the run
        // read; another run's messages that landed first are never overwritten.
        let transcript = to_json(&turn.transcript, "a transcript")?;
        let write = if turn.transcript_version == 0 {
            self.timed(
                "INSERT INTO conversations (id, transcript, version, created_at, updated_at) \
                 VALUES ($2, $3, 1, {now}, {now}) ON CONFLICT (id) DO NOTHING",
            )
            .text(&turn.conversation_id)
            .text(&transcript)
        } else {
            self.timed(
                "UPDATE conversations SET transcript = $3, version = version + 1, \
                 updated_at = {now} WHERE id = $2 AND version = $4",
            )
            .text(&turn.conversation_id)
            .text(&transcript)
            .int(turn.transcript_version)
        };
        tx.exec_cas(write, "saving a transcript")
            .await
            .map_err(|e| {
                if is_assertion(&e) {
                    StoreError::TranscriptMoved(turn.conversation_id.clone())
                } else {
                    e
                }
            })?;
        self.write_lines(tx, &turn.conversation_id, &turn.lines)
            .await?;
        self.write_actions(tx, &turn.actions).await
    }

    /// The audit entries (kind `action`, no approval) of writes that ran without a card,
    /// stamped with the store's time (docs/liveness.md "writes without a card").
    async fn write_actions(
        &self,
        tx: &mut WriteTx,
        actions: &[ActionRecord],
    ) -> Result<(), StoreError> {
        for action in actions {
            let mut result = action.result.clone();
            if let Some(object) = result.as_object_mut() {
                object.insert("tool".into(), serde_json::json!(action.tool));
                object.insert(
                    "conversation_id".into(),
                    serde_json::json!(action.conversation_id),
                );
                if let Some(undo) = &action.undo_tool {
                    object.insert("undo".into(), serde_json::json!(undo));
                }
            }
            tx.exec(
                self.timed(
                    "INSERT INTO audit_log (approval_id, run_id, kind, item, result, \
                     undo_available, actor, surface, at) \
                     VALUES (NULL, $2, 'action', NULL, $3, $4, 'iris', NULL, {now})",
                )
                .text(&action.run_id)
                .text(&to_json(&result, "an action's result")?)
                .flag(action.undo_tool.is_some()),
                "auditing a write without a card",
            )
            .await?;
        }
        Ok(())
    }

    /// Appends `lines` to a conversation, in order, in one statement.
    pub(crate) async fn write_lines(
        &self,
        tx: &mut WriteTx,
        conversation_id: &str,
        lines: &[ChatLine],
    ) -> Result<(), StoreError> {
        if lines.is_empty() {
            return Ok(());
        }
        let mut sql = String::from(
            "INSERT INTO conversation_lines (conversation_id, role, text, approval_id, \
             created_at) VALUES ",
        );
        for i in 0..lines.len() {
            let p = 3 + i * 3;
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("($2, ${p}, ${}, ${}, {{now}})", p + 1, p + 2));
        }
        let mut stmt = self.timed(&sql).text(conversation_id);
        for line in lines {
            stmt = stmt
                .text(&line.role)
                .text(&line.text)
                .opt_text(line.approval_id.as_deref());
        }
        tx.exec(stmt, "appending conversation lines").await
    }

    /// The card: row, checkpoint, and the row's link to it (DESIGN §3 step 4).
    pub(crate) async fn write_halt(
        &self,
        tx: &mut WriteTx,
        halt: &HaltRecord,
    ) -> Result<(), StoreError> {
        let row = &halt.approval;
        let checkpoint = &halt.checkpoint;
        if checkpoint.approval_id != row.id {
            return Err(StoreError::Backend(format!(
                "approval `{}`: its checkpoint names approval `{}` (DESIGN §3 step 4)",
                row.id, checkpoint.approval_id
            )));
        }
        self.write_row(tx, row).await?;
        tx.exec(
            self.timed(
                "INSERT INTO checkpoints (id, approval_id, run_id, conversation_id, body, \
                 created_at) VALUES ($2, $3, $4, $5, $6, {now})",
            )
            .text(&checkpoint.id)
            .text(&checkpoint.approval_id)
            .text(&checkpoint.run_id)
            .text(&checkpoint.conversation_id)
            .text(&to_json(checkpoint, "a checkpoint")?),
            "saving a checkpoint",
        )
        .await?;
        tx.exec(
            Stmt::new("UPDATE approvals SET checkpoint_id = $1 WHERE id = $2")
                .text(&checkpoint.id)
                .text(&row.id),
            "linking an approval to its checkpoint",
        )
        .await
    }

    /// A new approval row, pending (its request terms checked first).
    pub(crate) async fn write_row(
        &self,
        tx: &mut WriteTx,
        row: &NewApproval,
    ) -> Result<(), StoreError> {
        check_new_approval(row)?;
        tx.exec(
            Stmt::new(format!(
                "INSERT INTO approvals (id, kind, status, tool, args, args_canonical, \
                 call_hash, items, card, run_id, context_summary, created_at, expires_at, \
                 preconditions, card_text, passkey_required, requested_by, \
                 requested_by_device) \
                 VALUES ($1, $2, 'pending', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, \
                 $15, $16, {})",
                live_device("$16")
            ))
            .text(&row.id)
            .text(row.kind.as_str())
            .text(&row.tool)
            .text(&to_json(&row.args, "approval args")?)
            .text(&row.args_canonical)
            .text(&row.call_hash)
            .text(&to_json(&row.items, "approval items")?)
            .text(&to_json(&row.card, "approval card")?)
            .text(&row.run_id)
            .text(&row.context_summary)
            .text(&timestamp_text(row.created_at))
            .text(&timestamp_text(row.expires_at))
            .text(&to_json(&row.preconditions, "approval preconditions")?)
            .text(&card_search_text(&row.card))
            .flag(row.passkey_required)
            .opt_text(row.requested_by.as_deref()),
            "writing an approval row",
        )
        .await
    }
}
