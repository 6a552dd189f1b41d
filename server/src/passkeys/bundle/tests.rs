//! The bundle's rule, field by field: a bundle signed by a P-256 key verifies (exit 0), a
//! decision without a passkey is "not signed" (11), and changing any signed field, or pinning
//! another key, is a mismatch (12).

use base64ct::{Base64UrlUnpadded, Encoding};
use iris_core::canonical::call_hash;
use iris_core::passkey::consent::{ConsentTerms, CONSENT_RULE};
use iris_core::wire::Decision;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{DerSignature, SigningKey};
use p256::pkcs8::EncodePublicKey;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::*;
use crate::passkeys::key::fingerprint_of;

const ORIGIN: &str = "https://iris.example.org";
const RP_ID: &str = "iris.example.org";

fn b64(bytes: &[u8]) -> String {
    Base64UrlUnpadded::encode_string(bytes)
}

/// An authenticator's answer: authenticator data (UP, UV and `flags_extra`, counter 7) and
/// client data for `challenge` at `origin`, signed by `key`.
fn sign(key: &SigningKey, challenge: &[u8], flags: u8) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let client = serde_json::to_vec(&json!({
        "type": "webauthn.get",
        "challenge": b64(challenge),
        "origin": ORIGIN,
        "crossOrigin": false,
    }))
    .unwrap();
    let mut data = Sha256::digest(RP_ID.as_bytes()).to_vec();
    data.push(flags);
    data.extend_from_slice(&7u32.to_be_bytes());
    let mut signed = data.clone();
    signed.extend_from_slice(&Sha256::digest(&client));
    let signature: DerSignature = key.sign(&signed);
    (client, data, signature.as_bytes().to_vec())
}

/// A bundle of an approval of `trash_email` signed under the consent rule by `key`.
fn bundle(key: &SigningKey) -> Value {
    let args = json!({"ids": ["m1", "m2"]});
    let hash = call_hash("trash_email", &args);
    let nonce = [9u8; 32];
    let challenge = ConsentTerms {
        approval_id: "a-1",
        call_hash: &hash,
        decision: Decision::Approve,
        nonce: &nonce,
    }
    .challenge();
    let (client, data, signature) = sign(key, &challenge, 0x05);
    let spki = key
        .verifying_key()
        .to_public_key_der()
        .unwrap()
        .as_bytes()
        .to_vec();
    json!({
        "format": BUNDLE_FORMAT,
        "approval": {"id": "a-1", "tool": "trash_email", "args": args, "call_hash": hash,
                     "items": ["m1", "m2"], "title": "Trash 2 emails"},
        "decision": {"decision": "approve", "status": "approved", "by": "laptop",
                     "surface": "web", "at": "2026-12-06T10:00:00Z", "reason": null,
                     "approved_items": null, "edited_fields": null},
        "ran": {"tool": "trash_email", "args": args, "call_hash": hash},
        "passkey": {
            "rule": CONSENT_RULE, "name": "Phone", "credential_id": "AAAA",
            "algorithm": "ES256", "public_key": b64(&spki), "fingerprint": fingerprint_of(&spki),
            "rp_id": RP_ID, "origin": ORIGIN, "nonce": b64(&nonce), "challenge": null,
            "client_data_json": b64(&client), "authenticator_data": b64(&data),
            "signature": b64(&signature), "sign_count": 7,
        },
        "signed": SIGNED,
        "recorded": RECORDED,
    })
}

fn key() -> SigningKey {
    SigningKey::from_slice(&[0x42; 32]).unwrap()
}

fn pin(bundle: &Value) -> String {
    bundle["passkey"]["fingerprint"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `value` changed: a string gets one character more, a number grows by one, an object or an
/// array gains an entry.
fn changed(value: &Value) -> Value {
    match value {
        Value::String(s) => {
            // Still valid base64url where it was: change the last character.
            let mut chars: Vec<char> = s.chars().collect();
            match chars.last_mut() {
                Some(c) if *c != 'A' => *c = 'A',
                Some(c) => *c = 'B',
                None => chars.push('A'),
            }
            Value::String(chars.into_iter().collect())
        }
        Value::Number(n) => json!(n.as_u64().unwrap_or(0) + 1),
        Value::Object(map) => {
            let mut map = map.clone();
            map.insert("added".into(), json!(true));
            Value::Object(map)
        }
        other => panic!("no change for {other}"),
    }
}

fn at<'a>(bundle: &'a mut Value, path: &str) -> &'a mut Value {
    path.split('.').fold(bundle, |v, part| &mut v[part])
}

#[test]
fn a_signed_bundle_verifies_and_says_what_is_signed_and_whether_the_key_is_pinned() {
    let b = bundle(&key());
    let verdict = verify(&b, Some(&pin(&b)));
    let BundleVerdict::Verified(lines) = &verdict else {
        panic!("{verdict:?}");
    };
    assert_eq!(verdict.exit_code(), 0);
    let text = lines.join("\n");
    assert!(text.contains("approved by passkey \"Phone\""), "{text}");
    assert!(
        text.contains("signed (changing any fails the check): approval.id"),
        "{text}"
    );
    assert!(text.contains("only recorded"), "{text}");
    assert!(text.contains("the public key is pinned"), "{text}");
    // Unpinned, it fails closed: the bundle's own key proves nothing about whose passkey.
    let unpinned = verify(&b, None);
    assert!(
        matches!(&unpinned, BundleVerdict::Mismatch(why) if why.contains("no key is pinned")),
        "{unpinned:?}"
    );
}

