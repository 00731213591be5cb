//! A hosted gateway on the sandbox chain for the paywall tests: anvil at chain id 8453
//! with the test USDC, the in-process facilitator, a SQLite store in a temporary folder,
//! a clock the test can move, and balances read from the chain.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alloy::primitives::{Address, U256};
use paperchain_engine::{Catalog, Context};
use paperchain_gateway::ServerConfig;
use paperchain_gateway::hosted::config::{ConfigSources, HostedConfig};
use paperchain_gateway::hosted::paywall::{Clock, Paywall};
use paperchain_gateway::hosted::sandbox::{SandboxChain, SandboxOptions};
use paperchain_gateway::hosted::{Hosted, HostedOptions};
use paperchain_gateway::server::app_with;
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
    let Hosted { paywall, sandbox, ctx } = hosted;
    let router = app_with(&server_config, addr, ctx, Some(paywall.clone())).unwrap();
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
