//! The IMAP backend: an account on a real IMAP server (DESIGN §5; tested against Dovecot on
//! loopback, `tests/imap_*.rs`).
//!
//! - **Keys.** A message's provider key is `"UIDVALIDITY:UID"`; its location is the same string
//!   (a hint). A key of another validity than the folder's current one names nothing.
//! - **Folders.** `LIST "" "*"` with the RFC 6154 special-use attributes (`\Trash`, `\Sent`,
//!   `\Drafts`, `\Junk`, `\Archive`); `INBOX` is the inbox. Without a `\Trash` (or `\Sent`)
//!   folder, one named `Trash` (`Sent`) takes the role, created when missing.
//! - **Reading** is `UID FETCH … BODY.PEEK[]`, which never sets `\Seen`, in batches.
//! - **Trash** is `UID MOVE` into Trash; async-imap does not return the new UID, so the message
//!   is found in Trash by its Message-ID (or, without one, by the UIDs the move took). **Nothing
//!   is ever expunged that was not copied first**: without MOVE, a server with UIDPLUS gets
//!   `UID COPY`, then `\Deleted` and `UID EXPUNGE` of exactly that UID, only after the copy
//!   succeeded; a server with neither is refused.
//! - **Restore** moves the message back to its original folder, found in Trash by the stored
//!   UID when it still holds the same Message-ID, else by Message-ID; it gets a new key there.
//! - **Labels** are always empty: IMAP servers such as Dovecot report no provider buckets.
//! - **Connection.** Plain TCP only to a loopback host (the tests' Dovecot); a non-loopback host
//!   needs implicit TLS on port 993 (rustls with the webpki roots). A plain connection to any
//!   other host is refused before anything is sent: a password never crosses a network in
//!   clear. The password is read from the environment variable the settings name, at each
//!   login.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::{Mutex, MutexGuard};

use super::{
    AccountInfo, Appended, BackendError, Folder, FolderRole, FolderStatus, Listed, MailBackend,
    MessageRef, RestoreOutcome, TrashOutcome, TrashedRef,
};

/// How long connecting, greeting and logging in may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
/// How long one backend call's IMAP exchange may take before the session is dropped.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the liveness check of a kept session may take.
const NOOP_TIMEOUT: Duration = Duration::from_secs(10);
/// UIDs per `UID FETCH` (one round trip per batch, bounded memory per response).
const FETCH_BATCH: usize = 50;
/// The implicit-TLS IMAP port (RFC 8314).
const IMAPS_PORT: u16 = 993;

/// Where and as whom to log in (`kind = "imap"` in `iris.toml`, DESIGN §7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImapSettings {
    /// The server's host name or address.
    pub host: String,
    /// Its port: 993 (implicit TLS) for any non-loopback host; loopback may use plain 143 or any.
    pub port: u16,
    /// The login name.
    pub user: String,
    /// The environment variable holding the password (read at each login, never stored).
    pub password_env: String,
}

/// How the connection is protected; chosen from the host and port alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    /// Plain TCP: loopback only.
    Plain,
    /// Implicit TLS (port 993).
    Tls,
}

/// Whether `host` is this machine (an address that is loopback, or `localhost`).
fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<IpAddr>()
            .map(|ip| ip.is_loopback())
            .unwrap_or(false)
}

/// The transport for a host and port; refuses a plain connection to a non-loopback host.
fn transport_for(host: &str, port: u16) -> Result<Transport, BackendError> {
    if port == IMAPS_PORT {
        Ok(Transport::Tls)
    } else if is_loopback(host) {
        Ok(Transport::Plain)
    } else {
        Err(BackendError::Refused(format!(
            "IMAP host `{host}` port {port}: a non-loopback host needs implicit TLS on port \
             {IMAPS_PORT} (plain IMAP would send the password in clear; STARTTLS is not \
             supported)"
        )))
    }
}

