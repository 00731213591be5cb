//! The chain routes over HTTP (EVM and Solana): every input a caller can get wrong answers
//! 422 naming the field, every way an upstream can fail answers its own status (never 500)
//! with the headers it needs, and each EVM route answers a real anvil with its published
//! shape (the Solana routes answer a real validator in the engine's tests).
//!
//! Nothing here reaches the internet: every chain and the funding upstream point at
//! loopback servers started by the tests.

use std::sync::Arc;
use std::time::Duration;

use paperchain_engine::Context;
use paperchain_engine::chain::funding::{CACHE_TTL, FundingClient, FundingConfig};
use paperchain_engine::evm::{ChainConfig, ChainTimeouts, Chains};
use paperchain_engine::solana::{ClusterConfig, Clusters, Network};
use paperchain_testkit::anvil::{Anvil, Artifact};
use paperchain_testkit::fake_node::{FakeNode, rpc_result};
use paperchain_testkit::loopback::{closed_port_url, silent_server};
use serde_json::{Value, json};

use crate::common::*;

const EOA: &str = "0x00000000000000000000000000000000000b0b00";
const HASH: &str = "0x1111111111111111111111111111111111111111111111111111111111111111";
/// A Solana address (32 bytes of 7) and a signature (64 bytes of 9), base58.
const SOL_ADDRESS: &str = "US517G5965aydkZ46HS38QLi7UQiSojurfbQfKCELFx";
const SOL_SIGNATURE: &str = "BUguQsv2ZuHus54HAFzjdJHzZBkygAjKhEeYwSG19tUfUyvvz3worsdQCdAXDNjakJHioSiyxhFiDJrm8XpSXRA";

// --- Contexts and the server --------------------------------------------------------

/// A context whose three EVM chains and both Solana clusters all use `urls` (each with its
/// own chain id or genesis hash) and whose funding client reads `funding`.
fn context(urls: &[&str], timeouts: ChainTimeouts, funding: &str) -> Context {
    let urls: Vec<url::Url> = urls.iter().map(|u| u.parse().unwrap()).collect();
    let configs = [("ethereum", 1), ("base", 8453), ("polygon", 137)]
        .into_iter()
        .map(|(name, id)| ChainConfig::new(name, id, urls.clone()))
        .collect();
    let mut ctx = Context::new();
    ctx.chains = Arc::new(Chains::new(configs, timeouts));
    let clusters = Network::ALL.into_iter().map(|network| ClusterConfig::new(network, urls.clone())).collect();
    ctx.solana = Arc::new(Clusters::new(clusters, timeouts));
    ctx.state.insert(FundingClient::new(FundingConfig {
        base_url: funding.trim_end_matches('/').to_string(),
        timeout: timeouts.attempt,
        cache_ttl: CACHE_TTL,
    }));
    ctx
}

fn short_timeouts() -> ChainTimeouts {
    ChainTimeouts { total: Duration::from_millis(1500), attempt: Duration::from_secs(1) }
}

/// A gateway over `ctx`, with its data directory.
async fn serve(ctx: Context) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let server = start_full(dir.path(), None, ctx).await;
    (server, dir)
}

/// One answer: status, Retry-After (if any), JSON body.
struct Answer {
    status: u16,
    retry_after: Option<String>,
    body: Value,
}

async fn call(server: &Server, path: &str, body: &Value) -> Answer {
    let response = server.post(path, body).await;
    let status = response.status().as_u16();
    let retry_after = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
    let bytes = response.bytes().await.unwrap();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| panic!("{path} {body}: {status} with a body that is not JSON: {bytes:?}"));
    Answer { status, retry_after, body }
}

/// Checks the error body shape of `../shared/spec/routebook.md` §1 and returns `(code, field)`.
fn error_parts(path: &str, request: &Value, answer: &Answer) -> (String, Option<String>) {
    let error = &answer.body["error"];
    let object = error.as_object().unwrap_or_else(|| panic!("{path} {request}: no error object: {}", answer.body));
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["code", "field", "message"], "{path} {request}: {}", answer.body);
    let message = error["message"].as_str().unwrap_or_default();
    assert!(!message.is_empty(), "{path} {request}: empty message: {}", answer.body);
    let code = error["code"].as_str().unwrap_or_else(|| panic!("{path}: code is not text")).to_string();
    (code, error["field"].as_str().map(str::to_string))
}

// --- 1. Bad input -------------------------------------------------------------------

/// One wrong request and what it must answer.
struct Bad {
    path: &'static str,
    body: Value,
    field: &'static str,
    code: &'static str,
}

fn bad(path: &'static str, body: Value, field: &'static str) -> Bad {
    Bad { path, body, field, code: "invalid_input" }
}

/// Fields well formed one by one that contradict each other (arguments that do not fit
/// their signature).
fn clash(path: &'static str, body: Value, field: &'static str) -> Bad {
    Bad { path, body, field, code: "inconsistent_fields" }
}

fn unknown(path: &'static str, mut body: Value) -> Bad {
    body["bogus"] = json!(1);
    Bad { path, body, field: "/bogus", code: "unknown_field" }
}

