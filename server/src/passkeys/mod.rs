//! Passkeys bound to the call (ADR-0118 decision 4; `iris_core::passkey`): the server's
//! WebAuthn. Registration is `webauthn-rs`'s; assertions are checked here (`assertion.rs`).
//!
//! - [`Passkeys`]: the relying party (`IRIS_PUBLIC_URL`'s host; WebAuthn needs https or
//!   `localhost`, and browsers refuse an IP address, so anything else turns passkeys off with a
//!   sentence saying why) and `IRIS_PASSKEY_REQUIRED`. It implements the core's
//!   [`PasskeyCheck`] (challenges and assertions, by `assertion.rs`) and makes and checks
//!   registrations (by `webauthn-rs`).
//! - `api.rs`: `GET /api/passkeys`, `POST /api/passkeys/registrations` (a registration
//!   challenge), `POST /api/passkeys/proofs` (a challenge to prove an existing passkey),
//!   `POST /api/passkeys` (register), `DELETE /api/passkeys/{id}`, and
//!   `POST /governance/approvals/{id}/passkey` (a challenge for approving that card).
//! - `assertion.rs`: WebAuthn §7.2, an assertion checked against the challenge the caller
//!   expects (an approve's is derived from the call: docs/adr/0124-signed-consent.md).
//! - `key.rs`: a credential's public key (ES256, ES384, RS256), its SubjectPublicKeyInfo and
//!   fingerprint.
//! - `bundle.rs`: `iris audit export` and `iris audit verify --bundle`, the consent bundle.
//! - `verify.rs`: `iris audit verify ID`, the decision's passkey checked again from the
//!   database.

pub mod api;
pub mod assertion;
pub mod bundle;
pub mod key;
pub mod verify;

use base64ct::{Base64UrlUnpadded, Encoding};
use iris_core::passkey::{
    PasskeyCheck, PasskeyPolicy, PasskeyRefusal, VerifiedAssertion, CEREMONY_SECS,
};
use serde_json::Value;
use webauthn_rs::prelude::{
    Passkey, PasskeyRegistration, RegisterPublicKeyCredential, Url, Uuid, Webauthn,
    WebauthnBuilder, WebauthnError,
};

use assertion::{AssertionError, SignedParts};
use key::CredentialKey;

use crate::config::Settings;

/// The one owner's WebAuthn user handle: IRIS has one owner, so every passkey is registered for
/// the same user (an authenticator keeps one credential per user and site).
const OWNER_HANDLE: Uuid = Uuid::from_u128(0x1415_0000_0000_4000_8000_0000_0000_0001);

/// The relying party's display name.
const RP_NAME: &str = "IRIS";

/// The server's WebAuthn: on (a relying party) or off (why), and which cards need a passkey.
pub struct Passkeys {
    webauthn: Result<Webauthn, String>,
    /// `IRIS_PASSKEY_REQUIRED`.
    pub policy: PasskeyPolicy,
    /// The relying party's id (`localhost`, `iris.example.org`) when on.
    pub rp_id: Option<String>,
}

/// A registration challenge: the options for `navigator.credentials.create` and the state to
/// keep with its ceremony.
pub struct Registration {
    /// `{"publicKey": {...}}`.
    pub options: Value,
    /// `webauthn-rs`'s registration state, JSON.
    pub state: String,
}

/// A registered passkey's credential id and stored key.
pub struct Registered {
    /// Base64url, unpadded.
    pub credential_id: String,
    /// `webauthn-rs`'s `Passkey`, JSON (public key, algorithm, counter).
    pub key: String,
}

impl Passkeys {
    /// Reads `IRIS_PASSKEY_REQUIRED` and the relying party from `IRIS_PUBLIC_URL` (else
    /// `http://` + `IRIS_BIND`).
    ///
    /// # Errors
    /// A bad `IRIS_PASSKEY_REQUIRED` or `IRIS_PUBLIC_URL` (the sentence names it).
    pub fn from_settings(settings: &Settings) -> anyhow::Result<Passkeys> {
        let policy = match crate::config::non_blank(&settings.passkey_required) {
            None => PasskeyPolicy::Never,
            Some(text) => PasskeyPolicy::parse(text).map_err(anyhow::Error::msg)?,
        };
        let origin = crate::pairing::configured_base(settings).map_err(anyhow::Error::msg)?;
        Ok(Passkeys::for_origin(&origin, policy))
    }

