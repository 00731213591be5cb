//! The hosted sandbox for the paywall tests: anvil at chain id 8453 with the test USDC
//! (`paperchain_hosted::sandbox`), the in-process facilitator, a SQLite store in a
//! temporary folder, a clock the test can move, and balances read from the chain; served
//! by the gateway on a random loopback port ([`start`]), or handed to a test that mounts
//! more (the MCP endpoints) with [`start_sandbox`].

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alloy::primitives::{Address, U256};
use paperchain_engine::Context;
use paperchain_engine::evm::Chains;
use paperchain_gateway::{HttpServer, ServerConfig};
use paperchain_hosted::config::{ConfigSources, HostedConfig, NETWORKS, PayTo};
use paperchain_hosted::facilitator::{Local, PaymentFacilitator};
use paperchain_hosted::mpp::{EvmCharge, MppConfig};
use paperchain_hosted::paywall::{Clock, Paywall};
use paperchain_hosted::sandbox::{SandboxChain, SandboxOptions, SolanaSide};
use paperchain_hosted::sandbox_solana::SolanaSandbox;
use paperchain_hosted::store::Store;
use paperchain_hosted::{Hosted, HostedOptions};
use time::OffsetDateTime;

use crate::server::{loopback_listener, server_config, spawn_router};

/// A clock tests set by hand (free pools count per UTC day).
pub struct TestClock(Mutex<OffsetDateTime>);

impl TestClock {
    /// A clock standing at `now`.
    pub fn at(now: OffsetDateTime) -> Arc<TestClock> {
        Arc::new(TestClock(Mutex::new(now)))
    }

    /// Moves the clock to `now`.
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
    /// The paywall's options (clock, timeouts); a 60 s run timeout by default.
    pub options: HostedOptions,
    /// Whether the sandbox has its Solana side (the local validator); off by default.
    pub solana: bool,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            env: Vec::new(),
            options: HostedOptions { run_timeout: Duration::from_secs(60), ..HostedOptions::default() },
            solana: false,
        }
    }
}

/// The sandbox's hosted configuration as `paperchain serve --hosted --sandbox` reads it:
/// data in `dir`, public URL `public_url`, and `env` as the whole environment.
pub fn sandbox_config(dir: &Path, public_url: &str, env: &[(&'static str, String)]) -> HostedConfig {
    let sources = ConfigSources { file: None, data_dir: dir, public_url: Some(public_url), sandbox: true };
    HostedConfig::load_with(&sources, |key| env.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone()))
        .expect("sandbox configuration")
}

/// The hosted side of a sandbox, before any server serves it.
pub struct Sandbox {
    /// The sandbox chain (anvil, the test USDC, the payer and the payee).
    pub chain: SandboxChain,
    /// The paywall, its store in the folder given.
    pub paywall: Arc<Paywall>,
    /// The engine's context: `base` reads the sandbox chain.
    pub ctx: Context,
    /// The Solana side, when [`Setup::solana`] asked for it.
    pub solana: Option<SolanaSandbox>,
}

/// Starts the sandbox chain and its paywall as `paperchain serve --hosted --sandbox` does,
/// the store in `dir`, `public_url` naming the server in 402s. A `PAPERCHAIN_RPC_<CHAIN>`
/// entry of `setup.env` re-points that chain (at a dead port, say); `base` stays the sandbox.
pub async fn start_sandbox(dir: &Path, public_url: &str, setup: Setup) -> Sandbox {
    let env = setup.env;
    let config = sandbox_config(dir, public_url, &env);
    let catalog = paperchain_engine::catalog::standard();
    let solana = if setup.solana { SolanaSide::With(crate::surfnet::surfnet_binary()) } else { SolanaSide::Off };
    let options = SandboxOptions { solana, ..SandboxOptions::default() };
    let hosted = Hosted::start_sandbox(config, &catalog, Context::new(), setup.options, options)
        .await
        .unwrap_or_else(|e| panic!("starting the sandbox ({e}); run `cargo xtask setup`"));
    let Hosted { paywall, sandbox, solana_sandbox, mut ctx } = hosted;
    let chain = sandbox.expect("the sandbox chain");
    if env.iter().any(|(k, _)| k.starts_with("PAPERCHAIN_RPC_")) {
        ctx.chains = Arc::new(sandbox_chains(&chain, &env));
    }
    Sandbox { chain, paywall, ctx, solana: solana_sandbox }
}

/// The sandbox chain alone (anvil at chain id 8453 with the test USDC, payer and payee).
pub async fn sandbox_chain() -> SandboxChain {
    SandboxChain::start(SandboxOptions::default())
        .await
        .unwrap_or_else(|e| panic!("starting the sandbox chain ({e}); run `cargo xtask setup`"))
}

/// The sandbox in hosted mode, served by the gateway on a random loopback port; the task
/// stops when dropped.
pub struct HostedServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The sandbox chain.
    pub chain: SandboxChain,
    /// The Solana side, when [`Setup::solana`] asked for it.
    pub solana: Option<SolanaSandbox>,
    /// The paywall (its store, configuration and ledger).
    pub paywall: Arc<Paywall>,
    /// A client that never goes through a proxy.
    pub client: reqwest::Client,
    /// The data folder (store, file links).
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
    let (listener, addr, base) = loopback_listener().await;
    let Sandbox { chain, paywall, ctx, solana } = start_sandbox(dir.path(), &base, setup).await;
    let router = hosted_router(server_config(dir.path(), addr, &base), addr, ctx, &paywall);
    let task = spawn_router(listener, router);
    HostedServer { addr, base, chain, solana, paywall, client: no_proxy_client(), dir, task }
}

