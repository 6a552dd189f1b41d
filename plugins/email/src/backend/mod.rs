//! Mail backends: the provider side of an account (DESIGN §5).
//!
//! [`MailBackend`] is shaped to fit every provider the design names: a **Maildir** (folders are
//! `.Name` directories, the key is the unique file base name), **IMAP** (folders are mailboxes,
//! the key a UID with its UIDVALIDITY, trash is `UID MOVE`) and later **Gmail's REST API**
//! (folders are labels, the key is the message id, trash/untrash are API calls). Trash is always a
//! move into the provider's Trash, never a permanent delete; restore moves it back where it came
//! from.
//!
//! Moves are batched (`&[...]` in, one outcome per item out, same order) because IMAP and Gmail
//! can move a whole set in one round trip, and because one missing message must never fail the
//! rest of a batch.

use std::path::PathBuf;

use async_trait::async_trait;

pub mod imap;
pub mod maildir;

pub use imap::{ImapBackend, ImapSettings};
pub use maildir::MaildirBackend;

/// The account a backend serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountInfo {
    /// The account's configured name (part of every email id).
    pub name: String,
    /// The owner's address at this account.
    pub address: String,
}

/// What a folder is for; the provider's special-use flag or, for Maildir, its conventional name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FolderRole {
    /// The inbox (Maildir root, IMAP `INBOX`, Gmail label `INBOX`).
    Inbox,
    /// Where trash goes; never synced into the local store.
    Trash,
    /// Sent mail.
    Sent,
    /// Drafts.
    Drafts,
    /// Spam.
    Junk,
    /// Archive.
    Archive,
    /// Any other folder or label.
    Other,
}

/// A provider bucket: a Maildir folder, an IMAP mailbox or a Gmail label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Folder {
    /// The provider's name for it (`INBOX` for the Maildir root, `Sent` for `.Sent`).
    pub name: String,
    /// What it is for.
    pub role: FolderRole,
}

/// One message as a folder listing names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The provider's stable key (Maildir: the unique base name, without `:2,FLAGS`).
    pub key: String,
    /// Where it is now, a hint for fast lookup (Maildir: `cur/NAME:2,S` or `new/NAME`).
    pub location: String,
    /// The provider's bucket labels on this message, as the provider spells them (Gmail's
    /// category tabs: `CATEGORY_PROMOTIONS`, `CATEGORY_SOCIAL`, …). Maildir and Dovecot report
    /// none. `trash_category` trusts a label over triage (DESIGN §5).
    pub labels: Vec<String>,
}

/// Where [`MailBackend::append_sent`] stored a copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The folder (the account's Sent folder, by role or conventional name).
    pub folder: String,
    /// The stored copy as a listing of that folder names it.
    pub listed: Listed,
}

/// A folder's change marks, for incremental sync (IMAP `STATUS`: UIDVALIDITY, UIDNEXT,
/// MESSAGES). Providers without such marks (Maildir) report none and are listed every sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FolderStatus {
    /// Keys are only comparable within one validity (IMAP UIDVALIDITY); a change means every key
    /// of the folder changed.
    pub validity: u64,
    /// Every message added later gets a key at or above this (IMAP UIDNEXT).
    pub next: u64,
    /// How many messages the folder holds (IMAP MESSAGES); catches removals.
    pub count: u64,
}

/// A message the caller wants to act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRef {
    /// The folder it is in.
    pub folder: String,
    /// The provider key.
    pub key: String,
    /// The last known location (may be stale; backends fall back to a lookup by key).
    pub location: String,
}

/// A message the caller wants back from Trash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrashedRef {
    /// The provider key.
    pub key: String,
    /// The folder it was trashed from, where it goes back to.
    pub original_folder: String,
    /// Where it was in that folder (Maildir: `new/NAME` goes back to `new/`).
    pub original_location: String,
    /// Where the trash move put it (may be stale).
    pub trash_location: String,
    /// Its Message-ID (without angle brackets), when it has one: IMAP finds it in Trash by this
    /// when `trash_location` is stale (a UID MOVE gives the message a new UID).
    pub message_id: Option<String>,
}

/// One item's result of [`MailBackend::trash`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrashOutcome {
    /// Now in the account's Trash.
    Moved {
        /// Where it was (folder-relative).
        original_location: String,
        /// Where it is now (Maildir: `.Trash/cur/NAME:2,S`, relative to the Maildir root).
        trash_location: String,
    },
    /// Not in the folder any more; nothing was done.
    Missing,
    /// Could not be moved; nothing was done to it.
    Failed {
        /// Why, naming the message.
        reason: String,
    },
}

/// One item's result of [`MailBackend::restore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestoreOutcome {
    /// Back in its original folder.
    Restored {
        /// Its location there.
        location: String,
        /// Its provider key now, when the move gave it a new one (IMAP: a new UID in the
        /// original folder); `None` keeps the key (Maildir). The store keeps the email id either
        /// way.
        key: Option<String>,
    },
    /// Not in Trash any more (emptied, or moved by another client); nothing was done.
    Missing,
    /// Could not be moved back; it stays in Trash.
    Failed {
        /// Why, naming the message.
        reason: String,
    },
}

