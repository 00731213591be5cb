//! The EVM read routes against a real anvil, each answer compared field by field with what
//! Foundry's `cast` reads for the same question: receipts (`cast receipt`), logs (`cast
//! logs`), contract calls (`cast call`), code and proxies (`cast code`, `cast codesize`,
//! `cast implementation`, `cast admin`), blocks (`cast block`), fee history (`cast rpc
//! eth_feeHistory`) and chain status (`cast block-number`). The fixture contracts are the
//! ERC-20 `FixtureToken`, `ChainReads` (multi-value views, every kind of revert, an ERC-721
//! transfer event, an indexed string), the EIP-1967 and beacon proxies, an EIP-1167 clone
//! and an EIP-7702 delegation written with `anvil_setCode`.
//!
//! Every answer is checked against the route's published output schema.
//!
//! Receipts and logs are in `chain_reads/logs.rs`, token balances, allowances, NFTs and
//! standing approvals in `chain_reads/tokens.rs`; the fixture and helpers they share are
//! here.

mod logs;
mod tokens;

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use alloy::primitives::{Address, U256};
use alloy::sol_types::SolValue;
use common::chain::{cast, ethereum as context};
use common::route::{err, ok};
use paperchain_engine::evm::{ChainConfig, ChainTimeouts, Chains};
use paperchain_engine::{Context, ErrorKind};
use paperchain_testkit::anvil::{Anvil, Artifact};
use paperchain_testkit::fake_node::FakeNode;
use paperchain_testkit::loopback::closed_port_url;
use serde_json::{Value, json};

const EOA: &str = "0x00000000000000000000000000000000000b0b00";
const TRANSFER: &str = "Transfer(address indexed from, address indexed to, uint256 value)";

/// A JSON-RPC quantity of a cast JSON answer as a number.
fn quantity(value: &Value) -> u64 {
    let text = value.as_str().unwrap_or_else(|| panic!("not a quantity: {value}"));
    u64::from_str_radix(text.trim_start_matches("0x"), 16).unwrap()
}

/// `cast <args> --json`, parsed.
fn cast_json(rpc: &str, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    serde_json::from_str(&cast(rpc, &all)).unwrap()
}

/// Calldata for `signature` with `args` (cast's notation).
fn calldata(signature: &str, args: &[&str]) -> String {
    let mut command = vec!["calldata", signature];
    command.extend(args);
    common::chain::cast_offline(&command)
}

/// A fake node's answer to a request or a batch: `answer` gives each call's `result` or
/// `error` member by method.
fn replay(request: &Value, answer: fn(&str) -> Value) -> paperchain_testkit::fake_node::Reply {
    let one = |r: &Value| {
        let mut reply = answer(r["method"].as_str().unwrap_or_default());
        reply["jsonrpc"] = json!("2.0");
        reply["id"] = r["id"].clone();
        reply
    };
    let body = match request {
        Value::Array(calls) => Value::Array(calls.iter().map(one).collect()),
        single => one(single),
    };
    (200, vec![], body.to_string())
}

/// Anvil with the token and the ChainReads contract deployed, and some traffic.
struct Fixture {
    anvil: Anvil,
    ctx: Context,
    sender: String,
    token: String,
    reads: String,
    /// The token transfer's transaction hash.
    transfer: String,
    /// The ERC-721-shaped transfer's transaction hash.
    nft: String,
    /// The indexed-string event's transaction hash.
    named: String,
}

impl Fixture {
    async fn new() -> Fixture {
        let anvil = Anvil::start(1).await;
        let ctx = context(&anvil.url);
        let sender = anvil.accounts().await.into_iter().next().unwrap().to_lowercase();
        let args = ("Fixture Token".to_string(), "FIX".to_string(), U256::from(6u8), U256::from(5_000_000u64))
            .abi_encode_params();
        let token = anvil.deploy(&Artifact::load("FixtureToken").init_code(&args)).await;
        let reads = anvil.deploy(&Artifact::load("ChainReads").init_code(&[])).await;
        let hash = |receipt: Value| receipt["transactionHash"].as_str().unwrap().to_string();
        let transfer = hash(anvil.send(Some(&token), &calldata("transfer(address,uint256)", &[EOA, "1250000"])).await);
        anvil.send(Some(&token), &calldata("approve(address,uint256)", &[EOA, "7"])).await;
        let nft = hash(anvil.send(Some(&reads), &calldata("emitNft(address,uint256)", &[EOA, "42"])).await);
        let named =
            hash(anvil.send(Some(&reads), &calldata("emitNamed(string,uint256,string)", &["alice", "5", "hi"])).await);
        Fixture { anvil, ctx, sender, token, reads, transfer, nft, named }
    }
}

