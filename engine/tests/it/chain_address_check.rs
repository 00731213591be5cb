//! `/v1/check/address` against a real anvil (chain ids 1 and 8453) with the fixture
//! contracts: a plain token, a token with owner powers, EIP-1967 and beacon proxies, a
//! contract that can SELFDESTRUCT, an EOA; the buy/sell simulation against a small
//! Uniswap V2 (factory, pairs, router, WETH) put at each chain's real addresses, with a
//! plain token, fee-on-transfer tokens, a honeypot and tokens without liquidity; and
//! against dead, silent, rate-limiting and failing nodes.
//!
//! Every answer is checked against the route's published output schema.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use alloy::primitives::{Address, U256};
use alloy::sol_types::SolValue;
use common::market::{ETHER, Market, POOL_TOKENS, Pool};
use common::route::call;
use paperchain_engine::evm::{ChainConfig, ChainTimeouts, Chains};
use paperchain_engine::{Context, EngineError, ErrorKind};
use paperchain_testkit::anvil::{Anvil, Artifact};
use paperchain_testkit::fake_node::FakeNode;
use paperchain_testkit::loopback::{closed_port_url, silent_server};
use serde_json::{Value, json};

const PATH: &str = "/v1/check/address";
const EOA: &str = "0x00000000000000000000000000000000000b0b00";

fn context(name: &str, chain_id: u64, url: &str, timeouts: ChainTimeouts) -> Context {
    let mut ctx = Context::new();
    ctx.chains = Arc::new(Chains::new(vec![ChainConfig::new(name, chain_id, vec![url.parse().unwrap()])], timeouts));
    ctx
}

async fn ok(ctx: &Context, body: Value) -> Value {
    call(ctx, PATH, body.clone()).await.unwrap_or_else(|e| panic!("{body}: {e:?}"))
}

async fn err(ctx: &Context, body: Value) -> EngineError {
    match call(ctx, PATH, body.clone()).await {
        Ok(answer) => panic!("{body} answered {answer:#}"),
        Err(e) => e,
    }
}

/// The reason `skipped` gives for the trade simulation, if it lists it.
fn skipped_simulation(answer: &Value) -> Option<String> {
    let skipped = answer["skipped"].as_array().unwrap();
    assert_eq!(skipped[0]["check"], json!("source_verification"));
    skipped.iter().find(|s| s["check"] == "trade_simulation").map(|s| s["reason"].as_str().unwrap().to_string())
}

fn codes(answer: &Value) -> Vec<&str> {
    answer["reasons"].as_array().unwrap().iter().map(|r| r["code"].as_str().unwrap()).collect()
}

struct Fixture {
    anvil: Anvil,
    ctx: Context,
    token: String,
}

impl Fixture {
    async fn new() -> Fixture {
        let anvil = Anvil::start(1).await;
        let args =
            ("Fixture Token".to_string(), "FIX".to_string(), U256::from(6u8), U256::from(1_000u64)).abi_encode_params();
        let token = anvil.deploy(&Artifact::load("FixtureToken").init_code(&args)).await;
        let ctx = context("ethereum", 1, &anvil.url, ChainTimeouts::default());
        Fixture { anvil, ctx, token }
    }

    async fn check(&self, address: &str) -> Value {
        let answer = ok(&self.ctx, json!({"chain": "ethereum", "address": address})).await;
        assert_eq!(answer["schema"], json!("precheck/1"));
        assert_eq!(answer["ok"], json!(true));
        assert_eq!(answer["chain"], json!("ethereum"));
        assert_eq!(answer["address"], json!(address.to_ascii_lowercase()));
        assert_eq!(answer["verification"]["status"], json!("skipped"));
        assert_eq!(answer["verification"]["reason"], json!("no source verifier is reachable from this server"));
        let points: u64 = answer["reasons"].as_array().unwrap().iter().map(|r| r["points"].as_u64().unwrap()).sum();
        assert_eq!(answer["risk_score"], json!(points.min(100)));
        answer
    }
}

