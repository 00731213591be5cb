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
use paperchain_testkit::fake_node::{FakeNode, rpc_result};
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
async fn receipts_match_cast_and_decode_their_logs() {
    let f = Fixture::new().await;
    let url = &f.anvil.url;
    for hash in [&f.transfer, &f.nft, &f.named] {
        let answer = ok(&f.ctx, "/v1/chain/receipt", json!({"chain": "ethereum", "hash": hash})).await;
        let expected = cast_json(url, &["receipt", hash]);
        assert_eq!(answer["hash"], *hash);
        assert_eq!(answer["status"], "success");
        assert_eq!(answer["block"].as_u64(), Some(quantity(&expected["blockNumber"])));
        assert_eq!(answer["block_hash"], expected["blockHash"]);
        assert_eq!(answer["transaction_index"].as_u64(), Some(quantity(&expected["transactionIndex"])));
        assert_eq!(answer["from"], expected["from"]);
        assert_eq!(answer["to"], expected["to"]);
        assert_eq!(answer["gas_used"], quantity(&expected["gasUsed"]).to_string());
        assert_eq!(answer["cumulative_gas_used"], quantity(&expected["cumulativeGasUsed"]).to_string());
        assert_eq!(answer["effective_gas_price_wei"], quantity(&expected["effectiveGasPrice"]).to_string());
        assert_eq!(answer["type"].as_u64(), Some(quantity(&expected["type"])));
        let logs = answer["logs"].as_array().unwrap();
        let cast_logs = expected["logs"].as_array().unwrap();
        assert_eq!(logs.len(), cast_logs.len());
        for (log, cast_log) in logs.iter().zip(cast_logs) {
            assert_eq!(log["address"], cast_log["address"]);
            assert_eq!(log["topics"], cast_log["topics"]);
            assert_eq!(log["data"], cast_log["data"]);
            assert_eq!(log["log_index"].as_u64(), Some(quantity(&cast_log["logIndex"])));
            assert_eq!(log["transaction_hash"], *hash);
        }
    }
    // The ERC-20 transfer, decoded.
    let answer = ok(&f.ctx, "/v1/chain/receipt", json!({"chain": "ethereum", "hash": f.transfer})).await;
    assert_eq!(answer["decoded_logs"], 1);
    let event = &answer["logs"][0]["event"];
    assert_eq!(event["declaration"], TRANSFER);
    let values: Vec<&str> = event["args"].as_array().unwrap().iter().map(|a| a["value"].as_str().unwrap()).collect();
    assert_eq!(values[2], "1250000");
    assert_eq!(values[1].to_lowercase(), EOA);
    // The ERC-721 shape, told apart by its topic count.
    let answer = ok(&f.ctx, "/v1/chain/receipt", json!({"chain": "ethereum", "hash": f.nft})).await;
    let event = &answer["logs"][0]["event"];
    assert_eq!(event["declaration"], "Transfer(address indexed from, address indexed to, uint256 indexed tokenId)");
    assert_eq!(event["args"][2]["value"], "42");
    // An event no table knows stays undecoded.
    let answer = ok(&f.ctx, "/v1/chain/receipt", json!({"chain": "ethereum", "hash": f.named})).await;
    assert_eq!((answer["decoded_logs"].as_u64(), answer["logs"][0]["event"].is_null()), (Some(0), true));

    // A contract creation names its contract.
    let creation = f.anvil.send(None, &Artifact::load("ChainReads").init_code(&[])).await;
    let hash = creation["transactionHash"].as_str().unwrap();
    let answer = ok(&f.ctx, "/v1/chain/receipt", json!({"chain": "ethereum", "hash": hash})).await;
    assert_eq!(answer["contract_address"], cast_json(url, &["receipt", hash])["contractAddress"]);
    assert!(answer["to"].is_null());

    // An unknown hash is 404.
    let unknown = format!("0x{}", "12".repeat(32));
    let error = err(&f.ctx, "/v1/chain/receipt", json!({"chain": "ethereum", "hash": unknown})).await;
    assert_eq!((error.kind, error.code.as_ref()), (ErrorKind::NotFound, "not_found"), "{error:?}");
}

