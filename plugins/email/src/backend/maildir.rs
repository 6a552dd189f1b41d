//! A real Maildir++ folder, as mutt, Dovecot and offlineimap use it (DESIGN §5).
//!
//! Layout: INBOX is the root's `cur/ new/ tmp/`; each subfolder is a directory `.Name/` beside
//! them with its own `cur/ new/ tmp/` (nested folders are `.Parent.Child/`); Trash is `.Trash/`,
//! created with `cur/ new/ tmp/` when missing. A message's key is its unique base name: the file
//! name before the `:2,FLAGS` info, which other clients change when they set flags.
//!
//! Trash and restore are `rename(2)`s and nothing else: this module never removes a file and
//! never overwrites one (a destination that exists is reported as a failed item). A message in
//! `new/` goes to `.Trash/cur/NAME:2,` (files in `cur/` carry the info suffix) and comes back to
//! `new/NAME` when no client touched it in Trash; otherwise it comes back to `cur/` under the name
//! it has in Trash, keeping the flags another client set there.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::{
    AccountInfo, Appended, BackendError, Folder, FolderRole, Listed, MailBackend, MessageRef,
    RestoreOutcome, TrashOutcome, TrashedRef,
};

/// The Maildir++ directory name of the Trash folder.
pub const TRASH_DIR: &str = ".Trash";

/// The folder name of the Maildir root.
pub const INBOX: &str = "INBOX";

/// A Maildir++ account rooted at one directory.
#[derive(Debug, Clone)]
pub struct MaildirBackend {
    account: AccountInfo,
    root: PathBuf,
}

impl MaildirBackend {
    /// Opens the Maildir at `root` (which must have a `cur/` folder; `new/` and `tmp/` may be
    /// missing, as in a Maildir kept in git).
    ///
    /// # Errors
    /// [`BackendError::NotAMaildir`] naming the path.
    pub fn open(account: AccountInfo, root: impl Into<PathBuf>) -> Result<Self, BackendError> {
        let root = root.into();
        if !root.join("cur").is_dir() {
            return Err(BackendError::NotAMaildir(root));
        }
        Ok(MaildirBackend { account, root })
    }

