//! `purge_quarantine(paths)` (effect destructive, no undo): deletes quarantined entries for good
//! (docs/adr/0067-files-quarantine.md: IRIS deletes a file it did not create only through a
//! card that says so).
//!
//! The card: "Delete N quarantined files for good", one line per entry: its original path,
//! size, when it was quarantined, and "deleted for good"; only entries the journal moved there
//! and that are still the inode it moved can be named (any other path in the quarantine folder
//! is "not in quarantine", never deleted). Each entry is pinned like a move's
//! ([`crate::entry::Pin`]) and read again through its descriptor right before it is deleted.

use iris_core::plugin::{Description, ItemOutcome, ToolError, ToolOutput};
use serde_json::{json, Value};

use super::{
    count_phrase, day_text, invalid, object, parent_of, parse_paths, paths_of, paths_value, pin_now,
};
use crate::entry::{self, Pin};
use crate::id::EntryId;
use crate::journal::JournalRow;
use crate::root::{self, Kind};
use crate::FilesPlugin;

/// The tool's name.
pub const NAME: &str = "purge_quarantine";

/// Normal form `{"paths": [...]}`: ids inside a root's quarantine (from `list_quarantine`).
///
/// # Errors
/// [`ToolError::InvalidArgs`] for a missing, empty or malformed `paths`, or any other argument.
pub fn normalise(plugin: &FilesPlugin, args: &Value) -> Result<Value, ToolError> {
    let obj = object(NAME, args, &["paths"])?;
    let Some(paths) = obj.get("paths") else {
        return Err(invalid(
            NAME,
            "`paths` is required: the quarantined entry ids (from list_quarantine) to delete",
        ));
    };
    Ok(json!({ "paths": paths_value(&parse_paths(plugin, NAME, paths, true)?) }))
}

/// The journal row of a quarantined id, when the journal moved it there and it is still there.
async fn row_of(plugin: &FilesPlugin, id: &EntryId) -> Option<JournalRow> {
    let row = plugin
        .journal()
        .by_quarantine(id.root(), &id.rel_text())
        .await
        .ok()
        .flatten()?;
    (matches!(row.state.as_str(), "quarantined" | "moving")
        && super::list_quarantine::present(plugin, &row))
    .then_some(row)
}

/// The card: see the module docs.
///
/// # Errors
/// [`ToolError::InvalidArgs`] when none of the paths is a quarantined entry.
pub async fn describe(plugin: &FilesPlugin, args: &Value) -> Result<Description, ToolError> {
    let ids = paths_of(&normalise(plugin, args)?);
    let mut lines = Vec::with_capacity(ids.len());
    let mut preconditions = Vec::with_capacity(ids.len());
    let mut missing = Vec::new();
    let mut all_files = true;
    for id in &ids {
        let pinned = match row_of(plugin, id).await {
            Some(row) => pin_now(plugin, id).ok().map(|pin| (row, pin)),
            None => None,
        };
        match pinned {
            Some((row, pin)) => {
                all_files &= pin.kind == Kind::File;
                let what = match pin.kind {
                    Kind::Folder => format!(
                        "folder, {} items, {}",
                        pin.items.unwrap_or(0),
                        entry::size_text(pin.size)
                    ),
                    _ => entry::size_text(pin.size),
                };
                let original = EntryId::parse(&row.entry_id)
                    .map(|o| super::path_text(&o))
                    .unwrap_or_else(|_| iris_core::mcp::escaped(&row.entry_id));
                let at = chrono::DateTime::parse_from_rfc3339(&row.moved_at)
                    .map(|t| day_text(t.with_timezone(&chrono::Utc)))
                    .unwrap_or_else(|_| row.moved_at.clone());
                lines.push(format!(
                    "{original} — {what}, quarantined {at} · {}; deleted for good",
                    iris_core::mcp::escaped(id.root())
                ));
                preconditions.push(json!(pin));
            }
            None => {
                let why = format!(
                    "`{id}` is not an entry IRIS quarantined (or it is gone); use an id from list_quarantine"
                );
                lines.push(format!(
                    "{} — not in quarantine, nothing will be done to it",
                    super::path_text(id)
                ));
                preconditions.push(Value::Null);
                missing.push(why);
            }
        }
    }
    if missing.len() == ids.len() {
        return Err(invalid(NAME, missing.join("; ")));
    }
    let found = ids.len() - missing.len();
    let noun = count_phrase("Delete", found, all_files);
    let title = format!(
        "{} for good",
        noun.replacen(&found.to_string(), &format!("{found} quarantined"), 1)
    );
    Ok(Description {
        action: title.clone(),
        title,
        lines,
        items: ids.iter().map(ToString::to_string).collect(),
        undo_note: None,
        undo_action: None,
        preconditions,
        ..Description::default()
    })
}

