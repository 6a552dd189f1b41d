//! What the SQLite and PostgreSQL engines share: the stored forms (timestamps, JSON), the row
//! decoders that turn a bad row into [`StoreError::Corrupt`], the rules checked before or after a
//! statement (insert validation, claim denials, device conflicts), and [`impl_storage_traits!`],
//! which implements every storage trait of [`iris_core::ports`] once for both engines.
//!
//! Both schemas (`migrations/sqlite/`, `migrations/postgres/`) have the same tables, columns and
//! rules, and every statement below is written with `$1`-style placeholders, which sqlx accepts
//! on both engines, so one body of code serves both. What differs per engine lives in its module:
//! connecting, migrating, and reading a row's columns ([`RowRead`]).

use chrono::{DateTime, SecondsFormat, Utc};
use iris_core::canonical::{call_hash, canonical_json};
use iris_core::ports::{
    ClaimOutcome, Device, NewApproval, Scope, StoreError, TelegramCard, TelegramView,
};
use iris_core::wire::{Approval, ApprovalKind, ApprovalStatus, AuditEntry, AuditKind, Execution};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// The stored form of an instant: RFC 3339, UTC, nanoseconds, `Z`
/// (`2026-01-02T03:04:05.000000006Z`). Fixed width, so text comparison in SQL is time order
/// (byte order: SQLite's default, the "C" collation on PostgreSQL). Both engines store every
/// time in this form.
pub fn timestamp_text(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Nanos, true)
}

/// Maps a database error to [`StoreError::Backend`], saying what was being done.
pub(crate) fn backend(doing: &'static str) -> impl Fn(sqlx::Error) -> StoreError {
    move |e| StoreError::Backend(format!("{doing}: {e}"))
}

/// Encodes a value as JSON text for a column.
pub(crate) fn to_json<T: Serialize + ?Sized>(value: &T, what: &str) -> Result<String, StoreError> {
    serde_json::to_string(value)
        .map_err(|e| StoreError::Backend(format!("encoding {what} as JSON: {e}")))
}

/// Reading one column of a result row, per engine (the only decoding that differs).
pub(crate) trait RowRead {
    /// A text column (NULL is `None`).
    fn opt_string(&self, column: &str) -> Result<Option<String>, sqlx::Error>;
    /// An integer column (row ids, sequence numbers).
    fn integer(&self, column: &str) -> Result<i64, sqlx::Error>;
    /// An integer column that may be NULL (a Telegram message id not yet known).
    fn opt_integer(&self, column: &str) -> Result<Option<i64>, sqlx::Error>;
    /// A boolean column; `Err` says why the stored value is not a boolean.
    fn boolean(&self, column: &str) -> Result<bool, String>;
}

/// Reads the columns of one row; every failure is [`StoreError::Corrupt`] naming the row.
pub(crate) struct Cols<'r, R> {
    pub(crate) row: &'r R,
    pub(crate) table: &'static str,
    pub(crate) id: String,
}

impl<'r, R: RowRead> Cols<'r, R> {
    /// Reads a row whose id is in column `id_column`.
    pub(crate) fn new(
        row: &'r R,
        table: &'static str,
        id_column: &str,
    ) -> Result<Self, StoreError> {
        let id = row
            .opt_string(id_column)
            .map_err(|e| e.to_string())
            .and_then(|id| id.ok_or_else(|| "missing".to_owned()))
            .map_err(|reason| StoreError::Corrupt {
                id: format!("{table} row with an unreadable {id_column}"),
                reason,
            })?;
        Ok(Cols { row, table, id })
    }

    /// A [`StoreError::Corrupt`] naming this row and `column`.
    pub(crate) fn corrupt(&self, column: &str, reason: impl std::fmt::Display) -> StoreError {
        StoreError::Corrupt {
            id: self.id.clone(),
            reason: format!("{}.{column}: {reason}", self.table),
        }
    }

    pub(crate) fn opt_text(&self, column: &str) -> Result<Option<String>, StoreError> {
        self.row
            .opt_string(column)
            .map_err(|e| self.corrupt(column, e))
    }

    pub(crate) fn text(&self, column: &str) -> Result<String, StoreError> {
        self.opt_text(column)?
            .ok_or_else(|| self.corrupt(column, "missing"))
    }

    pub(crate) fn json<T: DeserializeOwned>(&self, column: &str) -> Result<T, StoreError> {
        let text = self.text(column)?;
        serde_json::from_str(&text).map_err(|e| self.corrupt(column, e))
    }

    fn opt_json<T: DeserializeOwned>(&self, column: &str) -> Result<Option<T>, StoreError> {
        match self.opt_text(column)? {
            None => Ok(None),
            Some(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| self.corrupt(column, e)),
        }
    }

    fn parse_time(&self, column: &str, text: &str) -> Result<DateTime<Utc>, StoreError> {
        DateTime::parse_from_rfc3339(text)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| self.corrupt(column, format!("`{text}` is not an RFC 3339 time: {e}")))
    }

    fn time(&self, column: &str) -> Result<DateTime<Utc>, StoreError> {
        let text = self.text(column)?;
        self.parse_time(column, &text)
    }

    fn opt_time(&self, column: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        match self.opt_text(column)? {
            None => Ok(None),
            Some(text) => self.parse_time(column, &text).map(Some),
        }
    }

    fn flag(&self, column: &str) -> Result<bool, StoreError> {
        self.row
            .boolean(column)
            .map_err(|reason| self.corrupt(column, reason))
    }
}

/// The columns an [`Approval`] is read from: the row joined with its ledger entry.
pub(crate) const APPROVAL_SELECT: &str = "SELECT a.id, a.kind, a.status, a.tool, a.args, \
     a.call_hash, a.items, a.card, a.run_id, a.created_at, a.expires_at, a.responded_at, \
     a.responded_by, a.surface, a.reason, a.resume_error, l.state AS execution, l.result AS result \
     FROM approvals a LEFT JOIN ledger l ON l.approval_id = a.id";

