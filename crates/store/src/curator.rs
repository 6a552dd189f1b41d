//! The curator table (DESIGN §2 "escalation"): [`iris_core::escalation::CuratorStore`] on both
//! engines, table `curator_verdicts` (migrations `0010_curator.sql` of each engine).
//!
//! One row per verdict, in `shadow` and `enforce` mode alike: run id, conversation id, hop,
//! verdict, reason, mode, whether escalation acted and, when not, why not, and when. The table is
//! append-only in the database itself (triggers refuse update and delete), and its checks refuse a
//! row that acted with a reason not to, or a shadow row that acted. The statements are
//! written once with `$1` placeholders and serve both engines.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use iris_core::escalation::{CuratorRecord, CuratorStore, EscalationMode, NotActed, Verdict};
use iris_core::ports::StoreError;

use sqlx::any::AnyRow;

use crate::rows::Cols;
use crate::Store;

/// The columns a [`CuratorRecord`] is read from.
const CURATOR_SELECT: &str = "SELECT seq, id, run_id, conversation_id, hop, verdict, reason, \
     mode, acted, not_acted, at FROM curator_verdicts";

/// Decodes one `curator_verdicts` row; anything unknown is [`StoreError::Corrupt`] naming it.
fn record_from_row(row: &AnyRow) -> Result<CuratorRecord, StoreError> {
    let mut c = Cols::new(row, "curator_verdicts", "id")?;
    c.id = format!("curator record `{}`", c.id);
    let verdict_text = c.text("verdict")?;
    let verdict = Verdict::parse(&verdict_text)
        .ok_or_else(|| c.corrupt("verdict", format!("unknown verdict `{verdict_text}`")))?;
    let mode_text = c.text("mode")?;
    let mode = match EscalationMode::parse(&mode_text) {
        Some(m @ (EscalationMode::Shadow | EscalationMode::Enforce)) => m,
        _ => return Err(c.corrupt("mode", format!("unknown mode `{mode_text}`"))),
    };
    let not_acted = match c.opt_text("not_acted")? {
        None => None,
        Some(text) => Some(
            NotActed::parse(&text)
                .ok_or_else(|| c.corrupt("not_acted", format!("unknown reason `{text}`")))?,
        ),
    };
    let acted = c.flag("acted")?;
    let hop = c.integer("hop")?;
    let hop = u32::try_from(hop).map_err(|_| c.corrupt("hop", format!("`{hop}` is not a hop")))?;
    let at_text = c.text("at")?;
    let at = DateTime::parse_from_rfc3339(&at_text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| c.corrupt("at", format!("`{at_text}` is not an RFC 3339 time: {e}")))?;
    Ok(CuratorRecord {
        id: c.text("id")?,
        run_id: c.text("run_id")?,
        conversation_id: c.text("conversation_id")?,
        hop,
        verdict,
        reason: c.text("reason")?,
        mode,
        acted,
        not_acted,
        at,
    })
}

#[async_trait]
impl CuratorStore for Store {
    /// Appends one record. [`StoreError::Backend`] when the database refuses it (an
    /// `off` mode, an acted row with a reason not to, a shadow row that acted, a
    /// duplicate id).
    async fn record(&self, record: &CuratorRecord) -> Result<(), StoreError> {
        use crate::rows::backend;
        use crate::timestamp_text;
        if record.mode == EscalationMode::Off {
            return Err(StoreError::Backend(format!(
                "curator record `{}`: mode `off` records nothing",
                record.id
            )));
        }
        sqlx::query(
            "INSERT INTO curator_verdicts (id, run_id, conversation_id, hop, verdict, \
             reason, mode, acted, not_acted, at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(&record.id)
        .bind(&record.run_id)
        .bind(&record.conversation_id)
        .bind(i64::from(record.hop))
        .bind(record.verdict.as_str())
        .bind(&record.reason)
        .bind(record.mode.as_str())
        .bind(record.acted)
        .bind(record.not_acted.map(NotActed::as_str))
        .bind(timestamp_text(record.at))
        .execute(&self.pool)
        .await
        .map_err(backend("recording a curator verdict"))?;
        Ok(())
    }

    /// Oldest first (insertion order). [`StoreError::Corrupt`] when a row does not parse.
    async fn records(
        &self,
        conversation_id: Option<&str>,
    ) -> Result<Vec<CuratorRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "{CURATOR_SELECT} WHERE ($1 IS NULL OR conversation_id = $1) ORDER BY seq"
        ))
        .bind(conversation_id)
        .fetch_all(&self.pool)
        .await
        .map_err(crate::rows::backend("reading curator verdicts"))?;
        rows.iter().map(record_from_row).collect()
    }
}
