//! Web Push to the owner's devices (DESIGN §9 "the owner's phone"; RFC 8030 delivery, RFC 8291
//! message encryption, RFC 8292 VAPID): the rules, with no I/O.
//!
//! - [`NewSubscription::parse`] turns the browser's `PushSubscription.toJSON()` into a
//!   subscription that can only hold a usable endpoint and keys (https, or http on loopback; a
//!   P-256 public key and a 16-byte secret).
//! - [`PushMessage::for_event`] says which events push and what a push says: a card waiting
//!   (`approval.requested`) and the same card closing (answered or lapsed), never its arguments
//!   or item lines. Both carry the card's [`topic`](PushMessage::topic) so the push service and
//!   the phone replace the first with the second.
//! - [`retry_delay`] is the back-off between attempts of one push.
//!
//! The outbox that makes delivery durable and shared by several servers is in
//! [`crate::ports::PushStore`]; the sender is the server's.

use base64ct::{Base64UrlUnpadded, Encoding};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::wire::{Approval, ApprovalStatus, Event, Execution};

/// Longest endpoint URL accepted, in bytes (real push services use under 500).
pub const ENDPOINT_MAX_BYTES: usize = 2048;

/// The TTL of a push that closes a card, in seconds: 12 hours, so a phone that was off for the
/// night still replaces the waiting notification with the outcome.
pub const CLOSED_TTL_SECS: i64 = 12 * 3600;

/// How long one push is tried before it is given up, in seconds (a day), whatever its TTL.
pub const GIVE_UP_AFTER_SECS: i64 = 24 * 3600;

/// Why a subscription was refused (400; nothing is stored).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubscriptionError {
    /// The body is not `PushSubscription.toJSON()`'s shape.
    #[error("the subscription is not PushSubscription.toJSON()'s shape ({0})")]
    Shape(String),
    /// The endpoint is not an absolute https URL (or http on loopback).
    #[error("the subscription's endpoint {0}")]
    Endpoint(String),
    /// A key does not decode or has the wrong length or form.
    #[error("the subscription's key `{key}` {reason}")]
    Key {
        /// `p256dh` or `auth`.
        key: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

/// A push service's URL for one browser: `https://…`, or `http://` on a loopback host (a push
/// service on this machine, as in the tests). At most [`ENDPOINT_MAX_BYTES`], no whitespace or
/// control characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PushEndpoint(String);

impl PushEndpoint {
    /// Parses an endpoint URL into its one spelling: scheme and host in lower case, the
    /// scheme's default port and any `#fragment` dropped (so one browser's endpoint is one
    /// subscription however it is written).
    ///
    /// # Errors
    /// [`SubscriptionError::Endpoint`] naming the rule it breaks: longer than
    /// [`ENDPOINT_MAX_BYTES`], not ASCII (browsers send punycode and percent-encoding), spaces
    /// or control characters, not absolute, a user name or password, no host, not https (plain
    /// http only on loopback), or a private, link-local or unspecified IP address (a device
    /// must not make the server post to the machines around it).
    pub fn parse(text: &str) -> Result<PushEndpoint, SubscriptionError> {
        let refuse = |why: &str| Err(SubscriptionError::Endpoint(why.to_owned()));
        if text.len() > ENDPOINT_MAX_BYTES {
            return refuse(&format!("is longer than {ENDPOINT_MAX_BYTES} bytes"));
        }
        if !text.is_ascii() {
            return refuse("holds characters outside ASCII (a browser's endpoint never does)");
        }
        if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return refuse("holds whitespace or control characters");
        }
        let (scheme, rest) = match text.split_once("://") {
            Some((scheme, rest)) => (scheme.to_ascii_lowercase(), rest),
            None => return refuse("is not an absolute URL"),
        };
        let rest = rest.split('#').next().unwrap_or_default();
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(end);
        if authority.contains('@') {
            return refuse("must not carry a user name or password");
        }
        let host = host_of(authority);
        if host.is_empty() {
            return refuse("has no host");
        }
        let default_port = match scheme.as_str() {
            "https" => ":443",
            "http" if is_loopback(host) => ":80",
            "http" => return refuse("must use https (plain http only on this machine's loopback)"),
            _ => return refuse("must be an https URL"),
        };
        if is_numeric_ipv4(host) {
            return refuse(
                "is an IPv4 address written as a number or in a shortened form (write it as four decimal parts)",
            );
        }
        if !is_loopback(host) && is_internal_address(host) {
            return refuse("is a private, link-local or unspecified address");
        }
        let authority = authority.to_ascii_lowercase();
        let authority = authority.strip_suffix(default_port).unwrap_or(&authority);
        let path = if path.is_empty() { "/" } else { path };
        Ok(PushEndpoint(format!("{scheme}://{authority}{path}")))
    }

    /// The URL.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The endpoint's origin as RFC 8292 wants it in the VAPID token's `aud`: scheme, host, and
    /// the port when it is not the scheme's default (`https://push.example.net`,
    /// `http://127.0.0.1:9000`).
    pub fn origin(&self) -> String {
        // The stored spelling is already lower case without a default port.
        let (scheme, rest) = self.0.split_once("://").unwrap_or(("https", &self.0));
        let authority = rest.split(['/', '?']).next().unwrap_or_default();
        format!("{scheme}://{authority}")
    }
}

