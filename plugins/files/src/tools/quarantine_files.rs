//! `quarantine_files(paths)` (effect destructive, `undo: restore_files`, `undo_window_days:
//! 30`): moves each named entry into its root's quarantine, `<root>/.iris-quarantine/<batch>/
//! <relative path>` (docs/adr/0067-files-quarantine.md: quarantine, never a silent delete).
//!
//! The card (docs/DESIGN.md §2 "card"): "Move N files to quarantine", one line per entry read
//! from the file system, never from the model's words ([`super::card_line`]: path, size,
//! modified time, root; a folder's item count and total size). A path that leads outside its
//! root refuses the whole call before any card; one with nothing at it is named "not found"
//! with a precondition never met, so the rest proceed.
//!
//! Staleness: the card pins each entry ([`crate::entry::Pin`]). Just before the approved call
//! runs the pin is read again ([`super::check_pin`]), and again through the entry's own
//! descriptor right before its move; any difference is "changed since you saw it, not moved"
//! for that line while the rest go on.
//!
//! Execution, per entry: the journal row first (state `moving`), then the move (`renameat2`
//! `RENAME_NOREPLACE`; across file systems it is refused, never copied), a check that what
//! arrived is the pinned inode (a path swapped between the check and the move is moved back),
//! both folders flushed, then the row's state `quarantined`.
//!
//! After a crash mid-batch the call is `unknown` and never runs again; [`locate`] then tells
//! the card where each entry is, by its pinned inode: still at its path, or in quarantine (the
//! journal's row and the inode at its quarantine path), and the card's undo restores those.

use iris_core::plugin::{Description, ItemOutcome, ToolError, ToolOutput, UndoCall};
use serde_json::{json, Value};

use super::{
    card_line, count_phrase, failed, invalid, object, parent_of, parse_paths, paths_of,
    paths_value, pin_now,
};
use crate::entry::{self, Pin};
use crate::id::{EntryId, QUARANTINE_DIR};
use crate::journal::JournalRow;
use crate::root::{self, FsError, Kind};
use crate::FilesPlugin;

/// The tool's name.
pub const NAME: &str = "quarantine_files";

/// The manifest's `undo_window_days` (the manifest test checks they agree).
pub const UNDO_WINDOW_DAYS: u32 = 30;

/// The failpoint between an entry's journal row and its move (crash tests).
pub const FAILPOINT_AFTER_JOURNAL: &str = "files_after_journal";
/// The failpoint between an entry's move and the flush of its folders (crash tests).
pub const FAILPOINT_AFTER_MOVE: &str = "files_after_move";

/// Normal form `{"paths": [...]}`: see [`super::parse_paths`] (outside the quarantine).
///
/// # Errors
/// [`ToolError::InvalidArgs`] for a missing, empty or malformed `paths`, or any other argument.
pub fn normalise(plugin: &FilesPlugin, args: &Value) -> Result<Value, ToolError> {
    let obj = object(NAME, args, &["paths"])?;
    let Some(paths) = obj.get("paths") else {
        return Err(invalid(
            NAME,
            "`paths` is required: the entry ids (from list_files) to move to quarantine",
        ));
    };
    let ids = parse_paths(plugin, NAME, paths, false)?;
    // An entry inside another the call names would move with it: its own line could only say
    // "missing" afterwards, so the call names one or the other.
    for inner in &ids {
        if let Some(outer) = ids.iter().find(|o| {
            o.root() == inner.root()
                && inner.rel().len() > o.rel().len()
                && inner.rel().starts_with(o.rel())
                && inner.rel()[o.rel().len()] == b'/'
        }) {
            return Err(invalid(
                NAME,
                format!("`{inner}` is inside `{outer}`, which this call also names: name the folder or what is in it, not both"),
            ));
        }
    }
    Ok(json!({ "paths": paths_value(&ids) }))
}

