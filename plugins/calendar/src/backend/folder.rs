//! A calendar account in a local folder, in the vdir layout of vdirsyncer and khal: one `.ics`
//! file per event. `folder` is one calendar when it holds `.ics` files itself, otherwise each of
//! its visible subfolders is a calendar. A calendar's name is its `displayname` file (vdirsyncer's
//! metadata), or else the folder's name.
//!
//! The CalDAV rules hold here too: a resource's ETag is the SHA-256 of its bytes; a delete first
//! renames the file to a hidden name in the same folder (atomic), checks the ETag of what it
//! took, and puts it back when it differs (`If-Match`); a create writes a hidden file, syncs it,
//! and links it to its name, which fails when the name is taken (`If-None-Match: *`), so nothing
//! is ever overwritten. Hidden files (a leading dot) are never listed.

use std::fs;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use sha2::{Digest, Sha256};

use super::{BackendError, CalendarBackend, CalendarRef, Created, Deleted, Resource};

/// A folder backend: see the module docs.
#[derive(Debug, Clone)]
pub struct FolderBackend {
    account: String,
    root: PathBuf,
}

impl FolderBackend {
    /// Opens the account `account` over `root`.
    ///
    /// # Errors
    /// [`BackendError::Config`] when `root` is not a folder.
    pub fn open(
        account: impl Into<String>,
        root: impl Into<PathBuf>,
    ) -> Result<Self, BackendError> {
        let root = root.into();
        if !root.is_dir() {
            return Err(BackendError::Config(format!(
                "calendar folder {} is not a folder",
                root.display()
            )));
        }
        Ok(FolderBackend {
            account: account.into(),
            root,
        })
    }

    fn folder_of(&self, calendar: &CalendarRef) -> Result<PathBuf, BackendError> {
        if calendar.href.is_empty() {
            return Ok(self.root.clone());
        }
        plain_name(&calendar.href)?;
        Ok(self.root.join(&calendar.href))
    }
}

