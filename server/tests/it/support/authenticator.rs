//! A software WebAuthn authenticator for tests: one passkey (ES256 on P-256, attestation format
//! `"none"`) that answers the challenges webauthn-rs issues with the JSON a browser would post
//! back (`RegisterPublicKeyCredential` and `PublicKeyCredential`, every binary field base64url
//! without padding). The little CBOR it needs (the attestation object and the COSE key) is
//! encoded by hand.

use base64ct::{Base64UrlUnpadded, Encoding};
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{DerSignature, SigningKey};
use p256::elliptic_curve::rand_core::{OsRng, RngCore};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// Authenticator data flag: user present.
const FLAG_UP: u8 = 0x01;
/// Authenticator data flag: user verified.
const FLAG_UV: u8 = 0x04;
/// Authenticator data flag: attested credential data included.
const FLAG_AT: u8 = 0x40;

/// A software passkey for one relying party.
pub struct SoftAuthenticator {
    key: SigningKey,
    credential_id: [u8; 16],
    counter: u32,
    rp_id: String,
    origin: String,
}

impl SoftAuthenticator {
    /// A new passkey with a fresh key and a random 16-byte credential id, its signature counter
    /// at 0. `rp_id` e.g. `"localhost"`, `origin` e.g. `"http://localhost:8080"`.
    pub fn new(rp_id: &str, origin: &str) -> SoftAuthenticator {
        let mut credential_id = [0u8; 16];
        OsRng.fill_bytes(&mut credential_id);
        SoftAuthenticator {
            key: SigningKey::random(&mut OsRng),
            credential_id,
            counter: 0,
            rp_id: rp_id.to_owned(),
            origin: origin.to_owned(),
        }
    }

    /// Base64url (unpadded) credential id.
    pub fn credential_id(&self) -> String {
        Base64UrlUnpadded::encode_string(&self.credential_id)
    }

    /// Answers `navigator.credentials.create()`: `options` is the JSON webauthn-rs's
    /// `CreationChallengeResponse` serialises to (`{"publicKey": {"challenge": …, …}}`).
    ///
    /// Returns `RegisterPublicKeyCredential` JSON (`id`, `rawId`, `type`, `response` with
    /// `attestationObject` and `clientDataJSON`, empty `extensions`), its authenticator data
    /// flagged UP, UV and AT and carrying the current counter.
    pub fn register(&mut self, options: &Value) -> Value {
        let client_data = self.client_data("webauthn.create", options, &self.origin);
        let auth_data = self.auth_data(FLAG_UP | FLAG_UV | FLAG_AT, true);

        let mut attestation = Vec::with_capacity(auth_data.len() + 32);
        cbor_head(&mut attestation, 5, 3);
        cbor_text(&mut attestation, "fmt");
        cbor_text(&mut attestation, "none");
        cbor_text(&mut attestation, "attStmt");
        cbor_head(&mut attestation, 5, 0);
        cbor_text(&mut attestation, "authData");
        cbor_bytes(&mut attestation, &auth_data);

        let id = self.credential_id();
        json!({
            "id": id,
            "rawId": id,
            "type": "public-key",
            "response": {
                "attestationObject": Base64UrlUnpadded::encode_string(&attestation),
                "clientDataJSON": Base64UrlUnpadded::encode_string(&client_data),
            },
            "extensions": {},
        })
    }

    /// Answers `navigator.credentials.get()` from this authenticator's origin: `options` is
    /// webauthn-rs's `RequestChallengeResponse` JSON (`{"publicKey": {"challenge": …, …}}`).
    ///
    /// Increments the counter and returns `PublicKeyCredential` JSON (`id`, `rawId`, `type`,
    /// `response` with `authenticatorData`, `clientDataJSON`, `signature` and a null
    /// `userHandle`, empty `extensions`), flagged UP, and UV when `user_verified`. The signature
    /// is ECDSA P-256 with SHA-256, DER-encoded, over authenticatorData ‖ SHA-256(clientDataJSON).
    pub fn assert(&mut self, options: &Value, user_verified: bool) -> Value {
        let origin = self.origin.clone();
        self.assert_from(options, user_verified, &origin)
    }

