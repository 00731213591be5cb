//! The hosted sandbox (anvil with the test USDC, the in-process facilitator, a SQLite store
//! in a temporary folder) with the MCP endpoints mounted, as gateway/tests/common/hosted.rs
//! builds it for the HTTP paywall tests.

use std::sync::Arc;
use std::time::Duration;

use alloy::primitives::U256;
use paperchain_engine::{Catalog, Context};
use paperchain_gateway::hosted::config::{ConfigSources, HostedConfig};
use paperchain_gateway::hosted::paywall::Paywall;
use paperchain_gateway::hosted::sandbox::{SandboxChain, SandboxOptions};
use paperchain_gateway::hosted::{Hosted, HostedOptions};

use super::Server;

pub struct HostedServer {
    pub server: Server,
    pub chain: SandboxChain,
    pub paywall: Arc<Paywall>,
    _config_dir: tempfile::TempDir,
}

/// The sandbox in hosted mode with `env` as its configuration environment (`PAPERCHAIN_FREE_DOCS` …).
pub async fn start(env: &[(&str, &str)]) -> HostedServer {
    let config_dir = tempfile::tempdir().unwrap();
    // The public URL only names the server in 402s; the paywall does not call it.
    let base = "http://127.0.0.1:1".to_string();
    let sources = ConfigSources { file: None, data_dir: config_dir.path(), public_url: Some(&base), sandbox: true };
    let config =
        HostedConfig::load_with(&sources, |key| env.iter().find(|(k, _)| *k == key).map(|(_, v)| v.to_string()))
            .expect("sandbox configuration");
    let options = HostedOptions { run_timeout: Duration::from_secs(60), ..HostedOptions::default() };
    let hosted =
        Hosted::start_sandbox(config, &Catalog::standard(), Context::new(), options, SandboxOptions::default())
            .await
            .unwrap_or_else(|e| panic!("starting the sandbox ({e}); run `cargo xtask setup`"));
    let Hosted { paywall, sandbox, ctx } = hosted;
    let server = super::serve(ctx, Some(paywall.clone())).await;
    HostedServer { server, chain: sandbox.expect("the sandbox chain"), paywall, _config_dir: config_dir }
}

impl HostedServer {
    /// Token balances of the payer and the payee.
    pub async fn balances(&self) -> (U256, U256) {
        let payer = self.chain.balance_of(self.chain.payer()).await.expect("balanceOf");
        let payee = self.chain.balance_of(self.chain.pay_to()).await.expect("balanceOf");
        (payer, payee)
    }
}

/// The x402 v2 PaymentPayload (JSON, as `_meta["x402/payment"]` carries it) that `signer`
/// makes for one requirement (an entry of a PaymentRequired's `accepts`), through x402's
/// own client.
pub async fn sign_x402(
    signer: &alloy::signers::local::PrivateKeySigner,
    requirement: &serde_json::Value,
) -> serde_json::Value {
    use base64::Engine as _;
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
    let header = candidates[0].sign().await.unwrap_or_else(|e| panic!("signing an x402 payment: {e}"));
    // The client makes the PAYMENT-SIGNATURE header (base64 JSON); MCP carries the JSON itself.
    let json = base64::engine::general_purpose::STANDARD.decode(header).expect("base64 payment");
    serde_json::from_slice(&json).expect("a JSON PaymentPayload")
}