/// The byte stream under a session: plain TCP or TLS over TCP.
trait ImapIo: AsyncRead + AsyncWrite + Unpin + Send + std::fmt::Debug {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + std::fmt::Debug> ImapIo for T {}

type ImapSession = async_imap::Session<Box<dyn ImapIo>>;

/// One logged-in session and what its server can do.
struct Conn {
    session: ImapSession,
    /// RFC 6851 MOVE.
    can_move: bool,
    /// RFC 4315 UIDPLUS (`UID EXPUNGE` of one UID).
    uidplus: bool,
    /// Set when a command failed in a way that leaves the session's state unknown.
    broken: bool,
    /// Set before the first command of a call that changes the mailbox (MOVE, COPY, STORE,
    /// EXPUNGE, APPEND, CREATE): from then on a failed call is never run again.
    mutated: bool,
}

/// An account on an IMAP server.
///
/// One session is kept behind a mutex and reused: a login per call would cost a round trip and
/// an authentication each time, and the plugin already serialises sync, trash and restore, so
/// one session is never a bottleneck. A kept session is checked with `NOOP` before each call and
/// reopened when the server dropped it; a call that fails in the middle drops the session (its
/// state is unknown) and the next call opens a new one. Nothing that moves mail is retried.
pub struct ImapBackend {
    info: AccountInfo,
    settings: ImapSettings,
    transport: Transport,
    conn: Mutex<Option<Conn>>,
}

impl std::fmt::Debug for ImapBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImapBackend")
            .field("account", &self.info.name)
            .field("host", &self.settings.host)
            .field("port", &self.settings.port)
            .field("user", &self.settings.user)
            .finish_non_exhaustive()
    }
}

fn imap_err(op: impl Into<String>, e: impl std::fmt::Display) -> BackendError {
    BackendError::Imap {
        op: op.into(),
        reason: e.to_string(),
    }
}

/// An async-imap error: NO/BAD (the server refused this one command; the session stays usable)
/// becomes [`BackendError::ImapRefused`], anything else [`BackendError::Imap`].
fn cmd_err(op: impl Into<String>, e: async_imap::error::Error) -> BackendError {
    match e {
        async_imap::error::Error::No(reason) | async_imap::error::Error::Bad(reason) => {
            BackendError::ImapRefused {
                op: op.into(),
                reason,
            }
        }
        other => imap_err(op, other),
    }
}

/// `"UIDVALIDITY:UID"`.
fn key_of(validity: u32, uid: u32) -> String {
    format!("{validity}:{uid}")
}

/// Parses `"UIDVALIDITY:UID"`.
fn parse_key(key: &str) -> Option<(u32, u32)> {
    let (v, u) = key.split_once(':')?;
    Some((v.parse().ok()?, u.parse().ok()?))
}

/// Whether an error is the server answering NO/BAD to one command (the session stays usable),
/// as opposed to the connection failing.
fn is_command_refusal(e: &async_imap::error::Error) -> bool {
    matches!(
        e,
        async_imap::error::Error::No(_) | async_imap::error::Error::Bad(_)
    )
}

/// The IMAP quoted string for a search value; `None` when it cannot be quoted safely (control
/// characters or non-ASCII: such a Message-ID is not searched for).
fn quoted(s: &str) -> Option<String> {
    if s.bytes().any(|b| !(0x20..0x7f).contains(&b)) {
        return None;
    }
    Some(format!(
        "\"{}\"",
        s.replace('\\', "\\\\").replace('"', "\\\"")
    ))
}

/// The Message-ID (without brackets) in raw header bytes.
fn message_id_of(raw: &[u8]) -> Option<String> {
    crate::parse::parse_message(raw).message_id
}

impl ImapBackend {
    /// An IMAP account; does not connect (the first call does).
    ///
    /// # Errors
    /// [`BackendError::Refused`] when the host is not loopback and the port is not 993 (plain
    /// text to a network host), or when the password variable is unset or empty (named).
    pub fn open(info: AccountInfo, settings: ImapSettings) -> Result<Self, BackendError> {
        let transport = transport_for(&settings.host, settings.port)?;
        password(&settings)?;
        Ok(ImapBackend {
            info,
            settings,
            transport,
            conn: Mutex::new(None),
        })
    }

