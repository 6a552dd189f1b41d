//! A calendar account on a CalDAV server (RFC 4791), spoken with the workspace's HTTP client
//! (reqwest) and a read-only XML reader (roxmltree). The plugin needs five requests (PROPFIND,
//! REPORT, GET, a conditional DELETE and PUT) and full control of their conditions and of what
//! a lost answer means, so it speaks them itself rather than through a CalDAV client crate
//! (libdav brings its own hyper client stack beside the workspace's reqwest).
//!
//! - `url` is a calendar home (its calendars are the collections a `PROPFIND` of depth 1 finds
//!   with a `calendar` resource type) or one calendar collection.
//! - Events are read with one `REPORT calendar-query` per calendar (href, ETag and the exact
//!   bytes of every VEVENT resource).
//! - A delete is `DELETE` with `If-Match` (412: changed, left alone). When the answer is lost
//!   (a dropped connection, a timeout) it is followed by one `GET`, never a second `DELETE`:
//!   404 = deleted, the same ETag = not deleted, anything else is an error the plugin records
//!   as `unknown`.
//! - A restore is `PUT` with `If-None-Match: *` (412: something is there, never overwritten).
//! - Basic auth over plain `http://` is refused unless the host is loopback, as for IMAP.

use std::time::Duration;

use async_trait::async_trait;
use reqwest::{Method, StatusCode};

use super::{BackendError, CalendarBackend, CalendarRef, Created, Deleted, Resource};

/// How long one CalDAV request may take before its answer counts as lost.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// The settings of one CalDAV account.
#[derive(Debug, Clone)]
pub struct CaldavSettings {
    /// The calendar home or collection, e.g. `http://127.0.0.1:5232/alice/`.
    pub url: String,
    /// The login name, when the server asks for one.
    pub username: Option<String>,
    /// The password (read from the account's `password_env`).
    pub password: Option<String>,
}

/// A CalDAV backend: see the module docs.
#[derive(Debug, Clone)]
pub struct CaldavBackend {
    account: String,
    base: reqwest::Url,
    username: Option<String>,
    password: Option<String>,
    http: reqwest::Client,
}

fn io(what: &str, e: impl std::fmt::Display) -> BackendError {
    BackendError::Io(format!("{what}: {e}"))
}

/// Whether a failed request's answer was lost (so whether it ran is not known).
fn answer_lost(e: &reqwest::Error) -> bool {
    e.is_timeout() || e.is_request() || e.is_connect() || e.is_body() || e.is_decode()
}

const DAV: &str = "DAV:";
const CALDAV: &str = "urn:ietf:params:xml:ns:caldav";

impl CaldavBackend {
    /// Opens the account `account` at `settings.url`.
    ///
    /// # Errors
    /// [`BackendError::Config`] for a URL that is not `http(s)://`, or credentials over plain
    /// `http://` to a host that is not loopback.
    pub fn open(
        account: impl Into<String>,
        settings: CaldavSettings,
    ) -> Result<Self, BackendError> {
        let mut base = reqwest::Url::parse(&settings.url)
            .map_err(|e| BackendError::Config(format!("url {:?}: {e}", settings.url)))?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(BackendError::Config(format!(
                "url {:?}: only http:// and https:// are CalDAV",
                settings.url
            )));
        }
        let host = base.host_str().unwrap_or_default();
        let loopback = host == "localhost"
            || host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        if base.scheme() == "http" && settings.username.is_some() && !loopback {
            return Err(BackendError::Config(format!(
                "url {:?}: a password is never sent in plain text to another machine; use https://",
                settings.url
            )));
        }
        if !base.path().ends_with('/') {
            base.set_path(&format!("{}/", base.path()));
        }
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| BackendError::Config(format!("HTTP client: {e}")))?;
        Ok(CaldavBackend {
            account: account.into(),
            base,
            username: settings.username,
            password: settings.password,
            http,
        })
    }

    /// The same account with another deadline per request (default [`REQUEST_TIMEOUT`]): what
    /// a request may take before its answer counts as lost.
    ///
    /// # Errors
    /// [`BackendError::Config`] when the HTTP client cannot be built.
    pub fn with_timeout(mut self, timeout: Duration) -> Result<Self, BackendError> {
        self.http = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| BackendError::Config(format!("HTTP client: {e}")))?;
        Ok(self)
    }

    fn request(&self, method: Method, url: reqwest::Url) -> reqwest::RequestBuilder {
        let request = self.http.request(method, url);
        match &self.username {
            Some(user) => request.basic_auth(user, self.password.as_deref()),
            None => request,
        }
    }

    fn url_of(&self, path: &str) -> Result<reqwest::Url, BackendError> {
        self.base
            .join(path)
            .map_err(|e| io(&format!("the address {path:?}"), e))
    }

    fn resource_url(
        &self,
        calendar: &CalendarRef,
        href: &str,
    ) -> Result<reqwest::Url, BackendError> {
        if href.is_empty() || href.contains('/') || href == ".." || href == "." {
            return Err(BackendError::Io(format!(
                "`{href}` is not a resource name in a calendar"
            )));
        }
        let collection = self.url_of(&calendar.href)?;
        collection
            .join(href)
            .map_err(|e| io(&format!("the address of {href:?}"), e))
    }

    async fn multistatus(
        &self,
        method: &str,
        url: reqwest::Url,
        depth: &str,
        body: &'static str,
    ) -> Result<String, BackendError> {
        let method = Method::from_bytes(method.as_bytes()).map_err(|e| io(method, e))?;
        let response = self
            .request(method.clone(), url.clone())
            .header("Depth", depth)
            .header("Content-Type", "application/xml; charset=utf-8")
            .body(body)
            .send()
            .await
            .map_err(|e| io(&format!("{method} {url}"), e))?;
        let status = response.status();
        if status != StatusCode::MULTI_STATUS {
            return Err(BackendError::Io(format!(
                "{method} {url}: the server answered {status}"
            )));
        }
        response
            .text()
            .await
            .map_err(|e| io(&format!("{method} {url}"), e))
    }
}

