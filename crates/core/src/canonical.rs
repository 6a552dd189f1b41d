//! Canonical JSON (RFC 8785 JCS, through `serde_jcs`) and the call hash.
//!
//! "Is this what was approved?" is a byte comparison of canonical arguments (DESIGN §2
//! "canonical JSON"); the call hash is SHA-256 over the tool name, a NUL byte and those bytes.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The canonical JSON text of `value`: keys sorted by UTF-16 code units, no insignificant
/// whitespace, numbers in ECMAScript form (RFC 8785).
pub fn canonical_json(value: &Value) -> String {
    // serde_jcs only fails on values serde_json cannot hold (non-finite numbers), which a
    // `Value` never contains.
    serde_jcs::to_string(value).expect("a serde_json::Value always canonicalises")
}

/// Hex SHA-256 of `tool` + `\0` + canonical `args` (ADR-0118: the hash pins tool and arguments).
pub fn call_hash(tool: &str, args: &Value) -> String {
    let mut h = Sha256::new();
    h.update(tool.as_bytes());
    h.update([0u8]);
    h.update(canonical_json(args).as_bytes());
    hex::encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_and_whitespace_dropped() {
        let v: Value =
            serde_json::from_str(r#"{ "b" : [1, 2], "a" : {"d": 1, "c": "x"} }"#).unwrap();
        assert_eq!(canonical_json(&v), r#"{"a":{"c":"x","d":1},"b":[1,2]}"#);
    }

    #[test]
    fn numbers_take_one_form() {
        let v: Value = serde_json::from_str(r#"{"n": 1.0e2, "m": 0.50, "z": -0.0}"#).unwrap();
        assert_eq!(canonical_json(&v), r#"{"m":0.5,"n":100,"z":0}"#);
    }

    #[test]
    fn strings_escape_minimally() {
        let v = json!({"s": "é\u{2028}\"\n"});
        assert_eq!(canonical_json(&v), "{\"s\":\"é\u{2028}\\\"\\n\"}");
    }

    #[test]
    fn rfc8785_sorts_by_utf16_code_units() {
        // U+E000 sorts before U+1F600 in UTF-16 (0xE000 < 0xD83D is false; 0xD83D < 0xE000).
        let v = json!({"\u{e000}": 1, "\u{1f600}": 2});
        assert_eq!(canonical_json(&v), "{\"\u{1f600}\":2,\"\u{e000}\":1}");
    }

    #[test]
    fn hash_covers_tool_and_argument_bytes() {
        let a = json!({"ids": ["1", "2"]});
        let reordered: Value = serde_json::from_str(r#"{"ids":["1","2"]}"#).unwrap();
        assert_eq!(
            call_hash("trash_email", &a),
            call_hash("trash_email", &reordered)
        );
        assert_ne!(
            call_hash("trash_email", &a),
            call_hash("trash_email", &json!({"ids": ["2", "1"]}))
        );
        assert_ne!(call_hash("trash_email", &a), call_hash("restore_email", &a));
        assert_eq!(call_hash("t", &json!({})).len(), 64);
    }
}
