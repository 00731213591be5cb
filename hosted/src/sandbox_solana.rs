//! The Solana side of the sandbox: a throwaway local validator (`paperchain-surfnet
//! --bare`, offline) standing in for Solana mainnet, a test USDC at the mainnet USDC mint
//! address, a funded payer, and an in-process x402 v2 facilitator (x402-chain-solana's
//! `exact` scheme) whose fee payer co-signs and sends the payer's transfer.
//!
//! Test money on a chain that dies with the process: the payer's key is handed out (the
//! sandbox prints it), and so would the fee payer's be if anyone asked. The payer, the
//! payee and the fee payer are fresh random keys on every start.
//!
//! The validator is seeded with its own test-only calls (`surfnet_setAccount`,
//! `surfnet_setTokenAccount`): the mint with a random mint authority and a supply equal to
//! what the payer holds, the payer's and the payee's associated token accounts, SOL for the
//! fee payer. Payments then move tokens by real signed transactions.
//!
//! Its facilitator sits behind `facilitator::NodeChecked`: a refusal while the validator
//! does not answer is an outage (503), not the payment's fault.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use paperchain_engine::solana::{Cluster, Clusters, Network};
use paperchain_protocol::exact_svm::{self, SigningKey};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};
use url::Url;
use x402_chain_solana::KnownNetworkSolana as _;
use x402_chain_solana::V2SolanaExact;
use x402_chain_solana::chain::{SolanaChainProvider, SolanaChainReference};
use x402_types::chain::ChainId;
use x402_types::scheme::{X402SchemeFacilitator, X402SchemeFacilitatorBuilder};

use super::facilitator::{Local, NodeChecked, PaymentFacilitator};
use super::sandbox::{FacilitatorChain, SandboxError, SandboxFacilitator, one_scheme_facilitator};

/// The mainnet USDC mint, where the sandbox puts its test USDC so price tags name the real asset.
pub const USDC_MINT: &str = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";

/// USDC's decimals.
const USDC_DECIMALS: u8 = 6;

/// The validator's slot time: 150 slots of 400 ms give a signed payment about a minute to
/// be settled, as on mainnet.
pub const SLOT_TIME_MS: u64 = 400;

/// SOL given to the fee payer for transaction fees (lamports).
const FEE_PAYER_LAMPORTS: u64 = 10_000_000_000;

/// The most compute units and the highest unit price (micro-lamports) the facilitator's fee
/// payer accepts to pay for: a transfer with a memo needs a few tens of thousands of units.
const MAX_COMPUTE_UNIT_LIMIT: u32 = 200_000;
const MAX_COMPUTE_UNIT_PRICE: u64 = 100_000;

/// An SPL mint account is 82 bytes.
const MINT_LEN: usize = 82;

/// The running Solana side; dropping it stops the validator.
pub struct SolanaSandbox {
    child: Child,
    rpc_url: Url,
    genesis: String,
    cluster: Arc<Cluster>,
    payer: SigningKey,
    pay_to: exact_svm::Address,
    fee_payer: SigningKey,
}

impl std::fmt::Debug for SolanaSandbox {
    // Hand-written so that no key reaches a log through `{:?}`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SolanaSandbox")
            .field("rpc_url", &self.rpc_url.as_str())
            .field("payer", &exact_svm::to_base58(&exact_svm::address_of(&self.payer)))
            .field("pay_to", &exact_svm::to_base58(&self.pay_to))
            .finish_non_exhaustive()
    }
}

