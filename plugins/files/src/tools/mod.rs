//! The plugin's tools, one module each, with the same verbs (docs/DESIGN.md §6,
//! `iris_core::plugin`): `normalise` (the one argument form that gets pinned; idempotent),
//! `describe` (card lines and items) and `execute` (the effect).
//!
//! Shared here: the path list rule, the root argument, the pin check every destructive tool
//! makes just before it runs, and the card line of an entry.

use std::os::fd::OwnedFd;

use chrono::{DateTime, Utc};
use iris_core::plugin::ToolError;
use serde_json::Value;

use crate::entry::{self, Pin};
use crate::id::EntryId;
use crate::root::{FsError, Kind, Root};
use crate::FilesPlugin;

pub mod list_files;
pub mod list_quarantine;
pub mod purge_quarantine;
pub mod quarantine_files;
pub mod restore_files;

/// Most paths one call may name, and most entries one list returns (the manifest's `maxItems`).
pub const MAX_PATHS: usize = 500;

// The argument rules every plugin shares (iris_core::plugin), under this crate's short names.
pub(crate) use iris_core::plugin::{
    args_object as object, invalid_args as invalid, tool_failed as failed,
};

/// The root argument: the name of a configured root.
pub(crate) fn parse_root<'p>(
    plugin: &'p FilesPlugin,
    tool: &str,
    v: Option<&Value>,
) -> Result<&'p Root, ToolError> {
    let Some(Value::String(name)) = v else {
        return Err(invalid(
            tool,
            "`root` is required: the name of a configured root",
        ));
    };
    plugin.root(name.trim()).ok_or_else(|| {
        invalid(
            tool,
            format!(
                "no root is named `{}`; the roots are: {}",
                iris_core::mcp::escaped(name),
                plugin.roots().join(", ")
            ),
        )
    })
}

/// The path list rule: an array of 1 to [`MAX_PATHS`] entry ids (crate::id), each of a
/// configured root; `quarantine` says whether they must be inside a root's quarantine folder
/// (purge) or outside it (everything else). Duplicates dropped keeping the first.
pub(crate) fn parse_paths(
    plugin: &FilesPlugin,
    tool: &str,
    v: &Value,
    quarantine: bool,
) -> Result<Vec<EntryId>, ToolError> {
    let Value::Array(items) = v else {
        return Err(invalid(
            tool,
            "`paths` must be an array of entry ids (strings)",
        ));
    };
    let mut ids: Vec<EntryId> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Value::String(s) = item else {
            return Err(invalid(tool, format!("`paths[{i}]` is not a string")));
        };
        let id = EntryId::parse(s).map_err(|e| invalid(tool, format!("`paths[{i}]`: {e}")))?;
        if plugin.root(id.root()).is_none() {
            return Err(invalid(
                tool,
                format!(
                    "`paths[{i}]`: no root is named `{}`; the roots are: {}",
                    iris_core::mcp::escaped(id.root()),
                    plugin.roots().join(", ")
                ),
            ));
        }
        if id.in_quarantine() != quarantine {
            return Err(invalid(
                tool,
                if quarantine {
                    format!("`paths[{i}]` is not in a quarantine: use ids from list_quarantine")
                } else {
                    format!("`paths[{i}]` is inside IRIS's quarantine folder: use list_quarantine and purge_quarantine for those")
                },
            ));
        }
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    if ids.is_empty() {
        return Err(invalid(tool, "`paths` is empty: name at least one entry"));
    }
    if ids.len() > MAX_PATHS {
        return Err(invalid(
            tool,
            format!("{} paths: one call names at most {MAX_PATHS}", ids.len()),
        ));
    }
    Ok(ids)
}

/// The normal form of a `paths` list: the ids as text, in order.
pub(crate) fn paths_value(ids: &[EntryId]) -> Value {
    Value::Array(ids.iter().map(|i| Value::String(i.to_string())).collect())
}

