//! A rejection's reason given after the tap (docs/adr/0125-reason-after-reject.md): one unit,
//! the compare-and-set on a rejected row without a reason and the events that announce it, and
//! the conversation of the row's paused run (where the model is told).

use iris_core::ports::{Outbox, StoreError};

use crate::rows::ColumnRead;
use crate::unit::Stmt;
use crate::writes::finish_cas;
use crate::Store;

impl Store {
    /// Writes `reason` on rejected row `id` when it has none (the schema allows exactly that
    /// change after a decision: migrations `0035_reason_after_reject`), with `outbox` staged in
    /// the same commit. `Some(conversation)` when written (`None` inside when the row has no
    /// checkpoint), `None` when the compare-and-set found the row not rejected or with a reason.
    pub(crate) async fn write_reason(
        &self,
        id: &str,
        reason: &str,
        outbox: &Outbox,
    ) -> Result<Option<Option<String>>, StoreError> {
        let mut tx = self.begin_write().await?;
        let conversation = tx
            .fetch(
                Stmt::new("SELECT conversation_id FROM checkpoints WHERE approval_id = $1")
                    .text(id),
                "reading the run's conversation",
            )
            .await;
        let conversation = match conversation {
            Ok(rows) => rows
                .first()
                .and_then(|r| r.text_at("conversation_id").ok().flatten()),
            Err(e) => {
                tx.rollback().await;
                return Err(e);
            }
        };
        let written = async {
            tx.exec_cas(
                Stmt::new(
                    "UPDATE approvals SET reason = $1 \
                     WHERE id = $2 AND status = 'rejected' AND reason IS NULL",
                )
                .text(reason)
                .text(id),
                "adding a rejection's reason",
            )
            .await?;
            self.stage_outbox(&mut tx, outbox).await
        }
        .await;
        let won = finish_cas(tx, written).await?;
        if won {
            self.deliver(outbox);
        }
        Ok(won.then_some(conversation))
    }
}