#[tokio::test]
async fn calls_match_cast_and_reverts_are_explained() {
    let f = Fixture::new().await;
    let url = &f.anvil.url;
    let caller = "0x00000000000000000000000000000000000000aa";
    let signature = "describe(uint256,string)(uint256,string,address,uint8[2])";
    let body =
        json!({"chain": "ethereum", "to": f.reads, "signature": signature, "args": [21, "hello"], "from": caller});
    let answer = ok(&f.ctx, "/v1/chain/call", body).await;
    assert_eq!(answer["success"], true);
    let expected = cast_json(url, &["call", &f.reads, signature, "21", "hello", "--from", caller]);
    let outputs = answer["outputs"].as_array().unwrap();
    assert_eq!(outputs.len(), 4);
    assert_eq!(outputs[0]["value"].as_str().unwrap(), expected[0].to_string());
    assert_eq!(outputs[1]["value"], expected[1]);
    assert_eq!(outputs[2]["value"].as_str().unwrap().to_lowercase(), caller);
    assert_eq!(outputs[3]["value"], "[\"7\",\"255\"]");
    assert_eq!(answer["calldata"], calldata("describe(uint256,string)", &["21", "hello"]));

    // A balance, now and at an earlier block (before the transfer), as cast reads them.
    let transfer_block = quantity(&cast_json(url, &["receipt", &f.transfer])["blockNumber"]);
    for block in [None, Some(transfer_block - 1)] {
        let mut body = json!({"chain": "ethereum", "to": f.token, "signature": "balanceOf(address) returns (uint256)", "args": [f.sender]});
        let mut args = vec!["call", f.token.as_str(), "balanceOf(address)(uint256)", f.sender.as_str()];
        let block_text = block.map(|b| b.to_string());
        if let Some(b) = &block_text {
            body["block"] = json!(b);
            args.extend(["--block", b]);
        }
        let answer = ok(&f.ctx, "/v1/chain/call", body).await;
        let cast_value = cast(url, &args);
        let cast_value = cast_value.split_whitespace().next().unwrap();
        assert_eq!(answer["outputs"][0]["value"].as_str(), Some(cast_value), "block {block:?}");
    }

    // Without return types the raw data is given, and the note says so.
    let body = json!({"chain": "ethereum", "to": f.token, "signature": "totalSupply()"});
    let answer = ok(&f.ctx, "/v1/chain/call", body).await;
    assert_eq!(answer["result"], cast(url, &["call", &f.token, "totalSupply()"]));
    assert!(answer["note"].as_str().unwrap().contains("No return types"));

    // Reverts of every kind.
    let revert = |signature: &'static str, args: Value, errors: Value| {
        let body = json!({"chain": "ethereum", "to": f.reads, "signature": signature, "args": args, "errors": errors});
        let ctx = &f.ctx;
        async move {
            let answer = ok(ctx, "/v1/chain/call", body).await;
            assert_eq!(answer["success"], false, "{answer:#}");
            assert!(answer["result"].is_null());
            answer["revert"].clone()
        }
    };
    let r = revert("fail(string)", json!(["not today"]), json!([])).await;
    assert_eq!((r["kind"].as_str(), r["message"].as_str()), (Some("error"), Some("reverted: not today")));
    let r = revert("divide(uint256,uint256)(uint256)", json!([1, 0]), json!([])).await;
    assert_eq!((r["kind"].as_str(), r["panic_code"].as_str()), (Some("panic"), Some("0x12")));
    assert!(r["message"].as_str().unwrap().contains("division or modulo by zero"));
    let r = revert("check(uint256)(uint256)", json!([3]), json!([])).await;
    assert_eq!(
        (r["kind"].as_str(), r["selector"].as_str()),
        (Some("unknown"), Some(&common::chain::cast_offline(&["sig", "TooLow(uint256,uint256)"])[..]))
    );
    let r = revert("check(uint256)(uint256)", json!([3]), json!(["error TooLow(uint256 got, uint256 need)"])).await;
    assert_eq!(
        (r["kind"].as_str(), r["message"].as_str()),
        (Some("custom"), Some("reverted with the custom error TooLow(3, 10)"))
    );
    let r = revert("short(address)", json!([EOA]), json!([])).await;
    assert_eq!(
        (r["kind"].as_str(), r["signature"].as_str()),
        (Some("custom"), Some("ERC20InsufficientBalance(address,uint256,uint256)"))
    );
    let r = revert("bare()", json!([]), json!([])).await;
    assert_eq!((r["kind"].as_str(), r["data"].as_str()), (Some("empty"), Some("0x")));

    // A call to an address without code returns nothing, and the note says what that means.
    let body = json!({"chain": "ethereum", "to": EOA, "signature": "balanceOf(address)(uint256)", "args": [EOA]});
    let answer = ok(&f.ctx, "/v1/chain/call", body).await;
    assert_eq!((answer["success"].as_bool(), answer["result"].as_str()), (Some(true), Some("0x")));
    assert!(answer["note"].as_str().unwrap().contains("no data"), "{answer}");

    let down = context(&closed_port_url().await);
    let cases = [
        (json!({"chain": "ethereum", "to": EOA, "signature": "f(uint8)", "args": [300]}), "/args/0"),
        (json!({"chain": "ethereum", "to": EOA, "signature": "f(uint8)"}), "/args"),
        (json!({"chain": "ethereum", "to": EOA, "signature": "f(uint8"}), "/signature"),
        (json!({"chain": "ethereum", "to": EOA, "signature": "f()", "errors": ["E("]}), "/errors/0"),
        (json!({"chain": "ethereum", "to": EOA, "signature": "f()", "block": "soon"}), "/block"),
        (json!({"chain": "ethereum", "to": "0x1", "signature": "f()"}), "/to"),
    ];
    for (body, field) in cases {
        let error = err(&down, "/v1/chain/call", body.clone()).await;
        assert_eq!((error.kind, error.field.as_deref()), (ErrorKind::InvalidInput, Some(field)), "{body}: {error:?}");
    }
}

