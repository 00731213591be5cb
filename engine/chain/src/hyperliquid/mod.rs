//! Hyperliquid's perpetual markets as its public info API describes them: the answers of
//! `metaAndAssetCtxs` (every market with its figures) and `fundingHistory` (a market's
//! hourly funding) read into [`Venue`] and [`History`], with the figures derived from
//! them (open interest in USD, the 24 h change, annualized funding: [`annualized_pct`]).
//! `client` asks the API and keeps its answers for a while.
//!
//! What this module must not do: use a route file (the funding route, `chain/funding.rs`,
//! picks and orders what it answers), or trust the upstream: every answer is read with
//! errors naming where it went wrong, as `BadUpstream`.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use crate::error::EngineError;
use crate::rpc_http::bad_upstream;

pub mod client;

/// The venue's name, in messages and the answer's `source`.
pub const SOURCE_NAME: &str = "Hyperliquid";
/// Days of hourly history returned with a symbol.
pub(crate) const HISTORY_DAYS: i64 = 7;
/// Funding is paid hourly, so 7 days hold at most this many entries.
const HISTORY_MAX_ENTRIES: usize = (HISTORY_DAYS as usize) * 24;
const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;
/// Hours in the simple (not compounded) year of the annualization rule.
const HOURS_PER_YEAR: f64 = 24.0 * 365.0;

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
    /// Fetched when either is.
    pub(crate) fn and(self, other: CacheUse) -> CacheUse {
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

/// Annualized funding in percent: hourly x 24 x 365 x 100, simple.
pub fn annualized_pct(hourly: f64) -> f64 {
    hourly * HOURS_PER_YEAR * 100.0
}

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
    pub(crate) fn find(&self, symbol: &str) -> Result<usize, EngineError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    const META: &str = include_str!("../../../tests/fixtures/hyperliquid/meta_and_asset_ctxs.json");

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
}
