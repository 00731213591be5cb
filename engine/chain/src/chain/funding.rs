//! `POST /v1/defi/funding`: perpetual funding rates of Hyperliquid's markets, read from
//! its public info API (`metaAndAssetCtxs`, `fundingHistory`) and cached for 60 s.
//!
//! The upstream's base URL is configuration (`PAPERCHAIN_FUNDING_UPSTREAM`,
//! `../shared/spec/routebook.md` §3) so tests can point the route at a loopback server replaying
//! recorded answers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use tokio::sync::Mutex;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::{EngineError, ErrorKind};
use crate::output::Reply;
use crate::price::Price;
use crate::rpc_http::bad_upstream;

/// Environment variable overriding the upstream's base URL.
pub const UPSTREAM_ENV: &str = "PAPERCHAIN_FUNDING_UPSTREAM";
/// Hyperliquid's public API.
pub const DEFAULT_UPSTREAM: &str = "https://api.hyperliquid.xyz";
/// How long one upstream request (answer body included) may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an upstream answer is reused (spec, Limits: "funding cache up to 60 s").
pub const CACHE_TTL: Duration = Duration::from_secs(60);

/// Days of hourly history returned with a symbol.
const HISTORY_DAYS: i64 = 7;
/// Funding is paid hourly, so 7 days hold at most this many entries.
const HISTORY_MAX_ENTRIES: usize = (HISTORY_DAYS as usize) * 24;
const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;
/// Hours in the simple (not compounded) year of the annualization rule.
const HOURS_PER_YEAR: f64 = 24.0 * 365.0;
/// `metaAndAssetCtxs` is a few hundred kilobytes; anything far larger is not its answer.
const MAX_UPSTREAM_BYTES: usize = 16 * 1024 * 1024;
/// Retry-After for an upstream outage.
const OUTAGE_RETRY_AFTER: Duration = Duration::from_secs(30);
/// Retry-After for an upstream 429 that does not say how long to wait.
const RATE_RETRY_AFTER: Duration = Duration::from_secs(30);
/// Longest Retry-After passed on from the upstream.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);

const MIN_LIMIT: u32 = 1;
const MAX_LIMIT: u32 = 50;
const MAX_MIN_VOLUME_USD: f64 = 10_000_000_000_000.0;
const MAX_SYMBOL_LEN: usize = 20;

const SOURCE_NAME: &str = "Hyperliquid";
const SOURCE_URL: &str = "https://hyperliquid.xyz";
const SOURCE_DOCS: &str = "https://hyperliquid.gitbook.io/hyperliquid-docs/for-developers/api/info-endpoint/perpetuals";
const NOTE: &str = "Data only, not investment or trading advice. Funding rates as published by the venue's public \
    API at request time (reused for up to 60 s); a positive rate means longs pay shorts, a negative one shorts pay longs.";
const FUNDING_INTERVAL: &str = "1h";
const ANNUALIZATION: &str = "hourly funding x 24 x 365 x 100, simple (not compounded), in percent";
const SORTED_BY: &str = "absolute hourly funding, descending";

// ---------------------------------------------------------------------------------------
// Request and response.

/// Request of `/v1/defi/funding`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FundingInput {
    /// One perpetual market by its venue symbol (`BTC`, `ETH`, `kPEPE`), matched without regard to case. When omitted or null, the markets with the largest absolute funding are listed.
    #[serde(default)]
    #[schemars(regex(pattern = r"^[A-Za-z0-9._-]{1,20}$"))]
    pub symbol: Option<String>,
    /// Most markets listed when `symbol` is omitted, 1 to 50.
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 50))]
    pub limit: u32,
    /// Markets whose 24 h volume in USD is lower than this are skipped (0 to 10000000000000); applies to the list, not to a named `symbol`.
    #[serde(default)]
    #[schemars(range(min = 0, max = 10_000_000_000_000_i64))]
    pub min_volume_usd: f64,
}

fn default_limit() -> u32 {
    10
}

/// The upstream data provider.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FundingSource {
    /// Provider name.
    pub name: String,
    /// Provider's site.
    pub url: String,
    /// Documentation of the API the data is read from.
    pub docs: String,
}

/// Whether the answer was read from the upstream for this call or reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CacheUse {
    /// At least one upstream request was made for this call.
    Fetched,
    /// Every upstream answer used was reused from the last 60 s.
    Cached,
}

