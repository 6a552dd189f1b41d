//! How the wire types read their times: RFC 3339 text, as chrono's `Serialize` writes them
//! (`"2026-12-03T14:02:00.123456Z"`), read with chrono's own RFC 3339 parser
//! (`DateTime::parse_from_rfc3339`).
//!
//! Why not chrono's `Deserialize`: it reads through `FromStr`, chrono's general format-item
//! parser (RFC 2822 and every strftime item included), which costs the browser's wasm about
//! 7 KB gzip (BENCHMARKS.md, "Measured again on 3 December 2026") for text that is always RFC
//! 3339. Writing is unchanged (chrono's `Serialize`). What is refused either way: text that is
//! not an RFC 3339 date and time with its offset.

use chrono::{DateTime, Utc};
use serde::de::{Deserialize, Deserializer, Error};
use std::borrow::Cow;

/// Reads one time (`#[serde(deserialize_with = "rfc3339::deserialize")]`).
///
/// # Errors
/// A JSON value that is not a string, or a string that is not RFC 3339 ("premature end of
/// input", "input contains invalid characters", …, chrono's words).
pub fn deserialize<'de, D: Deserializer<'de>>(time: D) -> Result<DateTime<Utc>, D::Error> {
    let text = Cow::<'de, str>::deserialize(time)?;
    parse(&text).map_err(D::Error::custom)
}

/// Reads an optional time: `null` is `None` (with `#[serde(default)]`, so is a missing field).
///
/// # Errors
/// As [`deserialize`], for a value that is neither `null` nor an RFC 3339 string.
pub fn deserialize_option<'de, D: Deserializer<'de>>(
    time: D,
) -> Result<Option<DateTime<Utc>>, D::Error> {
    Option::<Cow<'de, str>>::deserialize(time)?
        .map(|text| parse(&text).map_err(D::Error::custom))
        .transpose()
}

fn parse(text: &str) -> Result<DateTime<Utc>, chrono::ParseError> {
    DateTime::parse_from_rfc3339(text).map(|at| at.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::super::{DeviceInfo, UndoRecord, UndoState};
    use chrono::{TimeZone, Utc};
    use serde_json::json;

    #[test]
    fn times_read_back_what_chrono_writes() {
        let at = Utc.with_ymd_and_hms(2026, 12, 3, 14, 2, 0).unwrap()
            + chrono::Duration::nanoseconds(123_456_789);
        let undo = UndoRecord {
            state: UndoState::Done,
            items: vec!["m1".into()],
            by: "phone".into(),
            surface: "web".into(),
            at,
            finished_at: Some(at),
            result: None,
        };
        let text = serde_json::to_string(&undo).unwrap();
        assert_eq!(serde_json::from_str::<UndoRecord>(&text).unwrap(), undo);
        // An escaped string (not borrowed from the input) reads the same.
        let escaped = text.replace("2026-12-03T", "2026-12-03\\u0054");
        assert_ne!(escaped, text);
        assert_eq!(serde_json::from_str::<UndoRecord>(&escaped).unwrap(), undo);
    }

    #[test]
    fn an_optional_time_may_be_null_or_missing_and_offsets_become_utc() {
        let device = |last_used: Option<serde_json::Value>| {
            let mut value = json!({
                "name": "phone",
                "scope": "control",
                "created_at": "2026-12-03T15:02:00+01:00",
                "this_device": false,
            });
            if let Some(last) = last_used {
                value["last_used_at"] = last;
            }
            serde_json::from_value::<DeviceInfo>(value)
        };
        let missing = device(None).unwrap();
        assert_eq!(missing.last_used_at, None);
        assert_eq!(
            missing.created_at,
            Utc.with_ymd_and_hms(2026, 12, 3, 14, 2, 0).unwrap()
        );
        assert_eq!(device(Some(json!(null))).unwrap().last_used_at, None);
        assert_eq!(
            device(Some(json!("2026-12-03T14:05:00Z")))
                .unwrap()
                .last_used_at,
            Some(Utc.with_ymd_and_hms(2026, 12, 3, 14, 5, 0).unwrap())
        );
    }

    #[test]
    fn text_that_is_not_rfc_3339_is_refused() {
        for bad in [
            json!("3 Dec 2026 14:02"),
            json!("2026-12-03T14:02:00"),
            json!("2026-12-03"),
            json!(""),
            json!(1764770520),
        ] {
            let value = json!({
                "state": "done", "items": [], "by": "p", "surface": "web", "at": bad,
            });
            assert!(
                serde_json::from_value::<UndoRecord>(value.clone()).is_err(),
                "{value} was read"
            );
        }
    }
}
