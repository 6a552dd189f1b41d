//! Approving some of a card's items (docs/adr/0122-shaping-a-call.md): which cards may be
//! narrowed ([`items_arg_for`]), the owner's choice checked against the row
//! ([`decided_terms`]), and the one call a claim may run ([`call_to_run`]), the request's or
//! the decision's narrowed one, never anything else.
//!
//! The narrowed call is the request's tool with the request's arguments, except that the
//! manifest's `items` argument keeps only the chosen entries, in the request's order; its call
//! hash is computed like the request's. It is written once with the decision; the database
//! refuses a ledger claim of any other call (migrations `0033_decided_call`).

use serde_json::Value;

use crate::canonical::{call_hash, canonical_json};
use crate::ports::DecidedTerms;
use crate::wire::{Approval, DecidedCall, Decision};

/// Why an owner's choice of items was refused (400 at the API; nothing changed). Each names
/// the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ItemsRefusal {
    /// `items` came with a rejection.
    #[error("`items` only goes with \"approve\": a rejection rejects the whole card; nothing was changed")]
    OnReject,
    /// No item was chosen.
    #[error(
        "`items` is empty: approve at least one item, or reject the card; nothing was changed"
    )]
    Empty,
    /// An index was given twice.
    #[error("`items` names the item {0} twice; name each item once; nothing was changed")]
    Repeated(u32),
    /// An index past the card's items.
    #[error("`items` names the item {index}, but this card has {count} items (0 to {last}); nothing was changed", last = .count.saturating_sub(1))]
    OutOfRange {
        /// The index given.
        index: u32,
        /// How many items the card has.
        count: usize,
    },
    /// The card is all or nothing.
    #[error("this card cannot be approved in part (its call does not list one item per line); approve or reject it whole; nothing was changed")]
    NotNarrowable,
}

/// The card's [`crate::wire::Card::items_arg`] for a call: `items_arg` (the manifest's `items`
/// argument) when `args[items_arg]` is a list of exactly `items`, in order, and the card has
/// one line per item; `None` otherwise (the card is then all or nothing).
pub fn items_arg_for(
    items_arg: Option<&str>,
    args: &Value,
    items: &[String],
    lines: &[String],
) -> Option<String> {
    let arg = items_arg?;
    let list = args.get(arg)?.as_array()?;
    let same = list.len() == items.len()
        && list
            .iter()
            .zip(items)
            .all(|(v, item)| v.as_str() == Some(item.as_str()));
    (same && lines.len() == items.len() && items.len() >= 2).then(|| arg.to_owned())
}

/// The decision's terms for an answer `decision` with the owner's choice `items` (indices into
/// `row.items`, any order): `Ok(None)` for no choice, or a choice of every item (a plain full
/// approval); `Ok(Some)` with the narrowed call for a choice of some.
///
/// # Errors
/// [`ItemsRefusal`] for a choice with a rejection, an empty, repeated or out-of-range one, or a
/// card that cannot be approved in part.
pub fn decided_terms(
    row: &Approval,
    decision: Decision,
    items: Option<&[u32]>,
) -> Result<Option<DecidedTerms>, ItemsRefusal> {
    let Some(items) = items else {
        return Ok(None);
    };
    if decision == Decision::Reject {
        return Err(ItemsRefusal::OnReject);
    }
    if items.is_empty() {
        return Err(ItemsRefusal::Empty);
    }
    let mut kept = items.to_vec();
    kept.sort_unstable();
    if let Some(pair) = kept.windows(2).find(|w| w[0] == w[1]) {
        return Err(ItemsRefusal::Repeated(pair[0]));
    }
    if let Some(&index) = kept.iter().find(|&&i| i as usize >= row.items.len()) {
        return Err(ItemsRefusal::OutOfRange {
            index,
            count: row.items.len(),
        });
    }
    if kept.len() == row.items.len() {
        return Ok(None);
    }
    let Some(arg) = row.card.items_arg.as_deref().filter(|_| row.narrowable()) else {
        return Err(ItemsRefusal::NotNarrowable);
    };
    let args = narrowed_args(&row.args, arg, &kept).ok_or(ItemsRefusal::NotNarrowable)?;
    Ok(Some(DecidedTerms {
        items: kept,
        edited_fields: Vec::new(),
        args_canonical: canonical_json(&args),
        call: DecidedCall {
            tool: row.tool.clone(),
            call_hash: call_hash(&row.tool, &args),
            args,
            items: Vec::new(),
        },
    }))
}

/// `args` with the list `arg` keeping only the entries at `kept` (ascending); `None` when
/// `arg` is not a list long enough.
fn narrowed_args(args: &Value, arg: &str, kept: &[u32]) -> Option<Value> {
    let list = args.get(arg)?.as_array()?;
    let entries = kept
        .iter()
        .map(|&i| list.get(i as usize).cloned())
        .collect::<Option<Vec<Value>>>()?;
    let mut narrowed = args.clone();
    narrowed[arg] = Value::Array(entries);
    Some(narrowed)
}