#[tokio::test]
async fn code_and_proxies_match_cast() {
    let f = Fixture::new().await;
    let url = &f.anvil.url;
    let code = |address: String| {
        let ctx = &f.ctx;
        async move {
            ok(ctx, "/v1/chain/code", json!({"chain": "ethereum", "address": address, "include_code": true})).await
        }
    };
    // An account without code.
    let eoa = code(EOA.to_string()).await;
    assert_eq!((eoa["kind"].as_str(), eoa["code_size"].as_u64()), (Some("eoa"), Some(0)));
    assert_eq!(eoa["code_hash"], common::chain::cast_offline(&["keccak", "0x"]));
    assert!(eoa["proxy"].is_null());
    // A contract.
    let token = code(f.token.clone()).await;
    assert_eq!(token["kind"], "contract");
    assert_eq!(token["code_size"].to_string(), cast(url, &["codesize", &f.token]));
    let bytecode = cast(url, &["code", &f.token]);
    assert_eq!(token["code"], bytecode);
    assert_eq!(token["code_hash"], common::chain::cast_offline(&["keccak", &bytecode]));
    assert_eq!(token["block"].to_string(), cast(url, &["block-number"]));
    assert!(token["proxy"].is_null());
    // Without include_code, no code.
    let lean = ok(&f.ctx, "/v1/chain/code", json!({"chain": "ethereum", "address": f.token})).await;
    assert!(lean["code"].is_null());

    // An EIP-1967 proxy.
    let implementation: Address = f.token.parse().unwrap();
    let admin: Address = EOA.parse().unwrap();
    let proxy =
        f.anvil.deploy(&Artifact::load("Eip1967Proxy").init_code(&(implementation, admin).abi_encode_params())).await;
    let answer = code(proxy.clone()).await;
    assert_eq!(answer["proxy"]["standard"], "eip1967");
    assert_eq!(answer["proxy"]["implementation"], cast(url, &["implementation", &proxy]).to_lowercase());
    assert_eq!(answer["proxy"]["admin"], cast(url, &["admin", &proxy]).to_lowercase());
    assert_eq!(answer["proxy"]["upgradeable"], true);

    // A beacon proxy: the beacon from its slot, the implementation from the beacon.
    let beacon = f.anvil.deploy(&Artifact::load("FixtureBeacon").init_code(&implementation.abi_encode())).await;
    let beacon_address: Address = beacon.parse().unwrap();
    let beacon_proxy =
        f.anvil.deploy(&Artifact::load("FixtureBeaconProxy").init_code(&beacon_address.abi_encode())).await;
    let answer = code(beacon_proxy.clone()).await;
    assert_eq!(answer["proxy"]["standard"], "eip1967_beacon");
    assert_eq!(answer["proxy"]["beacon"], cast(url, &["implementation", "--beacon", &beacon_proxy]).to_lowercase());
    assert_eq!(
        answer["proxy"]["implementation"],
        cast(url, &["call", &beacon, "implementation()(address)"]).to_lowercase()
    );

    // An EIP-1167 clone and an EIP-7702 delegation, written as code.
    let clone = "0x00000000000000000000000000000000000c1013";
    let target = f.token.trim_start_matches("0x");
    f.anvil.set_code(clone, &format!("0x363d3d373d3d3d363d73{target}5af43d82803e903d91602b57fd5bf3")).await;
    let answer = code(clone.to_string()).await;
    assert_eq!(
        (answer["proxy"]["standard"].as_str(), answer["proxy"]["upgradeable"].as_bool()),
        (Some("eip1167"), Some(false))
    );
    assert_eq!(answer["proxy"]["implementation"], f.token);
    let delegated = "0x0000000000000000000000000000000000007702";
    f.anvil.set_code(delegated, &format!("0xef0100{target}")).await;
    let answer = code(delegated.to_string()).await;
    assert_eq!((answer["kind"].as_str(), answer["delegation"].as_str()), (Some("delegated"), Some(f.token.as_str())));
    assert_eq!(answer["code_size"], 23);
    assert!(answer["proxy"].is_null());
}

