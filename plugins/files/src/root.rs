//! A configured root and every file-system call the plugin makes, through descriptors.
//!
//! The rule (docs/adr/0067-files-quarantine.md): nothing outside a root is ever read, listed or
//! moved. Every path is resolved beneath the root's open descriptor by the kernel (`openat2`
//! with `RESOLVE_BENEATH`: `..` and symlinks that would leave it fail with `EXDEV`, so a
//! symlinked folder leading out is refused), the last component is never followed (a symlink
//! is read, listed and moved as a link), and a move is `renameat2` with `RENAME_NOREPLACE`,
//! which never replaces what is at the target and never crosses file systems (`EXDEV`: refused,
//! never copied). The same errno means different things at different calls (`EXDEV` from an
//! open is "leads outside the root", from a rename "another file system"), so each call site
//! maps its own errors into [`FsError`].

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags, ResolveFlags, Stat};
use rustix::io::Errno;

/// What went wrong with one entry; each message is a clause a card line can carry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    /// The path leads outside its root (a `..` or a symlinked folder).
    #[error("it leads outside the root `{0}` (through a symlinked folder); nothing outside a root is touched")]
    Outside(String),
    /// Nothing is at the path.
    #[error("nothing is at that path")]
    NotFound,
    /// A component of the path is not a folder.
    #[error("a part of that path is not a folder")]
    NotFolder,
    /// The move would cross file systems (a mount inside the root).
    #[error("it is on another file system than its root's quarantine (a mount inside the root); IRIS moves, it never copies")]
    OtherFileSystem,
    /// Something already exists at the target of a move.
    #[error("something now exists at {0}; IRIS never writes over it")]
    Exists(String),
    /// Any other error of the system, named with the call.
    #[error("{call}: {errno}")]
    Io {
        /// The call and its subject, e.g. "opening logs".
        call: String,
        /// The system's error.
        errno: String,
    },
}

fn io(call: impl Into<String>, e: Errno) -> FsError {
    FsError::Io {
        call: call.into(),
        errno: std::io::Error::from(e).to_string(),
    }
}

/// What kind of entry a path holds (never following a last-component symlink).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A regular file.
    File,
    /// A folder.
    Folder,
    /// A symbolic link (moved as a link, never followed).
    Link,
    /// A FIFO, socket or device node.
    Other,
}

impl Kind {
    /// Of a `stat`'s mode.
    pub fn of(st: &Stat) -> Kind {
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Folder,
            FileType::Symlink => Kind::Link,
            _ => Kind::Other,
        }
    }

    /// The word `list_files` returns ("file", "folder", "link", "other").
    pub fn word(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Folder => "folder",
            Kind::Link => "link",
            Kind::Other => "other",
        }
    }
}

/// One configured root: its name, its path and an open descriptor of its folder.
#[derive(Debug)]
pub struct Root {
    name: String,
    path: PathBuf,
    dir: OwnedFd,
    /// The device the root's folder is on (its quarantine is on the same one).
    dev: u64,
}

const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC
}

impl Root {
    /// Opens the root folder at `path` (an absolute path; symlinks in it are followed once,
    /// here: the root is what the owner configured).
    ///
    /// # Errors
    /// A message naming the path when it is not absolute or not an existing folder.
    pub fn open(name: &str, path: &Path) -> Result<Root, String> {
        if !path.is_absolute() {
            return Err(format!(
                "path {:?} is not absolute; give the folder's full path",
                path.display().to_string()
            ));
        }
        let dir = rustix::fs::open(path, dir_flags(), Mode::empty()).map_err(|e| {
            format!(
                "path {:?} cannot be opened as a folder: {}",
                path.display().to_string(),
                std::io::Error::from(e)
            )
        })?;
        let st = rustix::fs::fstat(&dir).map_err(|e| {
            format!(
                "path {:?} cannot be read: {}",
                path.display().to_string(),
                std::io::Error::from(e)
            )
        })?;
        Ok(Root {
            name: name.to_string(),
            path: path.to_path_buf(),
            dir,
            dev: crate::entry::identity(&st).0,
        })
    }

    /// The root's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device its folder is on: an entry on another one sits on a mount inside the root.
    pub fn dev(&self) -> u64 {
        self.dev
    }

    /// The root's path as configured.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn open_beneath_error(&self, what: &[u8], e: Errno) -> FsError {
        match e {
            Errno::XDEV => FsError::Outside(self.name.clone()),
            Errno::NOENT => FsError::NotFound,
            Errno::NOTDIR => FsError::NotFolder,
            Errno::LOOP => FsError::NotFolder,
            e => io(format!("opening {}", crate::id::encode(what)), e),
        }
    }

    /// The folder at `rel` beneath the root (`rel` empty: the root), open for reading and
    /// fsync; symlinked folders on the way are followed only while they stay beneath the root.
    ///
    /// # Errors
    /// [`FsError::Outside`], [`FsError::NotFound`], [`FsError::NotFolder`], [`FsError::Io`].
    pub fn open_dir(&self, rel: &[u8]) -> Result<OwnedFd, FsError> {
        let path: &[u8] = if rel.is_empty() { b"." } else { rel };
        rustix::fs::openat2(&self.dir, path, dir_flags(), Mode::empty(), BENEATH)
            .map_err(|e| self.open_beneath_error(rel, e))
    }

    /// The folder at `rel` beneath the root, each missing component created (mode 0700 inside
    /// the quarantine, 0755 elsewhere: `private`).
    ///
    /// # Errors
    /// As [`Root::open_dir`]; [`FsError::NotFolder`] when a component exists as something else.
    pub fn ensure_dir(&self, rel: &[u8], private: bool) -> Result<OwnedFd, FsError> {
        let mode = if private {
            Mode::RWXU
        } else {
            Mode::RWXU | Mode::RGRP | Mode::XGRP | Mode::ROTH | Mode::XOTH
        };
        let mut dir = self.open_dir(b"")?;
        if rel.is_empty() {
            return Ok(dir);
        }
        for part in rel.split(|b| *b == b'/') {
            match rustix::fs::mkdirat(&dir, part, mode) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => {
                    return Err(io(
                        format!("creating folder {}", crate::id::encode(part)),
                        e,
                    ))
                }
            }
            dir = rustix::fs::openat2(
                &dir,
                part,
                dir_flags() | OFlags::NOFOLLOW,
                Mode::empty(),
                BENEATH,
            )
            .map_err(|e| self.open_beneath_error(part, e))?;
        }
        Ok(dir)
    }
}

