//! DNS-rebinding defence: requests are served only when their Host names this server:
//! a loopback name or address, the host of the public URL, the address it listens on
//! (when that is a specific address), or a name allowed explicitly. A page on another
//! site that rebinds its own name to this machine still sends its own name in `Host`,
//! and is refused.
//!
//! A server listening on all addresses has no specific address to accept, so it refuses
//! to start unless the public URL or an allowed name says which names it answers
//! (`ServerConfig::bind`). The check is a layer over everything the server serves, the
//! MCP endpoints and the app included.

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

#[cfg(test)]
mod tests {
    use super::*;

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
