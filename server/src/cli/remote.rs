//! The CLI's HTTP side (DESIGN §7): requests to a running server with `IRIS_URL` and
//! `IRIS_TOKEN` (sent as `Authorization: Bearer`, with `X-Iris-Surface: cli`), and every way a
//! command can fail, each with its own sentence and its own exit code ([`ExitCode`]), so a script
//! can tell "someone else already decided" from "expired" from "this device may only look".

use std::time::Duration;

use iris_core::wire::{Approval, ApprovalStatus, ErrorBody};
use reqwest::StatusCode;
use serde_json::Value;

use super::render::{answered_by, printable, when};

/// The server the CLI talks to when `IRIS_URL` is not set.
pub const DEFAULT_URL: &str = "http://127.0.0.1:3000";

/// How long the CLI waits to connect before it calls the server unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The exit status of `iris approvals …` and `iris chat` (documented in `iris approvals --help`
/// and the README; a script relies on these numbers, so they never change meaning).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// 0: done.
    Done = 0,
    /// 1: anything else (a 400 or 500 from the server, an answer that does not parse).
    Other = 1,
    /// 2: wrong usage: bad arguments (clap) or `IRIS_URL` not a URL. Nothing was sent.
    Usage = 2,
    /// 3: the server could not be reached at `IRIS_URL`. Nothing was decided by this command.
    Unreachable = 3,
    /// 4: unauthorized (401): `IRIS_TOKEN` is missing, unknown or revoked.
    Unauthorized = 4,
    /// 5: forbidden (403): the token's device has read scope and may only look.
    Forbidden = 5,
    /// 6: not found (404): no approval has this id.
    NotFound = 6,
    /// 7: already decided (409): someone answered first; the message says who, where and when.
    AlreadyDecided = 7,
    /// 8: expired (410): the approval lapsed unanswered; nothing ran and nothing will.
    Expired = 8,
    /// 9: not confirmed: the owner did not say yes at the prompt; nothing was sent.
    NotConfirmed = 9,
    /// 10: the card needs the owner's passkey (403 with the code `passkey_required`): approve it
    /// on the card in the web app; rejecting still works here.
    PasskeyRequired = 10,
}

