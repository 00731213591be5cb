//! Local mode over HTTP: the headers a call asks where it runs with (`Paperchain-Route`,
//! `Paperchain-Quote`), and the headers an answer says where it ran and what it cost with
//! (`Paperchain-Ran`, `Paperchain-Paid`, `Paperchain-Payment`, `Paperchain-Call-Id`). Where
//! a call runs is decided by the call path (`paperchain_calls`), not here.

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use paperchain_calls::routed::{PaymentNote, quote_json};
use paperchain_engine::cancel::Why;
use paperchain_wallet::client::{CallError, HostedAnswer, Quote};
use paperchain_wallet::config::RouteMode;

use crate::error::ApiError;

/// Request header choosing where one call runs: `local`, `hosted` or `auto`.
pub const ROUTE_HEADER: &str = "paperchain-route";
/// Request header asking only what the hosted service would charge: `only`.
pub const QUOTE_HEADER: &str = "paperchain-quote";
/// Request header: save the file result at this absolute path (a file, or a folder to
/// write the files into), inside a folder the user granted; the answer is then JSON.
pub const SAVE_TO_HEADER: &str = "paperchain-save-to";
/// Request header: `true` lets `Paperchain-Save-To` replace an existing file.
pub const OVERWRITE_HEADER: &str = "paperchain-overwrite";
/// Answer header: where the call ran (`local` or `hosted`).
pub const RAN_HEADER: &str = "paperchain-ran";
/// Answer header: what the call cost (`0.002 USDC`), when it was paid.
pub const PAID_HEADER: &str = "paperchain-paid";
/// Answer header: the payment's network, payer, payee and transaction (JSON).
pub const PAYMENT_HEADER: &str = "paperchain-payment";
/// Answer header: the ledger's id of the call.
pub const CALL_ID_HEADER: &str = "paperchain-call-id";

/// The mode a request's `Paperchain-Route` header asks for; an unknown one is an error
/// naming the header.
pub fn mode_of(headers: &HeaderMap) -> Result<Option<RouteMode>, ApiError> {
    match headers.get(ROUTE_HEADER).map(|v| v.to_str().unwrap_or("?")) {
        None => Ok(None),
        Some(text) => text.parse().map(Some).map_err(|e: String| {
            ApiError::new(StatusCode::BAD_REQUEST, "invalid_input", format!("header Paperchain-Route: {e}"))
        }),
    }
}

/// Whether the request asks for a quote only (`Paperchain-Quote: only`).
pub fn quote_only(headers: &HeaderMap) -> Result<bool, ApiError> {
    match headers.get(QUOTE_HEADER).map(|v| v.to_str().unwrap_or("?")) {
        None => Ok(false),
        Some(text) if text.eq_ignore_ascii_case("only") => Ok(true),
        Some(text) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_input",
            format!("header Paperchain-Quote: `{text}` is not `only`"),
        )),
    }
}

/// Where a request's `Paperchain-Save-To` header asks its file result saved (a path in
/// UTF-8), and whether `Paperchain-Overwrite: true` lets it replace a file.
pub fn save_to(headers: &HeaderMap) -> Result<Option<paperchain_calls::local_files::SaveTo>, ApiError> {
    let invalid = |message: String| ApiError::new(StatusCode::BAD_REQUEST, "invalid_input", message);
    let overwrite = match headers.get(OVERWRITE_HEADER).map(|v| v.to_str().unwrap_or("?")) {
        None => false,
        Some(text) if text.eq_ignore_ascii_case("true") => true,
        Some(text) if text.eq_ignore_ascii_case("false") => false,
        Some(text) => return Err(invalid(format!("header Paperchain-Overwrite: `{text}` is not true or false"))),
    };
    let Some(value) = headers.get(SAVE_TO_HEADER) else {
        return match overwrite {
            true => Err(invalid("header Paperchain-Overwrite: it goes with Paperchain-Save-To".into())),
            false => Ok(None),
        };
    };
    let path = String::from_utf8(value.as_bytes().to_vec())
        .map_err(|_| invalid("header Paperchain-Save-To: the path is not UTF-8".into()))?;
    Ok(Some(paperchain_calls::local_files::SaveTo { path, overwrite, field: "Paperchain-Save-To".into() }))
}

/// A routed call's failure as an API error: what went wrong, and whether money moved.
pub fn call_error(error: &CallError) -> ApiError {
    let (status, code) = match error {
        CallError::NoService(_) => (StatusCode::SERVICE_UNAVAILABLE, "no_hosted_service"),
        CallError::Unreachable { .. } | CallError::Pay(_) => (StatusCode::BAD_GATEWAY, "upstream_error"),
        CallError::Policy(_) => (StatusCode::PAYMENT_REQUIRED, "refused_by_policy"),
        CallError::Keys(_) => (StatusCode::SERVICE_UNAVAILABLE, "wallet_unavailable"),
        CallError::PaymentRefused { .. } => (StatusCode::PAYMENT_REQUIRED, "payment_refused"),
        CallError::PaidAnswerLost { .. } => (StatusCode::BAD_GATEWAY, "paid_answer_lost"),
        CallError::Ledger(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        CallError::Stopped(Why::TimedOut) => (StatusCode::GATEWAY_TIMEOUT, "timeout"),
        // Nobody reads it: the caller went away. 499 is what proxies record for that.
        CallError::Stopped(Why::Cancelled) => {
            (StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST), "cancelled")
        }
    };
    ApiError::new(status, code, error.to_string())
}

/// The hosted service's answer as this server's: its status, headers and body as they
/// came, plus where it ran and what it cost.
pub fn hosted_response(answer: HostedAnswer) -> Response {
    let mut response = Response::new(axum::body::Body::from(answer.body.clone()));
    *response.status_mut() = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::BAD_GATEWAY);
    let headers = response.headers_mut();
    for (name, value) in &answer.headers {
        // What ran where and what it cost is this server's to say, not the service's.
        if name.starts_with("paperchain-") && name != paperchain_calls::REPORT_HEADER {
            continue;
        }
        if let (Ok(name), Ok(value)) = (axum::http::HeaderName::try_from(name.as_str()), HeaderValue::from_str(value)) {
            headers.append(name, value);
        }
    }
    headers.insert(RAN_HEADER, HeaderValue::from_static("hosted"));
    if let Ok(id) = HeaderValue::from_str(&answer.call_id) {
        headers.insert(CALL_ID_HEADER, id);
    }
    if let Some(paid) = &answer.paid {
        if let Ok(value) = HeaderValue::from_str(&paid.amount_text()) {
            headers.insert(PAID_HEADER, value);
        }
        let payment = serde_json::to_string(&PaymentNote::of(paid)).unwrap_or_default();
        if let Ok(value) = HeaderValue::from_str(&payment) {
            headers.insert(PAYMENT_HEADER, value);
        }
    }
    response
}

/// Adds `Paperchain-Ran: local` (and the ledger's id) to a local answer.
pub fn mark_local(response: &mut Response, call_id: Option<&str>) {
    response.headers_mut().insert(RAN_HEADER, HeaderValue::from_static("local"));
    if let Some(id) = call_id.and_then(|id| HeaderValue::from_str(id).ok()) {
        response.headers_mut().insert(CALL_ID_HEADER, id);
    }
}

/// A quote's HTTP answer.
pub fn quote_response(quote: Result<Quote, CallError>) -> Response {
    match quote {
        Ok(quote) => axum::Json(quote_json(&quote)).into_response(),
        Err(error) => call_error(&error).into_response(),
    }
}
