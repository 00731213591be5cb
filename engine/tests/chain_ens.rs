//! `/v1/chain/ens` against anvil serving chain id 1, with a registry mock at the mainnet
//! ENS registry address and a resolver mock answering `addr` and `name` from mappings.
//!
//! Every answer is checked against the route's published output schema.

mod common;

use std::sync::Arc;

use alloy::primitives::{Address, B256, keccak256};
use alloy::sol_types::SolValue;
use common::anvil::{Anvil, Artifact};
use paperchain_engine::chain::ens::{ENS_REGISTRY, namehash};
use paperchain_engine::chain::evm::{ChainConfig, ChainTimeouts, Chains};
use paperchain_engine::{Context, EngineError, ErrorKind};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

const PATH: &str = "/v1/chain/ens";
const ALICE: &str = "0x00000000000000000000000000000000000a11ce";
const BOB: &str = "0x0000000000000000000000000000000000000b0b";
const CAROL: &str = "0x00000000000000000000000000000000000ca201";
const NOBODY: &str = "0x000000000000000000000000000000000000dead";

fn context(url: &str) -> Context {
    let mut ctx = Context::new();
    ctx.chains = Arc::new(Chains::new(
        vec![ChainConfig::new("ethereum", 1, vec![url.parse().unwrap()])],
        ChainTimeouts::default(),
    ));
    ctx
}

async fn call(ctx: &Context, body: Value) -> Result<Value, EngineError> {
    common::route::call(ctx, PATH, body).await
}

async fn ok(ctx: &Context, body: Value) -> Value {
    call(ctx, body.clone()).await.unwrap_or_else(|e| panic!("{body}: {e:?}"))
}

async fn err(ctx: &Context, body: Value) -> EngineError {
    match call(ctx, body.clone()).await {
        Ok(value) => panic!("{body} answered {value:#}"),
        Err(e) => e,
    }
}

fn calldata(signature: &str, args: Vec<u8>) -> String {
    format!("0x{}{}", hex::encode(&keccak256(signature)[..4]), hex::encode(args))
}

fn reverse_node(address: &str) -> B256 {
    namehash(&format!("{}.addr.reverse", address.trim_start_matches("0x")))
}

/// anvil (chain id 1) with the registry mock at the ENS registry address and one resolver.
struct Ens {
    anvil: Anvil,
    ctx: Context,
    registry: String,
    resolver: String,
}

impl Ens {
    async fn new() -> Ens {
        let anvil = Anvil::start(1).await;
        let registry = format!("{ENS_REGISTRY:#x}");
        anvil.set_code(&registry, &Artifact::load("EnsRegistryMock").deployed_bytecode).await;
        let resolver = anvil.deploy(&Artifact::load("EnsResolverMock").init_code(&[])).await;
        let ctx = context(&anvil.url);
        Ens { anvil, ctx, registry, resolver }
    }

    async fn set_resolver(&self, node: B256) {
        let resolver: Address = self.resolver.parse().unwrap();
        self.anvil
            .send(Some(&self.registry), &calldata("setResolver(bytes32,address)", (node, resolver).abi_encode_params()))
            .await;
    }

    /// `name` → `address` (forward), with the registry pointing at the resolver.
    async fn set_addr(&self, name: &str, address: &str) {
        let node = namehash(name);
        self.set_resolver(node).await;
        let address: Address = address.parse().unwrap();
        self.anvil
            .send(Some(&self.resolver), &calldata("setAddr(bytes32,address)", (node, address).abi_encode_params()))
            .await;
    }

    /// `address` → `name` (reverse).
    async fn set_primary(&self, address: &str, name: &str) {
        let node = reverse_node(address);
        self.set_resolver(node).await;
        self.anvil
            .send(
                Some(&self.resolver),
                &calldata("setName(bytes32,string)", (node, name.to_string()).abi_encode_params()),
            )
            .await;
    }
}

#[tokio::test]
async fn forward_and_reverse_lookups() {
    let ens = Ens::new().await;
    ens.set_addr("alice.eth", ALICE).await;
    ens.set_primary(ALICE, "alice.eth").await;
    ens.set_addr("bob.eth", CAROL).await;
    ens.set_primary(BOB, "bob.eth").await;
    // A name whose resolver is set but holds no address.
    ens.set_resolver(namehash("empty.eth")).await;

    // Forward, the name normalised first.
    let answer = ok(&ens.ctx, json!({"name": "Alice.ETH"})).await;
    assert_eq!(answer, json!({"name": "alice.eth", "address": ALICE, "resolved": true, "primary_name": null}),);
    let answer = ok(&ens.ctx, json!({"name": "alice.eth", "address": null})).await;
    assert_eq!(answer["address"], json!(ALICE));

    // No resolver, or a resolver without an address: not resolved.
    for name in ["nobody.eth", "empty.eth"] {
        let answer = ok(&ens.ctx, json!({"name": name})).await;
        assert_eq!(answer, json!({"name": name, "address": null, "resolved": false, "primary_name": null}), "{name}");
    }

    // Reverse: a primary name that resolves back.
    let answer = ok(&ens.ctx, json!({"address": ALICE.to_ascii_uppercase().replace("0X", "0x")})).await;
    assert_eq!(
        answer,
        json!({"name": null, "address": ALICE, "resolved": true, "primary_name": "alice.eth", "verified": true}),
    );

    // A primary name that resolves to someone else is not verified.
    let answer = ok(&ens.ctx, json!({"address": BOB, "name": null})).await;
    assert_eq!(
        answer,
        json!({"name": null, "address": BOB, "resolved": true, "primary_name": "bob.eth", "verified": false}),
    );

    // No primary name.
    let answer = ok(&ens.ctx, json!({"address": NOBODY})).await;
    assert_eq!(
        answer,
        json!({"name": null, "address": NOBODY, "resolved": false, "primary_name": null, "verified": false}),
    );
}