#[tokio::test]
async fn a_plain_token_is_low() {
    let f = Fixture::new().await;
    let answer = f.check(&f.token.to_ascii_uppercase().replace("0X", "0x")).await;
    // FixtureToken has an open mint and nothing else the check counts.
    assert_eq!(codes(&answer), vec!["mint_function"]);
    assert_eq!(answer["verdict"], json!("low"));
    assert_eq!(answer["risk_score"], json!(15));
    assert_eq!(
        answer["token"],
        json!({"is_erc20": true, "name": "Fixture Token", "symbol": "FIX", "decimals": 6, "simulation": null})
    );
    assert_eq!(answer["proxy"]["is_proxy"], json!(false));
    assert_eq!(answer["capabilities"]["is_contract"], json!(true));
    assert_eq!(answer["capabilities"]["selfdestruct"], json!(false));
    assert_eq!(answer["deep_scan"]["performed"], json!(true));
    assert_eq!(answer["deep_scan"]["scanned_address"], json!(f.token));
    let block = f.anvil.rpc("eth_blockNumber", json!([])).await;
    assert_eq!(answer["checked_at_block"], json!(u64::from_str_radix(&block.as_str().unwrap()[2..], 16).unwrap()));
    // This anvil has no Uniswap V2: the simulation is skipped, saying so.
    assert_eq!(
        skipped_simulation(&answer).as_deref(),
        Some("no Uniswap V2 factory is deployed at 0x5c69bee701ef814a2b6a3edd4b1652cb9cc5aa6f on this chain")
    );
}

#[tokio::test]
async fn owner_powers_are_flagged() {
    let f = Fixture::new().await;
    let risky = f.anvil.deploy(&Artifact::load("RiskyToken").init_code(&[])).await;
    let answer = f.check(&risky).await;
    let mut found = codes(&answer);
    found.sort();
    assert_eq!(found, vec!["blacklist_function", "fee_setter", "mint_function", "pause_function"]);
    assert_eq!(answer["risk_score"], json!(75));
    assert_eq!(answer["verdict"], json!("high"));
    let signatures: Vec<&str> =
        answer["deep_scan"]["selectors"].as_array().unwrap().iter().map(|s| s["signature"].as_str().unwrap()).collect();
    assert_eq!(signatures, vec!["mint(address,uint256)", "blacklist(address)", "setFee(uint256)", "pause()"]);
    for power in ["mint", "blacklist", "fee_setter", "pause"] {
        assert_eq!(answer["capabilities"][power], json!(true), "{power}");
    }
}