fn bad_inputs() -> Vec<Bad> {
    let hex = |n: usize| format!("0x{}", "a".repeat(n));
    let gas = "/v1/chain/gas";
    let block = "/v1/chain/block";
    let balance = "/v1/chain/balance";
    let token = "/v1/chain/token";
    let tx = "/v1/chain/tx";
    let price = "/v1/chain/price";
    let ens = "/v1/chain/ens";
    let calldata = "/v1/chain/calldata";
    let funding = "/v1/defi/funding";
    let receipt = "/v1/chain/receipt";
    let logs = "/v1/chain/logs";
    let call = "/v1/chain/call";
    let code = "/v1/chain/code";
    let by_number = "/v1/chain/block/by-number";
    let fees = "/v1/chain/fees";
    let status = "/v1/chain/status";
    let signature = "/v1/chain/signature";
    let encode = "/v1/chain/encode";
    let decode_log = "/v1/chain/decode-log";
    vec![
        // Bad chain.
        bad(gas, json!({"chain": "solana"}), "/chain"),
        bad(block, json!({"chain": "solana"}), "/chain"),
        bad(balance, json!({"chain": "solana", "address": EOA}), "/chain"),
        bad(token, json!({"chain": "solana", "address": EOA}), "/chain"),
        bad(tx, json!({"chain": "solana", "hash": HASH}), "/chain"),
        bad(price, json!({"chain": "solana", "pair": "ETH/USD"}), "/chain"),
        bad(price, json!({"chain": "polygon", "pair": "ETH/USD"}), "/chain"),
        bad(gas, json!({"chain": 1}), "/chain"),
        // Bad address.
        bad(balance, json!({"chain": "ethereum", "address": "0x123"}), "/address"),
        bad(balance, json!({"chain": "ethereum", "address": EOA, "token": "0x123"}), "/token"),
        bad(token, json!({"chain": "ethereum", "address": "0x123"}), "/address"),
        bad(ens, json!({"address": "0x123"}), "/address"),
        bad(token, json!({"chain": "ethereum", "address": format!("0x{}", "g".repeat(40))}), "/address"),
        // Unknown field.
        unknown(gas, json!({"chain": "ethereum"})),
        unknown(block, json!({"chain": "ethereum"})),
        unknown(balance, json!({"chain": "ethereum", "address": EOA})),
        unknown(token, json!({"chain": "ethereum", "address": EOA})),
        unknown(tx, json!({"chain": "ethereum", "hash": HASH})),
        unknown(price, json!({"chain": "ethereum", "pair": "ETH/USD"})),
        unknown(ens, json!({"name": "vitalik.eth"})),
        unknown(calldata, json!({"calldata": "0xa9059cbb"})),
        unknown(funding, json!({})),
        // Missing required field.
        bad(gas, json!({}), "/chain"),
        bad(block, json!({}), "/chain"),
        bad(balance, json!({"chain": "ethereum"}), "/address"),
        bad(balance, json!({"address": EOA}), "/chain"),
        bad(token, json!({"chain": "ethereum"}), "/address"),
        bad(tx, json!({"chain": "ethereum"}), "/hash"),
        bad(tx, json!({"hash": HASH}), "/chain"),
        bad(price, json!({"chain": "ethereum"}), "/pair"),
        bad(price, json!({"pair": "ETH/USD"}), "/chain"),
        bad(calldata, json!({}), "/calldata"),
        // Calldata.
        bad(calldata, json!({"calldata": "0xzzzzzzzz"}), "/calldata"),
        bad(calldata, json!({"calldata": "a9059cbb"}), "/calldata"),
        bad(calldata, json!({"calldata": "0xa9059cb"}), "/calldata"),
        bad(calldata, json!({"calldata": "0xa905"}), "/calldata"),
        bad(calldata, json!({"calldata": "0xa9059cbb", "signature": "not a signature("}), "/signature"),
        // Transaction hash.
        bad(tx, json!({"chain": "ethereum", "hash": hex(63)}), "/hash"),
        bad(tx, json!({"chain": "ethereum", "hash": hex(65)}), "/hash"),
        bad(tx, json!({"chain": "ethereum", "hash": hex(67)}), "/hash"),
        bad(tx, json!({"chain": "ethereum", "hash": format!("0x{}", "z".repeat(64))}), "/hash"),
        bad(tx, json!({"chain": "ethereum", "hash": "a".repeat(66)}), "/hash"),
        // ENS: exactly one of name and address.
        bad(ens, json!({"name": "vitalik.eth", "address": EOA}), "/name"),
        bad(ens, json!({}), "/name"),
        bad(ens, json!({"name": null, "address": null}), "/name"),
        // Price pairs.
        bad(price, json!({"chain": "ethereum", "pair": "DOGE/USD"}), "/pair"),
        bad(price, json!({"chain": "ethereum", "pair": "eth/usd"}), "/pair"),
        bad(price, json!({"chain": "base", "pair": "stETH/USD"}), "/pair"),
        bad(price, json!({"chain": "ethereum", "pair": "cbETH/USD"}), "/pair"),
        // Funding.
        bad(funding, json!({"limit": 0}), "/limit"),
        bad(funding, json!({"limit": 51}), "/limit"),
        bad(funding, json!({"limit": -1}), "/limit"),
        bad(funding, json!({"symbol": "BT C"}), "/symbol"),
        bad(funding, json!({"symbol": ""}), "/symbol"),
        bad(funding, json!({"symbol": "A".repeat(21)}), "/symbol"),
        bad(funding, json!({"min_volume_usd": -1}), "/min_volume_usd"),
        // Receipts, logs, calls, code, blocks, fees, status.
        bad(receipt, json!({"chain": "solana", "hash": HASH}), "/chain"),
        bad(receipt, json!({"chain": "ethereum", "hash": hex(63)}), "/hash"),
        unknown(receipt, json!({"chain": "ethereum", "hash": HASH})),
        clash(logs, json!({"chain": "ethereum", "from_block": 0, "to_block": 10_000}), "/from_block"),
        bad(logs, json!({"chain": "ethereum", "to_block": "tomorrow"}), "/to_block"),
        bad(logs, json!({"chain": "ethereum", "topics": [null, hex(63)]}), "/topics/1"),
        bad(logs, json!({"chain": "ethereum", "event": "Transfer(address"}), "/event"),
        unknown(logs, json!({"chain": "ethereum"})),
        clash(call, json!({"chain": "ethereum", "to": EOA, "signature": "f(uint8)", "args": [256]}), "/args/0"),
        bad(call, json!({"chain": "ethereum", "to": EOA, "signature": "f(uint8", "args": []}), "/signature"),
        bad(call, json!({"chain": "ethereum", "to": "0x12", "signature": "f()"}), "/to"),
        bad(call, json!({"chain": "ethereum", "to": EOA}), "/signature"),
        unknown(call, json!({"chain": "ethereum", "to": EOA, "signature": "f()"})),
        bad(code, json!({"chain": "ethereum", "address": "0x12"}), "/address"),
        unknown(code, json!({"chain": "ethereum", "address": EOA})),
        bad(by_number, json!({"chain": "ethereum"}), "/block"),
        bad(by_number, json!({"chain": "ethereum", "block": "newest"}), "/block"),
        bad(by_number, json!({"chain": "ethereum", "block": -1}), "/block"),
        bad(fees, json!({"chain": "ethereum", "blocks": 0}), "/blocks"),
        Bad {
            code: "inconsistent_fields",
            ..bad(fees, json!({"chain": "ethereum", "percentiles": [90, 10]}), "/percentiles/1")
        },
        bad(status, json!({"chains": ["ethereum", "solana"]}), "/chains/1"),
        unknown(status, json!({})),
        // Offline ABI routes.
        bad(signature, json!({}), "/query"),
        bad(signature, json!({"query": "0x1234"}), "/query"),
        clash(encode, json!({"signature": "transfer(address,uint256)", "args": [EOA]}), "/args"),
        clash(encode, json!({"signature": "transfer(address,uint256)", "args": ["0x1", 1]}), "/args/0"),
        bad(decode_log, json!({"topics": [hex(64), hex(63)]}), "/topics/1"),
        bad(decode_log, json!({"topics": [], "data": "0x1"}), "/data"),
        unknown(decode_log, json!({"topics": []})),
        // Simulation, balances, allowances, NFTs.
        bad(
            "/v1/chain/simulate",
            json!({"chain": "ethereum", "to": EOA, "data": "0x", "signature": "f()"}),
            "/signature",
        ),
        bad(
            "/v1/chain/simulate",
            json!({"chain": "ethereum", "to": EOA, "state_overrides": {"0x12": {}}}),
            "/state_overrides/0x12",
        ),
        unknown("/v1/chain/simulate", json!({"chain": "ethereum", "to": EOA})),
        bad("/v1/chain/balances", json!({"chain": "ethereum", "address": EOA, "tokens": [EOA, EOA]}), "/tokens/1"),
        unknown("/v1/chain/balances", json!({"chain": "ethereum", "address": EOA})),
        bad("/v1/chain/allowance", json!({"chain": "ethereum", "token": EOA, "owner": EOA}), "/spender"),
        unknown("/v1/chain/allowance", json!({"chain": "ethereum", "token": EOA, "owner": EOA, "spender": EOA})),
        bad("/v1/chain/nft", json!({"chain": "ethereum", "contract": EOA, "token_id": "1e3"}), "/token_id"),
        unknown("/v1/chain/nft", json!({"chain": "ethereum", "contract": EOA, "token_id": "1"})),
        bad("/v1/chain/estimate-gas", json!({"chain": "ethereum", "to": EOA, "value": "-1"}), "/value"),
        unknown("/v1/chain/estimate-gas", json!({"chain": "ethereum", "to": EOA})),
        bad("/v1/check/typed-data", json!({"typed_data": {"primaryType": "X"}}), "/typed_data/types"),
        unknown("/v1/check/typed-data", json!({"typed_data": "{}"})),
        bad("/v1/check/approvals", json!({"chain": "ethereum", "owner": EOA, "spenders": [EOA]}), "/tokens"),
        unknown("/v1/check/approvals", json!({"chain": "ethereum", "owner": EOA})),
        bad("/v1/chain/ens/records", json!({"name": "a..eth"}), "/name"),
        bad("/v1/chain/ens/records", json!({"name": "a.eth", "coins": ["btc", "bitcoin"]}), "/coins/1"),
        bad("/v1/chain/ens/records", json!({"name": "a.eth", "texts": [""]}), "/texts/0"),
        unknown("/v1/chain/ens/records", json!({"name": "vitalik.eth"})),
        bad("/v1/check/token", json!({"chain": "polygon", "address": EOA}), "/chain"),
        bad("/v1/check/token", json!({"chain": "base", "address": "0x12"}), "/address"),
        unknown("/v1/check/token", json!({"chain": "base", "address": EOA})),
        bad("/v1/chain/dex-price", json!({"chain": "polygon", "base": EOA, "quote": HASH[..42].to_string()}), "/chain"),
        Bad {
            code: "inconsistent_fields",
            ..bad("/v1/chain/dex-price", json!({"chain": "base", "base": EOA, "quote": EOA}), "/quote")
        },
        bad(
            "/v1/chain/dex-price",
            json!({"chain": "base", "base": EOA, "quote": HASH[..42].to_string(), "fee": 1}),
            "/fee",
        ),
        unknown("/v1/chain/dex-price", json!({"chain": "base", "base": EOA, "quote": HASH[..42].to_string()})),
        bad("/v1/check/sanctions", json!({"address": ""}), "/address"),
        bad("/v1/check/sanctions", json!({"address": "0x12 34"}), "/address"),
        unknown("/v1/check/sanctions", json!({"address": EOA})),
        // Solana: base58 of the right size, the network by name, the fee accounts' limits.
        bad("/v1/solana/balance", json!({}), "/address"),
        bad("/v1/solana/balance", json!({"address": EOA}), "/address"),
        bad("/v1/solana/balance", json!({"address": SOL_SIGNATURE}), "/address"),
        bad("/v1/solana/balance", json!({"address": SOL_ADDRESS, "mint": "0OIl"}), "/mint"),
        bad("/v1/solana/balance", json!({"address": SOL_ADDRESS, "network": "testnet"}), "/network"),
        bad("/v1/solana/balance", json!({"address": SOL_ADDRESS, "network": null}), "/network"),
        unknown("/v1/solana/balance", json!({"address": SOL_ADDRESS})),
        bad("/v1/solana/tokens", json!({"owner": SOL_ADDRESS, "include_empty": 1}), "/include_empty"),
        unknown("/v1/solana/tokens", json!({"owner": SOL_ADDRESS})),
        bad("/v1/solana/token", json!({"mint": ""}), "/mint"),
        unknown("/v1/solana/token", json!({"mint": SOL_ADDRESS})),
        bad("/v1/solana/tx", json!({"signature": SOL_ADDRESS}), "/signature"),
        bad("/v1/solana/tx", json!({"signature": HASH}), "/signature"),
        unknown("/v1/solana/tx", json!({"signature": SOL_SIGNATURE})),
        bad("/v1/solana/account", json!({"address": ["x"]}), "/address"),
        unknown("/v1/solana/account", json!({"address": SOL_ADDRESS})),
        bad("/v1/solana/status", json!({"accounts": [SOL_ADDRESS, SOL_ADDRESS]}), "/accounts/1"),
        bad("/v1/solana/status", json!({"accounts": vec![SOL_ADDRESS; 129]}), "/accounts"),
        bad("/v1/solana/status", json!({"accounts": [EOA]}), "/accounts/0"),
        unknown("/v1/solana/status", json!({"network": "devnet"})),
        // The URL check reads no node (so it is not among `node_calls`); its input errors
        // are 422 all the same.
        bad("/v1/check/url", json!({}), "/url"),
        bad("/v1/check/url", json!({"url": ""}), "/url"),
        bad("/v1/check/url", json!({"url": format!("https://example.com/{}", "a".repeat(8_200))}), "/url"),
        bad("/v1/check/url", json!({"url": 5}), "/url"),
        bad("/v1/check/url", json!({"url": " \t "}), "/url"),
        unknown("/v1/check/url", json!({"url": "https://example.com/"})),
    ]
}

