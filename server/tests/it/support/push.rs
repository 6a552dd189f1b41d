//! A push service on loopback (RFC 8030) that checks what a real one checks and keeps what it
//! received: the VAPID token (RFC 8292: ES256, signed by the key the server publishes, `aud` the
//! endpoint's origin, `exp` within 24 hours, a `sub`), the headers (`TTL`, `Urgency`, `Topic`,
//! `Content-Encoding: aes128gcm`), and the payload, decrypted (RFC 8291) with the keys of the
//! browser it plays. Each endpoint answers as told: 201, 410, or 500 a number of times first.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use base64ct::{Base64UrlUnpadded, Encoding};
use jwt_simple::prelude::{
    ECDSAP256PublicKeyLike, ES256PublicKey, NoCustomClaims, VerificationOptions,
};
use serde_json::{json, Value};
use web_push_native::p256::elliptic_curve::sec1::ToEncodedPoint;
use web_push_native::p256::SecretKey;

/// One browser the service pushes to: its keys (the private half stays here).
#[derive(Clone)]
pub struct Browser {
    secret: SecretKey,
    auth: [u8; 16],
    /// Its endpoint on this service.
    pub endpoint: String,
}

impl Browser {
    /// `PushSubscription.toJSON()` of this browser.
    pub fn subscription(&self) -> Value {
        let public = self.secret.public_key().to_encoded_point(false);
        json!({
            "endpoint": self.endpoint,
            "expirationTime": null,
            "keys": {
                "p256dh": Base64UrlUnpadded::encode_string(public.as_bytes()),
                "auth": Base64UrlUnpadded::encode_string(&self.auth),
            }
        })
    }
}

/// One push as received.
#[derive(Debug, Clone)]
pub struct Received {
    /// The endpoint's name.
    pub name: String,
    /// The decrypted payload, or why it did not decrypt or verify.
    pub payload: Result<Value, String>,
    /// `TTL`, in seconds.
    pub ttl: i64,
    /// `Urgency`.
    pub urgency: String,
    /// `Topic`.
    pub topic: String,
    /// The status answered.
    pub answered: u16,
}

#[derive(Default)]
struct Service {
    /// Per endpoint: pushes wait here before they are answered, until released.
    holds: HashMap<String, Arc<tokio::sync::Semaphore>>,
    /// Per endpoint: how many pushes arrived (answered or still held).
    arrived: HashMap<String, usize>,
    browsers: HashMap<String, Browser>,
    /// Per endpoint: how many 500s before 201s, or 410 for good.
    failures: HashMap<String, u32>,
    gone: std::collections::HashSet<String>,
    received: Vec<Received>,
    /// The server's public key (`GET /api/push/key`), once known.
    vapid_key: Option<String>,
}

/// The fake push service.
#[derive(Clone)]
pub struct PushService {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    state: Arc<Mutex<Service>>,
}