#[tokio::test]
async fn a_proxy_with_an_eoa_admin_is_upgradeable_by_a_single_key() {
    let f = Fixture::new().await;
    let implementation: Address = f.token.parse().unwrap();
    let admin: Address = EOA.parse().unwrap();
    let args = (implementation, admin).abi_encode_params();
    let proxy = f.anvil.deploy(&Artifact::load("Eip1967Proxy").init_code(&args)).await;
    let answer = f.check(&proxy).await;
    assert_eq!(answer["reasons"][0]["code"], json!("upgradeable_single_key"));
    assert_eq!(answer["reasons"][0]["severity"], json!("high"));
    assert_eq!(answer["verdict"], json!("high"));
    // The proxy's own DELEGATECALL is its expected use; the implementation's mint is reported.
    assert_eq!(codes(&answer), vec!["upgradeable_single_key", "mint_function"]);
    assert_eq!(
        answer["proxy"],
        json!({
            "is_proxy": true, "standard": "eip1967", "implementation": f.token, "beacon": null,
            "admin": EOA, "admin_kind": "eoa", "admin_owner": null
        })
    );
    assert_eq!(answer["deep_scan"]["scanned_address"], json!(f.token));
    assert_eq!(answer["capabilities"]["upgradeable"], json!(true));
    assert_eq!(answer["capabilities"]["delegatecall"], json!(false));
    // Calls through the proxy reach the token's code with the proxy's (empty) storage.
    assert_eq!(answer["token"]["is_erc20"], json!(true));
    assert_eq!(answer["token"]["symbol"], json!(""));

    // An admin that is a contract without owner(): upgradeable, not a single key.
    let admin_contract = f.anvil.deploy(&Artifact::load("NotAToken").init_code(&[])).await;
    let args = (implementation, admin_contract.parse::<Address>().unwrap()).abi_encode_params();
    let proxy = f.anvil.deploy(&Artifact::load("Eip1967Proxy").init_code(&args)).await;
    let answer = f.check(&proxy).await;
    assert_eq!(codes(&answer), vec!["upgradeable_proxy", "mint_function"]);
    assert_eq!(answer["proxy"]["admin_kind"], json!("contract"));
    assert_eq!(answer["verdict"], json!("caution"));

    // An admin contract whose owner() is an EOA (the ProxyAdmin pattern): still one key.
    let owned_admin = f.anvil.deploy(&Artifact::load("RiskyToken").init_code(&[])).await;
    let deployer = f.anvil.accounts().await.remove(0).to_ascii_lowercase();
    let args = (implementation, owned_admin.parse::<Address>().unwrap()).abi_encode_params();
    let proxy = f.anvil.deploy(&Artifact::load("Eip1967Proxy").init_code(&args)).await;
    let answer = f.check(&proxy).await;
    assert_eq!(codes(&answer), vec!["upgradeable_single_key", "mint_function"]);
    assert_eq!(answer["proxy"]["admin_kind"], json!("contract"));
    assert_eq!(answer["proxy"]["admin_owner"], json!(deployer));
    assert!(answer["reasons"][0]["message"].as_str().unwrap().contains(&deployer));

    // A proxy whose implementation has no code: the code that runs was not checked.
    let args = (admin, admin).abi_encode_params();
    let proxy = f.anvil.deploy(&Artifact::load("Eip1967Proxy").init_code(&args)).await;
    let answer = f.check(&proxy).await;
    assert_eq!(answer["verdict"], json!("unknown"));
    assert!(codes(&answer).contains(&"implementation_not_found"));
    assert_eq!(answer["deep_scan"]["performed"], json!(false));
}

#[tokio::test]
async fn selfdestruct_is_flagged() {
    let f = Fixture::new().await;
    let doomed = f.anvil.deploy(&Artifact::load("SelfDestructor").init_code(&[])).await;
    let answer = f.check(&doomed).await;
    assert_eq!(codes(&answer), vec!["selfdestruct"]);
    assert_eq!(answer["reasons"][0]["severity"], json!("high"));
    assert_eq!(answer["verdict"], json!("high"));
    assert_eq!(answer["token"]["is_erc20"], json!(false));
    assert_eq!(skipped_simulation(&answer).as_deref(), Some("not an ERC-20 token"));
}

#[tokio::test]
async fn an_eoa_is_low_with_an_info_reason_on_base() {
    let anvil = Anvil::start(8453).await;
    let ctx = context("base", 8453, &anvil.url, ChainTimeouts::default());
    let answer = ok(&ctx, json!({"chain": "base", "address": EOA})).await;
    assert_eq!(answer["chain"], json!("base"));
    assert_eq!(answer["verdict"], json!("low"));
    assert_eq!(answer["risk_score"], json!(0));
    assert_eq!(codes(&answer), vec!["externally_owned_account"]);
    assert_eq!(answer["reasons"][0]["severity"], json!("info"));
    assert_eq!(answer["token"], Value::Null);
    assert_eq!(answer["capabilities"]["is_contract"], json!(false));
}

