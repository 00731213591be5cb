//! `/v1/check/typed-data` on fifteen real-shaped EIP-712 requests, written from the EIPs
//! (712, 2612, 3009) and the protocols' documentation (DAI, Permit2, Seaport, 0x v4, CoW),
//! each with the flags it must raise. Every signing hash is checked against a signature
//! `cast wallet sign --data` makes of the same request: the hash must recover to cast's
//! signer. The chain checks run against anvil.
//!
//! Every answer is checked against the route's published output schema.

use crate::common;

use std::time::{SystemTime, UNIX_EPOCH};

use alloy::primitives::{B256, Signature};
use common::chain::{cast_offline, ethereum as context};
use common::route::call;
use paperchain_engine::{Context, ErrorKind};
use paperchain_testkit::anvil::{Anvil, Artifact};
use paperchain_testkit::loopback::closed_port_url;
use serde_json::{Value, json};

const KEY: &str = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const OWNER: &str = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8";
const USDC: &str = "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48";
const BASE_USDC: &str = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const DAI: &str = "0x6b175474e89094c44da98b954eedeac495271d0f";
const WETH: &str = "0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2";
const PERMIT2: &str = "0x000000000022d473030f116ddee9f6b43ac78ba3";
const UNIVERSAL_ROUTER: &str = "0x3fc91a3afd70395cd496c647d5a6cc9d4b2b7fad";
const SEAPORT: &str = "0x0000000000000068f116a894984e2db1123eb395";
const STRANGER: &str = "0x00000000000000000000000000000000deadbeef";
const MAX: &str = "115792089237316195423570985008687907853269984665640564039457584007913129639935";
const MAX160: &str = "1461501637330902918203684832716283019655932542975";

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn domain_type() -> Value {
    json!([
        {"name": "name", "type": "string"}, {"name": "version", "type": "string"},
        {"name": "chainId", "type": "uint256"}, {"name": "verifyingContract", "type": "address"}
    ])
}

fn erc2612(spender: &str, value: &str, deadline: u64) -> Value {
    json!({
        "types": {"EIP712Domain": domain_type(), "Permit": [
            {"name": "owner", "type": "address"}, {"name": "spender", "type": "address"},
            {"name": "value", "type": "uint256"}, {"name": "nonce", "type": "uint256"},
            {"name": "deadline", "type": "uint256"}]},
        "primaryType": "Permit",
        "domain": {"name": "USD Coin", "version": "2", "chainId": 1, "verifyingContract": USDC},
        "message": {"owner": OWNER, "spender": spender, "value": value, "nonce": 0, "deadline": deadline.to_string()}
    })
}

fn permit2_details_type() -> Value {
    json!([{"name": "token", "type": "address"}, {"name": "amount", "type": "uint160"},
           {"name": "expiration", "type": "uint48"}, {"name": "nonce", "type": "uint48"}])
}

fn permit2_domain() -> Value {
    json!({"name": "Permit2", "chainId": 1, "verifyingContract": PERMIT2})
}

fn permit2_domain_type() -> Value {
    json!([{"name": "name", "type": "string"}, {"name": "chainId", "type": "uint256"},
           {"name": "verifyingContract", "type": "address"}])
}

fn transfer_authorization(primary: &str, valid_before: &str) -> Value {
    json!({
        "types": {"EIP712Domain": domain_type(), primary: [
            {"name": "from", "type": "address"}, {"name": "to", "type": "address"},
            {"name": "value", "type": "uint256"}, {"name": "validAfter", "type": "uint256"},
            {"name": "validBefore", "type": "uint256"}, {"name": "nonce", "type": "bytes32"}]},
        "primaryType": primary,
        "domain": {"name": "USD Coin", "version": "2", "chainId": 8453, "verifyingContract": BASE_USDC},
        "message": {"from": OWNER, "to": STRANGER, "value": "2000", "validAfter": "0",
            "validBefore": valid_before, "nonce": format!("0x{}", "ab".repeat(32))}
    })
}

