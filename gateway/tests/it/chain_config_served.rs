//! The service documents follow the configured chains: a chain added by `PAPERCHAIN_CHAINS`
//! appears in the OpenAPI `chain` enum (and llms.txt) of every route that takes any
//! configured chain, while routes that cover fewer chains keep their lists and the rest of
//! the document is the default one. Nothing here reaches a node: the chains point at a
//! closed loopback port.

use std::sync::Arc;

use paperchain_engine::Context;
use paperchain_engine::evm::Chains;
use serde_json::{Value, json};

use crate::common::*;

const BASE: &str = "https://paperchain.example";

fn context_with_arbitrum() -> Context {
    let vars = [
        ("PAPERCHAIN_CHAINS", "arbitrum=42161"),
        ("PAPERCHAIN_RPC_ARBITRUM", "http://127.0.0.1:9"),
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

async fn get(server: &Server, path: &str) -> String {
    let response = server.client.get(format!("{}{path}", server.base)).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200, "{path}");
    response.text().await.unwrap()
}

/// The `chain` property of `path`'s request schema, `$ref`s followed.
fn chain_schema<'a>(doc: &'a Value, path: &str) -> &'a Value {
    let resolve = |schema: &'a Value| -> &'a Value {
        match schema["$ref"].as_str().and_then(|r| r.strip_prefix("#/components/schemas/")) {
            Some(name) => &doc["components"]["schemas"][name],
            None => schema,
        }
    };
    let input = resolve(&doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]);
    resolve(&input["properties"]["chain"])
}

#[tokio::test]
async fn openapi_lists_an_added_chain() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_full(dir.path(), Some(BASE), context_with_arbitrum()).await;
    let configured: Value = serde_json::from_str(&get(&server, "/openapi.json").await).unwrap();
    let all = json!(["ethereum", "base", "polygon", "arbitrum"]);
    for path in ["/v1/chain/balance", "/v1/chain/block", "/v1/chain/gas", "/v1/chain/token", "/v1/chain/tx"] {
        let chain = chain_schema(&configured, path);
        assert_eq!(chain["enum"], all, "{path}: {chain}");
    }
    assert_eq!(
        chain_schema(&configured, "/v1/chain/balance")["description"],
        "EVM chain to read: `ethereum` (chain id 1), `base` (8453), `polygon` (137) or `arbitrum` (42161)."
    );
    assert_eq!(chain_schema(&configured, "/v1/check/address")["enum"], json!(["base", "ethereum"]));
    assert_eq!(chain_schema(&configured, "/v1/chain/price")["enum"], json!(["ethereum", "base"]));

    // Apart from the chain list, the document is the default one (whose snapshot is in
    // service_docs.rs).
    let default_dir = tempfile::tempdir().unwrap();
    let default_server = start_with(default_dir.path(), Some(BASE)).await;
    let default: Value = serde_json::from_str(&get(&default_server, "/openapi.json").await).unwrap();
    assert_eq!(chain_schema(&default, "/v1/chain/balance")["enum"], json!(["ethereum", "base", "polygon"]));
    let mut patched = configured.clone();
    patched["components"]["schemas"]["EvmChain"] = default["components"]["schemas"]["EvmChain"].clone();
    assert_eq!(patched, default);

    // llms.txt is written from the same document.
    let llms = get(&server, "/llms.txt").await;
    assert!(llms.contains("One of: `ethereum`, `base`, `polygon`, `arbitrum`."), "{llms}");
}

#[tokio::test]
async fn an_added_chain_is_served_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_full(dir.path(), None, context_with_arbitrum()).await;
    // Its node is down: the call reached it (503), rather than being refused as unknown.
    let (status, body) = server.post_json("/v1/chain/block", &json!({"chain": "arbitrum"})).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "unavailable", "{body}");
    let (status, body) = server.post_json("/v1/chain/block", &json!({"chain": "optimism"})).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["field"], "/chain");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("valid chains: ethereum, base, polygon, arbitrum"), "{message}");
}
