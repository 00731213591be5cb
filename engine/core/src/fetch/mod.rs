//! An SSRF-safe HTTP fetcher for untrusted URLs (documents given to a route by URL).
//!
//! Rules (`../shared/spec/routebook.md` §6):
//! - only `http` and `https` URLs, without userinfo (`user:pass@`);
//! - host names that only mean something locally (`localhost`, `*.localhost`, `*.local`,
//!   `*.internal`, `*.home.arpa`, single-label names, ...) are refused before any DNS
//!   lookup; IPv4 spellings in decimal/octal/hex/short form are normalised to dotted
//!   IPv4 by the WHATWG URL parser and then classified;
//! - every address a request may reach must be public (see [`address::classify`]): IP
//!   literals are classified before sending; names are resolved by our own resolver,
//!   which refuses the whole request if ANY resolved address is not public and hands the
//!   connector only the checked addresses, so there is no second lookup to rebind;
//! - no proxy (an environment proxy would defeat the check), no automatic redirects: at
//!   most [`FetchLimits::max_redirects`] are followed by hand, each new URL re-checked;
//! - at most [`FetchLimits::max_bytes`] of body (Content-Length checked up front, the
//!   stream counted) and [`FetchLimits::timeout`] in total across all redirects;
//! - raw bytes: no content decoding; a non-2xx final status is an error naming it.
//! - [`SafeFetcher::post`] (a time-stamp request to a user's time-stamp authority) follows
//!   only 307 and 308, which keep the method and the body.

pub mod address;

use std::error::Error as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::{CONTENT_DISPOSITION, CONTENT_TYPE, LOCATION};
use url::Url;

use crate::http_client::LazyClient;

pub use address::{AddressPolicy, BlockReason, Embedding, check_host_name, classify};

/// Limits applied to one fetch (all redirects included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FetchLimits {
    /// Largest body accepted, in bytes.
    pub max_bytes: u64,
    /// Total time for the whole fetch, redirects and body included.
    pub timeout: Duration,
    /// Most redirects followed.
    pub max_redirects: u8,
}

impl Default for FetchLimits {
    /// 50 MiB, 20 s, 5 redirects.
    fn default() -> Self {
        Self { max_bytes: 50 * 1024 * 1024, timeout: Duration::from_secs(20), max_redirects: 5 }
    }
}

/// A fetched body and what is known about it.
#[derive(Clone)]
pub struct Fetched {
    /// The raw body bytes (not decoded).
    pub bytes: Vec<u8>,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// The URL that answered, after redirects.
    pub final_url: Url,
    /// From `Content-Disposition`, else the last path segment of `final_url`.
    pub filename: Option<String>,
}

impl std::fmt::Debug for Fetched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetched")
            .field("bytes", &format_args!("<{} bytes>", self.bytes.len()))
            .field("content_type", &self.content_type)
            .field("final_url", &self.final_url.as_str())
            .field("filename", &self.filename)
            .finish()
    }
}

/// Why a fetch failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The URL is unparsable, has a scheme other than http/https, or carries userinfo.
    #[error("invalid URL: {0}")]
    InvalidUrl(String),
    /// The target host or address is not allowed.
    #[error("refused target: {0}")]
    Blocked(BlockReason),
    /// The body is larger than the limit.
    #[error("response body larger than the limit of {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// The fetch took longer than the total time limit.
    #[error("fetch timed out")]
    Timeout,
    /// More redirects than allowed.
    #[error("more than {limit} redirects")]
    TooManyRedirects {
        /// The redirect limit.
        limit: u8,
    },
    /// The final answer had a non-2xx status.
    #[error("upstream answered with HTTP status {0}")]
    Status(u16),
    /// DNS failure, connection refused, TLS error, broken body stream...
    #[error("network error: {0}")]
    Network(String),
}

