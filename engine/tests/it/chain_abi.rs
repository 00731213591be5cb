//! The offline ABI routes (`/v1/chain/signature`, `/v1/chain/encode`,
//! `/v1/chain/decode-log`) against Foundry's `cast` on the same questions: selectors and
//! topics (`cast sig`, `cast sig-event`), calldata (`cast calldata`) and event data
//! (`cast decode-event`). Every answer is checked against the route's published schema;
//! bad input names the field.

use crate::common;

use common::chain::cast_offline;
use common::route::call;
use paperchain_engine::{Context, EngineError, ErrorKind};
use serde_json::{Value, json};

const ALICE: &str = "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4";
const BOB: &str = "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2";
const TRANSFER_TOPIC: &str = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

async fn ok(path: &str, body: Value) -> Value {
    call(&Context::new(), path, body.clone()).await.unwrap_or_else(|e| panic!("{path} {body}: {e:?}"))
}

async fn err(path: &str, body: Value) -> EngineError {
    match call(&Context::new(), path, body.clone()).await {
        Ok(answer) => panic!("{path} {body} answered {answer:#}"),
        Err(e) => e,
    }
}

fn strings(value: &Value) -> Vec<&str> {
    value.as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect()
}

/// A 32-byte topic holding an address.
fn address_topic(address: &str) -> String {
    format!("0x{:0>64}", address.trim_start_matches("0x").to_lowercase())
}

#[tokio::test]
async fn signatures_hash_as_cast_hashes_them() {
    for text in [
        "transfer(address,uint256)",
        "function balanceOf(address owner) view returns (uint256)",
        "f((uint,bytes)[2], int)",
        "execute(bytes,bytes[],uint256)",
    ] {
        let answer = ok("/v1/chain/signature", json!({"query": text})).await;
        assert_eq!(answer["kind"], "signature");
        let canonical = answer["canonical"].as_str().unwrap();
        assert_eq!(answer["selector"], cast_offline(&["sig", canonical]), "{text}");
        assert_eq!(answer["topic"], cast_offline(&["sig-event", canonical]), "{text}");
    }
    let event = ok(
        "/v1/chain/signature",
        json!({"query": "event Transfer(address indexed from, address indexed to, uint256 value)"}),
    )
    .await;
    assert_eq!(event["canonical"], "Transfer(address,address,uint256)");
    assert_eq!(event["topic"], TRANSFER_TOPIC);
    assert_eq!(
        event["topic"],
        cast_offline(&["sig-event", "Transfer(address indexed from,address indexed to,uint256 value)"])
    );
    assert_eq!(
        strings(&event["events"]),
        [
            "Transfer(address indexed from, address indexed to, uint256 value)",
            "Transfer(address indexed from, address indexed to, uint256 indexed tokenId)"
        ]
    );

    // A selector: the table's functions, collisions included, and custom errors.
    let selector = ok("/v1/chain/signature", json!({"query": "0x23b872dd"})).await;
    assert_eq!((selector["kind"].as_str(), selector["topic"].as_str()), (Some("selector"), None));
    assert_eq!(
        strings(&selector["functions"]),
        ["transferFrom(address,address,uint256)", "gasprice_bit_ether(int128)"]
    );
    let error = cast_offline(&["sig", "ERC20InsufficientBalance(address,uint256,uint256)"]);
    let answer = ok("/v1/chain/signature", json!({"query": error})).await;
    assert_eq!(strings(&answer["errors"]), ["ERC20InsufficientBalance(address,uint256,uint256)"]);
    // A topic.
    let topic =
        ok("/v1/chain/signature", json!({"query": TRANSFER_TOPIC.to_uppercase().replacen("0X", "0x", 1)})).await;
    assert_eq!((topic["kind"].as_str(), topic["selector"].as_str()), (Some("topic"), None));
    assert_eq!(topic["events"].as_array().unwrap().len(), 2);
    // Unknown ones answer empty lists.
    let unknown = ok("/v1/chain/signature", json!({"query": "0x00000001"})).await;
    assert_eq!((unknown["functions"].as_array().unwrap().len(), unknown["errors"].as_array().unwrap().len()), (0, 0));

    for bad in ["0x123", "0xa9059cbb00", "transfer(address", "", "f(uint7)"] {
        let error = err("/v1/chain/signature", json!({"query": bad})).await;
        assert_eq!((error.kind, error.field.as_deref()), (ErrorKind::InvalidInput, Some("/query")), "{bad}: {error:?}");
    }
}

