//! A hosted gateway on the sandbox chain for the paywall tests: anvil at chain id 8453
//! with the test USDC, the in-process facilitator, a SQLite store in a temporary folder,
//! a clock the test can move, and balances read from the chain.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alloy::primitives::{Address, U256};
use paperchain_engine::{Catalog, Context};
use paperchain_gateway::hosted::config::{ConfigSources, HostedConfig};
use paperchain_gateway::hosted::paywall::{Clock, Paywall};
use paperchain_gateway::hosted::sandbox::{SandboxChain, SandboxOptions};
use paperchain_gateway::hosted::{Hosted, HostedOptions};
use paperchain_gateway::{HttpServer, ServerConfig};
use time::OffsetDateTime;

/// A clock tests set by hand (free pools count per UTC day).
pub struct TestClock(Mutex<OffsetDateTime>);

impl TestClock {
    pub fn at(now: OffsetDateTime) -> Arc<TestClock> {
        Arc::new(TestClock(Mutex::new(now)))
    }

    pub fn set(&self, now: OffsetDateTime) {
        *self.0.lock().unwrap() = now;
    }
}

impl Clock for TestClock {
    fn now(&self) -> OffsetDateTime {
        *self.0.lock().unwrap()
    }
}

/// What a test may change about the hosted server.
pub struct Setup {
    /// Extra configuration environment (`PAPERCHAIN_FREE_DOCS` …).
    pub env: Vec<(&'static str, String)>,
    pub options: HostedOptions,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            env: Vec::new(),
            options: HostedOptions { run_timeout: Duration::from_secs(60), ..HostedOptions::default() },
        }
    }
}

pub struct HostedServer {
    pub addr: SocketAddr,
    pub base: String,
    pub chain: SandboxChain,
    pub paywall: Arc<Paywall>,
    pub client: reqwest::Client,
    pub dir: tempfile::TempDir,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for HostedServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The sandbox, served in hosted mode on a random loopback port.
pub async fn start(setup: Setup) -> HostedServer {
    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let base = format!("http://{addr}");
    let env = setup.env;
    let sources = ConfigSources { file: None, data_dir: dir.path(), public_url: Some(&base), sandbox: true };
    let config = HostedConfig::load_with(&sources, |key| env.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone()))
        .expect("sandbox configuration");
    let catalog = Catalog::standard();
    let hosted = Hosted::start_sandbox(config, &catalog, Context::new(), setup.options, SandboxOptions::default())
        .await
        .unwrap_or_else(|e| panic!("starting the sandbox: {e}"));
    let mut server_config = ServerConfig::local(dir.path().to_path_buf());
    server_config.listen = addr;
    server_config.public_url = Some(base.clone());
    let Hosted { paywall, sandbox, mut ctx } = hosted;
    // A test may re-point other chains (`PAPERCHAIN_RPC_ETHEREUM` at a dead port); `base` stays the sandbox.
    if let Some(chain) = &sandbox
        && env.iter().any(|(k, _)| k.starts_with("PAPERCHAIN_RPC_"))
    {
        ctx.chains = Arc::new(sandbox_chains(chain, &env));
    }
    let router = HttpServer::new(server_config, ctx).paywall(paywall.clone()).router(addr).unwrap();
    let task = tokio::spawn(async move {
        axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>()).await.unwrap();
    });
    HostedServer {
        addr,
        base,
        chain: sandbox.expect("the sandbox chain"),
        paywall,
        client: reqwest::Client::builder().no_proxy().build().unwrap(),
        dir,
        task,
    }
}

impl HostedServer {
    /// Token balances of the payer and the payee.
    pub async fn balances(&self) -> (U256, U256) {
        (self.balance(self.chain.payer()).await, self.balance(self.chain.pay_to()).await)
    }

    pub async fn balance(&self, who: Address) -> U256 {
        self.chain.balance_of(who).await.expect("balanceOf on the sandbox chain")
    }

