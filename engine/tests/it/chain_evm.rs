//! The EVM read routes (token, balance, gas, block) against a real anvil, and the chain
//! access layer against loopback servers that fail in each way a node can: nothing
//! listening, never answering, answering garbage, the wrong chain, or 429.
//!
//! Every answer is checked against the route's published output schema.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use alloy::primitives::{Address, B256, U256};
use alloy::sol_types::SolValue;
use common::route::{err, ok};
use paperchain_engine::evm::{ChainConfig, ChainTimeouts, Chains};
use paperchain_engine::{Context, EngineError, ErrorKind};
use paperchain_testkit::anvil::{Anvil, AnvilOptions, Artifact};
use paperchain_testkit::fake_node::{FakeNode, Reply as Answer, rpc_result};
use paperchain_testkit::loopback::{closed_port_url, silent_server};
use serde_json::{Value, json};

const EOA: &str = "0x00000000000000000000000000000000000b0b00";

/// A context whose only chain is `ethereum` (id 1) at `urls`.
fn context(urls: &[&str], timeouts: ChainTimeouts) -> Context {
    let urls = urls.iter().map(|u| u.parse().unwrap()).collect();
    let mut ctx = Context::new();
    ctx.chains = Arc::new(Chains::new(vec![ChainConfig::new("ethereum", 1, urls)], timeouts));
    ctx
}

fn short_timeouts() -> ChainTimeouts {
    ChainTimeouts { total: Duration::from_secs(3), attempt: Duration::from_secs(1) }
}

/// anvil with chain id 1 and the fixture contracts deployed.
struct Fixture {
    anvil: Anvil,
    ctx: Context,
    token: String,
    bytes32_token: String,
    not_a_token: String,
}

fn bytes32(text: &str) -> B256 {
    let mut word = [0u8; 32];
    word[..text.len()].copy_from_slice(text.as_bytes());
    B256::from(word)
}

impl Fixture {
    async fn new() -> Fixture {
        Fixture::with(AnvilOptions::default()).await
    }

    async fn with(options: AnvilOptions) -> Fixture {
        let anvil = Anvil::start_with(1, options).await;
        let args = ("Fixture Token".to_string(), "FIX".to_string(), U256::from(6u8), U256::from(1_234_567_890u64))
            .abi_encode_params();
        let token = anvil.deploy(&Artifact::load("FixtureToken").init_code(&args)).await;
        let supply = U256::from(10u64).pow(U256::from(24u64));
        let args = (bytes32("Maker"), bytes32("MKR"), supply).abi_encode_params();
        let bytes32_token = anvil.deploy(&Artifact::load("Bytes32Token").init_code(&args)).await;
        let not_a_token = anvil.deploy(&Artifact::load("NotAToken").init_code(&[])).await;
        let ctx = context(&[&anvil.url], ChainTimeouts::default());
        Fixture { anvil, ctx, token, bytes32_token, not_a_token }
    }

    /// Mints `amount` of the fixture token to `to`.
    async fn mint(&self, to: &str, amount: u64) {
        let data = [
            &alloy::primitives::keccak256("mint(address,uint256)")[..4],
            &(to.parse::<Address>().unwrap(), U256::from(amount)).abi_encode_params()[..],
        ]
        .concat();
        self.anvil.send(Some(&self.token), &format!("0x{}", hex::encode(data))).await;
    }
}

