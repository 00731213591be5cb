//! DNS-rebinding defence: requests are served only when their Host names this server:
//! a loopback name or address, the host of the public URL, the address it listens on
//! (when that is a specific address), or a name allowed explicitly. A page on another
//! site that rebinds its own name to this machine still sends its own name in `Host`,
//! and is refused.
//!
//! A server listening on all addresses has no specific address to accept, so it refuses
//! to start unless the public URL or an allowed name says which names it answers
//! (`ServerConfig::bind`). The check is a layer over everything the server serves, the
//! MCP endpoints and the app included. A request with several Host headers is refused.
//!
//! The MCP endpoints also check `Origin` ([`require_same_origin`]), as the MCP transport
//! asks: a browser's request from a page of another origin is refused.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// The Host values this server answers.
#[derive(Clone, Debug)]
pub struct HostPolicy {
    /// Lower-case host names and IP literals (without brackets or port) besides loopback.
    names: Vec<String>,
}

impl HostPolicy {
    /// The policy of a server listening on `listen`, reached at `public_url`, allowing
    /// `extra` names too.
    pub fn new(listen: SocketAddr, public_url: Option<&str>, extra: &[String]) -> HostPolicy {
        let mut names: Vec<String> =
            extra.iter().map(|n| n.trim().trim_matches(['[', ']']).to_ascii_lowercase()).collect();
        if !listen.ip().is_unspecified() && !listen.ip().is_loopback() {
            names.push(listen.ip().to_string());
        }
        if let Some(host) =
            public_url.and_then(|u| url::Url::parse(u).ok()).and_then(|u| u.host_str().map(str::to_string))
        {
            names.push(host.trim_matches(['[', ']']).to_ascii_lowercase());
        }
        names.retain(|n| !n.is_empty());
        names.sort();
        names.dedup();
        HostPolicy { names }
    }

    /// Whether a Host header value (port optional) names this server.
    pub fn allows(&self, host: &str) -> bool {
        let Some(name) = host_name(host) else { return false };
        if name.eq_ignore_ascii_case("localhost") || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback()) {
            return true;
        }
        let name = name.to_ascii_lowercase();
        self.names.contains(&name)
    }

    /// The names allowed besides loopback, for messages.
    pub fn names(&self) -> &[String] {
        &self.names
    }
}

/// The host part of a Host header: `name`, `name:port`, `[v6]` or `[v6]:port`.
fn host_name(host: &str) -> Option<&str> {
    match host.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((inner, after)) if after.is_empty() || valid_port(after) => Some(inner),
            _ => None,
        },
        None => match host.rsplit_once(':') {
            Some((name, port)) if valid_port(&format!(":{port}")) && !name.contains(':') => Some(name),
            Some(_) => None,
            None => Some(host),
        },
    }
    .filter(|name| !name.is_empty())
}

