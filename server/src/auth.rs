//! Device authentication (DESIGN §2 "device, scope"; §7 HTTP): a bearer token for devices and
//! the CLI, or the HttpOnly cookie `iris_token` in the browser. Tokens are stored only as their
//! SHA-256. Cookie requests that change state must come from our own origin (CSRF).

use axum::http::{header, HeaderMap, Method};
use chrono::Utc;
use iris_core::kernel::Actor;
use iris_core::ports::{Device, DeviceStore, Scope, StoreError};
use sha2::{Digest, Sha256};

/// Name of the browser's session cookie.
pub const COOKIE: &str = "iris_token";

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
    /// The browser cookie.
    Cookie,
}

/// The token in the request: bearer first, then the cookie.
pub fn presented_token(headers: &HeaderMap) -> Option<(String, Presented)> {
    if let Some(value) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        if let Some(token) = value.strip_prefix("Bearer ") {
            return Some((token.trim().to_string(), Presented::Bearer));
        }
    }
    for value in headers.get_all(header::COOKIE) {
        let Ok(text) = value.to_str() else { continue };
        for pair in text.split(';') {
            if let Some((k, v)) = pair.trim().split_once('=') {
                if k == COOKIE && !v.is_empty() {
                    return Some((v.to_string(), Presented::Cookie));
                }
            }
        }
    }
    None
}

/// The device behind the request, if its token is live.
///
/// # Errors
/// [`StoreError`] when the device table cannot be read.
pub async fn authenticate(
    devices: &dyn DeviceStore,
    headers: &HeaderMap,
) -> Result<Option<(Device, Presented)>, StoreError> {
    let Some((token, presented)) = presented_token(headers) else {
        return Ok(None);
    };
    Ok(devices
        .authenticate(&token_hash(&token), Utc::now())
        .await?
        .map(|d| (d, presented)))
}

/// The actor a device answers as; the surface is `web` for the browser cookie, else the
/// `X-Iris-Surface` header (`cli`, `phone`, `telegram`), else `api`.
pub fn actor_for(device: &Device, presented: Presented, headers: &HeaderMap) -> Actor {
    let surface = match presented {
        Presented::Cookie => "web".to_string(),
        Presented::Bearer => headers
            .get("x-iris-surface")
            .and_then(|v| v.to_str().ok())
            // `web` is the browser session's surface (cookie only); a bearer cannot claim it.
            .filter(|s| matches!(*s, "cli" | "phone" | "telegram"))
            .unwrap_or("api")
            .to_string(),
    };
    Actor {
        name: device.name.clone(),
        scope: device.scope,
        surface,
    }
}

/// CSRF rule for cookie-authenticated state changes: the `Origin` (or, without it, the
/// `Referer`) must be this server's own `Host`. Bearer requests are not at risk (browsers do not
/// attach them by themselves). Safe methods pass.
pub fn same_origin(method: &Method, headers: &HeaderMap) -> bool {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return true;
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

/// `Set-Cookie` value for a browser session: HttpOnly, SameSite=Strict, whole site.
pub fn session_cookie(token: &str) -> String {
    format!("{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age=31536000")
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
    fn bearer_before_cookie() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=b; iris_token=cookie1"),
        );
        assert_eq!(
            presented_token(&h),
            Some(("cookie1".into(), Presented::Cookie))
        );
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer tok"),
        );
        assert_eq!(presented_token(&h), Some(("tok".into(), Presented::Bearer)));
    }

    #[test]
    fn cross_site_post_is_refused() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("127.0.0.1:3000"));
        assert!(!same_origin(&Method::POST, &h), "no origin");
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://evil.example"),
        );
        assert!(!same_origin(&Method::POST, &h));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:3000"),
        );
        assert!(same_origin(&Method::POST, &h));
        assert!(same_origin(&Method::GET, &HeaderMap::new()));
    }

    #[test]
    fn tokens_are_random_and_hashed() {
        let a = new_token();
        assert_ne!(a, new_token());
        assert_eq!(token_hash(&a).len(), 64);
        assert_ne!(token_hash(&a), a);
    }
}