#[tokio::test]
async fn token_info_reads_strings_bytes32_and_tells_non_tokens() {
    let f = Fixture::new().await;
    let info = ok(
        &f.ctx,
        "/v1/chain/token",
        json!({"chain": "ethereum", "address": f.token.to_ascii_uppercase().replace("0X", "0x")}),
    )
    .await;
    assert_eq!(
        info,
        json!({
            "chain": "ethereum", "address": f.token, "is_erc20": true,
            "name": "Fixture Token", "symbol": "FIX", "decimals": 6,
            "total_supply_raw": "1234567890", "total_supply": "1234.56789"
        })
    );

    let info = ok(&f.ctx, "/v1/chain/token", json!({"chain": "ethereum", "address": f.bytes32_token})).await;
    assert_eq!(info["is_erc20"], json!(true));
    assert_eq!((info["name"].as_str(), info["symbol"].as_str()), (Some("Maker"), Some("MKR")));
    assert_eq!(info["decimals"], json!(18));
    assert_eq!(info["total_supply_raw"], json!("1000000000000000000000000"));
    assert_eq!(info["total_supply"], json!("1000000"));

    for address in [&f.not_a_token, &EOA.to_string()] {
        let info = ok(&f.ctx, "/v1/chain/token", json!({"chain": "ethereum", "address": address})).await;
        assert_eq!(
            info,
            json!({"chain": "ethereum", "address": address, "is_erc20": false, "name": null, "symbol": null, "decimals": null}),
        );
    }
}

#[tokio::test]
async fn balances_native_and_erc20() {
    let f = Fixture::new().await;
    f.anvil.set_balance(EOA, 1_500_000_000_000_000_001).await;
    let balance = ok(&f.ctx, "/v1/chain/balance", json!({"chain": "ethereum", "address": EOA})).await;
    assert_eq!(
        balance,
        json!({
            "chain": "ethereum", "address": EOA, "asset": "native",
            "wei": "1500000000000000001", "formatted": "1.500000000000000001"
        })
    );
    let balance = ok(&f.ctx, "/v1/chain/balance", json!({"chain": "ethereum", "address": EOA, "token": null})).await;
    assert_eq!(balance["asset"], json!("native"));

    f.mint(EOA, 2_500_000).await;
    let balance = ok(&f.ctx, "/v1/chain/balance", json!({"chain": "ethereum", "address": EOA, "token": f.token})).await;
    assert_eq!(
        balance,
        json!({
            "chain": "ethereum", "address": EOA, "asset": "erc20", "token": f.token,
            "symbol": "FIX", "decimals": 6, "raw": "2500000", "formatted": "2.5"
        })
    );
    // The deployer holds the bytes32 token's whole supply.
    let deployer = f.anvil.accounts().await.remove(0).to_ascii_lowercase();
    let balance =
        ok(&f.ctx, "/v1/chain/balance", json!({"chain": "ethereum", "address": deployer, "token": f.bytes32_token}))
            .await;
    assert_eq!((balance["symbol"].as_str(), balance["formatted"].as_str()), (Some("MKR"), Some("1000000")));
    let balance =
        ok(&f.ctx, "/v1/chain/balance", json!({"chain": "ethereum", "address": deployer, "token": f.token})).await;
    assert_eq!(balance["raw"], json!("1234567890"));

    for not_a_token in [&f.not_a_token, &EOA.to_string()] {
        let e =
            err(&f.ctx, "/v1/chain/balance", json!({"chain": "ethereum", "address": EOA, "token": not_a_token})).await;
        assert_eq!((e.kind, e.field.as_deref()), (ErrorKind::InvalidInput, Some("/token")), "{e:?}");
    }
}

#[tokio::test]
async fn gas_and_block_match_the_chain() {
    let f = Fixture::new().await;
    f.anvil.mine(3).await;
    let latest = f.anvil.rpc("eth_getBlockByNumber", json!(["latest", false])).await;
    let quantity = |v: &Value| U256::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    let base_fee = quantity(&latest["baseFeePerGas"]);
    let gas_price = quantity(&f.anvil.rpc("eth_gasPrice", json!([])).await);

    let gas = ok(&f.ctx, "/v1/chain/gas", json!({"chain": "ethereum"})).await;
    assert_eq!(gas["chain"], json!("ethereum"));
    assert_eq!(gas["gas_price_wei"], json!(gas_price.to_string()));
    assert_eq!(gas["gas_price_gwei"], json!(gwei(gas_price)));
    assert_eq!(gas["base_fee_gwei"], json!(gwei(base_fee)));

    let block = ok(&f.ctx, "/v1/chain/block", json!({"chain": "ethereum"})).await;
    assert_eq!(
        block,
        json!({
            "chain": "ethereum",
            "number": quantity(&latest["number"]).to::<u64>(),
            "timestamp": quantity(&latest["timestamp"]).to::<u64>(),
            "hash": latest["hash"],
            "base_fee_gwei": gwei(base_fee),
            "gas_used": quantity(&latest["gasUsed"]).to_string(),
            "gas_limit": quantity(&latest["gasLimit"]).to_string(),
        })
    );
    assert!(block["number"].as_u64().unwrap() >= 6, "three deployments and three mined blocks: {block}");
}

