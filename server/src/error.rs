//! Domain errors mapped to HTTP in one place (DESIGN §7: 401 no credentials, 403 read scope or
//! cross-site, 404 unknown, 409 already decided with who/where/when, 410 expired; for the
//! resume retry, 409 still pending or nothing to retry; for the undo, 409 already undone or
//! nothing to undo and 410 its window closed; 413 a body too large).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use iris_core::approvals::reason::ReasonError;
use iris_core::approvals::{ChatError, RespondError, RetryError, UndoError};
use iris_core::ports::StoreError;
use iris_core::wire::{Approval, ErrorBody};

/// What a client reads for every 500: no storage text, only what it may do.
pub const INTERNAL_TEXT: &str = "the server failed to complete this request (its log has the \
    cause); nothing was decided or changed by it: try again";

/// An HTTP error with a sentence naming the thing and the rule.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: the input does not parse; nothing changed.
    #[error("{0}")]
    BadRequest(String),
    /// 401.
    #[error("no credentials: send `Authorization: Bearer TOKEN` (from `iris devices add`) or pair this browser")]
    Unauthorized,
    /// 401: a token was sent, but no live device has it (unknown or revoked).
    #[error("this token belongs to no live device (unknown or revoked): add one with `iris devices add` against the server's own database")]
    UnknownToken,
    /// 401: the browser's session names a device that was revoked; the session is ended.
    #[error("this browser's device was revoked, so its session has ended: pair it again with a new link (`iris pair`)")]
    SessionEnded,
    /// 403.
    #[error("{0}")]
    Forbidden(String),
    /// 404.
    #[error("{0}")]
    NotFound(String),
    /// 409, with the row as it stands.
    #[error("{0}")]
    Conflict(String, Box<Approval>),
    /// 410, with the row.
    #[error("{0}")]
    Gone(String, Box<Approval>),
    /// 413: the body is too large; nothing changed.
    #[error("{0}")]
    TooLarge(String),
    /// 500: storage or another internal failure; nothing was decided. The detail (a storage
    /// error's text, which may name tables, paths or SQL) goes to the server's log once, where
    /// the response is made ([`ApiError::log_internal`]), never to the client: the client reads
    /// [`INTERNAL_TEXT`].
    #[error("{INTERNAL_TEXT}")]
    Internal(String),
    /// 409 without a row: the thing is held by someone else (another device's push
    /// subscription).
    #[error("{0}")]
    InUse(String),
    /// 404: a feature this server was not set up for (Web Push without `IRIS_VAPID_SUBJECT`:
    /// there is no push key here); the sentence says which setting turns it on. A 4xx, not a
    /// 503: the server is well, and asking is not a failure to log on every page load.
    #[error("{0}")]
    Off(String),
    /// 403 with the code `passkey_required` and the card: approving it needs the owner's
    /// passkey (ADR-0118 decision 4), or a change to the set of passkeys needs a proof from an
    /// existing one (then without a card).
    #[error("{0}")]
    PasskeyRequired(String, Option<Box<Approval>>),
}

impl From<RespondError> for ApiError {
    fn from(e: RespondError) -> Self {
        let text = e.to_string();
        match e {
            RespondError::Forbidden(_) => ApiError::Forbidden(text),
            RespondError::NotFound(_) => ApiError::NotFound(text),
            RespondError::AlreadyDecided(row) | RespondError::RequesterRevoked(row) => {
                ApiError::Conflict(text, row)
            }
            RespondError::Expired(row) => ApiError::Gone(text, row),
            RespondError::PasskeyRequired(_, row) => ApiError::PasskeyRequired(text, Some(row)),
            RespondError::Items(_) | RespondError::Edit(_) | RespondError::Reason(_) => {
                ApiError::BadRequest(text)
            }
            RespondError::Store(s) => ApiError::from(s),
        }
    }
}