/// The ids of an already normalised `{"paths": [...]}`.
pub(crate) fn paths_of(args: &Value) -> Vec<EntryId> {
    args["paths"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .filter_map(|s| EntryId::parse(s).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The parent folder of `id`, opened beneath its root, and the entry's name.
pub(crate) fn parent_of<'a>(
    plugin: &FilesPlugin,
    id: &'a EntryId,
) -> Result<(OwnedFd, &'a [u8]), FsError> {
    let root = plugin
        .root(id.root())
        .ok_or_else(|| FsError::Outside(id.root().to_string()))?;
    let (parent, name) = id.split();
    Ok((root.open_dir(parent)?, name))
}

/// Reads the pin of `id` now.
pub(crate) fn pin_now(plugin: &FilesPlugin, id: &EntryId) -> Result<Pin, FsError> {
    let (dir, name) = parent_of(plugin, id)?;
    entry::pin(&dir, name, &id.to_string(), plugin.hash_limit())
}

/// Whether `item`'s pinned entry is still exactly as the card showed it (fail closed: an
/// unreadable precondition or entry is `false`). When it holds, the pin is remembered for the
/// re-check the execution makes through the entry's descriptor.
pub(crate) fn check_pin(plugin: &FilesPlugin, run: &str, item: &str, precondition: &Value) -> bool {
    let Ok(pinned) = serde_json::from_value::<Pin>(precondition.clone()) else {
        return false;
    };
    let Ok(id) = EntryId::parse(&pinned.id) else {
        return false;
    };
    match pin_now(plugin, &id) {
        Ok(now) if now == pinned => {
            plugin.remember_checked(run, item, pinned);
            true
        }
        _ => false,
    }
}

/// A time of a `stat` (nanoseconds since the epoch) as UTC.
pub(crate) fn time_of(nanos: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(
        nanos.div_euclid(1_000_000_000),
        u32::try_from(nanos.rem_euclid(1_000_000_000)).unwrap_or(0),
    )
    .unwrap_or_default()
}

/// "3 Oct 2026, 14:02 UTC".
pub(crate) fn day_text(at: DateTime<Utc>) -> String {
    at.format("%-d %b %Y, %H:%M UTC").to_string()
}

/// An id's relative path as card text: escaped and bounded (`iris_core::mcp::escaped`).
pub(crate) fn path_text(id: &EntryId) -> String {
    iris_core::mcp::escaped(&id.rel_text())
}

/// One card line: "logs/app.log — 1.2 MB, modified 3 Oct 2026, 14:02 UTC · downloads"; a folder
/// "old-builds/ — folder, 12 items, 48.3 MB, …"; a link "… — link to ../x, …"; a file too large
/// to hash says it is checked by size and times only.
pub(crate) fn card_line(id: &EntryId, pin: &Pin, hash_limit: u64) -> String {
    let modified = day_text(time_of(pin.mtime_ns));
    let what = match pin.kind {
        Kind::File => {
            let mut s = entry::size_text(pin.size);
            if pin.sha256.is_none() {
                s.push_str(&format!(
                    " (over {}: checked by size and times only)",
                    entry::size_text(hash_limit)
                ));
            }
            s
        }
        Kind::Folder => {
            let items = pin.items.unwrap_or(0);
            format!(
                "folder, {items} item{}, {}",
                if items == 1 { "" } else { "s" },
                entry::size_text(pin.size)
            )
        }
        Kind::Link => {
            let target = pin
                .target
                .as_deref()
                .and_then(|h| hex::decode(h).ok())
                .map(|b| crate::id::encode(&b))
                .unwrap_or_default();
            format!(
                "link to {} (the link is moved, not what it points to)",
                iris_core::mcp::escaped(&target)
            )
        }
        Kind::Other => "special file".into(),
    };
    let slash = if pin.kind == Kind::Folder { "/" } else { "" };
    format!(
        "{}{slash} — {what}, modified {modified} · {}",
        path_text(id),
        iris_core::mcp::escaped(id.root())
    )
}

/// "Move 1 file to quarantine", "Move 3 entries to quarantine": files when every entry is a
/// file, else entries.
pub(crate) fn count_phrase(verb: &str, n: usize, all_files: bool) -> String {
    let noun = match (all_files, n == 1) {
        (true, true) => "file",
        (true, false) => "files",
        (false, true) => "entry",
        (false, false) => "entries",
    };
    format!("{verb} {n} {noun}")
}
