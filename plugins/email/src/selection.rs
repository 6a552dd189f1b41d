//! Category selection: an owner's word and a time window → the messages they cover, newest
//! first, across every account (DESIGN §5 `list_by_category`, `trash_category`).
//!
//! Code, not the model, picks the items. The word is resolved by
//! [`crate::category::resolve_word`] (synonyms, then the category paths that exist). Per account:
//! - an account without provider buckets takes mail whose triage kind or path matches;
//! - an account whose backend reports buckets (Gmail's category tabs) takes only mail carrying
//!   the bucket label of each asked kind, wherever triage filed it; when the bucket is coarser
//!   than the ask (`CATEGORY_UPDATES` holds orders and receipts, the owner asked for orders; or
//!   the owner named one merchant's path) the mail must also match the triage.
//!
//! The owner's own mail (sent from one of the accounts' addresses) is never selected: a
//! clean-up is about mail others sent (a clean-up of "personal" once emptied the Sent folder).
//!
//! Guards (each refused before anything is read or moved): an empty word; a word that matches
//! no category; a word covering every category ("email", "all").

use serde_json::Value;

use crate::category::{canonical_word, resolve_word, Category, Selection};
use crate::store::{AccountFilter, MessageRow};
use crate::EmailPlugin;

/// Most characters of a category word.
pub const MAX_WORD_CHARS: usize = 100;

/// Longest window, in days (ten years).
pub const MAX_SINCE_DAYS: i64 = 3650;

/// What a selection found.
#[derive(Debug, Clone)]
pub(crate) struct Picked {
    /// What the word resolved to.
    pub selection: Selection,
    /// The newest matches, at most the limit asked for.
    pub rows: Vec<MessageRow>,
    /// Every match in the window.
    pub total: i64,
}

/// Why a word selects nothing; the message names the word and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SelectionRefused {
    /// Empty after trimming.
    #[error("`category` is empty: name a category such as promotions, newsletters, orders, receipts, social or personal")]
    Empty,
    /// Longer than [`MAX_WORD_CHARS`].
    #[error("`category` is longer than {MAX_WORD_CHARS} characters")]
    TooLong,
    /// Covers every category ("email", "all").
    #[error("`{0}` covers every category, so nothing was selected: name one category (promotions, newsletters, orders, receipts, social, personal) or a sender's path such as deals-promotions/<merchant>")]
    Everything(String),
    /// Matches no category that exists.
    #[error("no category matches `{word}`, so nothing was selected. Categories: {known}")]
    NoMatch {
        /// The word as given.
        word: String,
        /// The kinds and the paths that exist, for the model to pick from.
        known: String,
    },
}

/// The word's shape and the "everything" guard, without the store: the canonical word
/// ([`canonical_word`]) or why it is refused.
pub(crate) fn check_word(word: &str) -> Result<String, SelectionRefused> {
    let trimmed = word.trim();
    if trimmed.is_empty() {
        return Err(SelectionRefused::Empty);
    }
    if trimmed.chars().count() > MAX_WORD_CHARS {
        return Err(SelectionRefused::TooLong);
    }
    let canonical = canonical_word(trimmed);
    if resolve_word(&canonical, &[]).is_some_and(|s| s.covers_everything()) {
        return Err(SelectionRefused::Everything(trimmed.to_string()));
    }
    Ok(canonical)
}

/// The `category` and `since_days` arguments of a category tool (`refusal_tail` ends a guard's
/// message, e.g. "; nothing was moved to Trash"): the canonical word ([`check_word`]) and the days ([`since_days`]).
///
/// # Errors
/// A sentence naming the argument and the rule.
pub(crate) fn category_args(
    obj: &serde_json::Map<String, Value>,
    refusal_tail: &str,
) -> Result<(String, i64), String> {
    let word = match obj.get("category") {
        Some(Value::String(w)) => w,
        Some(_) => return Err("`category` must be a string".into()),
        None => {
            return Err(
                "`category` is required: the category in the owner's words (e.g. promotions)"
                    .into(),
            )
        }
    };
    let category = check_word(word).map_err(|e| format!("{e}{refusal_tail}"))?;
    Ok((category, since_days(obj.get("since_days"))?))
}

/// The `since_days` rule shared by the category tools: an integer from 1 to
/// [`MAX_SINCE_DAYS`] (a float with no fraction is accepted, as models send `7.0`).
pub(crate) fn since_days(v: Option<&Value>) -> Result<i64, String> {
    let Some(v) = v else {
        return Err(
            "`since_days` is required: how many days back to look (7 = this past week)".into(),
        );
    };
    let n = v
        .as_i64()
        .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
        .ok_or("`since_days` must be a whole number of days")?;
    if !(1..=MAX_SINCE_DAYS).contains(&n) {
        return Err(format!("`since_days` must be from 1 to {MAX_SINCE_DAYS}"));
    }
    Ok(n)
}