impl CacheUse {
    fn and(self, other: CacheUse) -> CacheUse {
        if self == CacheUse::Fetched || other == CacheUse::Fetched { CacheUse::Fetched } else { CacheUse::Cached }
    }
}

/// One perpetual market.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = all_members_required)]
pub struct Market {
    /// The venue's symbol, in the venue's spelling.
    pub symbol: String,
    /// Mark price in USD.
    pub mark_price: Option<f64>,
    /// Oracle price in USD.
    pub oracle_price: Option<f64>,
    /// Premium of the market over the oracle, as a fraction.
    pub premium: Option<f64>,
    /// Open interest in units of the asset.
    pub open_interest: Option<f64>,
    /// Open interest in USD (open interest x oracle price, or mark price without an oracle price).
    pub open_interest_usd: Option<f64>,
    /// Traded notional over the last 24 h, in USD.
    pub volume_24h_usd: Option<f64>,
    /// Highest leverage the venue allows.
    pub max_leverage: Option<i64>,
    /// Change of the mark price against the price 24 h ago, in percent.
    pub change_24h_pct: Option<f64>,
    /// Current hourly funding rate, as a fraction (positive: longs pay shorts).
    pub funding_hourly: Option<f64>,
    /// Hourly funding x 24 x 365 x 100, simple, in percent.
    pub funding_annualized_pct: Option<f64>,
}

/// One hour of funding history.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = all_members_required)]
pub struct FundingPoint {
    /// When the funding was paid (RFC 3339, UTC).
    pub time: String,
    /// Hourly funding rate, as a fraction.
    pub funding_hourly: Option<f64>,
    /// Hourly funding x 24 x 365 x 100, simple, in percent.
    pub funding_annualized_pct: Option<f64>,
    /// Premium over the oracle at that hour, as a fraction.
    pub premium: Option<f64>,
}

/// The answer of `/v1/defi/funding`.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = report_required)]
pub struct FundingReport {
    /// Upstream data provider.
    pub source: FundingSource,
    /// Informational notice: the result is data only, not investment or trading advice.
    pub note: String,
    /// Funding interval of the markets (`1h`).
    pub funding_interval: String,
    /// How annualized funding is computed.
    pub annualization: String,
    /// Whether the reply was fetched or cached.
    pub cache: CacheUse,
    /// The markets, when symbol is omitted.
    #[serde(flatten)]
    pub list: Option<MarketList>,
    /// The market named by symbol, with its history.
    #[serde(flatten)]
    pub detail: Option<MarketDetail>,
}

/// What is returned when symbol is omitted.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MarketList {
    /// Number of markets returned.
    pub count: u32,
    /// Ordering of markets (absolute hourly funding, descending).
    pub sorted_by: String,
    /// The markets of largest absolute hourly funding.
    pub markets: Vec<Market>,
}

/// What is returned when symbol is given.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MarketDetail {
    /// Number of markets returned (1).
    pub count: u32,
    /// The market named by symbol.
    pub market: Market,
    /// Days of history covered (up to 7).
    pub history_days: u32,
    /// Entries in history.
    pub history_count: u32,
    /// Average hourly funding over history; null when history is empty.
    pub history_avg_hourly: Option<f64>,
    /// Average annualized funding over history, in percent; null when history is empty.
    pub history_avg_annualized_pct: Option<f64>,
    /// Hourly funding, oldest first.
    pub history: Vec<FundingPoint>,
}

/// Lists every property as required: the spec's market and history members are always
/// present, null when unknown, which a schema read as a deserializer's would not say.
fn all_members_required(schema: &mut schemars::Schema) {
    let members: Vec<serde_json::Value> = schema
        .get("properties")
        .and_then(serde_json::Value::as_object)
        .map(|properties| properties.keys().cloned().map(serde_json::Value::String).collect())
        .unwrap_or_default();
    schema.insert("required".into(), serde_json::Value::Array(members));
}

/// The spec's response table requires exactly these members; the others are optional.
fn report_required(schema: &mut schemars::Schema) {
    schema.insert("required".into(), serde_json::json!(["source", "note", "funding_interval", "cache"]));
}

// ---------------------------------------------------------------------------------------
// The route.

