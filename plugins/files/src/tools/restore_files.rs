//! `restore_files(paths?)` (effect write, `confirm: never`): the undo of `quarantine_files`.
//! Moves each quarantined entry back to its path: with `paths` (original ids), those entries;
//! without, the last batch moved in this conversation, once ("undo that").
//!
//! The move back is the same `renameat2` `RENAME_NOREPLACE`: missing parent folders are created
//! again, and an entry that now exists at the path is never written over ("not restored:
//! something now exists at …" for that line). Only the inode the journal recorded is moved
//! back. An entry a crash left in state `moving` is restored too when it is in quarantine.

use iris_core::plugin::{Description, ItemOutcome, ToolError, ToolOutput};
use serde_json::{json, Value};

use super::{count_phrase, failed, invalid, object, parse_paths, paths_of, paths_value};
use crate::entry;
use crate::id::EntryId;
use crate::journal::JournalRow;
use crate::root::{self, FsError};
use crate::FilesPlugin;

/// The tool's name.
pub const NAME: &str = "restore_files";

/// Normal form `{}` or `{"paths": [...]}` (original ids, outside the quarantine).
///
/// # Errors
/// [`ToolError::InvalidArgs`] for a malformed `paths` or any other argument.
pub fn normalise(plugin: &FilesPlugin, args: &Value) -> Result<Value, ToolError> {
    let obj = object(NAME, args, &["paths"])?;
    match obj.get("paths") {
        None | Some(Value::Null) => Ok(json!({})),
        Some(paths) => {
            Ok(json!({ "paths": paths_value(&parse_paths(plugin, NAME, paths, false)?) }))
        }
    }
}

/// A plain description (the tool needs no card: `confirm: never`).
///
/// # Errors
/// As [`normalise`].
pub fn describe(plugin: &FilesPlugin, args: &Value) -> Result<Description, ToolError> {
    let args = normalise(plugin, args)?;
    let ids = paths_of(&args);
    let title = if ids.is_empty() {
        "Restore the last quarantined batch".to_string()
    } else {
        count_phrase("Restore", ids.len(), false)
    };
    Ok(Description {
        action: title.clone(),
        title,
        lines: ids.iter().map(super::path_text).collect(),
        items: ids.iter().map(ToString::to_string).collect(),
        ..Description::default()
    })
}

fn item(id: &str, outcome: Value) -> ItemOutcome {
    ItemOutcome {
        item: id.to_string(),
        outcome,
    }
}

/// Restores: see the module docs. `conversation` is where "undo that" looks.
///
/// # Errors
/// [`ToolError::InvalidArgs`] when there is nothing to restore; [`ToolError::Failed`] when the
/// journal cannot be read.
pub async fn execute(
    plugin: &FilesPlugin,
    args: &Value,
    conversation: &str,
) -> Result<ToolOutput, ToolError> {
    let args = normalise(plugin, args)?;
    let named = paths_of(&args);
    let rows: Vec<JournalRow> = if named.is_empty() {
        let batch = plugin
            .journal()
            .last_batch(conversation)
            .await
            .map_err(|e| failed(NAME, format!("reading the journal: {e}")))?;
        if batch.is_empty() {
            return Err(invalid(
                NAME,
                "nothing was moved to quarantine in this conversation; name the paths to restore",
            ));
        }
        let waiting: Vec<JournalRow> = batch
            .into_iter()
            .filter(|r| matches!(r.state.as_str(), "quarantined" | "moving"))
            .collect();
        if waiting.is_empty() {
            return Err(invalid(
                NAME,
                "the last batch of this conversation was restored already; a batch is restored once",
            ));
        }
        waiting
    } else {
        let mut rows = Vec::new();
        for id in &named {
            let row = plugin
                .journal()
                .newest_of(&id.to_string())
                .await
                .map_err(|e| failed(NAME, format!("reading the journal: {e}")))?;
            match row {
                Some(r) => rows.push(r),
                None => {
                    return Err(invalid(
                        NAME,
                        format!("`{id}` was never moved to quarantine by IRIS"),
                    ))
                }
            }
        }
        rows
    };
    let mut outcomes = Vec::new();
    let mut restored = 0usize;
    let mut restored_files_only = true;
    let mut not_restored = Vec::new();
    let mut batch = String::new();
    for row in &rows {
        batch.clone_from(&row.batch_id);
        let outcome = restore_one(plugin, row).await;
        if outcome["status"] == "restored" {
            restored += 1;
            restored_files_only &= row.kind == "file";
        } else {
            not_restored.push(json!({"id": row.entry_id, "why": outcome["message"]}));
        }
        outcomes.push(item(&row.entry_id, outcome));
    }
    // Said as the move was ("Moved 3 files to quarantine"): what came back, and where to.
    let mut summary = match restored {
        0 => "Restored nothing".to_owned(),
        1 => format!(
            "{} to where it was",
            count_phrase("Restored", 1, restored_files_only)
        ),
        n => format!(
            "{} to where they were",
            count_phrase("Restored", n, restored_files_only)
        ),
    };
    if !not_restored.is_empty() {
        summary.push_str(&format!("; {} not restored", not_restored.len()));
    }
    Ok(ToolOutput {
        result: json!({
            "summary": format!("{summary}."),
            "restored": restored,
            "not_restored": not_restored,
            "batch": batch,
            "items": outcomes.iter().map(|o| json!({"id": o.item, "status": o.outcome["status"]})).collect::<Vec<_>>(),
        }),
        items: outcomes,
    })
}