#[test]
fn changing_any_signed_field_fails_with_12() {
    let original = bundle(&key());
    for path in SIGNED {
        let mut b = original.clone();
        let field = at(&mut b, path);
        *field = changed(field);
        let verdict = verify(&b, Some(&pin(&original)));
        assert!(
            matches!(verdict, BundleVerdict::Mismatch(_)),
            "changing {path} still verifies: {verdict:?}"
        );
        assert_eq!(verdict.exit_code(), 12, "{path}");
    }
}

#[test]
fn changing_a_recorded_field_is_said_to_be_unsigned_and_still_verifies() {
    let mut b = bundle(&key());
    b["decision"]["by"] = json!("someone else");
    b["passkey"]["name"] = json!("Renamed");
    assert_eq!(verify(&b, Some(&pin(&b))).exit_code(), 0);
}

#[test]
fn no_passkey_is_not_signed_11_and_another_key_is_12() {
    let mut b = bundle(&key());
    let pinned = pin(&b);
    b["passkey"] = Value::Null;
    let verdict = verify(&b, Some(&pinned));
    assert!(matches!(&verdict, BundleVerdict::NotSigned(why) if why.contains("not signed")));
    assert_eq!(verdict.exit_code(), 11);

    // A whole bundle re-signed by another key (its own fingerprint inside) is consistent in
    // itself, and pinned to the owner's key it is a mismatch.
    let forged = bundle(&SigningKey::from_slice(&[0x43; 32]).unwrap());
    assert_eq!(verify(&forged, Some(&pin(&forged))).exit_code(), 0);
    let verdict = verify(&forged, Some(&pinned));
    assert!(matches!(&verdict, BundleVerdict::Mismatch(why) if why.contains("pinned")));
}

#[test]
fn a_call_that_differs_from_the_request_needs_a_recorded_choice() {
    let mut b = bundle(&key());
    b["approval"]["call_hash"] = json!(call_hash(
        "trash_email",
        &json!({"ids": ["m1", "m2", "m3"]})
    ));
    b["approval"]["args"] = json!({"ids": ["m1", "m2", "m3"]});
    assert_eq!(verify(&b, Some(&pin(&b))).exit_code(), 12);
    b["decision"]["approved_items"] = json!([0, 1]);
    assert_eq!(verify(&b, Some(&pin(&b))).exit_code(), 0);
}

#[test]
fn the_rule_before_consent_challenges_verifies_its_recorded_challenge_and_says_so() {
    let key = key();
    let mut b = bundle(&key);
    let challenge = [5u8; 32];
    let (client, data, signature) = sign(&key, &challenge, 0x05);
    let p = &mut b["passkey"];
    p["rule"] = json!(RECORDED_CHALLENGE_RULE);
    p["nonce"] = Value::Null;
    p["challenge"] = json!(b64(&challenge));
    p["client_data_json"] = json!(b64(&client));
    p["authenticator_data"] = json!(b64(&data));
    p["signature"] = json!(b64(&signature));
    let BundleVerdict::Verified(lines) = verify(&b, Some(&pin(&b))) else {
        panic!("the old rule does not verify");
    };
    assert!(
        lines.join("\n").contains("before consent challenges"),
        "{lines:?}"
    );
}

#[test]
fn an_assertion_without_user_verification_or_for_another_site_is_refused() {
    let key = key();
    let challenge = [1u8; 32];
    let parts = |flags| {
        let (client, data, signature) = sign(&key, &challenge, flags);
        SignedParts {
            client_data_json: client,
            authenticator_data: data,
            signature,
        }
    };
    let public = CredentialKey::Es256(*key.verifying_key());
    let expected = assertion::Expected {
        challenge: &challenge,
        origin: ORIGIN,
        rp_id: RP_ID,
    };
    assert_eq!(assertion::verify(expected, &public, &parts(0x05), 0), Ok(7));
    assert_eq!(
        assertion::verify(expected, &public, &parts(0x01), 0),
        Err(assertion::AssertionError::NotVerified)
    );
    assert!(matches!(
        assertion::verify(expected, &public, &parts(0x05), 7),
        Err(assertion::AssertionError::CounterBackwards { stored: 7, got: 7 })
    ));
    let elsewhere = assertion::Expected {
        rp_id: "example.org",
        ..expected
    };
    assert!(assertion::verify(elsewhere, &public, &parts(0x05), 0).is_err());
    let other_challenge = assertion::Expected {
        challenge: &[2u8; 32],
        ..expected
    };
    assert!(assertion::verify(other_challenge, &public, &parts(0x05), 0).is_err());
}
