//! `/v1/chain/price` against a real anvil: MockAggregator's runtime code is put at the real
//! Chainlink proxy addresses of the route's feed table and filled with rounds, fresh, stale
//! and broken. Every answer is checked against the route's published output schema.

use crate::common;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use alloy::primitives::keccak256;
use alloy::sol_types::SolValue;
use paperchain_engine::evm::{ChainConfig, ChainTimeouts, Chains};
use paperchain_engine::{Context, EngineError, ErrorKind};
use paperchain_testkit::anvil::{Anvil, Artifact};
use serde_json::{Value, json};

const PATH: &str = "/v1/chain/price";
const ETH_USD_ETHEREUM: &str = "0x5f4ec3df9cbd43714fe2740f5e3616155c5b8419";
const BTC_USD_ETHEREUM: &str = "0xf4030086522a5beea4988f8ca5b36dbc97bee88c";
const USDC_USD_ETHEREUM: &str = "0x8fffffd4afb6115b954bd326cbe7b4ba576818f6";
const LINK_USD_ETHEREUM: &str = "0x2c1d072e956affc0d435cb7ac38ef18d24d9127c";
const DAI_USD_ETHEREUM: &str = "0xaed0c38402a5d19df6e4c03f4e2dced6e29c1ee9";
const CBETH_USD_BASE: &str = "0xd7818272b9e248357d13057aab0b417af31e817d";

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// anvil with `chain_id`, and a context whose only chain `name` is it.
async fn chain(name: &str, chain_id: u64) -> (Anvil, Context) {
    let anvil = Anvil::start(chain_id).await;
    let mut ctx = Context::new();
    let config = ChainConfig::new(name, chain_id, vec![anvil.url.parse().unwrap()]);
    ctx.chains = Arc::new(Chains::new(vec![config], ChainTimeouts::default()));
    (anvil, ctx)
}

async fn call(ctx: &Context, body: Value) -> Result<Value, EngineError> {
    common::route::call(ctx, PATH, body).await
}

async fn ok(ctx: &Context, body: Value) -> Value {
    call(ctx, body.clone()).await.unwrap_or_else(|e| panic!("{body}: {e:?}"))
}

async fn err(ctx: &Context, body: Value) -> EngineError {
    match call(ctx, body.clone()).await {
        Ok(value) => panic!("{body} answered {value:#}"),
        Err(e) => e,
    }
}

fn assert_invalid(e: &EngineError, field: &str, says: &str) {
    assert_eq!(e.kind, ErrorKind::InvalidInput, "{e:?}");
    assert_eq!(e.field.as_deref(), Some(field), "{e:?}");
    assert!(e.message.contains(says), "{e:?} should say {says:?}");
}

#[tokio::test]
async fn fresh_and_stale_feeds_on_ethereum() {
    let (anvil, ctx) = chain("ethereum", 1).await;
    let updated = now() - 60;
    anvil.place_feed(ETH_USD_ETHEREUM, 110_680_464_442_257_320_000, 345_678_901_234, updated, 8).await;
    let answer = ok(&ctx, json!({"chain": "ethereum", "pair": "ETH/USD"})).await;
    let age = answer["age_seconds"].as_u64().unwrap();
    assert!(age >= 60, "{answer}");
    assert_eq!(
        answer,
        json!({
            "chain": "ethereum", "pair": "ETH/USD", "price": "3456.78901234", "decimals": 8,
            "round_id": "110680464442257320000", "updated_at": updated, "age_seconds": age,
            "stale": false, "heartbeat_s": 3600, "feed": ETH_USD_ETHEREUM
        })
    );

    // Older than the one-hour heartbeat.
    let old = now() - 7200;
    anvil.place_feed(BTC_USD_ETHEREUM, 5, 9_876_543_210_000_000, old, 8).await;
    let answer = ok(&ctx, json!({"chain": "ethereum", "pair": "BTC/USD"})).await;
    assert_eq!(answer["stale"], json!(true));
    assert_eq!(answer["price"], json!("98765432.1"));
    assert_eq!(answer["heartbeat_s"], json!(3600));
    assert!(answer["age_seconds"].as_u64().unwrap() >= 7200);

    // An update stamped in the future (a clock ahead of ours) is not negative in age.
    anvil.place_feed(USDC_USD_ETHEREUM, 1, 99_990_000, now() + 3600, 8).await;
    let answer = ok(&ctx, json!({"chain": "ethereum", "pair": "USDC/USD"})).await;
    assert_eq!((answer["age_seconds"].clone(), answer["stale"].clone()), (json!(0), json!(false)));
    assert_eq!(answer["price"], json!("0.9999"));
}

