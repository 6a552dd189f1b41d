//! The IMAP commands a backend call is made of, each on the session it is given: list and
//! select folders, search and fetch by UID. Errors say which command failed on what
//! (`cmd_err`), and a command that may have left the session's state unknown marks it broken.

use async_imap::types::{Fetch, NameAttribute};
use futures::TryStreamExt;

use super::{cmd_err, imap_err, is_command_refusal, message_id_of, quoted, Conn};
use crate::backend::{BackendError, Folder, FolderRole, FolderStatus};

pub(super) async fn list_folders(c: &mut Conn) -> Result<Vec<Folder>, BackendError> {
    let names: Vec<async_imap::types::Name> = c
        .session
        .list(Some(""), Some("*"))
        .await
        .map_err(|e| cmd_err("LIST", e))?
        .try_collect()
        .await
        .map_err(|e| cmd_err("LIST", e))?;
    let mut out = Vec::new();
    for n in &names {
        let attrs = n.attributes();
        if attrs.iter().any(|a| matches!(a, NameAttribute::NoSelect)) {
            continue;
        }
        let role = if n.name().eq_ignore_ascii_case("INBOX") {
            FolderRole::Inbox
        } else if attrs.iter().any(|a| matches!(a, NameAttribute::Trash)) {
            FolderRole::Trash
        } else if attrs.iter().any(|a| matches!(a, NameAttribute::Sent)) {
            FolderRole::Sent
        } else if attrs.iter().any(|a| matches!(a, NameAttribute::Drafts)) {
            FolderRole::Drafts
        } else if attrs.iter().any(|a| matches!(a, NameAttribute::Junk)) {
            FolderRole::Junk
        } else if attrs.iter().any(|a| matches!(a, NameAttribute::Archive)) {
            FolderRole::Archive
        } else {
            FolderRole::Other
        };
        out.push(Folder {
            name: n.name().to_string(),
            role,
        });
    }
    // Without special-use attributes, the conventional names take the roles.
    for (role, conventional) in [(FolderRole::Trash, "Trash"), (FolderRole::Sent, "Sent")] {
        if !out.iter().any(|f| f.role == role) {
            if let Some(f) = out.iter_mut().find(|f| f.name == conventional) {
                f.role = role;
            }
        }
    }
    Ok(out)
}

/// The folder of a role, created under its conventional name when there is none.
pub(super) async fn folder_of_role(
    c: &mut Conn,
    role: FolderRole,
    conventional: &str,
) -> Result<String, BackendError> {
    if let Some(f) = list_folders(c).await?.into_iter().find(|f| f.role == role) {
        return Ok(f.name);
    }
    c.mutated = true;
    c.session
        .create(conventional)
        .await
        .map_err(|e| cmd_err(format!("CREATE `{conventional}`"), e))?;
    Ok(conventional.to_string())
}

/// Selects a folder (read-write when `write`); its UIDVALIDITY. A folder the server does not
/// know is [`BackendError::NoSuchFolder`].
pub(super) async fn open_folder(
    c: &mut Conn,
    folder: &str,
    write: bool,
) -> Result<u32, BackendError> {
    let r = if write {
        c.session.select(folder).await
    } else {
        c.session.examine(folder).await
    };
    match r {
        Ok(mb) => mb.uid_validity.ok_or_else(|| {
            imap_err(
                format!("SELECT `{folder}`"),
                "the server reports no UIDVALIDITY",
            )
        }),
        Err(e) if is_command_refusal(&e) => Err(BackendError::NoSuchFolder(folder.to_string())),
        Err(e) => Err(cmd_err(format!("SELECT `{folder}`"), e)),
    }
}

pub(super) async fn status(c: &mut Conn, folder: &str) -> Result<FolderStatus, BackendError> {
    let mb = match c
        .session
        .status(folder, "(MESSAGES UIDNEXT UIDVALIDITY)")
        .await
    {
        Ok(mb) => mb,
        Err(e) if is_command_refusal(&e) => {
            return Err(BackendError::NoSuchFolder(folder.to_string()))
        }
        Err(e) => return Err(cmd_err(format!("STATUS `{folder}`"), e)),
    };
    match (mb.uid_validity, mb.uid_next) {
        (Some(v), Some(n)) => Ok(FolderStatus {
            validity: u64::from(v),
            next: u64::from(n),
            count: u64::from(mb.exists),
        }),
        _ => Err(imap_err(
            format!("STATUS `{folder}`"),
            "the server reports no UIDVALIDITY or UIDNEXT",
        )),
    }
}

/// `UID SEARCH` in the selected folder, sorted.
pub(super) async fn uid_search(c: &mut Conn, query: &str) -> Result<Vec<u32>, BackendError> {
    let mut uids: Vec<u32> = c
        .session
        .uid_search(query)
        .await
        .map_err(|e| cmd_err(format!("UID SEARCH {query}"), e))?
        .into_iter()
        .collect();
    uids.sort_unstable();
    Ok(uids)
}

/// UIDs at or above `from` in the selected folder (`UID n:*` also matches the highest UID when
/// it is below `n`, hence the filter).
pub(super) async fn uids_from(c: &mut Conn, from: u32) -> Result<Vec<u32>, BackendError> {
    Ok(uid_search(c, &format!("UID {from}:*"))
        .await?
        .into_iter()
        .filter(|u| *u >= from)
        .collect())
}

/// UIDs of the selected folder whose Message-ID header holds `<message_id>`.
pub(super) async fn uids_by_message_id(
    c: &mut Conn,
    message_id: &str,
) -> Result<Vec<u32>, BackendError> {
    match quoted(&format!("<{message_id}>")) {
        Some(q) => uid_search(c, &format!("HEADER Message-ID {q}")).await,
        None => Ok(Vec::new()),
    }
}

/// `UID FETCH set items` in the selected folder.
pub(super) async fn uid_fetch(
    c: &mut Conn,
    set: &str,
    items: &str,
) -> Result<Vec<Fetch>, BackendError> {
    let what = format!("UID FETCH {set} {items}");
    c.session
        .uid_fetch(set, items)
        .await
        .map_err(|e| cmd_err(&what, e))?
        .try_collect()
        .await
        .map_err(|e| cmd_err(&what, e))
}

/// The Message-ID of one UID in the selected folder: `None` when the UID is not there,
/// `Some(None)` when it is there without a Message-ID.
pub(super) async fn message_id_at(
    c: &mut Conn,
    uid: u32,
) -> Result<Option<Option<String>>, BackendError> {
    let fetched = uid_fetch(c, &uid.to_string(), "(UID BODY.PEEK[HEADER])").await?;
    Ok(fetched
        .iter()
        .find(|f| f.uid == Some(uid))
        .map(|f| f.header().and_then(message_id_of)))
}
