//! Paperchain's hosted service: the x402 v2 paywall, free pools, MPP, the facilitator, the
//! payment store and its recovery, the sandbox chain. Only the server assembly
//! (`paperchain-server`, with its `hosted` feature) depends on it: the desktop app and the
//! paying client build without it. The HTTP and MCP doors know the paywall through the call
//! path's interface (`paperchain_calls::paywall`).
//!
//! What this crate must not do: know a door's wire format beyond the payment messages
//! themselves, or run a route other than through the catalog.
//!
//! [`Hosted::start`] wires a [`HostedConfig`] to a remote facilitator;
//! [`Hosted::start_sandbox`] starts a local chain with a test dollar token and runs the
//! facilitator in process, so the whole paid flow can be tried without money.
//!
//! The modules: [`paywall`] decides and runs every paid call; [`store`] is its SQLite
//! file (replay guard, free pools, ledger); [`liveness`] and [`recovery`] settle what a
//! killed process left open; [`facilitator`] verifies and settles ([`facilitator::ByNamespace`]
//! sends each payment to the facilitator of its network's namespace); [`mpp`] is the
//! "Payment" HTTP scheme; [`config`] the `[hosted]` file and environment; [`bazaar`] the
//! discovery extension; [`sandbox`] and [`sandbox_solana`] the throwaway chains. The
//! sandbox's store is a file of its own, emptied at each start (its rows describe a chain
//! that ended with the previous run); [`Hosted::stop`] closes the store and stops the
//! sandbox's anvil and validator.

pub mod batch;
pub mod bazaar;
pub mod config;
pub mod facilitator;
pub mod liveness;
pub mod mpp;
pub mod paywall;
pub mod recovery;
pub mod sandbox;
pub mod sandbox_solana;
pub mod store;

use std::sync::Arc;
use std::time::Duration;

use alloy::primitives::Address;
use paperchain_engine::{Catalog, Context};
use serde_json::{Value, json};

use config::{HostedConfig, NETWORKS, PayTo};
use facilitator::{ByNamespace, Local, PaymentFacilitator, Remote};
use mpp::{EvmCharge, MppConfig};
use paywall::{Clock, FACILITATOR_TIMEOUT, Paywall, SystemClock};
use sandbox::{SandboxChain, SandboxOptions};
use sandbox_solana::SolanaSandbox;
use store::Store;

/// A hosted server's payment side, ready to serve.
pub struct Hosted {
    /// The paywall every paid route goes through.
    pub paywall: Arc<Paywall>,
    /// The sandbox chain (kept alive as long as the server runs).
    pub sandbox: Option<SandboxChain>,
    /// The sandbox's Solana side, when its validator is installed.
    pub solana_sandbox: Option<SolanaSandbox>,
    /// The engine context, in the sandbox with `base` read from the sandbox chain.
    pub ctx: Context,
}

/// How the paywall runs, beyond its configuration.
#[derive(Clone)]
pub struct HostedOptions {
    /// Longest an operation may take (answered 504 past it).
    pub run_timeout: Duration,
    /// Longest one facilitator call may take (answered 503 past it, nothing settled).
    pub facilitator_timeout: Duration,
    /// The clock of free pools' UTC days.
    pub clock: Arc<dyn Clock>,
}

impl Default for HostedOptions {
    fn default() -> Self {
        HostedOptions {
            run_timeout: Duration::from_secs(120),
            facilitator_timeout: FACILITATOR_TIMEOUT,
            clock: Arc::new(SystemClock),
        }
    }
}

/// Why hosted mode cannot start.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HostedError(pub String);

impl Hosted {
    /// Hosted mode paid through the configured remote facilitator.
    pub async fn start(
        config: HostedConfig,
        catalog: &Catalog,
        ctx: Context,
        options: HostedOptions,
    ) -> Result<Hosted, HostedError> {
        let url = config
            .facilitator_url
            .clone()
            .ok_or_else(|| HostedError("hosted mode needs a facilitator URL (PAPERCHAIN_FACILITATOR_URL)".into()))?;
        let facilitator = Remote::new(&url, options.facilitator_timeout).map_err(HostedError)?;
        let paywall = build(config, catalog, &ctx, Arc::new(facilitator), options).await?;
        if let Err(e) = paywall.learn_supported().await {
            // Solana needs it (its fee payer) and `upto` (its settling address); `exact` on
            // the EVM networks is offered regardless.
            tracing::warn!(
                error = %e,
                "the facilitator's supported networks are unknown; Solana and `upto` are not offered"
            );
        }
        Ok(Hosted { paywall: Arc::new(paywall), sandbox: None, solana_sandbox: None, ctx })
    }