/// Fetches untrusted URLs under the §6 rules; cheap to clone (shares the connection pool).
#[derive(Clone, Debug)]
pub struct SafeFetcher {
    /// The HTTP client (built on first use), or why it could not be built.
    client: LazyClient,
    /// Size, time and redirect limits.
    limits: FetchLimits,
    /// Which addresses may be reached.
    policy: Arc<AddressPolicy>,
}

impl SafeFetcher {
    /// A fetcher with these limits and address policy.
    pub fn new(limits: FetchLimits, policy: AddressPolicy) -> Self {
        let policy = Arc::new(policy);
        let resolver = Arc::new(CheckedResolver { policy: Arc::clone(&policy) });
        let client = LazyClient::new(move || build_client(&limits, Arc::clone(&resolver)));
        Self { client, limits, policy }
    }

    /// Fetch `url`, following redirects by hand; every target is checked first.
    pub async fn fetch(&self, url: &str) -> Result<Fetched, FetchError> {
        self.send(url, None).await
    }

    /// POST `body` as `content_type` to `url` and read the answer under the same rules;
    /// only 307 and 308 redirects (which keep the method and the body) are followed.
    pub async fn post(&self, url: &str, content_type: &'static str, body: Vec<u8>) -> Result<Fetched, FetchError> {
        self.send(url, Some((content_type, body))).await
    }

    /// A GET (`body` None) or a POST, under the time limit.
    async fn send(&self, url: &str, body: Option<(&'static str, Vec<u8>)>) -> Result<Fetched, FetchError> {
        let start = Url::parse(url).map_err(|e| FetchError::InvalidUrl(e.to_string()))?;
        check_url(&start, &self.policy)?;
        match tokio::time::timeout(self.limits.timeout, self.send_checked(start, body)).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::Timeout),
        }
    }

    /// The request loop; `url` has passed [`check_url`].
    async fn send_checked(&self, mut url: Url, body: Option<(&'static str, Vec<u8>)>) -> Result<Fetched, FetchError> {
        let client = self.client.get().map_err(FetchError::Network)?;
        let mut redirects: u8 = 0;
        loop {
            // Every URL reaching this point was checked (the start URL by `send`,
            // redirect targets below); check again so the invariant is local.
            check_url(&url, &self.policy)?;
            let request = match &body {
                None => client.get(url.clone()),
                Some((content_type, bytes)) => {
                    client.post(url.clone()).header(CONTENT_TYPE, *content_type).body(bytes.clone())
                }
            };
            let mut response = request.send().await.map_err(network_error)?;
            let status = response.status();
            let follows = if body.is_some() { &[307, 308][..] } else { &[301, 302, 303, 307, 308][..] };
            if follows.contains(&status.as_u16()) {
                let location = response.headers().get(LOCATION).ok_or(FetchError::Status(status.as_u16()))?;
                let location = std::str::from_utf8(location.as_bytes())
                    .map_err(|_| FetchError::InvalidUrl("redirect Location is not UTF-8".to_string()))?;
                let next = url.join(location).map_err(|e| FetchError::InvalidUrl(format!("redirect target: {e}")))?;
                check_url(&next, &self.policy)?;
                if redirects >= self.limits.max_redirects {
                    return Err(FetchError::TooManyRedirects { limit: self.limits.max_redirects });
                }
                redirects += 1;
                url = next;
                continue;
            }
            if !status.is_success() {
                return Err(FetchError::Status(status.as_u16()));
            }

            let limit = self.limits.max_bytes;
            let too_large = FetchError::TooLarge { limit };
            let declared = response.content_length();
            if declared.is_some_and(|len| len > limit) {
                return Err(too_large);
            }
            let content_type = header_text(&response, CONTENT_TYPE);
            let disposition = header_text(&response, CONTENT_DISPOSITION);
            // Preallocate for the declared length (already bounded by the limit), capped.
            let capacity = declared.unwrap_or(0).min(8 * 1024 * 1024);
            let mut bytes = Vec::with_capacity(usize::try_from(capacity).unwrap_or(0));
            while let Some(chunk) = response.chunk().await.map_err(network_error)? {
                let total = bytes.len() as u64 + chunk.len() as u64;
                if total > limit {
                    return Err(too_large);
                }
                bytes.extend_from_slice(&chunk);
            }
            let filename =
                disposition.as_deref().and_then(filename_from_disposition).or_else(|| filename_from_url(&url));
            return Ok(Fetched { bytes, content_type, final_url: url, filename });
        }
    }
}

