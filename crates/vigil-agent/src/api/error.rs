//! The API's errors: one enum, one status each, always answered as JSON
//! (`{"error": "..."}`); handlers write `?`.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use vigil_net::{KeyError, KeyringError, Stopped};

use super::body::ErrorBody;

/// An error as the API answers it.
///
/// ```
/// use axum::http::StatusCode;
/// use vigil_agent::api::ApiError;
///
/// let e = ApiError::from(vigil_net::Stopped);
/// assert_eq!(e.status(), StatusCode::SERVICE_UNAVAILABLE);
/// assert_eq!(e.to_string(), "the member has stopped");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApiError {
    /// The request is malformed: a body, a query or a path segment that
    /// does not read (400).
    BadRequest(String),
    /// A change without the bearer token (401).
    Unauthorized,
    /// A change with a wrong token, or over a non-loopback address without
    /// a token set, or a request from a web page of another origin (403).
    Forbidden(String),
    /// No such endpoint, member, key or recording (404).
    NotFound(String),
    /// The member is not in a state that allows it: no keyring, a key the
    /// keyring refuses, recording off, a fault that does not apply (409).
    Conflict(String),
    /// A body larger than the endpoint takes (413).
    TooLarge(String),
    /// A body that does not say `Content-Type: application/json` (415).
    UnsupportedType(String),
    /// A `Host` that does not name this API (421).
    MisdirectedHost(String),
    /// The member has stopped (503).
    Stopped,
    /// Something failed inside the agent (500).
    Internal(String),
    /// Another status, with its message (axum's own answers: 405, ...).
    Other(StatusCode, String),
}

impl ApiError {
    /// The error answered with `status` and `message`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        let m = message.into();
        match status {
            StatusCode::BAD_REQUEST => ApiError::BadRequest(m),
            StatusCode::FORBIDDEN => ApiError::Forbidden(m),
            StatusCode::NOT_FOUND => ApiError::NotFound(m),
            StatusCode::CONFLICT => ApiError::Conflict(m),
            StatusCode::PAYLOAD_TOO_LARGE => ApiError::TooLarge(m),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::UnsupportedType(m),
            StatusCode::MISDIRECTED_REQUEST => ApiError::MisdirectedHost(m),
            StatusCode::INTERNAL_SERVER_ERROR => ApiError::Internal(m),
            other => ApiError::Other(other, m),
        }
    }

    /// The HTTP status it is answered with.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::MisdirectedHost(_) => StatusCode::MISDIRECTED_REQUEST,
            ApiError::Stopped => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::Other(status, _) => *status,
        }
    }

    /// A body that does not read as `expected` (an example of what is).
    pub fn body(expected: &str, e: JsonRejection) -> ApiError {
        match e {
            JsonRejection::MissingJsonContentType(_) => {
                ApiError::UnsupportedType("a body must be Content-Type: application/json".into())
            }
            JsonRejection::BytesRejection(b) if b.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                ApiError::TooLarge(b.body_text())
            }
            other => ApiError::BadRequest(format!("expected {expected}: {}", other.body_text())),
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiError::Unauthorized => f.write_str("this needs the bearer token: Authorization: Bearer <token>"),
            ApiError::Stopped => Stopped.fmt(f),
            ApiError::BadRequest(m)
            | ApiError::Forbidden(m)
            | ApiError::NotFound(m)
            | ApiError::Conflict(m)
            | ApiError::TooLarge(m)
            | ApiError::UnsupportedType(m)
            | ApiError::MisdirectedHost(m)
            | ApiError::Internal(m)
            | ApiError::Other(_, m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status(), axum::Json(ErrorBody { error: self.to_string() })).into_response()
    }
}

impl From<Stopped> for ApiError {
    fn from(_: Stopped) -> ApiError {
        ApiError::Stopped
    }
}

impl From<KeyError> for ApiError {
    fn from(e: KeyError) -> ApiError {
        match e {
            KeyError::Stopped => ApiError::Stopped,
            KeyError::NoKeyring => ApiError::Conflict("this member has no keyring: start it with --key-file".into()),
            KeyError::Keyring(e @ KeyringError::Unknown(_)) => ApiError::NotFound(e.to_string()),
            other => ApiError::Conflict(other.to_string()),
        }
    }
}

impl From<PathRejection> for ApiError {
    fn from(e: PathRejection) -> ApiError {
        ApiError::BadRequest(e.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(e: QueryRejection) -> ApiError {
        ApiError::BadRequest(e.body_text())
    }
}