/// `wei` as gwei, worked out independently of the engine's formatting.
fn gwei(wei: U256) -> String {
    let whole = wei / U256::from(1_000_000_000u64);
    let fraction = (wei % U256::from(1_000_000_000u64)).to::<u64>();
    if fraction == 0 {
        whole.to_string()
    } else {
        format!("{whole}.{}", format!("{fraction:09}").trim_end_matches('0'))
    }
}

#[tokio::test]
async fn a_chain_without_eip1559_has_no_base_fee() {
    let anvil = Anvil::start_with(1, AnvilOptions { hardfork: Some("berlin".into()), ..Default::default() }).await;
    anvil.mine(1).await;
    let ctx = context(&[&anvil.url], ChainTimeouts::default());
    let gas = ok(&ctx, "/v1/chain/gas", json!({"chain": "ethereum"})).await;
    assert_eq!(gas["base_fee_gwei"], Value::Null);
    assert!(gas["gas_price_wei"].as_str().unwrap().parse::<u128>().unwrap() > 0);
    let block = ok(&ctx, "/v1/chain/block", json!({"chain": "ethereum"})).await;
    assert_eq!(block["base_fee_gwei"], Value::Null);
    assert_eq!(block["number"], json!(1));
}

#[tokio::test]
async fn bad_input_names_the_field() {
    // No chain is reached: input errors are found before any request.
    let ctx = context(&["http://127.0.0.1:9/"], short_timeouts());
    let cases = [
        ("/v1/chain/token", json!({"chain": "ethereum", "address": "0x123"}), "invalid_input", "/address"),
        ("/v1/chain/token", json!({"chain": "ethereum", "address": 5}), "invalid_input", "/address"),
        ("/v1/chain/token", json!({"chain": "ethereum"}), "invalid_input", "/address"),
        ("/v1/chain/balance", json!({"chain": "ethereum", "address": EOA, "token": "usdc"}), "invalid_input", "/token"),
        ("/v1/chain/balance", json!({"chain": "solana", "address": EOA}), "invalid_input", "/chain"),
        ("/v1/chain/gas", json!({"chain": "Ethereum"}), "invalid_input", "/chain"),
        ("/v1/chain/gas", json!({}), "invalid_input", "/chain"),
        ("/v1/chain/block", json!({"chain": "ethereum", "foo": 1}), "unknown_field", "/foo"),
        ("/v1/chain/balance", json!({"chain": "ethereum", "address": EOA, "wei": "1"}), "unknown_field", "/wei"),
    ];
    for (path, body, code, field) in cases {
        let e = err(&ctx, path, body.clone()).await;
        assert_eq!(
            (e.kind, e.code.as_ref(), e.field.as_deref()),
            (ErrorKind::InvalidInput, code, Some(field)),
            "{path} {body}: {e:?}"
        );
        assert!(e.message.starts_with(field), "{path} {body}: {}", e.message);
    }
    let e = err(&ctx, "/v1/chain/gas", json!({"chain": "solana"})).await;
    assert!(e.message.contains("valid chains: ethereum"), "{}", e.message);
    // `base` is a known chain, but not configured in this context.
    let e = err(&ctx, "/v1/chain/gas", json!({"chain": "base"})).await;
    assert_eq!(e.field.as_deref(), Some("/chain"));
}