    /// Opens and logs in a new session.
    async fn connect(&self) -> Result<Conn, BackendError> {
        let s = &self.settings;
        let password = password(s)?;
        let op = format!("connect to {}:{}", s.host, s.port);
        let connecting = async {
            let tcp = TcpStream::connect((s.host.as_str(), s.port))
                .await
                .map_err(|e| imap_err(&op, e))?;
            let stream: Box<dyn ImapIo> = match self.transport {
                Transport::Plain => Box::new(tcp),
                Transport::Tls => Box::new(tls_connect(&s.host, tcp).await.map_err(|e| {
                    imap_err(format!("TLS handshake with {}:{}", s.host, s.port), e)
                })?),
            };
            let mut client = async_imap::Client::new(stream);
            match client.read_response().await {
                Ok(Some(_greeting)) => {}
                Ok(None) => return Err(imap_err(&op, "the server closed before its greeting")),
                Err(e) => return Err(imap_err(&op, e)),
            }
            let mut session = client.login(&s.user, &password).await.map_err(|(e, _)| {
                imap_err(format!("LOGIN as `{}` at {}:{}", s.user, s.host, s.port), e)
            })?;
            let caps = session
                .capabilities()
                .await
                .map_err(|e| cmd_err("CAPABILITY", e))?;
            Ok(Conn {
                can_move: caps.has_str("MOVE"),
                uidplus: caps.has_str("UIDPLUS"),
                session,
                broken: false,
                mutated: false,
            })
        };
        match tokio::time::timeout(CONNECT_TIMEOUT, connecting).await {
            Ok(r) => r,
            Err(_) => Err(imap_err(
                &op,
                format!("no login within {}s", CONNECT_TIMEOUT.as_secs()),
            )),
        }
    }

    /// The session, checked alive (NOOP) or newly opened.
    async fn conn(&self) -> Result<MutexGuard<'_, Option<Conn>>, BackendError> {
        let mut guard = self.conn.lock().await;
        if let Some(c) = guard.as_mut() {
            let alive = matches!(
                tokio::time::timeout(NOOP_TIMEOUT, c.session.noop()).await,
                Ok(Ok(()))
            );
            if !alive {
                tracing::info!(
                    account = self.info.name,
                    "IMAP session dropped; reconnecting"
                );
                *guard = None;
            }
        }
        if guard.is_none() {
            *guard = Some(self.connect().await?);
        }
        Ok(guard)
    }
}

/// Runs `$body` (a future giving `Result<T, BackendError>`, using `$c: &mut Conn`) on the
/// account's session within [`CALL_TIMEOUT`]; any failure or a `broken` mark drops the session.
///
/// A call that failed on the connection (not a NO/BAD) before it changed anything is run once
/// more on a fresh session: servers drop sessions (idle logout, a mailbox rebuilt under them)
/// and reading again is harmless. A call that had started changing the mailbox is never re-run
/// (fail closed: whether the change happened is unknown).
macro_rules! with_conn {
    ($self:expr, $what:expr, |$c:ident| $body:expr) => {{
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut guard = $self.conn().await?;
            let (result, mutated) = match guard.as_mut() {
                Some($c) => {
                    $c.mutated = false;
                    let r = match tokio::time::timeout(CALL_TIMEOUT, $body).await {
                        Ok(r) => r,
                        Err(_) => Err(imap_err(
                            $what,
                            format!("no answer within {}s", CALL_TIMEOUT.as_secs()),
                        )),
                    };
                    (r, $c.mutated)
                }
                None => (Err(imap_err($what, "no session")), false),
            };
            if result.is_err() || guard.as_ref().is_some_and(|c| c.broken) {
                *guard = None;
            }
            match &result {
                Err(e) if attempt == 1 && !mutated && !item_error_is_local(e) => {
                    tracing::info!(account = $self.info.name, error = %e, "IMAP call failed before changing anything; retrying once on a new session");
                    continue;
                }
                _ => break result,
            }
        }
    }};
}

fn password(s: &ImapSettings) -> Result<String, BackendError> {
    match std::env::var(&s.password_env) {
        Ok(p) if !p.is_empty() => Ok(p),
        _ => Err(BackendError::Refused(format!(
            "IMAP login `{}` at {}: the password variable `{}` is not set (or empty) in the \
             environment",
            s.user, s.host, s.password_env
        ))),
    }
}

async fn tls_connect(
    host: &str,
    tcp: TcpStream,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, String> {
    use tokio_rustls::rustls;
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    // An explicit provider: the server binary links two rustls providers (ring and aws-lc via
    // other crates), and rustls refuses to guess between them.
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|e| format!("`{host}` is not a valid TLS server name: {e}"))?;
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())
}

mod commands;
mod moves;

use commands::*;
use moves::*;

