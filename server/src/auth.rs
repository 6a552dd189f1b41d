//! Device authentication (DESIGN §2 "device, scope"; §7 HTTP; "Devices, sessions,
//! scopes"): a bearer token for devices and the CLI, or, in the browser, a session (cookie
//! [`SESSION_COOKIE`](crate::session::SESSION_COOKIE), see [`crate::session`]) that names a
//! paired device. Tokens are stored only as their SHA-256. Cookie requests that change state must
//! come from our own origin (CSRF).

use axum::http::{header, Extensions, HeaderMap, Method};
use chrono::Utc;
use iris_core::approvals::Actor;
use iris_core::ports::{Device, DeviceStore, Scope, StoreError};
use iris_core::wire::Surface;
use sha2::{Digest, Sha256};
use tower_sessions::Session;

use crate::session::{SessionDevice, DEVICE_KEY};

/// A new random device token (`iris_` + 64 hex digits, 244 random bits from two UUIDv4s).
pub fn new_token() -> String {
    format!(
        "iris_{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// Hex SHA-256 of a token: what the device table stores.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// How a request presented its credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presented {
    /// `Authorization: Bearer`.
    Bearer,
    /// A browser session (cookie `iris_session`).
    Session,
}

/// Who a request comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identified {
    /// A live device.
    Device {
        /// The device as stored (its use just recorded).
        device: Device,
        /// How it proved itself.
        presented: Presented,
        /// Hex SHA-256 of its token: what checks it again later (an open event stream).
        token_hash: String,
    },
    /// Credentials were presented but name no live device (unknown or revoked token, or a
    /// session whose device was revoked: that session is ended).
    Unknown(Presented),
    /// No credentials at all.
    Nobody,
}

impl Identified {
    /// The device, when there is one.
    pub fn device(self) -> Option<(Device, Presented)> {
        match self {
            Identified::Device {
                device, presented, ..
            } => Some((device, presented)),
            Identified::Unknown(_) | Identified::Nobody => None,
        }
    }
}

/// The bearer token of the request, if any.
pub fn bearer_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| t.trim().to_string())
}

/// The device a browser session names, if the request has a session that names one.
///
/// # Errors
/// [`StoreError::Backend`] when the session record cannot be read.
pub async fn session_device(extensions: &Extensions) -> Result<Option<SessionDevice>, StoreError> {
    let Some(session) = extensions.get::<Session>() else {
        return Ok(None);
    };
    session
        .get::<SessionDevice>(DEVICE_KEY)
        .await
        .map_err(|e| StoreError::Backend(format!("reading the browser session: {e}")))
}

/// Who the request comes from: the bearer token first, then the browser session. A session
/// whose device is no longer live is ended (its device removed, the cookie cleared).
///
/// # Errors
/// [`StoreError`] when the device table or the session cannot be read.
pub async fn authenticate(
    devices: &dyn DeviceStore,
    headers: &HeaderMap,
    extensions: &Extensions,
) -> Result<Identified, StoreError> {
    if let Some(token) = bearer_token(headers) {
        let hash = token_hash(&token);
        return Ok(match devices.authenticate(&hash, Utc::now()).await? {
            Some(device) => Identified::Device {
                device,
                presented: Presented::Bearer,
                token_hash: hash,
            },
            None => Identified::Unknown(Presented::Bearer),
        });
    }
    let Some(signed_in) = session_device(extensions).await? else {
        return Ok(if session_was_revoked(extensions).await {
            Identified::Unknown(Presented::Session)
        } else {
            Identified::Nobody
        });
    };
    match devices
        .authenticate(&signed_in.token_hash, Utc::now())
        .await?
    {
        Some(device) => Ok(Identified::Device {
            device,
            presented: Presented::Session,
            token_hash: signed_in.token_hash,
        }),
        None => {
            if let Some(session) = extensions.get::<Session>() {
                // Revoked: this browser is signed out for good, not just refused once. The
                // session is not flushed (requests of the same browser running at this moment
                // would fail under it); it keeps a tombstone instead, so the browser stays
                // "revoked" rather than "never signed in" (the demo signs the latter in).
                let ended = async {
                    session.remove_value(DEVICE_KEY).await?;
                    session.insert(REVOKED_KEY, &signed_in.name).await
                };
                if let Err(e) = ended.await {
                    tracing::warn!(device = %signed_in.name, error = %e, "ending a revoked device's session failed");
                }
            }
            Ok(Identified::Unknown(Presented::Session))
        }
    }
}

