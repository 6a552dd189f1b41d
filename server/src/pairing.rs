//! Pairing a browser (Devices, sessions, scopes; DESIGN §7 `iris pair`): making a
//! one-time link ([`make_link`], for `iris pair` and the Devices page) and the page the link
//! opens (`GET /pair/{code}`, `POST /pair/{code}`).
//!
//! Opening the link shows what it grants (scope, until when) and asks for a device name; the
//! button pairs the browser: the link is redeemed, the device added with the link's scope and
//! the browser signed in (a session, [`crate::session`]), then sent to the Activity page. The
//! extra tap is deliberate: chat apps and mail scanners fetch links to preview them, and a
//! plain GET must not use up a one-time link or pair the scanner.
//!
//! The pairing POST is the one state-changing route that needs no device: the random code in
//! the path is the credential. It must still come from this site (Origin check, like every
//! cookie request), so another site cannot pair a visitor's browser.

use app::pairing::{PairPage, PairPageState};
use axum::extract::rejection::FormRejection;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Form, Router};
use chrono::{DateTime, Utc};
use iris_core::pairing::{check_device_name, PairingLink, Redemption};
use iris_core::ports::{PairingStore, Scope, StoreError};
use iris_core::wire::{DeviceScope, PairingOffer};
use serde::Deserialize;
use tower_sessions::Session;

use crate::auth;
use crate::config::Settings;
use crate::state::AppState;

/// Where a pairing link points: `BASE/pair/CODE`.
pub const PAIR_PATH: &str = "/pair/";

/// The wire form of a scope.
pub fn device_scope(scope: Scope) -> DeviceScope {
    match scope {
        Scope::Read => DeviceScope::Read,
        Scope::Control => DeviceScope::Control,
        Scope::Agent => DeviceScope::Agent,
    }
}

/// Makes a one-time pairing link for `scope` on `base` (no trailing slash), made by
/// `created_by` (`cli`, or the control device's name) at `at`: a random code of 256 bits, stored
/// only as its SHA-256, lapsing 10 minutes after `at` (`iris_core::pairing`).
///
/// # Errors
/// [`StoreError`] when the link cannot be stored.
pub async fn make_link(
    store: &dyn PairingStore,
    scope: Scope,
    created_by: &str,
    base: &str,
    at: DateTime<Utc>,
) -> Result<PairingOffer, StoreError> {
    let code = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let link = PairingLink::new(scope, created_by, at);
    store
        .create_pairing(&auth::token_hash(&code), &link)
        .await?;
    let url = format!("{}{PAIR_PATH}{code}", base.trim_end_matches('/'));
    Ok(PairingOffer {
        qr: qr_rows(&url),
        url,
        scope: device_scope(scope),
        expires_at: link.expires_at,
    })
}

/// `text` as a QR code's modules (error correction M, the smallest version that holds it): one
/// string per row, `1` dark, `0` light; empty when it does not fit (a link is far shorter than
/// the 2,331 bytes a QR code holds at M).
pub fn qr_rows(text: &str) -> Vec<String> {
    let Ok(code) = qrcode::QrCode::with_error_correction_level(text, qrcode::EcLevel::M) else {
        return Vec::new();
    };
    let width = code.width();
    code.to_colors()
        .chunks(width)
        .map(|row| {
            row.iter()
                .map(|c| if *c == qrcode::Color::Dark { '1' } else { '0' })
                .collect()
        })
        .collect()
}

