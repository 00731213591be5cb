//! The client of Hyperliquid's info API (`{base}/info`) and its cache: each answer is
//! reused for [`CACHE_TTL`], concurrent misses make one request, and a failure is shared
//! with the callers queued behind it but not kept for later ones. The base URL is
//! configuration (`PAPERCHAIN_FUNDING_UPSTREAM`) so tests can point it at a loopback
//! server replaying recorded answers.
//!
//! What this module must not do: use a route file, or follow redirects or read an answer
//! past 16 MiB.

use std::collections::HashMap;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use super::{CacheUse, HISTORY_DAYS, History, SOURCE_NAME, Venue, parse_history, parse_venue};
use crate::error::{EngineError, ErrorKind};
use crate::rpc_http::bad_upstream;

/// Environment variable overriding the upstream's base URL.
pub const UPSTREAM_ENV: &str = "PAPERCHAIN_FUNDING_UPSTREAM";
/// Hyperliquid's public API.
pub const DEFAULT_UPSTREAM: &str = "https://api.hyperliquid.xyz";
/// How long one upstream request (answer body included) may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an upstream answer is reused (spec, Limits: "funding cache up to 60 s").
pub const CACHE_TTL: Duration = Duration::from_secs(60);

/// `metaAndAssetCtxs` is a few hundred kilobytes; anything far larger is not its answer.
const MAX_UPSTREAM_BYTES: usize = 16 * 1024 * 1024;
/// Retry-After for an upstream outage.
const OUTAGE_RETRY_AFTER: Duration = Duration::from_secs(30);
/// Retry-After for an upstream 429 that does not say how long to wait.
const RATE_RETRY_AFTER: Duration = Duration::from_secs(30);
/// Longest Retry-After passed on from the upstream.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);

/// Where and how the funding upstream is read.
#[derive(Clone, Debug)]
pub struct FundingConfig {
    /// Base URL of the info API, without a trailing slash (`{base}/info` is requested).
    pub base_url: String,
    /// Longest one upstream request may take.
    pub timeout: Duration,
    /// How long an upstream answer is reused.
    pub cache_ttl: Duration,
}

impl Default for FundingConfig {
    fn default() -> Self {
        FundingConfig { base_url: DEFAULT_UPSTREAM.into(), timeout: DEFAULT_TIMEOUT, cache_ttl: CACHE_TTL }
    }
}

impl FundingConfig {
    /// The defaults, with the base URL from `PAPERCHAIN_FUNDING_UPSTREAM` when set.
    pub fn from_env() -> Self {
        Self::with_upstream(std::env::var(UPSTREAM_ENV).ok().as_deref())
    }

    /// The defaults, with `base_url` when it is given and not blank.
    pub fn with_upstream(base_url: Option<&str>) -> Self {
        let base = base_url.map(str::trim).filter(|b| !b.is_empty()).unwrap_or(DEFAULT_UPSTREAM);
        FundingConfig { base_url: base.trim_end_matches('/').to_string(), ..FundingConfig::default() }
    }
}

/// One cached upstream answer, with the last failure so that callers queued behind a
/// failing request share its error instead of each waiting for a timeout of their own.
struct Slot<T> {
    value: Option<(Arc<T>, Instant)>,
    failure: Option<(Instant, EngineError)>,
}

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Slot { value: None, failure: None }
    }
}

/// The funding upstream's client and its 60 s cache (shared by every call).
pub struct FundingClient {
    config: FundingConfig,
    http: Result<reqwest::Client, String>,
    venue: Mutex<Slot<Venue>>,
    histories: StdMutex<HashMap<String, Arc<Mutex<Slot<History>>>>>,
}