#[tokio::test]
async fn calldata_is_what_cast_encodes() {
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        ("transfer(address,uint256)", json!([ALICE, 1_000_000]), vec![ALICE, "1000000"]),
        (
            "approve(address,uint256)",
            json!([BOB, "115792089237316195423570985008687907853269984665640564039457584007913129639935"]),
            vec![BOB, "115792089237316195423570985008687907853269984665640564039457584007913129639935"],
        ),
        (
            "f((address,uint8)[],string)",
            json!([[[ALICE, 7], [BOB, "8"]], "hé"]),
            vec![
                "[(0x5B38Da6a701c568545dCfcB03FcB875f56beddC4,7),(0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2,8)]",
                "hé",
            ],
        ),
        (
            "g(int24,bool,bytes,bytes4,uint256[2])",
            json!(["-5", true, "0xdeadbeef", "0x01020304", [1, 2]]),
            vec!["-5", "true", "0xdeadbeef", "0x01020304", "[1,2]"],
        ),
        ("totalSupply()", json!([]), vec![]),
    ];
    for (signature, args, cast_args) in cases {
        let answer = ok("/v1/chain/encode", json!({"signature": signature, "args": args})).await;
        let mut command = vec!["calldata", signature];
        command.extend(cast_args);
        let expected = cast_offline(&command);
        assert_eq!(answer["calldata"], expected, "{signature}");
        assert_eq!(answer["bytes"].as_u64(), Some((expected.len() as u64 - 2) / 2));
        assert_eq!(answer["selector"].as_str(), Some(&expected[..10]));
        // The calldata route reads it back to the same arguments.
        let back = ok("/v1/chain/calldata", json!({"calldata": expected, "signature": signature})).await;
        assert_eq!(back["best"]["args"], answer["args"], "{signature}");
    }
    // cast's one-string notation for a tuple array works as well.
    let answer = ok(
        "/v1/chain/encode",
        json!({"signature": "f((address,uint8)[],string)", "args": [format!("[({ALICE},7)]"), "x"]}),
    )
    .await;
    assert_eq!(answer["args"][0]["type"], "(address,uint8)[]");

    let cases = [
        (json!({"signature": "transfer(address,uint256)", "args": [ALICE]}), "/args"),
        (json!({"signature": "transfer(address,uint256)", "args": ["0x12", 1]}), "/args/0"),
        (json!({"signature": "transfer(address,uint256)", "args": [ALICE, -1]}), "/args/1"),
        (json!({"signature": "f((address,uint8)[],string)", "args": [[[ALICE, 256]], "x"]}), "/args/0/0/1"),
        (json!({"signature": "f(uint256[2])", "args": [[1]]}), "/args/0"),
        (json!({"signature": "f(bool)", "args": [null]}), "/args/0"),
        (json!({"signature": "transfer(address,", "args": []}), "/signature"),
        (json!({"args": []}), "/signature"),
    ];
    for (body, field) in cases {
        let error = err("/v1/chain/encode", body.clone()).await;
        assert_eq!((error.kind, error.field.as_deref()), (ErrorKind::InvalidInput, Some(field)), "{body}: {error:?}");
    }
}