    /// The Maildir root.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// The message key of a Maildir file name: everything before the `:` of the info suffix.
pub fn key_of(file_name: &str) -> &str {
    file_name.split_once(':').map_or(file_name, |(k, _)| k)
}

fn io_err(op: &'static str, path: &Path) -> impl FnOnce(io::Error) -> BackendError {
    let path = path.to_path_buf();
    move |source| BackendError::Io { op, path, source }
}

/// The directory of a folder, refusing names that could leave the Maildir.
fn folder_dir(root: &Path, folder: &str) -> Result<PathBuf, BackendError> {
    if folder.eq_ignore_ascii_case(INBOX) {
        return Ok(root.to_path_buf());
    }
    let unsafe_name = folder.is_empty()
        || folder.starts_with('.')
        || folder.contains(['/', '\\', '\0'])
        || folder.contains("..");
    if unsafe_name {
        return Err(BackendError::NoSuchFolder(folder.to_string()));
    }
    Ok(root.join(format!(".{folder}")))
}

fn role_of(name: &str) -> FolderRole {
    match name.to_lowercase().as_str() {
        "inbox" => FolderRole::Inbox,
        "trash" => FolderRole::Trash,
        "sent" | "sent messages" | "sent items" | "sent mail" => FolderRole::Sent,
        "drafts" => FolderRole::Drafts,
        "junk" | "spam" => FolderRole::Junk,
        "archive" | "archives" => FolderRole::Archive,
        _ => FolderRole::Other,
    }
}

/// Creates `cur/ new/ tmp/` (and Maildir++'s `maildirfolder` marker in a subfolder).
fn ensure_folder(dir: &Path, is_sub: bool) -> Result<(), BackendError> {
    for sub in ["cur", "new", "tmp"] {
        let p = dir.join(sub);
        fs::create_dir_all(&p).map_err(io_err("create folder", &p))?;
    }
    let marker = dir.join("maildirfolder");
    if is_sub && !marker.exists() {
        fs::write(&marker, b"").map_err(io_err("create folder marker", &marker))?;
    }
    Ok(())
}

fn is_message_name(name: &str) -> bool {
    // Dot files are editor or OS droppings, never deliveries.
    !name.is_empty() && !name.starts_with('.')
}

/// Every message file in a folder's `cur/` and `new/`, sorted by location.
fn list_folder(dir: &Path) -> Result<Vec<Listed>, BackendError> {
    let mut out = Vec::new();
    for sub in ["cur", "new"] {
        let d = dir.join(sub);
        let entries = match fs::read_dir(&d) {
            Ok(e) => e,
            // A Maildir copied from git has no new/; an empty folder is not an error.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io_err("read folder", &d)(e)),
        };
        for entry in entries {
            let entry = entry.map_err(io_err("read folder", &d))?;
            let Ok(name) = entry.file_name().into_string() else {
                // Maildir names are ASCII by construction; skip anything else rather than guess.
                tracing::warn!(dir = %d.display(), "skipping a file whose name is not UTF-8");
                continue;
            };
            if !is_message_name(&name) || !entry.path().is_file() {
                continue;
            }
            out.push(Listed {
                key: key_of(&name).to_string(),
                location: format!("{sub}/{name}"),
                labels: Vec::new(),
            });
        }
    }
    out.sort_by(|a, b| a.location.cmp(&b.location));
    Ok(out)
}

/// Finds a message by key: the location hint first, then a scan of `cur/` and `new/`.
fn find(dir: &Path, key: &str, hint: &str) -> Result<Option<(PathBuf, String)>, BackendError> {
    if let Some((sub, name)) = hint.split_once('/') {
        if (sub == "cur" || sub == "new") && !name.contains('/') && key_of(name) == key {
            let p = dir.join(sub).join(name);
            if p.is_file() {
                return Ok(Some((p, hint.to_string())));
            }
        }
    }
    Ok(list_folder(dir)?
        .into_iter()
        .find(|l| l.key == key)
        .map(|l| (dir.join(&l.location), l.location)))
}

fn file_name_of(location: &str) -> &str {
    location.rsplit_once('/').map_or(location, |(_, n)| n)
}

fn trash_sync(root: &Path, msgs: &[MessageRef]) -> Result<Vec<TrashOutcome>, BackendError> {
    let trash = root.join(TRASH_DIR);
    ensure_folder(&trash, true)?;
    let mut out = Vec::with_capacity(msgs.len());
    for m in msgs {
        out.push(trash_one(root, &trash, m));
    }
    Ok(out)
}

fn trash_one(root: &Path, trash: &Path, m: &MessageRef) -> TrashOutcome {
    let dir = match folder_dir(root, &m.folder) {
        Ok(d) => d,
        Err(e) => {
            return TrashOutcome::Failed {
                reason: e.to_string(),
            }
        }
    };
    let (src, location) = match find(&dir, &m.key, &m.location) {
        Ok(Some(found)) => found,
        Ok(None) => return TrashOutcome::Missing,
        Err(e) => {
            return TrashOutcome::Failed {
                reason: e.to_string(),
            }
        }
    };
    let name = file_name_of(&location);
    // Files in cur/ carry the info suffix; one from new/ gets an empty flag set, nothing else.
    let trash_name = if location.starts_with("new/") && !name.contains(':') {
        format!("{name}:2,")
    } else {
        name.to_string()
    };
    let dest = trash.join("cur").join(&trash_name);
    if dest.symlink_metadata().is_ok() {
        return TrashOutcome::Failed {
            reason: format!(
                "message `{}` is already in Trash as `{trash_name}`; not overwritten",
                m.key
            ),
        };
    }
    match fs::rename(&src, &dest) {
        Ok(()) => TrashOutcome::Moved {
            original_location: location,
            trash_location: format!("{TRASH_DIR}/cur/{trash_name}"),
        },
        Err(e) => TrashOutcome::Failed {
            reason: format!("cannot move `{}` to Trash: {e}", src.display()),
        },
    }
}

fn restore_sync(root: &Path, msgs: &[TrashedRef]) -> Vec<RestoreOutcome> {
    let trash = root.join(TRASH_DIR);
    msgs.iter().map(|m| restore_one(root, &trash, m)).collect()
}

fn restore_one(root: &Path, trash: &Path, m: &TrashedRef) -> RestoreOutcome {
    let hint = m
        .trash_location
        .strip_prefix(&format!("{TRASH_DIR}/"))
        .unwrap_or("");
    let (src, location) = match find(trash, &m.key, hint) {
        Ok(Some(found)) => found,
        Ok(None) => return RestoreOutcome::Missing,
        Err(e) => {
            return RestoreOutcome::Failed {
                reason: e.to_string(),
            }
        }
    };
    let dir = match folder_dir(root, &m.original_folder) {
        Ok(d) => d,
        Err(e) => {
            return RestoreOutcome::Failed {
                reason: e.to_string(),
            }
        }
    };
    // The original folder may have been removed while the message sat in Trash: recreate it
    // rather than leave the message stranded.
    if !dir.join("cur").is_dir() {
        if let Err(e) = ensure_folder(&dir, dir != root) {
            return RestoreOutcome::Failed {
                reason: e.to_string(),
            };
        }
    }
    let name = file_name_of(&location);
    let untouched_new = m.original_location.starts_with("new/")
        && (name == format!("{}:2,", m.key) || name == m.key);
    let dest_location = if untouched_new {
        m.original_location.clone()
    } else {
        format!("cur/{name}")
    };
    let dest = dir.join(&dest_location);
    if dest.symlink_metadata().is_ok() {
        return RestoreOutcome::Failed {
            reason: format!(
                "`{dest_location}` already exists in folder `{}`; not overwritten, the message stays in Trash",
                m.original_folder
            ),
        };
    }
    match fs::rename(&src, &dest) {
        Ok(()) => RestoreOutcome::Restored {
            location: dest_location,
            key: None,
        },
        Err(e) => RestoreOutcome::Failed {
            reason: format!("cannot move `{}` back from Trash: {e}", src.display()),
        },
    }
}

fn folders_sync(root: &Path) -> Result<Vec<Folder>, BackendError> {
    let mut out = vec![Folder {
        name: INBOX.to_string(),
        role: FolderRole::Inbox,
    }];
    let mut subs = Vec::new();
    for entry in fs::read_dir(root).map_err(io_err("read Maildir", root))? {
        let entry = entry.map_err(io_err("read Maildir", root))?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let Some(folder) = name.strip_prefix('.') else {
            continue;
        };
        if folder.is_empty() || folder.starts_with('.') || !entry.path().join("cur").is_dir() {
            continue;
        }
        subs.push(Folder {
            name: folder.to_string(),
            role: role_of(folder),
        });
    }
    subs.sort_by(|a, b| a.name.cmp(&b.name));
    out.extend(subs);
    Ok(out)
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, BackendError> + Send + 'static,
) -> Result<T, BackendError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| BackendError::Task(e.to_string()))?
}