#[tokio::test]
async fn bad_input_is_422_naming_the_field_before_any_upstream_request() {
    // Every upstream is a closed port: an input error found only after an RPC or an
    // upstream request would answer 503 here instead of 422.
    let down = closed_port_url().await;
    let (server, _dir) = serve(context(&[&down], short_timeouts(), &down)).await;
    let mut failures = Vec::new();
    for case in bad_inputs() {
        let answer = call(&server, case.path, &case.body).await;
        if answer.status != 422 {
            failures.push(format!("{} {} -> {} {}", case.path, case.body, answer.status, answer.body));
            continue;
        }
        let (code, field) = error_parts(case.path, &case.body, &answer);
        if code != case.code || field.as_deref() != Some(case.field) {
            failures.push(format!(
                "{} {} -> code {code}, field {field:?}; expected {}, {}: {}",
                case.path, case.body, case.code, case.field, answer.body
            ));
        }
        assert!(answer.retry_after.is_none(), "{} {}: Retry-After on a 422", case.path, case.body);
    }
    assert!(failures.is_empty(), "{} wrong answers:\n{}", failures.len(), failures.join("\n"));
}

#[tokio::test]
async fn a_body_that_is_not_json_is_422_without_a_field() {
    let down = closed_port_url().await;
    let (server, _dir) = serve(context(&[&down], short_timeouts(), &down)).await;
    for path in ["/v1/chain/gas", "/v1/chain/calldata", "/v1/defi/funding"] {
        let response = server
            .client
            .post(format!("{}{path}", server.base))
            .header("content-type", "application/json")
            .body("not json")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 422, "{path}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "invalid_json", "{path}: {body}");
    }
}