/// The reqwest client: no proxy, no automatic redirects, our resolver, connect timeout.
fn build_client<R: Resolve + 'static>(limits: &FetchLimits, resolver: Arc<R>) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .dns_resolver(resolver)
        .connect_timeout(limits.timeout)
        .user_agent(concat!("paperchain/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// Scheme, userinfo and host checks for one URL (initial or redirect target).
fn check_url(url: &Url, policy: &AddressPolicy) -> Result<(), FetchError> {
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(FetchError::InvalidUrl(format!("scheme {other:?} is not allowed (http or https only)")));
        }
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(FetchError::InvalidUrl("credentials (userinfo) in URLs are not allowed".to_string()));
    }
    let host = url.host().ok_or_else(|| FetchError::InvalidUrl("the URL has no host".to_string()))?;
    policy.permits_host(&host).map_err(FetchError::Blocked)
}

/// A header value as text, if present and visible ASCII.
fn header_text(response: &reqwest::Response, name: reqwest::header::HeaderName) -> Option<String> {
    response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
}

/// Map a reqwest error: our resolver's refusal, a timeout, or a short network message.
fn network_error(err: reqwest::Error) -> FetchError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = err.source();
    while let Some(cause) = source {
        if let Some(reason) = cause.downcast_ref::<BlockReason>() {
            return FetchError::Blocked(reason.clone());
        }
        source = cause.source();
    }
    if err.is_timeout() {
        return FetchError::Timeout;
    }
    // Without the URL: a query string may carry a signed token.
    let err = err.without_url();
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    FetchError::Network(truncate(message, 300))
}

/// Cut `text` to at most `max` bytes on a character boundary.
fn truncate(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// The resolver given to reqwest: checks the name, resolves once, checks every address.
struct CheckedResolver {
    /// Which addresses may be returned.
    policy: Arc<AddressPolicy>,
}

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = Arc::clone(&self.policy);
        let host = name.as_str().to_string();
        Box::pin(async move {
            check_host_name(&host)?;
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await
                .map_err(|e| format!("cannot resolve {host}: {e}"))?
                .collect();
            if addrs.is_empty() {
                return Err(format!("{host} has no addresses").into());
            }
            for addr in &addrs {
                policy.permits(addr.ip())?;
            }
            let addrs: Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// The file name from a `Content-Disposition` value (`filename*` preferred).
fn filename_from_disposition(value: &str) -> Option<String> {
    let mut plain = None;
    let mut extended = None;
    for (key, val) in disposition_params(value) {
        match key.to_ascii_lowercase().as_str() {
            "filename*" => extended = decode_ext_value(&val),
            "filename" => plain = Some(val),
            _ => {}
        }
    }
    extended.and_then(|n| sanitize_filename(&n)).or_else(|| plain.and_then(|n| sanitize_filename(&n)))
}

/// The `key=value` parameters after the disposition type (quoted strings unescaped).
fn disposition_params(value: &str) -> Vec<(String, String)> {
    let mut params = Vec::new();
    let mut chars = value.chars().peekable();
    // Skip the disposition type.
    for c in chars.by_ref() {
        if c == ';' {
            break;
        }
    }
    loop {
        let mut key = String::new();
        for c in chars.by_ref() {
            if c == '=' || c == ';' {
                break;
            }
            key.push(c);
        }
        let key = key.trim().to_string();
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut val = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => {
                        if let Some(escaped) = chars.next() {
                            val.push(escaped);
                        }
                    }
                    other => val.push(other),
                }
            }
            for c in chars.by_ref() {
                if c == ';' {
                    break;
                }
            }
        } else {
            for c in chars.by_ref() {
                if c == ';' {
                    break;
                }
                val.push(c);
            }
            val = val.trim().to_string();
        }
        if !key.is_empty() {
            params.push((key, val));
        }
        if chars.peek().is_none() {
            break;
        }
    }
    params
}

