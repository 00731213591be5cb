//! `POST /v1/defi/funding`: perpetual funding rates of Hyperliquid's markets, read from
//! its public info API (`metaAndAssetCtxs`, `fundingHistory`) and cached for 60 s.
//!
//! The upstream's base URL is configuration (`PAPERCHAIN_FUNDING_UPSTREAM`,
//! `../shared/spec/routebook.md` §3) so tests can point the route at a loopback server replaying
//! recorded answers.
//!
//! This file is the route: its input and answer, the choice of markets and the averages.
//! The venue's answers are read by [`crate::hyperliquid`] and asked for, and cached, by
//! its `client`.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::hyperliquid::{History, SOURCE_NAME, Venue, annualized_pct};
use crate::output::Reply;
use crate::price::Price;

pub use crate::hyperliquid::client::{
    CACHE_TTL, DEFAULT_TIMEOUT, DEFAULT_UPSTREAM, FundingClient, FundingConfig, UPSTREAM_ENV,
};
pub use crate::hyperliquid::{CacheUse, FundingPoint, Market};

const MIN_LIMIT: u32 = 1;
const MAX_LIMIT: u32 = 50;
const MAX_MIN_VOLUME_USD: f64 = 10_000_000_000_000.0;
const MAX_SYMBOL_LEN: usize = 20;

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
        holds_secrets: false,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hyperliquid::{parse_history, parse_venue};

    const META: &str = include_str!("../../../tests/fixtures/hyperliquid/meta_and_asset_ctxs.json");
    const BTC_HISTORY: &str = include_str!("../../../tests/fixtures/hyperliquid/funding_history_BTC.json");
    const HYPE_HISTORY: &str = include_str!("../../../tests/fixtures/hyperliquid/funding_history_HYPE.json");

    fn venue() -> Venue {
        parse_venue(META.as_bytes()).unwrap()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
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