/// Why a backend call failed as a whole.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// A file system operation failed.
    #[error("cannot {op} `{path}`: {source}")]
    Io {
        /// What was being done ("read folder", "create Trash folder", …).
        op: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A folder name that is not one of the account's folders or not a safe name.
    #[error("no folder `{0}` in this account (folder names come from the account's own listing)")]
    NoSuchFolder(String),
    /// The path configured for a Maildir account is not a Maildir.
    #[error("`{0}` is not a Maildir: it needs a `cur/` folder (Maildir++ layout: INBOX is the root's cur/ new/ tmp/)")]
    NotAMaildir(PathBuf),
    /// A blocking task did not finish.
    #[error("mail backend task failed: {0}")]
    Task(String),
    /// An IMAP command failed or the server could not be reached.
    #[error("IMAP {op}: {reason}")]
    Imap {
        /// What was being done ("connect to 127.0.0.1:143", "UID MOVE in INBOX", …).
        op: String,
        /// The cause, as the server or the network said it.
        reason: String,
    },
    /// The IMAP server answered NO or BAD to one command (the session stays usable).
    #[error("IMAP {op}: the server refused: {reason}")]
    ImapRefused {
        /// What was being done.
        op: String,
        /// The server's text.
        reason: String,
    },
    /// The account's settings cannot be used (a plain-text connection to a non-loopback host, a
    /// missing password variable): nothing was sent.
    #[error("{0}")]
    Refused(String),
}

/// A provider of one account's mail. Object-safe: the plugin holds `Arc<dyn MailBackend>`.
#[async_trait]
pub trait MailBackend: Send + Sync + std::fmt::Debug {
    /// The account served.
    fn account(&self) -> &AccountInfo;

    /// Whether the provider files mail into its own buckets and reports them as
    /// [`Listed::labels`] (Gmail's category tabs). Then `trash_category` takes only mail carrying
    /// the bucket label of the asked category, wherever triage filed it (DESIGN §5). Maildir and
    /// IMAP have no buckets.
    fn reports_buckets(&self) -> bool {
        false
    }

    /// Every folder (bucket) of the account, Trash included, with its role.
    ///
    /// # Errors
    /// [`BackendError`] when the provider cannot be listed.
    async fn folders(&self) -> Result<Vec<Folder>, BackendError>;

    /// The messages in one folder.
    ///
    /// # Errors
    /// [`BackendError::NoSuchFolder`], or the provider's failure.
    async fn list(&self, folder: &str) -> Result<Vec<Listed>, BackendError>;

    /// The raw RFC 5322 bytes of one message; `Ok(None)` when it is gone.
    ///
    /// # Errors
    /// [`BackendError`] when it exists but cannot be read.
    async fn read(&self, msg: &MessageRef) -> Result<Option<Vec<u8>>, BackendError>;

    /// The raw bytes of several messages of one folder, one result per message, in order (as
    /// [`MailBackend::read`] each). IMAP fetches them in batches (a few round trips for a whole
    /// folder); the default reads one by one.
    ///
    /// # Errors
    /// [`BackendError`] when nothing could be read (the per-message results carry the rest).
    async fn read_batch(
        &self,
        msgs: &[MessageRef],
    ) -> Result<Vec<Result<Option<Vec<u8>>, BackendError>>, BackendError> {
        let mut out = Vec::with_capacity(msgs.len());
        for m in msgs {
            out.push(self.read(m).await);
        }
        Ok(out)
    }

    /// The folder's change marks for incremental sync, or `None` when the provider has none
    /// (Maildir: the folder is listed every sync, which is cheap for files).
    ///
    /// # Errors
    /// [`BackendError`] when the provider cannot be asked.
    async fn folder_status(&self, _folder: &str) -> Result<Option<FolderStatus>, BackendError> {
        Ok(None)
    }

    /// Moves each message into the account's Trash (never a delete); one outcome per item, in
    /// order. Creates the Trash folder when the provider lacks one.
    ///
    /// # Errors
    /// [`BackendError`] only when nothing could be attempted (e.g. Trash cannot be created).
    async fn trash(&self, msgs: &[MessageRef]) -> Result<Vec<TrashOutcome>, BackendError>;

    /// Moves each message from Trash back to its original folder; one outcome per item, in order.
    ///
    /// # Errors
    /// [`BackendError`] only when nothing could be attempted.
    async fn restore(&self, msgs: &[TrashedRef]) -> Result<Vec<RestoreOutcome>, BackendError>;

    /// Stores a copy of a message the owner sent (`raw` RFC 5322 bytes) in the account's Sent
    /// folder, marked seen, creating the folder (Maildir `.Sent`, IMAP `\Sent` special-use or
    /// `Sent`) when the provider lacks one. Never touches any other message.
    ///
    /// # Errors
    /// [`BackendError`] when the copy could not be stored (the mail itself has already gone out;
    /// the caller reports the missing copy, it does not send again).
    async fn append_sent(&self, raw: &[u8]) -> Result<Appended, BackendError>;
}