    /// An unsigned POST of `body` to `path`, with extra headers.
    pub async fn post(&self, path: &str, body: &serde_json::Value, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut request = self.client.post(format!("{}{path}", self.base)).json(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.unwrap()
    }
}

// ---- A sandbox with a facilitator of the test's choosing (hosted_facilitator.rs, hosted_mpp.rs) ----

use paperchain_gateway::hosted::config::{NETWORKS, PayTo};
use paperchain_gateway::hosted::facilitator::{Local, PaymentFacilitator};
use paperchain_gateway::hosted::mpp::{EvmCharge, MppConfig};
use paperchain_gateway::hosted::store::Store;

/// The sandbox in hosted mode as [`start`] builds it (same chain, payee, store, MPP offer),
/// except that payments go through the facilitator `make` returns when handed the chain's
/// in-process one: a `facilitator::Remote` at a broken URL, or a wrapper around the one given.
pub async fn start_with_facilitator<F, Fut>(setup: Setup, make: F) -> HostedServer
where
    F: FnOnce(Arc<dyn PaymentFacilitator>) -> Fut,
    Fut: std::future::Future<Output = Arc<dyn PaymentFacilitator>>,
{
    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let base = format!("http://{addr}");
    let env = setup.env;
    let sources = ConfigSources { file: None, data_dir: dir.path(), public_url: Some(&base), sandbox: true };
    let mut config =
        HostedConfig::load_with(&sources, |key| env.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone()))
            .expect("sandbox configuration");
    let chain = SandboxChain::start(SandboxOptions::default()).await.unwrap_or_else(|e| panic!("the sandbox: {e}"));
    config.pay_to = vec![PayTo { network: NETWORKS[0].clone(), address: chain.pay_to().to_checksum(None) }];
    let rpc = chain.rpc_url().to_string();
    let chains =
        paperchain_engine::evm::Chains::try_from_vars(|key| (key == "PAPERCHAIN_RPC_BASE").then(|| rpc.clone()))
            .unwrap();
    let ctx = Context { chains: Arc::new(chains), ..Context::new() };
    let store = Store::open(&config.database).await.unwrap();
    let mpp = sandbox_mpp(&chain, config.mpp_secret.unwrap_or_else(rand::random));
    let catalog = Catalog::standard();
    let facilitator = make(local_facilitator(&chain).await).await;
    let paywall = Paywall::new(config, &catalog, &ctx, facilitator, store, setup.options.clock)
        .with_run_timeout(setup.options.run_timeout)
        .with_facilitator_timeout(setup.options.facilitator_timeout)
        .with_mpp(mpp);
    let paywall = Arc::new(paywall);
    let mut server_config = ServerConfig::local(dir.path().to_path_buf());
    server_config.listen = addr;
    server_config.public_url = Some(base.clone());
    let router = HttpServer::new(server_config, ctx).paywall(paywall.clone()).router(addr).unwrap();
    let task = tokio::spawn(async move {
        axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>()).await.unwrap();
    });
    HostedServer {
        addr,
        base,
        chain,
        paywall,
        client: reqwest::Client::builder().no_proxy().build().unwrap(),
        dir,
        task,
    }
}

/// The in-process facilitator of `chain`, as [`start`] pays through it.
pub async fn local_facilitator(chain: &SandboxChain) -> Arc<dyn PaymentFacilitator> {
    Arc::new(Local(chain.facilitator().await.expect("the sandbox facilitator")))
}

/// The MPP offer a sandbox server on `chain` makes with `secret` (what `Hosted` derives
/// from its configuration: realm = the public URL's host, the `evm` charge on Base USDC).
/// With the server's secret (`PAPERCHAIN_MPP_SECRET`), a test can issue challenges the
/// server honours at any time or price.
pub fn sandbox_mpp(chain: &SandboxChain, secret: [u8; 32]) -> MppConfig {
    let mut mpp = MppConfig::new("127.0.0.1");
    mpp.secret = secret;
    let (token_name, token_version) = chain.eip712_name_version();
    mpp.evm = Some(EvmCharge {
        chain_id: chain.chain_id(),
        asset: chain.token(),
        recipient: chain.pay_to(),
        token_name,
        token_version,
        decimals: 6,
    });
    mpp
}

/// The `PAYMENT-SIGNATURE` value `signer` makes for one x402 v2 requirement (an entry of a
/// 402's `accepts`), through x402's own client.
pub async fn sign_x402(signer: &alloy::signers::local::PrivateKeySigner, requirement: &serde_json::Value) -> String {
    use x402_types::proto::{self, OriginalJson, v2};
    use x402_types::scheme::client::X402SchemeClient as _;
    let accepts = serde_json::value::RawValue::from_string(requirement.to_string()).unwrap();
    let required = proto::PaymentRequired::V2(v2::PaymentRequired {
        x402_version: v2::X402Version2,
        error: None,
        resource: None,
        accepts: vec![OriginalJson(accepts)],
        extensions: Default::default(),
    });
    let candidates = x402_chain_eip155::V2Eip155ExactClient::new(signer.clone()).accept(&required);
    assert_eq!(candidates.len(), 1, "the x402 client takes {requirement}");
    candidates[0].sign().await.unwrap_or_else(|e| panic!("signing an x402 payment: {e}"))
}

/// Whether transaction `hash` is mined on `chain` and succeeded (`None`: no such transaction).
pub async fn tx_succeeded(chain: &SandboxChain, hash: &str) -> Option<bool> {
    use alloy::providers::{Provider as _, ProviderBuilder};
    let hash: alloy::primitives::B256 = hash.parse().unwrap_or_else(|e| panic!("`{hash}` is no tx hash: {e}"));
    let provider = ProviderBuilder::new().connect_http(chain.rpc_url().clone());
    let receipt = provider.get_transaction_receipt(hash).await.expect("eth_getTransactionReceipt");
    receipt.map(|r| r.status())
}

// ---- Restarts, re-pointed chains and hand-made x402 payments (hosted_x402.rs) ----