async fn push(
    State((url, state)): State<(String, Arc<Mutex<Service>>)>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let hold = {
        let mut service = state.lock().unwrap();
        *service.arrived.entry(name.clone()).or_default() += 1;
        service.holds.get(&name).cloned()
    };
    if let Some(hold) = hold {
        hold.acquire().await.unwrap().forget();
    }
    let mut service = state.lock().unwrap();
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let checked = (|| -> Result<Value, String> {
        let browser = service
            .browsers
            .get(&name)
            .ok_or_else(|| format!("no browser `{name}`"))?;
        if header("Content-Encoding") != "aes128gcm" {
            return Err(format!("Content-Encoding `{}`", header("Content-Encoding")));
        }
        let authorization = header("Authorization");
        let rest = authorization
            .strip_prefix("vapid ")
            .ok_or("Authorization is not `vapid`")?;
        let mut token = "";
        let mut key = "";
        for part in rest.split(',') {
            let part = part.trim();
            if let Some(t) = part.strip_prefix("t=") {
                token = t;
            } else if let Some(k) = part.strip_prefix("k=") {
                key = k;
            }
        }
        match &service.vapid_key {
            Some(published) if published == key => {}
            other => return Err(format!("k={key} is not the published key {other:?}")),
        }
        let public = ES256PublicKey::from_bytes(
            &Base64UrlUnpadded::decode_vec(key).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
        let options = VerificationOptions {
            allowed_audiences: Some(std::collections::HashSet::from([url.clone()])),
            ..Default::default()
        };
        let claims = public
            .verify_token::<NoCustomClaims>(token, Some(options))
            .map_err(|e| format!("the VAPID token does not verify: {e}"))?;
        let expires = claims.expires_at.ok_or("no exp")?.as_secs();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        if expires > now + 24 * 3600 {
            return Err(format!("exp is {} s away (more than 24 h)", expires - now));
        }
        if claims.subject.as_deref().unwrap_or_default().is_empty() {
            return Err("no sub".into());
        }
        let auth = web_push_native::Auth::clone_from_slice(&browser.auth);
        let plain = web_push_native::decrypt(body.to_vec(), &browser.secret, &auth)
            .map_err(|e| format!("does not decrypt: {e}"))?;
        serde_json::from_slice(&plain).map_err(|e| e.to_string())
    })();
    let answered = if service.gone.contains(&name) {
        StatusCode::GONE
    } else if checked.is_err() {
        StatusCode::BAD_REQUEST
    } else if let Some(left) = service.failures.get_mut(&name).filter(|n| **n > 0) {
        *left -= 1;
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::CREATED
    };
    service.received.push(Received {
        name,
        payload: checked,
        ttl: header("TTL").parse().unwrap_or(-1),
        urgency: header("Urgency"),
        topic: header("Topic"),
        answered: answered.as_u16(),
    });
    answered
}

impl PushService {
    /// Starts the service on a free loopback port.
    pub async fn start() -> PushService {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(Service::default()));
        let app = Router::new()
            .route("/push/{name}", post(push))
            .with_state((url.clone(), state.clone()));
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        PushService { url, state }
    }

    /// The server's VAPID public key, which every token must be signed with.
    pub fn expect_key(&self, key: &str) {
        self.state.lock().unwrap().vapid_key = Some(key.to_owned());
    }

    /// A new browser with fresh keys and the endpoint `/push/NAME`.
    pub fn browser(&self, name: &str) -> Browser {
        // A browser's key pair and secret, random like a real one's.
        let pair = jwt_simple::prelude::ES256KeyPair::generate();
        let browser = Browser {
            secret: SecretKey::from_slice(&pair.to_bytes()).unwrap(),
            auth: *uuid::Uuid::new_v4().as_bytes(),
            endpoint: format!("{}/push/{name}", self.url),
        };
        self.state
            .lock()
            .unwrap()
            .browsers
            .insert(name.to_owned(), browser.clone());
        browser
    }

    /// `NAME` answers 500 to its next `n` pushes, then 201.
    pub fn fail_next(&self, name: &str, n: u32) {
        self.state
            .lock()
            .unwrap()
            .failures
            .insert(name.to_owned(), n);
    }

    /// Pushes to `NAME` wait, unanswered, until [`PushService::release`].
    pub fn hold(&self, name: &str) {
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        self.state
            .lock()
            .unwrap()
            .holds
            .insert(name.to_owned(), gate);
    }

    /// Answers one push held for `NAME`, and lets later ones through.
    pub fn release(&self, name: &str) {
        if let Some(gate) = self.state.lock().unwrap().holds.remove(name) {
            gate.add_permits(1);
        }
    }

    /// How many pushes reached `NAME`, answered or held.
    pub fn arrived(&self, name: &str) -> usize {
        self.state
            .lock()
            .unwrap()
            .arrived
            .get(name)
            .copied()
            .unwrap_or(0)
    }

    /// `NAME` answers 410 from now on (the browser unsubscribed).
    pub fn gone(&self, name: &str) {
        self.state.lock().unwrap().gone.insert(name.to_owned());
    }

    /// Everything received so far, in order.
    pub fn received(&self) -> Vec<Received> {
        self.state.lock().unwrap().received.clone()
    }

    /// The decrypted payloads `NAME` took (201) about approval `id`.
    pub fn delivered(&self, name: &str, id: &str) -> Vec<Value> {
        self.received()
            .into_iter()
            .filter(|r| r.name == name && r.answered == 201)
            .filter_map(|r| r.payload.ok())
            .filter(|p| p["approval_id"] == id)
            .collect()
    }
}