#[tokio::test]
async fn blocks_match_cast_by_number_hash_and_tag() {
    let f = Fixture::new().await;
    let url = &f.anvil.url;
    let head: u64 = cast(url, &["block-number"]).parse().unwrap();
    let compare = |answer: &Value, expected: &Value| {
        assert_eq!(answer["number"].as_u64(), Some(quantity(&expected["number"])));
        assert_eq!(answer["hash"], expected["hash"]);
        assert_eq!(answer["parent_hash"], expected["parentHash"]);
        assert_eq!(answer["timestamp"].as_u64(), Some(quantity(&expected["timestamp"])));
        assert_eq!(answer["fee_recipient"], expected["miner"]);
        assert_eq!(answer["gas_used"], quantity(&expected["gasUsed"]).to_string());
        assert_eq!(answer["gas_limit"], quantity(&expected["gasLimit"]).to_string());
        assert_eq!(answer["base_fee_per_gas_wei"], quantity(&expected["baseFeePerGas"]).to_string());
        assert_eq!(answer["size"].as_u64(), Some(quantity(&expected["size"])));
        assert_eq!(
            answer["transaction_count"].as_u64(),
            Some(expected["transactions"].as_array().unwrap().len() as u64)
        );
    };
    for number in [0, 1, head] {
        let answer = ok(
            &f.ctx,
            "/v1/chain/block/by-number",
            json!({"chain": "ethereum", "block": number, "transactions": true}),
        )
        .await;
        let expected = cast_json(url, &["block", &number.to_string()]);
        compare(&answer, &expected);
        assert_eq!(answer["transactions"], expected["transactions"]);
        // By hash, the same block.
        let by_hash =
            ok(&f.ctx, "/v1/chain/block/by-number", json!({"chain": "ethereum", "block": expected["hash"]})).await;
        compare(&by_hash, &expected);
        assert!(by_hash["transactions"].is_null());
    }
    let latest = ok(&f.ctx, "/v1/chain/block/by-number", json!({"chain": "ethereum", "block": "latest"})).await;
    assert_eq!(latest["number"].as_u64(), Some(head));
    let earliest = ok(&f.ctx, "/v1/chain/block/by-number", json!({"chain": "ethereum", "block": "0x0"})).await;
    assert_eq!(earliest["number"], 0);

    for missing in [json!(head + 1000), json!(format!("0x{}", "ab".repeat(32)))] {
        let error = err(&f.ctx, "/v1/chain/block/by-number", json!({"chain": "ethereum", "block": missing})).await;
        assert_eq!(error.kind, ErrorKind::NotFound, "{missing}: {error:?}");
    }
    let down = context(&closed_port_url().await);
    for bad in [json!("newest"), json!(-1), json!(1.5), json!(format!("0x{}", "zz".repeat(32))), json!(null)] {
        let error = err(&down, "/v1/chain/block/by-number", json!({"chain": "ethereum", "block": bad})).await;
        assert_eq!((error.kind, error.field.as_deref()), (ErrorKind::InvalidInput, Some("/block")), "{bad}: {error:?}");
    }
}

