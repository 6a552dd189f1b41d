//! A page of approvals ([`iris_core::ports::listing`]): one `SELECT` built from the filters
//! that are set (so each uses its index: `(status|tool|surface, created_at, id)`, or
//! `(created_at, id)` alone), newest first, one row more than the page to know whether a next
//! page exists. The search uses SQLite's FTS5 trigram index (`approvals_search`) for three
//! characters or more and PostgreSQL's `pg_trgm` index under `LIKE`.

use crate::rows::{answerable_sql, approval_from_row, backend, live_device, APPROVAL_SELECT};
use crate::{timestamp_text, Engine, Store};
use iris_core::ports::{
    ApprovalPage, ApprovalQuery, PageCursor, SearchText, StatusFilter, StoreError,
};

/// A `WHERE` clause under construction and its text parameters, numbered in order.
#[derive(Default)]
struct Conditions {
    clauses: Vec<String>,
    params: Vec<String>,
}

impl Conditions {
    /// Adds `clause`, where each `?` is the next parameter, taken in order from `values`.
    fn push(&mut self, clause: &str, values: &[String]) {
        let mut text = String::with_capacity(clause.len() + 4);
        let mut values = values.iter();
        for ch in clause.chars() {
            if ch == '?' {
                self.params
                    .push(values.next().expect("a value per `?`").clone());
                text.push_str(&format!("${}", self.params.len()));
            } else {
                text.push(ch);
            }
        }
        self.clauses.push(text);
    }

    fn sql(&self) -> String {
        if self.clauses.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", self.clauses.join(" AND "))
        }
    }
}

/// `text` as a `LIKE` pattern that matches it anywhere, its wildcards escaped with `\`.
fn contains_pattern(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('%');
    for ch in text.chars() {
        if matches!(ch, '\\' | '%' | '_') {
            out.push('\\');
        }
        out.push(ch);
    }
    out.push('%');
    out
}

/// The search's clause on `engine`.
fn search_clause(engine: Engine, text: &SearchText, conditions: &mut Conditions) {
    let text = text.as_str();
    match engine {
        // The trigram index answers phrases of three characters or more; shorter ones scan.
        Engine::Sqlite if text.chars().count() >= 3 => conditions.push(
            "a.rowid IN (SELECT rowid FROM approvals_search WHERE approvals_search MATCH ?)",
            &[format!("\"{}\"", text.replace('"', "\"\""))],
        ),
        _ => conditions.push("a.card_text LIKE ? ESCAPE '\\'", &[contains_pattern(text)]),
    }
}

impl Store {
    /// One page for `query` (see [`iris_core::ports::ApprovalStore::approval_page`]).
    pub(crate) async fn page(&self, query: &ApprovalQuery) -> Result<ApprovalPage, StoreError> {
        let mut conditions = Conditions::default();
        match query.status {
            StatusFilter::All => {}
            StatusFilter::Answered => conditions.push("a.status <> 'pending'", &[]),
            StatusFilter::Is(status) => {
                conditions.push("a.status = ?", &[status.as_str().to_string()])
            }
        }
        if let Some(tool) = &query.tool {
            conditions.push("a.tool = ?", std::slice::from_ref(tool));
        }
        if let Some(agent) = &query.requested_by {
            conditions.push(
                &format!("a.requested_by_device = {}", live_device("?")),
                std::slice::from_ref(agent),
            );
        }
        if let Some(surface) = &query.surface {
            conditions.push("a.surface = ?", std::slice::from_ref(surface));
        }
        if let Some(since) = query.since {
            conditions.push("a.created_at >= ?", &[timestamp_text(since)]);
        }
        if let Some(until) = query.until {
            conditions.push("a.created_at < ?", &[timestamp_text(until)]);
        }
        if let Some(text) = &query.text {
            search_clause(self.engine, text, &mut conditions);
        }
        if let Some(PageCursor { created_at, id }) = &query.before {
            let at = timestamp_text(*created_at);
            conditions.push(
                "(a.created_at < ? OR (a.created_at = ? AND a.id < ?))",
                &[at.clone(), at, id.clone()],
            );
        }
        let limit = query.limit.get();
        let sql = format!(
            "{APPROVAL_SELECT}{} ORDER BY a.created_at DESC, a.id DESC LIMIT {}",
            conditions.sql(),
            limit + 1
        );
        let mut statement = sqlx::query(&sql);
        for value in &conditions.params {
            statement = statement.bind(value.as_str());
        }
        let rows = statement
            .fetch_all(&self.pool)
            .await
            .map_err(backend("listing a page of approvals"))?;
        let more = rows.len() > limit as usize;
        let approvals = rows
            .iter()
            .take(limit as usize)
            .map(approval_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        let next = if more {
            approvals.last().map(PageCursor::after)
        } else {
            None
        };
        Ok(ApprovalPage { approvals, next })
    }
}

impl Store {
    /// [`iris_core::ports::ApprovalStore::related_cards`]: the rows of `tool` pending and not
    /// lapsed (the database's clock), or executed with the answer at or after `ran_since`;
    /// the newest 200, returned oldest first.
    pub(crate) async fn related(
        &self,
        tool: &str,
        ran_since: chrono::DateTime<chrono::Utc>,
    ) -> Result<Vec<iris_core::wire::Approval>, StoreError> {
        let sql = format!(
            "{APPROVAL_SELECT} WHERE a.tool = $2 AND ((a.status = 'pending' AND {}) \
             OR (a.status = 'approved' AND l.state IN ('executed', 'unknown') AND a.responded_at >= $3)) \
             ORDER BY a.created_at DESC, a.id DESC LIMIT 200",
            answerable_sql("a.", &self.now_sql())
        );
        let rows = sqlx::query(&sql)
            .bind(self.now_param())
            .bind(tool)
            .bind(timestamp_text(ran_since))
            .fetch_all(&self.pool)
            .await
            .map_err(backend("reading the cards a new card may repeat"))?;
        let mut related = rows
            .iter()
            .map(approval_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        related.reverse();
        Ok(related)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_pattern_escapes_like_wildcards() {
        assert_eq!(contains_pattern(r"50%_off\"), r"%50\%\_off\\%");
    }

    #[test]
    fn parameters_are_numbered_in_order_of_use() {
        let mut c = Conditions::default();
        c.push("a.tool = ?", &["t".into()]);
        c.push("(a.created_at < ? OR a.id < ?)", &["x".into(), "y".into()]);
        assert_eq!(
            c.sql(),
            " WHERE a.tool = $1 AND (a.created_at < $2 OR a.id < $3)"
        );
        assert_eq!(c.params, ["t", "x", "y"]);
    }
}
