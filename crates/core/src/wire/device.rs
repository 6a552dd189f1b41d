//! The Devices page's shapes (DESIGN §2 "device, scope"): a device's scope, one live device,
//! and a fresh pairing link with its QR code.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::rfc3339;

/// A device's scope as the Devices page shows it (DESIGN §2 "device, scope").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceScope {
    /// May see cards, never answer.
    Read,
    /// May see and answer cards, and chat.
    Control,
    /// An AI agent's token for the MCP gateway: reads only the cards it asked for, never
    /// answers.
    Agent,
}

/// One live device on the Devices page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// Its unique name (cards say "approved by NAME").
    pub name: String,
    /// What it may do.
    pub scope: DeviceScope,
    /// When it was paired or added.
    #[serde(deserialize_with = "rfc3339::deserialize")]
    pub created_at: DateTime<Utc>,
    /// Its last authenticated request.
    #[serde(default, deserialize_with = "rfc3339::deserialize_option")]
    pub last_used_at: Option<DateTime<Utc>>,
    /// The device the page is looked at from.
    pub this_device: bool,
    /// The demo's owner (`iris serve --demo`): every browser of the demo signs in as it, so it
    /// cannot be revoked while the demo runs.
    #[serde(default)]
    pub demo_owner: bool,
    /// How many push subscriptions it has (its browsers that get a notification when a card
    /// waits).
    #[serde(default)]
    pub notified: u32,
}

/// A fresh one-time pairing link: open `url` in the browser to pair within 10 minutes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairingOffer {
    /// The whole link, e.g. `http://127.0.0.1:3000/pair/3f…`.
    pub url: String,
    /// The scope the paired browser gets.
    pub scope: DeviceScope,
    /// When the link stops working.
    #[serde(deserialize_with = "rfc3339::deserialize")]
    pub expires_at: DateTime<Utc>,
    /// The link as a QR code for a phone's camera: one string per row of modules, top to
    /// bottom, `1` dark and `0` light, without the quiet zone (the drawing adds it). Empty when
    /// the link does not fit a QR code.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub qr: Vec<String>,
}