#[tokio::test]
async fn fee_history_matches_the_node_and_suggestions_follow_it() {
    let f = Fixture::new().await;
    let url = &f.anvil.url;
    let answer =
        ok(&f.ctx, "/v1/chain/fees", json!({"chain": "ethereum", "blocks": 5, "percentiles": [25, 50, 75]})).await;
    // The route asks for the caller's percentiles and the suggestions' (10, 50, 90) at once.
    let expected = cast_json(url, &["rpc", "eth_feeHistory", "0x5", "latest", "[10,25,50,75,90]"]);
    assert_eq!(answer["oldest_block"].as_u64(), Some(quantity(&expected["oldestBlock"])));
    let base_fees: Vec<String> =
        expected["baseFeePerGas"].as_array().unwrap().iter().map(|v| quantity(v).to_string()).collect();
    assert_eq!(answer["base_fee_per_gas_wei"], json!(base_fees[..5]));
    assert_eq!(answer["next_base_fee_per_gas_wei"], base_fees[5]);
    assert_eq!(answer["gas_used_ratio"], expected["gasUsedRatio"]);
    assert_eq!(answer["newest_block"].to_string(), cast(url, &["block-number"]));
    let rewards = expected["reward"].as_array().unwrap();
    for (row, cast_row) in answer["rewards_wei"].as_array().unwrap().iter().zip(rewards) {
        let cast_row: Vec<String> = cast_row.as_array().unwrap().iter().map(|v| quantity(v).to_string()).collect();
        assert_eq!(row, &json!([cast_row[1], cast_row[2], cast_row[3]]));
    }
    // The normal tip is the median 50th-percentile reward of the non-empty blocks.
    let mut tips: Vec<u64> = rewards
        .iter()
        .zip(expected["gasUsedRatio"].as_array().unwrap())
        .filter(|(_, ratio)| ratio.as_f64().unwrap() > 0.0)
        .map(|(row, _)| quantity(&row[2]))
        .collect();
    tips.sort_unstable();
    let tip = tips[tips.len() / 2];
    let normal = &answer["suggestions"]["normal"];
    assert_eq!(normal["max_priority_fee_per_gas_wei"], tip.to_string());
    let next_base: u64 = base_fees[5].parse().unwrap();
    assert_eq!(normal["max_fee_per_gas_wei"], (2 * next_base + tip).to_string());
    // anvil has blobs (Cancun and later).
    assert_eq!(answer["next_blob_base_fee_wei"], quantity(&expected["baseFeePerBlobGas"][5]).to_string());

    let down = context(&closed_port_url().await);
    let cases = [
        (json!({"chain": "ethereum", "blocks": 0}), "/blocks"),
        (json!({"chain": "ethereum", "blocks": 1025}), "/blocks"),
        (json!({"chain": "ethereum", "percentiles": [50, 10]}), "/percentiles/1"),
        (json!({"chain": "ethereum", "percentiles": [101]}), "/percentiles/0"),
        (json!({"chain": "ethereum", "percentiles": []}), "/percentiles"),
    ];
    for (body, field) in cases {
        let error = err(&down, "/v1/chain/fees", body.clone()).await;
        assert_eq!((error.kind, error.field.as_deref()), (ErrorKind::InvalidInput, Some(field)), "{body}: {error:?}");
    }
}

