//! Where the events live: the [`CalendarBackend`] trait, shaped for CalDAV (RFC 4791: hrefs,
//! ETags, `If-Match` deletes and `If-None-Match: *` creates) and implemented here by
//! [`CaldavBackend`], any CalDAV server, and [`FolderBackend`], a local folder in the vdir layout
//! of vdirsyncer and khal.

use async_trait::async_trait;

pub mod caldav;
pub mod folder;

pub use caldav::{CaldavBackend, CaldavSettings};
pub use folder::FolderBackend;

/// One calendar of an account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalendarRef {
    /// Its href (for a folder: the folder's name below the account's folder, or "" for the
    /// account's folder itself).
    pub href: String,
    /// Its display name.
    pub name: String,
}

/// One event resource: its href in its calendar, its ETag and its exact bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// The href (for a folder: the file name).
    pub href: String,
    /// The entity tag the server gives (for a folder: SHA-256 of the bytes, hex).
    pub etag: String,
    /// The bytes, exactly as stored.
    pub bytes: Vec<u8>,
}

/// What a conditional delete did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deleted {
    /// It was there with the ETag given, and is gone now.
    Deleted,
    /// It is there with another ETag: left alone.
    Changed,
    /// It was not there.
    Missing,
}

/// What a create that never overwrites did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Created {
    /// Written at the href.
    Created,
    /// Something is at the href already: nothing was written.
    Exists,
}

/// Why a backend call failed.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The account's configuration cannot be used (a folder that does not exist).
    #[error("{0}")]
    Config(String),
    /// Reading or writing failed; the message names the path or URL.
    #[error("{0}")]
    Io(String),
    /// A change was sent and whether it happened cannot be told (its answer was lost and a look
    /// afterwards failed too): recorded `unknown`, never sent again.
    #[error("{0}")]
    Unknown(String),
}

/// A calendar account's storage.
#[async_trait]
pub trait CalendarBackend: Send + Sync + std::fmt::Debug {
    /// The account's name (`[[calendar.accounts]] name`).
    fn account(&self) -> &str;

    /// The account's calendars, in a stable order.
    ///
    /// # Errors
    /// [`BackendError`] when they cannot be listed.
    async fn calendars(&self) -> Result<Vec<CalendarRef>, BackendError>;

    /// Every event resource of `calendar` (hidden and temporary files left out).
    ///
    /// # Errors
    /// [`BackendError`] when the calendar cannot be read.
    async fn resources(&self, calendar: &CalendarRef) -> Result<Vec<Resource>, BackendError>;

    /// The resource at `href`, or `None`.
    ///
    /// # Errors
    /// [`BackendError`] when it cannot be read.
    async fn get(
        &self,
        calendar: &CalendarRef,
        href: &str,
    ) -> Result<Option<Resource>, BackendError>;

    /// Deletes the resource at `href` only if its ETag is still `etag` (`If-Match`).
    ///
    /// # Errors
    /// [`BackendError`] when the outcome cannot be known or the delete failed.
    async fn delete(
        &self,
        calendar: &CalendarRef,
        href: &str,
        etag: &str,
    ) -> Result<Deleted, BackendError>;

    /// Whether the server tells an event's attendees when its organizer deletes it (RFC 6638
    /// server-side scheduling, advertised as `calendar-auto-schedule` in the `DAV` header of
    /// the account's address). A local folder never does. An answer that cannot be read is
    /// `false`: the card then says the guests are not told, never that they are.
    async fn tells_attendees(&self) -> bool {
        false
    }

    /// Writes `bytes` at `href` only if nothing is there (`If-None-Match: *`).
    ///
    /// # Errors
    /// [`BackendError`] when it could not be written.
    async fn create(
        &self,
        calendar: &CalendarRef,
        href: &str,
        bytes: &[u8],
    ) -> Result<Created, BackendError>;
}