impl TryFrom<String> for PushEndpoint {
    type Error = SubscriptionError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        PushEndpoint::parse(&text)
    }
}

impl From<PushEndpoint> for String {
    fn from(endpoint: PushEndpoint) -> String {
        endpoint.0
    }
}

/// The host of an authority (`[::1]:8080` → `::1`, `example.net:443` → `example.net`).
pub fn host_of(authority: &str) -> &str {
    if let Some(v6) = authority.strip_prefix('[') {
        return v6.split(']').next().unwrap_or_default();
    }
    authority.split(':').next().unwrap_or_default()
}

/// Whether a host is an IP address of the machines around this one ([`is_internal_ip`]). Names
/// are not resolved here: [`admit_resolved`] judges what a name resolves to, when a push is sent.
fn is_internal_address(host: &str) -> bool {
    host.parse::<std::net::IpAddr>().is_ok_and(is_internal_ip)
}

/// Whether an address belongs to the machines around this one: private (RFC 1918, IPv6 unique
/// local), link-local (cloud metadata services live there), loopback, unspecified, broadcast,
/// multicast, or an IPv4-mapped IPv6 address (judged as what it maps). The one rule for push
/// endpoints, written as literals or resolved from names.
pub fn is_internal_ip(ip: std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V4(v4) => {
            v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_loopback()
        }
        std::net::IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            v6.is_unspecified()
                || v6.is_multicast()
                || v6.is_loopback()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || v6.to_ipv4_mapped().is_some()
        }
    }
}

/// Whether `host` is an IPv4 address in a form other than four decimal parts: a URL parser
/// (WHATWG) reads a host whose last label is a number (`2130706433`, `0x7f000001`, `127.1`,
/// `0177.0.0.1`) as an IPv4 address, so such a host would reach an address the literal rule
/// never saw.
fn is_numeric_ipv4(host: &str) -> bool {
    let trimmed = host.strip_suffix('.').unwrap_or(host);
    let last = trimmed.rsplit('.').next().unwrap_or_default();
    let numeric = !last.is_empty()
        && (last.bytes().all(|b| b.is_ascii_digit())
            || last
                .strip_prefix("0x")
                .or_else(|| last.strip_prefix("0X"))
                .is_some_and(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit())));
    numeric && host.parse::<std::net::Ipv4Addr>().is_err()
}