#[async_trait]
impl MailBackend for ImapBackend {
    fn account(&self) -> &AccountInfo {
        &self.info
    }

    async fn folders(&self) -> Result<Vec<Folder>, BackendError> {
        with_conn!(self, "LIST", |c| list_folders(c))
    }

    async fn list(&self, folder: &str) -> Result<Vec<Listed>, BackendError> {
        with_conn!(self, format!("list `{folder}`"), |c| async {
            let validity = open_folder(c, folder, false).await?;
            let uids = uid_search(c, "ALL").await?;
            Ok(uids
                .into_iter()
                .map(|u| {
                    let key = key_of(validity, u);
                    Listed {
                        location: key.clone(),
                        key,
                        labels: Vec::new(),
                    }
                })
                .collect())
        })
    }

    async fn read(&self, msg: &MessageRef) -> Result<Option<Vec<u8>>, BackendError> {
        let mut r = self.read_batch(std::slice::from_ref(msg)).await?;
        r.pop().unwrap_or(Ok(None))
    }

    async fn read_batch(
        &self,
        msgs: &[MessageRef],
    ) -> Result<Vec<Result<Option<Vec<u8>>, BackendError>>, BackendError> {
        with_conn!(self, "read", |c| async {
            let mut out: Vec<Option<Result<Option<Vec<u8>>, BackendError>>> =
                (0..msgs.len()).map(|_| None).collect();
            // Group by folder, keeping positions.
            let mut folders: Vec<&str> = Vec::new();
            for m in msgs {
                if !folders.contains(&m.folder.as_str()) {
                    folders.push(&m.folder);
                }
            }
            for folder in folders {
                let validity = match open_folder(c, folder, false).await {
                    Ok(v) => v,
                    Err(BackendError::NoSuchFolder(_)) => continue, // all gone: None below
                    Err(e) => return Err(e),
                };
                let wanted: Vec<(usize, u32)> = msgs
                    .iter()
                    .enumerate()
                    .filter(|(_, m)| m.folder == folder)
                    .filter_map(|(i, m)| match parse_key(&m.key) {
                        Some((v, u)) if v == validity => Some((i, u)),
                        _ => None,
                    })
                    .collect();
                for chunk in wanted.chunks(FETCH_BATCH) {
                    let set = chunk
                        .iter()
                        .map(|(_, u)| u.to_string())
                        .collect::<Vec<_>>()
                        .join(",");
                    let fetched = uid_fetch(c, &set, "(UID BODY.PEEK[])").await?;
                    for (i, u) in chunk {
                        let body = fetched
                            .iter()
                            .find(|f| f.uid == Some(*u))
                            .and_then(|f| f.body().map(<[u8]>::to_vec));
                        out[*i] = Some(Ok(body));
                    }
                }
            }
            Ok(out.into_iter().map(|o| o.unwrap_or(Ok(None))).collect())
        })
    }

    async fn folder_status(&self, folder: &str) -> Result<Option<FolderStatus>, BackendError> {
        with_conn!(self, format!("STATUS `{folder}`"), |c| async {
            status(c, folder).await.map(Some)
        })
    }

    async fn trash(&self, msgs: &[MessageRef]) -> Result<Vec<TrashOutcome>, BackendError> {
        with_conn!(self, "trash", |c| async {
            let trash = folder_of_role(c, FolderRole::Trash, "Trash").await?;
            let mut out = Vec::with_capacity(msgs.len());
            let mut stop: Option<String> = None;
            for m in msgs {
                if let Some(why) = &stop {
                    out.push(TrashOutcome::Failed {
                        reason: format!("not attempted: {why}"),
                    });
                    continue;
                }
                if m.folder == trash {
                    out.push(TrashOutcome::Failed {
                        reason: format!("`{}` is already in `{trash}`", m.key),
                    });
                    continue;
                }
                let outcome = match open_folder(c, &m.folder, true).await {
                    Ok(validity) => trash_one(c, m, validity, &trash).await,
                    Err(BackendError::NoSuchFolder(_)) => Ok(TrashOutcome::Missing),
                    Err(e) => Err(e),
                };
                match outcome {
                    Ok(o) => out.push(o),
                    Err(e) => {
                        if !item_error_is_local(&e) {
                            stop = Some(format!(
                                "the IMAP session failed on an earlier message ({e})"
                            ));
                            c.broken = true;
                        }
                        out.push(TrashOutcome::Failed {
                            reason: format!("`{}` in `{}`: {e}", m.key, m.folder),
                        });
                    }
                }
            }
            Ok(out)
        })
    }