/// Decodes one row of [`APPROVAL_SELECT`]. Unknown kind, status or ledger state, unparseable
/// JSON or times: [`StoreError::Corrupt`] (a corrupt row is never executed, DESIGN §8).
pub(crate) fn approval_from_row<R: RowRead>(row: &R) -> Result<Approval, StoreError> {
    let c = Cols::new(row, "approvals", "id")?;
    let kind_text = c.text("kind")?;
    let kind = ApprovalKind::parse(&kind_text)
        .ok_or_else(|| c.corrupt("kind", format!("unknown kind `{kind_text}`")))?;
    let status_text = c.text("status")?;
    let status = ApprovalStatus::parse(&status_text)
        .ok_or_else(|| c.corrupt("status", format!("unknown status `{status_text}`")))?;
    let execution = match c.opt_text("execution")? {
        None => Execution::None,
        Some(state) => match Execution::parse(&state) {
            Some(Execution::None) | None => {
                return Err(c.corrupt("execution", format!("unknown ledger state `{state}`")))
            }
            Some(execution) => execution,
        },
    };
    Ok(Approval {
        kind,
        status,
        tool: c.text("tool")?,
        args: c.json("args")?,
        call_hash: c.text("call_hash")?,
        items: c.json("items")?,
        card: c.json("card")?,
        run_id: c.text("run_id")?,
        created_at: c.time("created_at")?,
        expires_at: c.time("expires_at")?,
        responded_at: c.opt_time("responded_at")?,
        responded_by: c.opt_text("responded_by")?,
        surface: c.opt_text("surface")?,
        reason: c.opt_text("reason")?,
        execution,
        result: c.opt_json("result")?,
        resume_error: c.opt_text("resume_error")?,
        id: c.id,
    })
}

/// The stored spelling of an audit kind.
pub(crate) fn audit_kind_text(kind: AuditKind) -> &'static str {
    match kind {
        AuditKind::Decision => "decision",
        AuditKind::Execution => "execution",
        AuditKind::Denial => "denial",
        AuditKind::Lapse => "lapse",
    }
}

/// Parses the stored spelling of an audit kind.
fn parse_audit_kind(text: &str) -> Option<AuditKind> {
    match text {
        "decision" => Some(AuditKind::Decision),
        "execution" => Some(AuditKind::Execution),
        "denial" => Some(AuditKind::Denial),
        "lapse" => Some(AuditKind::Lapse),
        _ => None,
    }
}

/// Decodes one `audit_log` row.
pub(crate) fn audit_from_row<R: RowRead>(row: &R) -> Result<AuditEntry, StoreError> {
    let id = row.integer("id").map_err(|e| StoreError::Corrupt {
        id: "audit_log row with an unreadable id".to_owned(),
        reason: e.to_string(),
    })?;
    let c = Cols {
        row,
        table: "audit_log",
        id: format!("audit entry {id}"),
    };
    let kind_text = c.text("kind")?;
    let kind = parse_audit_kind(&kind_text)
        .ok_or_else(|| c.corrupt("kind", format!("unknown kind `{kind_text}`")))?;
    Ok(AuditEntry {
        id,
        approval_id: c.text("approval_id")?,
        kind,
        item: c.opt_text("item")?,
        result: c.json("result")?,
        undo_available: c.flag("undo_available")?,
        actor: c.text("actor")?,
        surface: c.opt_text("surface")?,
        at: c.time("at")?,
    })
}

/// Decodes one `devices` row.
pub(crate) fn device_from_row<R: RowRead>(row: &R) -> Result<Device, StoreError> {
    let mut c = Cols::new(row, "devices", "name")?;
    c.id = format!("device `{}`", c.id);
    let scope_text = c.text("scope")?;
    let scope = Scope::parse(&scope_text)
        .ok_or_else(|| c.corrupt("scope", format!("unknown scope `{scope_text}`")))?;
    Ok(Device {
        name: c.text("name")?,
        scope,
        created_at: c.time("created_at")?,
        last_used_at: c.opt_time("last_used_at")?,
    })
}

/// Decodes one `pairing_links` row (issue 5).
pub(crate) fn pairing_from_row<R: RowRead>(
    row: &R,
) -> Result<iris_core::pairing::PairingLink, StoreError> {
    let mut c = Cols::new(row, "pairing_links", "code_hash")?;
    // The code hash names the row in errors; it is not the code, so showing a prefix is safe.
    c.id = format!("pairing link {}…", c.id.chars().take(8).collect::<String>());
    let scope_text = c.text("scope")?;
    let scope = Scope::parse(&scope_text)
        .ok_or_else(|| c.corrupt("scope", format!("unknown scope `{scope_text}`")))?;
    Ok(iris_core::pairing::PairingLink {
        scope,
        created_by: c.text("created_by")?,
        created_at: c.time("created_at")?,
        expires_at: c.time("expires_at")?,
        used_at: c.opt_time("used_at")?,
        device_name: c.opt_text("device_name")?,
    })
}

/// The columns a [`TelegramCard`] is read from (migration 0015).
pub(crate) const TELEGRAM_CARD_SELECT: &str = "SELECT t.chat_id, t.approval_id, t.message_id, \
     t.view, t.shown_text, t.settled, t.sent_at, t.updated_at FROM telegram_cards t";

/// Decodes one `telegram_cards` row; an unknown view or time is [`StoreError::Corrupt`].
pub(crate) fn telegram_card_from_row<R: RowRead>(row: &R) -> Result<TelegramCard, StoreError> {
    let mut c = Cols::new(row, "telegram_cards", "approval_id")?;
    c.id = format!("telegram card of approval `{}`", c.id);
    let chat_id = row
        .integer("chat_id")
        .map_err(|e| c.corrupt("chat_id", e))?;
    let message_id = row
        .opt_integer("message_id")
        .map_err(|e| c.corrupt("message_id", e))?;
    let view_text = c.text("view")?;
    let view = TelegramView::parse(&view_text)
        .ok_or_else(|| c.corrupt("view", format!("unknown view `{view_text}`")))?;
    Ok(TelegramCard {
        chat_id,
        approval_id: c.text("approval_id")?,
        message_id,
        view,
        shown_text: c.opt_text("shown_text")?,
        settled: c.flag("settled")?,
        sent_at: c.time("sent_at")?,
        updated_at: c.time("updated_at")?,
    })
}

