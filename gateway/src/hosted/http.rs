//! The paywall over HTTP: reads the payment headers, the free-pool header and the
//! client's address, hands the call to [`Paywall::handle`] and encodes its answer
//! (402 with `PAYMENT-REQUIRED`, `PAYMENT-RESPONSE` on paid results, the pool's
//! remainder on free ones).
//!
//! A paid call runs in its own task: if the client goes away mid-call, the settlement
//! and its ledger entry still complete instead of being cut off half-way.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::Json;
use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;

use super::mpp::{CACHE_CONTROL_RECEIPT, RequestBinding};
use super::paywall::{Answer, Body, Call, FreeAsk, Payment, Paywall, Required};
use crate::error::ApiError;
use crate::routes::{AppState, content_type, encode_reply, is_json, read_body};

/// The x402 v2 request header carrying the payment.
pub const PAYMENT_SIGNATURE: &str = "payment-signature";
/// The 402's base64 PaymentRequired.
pub const PAYMENT_REQUIRED: &str = "payment-required";
/// `X-Svc-Free: 1` asks for the free pool (spec, Authentication rule 9).
pub const FREE_HEADER: &str = "x-svc-free";
/// Free calls left today in the pool a free call used.
pub const FREE_REMAINING: &str = "x-svc-free-remaining";

/// Answers a call to the route at `path` in hosted mode.
pub async fn handle(state: Arc<AppState>, paywall: Arc<Paywall>, path: &'static str, request: Request) -> Response {
    let headers = request.headers().clone();
    let client = client_ip(&request, paywall.config().client_ip_header.as_ref());
    let text = |v: &HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned();
    // x402 first when a client sends both: it is the protocol the spec names.
    let payment = match (headers.get(PAYMENT_SIGNATURE), headers.get(header::AUTHORIZATION)) {
        (Some(signature), _) => Some(Payment::X402(text(signature))),
        (None, Some(auth)) if auth.as_bytes().len() > 8 && auth.as_bytes()[..8].eq_ignore_ascii_case(b"payment ") => {
            Some(Payment::Mpp(text(auth)))
        }
        _ => None,
    };
    let free = match headers.get(FREE_HEADER) {
        Some(v) if v.as_bytes().trim_ascii() == b"1" => FreeAsk::Yes,
        _ => FreeAsk::No,
    };
    let body = if is_json(&headers) {
        match read_body(request, state.body_limit).await {
            Ok(bytes) => Ok(bytes),
            Err(e) if e.status == StatusCode::PAYLOAD_TOO_LARGE => Err(None),
            Err(e) => return e.into_response(),
        }
    } else {
        Err(Some(content_type(&headers).to_string()))
    };
    let task = tokio::spawn(async move {
        let Some(route) = state.catalog.by_path(path) else {
            return ApiError::not_found(format!("no route {path}")).into_response();
        };
        let body = match &body {
            Ok(bytes) => Body::Json(bytes),
            Err(None) => Body::TooLarge(state.body_limit),
            Err(Some(content_type)) => Body::NotJson(content_type.clone()),
        };
        let binding = Some(RequestBinding::new("POST", path, body_bytes(&body)));
        let answer = paywall.handle(Call { route, body, payment, free, client, binding }, &state.ctx).await;
        respond(&state, answer).await
    });
    match task.await {
        Ok(response) => response,
        Err(e) => {
            tracing::error!(error = %e, "a hosted call's task failed");
            ApiError::from(paperchain_engine::EngineError::internal("the call's task failed")).into_response()
        }
    }
}

fn body_bytes<'a>(body: &'a Body<'a>) -> &'a [u8] {
    match body {
        Body::Json(bytes) => bytes,
        Body::NotJson(_) | Body::TooLarge(_) => &[],
    }
}

async fn respond(state: &AppState, answer: Answer) -> Response {
    match answer {
        Answer::Delivered { reply, receipt, free_left } => {
            let mut response = match encode_reply(state, reply).await {
                Ok(response) => response,
                Err(error) => error.into_response(),
            };
            let headers = response.headers_mut();
            if let Some(receipt) = receipt
                && let Ok(value) = HeaderValue::from_str(&receipt.value)
            {
                headers.insert(HeaderName::from_static(receipt.header), value);
                // A paid answer is the payer's alone.
                headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(CACHE_CONTROL_RECEIPT));
            }
            if let Some(left) = free_left {
                headers.insert(HeaderName::from_static(FREE_REMAINING), HeaderValue::from(left));
            }
            response
        }
        Answer::PaymentRequired(required) => payment_required(&required),
        Answer::Failed(error) => error.into_response(),
    }
}

/// 402 with the PaymentRequired object in the body and, base64, in `PAYMENT-REQUIRED`,
/// and one `WWW-Authenticate: Payment` challenge per MPP method.
pub fn payment_required(required: &Required) -> Response {
    let mut response = (StatusCode::PAYMENT_REQUIRED, Json(&required.body)).into_response();
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&B64.encode(required.body.to_string())) {
        headers.insert(HeaderName::from_static(PAYMENT_REQUIRED), value);
    }
    for challenge in &required.challenges {
        if let Ok(value) = HeaderValue::from_str(challenge) {
            headers.append(header::WWW_AUTHENTICATE, value);
        }
    }
    // A 402 quotes this input at this moment; no cache may answer it for another.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The client's address: the configured proxy header's last entry (the address the
/// proxy itself saw; earlier entries are the client's own claims), else the peer.
fn client_ip(request: &Request, proxy_header: Option<&HeaderName>) -> Option<IpAddr> {
    client_ip_of(request.headers(), request.extensions(), proxy_header)
}

/// [`client_ip`] from a request's headers and extensions (the MCP bridge has only those).
pub fn client_ip_of(
    headers: &HeaderMap,
    extensions: &axum::http::Extensions,
    proxy_header: Option<&HeaderName>,
) -> Option<IpAddr> {
    if let Some(name) = proxy_header {
        return forwarded_ip(headers, name);
    }
    extensions.get::<ConnectInfo<SocketAddr>>().map(|ConnectInfo(addr)| addr.ip())
}

fn forwarded_ip(headers: &HeaderMap, name: &HeaderName) -> Option<IpAddr> {
    let last = headers.get_all(name).iter().next_back()?.to_str().ok()?;
    let entry = last.rsplit(',').next()?.trim();
    entry
        .parse::<IpAddr>()
        .ok()
        .or_else(|| entry.parse::<SocketAddr>().ok().map(|a| a.ip()))
        .or_else(|| entry.trim_start_matches('[').split(']').next()?.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proxy_header_last_hop_is_the_client() {
        let name = HeaderName::from_static("x-forwarded-for");
        let mut headers = HeaderMap::new();
        headers.insert(&name, HeaderValue::from_static("10.0.0.1, 203.0.113.7"));
        assert_eq!(forwarded_ip(&headers, &name), Some("203.0.113.7".parse().unwrap()));
        headers.insert(&name, HeaderValue::from_static("[2001:db8::1]:443"));
        assert_eq!(forwarded_ip(&headers, &name), Some("2001:db8::1".parse().unwrap()));
        headers.insert(&name, HeaderValue::from_static("garbage"));
        assert_eq!(forwarded_ip(&headers, &name), None);
    }
}
