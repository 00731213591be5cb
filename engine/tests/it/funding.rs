//! End-to-end tests of `/v1/defi/funding` through the catalog, against a loopback
//! server that replays recorded-shape Hyperliquid answers (tests/fixtures/hyperliquid).
//! Every answer is checked against the route's published output schema.

use crate::common;

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use paperchain_engine::chain::funding::{CACHE_TTL, FundingClient, FundingConfig};
use paperchain_engine::{Context, EngineError, ErrorKind};
use paperchain_testkit::hyperliquid::answer;
use paperchain_testkit::loopback::{closed_port, read_request, write_response};
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};

const PATH: &str = "/v1/defi/funding";

/// How the fake upstream answers one kind of request.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// The recorded fixture.
    Replay,
    /// The fixture, after a pause (to make concurrent calls overlap).
    Delayed(Duration),
    /// An error status with a small body.
    Status(u16),
    /// 200 with a body that is not the API's answer.
    Garbage,
    /// 429 with `Retry-After: 7`.
    RateLimited,
    /// Never answers in time.
    Hang,
}

#[derive(Default)]
struct Counts {
    by_type: HashMap<String, usize>,
    start_times: Vec<i64>,
    coins: Vec<String>,
}

struct State {
    meta: Mutex<Mode>,
    history: Mutex<Mode>,
    counts: Mutex<Counts>,
}

/// A loopback Hyperliquid stand-in.
struct Upstream {
    addr: SocketAddr,
    state: Arc<State>,
}

impl Upstream {
    async fn start(meta: Mode, history: Mode) -> Upstream {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State { meta: Mutex::new(meta), history: Mutex::new(history), counts: Mutex::default() });
        let shared = Arc::clone(&state);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(handle(stream, Arc::clone(&shared)));
            }
        });
        Upstream { addr, state }
    }

    fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn count(&self, kind: &str) -> usize {
        self.state.counts.lock().unwrap().by_type.get(kind).copied().unwrap_or(0)
    }

    fn total(&self) -> usize {
        self.state.counts.lock().unwrap().by_type.values().sum()
    }

    /// A context whose funding client reads this server, as the product's would.
    fn context(&self, timeout: Duration) -> Context {
        context_for(&self.base_url(), timeout)
    }
}

fn context_for(base_url: &str, timeout: Duration) -> Context {
    let ctx = Context::new();
    ctx.state.insert(FundingClient::new(FundingConfig {
        base_url: base_url.to_string(),
        timeout,
        cache_ttl: CACHE_TTL,
    }));
    ctx
}