/// Refuses (before touching the database) a row whose `args_canonical` is not the canonical JSON
/// of `args` or whose `call_hash` does not cover `tool` and those bytes: what the card shows is
/// what is hashed is what executes (DESIGN §8).
pub(crate) fn check_new_approval(row: &NewApproval) -> Result<(), StoreError> {
    if canonical_json(&row.args) != row.args_canonical {
        return Err(StoreError::Backend(format!(
            "approval `{}`: args_canonical is not the canonical JSON of args (DESIGN §2 canonical JSON)",
            row.id
        )));
    }
    if call_hash(&row.tool, &row.args) != row.call_hash {
        return Err(StoreError::Backend(format!(
            "approval `{}`: call_hash does not cover tool `{}` and its canonical arguments (DESIGN §2)",
            row.id, row.tool
        )));
    }
    Ok(())
}

/// The refused claim's approval row joined with its ledger entry.
pub(crate) const CLAIM_REFUSAL_SELECT: &str =
    "SELECT a.id, a.kind, a.status, a.tool, a.args_canonical, l.state FROM approvals a \
     LEFT JOIN ledger l ON l.approval_id = a.id WHERE a.id = $1";

/// Names the rule that refused a claim, from the row of [`CLAIM_REFUSAL_SELECT`] (`None`: no
/// such approval).
pub(crate) fn claim_denial<R: RowRead>(
    approval_id: &str,
    row: Option<&R>,
    tool: &str,
    args_canonical: &str,
) -> Result<ClaimOutcome, StoreError> {
    let Some(row) = row else {
        return Ok(ClaimOutcome::Denied(format!(
            "no such approval `{approval_id}`: a call runs only under an approval row (DESIGN §2 claim)"
        )));
    };
    let c = Cols {
        row,
        table: "approvals",
        id: approval_id.to_owned(),
    };
    if c.text("kind")? == "evaluator" {
        return Ok(ClaimOutcome::Denied(format!(
            "approval `{approval_id}` is an evaluator halt: it pins no call to execute (DESIGN §2 kind)"
        )));
    }
    let status = c.text("status")?;
    if status != "approved" {
        return Ok(ClaimOutcome::Denied(format!(
            "approval `{approval_id}` is not approved (status {status}) (DESIGN §2 claim)"
        )));
    }
    let approved_tool = c.text("tool")?;
    if approved_tool != tool {
        return Ok(ClaimOutcome::Denied(format!(
            "approval `{approval_id}` pins another tool: `{approved_tool}`, not `{tool}` (DESIGN §2 claim)"
        )));
    }
    if c.text("args_canonical")? != args_canonical {
        return Ok(ClaimOutcome::Denied(format!(
            "arguments differ from the approved ones for approval `{approval_id}` (DESIGN §2 claim)"
        )));
    }
    let state = c
        .opt_text("state")?
        .unwrap_or_else(|| "being claimed".to_owned());
    Ok(ClaimOutcome::Denied(format!(
        "approval `{approval_id}` was already claimed (ledger: {state}); a pinned call executes at most once (DESIGN §8)"
    )))
}

/// Maps the failure of adding a device: a unique violation names the rule (token already paired,
/// or a live device with that name).
pub(crate) fn device_add_error(name: &str, error: sqlx::Error) -> StoreError {
    match error {
        sqlx::Error::Database(e) if e.is_unique_violation() => {
            let on_token = e.message().contains("token_hash")
                || e.constraint().is_some_and(|c| c.contains("token_hash"));
            if on_token {
                StoreError::Backend(format!(
                    "device `{name}`: this token is already paired to another device"
                ))
            } else {
                StoreError::Backend(format!(
                    "a device named `{name}` already exists (names are unique among live devices)"
                ))
            }
        }
        e => backend("adding a device")(e),
    }
}