fn seaport(consideration_to_offerer: bool) -> Value {
    let offer_item = json!([{"name": "itemType", "type": "uint8"}, {"name": "token", "type": "address"},
        {"name": "identifierOrCriteria", "type": "uint256"}, {"name": "startAmount", "type": "uint256"},
        {"name": "endAmount", "type": "uint256"}]);
    let consideration_item = json!([{"name": "itemType", "type": "uint8"}, {"name": "token", "type": "address"},
        {"name": "identifierOrCriteria", "type": "uint256"}, {"name": "startAmount", "type": "uint256"},
        {"name": "endAmount", "type": "uint256"}, {"name": "recipient", "type": "address"}]);
    let seller_gets = if consideration_to_offerer { OWNER } else { STRANGER };
    json!({
        "types": {
            "EIP712Domain": domain_type(),
            "OrderComponents": [
                {"name": "offerer", "type": "address"}, {"name": "zone", "type": "address"},
                {"name": "offer", "type": "OfferItem[]"}, {"name": "consideration", "type": "ConsiderationItem[]"},
                {"name": "orderType", "type": "uint8"}, {"name": "startTime", "type": "uint256"},
                {"name": "endTime", "type": "uint256"}, {"name": "zoneHash", "type": "bytes32"},
                {"name": "salt", "type": "uint256"}, {"name": "conduitKey", "type": "bytes32"},
                {"name": "counter", "type": "uint256"}],
            "OfferItem": offer_item,
            "ConsiderationItem": consideration_item
        },
        "primaryType": "OrderComponents",
        "domain": {"name": "Seaport", "version": "1.6", "chainId": 1, "verifyingContract": SEAPORT},
        "message": {
            "offerer": OWNER, "zone": format!("0x{}", "0".repeat(40)),
            "offer": [{"itemType": 2, "token": "0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d",
                "identifierOrCriteria": "1234", "startAmount": "1", "endAmount": "1"}],
            "consideration": [
                {"itemType": 0, "token": format!("0x{}", "0".repeat(40)), "identifierOrCriteria": "0",
                    "startAmount": "975000000000000000", "endAmount": "975000000000000000", "recipient": seller_gets},
                {"itemType": 0, "token": format!("0x{}", "0".repeat(40)), "identifierOrCriteria": "0",
                    "startAmount": "25000000000000000", "endAmount": "25000000000000000",
                    "recipient": "0x0000a26b00c1f0df003000390027140000faa719"}],
            "orderType": 0, "startTime": "1700000000", "endTime": (now() + 7 * 86_400).to_string(),
            "zoneHash": format!("0x{}", "0".repeat(64)), "salt": "42",
            "conduitKey": format!("0x{}", "0".repeat(64)), "counter": "0"
        }
    })
}

