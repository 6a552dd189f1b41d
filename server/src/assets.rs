//! How the static site and every response travel: compressed, and cached by what their names
//! promise.
//!
//! - [`compression`]: brotli or gzip on every response the client accepts it for (pages, JSON,
//!   server functions, js, wasm, css), except the Server-Sent Events stream (`GET /api/events`:
//!   a compressor would hold events back until its buffer fills), images, and bodies over
//!   [`MAX_ON_THE_FLY`].
//! - [`pkg_service`]: the site's `/pkg` folder, served with the `.br` / `.gz` files the release
//!   build writes beside each asset when they exist (compressed once, at the best level, instead
//!   of on every request).
//! - [`cache_control`]: a file whose name carries its content's hash (`iris.<hash>.wasm`, made by
//!   `scripts/build-release.sh` or cargo-leptos' `hash-files`) never changes under that name, so
//!   it is cached for a year without asking again; every other static file (the debug build's
//!   `iris.js`, `iris_bg.wasm`, `iris.css`) is revalidated on each use.

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use leptos::config::LeptosOptions;
use tower_http::compression::predicate::{DefaultPredicate, NotForContentType, Predicate};
use tower_http::compression::{CompressionLayer, CompressionLevel};
use tower_http::services::ServeDir;

use crate::state::AppState;

/// `Cache-Control` of a file whose name carries its content's hash.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// `Cache-Control` of every other static file: use it only after asking the server whether it
/// changed (a 304 when it did not).
pub const REVALIDATE: &str = "no-cache";

/// The largest body compressed on the fly (4 MiB). A larger one, such as the debug build's
/// 10 MB wasm, is sent as it is: compressing it on every load took the unoptimised debug server
/// 1.6 s (brotli) over a local link where sending it takes milliseconds, and delayed hydration.
/// The release build's assets are far below it and come precompressed anyway.
pub const MAX_ON_THE_FLY: u64 = 4 * 1024 * 1024;

/// The compression of responses on the fly: brotli or gzip, whichever the client prefers among
/// those it accepts. Tower-http's default predicate already leaves out bodies under 32 bytes,
/// images, gRPC and `text/event-stream`; the event stream is named again here so that rule
/// stays whatever the default becomes; bodies over [`MAX_ON_THE_FLY`] are left out too. Level 5
/// keeps a page's compression to a millisecond or so (brotli's own default, 11, takes seconds
/// on a large file).
pub fn compression() -> CompressionLayer<impl Predicate> {
    CompressionLayer::new()
        .br(true)
        .gzip(true)
        .quality(CompressionLevel::Precise(5))
        .compress_when(
            DefaultPredicate::new()
                .and(NotForContentType::SSE)
                .and(NotOver(MAX_ON_THE_FLY)),
        )
}

/// A [`Predicate`]: the body's known length (its exact size hint or `Content-Length`) is at
/// most this many bytes; a body of unknown length (a streamed page) passes.
#[derive(Clone, Copy, Debug)]
struct NotOver(u64);

impl Predicate for NotOver {
    fn should_compress<B>(&self, response: &axum::http::Response<B>) -> bool
    where
        B: axum::body::HttpBody,
    {
        let length = response.body().size_hint().exact().or_else(|| {
            response
                .headers()
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok())
        });
        length.is_none_or(|n| n <= self.0)
    }
}

/// The site's `/pkg` folder (`LEPTOS_SITE_ROOT`/`LEPTOS_SITE_PKG_DIR`), preferring a file's
/// precompressed `.br` or `.gz` sibling when the client accepts that encoding.
pub fn pkg_service(options: &LeptosOptions) -> ServeDir {
    let dir = std::path::Path::new(options.site_root.as_ref()).join(options.site_pkg_dir.as_ref());
    ServeDir::new(dir).precompressed_br().precompressed_gzip()
}

/// Whether the site has a wasm per set of pages (`app::page::Bundle`): the setup bundle beside
/// the Activity one. Hashed (`hash_files`): its hash file (`hash-setup.txt`) beside the server
/// binary, as Leptos looks for `hash.txt`; else `NAME-setup.js` in the site's `/pkg`. A site
/// with one wasm for every page (cargo-leptos' build) has neither.
pub fn has_bundle_per_page(options: &LeptosOptions) -> bool {
    if options.hash_files {
        return std::env::current_exe()
            .ok()
            .and_then(|exe| {
                exe.parent()
                    .map(|dir| dir.join(app::page::Bundle::SETUP_HASH_FILE))
            })
            .is_some_and(|file| file.exists());
    }
    std::path::Path::new(options.site_root.as_ref())
        .join(options.site_pkg_dir.as_ref())
        .join(format!(
            "{}.js",
            app::page::Bundle::setup_name(&options.output_name)
        ))
        .exists()
}

/// Whether a file name carries its content's hash: `NAME.HASH.EXT` with a hash of at least 8
/// letters, digits, `-` or `_` (the release build's hex, cargo-leptos' base64url).
pub fn is_hashed_name(name: &str) -> bool {
    let mut parts = name.split('.');
    let (Some(stem), Some(hash), Some(ext), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    !stem.is_empty()
        && !ext.is_empty()
        && hash.len() >= 8
        && hash
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Sets `Cache-Control` on the static site's answers under `/pkg/`: [`IMMUTABLE`] for a hashed
/// name, [`REVALIDATE`] for any other; and [`REVALIDATE`] on the installable app's files at the
/// root (`/sw.js`: a browser must see a new service worker at once; the manifest and icons).
/// Pages and the API keep their own headers.
pub async fn cache_control(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let prefix = format!("/{}/", state.leptos.site_pkg_dir);
    let path = req.uri().path();
    let rule = path
        .strip_prefix(&prefix)
        .map(|file| {
            if !file.contains('/') && is_hashed_name(file) {
                IMMUTABLE
            } else {
                REVALIDATE
            }
        })
        .or_else(|| {
            (path == "/sw.js" || path == "/manifest.webmanifest" || path.starts_with("/icons/"))
                .then_some(REVALIDATE)
        });
    let mut response = next.run(req).await;
    if let Some(rule) = rule {
        let status = response.status();
        if status.is_success() || status == axum::http::StatusCode::NOT_MODIFIED {
            response
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static(rule));
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::is_hashed_name;

    #[test]
    fn hashed_names_are_told_from_plain_ones() {
        assert!(is_hashed_name("iris.0123abcd4567ef89.wasm"));
        assert!(is_hashed_name("iris.Ab-_9xYz01.js"));
        assert!(!is_hashed_name("iris.js"));
        assert!(!is_hashed_name("iris_bg.wasm"));
        assert!(!is_hashed_name("iris.css"));
        assert!(!is_hashed_name("iris.short.css"));
        assert!(!is_hashed_name("iris.0123abcd4567ef89.wasm.br"));
        assert!(!is_hashed_name(".0123abcd4567ef89.js"));
    }
}