/// Implements every storage trait of [`iris_core::ports`] for an engine's store type, whose
/// field `pool` is its sqlx pool and whose rows implement [`RowRead`]. The statements are the
/// same on both engines (DESIGN §6: both enforce the same rules); every compare-and-set
/// (decide, claim, take-for-resume) is one SQL statement, so the database serialises concurrent
/// writers and exactly one of them wins.
macro_rules! impl_storage_traits {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl iris_core::ports::QueueStore for $store {
            /// Writes a pending row. Refuses (before touching the database) a row whose
            /// `args_canonical` is not the canonical JSON of `args` or whose `call_hash` does not
            /// cover `tool` and those bytes: what the card shows is what is hashed is what
            /// executes (DESIGN §8).
            async fn insert(
                &self,
                row: &iris_core::ports::NewApproval,
            ) -> Result<(), iris_core::ports::StoreError> {
                use $crate::engine::{backend, check_new_approval, timestamp_text, to_json};
                check_new_approval(row)?;
                sqlx::query(
                    "INSERT INTO approvals (id, kind, status, tool, args, args_canonical, \
                     call_hash, items, card, run_id, context_summary, created_at, expires_at, \
                     preconditions) \
                     VALUES ($1, $2, 'pending', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
                )
                .bind(&row.id)
                .bind(row.kind.as_str())
                .bind(&row.tool)
                .bind(to_json(&row.args, "approval args")?)
                .bind(&row.args_canonical)
                .bind(&row.call_hash)
                .bind(to_json(&row.items, "approval items")?)
                .bind(to_json(&row.card, "approval card")?)
                .bind(&row.run_id)
                .bind(&row.context_summary)
                .bind(timestamp_text(row.created_at))
                .bind(timestamp_text(row.expires_at))
                .bind(to_json(&row.preconditions, "approval preconditions")?)
                .execute(&self.pool)
                .await
                .map_err(backend("writing an approval row"))?;
                Ok(())
            }

            async fn get(
                &self,
                id: &str,
            ) -> Result<Option<iris_core::wire::Approval>, iris_core::ports::StoreError> {
                use $crate::engine::{approval_from_row, backend, APPROVAL_SELECT};
                let row = sqlx::query(&format!("{APPROVAL_SELECT} WHERE a.id = $1"))
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(backend("reading an approval row"))?;
                row.as_ref().map(approval_from_row).transpose()
            }

            /// Pending rows first, oldest first; then answered rows, newest answer first. Fails
            /// with [`StoreError::Corrupt`] when any listed row does not parse.
            async fn list(
                &self,
                status: Option<iris_core::wire::ApprovalStatus>,
            ) -> Result<Vec<iris_core::wire::Approval>, iris_core::ports::StoreError> {
                use $crate::engine::{approval_from_row, backend, APPROVAL_SELECT};
                let sql = format!(
                    "{APPROVAL_SELECT} WHERE ($1 IS NULL OR a.status = $1) \
                     ORDER BY CASE WHEN a.status = 'pending' THEN 0 ELSE 1 END, \
                     CASE WHEN a.status = 'pending' THEN a.created_at END ASC, \
                     a.responded_at DESC, a.created_at DESC, a.id"
                );
                let rows = sqlx::query(&sql)
                    .bind(status.map(iris_core::wire::ApprovalStatus::as_str))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(backend("listing approvals"))?;
                rows.iter().map(approval_from_row).collect()
            }

            /// One compare-and-set statement from `pending`. An approval or rejection also needs
            /// the row not to have lapsed (`expires_at > at`); an expiry needs it to have lapsed
            /// (`expires_at <= at`). `Ok(false)` otherwise; [`StoreError::NotFound`] for an
            /// unknown id; [`StoreError::Backend`] for a `pending` response.
            async fn decide(
                &self,
                id: &str,
                response: &iris_core::ports::Response,
            ) -> Result<bool, iris_core::ports::StoreError> {
                use iris_core::ports::StoreError;
                use iris_core::wire::ApprovalStatus;
                use $crate::engine::{backend, timestamp_text};
                let time_rule = match response.status {
                    ApprovalStatus::Pending => {
                        return Err(StoreError::Backend(format!(
                            "approval `{id}`: `pending` is not a decision"
                        )))
                    }
                    ApprovalStatus::Approved | ApprovalStatus::Rejected => "expires_at > $2",
                    ApprovalStatus::Expired => "expires_at <= $2",
                };
                let sql = format!(
                    "UPDATE approvals SET status = $1, responded_at = $2, responded_by = $3, \
                     surface = $4, reason = $5 WHERE id = $6 AND status = 'pending' AND {time_rule}"
                );
                let done = sqlx::query(&sql)
                    .bind(response.status.as_str())
                    .bind(timestamp_text(response.at))
                    .bind(&response.responded_by)
                    .bind(&response.surface)
                    .bind(&response.reason)
                    .bind(id)
                    .execute(&self.pool)
                    .await
                    .map_err(backend("deciding an approval"))?;
                if done.rows_affected() == 1 {
                    return Ok(true);
                }
                let exists = sqlx::query("SELECT id FROM approvals WHERE id = $1")
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(backend("reading an approval row"))?;
                match exists {
                    Some(_) => Ok(false),
                    None => Err(StoreError::NotFound(format!("approval {id}"))),
                }
            }

            async fn lapsed(
                &self,
                now: chrono::DateTime<chrono::Utc>,
            ) -> Result<Vec<String>, iris_core::ports::StoreError> {
                use $crate::engine::{backend, timestamp_text};
                sqlx::query_scalar::<_, String>(
                    "SELECT id FROM approvals WHERE status = 'pending' AND expires_at <= $1 \
                     ORDER BY expires_at, id",
                )
                .bind(timestamp_text(now))
                .fetch_all(&self.pool)
                .await
                .map_err(backend("finding lapsed approvals"))
            }

            /// Sets the row's checkpoint; the database refuses changing an existing link.
            /// [`StoreError::NotFound`] for an unknown approval.
            async fn link_checkpoint(
                &self,
                id: &str,
                checkpoint_id: &str,
            ) -> Result<(), iris_core::ports::StoreError> {
                use $crate::engine::backend;
                let done = sqlx::query("UPDATE approvals SET checkpoint_id = $1 WHERE id = $2")
                    .bind(checkpoint_id)
                    .bind(id)
                    .execute(&self.pool)
                    .await
                    .map_err(backend("linking an approval to its checkpoint"))?;
                if done.rows_affected() == 0 {
                    return Err(iris_core::ports::StoreError::NotFound(format!(
                        "approval {id}"
                    )));
                }
                Ok(())
            }

            /// Decided rows (approved, rejected, expired) with a checkpoint not yet taken for
            /// resuming, oldest answer first.
            async fn unresumed(&self) -> Result<Vec<String>, iris_core::ports::StoreError> {
                sqlx::query_scalar::<_, String>(
                    "SELECT a.id FROM approvals a JOIN checkpoints c ON c.approval_id = a.id \
                     WHERE a.status IN ('approved', 'rejected', 'expired') \
                     AND c.resumed_at IS NULL ORDER BY a.responded_at, a.id",
                )
                .fetch_all(&self.pool)
                .await
                .map_err($crate::engine::backend("finding unresumed approvals"))
            }

            /// [`StoreError::NotFound`] for an unknown approval.
            async fn set_resume_error(
                &self,
                id: &str,
                error: Option<&str>,
            ) -> Result<(), iris_core::ports::StoreError> {
                let done = sqlx::query("UPDATE approvals SET resume_error = $1 WHERE id = $2")
                    .bind(error)
                    .bind(id)
                    .execute(&self.pool)
                    .await
                    .map_err($crate::engine::backend("recording a resume error"))?;
                if done.rows_affected() == 0 {
                    return Err(iris_core::ports::StoreError::NotFound(format!(
                        "approval {id}"
                    )));
                }
                Ok(())
            }

            /// Reads column `preconditions` (a JSON array, immutable like the other request
            /// terms; migration 0003). Anything else stored there is [`StoreError::Corrupt`].
            async fn preconditions(
                &self,
                id: &str,
            ) -> Result<Vec<serde_json::Value>, iris_core::ports::StoreError> {
                use $crate::engine::{backend, Cols};
                let row = sqlx::query("SELECT id, preconditions FROM approvals WHERE id = $1")
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(backend("reading an approval's preconditions"))?;
                match row {
                    None => Ok(Vec::new()),
                    Some(row) => Cols::new(&row, "approvals", "id")?.json("preconditions"),
                }
            }
        }

        #[async_trait::async_trait]
        impl iris_core::ports::Ledger for $store {
            /// One `INSERT … SELECT` statement writes `executing` only when the approval row is
            /// approved, is not an evaluator halt (which pins no call), names `tool` and holds
            /// byte-equal canonical arguments, and no ledger entry exists (primary key).
            /// Triggers re-check the same rules in the database.
            /// When nothing was inserted the row is read to name the rule that refused.
            async fn claim(
                &self,
                approval_id: &str,
                tool: &str,
                args_canonical: &str,
                at: chrono::DateTime<chrono::Utc>,
            ) -> Result<iris_core::ports::ClaimOutcome, iris_core::ports::StoreError> {
                use $crate::engine::{backend, claim_denial, timestamp_text, CLAIM_REFUSAL_SELECT};
                let done = sqlx::query(
                    "INSERT INTO ledger (approval_id, tool, args_canonical, state, claimed_at) \
                     SELECT id, tool, args_canonical, 'executing', $1 FROM approvals \
                     WHERE id = $2 AND status = 'approved' AND kind <> 'evaluator' \
                     AND tool = $3 AND args_canonical = $4 \
                     ON CONFLICT (approval_id) DO NOTHING",
                )
                .bind(timestamp_text(at))
                .bind(approval_id)
                .bind(tool)
                .bind(args_canonical)
                .execute(&self.pool)
                .await
                .map_err(backend("claiming an approval"))?;
                if done.rows_affected() == 1 {
                    return Ok(iris_core::ports::ClaimOutcome::Claimed);
                }
                let row = sqlx::query(CLAIM_REFUSAL_SELECT)
                    .bind(approval_id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(backend("reading a refused claim's approval"))?;
                claim_denial(approval_id, row.as_ref(), tool, args_canonical)
            }

            /// Moves the entry from `executing` to `executed` or `failed` with the result.
            /// [`StoreError::NotFound`] when nothing claimed the approval;
            /// [`StoreError::Backend`] when the entry is no longer `executing` (its outcome is
            /// written once).
            async fn finish(
                &self,
                approval_id: &str,
                executed: bool,
                result: &serde_json::Value,
                at: chrono::DateTime<chrono::Utc>,
            ) -> Result<(), iris_core::ports::StoreError> {
                use iris_core::ports::StoreError;
                use $crate::engine::{backend, timestamp_text, to_json};
                let state = if executed { "executed" } else { "failed" };
                let done = sqlx::query(
                    "UPDATE ledger SET state = $1, result = $2, finished_at = $3 \
                     WHERE approval_id = $4 AND state = 'executing'",
                )
                .bind(state)
                .bind(to_json(result, "a ledger result")?)
                .bind(timestamp_text(at))
                .bind(approval_id)
                .execute(&self.pool)
                .await
                .map_err(backend("writing a ledger outcome"))?;
                if done.rows_affected() == 1 {
                    return Ok(());
                }
                let current = sqlx::query_scalar::<_, String>(
                    "SELECT state FROM ledger WHERE approval_id = $1",
                )
                .bind(approval_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(backend("reading a ledger entry"))?;
                match current {
                    None => Err(StoreError::NotFound(format!(
                        "ledger entry of approval {approval_id}"
                    ))),
                    Some(current) => Err(StoreError::Backend(format!(
                        "the ledger entry of approval `{approval_id}` is `{current}`, not \
                         `executing`: its outcome is written once (DESIGN §8)"
                    ))),
                }
            }

            /// The approval ids come back sorted, whatever order the database returns them in.
            async fn mark_unknown(&self) -> Result<Vec<String>, iris_core::ports::StoreError> {
                let mut ids = sqlx::query_scalar::<_, String>(
                    "UPDATE ledger SET state = 'unknown' WHERE state = 'executing' \
                     RETURNING approval_id",
                )
                .fetch_all(&self.pool)
                .await
                .map_err($crate::engine::backend("marking interrupted executions unknown"))?;
                ids.sort();
                Ok(ids)
            }
        }

        #[async_trait::async_trait]
        impl iris_core::ports::AuditLog for $store {
            async fn append(
                &self,
                entry: &iris_core::ports::NewAuditEntry,
            ) -> Result<(), iris_core::ports::StoreError> {
                use $crate::engine::{audit_kind_text, backend, timestamp_text, to_json};
                sqlx::query(
                    "INSERT INTO audit_log (approval_id, kind, item, result, undo_available, \
                     actor, surface, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                )
                .bind(&entry.approval_id)
                .bind(audit_kind_text(entry.kind))
                .bind(&entry.item)
                .bind(to_json(&entry.result, "an audit result")?)
                .bind(entry.undo_available)
                .bind(&entry.actor)
                .bind(&entry.surface)
                .bind(timestamp_text(entry.at))
                .execute(&self.pool)
                .await
                .map_err(backend("appending to the audit log"))?;
                Ok(())
            }

            async fn entries(
                &self,
                approval_id: Option<&str>,
            ) -> Result<Vec<iris_core::wire::AuditEntry>, iris_core::ports::StoreError> {
                let rows = sqlx::query(
                    "SELECT id, approval_id, kind, item, result, undo_available, actor, surface, \
                     at FROM audit_log WHERE ($1 IS NULL OR approval_id = $1) ORDER BY id",
                )
                .bind(approval_id)
                .fetch_all(&self.pool)
                .await
                .map_err($crate::engine::backend("reading the audit log"))?;
                rows.iter().map($crate::engine::audit_from_row).collect()
            }
        }

        #[async_trait::async_trait]
        impl iris_core::ports::CheckpointStore for $store {
            /// Inserts the checkpoint (JSON body). The approval row must exist (foreign key); a
            /// second checkpoint for the same approval or id is refused.
            async fn save(
                &self,
                checkpoint: &iris_core::ports::Checkpoint,
            ) -> Result<(), iris_core::ports::StoreError> {
                use $crate::engine::{backend, timestamp_text, to_json};
                sqlx::query(
                    "INSERT INTO checkpoints (id, approval_id, run_id, conversation_id, body, \
                     created_at) VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .bind(&checkpoint.id)
                .bind(&checkpoint.approval_id)
                .bind(&checkpoint.run_id)
                .bind(&checkpoint.conversation_id)
                .bind(to_json(checkpoint, "a checkpoint")?)
                .bind(timestamp_text(chrono::Utc::now()))
                .execute(&self.pool)
                .await
                .map_err(backend("saving a checkpoint"))?;
                Ok(())
            }

            /// `UPDATE … SET resumed_at WHERE resumed_at IS NULL RETURNING body`: exactly one
            /// caller gets the body. The same statement marks the approval resumed (trigger); the
            /// database refuses it while the approval is still pending. A body that does not
            /// parse is [`StoreError::Corrupt`] and stays taken (it is never executed).
            async fn take_for_resume(
                &self,
                approval_id: &str,
            ) -> Result<Option<iris_core::ports::Checkpoint>, iris_core::ports::StoreError>
            {
                use $crate::engine::{backend, timestamp_text, Cols};
                let rows = sqlx::query(
                    "UPDATE checkpoints SET resumed_at = $1 \
                     WHERE approval_id = $2 AND resumed_at IS NULL RETURNING id, body",
                )
                .bind(timestamp_text(chrono::Utc::now()))
                .bind(approval_id)
                .fetch_all(&self.pool)
                .await
                .map_err(backend("taking a checkpoint for resuming"))?;
                let Some(row) = rows.first() else {
                    return Ok(None);
                };
                let c = Cols::new(row, "checkpoints", "id")?;
                c.json("body").map(Some)
            }

            /// One compare-and-set statement clears the approval's `resume_error`, only when the
            /// approval is decided, a resume error is recorded, the run was already taken for
            /// resuming and a checkpoint exists; exactly one concurrent caller wins. The winner
            /// then reads the checkpoint body (a body that does not parse is
            /// [`StoreError::Corrupt`]: never executed).
            async fn take_for_retry(
                &self,
                approval_id: &str,
            ) -> Result<Option<iris_core::ports::Checkpoint>, iris_core::ports::StoreError>
            {
                use $crate::engine::{backend, Cols};
                let won = sqlx::query(
                    "UPDATE approvals SET resume_error = NULL \
                     WHERE id = $1 AND status <> 'pending' AND resume_error IS NOT NULL \
                     AND resumed_at IS NOT NULL \
                     AND EXISTS (SELECT 1 FROM checkpoints c WHERE c.approval_id = approvals.id)",
                )
                .bind(approval_id)
                .execute(&self.pool)
                .await
                .map_err(backend("taking a failed resume for retrying"))?;
                if won.rows_affected() != 1 {
                    return Ok(None);
                }
                // The retried run is running again: a crash before it ends leaves it to the
                // start-up recovery (`interrupted`).
                sqlx::query("UPDATE checkpoints SET finished_at = NULL WHERE approval_id = $1")
                    .bind(approval_id)
                    .execute(&self.pool)
                    .await
                    .map_err(backend("reopening a retried resume"))?;
                let row = sqlx::query("SELECT id, body FROM checkpoints WHERE approval_id = $1")
                    .bind(approval_id)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(backend("reading a checkpoint for retrying"))?;
                Cols::new(&row, "checkpoints", "id")?.json("body").map(Some)
            }

            async fn conversation_of(
                &self,
                approval_id: &str,
            ) -> Result<Option<String>, iris_core::ports::StoreError> {
                sqlx::query_scalar::<_, String>(
                    "SELECT conversation_id FROM checkpoints WHERE approval_id = $1",
                )
                .bind(approval_id)
                .fetch_optional(&self.pool)
                .await
                .map_err($crate::engine::backend("reading a checkpoint's conversation"))
            }

            /// Sets `finished_at` once (migration 0011); a later call changes nothing.
            async fn finish_resume(
                &self,
                approval_id: &str,
            ) -> Result<(), iris_core::ports::StoreError> {
                use $crate::engine::{backend, timestamp_text};
                sqlx::query(
                    "UPDATE checkpoints SET finished_at = $1 \
                     WHERE approval_id = $2 AND finished_at IS NULL",
                )
                .bind(timestamp_text(chrono::Utc::now()))
                .bind(approval_id)
                .execute(&self.pool)
                .await
                .map_err(backend("recording that a resumed run ended"))?;
                Ok(())
            }

            async fn interrupted(
                &self,
            ) -> Result<Vec<(String, i64)>, iris_core::ports::StoreError> {
                sqlx::query_as::<_, (String, i64)>(
                    "SELECT c.approval_id, c.recoveries FROM checkpoints c \
                     JOIN approvals a ON a.id = c.approval_id \
                     WHERE c.resumed_at IS NOT NULL AND c.finished_at IS NULL \
                     AND a.resume_error IS NULL ORDER BY c.resumed_at, c.approval_id",
                )
                .fetch_all(&self.pool)
                .await
                .map_err($crate::engine::backend("finding interrupted resumes"))
            }

            /// `UPDATE … SET recoveries = recoveries + 1 WHERE recoveries = $seen … RETURNING
            /// body`: exactly one caller gets the body. A body that does not parse is
            /// [`StoreError::Corrupt`] (never executed).
            async fn take_interrupted(
                &self,
                approval_id: &str,
                recoveries: i64,
            ) -> Result<Option<iris_core::ports::Checkpoint>, iris_core::ports::StoreError>
            {
                use $crate::engine::{backend, Cols};
                let rows = sqlx::query(
                    "UPDATE checkpoints SET recoveries = recoveries + 1 \
                     WHERE approval_id = $1 AND recoveries = $2 \
                     AND resumed_at IS NOT NULL AND finished_at IS NULL RETURNING id, body",
                )
                .bind(approval_id)
                .bind(recoveries)
                .fetch_all(&self.pool)
                .await
                .map_err(backend("taking an interrupted resume"))?;
                let Some(row) = rows.first() else {
                    return Ok(None);
                };
                Cols::new(row, "checkpoints", "id")?.json("body").map(Some)
            }
        }

        #[async_trait::async_trait]
        impl iris_core::ports::ConversationStore for $store {
            /// [`StoreError::Corrupt`] (naming the conversation) when the stored transcript does
            /// not parse.
            async fn transcript(
                &self,
                conversation_id: &str,
            ) -> Result<Vec<iris_core::model::Message>, iris_core::ports::StoreError> {
                let row = sqlx::query("SELECT id, transcript FROM conversations WHERE id = $1")
                    .bind(conversation_id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err($crate::engine::backend("reading a transcript"))?;
                match row {
                    None => Ok(Vec::new()),
                    Some(row) => {
                        $crate::engine::Cols::new(&row, "conversations", "id")?.json("transcript")
                    }
                }
            }

            async fn save_transcript(
                &self,
                conversation_id: &str,
                messages: &[iris_core::model::Message],
            ) -> Result<(), iris_core::ports::StoreError> {
                use $crate::engine::{backend, timestamp_text, to_json};
                sqlx::query(
                    "INSERT INTO conversations (id, transcript, created_at, updated_at) \
                     VALUES ($1, $2, $3, $3) \
                     ON CONFLICT (id) DO UPDATE SET transcript = excluded.transcript, \
                     updated_at = excluded.updated_at",
                )
                .bind(conversation_id)
                .bind(to_json(messages, "a transcript")?)
                .bind(timestamp_text(chrono::Utc::now()))
                .execute(&self.pool)
                .await
                .map_err(backend("saving a transcript"))?;
                Ok(())
            }

            async fn append_line(
                &self,
                conversation_id: &str,
                line: &iris_core::wire::ChatLine,
            ) -> Result<(), iris_core::ports::StoreError> {
                sqlx::query(
                    "INSERT INTO conversation_lines (conversation_id, role, text, approval_id, \
                     created_at) VALUES ($1, $2, $3, $4, $5)",
                )
                .bind(conversation_id)
                .bind(&line.role)
                .bind(&line.text)
                .bind(&line.approval_id)
                .bind($crate::engine::timestamp_text(chrono::Utc::now()))
                .execute(&self.pool)
                .await
                .map_err($crate::engine::backend("appending a conversation line"))?;
                Ok(())
            }

            async fn lines(
                &self,
                conversation_id: &str,
            ) -> Result<Vec<iris_core::wire::ChatLine>, iris_core::ports::StoreError> {
                use $crate::engine::{Cols, RowRead};
                let rows = sqlx::query(
                    "SELECT seq, role, text, approval_id FROM conversation_lines \
                     WHERE conversation_id = $1 ORDER BY seq",
                )
                .bind(conversation_id)
                .fetch_all(&self.pool)
                .await
                .map_err($crate::engine::backend("reading conversation lines"))?;
                rows.iter()
                    .map(|row| {
                        let seq = row.integer("seq").unwrap_or_default();
                        let c = Cols {
                            row,
                            table: "conversation_lines",
                            id: format!("line {seq} of conversation {conversation_id}"),
                        };
                        Ok(iris_core::wire::ChatLine {
                            role: c.text("role")?,
                            text: c.text("text")?,
                            approval_id: c.opt_text("approval_id")?,
                        })
                    })
                    .collect()
            }
        }

        #[async_trait::async_trait]
        impl iris_core::ports::DeviceStore for $store {
            /// [`StoreError::Backend`] naming the rule when a live device already has the name or
            /// the token hash is already stored.
            async fn add(
                &self,
                device: &iris_core::ports::Device,
                token_hash: &str,
            ) -> Result<(), iris_core::ports::StoreError> {
                use $crate::engine::timestamp_text;
                sqlx::query(
                    "INSERT INTO devices (name, scope, token_hash, created_at, last_used_at) \
                     VALUES ($1, $2, $3, $4, $5)",
                )
                .bind(&device.name)
                .bind(device.scope.as_str())
                .bind(token_hash)
                .bind(timestamp_text(device.created_at))
                .bind(device.last_used_at.map(timestamp_text))
                .execute(&self.pool)
                .await
                .map(|_| ())
                .map_err(|e| $crate::engine::device_add_error(&device.name, e))
            }

            async fn authenticate(
                &self,
                token_hash: &str,
                at: chrono::DateTime<chrono::Utc>,
            ) -> Result<Option<iris_core::ports::Device>, iris_core::ports::StoreError> {
                let rows = sqlx::query(
                    "UPDATE devices SET last_used_at = $1 \
                     WHERE token_hash = $2 AND revoked_at IS NULL \
                     RETURNING name, scope, created_at, last_used_at",
                )
                .bind($crate::engine::timestamp_text(at))
                .bind(token_hash)
                .fetch_all(&self.pool)
                .await
                .map_err($crate::engine::backend("authenticating a device"))?;
                rows.first().map($crate::engine::device_from_row).transpose()
            }

            async fn is_live(
                &self,
                token_hash: &str,
            ) -> Result<bool, iris_core::ports::StoreError> {
                let rows = sqlx::query(
                    "SELECT name FROM devices WHERE token_hash = $1 AND revoked_at IS NULL",
                )
                .bind(token_hash)
                .fetch_all(&self.pool)
                .await
                .map_err($crate::engine::backend("checking a device"))?;
                Ok(!rows.is_empty())
            }

            async fn list(
                &self,
            ) -> Result<Vec<iris_core::ports::Device>, iris_core::ports::StoreError> {
                let rows = sqlx::query(
                    "SELECT name, scope, created_at, last_used_at FROM devices \
                     WHERE revoked_at IS NULL ORDER BY name",
                )
                .fetch_all(&self.pool)
                .await
                .map_err($crate::engine::backend("listing devices"))?;
                rows.iter().map($crate::engine::device_from_row).collect()
            }

            async fn revoke(&self, name: &str) -> Result<bool, iris_core::ports::StoreError> {
                let done = sqlx::query(
                    "UPDATE devices SET revoked_at = $1 WHERE name = $2 AND revoked_at IS NULL",
                )
                .bind($crate::engine::timestamp_text(chrono::Utc::now()))
                .bind(name)
                .execute(&self.pool)
                .await
                .map_err($crate::engine::backend("revoking a device"))?;
                Ok(done.rows_affected() > 0)
            }
        }

        #[async_trait::async_trait]
        impl iris_core::ports::PairingStore for $store {
            async fn create_pairing(
                &self,
                code_hash: &str,
                link: &iris_core::pairing::PairingLink,
            ) -> Result<(), iris_core::ports::StoreError> {
                use $crate::engine::timestamp_text;
                sqlx::query(
                    "INSERT INTO pairing_links (code_hash, scope, created_by, created_at, expires_at) \
                     VALUES ($1, $2, $3, $4, $5)",
                )
                .bind(code_hash)
                .bind(link.scope.as_str())
                .bind(&link.created_by)
                .bind(timestamp_text(link.created_at))
                .bind(timestamp_text(link.expires_at))
                .execute(&self.pool)
                .await
                .map(|_| ())
                .map_err($crate::engine::backend("storing a pairing link"))
            }

            async fn pairing(
                &self,
                code_hash: &str,
            ) -> Result<Option<iris_core::pairing::PairingLink>, iris_core::ports::StoreError>
            {
                let rows = sqlx::query(
                    "SELECT code_hash, scope, created_by, created_at, expires_at, used_at, device_name \
                     FROM pairing_links WHERE code_hash = $1",
                )
                .bind(code_hash)
                .fetch_all(&self.pool)
                .await
                .map_err($crate::engine::backend("reading a pairing link"))?;
                rows.first().map($crate::engine::pairing_from_row).transpose()
            }

            async fn redeem_pairing(
                &self,
                code_hash: &str,
                device_name: &str,
                token_hash: &str,
                at: chrono::DateTime<chrono::Utc>,
            ) -> Result<iris_core::pairing::Redemption, iris_core::ports::StoreError> {
                use iris_core::pairing::Redemption;
                use $crate::engine::{backend, timestamp_text};
                let now = timestamp_text(at);
                let mut tx = self
                    .pool
                    .begin()
                    .await
                    .map_err(backend("starting a pairing"))?;
                // The compare-and-set: one statement, so of two redemptions at once exactly one
                // finds the link unused (DESIGN §6: the database serialises writers).
                let claimed = sqlx::query(
                    "UPDATE pairing_links SET used_at = $1, device_name = $2 \
                     WHERE code_hash = $3 AND used_at IS NULL AND expires_at > $1 \
                     RETURNING scope",
                )
                .bind(&now)
                .bind(device_name)
                .bind(code_hash)
                .fetch_all(&mut *tx)
                .await
                .map_err(backend("redeeming a pairing link"))?;
                let Some(row) = claimed.first() else {
                    tx.rollback().await.map_err(backend("ending a pairing"))?;
                    let link = iris_core::ports::PairingStore::pairing(self, code_hash).await?;
                    return Ok(match link {
                        None => Redemption::Unknown,
                        // Not usable now (the statement found it so): used or lapsed.
                        Some(link) => link.unusable_at(at).unwrap_or(Redemption::Lapsed {
                            expires_at: link.expires_at,
                        }),
                    });
                };
                let scope_text = $crate::engine::RowRead::opt_string(row, "scope")
                    .map_err(backend("reading a pairing link's scope"))?
                    .unwrap_or_default();
                let scope = iris_core::ports::Scope::parse(&scope_text).ok_or_else(|| {
                    iris_core::ports::StoreError::Corrupt {
                        id: "pairing link".to_owned(),
                        reason: format!("unknown scope `{scope_text}`"),
                    }
                })?;
                let added = sqlx::query(
                    "INSERT INTO devices (name, scope, token_hash, created_at, last_used_at) \
                     VALUES ($1, $2, $3, $4, $4)",
                )
                .bind(device_name)
                .bind(scope.as_str())
                .bind(token_hash)
                .bind(&now)
                .execute(&mut *tx)
                .await;
                match added {
                    Ok(_) => {}
                    Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                        // The link stays unused: the person may pick another name.
                        tx.rollback().await.map_err(backend("ending a pairing"))?;
                        return Ok(Redemption::NameTaken);
                    }
                    Err(e) => return Err($crate::engine::device_add_error(device_name, e)),
                }
                tx.commit().await.map_err(backend("committing a pairing"))?;
                Ok(Redemption::Paired(iris_core::ports::Device {
                    name: device_name.to_owned(),
                    scope,
                    created_at: at,
                    last_used_at: Some(at),
                }))
            }
        }

        #[async_trait::async_trait]
        impl iris_core::ports::TelegramCardStore for $store {
            /// `INSERT … ON CONFLICT DO NOTHING` on the primary key (chat, approval): exactly one
            /// concurrent caller wins.
            async fn claim_telegram_card(
                &self,
                chat_id: i64,
                approval_id: &str,
                at: chrono::DateTime<chrono::Utc>,
            ) -> Result<bool, iris_core::ports::StoreError> {
                use $crate::engine::{backend, timestamp_text};
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
                .map_err($crate::engine::backend("releasing a Telegram card"))?;
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
                .map_err($crate::engine::backend("releasing unsent Telegram cards"))?;
                released.sort();
                Ok(released.into_iter().map(|(_, id)| id).collect())
            }

            /// One upsert on the primary key: every column but `sent_at` is overwritten.
            async fn record_telegram_card(
                &self,
                card: &iris_core::ports::TelegramCard,
            ) -> Result<(), iris_core::ports::StoreError> {
                use $crate::engine::{backend, timestamp_text};
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
            ) -> Result<Option<iris_core::ports::TelegramCard>, iris_core::ports::StoreError>
            {
                use $crate::engine::{backend, telegram_card_from_row, TELEGRAM_CARD_SELECT};
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
                use $crate::engine::{backend, timestamp_text};
                sqlx::query_scalar::<_, String>(
                    "SELECT a.id FROM approvals a \
                     WHERE a.status = 'pending' AND a.expires_at > $2 AND NOT EXISTS \
                     (SELECT 1 FROM telegram_cards t \
                      WHERE t.chat_id = $1 AND t.approval_id = a.id) \
                     ORDER BY a.created_at, a.id",
                )
                .bind(chat_id)
                .bind(timestamp_text(now))
                .fetch_all(&self.pool)
                .await
                .map_err(backend("finding unsent Telegram cards"))
            }

            async fn unsettled_telegram_cards(
                &self,
                chat_id: i64,
            ) -> Result<Vec<iris_core::ports::TelegramCard>, iris_core::ports::StoreError>
            {
                use $crate::engine::{backend, telegram_card_from_row, TELEGRAM_CARD_SELECT};
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
    };
}

pub(crate) use impl_storage_traits;