/// What the call asks for, once checked.
#[derive(Debug)]
enum Ask {
    /// The `limit` markets of largest absolute funding with enough volume.
    Top { limit: usize, min_volume_usd: f64 },
    /// The listed market at this index of the venue's markets.
    One { index: usize },
}

/// A checked funding call, holding the market data it was checked against.
pub struct FundingCall {
    ask: Ask,
    venue: Arc<Venue>,
    venue_cache: CacheUse,
}

/// The route.
pub struct FundingRoute;

impl Route for FundingRoute {
    type Input = FundingInput;
    type Prepared = FundingCall;
    type Output = FundingReport;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/defi/funding",
        operation: "get_perp_funding_rates_venue",
        family: Family::Chain,
        summary: "Perpetual funding rates: the markets of largest funding, or one market with 7 days of history",
        description: "Reads perpetual-futures funding from Hyperliquid's public API (answers reused for up to 60 s; \
            `cache` says which applied). Without symbol: up to `limit` listed markets with the largest absolute hourly \
            funding, skipping those whose 24 h USD volume is below `min_volume_usd`. With symbol: that market and its \
            hourly funding over the last 7 days with averages. Each market has mark and oracle prices, premium, open \
            interest, 24 h volume and change, maximum leverage, hourly and annualized funding (hourly x 24 x 365, \
            simple). Delisted markets are left out. Data only, not investment or trading advice.",
        base_price: Price::micros(2_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: FundingInput, ctx: &Context) -> Result<FundingCall, EngineError> {
        let symbol = input.symbol.as_deref().map(check_symbol).transpose()?;
        if !(MIN_LIMIT..=MAX_LIMIT).contains(&input.limit) {
            return Err(EngineError::invalid(
                "/limit",
                format!("/limit: must be from {MIN_LIMIT} to {MAX_LIMIT}, not {}", input.limit),
            ));
        }
        if !(0.0..=MAX_MIN_VOLUME_USD).contains(&input.min_volume_usd) {
            return Err(EngineError::invalid(
                "/min_volume_usd",
                format!("/min_volume_usd: must be from 0 to 10000000000000, not {}", input.min_volume_usd),
            ));
        }
        // The market list is needed to tell an unknown symbol (422, before any payment).
        let (venue, venue_cache) = client(ctx).venue().await?;
        let ask = match symbol {
            Some(symbol) => Ask::One { index: venue.find(symbol)? },
            None => Ask::Top { limit: input.limit as usize, min_volume_usd: input.min_volume_usd },
        };
        Ok(FundingCall { ask, venue, venue_cache })
    }

    fn quote(_: &FundingCall) -> Price {
        Self::INFO.base_price
    }

    async fn run(call: FundingCall, ctx: &Context) -> Result<Reply<FundingReport>, EngineError> {
        let mut report = FundingReport {
            source: FundingSource { name: SOURCE_NAME.into(), url: SOURCE_URL.into(), docs: SOURCE_DOCS.into() },
            note: NOTE.into(),
            funding_interval: FUNDING_INTERVAL.into(),
            annualization: ANNUALIZATION.into(),
            cache: call.venue_cache,
            list: None,
            detail: None,
        };
        match call.ask {
            Ask::Top { limit, min_volume_usd } => {
                let markets = top_markets(&call.venue, limit, min_volume_usd);
                let count = u32::try_from(markets.len()).unwrap_or(u32::MAX);
                report.list = Some(MarketList { count, sorted_by: SORTED_BY.into(), markets });
            }
            Ask::One { index } => {
                let Some(listed) = call.venue.markets.get(index) else {
                    return Err(EngineError::internal("a checked market index is out of range"));
                };
                let (history, history_cache) = client(ctx).history(&listed.market.symbol).await?;
                report.cache = report.cache.and(history_cache);
                report.detail = Some(detail(listed.market.clone(), &history));
            }
        }
        Ok(Reply::Json(report))
    }
}

/// The context's upstream client, configured from the environment on first use (tests
/// preset one with `ctx.state.insert`).
fn client(ctx: &Context) -> Arc<FundingClient> {
    ctx.state.get_or_insert_with(FundingClient::from_env)
}

