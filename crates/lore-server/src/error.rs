//! The one place where an error becomes an HTTP status.
//!
//! Every handler returns [`ApiError`], and every [`lore_core::Error`] reaches the client through
//! the single `From` impl below, so a status code cannot drift between endpoints. The body is
//! always `{"error": {"code": "...", "message": "..."}}`; `code` is stable and meant for programs,
//! `message` for people. Server-side failures (the store, files, an incompatible database) are
//! logged with their details and answered with a bare `internal` error: a path or an SQL message
//! says nothing useful to a client and something useful to an attacker.

use axum::Json;
use axum::extract::path::ErrorKind as PathError;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::input::{self, Refused};

/// Every `code` an answer can carry, as the OpenAPI document lists them; a test holds the two
/// together, so a new code cannot reach clients undocumented.
pub const CODES: &[&str] = &[
    "not_found",
    "invalid",
    "forbidden",
    "conflict",
    "unsupported",
    "bad_request",
    "payload_too_large",
    "unsupported_media_type",
    "unauthenticated",
    "method_not_allowed",
    "timeout",
    "internal",
];

/// An error answer: a status, a stable code and a message safe to show the client.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    /// A 404 for a path no route serves.
    pub fn no_route(path: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no endpoint at {path}; see /v1/openapi.json"),
        )
    }

    /// A 405 for a path served, but not with this method; the `Allow` header lists the methods.
    pub fn method_not_allowed(method: &axum::http::Method, path: &str) -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            format!(
                "{path} does not answer {method}; the Allow header and /v1/openapi.json list \
                 what it does"
            ),
        )
    }

    /// A 500 whose cause has already been logged.
    pub fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error; the server log has the details",
        )
    }

    /// A 408 for a request that took longer than `limit`; its write may still commit.
    pub fn timed_out(limit: std::time::Duration) -> Self {
        Self::new(
            StatusCode::REQUEST_TIMEOUT,
            "timeout",
            format!(
                "no answer within {limit:?}; a write may still have been applied, so read \
                 before retrying it"
            ),
        )
    }

    /// A 401 for a request without valid credentials.
    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthenticated", message)
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The stable code.
    pub fn code(&self) -> &'static str {
        self.code
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// A 415 for a body sent without a JSON content type.
    pub fn not_json() -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send the body as JSON, with the header `Content-Type: application/json`",
        )
    }
}

impl From<lore_core::Error> for ApiError {
    fn from(err: lore_core::Error) -> Self {
        use lore_core::Error as E;
        let (status, code) = match &err {
            E::NotFound { .. } => (StatusCode::NOT_FOUND, "not_found"),
            E::Invalid { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "invalid"),
            E::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
            E::Conflict(_) => (StatusCode::CONFLICT, "conflict"),
            E::Unsupported(_) => (StatusCode::NOT_IMPLEMENTED, "unsupported"),
            // The store's message names the cause (a full disk, a size limit) and no path.
            E::StorageFull(_) => (StatusCode::INSUFFICIENT_STORAGE, "storage_full"),
            // Incompatible, Io, Store, and whatever the core adds later: the server's problem.
            _ => {
                tracing::error!(error = %err, source = ?std::error::Error::source(&err), "request failed");
                return Self::internal();
            }
        };
        Self::new(status, code, err.to_string())
    }
}

impl From<Refused> for ApiError {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::Malformed(m) => Self::new(StatusCode::BAD_REQUEST, "bad_request", m),
            Refused::Invalid(m) => Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", m),
        }
    }
}

impl From<BytesRejection> for ApiError {
    fn from(rejection: BytesRejection) -> Self {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            return Self::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                "the body is larger than this server accepts; send less at once",
            );
        }
        // The client went away or the connection broke mid-body.
        Self::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "the body could not be read to its end; send it again",
        )
    }
}

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> Self {
        let PathRejection::FailedToDeserializePathParams(failed) = &rejection else {
            tracing::error!(%rejection, "a route's path parameters do not match its handler");
            return Self::internal();
        };
        let message = match failed.kind() {
            PathError::InvalidUtf8InPathParam { key } => {
                format!("`{key}` in the path is not valid UTF-8 once percent-decoded")
            }
            PathError::ParseErrorAtKey {
                key,
                value,
                expected_type,
            } => input::describe_path(key, value, expected_type),
            PathError::DeserializeError {
                key,
                value,
                message,
            } => format!("`{key}` in the path cannot be \"{value}\": {message}"),
            _ => {
                tracing::error!(%rejection, "a route's path parameters do not match its handler");
                return Self::internal();
            }
        };
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", message)
    }
}

impl From<tokio::task::JoinError> for ApiError {
    fn from(err: tokio::task::JoinError) -> Self {
        tracing::error!(error = %err, "a blocking Engine call panicked or was cancelled");
        Self::internal()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({ "error": { "code": self.code, "message": self.message } });
        (self.status, Json(body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_errors_map_to_their_status_and_code() {
        let cases = [
            (
                lore_core::Error::not_found("lesson", "L-1"),
                404,
                "not_found",
            ),
            (lore_core::Error::invalid("limit", "zero"), 422, "invalid"),
            (lore_core::Error::Forbidden("x".into()), 403, "forbidden"),
            (lore_core::Error::Conflict("x".into()), 409, "conflict"),
            (
                lore_core::Error::Unsupported("x".into()),
                501,
                "unsupported",
            ),
            (
                lore_core::Error::StorageFull("the disk is full".into()),
                507,
                "storage_full",
            ),
        ];
        for (err, status, code) in cases {
            let api = ApiError::from(err);
            assert_eq!((api.status().as_u16(), api.code()), (status, code));
        }
    }

    #[test]
    fn server_side_failures_do_not_leak_their_details() {
        let secret = "/srv/lore/.lore/lore.db: disk I/O error near SELECT";
        for err in [
            lore_core::Error::store(std::io::Error::other(secret)),
            lore_core::Error::io(secret, std::io::Error::other("denied")),
            lore_core::Error::Incompatible(secret.into()),
        ] {
            let api = ApiError::from(err);
            assert_eq!(api.status(), StatusCode::INTERNAL_SERVER_ERROR);
            assert_eq!(api.code(), "internal");
            assert!(!api.message().contains("lore.db"), "{}", api.message());
        }
    }
}
