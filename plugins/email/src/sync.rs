//! Brings the local store in line with an account's mailbox (DESIGN §5 "local store").
//!
//! Keyed by provider key (the Maildir base name, which flag changes leave alone): a key seen in a
//! folder for the first time is read, parsed and inserted; a key that vanished from every folder
//! leaves the store; a key that vanished from one folder and appeared in another is a move and
//! keeps its id. Trash is never synced (a trashed message is not in the store). A message that
//! cannot be read or parsed never stops the sync: what parses is stored, what cannot be read is
//! named in the report. A folder that cannot be listed keeps its rows (an I/O error must not look
//! like the owner deleting everything).

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::backend::{FolderRole, Listed, MailBackend, MessageRef};
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
    let mut scanned: Vec<(String, Listed)> = Vec::new();
    let mut unlisted: HashSet<String> = HashSet::new();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    for f in folders.iter().filter(|f| f.role != FolderRole::Trash) {
        match backend.list(&f.name).await {
            Ok(listed) => {
                for l in listed {
                    // The same key twice in one folder (cur/ and new/) is one message.
                    if seen.insert((f.name.clone(), l.key.clone())) {
                        scanned.push((f.name.clone(), l));
                    }
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

    let mut taken = store.all_ids().await?;
    let mut inserts = Vec::new();
    let mut moves = Vec::new();
    let mut relocated = Vec::new();
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
        let msg_ref = MessageRef {
            folder: folder.clone(),
            key: listed.key.clone(),
            location: listed.location.clone(),
        };
        let raw = match backend.read(&msg_ref).await {
            Ok(Some(raw)) => raw,
            // Gone between the listing and the read: the next sync sees where it went.
            Ok(None) => continue,
            Err(e) => {
                tracing::warn!(account, folder, key = listed.key, error = %e, "email sync: unreadable message");
                report
                    .unreadable
                    .push(format!("{folder}/{}: {e}", listed.key));
                continue;
            }
        };
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
            continue;
        };
        taken.insert(id.clone());
        inserts.push(row_from(id, &account, folder, listed, &parsed, now));
    }
    let removes: Vec<String> = vanished.values().flatten().map(|k| k.id.clone()).collect();

    report.added = inserts.len();
    report.removed = removes.len();
    report.moved = moves.len();
    store.apply_sync(&inserts, &removes, &moves).await?;
    store.update_locations(&relocated).await?;
    store.recompute_threads(&account).await?;
    report.messages = u64::try_from(store.count(&account).await?).unwrap_or(0);
    Ok(report)
}
