//! Brings the local store in line with an account's mailbox (DESIGN §5 "local store").
//!
//! Keyed by provider key (the Maildir base name, which flag changes leave alone): a key seen in a
//! folder for the first time is read, parsed and inserted; a key that vanished from every folder
//! leaves the store; a key that vanished from one folder and appeared in another is a move and
//! keeps its id. Trash is never synced (a trashed message is not in the store). A message that
//! cannot be read or parsed never stops the sync: what parses is stored, what cannot be read is
//! named in the report. A folder that cannot be listed keeps its rows (an I/O error must not look
//! like the owner deleting everything).
//!
//! **Incremental.** A provider that reports a folder status (IMAP: UIDVALIDITY,
//! UIDNEXT, MESSAGES; see `sync_state.rs`) is asked for it first: a folder whose three marks equal
//! those of its last complete sync is not listed at all (no new mail, none removed); otherwise
//! it is listed (`UID SEARCH ALL`, keys only) and only the keys the store does not hold are
//! fetched, which are the UIDs at or above the stored UIDNEXT plus any that could not be read
//! last time; vanished keys leave the store. A changed UIDVALIDITY means every key of the folder
//! changed: its rows are dropped and the folder is read afresh, so **the email ids of that
//! folder's messages change** (an id is derived from the key, see `id.rs`). Marks are saved only
//! after the folder's rows were applied and every new message was read, so a failure or crash
//! leads to listing the folder again, never to skipping mail. Maildir reports no status and is
//! listed every sync (new keys by file name, as before). New messages are fetched in batches
//! ([`MailBackend::read_batch`]).

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::backend::{FolderRole, FolderStatus, Listed, MailBackend, MessageRef};
use crate::id;
use crate::parse::{parse_message, ParsedHeaders};
use crate::store::{KnownKey, LocalStore, MessageRow};

/// What one sync did, per account.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SyncReport {
    /// One entry per configured account, in configuration order.
    pub accounts: Vec<AccountSync>,
}

/// What one sync did to one account's rows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AccountSync {
    /// The account name.
    pub account: String,
    /// Messages the store holds for the account after the sync (every folder but Trash).
    pub messages: u64,
    /// Rows inserted (messages seen for the first time).
    pub added: usize,
    /// Rows dropped (messages gone from every folder).
    pub removed: usize,
    /// Rows whose message moved to another folder (same id).
    pub moved: usize,
    /// Of the added, how many lacked Message-ID or Date or did not parse: stored anyway.
    pub incomplete: usize,
    /// Messages that could not be read, as "folder/key: reason"; not stored, retried next sync.
    pub unreadable: Vec<String>,
    /// Folders or the account that could not be listed; their rows were kept as they were.
    pub errors: Vec<String>,
    /// Folders not listed because their status (IMAP UIDVALIDITY, UIDNEXT, MESSAGES) was
    /// unchanged since their last complete sync.
    pub folders_skipped: usize,
    /// Folders whose UIDVALIDITY changed: their rows were dropped and the folder read afresh
    /// (those messages got new ids).
    pub folders_reset: usize,
    /// Messages whose bytes were fetched from the provider in this sync.
    pub fetched: usize,
}

fn to_json<T: Serialize>(v: &T) -> String {
    // Serialising plain strings and vectors of them cannot fail; "[]" keeps the column valid.
    serde_json::to_string(v).unwrap_or_else(|_| "[]".into())
}

/// Builds a store row from parsed headers.
pub(crate) fn row_from(
    id: String,
    account: &str,
    folder: &str,
    listed: &Listed,
    p: &ParsedHeaders,
    now: DateTime<Utc>,
) -> MessageRow {
    let search_text = [
        p.subject.as_str(),
        p.from.name.as_deref().unwrap_or(""),
        p.from.address.as_deref().unwrap_or(""),
        p.snippet.as_str(),
    ]
    .join(" ")
    .to_lowercase();
    let node = p.message_id.clone().unwrap_or_else(|| format!("@{id}"));
    MessageRow {
        thread_id: id::thread_id(account, &node),
        id,
        account: account.to_string(),
        folder: folder.to_string(),
        provider_key: listed.key.clone(),
        location: listed.location.clone(),
        message_id: p.message_id.clone(),
        in_reply_to: p.in_reply_to.clone(),
        refs: to_json(&p.references),
        subject: p.subject.clone(),
        from_name: p.from.name.clone(),
        from_address: p.from.address.clone(),
        to_addrs: to_json(&p.to),
        cc_addrs: to_json(&p.cc),
        date_unix: p.date.map(|d| d.timestamp()),
        snippet: p.snippet.clone(),
        category: p.category.as_str().to_string(),
        search_text,
        synced_at: iris_store::timestamp_text(now),
        category_path: p.category_path.clone(),
        labels: to_json(&listed.labels),
    }
}

