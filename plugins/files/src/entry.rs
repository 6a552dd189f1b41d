//! What the card pins of one entry ([`Pin`], the precondition) and how it is read, always
//! through a descriptor opened without following the entry (crate::root).
//!
//! A file: device, inode, size, modification and change times and, up to
//! [`HASH_LIMIT`] bytes, the SHA-256 of its content (a larger one is checked by size and times
//! only, and its card line says so). A folder: the same of the folder, plus a digest of the
//! names, kinds, sizes and times of everything inside it, its item count and total size. A
//! link: its target. Any change to one of these between the card and the move is "changed since
//! you saw it", and the entry is left where it is.

use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::Stat;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::root::{self, FsError, Kind};

/// Largest file whose content is hashed for its pin: 256 MiB.
pub const HASH_LIMIT: u64 = 256 * 1024 * 1024;

/// Most entries a folder's pin (or one listing) reads; a larger folder is refused by name.
pub const WALK_LIMIT: usize = 100_000;

/// What a card pins of one entry (the precondition). Compared whole: equal pins, same entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pin {
    /// The entry's id (crate::id).
    pub id: String,
    /// What it is.
    pub kind: Kind,
    /// Its device and inode: the entry itself, wherever it moves on that file system.
    pub dev: u64,
    /// Its inode number.
    pub ino: u64,
    /// Bytes: a file's size, a folder's total of the files inside it, a link's target length.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// Change (status) time, nanoseconds since the epoch.
    pub ctime_ns: i64,
    /// A file's SHA-256 (hex), when it is at most [`HASH_LIMIT`] bytes.
    #[serde(default)]
    pub sha256: Option<String>,
    /// A folder's digest of its contents (hex), and how many entries it holds.
    #[serde(default)]
    pub contents: Option<String>,
    /// A folder's entry count.
    #[serde(default)]
    pub items: Option<u64>,
    /// A link's target, hex of its bytes.
    #[serde(default)]
    pub target: Option<String>,
}

fn nanos(secs: i64, nsec: u64) -> i64 {
    secs.saturating_mul(1_000_000_000)
        .saturating_add(i64::try_from(nsec).unwrap_or(0))
}

/// Modification time of a `stat`, nanoseconds since the epoch.
#[allow(clippy::unnecessary_cast)] // the field types differ by architecture
pub fn mtime_ns(st: &Stat) -> i64 {
    nanos(st.st_mtime as i64, st.st_mtime_nsec as u64)
}

#[allow(clippy::unnecessary_cast)]
fn ctime_ns(st: &Stat) -> i64 {
    nanos(st.st_ctime as i64, st.st_ctime_nsec as u64)
}

/// A `stat`'s size in bytes.
#[allow(clippy::unnecessary_cast)]
pub fn size_of(st: &Stat) -> u64 {
    u64::try_from(st.st_size as i64).unwrap_or(0)
}

#[allow(clippy::unnecessary_cast)]
fn dev_ino(st: &Stat) -> (u64, u64) {
    (st.st_dev as u64, st.st_ino as u64)
}

/// Device and inode of a `stat`.
pub fn identity(st: &Stat) -> (u64, u64) {
    dev_ino(st)
}

fn io(call: &str, e: impl std::fmt::Display) -> FsError {
    FsError::Io {
        call: call.into(),
        errno: e.to_string(),
    }
}

/// Reads the pin of `name` in `dir` (see the module docs), `id` its id, hashing files of at
/// most `hash_limit` bytes.
///
/// # Errors
/// [`FsError::NotFound`], [`FsError::Io`] (a folder over [`WALK_LIMIT`] entries included).
pub fn pin(dir: &OwnedFd, name: &[u8], id: &str, hash_limit: u64) -> Result<Pin, FsError> {
    let Some(first) = root::lstat(dir, name)? else {
        return Err(FsError::NotFound);
    };
    let kind = Kind::of(&first);
    let opened = root::open_entry(dir, name, kind)?;
    // Everything below is read through the descriptor: what was opened is what is pinned.
    let st = rustix::fs::fstat(&opened).map_err(|e| io("reading an opened entry", e))?;
    if Kind::of(&st) != kind {
        return Err(FsError::NotFound);
    }
    let (dev, ino) = dev_ino(&st);
    let mut pin = Pin {
        id: id.to_string(),
        kind,
        dev,
        ino,
        size: size_of(&st),
        mtime_ns: mtime_ns(&st),
        ctime_ns: ctime_ns(&st),
        sha256: None,
        contents: None,
        items: None,
        target: None,
    };
    match kind {
        Kind::File if pin.size <= hash_limit => {
            pin.sha256 = Some(sha256_of(opened)?);
        }
        Kind::Folder => {
            let summary = folder_summary(&opened)?;
            pin.contents = Some(summary.digest);
            pin.items = Some(summary.items);
            pin.size = summary.bytes;
        }
        Kind::Link => {
            let target = rustix::fs::readlinkat(dir, name, Vec::new())
                .map_err(|e| io("reading a link", std::io::Error::from(e)))?;
            pin.target = Some(hex::encode(target.as_bytes()));
        }
        _ => {}
    }
    Ok(pin)
}