/// The exit codes as `iris approvals --help` prints them (keep in step with [`ExitCode`] and
/// the README).
pub const EXIT_CODES_HELP: &str = "\
Exit codes (the same for `iris chat`):
  0  done
  1  any other failure (a 400 or 500 from the server, an answer that does not parse)
  2  wrong usage (nothing was sent)
  3  the server is unreachable at IRIS_URL (nothing was decided by this command)
  4  unauthorized (401): IRIS_TOKEN is missing, unknown or revoked
  5  forbidden (403): this device has read scope and may only look
  6  not found (404): no approval has this id
  7  already decided (409): someone answered first; the message says who, where and when
     (undo: already undone, or nothing to undo)
  8  expired (410): nobody answered in time; nothing ran and nothing will
     (undo: the card's undo window has closed; nothing was changed)
  9  not confirmed: you did not answer yes at the prompt (nothing was sent)
 10  this card needs your passkey: approve it on the card in the web app (the message gives
     its link); you can still reject it here (nothing was changed)

Environment: IRIS_URL (default http://127.0.0.1:3000) and IRIS_TOKEN (a device token from
`iris devices add`; a control device to approve or reject, any device to list and show).";

/// Why a command did not do what it was asked; [`Failure::exit_code`] and [`Failure::message`]
/// say it to the shell and to the person.
#[derive(Debug)]
pub enum Failure {
    /// Nothing was sent: the command cannot run as given.
    Usage(String),
    /// The request did not reach the server.
    Unreachable {
        /// The server's base URL.
        url: String,
        /// What the HTTP client said.
        cause: String,
    },
    /// The server answered with an error status.
    Refused {
        /// The HTTP status.
        status: StatusCode,
        /// The server's sentence (the `error` field, or the raw body).
        error: String,
        /// The row as it stands, for 409 and 410.
        approval: Option<Box<Approval>>,
        /// The body as sent, when it was JSON (printed for `--json`).
        body: Option<Value>,
        /// The base URL (for 401's message).
        url: String,
        /// The approval the request was about, if any (for 404's message).
        id: Option<String>,
    },
    /// The approval is decided or expired already (seen on the row before anything was sent).
    Settled(Box<Approval>),
    /// The owner did not confirm at the prompt.
    NotConfirmed,
    /// Anything else.
    Other(String),
}

impl Failure {
    /// The exit status for this failure.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Failure::Usage(_) => ExitCode::Usage,
            Failure::Unreachable { .. } => ExitCode::Unreachable,
            Failure::Refused { .. } if self.needs_passkey() => ExitCode::PasskeyRequired,
            Failure::Refused { status, .. } => match *status {
                StatusCode::UNAUTHORIZED => ExitCode::Unauthorized,
                StatusCode::FORBIDDEN => ExitCode::Forbidden,
                StatusCode::NOT_FOUND => ExitCode::NotFound,
                StatusCode::CONFLICT => ExitCode::AlreadyDecided,
                StatusCode::GONE => ExitCode::Expired,
                _ => ExitCode::Other,
            },
            // Pending here means past its expiry (the server lapses it on the next answer).
            Failure::Settled(row) => match row.status {
                ApprovalStatus::Approved | ApprovalStatus::Rejected => ExitCode::AlreadyDecided,
                ApprovalStatus::Expired | ApprovalStatus::Pending => ExitCode::Expired,
            },
            Failure::NotConfirmed => ExitCode::NotConfirmed,
            Failure::Other(_) => ExitCode::Other,
        }
    }

    /// What to tell the person (one or two sentences, naming the thing and the rule).
    pub fn message(&self) -> String {
        match self {
            Failure::Usage(text) | Failure::Other(text) => text.clone(),
            Failure::Unreachable { url, cause } => format!(
                "the IRIS server at {url} (IRIS_URL) cannot be reached: {cause}. Nothing was decided by this command."
            ),
            Failure::Settled(row) => settled_message(row),
            Failure::NotConfirmed => "Not approved: you did not answer yes. Nothing was sent.".into(),
            // The server's sentence names the card's page (its public address: passkeys work
            // only there).
            Failure::Refused { error, id, .. } if self.needs_passkey() => {
                let id = id.as_deref().map(printable).unwrap_or_default();
                format!(
                    "{}. You can still reject it here with `iris approvals reject {id}`.",
                    printable(error).trim_end_matches('.')
                )
            }
            Failure::Refused {
                status,
                error,
                approval,
                url,
                id,
                ..
            } => match (*status, approval) {
                (StatusCode::CONFLICT | StatusCode::GONE, Some(row)) => settled_message(row),
                (StatusCode::UNAUTHORIZED, _) => format!(
                    "the server at {url} did not accept IRIS_TOKEN ({}). Add a device with `iris devices add --name NAME --scope control` on the server and set IRIS_TOKEN to its token.",
                    printable(error)
                ),
                (StatusCode::FORBIDDEN, _) => format!(
                    "{}. This device can only view approvals; answer from a control device.",
                    printable(error).trim_end_matches('.')
                ),
                (StatusCode::NOT_FOUND, _) => match id {
                    Some(id) => format!(
                        "no approval has the id `{}` (see `iris approvals list`).",
                        printable(id)
                    ),
                    None => printable(error),
                },
                (status, _) => format!("the server answered {status}: {}", printable(error)),
            },
        }
    }

    /// Whether the server refused because the card needs the owner's passkey (a 403 whose
    /// body's `code` is `passkey_required`; a 403 without it means a read device).
    pub fn needs_passkey(&self) -> bool {
        matches!(self, Failure::Refused { status, body: Some(body), .. }
            if *status == StatusCode::FORBIDDEN
                && body["code"] == iris_core::wire::PASSKEY_REQUIRED)
    }

    /// The server's JSON error body, for `--json` (none when the server sent none).
    pub fn body(&self) -> Option<&Value> {
        match self {
            Failure::Refused { body, .. } => body.as_ref(),
            _ => None,
        }
    }
}

/// "Approval ID was already approved by laptop via cli at …; nothing was changed." or the
/// expired sentence, from the row as it stands.
fn settled_message(row: &Approval) -> String {
    match row.status {
        ApprovalStatus::Expired => format!(
            "approval {} expired at {} and can no longer be answered; nothing ran and nothing will.",
            row.id,
            when(row.expires_at)
        ),
        ApprovalStatus::Pending => format!(
            "approval {} is past its expiry ({}) and can no longer be approved; nothing ran.",
            row.id,
            when(row.expires_at)
        ),
        status => {
            let reason = row
                .reason
                .as_deref()
                .filter(|r| !r.is_empty())
                .map(|r| format!(" (reason: \u{201c}{}\u{201d})", printable(r)))
                .unwrap_or_default();
            format!(
                "approval {} was already {} {}{reason}; this answer changed nothing.",
                row.id,
                status.as_str(),
                answered_by(row)
            )
        }
    }
}

/// A connection to one server as one device.
pub struct Remote {
    /// Base URL without a trailing slash.
    pub base: String,
    token: String,
    http: reqwest::Client,
}

