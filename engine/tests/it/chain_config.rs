//! A chain added by configuration (`PAPERCHAIN_CHAINS`, `PAPERCHAIN_RPC_<NAME>`) is served
//! like a known one: the EVM routes read it from a local anvil serving its chain id, and the
//! published input schemas list it wherever a `chain` takes any configured chain.

use crate::common;

use std::sync::Arc;

use paperchain_engine::catalog::published_settings;
use paperchain_engine::evm::Chains;
use paperchain_engine::{Context, ErrorKind};
use paperchain_testkit::anvil::Anvil;
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

const EOA: &str = "0x00000000000000000000000000000000000b0b00";
const ARBITRUM_ID: u64 = 42161;

/// A context configured as the environment would: arbitrum added at `url`; the known chains
/// pointed at a closed loopback port, so nothing here can reach them or the internet.
fn context(url: &str) -> Context {
    let vars = [
        ("PAPERCHAIN_CHAINS", "arbitrum=42161"),
        ("PAPERCHAIN_RPC_ARBITRUM", url),
        ("PAPERCHAIN_RPC_ETHEREUM", "http://127.0.0.1:9"),
        ("PAPERCHAIN_RPC_BASE", "http://127.0.0.1:9"),
        ("PAPERCHAIN_RPC_POLYGON", "http://127.0.0.1:9"),
    ];
    let chains = Chains::try_from_vars(|key| vars.iter().find(|(k, _)| *k == key).map(|(_, v)| v.to_string()))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut ctx = Context::new();
    ctx.chains = Arc::new(chains);
    ctx
}

#[tokio::test]
async fn an_added_chain_answers_the_evm_routes() {
    let anvil = Anvil::start(ARBITRUM_ID).await;
    let ctx = context(&anvil.url);
    anvil.set_balance(EOA, 2_500_000_000_000_000_000).await;

    let block = common::route::call(&ctx, "/v1/chain/block", json!({"chain": "arbitrum"})).await.unwrap();
    assert_eq!(block["chain"], "arbitrum", "{block}");
    assert!(block["hash"].as_str().unwrap().starts_with("0x"), "{block}");

    let balance =
        common::route::call(&ctx, "/v1/chain/balance", json!({"chain": "arbitrum", "address": EOA})).await.unwrap();
    assert_eq!(balance["chain"], "arbitrum", "{balance}");
    assert_eq!(balance["wei"], "2500000000000000000", "{balance}");

    // The known chains are still there (and unreachable here, which is their own error).
    let e = common::route::call(&ctx, "/v1/chain/block", json!({"chain": "base"})).await.unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Unavailable { .. }), "{e:?}");

    // An unknown name lists the added chain among the valid ones.
    let e = common::route::call(&ctx, "/v1/chain/block", json!({"chain": "optimism"})).await.unwrap_err();
    assert_eq!((e.kind, e.field.as_deref()), (ErrorKind::InvalidInput, Some("/chain")));
    assert!(e.message.contains("valid chains: ethereum, base, polygon, arbitrum"), "{}", e.message);
}

#[tokio::test]
async fn an_added_chain_is_refused_when_its_node_serves_another_chain() {
    // The chain id is checked against the configured one, as for the known chains.
    let anvil = Anvil::start(10).await;
    let ctx = context(&anvil.url);
    let e = common::route::call(&ctx, "/v1/chain/block", json!({"chain": "arbitrum"})).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::BadUpstream, "{e:?}");
    assert!(e.message.contains("serves chain id 10, not 42161 (arbitrum)"), "{}", e.message);
    assert!(e.message.contains("PAPERCHAIN_RPC_ARBITRUM"), "{}", e.message);
}

/// The `chain` property of `path`'s published input schema, its `$ref` followed.
fn chain_property(generator: &mut schemars::SchemaGenerator, path: &str) -> Value {
    let catalog = paperchain_engine::catalog::standard();
    let entry = catalog.by_path(path).unwrap_or_else(|| panic!("{path} is not registered"));
    let input = entry.input_schema(generator).to_value();
    let definitions = generator.definitions().clone();
    let resolve = |schema: &Value| -> Value {
        match schema["$ref"].as_str().and_then(|r| r.rsplit('/').next()) {
            Some(name) => definitions[name].clone(),
            None => schema.clone(),
        }
    };
    resolve(&resolve(&input)["properties"]["chain"])
}

#[test]
fn published_schemas_list_the_added_chain_where_any_chain_is_taken() {
    let ctx = context("http://127.0.0.1:9");
    let mut published = published_settings(SchemaSettings::draft2020_12(), &ctx).into_generator();
    let mut plain = SchemaSettings::draft2020_12().into_generator();
    let all = json!(["ethereum", "base", "polygon", "arbitrum"]);
    for path in ["/v1/chain/balance", "/v1/chain/block", "/v1/chain/gas", "/v1/chain/token", "/v1/chain/tx"] {
        assert_eq!(chain_property(&mut published, path)["enum"], all, "{path}");
        assert_eq!(chain_property(&mut plain, path)["enum"], json!(["ethereum", "base", "polygon"]), "{path}");
    }
    // Routes that cover fewer chains keep their own lists.
    assert_eq!(chain_property(&mut published, "/v1/check/address")["enum"], json!(["base", "ethereum"]));
    assert_eq!(chain_property(&mut published, "/v1/chain/price")["enum"], json!(["ethereum", "base"]));

    // Inlined schemas (as tool listings use them) follow the configuration too.
    let mut inlined =
        published_settings(SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true), &ctx).into_generator();
    let catalog = paperchain_engine::catalog::standard();
    let input = catalog.by_path("/v1/chain/balance").unwrap().input_schema(&mut inlined).to_value();
    assert_eq!(input["properties"]["chain"]["enum"], all, "{input:#}");
}