#[tokio::test]
async fn input_schemas_list_the_chains_and_the_address_pattern() {
    let catalog = paperchain_engine::catalog::standard();
    for path in ["/v1/chain/token", "/v1/chain/balance", "/v1/chain/gas", "/v1/chain/block"] {
        let entry = catalog.by_path(path).unwrap();
        let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
        let schema = serde_json::to_value(entry.input_schema(&mut generator)).unwrap();
        let defs = serde_json::to_value(generator.definitions()).unwrap();
        assert_eq!(defs["EvmChain"]["enum"], json!(["ethereum", "base", "polygon"]), "{path}: {schema}");
        if path != "/v1/chain/gas" && path != "/v1/chain/block" {
            assert_eq!(defs["EvmAddress"]["pattern"], json!("^0x[0-9a-fA-F]{40}$"), "{path}");
        }
        assert_eq!(entry.info().free_pool, paperchain_engine::FreePool::ChainReads);
    }
}

// --- Failing nodes -----------------------------------------------------------------

/// A node of chain `chain_id` that answers eth_chainId and gives `rest` for anything else.
async fn node_of_chain(chain_id: u64, rest: impl Fn(&Value) -> Answer + Send + Sync + 'static) -> FakeNode {
    FakeNode::start(move |request| {
        if request["method"] == "eth_chainId" {
            rpc_result(request, json!(format!("{chain_id:#x}")))
        } else {
            rest(request)
        }
    })
    .await
}

async fn gas_error(urls: &[&str]) -> EngineError {
    let ctx = context(urls, short_timeouts());
    err(&ctx, "/v1/chain/gas", json!({"chain": "ethereum"})).await
}

#[tokio::test]
async fn nothing_listening_is_unavailable() {
    let url = closed_port_url().await;
    let e = gas_error(&[&url]).await;
    assert!(matches!(e.kind, ErrorKind::Unavailable { .. }), "{e:?}");
    assert_eq!(e.code, "unavailable");
    assert!(e.message.contains("cannot connect"), "{}", e.message);
}

#[tokio::test]
async fn a_node_that_never_answers_times_out() {
    let (url, task) = silent_server().await;
    let e = gas_error(&[&url]).await;
    assert_eq!((e.kind, e.code.as_ref()), (ErrorKind::Timeout, "timeout"), "{e:?}");
    // With a second silent URL, the whole call's budget runs out first.
    let (other, other_task) = silent_server().await;
    let ctx =
        context(&[&url, &other], ChainTimeouts { total: Duration::from_millis(1500), attempt: Duration::from_secs(1) });
    let e = err(&ctx, "/v1/chain/block", json!({"chain": "ethereum"})).await;
    assert_eq!(e.kind, ErrorKind::Timeout, "{e:?}");
    task.abort();
    other_task.abort();
}