/// The origin of `IRIS_PUBLIC_URL` (`scheme://host[:port]`, lower-case scheme and host), `None`
/// when unset or blank. Only an origin is accepted: the app's pages, its files and the session
/// cookie live at the root of the site, so a path (a proxy serving IRIS under `/iris/`) would
/// break everything after the pairing link.
///
/// # Errors
/// A sentence naming `IRIS_PUBLIC_URL` and what is wrong with it (not http(s), no host, a path,
/// a query, a fragment or a user name).
pub fn public_origin(settings: &Settings) -> Result<Option<String>, String> {
    let Some(raw) = crate::config::non_blank(&settings.public_url) else {
        return Ok(None);
    };
    let wrong = |why: &str| {
        format!("IRIS_PUBLIC_URL {raw:?} {why}; give the address browsers open, e.g. https://iris.example.org")
    };
    let url = reqwest::Url::parse(raw).map_err(|e| wrong(&format!("is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(wrong("must start with http:// or https://"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(wrong("has no host"));
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(wrong("must be an origin only, with no path, query or fragment (IRIS is served at the root of its address)"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(wrong("must not hold a user name or password"));
    }
    Ok(Some(url.origin().ascii_serialization()))
}

/// The address links are made on when no request tells it (`iris pair`): `IRIS_PUBLIC_URL`,
/// else `http://` + `IRIS_BIND` (an unspecified bind address `0.0.0.0` / `[::]` becomes
/// `127.0.0.1`, which only this machine can open: set `IRIS_PUBLIC_URL` for a phone).
///
/// # Errors
/// [`public_origin`]'s, for an `IRIS_PUBLIC_URL` that is not an origin.
pub fn configured_base(settings: &Settings) -> Result<String, String> {
    Ok(public_origin(settings)?.unwrap_or_else(|| bind_base(&settings.bind)))
}

/// `http://` + the bind address, `0.0.0.0` / `[::]` read as `127.0.0.1`.
fn bind_base(bind: &str) -> String {
    let bind = bind
        .replacen("0.0.0.0:", "127.0.0.1:", 1)
        .replacen("[::]:", "127.0.0.1:", 1);
    format!("http://{bind}")
}

/// The address links made from a browser request point at: the public origin
/// (`AppState::public_origin`) when set, else the `Host` the browser used (so a link made on
/// the phone opens on the phone's address), else the bind address.
pub fn request_base(public_origin: Option<&str>, bind: &str, headers: &HeaderMap) -> String {
    if let Some(origin) = public_origin {
        return origin.to_owned();
    }
    match headers.get(header::HOST).and_then(|h| h.to_str().ok()) {
        Some(host) => format!("http://{host}"),
        None => bind_base(bind),
    }
}

/// Whether the session cookie gets `Secure`: the owner reaches the server over TLS (the public
/// origin is `https://…`).
pub fn secure_cookies(public_origin: Option<&str>) -> bool {
    public_origin.is_some_and(|origin| origin.starts_with("https://"))
}

/// `GET /pair/{code}` and `POST /pair/{code}`.
pub fn routes() -> Router<AppState> {
    Router::new().route("/pair/{code}", get(show).post(redeem))
}

/// The form the pairing page posts.
#[derive(Debug, Deserialize)]
pub struct PairForm {
    /// The device name typed.
    #[serde(default)]
    pub name: String,
}

fn page(status: StatusCode, state: PairPageState) -> Response {
    (status, Html(PairPage::render(state))).into_response()
}

fn closed(status: StatusCode, heading: &str, text: String) -> Response {
    page(
        status,
        PairPageState::Closed {
            heading: heading.to_owned(),
            text,
        },
    )
}

/// A time on the pairing page, as the cards write one without the browser's offset
/// ("3 Dec, 16:23 UTC").
fn when(at: DateTime<Utc>) -> String {
    app::format::format_time(at, None)
}

/// A link that cannot pair (`why`: unknown, already used or lapsed): why, in plain words, and
/// what to do instead.
fn refusal(why: &Redemption) -> Response {
    match why {
        Redemption::AlreadyUsed {
            device_name,
            used_at,
        } => closed(
            StatusCode::GONE,
            "This pairing link was already used",
            format!(
                "It paired the device “{device_name}” at {}. A link pairs one browser only; make a new one to pair another.",
                when(*used_at)
            ),
        ),
        Redemption::Lapsed { expires_at } => closed(
            StatusCode::GONE,
            "This pairing link has lapsed",
            format!(
                "It worked for 10 minutes, until {}. Nothing was paired; make a new link.",
                when(*expires_at)
            ),
        ),
        // Unknown (Paired and NameTaken are not refusals of the link and never reach here).
        _ => closed(
            StatusCode::NOT_FOUND,
            "This pairing link is not valid",
            "Check that the whole link was copied, or make a new one: on the Devices page of a paired control device, or on the server with iris pair --scope read (or --scope control).".into(),
        ),
    }
}

fn suggested_name() -> String {
    format!(
        "browser-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..4]
    )
}

async fn show(
    State(state): State<AppState>,
    Path(code): Path<String>,
    request: Request,
) -> Response {
    let link = match usable_link(&state, &auth::token_hash(&code), Utc::now()).await {
        Ok(link) => link,
        Err(refused) => return refused,
    };
    let already =
        match auth::authenticate(&state.store, request.headers(), request.extensions()).await {
            Ok(auth::Identified::Device { device, .. }) => Some(device.name),
            _ => None,
        };
    page(
        StatusCode::OK,
        PairPageState::Ready {
            scope: device_scope(link.scope),
            expires_at: link.expires_at,
            name: suggested_name(),
            error: None,
            signed_in_as: already,
        },
    )
}

/// The link stored under `code_hash` if it can pair at `now`; else the page saying why.
async fn usable_link(
    state: &AppState,
    code_hash: &str,
    now: DateTime<Utc>,
) -> Result<PairingLink, Response> {
    let link = state.store.pairing(code_hash).await.map_err(internal)?;
    let Some(link) = link else {
        return Err(refusal(&Redemption::Unknown));
    };
    match link.unusable_at(now) {
        None => Ok(link),
        Some(why) => Err(refusal(&why)),
    }
}

fn internal(e: StoreError) -> Response {
    tracing::error!(error = %e, "pairing: storage failed");
    closed(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Pairing failed",
        "The server could not read or write its database; nothing was paired. Try the link again."
            .into(),
    )
}

async fn redeem(
    State(state): State<AppState>,
    Path(code): Path<String>,
    headers: HeaderMap,
    session: Session,
    form: Result<Form<PairForm>, FormRejection>,
) -> Response {
    if !auth::same_origin(&Method::POST, &headers, state.public_origin.as_deref()) {
        return closed(
            StatusCode::FORBIDDEN,
            "Pairing refused",
            "A pairing must be confirmed on this site's own page (cross-site request refused, CSRF). Open the link again.".into(),
        );
    }
    let form = match form {
        Ok(Form(form)) => form,
        Err(e) => {
            return closed(
                StatusCode::BAD_REQUEST,
                "Pairing refused",
                format!(
                    "The form did not arrive whole ({e}); nothing was paired. Open the link again."
                ),
            )
        }
    };
    let now = Utc::now();
    let code_hash = auth::token_hash(&code);
    let link = match usable_link(&state, &code_hash, now).await {
        Ok(link) => link,
        Err(refused) => return refused,
    };
    let again = |status: StatusCode, error: String, name: &str| {
        page(
            status,
            PairPageState::Ready {
                scope: device_scope(link.scope),
                expires_at: link.expires_at,
                name: name.to_owned(),
                error: Some(error),
                signed_in_as: None,
            },
        )
    };
    let name = match check_device_name(&form.name) {
        Ok(name) => name,
        Err(e) => {
            return again(
                StatusCode::BAD_REQUEST,
                format!("{e}. Nothing was paired yet."),
                form.name.trim(),
            )
        }
    };
    let token = auth::new_token();
    let token_hash = auth::token_hash(&token);
    match state
        .store
        .redeem_pairing(&code_hash, &name, &token_hash, now)
        .await
    {
        Ok(Redemption::Paired(device)) => {
            if let Err(e) = auth::sign_in(&session, &device.name, &token_hash).await {
                return internal(e);
            }
            tracing::info!(device = %device.name, scope = device.scope.as_str(), "paired a browser");
            Redirect::to("/activity").into_response()
        }
        Ok(Redemption::NameTaken) => again(
            StatusCode::CONFLICT,
            format!("A device named “{name}” already exists. Choose another name; the link still works."),
            &name,
        ),
        // The link went (used or lapsed) between the read above and the redemption: the store
        // says why.
        Ok(why) => refusal(&why),
        Err(e) => internal(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_public_url(url: &str) -> Settings {
        let mut settings: Settings = serde_json::from_str("{}").unwrap();
        settings.public_url = Some(url.to_owned());
        settings
    }

    /// The QR code a phone scans reads back as the very link (decoded by another library).
    #[test]
    fn the_qr_code_reads_back_as_the_link() {
        let url = format!("https://iris.example.org{PAIR_PATH}{}", "ab12".repeat(16));
        let rows = qr_rows(&url);
        let n = rows.len();
        assert!(
            n >= 21 && n % 4 == 1,
            "a QR code's side is 17 + 4 × version: {n}"
        );
        assert!(rows
            .iter()
            .all(|r| r.len() == n && r.chars().all(|c| c == '0' || c == '1')));
        // Drawn with its quiet zone of 4 modules, as the app draws it.
        let side = n + 8;
        let dark = |x: usize, y: usize| {
            (4..n + 4).contains(&x)
                && (4..n + 4).contains(&y)
                && rows[y - 4].as_bytes()[x - 4] == b'1'
        };
        let mut image =
            rqrr::PreparedImage::prepare_from_bitmap(side * 4, side * 4, |x, y| dark(x / 4, y / 4));
        let grids = image.detect_grids();
        assert_eq!(grids.len(), 1);
        let (_, content) = grids[0].decode().unwrap();
        assert_eq!(content, url);
    }

    #[test]
    fn the_public_url_must_be_an_origin() {
        for (raw, origin) in [
            ("https://iris.example.org", "https://iris.example.org"),
            ("HTTPS://Iris.Example.org/", "https://iris.example.org"),
            ("http://192.168.1.5:3000", "http://192.168.1.5:3000"),
        ] {
            assert_eq!(
                public_origin(&with_public_url(raw)),
                Ok(Some(origin.to_owned())),
                "{raw}"
            );
        }
        assert_eq!(public_origin(&with_public_url("  ")), Ok(None));
        for bad in [
            "iris.example.org",
            "javascript:alert(1)",
            "https://x.org/?a=b",
            "https://x.org/iris/",
            "https://x.org/#top",
            "https://user:pw@x.org",
            "http://garbage value",
            "ftp://x.org",
        ] {
            let err = public_origin(&with_public_url(bad)).unwrap_err();
            assert!(err.contains("IRIS_PUBLIC_URL"), "{bad}: {err}");
        }
        let https = public_origin(&with_public_url("HTTPS://iris.example.org")).unwrap();
        assert!(secure_cookies(https.as_deref()));
        let http = public_origin(&with_public_url("http://iris.example.org")).unwrap();
        assert!(!secure_cookies(http.as_deref()));
        assert!(!secure_cookies(None));
        assert_eq!(
            configured_base(&with_public_url("https://iris.example.org/")),
            Ok("https://iris.example.org".to_owned())
        );
        assert!(configured_base(&with_public_url("https://x.org/iris/")).is_err());
        let mut any_address = with_public_url("");
        any_address.bind = "0.0.0.0:3000".into();
        assert_eq!(
            configured_base(&any_address),
            Ok("http://127.0.0.1:3000".to_owned())
        );
    }
}
