//! Reading rows into domain types: every failure is [`StoreError::Corrupt`] naming the row,
//! never a panic (DESIGN §8, fail closed). Rows come through sqlx's `Any` driver (reads, and
//! PostgreSQL's units) or from the SQLite writer ([`LiteRow`], `unit.rs`); both map values by
//! their stored type: SQLite's booleans arrive as integers, PostgreSQL's as booleans
//! ([`Cols::flag`] takes both).

use chrono::{DateTime, Utc};
use iris_core::canonical::{call_hash, canonical_json};
use iris_core::ports::{Device, NewApproval, Scope, StoreError, TelegramCard, TelegramView};
use iris_core::wire::{
    Approval, ApprovalKind, ApprovalStatus, AuditEntry, AuditKind, DecidedCall, Execution,
    RunningJob, UndoRecord, UndoState,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::Row;

/// Maps a database error to [`StoreError::Backend`], saying what was being done.
pub(crate) fn backend(doing: &'static str) -> impl Fn(sqlx::Error) -> StoreError {
    move |e| {
        // PostgreSQL's class 23 (integrity constraints; `iris_refuse` raises 23000); SQLite's
        // SQLITE_CONSTRAINT (19) in its primary or an extended code (a trigger's RAISE is 1811).
        let refused = match &e {
            sqlx::Error::Database(d) => d.code().is_some_and(|code| {
                code.starts_with("23") || code.parse::<i64>().is_ok_and(|n| n & 0xff == 19)
            }),
            _ => false,
        };
        refusal_marked(format!("{doing}: {e}"), refused)
    }
}

/// `message` as a [`StoreError::Refused`] when the database's own rules refused the statement
/// (it will be refused again: a poison job), else as a [`StoreError::Backend`] (a fault that
/// may pass, such as a dropped connection). See [`is_refusal`].
pub(crate) fn refusal_marked(message: String, refused: bool) -> StoreError {
    if refused {
        StoreError::Refused(format!("{message} (refused by the database's rules)"))
    } else {
        StoreError::Backend(message)
    }
}

/// Whether `error` is a statement the database's rules refused (it would be refused again).
pub(crate) fn is_refusal(error: &StoreError) -> bool {
    matches!(error, StoreError::Refused(_))
}

/// Encodes a value as JSON text for a column.
pub(crate) fn to_json<T: Serialize + ?Sized>(value: &T, what: &str) -> Result<String, StoreError> {
    serde_json::to_string(value)
        .map_err(|e| StoreError::Backend(format!("encoding {what} as JSON: {e}")))
}

/// A row's columns by name, from either driver. Each getter gives `Ok(None)` for NULL and fails
/// with the reason when the column is absent or holds another type.
pub(crate) trait ColumnRead {
    /// A text column.
    fn text_at(&self, column: &str) -> Result<Option<String>, String>;
    /// An integer column.
    fn int_at(&self, column: &str) -> Result<Option<i64>, String>;
    /// A boolean column (fails on SQLite, which stores booleans as integers).
    fn bool_at(&self, column: &str) -> Result<Option<bool>, String>;
}

impl ColumnRead for AnyRow {
    fn text_at(&self, column: &str) -> Result<Option<String>, String> {
        self.try_get::<Option<String>, _>(column)
            .map_err(|e| e.to_string())
    }

    fn int_at(&self, column: &str) -> Result<Option<i64>, String> {
        self.try_get::<Option<i64>, _>(column)
            .map_err(|e| e.to_string())
    }

    fn bool_at(&self, column: &str) -> Result<Option<bool>, String> {
        self.try_get::<Option<bool>, _>(column)
            .map_err(|e| e.to_string())
    }
}

/// One row the SQLite writer read: its column names (shared by the rows of one statement) and
/// values.
#[derive(Debug, Clone)]
pub(crate) struct LiteRow {
    pub(crate) names: std::sync::Arc<[String]>,
    pub(crate) values: Vec<rusqlite::types::Value>,
}

impl LiteRow {
    fn value(&self, column: &str) -> Result<&rusqlite::types::Value, String> {
        self.names
            .iter()
            .position(|name| name == column)
            .and_then(|i| self.values.get(i))
            .ok_or_else(|| format!("no column `{column}`"))
    }
}

impl ColumnRead for LiteRow {
    fn text_at(&self, column: &str) -> Result<Option<String>, String> {
        use rusqlite::types::Value;
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::Text(text) => Ok(Some(text.clone())),
            other => Err(format!(
                "`{column}` holds {:?}, not text",
                other.data_type()
            )),
        }
    }

    fn int_at(&self, column: &str) -> Result<Option<i64>, String> {
        use rusqlite::types::Value;
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::Integer(n) => Ok(Some(*n)),
            other => Err(format!(
                "`{column}` holds {:?}, not an integer",
                other.data_type()
            )),
        }
    }

    fn bool_at(&self, column: &str) -> Result<Option<bool>, String> {
        Err(format!("`{column}`: SQLite has no boolean type"))
    }
}