#[tokio::test]
async fn bad_inputs_name_their_fields() {
    let ctx = context("ethereum", 1, "http://127.0.0.1:1/", ChainTimeouts::default());
    let cases = [
        (json!({"chain": "ethereum", "address": "0x1234"}), "/address"),
        (json!({"chain": "ethereum", "address": 5}), "/address"),
        (json!({"chain": "ethereum"}), "/address"),
        (json!({"chain": "polygon", "address": EOA}), "/chain"),
        (json!({"chain": "solana", "address": EOA}), "/chain"),
        (json!({"address": EOA}), "/chain"),
        (json!({"chain": "ethereum", "address": EOA, "deep": true}), "/deep"),
    ];
    for (body, field) in cases {
        let e = err(&ctx, body.clone()).await;
        assert_eq!(e.kind, ErrorKind::InvalidInput, "{body}: {e:?}");
        assert_eq!(e.field.as_deref(), Some(field), "{body}: {e:?}");
        assert!(e.message.starts_with(field), "{body}: {e:?}");
    }
    // `base` is a valid chain of the route but not configured in this context.
    let e = err(&ctx, json!({"chain": "base", "address": EOA})).await;
    assert_eq!(e.field.as_deref(), Some("/chain"));
}

#[tokio::test]
async fn a_dead_or_silent_node_is_unavailable() {
    let closed = closed_port_url().await;
    let (silent_url, holder) = silent_server().await;
    let timeouts = ChainTimeouts { total: Duration::from_secs(2), attempt: Duration::from_secs(1) };
    for url in [closed.as_str(), silent_url.as_str()] {
        let ctx = context("ethereum", 1, url, timeouts);
        let e = err(&ctx, json!({"chain": "ethereum", "address": EOA})).await;
        assert!(
            matches!(e.kind, ErrorKind::Unavailable { retry_after } if retry_after >= Duration::from_secs(1)),
            "{url}: {e:?}"
        );
        assert_eq!(e.code, "unavailable");
    }
    holder.abort();
}

#[tokio::test]
async fn results_are_cached_per_chain_and_address() {
    let f = Fixture::new().await;
    let first = f.check(EOA).await;
    // The EOA becomes a contract that can SELFDESTRUCT: the cached answer is served.
    f.anvil.set_code(EOA, &Artifact::load("SelfDestructor").deployed_bytecode).await;
    f.anvil.mine(1).await;
    let second = f.check(EOA).await;
    assert_eq!(second["reasons"], first["reasons"]);
    assert_eq!(second["checked_at_block"], first["checked_at_block"]);
    // A fresh context (empty cache) sees the change.
    let fresh = context("ethereum", 1, &f.anvil.url, ChainTimeouts::default());
    let third = ok(&fresh, json!({"chain": "ethereum", "address": EOA})).await;
    assert_eq!(codes(&third), vec!["selfdestruct"]);
}

#[tokio::test]
async fn a_beacon_proxy_follows_the_beacon() {
    let f = Fixture::new().await;
    let implementation: Address = f.token.parse().unwrap();
    let beacon = f.anvil.deploy(&Artifact::load("FixtureBeacon").init_code(&implementation.abi_encode())).await;
    let args = beacon.parse::<Address>().unwrap().abi_encode();
    let proxy = f.anvil.deploy(&Artifact::load("FixtureBeaconProxy").init_code(&args)).await;
    let deployer = f.anvil.accounts().await.remove(0).to_ascii_lowercase();
    let answer = f.check(&proxy).await;
    assert_eq!(
        answer["proxy"],
        json!({
            "is_proxy": true, "standard": "eip1967_beacon", "implementation": f.token, "beacon": beacon,
            "admin": deployer, "admin_kind": "eoa", "admin_owner": null
        })
    );
    // The beacon's owner (an EOA) can point every proxy at new code: one key.
    assert_eq!(codes(&answer), vec!["upgradeable_single_key", "mint_function"]);
    assert_eq!(answer["verdict"], json!("high"));
    // The implementation's code was scanned, not the proxy's own DELEGATECALL.
    assert_eq!(answer["deep_scan"]["scanned_address"], json!(f.token));
    assert_eq!(answer["capabilities"]["delegatecall"], json!(false));
    assert_eq!(answer["token"]["is_erc20"], json!(true));
}

// ---- the buy/sell simulation ----