/// The fifteen requests, each with the kind and flag codes it must answer.
fn cases() -> Vec<(&'static str, Value, &'static str, Vec<&'static str>)> {
    let soon = now() + 3600;
    let far = now() + 365 * 86_400;
    vec![
        (
            "permit, unlimited, to a stranger, for a year",
            erc2612(STRANGER, MAX, far),
            "permit",
            vec!["unlimited_amount", "unknown_spender", "far_expiry"],
        ),
        ("permit of a set amount to Permit2 for an hour", erc2612(PERMIT2, "1000000", soon), "permit", vec![]),
        ("permit whose deadline has passed", erc2612(PERMIT2, "5", 1_600_000_000), "permit", vec!["expired"]),
        (
            "DAI permit, allowed, no expiry",
            json!({
                "types": {"EIP712Domain": domain_type(), "Permit": [
                    {"name": "holder", "type": "address"}, {"name": "spender", "type": "address"},
                    {"name": "nonce", "type": "uint256"}, {"name": "expiry", "type": "uint256"},
                    {"name": "allowed", "type": "bool"}]},
                "primaryType": "Permit",
                "domain": {"name": "Dai Stablecoin", "version": "1", "chainId": 1, "verifyingContract": DAI},
                "message": {"holder": OWNER, "spender": STRANGER, "nonce": 0, "expiry": 0, "allowed": true}
            }),
            "dai_permit",
            vec!["unlimited_amount", "unknown_spender", "far_expiry"],
        ),
        (
            "Permit2 allowance, uint160 max, to the Universal Router, for a day",
            json!({
                "types": {"EIP712Domain": permit2_domain_type(), "PermitDetails": permit2_details_type(), "PermitSingle": [
                    {"name": "details", "type": "PermitDetails"}, {"name": "spender", "type": "address"},
                    {"name": "sigDeadline", "type": "uint256"}]},
                "primaryType": "PermitSingle",
                "domain": permit2_domain(),
                "message": {"details": {"token": WETH, "amount": MAX160, "expiration": (now() + 86_400).to_string(), "nonce": "0"},
                    "spender": UNIVERSAL_ROUTER, "sigDeadline": soon.to_string()}
            }),
            "permit2_allowance",
            vec!["unlimited_amount"],
        ),
        (
            "Permit2 batch allowance to a stranger",
            json!({
                "types": {"EIP712Domain": permit2_domain_type(), "PermitDetails": permit2_details_type(), "PermitBatch": [
                    {"name": "details", "type": "PermitDetails[]"}, {"name": "spender", "type": "address"},
                    {"name": "sigDeadline", "type": "uint256"}]},
                "primaryType": "PermitBatch",
                "domain": permit2_domain(),
                "message": {"details": [
                    {"token": WETH, "amount": "1000", "expiration": (now() + 86_400).to_string(), "nonce": "1"},
                    {"token": USDC, "amount": "2000", "expiration": (now() + 86_400).to_string(), "nonce": "2"}],
                    "spender": STRANGER, "sigDeadline": soon.to_string()}
            }),
            "permit2_allowance_batch",
            vec!["unknown_spender"],
        ),
        (
            "Permit2 one-time transfer to the Universal Router",
            json!({
                "types": {"EIP712Domain": permit2_domain_type(),
                    "TokenPermissions": [{"name": "token", "type": "address"}, {"name": "amount", "type": "uint256"}],
                    "PermitTransferFrom": [{"name": "permitted", "type": "TokenPermissions"},
                        {"name": "spender", "type": "address"}, {"name": "nonce", "type": "uint256"},
                        {"name": "deadline", "type": "uint256"}]},
                "primaryType": "PermitTransferFrom",
                "domain": permit2_domain(),
                "message": {"permitted": {"token": USDC, "amount": "1000000"}, "spender": UNIVERSAL_ROUTER,
                    "nonce": "7", "deadline": soon.to_string()}
            }),
            "permit2_transfer",
            vec![],
        ),
        (
            "Permit2 witness transfer, unlimited, to a stranger",
            json!({
                "types": {"EIP712Domain": permit2_domain_type(),
                    "TokenPermissions": [{"name": "token", "type": "address"}, {"name": "amount", "type": "uint256"}],
                    "Intent": [{"name": "outputToken", "type": "address"}, {"name": "minOut", "type": "uint256"}],
                    "PermitWitnessTransferFrom": [{"name": "permitted", "type": "TokenPermissions"},
                        {"name": "spender", "type": "address"}, {"name": "nonce", "type": "uint256"},
                        {"name": "deadline", "type": "uint256"}, {"name": "witness", "type": "Intent"}]},
                "primaryType": "PermitWitnessTransferFrom",
                "domain": permit2_domain(),
                "message": {"permitted": {"token": USDC, "amount": MAX}, "spender": STRANGER, "nonce": "8",
                    "deadline": soon.to_string(), "witness": {"outputToken": WETH, "minOut": "1"}}
            }),
            "permit2_transfer",
            vec!["unlimited_amount", "unknown_spender"],
        ),
        (
            "x402 payment: TransferWithAuthorization for a minute",
            transfer_authorization("TransferWithAuthorization", &(now() + 60).to_string()),
            "transfer_authorization",
            vec!["moves_funds_directly"],
        ),
        (
            "ReceiveWithAuthorization valid forever",
            transfer_authorization("ReceiveWithAuthorization", MAX),
            "transfer_authorization",
            vec!["moves_funds_directly", "far_expiry"],
        ),
        ("Seaport listing paid to the seller", seaport(true), "seaport_order", vec![]),
        ("Seaport listing paid to someone else", seaport(false), "seaport_order", vec!["nothing_in_return"]),
        (
            "CoW order paying another receiver",
            json!({
                "types": {"EIP712Domain": domain_type(), "Order": [
                    {"name": "sellToken", "type": "address"}, {"name": "buyToken", "type": "address"},
                    {"name": "receiver", "type": "address"}, {"name": "sellAmount", "type": "uint256"},
                    {"name": "buyAmount", "type": "uint256"}, {"name": "validTo", "type": "uint32"},
                    {"name": "appData", "type": "bytes32"}, {"name": "feeAmount", "type": "uint256"},
                    {"name": "kind", "type": "string"}, {"name": "partiallyFillable", "type": "bool"},
                    {"name": "sellTokenBalance", "type": "string"}, {"name": "buyTokenBalance", "type": "string"}]},
                "primaryType": "Order",
                "domain": {"name": "Gnosis Protocol", "version": "v2", "chainId": 1,
                    "verifyingContract": "0x9008d19f58aabd9ed0d60971565aa8510560ab41"},
                "message": {"sellToken": WETH, "buyToken": USDC, "receiver": STRANGER, "sellAmount": "1000000000000000000",
                    "buyAmount": "3000000000", "validTo": soon, "appData": format!("0x{}", "0".repeat(64)),
                    "feeAmount": "0", "kind": "sell", "partiallyFillable": false, "sellTokenBalance": "erc20",
                    "buyTokenBalance": "erc20"}
            }),
            "cow_order",
            vec!["proceeds_to_another_address"],
        ),
        (
            "0x limit order asking nothing back",
            json!({
                "types": {"EIP712Domain": domain_type(), "LimitOrder": [
                    {"name": "makerToken", "type": "address"}, {"name": "takerToken", "type": "address"},
                    {"name": "makerAmount", "type": "uint128"}, {"name": "takerAmount", "type": "uint128"},
                    {"name": "takerTokenFeeAmount", "type": "uint128"}, {"name": "maker", "type": "address"},
                    {"name": "taker", "type": "address"}, {"name": "sender", "type": "address"},
                    {"name": "feeRecipient", "type": "address"}, {"name": "pool", "type": "bytes32"},
                    {"name": "expiry", "type": "uint64"}, {"name": "salt", "type": "uint256"}]},
                "primaryType": "LimitOrder",
                "domain": {"name": "ZeroEx", "version": "1.0.0", "chainId": 1,
                    "verifyingContract": "0xdef1c0ded9bec7f1a1670819833240f027b25eff"},
                "message": {"makerToken": WETH, "takerToken": USDC, "makerAmount": "1000000000000000000",
                    "takerAmount": "0", "takerTokenFeeAmount": "0", "maker": OWNER, "taker": STRANGER,
                    "sender": format!("0x{}", "0".repeat(40)), "feeRecipient": format!("0x{}", "0".repeat(40)),
                    "pool": format!("0x{}", "0".repeat(64)), "expiry": soon.to_string(), "salt": "1"}
            }),
            "zero_ex_order",
            vec!["nothing_in_return"],
        ),
        ("EIP-712's own Mail example", mail(), "unknown", vec!["unknown_type"]),
    ]
}