/// A row a unit of work read ([`crate::unit::WriteTx::fetch`]), from either engine's writer.
pub(crate) enum Record {
    /// PostgreSQL's, or an in-memory SQLite database's (sqlx).
    Any(AnyRow),
    /// A SQLite file's writer.
    Lite(LiteRow),
}

impl ColumnRead for Record {
    fn text_at(&self, column: &str) -> Result<Option<String>, String> {
        match self {
            Record::Any(row) => row.text_at(column),
            Record::Lite(row) => row.text_at(column),
        }
    }

    fn int_at(&self, column: &str) -> Result<Option<i64>, String> {
        match self {
            Record::Any(row) => row.int_at(column),
            Record::Lite(row) => row.int_at(column),
        }
    }

    fn bool_at(&self, column: &str) -> Result<Option<bool>, String> {
        match self {
            Record::Any(row) => row.bool_at(column),
            Record::Lite(row) => row.bool_at(column),
        }
    }
}

/// Reads the columns of one row; every failure is [`StoreError::Corrupt`] naming the row.
pub(crate) struct Cols<'r> {
    pub(crate) row: &'r dyn ColumnRead,
    pub(crate) table: &'static str,
    pub(crate) id: String,
}

impl<'r> Cols<'r> {
    /// Reads a row whose id is in column `id_column`.
    pub(crate) fn new(
        row: &'r dyn ColumnRead,
        table: &'static str,
        id_column: &str,
    ) -> Result<Self, StoreError> {
        let id = row
            .text_at(id_column)
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
            .text_at(column)
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

    pub(crate) fn opt_json<T: DeserializeOwned>(
        &self,
        column: &str,
    ) -> Result<Option<T>, StoreError> {
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

    pub(crate) fn time(&self, column: &str) -> Result<DateTime<Utc>, StoreError> {
        let text = self.text(column)?;
        self.parse_time(column, &text)
    }

    pub(crate) fn opt_time(&self, column: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        match self.opt_text(column)? {
            None => Ok(None),
            Some(text) => self.parse_time(column, &text).map(Some),
        }
    }

    /// A boolean column: PostgreSQL's BOOLEAN, or SQLite's 0/1 integer (anything else is
    /// corrupt).
    pub(crate) fn flag(&self, column: &str) -> Result<bool, StoreError> {
        if let Ok(Some(b)) = self.row.bool_at(column) {
            return Ok(b);
        }
        match self.row.int_at(column) {
            Ok(Some(0)) => Ok(false),
            Ok(Some(1)) => Ok(true),
            Ok(Some(other)) => Err(self.corrupt(column, format!("`{other}` is not 0 or 1"))),
            Ok(None) => Err(self.corrupt(column, "missing")),
            Err(e) => Err(self.corrupt(column, e)),
        }
    }

    /// An integer column.
    pub(crate) fn integer(&self, column: &str) -> Result<i64, StoreError> {
        self.opt_integer(column)?
            .ok_or_else(|| self.corrupt(column, "missing"))
    }

    /// An integer column that may be NULL.
    pub(crate) fn opt_integer(&self, column: &str) -> Result<Option<i64>, StoreError> {
        self.row.int_at(column).map_err(|e| self.corrupt(column, e))
    }
}

/// The columns of an [`Approval`] from its own row (`a`) and its ledger entry (`l`): every
/// statement that reads a whole approval starts from this one text, the claim's snapshot
/// (`claim.rs`) included, so a new column is added once.
macro_rules! approval_row_columns {
    () => {
        "a.id, a.kind, a.status, a.tool, a.args, a.call_hash, a.items, a.card, a.run_id, \
         a.created_at, a.expires_at, a.responded_at, a.responded_by, a.surface, a.reason, \
         a.resume_error, a.preconditions, a.passkey_required, a.requested_by, a.undo_left, \
         a.approved_items, a.decided_args, a.decided_call_hash, a.edited_fields, a.decided_items, \
         l.state AS execution, l.result AS result, l.located AS located"
    };
}
pub(crate) use approval_row_columns;

/// The column list of an [`Approval`] (a macro, so the constants below are built from one text):
/// [`approval_row_columns`], then its undo and its running job.
macro_rules! approval_columns {
    () => {
        concat!(
            approval_row_columns!(),
            ", u.state AS undo_state, u.items AS undo_items, u.actor AS undo_by, \
         u.surface AS undo_surface, u.started_at AS undo_at, u.finished_at AS undo_finished_at, \
         u.result AS undo_result, \
         rj.lease_owner AS job_holder, rj.claimed_at AS job_since, rj.lease_until AS job_until"
        )
    };
}

/// The tables an [`Approval`] is read from: the row, its ledger entry and its undo.
macro_rules! approval_from {
    () => {
        "FROM approvals a LEFT JOIN ledger l ON l.approval_id = a.id \
         LEFT JOIN undos u ON u.approval_id = a.id \
         LEFT JOIN resume_jobs rj ON rj.approval_id = a.id AND rj.state = 'running'"
    };
}

/// The columns an [`Approval`] is read from (see [`approval_from_row`]).
/// SQL, true when approval `a`'s requesting device is revoked (docs/liveness.md "revoked
/// devices"): the one spelling every read of that rule uses.
pub(crate) const REQUESTER_REVOKED: &str = "EXISTS (SELECT 1 FROM devices rd \
     WHERE rd.id = a.requested_by_device AND rd.revoked_at IS NOT NULL)";

/// SQL for the id of the live device named by parameter `param` (`$1`, `?`): rows requested
/// through the gateway belong to that id, so a device paired later under the same name never
/// reads, attaches to or inherits them.
pub(crate) fn live_device(param: &str) -> String {
    format!("(SELECT MAX(ld.id) FROM devices ld WHERE ld.name = {param} AND ld.revoked_at IS NULL)")
}

/// The lapse rule (`Approval::lapsed_at`) in SQL, one text for both engines: the card of
/// `alias` (`"a."`, or `""` for the bare table) is past its expiry at `now`, an SQL time
/// expression (`{now}`, the unit's database time, or a bound parameter such as `$2`). The
/// expiry instant itself counts as lapsed. Add `status = 'pending'` where "pending and lapsed"
/// is meant.
pub(crate) fn lapsed_sql(alias: &str, now: &str) -> String {
    format!("{alias}expires_at <= {now}")
}

/// The negation of [`lapsed_sql`]: the card of `alias` can still be answered at `now` (while
/// pending).
pub(crate) fn answerable_sql(alias: &str, now: &str) -> String {
    format!("{alias}expires_at > {now}")
}

pub(crate) const APPROVAL_COLUMNS: &str = approval_columns!();

/// The row joined with its ledger entry and its undo.
pub(crate) const APPROVAL_FROM: &str = approval_from!();

/// `SELECT` [`APPROVAL_COLUMNS`] [`APPROVAL_FROM`].
pub(crate) const APPROVAL_SELECT: &str =
    concat!("SELECT ", approval_columns!(), " ", approval_from!());

/// Decodes one row of [`APPROVAL_SELECT`]. Unknown kind, status or ledger state, unparseable
/// JSON or times: [`StoreError::Corrupt`] (a corrupt row is never executed, DESIGN §8).
pub(crate) fn approval_from_row<R: ColumnRead>(row: &R) -> Result<Approval, StoreError> {
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
        undo: undo_from_row(&c)?,
        passkey_required: c.flag("passkey_required")?,
        requested_by: c.opt_text("requested_by")?,
        running: running_from_row(&c)?,
        undo_left: c.opt_text("undo_left")?,
        located: c.opt_json("located")?,
        approved_items: c.opt_json("approved_items")?,
        decided_call: decided_call_from_row(&c)?,
        edited_fields: c.opt_json("edited_fields")?,
        id: c.id,
    })
}