    /// The sandbox: anvil at chain id 8453 with the test USDC at the Base USDC address, a
    /// funded payer, the facilitator in process, payments to a fresh address on Base. The
    /// `base` chain of chain routes reads the sandbox chain. With the local Solana validator
    /// installed (`cargo xtask setup`), Solana too: the test USDC at the mainnet USDC mint, a
    /// funded payer, payments to a fresh address on Solana mainnet's network, and the
    /// `mainnet` cluster of the Solana routes is the sandbox validator.
    pub async fn start_sandbox(
        mut config: HostedConfig,
        catalog: &Catalog,
        ctx: Context,
        options: HostedOptions,
        sandbox: SandboxOptions,
    ) -> Result<Hosted, HostedError> {
        // A fresh store each run: free-pool counts and claims of an earlier run were made on
        // an earlier chain, and would leave a new try with its pool used up. The sandbox's
        // store is always its own file (config.rs), so nothing else is ever removed here.
        remove_store_files(&config.database)?;
        let solana = match sandbox.solana_side() {
            Ok(Some(binary)) => Some(
                SolanaSandbox::start(
                    &binary,
                    sandbox.solana_payer_funds,
                    sandbox.startup_timeout.max(Duration::from_secs(60)),
                )
                .await
                .map_err(|e| HostedError(e.to_string()))?,
            ),
            Ok(None) => None,
            Err(why) => return Err(HostedError(why)),
        };
        let chain = SandboxChain::start(sandbox).await.map_err(|e| HostedError(e.to_string()))?;
        let evm: Arc<dyn PaymentFacilitator> =
            Arc::new(Local(chain.facilitator().await.map_err(|e| HostedError(e.to_string()))?));
        config.pay_to = vec![PayTo { network: NETWORKS[0].clone(), address: chain.pay_to().to_checksum(None) }];
        config.facilitator_url = None;
        let rpc = chain.rpc_url().to_string();
        let chains = paperchain_engine::evm::Chains::try_from_vars(|key| {
            if key == "PAPERCHAIN_RPC_BASE" { Some(rpc.clone()) } else { std::env::var(key).ok() }
        })
        .map_err(|e| HostedError(e.to_string()))?;
        let mut ctx = Context { chains: Arc::new(chains), ..ctx };
        let facilitator: Arc<dyn PaymentFacilitator> = match &solana {
            Some(solana) => {
                let solana_network = NETWORKS.iter().find(|n| n.caip2.starts_with("solana:")).cloned();
                let solana_network = solana_network.ok_or_else(|| HostedError("no Solana network is known".into()))?;
                config.pay_to.push(PayTo { network: solana_network, address: solana.pay_to() });
                ctx.solana = Arc::new(solana.clusters());
                let facilitator = solana.paywall_facilitator().await.map_err(|e| HostedError(e.to_string()))?;
                Arc::new(ByNamespace(vec![("eip155", evm), ("solana", facilitator)]))
            }
            None => evm,
        };
        let claim_every = config.claim_every;
        let escrow = chain.escrow().map_err(|e| HostedError(e.to_string()))?;
        let channels =
            batch::Channels::new(escrow, NETWORKS[0].caip2, 900, claim_every).refunding_after(config.channel_idle);
        let paywall = build(config, catalog, &ctx, facilitator, options).await?.with_batch(channels);
        // Solana is offered once the facilitator has named its fee payer, `upto` once it has
        // named the address that settles it.
        paywall.learn_supported().await.map_err(HostedError)?;
        Ok(Hosted { paywall: Arc::new(paywall), sandbox: Some(chain), solana_sandbox: solana, ctx })
    }

