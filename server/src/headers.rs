//! The security headers every response carries: no framing (`frame-ancestors 'none'`, and
//! `X-Frame-Options: DENY` for older browsers), no content sniffing, and no `Referer` sent
//! from IRIS's pages to another site (`same-origin`: a pairing link carries its one-time
//! secret in its address; `no-referrer` would also make the browser send `Origin: null` on the
//! card form's posts, which the CSRF check rightly refuses). The app's
//! pages add their own Content-Security-Policy with the nonce of their inline scripts
//! ([`page_policy`]); any other response gets [`DEFAULT_POLICY`].

use axum::extract::Request;
use axum::http::header::{
    CONTENT_SECURITY_POLICY, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;

/// The Content-Security-Policy of a response that is not one of the app's pages: nothing may
/// frame it, change its base address or embed plugins.
pub const DEFAULT_POLICY: &str = "frame-ancestors 'none'; base-uri 'none'; object-src 'none'";

/// The Content-Security-Policy of an app page whose inline scripts carry `nonce`: scripts only
/// by that nonce (and what they load, `'strict-dynamic'`; the wasm needs
/// `'wasm-unsafe-eval'`), everything else from this origin only, never framed.
pub fn page_policy(nonce: &str) -> String {
    format!(
        "default-src 'self'; script-src 'nonce-{nonce}' 'strict-dynamic' 'wasm-unsafe-eval'; \
         style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; \
         worker-src 'self'; manifest-src 'self'; form-action 'self'; {DEFAULT_POLICY}"
    )
}

/// Middleware: sets the security headers on every response (a page's own policy is kept).
pub async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers
        .entry(CONTENT_SECURITY_POLICY)
        .or_insert(HeaderValue::from_static(DEFAULT_POLICY));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    response
}
