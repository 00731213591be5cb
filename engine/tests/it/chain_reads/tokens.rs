//! Token reads against `cast`: ERC-20 balances and allowances, NFTs of both standards,
//! and standing approvals found, read and flagged.

use crate::common;

use alloy::primitives::U256;
use alloy::sol_types::SolValue;
use common::chain::{cast, ethereum as context};
use common::route::{err, ok};
use paperchain_engine::ErrorKind;
use paperchain_testkit::anvil::Artifact;
use paperchain_testkit::loopback::closed_port_url;
use serde_json::{Value, json};

use super::{EOA, Fixture, calldata};

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