/// The last path segment of `href` (percent-encoding kept), or "" for a collection's own.
fn last_segment(href: &str) -> &str {
    href.trim_end_matches('/').rsplit('/').next().unwrap_or("")
}

fn child<'a, 'i>(
    node: roxmltree::Node<'a, 'i>,
    ns: &str,
    name: &str,
) -> Option<roxmltree::Node<'a, 'i>> {
    node.children()
        .find(|c| c.tag_name().namespace() == Some(ns) && c.tag_name().name() == name)
}

#[derive(Debug)]
struct Found {
    href: String,
    is_calendar: bool,
    name: Option<String>,
    etag: Option<String>,
    data: Option<String>,
}

fn parse_multistatus(xml: &str) -> Result<Vec<Found>, BackendError> {
    let doc = roxmltree::Document::parse(xml).map_err(|e| io("the server's XML", e))?;
    let mut out = Vec::new();
    for response in doc
        .descendants()
        .filter(|n| n.tag_name().namespace() == Some(DAV) && n.tag_name().name() == "response")
    {
        let Some(href) = child(response, DAV, "href").and_then(|h| h.text()) else {
            continue;
        };
        let mut found = Found {
            href: href.trim().to_string(),
            is_calendar: false,
            name: None,
            etag: None,
            data: None,
        };
        for propstat in response
            .children()
            .filter(|n| n.tag_name().namespace() == Some(DAV) && n.tag_name().name() == "propstat")
        {
            let ok = child(propstat, DAV, "status")
                .and_then(|s| s.text())
                .is_some_and(|s| s.contains(" 200 "));
            let Some(prop) = child(propstat, DAV, "prop").filter(|_| ok) else {
                continue;
            };
            if let Some(kind) = child(prop, DAV, "resourcetype") {
                found.is_calendar |= child(kind, CALDAV, "calendar").is_some();
            }
            if let Some(name) = child(prop, DAV, "displayname").and_then(|n| n.text()) {
                found.name = Some(name.trim().to_string());
            }
            if let Some(etag) = child(prop, DAV, "getetag").and_then(|n| n.text()) {
                found.etag = Some(etag.trim().to_string());
            }
            if let Some(data) = child(prop, CALDAV, "calendar-data") {
                // The text as sent: roxmltree hands back the unescaped characters.
                found.data = Some(data.text().unwrap_or_default().to_string());
            }
        }
        out.push(found);
    }
    Ok(out)
}

const PROPFIND_CALENDARS: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<d:propfind xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">
  <d:prop><d:resourcetype/><d:displayname/></d:prop>
</d:propfind>"#;

const REPORT_EVENTS: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<c:calendar-query xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">
  <d:prop><d:getetag/><c:calendar-data/></d:prop>
  <c:filter><c:comp-filter name="VCALENDAR"><c:comp-filter name="VEVENT"/></c:comp-filter></c:filter>
</c:calendar-query>"#;

