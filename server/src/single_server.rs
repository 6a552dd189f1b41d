//! One server per SQLite file (DESIGN §9): SQLite keeps its events in one process and has one
//! writer, so a second `iris serve` on the same file refuses to start and says to use
//! PostgreSQL. The claim is two exclusive locks held for the life of the process (the operating
//! system releases them when the process ends, however it ends), never on the database file
//! itself (a second descriptor's lock would drop SQLite's own locks when closed):
//!
//! - one on a file beside the database's real path (symlinks and `..` resolved);
//! - one on a file in the system's temporary folder named by the database file's device and
//!   inode, so a hard link in another folder or the same file through a bind mount names the
//!   same lock (docs/liveness.md "truthful records").
//!
//! The CLI's database commands (`iris devices`, `iris pair`) do not take them.

use std::fs::{File, OpenOptions};
use std::path::PathBuf;

use anyhow::Context;

use crate::config::Settings;

/// The held claim; dropping it releases the database for another server.
#[derive(Debug)]
pub struct Claim {
    _files: Vec<File>,
}

/// The lock file named by `db`'s device and inode (`db` exists), in the temporary folder.
#[cfg(unix)]
fn inode_lock_path(db: &std::path::Path) -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(db).with_context(|| format!("reading {}", db.display()))?;
    Ok(std::env::temp_dir().join(format!(
        "iris-sqlite-{:x}-{:x}.serve-lock",
        meta.dev(),
        meta.ino()
    )))
}

/// Takes the exclusive lock on `lock_path` (created if missing) for the database `db`.
fn lock(lock_path: &std::path::Path, db: &std::path::Path) -> anyhow::Result<File> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(lock_path)
        .with_context(|| format!("creating the server lock {}", lock_path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => anyhow::bail!(
            "another `iris serve` is already running on the SQLite database {}: SQLite serves one \
             server per file. To run several servers on one database, use PostgreSQL \
             (IRIS_DATABASE_URL=postgres://USER@HOST/DATABASE).",
            db.display()
        ),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("locking {}", lock_path.display()))
        }
    }
}

/// The SQLite file `url` names (`sqlite://PATH`, `sqlite:PATH`, query dropped), or `None` for
/// PostgreSQL and in-memory databases.
pub fn sqlite_path(url: &str) -> Option<PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or_default();
    if path.is_empty() || path.contains(":memory:") || url.contains("mode=memory") {
        return None;
    }
    Some(PathBuf::from(path))
}

/// `db` with every symlink and `..` resolved: the file's own path when it exists, else its
/// folder's resolved path and its name (the folder exists by then).
fn real_path(db: &std::path::Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(db) {
        return real;
    }
    let folder = match db.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => parent.to_path_buf(),
        None => PathBuf::from("."),
    };
    match (std::fs::canonicalize(&folder), db.file_name()) {
        (Ok(folder), Some(name)) => folder.join(name),
        _ => db.to_path_buf(),
    }
}

/// Claims the server's SQLite file (the demo's, `data/demo.db`, when `demo` and no database is
/// set), or nothing on PostgreSQL.
///
/// # Errors
/// When another `iris serve` holds the file: the message says to run one server per SQLite file
/// and to use PostgreSQL for several. When the lock file cannot be created.
pub fn claim(settings: &Settings, demo: bool) -> anyhow::Result<Option<Claim>> {
    let url = if demo && std::env::var_os("IRIS_DATABASE_URL").is_none() {
        "sqlite://data/demo.db"
    } else {
        settings.database_url.as_str()
    };
    let Some(db) = sqlite_path(url) else {
        return Ok(None);
    };
    if let Some(parent) = db.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating the database directory {}", parent.display()))?;
    }
    // The lock sits beside the real file, so a symlink or another spelling of the same path
    // names the same lock.
    let db = real_path(&db);
    let mut beside = db.clone().into_os_string();
    beside.push(".serve-lock");
    let mut files = vec![lock(&PathBuf::from(beside), &db)?];
    // The database file is made (empty: SQLite's own first open fills it) so it has an inode to
    // name; a hard link or a bind mount of it has the same device and inode.
    #[cfg(unix)]
    {
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&db)
            .with_context(|| format!("creating the database {}", db.display()))?;
        files.push(lock(&inode_lock_path(&db)?, &db)?);
    }
    Ok(Some(Claim { _files: files }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_urls_name_a_file() {
        assert_eq!(
            sqlite_path("sqlite://data/iris.db"),
            Some(PathBuf::from("data/iris.db"))
        );
        assert_eq!(
            sqlite_path("sqlite:///tmp/x.db?mode=rwc"),
            Some(PathBuf::from("/tmp/x.db"))
        );
        assert_eq!(sqlite_path("sqlite::memory:"), None);
        assert_eq!(sqlite_path("postgres://u@h/d"), None);
    }

    #[test]
    fn a_second_claim_on_one_file_is_refused_and_names_postgresql() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings {
            database_url: format!("sqlite://{}/iris.db", dir.path().display()),
            ..crate::config::Settings::defaults()
        };
        let first = claim(&settings, false).unwrap();
        assert!(first.is_some());
        let second = claim(&settings, false).unwrap_err().to_string();
        assert!(second.contains("use PostgreSQL"), "{second}");
        drop(first);
        assert!(claim(&settings, false).unwrap().is_some());
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_to_the_file_is_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("iris.db");
        std::fs::write(&real, b"").unwrap();
        let alias_dir = dir.path().join("alias");
        std::fs::create_dir(&alias_dir).unwrap();
        std::os::unix::fs::symlink(&real, alias_dir.join("iris.db")).unwrap();
        let by = |path: &std::path::Path| Settings {
            database_url: format!("sqlite://{}", path.display()),
            ..crate::config::Settings::defaults()
        };
        let first = claim(&by(&real), false).unwrap();
        assert!(first.is_some());
        let second = claim(&by(&alias_dir.join("iris.db")), false).unwrap_err();
        assert!(second.to_string().contains("use PostgreSQL"), "{second}");
        // And through `..`.
        let dotted = alias_dir.join("..").join("iris.db");
        assert!(claim(&by(&dotted), false).is_err());
    }

    /// A hard link in another folder is the same file (same device and inode): a second server
    /// on it is refused, though the lock beside each path differs.
    #[cfg(unix)]
    #[test]
    fn a_hard_link_to_the_file_is_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("iris.db");
        std::fs::write(&real, b"").unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let link = elsewhere.join("other-name.db");
        std::fs::hard_link(&real, &link).unwrap();
        let by = |path: &std::path::Path| Settings {
            database_url: format!("sqlite://{}", path.display()),
            ..crate::config::Settings::defaults()
        };
        let first = claim(&by(&real), false).unwrap();
        assert!(first.is_some());
        let second = claim(&by(&link), false).unwrap_err();
        assert!(second.to_string().contains("use PostgreSQL"), "{second}");
        // The database file itself is never locked: another descriptor can lock it freely.
        let own = std::fs::File::open(&real).unwrap();
        assert!(own.try_lock().is_ok());
        drop(own);
        drop(first);
        assert!(claim(&by(&link), false).unwrap().is_some());
    }
}