/// Decode an RFC 8187 `charset'lang'pct-encoded` value (UTF-8 or ISO-8859-1).
fn decode_ext_value(value: &str) -> Option<String> {
    let mut parts = value.splitn(3, '\'');
    let charset = parts.next()?.to_ascii_lowercase();
    let _language = parts.next()?;
    let bytes = percent_decode(parts.next()?);
    match charset.as_str() {
        "utf-8" => String::from_utf8(bytes).ok(),
        "iso-8859-1" => Some(bytes.into_iter().map(char::from).collect()),
        _ => None,
    }
}

/// Percent-decode `text` to bytes (malformed escapes kept as written).
fn percent_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = bytes.get(i + 1..i + 3)
            && let Ok(hex) = std::str::from_utf8(hex)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

/// The last non-empty path segment of `url`, percent-decoded.
fn filename_from_url(url: &Url) -> Option<String> {
    let segment = url.path_segments()?.rev().find(|s| !s.is_empty())?;
    let decoded = String::from_utf8_lossy(&percent_decode(segment)).into_owned();
    sanitize_filename(&decoded)
}

/// A bare file name: no directories, no control characters, not `.`/`..`, at most 255 bytes.
fn sanitize_filename(name: &str) -> Option<String> {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let cleaned: String = base.chars().filter(|c| !c.is_control()).collect();
    let cleaned = cleaned.trim();
    if cleaned.is_empty() || cleaned == "." || cleaned == ".." {
        return None;
    }
    Some(truncate_plain(cleaned, 255))
}

