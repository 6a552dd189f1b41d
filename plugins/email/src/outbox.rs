//! Where `send_email` hands a built message: an SMTP server (`IRIS_SMTP_URL`, DESIGN §7) or, in
//! `iris serve --demo`, a local folder standing in for one (the demo outbox), so the demo works
//! without a mail server.
//!
//! Exactly one attempt per call: this module never retries. A send whose outcome the transport
//! cannot confirm (the connection dropped after DATA, a timeout) is reported as an error saying
//! the outcome is unknown, and the core's ledger records it as `unknown`; nothing sends it
//! again (DESIGN §8 "one pinned call executes at most once").

use std::path::{Path, PathBuf};
use std::time::Duration;

use lettre::{AsyncFileTransport, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

/// How long one SMTP conversation may take before it is abandoned (outcome then unknown).
pub const SMTP_TIMEOUT: Duration = Duration::from_secs(60);

/// Where sent mail goes.
#[derive(Clone)]
pub enum Outbox {
    /// A real SMTP server.
    Smtp {
        /// The transport built from the URL.
        transport: AsyncSmtpTransport<Tokio1Executor>,
        /// The URL without user information (safe to show).
        shown: String,
    },
    /// The demo outbox: each message is written as `<uuid>.eml` into this folder, not sent.
    Demo {
        /// The folder (created on first use).
        dir: PathBuf,
    },
}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outbox::Smtp { shown, .. } => f.debug_struct("Smtp").field("url", shown).finish(),
            Outbox::Demo { dir } => f.debug_struct("Demo").field("dir", dir).finish(),
        }
    }
}

/// Why an `IRIS_SMTP_URL` was refused.
#[derive(Debug, thiserror::Error)]
#[error("IRIS_SMTP_URL `{url}` is not a usable SMTP URL (smtp://host:port, smtp://host:port?tls=required, smtps://host:port): {reason}")]
pub struct OutboxUrlError {
    /// The URL, without user information.
    pub url: String,
    /// What is wrong.
    pub reason: String,
}

/// What the outbox did with one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// The SMTP server accepted it (2xx after DATA).
    Sent {
        /// The server's reply, e.g. "250 OK".
        reply: String,
    },
    /// Written to the demo outbox, not sent.
    SavedToDemoOutbox {
        /// The file written.
        file: PathBuf,
    },
}

/// Why a message did not (certainly) go out.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The server refused it (5xx, or a 4xx: a retry could work, but nothing retries here).
    #[error("the SMTP server refused the mail, so it was not sent: {0}")]
    Refused(String),
    /// No connection to the server could be made (refused, no such host): nothing was handed
    /// over, so it was certainly not sent.
    #[error("the SMTP server could not be reached ({0}), so the mail was not sent; it will not be sent again automatically")]
    Unreachable(String),
    /// Nobody can tell whether the server took it: the connection failed or dropped, or timed
    /// out. It may have been delivered; it is never sent again automatically.
    #[error("the outcome of the send is unknown (the SMTP conversation failed: {0}); the mail may or may not have been delivered, and it will not be sent again automatically")]
    Unknown(String),
    /// The demo outbox could not be written.
    #[error("the demo outbox `{dir}` could not be written, so nothing was saved: {reason}")]
    DemoOutbox {
        /// The folder.
        dir: PathBuf,
        /// The cause.
        reason: String,
    },
}

impl SendError {
    /// The tool's error for this send: a send whose outcome nobody knows (the connection
    /// dropped after DATA, a timeout) may have been delivered, so it is `interrupted` (the
    /// ledger's `unknown`, never sent again; docs/liveness.md "truthful records"); any other
    /// is a failure (nothing was sent).
    pub fn tool_error(self, tool: &str) -> iris_core::plugin::ToolError {
        match self {
            SendError::Unknown(_) => iris_core::plugin::ToolError::Interrupted {
                tool: tool.to_string(),
                reason: self.to_string(),
            },
            other => iris_core::plugin::ToolError::Failed {
                tool: tool.to_string(),
                reason: other.to_string(),
            },
        }
    }
}