/// Reads one HTTP/1.1 request (head and Content-Length body) and answers it.
async fn handle(mut stream: TcpStream, state: Arc<State>) {
    let Some(request) = read_request(&mut stream).await else { return };
    let head = request.head.to_ascii_lowercase();
    assert!(head.starts_with("post /info "), "unexpected request: {head}");
    let request: Value = serde_json::from_slice(&request.body).unwrap();
    let kind = request["type"].as_str().unwrap_or("").to_string();
    let replay = answer(&request);
    let mode = {
        let mut counts = state.counts.lock().unwrap();
        *counts.by_type.entry(kind.clone()).or_default() += 1;
        match kind.as_str() {
            "metaAndAssetCtxs" => *state.meta.lock().unwrap(),
            "fundingHistory" => {
                counts.start_times.push(request["startTime"].as_i64().unwrap_or(-1));
                counts.coins.push(request["coin"].as_str().unwrap_or("").to_string());
                *state.history.lock().unwrap()
            }
            _ => Mode::Status(400),
        }
    };
    let (status, extra, body) = match mode {
        Mode::Replay => (200, None, replay.unwrap_or_default()),
        Mode::Delayed(pause) => {
            tokio::time::sleep(pause).await;
            (200, None, replay.unwrap_or_default())
        }
        Mode::Status(code) => (code, None, br#"{"error":"internal"}"#.to_vec()),
        Mode::Garbage => (200, None, b"<html>maintenance</html>".to_vec()),
        Mode::RateLimited => (429, Some(("Retry-After", "7".to_string())), b"null".to_vec()),
        Mode::Hang => {
            tokio::time::sleep(Duration::from_secs(60)).await;
            return;
        }
    };
    let headers: Vec<(&str, String)> =
        [("Content-Type", "application/json".to_string())].into_iter().chain(extra).collect();
    write_response(&mut stream, status, &headers, &body).await;
}

async fn call(ctx: &Context, body: Value) -> Result<Value, EngineError> {
    common::route::call(ctx, PATH, body).await
}

fn symbols(answer: &Value) -> Vec<&str> {
    answer["markets"].as_array().unwrap().iter().map(|m| m["symbol"].as_str().unwrap()).collect()
}

const TIMEOUT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn lists_markets_then_answers_from_the_cache() {
    let up = Upstream::start(Mode::Replay, Mode::Replay).await;
    let ctx = up.context(TIMEOUT);

    let first = call(&ctx, json!({})).await.unwrap();
    assert_eq!(first["cache"], "fetched");
    assert_eq!(up.count("metaAndAssetCtxs"), 1);
    assert_eq!(first["funding_interval"], "1h");
    assert_eq!(first["source"]["name"], "Hyperliquid");
    assert!(first["note"].as_str().unwrap().contains("not investment"));
    assert!(first["annualization"].as_str().unwrap().contains("365"));
    assert_eq!(first["sorted_by"], "absolute hourly funding, descending");
    // Nine listed markets (the delisted MATIC is left out), largest |funding| first.
    assert_eq!(symbols(&first), ["ZORA", "FARTCOIN", "HYPE", "ETH", "BTC", "WIF", "kPEPE", "DOGE", "SOL"]);
    assert_eq!(first["count"], 9);
    assert!(first.get("market").is_none() && first.get("history").is_none());

    // Upstream nulls stay null, the members stay present.
    let zora = &first["markets"][0];
    assert!(zora["premium"].is_null() && zora["change_24h_pct"].is_null());
    assert_eq!(zora["max_leverage"], 3);
    let btc = first["markets"].as_array().unwrap().iter().find(|m| m["symbol"] == "BTC").unwrap();
    assert_eq!(btc["funding_hourly"], 0.0000125);
    assert!((btc["funding_annualized_pct"].as_f64().unwrap() - 10.95).abs() < 1e-9);
    assert!((btc["open_interest_usd"].as_f64().unwrap() - 28912.47812 * 97498.0).abs() < 1e-3);
    assert_eq!(btc["volume_24h_usd"], 2312847391.4423);
    assert_eq!(btc["mark_price"], 97512.0);
    assert_eq!(btc["oracle_price"], 97498.0);
    let fart = &first["markets"][1];
    assert_eq!(fart["funding_hourly"], -0.0000875);
    assert!(fart["change_24h_pct"].as_f64().unwrap() < 0.0);

    // Within 60 s: no upstream request, and the answer says so.
    let second = call(&ctx, json!({"limit": 2})).await.unwrap();
    assert_eq!(second["cache"], "cached");
    assert_eq!(symbols(&second), ["ZORA", "FARTCOIN"]);
    assert_eq!(second["count"], 2);
    let filtered = call(&ctx, json!({"min_volume_usd": 1000, "symbol": null})).await.unwrap();
    assert_eq!(filtered["cache"], "cached");
    assert_eq!(symbols(&filtered)[0], "FARTCOIN");
    assert!(!symbols(&filtered).contains(&"ZORA"));
    let none = call(&ctx, json!({"min_volume_usd": 10_000_000_000_000_u64})).await.unwrap();
    assert_eq!((none["count"].as_u64(), none["markets"].as_array().map(Vec::len)), (Some(0), Some(0)));
    assert_eq!(up.count("metaAndAssetCtxs"), 1);
    assert_eq!(up.total(), 1);
}

#[tokio::test]
async fn one_symbol_with_its_history() {
    let up = Upstream::start(Mode::Replay, Mode::Replay).await;
    let ctx = up.context(TIMEOUT);

    let answer = call(&ctx, json!({"symbol": "btc"})).await.unwrap();
    assert_eq!(answer["cache"], "fetched");
    assert_eq!(answer["market"]["symbol"], "BTC", "the venue's spelling is answered");
    assert_eq!(answer["count"], 1);
    assert!(answer.get("markets").is_none());
    assert_eq!(answer["history_count"], 168);
    assert_eq!(answer["history_days"], 7);
    let history = answer["history"].as_array().unwrap();
    assert_eq!(history.len(), 168);
    assert_eq!(history[0]["time"], "2025-05-12T00:00:00.003Z");
    assert!(history.windows(2).all(|w| w[0]["time"].as_str() < w[1]["time"].as_str()));
    let rates: Vec<f64> = history.iter().map(|h| h["funding_hourly"].as_f64().unwrap()).collect();
    let mean = rates.iter().sum::<f64>() / rates.len() as f64;
    assert!((answer["history_avg_hourly"].as_f64().unwrap() - mean).abs() < 1e-15);
    assert!((answer["history_avg_annualized_pct"].as_f64().unwrap() - mean * 876_000.0).abs() < 1e-9);
    assert!(
        (history[0]["funding_annualized_pct"].as_f64().unwrap() - rates[0] * 876_000.0).abs() < 1e-9,
        "{}",
        history[0]
    );

    // The history request asked for the last 7 days.
    {
        let counts = up.state.counts.lock().unwrap();
        assert_eq!(counts.coins, ["BTC"]);
        let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
        let week_ago = now_ms - 7 * 86_400_000;
        assert!((counts.start_times[0] - week_ago).abs() < 3_600_000, "startTime {}", counts.start_times[0]);
    }

    // Both answers are reused within 60 s.
    let again = call(&ctx, json!({"symbol": "BTC"})).await.unwrap();
    assert_eq!(again["cache"], "cached");
    assert_eq!((up.count("metaAndAssetCtxs"), up.count("fundingHistory")), (1, 1));

    // A fresh history with a reused market list is still "fetched"; a null premium stays null.
    let hype = call(&ctx, json!({"symbol": "HYPE"})).await.unwrap();
    assert_eq!(hype["cache"], "fetched");
    assert_eq!((hype["history_count"].as_u64(), hype["history_days"].as_u64()), (Some(5), Some(1)));
    assert!(hype["history"][2]["premium"].is_null());
    assert_eq!(up.count("metaAndAssetCtxs"), 1);

    // No history at all: the averages are null, not zero.
    let zora = call(&ctx, json!({"symbol": "zora"})).await.unwrap();
    assert_eq!(zora["market"]["symbol"], "ZORA");
    assert!(zora["market"]["premium"].is_null());
    assert_eq!((zora["history_count"].as_u64(), zora["history_days"].as_u64()), (Some(0), Some(0)));
    assert!(zora["history_avg_hourly"].is_null() && zora["history_avg_annualized_pct"].is_null());
    assert_eq!(zora["history"], json!([]));
}

#[tokio::test]
async fn input_errors_name_their_field() {
    let up = Upstream::start(Mode::Replay, Mode::Replay).await;
    let ctx = up.context(TIMEOUT);
    let cases = [
        (json!({"symbol": "NOPE"}), "/symbol"),
        (json!({"symbol": "matic"}), "/symbol"),
        (json!({"symbol": "BTC/USD"}), "/symbol"),
        (json!({"symbol": ""}), "/symbol"),
        (json!({"symbol": "ABCDEFGHIJKLMNOPQRSTU"}), "/symbol"),
        (json!({"symbol": 5}), "/symbol"),
        (json!({"limit": 0}), "/limit"),
        (json!({"limit": 51}), "/limit"),
        (json!({"limit": -1}), "/limit"),
        (json!({"limit": 2.5}), "/limit"),
        (json!({"min_volume_usd": -1}), "/min_volume_usd"),
        (json!({"min_volume_usd": 10_000_000_000_001_u64}), "/min_volume_usd"),
        (json!({"min_volume_usd": "1"}), "/min_volume_usd"),
        (json!({"venue": "x"}), "/venue"),
    ];
    for (body, field) in cases {
        let e = call(&ctx, body.clone()).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidInput, "{body}: {e:?}");
        assert_eq!(e.field.as_deref(), Some(field), "{body}: {e:?}");
    }
    let e = call(&ctx, json!({"symbol": "NOPE"})).await.unwrap_err();
    assert!(e.message.contains("NOPE"), "{}", e.message);
    // Only the unknown-symbol checks needed the market list, and it was read once.
    assert_eq!(up.total(), 1);
}