fn valid_port(text: &str) -> bool {
    text.strip_prefix(':').is_some_and(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Middleware refusing requests whose Host the policy does not allow.
pub async fn require_allowed_host(State(policy): State<Arc<HostPolicy>>, request: Request, next: Next) -> Response {
    if request.headers().get_all(axum::http::header::HOST).iter().count() > 1 {
        return ApiError::new(StatusCode::FORBIDDEN, "forbidden_host", "a request names one Host, not several")
            .into_response();
    }
    let host = request
        .headers()
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
        .or_else(|| request.uri().authority().map(|a| a.as_str().to_string()));
    match host {
        Some(host) if policy.allows(&host) => next.run(request).await,
        _ => {
            let mut names = vec!["localhost".to_string(), "127.0.0.1".into(), "[::1]".into()];
            names.extend(policy.names().iter().cloned());
            ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden_host",
                format!("this server answers only requests addressed to {}", names.join(", ")),
            )
            .into_response()
        }
    }
}

/// Lets through a request with no `Origin` (not from a browser page) or one of the server
/// it addresses: the same host and port as its `Host`, or a loopback name of that port
/// (`localhost` and `127.0.0.1` are one machine). Anything else, `null` included, is 403
/// `forbidden_origin`.
pub async fn require_same_origin(request: Request, next: Next) -> Response {
    let headers = request.headers();
    let origins: Vec<&str> =
        headers.get_all(axum::http::header::ORIGIN).iter().map(|v| v.to_str().unwrap_or("?")).collect();
    let host = headers.get(axum::http::header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    let allowed = match origins.as_slice() {
        [] => true,
        [origin] => same_origin(origin, host),
        _ => false,
    };
    if allowed {
        return next.run(request).await;
    }
    ApiError::new(
        StatusCode::FORBIDDEN,
        "forbidden_origin",
        "the MCP endpoints answer this server's own pages and clients that are not web pages; this request comes \
         from another origin",
    )
    .into_response()
}

/// Whether `origin` (`http://127.0.0.1:8402`) is the server reached as `host` (`localhost:8402`).
fn same_origin(origin: &str, host: &str) -> bool {
    let Ok(origin) = url::Url::parse(origin) else { return false };
    let (Some(origin_host), Some(origin_port)) = (origin.host_str(), origin.port_or_known_default()) else {
        return false;
    };
    let Ok(addressed) = url::Url::parse(&format!("{}://{host}", origin.scheme())) else { return false };
    let (Some(host_name), Some(host_port)) = (addressed.host_str(), addressed.port_or_known_default()) else {
        return false;
    };
    let loopback = |name: &str| {
        let bare = name.trim_start_matches('[').trim_end_matches(']');
        bare.eq_ignore_ascii_case("localhost") || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    };
    origin_port == host_port
        && (origin_host.eq_ignore_ascii_case(host_name) || (loopback(origin_host) && loopback(host_name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_is_the_server_it_addresses_or_refused() {
        assert!(same_origin("http://127.0.0.1:8402", "127.0.0.1:8402"));
        assert!(same_origin("http://localhost:8402", "127.0.0.1:8402"));
        assert!(same_origin("http://[::1]:8402", "localhost:8402"));
        assert!(same_origin("https://api.example.com", "api.example.com"));
        assert!(!same_origin("http://localhost:3000", "localhost:8402"), "another port is another site");
        assert!(!same_origin("https://attacker.example", "127.0.0.1:8402"));
        assert!(!same_origin("null", "127.0.0.1:8402"));
        assert!(!same_origin("http://127.0.0.1.attacker.example:8402", "127.0.0.1:8402"));
    }

    fn local() -> HostPolicy {
        HostPolicy::new("127.0.0.1:8402".parse().unwrap(), None, &[])
    }

    #[test]
    fn accepts_loopback_names_and_addresses() {
        for host in ["localhost", "LOCALHOST:8402", "127.0.0.1", "127.0.0.1:8402", "127.3.2.1:1", "[::1]", "[::1]:8402"]
        {
            assert!(local().allows(host), "{host}");
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
            assert!(!local().allows(host), "{host}");
        }
    }

    #[test]
    fn public_url_listen_address_and_extra_names_are_allowed() {
        let policy = HostPolicy::new(
            "0.0.0.0:8402".parse().unwrap(),
            Some("https://Docs.Example.com/"),
            &["paperchain.lan".to_string(), "[fd00::5]".to_string()],
        );
        for host in ["docs.example.com", "DOCS.example.com:443", "paperchain.lan:8402", "[fd00::5]:8402", "localhost"] {
            assert!(policy.allows(host), "{host}");
        }
        for host in ["evil.example", "0.0.0.0:8402", "example.com"] {
            assert!(!policy.allows(host), "{host}");
        }
        let specific = HostPolicy::new("192.168.1.20:8402".parse().unwrap(), None, &[]);
        assert!(specific.allows("192.168.1.20:8402"));
        assert!(!specific.allows("attacker.example"));
    }
}
