//! `list_files(root, glob?, older_than_days?, larger_than_mb?)` (effect read): every entry of a
//! root that matches, up to [`super::MAX_PATHS`], as `{"files": [{"id", "size", "modified",
//! "kind"}], "total": N}`, by path. A root of more than [`crate::entry::WALK_LIMIT`] entries is
//! listed from the first that many read, with `"truncated"` saying so, never refused whole.
//!
//! The walk never follows a link and never enters the root's quarantine folder. `glob` is
//! `globset` syntax matched against the path relative to the root, with `*` stopping at `/` and
//! `**` crossing folders; an entry with a hidden component (a name starting with `.`) is listed
//! only when the pattern names hidden entries (it has a component starting with `.`). A
//! folder's size is the total of the files inside it.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use globset::{GlobBuilder, GlobMatcher};
use iris_core::plugin::{ToolError, ToolOutput};
use serde_json::{json, Map, Value};

use super::{failed, invalid, object, parse_root, time_of, MAX_PATHS};
use crate::entry::{self, mtime_ns, size_of};
use crate::id::{EntryId, QUARANTINE_DIR};
use crate::root::Kind;
use crate::FilesPlugin;

/// The tool's name.
pub const NAME: &str = "list_files";

fn matcher(glob: &str) -> Result<GlobMatcher, ToolError> {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| invalid(NAME, format!("`glob` is not a pattern: {e}")))
}

/// Normal form `{"root", "glob"?, "older_than_days"?, "larger_than_mb"?}`.
///
/// # Errors
/// [`ToolError::InvalidArgs`] for an unknown root, a pattern that does not compile, a negative
/// or non-numeric limit, or any other argument.
pub fn normalise(plugin: &FilesPlugin, args: &Value) -> Result<Value, ToolError> {
    let obj = object(
        NAME,
        args,
        &["root", "glob", "older_than_days", "larger_than_mb"],
    )?;
    let root = parse_root(plugin, NAME, obj.get("root"))?;
    let mut out = Map::new();
    out.insert("root".into(), json!(root.name()));
    match obj.get("glob") {
        None | Some(Value::Null) => {}
        Some(Value::String(g)) if !g.trim().is_empty() => {
            let g = g.trim();
            if g.starts_with('/') || g.split('/').any(|part| part == "..") {
                return Err(invalid(
                    NAME,
                    "`glob` is matched inside the root: it cannot start with `/` or hold `..`",
                ));
            }
            matcher(g)?;
            out.insert("glob".into(), json!(g));
        }
        Some(_) => {
            return Err(invalid(
                NAME,
                "`glob` must be a non-empty pattern, e.g. \"**/*.log\"",
            ))
        }
    }
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
    match obj.get("larger_than_mb") {
        None | Some(Value::Null) => {}
        Some(v) => match v
            .as_f64()
            .filter(|m| m.is_finite() && *m >= 0.0 && *m <= 1e7)
        {
            Some(m) => {
                out.insert("larger_than_mb".into(), json!(m));
            }
            None => {
                return Err(invalid(
                    NAME,
                    "`larger_than_mb` must be a number of megabytes from 0 to 10000000",
                ))
            }
        },
    }
    Ok(Value::Object(out))
}

/// Whether some component of `rel` is hidden.
fn hidden(rel: &[u8]) -> bool {
    rel.split(|b| *b == b'/').any(|p| p.starts_with(b"."))
}

/// Whether `glob` names hidden entries: one of its components starts with `.`.
fn names_hidden(glob: &str) -> bool {
    glob.split('/').any(|p| p.starts_with('.'))
}

/// The listing as a step of a card's "How this came about": "Listed downloads matching
/// '**/*.log': 12 entries" (docs/adr/0123-how-a-card-came-about.md).
pub fn step(args: &Value, result: &Value) -> String {
    let mut what = format!("Listed {}", args["root"].as_str().unwrap_or("a root"));
    if let Some(glob) = args["glob"].as_str() {
        what.push_str(&format!(" matching '{glob}'"));
    }
    if let Some(days) = args["older_than_days"].as_u64() {
        what.push_str(&format!(", older than {days} days"));
    }
    let n = result["total"].as_u64().unwrap_or(0);
    format!("{what}: {n} entr{}", if n == 1 { "y" } else { "ies" })
}

