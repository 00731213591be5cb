//! The hosted sandbox (`paperchain_testkit::sandbox`) with the MCP endpoints mounted.

use std::sync::Arc;

use alloy::primitives::U256;
use paperchain_hosted::paywall::Paywall;
use paperchain_hosted::sandbox::SandboxChain;
use paperchain_testkit::sandbox::{self, Sandbox, Setup};

use super::Server;

pub struct HostedServer {
    pub server: Server,
    pub chain: SandboxChain,
    pub paywall: Arc<Paywall>,
    _config_dir: tempfile::TempDir,
}

/// The sandbox in hosted mode with `env` as its configuration environment (`PAPERCHAIN_FREE_DOCS` …).
pub async fn start(env: &[(&'static str, &str)]) -> HostedServer {
    let config_dir = tempfile::tempdir().unwrap();
    let setup = Setup { env: env.iter().map(|(k, v)| (*k, v.to_string())).collect(), ..Setup::default() };
    // The public URL only names the server in 402s; the paywall does not call it.
    let Sandbox { chain, paywall, ctx, .. } =
        sandbox::start_sandbox(config_dir.path(), "http://127.0.0.1:1", setup).await;
    let server = super::serve(ctx, Some(paywall.clone())).await;
    HostedServer { server, chain, paywall, _config_dir: config_dir }
}

impl HostedServer {
    /// Token balances of the payer and the payee.
    pub async fn balances(&self) -> (U256, U256) {
        sandbox::balances(&self.chain).await
    }
}