// --- 2. Upstream failures -----------------------------------------------------------

/// The node-backed routes, each with a valid body.
fn node_calls() -> Vec<(&'static str, Value)> {
    vec![
        ("/v1/chain/gas", json!({"chain": "ethereum"})),
        ("/v1/chain/block", json!({"chain": "ethereum"})),
        ("/v1/chain/balance", json!({"chain": "ethereum", "address": EOA})),
        ("/v1/chain/balance", json!({"chain": "base", "address": EOA, "token": EOA})),
        ("/v1/chain/token", json!({"chain": "ethereum", "address": EOA})),
        ("/v1/chain/tx", json!({"chain": "polygon", "hash": HASH})),
        ("/v1/chain/price", json!({"chain": "ethereum", "pair": "ETH/USD"})),
        ("/v1/chain/ens", json!({"name": "vitalik.eth"})),
        ("/v1/chain/ens", json!({"address": EOA})),
        ("/v1/chain/ens/records", json!({"name": "vitalik.eth"})),
        ("/v1/chain/dex-price", json!({"chain": "base", "base": EOA, "quote": HASH[..42].to_string()})),
        ("/v1/chain/nonce", json!({"chain": "ethereum", "address": EOA})),
        ("/v1/chain/storage", json!({"chain": "base", "address": EOA, "slot": "0x0"})),
        ("/v1/chain/receipt", json!({"chain": "ethereum", "hash": HASH})),
        ("/v1/chain/logs", json!({"chain": "ethereum", "from_block": 1, "to_block": 2})),
        ("/v1/chain/logs", json!({"chain": "base"})),
        (
            "/v1/chain/call",
            json!({"chain": "ethereum", "to": EOA, "signature": "balanceOf(address)(uint256)", "args": [EOA]}),
        ),
        ("/v1/chain/code", json!({"chain": "polygon", "address": EOA})),
        ("/v1/chain/block/by-number", json!({"chain": "ethereum", "block": "latest"})),
        ("/v1/chain/block/by-number", json!({"chain": "ethereum", "block": HASH})),
        ("/v1/chain/fees", json!({"chain": "ethereum"})),
        ("/v1/chain/simulate", json!({"chain": "ethereum", "to": EOA, "value": "1"})),
        ("/v1/chain/balances", json!({"chain": "base", "address": EOA, "tokens": [HASH[..42].to_string()]})),
        ("/v1/chain/allowance", json!({"chain": "ethereum", "token": EOA, "owner": EOA, "spender": EOA})),
        ("/v1/chain/nft", json!({"chain": "ethereum", "contract": EOA, "token_id": "1", "holder": EOA})),
        ("/v1/chain/estimate-gas", json!({"chain": "base", "to": EOA})),
        ("/v1/check/approvals", json!({"chain": "ethereum", "owner": EOA})),
        ("/v1/check/approvals", json!({"chain": "ethereum", "owner": EOA, "tokens": [EOA], "spenders": [EOA]})),
        ("/v1/solana/balance", json!({"address": SOL_ADDRESS})),
        ("/v1/solana/balance", json!({"address": SOL_ADDRESS, "mint": SOL_ADDRESS, "network": "devnet"})),
        ("/v1/solana/tokens", json!({"owner": SOL_ADDRESS})),
        ("/v1/solana/token", json!({"mint": SOL_ADDRESS})),
        ("/v1/solana/tx", json!({"signature": SOL_SIGNATURE})),
        ("/v1/solana/account", json!({"address": SOL_ADDRESS, "network": "devnet"})),
        ("/v1/solana/status", json!({})),
    ]
}

