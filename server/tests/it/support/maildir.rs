//! Reading a Maildir on disk, to count side effects: which message files are where, so a test
//! can show nothing was lost, duplicated or moved twice.

use std::path::Path;

/// Copies a Maildir's `cur/` messages into `dest` (a Maildir with cur/new/tmp).
pub fn copy_messages(from_cur: &Path, dest: &Path) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(from_cur).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dest.join("cur").join(entry.file_name())).unwrap();
        n += 1;
    }
    n
}

/// Every message file under a Maildir (in a `cur/` or `new/` folder), relative path → bytes.
pub fn snapshot(maildir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut std::collections::BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if matches!(
                p.parent()
                    .and_then(|d| d.file_name())
                    .and_then(|n| n.to_str()),
                Some("cur" | "new")
            ) {
                out.insert(
                    p.strip_prefix(root).unwrap().display().to_string(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(maildir, maildir, &mut out);
    out
}

/// Every message file's bytes, sorted: equal before and after means no file lost and none
/// duplicated, whatever folder each is in.
pub fn contents(maildir: &Path) -> Vec<Vec<u8>> {
    let mut all: Vec<Vec<u8>> = snapshot(maildir).into_values().collect();
    all.sort();
    all
}

/// How many message files are in `.Trash/`.
pub fn trashed(maildir: &Path) -> usize {
    snapshot(maildir)
        .keys()
        .filter(|k| k.starts_with(".Trash/"))
        .count()
}

/// The files of two [`snapshot`]s that moved: those in `before` but not in `after` (gone), and
/// the reverse (arrived).
pub fn moved(
    before: &std::collections::BTreeMap<String, Vec<u8>>,
    after: &std::collections::BTreeMap<String, Vec<u8>>,
) -> (Vec<String>, Vec<String>) {
    let gone = before
        .keys()
        .filter(|k| !after.contains_key(*k))
        .cloned()
        .collect();
    let arrived = after
        .keys()
        .filter(|k| !before.contains_key(*k))
        .cloned()
        .collect();
    (gone, arrived)
}