#[tokio::test]
async fn logs_match_cast_and_decode_with_the_given_event() {
    let f = Fixture::new().await;
    let url = &f.anvil.url;
    let head = cast(url, &["block-number"]);
    let body =
        json!({"chain": "ethereum", "address": f.token, "event": TRANSFER, "from_block": 0, "to_block": "latest"});
    let answer = ok(&f.ctx, "/v1/chain/logs", body).await;
    let expected = cast_json(
        url,
        &[
            "logs",
            "--from-block",
            "0",
            "--to-block",
            "latest",
            "--address",
            &f.token,
            "Transfer(address indexed,address indexed,uint256)",
        ],
    );
    let expected = expected.as_array().unwrap();
    assert_eq!(answer["count"].as_u64(), Some(expected.len() as u64));
    assert_eq!(expected.len(), 2, "the mint and the transfer");
    assert_eq!(answer["from_block"], 0);
    assert_eq!(answer["to_block"].to_string(), head);
    for (log, cast_log) in answer["logs"].as_array().unwrap().iter().zip(expected) {
        assert_eq!(log["topics"], cast_log["topics"]);
        assert_eq!(log["data"], cast_log["data"]);
        assert_eq!(log["block"].as_u64(), Some(quantity(&cast_log["blockNumber"])));
        assert_eq!(log["transaction_hash"], cast_log["transactionHash"]);
        assert_eq!(log["event"]["name"], "Transfer");
    }
    assert_eq!(answer["decoded_logs"], 2);

    // Every log of the range, the Approval and the unknown event among them.
    let all = ok(&f.ctx, "/v1/chain/logs", json!({"chain": "ethereum", "from_block": "earliest"})).await;
    let cast_all = cast_json(url, &["logs", "--from-block", "0", "--to-block", "latest"]);
    assert_eq!(all["count"].as_u64(), Some(cast_all.as_array().unwrap().len() as u64));
    assert_eq!(all["decoded_logs"].as_u64(), Some(all["count"].as_u64().unwrap() - 1), "all but Named decode");

    // The caller's event with an indexed string decodes it, the label as its hash.
    let named = "Named(string indexed label, uint256 value, string note)";
    let answer = ok(&f.ctx, "/v1/chain/logs", json!({"chain": "ethereum", "event": named, "from_block": 0})).await;
    assert_eq!(answer["count"], 1);
    let args = &answer["logs"][0]["event"]["args"];
    assert_eq!(args[0]["value"], common::chain::cast_offline(&["keccak", "alice"]));
    assert_eq!((args[1]["value"].as_str(), args[2]["value"].as_str()), (Some("5"), Some("hi")));

    // Topic filters: the transfer to EOA only, by its third topic.
    let to_eoa = format!("0x{:0>64}", EOA.trim_start_matches("0x"));
    let body = json!({"chain": "ethereum", "topics": [null, null, [to_eoa]], "from_block": 0});
    let answer = ok(&f.ctx, "/v1/chain/logs", body).await;
    // The token transfer and the NFT transfer both went to EOA; the approval's spender is EOA too.
    assert_eq!(answer["count"], 3, "{answer:#}");

    // Ranges are checked before any read.
    let cases = [
        (json!({"chain": "ethereum", "from_block": 0, "to_block": 10_000}), "/from_block"),
        (json!({"chain": "ethereum", "from_block": 5, "to_block": 4}), "/from_block"),
        (json!({"chain": "ethereum", "from_block": "soon"}), "/from_block"),
        (json!({"chain": "ethereum", "topics": [null, null, null, null, null]}), "/topics"),
        (json!({"chain": "ethereum", "topics": ["0x12"]}), "/topics/0"),
        (json!({"chain": "ethereum", "topics": [[]]}), "/topics/0"),
        (json!({"chain": "ethereum", "event": "Transfer("}), "/event"),
        (json!({"chain": "ethereum", "address": "0x12"}), "/address"),
    ];
    let down = context(&closed_port_url().await);
    for (body, field) in cases {
        let error = err(&down, "/v1/chain/logs", body.clone()).await;
        assert_eq!((error.kind, error.field.as_deref()), (ErrorKind::InvalidInput, Some(field)), "{body}: {error:?}");
    }
}