/// The card: see the module docs.
///
/// # Errors
/// [`ToolError::InvalidArgs`] when a path leads outside its root or none of them exists.
pub async fn describe(plugin: &FilesPlugin, args: &Value) -> Result<Description, ToolError> {
    let ids = parse_paths(plugin, NAME, &normalise(plugin, args)?["paths"], false)?;
    let mut lines = Vec::with_capacity(ids.len());
    let mut preconditions = Vec::with_capacity(ids.len());
    let mut missing = Vec::new();
    let mut all_files = true;
    for id in &ids {
        match pin_now(plugin, id) {
            Ok(pin) => {
                all_files &= pin.kind == Kind::File;
                let mut line = card_line(id, &pin, plugin.hash_limit());
                if other_file_system(plugin, id, &pin) {
                    line.push_str("; on another file system than its root (a mount inside it): it will not be moved, IRIS never copies");
                }
                lines.push(line);
                preconditions.push(json!(pin));
            }
            Err(e @ FsError::Outside(_)) => {
                return Err(invalid(NAME, format!("`{id}`: {e}")));
            }
            Err(e) => {
                let why = match (&e, plugin.journal().newest_of(&id.to_string()).await) {
                    (FsError::NotFound, Ok(Some(row))) if row.state == "quarantined" => {
                        format!("`{id}` is in quarantine already; restore_files brings it back")
                    }
                    (FsError::NotFound, _) => {
                        format!("nothing is at `{id}`; use an id from list_files")
                    }
                    _ => format!("`{id}` cannot be read: {e}"),
                };
                lines.push(format!(
                    "{} — not found, nothing will be done to it ({why})",
                    super::path_text(id)
                ));
                // Never met: the core leaves the item out and reports it (the rest proceed).
                preconditions.push(Value::Null);
                missing.push(why);
            }
        }
    }
    if missing.len() == ids.len() {
        return Err(invalid(NAME, missing.join("; ")));
    }
    let found = ids.len() - missing.len();
    let title = format!("{} to quarantine", count_phrase("Move", found, all_files));
    Ok(Description {
        action: title.clone(),
        title,
        lines,
        items: ids.iter().map(ToString::to_string).collect(),
        undo_note: Some(format!(
            "Nothing is deleted: {} to the root's .iris-quarantine folder, and you can restore {} for {UNDO_WINDOW_DAYS} days.",
            if found == 1 { "it moves" } else { "they move" },
            if found == 1 { "it" } else { "them" },
        )),
        undo_action: Some(count_phrase("Restore", found, all_files)),
        preconditions,
        ..Description::default()
    })
}

/// Whether the entry sits on another file system than its root (a mount inside the root).
fn other_file_system(plugin: &FilesPlugin, id: &EntryId, pin: &Pin) -> bool {
    plugin.root(id.root()).is_some_and(|r| r.dev() != pin.dev)
}

fn item(id: &str, outcome: Value) -> ItemOutcome {
    ItemOutcome {
        item: id.to_string(),
        outcome,
    }
}

/// A new batch's id, also its folder's name: `20261205T231500Z-3f9a0c12`.
fn batch_id(plugin: &FilesPlugin) -> String {
    format!(
        "{}-{}",
        plugin.now().format("%Y%m%dT%H%M%SZ"),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    )
}