impl SolanaSandbox {
    /// Starts the validator at `binary`, creates the test USDC and gives the payer `payer_funds`.
    pub async fn start(binary: &Path, payer_funds: u64, timeout: Duration) -> Result<SolanaSandbox, SandboxError> {
        let start_error = |detail: String| SandboxError::SurfnetStart { path: binary.to_path_buf(), detail };
        let mut child = Command::new(binary)
            .args(["--bare", "--slot-time-ms", &SLOT_TIME_MS.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| SandboxError::Spawn { path: binary.to_path_buf(), source })?;
        let stdout = child.stdout.take().ok_or_else(|| start_error("its stdout was not captured".into()))?;
        let line = tokio::time::timeout(timeout, BufReader::new(stdout).lines().next_line())
            .await
            .map_err(|_| start_error(format!("it printed nothing within {} s", timeout.as_secs())))?
            .map_err(|e| start_error(format!("reading its output: {e}")))?
            .ok_or_else(|| start_error("it exited before saying where it listens".into()))?;
        let started: Value = serde_json::from_str(&line).map_err(|_| start_error(format!("it printed {line:?}")))?;
        let (Some(rpc), Some(genesis)) = (started["rpc"].as_str(), started["genesis"].as_str()) else {
            return Err(start_error(format!("it printed {line:?}, without `rpc` and `genesis`")));
        };
        let rpc_url = Url::parse(rpc).map_err(|e| start_error(format!("its URL {rpc}: {e}")))?;
        let clusters = clusters_at(&rpc_url, genesis);
        let cluster = clusters.get(Network::Mainnet).map_err(|e| start_error(e.message))?;
        let sandbox = SolanaSandbox {
            child,
            rpc_url,
            genesis: genesis.to_string(),
            cluster,
            payer: random_key(),
            pay_to: exact_svm::address_of(&random_key()),
            fee_payer: random_key(),
        };
        sandbox.seed(payer_funds).await?;
        Ok(sandbox)
    }

    async fn seed(&self, payer_funds: u64) -> Result<(), SandboxError> {
        let mint = exact_svm::program(USDC_MINT);
        let authority = exact_svm::address_of(&random_key());
        let rent: u64 = self.call("getMinimumBalanceForRentExemption", json!([MINT_LEN])).await.and_then(|v| {
            v.as_u64().ok_or_else(|| rpc_failure("getMinimumBalanceForRentExemption", format!("answered {v}")))
        })?;
        let mut data = Vec::with_capacity(MINT_LEN);
        data.extend_from_slice(&1u32.to_le_bytes());
        data.extend_from_slice(&authority);
        data.extend_from_slice(&payer_funds.to_le_bytes());
        data.push(USDC_DECIMALS);
        data.push(1);
        data.extend_from_slice(&[0; 36]);
        let system = "11111111111111111111111111111111";
        self.call(
            "surfnet_setAccount",
            json!([USDC_MINT, {"lamports": rent, "data": hex::encode(&data), "owner": exact_svm::TOKEN_PROGRAM, "executable": false}]),
        )
        .await?;
        let fee_payer = exact_svm::to_base58(&exact_svm::address_of(&self.fee_payer));
        self.call("surfnet_setAccount", json!([fee_payer, {"lamports": FEE_PAYER_LAMPORTS, "owner": system}])).await?;
        for (owner, amount) in [(exact_svm::address_of(&self.payer), payer_funds), (self.pay_to, 0)] {
            self.call(
                "surfnet_setTokenAccount",
                json!([exact_svm::to_base58(&owner), exact_svm::to_base58(&mint), {"amount": amount}, exact_svm::TOKEN_PROGRAM]),
            )
            .await?;
        }
        Ok(())
    }

    async fn call(&self, method: &str, params: Value) -> Result<Value, SandboxError> {
        self.cluster.raw_request(method, params).await.map_err(|e| rpc_failure(method, e.message))
    }

    /// The validator's JSON-RPC endpoint.
    pub fn rpc_url(&self) -> &Url {
        &self.rpc_url
    }

    /// The validator's genesis hash (new on every start).
    pub fn genesis(&self) -> &str {
        &self.genesis
    }

    /// The CAIP-2 network price tags name: Solana mainnet's.
    pub fn network(&self) -> ChainId {
        SolanaChainReference::solana().into()
    }

    /// The Solana clusters of the chain routes: mainnet is this validator.
    pub fn clusters(&self) -> Clusters {
        clusters_at(&self.rpc_url, &self.genesis)
    }

    /// The payer's address.
    pub fn payer(&self) -> String {
        exact_svm::to_base58(&exact_svm::address_of(&self.payer))
    }

    /// The payer's key as Solana tools write it: base58 of the 64 bytes of secret and
    /// public key. Test money, shared on purpose.
    pub fn payer_secret_key(&self) -> String {
        bs58_keypair(&self.payer)
    }

    /// The payer's key, for clients in the same process (tests).
    pub fn payer_key(&self) -> SigningKey {
        self.payer.clone()
    }

    /// Where payments go: a fresh wallet address.
    pub fn pay_to(&self) -> String {
        exact_svm::to_base58(&self.pay_to)
    }

    /// The facilitator's fee payer.
    pub fn fee_payer(&self) -> String {
        exact_svm::to_base58(&exact_svm::address_of(&self.fee_payer))
    }

    /// The test USDC balance of `owner`'s associated token account (0 when it has none).
    pub async fn balance_of(&self, owner: &str) -> Result<u64, SandboxError> {
        let accounts = self
            .call(
                "getTokenAccountsByOwner",
                json!([owner, {"mint": USDC_MINT}, {"encoding": "jsonParsed", "commitment": "confirmed"}]),
            )
            .await?;
        let mut total = 0u64;
        for account in accounts["value"].as_array().into_iter().flatten() {
            let amount = &account["account"]["data"]["parsed"]["info"]["tokenAmount"]["amount"];
            total += amount.as_str().and_then(|a| a.parse::<u64>().ok()).ok_or_else(|| {
                rpc_failure("getTokenAccountsByOwner", format!("a token account without an amount: {account}"))
            })?;
        }
        Ok(total)
    }

    /// The fee payer's SOL, in lamports.
    pub async fn fee_payer_lamports(&self) -> Result<u64, SandboxError> {
        let balance = self.call("getBalance", json!([self.fee_payer(), {"commitment": "confirmed"}])).await?;
        balance["value"].as_u64().ok_or_else(|| rpc_failure("getBalance", format!("answered {balance}")))
    }

    /// [`Self::facilitator`] as the paywall uses it: a refusal while the validator does not
    /// answer is an outage (503), not the payment's fault (402).
    pub async fn paywall_facilitator(&self) -> Result<Arc<dyn PaymentFacilitator>, SandboxError> {
        let cluster = Arc::clone(&self.cluster);
        let node_answers = move || -> Pin<Box<dyn Future<Output = bool> + Send>> {
            let cluster = Arc::clone(&cluster);
            Box::pin(async move { cluster.raw_request("getSlot", json!([])).await.is_ok() })
        };
        Ok(Arc::new(NodeChecked { inner: Local(self.facilitator().await?), node_answers: Box::new(node_answers) }))
    }

    /// An in-process x402 v2 facilitator (scheme `exact`, Solana mainnet's network) over
    /// this validator, paying fees from [`Self::fee_payer`].
    pub async fn facilitator(&self) -> Result<SandboxFacilitator, SandboxError> {
        let keypair = solana_keypair::Keypair::new_from_array(self.fee_payer.to_bytes());
        let provider = SolanaChainProvider::new(
            keypair,
            self.rpc_url.to_string(),
            None,
            SolanaChainReference::solana(),
            MAX_COMPUTE_UNIT_LIMIT,
            MAX_COMPUTE_UNIT_PRICE,
        )
        .await
        .map_err(|e| SandboxError::Facilitator(format!("the Solana provider at {}: {e}", self.rpc_url)))?;
        one_scheme_facilitator(FacilitatorChain(Arc::new(provider)), V2SolanaExact)
    }

    /// Stops the validator and waits for it to exit.
    pub async fn stop(mut self) -> Result<(), SandboxError> {
        // Closing its stdin asks it to stop; the kill backs that up.
        drop(self.child.stdin.take());
        if tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await.is_err() {
            let _ = self.child.start_kill();
        }
        self.child
            .wait()
            .await
            .map(drop)
            .map_err(|e| SandboxError::Rpc { what: "stopping the Solana validator".into(), detail: e.to_string() })
    }
}

/// The clusters with mainnet at `rpc_url` serving `genesis`; devnet as the environment says.
fn clusters_at(rpc_url: &Url, genesis: &str) -> Clusters {
    let rpc_var = Network::Mainnet.rpc_env_var();
    let genesis_var = Network::Mainnet.genesis_env_var();
    Clusters::from_vars(|key| {
        if key == rpc_var {
            Some(rpc_url.to_string())
        } else if key == genesis_var {
            Some(genesis.to_string())
        } else {
            std::env::var(key).ok()
        }
    })
}

fn random_key() -> SigningKey {
    SigningKey::from_bytes(&rand::random::<[u8; 32]>())
}

fn bs58_keypair(key: &SigningKey) -> String {
    exact_svm::to_base58(&key.to_keypair_bytes())
}

fn rpc_failure(what: &str, detail: String) -> SandboxError {
    SandboxError::Rpc { what: format!("Solana sandbox: {what}"), detail }
}

/// Where `paperchain-surfnet` is: `$PAPERCHAIN_SURFNET`, else
/// `$PAPERCHAIN_TOOLS/bin/paperchain-surfnet` (tools directory `$HOME/.cache/paperchain/tools`
/// by default, where `cargo xtask setup` builds it); `None` when it is in neither place.
pub fn find_surfnet() -> Option<PathBuf> {
    let set = |key: &str| std::env::var_os(key).filter(|v| !v.is_empty());
    if let Some(path) = set("PAPERCHAIN_SURFNET") {
        return Some(PathBuf::from(path));
    }
    let tools = set("PAPERCHAIN_TOOLS")
        .map(PathBuf::from)
        .or_else(|| set("HOME").map(|home| PathBuf::from(home).join(".cache/paperchain/tools")))?;
    Some(tools.join("bin/paperchain-surfnet")).filter(|path| path.is_file())
}

impl X402SchemeFacilitatorBuilder<&FacilitatorChain<SolanaChainProvider>> for V2SolanaExact {
    fn build(
        &self,
        provider: &FacilitatorChain<SolanaChainProvider>,
        config: Option<serde_json::Value>,
    ) -> Result<Box<dyn X402SchemeFacilitator>, Box<dyn std::error::Error>> {
        self.build(Arc::clone(&provider.0), config)
    }
}