#[tokio::test]
async fn a_number_up_to_a_tag_takes_one_batch_checked_on_the_tags_block() {
    // A node whose latest block is 20,000: from_block 0 to latest is 20,001 blocks.
    let node = FakeNode::start(|r| {
        replay(r, |method| match method {
            "eth_chainId" => json!({"result": "0x1"}),
            "eth_getBlockByNumber" => json!({"result": {"number": "0x4e20", "timestamp": "0x1"}}),
            _ => json!({"result": []}),
        })
    })
    .await;
    let ctx = context(&node.url);
    let error = err(&ctx, "/v1/chain/logs", json!({"chain": "ethereum", "from_block": 0})).await;
    assert_eq!(error.field.as_deref(), Some("/from_block"), "{error:?}");
    assert!(error.message.contains("at most 10000"), "{}", error.message);
    assert_eq!(node.count("batch"), 1, "the tag's block and the logs in one request");
    assert_eq!(node.count("eth_getBlockByNumber") + node.count("eth_getLogs"), 0);

    // Without from_block, the last 1,000 blocks are read: the tag first, then the logs.
    let answer = ok(&ctx, "/v1/chain/logs", json!({"chain": "ethereum", "to_block": "finalized"})).await;
    assert_eq!((answer["from_block"].as_u64(), answer["to_block"].as_u64()), (Some(19_001), Some(20_000)));
    assert_eq!((node.count("batch"), node.count("eth_getLogs")), (2, 1));
    // A range starting at a tag reads its tags first too.
    let body = json!({"chain": "ethereum", "from_block": "safe", "to_block": "latest"});
    let answer = ok(&ctx, "/v1/chain/logs", body).await;
    assert_eq!((answer["from_block"].as_u64(), answer["to_block"].as_u64()), (Some(20_000), Some(20_000)));
    assert_eq!((node.count("batch"), node.count("eth_getLogs")), (3, 2));
}

#[tokio::test]
async fn logs_of_blocks_a_tag_reached_after_it_was_read_are_left_out() {
    // `latest` is block 16 when read; the logs call already saw block 17.
    let node = FakeNode::start(|r| {
        replay(r, |method| {
            let log = |block: &str, index: &str| {
                json!({"address": EOA, "topics": [], "data": "0x", "blockNumber": block, "logIndex": index,
                    "transactionHash": format!("0x{}", "ab".repeat(32)), "removed": false})
            };
            match method {
                "eth_chainId" => json!({"result": "0x1"}),
                "eth_getBlockByNumber" => json!({"result": {"number": "0x10", "timestamp": "0x1"}}),
                _ => json!({"result": [log("0x10", "0x0"), log("0x11", "0x0")]}),
            }
        })
    })
    .await;
    let ctx = context(&node.url);
    let answer = ok(&ctx, "/v1/chain/logs", json!({"chain": "ethereum", "from_block": 1})).await;
    assert_eq!((answer["from_block"].as_u64(), answer["to_block"].as_u64()), (Some(1), Some(16)));
    assert_eq!(answer["count"], 1, "{answer:#}");
    assert_eq!(answer["logs"][0]["block"], 16);
    // Given as numbers, a log outside the range is the node's fault.
    let error = err(&ctx, "/v1/chain/logs", json!({"chain": "ethereum", "from_block": 1, "to_block": 16})).await;
    assert_eq!(error.kind, ErrorKind::BadUpstream, "{error:?}");
    assert!(error.message.contains("block 17 is after the range"), "{}", error.message);
}