#[tokio::test]
async fn status_reports_each_chain_and_a_dead_one_does_not_fail_the_rest() {
    let anvil = Anvil::start(1).await;
    anvil.mine(3).await;
    let down = closed_port_url().await;
    let timeouts = ChainTimeouts { total: Duration::from_secs(3), attempt: Duration::from_secs(1) };
    let mut ctx = Context::new();
    ctx.chains = Arc::new(Chains::new(
        vec![
            ChainConfig::new("ethereum", 1, vec![anvil.url.parse().unwrap()]),
            ChainConfig::new("base", 8453, vec![down.parse().unwrap()]),
            // A node of another chain than configured is not this chain.
            ChainConfig::new("polygon", 137, vec![anvil.url.parse().unwrap()]),
        ],
        timeouts,
    ));
    let answer = ok(&ctx, "/v1/chain/status", json!({})).await;
    let chains = answer["chains"].as_array().unwrap();
    assert_eq!(chains.len(), 3);
    assert_eq!(answer["ok"], 1);
    let ethereum = &chains[0];
    assert_eq!(
        (ethereum["chain"].as_str(), ethereum["chain_id"].as_u64(), ethereum["ok"].as_bool()),
        (Some("ethereum"), Some(1), Some(true))
    );
    assert_eq!(ethereum["head_block"].to_string(), cast(&anvil.url, &["block-number"]));
    let block = cast_json(&anvil.url, &["block", "latest"]);
    assert_eq!(ethereum["head_timestamp"].as_u64(), Some(quantity(&block["timestamp"])));
    assert!(ethereum["head_age_seconds"].as_u64().unwrap() < 600);
    assert!(ethereum["error"].is_null());
    for dead in [&chains[1], &chains[2]] {
        assert_eq!(dead["ok"], false, "{dead}");
        assert!(dead["head_block"].is_null());
        assert!(!dead["error"].as_str().unwrap().is_empty());
    }
    assert!(chains[2]["error"].as_str().unwrap().contains("chain id"), "{}", chains[2]["error"]);

    // Only the chains asked for, each once.
    let answer = ok(&ctx, "/v1/chain/status", json!({"chains": ["ethereum", "ethereum"]})).await;
    assert_eq!(answer["chains"].as_array().unwrap().len(), 1);
    let error = err(&ctx, "/v1/chain/status", json!({"chains": ["ethereum", "solana"]})).await;
    assert_eq!(error.field.as_deref(), Some("/chains/1"));
}

#[tokio::test]
async fn simulations_apply_state_overrides_and_estimate_gas() {
    let f = Fixture::new().await;
    let url = &f.anvil.url;
    let nobody = "0x00000000000000000000000000000000000000cc";
    let mut body = json!({"chain": "ethereum", "to": f.token, "from": nobody,
        "signature": "transfer(address,uint256) returns (bool)", "args": [EOA, 5]});
    // An account without tokens cannot send any: the token's own reason, and no estimate.
    let answer = ok(&f.ctx, "/v1/chain/simulate", body.clone()).await;
    assert_eq!(answer["success"], false);
    assert_eq!(answer["revert"]["message"], "reverted: balance");
    assert!(answer["gas_estimate"].is_null());
    assert_eq!(answer["calldata"], calldata("transfer(address,uint256)", &[EOA, "5"]));

    // With its balance slot (mapping at slot 4) overridden, it can.
    let slot = common::chain::cast_offline(&["index", "address", nobody, "4"]);
    body["state_overrides"] = json!({f.token.clone(): {"state_diff": {slot.clone(): "0x64"}}});
    let answer = ok(&f.ctx, "/v1/chain/simulate", body.clone()).await;
    assert_eq!(
        (answer["success"].as_bool(), answer["overridden_accounts"].as_u64()),
        (Some(true), Some(1)),
        "{answer:#}"
    );
    assert_eq!(answer["outputs"][0]["value"], "true");
    assert!(answer["gas_estimate"].as_u64().unwrap() > 21_000, "{answer}");
    // Nothing was written: the chain still says 0.
    let balance = cast(url, &["call", &f.token, "balanceOf(address)(uint256)", nobody]);
    assert_eq!(balance, "0");

    // A plain value transfer from an account given a balance costs 21,000 gas, as cast estimates.
    let funded = cast(url, &["estimate", EOA, "--value", "1000", "--from", &f.sender]);
    let body = json!({"chain": "ethereum", "to": EOA, "from": nobody, "value": "1000000000000000000",
        "state_overrides": {nobody: {"balance": "0x1bc16d674ec80000"}}});
    let answer = ok(&f.ctx, "/v1/chain/simulate", body).await;
    assert_eq!(answer["success"], true, "{answer:#}");
    assert_eq!(answer["gas_estimate"].to_string(), funded);
    assert_eq!(answer["value_wei"], "1000000000000000000");

    // Code put at an empty address answers as that contract would.
    let empty = "0x000000000000000000000000000000000000c0de";
    let code = Artifact::load("ChainReads").deployed_bytecode;
    let body = json!({"chain": "ethereum", "to": empty, "signature": "check(uint256)(uint256)", "args": [21],
        "state_overrides": {empty: {"code": code}}});
    let answer = ok(&f.ctx, "/v1/chain/simulate", body).await;
    assert_eq!(answer["outputs"][0]["value"], "42", "{answer:#}");
    // Raw calldata works the same; without return types the data is raw.
    let data = calldata("check(uint256)", &["3"]);
    let body = json!({"chain": "ethereum", "to": f.reads, "data": data, "errors": ["TooLow(uint256,uint256)"]});
    let answer = ok(&f.ctx, "/v1/chain/simulate", body).await;
    assert_eq!(answer["revert"]["message"], "reverted with the custom error TooLow(3, 10)");

    let down = context(&closed_port_url().await);
    let base = || json!({"chain": "ethereum", "to": EOA});
    let with = |extra: Value| {
        let mut body = base();
        body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        body
    };
    let cases = [
        (with(json!({"data": "0x", "signature": "f()"})), "/signature"),
        (with(json!({"args": [1]})), "/args"),
        (with(json!({"data": "0x1"})), "/data"),
        (with(json!({"value": "-1"})), "/value"),
        (with(json!({"state_overrides": {"0x12": {}}})), "/state_overrides/0x12"),
        (
            with(json!({"state_overrides": {EOA: {"balance": "lots"}}})),
            "/state_overrides/0x00000000000000000000000000000000000b0b00/balance",
        ),
        (
            with(json!({"state_overrides": {EOA: {"state": {}, "state_diff": {}}}})),
            "/state_overrides/0x00000000000000000000000000000000000b0b00/state_diff",
        ),
        (
            with(json!({"state_overrides": {EOA: {"state_diff": {"0x1": "5"}}}})),
            "/state_overrides/0x00000000000000000000000000000000000b0b00/state_diff/0x1",
        ),
        (
            with(json!({"state_overrides": {EOA: {"code": "0xzz"}}})),
            "/state_overrides/0x00000000000000000000000000000000000b0b00/code",
        ),
        (with(json!({"errors": ["E("]})), "/errors/0"),
    ];
    for (body, field) in cases {
        let error = err(&down, "/v1/chain/simulate", body.clone()).await;
        assert_eq!((error.kind, error.field.as_deref()), (ErrorKind::InvalidInput, Some(field)), "{body}: {error:?}");
    }
}