/// Whether `error` says no connection was ever made (refused, unreachable): a send that never
/// reached a server cannot have delivered anything.
/// Where the demo outbox's messages are written before they are renamed into `dir`: the hidden
/// sibling `.NAME.staging` (outside `dir`, so a listing of the outbox sees only whole messages).
pub fn demo_staging_dir(dir: &Path) -> PathBuf {
    let name = dir
        .file_name()
        .map_or_else(|| "outbox".into(), |n| n.to_string_lossy().into_owned());
    dir.with_file_name(format!(".{name}.staging"))
}

fn never_connected(error: &lettre::transport::smtp::Error) -> bool {
    let mut source = std::error::Error::source(error);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionRefused
                    | std::io::ErrorKind::AddrNotAvailable
                    | std::io::ErrorKind::HostUnreachable
                    | std::io::ErrorKind::NetworkUnreachable
            );
        }
        source = e.source();
    }
    false
}

/// `url` without `user:password@`, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            format!("{}{}", &url[..scheme_end + 3], &url[at + 1..])
        }
        _ => url.to_string(),
    }
}

impl Outbox {
    /// An SMTP outbox from `IRIS_SMTP_URL`: `smtp://host:port` (plain, e.g. a loopback sink),
    /// `smtp://host:port?tls=required` (STARTTLS), `smtps://host:port` (implicit TLS, rustls),
    /// with optional `user:password@`. Nothing connects until the first send.
    ///
    /// # Errors
    /// [`OutboxUrlError`] for a URL lettre cannot use.
    pub fn smtp(url: &str) -> Result<Self, OutboxUrlError> {
        let shown = redact(url.trim());
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url.trim())
            .map_err(|e| OutboxUrlError {
                url: shown.clone(),
                reason: e.to_string(),
            })?
            .timeout(Some(SMTP_TIMEOUT))
            .build();
        Ok(Outbox::Smtp { transport, shown })
    }

    /// The demo outbox in `dir` (e.g. `data/demo-outbox/`): messages are saved, not sent.
    pub fn demo(dir: impl AsRef<Path>) -> Self {
        Outbox::Demo {
            dir: dir.as_ref().to_path_buf(),
        }
    }

    /// Whether this is the demo outbox (results then say "not sent").
    pub fn is_demo(&self) -> bool {
        matches!(self, Outbox::Demo { .. })
    }

    /// Hands `message` over once. Never retries.
    ///
    /// # Errors
    /// [`SendError`]: refused (not sent), unknown (maybe sent), or the demo folder failed.
    pub async fn send(&self, message: &Message) -> Result<Delivery, SendError> {
        match self {
            Outbox::Smtp { transport, .. } => match transport.send(message.clone()).await {
                Ok(reply) => Ok(Delivery::Sent {
                    reply: format!(
                        "{} {}",
                        reply.code(),
                        reply.message().collect::<Vec<_>>().join(" ")
                    ),
                }),
                Err(e) if e.is_permanent() || e.is_transient() => {
                    Err(SendError::Refused(e.to_string()))
                }
                Err(e) if never_connected(&e) => Err(SendError::Unreachable(e.to_string())),
                Err(e) => Err(SendError::Unknown(e.to_string())),
            },
            Outbox::Demo { dir } => {
                let failed = |reason: String| SendError::DemoOutbox {
                    dir: dir.clone(),
                    reason,
                };
                // Written whole beside the outbox, then renamed in (one step on one file
                // system): a server stopped mid-write leaves no empty or partial message in the
                // outbox, where the card's "look in your outbox" sends the owner.
                let staging = demo_staging_dir(dir);
                for folder in [dir, &staging] {
                    tokio::fs::create_dir_all(folder)
                        .await
                        .map_err(|e| failed(e.to_string()))?;
                }
                let id = AsyncFileTransport::<Tokio1Executor>::new(&staging)
                    .send(message.clone())
                    .await
                    .map_err(|e| failed(e.to_string()))?;
                let name = format!("{id}.eml");
                let file = dir.join(&name);
                tokio::fs::rename(staging.join(&name), &file)
                    .await
                    .map_err(|e| failed(e.to_string()))?;
                Ok(Delivery::SavedToDemoOutbox { file })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert!(Outbox::smtp("smtp://127.0.0.1:2525").is_ok());
        assert!(Outbox::smtp("smtps://mail.example.org:465").is_ok());
        let e = Outbox::smtp("http://user:secret@x").unwrap_err();
        assert!(!e.to_string().contains("secret"), "{e}");
        assert_eq!(redact("smtp://u:p@h:25"), "smtp://h:25");
    }
}
