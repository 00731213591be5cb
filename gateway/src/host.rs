//! DNS-rebinding defence: when bound to loopback, only requests addressed to a loopback
//! name or address are served. A page on another site that rebinds its name to
//! 127.0.0.1 still sends its own name in `Host`, and is refused.

use std::net::IpAddr;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// Whether `host` (a Host header value, port optional) names this machine's loopback.
pub fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        // [::1]:8402
        Some(rest) => match rest.split_once(']') {
            Some((inner, after)) if after.is_empty() || valid_port(after) => inner,
            _ => return false,
        },
        None => match host.rsplit_once(':') {
            Some((name, port)) if valid_port(&format!(":{port}")) => name,
            Some(_) => return false,
            None => host,
        },
    };
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn valid_port(text: &str) -> bool {
    text.strip_prefix(':').is_some_and(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Middleware refusing requests whose Host is not loopback.
pub async fn require_loopback_host(request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
        .or_else(|| request.uri().authority().map(|a| a.as_str().to_string()));
    match host {
        Some(host) if is_loopback_host(&host) => next.run(request).await,
        _ => ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden_host",
            "this server answers only requests addressed to localhost, 127.0.0.1 or [::1]",
        )
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_loopback_names_and_addresses() {
        for host in ["localhost", "LOCALHOST:8402", "127.0.0.1", "127.0.0.1:8402", "127.3.2.1:1", "[::1]", "[::1]:8402"]
        {
            assert!(is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn refuses_everything_else() {
        for host in [
            "",
            "example.com",
            "evil.example:8402",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "10.0.0.1",
            "0.0.0.0:8402",
            "[::]:8402",
            "[::1]x",
            "localhost:",
            "localhost:99999x",
            "[::ffff:127.0.0.1]",
            "::1",
            "2130706433",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }
}
