//! `list_quarantine(root, older_than_days?)` (effect read): what is in a root's quarantine,
//! from the journal, each entry checked to be there (the inode the journal recorded), as
//! `{"entries": [{"id", "original", "size", "kind", "quarantined_at"}], "total": N, "bytes": B}`.
//! `id` is what `purge_quarantine` takes.

use iris_core::plugin::{ToolError, ToolOutput};
use serde_json::{json, Map, Value};

use super::{failed, invalid, object, parse_root, MAX_PATHS};
use crate::entry;
use crate::id::EntryId;
use crate::journal::JournalRow;
use crate::root;
use crate::FilesPlugin;

/// The tool's name.
pub const NAME: &str = "list_quarantine";

/// Normal form `{"root", "older_than_days"?}`.
///
/// # Errors
/// [`ToolError::InvalidArgs`] for an unknown root, a bad age, or any other argument.
pub fn normalise(plugin: &FilesPlugin, args: &Value) -> Result<Value, ToolError> {
    let obj = object(NAME, args, &["root", "older_than_days"])?;
    let root = parse_root(plugin, NAME, obj.get("root"))?;
    let mut out = Map::new();
    out.insert("root".into(), json!(root.name()));
    match obj.get("older_than_days") {
        None | Some(Value::Null) => {}
        Some(v) => match v.as_u64().filter(|d| *d <= 36_500) {
            Some(d) => {
                out.insert("older_than_days".into(), json!(d));
            }
            None => {
                return Err(invalid(
                    NAME,
                    "`older_than_days` must be a whole number of days from 0 to 36500",
                ))
            }
        },
    }
    Ok(Value::Object(out))
}

/// Whether the journal's entry is in quarantine now (its recorded inode at its place).
pub(crate) fn present(plugin: &FilesPlugin, row: &JournalRow) -> bool {
    let Some(root) = plugin.root(&row.root) else {
        return false;
    };
    let Ok(id) = crate::id::decode(&row.quarantine_rel)
        .and_then(|rel| EntryId::new(&row.root, rel).map_err(|e| e.0))
    else {
        return false;
    };
    let (parent, name) = id.split();
    let Ok(dir) = root.open_dir(parent) else {
        return false;
    };
    root::lstat(&dir, name)
        .ok()
        .flatten()
        .map(|st| entry::identity(&st))
        .is_some_and(|(d, i)| d.to_string() == row.dev && i.to_string() == row.ino)
}

/// The listing: see the module docs.
///
/// # Errors
/// [`ToolError::InvalidArgs`] as [`normalise`]; [`ToolError::Failed`] when the journal cannot be
/// read.
pub async fn execute(plugin: &FilesPlugin, args: &Value) -> Result<ToolOutput, ToolError> {
    let args = normalise(plugin, args)?;
    let root = parse_root(plugin, NAME, args.get("root"))?;
    let rows = plugin
        .journal()
        .in_quarantine(root.name())
        .await
        .map_err(|e| failed(NAME, format!("reading the journal: {e}")))?;
    let cutoff = args["older_than_days"].as_u64().map(|d| {
        iris_store::timestamp_text(
            plugin.now() - chrono::Duration::days(i64::try_from(d).unwrap_or(0)),
        )
    });
    let mut entries = Vec::new();
    let mut total = 0usize;
    let mut bytes = 0u64;
    for row in &rows {
        if cutoff
            .as_ref()
            .is_some_and(|c| row.moved_at.as_str() >= c.as_str())
        {
            continue;
        }
        if !present(plugin, row) {
            continue;
        }
        total += 1;
        let size = u64::try_from(row.size).unwrap_or(0);
        bytes = bytes.saturating_add(size);
        if entries.len() < MAX_PATHS {
            entries.push(json!({
                "id": row.quarantine_id(),
                "original": row.entry_id,
                "size": size,
                "kind": row.kind,
                "quarantined_at": row.moved_at,
            }));
        }
    }
    Ok(ToolOutput::plain(
        json!({ "entries": entries, "total": total, "bytes": bytes }),
    ))
}