fn item(id: &str, outcome: Value) -> ItemOutcome {
    ItemOutcome {
        item: id.to_string(),
        outcome,
    }
}

/// Deletes every path not in `stale`, each re-checked through its descriptor first.
///
/// # Errors
/// [`ToolError::InvalidArgs`] as [`normalise`]; failures are per item.
pub async fn execute(
    plugin: &FilesPlugin,
    args: &Value,
    stale: &[String],
    run: &str,
) -> Result<ToolOutput, ToolError> {
    let ids = paths_of(&normalise(plugin, args)?);
    let mut outcomes = Vec::new();
    let mut purged = 0usize;
    let mut not_purged = Vec::new();
    for id in ids.iter().filter(|id| !stale.contains(&id.to_string())) {
        let key = id.to_string();
        let outcome = match plugin.take_checked(run, &key) {
            None => {
                json!({"status": "changed", "message": "not deleted: the version you saw could not be confirmed"})
            }
            Some(pin) => purge_one(plugin, id, &pin).await,
        };
        if outcome["status"] == "purged" {
            purged += 1;
        } else {
            not_purged.push(json!({"id": key, "status": outcome["status"]}));
        }
        outcomes.push(item(&key, outcome));
    }
    let mut summary = format!("Deleted {purged} for good");
    if !not_purged.is_empty() {
        summary.push_str(&format!("; {} not deleted", not_purged.len()));
    }
    Ok(ToolOutput {
        result: json!({
            "summary": format!("{summary}."),
            "purged": purged,
            "not_purged": not_purged,
            "items": outcomes.iter().map(|o| json!({"id": o.item, "status": o.outcome["status"]})).collect::<Vec<_>>(),
        }),
        items: outcomes,
    })
}

async fn purge_one(plugin: &FilesPlugin, id: &EntryId, pinned: &Pin) -> Value {
    let Some(row) = row_of(plugin, id).await else {
        return json!({"status": "missing", "message": "no longer in quarantine; nothing to delete"});
    };
    let (dir, name) = match parent_of(plugin, id) {
        Ok(p) => p,
        Err(e) => return json!({"status": "failed", "message": format!("not deleted: {e}")}),
    };
    match entry::pin(&dir, name, &id.to_string(), plugin.hash_limit()) {
        Ok(now) if &now == pinned => {}
        _ => {
            return json!({"status": "changed", "message": "changed since you saw it, not deleted"})
        }
    }
    if let Err(e) = root::remove_all(&dir, name) {
        return json!({"status": "failed", "message": format!("not all deleted: {e}")});
    }
    if let Err(e) = root::fsync_dir(&dir) {
        tracing::warn!(entry = %id, error = %e, "purged; flushing its folder failed");
    }
    if let Err(e) = plugin
        .journal()
        .advance(
            &row.batch_id,
            &row.entry_id,
            &row.state,
            "purged",
            plugin.now(),
        )
        .await
    {
        tracing::error!(entry = %id, error = %e, "purged, but its journal row says otherwise");
    }
    json!({"status": "purged", "original": row.entry_id})
}
