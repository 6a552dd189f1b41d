//! `iris approvals approve`'s shaping of the call (docs/adr/0122-shaping-a-call.md): `--only`
//! by the numbers `show` prints, and `--edit` / `--edit-file` for the fields the card lets the
//! owner edit. Each is checked against the card before anything is sent (exit 2 otherwise);
//! the server checks them again.

use iris_core::wire::{Approval, ApprovalStatus};
use serde_json::Value;

use super::remote::{Failure, Remote};
use super::{approval_path, parse};

/// The indices (into `approval.items`) of the items `--only` names by the numbers
/// `iris approvals show` prints (1-based), checked against the card: each once, in range, on a
/// card that can be approved in part.
pub(super) async fn chosen_items(
    remote: &Remote,
    id: &str,
    numbers: &[u32],
) -> Result<Vec<u32>, Failure> {
    let row: Approval = parse(remote.get(&approval_path(id), Some(id)).await?, "approval")?;
    let count = row.items.len();
    if numbers.is_empty() {
        return Err(Failure::Usage(
            "--only needs at least one item number (as `iris approvals show` prints them)".into(),
        ));
    }
    if row.status == ApprovalStatus::Pending && !row.narrowable() {
        return Err(Failure::Usage(format!(
            "this card cannot be approved in part; approve or reject it whole (`iris approvals show {id}`)"
        )));
    }
    let mut seen = Vec::with_capacity(numbers.len());
    for &n in numbers {
        if n == 0 || n as usize > count {
            return Err(Failure::Usage(format!(
                "--only {n}: this card's items are numbered 1 to {count} (`iris approvals show {id}`)"
            )));
        }
        if seen.contains(&(n - 1)) {
            return Err(Failure::Usage(format!("--only names the item {n} twice")));
        }
        seen.push(n - 1);
    }
    seen.sort_unstable();
    Ok(seen)
}

/// The `edits` of `--edit FIELD=VALUE` and `--edit-file FIELD=PATH`: each FIELD one the card
/// lets the owner edit (else exit 2, naming them); a field whose pinned value is a list takes
/// a JSON array or a comma-separated list, any other a string.
pub(super) async fn edits_of(
    remote: &Remote,
    id: &str,
    edit: &[String],
    edit_file: &[String],
) -> Result<serde_json::Map<String, Value>, Failure> {
    let row: Approval = parse(remote.get(&approval_path(id), Some(id)).await?, "approval")?;
    let mut edits = serde_json::Map::new();
    let pairs = edit
        .iter()
        .map(|e| (e, false))
        .chain(edit_file.iter().map(|e| (e, true)));
    for (pair, from_file) in pairs {
        let flag = if from_file { "--edit-file" } else { "--edit" };
        let Some((field, value)) = pair.split_once('=') else {
            return Err(Failure::Usage(format!(
                "{flag} {pair}: write FIELD={}",
                if from_file { "PATH" } else { "VALUE" }
            )));
        };
        if !row.card.editable.iter().any(|f| f == field) {
            return Err(Failure::Usage(format!(
                "{flag}: `{field}` cannot be edited on this card ({})",
                if row.card.editable.is_empty() {
                    "it is approved as it is".to_owned()
                } else {
                    format!("it may edit {}", row.card.editable.join(", "))
                }
            )));
        }
        let text = if from_file {
            std::fs::read_to_string(value)
                .map_err(|e| Failure::Usage(format!("{flag} {field}={value}: {e}")))?
        } else {
            value.to_owned()
        };
        let list = row.args.get(field).is_some_and(Value::is_array);
        let value = match serde_json::from_str::<Value>(&text) {
            Ok(json @ Value::Array(_)) if list => json,
            _ if list => Value::Array(
                text.split(',')
                    .map(|s| Value::String(s.trim().to_owned()))
                    .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
                    .collect(),
            ),
            _ => Value::String(text),
        };
        edits.insert(field.to_owned(), value);
    }
    Ok(edits)
}
