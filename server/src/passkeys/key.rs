//! A passkey's public key as the consent check uses it (docs/adr/0124-signed-consent.md): read
//! from the stored credential `webauthn-rs` registered, written as SubjectPublicKeyInfo DER for
//! a bundle, named by its fingerprint, and checking a signature.
//!
//! The algorithms are the ones registration accepts (`webauthn-rs`'s secure set): ES256
//! (ECDSA P-256, SHA-256), ES384 (ECDSA P-384, SHA-384) and RS256 (RSASSA-PKCS1-v1_5,
//! SHA-256).

use base64ct::{Base64Unpadded, Encoding};
use p256::pkcs8::{DecodePublicKey, EncodePublicKey};
use sha2::{Digest, Sha256};
use webauthn_rs::prelude::{COSEAlgorithm, COSEKeyType, ECDSACurve, Passkey};

/// A credential's public key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialKey {
    /// ECDSA on P-256 with SHA-256 (COSE -7).
    Es256(p256::ecdsa::VerifyingKey),
    /// ECDSA on P-384 with SHA-384 (COSE -35).
    Es384(p384::ecdsa::VerifyingKey),
    /// RSASSA-PKCS1-v1_5 with SHA-256 (COSE -257).
    Rs256(rsa::RsaPublicKey),
}

impl CredentialKey {
    /// The key of a stored credential (`PasskeyRecord::key`: `webauthn-rs`'s `Passkey` JSON)
    /// and its signature counter as stored.
    ///
    /// # Errors
    /// The text does not parse, or the key's algorithm or curve is not one of the three.
    pub fn from_stored(stored: &str) -> Result<(CredentialKey, u32), String> {
        let passkey: Passkey = serde_json::from_str(stored)
            .map_err(|e| format!("a stored passkey does not parse: {e}"))?;
        // The counter is not exposed by `Passkey`; its JSON keeps it as `cred.counter`.
        let counter = serde_json::from_str::<serde_json::Value>(stored)
            .ok()
            .and_then(|v| v["cred"]["counter"].as_u64())
            .and_then(|c| u32::try_from(c).ok())
            .unwrap_or(0);
        let key = passkey.get_public_key();
        let parsed = match (&key.type_, &key.key) {
            (COSEAlgorithm::ES256, COSEKeyType::EC_EC2(ec)) if ec.curve == ECDSACurve::SECP256R1 => {
                p256::ecdsa::VerifyingKey::from_sec1_bytes(&sec1(&ec.x, &ec.y))
                    .map(CredentialKey::Es256)
                    .map_err(|e| format!("a stored P-256 key is not a point: {e}"))?
            }
            (COSEAlgorithm::ES384, COSEKeyType::EC_EC2(ec)) if ec.curve == ECDSACurve::SECP384R1 => {
                p384::ecdsa::VerifyingKey::from_sec1_bytes(&sec1(&ec.x, &ec.y))
                    .map(CredentialKey::Es384)
                    .map_err(|e| format!("a stored P-384 key is not a point: {e}"))?
            }
            (COSEAlgorithm::RS256, COSEKeyType::RSA(rsa_key)) => rsa::RsaPublicKey::new(
                rsa::BigUint::from_bytes_be(&rsa_key.n),
                rsa::BigUint::from_bytes_be(&rsa_key.e),
            )
            .map(CredentialKey::Rs256)
            .map_err(|e| format!("a stored RSA key is not valid: {e}"))?,
            (alg, _) => {
                return Err(format!(
                    "a stored passkey uses {alg:?}, which consent checks do not take (ES256, ES384, RS256)"
                ))
            }
        };
        Ok((parsed, counter))
    }

    /// The key from SubjectPublicKeyInfo DER and the algorithm's COSE name.
    ///
    /// # Errors
    /// An unknown algorithm, or DER that is not a key of it.
    pub fn from_spki(algorithm: &str, der: &[u8]) -> Result<CredentialKey, String> {
        let bad = |e: String| format!("the public key is not an {algorithm} key: {e}");
        match algorithm {
            "ES256" => p256::ecdsa::VerifyingKey::from_public_key_der(der)
                .map(CredentialKey::Es256)
                .map_err(|e| bad(e.to_string())),
            "ES384" => p384::ecdsa::VerifyingKey::from_public_key_der(der)
                .map(CredentialKey::Es384)
                .map_err(|e| bad(e.to_string())),
            "RS256" => rsa::RsaPublicKey::from_public_key_der(der)
                .map(CredentialKey::Rs256)
                .map_err(|e| bad(e.to_string())),
            other => Err(format!(
                "the algorithm `{other}` is not one consent checks take (ES256, ES384, RS256)"
            )),
        }
    }

    /// The algorithm's COSE name: `ES256`, `ES384` or `RS256`.
    pub fn algorithm(&self) -> &'static str {
        match self {
            CredentialKey::Es256(_) => "ES256",
            CredentialKey::Es384(_) => "ES384",
            CredentialKey::Rs256(_) => "RS256",
        }
    }

    /// SubjectPublicKeyInfo DER.
    pub fn spki(&self) -> Vec<u8> {
        let der = match self {
            CredentialKey::Es256(k) => k.to_public_key_der(),
            CredentialKey::Es384(k) => k.to_public_key_der(),
            CredentialKey::Rs256(k) => k.to_public_key_der(),
        };
        // Encoding a valid key cannot fail (the DER writer only fails on lengths over 256 MiB).
        der.map(|d| d.as_bytes().to_vec()).unwrap_or_default()
    }

    /// The fingerprint `iris passkeys list` shows and `--credential` pins: `SHA256:` and the
    /// unpadded standard base64 of SHA-256 over [`spki`](Self::spki) (as `ssh-keygen -l`
    /// writes key fingerprints).
    pub fn fingerprint(&self) -> String {
        fingerprint_of(&self.spki())
    }

    /// Whether `signature` (DER ECDSA, or PKCS#1 v1.5) is this key's over `message`.
    pub fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        use p256::ecdsa::signature::Verifier;
        match self {
            CredentialKey::Es256(k) => p256::ecdsa::DerSignature::try_from(signature)
                .is_ok_and(|sig| k.verify(message, &sig).is_ok()),
            CredentialKey::Es384(k) => p384::ecdsa::DerSignature::try_from(signature)
                .is_ok_and(|sig| k.verify(message, &sig).is_ok()),
            CredentialKey::Rs256(k) => {
                let key = rsa::pkcs1v15::VerifyingKey::<Sha256>::new(k.clone());
                rsa::pkcs1v15::Signature::try_from(signature)
                    .is_ok_and(|sig| key.verify(message, &sig).is_ok())
            }
        }
    }
}

/// The fingerprint of SubjectPublicKeyInfo DER (see [`CredentialKey::fingerprint`]).
pub fn fingerprint_of(spki: &[u8]) -> String {
    format!(
        "SHA256:{}",
        Base64Unpadded::encode_string(&Sha256::digest(spki))
    )
}

/// An uncompressed SEC1 point from its coordinates.
fn sec1(x: &[u8], y: &[u8]) -> Vec<u8> {
    let mut point = Vec::with_capacity(1 + x.len() + y.len());
    point.push(0x04);
    point.extend_from_slice(x);
    point.extend_from_slice(y);
    point
}