    async fn restore(&self, msgs: &[TrashedRef]) -> Result<Vec<RestoreOutcome>, BackendError> {
        with_conn!(self, "restore", |c| async {
            let trash = folder_of_role(c, FolderRole::Trash, "Trash").await?;
            let mut out = Vec::with_capacity(msgs.len());
            let mut stop: Option<String> = None;
            for m in msgs {
                if let Some(why) = &stop {
                    out.push(RestoreOutcome::Failed {
                        reason: format!("not attempted: {why}"),
                    });
                    continue;
                }
                match restore_one(c, m, &trash).await {
                    Ok(o) => out.push(o),
                    Err(e) => {
                        if !item_error_is_local(&e) {
                            stop = Some(format!(
                                "the IMAP session failed on an earlier message ({e})"
                            ));
                            c.broken = true;
                        }
                        out.push(RestoreOutcome::Failed {
                            reason: format!("`{}` back to `{}`: {e}", m.key, m.original_folder),
                        });
                    }
                }
            }
            Ok(out)
        })
    }

    async fn append_sent(&self, raw: &[u8]) -> Result<Appended, BackendError> {
        with_conn!(self, "APPEND to Sent", |c| async {
            let sent = folder_of_role(c, FolderRole::Sent, "Sent").await?;
            let next = status(c, &sent).await?.next;
            c.mutated = true;
            c.session
                .append(&sent, Some("(\\Seen)"), None, raw)
                .await
                .map_err(|e| cmd_err(format!("APPEND to `{sent}`"), e))?;
            let validity = open_folder(c, &sent, false).await?;
            let next = u32::try_from(next).unwrap_or(u32::MAX);
            let message_id = message_id_of(raw);
            let uid = locate_moved(c, next, message_id.as_deref())
                .await?
                .ok_or_else(|| {
                    imap_err(
                        format!("APPEND to `{sent}`"),
                        "stored, but the copy could not be found by Message-ID or UID",
                    )
                })?;
            let key = key_of(validity, uid);
            Ok(Appended {
                folder: sent.clone(),
                listed: Listed {
                    location: key.clone(),
                    key,
                    labels: Vec::new(),
                },
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_only_to_loopback() {
        assert_eq!(transport_for("127.0.0.1", 143).unwrap(), Transport::Plain);
        assert_eq!(transport_for("::1", 10143).unwrap(), Transport::Plain);
        assert_eq!(transport_for("[::1]", 10143).unwrap(), Transport::Plain);
        assert_eq!(transport_for("localhost", 143).unwrap(), Transport::Plain);
        assert_eq!(
            transport_for("imap.example.org", 993).unwrap(),
            Transport::Tls
        );
        assert_eq!(transport_for("127.0.0.1", 993).unwrap(), Transport::Tls);
        let err = transport_for("imap.example.org", 143)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("imap.example.org") && err.contains("993"),
            "{err}"
        );
        assert!(transport_for("10.0.0.1", 143).is_err());
        assert!(transport_for("127.0.0.1.example.org", 143).is_err());
    }

    #[test]
    fn missing_password_variable_is_named() {
        let settings = ImapSettings {
            host: "127.0.0.1".into(),
            port: 143,
            user: "owner".into(),
            password_env: "IRIS_TEST_SURELY_UNSET_PASSWORD_VAR".into(),
        };
        let info = AccountInfo {
            name: "personal".into(),
            address: "owner@example.org".into(),
        };
        let err = ImapBackend::open(info, settings).unwrap_err().to_string();
        assert!(err.contains("IRIS_TEST_SURELY_UNSET_PASSWORD_VAR"), "{err}");
    }

    #[test]
    fn keys_and_quoting() {
        assert_eq!(parse_key(&key_of(17, 42)), Some((17, 42)));
        assert_eq!(parse_key("1700000000.M1P2.host"), None);
        assert_eq!(quoted("<a\"b@x>").as_deref(), Some("\"<a\\\"b@x>\""));
        assert_eq!(quoted("<a\r\n@x>"), None);
    }
}
