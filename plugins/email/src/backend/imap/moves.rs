//! Moving mail: one UID to Trash and back. **Nothing is ever expunged that was not copied
//! first** (the module docs of [`super`]): `UID MOVE`, else `UID COPY` then `\\Deleted` and
//! `UID EXPUNGE` of exactly that UID, only after the copy succeeded.

use async_imap::types::Fetch;
use futures::TryStreamExt;

use super::commands::*;
use super::{cmd_err, key_of, parse_key, Conn};
use crate::backend::{BackendError, MessageRef, RestoreOutcome, TrashOutcome, TrashedRef};

/// Moves one UID of the selected folder to `dest`, never expunging what was not copied.
pub(super) async fn move_uid(c: &mut Conn, uid: u32, dest: &str) -> Result<(), BackendError> {
    let set = uid.to_string();
    c.mutated = true;
    if c.can_move {
        return c
            .session
            .uid_mv(&set, dest)
            .await
            .map_err(|e| cmd_err(format!("UID MOVE {uid} to `{dest}`"), e));
    }
    if !c.uidplus {
        return Err(BackendError::Refused(format!(
            "the server supports neither MOVE nor UIDPLUS: moving UID {uid} to `{dest}` would \
             need an EXPUNGE that could remove other messages; nothing was done"
        )));
    }
    // Copy first; only a successful copy is followed by \Deleted and UID EXPUNGE of this UID.
    c.session
        .uid_copy(&set, dest)
        .await
        .map_err(|e| cmd_err(format!("UID COPY {uid} to `{dest}`"), e))?;
    let _: Vec<Fetch> = c
        .session
        .uid_store(&set, "+FLAGS.SILENT (\\Deleted)")
        .await
        .map_err(|e| cmd_err(format!("UID STORE {uid} \\Deleted"), e))?
        .try_collect()
        .await
        .map_err(|e| cmd_err(format!("UID STORE {uid} \\Deleted"), e))?;
    let _: Vec<u32> = c
        .session
        .uid_expunge(&set)
        .await
        .map_err(|e| cmd_err(format!("UID EXPUNGE {uid}"), e))?
        .try_collect()
        .await
        .map_err(|e| cmd_err(format!("UID EXPUNGE {uid}"), e))?;
    Ok(())
}

/// Finds a message that a move just put into the selected folder (UIDs from `next` on): by
/// Message-ID when it has one, else the only new UID. `None` when it cannot be told.
pub(super) async fn locate_moved(
    c: &mut Conn,
    next: u32,
    message_id: Option<&str>,
) -> Result<Option<u32>, BackendError> {
    if let Some(mid) = message_id {
        let hits = uids_by_message_id(c, mid).await?;
        if let Some(u) = hits.iter().copied().filter(|u| *u >= next).min() {
            return Ok(Some(u));
        }
        if let Some(u) = hits.last() {
            return Ok(Some(*u));
        }
    }
    let fresh = uids_from(c, next).await?;
    Ok(match fresh.as_slice() {
        [only] => Some(*only),
        _ => None,
    })
}

/// One trash item, in the selected source folder `folder` of validity `validity`.
pub(super) async fn trash_one(
    c: &mut Conn,
    m: &MessageRef,
    validity: u32,
    trash: &str,
) -> Result<TrashOutcome, BackendError> {
    let Some((v, uid)) = parse_key(&m.key) else {
        return Ok(TrashOutcome::Failed {
            reason: format!("`{}` is not an IMAP key (UIDVALIDITY:UID)", m.key),
        });
    };
    if v != validity {
        // The folder was recreated: this UID names nothing any more.
        return Ok(TrashOutcome::Missing);
    }
    let Some(message_id) = message_id_at(c, uid).await? else {
        return Ok(TrashOutcome::Missing);
    };
    let next = status(c, trash).await?.next;
    move_uid(c, uid, trash).await?;
    // Find where it went (async-imap's uid_mv does not return COPYUID).
    let trash_validity = open_folder(c, trash, false).await?;
    let next = u32::try_from(next).unwrap_or(u32::MAX);
    let found = locate_moved(c, next, message_id.as_deref()).await?;
    Ok(TrashOutcome::Moved {
        original_location: m.key.clone(),
        trash_location: found.map(|u| key_of(trash_validity, u)).unwrap_or_default(),
    })
}

/// One restore item; Trash is `trash`.
pub(super) async fn restore_one(
    c: &mut Conn,
    m: &TrashedRef,
    trash: &str,
) -> Result<RestoreOutcome, BackendError> {
    let trash_validity = open_folder(c, trash, true).await?;
    // The stored UID when it still holds this message; else a search by Message-ID.
    let mut uid = None;
    if let Some((v, u)) = parse_key(&m.trash_location) {
        if v == trash_validity {
            if let Some(mid) = message_id_at(c, u).await? {
                if m.message_id.is_none() || mid == m.message_id {
                    uid = Some(u);
                }
            }
        }
    }
    if uid.is_none() {
        if let Some(mid) = &m.message_id {
            uid = uids_by_message_id(c, mid).await?.last().copied();
        }
    }
    let Some(uid) = uid else {
        return Ok(RestoreOutcome::Missing);
    };
    let dest = m.original_folder.as_str();
    let dest_status = match status(c, dest).await {
        Ok(s) => s,
        Err(BackendError::NoSuchFolder(_)) => {
            // The folder was deleted meanwhile: recreate it rather than strand the message.
            c.mutated = true;
            c.session
                .create(dest)
                .await
                .map_err(|e| cmd_err(format!("CREATE `{dest}`"), e))?;
            status(c, dest).await?
        }
        Err(e) => return Err(e),
    };
    move_uid(c, uid, dest).await?;
    let dest_validity = open_folder(c, dest, false).await?;
    let next = u32::try_from(dest_status.next).unwrap_or(u32::MAX);
    let found = locate_moved(c, next, m.message_id.as_deref()).await?;
    Ok(match found {
        Some(u) => {
            let key = key_of(dest_validity, u);
            RestoreOutcome::Restored {
                location: key.clone(),
                key: Some(key),
            }
        }
        None => RestoreOutcome::Restored {
            location: String::new(),
            key: None,
        },
    })
}

/// What to do after a per-item error: a refusal (NO/BAD, a missing folder, a refused fallback)
/// fails only that item; anything else leaves the session unknown, so the rest are not tried.
pub(super) fn item_error_is_local(e: &BackendError) -> bool {
    matches!(
        e,
        BackendError::NoSuchFolder(_) | BackendError::Refused(_) | BackendError::ImapRefused { .. }
    )
}
