//! The short email and thread ids the model sees and names back.
//!
//! **The rule.** An email id is `"m"` followed by the first 12 hex digits of
//! SHA-256(`account` + `"\n"` + `provider_key`), where the provider key is the Maildir unique base
//! name (the file name before `:2,`; later an IMAP or Gmail key). It does not depend on the
//! folder, the Maildir flags or the order of a scan, so it is the same across restarts, flag
//! changes and a trash/restore round trip. Only when that id is already held by another message
//! (two copies of one file in two folders, or a 48-bit collision) does sync fall back, in order,
//! to `"m"` + 12 hex of SHA-256(`account` `"\n"` `folder` `"\n"` `provider_key`), then to the same
//! hash's full 64 hex digits; the chosen id is stored and kept from then on.
//!
//! A thread id is `"t"` + 12 hex of SHA-256(`account` + `"\n"` + the thread's representative
//! message id); see `store::recompute_threads` for how the representative is chosen.

use sha2::{Digest, Sha256};

fn sha_hex(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h.update(b"\n");
        }
        h.update(p.as_bytes());
    }
    hex::encode(h.finalize())
}

/// The id candidates for a message, in the order sync tries them (see the module docs).
pub fn email_id_candidates(account: &str, folder: &str, provider_key: &str) -> [String; 3] {
    let plain = sha_hex(&[account, provider_key]);
    let qualified = sha_hex(&[account, folder, provider_key]);
    [
        format!("m{}", &plain[..12]),
        format!("m{}", &qualified[..12]),
        format!("m{qualified}"),
    ]
}

/// The usual email id: `"m"` + 12 hex of SHA-256(`account` `"\n"` `provider_key`).
pub fn email_id(account: &str, provider_key: &str) -> String {
    format!("m{}", &sha_hex(&[account, provider_key])[..12])
}

/// A thread id: `"t"` + 12 hex of SHA-256(`account` `"\n"` `representative`).
pub fn thread_id(account: &str, representative: &str) -> String {
    format!("t{}", &sha_hex(&[account, representative])[..12])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_short_stable_and_account_scoped() {
        let a = email_id("personal", "1700000000.M1P2.host");
        assert_eq!(a.len(), 13);
        assert!(a.starts_with('m'));
        assert_eq!(a, email_id("personal", "1700000000.M1P2.host"));
        assert_ne!(a, email_id("work", "1700000000.M1P2.host"));
        let c = email_id_candidates("personal", "INBOX", "1700000000.M1P2.host");
        assert_eq!(c[0], a);
        assert_ne!(c[1], a);
        assert_eq!(c[2].len(), 65);
        assert!(c[2].starts_with(&c[1]));
    }
}