/// The addresses a push to `host` may connect to, of those it resolved to: all of them when
/// none is internal ([`is_internal_ip`]), or when `host` names this machine
/// ([`is_loopback`]: the tests' push service) and they are loopback.
///
/// # Errors
/// A sentence naming the host and the rule when it resolved to nothing, or to any internal
/// address (a name must not lead the server to the machines around it).
pub fn admit_resolved(
    host: &str,
    addrs: Vec<std::net::SocketAddr>,
) -> Result<Vec<std::net::SocketAddr>, String> {
    if addrs.is_empty() {
        return Err(format!("the push service `{host}` resolved to no address"));
    }
    let this_machine = is_loopback(host);
    if let Some(bad) = addrs
        .iter()
        .find(|a| is_internal_ip(a.ip()) && !(this_machine && a.ip().is_loopback()))
    {
        return Err(format!(
            "the push service `{host}` resolves to {}, a private, link-local or unspecified address; nothing was sent",
            bad.ip()
        ));
    }
    Ok(addrs)
}

/// Whether a host (from [`host_of`]) names this machine: `localhost`, `::1` or 127.0.0.0/8. The
/// one rule for it: push endpoints may use plain http only on such a host, and the demo signs
/// in only page loads that name such a host.
pub fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A browser's message encryption keys (RFC 8291 §3): its P-256 public key, uncompressed (65
/// bytes starting 0x04), and its 16-byte authentication secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushKeys {
    p256dh: [u8; 65],
    auth: [u8; 16],
}

impl PushKeys {
    /// Decodes the base64url keys of `PushSubscription.toJSON()` (padding optional).
    ///
    /// # Errors
    /// [`SubscriptionError::Key`] when one does not decode or has the wrong length or form.
    /// The point itself is checked on the curve by the sender's crypto before each push.
    pub fn parse(p256dh: &str, auth: &str) -> Result<PushKeys, SubscriptionError> {
        let p256dh = decode_key("p256dh", p256dh)?;
        let p256dh: [u8; 65] = p256dh
            .try_into()
            .map_err(|v: Vec<u8>| SubscriptionError::Key {
                key: "p256dh",
                reason: format!("is {} bytes; an uncompressed P-256 key is 65", v.len()),
            })?;
        if p256dh[0] != 0x04 {
            return Err(SubscriptionError::Key {
                key: "p256dh",
                reason: "is not an uncompressed P-256 point (it must start with 0x04)".into(),
            });
        }
        let auth = decode_key("auth", auth)?;
        let auth: [u8; 16] = auth
            .try_into()
            .map_err(|v: Vec<u8>| SubscriptionError::Key {
                key: "auth",
                reason: format!("is {} bytes; the secret is 16", v.len()),
            })?;
        Ok(PushKeys { p256dh, auth })
    }

    /// The public key, uncompressed (65 bytes).
    pub fn p256dh(&self) -> &[u8; 65] {
        &self.p256dh
    }

    /// The authentication secret (16 bytes).
    pub fn auth(&self) -> &[u8; 16] {
        &self.auth
    }

    /// The public key as unpadded base64url (the stored form).
    pub fn p256dh_text(&self) -> String {
        Base64UrlUnpadded::encode_string(&self.p256dh)
    }

    /// The secret as unpadded base64url (the stored form).
    pub fn auth_text(&self) -> String {
        Base64UrlUnpadded::encode_string(&self.auth)
    }
}

/// Decodes base64url with or without `=` padding.
fn decode_key(key: &'static str, text: &str) -> Result<Vec<u8>, SubscriptionError> {
    Base64UrlUnpadded::decode_vec(text.trim_end_matches('=')).map_err(|_| SubscriptionError::Key {
        key,
        reason: "is not base64url".into(),
    })
}

/// `PushSubscription.toJSON()` as the browser sends it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SubscriptionJson {
    endpoint: String,
    #[serde(rename = "expirationTime", default)]
    expiration_time: Option<f64>,
    keys: KeysJson,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeysJson {
    p256dh: String,
    auth: String,
}

