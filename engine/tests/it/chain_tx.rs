//! `/v1/chain/tx` against a real anvil (transfers, reverts, creations, pending and unknown
//! transactions, and a blob transaction signed by cast) and against loopback nodes that
//! answer what anvil never does: OP-stack layer-1 fees (beside a blob fee), receipts before
//! Byzantium, and malformed or inconsistent answers.
//!
//! Every answer is checked against the route's published output schema.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use alloy::primitives::U256;
use paperchain_engine::evm::{ChainConfig, ChainTimeouts, Chains};
use paperchain_engine::{Context, EngineError, ErrorKind};
use paperchain_testkit::anvil::{Anvil, AnvilOptions, Artifact};
use paperchain_testkit::fake_node::FakeNode;
use serde_json::{Value, json};

const PATH: &str = "/v1/chain/tx";
const EOA: &str = "0x00000000000000000000000000000000000b0b00";
const UNKNOWN: &str = "0x1111111111111111111111111111111111111111111111111111111111111111";

/// A context whose only chain is `ethereum` (id 1) at `url`.
fn context(url: &str) -> Context {
    let mut ctx = Context::new();
    let timeouts = ChainTimeouts { total: Duration::from_secs(5), attempt: Duration::from_secs(2) };
    ctx.chains = Arc::new(Chains::new(vec![ChainConfig::new("ethereum", 1, vec![url.parse().unwrap()])], timeouts));
    ctx
}

async fn call(ctx: &Context, body: Value) -> Result<Value, EngineError> {
    common::route::call(ctx, PATH, body).await
}

async fn ok(ctx: &Context, hash: &str) -> Value {
    let body = json!({"chain": "ethereum", "hash": hash});
    call(ctx, body.clone()).await.unwrap_or_else(|e| panic!("{body}: {e:?}"))
}

async fn err(ctx: &Context, body: Value) -> EngineError {
    match call(ctx, body.clone()).await {
        Ok(value) => panic!("{body} answered {value:#}"),
        Err(e) => e,
    }
}

fn quantity(v: &Value) -> U256 {
    U256::from_str_radix(v.as_str().unwrap_or_else(|| panic!("{v} is not a quantity")).trim_start_matches("0x"), 16)
        .unwrap()
}

/// Sends `tx` (from the first dev account unless it says otherwise) and answers its hash.
async fn send(anvil: &Anvil, mut tx: Value) -> String {
    if tx.get("from").is_none() {
        tx["from"] = json!(anvil.accounts().await.remove(0));
    }
    anvil.rpc("eth_sendTransaction", json!([tx])).await.as_str().unwrap().to_string()
}

