//! Consent signed over the exact call (docs/adr/0124-signed-consent.md): the WebAuthn challenge
//! of an approve ceremony is derived from what is being approved, so the owner's signature
//! covers the call itself and can be checked later with no database and no trust in the server.
//!
//! The challenge is SHA-256 over [`CONSENT_RULE`] and four fields, each written as its length
//! (4 bytes, big-endian) and its bytes, so no field can run into the next:
//!
//! | field | what |
//! |---|---|
//! | approval id | the row's id (UUID text) |
//! | call hash | the hash of the call that will run: the request's, or the narrowed or edited call's |
//! | decision | `approve` |
//! | nonce | 32 random bytes made with the ceremony (a challenge is never reused) |
//!
//! The server's verifier, `iris audit verify --bundle` and this function are the only places
//! the rule is written: the first two call [`challenge`].

use sha2::{Digest, Sha256};

use crate::wire::Decision;

/// The fixed tag that starts every consent challenge: names the rule and its version, so a
/// signature made for anything else (another site's challenge, a proof before the set of
/// passkeys changes) can never pass for consent.
pub const CONSENT_RULE: &str = "iris-consent-v1";

/// Length of a nonce, in bytes.
pub const NONCE_BYTES: usize = 32;

/// What an approve ceremony's challenge covers (see the module's table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsentTerms<'a> {
    /// The approval's id.
    pub approval_id: &'a str,
    /// The call hash of the call that will run (hex SHA-256).
    pub call_hash: &'a str,
    /// The decision signed for.
    pub decision: Decision,
    /// The ceremony's random nonce ([`NONCE_BYTES`] bytes; any length is hashed as given).
    pub nonce: &'a [u8],
}

impl ConsentTerms<'_> {
    /// The challenge: 32 bytes, SHA-256 over [`CONSENT_RULE`] and the length-prefixed fields.
    pub fn challenge(&self) -> [u8; 32] {
        let mut hash = Sha256::new();
        for field in [
            CONSENT_RULE.as_bytes(),
            self.approval_id.as_bytes(),
            self.call_hash.as_bytes(),
            self.decision.as_str().as_bytes(),
            self.nonce,
        ] {
            // Lengths fit in 4 bytes: ids, hashes and nonces are short.
            hash.update((field.len() as u32).to_be_bytes());
            hash.update(field);
        }
        hash.finalize().into()
    }
}

/// A fresh random nonce of [`NONCE_BYTES`] bytes (two version-4 UUIDs: 244 random bits from
/// the operating system's generator).
pub fn nonce() -> [u8; NONCE_BYTES] {
    let mut out = [0u8; NONCE_BYTES];
    out[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    out[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms() -> ConsentTerms<'static> {
        ConsentTerms {
            approval_id: "0b7e6a4c-1f2d-4e5a-9c3b-2a1d0e9f8c7b",
            call_hash: "00ff",
            decision: Decision::Approve,
            nonce: &[7u8; NONCE_BYTES],
        }
    }

    #[test]
    fn the_challenge_is_sha256_over_the_tag_and_length_prefixed_fields() {
        let t = terms();
        let mut by_hand = Vec::new();
        for field in [
            CONSENT_RULE.as_bytes(),
            t.approval_id.as_bytes(),
            t.call_hash.as_bytes(),
            b"approve".as_slice(),
            t.nonce,
        ] {
            by_hand.extend_from_slice(&(field.len() as u32).to_be_bytes());
            by_hand.extend_from_slice(field);
        }
        let want: [u8; 32] = Sha256::digest(&by_hand).into();
        assert_eq!(t.challenge(), want);
    }

    #[test]
    fn every_field_changes_the_challenge_and_fields_cannot_run_into_each_other() {
        let base = terms().challenge();
        let changed = [
            ConsentTerms {
                approval_id: "another",
                ..terms()
            },
            ConsentTerms {
                call_hash: "00fe",
                ..terms()
            },
            ConsentTerms {
                decision: Decision::Reject,
                ..terms()
            },
            ConsentTerms {
                nonce: &[8u8; NONCE_BYTES],
                ..terms()
            },
        ];
        for other in changed {
            assert_ne!(other.challenge(), base, "{other:?}");
        }
        // Moving a byte from one field to the next is another challenge.
        let a = ConsentTerms {
            approval_id: "ab",
            call_hash: "c",
            ..terms()
        };
        let b = ConsentTerms {
            approval_id: "a",
            call_hash: "bc",
            ..terms()
        };
        assert_ne!(a.challenge(), b.challenge());
    }

    #[test]
    fn nonces_differ() {
        assert_ne!(nonce(), nonce());
    }
}