#[tokio::test]
async fn gas_estimates_match_cast_and_are_priced_from_the_oracle() {
    let f = Fixture::new().await;
    let url = &f.anvil.url;
    // The ETH/USD feed: the mock aggregator at the ethereum feed's address, 3456.78901234 USD.
    let feed = "0x5f4ec3df9cbd43714fe2740f5e3616155c5b8419";
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    f.anvil.place_feed(feed, 42, 345_678_901_234, now - 60, 8).await;

    let body = json!({"chain": "ethereum", "to": f.token, "from": f.sender,
        "signature": "transfer(address,uint256)", "args": [EOA, 5]});
    let answer = ok(&f.ctx, "/v1/chain/estimate-gas", body).await;
    assert_eq!(answer["success"], true, "{answer:#}");
    let gas = answer["gas"].as_u64().unwrap();
    assert_eq!(
        gas.to_string(),
        cast(url, &["estimate", &f.token, "transfer(address,uint256)", EOA, "5", "--from", &f.sender])
    );
    let cost = &answer["cost"];
    let price: u128 = cast(url, &["gas-price"]).parse().unwrap();
    assert_eq!(cost["gas_price_wei"], price.to_string());
    let wei = price * u128::from(gas);
    assert_eq!(cost["wei"], wei.to_string());
    assert_eq!(cost["native_usd_price"], "3456.78901234");
    // wei × 345678901234 / 10^22, rounded half up, to 4 decimals.
    let scale = 10u128.pow(22);
    let units = (U256::from(wei) * U256::from(345_678_901_234u64) + U256::from(scale / 2)) / U256::from(scale);
    let units: u128 = units.to();
    assert_eq!(cost["usd"], format!("{}.{:04}", units / 10_000, units % 10_000));

    // A plain transfer, as cast estimates it.
    let body = json!({"chain": "ethereum", "to": EOA, "from": f.sender, "value": "1000"});
    let answer = ok(&f.ctx, "/v1/chain/estimate-gas", body).await;
    assert_eq!(answer["gas"].to_string(), cast(url, &["estimate", EOA, "--value", "1000", "--from", &f.sender]));
    // A call that would revert: the reason, no estimate.
    let nobody = "0x00000000000000000000000000000000000000cc";
    let body = json!({"chain": "ethereum", "to": f.token, "from": nobody,
        "signature": "transfer(address,uint256)", "args": [EOA, 5]});
    let answer = ok(&f.ctx, "/v1/chain/estimate-gas", body).await;
    assert_eq!((answer["success"].as_bool(), answer["gas"].is_null()), (Some(false), true));
    assert_eq!(answer["revert"]["message"], "reverted: balance");
    // A sender that cannot pay the value is the caller's mistake: geth answers so (anvil
    // estimates without checking the balance, so a node replays geth's answer here).
    let geth = FakeNode::start(|r| {
        replay(r, |method| match method {
            "eth_estimateGas" => json!({"error": {"code": -32000, "message": "insufficient funds for transfer"}}),
            _ => json!({"result": "0x1"}),
        })
    })
    .await;
    let body = json!({"chain": "ethereum", "to": EOA, "from": nobody, "value": "1000000000000000000"});
    let error = err(&context(&geth.url), "/v1/chain/estimate-gas", body).await;
    assert_eq!((error.kind, error.field.as_deref()), (ErrorKind::InvalidInput, Some("/from")), "{error:?}");

    // polygon has no feed here: the cost in POL stands, the dollars are null with the reason.
    let mut ctx = Context::new();
    ctx.chains = Arc::new(Chains::new(
        vec![ChainConfig::new("polygon", 1, vec![url.parse().unwrap()])],
        ChainTimeouts::default(),
    ));
    let body = json!({"chain": "polygon", "to": EOA, "from": f.sender});
    let answer = ok(&ctx, "/v1/chain/estimate-gas", body).await;
    assert!(answer["cost"]["usd"].is_null());
    assert!(answer["cost"]["usd_note"].as_str().unwrap().contains("polygon"));

    let down = context(&closed_port_url().await);
    for (body, field) in [
        (json!({"chain": "ethereum", "to": EOA, "data": "0x", "signature": "f()"}), "/signature"),
        (json!({"chain": "ethereum", "to": EOA, "value": "1.5"}), "/value"),
        (json!({"chain": "ethereum", "to": EOA, "signature": "f(uint8)", "args": ["x"]}), "/args/0"),
        (json!({"chain": "ethereum"}), "/to"),
    ] {
        let error = err(&down, "/v1/chain/estimate-gas", body.clone()).await;
        assert_eq!((error.kind, error.field.as_deref()), (ErrorKind::InvalidInput, Some(field)), "{body}: {error:?}");
    }
}