    /// [`assert`](Self::assert) with `origin` in clientDataJSON instead of this authenticator's
    /// own (to test a wrong origin).
    pub fn assert_from(&mut self, options: &Value, user_verified: bool, origin: &str) -> Value {
        self.counter += 1;
        let client_data = self.client_data("webauthn.get", options, origin);
        let flags = if user_verified {
            FLAG_UP | FLAG_UV
        } else {
            FLAG_UP
        };
        let auth_data = self.auth_data(flags, false);

        let mut signed = auth_data.clone();
        signed.extend_from_slice(&Sha256::digest(&client_data));
        let signature: DerSignature = self.key.sign(&signed);

        let id = self.credential_id();
        json!({
            "id": id,
            "rawId": id,
            "type": "public-key",
            "response": {
                "authenticatorData": Base64UrlUnpadded::encode_string(&auth_data),
                "clientDataJSON": Base64UrlUnpadded::encode_string(&client_data),
                "signature": Base64UrlUnpadded::encode_string(signature.as_bytes()),
                "userHandle": null,
            },
            "extensions": {},
        })
    }

    /// The clientDataJSON bytes for a ceremony of `type_`, echoing the options' challenge string
    /// as given.
    fn client_data(&self, type_: &str, options: &Value, origin: &str) -> Vec<u8> {
        let public_key = options.get("publicKey").unwrap_or(options);
        let challenge = public_key
            .get("challenge")
            .and_then(Value::as_str)
            .expect("the options carry publicKey.challenge as a string");
        let client_data = json!({
            "type": type_,
            "challenge": challenge,
            "origin": origin,
            "crossOrigin": false,
        });
        serde_json::to_vec(&client_data).expect("clientDataJSON serialises")
    }

    /// Authenticator data: rpIdHash, `flags`, the counter (big-endian) and, when `attested`, the
    /// attested credential data (zero AAGUID, credential id, COSE key).
    fn auth_data(&self, flags: u8, attested: bool) -> Vec<u8> {
        let mut data = Vec::with_capacity(37 + 18 + 16 + 77);
        data.extend_from_slice(&Sha256::digest(self.rp_id.as_bytes()));
        data.push(flags);
        data.extend_from_slice(&self.counter.to_be_bytes());
        if attested {
            data.extend_from_slice(&[0u8; 16]);
            let id_len = u16::try_from(self.credential_id.len()).expect("credential id fits u16");
            data.extend_from_slice(&id_len.to_be_bytes());
            data.extend_from_slice(&self.credential_id);
            self.cose_key(&mut data);
        }
        data
    }

    /// The public key as a COSE_Key: `{1: 2 (EC2), 3: -7 (ES256), -1: 1 (P-256), -2: x, -3: y}`.
    fn cose_key(&self, out: &mut Vec<u8>) {
        let point = self.key.verifying_key().to_encoded_point(false);
        let x = point.x().expect("an uncompressed point has x");
        let y = point.y().expect("an uncompressed point has y");
        cbor_head(out, 5, 5);
        cbor_int(out, 1);
        cbor_int(out, 2);
        cbor_int(out, 3);
        cbor_int(out, -7);
        cbor_int(out, -1);
        cbor_int(out, 1);
        cbor_int(out, -2);
        cbor_bytes(out, x);
        cbor_int(out, -3);
        cbor_bytes(out, y);
    }
}

/// A CBOR item head: major type `major` with argument `arg`, in the shortest encoding.
fn cbor_head(out: &mut Vec<u8>, major: u8, arg: u64) {
    let major = major << 5;
    if let Ok(small @ 0..=23) = u8::try_from(arg) {
        out.push(major | small);
    } else if let Ok(arg) = u8::try_from(arg) {
        out.push(major | 24);
        out.push(arg);
    } else if let Ok(arg) = u16::try_from(arg) {
        out.push(major | 25);
        out.extend_from_slice(&arg.to_be_bytes());
    } else if let Ok(arg) = u32::try_from(arg) {
        out.push(major | 26);
        out.extend_from_slice(&arg.to_be_bytes());
    } else {
        out.push(major | 27);
        out.extend_from_slice(&arg.to_be_bytes());
    }
}

/// A CBOR integer (major type 0, or 1 for negatives).
fn cbor_int(out: &mut Vec<u8>, value: i64) {
    match u64::try_from(value) {
        Ok(positive) => cbor_head(out, 0, positive),
        Err(_) => cbor_head(out, 1, (-1 - value).unsigned_abs()),
    }
}

/// A CBOR byte string.
fn cbor_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    cbor_head(out, 2, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A CBOR text string.
fn cbor_text(out: &mut Vec<u8>, text: &str) {
    cbor_head(out, 3, text.len() as u64);
    out.extend_from_slice(text.as_bytes());
}