/// The example of EIP-712 itself.
fn mail() -> Value {
    json!({
        "types": {
            "EIP712Domain": domain_type(),
            "Person": [{"name": "name", "type": "string"}, {"name": "wallet", "type": "address"}],
            "Mail": [{"name": "from", "type": "Person"}, {"name": "to", "type": "Person"}, {"name": "contents", "type": "string"}]
        },
        "primaryType": "Mail",
        "domain": {"name": "Ether Mail", "version": "1", "chainId": 1, "verifyingContract": "0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC"},
        "message": {
            "from": {"name": "Cow", "wallet": "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"},
            "to": {"name": "Bob", "wallet": "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB"},
            "contents": "Hello, Bob!"
        }
    })
}

fn codes(answer: &Value) -> Vec<String> {
    answer["reasons"].as_array().unwrap().iter().map(|r| r["code"].as_str().unwrap().to_string()).collect()
}

/// The signer cast's signature of `typed` recovers to, from the route's signing hash.
fn recovered_signer(typed: &Value, hash: &str, dir: &std::path::Path) -> String {
    let file = dir.join("typed.json");
    std::fs::write(&file, typed.to_string()).unwrap();
    let signature =
        cast_offline(&["wallet", "sign", "--private-key", KEY, "--data", "--from-file", file.to_str().unwrap()]);
    let signature: Signature = signature.parse().unwrap();
    let hash: B256 = hash.parse().unwrap();
    signature.recover_address_from_prehash(&hash).unwrap().to_string().to_lowercase()
}