#[tokio::test]
async fn logs_decode_as_cast_decodes_their_data() {
    let data = cast_offline(&["abi-encode", "f(uint256)", "1000000"]);
    let body = json!({"topics": [TRANSFER_TOPIC, address_topic(ALICE), address_topic(BOB)], "data": data});
    let answer = ok("/v1/chain/decode-log", body).await;
    let best = &answer["best"];
    assert_eq!(best["declaration"], "Transfer(address indexed from, address indexed to, uint256 value)");
    let args: Vec<(&str, &str, bool)> = best["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["name"].as_str().unwrap(), a["value"].as_str().unwrap(), a["indexed"].as_bool().unwrap()))
        .collect();
    assert_eq!(args, [("from", ALICE, true), ("to", BOB, true), ("value", "1000000", false)]);
    let cast_value = cast_offline(&["decode-event", "--sig", "Transfer(uint256)", &data]);
    assert_eq!(cast_value.split_whitespace().next(), Some("1000000"));
    assert_eq!(answer["candidates"].as_array().unwrap().len(), 2, "both Transfer shapes were tried");

    // The ERC-721 shape: the token id is a topic and there is no data.
    let nft = json!({"topics": [TRANSFER_TOPIC, address_topic(ALICE), address_topic(BOB), format!("0x{:064x}", 42)]});
    let answer = ok("/v1/chain/decode-log", nft).await;
    assert_eq!(answer["best"]["args"][2]["value"], "42");
    assert_eq!(answer["best"]["args"][2]["name"], "tokenId");

    // A caller's event with an indexed string (given as its hash) and data cast agrees on.
    let data = cast_offline(&["abi-encode", "f(uint256,string)", "5", "hello"]);
    let label_hash = cast_offline(&["keccak", "alice"]);
    let topic = cast_offline(&["sig-event", "Named(string,uint256,string)"]);
    let body = json!({"topics": [topic, label_hash], "data": data, "event": "Named(string indexed label, uint256 value, string note)"});
    let answer = ok("/v1/chain/decode-log", body).await;
    let args = &answer["best"]["args"];
    assert_eq!((args[0]["hashed"].as_bool(), args[0]["value"].as_str()), (Some(true), Some(label_hash.as_str())));
    let cast_values = cast_offline(&["decode-event", "--sig", "Named(uint256,string)", &data]);
    assert_eq!(
        cast_values,
        format!("{}\n\"{}\"", args[1]["value"].as_str().unwrap(), args[2]["value"].as_str().unwrap())
    );

    // Nothing fits: the answer says why, with no decode.
    let bad_data = json!({"topics": [TRANSFER_TOPIC, address_topic(ALICE), address_topic(BOB)], "data": "0x01"});
    let answer = ok("/v1/chain/decode-log", bad_data).await;
    assert!(answer["best"].is_null());
    assert!(answer["note"].as_str().unwrap().contains("fit none"), "{answer}");
    let unknown = ok("/v1/chain/decode-log", json!({"topics": [format!("0x{}", "ab".repeat(32))]})).await;
    assert!(unknown["note"].as_str().unwrap().contains("give `event`"), "{unknown}");

    let cases = [
        (json!({"topics": vec![TRANSFER_TOPIC; 5]}), "/topics"),
        (json!({"topics": [TRANSFER_TOPIC, "0x12"]}), "/topics/1"),
        (json!({"topics": [], "data": "0x1"}), "/data"),
        (json!({"topics": [], "data": "12"}), "/data"),
        (json!({"topics": [], "event": "Transfer(address"}), "/event"),
        (json!({"topics": [], "event": "T(uint indexed a, uint indexed b, uint indexed c, uint indexed d)"}), "/event"),
        (json!({"data": "0x"}), "/topics"),
    ];
    for (body, field) in cases {
        let error = err("/v1/chain/decode-log", body.clone()).await;
        assert_eq!((error.kind, error.field.as_deref()), (ErrorKind::InvalidInput, Some(field)), "{body}: {error:?}");
    }
}