/// Checks the symbol's pattern, `^[A-Za-z0-9._-]{1,20}$`.
fn check_symbol(symbol: &str) -> Result<&str, EngineError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if symbol.is_empty() || symbol.len() > MAX_SYMBOL_LEN || !symbol.chars().all(allowed) {
        return Err(EngineError::invalid(
            "/symbol",
            "/symbol: must be 1 to 20 characters, letters, digits, '.', '_' or '-' (a market's symbol, like BTC)",
        ));
    }
    Ok(symbol)
}

/// Annualized funding in percent: hourly x 24 x 365 x 100, simple.
pub fn annualized_pct(hourly: f64) -> f64 {
    hourly * HOURS_PER_YEAR * 100.0
}

/// The listed markets with at least `min_volume_usd` of 24 h volume, largest absolute
/// hourly funding first (unknown funding last, ties by symbol), at most `limit`.
pub fn top_markets(venue: &Venue, limit: usize, min_volume_usd: f64) -> Vec<Market> {
    let mut markets: Vec<&Market> = venue
        .markets
        .iter()
        .filter(|m| !m.delisted)
        .map(|m| &m.market)
        // A market whose volume is unknown cannot be shown to meet a positive minimum.
        .filter(|m| min_volume_usd <= 0.0 || m.volume_24h_usd.is_some_and(|v| v >= min_volume_usd))
        .collect();
    markets.sort_by(|a, b| {
        let key = |m: &Market| m.funding_hourly.map(f64::abs);
        match (key(a), key(b)) {
            (Some(x), Some(y)) => y.total_cmp(&x),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        }
        .then_with(|| a.symbol.cmp(&b.symbol))
    });
    markets.into_iter().take(limit).cloned().collect()
}

/// The symbol's answer: the market, its history and the averages.
fn detail(market: Market, history: &History) -> MarketDetail {
    let rates: Vec<f64> = history.points.iter().filter_map(|p| p.funding_hourly).collect();
    let average = (!rates.is_empty()).then(|| rates.iter().sum::<f64>() / rates.len() as f64);
    MarketDetail {
        count: 1,
        market,
        history_days: history.days,
        history_count: u32::try_from(history.points.len()).unwrap_or(u32::MAX),
        history_avg_hourly: average,
        history_avg_annualized_pct: average.map(annualized_pct),
        history: history.points.clone(),
    }
}

// ---------------------------------------------------------------------------------------
// Upstream answers.

/// The venue's perpetual markets, as `metaAndAssetCtxs` describes them.
#[derive(Debug)]
pub struct Venue {
    /// Every market of the universe, delisted ones included (so they can be named as such).
    pub markets: Vec<VenueMarket>,
}

/// One market of the universe.
#[derive(Debug)]
pub struct VenueMarket {
    /// The market's figures.
    pub market: Market,
    /// Whether the venue has delisted it.
    pub delisted: bool,
}

impl Venue {
    /// The index of the listed market named `symbol`: the venue's exact spelling first,
    /// then without regard to case.
    fn find(&self, symbol: &str) -> Result<usize, EngineError> {
        let named = |exact: bool| {
            self.markets.iter().position(|m| {
                if exact { m.market.symbol == symbol } else { m.market.symbol.eq_ignore_ascii_case(symbol) }
            })
        };
        match named(true).or_else(|| named(false)) {
            Some(index) if self.markets.get(index).is_some_and(|m| !m.delisted) => Ok(index),
            Some(_) => Err(EngineError::invalid(
                "/symbol",
                format!("/symbol: the perpetual market {symbol} is delisted on {SOURCE_NAME}"),
            )),
            None => Err(EngineError::invalid_with(
                "unknown_market",
                "/symbol",
                format!("/symbol: {SOURCE_NAME} has no perpetual market named {symbol}"),
            )),
        }
    }
}

/// A market's hourly funding history, oldest first.
#[derive(Debug)]
pub struct History {
    /// The entries.
    pub points: Vec<FundingPoint>,
    /// Days from the first entry to the end of the last one, rounded up, at most 7.
    pub days: u32,
}