#[tokio::test]
async fn fifteen_requests_are_explained_with_their_flags_and_hashed_as_wallets_sign() {
    let ctx = Context::new();
    let dir = tempfile::tempdir().unwrap();
    let signer = cast_offline(&["wallet", "address", "--private-key", KEY]).to_lowercase();
    assert_eq!(signer, OWNER);
    let cases = cases();
    assert!(cases.len() >= 12);
    for (name, typed, kind, expected) in cases {
        let answer = call(&ctx, "/v1/check/typed-data", json!({"typed_data": typed}))
            .await
            .unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(answer["kind"], kind, "{name}: {answer:#}");
        let mut got = codes(&answer);
        got.retain(|c| c != "no_verifying_contract");
        let mut want: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
        got.sort();
        want.sort();
        assert_eq!(got, want, "{name}: {}", answer["reasons"]);
        assert!(!answer["summary"].as_str().unwrap().is_empty(), "{name}");
        assert_eq!(answer["skipped"].as_array().unwrap().len(), 2, "{name}: no chain, two checks skipped");
        let score: u64 = answer["reasons"].as_array().unwrap().iter().map(|r| r["points"].as_u64().unwrap()).sum();
        assert_eq!(answer["risk_score"].as_u64(), Some(score.min(100)), "{name}");
        let verdict = match score.min(100) {
            0..20 => "low",
            20..50 => "caution",
            _ => "high",
        };
        assert_eq!(answer["verdict"], verdict, "{name}");
        let hash = answer["signing_hash"].as_str().unwrap();
        assert_eq!(
            recovered_signer(&typed, hash, dir.path()),
            OWNER,
            "{name}: the signing hash is not what cast signs"
        );
        // As the JSON string wallets receive, the same answer.
        let as_string = call(&ctx, "/v1/check/typed-data", json!({"typed_data": typed.to_string()})).await.unwrap();
        assert_eq!(as_string["signing_hash"], answer["signing_hash"], "{name}");
    }
}

#[tokio::test]
async fn the_answer_says_what_a_person_needs_to_decide() {
    let ctx = Context::new();
    // EIP-712's example digest, as the EIP states it.
    // A chain id with a zero fraction is the whole number (JSON Schema's integers include it).
    let mut fractional = mail();
    fractional["domain"]["chainId"] = json!(1.0);
    let mail = call(&ctx, "/v1/check/typed-data", json!({"typed_data": mail()})).await.unwrap();
    let as_float = call(&ctx, "/v1/check/typed-data", json!({ "typed_data": fractional })).await.unwrap();
    assert_eq!((&as_float["signing_hash"], &as_float["domain"]["chain_id"]), (&mail["signing_hash"], &json!("1")));
    assert_eq!(mail["signing_hash"], "0xbe609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2");
    let paths: Vec<&str> = mail["fields"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["/from/name", "/from/wallet", "/to/name", "/to/wallet", "/contents"]);
    assert_eq!(mail["domain"]["name"], "Ether Mail");

    let permit =
        call(&ctx, "/v1/check/typed-data", json!({"typed_data": erc2612(STRANGER, MAX, now() + 400 * 86_400)}))
            .await
            .unwrap();
    assert_eq!(
        (permit["token"].as_str(), permit["spender"].as_str(), permit["unlimited"].as_bool()),
        (Some(USDC), Some(STRANGER), Some(true))
    );
    assert_eq!(permit["verdict"], "high");
    assert!(permit["summary"].as_str().unwrap().contains("unlimited"), "{}", permit["summary"]);
    let known = call(&ctx, "/v1/check/typed-data", json!({"typed_data": erc2612(PERMIT2, "1000000", now() + 60)}))
        .await
        .unwrap();
    assert_eq!((known["spender_name"].as_str(), known["amount"].as_str()), (Some("Uniswap Permit2"), Some("1000000")));
    assert_eq!(known["domain"]["verifying_contract"], USDC);

    let x402 = call(
        &ctx,
        "/v1/check/typed-data",
        json!({"typed_data": transfer_authorization("TransferWithAuthorization", "1999999999")}),
    )
    .await
    .unwrap();
    let summary = x402["summary"].as_str().unwrap();
    assert!(summary.contains("2000 units") && summary.contains(STRANGER) && summary.contains(OWNER), "{summary}");
    let listing = call(&ctx, "/v1/check/typed-data", json!({"typed_data": seaport(false)})).await.unwrap();
    assert_eq!(listing["reasons"][0]["code"], "nothing_in_return", "most serious first");
}

