//! JSON-RPC over HTTP to chain nodes, shared by the EVM chains (`evm/`) and the Solana
//! clusters (`solana/`): a node's URLs tried in order, each within its own time, every
//! network failure turned into an [`UpstreamFailure`] that already carries the
//! [`ErrorKind`] a front door reports (timeout, rate limit with its Retry-After, bad
//! answer, unreachable), and errors naming the node's host only, never its full URL (the
//! path or query of an RPC URL often holds an API key).

use std::future::Future;
use std::time::Duration;

use url::Url;

use crate::error::{EngineError, ErrorKind};
use crate::http_client::LazyClient;

/// Largest JSON-RPC answer read; a larger one is a bad upstream answer.
pub const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;
/// What a 429 or 503 without a usable Retry-After suggests.
pub const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(5);

/// An upstream failure: what happened at the network, as the kind a front door reports.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{message}")]
pub struct UpstreamFailure {
    /// Timeout, RateLimited, BadUpstream or Unavailable.
    pub kind: ErrorKind,
    /// What happened, naming the RPC host (never its full URL, which may hold a key).
    pub message: String,
}

impl UpstreamFailure {
    /// A failure of `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> UpstreamFailure {
        UpstreamFailure { kind, message: message.into() }
    }

    /// A node that answered something unusable.
    pub fn bad(message: impl Into<String>) -> UpstreamFailure {
        UpstreamFailure::new(ErrorKind::BadUpstream, message)
    }

    /// The engine error with the matching stable code.
    pub fn into_engine_error(self) -> EngineError {
        let code = match self.kind {
            ErrorKind::Timeout => "timeout",
            ErrorKind::RateLimited { .. } => "rate_limited",
            ErrorKind::Unavailable { .. } => "unavailable",
            ErrorKind::Internal => "internal",
            _ => "upstream_error",
        };
        EngineError::new(self.kind, code, self.message)
    }

    /// Which of several failures (one per URL) speaks for them all: a rate limit says when
    /// to come back, a timeout or a bad answer means a node was there, and "unreachable"
    /// only holds when it held everywhere.
    fn rank(&self) -> u8 {
        match self.kind {
            ErrorKind::RateLimited { .. } => 3,
            ErrorKind::Timeout => 2,
            ErrorKind::BadUpstream => 1,
            _ => 0,
        }
    }
}

/// One RPC URL of a chain, with what the node said it serves (asked once: concurrent
/// first requests share the asking). `I` is the identity checked: a chain id, a genesis hash.
pub struct Endpoint<I> {
    /// The URL requests go to.
    pub url: Url,
    /// Scheme, host and port only, for messages and logs.
    pub label: String,
    /// The node's identity, once asked.
    pub identity: tokio::sync::OnceCell<I>,
}

impl<I> Endpoint<I> {
    /// An endpoint for `url`, its identity not asked yet.
    pub fn new(url: Url) -> Endpoint<I> {
        Endpoint { label: endpoint_label(&url), url, identity: tokio::sync::OnceCell::new() }
    }
}

fn endpoint_label(url: &Url) -> String {
    match (url.host_str(), url.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_string(),
        _ => "(no host)".to_string(),
    }
}

/// The HTTP client of chain nodes: no redirects (an RPC URL is configuration; a redirect
/// away from it is not followed), built on first use.
pub fn node_client() -> LazyClient {
    LazyClient::new(|| {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))
    })
}

