//! Receipts and logs against `cast receipt` and `cast logs`: decoded with the given event,
//! block ranges up to a tag checked on the tag's block, and the cap on logs.

use crate::common;

use common::chain::{cast, ethereum as context};
use common::route::{err, ok};
use paperchain_engine::ErrorKind;
use paperchain_testkit::anvil::Artifact;
use paperchain_testkit::fake_node::{FakeNode, rpc_result};
use paperchain_testkit::loopback::closed_port_url;
use serde_json::{Value, json};

use super::{EOA, Fixture, TRANSFER, cast_json, quantity, replay};

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