    /// Closes the store and stops the sandbox chain, waiting until both are gone. The
    /// paywall must not be in use any more (the server using it has stopped).
    pub async fn stop(self) {
        self.paywall.store().close().await;
        if let Some(chain) = self.sandbox
            && let Err(e) = chain.stop().await
        {
            tracing::warn!(error = %e, "stopping the sandbox chain failed");
        }
        if let Some(solana) = self.solana_sandbox
            && let Err(e) = solana.stop().await
        {
            tracing::warn!(error = %e, "stopping the sandbox's Solana validator failed");
        }
    }

    /// The sandbox's first line on stdout: where everything is, including the test payer's
    /// key (test money on a throwaway chain, printed on purpose).
    pub fn sandbox_line(&self, base_url: &str) -> Option<Value> {
        let chain = self.sandbox.as_ref()?;
        Some(json!({
            "sandbox": {
                "base_url": base_url,
                "rpc_url": chain.rpc_url().as_str().trim_end_matches('/'),
                "chain_id": chain.chain_id(),
                "token": chain.token().to_checksum(None),
                "payer": chain.payer().to_checksum(None),
                "payer_private_key": chain.payer_private_key(),
                "pay_to": chain.pay_to().to_checksum(None),
                "solana": self.solana_sandbox.as_ref().map(|solana| json!({
                    "network": solana.network().to_string(),
                    "rpc_url": solana.rpc_url().as_str().trim_end_matches('/'),
                    "genesis": solana.genesis(),
                    "token": sandbox_solana::USDC_MINT,
                    "payer": solana.payer(),
                    "payer_secret_key": solana.payer_secret_key(),
                    "pay_to": solana.pay_to(),
                    "fee_payer": solana.fee_payer(),
                })),
            }
        }))
    }
}

/// Removes a SQLite store and its WAL and shared-memory files, where they exist.
fn remove_store_files(database: &std::path::Path) -> Result<(), HostedError> {
    for suffix in ["", "-wal", "-shm"] {
        let mut name = database.as_os_str().to_owned();
        name.push(suffix);
        match std::fs::remove_file(&name) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(HostedError(format!(
                    "emptying the sandbox store {}: {e}",
                    std::path::Path::new(&name).display()
                )));
            }
        }
    }
    Ok(())
}

async fn build(
    config: HostedConfig,
    catalog: &Catalog,
    ctx: &Context,
    facilitator: Arc<dyn PaymentFacilitator>,
    options: HostedOptions,
) -> Result<Paywall, HostedError> {
    if let Some(dir) = config.database.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| HostedError(format!("creating {}: {e}", dir.display())))?;
    }
    let store = Store::open(&config.database).await.map_err(|e| HostedError(e.to_string()))?;
    let mpp = mpp_config(&config)?;
    let mut paywall = Paywall::new(config, catalog, ctx, facilitator, store, options.clock)
        .with_run_timeout(options.run_timeout)
        .with_facilitator_timeout(options.facilitator_timeout);
    if let Some(mpp) = mpp {
        paywall = paywall.with_mpp(mpp);
    }
    Ok(paywall)
}

/// MPP's `evm` charge on the primary EVM network this server is paid on; none when the
/// server is paid on Solana only.
fn mpp_config(config: &HostedConfig) -> Result<Option<MppConfig>, HostedError> {
    let Some(pay_to) = config.pay_to.iter().find(|p| p.network.eip712.is_some()) else {
        return Ok(None);
    };
    let (name, version) = pay_to.network.eip712.unwrap_or_default();
    let chain_id = pay_to
        .network
        .caip2
        .trim_start_matches("eip155:")
        .parse::<u64>()
        .map_err(|_| HostedError(format!("network {} has no numeric chain id", pay_to.network.caip2)))?;
    let address = |text: &str, what: &str| {
        text.parse::<Address>().map_err(|_| HostedError(format!("{what} `{text}` is not an address")))
    };
    let mut mpp = MppConfig::new(config.public_url.host_str().unwrap_or("paperchain"));
    if let Some(secret) = config.mpp_secret {
        mpp.secret = secret;
    }
    mpp.evm = Some(EvmCharge {
        chain_id,
        asset: address(pay_to.network.asset, "asset")?,
        recipient: address(&pay_to.address, "pay_to")?,
        token_name: name.into(),
        token_version: version.into(),
        decimals: 6,
    });
    mpp.validate().map_err(HostedError)?;
    Ok(Some(mpp))
}