/// Cut `text` to at most `max` bytes on a character boundary (no ellipsis).
fn truncate_plain(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_default() {
        let limits = FetchLimits::default();
        assert_eq!(limits.max_bytes, 50 * 1024 * 1024);
        assert_eq!(limits.timeout, Duration::from_secs(20));
        assert_eq!(limits.max_redirects, 5);
    }

    fn checked(url: &str) -> Result<(), FetchError> {
        check_url(&Url::parse(url).unwrap(), &AddressPolicy::public_only())
    }

    #[test]
    fn url_checks() {
        assert!(checked("https://example.com/a.pdf").is_ok());
        assert!(checked("http://example.com:8080/a.pdf").is_ok());
        for url in [
            "file:///etc/passwd",
            "ftp://example.com/a",
            "gopher://example.com/",
            "data:text/plain,hi",
            "javascript:alert(1)",
            "http://user:pass@example.com/",
            "http://user@example.com/",
            "http://:pass@example.com/",
        ] {
            assert!(matches!(checked(url), Err(FetchError::InvalidUrl(_))), "{url}");
        }
        for url in ["http://127.0.0.1/", "http://localhost/", "https://[::1]:8443/", "http://2130706433/"] {
            assert!(matches!(checked(url), Err(FetchError::Blocked(_))), "{url}");
        }
    }

    #[tokio::test]
    async fn fetch_refuses_before_connecting() {
        let fetcher = SafeFetcher::new(FetchLimits::default(), AddressPolicy::public_only());
        let err = fetcher.fetch("http://127.0.0.1:9/").await.unwrap_err();
        assert_eq!(err.to_string(), "refused target: 127.0.0.1 is a loopback address");
        assert!(matches!(fetcher.fetch("not a url").await, Err(FetchError::InvalidUrl(_))));
        assert!(matches!(
            fetcher.fetch("http://localhost./").await,
            Err(FetchError::Blocked(BlockReason::LocalName(_)))
        ));
    }

    #[tokio::test]
    async fn resolver_refuses_names_and_non_public_addresses() {
        let resolver = CheckedResolver { policy: Arc::new(AddressPolicy::public_only()) };
        let err = resolver.resolve("localhost".parse().unwrap()).await.err().unwrap();
        assert!(err.downcast_ref::<BlockReason>().is_some(), "{err}");
        // An IP spelling handed to the resolver as a name is still classified.
        let err = resolver.resolve("127.0.0.1".parse().unwrap()).await.err().unwrap();
        assert!(err.downcast_ref::<BlockReason>().is_some(), "{err}");
    }

    /// A resolver that refuses every name, standing in for a name resolving to a
    /// non-public address (no such name resolves in the test environment).
    struct RefuseAll;

    impl Resolve for RefuseAll {
        fn resolve(&self, _: Name) -> Resolving {
            Box::pin(async {
                Err(BlockReason::Address { ip: "10.0.0.1".parse().unwrap(), reason: Box::new(BlockReason::Private) }
                    .into())
            })
        }
    }

    #[tokio::test]
    async fn resolver_refusal_surfaces_as_blocked_through_reqwest() {
        let client = build_client(&FetchLimits::default(), Arc::new(RefuseAll)).unwrap();
        let err = client.get("http://example.com/").send().await.map_err(network_error).unwrap_err();
        match err {
            FetchError::Blocked(reason) => {
                assert_eq!(reason.class(), &BlockReason::Private);
                assert_eq!(
                    FetchError::Blocked(reason).to_string(),
                    "refused target: 10.0.0.1 is a private-use address"
                );
            }
            other => panic!("expected Blocked, got {other:?}"),
        }
    }

    #[test]
    fn content_disposition_names() {
        let f = filename_from_disposition;
        assert_eq!(f("attachment; filename=\"paper.pdf\"").as_deref(), Some("paper.pdf"));
        assert_eq!(f("attachment; filename=paper.pdf").as_deref(), Some("paper.pdf"));
        assert_eq!(f("attachment; filename=\"a;b \\\"c\\\".pdf\"").as_deref(), Some("a;b \"c\".pdf"));
        assert_eq!(
            f("attachment; filename=\"fallback.pdf\"; filename*=UTF-8''%E2%82%AC%20rates.pdf").as_deref(),
            Some("€ rates.pdf")
        );
        assert_eq!(f("attachment; FILENAME*=iso-8859-1'en'%A3.pdf").as_deref(), Some("£.pdf"));
        assert_eq!(f("attachment; filename=\"../../etc/passwd\"").as_deref(), Some("passwd"));
        assert_eq!(f("attachment; filename=\"C:\\\\x\\\\y.pdf\"").as_deref(), Some("y.pdf"));
        assert_eq!(f("attachment; filename=\"..\""), None);
        assert_eq!(f("inline"), None);
        assert_eq!(f("attachment; filename="), None);
    }

    #[test]
    fn url_file_names() {
        let f = |u: &str| filename_from_url(&Url::parse(u).unwrap());
        assert_eq!(f("https://x.org/a/b/paper%20one.pdf").as_deref(), Some("paper one.pdf"));
        assert_eq!(f("https://x.org/a/b/").as_deref(), Some("b"));
        assert_eq!(f("https://x.org/"), None);
        assert_eq!(f("https://x.org/a/%2e%2e"), None);
        assert_eq!(f("https://x.org/a/x%2Fy.pdf").as_deref(), Some("y.pdf"));
    }

    #[test]
    fn network_messages_are_truncated() {
        let long = "é".repeat(400);
        let cut = truncate(long, 301);
        assert!(cut.len() <= 301 + '…'.len_utf8());
    }
}