/// What happened to one entry.
enum Moved {
    Quarantined(String),
    Left(&'static str, String),
}

/// Moves every path not in `stale`: see the module docs. `run` and `conversation` are the
/// call's (the checked pins, and where "undo that" looks).
///
/// # Errors
/// [`ToolError::Failed`] when the journal cannot be written for the first entry (nothing was
/// moved); later failures are per item.
pub async fn execute(
    plugin: &FilesPlugin,
    args: &Value,
    stale: &[String],
    run: &str,
    conversation: &str,
) -> Result<ToolOutput, ToolError> {
    let ids = paths_of(&normalise(plugin, args)?);
    let batch = batch_id(plugin);
    let mut outcomes = Vec::new();
    let mut moved = 0usize;
    let mut moved_files_only = true;
    let mut not_moved = Vec::new();
    for id in ids.iter().filter(|id| !stale.contains(&id.to_string())) {
        let key = id.to_string();
        let first = outcomes.is_empty();
        let (result, kind) = match plugin.take_checked(run, &key) {
            None => (
                Ok(Moved::Left(
                    "changed",
                    "not moved: the version you saw could not be confirmed".into(),
                )),
                Kind::Other,
            ),
            Some(pinned) => (
                move_one(plugin, id, &pinned, &batch, conversation, first).await,
                pinned.kind,
            ),
        };
        match result {
            Ok(Moved::Quarantined(to)) => {
                moved += 1;
                moved_files_only &= kind == Kind::File;
                outcomes.push(item(
                    &key,
                    json!({"status": "quarantined", "to": to, "batch": batch, "kind": kind.word()}),
                ));
            }
            Ok(Moved::Left(status, message)) => {
                if status == "changed" {
                    not_moved.push(json!({"id": key, "status": status}));
                }
                outcomes.push(item(&key, json!({"status": status, "message": message})));
            }
            Err(e) => return Err(e),
        }
    }
    let changed = not_moved.len();
    let other = outcomes.len() - moved - changed;
    let mut summary = format!(
        "{} to quarantine",
        count_phrase("Moved", moved, moved_files_only)
    );
    if changed > 0 {
        summary.push_str(&format!(
            "; {changed} changed since you saw {} and {} left alone",
            if changed == 1 { "it" } else { "them" },
            if changed == 1 { "was" } else { "were" }
        ));
    }
    if other > 0 {
        summary.push_str(&format!("; {other} not moved"));
    }
    Ok(ToolOutput {
        result: json!({
            "summary": format!("{summary}."),
            "moved": moved,
            "not_moved": not_moved,
            "batch": batch,
            "undo": "restore_files",
            "items": outcomes.iter().map(|o| json!({"id": o.item, "status": o.outcome["status"]})).collect::<Vec<_>>(),
        }),
        items: outcomes,
    })
}

async fn move_one(
    plugin: &FilesPlugin,
    id: &EntryId,
    pinned: &Pin,
    batch: &str,
    conversation: &str,
    first: bool,
) -> Result<Moved, ToolError> {
    let left = |status: &'static str, message: String| Ok(Moved::Left(status, message));
    let (dir, name) = match parent_of(plugin, id) {
        Ok(p) => p,
        Err(FsError::NotFound | FsError::NotFolder) => {
            return left("missing", "already gone; nothing to move".into())
        }
        Err(e) => return left("failed", format!("not moved: {e}")),
    };
    // Opened without following, and read through that descriptor, right before the move.
    match entry::pin(&dir, name, &id.to_string(), plugin.hash_limit()) {
        Ok(now) if &now == pinned => {}
        Ok(_) => return left("changed", "changed since you saw it, not moved".into()),
        Err(FsError::NotFound) => return left("missing", "already gone; nothing to move".into()),
        Err(e) => {
            return left(
                "changed",
                format!("changed since you saw it, not moved ({e})"),
            )
        }
    }
    let Some(root) = plugin.root(id.root()) else {
        return left(
            "failed",
            "its root is no longer configured; not moved".into(),
        );
    };
    let (parent, _) = id.split();
    let mut quarantine_rel = format!("{QUARANTINE_DIR}/{batch}").into_bytes();
    if !parent.is_empty() {
        quarantine_rel.push(b'/');
        quarantine_rel.extend_from_slice(parent);
    }
    let target = match root.ensure_dir(&quarantine_rel, true) {
        Ok(t) => t,
        Err(e) => return left("failed", format!("not moved: its quarantine folder: {e}")),
    };
    quarantine_rel.push(b'/');
    quarantine_rel.extend_from_slice(name);
    let row = JournalRow {
        batch_id: batch.to_string(),
        entry_id: id.to_string(),
        conversation_id: conversation.to_string(),
        root: root.name().to_string(),
        quarantine_rel: crate::id::encode(&quarantine_rel),
        kind: pinned.kind.word().to_string(),
        size: i64::try_from(pinned.size).unwrap_or(i64::MAX),
        dev: pinned.dev.to_string(),
        ino: pinned.ino.to_string(),
        state: "moving".into(),
        moved_at: iris_store::timestamp_text(plugin.now()),
        restored_at: None,
        purged_at: None,
    };
    if let Err(e) = plugin.journal().insert_moving(&row).await {
        if first {
            return Err(failed(
                NAME,
                format!("writing the journal failed ({e}); nothing was moved"),
            ));
        }
        return left(
            "failed",
            format!("not moved: writing the journal failed ({e})"),
        );
    }
    iris_core::failpoint::hit(FAILPOINT_AFTER_JOURNAL);
    let quarantine_id = row.quarantine_id();
    if let Err(e) = root::move_noreplace(&dir, name, &target, name, &quarantine_id) {
        forget(plugin, batch, id).await;
        // Nothing arrived: the folders made for it go.
        let made = &quarantine_rel[..quarantine_rel.len() - name.len() - 1];
        root.remove_empty_quarantine(made);
        return match e {
            FsError::NotFound => left("missing", "already gone; nothing to move".into()),
            FsError::OtherFileSystem => left("refused", format!("not moved: {e}")),
            e => left("failed", format!("not moved: {e}")),
        };
    }
    // What arrived must be the pinned entry: a path swapped after the check goes back.
    let arrived = root::lstat(&target, name)
        .ok()
        .flatten()
        .map(|st| entry::identity(&st));
    if arrived != Some((pinned.dev, pinned.ino)) {
        let back = root::move_noreplace(&target, name, &dir, name, &id.to_string());
        forget(plugin, batch, id).await;
        return match back {
            Ok(()) => {
                root.remove_empty_quarantine(&quarantine_rel[..quarantine_rel.len() - name.len() - 1]);
                left("changed", "changed since you saw it, not moved".into())
            }
            Err(e) => left(
                "unknown",
                format!("something else took its place while it moved, and putting that back failed ({e}); it is at {quarantine_id}"),
            ),
        };
    }
    iris_core::failpoint::hit(FAILPOINT_AFTER_MOVE);
    if let Err(e) = root::fsync_dir(&target).and_then(|()| root::fsync_dir(&dir)) {
        tracing::warn!(entry = %id, error = %e, "moved to quarantine; flushing its folders failed");
    }
    if let Err(e) = plugin
        .journal()
        .advance(
            batch,
            &id.to_string(),
            "moving",
            "quarantined",
            plugin.now(),
        )
        .await
    {
        tracing::error!(entry = %id, error = %e, "moved to quarantine, but its journal row stays `moving`");
    }
    Ok(Moved::Quarantined(quarantine_id))
}

async fn forget(plugin: &FilesPlugin, batch: &str, id: &EntryId) {
    if let Err(e) = plugin.journal().forget(batch, &id.to_string()).await {
        tracing::warn!(entry = %id, error = %e, "the journal row of an entry left alone stays");
    }
}

/// The undo: `restore_files` for the entries moved.
pub fn undo_call(outcomes: &[ItemOutcome]) -> Option<UndoCall> {
    let paths: Vec<String> = outcomes
        .iter()
        .filter(|o| o.outcome["status"] == "quarantined")
        .map(|o| o.item.clone())
        .collect();
    if paths.is_empty() {
        return None;
    }
    let all_files = outcomes
        .iter()
        .filter(|o| o.outcome["status"] == "quarantined")
        .all(|o| o.outcome["kind"] == "file");
    Some(UndoCall {
        args: json!({ "paths": paths }),
        action: Some(count_phrase("Restore", paths.len(), all_files)),
        items: paths,
    })
}

/// Where each entry of an unknown call is now (the module docs): `items` the card's ids, each
/// with its pin in `preconditions`. An entry is found by the inode its card pinned: at its
/// path ("not_moved"), in quarantine where its newest journal row says ("quarantined", the
/// shape [`execute`] gives, so [`undo_call`] restores it), else "unknown". Reads only.
pub async fn locate(plugin: &FilesPlugin, items: &[String], preconditions: &[Value]) -> ToolOutput {
    let mut outcomes = Vec::with_capacity(items.len());
    let (mut at_path, mut quarantined, mut unknown) = (0usize, 0usize, 0usize);
    for (key, precondition) in items.iter().zip(preconditions) {
        let Ok(pinned) = serde_json::from_value::<Pin>(precondition.clone()) else {
            // No pin: nothing was at the path when the card was made; nothing was done to it.
            continue;
        };
        let outcome = locate_one(plugin, key, &pinned).await;
        match outcome["status"].as_str() {
            Some("not_moved") => at_path += 1,
            Some("quarantined") => quarantined += 1,
            _ => unknown += 1,
        }
        outcomes.push(item(key, outcome));
    }
    let mut parts = Vec::new();
    if quarantined > 0 {
        parts.push(format!("{quarantined} in quarantine"));
    }
    if at_path > 0 {
        parts.push(format!(
            "{at_path} still at {}",
            if at_path == 1 {
                "its path"
            } else {
                "their paths"
            }
        ));
    }
    if unknown > 0 {
        parts.push(format!("{unknown} found in neither place"));
    }
    ToolOutput {
        result: json!({"summary": format!("{}.", parts.join(", "))}),
        items: outcomes,
    }
}

async fn locate_one(plugin: &FilesPlugin, key: &str, pinned: &Pin) -> Value {
    let pinned_identity = (pinned.dev, pinned.ino);
    // As the card's lines name it: the path in its root, then the root.
    let label = EntryId::parse(key).map_or_else(
        |_| iris_core::mcp::escaped(key),
        |id| format!("{} · {}", super::path_text(&id), id.root()),
    );
    let at_path = EntryId::parse(key).ok().and_then(|id| {
        let (dir, name) = parent_of(plugin, &id).ok()?;
        root::lstat(&dir, name)
            .ok()
            .flatten()
            .map(|st| entry::identity(&st))
    });
    if at_path == Some(pinned_identity) {
        return json!({"status": "not_moved", "label": label, "message": "not moved: it is still at its path"});
    }
    let row = match plugin.journal().newest_of(key).await {
        Ok(row) => row,
        Err(e) => {
            return json!({"status": "unknown", "message": format!("not at its path, and the journal could not be read ({e}): look in the root's .iris-quarantine folder")})
        }
    };
    let why = match row {
        Some(row)
            if matches!(row.state.as_str(), "moving" | "quarantined")
                && (row.dev.as_str(), row.ino.as_str())
                    == (
                        pinned.dev.to_string().as_str(),
                        pinned.ino.to_string().as_str(),
                    ) =>
        {
            match super::restore_files::Quarantined::find(plugin, &row) {
                Ok(_) => {
                    return json!({
                        "status": "quarantined",
                        "label": label,
                        "to": row.quarantine_id(),
                        "batch": row.batch_id,
                        "kind": row.kind,
                        "message": format!("in quarantine: {}", iris_core::mcp::escaped(&row.quarantine_rel)),
                    })
                }
                Err(why) => why,
            }
        }
        _ => "IRIS has no record of moving it".into(),
    };
    let message = if at_path.is_some() {
        format!("something else is at its path now, and {why}")
    } else {
        format!("not at its path, and {why}")
    };
    json!({"status": "unknown", "label": label, "message": message})
}
