//! The VAPID key and token (RFC 8292) and the message encryption (RFC 8291).

use base64ct::{Base64UrlUnpadded, Encoding};
use iris_core::push::{PushEndpoint, PushKeys};
use jwt_simple::prelude::{
    Claims, Duration, ECDSAP256KeyPairLike, ECDSAP256PublicKeyLike, ES256KeyPair,
};

/// How long a VAPID token is valid at most, in seconds (RFC 8292 §2: no more than 24 hours).
const TOKEN_MAX_SECS: i64 = 12 * 3600;

/// A P-256 key pair that signs this server's VAPID tokens. Never logged or printed.
pub struct VapidKey(ES256KeyPair);

impl VapidKey {
    /// A new random key pair.
    pub fn generate() -> VapidKey {
        VapidKey(ES256KeyPair::generate())
    }

    /// The key pair of a stored private scalar (32 bytes).
    ///
    /// # Errors
    /// When the bytes are not a P-256 private key.
    pub fn from_private(bytes: &[u8; 32]) -> anyhow::Result<VapidKey> {
        ES256KeyPair::from_bytes(bytes)
            .map(VapidKey)
            .map_err(|e| anyhow::anyhow!("the stored VAPID key is not a P-256 key: {e}"))
    }

    /// The private scalar (32 bytes), for the store.
    pub fn private_bytes(&self) -> [u8; 32] {
        let bytes = self.0.to_bytes();
        let mut out = [0u8; 32];
        out.copy_from_slice(&bytes[..32]);
        out
    }

    /// The public key, uncompressed (65 bytes).
    pub fn public_bytes(&self) -> [u8; 65] {
        let bytes = self.0.public_key().public_key().to_bytes_uncompressed();
        let mut out = [0u8; 65];
        out.copy_from_slice(&bytes[..65]);
        out
    }

    /// The public key as unpadded base64url (what browsers take as `applicationServerKey` and
    /// what the `k=` of the `Authorization` header carries).
    pub fn public_text(&self) -> String {
        Base64UrlUnpadded::encode_string(&self.public_bytes())
    }

    /// The `Authorization` header of a push to `endpoint` (RFC 8292 §3): `vapid t=TOKEN,
    /// k=KEY`, the token's audience the endpoint's origin, its subject `subject`, valid for the
    /// push's TTL (at least a minute, at most [`TOKEN_MAX_SECS`]).
    ///
    /// # Errors
    /// When signing fails.
    pub fn authorization(
        &self,
        endpoint: &PushEndpoint,
        subject: &str,
        ttl_secs: i64,
    ) -> anyhow::Result<String> {
        let valid = ttl_secs.clamp(60, TOKEN_MAX_SECS).unsigned_abs();
        let claims = Claims::create(Duration::from_secs(valid))
            .with_audience(endpoint.origin())
            .with_subject(subject);
        let token = self
            .0
            .sign(claims)
            .map_err(|e| anyhow::anyhow!("signing the VAPID token: {e}"))?;
        Ok(format!("vapid t={token}, k={}", self.public_text()))
    }
}

/// Checks that a subscription's public key is a point on P-256 (so pushes to it can be
/// encrypted).
///
/// # Errors
/// When it is not, in a sentence naming the key.
pub fn check_key(keys: &PushKeys) -> anyhow::Result<()> {
    public_key(keys).map(|_| ())
}

/// The subscription's public key as a P-256 point.
fn public_key(keys: &PushKeys) -> anyhow::Result<web_push_native::p256::PublicKey> {
    web_push_native::p256::PublicKey::from_sec1_bytes(keys.p256dh())
        .map_err(|_| anyhow::anyhow!("the subscription's key `p256dh` is not a point on P-256"))
}

/// Encrypts `payload` for a browser's keys (RFC 8291, content coding `aes128gcm`, one record).
///
/// # Errors
/// When the subscription's public key is not a point on P-256.
pub fn encrypt(payload: &str, keys: &PushKeys) -> anyhow::Result<Vec<u8>> {
    let public = public_key(keys)?;
    let auth = web_push_native::Auth::clone_from_slice(keys.auth());
    web_push_native::encrypt(payload.as_bytes().to_vec(), &public, &auth)
        .map_err(|e| anyhow::anyhow!("encrypting a push: {e}"))
}