impl Remote {
    /// From `IRIS_URL` (default [`DEFAULT_URL`]) and `IRIS_TOKEN`.
    ///
    /// # Errors
    /// [`Failure::Refused`] with 401's exit code when `IRIS_TOKEN` is unset or empty (no
    /// request is sent); [`Failure::Usage`] when `IRIS_URL` is not an http(s) URL.
    pub fn from_env() -> Result<Remote, Failure> {
        let base = std::env::var("IRIS_URL")
            .ok()
            .filter(|u| !u.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_URL.into());
        let base = base.trim().trim_end_matches('/').to_string();
        if reqwest::Url::parse(&base)
            .map(|u| !matches!(u.scheme(), "http" | "https"))
            .unwrap_or(true)
        {
            return Err(Failure::Usage(format!(
                "IRIS_URL `{}` is not an http:// or https:// URL",
                printable(&base)
            )));
        }
        let token = std::env::var("IRIS_TOKEN")
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| Failure::Refused {
                status: StatusCode::UNAUTHORIZED,
                error: "IRIS_TOKEN is not set".into(),
                approval: None,
                body: None,
                url: base.clone(),
                id: None,
            })?;
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| Failure::Other(format!("starting the HTTP client: {e}")))?;
        Ok(Remote { base, token, http })
    }

    /// GET `path` (under the base URL); the JSON body. `id` names the approval for 404's message.
    pub async fn get(&self, path: &str, id: Option<&str>) -> Result<Value, Failure> {
        self.send(self.http.get(format!("{}{path}", self.base)), id)
            .await
    }

    /// POST `body` as JSON to `path`; the JSON body.
    pub async fn post(&self, path: &str, body: &Value, id: Option<&str>) -> Result<Value, Failure> {
        self.send(
            self.http.post(format!("{}{path}", self.base)).json(body),
            id,
        )
        .await
    }

    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        id: Option<&str>,
    ) -> Result<Value, Failure> {
        let response = request
            .bearer_auth(&self.token)
            .header("x-iris-surface", iris_core::wire::Surface::Cli.as_str())
            .send()
            .await
            .map_err(|e| Failure::Unreachable {
                url: self.base.clone(),
                cause: error_chain(&e),
            })?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(|e| Failure::Unreachable {
            url: self.base.clone(),
            cause: format!("the answer broke off: {}", error_chain(&e)),
        })?;
        let body: Option<Value> = serde_json::from_slice(&bytes).ok();
        if status.is_success() {
            return body.ok_or_else(|| {
                Failure::Other(format!(
                    "the server's answer ({status}) is not JSON: {}",
                    printable(&String::from_utf8_lossy(&bytes))
                ))
            });
        }
        let parsed: Option<ErrorBody> = body
            .as_ref()
            .and_then(|b| serde_json::from_value(b.clone()).ok());
        let (error, approval) = match parsed {
            Some(e) => (e.error, e.approval.map(Box::new)),
            None => (String::from_utf8_lossy(&bytes).trim().to_string(), None),
        };
        Err(Failure::Refused {
            status,
            error,
            approval,
            body,
            url: self.base.clone(),
            id: id.map(str::to_string),
        })
    }
}

/// An error and its sources, "a: b: c" (reqwest's own text omits the cause, e.g. "connection
/// refused").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_has_its_own_exit_code() {
        let refused = |status| Failure::Refused {
            status,
            error: "x".into(),
            approval: None,
            body: None,
            url: "http://h".into(),
            id: Some("a1".into()),
        };
        let codes = [
            Failure::Usage("u".into()).exit_code(),
            Failure::Unreachable {
                url: "http://h".into(),
                cause: "refused".into(),
            }
            .exit_code(),
            refused(StatusCode::UNAUTHORIZED).exit_code(),
            refused(StatusCode::FORBIDDEN).exit_code(),
            refused(StatusCode::NOT_FOUND).exit_code(),
            refused(StatusCode::CONFLICT).exit_code(),
            refused(StatusCode::GONE).exit_code(),
            Failure::NotConfirmed.exit_code(),
            refused(StatusCode::INTERNAL_SERVER_ERROR).exit_code(),
        ];
        let numbers: Vec<i32> = codes.iter().map(|c| *c as i32).collect();
        assert_eq!(numbers, vec![2, 3, 4, 5, 6, 7, 8, 9, 1]);
        for n in 0..=9 {
            assert!(
                EXIT_CODES_HELP.contains(&format!("\n  {n}  ")),
                "exit code {n} is not documented"
            );
        }
    }
}
