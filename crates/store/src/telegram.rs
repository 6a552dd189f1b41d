//! Which Telegram message shows which approval ([`TelegramCardStore`], migration 0015), on both
//! engines.

use iris_core::ports::TelegramCardStore;

use crate::Store;

#[async_trait::async_trait]
impl TelegramCardStore for Store {
    /// `INSERT … ON CONFLICT DO NOTHING` on the primary key (chat, approval): exactly one
    /// concurrent caller wins.
    async fn claim_telegram_card(
        &self,
        chat_id: i64,
        approval_id: &str,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Result<bool, iris_core::ports::StoreError> {
        use crate::rows::backend;
        use crate::timestamp_text;
        let done = sqlx::query(
            "INSERT INTO telegram_cards (chat_id, approval_id, message_id, view, \
             shown_text, settled, sent_at, updated_at) \
             VALUES ($1, $2, NULL, 'card', NULL, $3, $4, $4) \
             ON CONFLICT (chat_id, approval_id) DO NOTHING",
        )
        .bind(chat_id)
        .bind(approval_id)
        .bind(false)
        .bind(timestamp_text(at))
        .execute(&self.pool)
        .await
        .map_err(backend("claiming a Telegram card"))?;
        Ok(done.rows_affected() == 1)
    }

    async fn release_telegram_card(
        &self,
        chat_id: i64,
        approval_id: &str,
    ) -> Result<(), iris_core::ports::StoreError> {
        sqlx::query(
            "DELETE FROM telegram_cards \
             WHERE chat_id = $1 AND approval_id = $2 AND message_id IS NULL",
        )
        .bind(chat_id)
        .bind(approval_id)
        .execute(&self.pool)
        .await
        .map_err(crate::rows::backend("releasing a Telegram card"))?;
        Ok(())
    }

    /// The ids come back oldest claim first, whatever order the database deletes in.
    async fn release_unsent_telegram_cards(
        &self,
        chat_id: i64,
    ) -> Result<Vec<String>, iris_core::ports::StoreError> {
        let mut released = sqlx::query_as::<_, (String, String)>(
            "DELETE FROM telegram_cards WHERE chat_id = $1 AND message_id IS NULL \
             RETURNING sent_at, approval_id",
        )
        .bind(chat_id)
        .fetch_all(&self.pool)
        .await
        .map_err(crate::rows::backend("releasing unsent Telegram cards"))?;
        released.sort();
        Ok(released.into_iter().map(|(_, id)| id).collect())
    }

    /// One upsert on the primary key: every column but `sent_at` is overwritten.
    async fn record_telegram_card(
        &self,
        card: &iris_core::ports::TelegramCard,
    ) -> Result<(), iris_core::ports::StoreError> {
        use crate::rows::backend;
        use crate::timestamp_text;
        sqlx::query(
            "INSERT INTO telegram_cards (chat_id, approval_id, message_id, view, \
             shown_text, settled, sent_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
             ON CONFLICT (chat_id, approval_id) DO UPDATE SET \
             message_id = excluded.message_id, view = excluded.view, \
             shown_text = excluded.shown_text, settled = excluded.settled, \
             updated_at = excluded.updated_at",
        )
        .bind(card.chat_id)
        .bind(&card.approval_id)
        .bind(card.message_id)
        .bind(card.view.as_str())
        .bind(&card.shown_text)
        .bind(card.settled)
        .bind(timestamp_text(card.sent_at))
        .bind(timestamp_text(card.updated_at))
        .execute(&self.pool)
        .await
        .map_err(backend("recording a Telegram card"))?;
        Ok(())
    }

    async fn telegram_card(
        &self,
        chat_id: i64,
        approval_id: &str,
    ) -> Result<Option<iris_core::ports::TelegramCard>, iris_core::ports::StoreError> {
        use crate::rows::{backend, telegram_card_from_row, TELEGRAM_CARD_SELECT};
        let row = sqlx::query(&format!(
            "{TELEGRAM_CARD_SELECT} WHERE t.chat_id = $1 AND t.approval_id = $2"
        ))
        .bind(chat_id)
        .bind(approval_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(backend("reading a Telegram card"))?;
        row.as_ref().map(telegram_card_from_row).transpose()
    }

    async fn unsent_telegram_cards(
        &self,
        chat_id: i64,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Vec<String>, iris_core::ports::StoreError> {
        use crate::rows::backend;
        use crate::timestamp_text;
        sqlx::query_scalar::<_, String>(&format!(
            "SELECT a.id FROM approvals a \
             WHERE a.status = 'pending' AND {} AND NOT EXISTS \
             (SELECT 1 FROM telegram_cards t \
              WHERE t.chat_id = $1 AND t.approval_id = a.id) \
             ORDER BY a.created_at, a.id",
            crate::rows::answerable_sql("a.", "$2")
        ))
        .bind(chat_id)
        .bind(timestamp_text(now))
        .fetch_all(&self.pool)
        .await
        .map_err(backend("finding unsent Telegram cards"))
    }

    async fn unsettled_telegram_cards(
        &self,
        chat_id: i64,
    ) -> Result<Vec<iris_core::ports::TelegramCard>, iris_core::ports::StoreError> {
        use crate::rows::{backend, telegram_card_from_row, TELEGRAM_CARD_SELECT};
        let rows = sqlx::query(&format!(
            "{TELEGRAM_CARD_SELECT} JOIN approvals a ON a.id = t.approval_id \
             WHERE t.chat_id = $1 AND t.message_id IS NOT NULL AND NOT t.settled \
             AND a.status <> 'pending' ORDER BY a.responded_at, t.approval_id"
        ))
        .bind(chat_id)
        .fetch_all(&self.pool)
        .await
        .map_err(backend("finding unsettled Telegram cards"))?;
        rows.iter().map(telegram_card_from_row).collect()
    }
}
