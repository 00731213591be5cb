//! Account and contract state reads (`/v1/chain/nonce`, `/v1/chain/storage`) against a
//! real anvil, each answer compared field by field with what Foundry's `cast` reads for
//! the same question, and against nodes that are not there. Every answer is checked
//! against the route's published output schema.

use crate::common;

use common::chain::{cast, ethereum as context};
use common::route::call;
use paperchain_engine::ErrorKind;
use paperchain_testkit::anvil::Anvil;
use paperchain_testkit::loopback::closed_port_url;
use serde_json::json;

const CONTRACT: &str = "0x00000000000000000000000000000000000c0de0";

#[tokio::test]
async fn nonces_match_cast() {
    let anvil = Anvil::start(1).await;
    let ctx = context(&anvil.url);
    let sender = anvil.accounts().await.into_iter().next().unwrap();
    for _ in 0..3 {
        anvil.send(Some(CONTRACT), "0x").await;
    }
    let answer = call(&ctx, "/v1/chain/nonce", json!({"chain": "ethereum", "address": sender})).await.unwrap();
    assert_eq!(answer["address"], sender.to_lowercase());
    assert_eq!(answer["nonce"].to_string(), cast(&anvil.url, &["nonce", &sender]));
    assert_eq!(answer["pending_nonce"].to_string(), cast(&anvil.url, &["nonce", &sender, "--block", "pending"]));
    assert_eq!((answer["nonce"].as_u64(), answer["pending"].as_u64()), (Some(3), Some(0)));
    // An account that never sent anything.
    let fresh = call(&ctx, "/v1/chain/nonce", json!({"chain": "ethereum", "address": CONTRACT})).await.unwrap();
    assert_eq!((fresh["nonce"].as_u64(), fresh["pending_nonce"].as_u64()), (Some(0), Some(0)));
}

#[tokio::test]
async fn storage_slots_match_cast() {
    let anvil = Anvil::start(1).await;
    let ctx = context(&anvil.url);
    let eip1967 = "0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc";
    let implementation = "0x000000000000000000000000000000000000000000000000000000000000beef";
    anvil.set_storage(CONTRACT, eip1967, implementation).await;
    anvil.set_storage(CONTRACT, "0x3", &format!("0x{:064x}", 1_000_000_007u64)).await;
    anvil.mine(2).await;
    for (slot, cast_slot) in [(eip1967, eip1967), ("3", "3"), ("0x03", "3"), ("0x0", "0")] {
        let answer = call(&ctx, "/v1/chain/storage", json!({"chain": "ethereum", "address": CONTRACT, "slot": slot}))
            .await
            .unwrap_or_else(|e| panic!("{slot}: {e:?}"));
        assert_eq!(answer["value"], cast(&anvil.url, &["storage", CONTRACT, cast_slot]), "{slot}");
        assert_eq!(answer["block"].to_string(), cast(&anvil.url, &["block-number"]));
        assert_eq!(answer["slot"].as_str().unwrap().len(), 66);
    }
    let answer =
        call(&ctx, "/v1/chain/storage", json!({"chain": "ethereum", "address": CONTRACT, "slot": "3"})).await.unwrap();
    assert_eq!(answer["value_decimal"], "1000000007");
    assert_eq!(answer["slot"], format!("0x{:064x}", 3));
    let empty =
        call(&ctx, "/v1/chain/storage", json!({"chain": "ethereum", "address": CONTRACT, "slot": "9"})).await.unwrap();
    assert_eq!(
        (empty["value"].as_str(), empty["value_decimal"].as_str()),
        (Some(&*format!("0x{}", "0".repeat(64))), Some("0"))
    );
}

#[tokio::test]
async fn bad_input_names_the_field_before_any_read() {
    // No node at all: every refusal comes from the input alone.
    let ctx = context(&closed_port_url().await);
    let cases = [
        ("/v1/chain/storage", json!({"chain": "ethereum", "address": CONTRACT, "slot": "0x1g"}), "/slot"),
        ("/v1/chain/storage", json!({"chain": "ethereum", "address": CONTRACT, "slot": "-1"}), "/slot"),
        (
            "/v1/chain/storage",
            json!({"chain": "ethereum", "address": CONTRACT, "slot": format!("0x{}", "f".repeat(65))}),
            "/slot",
        ),
        ("/v1/chain/storage", json!({"chain": "ethereum", "address": CONTRACT}), ""),
        ("/v1/chain/storage", json!({"chain": "ethereum", "address": "0x12", "slot": "0"}), "/address"),
        ("/v1/chain/nonce", json!({"chain": "solana", "address": CONTRACT}), "/chain"),
        ("/v1/chain/nonce", json!({"chain": "ethereum", "address": CONTRACT, "block": "pending"}), "/block"),
    ];
    for (path, body, field) in cases {
        let error = call(&ctx, path, body.clone()).await.expect_err(&format!("{path} {body}"));
        assert_eq!(error.kind, ErrorKind::InvalidInput, "{path} {body}: {error:?}");
        if !field.is_empty() {
            assert_eq!(error.field.as_deref(), Some(field), "{path} {body}: {error:?}");
        }
    }
}

#[tokio::test]
async fn a_node_that_is_not_there_is_unavailable() {
    let ctx = context(&closed_port_url().await);
    for (path, body) in [
        ("/v1/chain/nonce", json!({"chain": "ethereum", "address": CONTRACT})),
        ("/v1/chain/storage", json!({"chain": "ethereum", "address": CONTRACT, "slot": "0"})),
    ] {
        let error = call(&ctx, path, body).await.unwrap_err();
        assert!(matches!(error.kind, ErrorKind::Unavailable { .. }), "{path}: {error:?}");
    }
}