#[tokio::test]
async fn hostile_primary_names_are_cleaned_and_not_verified() {
    let ens = Ens::new().await;
    // A primary name that does not resolve at all.
    ens.set_primary(CAROL, "ghost.eth").await;
    let answer = ok(&ens.ctx, json!({"address": CAROL})).await;
    assert_eq!(
        (answer["primary_name"].as_str(), &answer["resolved"], &answer["verified"]),
        (Some("ghost.eth"), &json!(false), &json!(false))
    );

    // Not in normal form (upper case, a control character): returned cleaned, never verified,
    // even though its normal form resolves back.
    ens.set_addr("alice.eth", ALICE).await;
    ens.set_primary(ALICE, "ALICE.eth\u{7}").await;
    let answer = ok(&ens.ctx, json!({"address": ALICE})).await;
    assert_eq!(answer["primary_name"], json!("ALICE.eth"));
    assert_eq!(answer["verified"], json!(false));

    // Very long: cut at 255 characters.
    ens.set_primary(BOB, &format!("{}.eth", "b".repeat(1000))).await;
    let answer = ok(&ens.ctx, json!({"address": BOB})).await;
    assert_eq!(answer["primary_name"].as_str().unwrap().chars().count(), 255);
    assert_eq!(answer["verified"], json!(false));
}

#[tokio::test]
async fn input_errors_name_their_field() {
    // No chain is needed: these fail before any read.
    let ctx = context("http://127.0.0.1:1/");
    for body in [json!({}), json!({"name": null, "address": null}), json!({"name": "alice.eth", "address": ALICE})] {
        let e = err(&ctx, body.clone()).await;
        assert_eq!((e.kind, e.field.as_deref()), (ErrorKind::InvalidInput, Some("/name")), "{body}: {e:?}");
        assert!(e.message.contains("give exactly one of name and address"), "{}", e.message);
    }
    for name in ["alice bob.eth", "", "alice..eth", "a/b.eth"] {
        let e = err(&ctx, json!({"name": name})).await;
        assert_eq!((e.kind, e.field.as_deref()), (ErrorKind::InvalidInput, Some("/name")), "{name:?}: {e:?}");
    }
    for address in [json!("0x1234"), json!("alice.eth"), json!(12)] {
        let e = err(&ctx, json!({"address": address})).await;
        assert_eq!((e.kind, e.field.as_deref()), (ErrorKind::InvalidInput, Some("/address")), "{address}: {e:?}");
    }
    let e = err(&ctx, json!({"name": "alice.eth", "chain": "base"})).await;
    assert_eq!(e.field.as_deref(), Some("/chain"), "{e:?}");
}

#[tokio::test]
async fn garbage_is_bad_upstream() {
    // The registry answers one byte instead of an address word.
    let ens = Ens::new().await;
    ens.anvil.set_code(&ens.registry, "0x60016000f3").await;
    let e = err(&ens.ctx, json!({"name": "alice.eth"})).await;
    assert_eq!(e.kind, ErrorKind::BadUpstream, "{e:?}");
    let e = err(&ens.ctx, json!({"address": ALICE})).await;
    assert_eq!(e.kind, ErrorKind::BadUpstream, "{e:?}");

    // A node of the right chain whose eth_call answers are not hex data.
    let node = fake_node(|request| {
        let result = if request["method"] == "eth_chainId" { json!("0x1") } else { json!({"not": "data"}) };
        json!({"jsonrpc": "2.0", "id": request["id"], "result": result}).to_string()
    })
    .await;
    let ctx = context(&node);
    let e = err(&ctx, json!({"name": "alice.eth"})).await;
    assert_eq!(e.kind, ErrorKind::BadUpstream, "{e:?}");

    // And one that is not a JSON-RPC node at all.
    let node = fake_node(|_| "<html>hello</html>".to_string()).await;
    let e = err(&context(&node), json!({"address": ALICE})).await;
    assert_eq!(e.kind, ErrorKind::BadUpstream, "{e:?}");
}

/// A loopback HTTP server answering every JSON-RPC request with `answer(request)`; it lives
/// as long as the test's runtime.
async fn fake_node(answer: impl Fn(&Value) -> String + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let Some(body) = common::http::read_request_body(&mut socket).await else { return };
                let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let body = answer(&request);
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(body.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    url
}