#[tokio::test]
async fn with_a_chain_the_domain_and_its_contract_are_checked() {
    let anvil = Anvil::start(1).await;
    let ctx = context(&anvil.url);
    // A verifying contract with code, on the chain the domain names: no chain flag.
    let token = anvil.deploy(&Artifact::load("NotAToken").init_code(&[])).await;
    let mut typed = erc2612(PERMIT2, "1", now() + 60);
    typed["domain"]["verifyingContract"] = json!(token);
    let answer = call(&ctx, "/v1/check/typed-data", json!({"typed_data": typed, "chain": "ethereum"})).await.unwrap();
    assert!(codes(&answer).is_empty(), "{}", answer["reasons"]);
    assert!(answer["skipped"].as_array().unwrap().is_empty());
    // The domain says base while the wallet is on ethereum, and its contract has no code here.
    let x402 = transfer_authorization("TransferWithAuthorization", &(now() + 60).to_string());
    let answer = call(&ctx, "/v1/check/typed-data", json!({"typed_data": x402, "chain": "ethereum"})).await.unwrap();
    let mut got = codes(&answer);
    got.sort();
    assert_eq!(got, ["chain_id_mismatch", "moves_funds_directly", "verifying_contract_without_code"]);
    assert_eq!(answer["verdict"], "high");

    let down = context(&closed_port_url().await);
    let mut wrong = erc2612(PERMIT2, "1", 5);
    wrong["message"]["value"] = json!("not a number");
    let mut listed_domain = mail();
    listed_domain["domain"] = json!([]);
    let huge = json!({"types": {}, "primaryType": "X", "message": {"a": "x".repeat(300 * 1024)}});
    for (body, field, code) in [
        (json!({"typed_data": {"primaryType": "Permit", "message": {}}}), "/typed_data/types", "invalid_input"),
        (
            json!({"typed_data": {"types": [], "primaryType": "Permit", "message": {}}}),
            "/typed_data/types",
            "invalid_input",
        ),
        (json!({"typed_data": " {}"}), "/typed_data/types", "invalid_input"),
        (json!({"typed_data": listed_domain}), "/typed_data/domain", "invalid_input"),
        (json!({"typed_data": wrong}), "/typed_data", "inconsistent_fields"),
        (
            json!({"typed_data": {"types": {}, "primaryType": "Mail", "message": {}}}),
            "/typed_data",
            "inconsistent_fields",
        ),
        (json!({"typed_data": "{not json"}), "/typed_data", "invalid_input"),
        (json!({"typed_data": huge}), "/typed_data", "invalid_input"),
        (json!({"typed_data": "x".repeat(300 * 1024)}), "/typed_data", "invalid_input"),
        (json!({"typed_data": mail(), "chain": "solana"}), "/chain", "invalid_input"),
        (json!({}), "/typed_data", "invalid_input"),
    ] {
        let error = call(&down, "/v1/check/typed-data", body.clone()).await.unwrap_err();
        assert_eq!(
            (error.kind, error.field.as_deref(), error.code.as_ref()),
            (ErrorKind::InvalidInput, Some(field), code),
            "{body:.200}: {error:?}"
        );
    }
}

/// The published schema takes both forms of a request and states its shape: what it refuses
/// the route refuses too.
#[test]
fn the_schema_states_the_request_shape() {
    let schema = jsonschema::validator_for(&common::route::input_schema("/v1/check/typed-data")).unwrap();
    let fits = |typed: Value| schema.is_valid(&json!({ "typed_data": typed }));
    assert!(fits(mail()) && fits(json!(mail().to_string())));
    assert!(fits(erc2612(PERMIT2, "1", 5)) && fits(seaport(false)));
    let with = |key: &str, value: Value| {
        let mut typed = mail();
        typed[key] = value;
        fits(typed)
    };
    assert!(!with("types", json!({"Mail": [{"name": "a", "type": "uint256[0]"}]})));
    assert!(!with("types", json!({"1Mail": []})));
    assert!(!with("types", json!({"a.b.c": []})));
    assert!(with("types", json!({"Lib.Mail": [{"name": "a", "type": "Lib.Part[2][]"}]})));
    assert!(!with("types", json!({"Mail": [{"name": "a"}]})));
    assert!(!with("domain", json!([])));
    assert!(!with("domain", json!({"chainId": -1})));
    assert!(!with("domain", json!({"verifyingContract": "0x12"})));
    assert!(!with("primaryType", json!(5)));
    assert!(!with("message", json!("text")));
    assert!(with("domain", json!({"chainId": "0x2105", "salt": null})));
    assert!(!fits(json!("x".repeat(256 * 1024 + 1))));
}