/// Syncs one account; store errors abort, everything else is reported.
pub(crate) async fn sync_account(
    store: &LocalStore,
    backend: &dyn MailBackend,
    now: DateTime<Utc>,
    progress: &crate::progress::SyncProgress,
) -> Result<AccountSync, sqlx::Error> {
    let account = backend.account().name.clone();
    let mut report = AccountSync {
        account: account.clone(),
        ..AccountSync::default()
    };
    // Read the store before listing: a message trashed meanwhile then looks vanished (harmless),
    // never new. (The plugin also serialises sync with trash and restore.)
    let known = store.known_keys(&account).await?;

    let folders = match backend.folders().await {
        Ok(f) => f,
        Err(e) => {
            tracing::warn!(account, error = %e, "email sync: cannot list folders");
            report.errors.push(format!("account `{account}`: {e}"));
            report.messages = u64::try_from(store.count(&account).await?).unwrap_or(0);
            return Ok(report);
        }
    };
    let marks = crate::sync_state::load(store, &account).await?;
    let mut scanned: Vec<(String, Listed)> = Vec::new();
    let mut unlisted: HashSet<String> = HashSet::new();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    // Marks to save once the folder's rows are applied.
    let mut new_marks: Vec<(String, FolderStatus)> = Vec::new();
    for f in folders.iter().filter(|f| f.role != FolderRole::Trash) {
        let status = match backend.folder_status(&f.name).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(account, folder = f.name, error = %e, "email sync: cannot get folder status");
                report.errors.push(format!("folder `{}`: {e}", f.name));
                unlisted.insert(f.name.clone());
                continue;
            }
        };
        if let (Some(now), Some(before)) = (status, marks.get(&f.name)) {
            if now == *before {
                // Nothing added or removed: its rows stand as they are.
                report.folders_skipped += 1;
                unlisted.insert(f.name.clone());
                continue;
            }
            if now.validity != before.validity {
                // Every old key vanishes and every message is new (the listing below does it).
                report.folders_reset += 1;
            }
        }
        match backend.list(&f.name).await {
            Ok(listed) => {
                for l in listed {
                    // The same key twice in one folder (cur/ and new/) is one message.
                    if seen.insert((f.name.clone(), l.key.clone())) {
                        scanned.push((f.name.clone(), l));
                    }
                }
                if let Some(st) = status {
                    new_marks.push((f.name.clone(), st));
                }
            }
            Err(e) => {
                tracing::warn!(account, folder = f.name, error = %e, "email sync: cannot list folder");
                report.errors.push(format!("folder `{}`: {e}", f.name));
                unlisted.insert(f.name.clone());
            }
        }
    }

    let by_place: HashMap<(&str, &str), &KnownKey> = known
        .iter()
        .map(|k| ((k.folder.as_str(), k.provider_key.as_str()), k))
        .collect();
    let mut vanished: HashMap<&str, Vec<&KnownKey>> = HashMap::new();
    for k in &known {
        if !seen.contains(&(k.folder.clone(), k.provider_key.clone()))
            && !unlisted.contains(&k.folder)
        {
            vanished.entry(k.provider_key.as_str()).or_default().push(k);
        }
    }

    let mut moves = Vec::new();
    let mut relocated = Vec::new();
    let mut to_read: Vec<(&String, &Listed)> = Vec::new();
    for (folder, listed) in &scanned {
        if let Some(k) = by_place.get(&(folder.as_str(), listed.key.as_str())) {
            if k.location != listed.location {
                relocated.push((k.id.clone(), listed.location.clone()));
            }
            continue;
        }
        if let Some(k) = vanished.get_mut(listed.key.as_str()).and_then(Vec::pop) {
            moves.push((k.id.clone(), folder.clone(), listed.location.clone()));
            continue;
        }
        to_read.push((folder, listed));
    }
    // Every id in the store, for the collision rule: only needed when something is new (the
    // periodic sync mostly finds nothing new and must stay cheap).
    let mut taken = if to_read.is_empty() {
        HashSet::new()
    } else {
        store.all_ids().await?
    };
    // Read and stored a chunk at a time (crate::progress): a large first sync shows how far it
    // is, and what it stored stays stored if the server stops half-way (the next sync finds
    // those keys known).
    progress.found(to_read.len());
    // Folders with a message that could not be read keep their old marks (retried next sync).
    let mut incomplete_folders: HashSet<&str> = HashSet::new();
    let mut added = 0usize;
    for chunk in to_read.chunks(crate::progress::CHUNK) {
        let mut inserts = Vec::with_capacity(chunk.len());
        let refs: Vec<MessageRef> = chunk
            .iter()
            .map(|(folder, listed)| MessageRef {
                folder: (*folder).clone(),
                key: listed.key.clone(),
                location: listed.location.clone(),
            })
            .collect();
        let read = match backend.read_batch(&refs).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(account, error = %e, "email sync: cannot fetch new messages");
                let reason = e.to_string();
                refs.iter()
                    .map(|_| {
                        Err(crate::backend::BackendError::Task(format!(
                            "fetch failed: {reason}"
                        )))
                    })
                    .collect()
            }
        };
        for ((folder, listed), result) in chunk.iter().zip(read) {
            let raw = match result {
                Ok(Some(raw)) => raw,
                // Gone between the listing and the read: the next sync sees where it went.
                Ok(None) => {
                    incomplete_folders.insert(folder.as_str());
                    continue;
                }
                Err(e) => {
                    tracing::warn!(account, folder, key = listed.key, error = %e, "email sync: unreadable message");
                    report
                        .unreadable
                        .push(format!("{folder}/{}: {e}", listed.key));
                    incomplete_folders.insert(folder.as_str());
                    continue;
                }
            };
            report.fetched += 1;
            let parsed = parse_message(&raw);
            if !parsed.complete {
                // Logged here, where a message is first stored: later syncs know its key and never
                // parse it again, so each malformed message is logged once.
                tracing::warn!(
                    account,
                    folder,
                    key = listed.key,
                    message_id = parsed.message_id.as_deref().unwrap_or("(none)"),
                    has_date = parsed.date.is_some(),
                    "email sync: stored a malformed message with what could be parsed"
                );
                report.incomplete += 1;
            }
            let candidates = id::email_id_candidates(&account, folder, &listed.key);
            let Some(id) = candidates.into_iter().find(|c| !taken.contains(c)) else {
                // Three distinct hashes all taken cannot happen short of a broken store; say so.
                report
                    .unreadable
                    .push(format!("{folder}/{}: no free id", listed.key));
                incomplete_folders.insert(folder.as_str());
                continue;
            };
            taken.insert(id.clone());
            inserts.push(row_from(id, &account, folder, listed, &parsed, now));
        }
        if !inserts.is_empty() {
            store.apply_sync(&inserts, &[], &[]).await?;
        }
        added += inserts.len();
        progress.stored(&account, chunk.len());
        // Test-only (debug builds): a first sync that stalls half-way, so a test can see the
        // server answer meanwhile.
        if iris_core::failpoint::pauses_at(crate::progress::PAUSE_AFTER_CHUNK) {
            while !iris_core::failpoint::released() {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
    let removes: Vec<String> = vanished.values().flatten().map(|k| k.id.clone()).collect();

    report.added = added;
    report.removed = removes.len();
    report.moved = moves.len();
    if !(added == 0 && removes.is_empty() && moves.is_empty()) {
        store.apply_sync(&[], &removes, &moves).await?;
        // Threads change only when messages come or go.
        store.recompute_threads(&account).await?;
    }
    store.update_locations(&relocated).await?;
    new_marks.retain(|(folder, _)| !incomplete_folders.contains(folder.as_str()));
    crate::sync_state::save(store, &account, &new_marks, now).await?;
    report.messages = u64::try_from(store.count(&account).await?).unwrap_or(0);
    Ok(report)
}

/// Stores one message the plugin itself just put in a folder (the Sent copy of `send_email`):
/// parsed from the bytes it wrote, under the first free id of the id rule, threads recomputed.
/// Cheaper than a whole account sync on the send path; a later sync finds the key known and
/// leaves it alone.
pub(crate) async fn store_appended(
    store: &LocalStore,
    account: &str,
    appended: &crate::backend::Appended,
    raw: &[u8],
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let parsed = parse_message(raw);
    let mut free = None;
    for candidate in id::email_id_candidates(account, &appended.folder, &appended.listed.key) {
        if store.get(&candidate).await?.is_none() {
            free = Some(candidate);
            break;
        }
    }
    // Three taken hashes cannot happen short of a broken store; the next sync tries again.
    let Some(id) = free else {
        return Ok(());
    };
    let row = row_from(
        id,
        account,
        &appended.folder,
        &appended.listed,
        &parsed,
        now,
    );
    store.apply_sync(&[row], &[], &[]).await?;
    store.recompute_threads(account).await
}
