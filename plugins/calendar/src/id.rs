//! The event id rule: `ev` and 16 hex digits of SHA-256 over the account, the calendar's href
//! and the resource's href. Stable while the resource keeps its href (CalDAV and vdir both keep
//! it for the life of the event), opaque to the model, and short enough to copy exactly. An id is
//! resolved by listing the account's resources ([`crate::CalendarPlugin::find`]).

use sha2::{Digest, Sha256};

/// The id of the resource `href` in calendar `calendar` of `account`.
pub fn event_id(account: &str, calendar: &str, href: &str) -> String {
    let mut hash = Sha256::new();
    for part in [account, calendar, href] {
        hash.update(part.as_bytes());
        hash.update([0u8]);
    }
    format!("ev{}", &hex::encode(hash.finalize())[..16])
}

/// Whether `text` has the shape of an event id (`ev` + 16 lower-case hex digits).
pub fn is_event_id(text: &str) -> bool {
    text.len() == 18
        && text.starts_with("ev")
        && text[2..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_stable_and_differs_by_each_part() {
        let id = event_id("personal", "home", "dentist.ics");
        assert_eq!(id, event_id("personal", "home", "dentist.ics"));
        assert!(is_event_id(&id), "{id}");
        assert_ne!(id, event_id("work", "home", "dentist.ics"));
        assert_ne!(id, event_id("personal", "work", "dentist.ics"));
        assert_ne!(id, event_id("personal", "home", "dentist2.ics"));
        // The separator keeps "ab"+"c" and "a"+"bc" apart.
        assert_ne!(event_id("ab", "c", "x"), event_id("a", "bc", "x"));
    }

    #[test]
    fn only_the_id_shape_is_an_id() {
        assert!(!is_event_id("ev123"));
        assert!(!is_event_id("EV0123456789ABCDEF"));
        assert!(!is_event_id("m0123456789abcdef0"));
    }
}