/// Runs `attempt` on each endpoint in order, each within `attempt_timeout`, until one
/// succeeds; when none does, the failure that speaks for them all (see
/// `UpstreamFailure::rank`), its message listing each. `network` and `env_var` name the
/// chain and the variable that sets its URLs, for the message when there is none.
pub async fn first_answer<'a, I, T, F, Fut>(
    network: &str,
    env_var: &str,
    endpoints: &'a [Endpoint<I>],
    attempt_timeout: Duration,
    attempt: F,
) -> Result<T, UpstreamFailure>
where
    F: Fn(&'a Endpoint<I>) -> Fut,
    Fut: Future<Output = Result<T, UpstreamFailure>>,
{
    let mut failures: Vec<UpstreamFailure> = Vec::new();
    for endpoint in endpoints {
        let outcome = match tokio::time::timeout(attempt_timeout, attempt(endpoint)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(UpstreamFailure::new(
                ErrorKind::Timeout,
                format!("{}: no answer within {}", endpoint.label, seconds(attempt_timeout)),
            )),
        };
        match outcome {
            Ok(answer) => return Ok(answer),
            Err(failure) => {
                tracing::debug!(network, endpoint = %endpoint.label, error = %failure, "RPC endpoint failed");
                failures.push(failure);
            }
        }
    }
    Err(combine(network, env_var, failures))
}

fn combine(network: &str, env_var: &str, failures: Vec<UpstreamFailure>) -> UpstreamFailure {
    let Some(worst) = failures.iter().max_by_key(|f| f.rank()) else {
        return UpstreamFailure::new(
            ErrorKind::Unavailable { retry_after: DEFAULT_RETRY_AFTER },
            format!("no RPC URL is configured for {network} (set {env_var})"),
        );
    };
    let kind = match worst.kind {
        // One rate limit among several failures: come back after the longest delay asked.
        ErrorKind::RateLimited { .. } => ErrorKind::RateLimited {
            retry_after: failures
                .iter()
                .filter_map(|f| match f.kind {
                    ErrorKind::RateLimited { retry_after } => Some(retry_after),
                    _ => None,
                })
                .max()
                .unwrap_or(DEFAULT_RETRY_AFTER),
        },
        kind => kind,
    };
    let detail: Vec<&str> = failures.iter().map(|f| f.message.as_str()).collect();
    UpstreamFailure::new(kind, format!("the {network} RPC could not be read: {}", detail.join("; ")))
}

/// Posts a JSON-RPC body to `endpoint` and reads the answer, up to [`MAX_ANSWER_BYTES`].
/// HTTP 429 and 503 are a rate limit and an unavailable node, with their Retry-After; a
/// 4xx or 5xx whose body is JSON is returned (nodes put JSON-RPC errors there too).
pub async fn post<I>(http: &LazyClient, endpoint: &Endpoint<I>, body: Vec<u8>) -> Result<Vec<u8>, UpstreamFailure> {
    let label = &endpoint.label;
    let http = http.get().map_err(|why| UpstreamFailure::new(ErrorKind::Internal, why))?;
    let response = http
        .post(endpoint.url.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| send_failure(label, &e))?;
    let status = response.status();
    let retry_after = retry_after(response.headers());
    if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
        return Err(UpstreamFailure::new(
            ErrorKind::RateLimited { retry_after: retry_after.unwrap_or(DEFAULT_RETRY_AFTER) },
            format!("{label}: the node refused the request for rate (HTTP 429)"),
        ));
    }
    if status == reqwest::StatusCode::SERVICE_UNAVAILABLE {
        return Err(UpstreamFailure::new(
            ErrorKind::Unavailable { retry_after: retry_after.unwrap_or(DEFAULT_RETRY_AFTER) },
            format!("{label}: the node is unavailable (HTTP 503)"),
        ));
    }
    let mut response = response;
    let mut answer = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if answer.len() + chunk.len() > MAX_ANSWER_BYTES {
                    return Err(UpstreamFailure::bad(format!(
                        "{label}: the answer is larger than {} MiB",
                        MAX_ANSWER_BYTES >> 20
                    )));
                }
                answer.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(e) => return Err(send_failure(label, &e)),
        }
    }
    if !status.is_success() && serde_json::from_slice::<serde::de::IgnoredAny>(&answer).is_err() {
        return Err(UpstreamFailure::bad(format!("{label}: HTTP {status}")));
    }
    Ok(answer)
}

fn send_failure(label: &str, error: &reqwest::Error) -> UpstreamFailure {
    if error.is_timeout() {
        UpstreamFailure::new(ErrorKind::Timeout, format!("{label}: timed out"))
    } else if error.is_connect() {
        UpstreamFailure::new(
            ErrorKind::Unavailable { retry_after: DEFAULT_RETRY_AFTER },
            format!("{label}: cannot connect"),
        )
    } else {
        UpstreamFailure::bad(format!("{label}: the connection failed mid-answer"))
    }
}

/// Retry-After in its delay-seconds form (nodes do not send HTTP dates in practice).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim();
    let secs: u64 = value.parse().ok()?;
    Some(Duration::from_secs(secs.clamp(1, 3600)))
}

/// Runs one call's reads of `network` within `total`, across every URL and request.
pub async fn within<T>(
    network: &str,
    total: Duration,
    work: impl Future<Output = Result<T, EngineError>>,
) -> Result<T, EngineError> {
    match tokio::time::timeout(total, work).await {
        Ok(result) => result,
        Err(_) => Err(EngineError::new(
            ErrorKind::Timeout,
            "timeout",
            format!("the {network} RPC did not answer within {}", seconds(total)),
        )),
    }
}

