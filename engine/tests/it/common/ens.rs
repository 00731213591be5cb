//! ENS on anvil: the registry mock at the mainnet registry address, a resolver mock, and
//! loopback CCIP-read gateways (EIP-3668).

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use alloy::primitives::{Address, B256, Bytes, keccak256};
use alloy::sol_types::SolValue;
use paperchain_engine::Context;
use paperchain_engine::evm::ens::{ENS_REGISTRY, namehash};
use paperchain_engine::evm::{ChainConfig, ChainTimeouts, Chains};
use paperchain_engine::fetch::AddressPolicy;
use paperchain_testkit::anvil::{Anvil, Artifact};
use paperchain_testkit::loopback::{read_request, write_response};
use serde_json::json;
use tokio::net::TcpListener;

/// The production context (public-only fetching) reading anvil at `url`.
pub fn context(url: &str) -> Context {
    with_chain(Context::new(), url)
}

/// A context whose fetcher may also reach loopback gateways, reading anvil at `url`.
pub fn loopback_context(url: &str) -> Context {
    with_chain(Context::with_policy(AddressPolicy::allowing([IpAddr::V4(Ipv4Addr::LOCALHOST)])), url)
}

pub fn with_chain(mut ctx: Context, url: &str) -> Context {
    ctx.chains = Arc::new(Chains::new(
        vec![ChainConfig::new("ethereum", 1, vec![url.parse().unwrap()])],
        ChainTimeouts::default(),
    ));
    ctx
}

pub fn calldata(signature: &str, args: Vec<u8>) -> String {
    format!("0x{}{}", hex::encode(&keccak256(signature)[..4]), hex::encode(args))
}

pub fn reverse_node(address: &str) -> B256 {
    namehash(&format!("{}.addr.reverse", address.trim_start_matches("0x")))
}

/// anvil (chain id 1) with the registry mock at the ENS registry address and one resolver.
pub struct Ens {
    pub anvil: Anvil,
    pub ctx: Context,
    pub registry: String,
    pub resolver: String,
}

impl Ens {
    pub async fn new() -> Ens {
        let anvil = Anvil::start(1).await;
        let registry = format!("{ENS_REGISTRY:#x}");
        anvil.set_code(&registry, &Artifact::load("EnsRegistryMock").deployed_bytecode).await;
        let resolver = anvil.deploy(&Artifact::load("EnsResolverMock").init_code(&[])).await;
        let ctx = loopback_context(&anvil.url);
        Ens { anvil, ctx, registry, resolver }
    }

    pub async fn set_resolver(&self, node: B256) {
        self.set_resolver_to(node, &self.resolver).await;
    }

    /// The registry's resolver of `node` set to `resolver`.
    pub async fn set_resolver_to(&self, node: B256, resolver: &str) {
        let resolver: Address = resolver.parse().unwrap();
        self.anvil
            .send(Some(&self.registry), &calldata("setResolver(bytes32,address)", (node, resolver).abi_encode_params()))
            .await;
    }

    /// `name` → `address` (forward), with the registry pointing at the resolver.
    pub async fn set_addr(&self, name: &str, address: &str) {
        let node = namehash(name);
        self.set_resolver(node).await;
        let address: Address = address.parse().unwrap();
        self.anvil
            .send(Some(&self.resolver), &calldata("setAddr(bytes32,address)", (node, address).abi_encode_params()))
            .await;
    }

    /// `address` → `name` (reverse).
    pub async fn set_primary(&self, address: &str, name: &str) {
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

/// What a test gateway does with one request.
#[derive(Clone)]
pub enum Gateway {
    /// Answers with this status and body.
    Reply(u16, Vec<u8>),
    /// Never answers.
    Hang,
}

/// A loopback HTTP server handing each request's path to `handle`; answers its base URL
/// (`http://127.0.0.1:<port>`) and a count of the requests it got.
pub async fn gateway(handle: impl Fn(&str) -> Gateway + Send + Sync + 'static) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let (handle, counter) = (Arc::new(handle), hits.clone());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let (handle, counter) = (handle.clone(), counter.clone());
            tokio::spawn(async move {
                let Some(request) = read_request(&mut socket).await else { return };
                counter.fetch_add(1, Ordering::SeqCst);
                match handle(request.path()) {
                    Gateway::Hang => tokio::time::sleep(Duration::from_secs(60)).await,
                    Gateway::Reply(status, body) => {
                        let json = [("Content-Type", "application/json".to_string())];
                        write_response(&mut socket, status, &json, &body).await;
                    }
                }
            });
        }
    });
    (base, hits)
}

/// The EIP-3668 GET template of a gateway at `base`.
pub fn template(base: &str) -> String {
    format!("{base}/lookup/{{sender}}/{{data}}.json")
}

/// The `(sender, callData)` of a request path made from [`template`].
pub fn lookup_of(path: &str) -> Option<(String, Vec<u8>)> {
    let rest = path.strip_prefix("/lookup/")?;
    let (sender, data) = rest.split_once('/')?;
    let data = hex::decode(data.strip_suffix(".json")?.strip_prefix("0x")?).ok()?;
    Some((sender.to_string(), data))
}

/// The answer the offchain resolver mock's callback takes: `result`, tagged with the hash
/// of the lookup's callData.
pub fn tagged(result: Vec<u8>, call_data: &[u8]) -> Gateway {
    let response = (Bytes::from(result), keccak256(call_data)).abi_encode_params();
    Gateway::Reply(200, json!({"data": format!("0x{}", hex::encode(response))}).to_string().into_bytes())
}