impl FundingClient {
    /// A client for `config`.
    pub fn new(config: FundingConfig) -> Self {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(config.timeout)
            .user_agent(concat!("paperchain/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| e.to_string());
        FundingClient { config, http, venue: Mutex::new(Slot::default()), histories: StdMutex::new(HashMap::new()) }
    }

    /// A client configured from the environment ([`FundingConfig::from_env`]).
    pub fn from_env() -> Self {
        Self::new(FundingConfig::from_env())
    }

    /// The configuration.
    pub fn config(&self) -> &FundingConfig {
        &self.config
    }

    /// Every perpetual market with its figures.
    pub async fn venue(&self) -> Result<(Arc<Venue>, CacheUse), EngineError> {
        let body = serde_json::json!({ "type": "metaAndAssetCtxs" });
        cached(&self.venue, self.config.cache_ttl, async { parse_venue(&self.post(&body, "metaAndAssetCtxs").await?) })
            .await
    }

    /// The last 7 days of hourly funding of `coin` (the venue's spelling).
    pub async fn history(&self, coin: &str) -> Result<(Arc<History>, CacheUse), EngineError> {
        // Only symbols found in the venue's universe get here, so the map stays small.
        let slot = {
            let mut map = self.histories.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            Arc::clone(map.entry(coin.to_string()).or_default())
        };
        let start = time::OffsetDateTime::now_utc().unix_timestamp().saturating_sub(HISTORY_DAYS * 86_400) * 1000;
        let body = serde_json::json!({ "type": "fundingHistory", "coin": coin, "startTime": start });
        cached(&slot, self.config.cache_ttl, async { parse_history(&self.post(&body, "fundingHistory").await?, coin) })
            .await
    }

    /// POSTs `body` to `{base}/info` and reads the answer's bytes.
    async fn post(&self, body: &serde_json::Value, what: &str) -> Result<Vec<u8>, EngineError> {
        let client = self
            .http
            .as_ref()
            .map_err(|e| unavailable(format!("the {SOURCE_NAME} client could not be set up: {e}")))?;
        let url = format!("{}/info", self.config.base_url);
        let payload = serde_json::to_vec(body).map_err(|e| EngineError::internal(format!("encoding {what}: {e}")))?;
        let exchange = async {
            let mut response = client
                .post(&url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(payload)
                .send()
                .await
                .map_err(|e| send_error(&e, what))?;
            let status = response.status();
            if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
                let after = retry_after(response.headers()).unwrap_or(RATE_RETRY_AFTER);
                return Err(EngineError::new(
                    ErrorKind::RateLimited { retry_after: after },
                    "rate_limited",
                    format!("{SOURCE_NAME} is rate-limiting our requests; retry in {} s", after.as_secs().max(1)),
                ));
            }
            if matches!(status.as_u16(), 502..=504) {
                return Err(unavailable(format!("{SOURCE_NAME}'s API is unavailable (HTTP {status})")));
            }
            if !status.is_success() {
                return Err(bad_upstream(format!("{SOURCE_NAME} answered {what} with HTTP {status}")));
            }
            let mut bytes = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| bad_upstream(format!("{SOURCE_NAME}'s {what} answer could not be read: {e}")))?
            {
                if bytes.len() + chunk.len() > MAX_UPSTREAM_BYTES {
                    return Err(bad_upstream(format!("{SOURCE_NAME}'s {what} answer is larger than expected")));
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok(bytes)
        };
        match tokio::time::timeout(self.config.timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(timed_out(what, self.config.timeout)),
        }
        .inspect_err(|e| tracing::warn!(code = %e.code, message = %e.message, "funding upstream request failed"))
    }
}

/// The cached value of `slot` if younger than `ttl`, else `fetch`'s, stored. The slot's
/// lock is held across the fetch, so concurrent misses make one upstream request.
async fn cached<T>(
    slot: &Mutex<Slot<T>>,
    ttl: Duration,
    fetch: impl Future<Output = Result<T, EngineError>>,
) -> Result<(Arc<T>, CacheUse), EngineError> {
    let asked = Instant::now();
    let mut slot = slot.lock().await;
    if let Some((value, at)) = &slot.value
        && at.elapsed() < ttl
    {
        return Ok((Arc::clone(value), CacheUse::Cached));
    }
    if let Some((failed_at, error)) = &slot.failure
        && *failed_at >= asked
    {
        return Err(error.clone());
    }
    // The data is as old as the request that read it.
    let started = Instant::now();
    match fetch.await {
        Ok(value) => {
            let value = Arc::new(value);
            slot.value = Some((Arc::clone(&value), started));
            slot.failure = None;
            Ok((value, CacheUse::Fetched))
        }
        Err(error) => {
            slot.failure = Some((Instant::now(), error.clone()));
            Err(error)
        }
    }
}

fn unavailable(message: String) -> EngineError {
    EngineError::new(ErrorKind::Unavailable { retry_after: OUTAGE_RETRY_AFTER }, "unavailable", message)
}

fn timed_out(what: &str, limit: Duration) -> EngineError {
    EngineError::new(
        ErrorKind::Timeout,
        "timeout",
        format!("{SOURCE_NAME} did not answer {what} within {} ms", limit.as_millis()),
    )
}

fn send_error(error: &reqwest::Error, what: &str) -> EngineError {
    if error.is_connect() {
        unavailable(format!("{SOURCE_NAME}'s API cannot be reached"))
    } else if error.is_timeout() {
        EngineError::new(ErrorKind::Timeout, "timeout", format!("{SOURCE_NAME} did not answer {what} in time"))
    } else {
        unavailable(format!("{SOURCE_NAME}'s API could not be asked for {what}"))
    }
}

/// The upstream's Retry-After in seconds (its HTTP-date form is not worth a parser here).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let seconds: u64 = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(seconds.clamp(1, MAX_RETRY_AFTER.as_secs())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_from_the_environment_value() {
        assert_eq!(FundingConfig::with_upstream(None).base_url, DEFAULT_UPSTREAM);
        assert_eq!(FundingConfig::with_upstream(Some("  ")).base_url, DEFAULT_UPSTREAM);
        let config = FundingConfig::with_upstream(Some("http://127.0.0.1:9/"));
        assert_eq!(config.base_url, "http://127.0.0.1:9");
        assert_eq!((config.timeout, config.cache_ttl), (DEFAULT_TIMEOUT, CACHE_TTL));
    }

    #[test]
    fn retry_after_is_read_and_bounded() {
        let mut headers = reqwest::header::HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert(reqwest::header::RETRY_AFTER, "12".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(12)));
        headers.insert(reqwest::header::RETRY_AFTER, "86400".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(MAX_RETRY_AFTER));
        headers.insert(reqwest::header::RETRY_AFTER, "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
    }

    #[tokio::test]
    async fn cache_reuses_and_expires() {
        let slot = Mutex::new(Slot::default());
        let (v, use1) = cached(&slot, CACHE_TTL, async { Ok(1) }).await.unwrap();
        let (w, use2) = cached(&slot, CACHE_TTL, async { Ok(2) }).await.unwrap();
        assert_eq!((*v, use1, *w, use2), (1, CacheUse::Fetched, 1, CacheUse::Cached));
        let (x, use3) = cached(&slot, Duration::ZERO, async { Ok(3) }).await.unwrap();
        assert_eq!((*x, use3), (3, CacheUse::Fetched));
    }

    #[tokio::test]
    async fn failures_are_not_cached_for_later_callers() {
        let slot: Mutex<Slot<i32>> = Mutex::new(Slot::default());
        let e = cached(&slot, CACHE_TTL, async { Err(bad_upstream("x".into())) }).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::BadUpstream);
        let (v, used) = cached(&slot, CACHE_TTL, async { Ok(7) }).await.unwrap();
        assert_eq!((*v, used), (7, CacheUse::Fetched));
    }
}