/// The one call a claim of an approved row may run: the request's, or after an approval of
/// some items the decision's narrowed call with only those items and their preconditions.
#[derive(Debug, Clone, PartialEq)]
pub struct CallToRun {
    /// The tool.
    pub tool: String,
    /// The arguments that run.
    pub args: Value,
    /// Their canonical JSON (the ledger's claim).
    pub args_canonical: String,
    /// The items it acts on, in the call's order.
    pub items: Vec<String>,
    /// One precondition per item (empty when the row pins none).
    pub preconditions: Vec<Value>,
}

/// The call `row` runs, with `preconditions` (the row's, one per item or none) narrowed to
/// match. The request's call for a full approval; for an approval of some items the decided
/// call, after checking that it is exactly the request's call narrowed to the kept items and
/// that its hash covers it.
///
/// # Errors
/// A sentence saying why the row's decided call cannot be trusted (corrupt: it then never
/// runs, DESIGN §8 fail closed).
pub fn call_to_run(row: &Approval, preconditions: &[Value]) -> Result<CallToRun, String> {
    if let Some(edited) = &row.edited_fields {
        return edited_call_to_run(row, edited, preconditions);
    }
    let kept = match (&row.approved_items, &row.decided_call) {
        (None, None) => {
            return Ok(CallToRun {
                tool: row.tool.clone(),
                args: row.args.clone(),
                args_canonical: canonical_json(&row.args),
                items: row.items.clone(),
                preconditions: preconditions.to_vec(),
            })
        }
        (Some(kept), Some(_)) => kept,
        _ => {
            return Err(
                "the row's approved items and its decided call are not recorded together".into(),
            )
        }
    };
    let decided = row.decided_call.as_ref().expect("matched above");
    let arg = row
        .card
        .items_arg
        .as_deref()
        .ok_or("the row's decided call narrows a card that cannot be approved in part")?;
    let in_order = kept.windows(2).all(|w| w[0] < w[1]);
    let expected = narrowed_args(&row.args, arg, kept).filter(|_| in_order && !kept.is_empty());
    if decided.tool != row.tool || expected.as_ref() != Some(&decided.args) {
        return Err(
            "the row's decided call is not its request narrowed to the approved items".into(),
        );
    }
    if call_hash(&decided.tool, &decided.args) != decided.call_hash {
        return Err("the row's decided call hash does not match its arguments".into());
    }
    let pick = |all: &[Value]| -> Vec<Value> {
        kept.iter()
            .filter_map(|&i| all.get(i as usize).cloned())
            .collect()
    };
    Ok(CallToRun {
        tool: decided.tool.clone(),
        args: decided.args.clone(),
        args_canonical: canonical_json(&decided.args),
        items: kept
            .iter()
            .filter_map(|&i| row.items.get(i as usize).cloned())
            .collect(),
        preconditions: if preconditions.is_empty() {
            Vec::new()
        } else {
            pick(preconditions)
        },
    })
}

/// The call of a row approved as edited (docs/adr/0122-shaping-a-call.md), after checking it:
/// the request's tool, a hash that covers its arguments, and every argument that differs from
/// the request's one the owner changed (`edited`) and the card lets them edit. Its items are
/// the edited call's; the row's preconditions go with it only when the items are the same (an
/// edit that changes what the call acts on was refused when the row pins preconditions).
fn edited_call_to_run(
    row: &Approval,
    edited: &[String],
    preconditions: &[Value],
) -> Result<CallToRun, String> {
    let decided = row
        .decided_call
        .as_ref()
        .ok_or("the row's edited fields are recorded without its decided call")?;
    if row.approved_items.is_some() || edited.is_empty() || decided.tool != row.tool {
        return Err("the row's decided call is not its request as the owner edited it".into());
    }
    if call_hash(&decided.tool, &decided.args) != decided.call_hash {
        return Err("the row's decided call hash does not match its arguments".into());
    }
    let (Some(request), Some(call)) = (row.args.as_object(), decided.args.as_object()) else {
        return Err("the row's decided call is not an object of arguments".into());
    };
    let changed = request
        .keys()
        .chain(call.keys())
        .filter(|k| request.get(*k) != call.get(*k));
    for field in changed {
        if !edited.contains(field) || !row.card.editable.contains(field) {
            return Err(format!(
                "the row's decided call changes `{field}`, which the owner could not edit"
            ));
        }
    }
    let same_items = decided.items == row.items;
    if !same_items && !preconditions.is_empty() {
        return Err(
            "the row's edited call acts on other items than its pinned preconditions".into(),
        );
    }
    Ok(CallToRun {
        tool: decided.tool.clone(),
        args: decided.args.clone(),
        args_canonical: canonical_json(&decided.args),
        items: decided.items.clone(),
        preconditions: if same_items {
            preconditions.to_vec()
        } else {
            Vec::new()
        },
    })
}

#[cfg(test)]
mod tests;
