//! How responses travel, in process (`iris::app`, then `tower::ServiceExt::oneshot`): every
//! response is compressed with brotli or gzip as the request's `Accept-Encoding` asks (pages,
//! JSON, js, wasm, css), except the Server-Sent Events stream (a compressor would hold its
//! events back) and a body too large to compress on each load; a precompressed `.br` beside a
//! static file is served as it is; and the static site's `Cache-Control` follows its file
//! names: a name carrying its content's hash is cached for a year as immutable, any other is
//! revalidated.

use std::path::Path;

use axum::body::Body;
use axum::http::{header, HeaderMap, Request, StatusCode};
use iris_core::ports::Scope;

use crate::support::TestApp;

/// A hashed wasm name as `scripts/build-release.sh` makes them.
const HASHED_WASM: &str = "iris.0123456789abcdef.wasm";

/// A server on a temp SQLite file whose site root holds a hashed wasm (with a precompressed
/// `.br` beside it), and the debug build's unhashed `iris.js` and `iris.css`.
async fn app() -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("site").join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    let filler = |what: &str| what.repeat(400).into_bytes();
    std::fs::write(pkg.join(HASHED_WASM), filler("\0asm wasm bytes ")).unwrap();
    std::fs::write(pkg.join(format!("{HASHED_WASM}.br")), b"precompressed").unwrap();
    std::fs::write(pkg.join("iris.js"), filler("export function hydrate() {} ")).unwrap();
    std::fs::write(pkg.join("iris.css"), filler("body { margin: 0 } ")).unwrap();
    let large = vec![b'w'; usize::try_from(iris::assets::MAX_ON_THE_FLY).unwrap() + 1];
    std::fs::write(pkg.join("iris_bg.wasm"), large).unwrap();
    let script = dir.path().join("model.yaml");
    std::fs::write(&script, "rules: []\nfallback: \"?\"\n").unwrap();

    let leptos = leptos::config::LeptosOptions::builder()
        .output_name("iris")
        .site_root(site_root(dir.path()))
        .site_pkg_dir("pkg")
        .build();
    TestApp::with_script_file(&script)
        .leptos(leptos)
        .scope(Scope::Read)
        .in_dir(dir)
        .start()
        .await
}

fn site_root(dir: &Path) -> String {
    dir.join("site").display().to_string()
}

/// GET `path` with `Accept-Encoding: accept` (none when empty): the status, the headers and
/// the body as sent (still compressed). The body is not read for the event stream.
async fn get(app: &TestApp, path: &str, accept: &str) -> (StatusCode, HeaderMap, Vec<u8>) {
    let mut request = Request::builder()
        .uri(path)
        .header("authorization", app.bearer());
    if !accept.is_empty() {
        request = request.header(header::ACCEPT_ENCODING, accept);
    }
    let response = app.send(request.body(Body::empty()).unwrap()).await;
    let (status, headers) = (response.status(), response.headers().clone());
    let is_stream = headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let body = if is_stream {
        Vec::new()
    } else {
        axum::body::to_bytes(response.into_body(), 16 << 20)
            .await
            .unwrap()
            .to_vec()
    };
    (status, headers, body)
}

fn encoding(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::CONTENT_ENCODING)
        .map(|v| v.to_str().unwrap())
}

fn cache_control(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::CACHE_CONTROL)
        .map(|v| v.to_str().unwrap())
}

fn gunzip(bytes: &[u8]) -> String {
    use std::io::Read;
    let mut text = String::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_string(&mut text)
        .unwrap();
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_kind_of_response_is_compressed_as_the_client_accepts() {
    let app = app().await;
    // JSON (the public OpenAPI document), a page (the pairing page of an unknown link), js, css.
    for path in [
        "/api/openapi.json",
        "/pair/no-such-code",
        "/pkg/iris.js",
        "/pkg/iris.css",
    ] {
        let (_, headers, body) = get(&app, path, "br").await;
        assert_eq!(encoding(&headers), Some("br"), "{path}");
        assert!(headers.get(header::CONTENT_LENGTH).is_none(), "{path}");

        let (_, headers, body_gz) = get(&app, path, "gzip").await;
        assert_eq!(encoding(&headers), Some("gzip"), "{path}");
        assert!(
            headers
                .get_all(header::VARY)
                .iter()
                .any(|v| v.to_str().unwrap().contains("accept-encoding")),
            "{path}: no Vary: accept-encoding"
        );

        let (_, headers, plain) = get(&app, path, "").await;
        assert_eq!(encoding(&headers), None, "{path}");
        assert!(!plain.is_empty(), "{path}");
        assert_eq!(gunzip(&body_gz).as_bytes(), plain.as_slice(), "{path}");
        assert!(
            body.len() < plain.len(),
            "{path}: brotli made it no smaller"
        );
    }
    // A page of the app itself.
    let (_, headers, html) = get(&app, "/pair/no-such-code", "gzip").await;
    let html = gunzip(&html);
    assert!(html.contains("<!DOCTYPE html>"), "{html}");
    assert!(html.contains("/pkg/iris.css"), "{html}");
    assert_eq!(encoding(&headers), Some("gzip"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_is_never_compressed() {
    let app = app().await;
    for accept in ["br", "gzip", "gzip, br", "br;q=1.0, gzip;q=0.8, *;q=0.1"] {
        let (status, headers, _) = get(&app, "/api/events", accept).await;
        assert_eq!(status, StatusCode::OK);
        assert!(headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream"));
        assert_eq!(encoding(&headers), None, "{accept}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hashed_assets_are_immutable_and_precompressed_ones_served_as_they_are() {
    let app = app().await;
    let path = format!("/pkg/{HASHED_WASM}");

    let (status, headers, body) = get(&app, &path, "br, gzip").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        cache_control(&headers),
        Some("public, max-age=31536000, immutable")
    );
    assert_eq!(encoding(&headers), Some("br"));
    assert_eq!(
        body, b"precompressed",
        "the .br file beside it, not a second compression"
    );
    assert_eq!(headers[header::CONTENT_TYPE], "application/wasm");

    // No .gz beside it: compressed on the fly.
    let (_, headers, body) = get(&app, &path, "gzip").await;
    assert_eq!(encoding(&headers), Some("gzip"));
    assert!(gunzip(&body).starts_with("\0asm wasm bytes "));
    assert_eq!(
        cache_control(&headers),
        Some("public, max-age=31536000, immutable")
    );

    // Unhashed names (the debug build's) are revalidated on each use.
    for path in ["/pkg/iris.js", "/pkg/iris.css"] {
        let (status, headers, _) = get(&app, path, "gzip").await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert_eq!(cache_control(&headers), Some("no-cache"), "{path}");
    }
    // A body too large to compress on each load (the debug build's wasm) goes as it is.
    let (status, headers, body) = get(&app, "/pkg/iris_bg.wasm", "br, gzip").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(encoding(&headers), None);
    assert_eq!(body.len() as u64, iris::assets::MAX_ON_THE_FLY + 1);
    assert_eq!(cache_control(&headers), Some("no-cache"));

    // A missing file is not told to be cached.
    let (status, headers, _) = get(&app, "/pkg/iris.0123456789abcdee.wasm", "").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(cache_control(&headers), None);
    // Pages and the API keep their own rules (nothing immutable).
    let (_, headers, _) = get(&app, "/api/openapi.json", "").await;
    assert_ne!(
        cache_control(&headers),
        Some("public, max-age=31536000, immutable")
    );
}