/// A subscription as a device asks for it: where to push and how to encrypt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSubscription {
    /// The push service's URL for this browser.
    pub endpoint: PushEndpoint,
    /// When the browser said it stops working (`expirationTime`, milliseconds since the epoch,
    /// usually null).
    pub expires_at: Option<DateTime<Utc>>,
    /// The encryption keys.
    pub keys: PushKeys,
}

impl NewSubscription {
    /// Parses `PushSubscription.toJSON()`: `{"endpoint", "expirationTime", "keys": {"p256dh",
    /// "auth"}}`, at `now` (an `expirationTime` already past is refused).
    ///
    /// # Errors
    /// [`SubscriptionError`] naming the field and the rule.
    pub fn parse(
        json: &serde_json::Value,
        now: DateTime<Utc>,
    ) -> Result<NewSubscription, SubscriptionError> {
        let raw: SubscriptionJson = serde_json::from_value(json.clone())
            .map_err(|e| SubscriptionError::Shape(e.to_string()))?;
        let expires_at = match raw.expiration_time {
            None => None,
            Some(ms) if ms.is_finite() && ms >= 0.0 => {
                let at = DateTime::from_timestamp_millis(ms as i64).ok_or_else(|| {
                    SubscriptionError::Shape("expirationTime is out of range".into())
                })?;
                if at <= now {
                    return Err(SubscriptionError::Shape(
                        "expirationTime has already passed: the browser must subscribe anew".into(),
                    ));
                }
                Some(at)
            }
            Some(_) => {
                return Err(SubscriptionError::Shape(
                    "expirationTime must be null or milliseconds since 1970".into(),
                ))
            }
        };
        Ok(NewSubscription {
            endpoint: PushEndpoint::parse(&raw.endpoint)?,
            expires_at,
            keys: PushKeys::parse(&raw.keys.p256dh, &raw.keys.auth)?,
        })
    }
}

/// A stored subscription, as `GET /api/push/subscriptions` shows it (the keys stay inside).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushSubscription {
    /// Its id.
    pub id: String,
    /// The device it belongs to (the only device that sees or removes it).
    pub device: String,
    /// The push service's URL.
    pub endpoint: PushEndpoint,
    /// When the browser said it stops working, if it did.
    pub expires_at: Option<DateTime<Utc>>,
    /// When it was added.
    pub created_at: DateTime<Utc>,
}

/// Which of a card's two pushes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PushKind {
    /// The card waits for the owner.
    #[serde(rename = "approval.requested")]
    Requested,
    /// The card was answered or lapsed.
    #[serde(rename = "approval.closed")]
    Closed,
}

impl PushKind {
    /// `requested` or `closed` (the stored form).
    pub fn as_str(self) -> &'static str {
        match self {
            PushKind::Requested => "requested",
            PushKind::Closed => "closed",
        }
    }

    /// Parses the stored form.
    pub fn parse(text: &str) -> Option<PushKind> {
        match text {
            "requested" => Some(PushKind::Requested),
            "closed" => Some(PushKind::Closed),
            _ => None,
        }
    }
}

/// What one push says (the JSON the service worker decrypts), and how it travels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushMessage {
    /// `approval.requested` or `approval.closed`.
    #[serde(rename = "type")]
    pub kind: PushKind,
    /// The card.
    pub approval_id: String,
    /// The card's title.
    pub title: String,
    /// The card's page, relative to the app (`/activity/{id}`).
    pub url: String,
    /// For [`PushKind::Closed`]: `approved`, `rejected` or `lapsed`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub outcome: Option<String>,
    /// For an `approved` closing that approved some of the card's items: `"3 of 5"` (shown as
    /// "Approved 3 of 5; 2 left out"). Counts only: the items themselves stay behind the
    /// device's credentials, like every item line.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub approved_share: Option<String>,
    /// Until when the push is worth delivering (RFC 8030 `TTL` counts down to it): the card's
    /// expiry for a waiting card, [`CLOSED_TTL_SECS`] after the closing for a closed one.
    #[serde(skip)]
    pub deliver_until: Option<DateTime<Utc>>,
}