impl Market {
    async fn check(&self, address: &str) -> Value {
        let answer = ok(&self.ctx, json!({"chain": self.chain, "address": address})).await;
        assert_eq!(answer["chain"], json!(self.chain));
        let points: u64 = answer["reasons"].as_array().unwrap().iter().map(|r| r["points"].as_u64().unwrap()).sum();
        assert_eq!(answer["risk_score"], json!(points.min(100)));
        answer
    }

    /// The answer's simulation, checked for what every run shares; the simulation must have run.
    async fn simulation(&self, address: &str) -> (Value, Value) {
        let answer = self.check(address).await;
        assert_eq!(skipped_simulation(&answer), None, "{answer:#}");
        let simulation = answer["token"]["simulation"].clone();
        assert_eq!(simulation["dex"], json!("uniswap_v2"));
        assert_eq!(simulation["router"], json!(self.dex.router));
        assert_eq!(simulation["weth"], json!(self.dex.weth));
        assert_eq!(simulation["buy_ok"], json!(true), "{simulation:#}");
        assert!(simulation["buy_gas"].as_u64().unwrap() > 21_000, "{simulation:#}");
        (answer, simulation)
    }
}

/// A tax percent ("4.99") as a number.
fn tax(simulation: &Value, side: &str) -> f64 {
    simulation[format!("{side}_tax_percent")].as_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_plain_token_trades_without_tax() {
    let m = Market::new("ethereum").await;
    let token = m.token("PLN", 0, 0, false, Pool::Eth(10 * ETHER)).await;
    let (answer, simulation) = m.simulation(&token).await;
    eprintln!("plain: {simulation:#}");
    assert_eq!(codes(&answer), Vec::<&str>::new());
    assert_eq!(answer["verdict"], json!("low"));
    assert_eq!(answer["risk_score"], json!(0));
    assert_eq!(answer["skipped"].as_array().unwrap().len(), 1);
    // 0.01 ETH (under 1% of 10 ETH) against 1,000,000 tokens: 997 tokens and change after the pool fee.
    assert_eq!(simulation["amount_in_wei"], json!("10000000000000000"));
    assert_eq!(simulation["pool_weth_wei"], json!((10 * ETHER).to_string()));
    assert_eq!(simulation["pool_token_raw"], json!(POOL_TOKENS.to_string()));
    assert_eq!(simulation["buy_expected_raw"], simulation["buy_received_raw"]);
    let bought: u128 = simulation["buy_received_raw"].as_str().unwrap().parse().unwrap();
    assert!((996 * ETHER..998 * ETHER).contains(&bought), "{bought}");
    assert_eq!(simulation["buy_tax_percent"], json!("0.00"));
    assert_eq!(simulation["sell_ok"], json!(true));
    assert_eq!(simulation["sell_expected_wei"], simulation["sell_received_wei"]);
    assert_eq!(simulation["sell_tax_percent"], json!("0.00"));
    assert!(simulation["sell_gas"].as_u64().unwrap() > 21_000);
    let pair = &simulation["pair"];
    assert!(pair.as_str().unwrap().starts_with("0x") && *pair != json!(token));

    // A shallow pool: the buy spends 1% of its WETH, not 0.01 ETH.
    let shallow = m.token("SHL", 0, 0, false, Pool::Eth(ETHER / 2)).await;
    let (_, simulation) = m.simulation(&shallow).await;
    assert_eq!(simulation["amount_in_wei"], json!((ETHER / 200).to_string()));
    assert_eq!(simulation["buy_tax_percent"], json!("0.00"));
    assert_eq!(simulation["sell_tax_percent"], json!("0.00"));
}

#[tokio::test]
async fn fee_on_transfer_taxes_are_measured() {
    let m = Market::new("ethereum").await;
    let five = m.token("FIV", 500, 500, false, Pool::Eth(10 * ETHER)).await;
    let (answer, simulation) = m.simulation(&five).await;
    eprintln!("5%: {simulation:#}");
    assert_eq!(simulation["buy_tax_percent"], json!("5.00"));
    // The sell quote is for all the tokens, the pool gets 95% of them; the curve makes the
    // shortfall a hair under 5%.
    let sell = tax(&simulation, "sell");
    assert!((4.9..=5.0).contains(&sell), "{sell}");
    assert_eq!(codes(&answer), vec!["trade_tax"]);
    assert_eq!(answer["reasons"][0]["severity"], json!("low"));
    assert_eq!(answer["risk_score"], json!(10));
    assert_eq!(answer["verdict"], json!("low"));
    let message = answer["reasons"][0]["message"].as_str().unwrap();
    assert!(message.contains("buy tax 5.00%") && message.contains("sell tax"), "{message}");

    let twenty = m.token("TWY", 2000, 2000, false, Pool::Eth(10 * ETHER)).await;
    let (answer, simulation) = m.simulation(&twenty).await;
    eprintln!("20%: {simulation:#}");
    assert_eq!(simulation["buy_tax_percent"], json!("20.00"));
    let sell = tax(&simulation, "sell");
    assert!((19.9..=20.0).contains(&sell), "{sell}");
    assert_eq!(codes(&answer), vec!["high_trade_tax"]);
    assert_eq!(answer["risk_score"], json!(30));
    assert_eq!(answer["verdict"], json!("caution"));

    // Only the sell taxed, by 12%: the larger side decides.
    let sell_only = m.token("SEL", 0, 1200, false, Pool::Eth(10 * ETHER)).await;
    let (answer, simulation) = m.simulation(&sell_only).await;
    eprintln!("0%/12%: {simulation:#}");
    assert_eq!(simulation["buy_tax_percent"], json!("0.00"));
    let sell = tax(&simulation, "sell");
    assert!((11.9..=12.0).contains(&sell), "{sell}");
    assert_eq!(codes(&answer), vec!["high_trade_tax"]);
}

#[tokio::test]
async fn a_honeypot_is_high() {
    let m = Market::new("ethereum").await;
    let trap = m.token("HNY", 0, 0, true, Pool::Eth(10 * ETHER)).await;
    let (answer, simulation) = m.simulation(&trap).await;
    eprintln!("honeypot: {simulation:#}");
    assert_eq!(codes(&answer), vec!["sell_blocked"]);
    assert_eq!(answer["reasons"][0]["severity"], json!("high"));
    assert_eq!(answer["risk_score"], json!(60));
    assert_eq!(answer["verdict"], json!("high"));
    assert_eq!(simulation["buy_tax_percent"], json!("0.00"));
    assert_eq!(simulation["sell_ok"], json!(false));
    assert_eq!(simulation["sell_tax_percent"], Value::Null);
    assert_eq!(simulation["sell_received_wei"], json!("0"));
    assert!(simulation["sell_gas"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn tokens_without_liquidity_are_skipped_with_the_reason() {
    let m = Market::new("ethereum").await;
    let cases = [
        (m.token("NOP", 0, 0, false, Pool::None).await, "no Uniswap V2 pool of this token with wrapped ether exists"),
        (
            m.token("EMP", 0, 0, false, Pool::Empty).await,
            "no Uniswap V2 pool with wrapped ether holds liquidity for this token",
        ),
        (m.dex.weth.to_string(), "the token is the chain's wrapped ether, the other side of every pool searched"),
    ];
    for (token, reason) in cases {
        let answer = m.check(&token).await;
        assert_eq!(skipped_simulation(&answer).as_deref(), Some(reason), "{answer:#}");
        assert_eq!(answer["token"]["is_erc20"], json!(true));
        assert_eq!(answer["token"]["simulation"], Value::Null);
        assert_eq!(codes(&answer), Vec::<&str>::new(), "{answer:#}");
        assert_eq!(answer["verdict"], json!("low"));
    }
}

#[tokio::test]
async fn the_simulation_runs_on_base() {
    let m = Market::new("base").await;
    let token = m.token("BSE", 300, 100, false, Pool::Eth(3 * ETHER)).await;
    let (answer, simulation) = m.simulation(&token).await;
    eprintln!("base 3%/1%: {simulation:#}");
    assert_eq!(simulation["router"], json!("0x4752ba5dbc23f44d87826276bf6fd6b1c372ad24"));
    assert_eq!(simulation["buy_tax_percent"], json!("3.00"));
    let sell = tax(&simulation, "sell");
    assert!((0.95..=1.0).contains(&sell), "{sell}");
    assert_eq!(codes(&answer), vec!["trade_tax"]);
}

/// A node in front of anvil that answers the simulation's `eth_call` (the one with a
/// state override) itself, with `answer`, and passes everything else on; with
/// `everything`, it answers every request itself.
async fn interceptor(upstream: &str, everything: bool, answer: fn(&Value) -> (u16, String)) -> FakeNode {
    let upstream = upstream.to_string();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    FakeNode::serve(move |request, body| {
        let (upstream, client) = (upstream.clone(), client.clone());
        async move {
            let simulation =
                request["method"] == "eth_call" && request["params"].as_array().is_some_and(|p| p.len() == 3);
            let (status, text) = if everything || simulation {
                answer(&request)
            } else {
                let response = client.post(&upstream).header("content-type", "application/json").body(body);
                (200, response.send().await.unwrap().text().await.unwrap())
            };
            (status, vec![("Content-Type", "application/json".to_string()), ("Retry-After", "7".to_string())], text)
        }
    })
    .await
}

fn rpc_error(request: &Value, code: i64, message: &str) -> (u16, String) {
    (200, json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": code, "message": message}}).to_string())
}

#[tokio::test]
async fn simulation_failures_follow_the_route_rules() {
    let m = Market::new("ethereum").await;
    let token = m.token("FLR", 0, 0, false, Pool::Eth(10 * ETHER)).await;
    let body = json!({"chain": "ethereum", "address": token});

    // The node's rate limit on the simulation: 429 with its Retry-After.
    let limited = interceptor(&m.anvil.url, false, |_| (429, "slow down".into())).await;
    let ctx = context("ethereum", 1, &limited.url, ChainTimeouts::default());
    let e = err(&ctx, body.clone()).await;
    assert_eq!(e.kind, ErrorKind::RateLimited { retry_after: Duration::from_secs(7) }, "{e:?}");

    // The node failing the simulation: 503, like any other read of the check.
    let failing = interceptor(&m.anvil.url, false, |r| rpc_error(r, -32603, "internal error")).await;
    let ctx = context("ethereum", 1, &failing.url, ChainTimeouts::default());
    let e = err(&ctx, body.clone()).await;
    assert!(matches!(e.kind, ErrorKind::Unavailable { .. }), "{e:?}");
    assert_eq!(e.code, "unavailable");

    // The simulation reverting as a whole: an answer, the simulation skipped with why.
    let reverting = interceptor(&m.anvil.url, false, |r| rpc_error(r, 3, "execution reverted")).await;
    let ctx = context("ethereum", 1, &reverting.url, ChainTimeouts::default());
    let answer = ok(&ctx, body.clone()).await;
    assert_eq!(
        skipped_simulation(&answer).as_deref(),
        Some("the simulation reverted as a whole (execution reverted), so no buy or sell result is known")
    );
    assert_eq!(answer["token"]["simulation"], Value::Null);
    assert_eq!(answer["verdict"], json!("low"));

    // Straight to anvil, the same token's simulation runs.
    let answer = ok(&m.ctx, body).await;
    assert_eq!(answer["token"]["simulation"]["sell_ok"], json!(true));
}

#[tokio::test]
async fn a_rate_limiting_node_is_429() {
    let m = Market::new("ethereum").await;
    let limited = interceptor(&m.anvil.url, true, |_| (429, "too many requests".into())).await;
    let ctx = context("ethereum", 1, &limited.url, ChainTimeouts::default());
    let e = err(&ctx, json!({"chain": "ethereum", "address": EOA})).await;
    assert_eq!(e.kind, ErrorKind::RateLimited { retry_after: Duration::from_secs(7) }, "{e:?}");
    assert_eq!(e.code, "rate_limited");
}
