//! Paired devices, their scopes, and one-time pairing links (DESIGN §2 "device, scope").

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::StoreError;

/// What a device may do (DESIGN §2 "device, scope").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// See cards, never answer.
    Read,
    /// See and answer.
    Control,
    /// An AI agent calling tools through IRIS's MCP gateway (`iris devices add --scope agent`
    /// only): it reads only the approvals it requested and never answers one (DESIGN §2).
    Agent,
}

impl Scope {
    /// `read`, `control` or `agent`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Control => "control",
            Scope::Agent => "agent",
        }
    }

    /// Parses `read` / `control` / `agent`.
    pub fn parse(text: &str) -> Option<Scope> {
        match text {
            "read" => Some(Scope::Read),
            "control" => Some(Scope::Control),
            "agent" => Some(Scope::Agent),
            _ => None,
        }
    }

    /// Whether a browser may be paired with this scope (an `agent` is a token for a program,
    /// made only by `iris devices add --scope agent`).
    pub fn pairable(self) -> bool {
        self != Scope::Agent
    }
}

/// A paired device (token stored only as its SHA-256).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    /// Unique name.
    pub name: String,
    /// What it may do.
    pub scope: Scope,
    /// When paired.
    pub created_at: DateTime<Utc>,
    /// Last authenticated use.
    pub last_used_at: Option<DateTime<Utc>>,
}

/// Paired devices.
#[async_trait]
pub trait DeviceStore: Send + Sync {
    /// Adds a device with the hex SHA-256 of its token.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the name is taken.
    async fn add(&self, device: &Device, token_hash: &str) -> Result<(), StoreError>;

    /// The live device whose token hashes to `token_hash`; records the use (at most once a
    /// minute, and never failing the request when the write must wait).
    ///
    /// # Errors
    /// [`StoreError`].
    async fn authenticate(
        &self,
        token_hash: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<Device>, StoreError>;

    /// Whether a live (unrevoked) device has this token hash. Reads only: for checks repeated
    /// on an open stream, where recording a use each time would be a write per event.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn is_live(&self, token_hash: &str) -> Result<bool, StoreError>;

    /// Live devices, by name.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn list(&self) -> Result<Vec<Device>, StoreError>;

    /// Revokes a device; `Ok(false)` when no live device has that name.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn revoke(&self, name: &str) -> Result<bool, StoreError>;
}

/// One-time pairing links (rules in [`crate::pairing`]). Codes are stored only as
/// their hex SHA-256.
#[async_trait]
pub trait PairingStore: Send + Sync {
    /// Stores a new link under `code_hash`.
    ///
    /// # Errors
    /// [`StoreError`] (a repeated `code_hash` is a backend error: codes are random).
    async fn create_pairing(
        &self,
        code_hash: &str,
        link: &crate::pairing::PairingLink,
    ) -> Result<(), StoreError>;

    /// The link stored under `code_hash`, used or not.
    ///
    /// # Errors
    /// [`StoreError`]; [`StoreError::Corrupt`] for an unreadable row.
    async fn pairing(
        &self,
        code_hash: &str,
    ) -> Result<Option<crate::pairing::PairingLink>, StoreError>;

    /// Redeems the link: in one transaction marks it used by `device_name` at `at` (only if it
    /// is unused and `at` is before its expiry) and adds the device with the link's scope and
    /// `token_hash`. Concurrent redemptions of one link pair exactly one device. Anything but
    /// [`Redemption::Paired`](crate::pairing::Redemption::Paired) changed nothing.
    ///
    /// # Errors
    /// [`StoreError`].
    async fn redeem_pairing(
        &self,
        code_hash: &str,
        device_name: &str,
        token_hash: &str,
        at: DateTime<Utc>,
    ) -> Result<crate::pairing::Redemption, StoreError>;
}