/// The `universe` part of `metaAndAssetCtxs`.
#[derive(Deserialize)]
struct RawMeta {
    universe: Vec<RawAsset>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawAsset {
    name: String,
    #[serde(default, deserialize_with = "integer")]
    max_leverage: Option<i64>,
    #[serde(default)]
    is_delisted: Option<bool>,
}

/// One asset context: numbers come as decimal strings, some may be null or missing.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawContext {
    #[serde(default, deserialize_with = "decimal")]
    funding: Option<f64>,
    #[serde(default, deserialize_with = "decimal")]
    open_interest: Option<f64>,
    #[serde(default, deserialize_with = "decimal")]
    prev_day_px: Option<f64>,
    #[serde(default, deserialize_with = "decimal")]
    day_ntl_vlm: Option<f64>,
    #[serde(default, deserialize_with = "decimal")]
    premium: Option<f64>,
    #[serde(default, deserialize_with = "decimal")]
    oracle_px: Option<f64>,
    #[serde(default, deserialize_with = "decimal")]
    mark_px: Option<f64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawFunding {
    coin: String,
    #[serde(default, deserialize_with = "decimal")]
    funding_rate: Option<f64>,
    #[serde(default, deserialize_with = "decimal")]
    premium: Option<f64>,
    time: i64,
}

/// A number given as a decimal string, a JSON number or null; never NaN or infinite.
fn decimal<'de, D: Deserializer<'de>>(de: D) -> Result<Option<f64>, D::Error> {
    use serde::de::Error;
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Text(String),
        Number(f64),
    }
    let value = match Option::<Raw>::deserialize(de)? {
        None => return Ok(None),
        Some(Raw::Number(n)) => n,
        Some(Raw::Text(text)) => text
            .trim()
            .parse::<f64>()
            .map_err(|_| D::Error::custom(format!("expected a decimal number, got {text:?}")))?,
    };
    if value.is_finite() { Ok(Some(value)) } else { Err(D::Error::custom("expected a finite number")) }
}

/// An integer given as a JSON number or a decimal string, or null.
fn integer<'de, D: Deserializer<'de>>(de: D) -> Result<Option<i64>, D::Error> {
    use serde::de::Error;
    match decimal(de)? {
        None => Ok(None),
        Some(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => Ok(Some(n as i64)),
        Some(n) => Err(D::Error::custom(format!("expected an integer, got {n}"))),
    }
}

fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8], what: &str) -> Result<T, EngineError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        bad_upstream(format!("{SOURCE_NAME}'s {what} answer could not be read at {}: {}", e.path(), e.inner()))
    })?;
    de.end().map_err(|e| bad_upstream(format!("{SOURCE_NAME}'s {what} answer has trailing data: {e}")))?;
    Ok(value)
}

/// Reads a `metaAndAssetCtxs` answer.
pub fn parse_venue(body: &[u8]) -> Result<Venue, EngineError> {
    let (meta, contexts): (RawMeta, Vec<RawContext>) = parse_json(body, "metaAndAssetCtxs")?;
    if meta.universe.len() != contexts.len() {
        return Err(bad_upstream(format!(
            "{SOURCE_NAME}'s metaAndAssetCtxs answer lists {} markets but {} market contexts",
            meta.universe.len(),
            contexts.len()
        )));
    }
    let markets = meta
        .universe
        .into_iter()
        .zip(contexts)
        .map(|(asset, ctx)| {
            let change_24h_pct = match (ctx.mark_px, ctx.prev_day_px) {
                (Some(mark), Some(prev)) if prev != 0.0 => Some((mark - prev) / prev * 100.0),
                _ => None,
            };
            let usd_price = ctx.oracle_px.or(ctx.mark_px);
            VenueMarket {
                delisted: asset.is_delisted.unwrap_or(false),
                market: Market {
                    symbol: asset.name,
                    mark_price: ctx.mark_px,
                    oracle_price: ctx.oracle_px,
                    premium: ctx.premium,
                    open_interest: ctx.open_interest,
                    open_interest_usd: ctx.open_interest.zip(usd_price).map(|(oi, px)| oi * px),
                    volume_24h_usd: ctx.day_ntl_vlm,
                    max_leverage: asset.max_leverage,
                    change_24h_pct,
                    funding_hourly: ctx.funding,
                    funding_annualized_pct: ctx.funding.map(annualized_pct),
                },
            }
        })
        .collect();
    Ok(Venue { markets })
}