/// Whether a JSON-RPC error object is a node refusing for rate (codes and wording differ by
/// provider).
pub fn is_rate_limit(code: i64, message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    code == -32005 || code == 429 || lower.contains("rate limit") || lower.contains("too many requests")
}

/// The start of an unusable answer, for a message.
pub fn preview(answer: &[u8]) -> String {
    let text = String::from_utf8_lossy(&answer[..answer.len().min(80)]).into_owned();
    format!("`{}`", clean_text(&text, 80))
}

/// Untrusted text cut to `max` characters, control characters but newline and tab dropped.
pub fn clean_text(text: &str, max: usize) -> String {
    text.chars().filter(|c| !c.is_control() || *c == '\n' || *c == '\t').take(max).collect()
}

/// A 502: a node's answer cannot be used.
pub fn bad_upstream(message: String) -> EngineError {
    EngineError::new(ErrorKind::BadUpstream, "upstream_error", message)
}

/// A duration as messages show it: `4 s`, `0.3 s`.
pub fn seconds(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) { format!("{} s", ms / 1000) } else { format!("{:.1} s", d.as_secs_f64()) }
}

/// The variable that overrides a chain's RPC URLs: `PAPERCHAIN_RPC_ETHEREUM`,
/// `PAPERCHAIN_RPC_SOLANA_DEVNET`.
pub fn rpc_env_var(chain: &str) -> String {
    format!("PAPERCHAIN_RPC_{}", chain.to_ascii_uppercase().replace('-', "_"))
}

/// An environment variable's value; one that is not Unicode is read lossily, so that it
/// fails parsing with a message rather than counting as unset.
pub fn env_value(key: &str) -> Option<String> {
    std::env::var_os(key).map(|v| v.to_string_lossy().into_owned())
}

/// A comma-separated list of RPC URLs (`var` names where it came from); entries that are
/// not http(s) URLs are skipped with a warning that does not quote them.
pub fn parse_url_list(list: &str, var: &str) -> Vec<Url> {
    list.split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .filter_map(|u| match Url::parse(u) {
            Ok(url) if matches!(url.scheme(), "http" | "https") => Some(url),
            _ => {
                // The URL may hold an API key: its text stays out of the log.
                tracing::warn!("{var}: an entry is not an http(s) URL and is skipped");
                None
            }
        })
        .collect()
}

/// The URLs in `var` when it is set and not blank, else `defaults`.
pub fn urls_from(lookup: &impl Fn(&str) -> Option<String>, var: &str, defaults: &[&str]) -> Vec<Url> {
    match lookup(var).filter(|v| !v.trim().is_empty()) {
        Some(list) => parse_url_list(&list, var),
        None => defaults.iter().filter_map(|u| Url::parse(u).ok()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_hide_paths_that_hold_keys() {
        let url = Url::parse("https://eth-mainnet.example.com/v2/SECRETKEY").unwrap();
        assert_eq!(endpoint_label(&url), "eth-mainnet.example.com");
        let url = Url::parse("http://127.0.0.1:8545/?key=SECRET").unwrap();
        assert_eq!(endpoint_label(&url), "127.0.0.1:8545");
    }

    #[test]
    fn several_failures_report_the_most_telling() {
        let refused =
            || UpstreamFailure::new(ErrorKind::Unavailable { retry_after: DEFAULT_RETRY_AFTER }, "a: cannot connect");
        let slow = UpstreamFailure::new(ErrorKind::Timeout, "b: no answer");
        let all = combine("ethereum", "PAPERCHAIN_RPC_ETHEREUM", vec![refused(), slow]);
        assert_eq!(all.kind, ErrorKind::Timeout);
        assert!(all.message.contains("a: cannot connect; b: no answer"), "{}", all.message);
        let limited = UpstreamFailure::new(ErrorKind::RateLimited { retry_after: Duration::from_secs(7) }, "c: 429");
        let all = combine("ethereum", "PAPERCHAIN_RPC_ETHEREUM", vec![refused(), limited]);
        assert_eq!(all.kind, ErrorKind::RateLimited { retry_after: Duration::from_secs(7) });
        let none = combine("Solana devnet", "PAPERCHAIN_RPC_SOLANA_DEVNET", vec![]);
        assert!(matches!(none.kind, ErrorKind::Unavailable { .. }));
        assert!(none.message.contains("PAPERCHAIN_RPC_SOLANA_DEVNET"), "{}", none.message);
    }
}
