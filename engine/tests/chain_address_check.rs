//! `/v1/check/address` against a real anvil (chain ids 1 and 8453) with the fixture
//! contracts: a plain token, a token with owner powers, an EIP-1967 proxy, a contract
//! that can SELFDESTRUCT, an EOA; and against dead or silent nodes.
//!
//! Every answer is checked against the route's published output schema.

mod common;

use std::sync::Arc;
use std::time::Duration;

use alloy::primitives::{Address, U256};
use alloy::sol_types::SolValue;
use common::anvil::{Anvil, Artifact};
use common::route::call;
use paperchain_engine::chain::evm::{ChainConfig, ChainTimeouts, Chains};
use paperchain_engine::{Context, EngineError, ErrorKind};
use serde_json::{Value, json};
use tokio::net::TcpListener;

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
    assert_eq!(answer["token"], json!({"is_erc20": true, "name": "Fixture Token", "symbol": "FIX", "decimals": 6}));
    assert_eq!(answer["proxy"]["is_proxy"], json!(false));
    assert_eq!(answer["capabilities"]["is_contract"], json!(true));
    assert_eq!(answer["capabilities"]["selfdestruct"], json!(false));
    assert_eq!(answer["deep_scan"]["performed"], json!(true));
    assert_eq!(answer["deep_scan"]["scanned_address"], json!(f.token));
    let block = f.anvil.rpc("eth_blockNumber", json!([])).await;
    assert_eq!(answer["checked_at_block"], json!(u64::from_str_radix(&block.as_str().unwrap()[2..], 16).unwrap()));
    let skipped = answer["skipped"].as_array().unwrap();
    assert!(
        skipped
            .iter()
            .any(|s| s["check"] == "trade_simulation" && s["reason"].as_str().unwrap().contains("no DEX router"))
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
    assert!(answer["skipped"].as_array().unwrap().iter().any(|s| s["reason"] == "not an ERC-20 token"));
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
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let closed = format!("http://{}/", listener.local_addr().unwrap());
    drop(listener);
    let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_url = format!("http://{}/", silent.local_addr().unwrap());
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            held.push(socket);
        }
    });
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