/// Reads a `fundingHistory` answer for `coin`: oldest first, the last 7 days' worth.
pub fn parse_history(body: &[u8], coin: &str) -> Result<History, EngineError> {
    let mut raw: Vec<RawFunding> = parse_json(body, "fundingHistory")?;
    if let Some(other) = raw.iter().find(|r| r.coin != coin) {
        return Err(bad_upstream(format!(
            "{SOURCE_NAME}'s fundingHistory answer for {coin} holds an entry for {}",
            other.coin
        )));
    }
    raw.sort_by_key(|r| r.time);
    // The upstream answers from startTime on; keep the most recent 7 days' worth in case
    // it answers more.
    let keep_from = raw.len().saturating_sub(HISTORY_MAX_ENTRIES);
    let raw = raw.get(keep_from..).unwrap_or_default();
    let mut points = Vec::with_capacity(raw.len());
    for entry in raw {
        points.push(FundingPoint {
            time: rfc3339_ms(entry.time)?,
            funding_hourly: entry.funding_rate,
            funding_annualized_pct: entry.funding_rate.map(annualized_pct),
            premium: entry.premium,
        });
    }
    let days = match (raw.first(), raw.last()) {
        (Some(first), Some(last)) => {
            let span = last.time.saturating_sub(first.time).saturating_add(HOUR_MS);
            let days = span.saturating_add(DAY_MS - 1) / DAY_MS;
            u32::try_from(days.clamp(0, HISTORY_DAYS)).unwrap_or(0)
        }
        _ => 0,
    };
    Ok(History { points, days })
}

fn rfc3339_ms(ms: i64) -> Result<String, EngineError> {
    let at = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .map_err(|_| bad_upstream(format!("{SOURCE_NAME}'s fundingHistory has an impossible time {ms}")))?;
    at.format(&time::format_description::well_known::Rfc3339)
        .map_err(|_| bad_upstream(format!("{SOURCE_NAME}'s fundingHistory has an impossible time {ms}")))
}