/// Calls every node-backed route at once (the timeouts then add up only once) and checks
/// each answers `status`, an error body, and a Retry-After equal to `retry_after` when
/// given (`Some("")`: present, any whole number of seconds; `None`: absent).
async fn expect_all(server: &Server, status: u16, code: &str, retry_after: Option<&str>) {
    let calls = node_calls();
    let answers =
        futures::future::join_all(calls.iter().map(|(path, body)| async move { call(server, path, body).await })).await;
    let mut failures = Vec::new();
    for ((path, body), answer) in calls.iter().zip(answers) {
        if answer.status != status {
            failures.push(format!("{path} {body} -> {} {} (expected {status})", answer.status, answer.body));
            continue;
        }
        let (got_code, field) = error_parts(path, body, &answer);
        assert_eq!(got_code, code, "{path} {body}: {}", answer.body);
        assert_eq!(field, None, "{path} {body}: an upstream failure names no field: {}", answer.body);
        match (retry_after, answer.retry_after.as_deref()) {
            (None, None) => {}
            (Some(""), Some(seconds)) => {
                let seconds: u64 = seconds.parse().unwrap_or_else(|_| panic!("{path}: Retry-After {seconds:?}"));
                assert!(seconds >= 1, "{path}: Retry-After {seconds}");
            }
            (Some(want), Some(got)) if want == got => {}
            (want, got) => failures.push(format!("{path} {body}: Retry-After {got:?}, expected {want:?}")),
        }
    }
    assert!(failures.is_empty(), "{} wrong answers:\n{}", failures.len(), failures.join("\n"));
}

#[tokio::test]
async fn nothing_listening_is_503_with_retry_after() {
    let down = closed_port_url().await;
    let (server, _dir) = serve(context(&[&down], short_timeouts(), &down)).await;
    expect_all(&server, 503, "unavailable", Some("")).await;
}

#[tokio::test]
async fn a_node_that_never_answers_is_504() {
    let (silent, task) = silent_server().await;
    let (server, _dir) = serve(context(&[&silent], short_timeouts(), &silent)).await;
    expect_all(&server, 504, "timeout", None).await;
    task.abort();
}

#[tokio::test]
async fn an_html_page_is_502() {
    let html =
        FakeNode::start(|_| (200, vec![("Content-Type", "text/html".into())], "<html>hello</html>".into())).await;
    let (server, _dir) = serve(context(&[&html.url], short_timeouts(), &html.url)).await;
    expect_all(&server, 502, "upstream_error", None).await;
}