#[tokio::test]
async fn field_checks_come_before_the_upstream() {
    // Nothing listens: input errors are still 422, not an outage.
    let ctx = context_for(&down_url().await, TIMEOUT);
    for (body, field) in [
        (json!({"limit": 0}), "/limit"),
        (json!({"min_volume_usd": -1}), "/min_volume_usd"),
        (json!({"symbol": "a b"}), "/symbol"),
    ] {
        let e = call(&ctx, body).await.unwrap_err();
        assert_eq!((e.kind, e.field.as_deref()), (ErrorKind::InvalidInput, Some(field)));
    }
}

/// A loopback URL nothing listens on.
async fn down_url() -> String {
    format!("http://{}", closed_port().await)
}

#[tokio::test]
async fn upstream_failures_map_to_statuses() {
    // Down → 503 with a Retry-After.
    let ctx = context_for(&down_url().await, TIMEOUT);
    let e = call(&ctx, json!({})).await.unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Unavailable { retry_after } if retry_after.as_secs() > 0), "{e:?}");

    // 500 and garbage → 502.
    for mode in [Mode::Status(500), Mode::Garbage, Mode::Status(404)] {
        let up = Upstream::start(mode, Mode::Replay).await;
        let e = call(&up.context(TIMEOUT), json!({})).await.unwrap_err();
        assert_eq!((e.kind, e.code.as_ref()), (ErrorKind::BadUpstream, "upstream_error"), "{mode:?}: {e:?}");
    }

    // The upstream's own outage statuses → 503.
    let up = Upstream::start(Mode::Status(503), Mode::Replay).await;
    let e = call(&up.context(TIMEOUT), json!({})).await.unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Unavailable { .. }), "{e:?}");

    // 429 → 429, passing the upstream's Retry-After on.
    let up = Upstream::start(Mode::RateLimited, Mode::Replay).await;
    let e = call(&up.context(TIMEOUT), json!({})).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::RateLimited { retry_after: Duration::from_secs(7) });

    // Too slow → 504.
    let up = Upstream::start(Mode::Hang, Mode::Replay).await;
    let e = call(&up.context(Duration::from_millis(300)), json!({})).await.unwrap_err();
    assert_eq!((e.kind, e.code.as_ref()), (ErrorKind::Timeout, "timeout"), "{e:?}");
}