fn sha256_of(fd: OwnedFd) -> Result<String, FsError> {
    let mut file = std::fs::File::from(fd);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf).map_err(|e| io("reading a file", e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// A folder's contents in short: entries, total bytes of its files, and a digest of every
/// entry's relative name, kind, size and modification time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FolderSummary {
    /// Entries inside it, at any depth.
    pub items: u64,
    /// Total bytes of the files inside it.
    pub bytes: u64,
    /// SHA-256 (hex) over the sorted entries.
    pub digest: String,
}

/// One entry met by [`walk`].
#[derive(Debug, Clone)]
pub struct Walked {
    /// Its path relative to the folder walked.
    pub rel: Vec<u8>,
    /// Its `stat` (not followed).
    pub stat: Stat,
    /// Its kind.
    pub kind: Kind,
}

/// Every entry beneath the open folder `top`, depth first in name order, never following a
/// link; `skip` leaves a top-level name out (the quarantine folder). At most [`WALK_LIMIT`].
///
/// # Errors
/// [`FsError::Io`], including a folder over the limit.
pub fn walk(top: impl AsFd, skip: Option<&[u8]>) -> Result<Vec<Walked>, FsError> {
    match walk_at_most(top, skip, WALK_LIMIT)? {
        (entries, false) => Ok(entries),
        (_, true) => Err(io(
            "reading a folder",
            format!("it holds more than {WALK_LIMIT} entries"),
        )),
    }
}

/// As [`walk`], stopping after `limit` entries: the entries met, and whether it stopped early
/// (then they are the first `limit` in the order the folders were read, not the whole tree).
///
/// # Errors
/// [`FsError::Io`].
pub fn walk_at_most(
    top: impl AsFd,
    skip: Option<&[u8]>,
    limit: usize,
) -> Result<(Vec<Walked>, bool), FsError> {
    let mut out = Vec::new();
    let first = rustix::io::dup(top.as_fd()).map_err(|e| io("opening a folder", e))?;
    let mut stack: Vec<(OwnedFd, Vec<u8>)> = vec![(first, Vec::new())];
    while let Some((dir, prefix)) = stack.pop() {
        for name in root::read_dir(&dir)? {
            if prefix.is_empty() && skip == Some(name.as_slice()) {
                continue;
            }
            let Some(st) = root::lstat(&dir, &name)? else {
                continue;
            };
            let kind = Kind::of(&st);
            let mut rel = prefix.clone();
            if !rel.is_empty() {
                rel.push(b'/');
            }
            rel.extend_from_slice(&name);
            if kind == Kind::Folder {
                match root::open_entry(&dir, &name, Kind::Folder) {
                    Ok(fd) => stack.push((fd, rel.clone())),
                    Err(FsError::NotFound) => continue,
                    Err(e) => return Err(e),
                }
            }
            out.push(Walked {
                rel,
                stat: st,
                kind,
            });
            if out.len() > limit {
                out.truncate(limit);
                out.sort_by(|a, b| a.rel.cmp(&b.rel));
                return Ok((out, true));
            }
        }
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok((out, false))
}

/// See [`FolderSummary`].
///
/// # Errors
/// As [`walk`].
pub fn folder_summary(folder: impl AsFd) -> Result<FolderSummary, FsError> {
    let entries = walk(folder, None)?;
    let mut hasher = Sha256::new();
    let mut bytes = 0u64;
    for e in &entries {
        let size = size_of(&e.stat);
        if e.kind == Kind::File {
            bytes = bytes.saturating_add(size);
        }
        hasher.update(&e.rel);
        hasher.update(format!("\0{}\0{size}\0{}\n", e.kind.word(), mtime_ns(&e.stat)).as_bytes());
    }
    Ok(FolderSummary {
        items: entries.len() as u64,
        bytes,
        digest: hex::encode(hasher.finalize()),
    })
}

/// "532 bytes", "1.2 KB", "3.4 MB", "1.1 GB" (powers of 1,000, one decimal).
pub fn size_text(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1000 {
        return format!("{bytes} byte{}", if bytes == 1 { "" } else { "s" });
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 999.95 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_stops_at_its_limit_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a", "b", "c", "d", "e"] {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        let top = std::fs::File::open(dir.path()).unwrap();
        let (some, truncated) = walk_at_most(&top, None, 3).unwrap();
        assert_eq!((some.len(), truncated), (3, true));
        let (all, truncated) = walk_at_most(&top, None, 10).unwrap();
        assert_eq!((all.len(), truncated), (5, false));
        assert!(walk(&top, None).is_ok());
    }

    #[test]
    fn sizes_read_as_people_say_them() {
        assert_eq!(size_text(0), "0 bytes");
        assert_eq!(size_text(1), "1 byte");
        assert_eq!(size_text(999), "999 bytes");
        assert_eq!(size_text(1_234), "1.2 KB");
        assert_eq!(size_text(999_999), "1.0 MB");
        assert_eq!(size_text(3_400_000), "3.4 MB");
        assert_eq!(size_text(1_100_000_000), "1.1 GB");
    }
}