#[async_trait]
impl MailBackend for MaildirBackend {
    fn account(&self) -> &AccountInfo {
        &self.account
    }

    async fn folders(&self) -> Result<Vec<Folder>, BackendError> {
        let root = self.root.clone();
        blocking(move || folders_sync(&root)).await
    }

    async fn list(&self, folder: &str) -> Result<Vec<Listed>, BackendError> {
        let dir = folder_dir(&self.root, folder)?;
        if !dir.join("cur").is_dir() && !dir.join("new").is_dir() {
            return Err(BackendError::NoSuchFolder(folder.to_string()));
        }
        blocking(move || list_folder(&dir)).await
    }

    async fn read(&self, msg: &MessageRef) -> Result<Option<Vec<u8>>, BackendError> {
        let dir = folder_dir(&self.root, &msg.folder)?;
        let (key, hint) = (msg.key.clone(), msg.location.clone());
        blocking(move || {
            let Some((path, _)) = find(&dir, &key, &hint)? else {
                return Ok(None);
            };
            match fs::read(&path) {
                Ok(bytes) => Ok(Some(bytes)),
                // Renamed by another client between the lookup and the read.
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(io_err("read message", &path)(e)),
            }
        })
        .await
    }

    async fn trash(&self, msgs: &[MessageRef]) -> Result<Vec<TrashOutcome>, BackendError> {
        let (root, msgs) = (self.root.clone(), msgs.to_vec());
        blocking(move || trash_sync(&root, &msgs)).await
    }

    async fn restore(&self, msgs: &[TrashedRef]) -> Result<Vec<RestoreOutcome>, BackendError> {
        let (root, msgs) = (self.root.clone(), msgs.to_vec());
        blocking(move || Ok(restore_sync(&root, &msgs))).await
    }

    async fn append_sent(&self, raw: &[u8]) -> Result<Appended, BackendError> {
        let (root, raw) = (self.root.clone(), raw.to_vec());
        blocking(move || append_sent_sync(&root, &raw)).await
    }
}

/// The Sent folder's name: an existing folder with the Sent role, else `Sent`.
fn sent_folder(root: &Path) -> Result<String, BackendError> {
    Ok(folders_sync(root)?
        .into_iter()
        .find(|f| f.role == FolderRole::Sent)
        .map_or_else(|| "Sent".to_string(), |f| f.name))
}

/// Maildir delivery: write into `tmp/` under a unique name, then rename into `cur/` with the
/// seen flag (a sent copy is read by definition). The rename never overwrites: the name is new.
fn append_sent_sync(root: &Path, raw: &[u8]) -> Result<Appended, BackendError> {
    let folder = sent_folder(root)?;
    let dir = folder_dir(root, &folder)?;
    ensure_folder(&dir, true)?;
    let key = format!(
        "{}.M{}P{}.iris",
        chrono::Utc::now().timestamp(),
        uuid::Uuid::new_v4().simple(),
        std::process::id()
    );
    let tmp = dir.join("tmp").join(&key);
    fs::write(&tmp, raw).map_err(io_err("write sent copy", &tmp))?;
    let name = format!("{key}:2,S");
    let dest = dir.join("cur").join(&name);
    fs::rename(&tmp, &dest).map_err(io_err("deliver sent copy", &dest))?;
    Ok(Appended {
        folder,
        listed: Listed {
            key,
            location: format!("cur/{name}"),
            labels: Vec::new(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_folder_names() {
        assert_eq!(key_of("1700.M1.host:2,S"), "1700.M1.host");
        assert_eq!(key_of("1700.M1.host"), "1700.M1.host");
        let root = Path::new("/m");
        assert_eq!(folder_dir(root, "INBOX").unwrap(), PathBuf::from("/m"));
        assert_eq!(folder_dir(root, "Sent").unwrap(), PathBuf::from("/m/.Sent"));
        for bad in ["", "../x", ".Trash", "a/b", "a..b"] {
            assert!(folder_dir(root, bad).is_err(), "{bad}");
        }
        assert_eq!(role_of("Trash"), FolderRole::Trash);
        assert_eq!(role_of("Sent Items"), FolderRole::Sent);
    }
}