/// Session key marking a session whose device was revoked (its value: the device's name).
pub const REVOKED_KEY: &str = "revoked_device";

/// Whether the request's session belonged to a device that was revoked.
async fn session_was_revoked(extensions: &Extensions) -> bool {
    revoked_session_device(extensions).await.is_some()
}

/// The name of the revoked device whose session this request carries, if any (the tombstone
/// [`REVOKED_KEY`] left when a request first found the device revoked).
pub async fn revoked_session_device(extensions: &Extensions) -> Option<String> {
    let session = extensions.get::<Session>()?;
    session.get::<String>(REVOKED_KEY).await.ok().flatten()
}

/// Signs the browser of this request in as `device` (token hash `token_hash`): a fresh session
/// id (no session fixation), the device stored in the session. The session layer sets the
/// cookie on the response.
///
/// # Errors
/// [`StoreError::Backend`] when the session cannot be written.
pub async fn sign_in(session: &Session, device: &str, token_hash: &str) -> Result<(), StoreError> {
    let failed = |e: tower_sessions::session::Error| {
        StoreError::Backend(format!("starting the browser session of `{device}`: {e}"))
    };
    session.cycle_id().await.map_err(failed)?;
    session.remove_value(REVOKED_KEY).await.map_err(failed)?;
    session
        .insert(
            DEVICE_KEY,
            SessionDevice {
                name: device.to_owned(),
                token_hash: token_hash.to_owned(),
            },
        )
        .await
        .map_err(failed)?;
    // Written now, not at the end of the response: the page rendered next must already see it.
    session.save().await.map_err(failed)
}

/// The actor a device answers as; the surface is `web` for the browser session; for a bearer
/// token `cli` when the `X-Iris-Surface: cli` header says so (the CLI sends it), else `api`.
/// A bearer can never record `web`, `telegram` or `phone`: those come only from their own
/// credentials (the browser session, the Telegram chat, a paired phone's session), so the
/// record of where an answer came from is true (docs/liveness.md "truthful records").
pub fn actor_for(device: &Device, presented: Presented, headers: &HeaderMap) -> Actor {
    let surface = match presented {
        Presented::Session => Surface::Web,
        Presented::Bearer => headers
            .get("x-iris-surface")
            .and_then(|v| v.to_str().ok())
            .and_then(Surface::claimed)
            .unwrap_or(Surface::Api),
    };
    Actor {
        name: device.name.clone(),
        scope: device.scope,
        surface,
    }
}

/// The CSRF decision, its one owner: a state-changing request that the browser's session cookie
/// authenticates (`by_cookie`; a bearer token is never at risk) must come from this site
/// ([`same_origin`]). Every surface that takes cookie-authenticated changes asks it: the JSON
/// API (`api::refuse_cross_site`) and the web app's server functions (`web::csrf_guard`); the
/// pairing page checks [`same_origin`] itself, to answer with a page.
///
/// # Errors
/// [`crate::error::ApiError::Forbidden`] with the one sentence every such refusal carries.
pub fn refuse_cross_site(
    method: &Method,
    headers: &HeaderMap,
    public_origin: Option<&str>,
    by_cookie: bool,
) -> Result<(), crate::error::ApiError> {
    if by_cookie && !same_origin(method, headers, public_origin) {
        return Err(crate::error::ApiError::Forbidden(
            "cross-site request refused: a cookie-authenticated change must come from this site (CSRF)".into(),
        ));
    }
    Ok(())
}