#[tokio::test]
async fn history_failures_map_to_statuses_too() {
    for (mode, expected) in [
        (Mode::Garbage, ErrorKind::BadUpstream),
        (Mode::Status(500), ErrorKind::BadUpstream),
        (Mode::RateLimited, ErrorKind::RateLimited { retry_after: Duration::from_secs(7) }),
        (Mode::Hang, ErrorKind::Timeout),
    ] {
        let up = Upstream::start(Mode::Replay, mode).await;
        let ctx = up.context(Duration::from_millis(300));
        let e = call(&ctx, json!({"symbol": "BTC"})).await.unwrap_err();
        assert_eq!(e.kind, expected, "{mode:?}: {e:?}");
        // A failure is not cached: the list still works from the cached market data.
        let list = call(&ctx, json!({})).await.unwrap();
        assert_eq!(list["cache"], "cached");
    }
}

#[tokio::test]
async fn concurrent_misses_make_one_upstream_request() {
    let up = Upstream::start(Mode::Delayed(Duration::from_millis(200)), Mode::Replay).await;
    let ctx = up.context(TIMEOUT);
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let ctx = ctx.clone();
            tokio::spawn(async move { call(&ctx, json!({})).await })
        })
        .collect();
    let mut fetched = 0;
    for handle in calls {
        let answer = handle.await.unwrap().unwrap();
        if answer["cache"] == "fetched" {
            fetched += 1;
        }
    }
    assert_eq!(fetched, 1);
    assert_eq!(up.count("metaAndAssetCtxs"), 1);
}

#[tokio::test]
async fn the_catalog_entry() {
    let catalog = paperchain_engine::catalog::standard();
    let route = catalog.by_path(PATH).unwrap();
    let info = route.info();
    assert_eq!(info.operation, "get_perp_funding_rates_venue");
    assert_eq!(info.base_price.units(), 2_000);
    assert_eq!(info.free_pool, paperchain_engine::FreePool::ChainReads);
    assert!(info.open_world);
    let schema = common::route::output_schema(PATH);
    let report = &schema["$defs"]["FundingReport"];
    let mut required: Vec<&str> = report["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    required.sort_unstable();
    assert_eq!(required, ["cache", "funding_interval", "note", "source"]);
    let members = |name: &str| schema["$defs"][name]["required"].as_array().unwrap().len();
    assert_eq!((members("Market"), members("FundingPoint")), (11, 4));
    // The validation used above does reject answers that break the schema.
    let validator = jsonschema::validator_for(&schema).unwrap();
    let good = json!({"source": {"name": "a", "url": "b", "docs": "c"}, "note": "n", "funding_interval": "1h",
        "cache": "cached", "count": 0, "sorted_by": "s", "markets": []});
    assert!(validator.is_valid(&good));
    for (key, bad) in [("cache", json!("stale")), ("markets", json!([{"symbol": "X"}])), ("note", Value::Null)] {
        let mut answer = good.clone();
        answer[key] = bad;
        assert!(!validator.is_valid(&answer), "{answer}");
    }
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let input = route.input_schema(&mut generator).to_value();
    let defs = generator.take_definitions(true);
    let input = defs.get("FundingInput").unwrap_or(&input);
    assert_eq!(input["properties"]["limit"]["default"], 10);
    assert_eq!(input["properties"]["limit"]["maximum"], 50);
    assert_eq!(input["additionalProperties"], false);
}
