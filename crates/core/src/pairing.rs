//! Pairing a browser as a device (Devices, sessions, scopes; DESIGN §2 "device,
//! scope", §7 `iris pair`): the rules a one-time pairing link keeps, with no I/O.
//!
//! A link carries a random code; only the code's hex SHA-256 is stored
//! ([`PairingStore`](crate::ports::PairingStore)). It pairs at most one device, with the scope
//! chosen when it was made, and only within [`PAIRING_LINK_TTL_SECS`] of its making. The device
//! name the person types on the pairing page must pass [`check_device_name`].

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ports::{Device, Scope};

/// How long a pairing link may be used: 10 minutes ("a one-time link that lapses after
/// 10 minutes"), in seconds.
pub const PAIRING_LINK_TTL_SECS: i64 = 600;

/// Longest device name, in characters.
pub const DEVICE_NAME_MAX_CHARS: usize = 40;

/// A stored pairing link (the code itself is never stored).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairingLink {
    /// The scope the paired device gets.
    pub scope: Scope,
    /// Who made the link: `cli` for `iris pair`, else the control device's name.
    pub created_by: String,
    /// When the link was made.
    pub created_at: DateTime<Utc>,
    /// When it stops working: `created_at` + [`PAIRING_LINK_TTL_SECS`].
    pub expires_at: DateTime<Utc>,
    /// When it paired a device (`None`: not used yet).
    pub used_at: Option<DateTime<Utc>>,
    /// The device it paired.
    pub device_name: Option<String>,
}

impl PairingLink {
    /// A new, unused link made at `at` by `created_by`, lapsing [`PAIRING_LINK_TTL_SECS`] later.
    pub fn new(scope: Scope, created_by: &str, at: DateTime<Utc>) -> PairingLink {
        PairingLink {
            scope,
            created_by: created_by.to_owned(),
            created_at: at,
            expires_at: at + chrono::Duration::seconds(PAIRING_LINK_TTL_SECS),
            used_at: None,
            device_name: None,
        }
    }

    /// Whether the link may still pair a device at `at`: unused and before `expires_at`.
    pub fn usable_at(&self, at: DateTime<Utc>) -> bool {
        self.unusable_at(at).is_none()
    }

    /// Why the link cannot pair at `at` ([`Redemption::AlreadyUsed`] or
    /// [`Redemption::Lapsed`]); `None` while it can. A used link says so even after its expiry.
    pub fn unusable_at(&self, at: DateTime<Utc>) -> Option<Redemption> {
        if let Some(used_at) = self.used_at {
            return Some(Redemption::AlreadyUsed {
                device_name: self.device_name.clone().unwrap_or_default(),
                used_at,
            });
        }
        (at >= self.expires_at).then_some(Redemption::Lapsed {
            expires_at: self.expires_at,
        })
    }
}

/// What redeeming a pairing code did. Only [`Redemption::Paired`] changed anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redemption {
    /// The device was added with the link's scope, and the link is used up.
    Paired(Device),
    /// No link has this code.
    Unknown,
    /// The link lapsed at `expires_at` unused.
    Lapsed {
        /// When it lapsed.
        expires_at: DateTime<Utc>,
    },
    /// The link already paired `device_name` at `used_at`.
    AlreadyUsed {
        /// The device it paired.
        device_name: String,
        /// When.
        used_at: DateTime<Utc>,
    },
    /// A live device already has the chosen name; the link is still unused.
    NameTaken,
}

/// Why a device name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceNameError {
    /// Empty after trimming.
    #[error("A device needs a name")]
    Empty,
    /// More than [`DEVICE_NAME_MAX_CHARS`] characters.
    #[error("A device name has at most {DEVICE_NAME_MAX_CHARS} characters")]
    TooLong,
    /// A character outside letters, digits, space, `-`, `_`, `.` and apostrophes.
    #[error(
        "A device name may use letters, digits, spaces, apostrophes, -, _ and . only (not {0:?})"
    )]
    Character(char),
}

/// Checks a device name and returns it trimmed: 1 to [`DEVICE_NAME_MAX_CHARS`] characters of
/// letters, digits, space, `-`, `_`, `.`, `'` and `’`. Names are shown on cards ("approved by NAME") and in
/// the terminal, so control and formatting characters are refused, not escaped.
///
/// # Errors
/// [`DeviceNameError`] naming the rule broken.
pub fn check_device_name(name: &str) -> Result<String, DeviceNameError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(DeviceNameError::Empty);
    }
    if name.chars().count() > DEVICE_NAME_MAX_CHARS {
        return Err(DeviceNameError::TooLong);
    }
    if let Some(bad) = name
        .chars()
        // Apostrophes, straight and typographic: phones name themselves "Robin’s iPhone".
        .find(|c| !(c.is_alphanumeric() || matches!(c, ' ' | '-' | '_' | '.' | '\'' | '\u{2019}')))
    {
        return Err(DeviceNameError::Character(bad));
    }
    Ok(name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn a_link_lapses_ten_minutes_after_it_is_made() {
        let made = at("2026-11-30T10:00:00Z");
        let link = PairingLink::new(Scope::Read, "cli", made);
        assert_eq!(link.expires_at, at("2026-11-30T10:10:00Z"));
        assert!(link.usable_at(at("2026-11-30T10:09:59Z")));
        assert!(!link.usable_at(at("2026-11-30T10:10:00Z")));
    }

    #[test]
    fn a_used_link_is_not_usable() {
        let made = at("2026-11-30T10:00:00Z");
        let mut link = PairingLink::new(Scope::Control, "cli", made);
        link.used_at = Some(made);
        link.device_name = Some("phone".into());
        assert!(!link.usable_at(made));
        assert_eq!(
            link.unusable_at(made + chrono::Duration::hours(1)),
            Some(Redemption::AlreadyUsed {
                device_name: "phone".into(),
                used_at: made
            }),
            "used, whatever the time"
        );
    }

    #[test]
    fn device_names_are_checked() {
        assert_eq!(
            check_device_name("  Anna's phone"),
            Ok("Anna's phone".into())
        );
        assert_eq!(
            check_device_name("Robin’s iPhone"),
            Ok("Robin’s iPhone".into())
        );
        assert_eq!(
            check_device_name("a<b"),
            Err(DeviceNameError::Character('<'))
        );
        assert_eq!(
            check_device_name(" kitchen tablet "),
            Ok("kitchen tablet".into())
        );
        assert_eq!(
            check_device_name("Téléphone_2.b-c"),
            Ok("Téléphone_2.b-c".into())
        );
        assert_eq!(check_device_name("   "), Err(DeviceNameError::Empty));
        assert_eq!(
            check_device_name(&"a".repeat(41)),
            Err(DeviceNameError::TooLong)
        );
        assert!(check_device_name(&"a".repeat(40)).is_ok());
        assert_eq!(
            check_device_name("a\u{202e}b"),
            Err(DeviceNameError::Character('\u{202e}'))
        );
        assert_eq!(
            check_device_name("a\nb"),
            Err(DeviceNameError::Character('\n'))
        );
    }
}
