//! The HTTP face of errors: status codes and the JSON body of `../shared/spec/routebook.md` §1.

use std::time::Duration;

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use paperchain_calls::paywall::Failure;
use paperchain_engine::{EngineError, ErrorKind};
use serde_json::json;

/// An error answered over HTTP.
#[derive(Debug)]
pub struct ApiError {
    /// The status.
    pub status: StatusCode,
    /// The engine's error (code, message, field).
    pub error: EngineError,
    /// Seconds for `Retry-After`, if any.
    pub retry_after: Option<Duration>,
}

impl ApiError {
    /// An error with `status` and stable `code`.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, error: EngineError::new(ErrorKind::InvalidInput, code, message), retry_after: None }
    }

    /// The same error, about `field` (a JSON pointer into the request body).
    pub fn with_field(mut self, field: impl Into<String>) -> ApiError {
        self.error = self.error.at(field);
        self
    }

    /// 404 `not_found`.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }
}

impl From<EngineError> for ApiError {
    fn from(error: EngineError) -> ApiError {
        let status =
            StatusCode::from_u16(paperchain_calls::status_of(&error.kind)).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let retry_after = match error.kind {
            ErrorKind::RateLimited { retry_after } | ErrorKind::Unavailable { retry_after } => Some(retry_after),
            _ => None,
        };
        ApiError { status, error, retry_after }
    }
}

impl From<Failure> for ApiError {
    fn from(failure: Failure) -> ApiError {
        match failure {
            Failure::Engine(error) => ApiError::from(error),
            Failure::NotJson(content_type) => crate::routes::unsupported_media_type(&content_type),
            Failure::TooLarge(limit) => crate::intake::too_large(limit),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let message = if self.status == StatusCode::INTERNAL_SERVER_ERROR {
            // The engine's message may describe internals; log it, answer plainly.
            tracing::error!(code = %self.error.code, message = %self.error.message, "internal error");
            "the operation failed on our side; it has been logged".to_string()
        } else {
            self.error.message.clone()
        };
        let body = json!({ "error": { "code": self.error.code, "message": message, "field": self.error.field } });
        let mut response = (self.status, Json(body)).into_response();
        if let Some(after) = self.retry_after
            && let Ok(value) = HeaderValue::from_str(&after.as_secs().max(1).to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        response
    }
}