/// The per-account filters of a selection (see the module docs).
pub(crate) fn filters(plugin: &EmailPlugin, selection: &Selection) -> Vec<AccountFilter> {
    let kinds = selection.kinds();
    let (triage_kinds, triage_paths): (Vec<String>, Vec<String>) = match selection {
        Selection::Kinds(k) => (
            k.iter().map(|c| c.as_str().to_string()).collect(),
            Vec::new(),
        ),
        Selection::Paths(p) => (Vec::new(), p.iter().map(|(_, p)| p.clone()).collect()),
    };
    let mut labels: Vec<String> = kinds.iter().map(|k| k.bucket_label().to_string()).collect();
    labels.dedup();
    // The bucket alone is enough when the ask is whole kinds and each bucket holds only kinds
    // that were asked for.
    let bucket_is_enough = matches!(selection, Selection::Kinds(_))
        && labels.iter().all(|l| {
            Category::kinds_in_bucket(l)
                .iter()
                .all(|k| kinds.contains(k))
        });
    let own_addresses: Vec<String> = plugin
        .accounts()
        .iter()
        .map(|a| a.address.trim().to_lowercase())
        .filter(|a| !a.is_empty())
        .collect();
    plugin
        .accounts_with_buckets()
        .into_iter()
        .map(|(account, buckets)| {
            let own_addresses = own_addresses.clone();
            if !buckets {
                AccountFilter {
                    account,
                    kinds: triage_kinds.clone(),
                    paths: triage_paths.clone(),
                    labels: Vec::new(),
                    own_addresses,
                }
            } else if bucket_is_enough {
                AccountFilter {
                    account,
                    labels: labels.clone(),
                    own_addresses,
                    ..AccountFilter::default()
                }
            } else {
                AccountFilter {
                    account,
                    kinds: triage_kinds.clone(),
                    paths: triage_paths.clone(),
                    labels: labels.clone(),
                    own_addresses,
                }
            }
        })
        .collect()
}

/// Resolves `word` against the store and returns the newest `limit` matches dated within the
/// last `since_days` days (of the plugin's clock).
///
/// # Errors
/// `Err(Ok(refused))` for the guards; `Err(Err(e))` when the store fails.
pub(crate) async fn select(
    plugin: &EmailPlugin,
    word: &str,
    since_days: i64,
    limit: u32,
) -> Result<Picked, Result<SelectionRefused, sqlx::Error>> {
    let canonical = check_word(word).map_err(Ok)?;
    let existing = plugin.store().category_paths().await.map_err(Err)?;
    let Some(selection) = resolve_word(&canonical, &existing) else {
        let mut known: Vec<String> = Category::ALL
            .iter()
            .map(|c| c.as_str().to_string())
            .collect();
        known.extend(
            existing
                .iter()
                .filter(|p| p.contains('/'))
                .take(40)
                .cloned(),
        );
        return Err(Ok(SelectionRefused::NoMatch {
            word: word.trim().to_string(),
            known: known.join(", "),
        }));
    };
    if selection.covers_everything() {
        return Err(Ok(SelectionRefused::Everything(word.trim().to_string())));
    }
    let since_unix = plugin.now().timestamp() - since_days * 86_400;
    let (rows, total) = plugin
        .store()
        .by_category(&filters(plugin, &selection), since_unix, limit)
        .await
        .map_err(Err)?;
    Ok(Picked {
        selection,
        rows,
        total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn word_guards() {
        assert_eq!(check_word("  "), Err(SelectionRefused::Empty));
        assert_eq!(check_word(&"x".repeat(101)), Err(SelectionRefused::TooLong));
        for w in ["email", "All", "my emails", "everything", "inbox"] {
            assert!(
                matches!(check_word(w), Err(SelectionRefused::Everything(_))),
                "{w}"
            );
        }
        assert_eq!(check_word("My Promo Emails").as_deref(), Ok("promo"));
        // Unknown words pass the shape check; the store decides (NoMatch).
        assert_eq!(check_word("zebras").as_deref(), Ok("zebras"));
    }

    #[test]
    fn since_days_rule() {
        assert_eq!(since_days(Some(&json!(7))), Ok(7));
        assert_eq!(since_days(Some(&json!(7.0))), Ok(7));
        assert!(since_days(Some(&json!(7.5))).is_err());
        assert!(since_days(Some(&json!(0))).is_err());
        assert!(since_days(Some(&json!(3651))).is_err());
        assert!(since_days(Some(&json!("7"))).is_err());
        assert!(since_days(None).is_err());
    }
}