    /// WebAuthn for the site at `origin` (`http://localhost:3000`, `https://iris.example.org`).
    pub fn for_origin(origin: &str, policy: PasskeyPolicy) -> Passkeys {
        let webauthn = relying_party(origin).and_then(|(rp_id, url)| {
            WebauthnBuilder::new(&rp_id, &url)
                .and_then(|b| {
                    // The browser's prompt lasts as long as the ceremony (CEREMONY_SECS).
                    b.rp_name(RP_NAME)
                        .timeout(std::time::Duration::from_secs(CEREMONY_SECS as u64))
                        .build()
                })
                .map_err(|e| format!("WebAuthn cannot be set up for {origin}: {e}"))
        });
        let rp_id = webauthn.as_ref().ok().and_then(|_| {
            Url::parse(origin)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned))
        });
        Passkeys {
            webauthn,
            policy,
            rp_id,
        }
    }

    fn webauthn(&self) -> Result<&Webauthn, String> {
        self.webauthn.as_ref().map_err(Clone::clone)
    }

    /// A registration challenge for a new passkey named `name`, excluding the credentials of
    /// `existing` (their stored keys).
    ///
    /// # Errors
    /// Passkeys are off, or a stored key does not parse.
    pub fn start_registration(
        &self,
        name: &str,
        existing: &[String],
    ) -> Result<Registration, String> {
        let webauthn = self.webauthn()?;
        let exclude = existing
            .iter()
            .map(|key| parse_key(key).map(|p| p.cred_id().clone()))
            .collect::<Result<Vec<_>, _>>()?;
        let (options, state) = webauthn
            .start_passkey_registration(OWNER_HANDLE, "owner", name, Some(exclude))
            .map_err(|e| format!("making a registration challenge failed: {e}"))?;
        Ok(Registration {
            options: to_value(&options)?,
            state: to_text(&state)?,
        })
    }

    /// Verifies a registration (`credential`, the browser's `PublicKeyCredential` JSON) against
    /// its ceremony's `state`: challenge, origin, relying party, user verification.
    ///
    /// # Errors
    /// A sentence saying what did not verify.
    pub fn finish_registration(
        &self,
        state: &str,
        credential: &Value,
    ) -> Result<Registered, String> {
        let webauthn = self.webauthn()?;
        let state: PasskeyRegistration = serde_json::from_str(state)
            .map_err(|e| format!("the stored registration challenge does not parse: {e}"))?;
        let credential: RegisterPublicKeyCredential = serde_json::from_value(credential.clone())
            .map_err(|e| format!("`credential` is not a WebAuthn registration: {e}"))?;
        let passkey = webauthn
            .finish_passkey_registration(&credential, &state)
            .map_err(|e| match e {
                WebauthnError::UserNotVerified => PasskeyRefusal::NotVerified.to_string(),
                other => format!("the new passkey did not verify: {other}"),
            })?;
        Ok(Registered {
            credential_id: credential_id_text(&passkey)?,
            key: to_text(&passkey)?,
        })
    }
}

impl PasskeyCheck for Passkeys {
    fn verify(
        &self,
        state: &str,
        challenge: Option<&[u8]>,
        credential: &Value,
    ) -> Result<VerifiedAssertion, PasskeyRefusal> {
        let webauthn = self.webauthn().map_err(PasskeyRefusal::Off)?;
        let state = AuthState::parse(state).map_err(PasskeyRefusal::Invalid)?;
        // The answer carries the challenge the caller derived (an approve's consent challenge)
        // and the one the state recorded: both, when both are known.
        if challenge.is_some_and(|c| c != state.challenge.as_slice()) {
            return Err(PasskeyRefusal::Invalid(
                "it answers another challenge".into(),
            ));
        }
        let id = credential["id"].as_str().unwrap_or_default();
        let allowed = state
            .credentials
            .iter()
            .find(|(allowed, _)| allowed == id)
            .ok_or_else(|| {
                PasskeyRefusal::Invalid("the passkey that answered is not one of yours".into())
            })?;
        let (key, stored_counter) =
            CredentialKey::from_stored(&allowed.1).map_err(PasskeyRefusal::Invalid)?;
        let parts = SignedParts::from_json(&credential["response"])
            .map_err(|e| PasskeyRefusal::Invalid(format!("`credential.response`: {e}")))?;
        let origin = webauthn
            .get_allowed_origins()
            .first()
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_default();
        let rp_id = self.rp_id.as_deref().unwrap_or_default();
        let expected = assertion::Expected {
            challenge: &state.challenge,
            origin: &origin,
            rp_id,
        };
        let counter =
            assertion::verify(expected, &key, &parts, stored_counter).map_err(|e| match e {
                AssertionError::NotVerified => PasskeyRefusal::NotVerified,
                other => PasskeyRefusal::Invalid(other.to_string()),
            })?;
        Ok(VerifiedAssertion {
            credential_id: id.to_string(),
            counter,
            key: with_counter(&allowed.1, counter),
        })
    }