#[tokio::test]
async fn garbage_and_wrong_answers_are_bad_upstream() {
    let html =
        FakeNode::start(|_| (200, vec![("Content-Type", "text/html".into())], "<html>hello</html>".into())).await;
    let e = gas_error(&[&html.url]).await;
    assert_eq!((e.kind, e.code.as_ref()), (ErrorKind::BadUpstream, "upstream_error"), "{e:?}");
    assert!(e.message.contains("not usable") || e.message.contains("not a JSON-RPC"), "{}", e.message);

    let not_rpc = node_of_chain(1, |_| (200, vec![], r#"{"hello": "world"}"#.into())).await;
    let e = gas_error(&[&not_rpc.url]).await;
    assert_eq!(e.kind, ErrorKind::BadUpstream, "{e:?}");

    let wrong_type = node_of_chain(1, |r| rpc_result(r, json!("not a number"))).await;
    let e = gas_error(&[&wrong_type.url]).await;
    assert_eq!(e.kind, ErrorKind::BadUpstream, "{e:?}");

    let server_error = node_of_chain(1, |_| (500, vec![], "oops".into())).await;
    let e = gas_error(&[&server_error.url]).await;
    assert_eq!(e.kind, ErrorKind::BadUpstream, "{e:?}");

    let rpc_error = node_of_chain(1, |r| {
        (
            200,
            vec![],
            json!({"jsonrpc": "2.0", "id": r["id"], "error": {"code": -32603, "message": "internal"}}).to_string(),
        )
    })
    .await;
    let ctx = context(&[&rpc_error.url], short_timeouts());
    let e = err(&ctx, "/v1/chain/block", json!({"chain": "ethereum"})).await;
    assert_eq!(e.kind, ErrorKind::BadUpstream, "{e:?}");
    assert!(e.message.contains("-32603"), "{}", e.message);

    // A latest block with a member of the wrong type.
    let bad_block = node_of_chain(1, |r| rpc_result(r, json!({"number": 12, "hash": null}))).await;
    let ctx = context(&[&bad_block.url], short_timeouts());
    let e = err(&ctx, "/v1/chain/block", json!({"chain": "ethereum"})).await;
    assert_eq!(e.kind, ErrorKind::BadUpstream, "{e:?}");

    // A batch answered with a single object.
    let single = node_of_chain(1, |r| rpc_result(r, json!("0x"))).await;
    let ctx = context(&[&single.url], short_timeouts());
    let e = err(&ctx, "/v1/chain/token", json!({"chain": "ethereum", "address": EOA})).await;
    assert_eq!(e.kind, ErrorKind::BadUpstream, "{e:?}");
}

#[tokio::test]
async fn a_sparse_block_has_nulls() {
    let sparse = node_of_chain(1, |r| rpc_result(r, json!({"number": "0x10", "timestamp": "0x64"}))).await;
    let ctx = context(&[&sparse.url], short_timeouts());
    let block = ok(&ctx, "/v1/chain/block", json!({"chain": "ethereum"})).await;
    assert_eq!(
        block,
        json!({"chain": "ethereum", "number": 16, "timestamp": 100, "hash": null, "base_fee_gwei": null, "gas_used": null, "gas_limit": null})
    );
}

#[tokio::test]
async fn the_wrong_chain_is_bad_upstream_and_checked_once_per_url() {
    let goerli = node_of_chain(5, |r| rpc_result(r, json!("0x1"))).await;
    let e = gas_error(&[&goerli.url]).await;
    assert_eq!(e.kind, ErrorKind::BadUpstream, "{e:?}");
    assert!(e.message.contains("chain id 5, not 1"), "{}", e.message);
    assert!(e.message.contains("PAPERCHAIN_RPC_ETHEREUM"), "{}", e.message);

    // The gas route asks for the price and the latest block in one batch.
    let result = |r: &Value| match r["method"].as_str() {
        Some("eth_gasPrice") => json!({"jsonrpc": "2.0", "id": r["id"], "result": "0x3b9aca00"}),
        _ => json!({"jsonrpc": "2.0", "id": r["id"], "result": {"number": "0x1", "baseFeePerGas": "0x7"}}),
    };
    let mainnet = node_of_chain(1, move |r| match r {
        Value::Array(items) => (200, vec![], Value::Array(items.iter().map(result).collect()).to_string()),
        one => (200, vec![], result(one).to_string()),
    })
    .await;
    let ctx = context(&[&mainnet.url], short_timeouts());
    for _ in 0..3 {
        let gas = ok(&ctx, "/v1/chain/gas", json!({"chain": "ethereum"})).await;
        assert_eq!(
            gas,
            json!({"chain": "ethereum", "gas_price_wei": "1000000000", "gas_price_gwei": "1", "base_fee_gwei": "0.000000007"})
        );
    }
    assert_eq!(mainnet.count("eth_chainId"), 1, "{:?}", mainnet.calls.lock().unwrap());
    assert_eq!(mainnet.count("batch"), 3, "one request per call: {:?}", mainnet.calls.lock().unwrap());
    assert_eq!(mainnet.calls.lock().unwrap().len(), 4);
}

#[tokio::test]
async fn rate_limits_carry_retry_after() {
    let limited = FakeNode::start(|_| (429, vec![("Retry-After", "7".into())], "slow down".into())).await;
    let e = gas_error(&[&limited.url]).await;
    assert_eq!(e.kind, ErrorKind::RateLimited { retry_after: Duration::from_secs(7) }, "{e:?}");
    assert_eq!(e.code, "rate_limited");
    // Without Retry-After, a default delay is still given.
    let limited = FakeNode::start(|_| (429, vec![], String::new())).await;
    let e = gas_error(&[&limited.url]).await;
    assert!(matches!(e.kind, ErrorKind::RateLimited { .. }), "{e:?}");
}

#[tokio::test]
async fn urls_are_tried_in_order() {
    let f = Fixture::new().await;
    let down = closed_port_url().await;
    let (silent, task) = silent_server().await;
    let garbage = FakeNode::start(|_| (200, vec![], "garbage".into())).await;
    let ctx = context(
        &[&down, &silent, &garbage.url, &f.anvil.url],
        ChainTimeouts { total: Duration::from_secs(10), attempt: Duration::from_secs(1) },
    );
    let info = ok(&ctx, "/v1/chain/token", json!({"chain": "ethereum", "address": f.token})).await;
    assert_eq!(info["symbol"], json!("FIX"));
    assert_eq!(garbage.count("eth_chainId"), 1);
    // A URL that failed is tried again on the next call (only a chain id it gave is remembered).
    ok(&ctx, "/v1/chain/block", json!({"chain": "ethereum"})).await;
    assert_eq!(garbage.count("eth_chainId"), 2);
    task.abort();
}

#[tokio::test]
async fn rpc_urls_in_errors_show_the_host_only() {
    let url = closed_port_url().await;
    let with_key = format!("{url}v2/SECRETKEY?apikey=SECRET");
    let e = gas_error(&[&with_key]).await;
    assert!(!e.message.contains("SECRET"), "{}", e.message);
    assert!(e.message.contains("127.0.0.1:"), "{}", e.message);
}

#[tokio::test]
async fn context_defaults_serve_the_three_chains() {
    let ctx = Context::new();
    assert_eq!(ctx.chains.names(), vec!["ethereum", "base", "polygon"]);
    assert_eq!(ctx.chains.get("polygon").unwrap().chain_id(), 137);
}

#[test]
fn output_schemas_follow_the_spec_tables() {
    let catalog = paperchain_engine::catalog::standard();
    let definition = |path: &str, name: &str| {
        let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
        catalog.by_path(path).unwrap().output_schema(&mut generator);
        serde_json::to_value(generator.definitions()).unwrap()[name].clone()
    };
    let block = definition("/v1/chain/block", "BlockOutput");
    assert_eq!(block["required"], json!(["chain", "number", "timestamp", "hash"]));
    assert_eq!(block["properties"]["number"]["type"], json!(["integer", "null"]));
    assert_eq!(block["properties"]["hash"]["type"], json!(["string", "null"]));
    assert_eq!(block["properties"]["gas_limit"]["type"], json!(["string", "null"]));
    let gas = definition("/v1/chain/gas", "GasOutput");
    assert_eq!(gas["required"], json!(["chain", "gas_price_wei", "gas_price_gwei"]));
    assert_eq!(gas["properties"]["base_fee_gwei"]["type"], json!(["string", "null"]));
    let balance = definition("/v1/chain/balance", "BalanceOutput");
    assert_eq!(balance["required"], json!(["chain", "address", "asset", "formatted"]));
    for member in ["wei", "token", "raw"] {
        assert_eq!(balance["properties"][member]["type"], json!("string"), "{member}");
    }
    assert_eq!(balance["properties"]["symbol"]["type"], json!(["string", "null"]));
    assert_eq!(balance["properties"]["decimals"]["type"], json!(["integer", "null"]));
    let token = definition("/v1/chain/token", "TokenOutput");
    assert_eq!(token["required"], json!(["chain", "address", "is_erc20"]));
    for member in ["total_supply_raw", "total_supply"] {
        assert_eq!(token["properties"][member]["type"], json!("string"), "{member}");
    }
    assert_eq!(token["properties"]["name"]["type"], json!(["string", "null"]));
}