// ---------------------------------------------------------------------------------------
// Upstream client and cache.

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

    const META: &str = include_str!("../../../tests/fixtures/hyperliquid/meta_and_asset_ctxs.json");
    const BTC_HISTORY: &str = include_str!("../../../tests/fixtures/hyperliquid/funding_history_BTC.json");
    const HYPE_HISTORY: &str = include_str!("../../../tests/fixtures/hyperliquid/funding_history_HYPE.json");

    fn venue() -> Venue {
        parse_venue(META.as_bytes()).unwrap()
    }

    fn market<'a>(venue: &'a Venue, symbol: &str) -> &'a VenueMarket {
        venue.markets.iter().find(|m| m.market.symbol == symbol).unwrap()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn annualization_is_simple() {
        assert!(close(annualized_pct(0.0000125), 10.95));
        assert!(close(annualized_pct(-0.0001), -87.6));
        assert_eq!(annualized_pct(0.0), 0.0);
    }

    #[test]
    fn parses_markets_and_derived_figures() {
        let venue = venue();
        assert_eq!(venue.markets.len(), 10);
        let btc = &market(&venue, "BTC").market;
        assert_eq!(btc.mark_price, Some(97512.0));
        assert_eq!(btc.oracle_price, Some(97498.0));
        assert_eq!(btc.max_leverage, Some(40));
        assert_eq!(btc.funding_hourly, Some(0.0000125));
        assert!(close(btc.funding_annualized_pct.unwrap(), 10.95));
        assert!(close(btc.open_interest_usd.unwrap(), 28912.47812 * 97498.0));
        assert!(close(btc.change_24h_pct.unwrap(), (97512.0 - 97231.0) / 97231.0 * 100.0));
        assert_eq!(btc.volume_24h_usd, Some(2312847391.4423));
        assert!(market(&venue, "MATIC").delisted);
        assert!(!market(&venue, "BTC").delisted);
    }

    #[test]
    fn nulls_stay_null() {
        let venue = venue();
        let zora = &market(&venue, "ZORA").market;
        assert_eq!(zora.premium, None);
        // prevDayPx of 0 gives no change rather than an infinity.
        assert_eq!(zora.change_24h_pct, None);
        let json = serde_json::to_value(zora).unwrap();
        assert!(json["premium"].is_null());
        assert!(json["change_24h_pct"].is_null());
        assert_eq!(json.as_object().unwrap().len(), 11);
    }

    #[test]
    fn open_interest_falls_back_to_mark_price() {
        let body = br#"[{"universe":[{"name":"X","szDecimals":0,"maxLeverage":3}]},
            [{"funding":null,"openInterest":"10","prevDayPx":null,"dayNtlVlm":null,"premium":null,
              "oraclePx":null,"markPx":"2.5","midPx":null,"impactPxs":null,"dayBaseVlm":null}]]"#;
        let venue = parse_venue(body).unwrap();
        let x = &venue.markets[0].market;
        assert_eq!(x.open_interest_usd, Some(25.0));
        assert_eq!((x.funding_hourly, x.funding_annualized_pct, x.change_24h_pct), (None, None, None));
    }

    #[test]
    fn numbers_may_be_json_numbers_and_fields_missing() {
        let body = br#"[{"universe":[{"name":"X","maxLeverage":"5"}]},[{"funding":0.0001,"markPx":1}]]"#;
        let venue = parse_venue(body).unwrap();
        let x = &venue.markets[0].market;
        assert_eq!((x.funding_hourly, x.mark_price, x.max_leverage), (Some(0.0001), Some(1.0), Some(5)));
        assert_eq!(x.oracle_price, None);
    }

    #[test]
    fn malformed_answers_are_bad_upstream() {
        let cases: &[&[u8]] = &[
            b"",
            b"<html>busy</html>",
            b"{}",
            b"[]",
            br#"[{"universe":[]}]"#,
            br#"[{"universe":[{"name":"X"}]},[]]"#,
            br#"[{"universe":[{"name":"X"}]},[{"funding":"abc"}]]"#,
            br#"[{"universe":[{"name":"X"}]},[{"funding":"NaN"}]]"#,
            br#"[{"universe":[{"name":"X"}]},[{"funding":[1]}]]"#,
            br#"[{"universe":[{"name":"X","maxLeverage":2.5}]},[{}]]"#,
            br#"[{"universe":[{"szDecimals":1}]},[{}]]"#,
        ];
        for body in cases {
            let e = parse_venue(body).unwrap_err();
            assert_eq!(e.kind, ErrorKind::BadUpstream, "{}", String::from_utf8_lossy(body));
            assert_eq!(e.code, "upstream_error");
        }
        for body in [&b"{}"[..], br#"[{"coin":"BTC","fundingRate":"0.1"}]"#, br#"[{"coin":"ETH","time":1}]"#] {
            assert_eq!(parse_history(body, "BTC").unwrap_err().kind, ErrorKind::BadUpstream);
        }
        let e = parse_history(br#"[{"coin":"BTC","time":99999999999999999}]"#, "BTC").unwrap_err();
        assert_eq!(e.kind, ErrorKind::BadUpstream);
    }

    #[test]
    fn sorts_by_absolute_funding_and_leaves_delisted_out() {
        let venue = venue();
        let top = top_markets(&venue, 50, 0.0);
        let names: Vec<&str> = top.iter().map(|m| m.symbol.as_str()).collect();
        assert_eq!(names, ["ZORA", "FARTCOIN", "HYPE", "ETH", "BTC", "WIF", "kPEPE", "DOGE", "SOL"]);
        assert_eq!(top_markets(&venue, 2, 0.0).len(), 2);
    }

    #[test]
    fn unknown_funding_sorts_last() {
        let body = br#"[{"universe":[{"name":"A"},{"name":"B"},{"name":"C"}]},
            [{"funding":null},{"funding":"-0.00001"},{"funding":"0.000001"}]]"#;
        let names: Vec<String> =
            top_markets(&parse_venue(body).unwrap(), 10, 0.0).into_iter().map(|m| m.symbol).collect();
        assert_eq!(names, ["B", "C", "A"]);
    }

    #[test]
    fn minimum_volume_filters() {
        let venue = venue();
        let names = |min| top_markets(&venue, 50, min).into_iter().map(|m| m.symbol).collect::<Vec<_>>();
        assert!(!names(1000.0).contains(&"ZORA".to_string()));
        assert_eq!(names(812.4).first().map(String::as_str), Some("ZORA"));
        assert_eq!(names(1e9), ["ETH", "BTC"]);
        assert!(names(1e13).is_empty());
        // Unknown volume passes only a zero minimum.
        let body = br#"[{"universe":[{"name":"A"}]},[{"funding":"0.1","dayNtlVlm":null}]]"#;
        let v = parse_venue(body).unwrap();
        assert_eq!(top_markets(&v, 10, 0.0).len(), 1);
        assert!(top_markets(&v, 10, 0.01).is_empty());
    }

    #[test]
    fn finds_symbols_in_any_case_but_not_delisted_ones() {
        let venue = venue();
        let index = venue.find("kpepe").unwrap();
        assert_eq!(venue.markets[index].market.symbol, "kPEPE");
        assert_eq!(venue.markets[venue.find("btc").unwrap()].market.symbol, "BTC");
        let e = venue.find("MATIC").unwrap_err();
        assert_eq!((e.kind, e.field.as_deref()), (ErrorKind::InvalidInput, Some("/symbol")));
        assert!(e.message.contains("delisted"), "{}", e.message);
        let e = venue.find("NOPE").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("/symbol"));
    }

    #[test]
    fn symbol_pattern() {
        for good in ["BTC", "kPEPE", "1000BONK", "a.b_c-d", "ABCDEFGHIJKLMNOPQRST"] {
            assert!(check_symbol(good).is_ok(), "{good}");
        }
        for bad in ["", "BTC/USD", "xyz:TSLA", "ABCDEFGHIJKLMNOPQRSTU", "BTC ", "ÉTH"] {
            assert_eq!(check_symbol(bad).unwrap_err().field.as_deref(), Some("/symbol"), "{bad}");
        }
    }

    #[test]
    fn history_is_ordered_dated_and_summarized() {
        let history = parse_history(BTC_HISTORY.as_bytes(), "BTC").unwrap();
        assert_eq!(history.points.len(), 168);
        assert_eq!(history.days, 7);
        assert_eq!(history.points[0].time, "2025-05-12T00:00:00.003Z");
        let hype = parse_history(HYPE_HISTORY.as_bytes(), "HYPE").unwrap();
        assert_eq!((hype.points.len(), hype.days), (5, 1));
        assert_eq!(hype.points[2].premium, None);
        let m = &venue().markets[0].market;
        let d = detail(m.clone(), &hype);
        let expected = (0.0000621 + 0.0000587 + 0.0000125 - 0.0000032 + 0.0000410) / 5.0;
        assert!(close(d.history_avg_hourly.unwrap(), expected));
        assert!(close(d.history_avg_annualized_pct.unwrap(), expected * 876000.0));
        assert_eq!(d.history_count, 5);
    }

    #[test]
    fn history_keeps_the_last_seven_days_oldest_first() {
        let entries: Vec<String> = (0..200)
            .rev()
            .map(|i| format!(r#"{{"coin":"X","fundingRate":"0.00001","premium":null,"time":{}}}"#, i * HOUR_MS))
            .collect();
        let history = parse_history(format!("[{}]", entries.join(",")).as_bytes(), "X").unwrap();
        assert_eq!(history.points.len(), HISTORY_MAX_ENTRIES);
        assert_eq!(history.points[0].time, rfc3339_ms(32 * HOUR_MS).unwrap());
        assert_eq!(history.days, 7);
    }

    #[test]
    fn empty_history_has_null_averages() {
        let history = parse_history(b"[]", "X").unwrap();
        assert_eq!(history.days, 0);
        let d = detail(venue().markets[0].market.clone(), &history);
        let json = serde_json::to_value(&d).unwrap();
        assert!(json["history_avg_hourly"].is_null());
        assert!(json["history_avg_annualized_pct"].is_null());
        assert_eq!(json["history_count"], 0);
    }

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

    #[test]
    fn request_fields() {
        use crate::catalog::parse_body;
        let input: FundingInput = parse_body(b"{}").unwrap();
        assert_eq!((input.symbol, input.limit, input.min_volume_usd), (None, 10, 0.0));
        let input: FundingInput = parse_body(br#"{"symbol":null,"limit":50,"min_volume_usd":1.5}"#).unwrap();
        assert_eq!((input.symbol, input.limit, input.min_volume_usd), (None, 50, 1.5));
        let e = parse_body::<FundingInput>(br#"{"limit":-1}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("/limit"));
        let e = parse_body::<FundingInput>(br#"{"coin":"BTC"}"#).unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("unknown_field", Some("/coin")));
    }
}
