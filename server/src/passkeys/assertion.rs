//! Verifying a WebAuthn assertion, following WebAuthn Level 3 §7.2 ("Verifying an
//! Authentication Assertion"), with the challenge the caller expects
//! (docs/adr/0124-signed-consent.md: `webauthn-rs` makes its own random challenges and takes
//! no given one, so approvals, proofs and `iris audit verify` all check assertions here).
//!
//! The steps kept, by the section's numbers: 11 (clientDataJSON parses), 12 (`type` is
//! `webauthn.get`), 13 (`challenge` is the expected one), 14 (`origin` is the site's; a
//! cross-origin frame is refused), 15 (`rpIdHash` is SHA-256 of the relying party id), 16 (user
//! present), 17 (user verified: approving always needs it), 20–21 (the signature over
//! authenticatorData ‖ SHA-256(clientDataJSON) with the credential's key) and 22 (the signature
//! counter moves forward when either value is not zero). Which credential may answer is the
//! caller's check (step 5).

use base64ct::{Base64UrlUnpadded, Encoding};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::key::CredentialKey;

/// Authenticator data flag: user present.
const FLAG_UP: u8 = 0x01;
/// Authenticator data flag: user verified.
const FLAG_UV: u8 = 0x04;
/// rpIdHash (32) + flags (1) + signCount (4).
const AUTH_DATA_MIN: usize = 37;

/// What the answer must carry.
#[derive(Debug, Clone, Copy)]
pub struct Expected<'a> {
    /// The challenge's bytes (clientDataJSON carries them base64url-encoded).
    pub challenge: &'a [u8],
    /// The site's origin, e.g. `http://localhost:3000`.
    pub origin: &'a str,
    /// The relying party id, e.g. `localhost`.
    pub rp_id: &'a str,
}

/// The three signed parts of an assertion, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedParts {
    /// `response.clientDataJSON`.
    pub client_data_json: Vec<u8>,
    /// `response.authenticatorData`.
    pub authenticator_data: Vec<u8>,
    /// `response.signature`.
    pub signature: Vec<u8>,
}

impl SignedParts {
    /// Decodes the base64url fields of a `response` object (a `PublicKeyCredential`'s, or a
    /// bundle's `passkey`) named `clientDataJSON`/`authenticatorData`/`signature` or in
    /// snake case.
    ///
    /// # Errors
    /// A field missing or not base64url, named.
    pub fn from_json(response: &Value) -> Result<SignedParts, String> {
        let field = |camel: &str, snake: &str| {
            let text = response[camel]
                .as_str()
                .or_else(|| response[snake].as_str())
                .ok_or_else(|| format!("`{camel}` is missing"))?;
            Base64UrlUnpadded::decode_vec(text.trim_end_matches('='))
                .map_err(|_| format!("`{camel}` is not base64url"))
        };
        Ok(SignedParts {
            client_data_json: field("clientDataJSON", "client_data_json")?,
            authenticator_data: field("authenticatorData", "authenticator_data")?,
            signature: field("signature", "signature")?,
        })
    }

    /// The authenticator's signature counter (bytes 33..37 of authenticator data, big-endian);
    /// `None` when the data is too short.
    pub fn counter(&self) -> Option<u32> {
        let bytes = self.authenticator_data.get(33..37)?;
        Some(u32::from_be_bytes(bytes.try_into().ok()?))
    }
}

/// Why an assertion did not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AssertionError {
    /// Step 17: the authenticator did not verify the user.
    #[error("the authenticator did not verify the user")]
    NotVerified,
    /// Step 22: the counter did not move forward.
    #[error(
        "the passkey's signature counter went backwards ({got} after {stored}), so it may have \
         been copied; remove it (Devices, or `iris passkeys remove` at the server) and add it again"
    )]
    CounterBackwards {
        /// The stored counter.
        stored: u32,
        /// The assertion's.
        got: u32,
    },
    /// Any other step: which, in words.
    #[error("{0}")]
    Mismatch(String),
}

/// Checks `parts` against `expected` with `key`, the credential's stored counter being
/// `stored_counter`; returns the assertion's counter.
///
/// # Errors
/// [`AssertionError`] naming the first step that failed.
pub fn verify(
    expected: Expected<'_>,
    key: &CredentialKey,
    parts: &SignedParts,
    stored_counter: u32,
) -> Result<u32, AssertionError> {
    let mismatch = |why: &str| Err(AssertionError::Mismatch(why.to_string()));
    let Ok(client) = serde_json::from_slice::<Value>(&parts.client_data_json) else {
        return mismatch("its client data is not JSON");
    };
    if client["type"] != "webauthn.get" {
        return mismatch("its client data is not for signing in (`type` is not `webauthn.get`)");
    }
    let want = Base64UrlUnpadded::encode_string(expected.challenge);
    if client["challenge"]
        .as_str()
        .map(|c| c.trim_end_matches('='))
        != Some(want.as_str())
    {
        return mismatch("it answers another challenge");
    }
    if client["origin"].as_str() != Some(expected.origin) {
        return mismatch("it was made on another site (open IRIS at its own address)");
    }
    if client["crossOrigin"] == Value::Bool(true) {
        return mismatch("it was made inside a frame of another site");
    }
    let data = &parts.authenticator_data;
    if data.len() < AUTH_DATA_MIN {
        return mismatch("its authenticator data is too short");
    }
    if data[..32] != Sha256::digest(expected.rp_id.as_bytes())[..] {
        return mismatch("it was made for another relying party");
    }
    let flags = data[32];
    if flags & FLAG_UP == 0 {
        return mismatch("nobody touched the authenticator");
    }
    if flags & FLAG_UV == 0 {
        return Err(AssertionError::NotVerified);
    }
    let mut signed = data.clone();
    signed.extend_from_slice(&Sha256::digest(&parts.client_data_json));
    if !key.verifies(&signed, &parts.signature) {
        return mismatch("its signature does not check out with the passkey's public key");
    }
    let got = parts.counter().unwrap_or(0);
    if (got != 0 || stored_counter != 0) && got <= stored_counter {
        return Err(AssertionError::CounterBackwards {
            stored: stored_counter,
            got,
        });
    }
    Ok(got)
}