impl Root {
    /// Removes the empty quarantine folders at and above `rel` (a folder inside
    /// `.iris-quarantine/BATCH/`), up to and including the batch folder, never the quarantine
    /// folder itself; the first folder that is not empty stops it. After a restore, and after a
    /// move that was refused, so no empty batch is left behind.
    pub fn remove_empty_quarantine(&self, mut rel: &[u8]) {
        // .iris-quarantine/BATCH is the last one to try: two components.
        while rel.contains(&b'/') {
            let Some(i) = rel.iter().rposition(|b| *b == b'/') else {
                break;
            };
            let (parent, name) = (&rel[..i], &rel[i + 1..]);
            let Ok(dir) = self.open_dir(parent) else {
                break;
            };
            if rustix::fs::unlinkat(&dir, name, AtFlags::REMOVEDIR).is_err() {
                break;
            }
            rel = parent;
        }
    }
}

/// `stat` of `name` in `dir`, never following a symlink; `None` when nothing is there.
///
/// # Errors
/// [`FsError::Io`] for any error but "not found".
pub fn lstat(dir: impl AsFd, name: &[u8]) -> Result<Option<Stat>, FsError> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(st)),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(io(format!("reading {}", crate::id::encode(name)), e)),
    }
}

/// Opens `name` in `dir` without following it: a file for reading, a folder for listing.
///
/// # Errors
/// [`FsError::NotFound`]; [`FsError::Io`] for anything else (a symlink swapped in is `ELOOP`).
pub fn open_entry(dir: impl AsFd, name: &[u8], kind: Kind) -> Result<OwnedFd, FsError> {
    let flags = match kind {
        Kind::Folder => dir_flags() | OFlags::NOFOLLOW,
        Kind::File => OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Kind::Link | Kind::Other => OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
    };
    rustix::fs::openat2(dir, name, flags, Mode::empty(), BENEATH).map_err(|e| match e {
        Errno::NOENT => FsError::NotFound,
        e => io(format!("opening {}", crate::id::encode(name)), e),
    })
}

/// Moves `from_name` in `from` to `to_name` in `to` with `RENAME_NOREPLACE`. `target` names the
/// destination for [`FsError::Exists`].
///
/// # Errors
/// [`FsError::NotFound`] (the entry is gone), [`FsError::Exists`], [`FsError::OtherFileSystem`]
/// (`EXDEV`), [`FsError::Io`].
pub fn move_noreplace(
    from: impl AsFd,
    from_name: &[u8],
    to: impl AsFd,
    to_name: &[u8],
    target: &str,
) -> Result<(), FsError> {
    rustix::fs::renameat_with(from, from_name, to, to_name, RenameFlags::NOREPLACE).map_err(|e| {
        match e {
            Errno::NOENT => FsError::NotFound,
            Errno::EXIST | Errno::NOTEMPTY => FsError::Exists(target.to_string()),
            Errno::XDEV => FsError::OtherFileSystem,
            e => io(format!("moving {}", crate::id::encode(from_name)), e),
        }
    })
}

/// Flushes a folder's entries to disk (after a move, both folders).
///
/// # Errors
/// [`FsError::Io`].
pub fn fsync_dir(dir: impl AsFd) -> Result<(), FsError> {
    rustix::fs::fsync(dir).map_err(|e| io("flushing a folder", e))
}

/// Removes `name` from `dir`: a file or link at once, a folder with everything in it (each
/// level opened without following links, so a link inside is removed as a link).
///
/// # Errors
/// [`FsError::Io`] naming what could not be removed.
pub fn remove_all(dir: impl AsFd, name: &[u8]) -> Result<(), FsError> {
    let Some(st) = lstat(&dir, name)? else {
        return Ok(());
    };
    if Kind::of(&st) == Kind::Folder {
        let inside = open_entry(&dir, name, Kind::Folder)?;
        for entry in read_dir(&inside)? {
            remove_all(&inside, &entry)?;
        }
        rustix::fs::unlinkat(&dir, name, AtFlags::REMOVEDIR)
            .map_err(|e| io(format!("removing folder {}", crate::id::encode(name)), e))
    } else {
        rustix::fs::unlinkat(&dir, name, AtFlags::empty())
            .map_err(|e| io(format!("removing {}", crate::id::encode(name)), e))
    }
}

/// The names in an open folder (not `.` and `..`), sorted by their bytes.
///
/// # Errors
/// [`FsError::Io`].
pub fn read_dir(dir: impl AsFd) -> Result<Vec<Vec<u8>>, FsError> {
    let listing = rustix::fs::Dir::read_from(dir).map_err(|e| io("listing a folder", e))?;
    let mut names = Vec::new();
    for entry in listing {
        let entry = entry.map_err(|e| io("listing a folder", e))?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(name.to_vec());
        }
    }
    names.sort();
    Ok(names)
}