/// The decided call of [`APPROVAL_SELECT`] (docs/adr/0122-shaping-a-call.md): `None` for a
/// row without one; its tool is the row's own.
fn decided_call_from_row(c: &Cols<'_>) -> Result<Option<DecidedCall>, StoreError> {
    let Some(args) = c.opt_json::<Value>("decided_args")? else {
        return Ok(None);
    };
    Ok(Some(DecidedCall {
        tool: c.text("tool")?,
        args,
        call_hash: c.text("decided_call_hash")?,
        items: c.opt_json("decided_items")?.unwrap_or_default(),
    }))
}

/// The running job's columns of [`APPROVAL_SELECT`]; `None` when the job is not running (or
/// the select does not join the jobs).
fn running_from_row(c: &Cols<'_>) -> Result<Option<RunningJob>, StoreError> {
    let Some(holder) = c.row.text_at("job_holder").ok().flatten() else {
        return Ok(None);
    };
    Ok(Some(RunningJob {
        holder,
        since: c.opt_time("job_since")?,
        lease_until: c.opt_time("job_until")?,
    }))
}

/// The undo columns of [`APPROVAL_SELECT`]; `None` when no undo was asked for (or the select
/// does not join undos).
fn undo_from_row(c: &Cols<'_>) -> Result<Option<UndoRecord>, StoreError> {
    let Some(state_text) = c.row.text_at("undo_state").ok().flatten() else {
        return Ok(None);
    };
    let state = UndoState::parse(&state_text)
        .ok_or_else(|| c.corrupt("undo_state", format!("unknown undo state `{state_text}`")))?;
    Ok(Some(UndoRecord {
        state,
        items: c.json("undo_items")?,
        by: c.text("undo_by")?,
        surface: c.text("undo_surface")?,
        at: c.time("undo_at")?,
        finished_at: c.opt_time("undo_finished_at")?,
        result: c.opt_json("undo_result")?,
    }))
}

