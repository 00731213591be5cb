//! The paywall over HTTP: the payment headers, the free-pool header and the client's
//! address in; the paywall's answer out as a status and headers (402 with
//! `PAYMENT-REQUIRED` and the MPP challenges, `PAYMENT-RESPONSE` or `Payment-Receipt` on
//! paid results, the pool's remainder on free ones). Reading the body and encoding the
//! result are the routes' ([`crate::routes`]), once for both modes.

use std::net::{IpAddr, SocketAddr};

use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;
use paperchain_protocol::x402;

use paperchain_calls::paywall::{FreeAsk, Payment, Receipt, Required};
use paperchain_protocol::mpp::{CACHE_CONTROL_RECEIPT, PAYMENT_RECEIPT_HEADER};

/// `X-Svc-Free: 1` asks for the free pool (spec, Authentication rule 9).
pub const FREE_HEADER: &str = "x-svc-free";
/// Free calls left today in the pool a free call used.
pub const FREE_REMAINING: &str = "x-svc-free-remaining";

/// The payment a request carries: x402 first when a client sends both, as it is the
/// protocol the spec names.
pub fn payment(headers: &HeaderMap) -> Option<Payment> {
    let text = |v: &HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned();
    match (headers.get(x402::PAYMENT_SIGNATURE), headers.get(header::AUTHORIZATION)) {
        (Some(signature), _) => Some(Payment::X402(text(signature))),
        (None, Some(auth)) if auth.as_bytes().len() > 8 && auth.as_bytes()[..8].eq_ignore_ascii_case(b"payment ") => {
            Some(Payment::Mpp(text(auth)))
        }
        _ => None,
    }
}

/// Whether the request asks for the free pool.
pub fn free_ask(headers: &HeaderMap) -> FreeAsk {
    match headers.get(FREE_HEADER) {
        Some(v) if v.as_bytes().trim_ascii() == b"1" => FreeAsk::Yes,
        _ => FreeAsk::No,
    }
}

/// Adds a delivered result's settlement and free-pool headers to `response`.
pub fn add_delivery_headers(response: &mut Response, receipt: Option<&Receipt>, free_left: Option<u32>) {
    let headers = response.headers_mut();
    if let Some(receipt) = receipt {
        let (name, value) = match &receipt.mpp_receipt {
            Some(mpp) => (PAYMENT_RECEIPT_HEADER, mpp.clone()),
            None => (x402::PAYMENT_RESPONSE, x402::encode(&receipt.settlement)),
        };
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(name.to_ascii_lowercase()), HeaderValue::from_str(&value))
        {
            headers.insert(name, value);
            // A paid answer is the payer's alone.
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(CACHE_CONTROL_RECEIPT));
        }
    }
    if let Some(left) = free_left {
        headers.insert(HeaderName::from_static(FREE_REMAINING), HeaderValue::from(left));
    }
}

/// 402 with the PaymentRequired object in the body and, base64, in `PAYMENT-REQUIRED`,
/// and one `WWW-Authenticate: Payment` challenge per MPP method.
pub fn payment_required(required: &Required) -> Response {
    let mut response = Response::new(axum::body::Body::from(required.body.json.clone()));
    *response.status_mut() = StatusCode::PAYMENT_REQUIRED;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Ok(value) = HeaderValue::from_str(&required.body.base64) {
        headers.insert(HeaderName::from_static(x402::PAYMENT_REQUIRED), value);
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
/// proxy itself saw; earlier entries are the client's own claims), else the peer. The
/// HTTP routes and the MCP endpoints both have a request's headers and extensions.
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