/// The listing: see the module docs.
///
/// # Errors
/// [`ToolError::InvalidArgs`] as [`normalise`]; [`ToolError::Failed`] when the root cannot be
/// read.
pub fn execute(plugin: &FilesPlugin, args: &Value) -> Result<ToolOutput, ToolError> {
    let args = normalise(plugin, args)?;
    let root = parse_root(plugin, NAME, args.get("root"))?;
    let glob = args["glob"].as_str();
    let pattern = glob.map(matcher).transpose()?;
    let show_hidden = glob.is_some_and(names_hidden);
    let cutoff_ns = args["older_than_days"].as_u64().map(|d| {
        let cutoff = plugin.now() - chrono::Duration::days(i64::try_from(d).unwrap_or(0));
        cutoff.timestamp_nanos_opt().unwrap_or(i64::MIN)
    });
    let min_bytes = args["larger_than_mb"].as_f64().map(|m| m * 1_000_000.0);

    let top = root
        .open_dir(b"")
        .map_err(|e| failed(NAME, format!("root `{}`: {e}", root.name())))?;
    // A root too large to read whole is listed from what was read, and says so.
    let (walked, truncated) =
        entry::walk_at_most(&top, Some(QUARANTINE_DIR.as_bytes()), entry::WALK_LIMIT)
            .map_err(|e| failed(NAME, format!("root `{}`: {e}", root.name())))?;
    // A folder's size: the files inside it, at any depth.
    let mut totals: HashMap<&[u8], u64> = HashMap::new();
    for w in walked.iter().filter(|w| w.kind == Kind::File) {
        let size = size_of(&w.stat);
        let mut end = w.rel.len();
        while let Some(i) = w.rel[..end].iter().rposition(|b| *b == b'/') {
            *totals.entry(&w.rel[..i]).or_default() += size;
            end = i;
        }
    }
    let mut files = Vec::new();
    let mut total = 0usize;
    for w in &walked {
        if hidden(&w.rel) && !show_hidden {
            continue;
        }
        if let Some(p) = &pattern {
            if !p.is_match(OsStr::from_bytes(&w.rel)) {
                continue;
            }
        }
        let modified = mtime_ns(&w.stat);
        if cutoff_ns.is_some_and(|c| modified >= c) {
            continue;
        }
        let size = match w.kind {
            Kind::Folder => totals.get(w.rel.as_slice()).copied().unwrap_or(0),
            _ => size_of(&w.stat),
        };
        if min_bytes.is_some_and(|m| (size as f64) <= m) {
            continue;
        }
        total += 1;
        if files.len() < MAX_PATHS {
            let Ok(id) = EntryId::new(root.name(), w.rel.clone()) else {
                continue;
            };
            files.push(json!({
                "id": id.to_string(),
                "size": size,
                "modified": time_of(modified).to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                "kind": w.kind.word(),
            }));
        }
    }
    let mut out = json!({ "files": files, "total": total });
    if total > files.len() {
        // A call names at most MAX_PATHS entries: say plainly that more match.
        out["more"] = json!(format!(
            "{} more match than are listed: a call names at most {MAX_PATHS}; after acting on these, list again (or narrow with `glob`)",
            total - files.len()
        ));
    }
    if truncated {
        out["truncated"] = json!(format!(
            "the root holds more than {} entries; only that many were read, so `total` counts matches among them: narrow with `glob`",
            entry::WALK_LIMIT
        ));
    }
    Ok(ToolOutput::plain(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_entries_need_a_pattern_that_names_them() {
        assert!(hidden(b".env"));
        assert!(hidden(b"a/.cache/x"));
        assert!(!hidden(b"a/b.c"));
        assert!(names_hidden(".env"));
        assert!(names_hidden("**/.cache/**"));
        assert!(!names_hidden("**/*.log"));
    }

    #[test]
    fn a_star_stops_at_a_folder_and_two_cross_them() {
        let m = matcher("*.log").unwrap();
        assert!(m.is_match(OsStr::from_bytes(b"a.log")));
        assert!(!m.is_match(OsStr::from_bytes(b"logs/a.log")));
        let m = matcher("**/*.log").unwrap();
        assert!(m.is_match(OsStr::from_bytes(b"logs/old/a.log")));
        assert!(m.is_match(OsStr::from_bytes(b"a.log")));
        assert!(m.is_match(OsStr::from_bytes(b"logs/\xff.log")));
        assert!(matcher("a[").is_err());
    }
}