#[tokio::test]
async fn more_than_a_thousand_logs_is_refused_saying_how_to_narrow() {
    let log = json!({"address": EOA, "topics": [], "data": "0x", "blockNumber": "0x5", "logIndex": "0x0",
        "transactionHash": format!("0x{}", "ab".repeat(32)), "removed": false});
    let node = FakeNode::start(move |r| match r["method"].as_str() {
        Some("eth_chainId") => rpc_result(r, json!("0x1")),
        _ => rpc_result(r, Value::Array(vec![log.clone(); 1001])),
    })
    .await;
    let ctx = context(&node.url);
    let error = err(&ctx, "/v1/chain/logs", json!({"chain": "ethereum", "from_block": 1, "to_block": 9})).await;
    assert_eq!((error.code.as_ref(), error.field.as_deref()), ("too_many_logs", Some("/from_block")), "{error:?}");
    assert!(error.message.contains("1001 matching logs"), "{}", error.message);
    assert_eq!(node.count("eth_getLogs"), 1);
    assert_eq!(node.count("eth_getBlockByNumber"), 0, "two numbers need no block read");
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
async fn balances_and_allowances_match_cast() {
    let f = Fixture::new().await;
    let url = &f.anvil.url;
    let args = ("Second".to_string(), "TWO".to_string(), U256::from(18u8), U256::from(10u64).pow(U256::from(21u8)))
        .abi_encode_params();
    let second = f.anvil.deploy(&Artifact::load("FixtureToken").init_code(&args)).await;
    f.anvil.send(Some(&second), &calldata("transfer(address,uint256)", &[EOA, "2500000000000000000"])).await;
    f.anvil.send_value(Some(EOA), "0x", 1_500_000_000_000_000_000).await;
    let no_code = "0x00000000000000000000000000000000000e0a00";
    let body = json!({"chain": "ethereum", "address": EOA, "tokens": [f.token, second, f.reads, no_code]});
    let answer = ok(&f.ctx, "/v1/chain/balances", body).await;
    assert_eq!(answer["native"]["wei"], cast(url, &["balance", EOA]));
    assert_eq!(answer["native"]["formatted"], "1.5");
    assert_eq!(answer["block"].to_string(), cast(url, &["block-number"]));
    let tokens = answer["tokens"].as_array().unwrap();
    for (entry, token) in tokens.iter().zip([&f.token, &second]) {
        let raw = cast(url, &["call", token, "balanceOf(address)(uint256)", EOA]);
        assert_eq!(entry["raw"].as_str(), raw.split_whitespace().next(), "{entry}");
        assert_eq!(entry["ok"], true);
    }
    assert_eq!((tokens[0]["symbol"].as_str(), tokens[0]["formatted"].as_str()), (Some("FIX"), Some("1.25")));
    assert_eq!((tokens[1]["decimals"].as_u64(), tokens[1]["formatted"].as_str()), (Some(18), Some("2.5")));
    assert_eq!(tokens[2]["ok"], false);
    assert!(tokens[2]["error"].as_str().unwrap().contains("reverted"), "{}", tokens[2]);
    assert!(tokens[3]["error"].as_str().unwrap().contains("no contract"), "{}", tokens[3]);
    assert_eq!(answer["non_zero"], 2);

    // Allowances: a small one, the maximum, and one above the supply.
    let allowance = |spender: &str| {
        let body = json!({"chain": "ethereum", "token": f.token, "owner": f.sender, "spender": spender});
        let ctx = &f.ctx;
        async move { ok(ctx, "/v1/chain/allowance", body).await }
    };
    let small = allowance(EOA).await;
    let cast_small = cast(url, &["call", &f.token, "allowance(address,address)(uint256)", &f.sender, EOA]);
    assert_eq!(small["allowance_raw"], cast_small);
    assert_eq!(
        (small["allowance"].as_str(), small["unlimited"].as_bool(), small["approved"].as_bool()),
        (Some("0.000007"), Some(false), Some(true))
    );
    assert_eq!(
        small["owner_balance_raw"].as_str(),
        cast(url, &["call", &f.token, "balanceOf(address)(uint256)", &f.sender]).split_whitespace().next()
    );
    let router = "0x00000000000000000000000000000000000a0a0a";
    let max = U256::MAX.to_string();
    f.anvil.send(Some(&f.token), &calldata("approve(address,uint256)", &[router, &max])).await;
    let unlimited = allowance(router).await;
    assert_eq!(
        (unlimited["allowance_raw"].as_str(), unlimited["allowance"].as_str()),
        (Some(max.as_str()), Some("unlimited"))
    );
    assert_eq!(unlimited["unlimited"], true);
    let vault = "0x00000000000000000000000000000000000b0b0b";
    f.anvil.send(Some(&f.token), &calldata("approve(address,uint256)", &[vault, "5000001"])).await;
    assert_eq!(allowance(vault).await["unlimited"], true, "more than the supply of 5,000,000");
    let none = allowance("0x00000000000000000000000000000000000c0c0c").await;
    assert_eq!((none["approved"].as_bool(), none["allowance"].as_str()), (Some(false), Some("0")));

    let error = err(
        &f.ctx,
        "/v1/chain/allowance",
        json!({"chain": "ethereum", "token": f.reads, "owner": EOA, "spender": EOA}),
    )
    .await;
    assert_eq!((error.kind, error.field.as_deref()), (ErrorKind::InvalidInput, Some("/token")), "{error:?}");
    let down = context(&closed_port_url().await);
    let many: Vec<String> = (0..51).map(|i| format!("0x{i:040x}")).collect();
    let cases = [
        ("/v1/chain/balances", json!({"chain": "ethereum", "address": EOA, "tokens": many}), "/tokens"),
        (
            "/v1/chain/balances",
            json!({"chain": "ethereum", "address": EOA, "tokens": [EOA, EOA.to_uppercase().replacen("0X", "0x", 1)]}),
            "/tokens/1",
        ),
        ("/v1/chain/balances", json!({"chain": "ethereum", "address": EOA, "tokens": ["0x1"]}), "/tokens/0"),
        ("/v1/chain/allowance", json!({"chain": "ethereum", "token": EOA, "owner": EOA}), "/spender"),
        ("/v1/chain/allowance", json!({"chain": "ethereum", "token": EOA, "owner": "0x1", "spender": EOA}), "/owner"),
    ];
    for (path, body, field) in cases {
        let error = err(&down, path, body.clone()).await;
        assert_eq!(
            (error.kind, error.field.as_deref()),
            (ErrorKind::InvalidInput, Some(field)),
            "{path} {body}: {error:?}"
        );
    }
}

#[tokio::test]
async fn nfts_match_cast_for_both_standards() {
    let f = Fixture::new().await;
    let url = &f.anvil.url;
    let cats = f.anvil.deploy(&Artifact::load("FixtureNft").init_code(&[])).await;
    let items = f.anvil.deploy(&Artifact::load("FixtureMulti").init_code(&[])).await;
    f.anvil.send(Some(&cats), &calldata("mint(address,uint256)", &[EOA, "7"])).await;
    f.anvil.send(Some(&cats), &calldata("mint(address,uint256)", &[EOA, "8"])).await;
    f.anvil.send(Some(&items), &calldata("mint(address,uint256,uint256)", &[EOA, "255", "40"])).await;

    let nft = |contract: &str, id: &str, holder: Option<&str>| {
        let mut body = json!({"chain": "ethereum", "contract": contract, "token_id": id});
        if let Some(h) = holder {
            body["holder"] = json!(h);
        }
        let ctx = &f.ctx;
        async move { ok(ctx, "/v1/chain/nft", body).await }
    };
    let cat = nft(&cats, "7", Some(EOA)).await;
    assert_eq!(
        (cat["standard"].as_str(), cat["erc165"].as_bool(), cat["exists"].as_bool()),
        (Some("erc721"), Some(true), Some(true))
    );
    assert_eq!(cat["owner"], cast(url, &["call", &cats, "ownerOf(uint256)(address)", "7"]).to_lowercase());
    assert_eq!(cat["token_uri"], cast(url, &["call", &cats, "tokenURI(uint256)(string)", "7"]).trim_matches('"'));
    assert_eq!(cat["name"], cast(url, &["call", &cats, "name()(string)"]).trim_matches('"'));
    assert_eq!(cat["symbol"], "FCAT");
    assert_eq!(cat["holder_balance"], cast(url, &["call", &cats, "balanceOf(address)(uint256)", EOA]));
    assert_eq!(cat["holder_balance"], "2");
    let missing = nft(&cats, "0x63", None).await;
    assert_eq!(
        (missing["exists"].as_bool(), missing["owner"].is_null(), missing["token_id"].as_str()),
        (Some(false), true, Some("99"))
    );
    assert!(missing["holder_balance"].is_null());

    let item = nft(&items, "255", Some(EOA)).await;
    assert_eq!(
        (item["standard"].as_str(), item["exists"].is_null(), item["owner"].is_null()),
        (Some("erc1155"), true, true)
    );
    assert_eq!(item["holder_balance"], cast(url, &["call", &items, "balanceOf(address,uint256)(uint256)", EOA, "255"]));
    assert_eq!(item["token_uri"], format!("https://fixture.example/items/{:064x}.json", 255));
    assert!(item["name"].is_null());

    let error = err(&f.ctx, "/v1/chain/nft", json!({"chain": "ethereum", "contract": f.token, "token_id": "1"})).await;
    assert_eq!((error.kind, error.field.as_deref()), (ErrorKind::InvalidInput, Some("/contract")), "{error:?}");
    let down = context(&closed_port_url().await);
    for (body, field) in [
        (json!({"chain": "ethereum", "contract": EOA, "token_id": "-1"}), "/token_id"),
        (json!({"chain": "ethereum", "contract": EOA, "token_id": "9".repeat(79)}), "/token_id"),
        (json!({"chain": "ethereum", "contract": EOA}), "/token_id"),
        (json!({"chain": "ethereum", "contract": EOA, "token_id": "1", "holder": "0x1"}), "/holder"),
    ] {
        let error = err(&down, "/v1/chain/nft", body.clone()).await;
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
async fn standing_approvals_are_found_read_and_flagged() {
    let f = Fixture::new().await;
    let url = &f.anvil.url;
    // A well-known router (code put at the Universal Router's address), an unknown contract,
    // a wallet (EOA, approved 7 by the fixture), and an approval given then revoked.
    let router = "0x3fc91a3afd70395cd496c647d5a6cc9d4b2b7fad";
    f.anvil.set_code(router, &Artifact::load("ChainReads").deployed_bytecode).await;
    let max = U256::MAX.to_string();
    let revoked = "0x00000000000000000000000000000000000e0e0e";
    for (spender, amount) in [(router, max.as_str()), (f.reads.as_str(), "100"), (revoked, "9"), (revoked, "0")] {
        f.anvil.send(Some(&f.token), &calldata("approve(address,uint256)", &[spender, amount])).await;
    }
    let answer = ok(&f.ctx, "/v1/check/approvals", json!({"chain": "ethereum", "owner": f.sender})).await;
    assert_eq!(
        (answer["source"].as_str(), answer["checked"].as_u64(), answer["zero"].as_u64()),
        (Some("event_scan"), Some(4), Some(1))
    );
    assert_eq!(answer["to_block"].to_string(), cast(url, &["block-number"]));
    let approvals = answer["approvals"].as_array().unwrap();
    let spenders: Vec<&str> = approvals.iter().map(|a| a["spender"].as_str().unwrap()).collect();
    assert_eq!(spenders, [EOA, router, f.reads.as_str()], "riskiest first");
    let codes = |a: &Value| {
        a["reasons"].as_array().unwrap().iter().map(|r| r["code"].as_str().unwrap().to_string()).collect::<Vec<_>>()
    };
    assert_eq!(codes(&approvals[0]), ["spender_without_code"]);
    assert_eq!(codes(&approvals[1]), ["unlimited_approval"]);
    assert_eq!(approvals[1]["spender_name"], "Uniswap Universal Router");
    assert_eq!(
        (approvals[1]["allowance"].as_str(), approvals[1]["unlimited"].as_bool()),
        (Some("unlimited"), Some(true))
    );
    assert_eq!(codes(&approvals[2]), ["unknown_spender"]);
    assert_eq!(approvals[2]["allowance"], "0.0001");
    for approval in approvals {
        let spender = approval["spender"].as_str().unwrap();
        let read = cast(url, &["call", &f.token, "allowance(address,address)(uint256)", &f.sender, spender]);
        assert_eq!(approval["allowance_raw"].as_str(), read.split_whitespace().next(), "{spender}");
        assert_eq!(approval["symbol"], "FIX");
    }
    assert_eq!((answer["risk_score"].as_u64(), answer["verdict"].as_str()), (Some(50), Some("high")));

    // Given pairs, no scan; a spender listed twice (in another letter case) is read once.
    let again = router.to_uppercase().replacen("0X", "0x", 1);
    let body =
        json!({"chain": "ethereum", "owner": f.sender, "tokens": [f.token], "spenders": [router, revoked, again]});
    let answer = ok(&f.ctx, "/v1/check/approvals", body).await;
    assert_eq!(
        (answer["source"].as_str(), answer["checked"].as_u64(), answer["zero"].as_u64()),
        (Some("pairs"), Some(2), Some(1))
    );
    assert!(answer["from_block"].is_null());
    assert_eq!((answer["risk_score"].as_u64(), answer["verdict"].as_str()), (Some(20), Some("caution")));
    // A token that does not answer allowance() is listed as unreadable.
    let body = json!({"chain": "ethereum", "owner": f.sender, "tokens": [f.reads], "spenders": [router]});
    let answer = ok(&f.ctx, "/v1/check/approvals", body).await;
    assert_eq!(answer["unreadable"].as_array().unwrap().len(), 1);

    let down = context(&closed_port_url().await);
    let owner = f.sender.as_str();
    for (body, field) in [
        (json!({"chain": "ethereum", "owner": owner, "spenders": [router]}), "/tokens"),
        (json!({"chain": "ethereum", "owner": owner, "tokens": [EOA], "spenders": []}), "/spenders"),
        (
            json!({"chain": "ethereum", "owner": owner, "tokens": [EOA], "spenders": [router], "from_block": 1}),
            "/from_block",
        ),
        (json!({"chain": "ethereum", "owner": owner, "from_block": 0, "to_block": 10_000}), "/from_block"),
        (json!({"chain": "ethereum", "owner": "0x12"}), "/owner"),
    ] {
        let error = err(&down, "/v1/check/approvals", body.clone()).await;
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
