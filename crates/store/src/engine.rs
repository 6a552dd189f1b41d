//! The two engines, and the few spellings that differ between them. Every statement is written
//! once with `$N` placeholders (which both SQLite and PostgreSQL accept through sqlx's `Any`
//! driver) and runs on one `AnyPool`; what differs per engine is a fragment from here: the time
//! source as SQL, a lease's end, the row lock of a job claim, the substring function.

use std::sync::Arc;

use chrono::{DateTime, SecondsFormat, Utc};
use iris_core::ports::Clock;

/// The database engine behind a [`crate::Store`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Engine {
    /// SQLite (`sqlite://PATH`, `sqlite::memory:`): one server per file.
    Sqlite,
    /// PostgreSQL (`postgres://…`): any number of servers.
    Postgres,
}

impl Engine {
    /// `sqlite` or `postgres`.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Sqlite => "sqlite",
            Engine::Postgres => "postgres",
        }
    }

    /// "Now" in the stored timestamp form (see [`timestamp_text`]): the bound parameter `param`
    /// when it is not NULL (a test clock), else the database's own clock. Every lease and expiry
    /// comparison uses this one time source (DESIGN §9).
    pub(crate) fn now(self, param: &str) -> String {
        match self {
            Engine::Sqlite => {
                format!("COALESCE({param}, strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000000Z')")
            }
            Engine::Postgres => format!(
                "COALESCE({param}, to_char(clock_timestamp() AT TIME ZONE 'UTC', \
                 'YYYY-MM-DD\"T\"HH24:MI:SS.US') || '000Z')"
            ),
        }
    }

    /// "Now" plus `secs` seconds (the bound parameter `secs`), in the stored form: a lease's end.
    pub(crate) fn now_plus(self, param: &str, secs: &str) -> String {
        match self {
            Engine::Sqlite => format!(
                "strftime('%Y-%m-%dT%H:%M:%f', COALESCE({param}, 'now'), '+' || {secs} || ' seconds') || '000000Z'"
            ),
            Engine::Postgres => format!(
                "to_char((COALESCE(CAST({param} AS timestamptz), clock_timestamp()) + \
                 CAST({secs} AS float8) * interval '1 second') AT TIME ZONE 'UTC', \
                 'YYYY-MM-DD\"T\"HH24:MI:SS.US') || '000Z'"
            ),
        }
    }

    /// What locks the job a claim picks: PostgreSQL skips jobs another server is claiming;
    /// SQLite has one writer at a time (the claim's transaction begins `IMMEDIATE`).
    pub(crate) fn claim_lock(self) -> &'static str {
        match self {
            Engine::Sqlite => "",
            Engine::Postgres => " FOR UPDATE SKIP LOCKED",
        }
    }

    /// The SQL function giving the 1-based position of a substring (0 when absent): SQLite's
    /// `instr(haystack, needle)`, PostgreSQL's `strpos(haystack, needle)` (same arguments, same
    /// result, both byte-exact on the "C"/binary collations the schemas use).
    pub fn position_fn(self) -> &'static str {
        match self {
            Engine::Sqlite => "instr",
            Engine::Postgres => "strpos",
        }
    }
}

/// Where "now" comes from in the store's statements.
#[derive(Clone, Default)]
pub enum TimeSource {
    /// The database's clock (production: one clock for every server, DESIGN §9).
    #[default]
    Database,
    /// A clock bound as a parameter (tests move it).
    Clock(Arc<dyn Clock>),
}

impl std::fmt::Debug for TimeSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TimeSource::Database => f.write_str("Database"),
            TimeSource::Clock(c) => write!(f, "Clock({})", timestamp_text(c.now())),
        }
    }
}

impl TimeSource {
    /// The value bound for [`Engine::now`]'s parameter: `None` (the database's clock) or the
    /// test clock's instant.
    pub(crate) fn param(&self) -> Option<String> {
        match self {
            TimeSource::Database => None,
            TimeSource::Clock(c) => Some(timestamp_text(c.now())),
        }
    }
}

/// The stored form of an instant: RFC 3339, UTC, nanoseconds, `Z`
/// (`2026-01-02T03:04:05.000000006Z`). Fixed width, so text comparison in SQL is time order
/// (byte order: SQLite's default, the "C" collation on PostgreSQL). Both engines store every
/// time in this form; the database's own clock is written in it too ([`Engine::now`]).
pub fn timestamp_text(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Nanos, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_form_has_a_fixed_width() {
        let t = DateTime::parse_from_rfc3339("2026-01-02T03:04:05.000000006Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(timestamp_text(t), "2026-01-02T03:04:05.000000006Z");
        let whole = DateTime::parse_from_rfc3339("2026-01-02T03:04:05Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(timestamp_text(whole).len(), timestamp_text(t).len());
    }
}