/// The engine's chains for a sandbox server: `base` reads `chain`, any other chain the
/// `PAPERCHAIN_RPC_<CHAIN>` entry of `env` (else its default endpoints).
pub fn sandbox_chains(chain: &SandboxChain, env: &[(&'static str, String)]) -> paperchain_engine::evm::Chains {
    let rpc = chain.rpc_url().to_string();
    paperchain_engine::evm::Chains::try_from_vars(|key| {
        if key == "PAPERCHAIN_RPC_BASE" {
            Some(rpc.clone())
        } else {
            env.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone())
        }
    })
    .expect("the sandbox chains")
}

/// An RPC URL where nothing listens (connections are refused at once).
pub async fn dead_rpc_url() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

impl HostedServer {
    /// Stops this server and starts a new one as a restarted process would: same chain,
    /// payee and SQLite file (replay guard, ledger and free-pool counts come from the file),
    /// a new port, a new in-process facilitator, `options` (pass the same `TestClock` to
    /// keep the day).
    pub async fn restart(&mut self, options: HostedOptions) {
        self.task.abort();
        let _ = (&mut self.task).await;
        self.paywall.store().close().await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let base = format!("http://{addr}");
        let mut config = self.paywall.config().clone();
        config.public_url = url::Url::parse(&base).unwrap();
        let ctx = Context { chains: Arc::new(sandbox_chains(&self.chain, &[])), ..Context::new() };
        let store = Store::open(&config.database).await.expect("reopening the hosted store");
        let mpp = sandbox_mpp(&self.chain, config.mpp_secret.unwrap_or_else(rand::random));
        let facilitator = local_facilitator(&self.chain).await;
        let paywall = Paywall::new(config, &Catalog::standard(), &ctx, facilitator, store, options.clock)
            .with_run_timeout(options.run_timeout)
            .with_facilitator_timeout(options.facilitator_timeout)
            .with_mpp(mpp);
        let paywall = Arc::new(paywall);
        let mut server_config = ServerConfig::local(self.dir.path().to_path_buf());
        server_config.listen = addr;
        server_config.public_url = Some(base.clone());
        let router = HttpServer::new(server_config, ctx).paywall(paywall.clone()).router(addr).unwrap();
        self.task = tokio::spawn(async move {
            axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>()).await.unwrap();
        });
        self.addr = addr;
        self.base = base;
        self.paywall = paywall;
    }
}

alloy::sol! {
    /// EIP-3009's signed message, as the x402 `exact` scheme signs it on EVM chains.
    struct TransferWithAuthorization {
        address from;
        address to;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
    }
}

/// The x402 PaymentPayload in a `PAYMENT-SIGNATURE` value.
pub fn decode_x402(header: &str) -> serde_json::Value {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD.decode(header).expect("the payment header is base64");
    serde_json::from_slice(&bytes).expect("the payment header is JSON")
}

/// The `PAYMENT-SIGNATURE` value of a PaymentPayload.
pub fn encode_x402(payment: &serde_json::Value) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(payment.to_string())
}

/// `header` after `change` edited its PaymentPayload (`accepted` and the EIP-3009
/// `payload.authorization`), re-signed by `signer` over the edited authorization, as a
/// client signing other terms would have: the signature is valid, only the terms differ.
pub async fn tamper_x402(
    signer: &alloy::signers::local::PrivateKeySigner,
    header: &str,
    change: impl FnOnce(&mut serde_json::Value),
) -> String {
    use alloy::primitives::{Address, B256, U256};
    use alloy::signers::Signer as _;
    use alloy::sol_types::SolStruct as _;
    let mut payment = decode_x402(header);
    change(&mut payment);
    let chain_id: u64 = payment["accepted"]["network"]
        .as_str()
        .and_then(|n| n.strip_prefix("eip155:"))
        .and_then(|id| id.parse().ok())
        .expect("an eip155 network");
    let token: Address = payment["accepted"]["asset"].as_str().and_then(|a| a.parse().ok()).expect("asset");
    let (name, version) = (
        payment["accepted"]["extra"]["name"].as_str().expect("extra.name").to_string(),
        payment["accepted"]["extra"]["version"].as_str().expect("extra.version").to_string(),
    );
    let authorization = &payment["payload"]["authorization"];
    let field = |key: &str| authorization[key].as_str().unwrap_or_else(|| panic!("{key} in {authorization}"));
    let number = |key: &str| field(key).parse::<U256>().unwrap_or_else(|e| panic!("{key}: {e}"));
    let message = TransferWithAuthorization {
        from: field("from").parse().expect("from"),
        to: field("to").parse().expect("to"),
        value: number("value"),
        validAfter: number("validAfter"),
        validBefore: number("validBefore"),
        nonce: field("nonce").parse::<B256>().expect("nonce"),
    };
    let domain = alloy::sol_types::eip712_domain! {
        name: name, version: version, chain_id: chain_id, verifying_contract: token,
    };
    let signature = signer.sign_hash(&message.eip712_signing_hash(&domain)).await.expect("signing");
    payment["payload"]["signature"] = serde_json::json!(format!("0x{}", hex::encode(signature.as_bytes())));
    encode_x402(&payment)
}