#[tokio::test]
async fn a_wrong_json_rpc_shape_is_502() {
    // The chain id check passes; every other answer is JSON but not JSON-RPC.
    let shape = FakeNode::start(|r| {
        if r["method"] == "eth_chainId" {
            rpc_result(r, json!("0x1"))
        } else {
            (200, vec![], r#"{"hello": "world"}"#.into())
        }
    })
    .await;
    let ctx = context(&[&shape.url], short_timeouts(), &shape.url);
    // Only ethereum (id 1) passes the chain id check; the other two are bad upstreams anyway.
    let (server, _dir) = serve(ctx).await;
    expect_all(&server, 502, "upstream_error", None).await;
    assert!(shape.count("eth_chainId") >= 1, "the chain id check was not reached");

    // A JSON-RPC answer whose result has the wrong type.
    let wrong_type = FakeNode::start(|r| {
        if r["method"] == "eth_chainId" { rpc_result(r, json!("0x1")) } else { rpc_result(r, json!("not a number")) }
    })
    .await;
    let (server, _dir) = serve(context(&[&wrong_type.url], short_timeouts(), &wrong_type.url)).await;
    for (path, body) in [
        ("/v1/chain/gas", json!({"chain": "ethereum"})),
        ("/v1/chain/block", json!({"chain": "ethereum"})),
        ("/v1/chain/balance", json!({"chain": "ethereum", "address": EOA})),
        ("/v1/chain/token", json!({"chain": "ethereum", "address": EOA})),
        ("/v1/chain/tx", json!({"chain": "ethereum", "hash": HASH})),
        ("/v1/chain/nonce", json!({"chain": "ethereum", "address": EOA})),
        ("/v1/chain/storage", json!({"chain": "ethereum", "address": EOA, "slot": "1"})),
        ("/v1/chain/receipt", json!({"chain": "ethereum", "hash": HASH})),
        ("/v1/chain/logs", json!({"chain": "ethereum", "from_block": 1, "to_block": 2})),
        ("/v1/chain/call", json!({"chain": "ethereum", "to": EOA, "signature": "f()"})),
        ("/v1/chain/code", json!({"chain": "ethereum", "address": EOA})),
        ("/v1/chain/block/by-number", json!({"chain": "ethereum", "block": 7})),
        ("/v1/chain/fees", json!({"chain": "ethereum"})),
    ] {
        let answer = call(&server, path, &body).await;
        assert_eq!(answer.status, 502, "{path} {body}: {}", answer.body);
        assert_eq!(error_parts(path, &body, &answer).0, "upstream_error");
    }
}

#[tokio::test]
async fn a_node_of_another_chain_or_a_server_error_is_502() {
    let goerli = FakeNode::start(|r| rpc_result(r, json!("0x5"))).await;
    let (server, _dir) = serve(context(&[&goerli.url], short_timeouts(), &goerli.url)).await;
    expect_all(&server, 502, "upstream_error", None).await;

    let broken = FakeNode::start(|_| (500, vec![], "oops".into())).await;
    let (server, _dir) = serve(context(&[&broken.url], short_timeouts(), &broken.url)).await;
    expect_all(&server, 502, "upstream_error", None).await;
}

#[tokio::test]
async fn an_upstream_429_is_429_with_its_retry_after() {
    let limited = FakeNode::start(|_| (429, vec![("Retry-After", "7".into())], "slow down".into())).await;
    let (server, _dir) = serve(context(&[&limited.url], short_timeouts(), &limited.url)).await;
    expect_all(&server, 429, "rate_limited", Some("7")).await;

    // Without a Retry-After from the node, a default delay is still given.
    let limited = FakeNode::start(|_| (429, vec![], String::new())).await;
    let (server, _dir) = serve(context(&[&limited.url], short_timeouts(), &limited.url)).await;
    expect_all(&server, 429, "rate_limited", Some("")).await;
}

// --- Funding upstream ---------------------------------------------------------------

/// The funding calls that reach the upstream (a listing, and one symbol).
fn funding_calls() -> [Value; 2] {
    [json!({}), json!({"symbol": "BTC", "limit": 5})]
}

async fn expect_funding(upstream: &str, status: u16, code: &str, retry_after: Option<&str>) {
    let (server, _dir) = serve(context(&[upstream], short_timeouts(), upstream)).await;
    for body in funding_calls() {
        let answer = call(&server, "/v1/defi/funding", &body).await;
        assert_eq!(answer.status, status, "funding {body} via {upstream}: {}", answer.body);
        let (got, field) = error_parts("/v1/defi/funding", &body, &answer);
        assert_eq!((got.as_str(), field), (code, None), "{}", answer.body);
        match retry_after {
            None => assert_eq!(answer.retry_after, None, "{}", answer.body),
            Some("") => assert!(answer.retry_after.as_deref().and_then(|s| s.parse::<u64>().ok()).is_some()),
            Some(want) => assert_eq!(answer.retry_after.as_deref(), Some(want)),
        }
    }
}

#[tokio::test]
async fn solana_answers_404_for_an_unknown_transaction_and_503_for_a_node_behind() {
    let mainnet = FakeNode::start(|r| match r["method"].as_str() {
        Some("getGenesisHash") => rpc_result(r, json!(Network::Mainnet.genesis_hash())),
        Some("getTransaction") => rpc_result(r, Value::Null),
        _ => {
            let error =
                json!({"jsonrpc": "2.0", "id": r["id"], "error": {"code": -32005, "message": "Node is behind"}});
            (200, vec![], error.to_string())
        }
    })
    .await;
    let (server, _dir) = serve(context(&[&mainnet.url], short_timeouts(), &mainnet.url)).await;
    let body = json!({"signature": SOL_SIGNATURE});
    let answer = call(&server, "/v1/solana/tx", &body).await;
    assert_eq!(answer.status, 404, "{}", answer.body);
    assert_eq!(error_parts("/v1/solana/tx", &body, &answer), ("not_found".to_string(), None));
    let body = json!({"address": SOL_ADDRESS});
    let answer = call(&server, "/v1/solana/balance", &body).await;
    assert_eq!(answer.status, 503, "{}", answer.body);
    assert!(answer.retry_after.is_some(), "a node behind says when to come back");
    assert_eq!(error_parts("/v1/solana/balance", &body, &answer).0, "unavailable");
}

#[tokio::test]
async fn funding_upstream_failures_map_to_their_statuses() {
    let server_error = FakeNode::start(|_| (500, vec![], "oops".into())).await;
    expect_funding(&server_error.url, 502, "upstream_error", None).await;

    let limited = FakeNode::start(|_| (429, vec![("Retry-After", "7".into())], "slow down".into())).await;
    expect_funding(&limited.url, 429, "rate_limited", Some("7")).await;

    let down = closed_port_url().await;
    expect_funding(&down, 503, "unavailable", Some("")).await;

    let garbage = FakeNode::start(|_| (200, vec![], r#"{"not": "the info answer"}"#.into())).await;
    expect_funding(&garbage.url, 502, "upstream_error", None).await;

    let html = FakeNode::start(|_| (200, vec![("Content-Type", "text/html".into())], "<html></html>".into())).await;
    expect_funding(&html.url, 502, "upstream_error", None).await;

    let (silent, task) = silent_server().await;
    expect_funding(&silent, 504, "timeout", None).await;
    task.abort();

    assert!(server_error.count("request") >= 1, "the funding upstream was never asked");
}

// --- 3. Happy paths against anvil ---------------------------------------------------

/// The 4-byte selector of `signature`, as hex without 0x (anvil does the keccak).
async fn selector(anvil: &Anvil, signature: &str) -> String {
    let hash = anvil.rpc("web3_sha3", json!([format!("0x{}", hex_of(signature.as_bytes()))])).await;
    hash.as_str().unwrap()[2..10].to_string()
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A uint as one ABI word, hex.
fn word(value: u128) -> String {
    format!("{value:064x}")
}

/// A short string (at most 32 bytes) as its ABI tail: length word, then the padded bytes.
fn abi_string(text: &str) -> String {
    format!("{}{:0<64}", word(text.len() as u128), hex_of(text.as_bytes()))
}

/// Checks `value` against the published output schema of `path`.
fn assert_schema(path: &str, value: &Value) {
    let catalog = paperchain_engine::catalog::standard();
    let entry = catalog.by_path(path).unwrap_or_else(|| panic!("{path} is not registered"));
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let schema = entry.output_schema(&mut generator);
    let mut schema = serde_json::to_value(&schema).unwrap();
    let defs = serde_json::to_value(generator.definitions()).unwrap();
    schema.as_object_mut().unwrap().insert("$defs".into(), defs);
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(value).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{path}: the answer does not match its schema: {errors:?}\n{value:#}");
}

/// A 200 whose body matches the route's schema and has `members`.
async fn ok(server: &Server, path: &str, body: Value, members: &[&str]) -> Value {
    let answer = call(server, path, &body).await;
    assert_eq!(answer.status, 200, "{path} {body}: {}", answer.body);
    assert_schema(path, &answer.body);
    for member in members {
        assert!(answer.body.get(member).is_some(), "{path} {body}: no `{member}` in {}", answer.body);
    }
    answer.body
}

#[tokio::test]
async fn every_evm_route_answers_anvil() {
    let anvil = Anvil::start(1).await;
    let down = closed_port_url().await;
    let timeouts = ChainTimeouts { total: Duration::from_secs(20), attempt: Duration::from_secs(10) };
    let (server, _dir) = serve(context(&[&anvil.url], timeouts, &down)).await;

    let head = anvil.rpc("eth_blockNumber", json!([])).await;
    let gas = ok(
        &server,
        "/v1/chain/gas",
        json!({"chain": "ethereum"}),
        &["chain", "gas_price_wei", "gas_price_gwei", "base_fee_gwei"],
    )
    .await;
    assert_eq!(gas["chain"], "ethereum");
    assert!(gas["gas_price_wei"].as_str().unwrap().parse::<u128>().unwrap() > 0, "{gas}");

    let block = ok(
        &server,
        "/v1/chain/block",
        json!({"chain": "ethereum"}),
        &["chain", "number", "timestamp", "hash", "base_fee_gwei", "gas_used", "gas_limit"],
    )
    .await;
    assert!(block["number"].as_u64().unwrap() >= u64::from_str_radix(&head.as_str().unwrap()[2..], 16).unwrap());
    assert!(block["hash"].as_str().unwrap().starts_with("0x"), "{block}");

    // Native balance, after sending value to a fresh address.
    let sent = anvil.send_value(Some(EOA), "0x", 1_500_000_000_000_000_000).await;
    let hash = sent["transactionHash"].as_str().unwrap().to_string();
    let balance =
        ok(&server, "/v1/chain/balance", json!({"chain": "ethereum", "address": EOA}), &["chain", "address", "asset"])
            .await;
    assert_eq!(balance["asset"], "native");
    assert_eq!(balance["wei"], "1500000000000000000", "{balance}");

    // A token: the fixture ERC-20, constructed with (name, symbol, decimals, supply).
    let args = format!(
        "{}{}{}{}{}{}",
        word(0x80),
        word(0xc0),
        word(6),
        word(1_234_500_000),
        abi_string("Fixture Dollar"),
        abi_string("FIX")
    );
    let init = format!("{}{args}", Artifact::load("FixtureToken").bytecode);
    let token = anvil.deploy(&init).await;
    let info = ok(
        &server,
        "/v1/chain/token",
        json!({"chain": "ethereum", "address": token}),
        &["chain", "address", "is_erc20", "name", "symbol", "decimals"],
    )
    .await;
    assert_eq!(info["address"], token.as_str());
    assert_eq!(
        (&info["is_erc20"], &info["symbol"], &info["decimals"], &info["total_supply"]),
        (&json!(true), &json!("FIX"), &json!(6), &json!("1234.5")),
        "{info}"
    );
    let held =
        ok(&server, "/v1/chain/balance", json!({"chain": "ethereum", "address": EOA, "token": token}), &["asset"])
            .await;
    assert_eq!(held["asset"], "erc20", "{held}");
    let eoa_info = ok(&server, "/v1/chain/token", json!({"chain": "ethereum", "address": EOA}), &["is_erc20"]).await;
    assert_eq!(eoa_info["is_erc20"], false, "{eoa_info}");

    // The value transfer above, read back.
    let tx = ok(
        &server,
        "/v1/chain/tx",
        json!({"chain": "ethereum", "hash": hash}),
        &["chain", "hash", "status", "block", "from", "to", "value_wei"],
    )
    .await;
    assert_eq!(tx["hash"], hash.as_str(), "{tx}");
    assert_eq!((&tx["to"], &tx["value_wei"]), (&json!(EOA), &json!("1500000000000000000")), "{tx}");

    // A price feed: the mock aggregator's code at the ETH/USD proxy's address.
    let feed = "0x5f4ec3df9cbd43714fe2740f5e3616155c5b8419";
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    anvil.place_feed(feed, 42, 345_678_901_234, now - 60, 8).await;
    let price = ok(
        &server,
        "/v1/chain/price",
        json!({"chain": "ethereum", "pair": "ETH/USD"}),
        &[
            "chain",
            "pair",
            "price",
            "decimals",
            "round_id",
            "updated_at",
            "age_seconds",
            "stale",
            "heartbeat_s",
            "feed",
        ],
    )
    .await;
    assert_eq!(price["price"], "3456.78901234", "{price}");
    assert_eq!(price["round_id"], "42");
    assert_eq!(price["stale"], false);

    // ENS: the registry mock at the registry's address, with no resolver set for the name.
    let registry = "0x00000000000c2e074ec69a0dfb2997ba6c7d2e1e";
    anvil.set_code(registry, &Artifact::load("EnsRegistryMock").deployed_bytecode).await;
    let ens =
        ok(&server, "/v1/chain/ens", json!({"name": "nobody.eth"}), &["name", "address", "resolved", "primary_name"])
            .await;
    assert_eq!(ens["resolved"], false, "{ens}");
    let reverse = ok(&server, "/v1/chain/ens", json!({"address": EOA}), &["address", "resolved", "primary_name"]).await;
    assert_eq!(reverse["primary_name"], Value::Null, "{reverse}");
    let records = ok(&server, "/v1/chain/ens/records", json!({"name": "nobody.eth"}), &["resolver", "texts"]).await;
    assert_eq!(records["resolver"], Value::Null, "{records}");

    // Calldata needs no node.
    let transfer = selector(&anvil, "transfer(address,uint256)").await;
    let data = format!("0x{transfer}{:0>64}{}", &EOA[2..], word(5));
    let decoded = ok(
        &server,
        "/v1/chain/calldata",
        json!({"calldata": data}),
        &["selector", "bytes", "candidates", "decoded", "best"],
    )
    .await;
    assert_eq!(decoded["selector"], format!("0x{transfer}"));
    // Nor does the URL check.
    let url = ok(
        &server,
        "/v1/check/url",
        json!({"url": "https://un1swap.org/claim"}),
        &["host", "host_unicode", "registrable_domain", "reasons", "verdict", "list_date"],
    )
    .await;
    assert_eq!((url["verdict"].as_str(), url["brand"].as_str()), (Some("high"), Some("Uniswap")), "{url}");

    // The newer reads, each through HTTP in its published shape (the engine's tests compare
    // their answers with cast field by field).
    let receipt =
        ok(&server, "/v1/chain/receipt", json!({"chain": "ethereum", "hash": hash}), &["status", "logs"]).await;
    assert_eq!(receipt["status"], "success", "{receipt}");
    let logs = ok(&server, "/v1/chain/logs", json!({"chain": "ethereum", "from_block": 0}), &["count", "logs"]).await;
    assert_eq!(logs["logs"][0]["event"]["name"], "Transfer", "the token's mint: {logs}");
    let decimals = ok(
        &server,
        "/v1/chain/call",
        json!({"chain": "ethereum", "to": token, "signature": "decimals() returns (uint8)"}),
        &["success", "outputs", "revert"],
    )
    .await;
    assert_eq!(decimals["outputs"][0]["value"], "6", "{decimals}");
    let code =
        ok(&server, "/v1/chain/code", json!({"chain": "ethereum", "address": token}), &["kind", "code_hash"]).await;
    assert_eq!(code["kind"], "contract");
    let genesis = ok(&server, "/v1/chain/block/by-number", json!({"chain": "ethereum", "block": 0}), &["hash"]).await;
    assert_eq!(genesis["number"], 0);
    ok(&server, "/v1/chain/fees", json!({"chain": "ethereum", "blocks": 3}), &["suggestions"]).await;
    let status = ok(&server, "/v1/chain/status", json!({}), &["chains", "ok"]).await;
    // All three chains point at this anvil (chain id 1): only ethereum is what it says it is.
    assert_eq!(status["ok"], 1, "{status}");
    let sig = ok(&server, "/v1/chain/signature", json!({"query": "transfer(address,uint256)"}), &["selector"]).await;
    assert_eq!(sig["selector"], format!("0x{transfer}"));
    let encoded = ok(
        &server,
        "/v1/chain/encode",
        json!({"signature": "transfer(address,uint256)", "args": [EOA, 5]}),
        &["calldata"],
    )
    .await;
    assert_eq!(encoded["calldata"], data);
    let log = &logs["logs"][0];
    let decoded_log =
        ok(&server, "/v1/chain/decode-log", json!({"topics": log["topics"], "data": log["data"]}), &["best"]).await;
    assert_eq!(decoded_log["best"], log["event"]);
}