#[tokio::test]
async fn feeds_without_a_valid_answer_are_upstream_errors() {
    let (anvil, ctx) = chain("ethereum", 1).await;
    let body = json!({"chain": "ethereum", "pair": "ETH/USD"});
    anvil.place_feed(ETH_USD_ETHEREUM, 3, -5, now(), 8).await;
    let e = err(&ctx, body.clone()).await;
    assert_eq!((e.kind, e.code.as_ref()), (ErrorKind::BadUpstream, "upstream_error"), "{e:?}");
    assert!(e.message.contains("no valid answer") && e.message.contains("-5"), "{e:?}");

    anvil.place_feed(ETH_USD_ETHEREUM, 3, 0, now(), 8).await;
    assert_eq!(err(&ctx, body.clone()).await.kind, ErrorKind::BadUpstream);

    anvil.place_feed(ETH_USD_ETHEREUM, 3, 100, 0, 8).await;
    let e = err(&ctx, body.clone()).await;
    assert!(e.kind == ErrorKind::BadUpstream && e.message.contains("updatedAt 0"), "{e:?}");

    // latestRoundData() reverts, as an aggregator without rounds does.
    anvil.place_feed(ETH_USD_ETHEREUM, 3, 100, now(), 8).await;
    let data = [&keccak256("setBroken(bool)")[..4], &true.abi_encode()[..]].concat();
    anvil.send(Some(ETH_USD_ETHEREUM), &format!("0x{}", hex::encode(data))).await;
    let e = err(&ctx, body).await;
    assert!(e.kind == ErrorKind::BadUpstream && e.message.contains("reverted"), "{e:?}");

    // Nothing at the address: an empty return.
    let e = err(&ctx, json!({"chain": "ethereum", "pair": "LINK/USD"})).await;
    assert!(e.kind == ErrorKind::BadUpstream && e.message.contains(LINK_USD_ETHEREUM), "{e:?}");
    assert!(e.message.contains("returned nothing"), "{e:?}");

    // Code that answers both views with garbage (a plain token-less contract reverts).
    anvil.set_code(DAI_USD_ETHEREUM, &Artifact::load("NotAToken").deployed_bytecode).await;
    let e = err(&ctx, json!({"chain": "ethereum", "pair": "DAI/USD"})).await;
    assert_eq!(e.kind, ErrorKind::BadUpstream, "{e:?}");
}

#[tokio::test]
async fn base_serves_its_own_feeds() {
    let (anvil, ctx) = chain("base", 8453).await;
    anvil.place_feed(CBETH_USD_BASE, 18_446_744_073_709_551_999, 412_345_678_900, now() - 10, 8).await;
    let answer = ok(&ctx, json!({"chain": "base", "pair": "cbETH/USD"})).await;
    assert_eq!(answer["price"], json!("4123.456789"));
    assert_eq!(answer["round_id"], json!("18446744073709551999"));
    assert_eq!((answer["heartbeat_s"].clone(), answer["stale"].clone()), (json!(1200), json!(false)));
    assert_eq!(answer["feed"], json!(CBETH_USD_BASE));

    let e = err(&ctx, json!({"chain": "base", "pair": "stETH/USD"})).await;
    assert_invalid(&e, "/pair", "stETH/USD has no feed on base; it is available on ethereum");
}

#[tokio::test]
async fn input_errors_name_their_field() {
    // No chain is read for any of these, so no anvil is needed.
    let ctx = Context::new();
    let e = err(&ctx, json!({"chain": "ethereum", "pair": "cbETH/USD"})).await;
    assert_invalid(&e, "/pair", "cbETH/USD has no feed on ethereum; it is available on base");

    let e = err(&ctx, json!({"chain": "polygon", "pair": "ETH/USD"})).await;
    assert_invalid(&e, "/chain", "the oracle route covers ethereum and base");

    let e = err(&ctx, json!({"chain": "ethereum", "pair": "eth/usd"})).await;
    assert_invalid(&e, "/pair", "did you mean `ETH/USD`");
    let e = err(&ctx, json!({"chain": "ethereum", "pair": "ETH-USD"})).await;
    assert_invalid(&e, "/pair", "not a supported pair");
    assert!(e.message.contains("stETH/USD, cbETH/USD, cbETH/ETH"), "{e:?}");

    let e = err(&ctx, json!({"chain": "ethereum", "pair": "ETH/USD", "decimals": 8})).await;
    assert_invalid(&e, "/decimals", "unknown field");
    assert_eq!(e.code.as_ref(), "unknown_field");

    let e = err(&ctx, json!({"chain": "ethereum"})).await;
    assert_invalid(&e, "/pair", "missing field");
    let e = err(&ctx, json!({"chain": 1, "pair": "ETH/USD"})).await;
    assert_eq!(e.field.as_deref(), Some("/chain"), "{e:?}");
}

#[test]
fn the_input_schema_lists_the_chains_and_pairs() {
    let catalog = paperchain_engine::catalog::standard();
    let entry = catalog.by_path(PATH).unwrap();
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let schema = serde_json::to_value(entry.input_schema(&mut generator)).unwrap();
    let defs = serde_json::to_value(generator.definitions()).unwrap();
    let text = format!("{schema} {defs}");
    assert!(text.contains(r#"["ethereum","base"]"#), "{text}");
    assert!(
        text.contains(
            r#"["ETH/USD","BTC/USD","USDC/USD","USDT/USD","DAI/USD","LINK/USD","stETH/USD","cbETH/USD","cbETH/ETH"]"#
        ),
        "{text}"
    );
    assert_eq!(entry.info().operation, "get_token_price");
}