async fn restore_one(plugin: &FilesPlugin, row: &JournalRow) -> Value {
    let no = |message: String| json!({"status": "not_restored", "message": message});
    match row.state.as_str() {
        "restored" => return no("not restored: it was restored already".into()),
        "purged" => return no("not restored: it was deleted for good from the quarantine".into()),
        _ => {}
    }
    let Quarantined {
        root,
        original,
        quarantined,
        dir: from,
    } = match Quarantined::find(plugin, row) {
        Ok(found) => found,
        Err(why) => return no(format!("not restored: {why}")),
    };
    let (qparent, qname) = quarantined.split();
    let (parent, name) = original.split();
    let to = match root.ensure_dir(parent, false) {
        Ok(d) => d,
        Err(e) => return no(format!("not restored: its folder: {e}")),
    };
    if let Err(e) = root::move_noreplace(&from, qname, &to, name, &original.to_string()) {
        return no(format!("not restored: {e}"));
    }
    if let Err(e) = root::fsync_dir(&to).and_then(|()| root::fsync_dir(&from)) {
        tracing::warn!(entry = %original, error = %e, "restored; flushing its folders failed");
    }
    if let Err(e) = plugin
        .journal()
        .advance(
            &row.batch_id,
            &row.entry_id,
            &row.state,
            "restored",
            plugin.now(),
        )
        .await
    {
        tracing::error!(entry = %original, error = %e, "restored, but its journal row says otherwise");
    }
    root.remove_empty_quarantine(qparent);
    json!({"status": "restored", "path": row.entry_id})
}

/// An entry the journal says was moved, found in quarantine now: its root, original id, id in
/// the quarantine, and the folder holding it there.
pub(crate) struct Quarantined<'a> {
    pub(crate) root: &'a crate::root::Root,
    pub(crate) original: EntryId,
    pub(crate) quarantined: EntryId,
    pub(crate) dir: std::os::fd::OwnedFd,
}

impl<'a> Quarantined<'a> {
    /// `row`'s entry, when the inode the journal recorded is at its quarantine path.
    ///
    /// # Errors
    /// Why not, as a clause: its root is gone, the row is damaged, or the quarantine path is
    /// empty or holds something else.
    pub(crate) fn find(plugin: &'a FilesPlugin, row: &JournalRow) -> Result<Self, String> {
        let Some(root) = plugin.root(&row.root) else {
            return Err(format!("the root `{}` is no longer configured", row.root));
        };
        let (Ok(original), Ok(quarantined)) = (
            EntryId::parse(&row.entry_id),
            crate::id::decode(&row.quarantine_rel)
                .and_then(|rel| EntryId::new(&row.root, rel).map_err(|e| e.0)),
        ) else {
            return Err("its journal row is damaged".into());
        };
        let (qparent, qname) = quarantined.split();
        let dir = match root.open_dir(qparent) {
            Ok(d) => d,
            Err(FsError::NotFound) => {
                return Err(format!(
                    "it is no longer in quarantine ({})",
                    row.quarantine_id()
                ))
            }
            Err(e) => return Err(e.to_string()),
        };
        let here = root::lstat(&dir, qname)
            .ok()
            .flatten()
            .map(|st| entry::identity(&st));
        if here.map(|(d, i)| (d.to_string(), i.to_string()))
            != Some((row.dev.clone(), row.ino.clone()))
        {
            return Err(format!(
                "what was moved is no longer in quarantine at {}",
                row.quarantine_id()
            ));
        }
        Ok(Quarantined {
            root,
            original,
            quarantined,
            dir,
        })
    }
}