#[async_trait]
impl CalendarBackend for CaldavBackend {
    async fn tells_attendees(&self) -> bool {
        let Ok(answer) = self
            .request(Method::OPTIONS, self.base.clone())
            .send()
            .await
        else {
            return false;
        };
        answer
            .headers()
            .get_all("dav")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|class| class.trim().eq_ignore_ascii_case("calendar-auto-schedule"))
    }

    fn account(&self) -> &str {
        &self.account
    }

    async fn calendars(&self) -> Result<Vec<CalendarRef>, BackendError> {
        let xml = self
            .multistatus("PROPFIND", self.base.clone(), "1", PROPFIND_CALENDARS)
            .await?;
        let base_path = self.base.path().to_string();
        let mut calendars: Vec<CalendarRef> = parse_multistatus(&xml)?
            .into_iter()
            .filter(|f| f.is_calendar)
            .map(|f| {
                // A path relative to the configured URL: "" for the URL itself.
                let path = reqwest::Url::parse(&f.href)
                    .map(|u| u.path().to_string())
                    .unwrap_or(f.href.clone());
                let relative = path
                    .strip_prefix(&base_path)
                    .unwrap_or(&path)
                    .trim_start_matches('/')
                    .to_string();
                let name = f
                    .name
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| last_segment(&f.href).to_string());
                CalendarRef {
                    href: relative,
                    name,
                }
            })
            .collect();
        calendars.sort_by(|a, b| a.href.cmp(&b.href));
        calendars.dedup_by(|a, b| a.href == b.href);
        Ok(calendars)
    }

    async fn resources(&self, calendar: &CalendarRef) -> Result<Vec<Resource>, BackendError> {
        let url = self.url_of(&calendar.href)?;
        let xml = self.multistatus("REPORT", url, "1", REPORT_EVENTS).await?;
        let mut out: Vec<Resource> = parse_multistatus(&xml)?
            .into_iter()
            .filter_map(|f| {
                let href = last_segment(&f.href).to_string();
                Some(Resource {
                    etag: f.etag?,
                    bytes: f.data?.into_bytes(),
                    href,
                })
            })
            .filter(|r| !r.href.is_empty())
            .collect();
        out.sort_by(|a, b| a.href.cmp(&b.href));
        Ok(out)
    }

    async fn get(
        &self,
        calendar: &CalendarRef,
        href: &str,
    ) -> Result<Option<Resource>, BackendError> {
        let url = self.resource_url(calendar, href)?;
        let response = self
            .request(Method::GET, url.clone())
            .send()
            .await
            .map_err(|e| io(&format!("GET {url}"), e))?;
        match response.status() {
            StatusCode::NOT_FOUND | StatusCode::GONE => Ok(None),
            s if s.is_success() => {
                let etag = response
                    .headers()
                    .get(reqwest::header::ETAG)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string);
                let bytes = response
                    .bytes()
                    .await
                    .map_err(|e| io(&format!("GET {url}"), e))?
                    .to_vec();
                let etag = etag.ok_or_else(|| {
                    BackendError::Io(format!("GET {url}: the server gave no ETag"))
                })?;
                Ok(Some(Resource {
                    href: href.to_string(),
                    etag,
                    bytes,
                }))
            }
            s => Err(BackendError::Io(format!(
                "GET {url}: the server answered {s}"
            ))),
        }
    }

    async fn delete(
        &self,
        calendar: &CalendarRef,
        href: &str,
        etag: &str,
    ) -> Result<Deleted, BackendError> {
        let url = self.resource_url(calendar, href)?;
        let sent = self
            .request(Method::DELETE, url.clone())
            .header(reqwest::header::IF_MATCH, etag)
            .send()
            .await;
        match sent {
            Ok(r) if r.status().is_success() => Ok(Deleted::Deleted),
            Ok(r) if r.status() == StatusCode::PRECONDITION_FAILED => Ok(Deleted::Changed),
            Ok(r) if r.status() == StatusCode::NOT_FOUND => Ok(Deleted::Missing),
            Ok(r) => Err(BackendError::Io(format!(
                "DELETE {url}: the server answered {}; not deleted",
                r.status()
            ))),
            Err(e) if answer_lost(&e) => {
                // One look, never a second DELETE.
                match self.get(calendar, href).await {
                    Ok(None) => Ok(Deleted::Deleted),
                    Ok(Some(now)) if now.etag == etag => Err(BackendError::Io(format!(
                        "DELETE {url}: the answer was lost ({e}) and the event is still there; not deleted"
                    ))),
                    Ok(Some(_)) => Ok(Deleted::Changed),
                    Err(look) => Err(BackendError::Unknown(format!(
                        "DELETE {url}: the answer was lost ({e}) and a look did not tell ({look})"
                    ))),
                }
            }
            Err(e) => Err(io(&format!("DELETE {url}"), e)),
        }
    }

    async fn create(
        &self,
        calendar: &CalendarRef,
        href: &str,
        bytes: &[u8],
    ) -> Result<Created, BackendError> {
        let url = self.resource_url(calendar, href)?;
        let response = self
            .request(Method::PUT, url.clone())
            .header(reqwest::header::IF_NONE_MATCH, "*")
            .header(
                reqwest::header::CONTENT_TYPE,
                "text/calendar; charset=utf-8",
            )
            .body(bytes.to_vec())
            .send()
            .await
            .map_err(|e| io(&format!("PUT {url}"), e))?;
        match response.status() {
            s if s.is_success() => Ok(Created::Created),
            StatusCode::PRECONDITION_FAILED => Ok(Created::Exists),
            s => Err(BackendError::Io(format!(
                "PUT {url}: the server answered {s}"
            ))),
        }
    }
}