#[tokio::test]
async fn a_block_past_the_head_is_not_found_naming_the_head() {
    let anvil = Anvil::start(1).await;
    let ctx = context(&anvil.url);
    let far = 1_000_000u64;
    let head = anvil.rpc("eth_blockNumber", json!([])).await;
    let head = u64::from_str_radix(head.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    let signature = "balanceOf(address)(uint256)";
    for (path, body) in [
        (
            "/v1/chain/call",
            json!({"chain": "ethereum", "to": EOA, "signature": signature, "args": [EOA], "block": far}),
        ),
        ("/v1/chain/simulate", json!({"chain": "ethereum", "to": EOA, "value": "1", "block": far})),
        ("/v1/chain/logs", json!({"chain": "ethereum", "from_block": far - 5, "to_block": far})),
        ("/v1/check/approvals", json!({"chain": "ethereum", "owner": EOA, "from_block": far - 5, "to_block": far})),
    ] {
        let e = err(&ctx, path, body.clone()).await;
        assert_eq!((e.kind, e.code.as_ref()), (ErrorKind::NotFound, "not_found"), "{path} {body}: {e:?}");
        assert!(e.message.contains(&format!("block {far} is past the head")), "{path}: {}", e.message);
        assert!(e.message.contains(&format!("(block {head})")), "{path}: {}", e.message);
    }
    // A block the chain has is read as before.
    let answer =
        ok(&ctx, "/v1/chain/call", json!({"chain": "ethereum", "to": EOA, "signature": "f()", "block": head})).await;
    assert_eq!(answer["chain"], "ethereum");
}