/// The sandbox in hosted mode as [`start`] builds it (same chain, payee, store, MPP offer),
/// except that payments go through the facilitator `make` returns when handed the chain's
/// in-process one: a `facilitator::Remote` at a broken URL, or a wrapper around the one given.
pub async fn start_with_facilitator<F, Fut>(setup: Setup, make: F) -> HostedServer
where
    F: FnOnce(Arc<dyn PaymentFacilitator>) -> Fut,
    Fut: std::future::Future<Output = Arc<dyn PaymentFacilitator>>,
{
    let dir = tempfile::tempdir().unwrap();
    let (listener, addr, base) = loopback_listener().await;
    let mut config = sandbox_config(dir.path(), &base, &setup.env);
    let chain = sandbox_chain().await;
    config.pay_to = vec![PayTo { network: NETWORKS[0].clone(), address: chain.pay_to().to_checksum(None) }];
    let ctx = Context { chains: Arc::new(sandbox_chains(&chain, &[])), ..Context::new() };
    let store = Store::open(&config.database).await.unwrap();
    let facilitator = make(local_facilitator(&chain).await).await;
    let paywall = sandbox_paywall(config, &ctx, &chain, facilitator, store, setup.options);
    let router = hosted_router(server_config(dir.path(), addr, &base), addr, ctx, &paywall);
    let task = spawn_router(listener, router);
    HostedServer { addr, base, chain, solana: None, paywall, client: no_proxy_client(), dir, task }
}

impl HostedServer {
    /// Token balances of the payer and the payee.
    pub async fn balances(&self) -> (U256, U256) {
        balances(&self.chain).await
    }

    /// The token balance of `who`.
    pub async fn balance(&self, who: Address) -> U256 {
        balance(&self.chain, who).await
    }