impl PushMessage {
    /// The push an event asks for, if any: `approval.requested` → the card waits;
    /// `approval.responded` with a decided row whose call has not started, or
    /// `approval.lapsed` → the card closed. Other events push nothing: a pending row's, a
    /// resumed run's words, and the later `approval.responded` of an approved call's execution
    /// and undo (the decision's own event already closed the card; staging it again would cost
    /// every execution commit its statements for nothing). The text holds the card's title
    /// only: never its arguments or item lines, which stay behind the device's credentials.
    pub fn for_event(event: &Event, at: DateTime<Utc>) -> Option<PushMessage> {
        let (kind, row, outcome) = match event {
            Event::ApprovalRequested(row) => (PushKind::Requested, row, None),
            Event::ApprovalResponded(row) if row.execution != Execution::None => return None,
            Event::ApprovalResponded(row) | Event::ApprovalLapsed(row) => {
                let outcome = match row.status {
                    ApprovalStatus::Pending => return None,
                    ApprovalStatus::Approved => "approved",
                    ApprovalStatus::Rejected => "rejected",
                    ApprovalStatus::Expired => "lapsed",
                };
                (PushKind::Closed, row, Some(outcome.to_owned()))
            }
            Event::RunMessage(_) => return None,
        };
        let deliver_until = match kind {
            PushKind::Requested => row.expires_at,
            PushKind::Closed => at + chrono::Duration::seconds(CLOSED_TTL_SECS),
        };
        Some(PushMessage {
            kind,
            approval_id: row.id.clone(),
            title: row.card.title.clone(),
            url: card_url(row),
            approved_share: outcome
                .as_ref()
                .and_then(|_| row.approved_share())
                .map(|(kept, of)| format!("{kept} of {of}")),
            outcome,
            deliver_until: Some(deliver_until),
        })
    }

    /// The RFC 8030 `Topic`: the approval id's hex digits (a UUID's 32; RFC 8030 allows at most
    /// 32 URL-safe characters), the same for both pushes of a card so the second replaces the
    /// first while undelivered.
    pub fn topic(&self) -> String {
        topic_of(&self.approval_id)
    }

    /// The RFC 8030 `Urgency`: `high` for a card that waits (the owner should see it now),
    /// `normal` for its closing.
    pub fn urgency(&self) -> &'static str {
        match self.kind {
            PushKind::Requested => "high",
            PushKind::Closed => "normal",
        }
    }

    /// The RFC 8030 `TTL` at `now`, in seconds: what is left until
    /// [`deliver_until`](PushMessage::deliver_until), never below zero.
    pub fn ttl_secs(&self, now: DateTime<Utc>) -> i64 {
        self.deliver_until
            .map(|until| (until - now).num_seconds().max(0))
            .unwrap_or(0)
    }

    /// The JSON the service worker decrypts.
    pub fn payload(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The topic of an approval id: its ASCII alphanumerics, at most 32 (a UUID's hex digits).
pub fn topic_of(approval_id: &str) -> String {
    approval_id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(32)
        .collect()
}

/// A card's page in the app.
fn card_url(row: &Approval) -> String {
    format!("/activity/{}", row.id)
}

/// How long to wait before attempt `attempt + 1` of a push after `attempt` failed (1-based):
/// 5 s, 10 s, 20 s … doubling, at most 10 minutes. A push service's `Retry-After` wins when
/// longer.
pub fn retry_delay(attempt: u32, retry_after_secs: Option<u64>) -> std::time::Duration {
    let doubled = 5u64.saturating_mul(1u64 << attempt.saturating_sub(1).min(16));
    let secs = doubled
        .min(600)
        .max(retry_after_secs.unwrap_or(0).min(3600));
    std::time::Duration::from_secs(secs)
}

#[cfg(test)]
mod tests;