/// CSRF rule for cookie-authenticated state changes: the `Origin` (or, without it, the
/// `Referer`) must be this server's own `Host`. Bearer requests are not at risk (browsers do not
/// attach them by themselves). Safe methods pass.
///
/// Also accepted: an `Origin` equal to `public_origin` (the origin of
/// `IRIS_PUBLIC_URL`, e.g. `https://iris.example.org`): behind a proxy that rewrites `Host`,
/// the browser's origin is the public address, not the `Host` the server sees.
pub fn same_origin(method: &Method, headers: &HeaderMap, public_origin: Option<&str>) -> bool {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return true;
    }
    if let (Some(public), Some(origin)) = (
        public_origin,
        headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()),
    ) {
        if origin.eq_ignore_ascii_case(public) {
            return true;
        }
    }
    let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let origin = headers
        .get(header::ORIGIN)
        .or_else(|| headers.get(header::REFERER))
        .and_then(|v| v.to_str().ok());
    match origin {
        Some(o) => {
            let rest = o
                .strip_prefix("http://")
                .or_else(|| o.strip_prefix("https://"))
                .unwrap_or("");
            rest.split('/').next() == Some(host)
        }
        // Same-origin fetches of GET-less forms always carry Origin in current browsers.
        None => false,
    }
}

/// The scope a device needs for a route: every state-changing route is `control` only.
pub fn may_change_state(scope: Scope) -> bool {
    scope == Scope::Control
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn the_bearer_token_is_read_from_the_authorization_header() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer_token(&h), None);
        h.insert(header::COOKIE, HeaderValue::from_static("iris_session=abc"));
        assert_eq!(bearer_token(&h), None, "a cookie is not a bearer token");
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer tok"),
        );
        assert_eq!(bearer_token(&h), Some("tok".into()));
    }

    #[test]
    fn cross_site_post_is_refused() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("127.0.0.1:3000"));
        assert!(!same_origin(&Method::POST, &h, None), "no origin");
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://evil.example"),
        );
        assert!(!same_origin(&Method::POST, &h, None));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:3000"),
        );
        assert!(same_origin(&Method::POST, &h, None));
        assert!(same_origin(&Method::GET, &HeaderMap::new(), None));
        // Behind a proxy that rewrites Host, the public origin is accepted, nothing else more.
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("https://iris.example.org"),
        );
        assert!(!same_origin(&Method::POST, &h, None));
        assert!(same_origin(
            &Method::POST,
            &h,
            Some("https://iris.example.org")
        ));
        assert!(!same_origin(
            &Method::POST,
            &h,
            Some("https://other.example.org")
        ));
    }

    #[test]
    fn only_a_cookie_authenticated_change_from_another_site_is_refused_with_one_sentence() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("127.0.0.1:3000"));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://evil.example"),
        );
        let refused = refuse_cross_site(&Method::POST, &h, None, true).unwrap_err();
        assert!(matches!(refused, crate::error::ApiError::Forbidden(_)));
        assert_eq!(
            refused.to_string(),
            "cross-site request refused: a cookie-authenticated change must come from this site (CSRF)"
        );
        // A bearer token is never attached by a browser on its own; a read is no change.
        assert!(refuse_cross_site(&Method::POST, &h, None, false).is_ok());
        assert!(refuse_cross_site(&Method::GET, &h, None, true).is_ok());
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:3000"),
        );
        assert!(refuse_cross_site(&Method::POST, &h, None, true).is_ok());
    }

    #[test]
    fn tokens_are_random_and_hashed() {
        let a = new_token();
        assert_ne!(a, new_token());
        assert_eq!(token_hash(&a).len(), 64);
        assert_ne!(token_hash(&a), a);
    }
}
