//! `/v1/check/token` on anvil (chain id 1) with the Uniswap V2 fixture at its real
//! addresses: a taxed token with a pool, a honeypot, a token whose owner wallet holds mint,
//! blacklist, fee and pause powers, and one that declares taxes, limits, closed trading and
//! a renounced owner. The owner and declared values are compared with what `cast call`
//! reads. Every answer is checked against the route's published output schema.

use crate::common;

use alloy::primitives::U256;
use common::chain::cast;
use common::market::{ETHER, Market, Pool};
use common::route::call;
use paperchain_engine::ErrorKind;
use paperchain_testkit::anvil::Artifact;
use serde_json::{Value, json};

const PATH: &str = "/v1/check/token";

fn codes(answer: &Value) -> Vec<&str> {
    answer["reasons"].as_array().unwrap().iter().map(|r| r["code"].as_str().unwrap()).collect()
}

async fn check(m: &Market, token: &str) -> Value {
    let answer = call(&m.ctx, PATH, json!({"chain": "ethereum", "address": token})).await.unwrap();
    let points: u64 = answer["reasons"].as_array().unwrap().iter().map(|r| r["points"].as_u64().unwrap()).sum();
    assert_eq!(answer["risk_score"], json!(points.min(100)), "{answer:#}");
    assert_eq!(answer["address"], json!(token.to_ascii_lowercase()));
    answer
}

#[tokio::test]
async fn taxes_owner_powers_and_declarations() {
    let m = Market::new("ethereum").await;
    let rpc = m.anvil.url.clone();

    // A token with a 5% buy and sell tax and a pool: measured taxes, a wallet owner without powers.
    let taxed = m.token("TAX", 500, 500, false, Pool::Eth(10 * ETHER)).await;
    let answer = check(&m, &taxed).await;
    assert_eq!(codes(&answer), ["trade_tax"], "{answer:#}");
    assert_eq!(answer["verdict"], "low");
    assert_eq!(answer["symbol"], "TAX");
    assert_eq!(answer["owner"], json!({"address": m.owner, "kind": "wallet"}));
    assert_eq!(cast(&rpc, &["call", &taxed, "owner()(address)"]).to_ascii_lowercase(), m.owner);
    assert_eq!(
        answer["total_supply"],
        cast(&rpc, &["call", &taxed, "totalSupply()(uint256)"]).split(' ').next().unwrap()
    );
    let simulation = &answer["simulation"];
    let buy: f64 = simulation["buy_tax_percent"].as_str().unwrap().parse().unwrap();
    assert!((4.5..5.5).contains(&buy), "{simulation}");
    assert_eq!(answer["declared"], json!([]));

    // A honeypot: high, as the address check says.
    let trap = m.token("TRP", 0, 0, true, Pool::Eth(10 * ETHER)).await;
    let answer = check(&m, &trap).await;
    assert_eq!(codes(&answer)[0], "sell_blocked");
    assert_eq!(answer["verdict"], "high");

    // Owner powers in the code, held by the deployer's wallet.
    let risky = m.anvil.deploy(&Artifact::load("RiskyToken").init_code(&[])).await;
    let answer = check(&m, &risky).await;
    let found = codes(&answer);
    for code in ["owner_holds_powers", "blacklist_function", "fee_setter", "mint_function", "pause_function"] {
        assert!(found.contains(&code), "{code}: {answer:#}");
    }
    let message =
        answer["reasons"].as_array().unwrap().iter().find(|r| r["code"] == "owner_holds_powers").unwrap()["message"]
            .as_str()
            .unwrap()
            .to_string();
    assert!(message.contains(&m.owner) && message.contains("mint, blacklist, fee setter, pause"), "{message}");
    assert_eq!(answer["verdict"], "high");

    // Declared taxes, limits, closed trading and a renounced owner, as cast reads them.
    let declared = m.anvil.deploy(&Artifact::load("DeclaredToken").init_code(&[])).await;
    let answer = check(&m, &declared).await;
    assert_eq!(answer["owner"], json!({"address": null, "kind": "renounced"}));
    assert_eq!(codes(&answer), ["trading_disabled", "transaction_limit", "ownership_renounced"], "{answer:#}");
    assert_eq!(answer["verdict"], "caution");
    let views: Vec<(String, String)> = answer["declared"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["view"].as_str().unwrap().to_string(), d["value"].as_str().unwrap().to_string()))
        .collect();
    let cast_value = |signature: &str, returns: &str| {
        let out = cast(&rpc, &["call", &declared, &format!("{signature}({returns})")]);
        out.split(' ').next().unwrap().to_string()
    };
    let expected: Vec<(String, String)> = [
        ("buyTax()", cast_value("buyTax()", "uint256")),
        ("sellTax()", cast_value("sellTax()", "uint256")),
        ("maxTxAmount()", cast_value("maxTxAmount()", "uint256")),
        ("maxWallet()", cast_value("maxWallet()", "uint256")),
        ("tradingOpen()", cast_value("tradingOpen()", "bool")),
    ]
    .into_iter()
    .map(|(v, c)| (v.to_string(), c))
    .collect();
    assert_eq!(views, expected);
    assert_eq!(views[1].1, "25");
    assert_eq!(views[2].1, (U256::from(10_000u64) * U256::from(ETHER)).to_string());
}

#[tokio::test]
async fn not_a_token_is_an_input_error() {
    let m = Market::new("ethereum").await;
    let not_token = m.anvil.deploy(&Artifact::load("NotAToken").init_code(&[])).await;
    for (address, says) in [
        ("0x00000000000000000000000000000000000b0b00", "has no code"),
        (not_token.as_str(), "does not answer like an ERC-20 token"),
    ] {
        let e = call(&m.ctx, PATH, json!({"chain": "ethereum", "address": address})).await.unwrap_err();
        assert_eq!((e.kind, e.field.as_deref()), (ErrorKind::InvalidInput, Some("/address")), "{e:?}");
        assert!(e.to_string().contains(says), "{e}");
    }
    for (body, field) in [
        (json!({"chain": "polygon", "address": not_token}), "/chain"),
        (json!({"chain": "ethereum", "address": "0x12"}), "/address"),
        (json!({"chain": "ethereum"}), "/address"),
    ] {
        let e = call(&m.ctx, PATH, body.clone()).await.unwrap_err();
        assert_eq!((e.kind, e.field.as_deref()), (ErrorKind::InvalidInput, Some(field)), "{body}: {e:?}");
    }
}