/// The receipt of `hash`, waiting for anvil to mine it.
async fn receipt(anvil: &Anvil, hash: &str) -> Value {
    for _ in 0..100 {
        let receipt = anvil.rpc("eth_getTransactionReceipt", json!([hash])).await;
        if !receipt.is_null() {
            return receipt;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{hash} was not mined");
}

#[tokio::test]
async fn a_transfer_succeeds_with_its_fee() {
    let anvil = Anvil::start(1).await;
    let ctx = context(&anvil.url);
    let from = anvil.accounts().await.remove(0).to_ascii_lowercase();
    let hash = send(&anvil, json!({"to": EOA, "value": "0x14d1120d7b160001"})).await;
    let receipt = receipt(&anvil, &hash).await;
    anvil.mine(2).await;
    let block = anvil.rpc("eth_getBlockByNumber", json!([receipt["blockNumber"], false])).await;
    let gas_used = quantity(&receipt["gasUsed"]);
    let price = quantity(&receipt["effectiveGasPrice"]);
    let fee = (gas_used * price).to_string();

    let answer = ok(&ctx, &hash.to_ascii_uppercase().replace("0X", "0x")).await;
    assert_eq!(
        answer,
        json!({
            "chain": "ethereum", "hash": hash, "status": "success",
            "block": quantity(&receipt["blockNumber"]).to::<u64>(),
            "timestamp": quantity(&block["timestamp"]).to::<u64>(),
            "confirmations": 3,
            "from": from, "to": EOA, "contract_address": null,
            "value_wei": "1500000000000000001", "value_formatted": "1.500000000000000001",
            "nonce": 0, "type": 2, "method_id": null,
            "gas_limit": "21000", "gas_used": "21000",
            "effective_gas_price_wei": price.to_string(),
            "effective_gas_price_gwei": paperchain_engine::evm::format_units(price, 9),
            "fee": {
                "execution_wei": fee, "l1_data_wei": null, "blob_wei": null, "total_wei": fee,
                "total_formatted": paperchain_engine::evm::format_units(gas_used * price, 18),
            },
        })
    );
    assert!(price > U256::ZERO);
}

/// Excess blob gas of the genesis block of the blob test: enough for a blob gas price well
/// above 1 wei, where a fee that forgot the price (or the blob gas) would show.
const EXCESS_BLOB_GAS: u64 = 50_000_000;

/// Gas per blob (EIP-4844 `GAS_PER_BLOB`).
const GAS_PER_BLOB: u64 = 1 << 17;

#[tokio::test]
async fn a_blob_transaction_pays_its_blob_fee() {
    let dir = tempfile::tempdir().unwrap();
    let genesis = dir.path().join("genesis.json");
    // anvil's own defaults (30M gas limit, 1 gwei base fee), with the excess blob gas added.
    let config = json!({
        "config": {"chainId": 1}, "difficulty": "0x0", "gasLimit": "0x1c9c380", "baseFeePerGas": "0x3b9aca00",
        "excessBlobGas": format!("{EXCESS_BLOB_GAS:#x}"), "blobGasUsed": "0x0", "alloc": {},
    });
    std::fs::write(&genesis, config.to_string()).unwrap();
    let options = AnvilOptions { hardfork: None, args: vec!["--init".into(), genesis.display().to_string()] };
    let anvil = Anvil::start_with(1, options).await;
    let ctx = context(&anvil.url);
    let from = anvil.accounts().await.remove(0).to_ascii_lowercase();

    let hash = anvil.send_blob(EOA, b"paperchain: one blob, its fee counted").await;
    let receipt = receipt(&anvil, &hash).await;
    let tx = anvil.rpc("eth_getTransactionByHash", json!([hash])).await;
    let block = anvil.rpc("eth_getBlockByNumber", json!([receipt["blockNumber"], false])).await;
    assert_eq!((receipt["type"].clone(), tx["type"].clone()), (json!("0x3"), json!("0x3")), "{receipt:#}");
    assert_eq!(tx["blobVersionedHashes"].as_array().map(Vec::len), Some(1), "{tx:#}");
    let blob_gas_used = quantity(&receipt["blobGasUsed"]);
    let blob_gas_price = quantity(&receipt["blobGasPrice"]);
    assert_eq!(blob_gas_used, U256::from(GAS_PER_BLOB), "one blob: {receipt:#}");
    assert!(blob_gas_price > U256::from(1_000_000u64), "the genesis excess blob gas raised the price: {receipt:#}");
    let gas_used = quantity(&receipt["gasUsed"]);
    let price = quantity(&receipt["effectiveGasPrice"]);
    let execution = gas_used * price;
    let blob = blob_gas_used * blob_gas_price;
    let total = execution + blob;

    let answer = ok(&ctx, &hash).await;
    assert_eq!(
        answer,
        json!({
            "chain": "ethereum", "hash": hash, "status": "success",
            "block": quantity(&receipt["blockNumber"]).to::<u64>(),
            "timestamp": quantity(&block["timestamp"]).to::<u64>(),
            "confirmations": 1,
            "from": from, "to": EOA, "contract_address": null,
            "value_wei": "0", "value_formatted": "0",
            "nonce": 0, "type": 3, "method_id": null,
            "gas_limit": quantity(&tx["gas"]).to_string(), "gas_used": gas_used.to_string(),
            "effective_gas_price_wei": price.to_string(),
            "effective_gas_price_gwei": paperchain_engine::evm::format_units(price, 9),
            "fee": {
                "execution_wei": execution.to_string(), "l1_data_wei": null,
                "blob_wei": blob.to_string(), "total_wei": total.to_string(),
                "total_formatted": paperchain_engine::evm::format_units(total, 18),
            },
        }),
        "receipt: {receipt:#}"
    );
    // What the sender's balance lost across the block is the total, blob fee included.
    let number = quantity(&receipt["blockNumber"]).to::<u64>();
    let balance_at = |n: u64| anvil.rpc("eth_getBalance", json!([from, format!("{n:#x}")]));
    let paid = quantity(&balance_at(number - 1).await) - quantity(&balance_at(number).await);
    assert_eq!(paid, total);
}

#[tokio::test]
async fn a_reverted_call_is_failed() {
    let anvil = Anvil::start(1).await;
    let ctx = context(&anvil.url);
    // NotAToken has no fallback: a call with an unknown selector reverts.
    let target = anvil.deploy(&Artifact::load("NotAToken").init_code(&[])).await;
    let hash = send(&anvil, json!({"to": target, "data": "0x12345678deadbeef", "gas": "0x30d40"})).await;
    let receipt = receipt(&anvil, &hash).await;
    assert_eq!(receipt["status"], json!("0x0"));
    let answer = ok(&ctx, &hash).await;
    assert_eq!(answer["status"], json!("failed"));
    assert_eq!(answer["to"], json!(target));
    assert_eq!(answer["method_id"], json!("0x12345678"));
    assert_eq!(answer["nonce"], json!(1));
    assert_eq!(answer["gas_limit"], json!("200000"));
    assert_eq!(answer["gas_used"], json!(quantity(&receipt["gasUsed"]).to_string()));
    let fee = quantity(&receipt["gasUsed"]) * quantity(&receipt["effectiveGasPrice"]);
    assert_eq!(answer["fee"]["total_wei"], json!(fee.to_string()));
    assert_eq!(answer["confirmations"], json!(1));
}

#[tokio::test]
async fn a_creation_has_no_recipient_and_names_the_contract() {
    let anvil = Anvil::start(1).await;
    let ctx = context(&anvil.url);
    let artifact = Artifact::load("NotAToken");
    let receipt = anvil.send(None, &artifact.init_code(&[])).await;
    let hash = receipt["transactionHash"].as_str().unwrap();
    let answer = ok(&ctx, hash).await;
    assert_eq!(answer["status"], json!("success"));
    assert_eq!(answer["to"], Value::Null);
    assert_eq!(answer["contract_address"], json!(receipt["contractAddress"].as_str().unwrap().to_ascii_lowercase()));
    assert_eq!(answer["method_id"], json!(artifact.bytecode[..10].to_ascii_lowercase()));
    assert_eq!(answer["value_wei"], json!("0"));
}

#[tokio::test]
async fn pending_then_mined() {
    let anvil = Anvil::start(1).await;
    let ctx = context(&anvil.url);
    anvil.rpc("evm_setAutomine", json!([false])).await;
    let hash = send(&anvil, json!({"to": EOA, "value": "0x1", "data": "0xabcdef"})).await;
    let answer = ok(&ctx, &hash).await;
    assert_eq!(answer["status"], json!("pending"));
    for member in [
        "block",
        "timestamp",
        "confirmations",
        "contract_address",
        "gas_used",
        "effective_gas_price_wei",
        "effective_gas_price_gwei",
        "fee",
    ] {
        assert_eq!(answer[member], Value::Null, "{member}: {answer:#}");
    }
    assert_eq!(answer["to"], json!(EOA));
    assert_eq!(answer["value_wei"], json!("1"));
    assert_eq!(answer["method_id"], json!("0xabcdef"));
    assert!(answer["from"].is_string());

    anvil.mine(1).await;
    let answer = ok(&ctx, &hash).await;
    assert_eq!(answer["status"], json!("success"));
    assert_eq!(answer["confirmations"], json!(1));
}

#[tokio::test]
async fn an_unknown_hash_is_not_found() {
    let anvil = Anvil::start(1).await;
    let ctx = context(&anvil.url);
    let answer = ok(&ctx, UNKNOWN).await;
    let mut expected = json!({"chain": "ethereum", "hash": UNKNOWN, "status": "not_found"});
    for member in answer.as_object().unwrap().keys() {
        if !["chain", "hash", "status"].contains(&member.as_str()) {
            expected[member] = Value::Null;
        }
    }
    assert_eq!(answer, expected);
    assert_eq!(answer.as_object().unwrap().len(), 19, "every member is present: {answer:#}");
}

#[tokio::test]
async fn bad_input_names_the_field() {
    // No chain is reached: input errors are found before any request.
    let ctx = context("http://127.0.0.1:9/");
    let cases = [
        (json!({"chain": "ethereum", "hash": format!("0x{}", "a".repeat(63))}), "invalid_input", "/hash"),
        (json!({"chain": "ethereum", "hash": format!("0x{}", "a".repeat(65))}), "invalid_input", "/hash"),
        (json!({"chain": "ethereum", "hash": "b".repeat(66)}), "invalid_input", "/hash"),
        (json!({"chain": "ethereum", "hash": format!("0x{}", "g".repeat(64))}), "invalid_input", "/hash"),
        (json!({"chain": "ethereum", "hash": 5}), "invalid_input", "/hash"),
        (json!({"chain": "ethereum"}), "invalid_input", "/hash"),
        (json!({"chain": "solana", "hash": UNKNOWN}), "invalid_input", "/chain"),
        (json!({"chain": "chain3", "hash": UNKNOWN}), "invalid_input", "/chain"),
        (json!({"hash": UNKNOWN}), "invalid_input", "/chain"),
        (json!({"chain": "ethereum", "hash": UNKNOWN, "block": 1}), "unknown_field", "/block"),
    ];
    for (body, code, field) in cases {
        let e = err(&ctx, body.clone()).await;
        assert_eq!(
            (e.kind, e.code.as_ref(), e.field.as_deref()),
            (ErrorKind::InvalidInput, code, Some(field)),
            "{body}: {e:?}"
        );
        assert!(e.message.starts_with(field), "{body}: {}", e.message);
    }
}

#[test]
fn schemas_publish_the_pattern_and_every_member() {
    let catalog = paperchain_engine::catalog::standard();
    let entry = catalog.by_path(PATH).unwrap();
    assert_eq!(entry.info().operation, "get_transaction");
    assert_eq!(entry.info().free_pool, paperchain_engine::FreePool::ChainReads);
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    entry.input_schema(&mut generator);
    let defs = serde_json::to_value(generator.definitions()).unwrap();
    assert_eq!(defs["TxHash"]["pattern"], json!("^0x[0-9a-fA-F]{64}$"));
    assert_eq!(defs["TxHash"]["maxLength"], json!(66));
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    entry.output_schema(&mut generator);
    let defs = serde_json::to_value(generator.definitions()).unwrap();
    let output = &defs["TxOutput"];
    assert_eq!(output["required"].as_array().unwrap().len(), 19, "{output:#}");
    assert_eq!(output["properties"]["block"]["type"], json!(["integer", "null"]));
    assert_eq!(output["properties"]["to"]["type"], json!(["string", "null"]));
    let statuses: Vec<&Value> = defs["TxStatus"]["oneOf"].as_array().unwrap().iter().map(|v| &v["const"]).collect();
    assert_eq!(json!(statuses), json!(["success", "failed", "pending", "not_found", "unknown"]), "{defs:#}");
    assert_eq!(output["properties"]["fee"]["anyOf"][1], json!({"type": "null"}));
    assert_eq!(
        defs["TxFee"]["required"],
        json!(["execution_wei", "l1_data_wei", "blob_wei", "total_wei", "total_formatted"])
    );
}

// --- Nodes anvil cannot play -------------------------------------------------------

const HASH: &str = "0x00000000000000000000000000000000000000000000000000000000000000aa";
const BLOCK_HASH: &str = "0x00000000000000000000000000000000000000000000000000000000000000bb";
const FROM: &str = "0x00000000000000000000000000000000000000f1";

/// What a fake node gives for each method.
type Table = Arc<dyn Fn(&str) -> Value + Send + Sync>;

/// A loopback chain-1 node answering single requests and batches from `table`
/// (`Value::Null` results are sent as null; a `{"__raw": text}` result as that text instead of the whole answer).
async fn table_node(table: impl Fn(&str) -> Value + Send + Sync + 'static) -> FakeNode {
    let table: Table = Arc::new(table);
    FakeNode::start(move |request| {
        let raw = match request {
            Value::Array(items) => items
                .iter()
                .find_map(|r| table(r["method"].as_str().unwrap_or_default())["__raw"].as_str().map(str::to_string)),
            _ => None,
        };
        let body = raw.unwrap_or_else(|| match request {
            Value::Array(items) => Value::Array(items.iter().map(|r| answer_one(&table, r)).collect()).to_string(),
            single => answer_one(&table, single).to_string(),
        });
        (200, vec![], body)
    })
    .await
}

fn answer_one(table: &Table, request: &Value) -> Value {
    let method = request["method"].as_str().unwrap_or_default();
    let result = if method == "eth_chainId" { json!("0x1") } else { table(method) };
    json!({"jsonrpc": "2.0", "id": request["id"], "result": result})
}

/// A mined legacy transaction of block 0x10, without `blockTimestamp` (so the block is read).
fn node_tx() -> Value {
    json!({"hash": HASH, "from": FROM, "to": EOA, "value": "0xde0b6b3a7640000", "nonce": "0x7", "gas": "0x30000",
           "input": "0x", "blockNumber": "0x10", "blockHash": BLOCK_HASH, "gasPrice": "0x3b9aca00", "type": "0x0"})
}

fn node_receipt() -> Value {
    json!({"transactionHash": HASH, "blockNumber": "0x10", "blockHash": BLOCK_HASH, "status": "0x1",
           "gasUsed": "0x5208", "effectiveGasPrice": "0x3b9aca00", "contractAddress": null})
}

fn node_block() -> Value {
    json!({"number": "0x10", "hash": BLOCK_HASH, "timestamp": "0x64"})
}

/// A node that gives `tx`, `receipt` and `block`, with the head at block 0x14.
async fn node(tx: Value, receipt: Value, block: Value) -> FakeNode {
    table_node(move |method| match method {
        "eth_getTransactionByHash" => tx.clone(),
        "eth_getTransactionReceipt" => receipt.clone(),
        "eth_getBlockByHash" => block.clone(),
        "eth_blockNumber" => json!("0x14"),
        _ => Value::Null,
    })
    .await
}

async fn fake_ok(node: &FakeNode) -> Value {
    let ctx = context(&node.url);
    call(&ctx, json!({"chain": "ethereum", "hash": HASH})).await.unwrap_or_else(|e| panic!("{e:?}"))
}

async fn fake_err(node: &FakeNode) -> EngineError {
    err(&context(&node.url), json!({"chain": "ethereum", "hash": HASH})).await
}

#[tokio::test]
async fn rollup_and_blob_fees_add_up_and_the_block_gives_the_time() {
    let mut receipt = node_receipt();
    receipt["l1Fee"] = json!("0x2540be400");
    receipt["blobGasUsed"] = json!("0x40000");
    receipt["blobGasPrice"] = json!("0x5");
    let node = node(node_tx(), receipt, node_block()).await;
    let answer = fake_ok(&node).await;
    let execution = 21_000u128 * 1_000_000_000;
    let total = execution + 10_000_000_000 + 0x40000 * 5;
    assert_eq!(
        answer["fee"],
        json!({
            "execution_wei": execution.to_string(), "l1_data_wei": "10000000000", "blob_wei": "1310720",
            "total_wei": total.to_string(), "total_formatted": "0.000021010001310720".trim_end_matches('0'),
        })
    );
    assert_eq!((answer["block"].clone(), answer["timestamp"].clone()), (json!(16), json!(100)));
    assert_eq!(answer["confirmations"], json!(5));
    assert_eq!((answer["type"].clone(), answer["nonce"].clone()), (json!(0), json!(7)));
    assert_eq!(answer["value_formatted"], json!("1"));
    assert_eq!(answer["effective_gas_price_gwei"], json!("1"));
}

#[tokio::test]
async fn a_receipt_before_byzantium_is_unknown() {
    let mut receipt = node_receipt();
    let object = receipt.as_object_mut().unwrap();
    object.remove("status");
    object.remove("effectiveGasPrice");
    object.insert("root".into(), json!(BLOCK_HASH));
    let mut tx = node_tx();
    tx.as_object_mut().unwrap().remove("type");
    let node = node(tx, receipt, node_block()).await;
    let answer = fake_ok(&node).await;
    assert_eq!(answer["status"], json!("unknown"));
    // Without effectiveGasPrice, the legacy gasPrice is what was paid.
    assert_eq!(answer["effective_gas_price_wei"], json!("1000000000"));
    assert_eq!(answer["fee"]["total_wei"], json!("21000000000000"));
    assert_eq!(answer["type"], json!(0));
}

#[tokio::test]
async fn malformed_and_inconsistent_answers_are_bad_upstream() {
    let with = |value: Value, key: &str, member: Value| {
        let mut value = value;
        value[key] = member;
        value
    };
    let cases = [
        (
            "receipt of another hash",
            node_tx(),
            with(node_receipt(), "transactionHash", json!(BLOCK_HASH)),
            node_block(),
        ),
        ("transaction of another hash", with(node_tx(), "hash", json!(BLOCK_HASH)), node_receipt(), node_block()),
        ("block missing", node_tx(), node_receipt(), Value::Null),
        ("block of another number", node_tx(), node_receipt(), with(node_block(), "number", json!("0x11"))),
        ("receipt without transaction", Value::Null, node_receipt(), node_block()),
        ("mined without receipt", node_tx(), Value::Null, node_block()),
        ("blocks disagree", node_tx(), with(node_receipt(), "blockNumber", json!("0x11")), node_block()),
        ("status 2", node_tx(), with(node_receipt(), "status", json!("0x2")), node_block()),
        ("gasUsed not a quantity", node_tx(), with(node_receipt(), "gasUsed", json!("lots")), node_block()),
        ("transaction not an object", json!("0x1"), Value::Null, node_block()),
        ("from missing", with(node_tx(), "from", Value::Null), node_receipt(), node_block()),
    ];
    for (what, tx, receipt, block) in cases {
        let node = node(tx, receipt, block).await;
        let e = fake_err(&node).await;
        assert_eq!((e.kind, e.code.as_ref()), (ErrorKind::BadUpstream, "upstream_error"), "{what}: {e:?}");
        assert!(e.message.contains(HASH), "{what}: {}", e.message);
    }

    let garbage = table_node(|_| json!({"__raw": "<html>hello</html>"})).await;
    let e = fake_err(&garbage).await;
    assert_eq!(e.kind, ErrorKind::BadUpstream, "{e:?}");
    let single = table_node(|_| json!({"__raw": r#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#})).await;
    let e = fake_err(&single).await;
    assert_eq!(e.kind, ErrorKind::BadUpstream, "{e:?}");
}