    fn challenge(&self, passkeys: &[String], challenge: &[u8]) -> Result<(Value, String), String> {
        self.webauthn()?;
        let credentials = passkeys
            .iter()
            .map(|k| parse_key(k).and_then(|p| Ok((credential_id_text(&p)?, k.clone()))))
            .collect::<Result<Vec<_>, _>>()?;
        let options = serde_json::json!({"publicKey": {
            "challenge": Base64UrlUnpadded::encode_string(challenge),
            "timeout": CEREMONY_SECS * 1000,
            "rpId": self.rp_id,
            "allowCredentials": credentials
                .iter()
                .map(|(id, _)| serde_json::json!({"type": "public-key", "id": id}))
                .collect::<Vec<_>>(),
            "userVerification": "required",
        }});
        let state = AuthState {
            challenge: challenge.to_vec(),
            credentials,
        };
        Ok((options, state.to_text()))
    }

    fn off_reason(&self) -> Option<String> {
        self.webauthn.as_ref().err().cloned()
    }

    fn origin(&self) -> Option<String> {
        self.webauthn
            .as_ref()
            .ok()
            .and_then(|w| w.get_allowed_origins().first())
            .map(|u| u.origin().ascii_serialization())
    }
}

/// The relying party of the site at `origin`: its host, when browsers allow WebAuthn there
/// (https with a name, or `localhost`); else why not.
fn relying_party(origin: &str) -> Result<(String, Url), String> {
    let url = Url::parse(origin).map_err(|e| format!("{origin} is not a URL ({e})"))?;
    let host = url.host_str().unwrap_or_default();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.parse::<std::net::IpAddr>().is_ok() {
        return Err(format!(
            "this server's address {origin} is an IP address, and browsers \
             refuse an IP address as a passkey's site; set IRIS_PUBLIC_URL to an https:// name, \
             or to http://localhost:PORT on this machine"
        ));
    }
    if url.scheme() != "https" && host != "localhost" {
        return Err(format!(
            "this server's address {origin} is plain http, and browsers allow \
             passkeys only on https or on localhost; set IRIS_PUBLIC_URL to an https:// address"
        ));
    }
    Ok((host.to_string(), url))
}

/// An authentication ceremony's stored state: the challenge and the credentials it allows
/// (credential id, stored key). Written by [`Passkeys::challenge`] as
/// `{"challenge", "credentials": [{"id", "key"}]}`; ceremonies made before
/// (`webauthn-rs`'s `PasskeyAuthentication`, `{"ast": {"challenge", "credentials"}}`) are read
/// too, so `iris audit verify` still checks them.
struct AuthState {
    challenge: Vec<u8>,
    credentials: Vec<(String, String)>,
}

impl AuthState {
    fn parse(text: &str) -> Result<AuthState, String> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| format!("the stored challenge does not parse: {e}"))?;
        let decode = |v: &Value| {
            v.as_str()
                .and_then(|t| Base64UrlUnpadded::decode_vec(t.trim_end_matches('=')).ok())
                .ok_or_else(|| "the stored challenge has no challenge".to_string())
        };
        if let Some(ast) = value.get("ast") {
            // webauthn-rs's state: each credential is a `Credential`, a passkey's `cred`.
            let credentials = ast["credentials"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| {
                    let key = serde_json::json!({ "cred": c }).to_string();
                    let id = credential_id_text(&parse_key(&key).ok()?).ok()?;
                    Some((id, key))
                })
                .collect();
            return Ok(AuthState {
                challenge: decode(&ast["challenge"])?,
                credentials,
            });
        }
        let credentials = value["credentials"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| {
                Some((
                    c["id"].as_str()?.to_string(),
                    c["key"].as_str()?.to_string(),
                ))
            })
            .collect();
        Ok(AuthState {
            challenge: decode(&value["challenge"])?,
            credentials,
        })
    }

    fn to_text(&self) -> String {
        serde_json::json!({
            "challenge": Base64UrlUnpadded::encode_string(&self.challenge),
            "credentials": self
                .credentials
                .iter()
                .map(|(id, key)| serde_json::json!({"id": id, "key": key}))
                .collect::<Vec<_>>(),
        })
        .to_string()
    }
}

/// A stored key with its counter moved to `counter` (the JSON's `cred.counter`), so the stored
/// credential and the `sign_count` column agree.
fn with_counter(stored: &str, counter: u32) -> String {
    match serde_json::from_str::<Value>(stored) {
        Ok(mut value) if value["cred"].is_object() => {
            value["cred"]["counter"] = counter.into();
            value.to_string()
        }
        _ => stored.to_string(),
    }
}

fn parse_key(key: &str) -> Result<Passkey, String> {
    serde_json::from_str(key).map_err(|e| format!("a stored passkey does not parse: {e}"))
}

/// A passkey's credential id as base64url without padding (the browser's `id`).
fn credential_id_text(passkey: &Passkey) -> Result<String, String> {
    Ok(Base64UrlUnpadded::encode_string(passkey.cred_id()))
}

fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, String> {
    serde_json::to_value(value).map_err(|e| format!("serialising WebAuthn options failed: {e}"))
}

fn to_text<T: serde::Serialize>(value: &T) -> Result<String, String> {
    serde_json::to_string(value).map_err(|e| format!("serialising WebAuthn state failed: {e}"))
}