    /// An unsigned POST of `body` to `path`, with extra headers.
    pub async fn post(&self, path: &str, body: &serde_json::Value, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut request = self.client.post(format!("{}{path}", self.base)).json(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.unwrap()
    }

    /// Whether transaction `hash` is mined on the sandbox chain and succeeded (`None`: unknown).
    pub async fn tx_succeeded(&self, hash: &str) -> Option<bool> {
        tx_succeeded(&self.chain, hash).await
    }

    /// Stops this server and starts a new one as a restarted process would: same chain,
    /// payee and SQLite file (replay guard, ledger and free-pool counts come from the file),
    /// a new port, a new in-process facilitator, `options` (pass the same `TestClock` to
    /// keep the day).
    pub async fn restart(&mut self, options: HostedOptions) {
        self.task.abort();
        let _ = (&mut self.task).await;
        self.paywall.store().close().await;
        let (listener, addr, base) = loopback_listener().await;
        let mut config = self.paywall.config().clone();
        config.public_url = url::Url::parse(&base).unwrap();
        let ctx = Context { chains: Arc::new(sandbox_chains(&self.chain, &[])), ..Context::new() };
        let store = Store::open(&config.database).await.expect("reopening the hosted store");
        let facilitator = local_facilitator(&self.chain).await;
        let paywall = sandbox_paywall(config, &ctx, &self.chain, facilitator, store, options);
        let router = hosted_router(server_config(self.dir.path(), addr, &base), addr, ctx, &paywall);
        self.task = spawn_router(listener, router);
        self.addr = addr;
        self.base = base;
        self.paywall = paywall;
    }
}

/// The paywall a sandbox server builds around `facilitator` and `store`, with the MPP offer
/// [`sandbox_mpp`] makes (the configured secret, else a random one).
fn sandbox_paywall(
    config: HostedConfig,
    ctx: &Context,
    chain: &SandboxChain,
    facilitator: Arc<dyn PaymentFacilitator>,
    store: Store,
    options: HostedOptions,
) -> Arc<Paywall> {
    let mpp = sandbox_mpp(chain, config.mpp_secret.unwrap_or_else(rand::random));
    let paywall = Paywall::new(config, &paperchain_engine::catalog::standard(), ctx, facilitator, store, options.clock)
        .with_run_timeout(options.run_timeout)
        .with_facilitator_timeout(options.facilitator_timeout)
        .with_mpp(mpp);
    Arc::new(paywall)
}

/// The gateway's router in hosted mode behind `paywall`.
fn hosted_router(config: ServerConfig, addr: SocketAddr, ctx: Context, paywall: &Arc<Paywall>) -> axum::Router {
    HttpServer::new(config, ctx).paywall(paywall.clone()).router(addr).expect("the hosted router")
}

fn no_proxy_client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
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

/// Token balances of the payer and the payee on `chain`.
pub async fn balances(chain: &SandboxChain) -> (U256, U256) {
    (balance(chain, chain.payer()).await, balance(chain, chain.pay_to()).await)
}

/// The token balance of `who` on `chain`.
pub async fn balance(chain: &SandboxChain, who: Address) -> U256 {
    chain.balance_of(who).await.expect("balanceOf on the sandbox chain")
}

/// Whether transaction `hash` is mined on `chain` and succeeded (`None`: no such transaction).
pub async fn tx_succeeded(chain: &SandboxChain, hash: &str) -> Option<bool> {
    use alloy::providers::{Provider as _, ProviderBuilder};
    let hash: alloy::primitives::B256 = hash.parse().unwrap_or_else(|e| panic!("`{hash}` is no tx hash: {e}"));
    let provider = ProviderBuilder::new().connect_http(chain.rpc_url().clone());
    let receipt = provider.get_transaction_receipt(hash).await.expect("eth_getTransactionReceipt");
    receipt.map(|r| r.status())
}

/// The engine's chains for a sandbox server: `base` reads `chain`, any other chain the
/// `PAPERCHAIN_RPC_<CHAIN>` entry of `env` (else its default endpoints).
pub fn sandbox_chains(chain: &SandboxChain, env: &[(&'static str, String)]) -> Chains {
    chains_with_base(chain.rpc_url().as_str(), env)
}

/// The engine's chains with `base` at `rpc`, any other chain the `PAPERCHAIN_RPC_<CHAIN>`
/// entry of `env` (else its default endpoints).
pub fn chains_with_base(rpc: &str, env: &[(&'static str, String)]) -> Chains {
    Chains::try_from_vars(|key| {
        if key == "PAPERCHAIN_RPC_BASE" {
            Some(rpc.to_string())
        } else {
            env.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone())
        }
    })
    .expect("the sandbox chains")
}

/// A context whose `base` chain is the node at `rpc` (an anvil at chain id 8453).
pub fn base_context(rpc: &str) -> Context {
    Context { chains: Arc::new(chains_with_base(rpc, &[])), ..Context::new() }
}