/// Decodes one `audit_log` row.
pub(crate) fn audit_from_row(row: &AnyRow) -> Result<AuditEntry, StoreError> {
    let id = row
        .try_get::<i64, _>("id")
        .map_err(|e| StoreError::Corrupt {
            id: "audit_log row with an unreadable id".to_owned(),
            reason: e.to_string(),
        })?;
    let c = Cols {
        row,
        table: "audit_log",
        id: format!("audit entry {id}"),
    };
    let kind_text = c.text("kind")?;
    let kind = AuditKind::parse(&kind_text)
        .ok_or_else(|| c.corrupt("kind", format!("unknown kind `{kind_text}`")))?;
    Ok(AuditEntry {
        id,
        approval_id: c.opt_text("approval_id")?,
        run_id: c.opt_text("run_id")?,
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
pub(crate) fn device_from_row(row: &AnyRow) -> Result<Device, StoreError> {
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

/// Decodes one `pairing_links` row .
pub(crate) fn pairing_from_row(
    row: &AnyRow,
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
pub(crate) fn telegram_card_from_row(row: &AnyRow) -> Result<TelegramCard, StoreError> {
    let mut c = Cols::new(row, "telegram_cards", "approval_id")?;
    c.id = format!("telegram card of approval `{}`", c.id);
    let chat_id = c.integer("chat_id")?;
    let message_id = c.opt_integer("message_id")?;
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
        return Err(StoreError::Refused(format!(
            "approval `{}`: args_canonical is not the canonical JSON of args (DESIGN §2 canonical JSON)",
            row.id
        )));
    }
    if call_hash(&row.tool, &row.args) != row.call_hash {
        return Err(StoreError::Refused(format!(
            "approval `{}`: call_hash does not cover tool `{}` and its canonical arguments (DESIGN §2)",
            row.id, row.tool
        )));
    }
    Ok(())
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