impl From<ReasonError> for ApiError {
    fn from(e: ReasonError) -> Self {
        let text = e.to_string();
        match e {
            ReasonError::Forbidden(_) => ApiError::Forbidden(text),
            ReasonError::NotFound(_) => ApiError::NotFound(text),
            ReasonError::Invalid(_) => ApiError::BadRequest(text),
            ReasonError::Refused(_, row) => ApiError::Conflict(text, row),
            ReasonError::Store(e) => ApiError::from(e),
        }
    }
}

impl From<RetryError> for ApiError {
    fn from(e: RetryError) -> Self {
        let text = e.to_string();
        match e {
            RetryError::NotFound(_) => ApiError::NotFound(text),
            RetryError::Forbidden(_) => ApiError::Forbidden(text),
            RetryError::NotDecided(row) | RetryError::NotFailed(row) => {
                ApiError::Conflict(text, row)
            }
            RetryError::Store(e) => ApiError::from(e),
        }
    }
}

impl From<UndoError> for ApiError {
    fn from(e: UndoError) -> Self {
        let text = e.to_string();
        match e {
            UndoError::Forbidden(_) => ApiError::Forbidden(text),
            UndoError::NotFound(_) => ApiError::NotFound(text),
            UndoError::AlreadyUndone(row) | UndoError::NothingToUndo(row, _) => {
                ApiError::Conflict(text, row)
            }
            UndoError::WindowClosed(row, _) => ApiError::Gone(text, row),
            UndoError::Busy(row, _) => ApiError::Conflict(text, row),
            UndoError::Store(e) => ApiError::from(e),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(what) => ApiError::NotFound(format!("{what} does not exist")),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

impl From<ChatError> for ApiError {
    fn from(e: ChatError) -> Self {
        let text = e.to_string();
        match e {
            ChatError::Forbidden(_) => ApiError::Forbidden(text),
            ChatError::Invalid(_) => ApiError::BadRequest(text),
            ChatError::Store(s) => ApiError::from(s),
        }
    }
}

impl ApiError {
    /// Logs an [`ApiError::Internal`]'s detail (once per response: every way a response is made
    /// from an `ApiError` calls this and nothing else logs it). Other errors are the client's
    /// and are not logged.
    pub fn log_internal(&self) {
        if let ApiError::Internal(detail) = self {
            tracing::error!(%detail, "request failed");
        }
    }

    /// The HTTP status of this error (DESIGN §7), the one mapping every surface over HTTP uses:
    /// the JSON API's responses and the web app's server functions alike.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized | ApiError::UnknownToken | ApiError::SessionEnded => {
                StatusCode::UNAUTHORIZED
            }
            ApiError::Forbidden(_) | ApiError::PasskeyRequired(..) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict(..) | ApiError::InUse(_) => StatusCode::CONFLICT,
            ApiError::Gone(..) => StatusCode::GONE,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::Off(_) => StatusCode::NOT_FOUND,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        self.log_internal();
        let error = self.to_string();
        let status = self.status();
        let code = matches!(self, ApiError::PasskeyRequired(..))
            .then(|| iris_core::wire::PASSKEY_REQUIRED.to_string());
        let approval = match self {
            ApiError::Conflict(_, row) | ApiError::Gone(_, row) => Some(*row),
            ApiError::PasskeyRequired(_, row) => row.map(|r| *r),
            _ => None,
        };
        (
            status,
            Json(ErrorBody {
                error,
                approval,
                code,
            }),
        )
            .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A storage failure's text (table names, SQL, paths) never reaches the client: the 500's
    /// body says only what the client may do.
    #[tokio::test]
    async fn a_500_carries_no_storage_text() {
        let detail = "no such table: approvals (SELECT a.id FROM approvals a WHERE …)";
        let response = ApiError::from(StoreError::Backend(detail.into())).into_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["error"], INTERNAL_TEXT);
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("no such table"), "{text}");
        assert!(!text.contains("SELECT"), "{text}");
    }
}