/// The SHA-256 of `bytes`, hex: a folder resource's ETag.
pub fn etag_of(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn io(path: &Path, what: &str, e: std::io::Error) -> BackendError {
    BackendError::Io(format!("{what} {}: {e}", path.display()))
}

/// An href is one visible file name: no separator, no `..`, no leading dot.
fn plain_name(href: &str) -> Result<(), BackendError> {
    if href.is_empty() || href.contains('/') || href.contains('\0') || href.starts_with('.') {
        return Err(BackendError::Io(format!(
            "`{href}` is not a file name in a calendar folder"
        )));
    }
    Ok(())
}

fn is_visible_ics(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    !name.starts_with('.') && name.to_ascii_lowercase().ends_with(".ics") && path.is_file()
}

fn display_name(folder: &Path, fallback: &str) -> String {
    fs::read_to_string(folder.join("displayname"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| fallback.to_string())
}

fn sync_folder(folder: &Path) -> Result<(), BackendError> {
    fs::File::open(folder)
        .and_then(|f| f.sync_all())
        .map_err(|e| io(folder, "syncing", e))
}

fn hidden_twin(folder: &Path, href: &str, why: &str) -> PathBuf {
    folder.join(format!(
        ".{href}.iris-{why}-{}",
        uuid::Uuid::new_v4().simple()
    ))
}

#[async_trait]
impl CalendarBackend for FolderBackend {
    fn account(&self) -> &str {
        &self.account
    }

    async fn calendars(&self) -> Result<Vec<CalendarRef>, BackendError> {
        let entries: Vec<PathBuf> = fs::read_dir(&self.root)
            .map_err(|e| io(&self.root, "listing", e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        if entries.iter().any(|p| is_visible_ics(p)) {
            let fallback = self
                .root
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or(&self.account)
                .to_string();
            return Ok(vec![CalendarRef {
                href: String::new(),
                name: display_name(&self.root, &fallback),
            }]);
        }
        let mut calendars: Vec<CalendarRef> = entries
            .iter()
            .filter(|p| p.is_dir())
            .filter_map(|p| {
                let name = p.file_name()?.to_str()?.to_string();
                (!name.starts_with('.')).then(|| CalendarRef {
                    name: display_name(p, &name),
                    href: name,
                })
            })
            .collect();
        calendars.sort_by(|a, b| a.href.cmp(&b.href));
        Ok(calendars)
    }

    async fn resources(&self, calendar: &CalendarRef) -> Result<Vec<Resource>, BackendError> {
        let folder = self.folder_of(calendar)?;
        let mut out = Vec::new();
        for entry in fs::read_dir(&folder).map_err(|e| io(&folder, "listing", e))? {
            let path = entry.map_err(|e| io(&folder, "listing", e))?.path();
            if !is_visible_ics(&path) {
                continue;
            }
            let Some(href) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            // A file removed between the listing and the read is simply not there.
            match fs::read(&path) {
                Ok(bytes) => out.push(Resource {
                    href: href.to_string(),
                    etag: etag_of(&bytes),
                    bytes,
                }),
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(io(&path, "reading", e)),
            }
        }
        out.sort_by(|a, b| a.href.cmp(&b.href));
        Ok(out)
    }

    async fn get(
        &self,
        calendar: &CalendarRef,
        href: &str,
    ) -> Result<Option<Resource>, BackendError> {
        plain_name(href)?;
        let path = self.folder_of(calendar)?.join(href);
        match fs::read(&path) {
            Ok(bytes) => Ok(Some(Resource {
                href: href.to_string(),
                etag: etag_of(&bytes),
                bytes,
            })),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(&path, "reading", e)),
        }
    }

    async fn delete(
        &self,
        calendar: &CalendarRef,
        href: &str,
        etag: &str,
    ) -> Result<Deleted, BackendError> {
        plain_name(href)?;
        let folder = self.folder_of(calendar)?;
        let path = folder.join(href);
        let taken = hidden_twin(&folder, href, "deleting");
        match fs::rename(&path, &taken) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Deleted::Missing),
            Err(e) => return Err(io(&path, "moving aside", e)),
        }
        let bytes = fs::read(&taken).map_err(|e| io(&taken, "reading", e))?;
        if etag_of(&bytes) != etag {
            // Not what the owner saw: put it back where it was, never over a newer file.
            return match fs::hard_link(&taken, &path) {
                Ok(()) => {
                    fs::remove_file(&taken).map_err(|e| io(&taken, "removing", e))?;
                    sync_folder(&folder)?;
                    Ok(Deleted::Changed)
                }
                Err(e) => Err(io(
                    &path,
                    &format!(
                        "putting back the changed event (kept at {})",
                        taken.display()
                    ),
                    e,
                )),
            };
        }
        fs::remove_file(&taken).map_err(|e| io(&taken, "removing", e))?;
        sync_folder(&folder)?;
        Ok(Deleted::Deleted)
    }

    async fn create(
        &self,
        calendar: &CalendarRef,
        href: &str,
        bytes: &[u8],
    ) -> Result<Created, BackendError> {
        plain_name(href)?;
        let folder = self.folder_of(calendar)?;
        fs::create_dir_all(&folder).map_err(|e| io(&folder, "creating", e))?;
        let path = folder.join(href);
        let staged = hidden_twin(&folder, href, "restoring");
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&staged)
            .map_err(|e| io(&staged, "creating", e))?;
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .map_err(|e| io(&staged, "writing", e))?;
        drop(file);
        let linked = fs::hard_link(&staged, &path);
        fs::remove_file(&staged).map_err(|e| io(&staged, "removing", e))?;
        match linked {
            Ok(()) => {
                sync_folder(&folder)?;
                Ok(Created::Created)
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(Created::Exists),
            Err(e) => Err(io(&path, "writing", e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVENT: &[u8] = b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:a\r\nDTSTART:20261208T100000Z\r\nSUMMARY:Dentist\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

    fn one_calendar() -> (tempfile::TempDir, FolderBackend, CalendarRef) {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.ics"), EVENT).unwrap();
        let backend = FolderBackend::open("personal", dir.path()).unwrap();
        let cal = CalendarRef {
            href: String::new(),
            name: "x".into(),
        };
        (dir, backend, cal)
    }

    #[tokio::test]
    async fn a_folder_of_ics_files_is_one_calendar_and_subfolders_are_several() {
        let (dir, backend, _) = one_calendar();
        let cals = backend.calendars().await.unwrap();
        assert_eq!(cals.len(), 1);
        assert_eq!(cals[0].href, "");

        let home = tempfile::tempdir().unwrap();
        for (name, display) in [("work", None), ("home", Some("Family"))] {
            fs::create_dir(home.path().join(name)).unwrap();
            if let Some(d) = display {
                fs::write(home.path().join(name).join("displayname"), d).unwrap();
            }
        }
        fs::create_dir(home.path().join(".hidden")).unwrap();
        let backend = FolderBackend::open("p", home.path()).unwrap();
        let cals = backend.calendars().await.unwrap();
        let names: Vec<(&str, &str)> = cals
            .iter()
            .map(|c| (c.href.as_str(), c.name.as_str()))
            .collect();
        assert_eq!(names, [("home", "Family"), ("work", "work")]);
        drop(dir);
    }

    #[tokio::test]
    async fn a_delete_with_the_etag_seen_removes_the_file() {
        let (dir, backend, cal) = one_calendar();
        let etag = etag_of(EVENT);
        assert_eq!(
            backend.delete(&cal, "a.ics", &etag).await.unwrap(),
            Deleted::Deleted
        );
        assert!(!dir.path().join("a.ics").exists());
        assert_eq!(
            backend.delete(&cal, "a.ics", &etag).await.unwrap(),
            Deleted::Missing
        );
        // Nothing hidden is left behind.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[tokio::test]
    async fn a_changed_file_is_put_back_untouched() {
        let (dir, backend, cal) = one_calendar();
        let seen = etag_of(b"an older version");
        assert_eq!(
            backend.delete(&cal, "a.ics", &seen).await.unwrap(),
            Deleted::Changed
        );
        assert_eq!(fs::read(dir.path().join("a.ics")).unwrap(), EVENT);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[tokio::test]
    async fn a_create_never_overwrites() {
        let (dir, backend, cal) = one_calendar();
        assert_eq!(
            backend.create(&cal, "a.ics", b"other").await.unwrap(),
            Created::Exists
        );
        assert_eq!(fs::read(dir.path().join("a.ics")).unwrap(), EVENT);
        assert_eq!(
            backend.create(&cal, "b.ics", EVENT).await.unwrap(),
            Created::Created
        );
        assert_eq!(fs::read(dir.path().join("b.ics")).unwrap(), EVENT);
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            2,
            "no staged file left"
        );
    }

    #[tokio::test]
    async fn hrefs_that_leave_the_calendar_are_refused() {
        let (_dir, backend, cal) = one_calendar();
        for bad in ["../x.ics", "/etc/passwd", ".hidden.ics", "a/b.ics", ""] {
            assert!(backend.get(&cal, bad).await.is_err(), "{bad}");
            assert!(backend.create(&cal, bad, b"x").await.is_err(), "{bad}");
        }
    }
}
