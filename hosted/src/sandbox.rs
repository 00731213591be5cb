//! The chain behind `paperchain serve --hosted --sandbox`: a throwaway anvil serving chain id
//! 8453 (Base), a test USDC with EIP-3009 at the Base USDC address, a funded test payer, and
//! an in-process x402 v2 facilitator that verifies and settles against it.
//!
//! Everything here is test money on a chain that dies with the process, which is why the
//! payer's private key is handed out (the sandbox prints it so that clients can pay).
//!
//! Accounts: the payer and `pay_to` are fresh random keys on every start, so balances seen
//! by a client are never left over from an earlier run. The facilitator signs with anvil's
//! dev account #0 and the token's owner (the only minter) is dev account #1; both are funded
//! with `anvil_setBalance`, so they work whatever mnemonic anvil was started with, and they
//! are separate so that minting never races the facilitator's nonce bookkeeping.
//!
//! Payments signed by an EOA are supported: `exact` with EIP-3009, and `upto` through
//! Permit2 (the payer's Permit2 allowance given by an EIP-2612 permit the facilitator
//! submits, x402's `eip2612GasSponsoring`). The x402 chain provider refuses to start unless
//! the EIP-6492 validator, Permit2 and the x402 Permit2 proxies have code; the validator and
//! the `exact` Permit2 proxy get code that always reverts, so counterfactual-wallet payments
//! and `exact` over Permit2 are refused instead of pretending to work.
//!
//! The contracts are ours, in `hosted/contracts/`: the token (`SandboxUsdc.sol`), the
//! signature-transfer part of Permit2 (`SandboxPermit2.sol`) and the `upto` proxy
//! (`SandboxUptoProxy.sol`), placed at the canonical addresses x402 names. Their compiled
//! artifacts are committed beside them (written by `hosted/contracts/build.js`) and embedded
//! here.

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::str::FromStr as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alloy::network::EthereumWallet;
use alloy::primitives::{Address, B256, Bytes, U256};
use alloy::providers::{DynProvider, Provider, ProviderBuilder};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol;
use paperchain_protocol::batch_evm;
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, BufReader};
use tokio::process::{Child, Command};
use url::Url;
use x402_chain_eip155::chain::config::{Eip155ChainConfig, Eip155ChainConfigInner, EvmPrivateKey, RpcConfig};
use x402_chain_eip155::chain::permit2::{EXACT_PERMIT2_PROXY_ADDRESS, PERMIT2_ADDRESS, UPTO_PERMIT2_PROXY_ADDRESS};
use x402_chain_eip155::chain::{Eip155ChainProvider, Eip155ChainReference, Eip155TokenDeployment};
use x402_chain_eip155::v1_eip155_exact::VALIDATOR_ADDRESS;
use x402_chain_eip155::{KnownNetworkEip155 as _, chain::AssetTransferMethod};
use x402_chain_eip155::{V2Eip155Exact, V2Eip155Upto};
use x402_facilitator_local::FacilitatorLocal;

use crate::batch::escrow::Escrow;
use x402_types::chain::{ChainId, ChainIdPattern, ChainProviderOps, ChainRegistry, FromConfig as _};
use x402_types::config::LiteralOrEnv;
use x402_types::networks::USDC;
use x402_types::scheme::{
    SchemeBlueprints, SchemeConfig, SchemeHandlerSlug, SchemeRegistry, X402SchemeBlueprint, X402SchemeFacilitator,
    X402SchemeFacilitatorBuilder, X402SchemeId as _,
};

/// The chain id the sandbox serves: Base mainnet, so price tags name the real network.
pub const SANDBOX_CHAIN_ID: u64 = 8453;

/// 1,000 USDC in base units (6 decimals): what the payer gets unless told otherwise.
pub const DEFAULT_PAYER_FUNDS: u64 = 1_000_000_000;

/// The in-process facilitator [`SandboxChain::facilitator`] returns; it implements
/// [`x402_types::facilitator::Facilitator`] (so does `Arc` of it).
pub type SandboxFacilitator = FacilitatorLocal<SchemeRegistry>;

/// The compiled contracts (hosted/contracts/build.js writes them from their sources): the
/// artifact's JSON, and its source for the staleness check.
const TOKEN: (&str, &str) =
    (include_str!("../contracts/SandboxUsdc.json"), include_str!("../contracts/SandboxUsdc.sol"));
const PERMIT2: (&str, &str) =
    (include_str!("../contracts/SandboxPermit2.json"), include_str!("../contracts/SandboxPermit2.sol"));
const UPTO_PROXY: (&str, &str) =
    (include_str!("../contracts/SandboxUptoProxy.json"), include_str!("../contracts/SandboxUptoProxy.sol"));
/// The batch-settlement escrow (docs/batch-settlement.md), placed at the escrow and at both
/// deposit collectors (one code; what a copy does depends on its address).
const BATCH_ESCROW: (&str, &str) =
    (include_str!("../contracts/SandboxBatchEscrow.json"), include_str!("../contracts/SandboxBatchEscrow.sol"));

/// anvil's dev account #0 (default mnemonic): the facilitator's signer.
const FACILITATOR_KEY: &str = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

/// anvil's dev account #2 (default mnemonic): the service's batch-settlement receiver
/// authorizer, which submits deposits, claims and refunds (a key of its own: transactions
/// from the facilitator's key would race it for nonces).
const CHANNELS_KEY: &str = "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a";

/// anvil's dev account #1 (default mnemonic): the token's owner, the only minter.
const MINTER_KEY: &str = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";

/// Ether given to the facilitator and the minter: plenty for gas on a throwaway chain.
const GAS_MONEY_WEI: u128 = 1_000 * 1_000_000_000_000_000_000;

/// PUSH1 0 PUSH1 0 REVERT: the code of the placeholder contracts.
const ALWAYS_REVERTS: [u8; 5] = [0x60, 0x00, 0x60, 0x00, 0xfd];

/// How many of anvil's last stderr lines an error about a failed start quotes.
const STDERR_TAIL_LINES: usize = 20;

sol! {
    #[sol(rpc)]
    interface ISandboxUsdc {
        function initialize(address initialOwner) external;
        function mint(address to, uint256 value) external returns (bool);
        function balanceOf(address holder) external view returns (uint256);
    }
}

/// Why the sandbox chain could not start or answer.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// No anvil binary anywhere we look.
    #[error("anvil not found (looked at {looked_at}): run `cargo xtask setup` or set PAPERCHAIN_ANVIL")]
    AnvilNotFound {
        /// The places searched, comma-separated.
        looked_at: String,
    },
    /// `$PAPERCHAIN_ANVIL` names something that is not a file.
    #[error("PAPERCHAIN_ANVIL is {0}, which is not a file: point it at an anvil binary or unset it")]
    AnvilEnvNotAFile(PathBuf),
    /// The anvil process could not be started.
    #[error("could not start {path}: {source}")]
    Spawn {
        /// The binary.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// anvil exited, or never said where it listens, before it was ready.
    #[error("anvil at {path} did not start: {detail}")]
    AnvilStart {
        /// The binary.
        path: PathBuf,
        /// What went wrong, with anvil's last stderr lines when it printed any.
        detail: String,
    },
    /// A JSON-RPC call to the sandbox chain failed.
    #[error("sandbox chain: {what} failed: {detail}")]
    Rpc {
        /// The step.
        what: String,
        /// The node's or the transport's answer.
        detail: String,
    },
    /// The local Solana validator did not start.
    #[error("the Solana validator at {path} did not start: {detail}")]
    SurfnetStart {
        /// The binary.
        path: PathBuf,
        /// What went wrong.
        detail: String,
    },
    /// The embedded token artifact is unreadable (a bad rebuild of SandboxUsdc.json).
    #[error("hosted/contracts/SandboxUsdc.json is unusable ({0}); rebuild it with hosted/contracts/build.js")]
    Artifact(String),
    /// The in-process facilitator could not be built.
    #[error("sandbox facilitator: {0}")]
    Facilitator(String),
}

/// How to start the sandbox chain.
#[derive(Clone, Debug)]
pub struct SandboxOptions {
    /// The anvil binary; [`find_anvil`] when `None`.
    pub anvil: Option<PathBuf>,
    /// The loopback port anvil listens on; 0 lets it pick a free one.
    pub port: u16,
    /// USDC base units (6 decimals) minted to the payer.
    pub payer_funds: U256,
    /// How long anvil may take to start and answer.
    pub startup_timeout: Duration,
    /// The Solana side: [`SolanaSide::Auto`] starts it when the validator is installed.
    pub solana: SolanaSide,
    /// USDC base units given to the Solana payer.
    pub solana_payer_funds: u64,
    /// How often the chain's clock is looked at: anvil mines a block only for a
    /// transaction, so an idle chain's latest block grows old, and an authorization signed
    /// now would be "not yet valid" against it. A block is mined when the latest is older
    /// than this.
    pub clock_every: Duration,
}

/// Whether the sandbox has a Solana side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SolanaSide {
    /// When `paperchain-surfnet` is found ([`super::sandbox_solana::find_surfnet`]); without
    /// it the sandbox is paid on Base only, and says so in the log.
    Auto,
    /// Never.
    Off,
    /// Always, with this validator binary.
    With(PathBuf),
}

impl SandboxOptions {
    /// The validator to start, if any; an error when one was asked for and is not there.
    pub fn solana_side(&self) -> Result<Option<PathBuf>, String> {
        match &self.solana {
            SolanaSide::Off => Ok(None),
            SolanaSide::With(path) if path.is_file() => Ok(Some(path.clone())),
            SolanaSide::With(path) => Err(format!(
                "the Solana validator {} is not there: run `cargo xtask setup`, or set PAPERCHAIN_SURFNET",
                path.display()
            )),
            SolanaSide::Auto => {
                let found = super::sandbox_solana::find_surfnet();
                if found.is_none() {
                    tracing::warn!(
                        "the sandbox is paid on Base only: paperchain-surfnet (the local Solana validator) is not \
                         installed; `cargo xtask setup` builds it"
                    );
                }
                Ok(found)
            }
        }
    }
}

impl Default for SandboxOptions {
    fn default() -> Self {
        SandboxOptions {
            anvil: None,
            port: 0,
            payer_funds: U256::from(DEFAULT_PAYER_FUNDS),
            startup_timeout: Duration::from_secs(30),
            solana: SolanaSide::Auto,
            solana_payer_funds: DEFAULT_PAYER_FUNDS,
            clock_every: Duration::from_secs(15),
        }
    }
}

/// A running sandbox chain; dropping it kills anvil (facilitators built from it then fail).
pub struct SandboxChain {
    /// Killed on drop (`kill_on_drop`), or by [`SandboxChain::stop`].
    child: Child,
    /// The tasks draining anvil's stdout and stderr; they end when anvil does.
    readers: Vec<tokio::task::JoinHandle<()>>,
    rpc_url: Url,
    token: Address,
    payer: PrivateKeySigner,
    pay_to: Address,
    facilitator_signer: Address,
    /// Signs as the token's owner; reads go through it too.
    provider: DynProvider,
}

impl fmt::Debug for SandboxChain {
    // Hand-written so that the payer's key never reaches a log through `{:?}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SandboxChain")
            .field("rpc_url", &self.rpc_url.as_str())
            .field("chain_id", &SANDBOX_CHAIN_ID)
            .field("token", &self.token)
            .field("payer", &self.payer.address())
            .field("pay_to", &self.pay_to)
            .field("facilitator_signer", &self.facilitator_signer)
            .finish_non_exhaustive()
    }
}

impl SandboxChain {
    /// Starts anvil, puts the test USDC at the Base USDC address, and funds a fresh payer.
    pub async fn start(options: SandboxOptions) -> Result<SandboxChain, SandboxError> {
        let [token_code, permit2_code, upto_code, escrow_code] =
            [TOKEN, PERMIT2, UPTO_PROXY, BATCH_ESCROW].map(|(json, _)| Artifact::load(json).map(|a| a.runtime));
        let (token_code, permit2_code, upto_code, escrow_code) = (token_code?, permit2_code?, upto_code?, escrow_code?);
        let anvil = match options.anvil {
            Some(path) => path,
            None => find_anvil()?,
        };
        let deadline = tokio::time::Instant::now() + options.startup_timeout;
        let (child, mut readers, address) = spawn_anvil(&anvil, options.port, deadline).await?;
        let rpc_url = Url::parse(&format!("http://{address}"))
            .map_err(|e| SandboxError::AnvilStart { path: anvil.clone(), detail: format!("address {address}: {e}") })?;

        let minter = signer(MINTER_KEY)?;
        let facilitator_signer = signer(FACILITATOR_KEY)?.address();
        let provider =
            ProviderBuilder::new().wallet(EthereumWallet::from(minter.clone())).connect_http(rpc_url.clone());
        let provider = provider.erased();
        wait_until_answering(&provider, &anvil, deadline).await?;
        readers.push(tokio::spawn(keep_clock(provider.clone(), options.clock_every)));

        let token = base_usdc().address;
        let sandbox = SandboxChain {
            child,
            readers,
            rpc_url,
            token,
            payer: PrivateKeySigner::random(),
            pay_to: PrivateKeySigner::random().address(),
            facilitator_signer,
            provider,
        };
        sandbox.set_code(token, token_code).await?;
        sandbox.set_code(PERMIT2_ADDRESS, permit2_code).await?;
        sandbox.set_code(UPTO_PERMIT2_PROXY_ADDRESS, upto_code).await?;
        for at in [batch_evm::ESCROW, batch_evm::ERC3009_COLLECTOR, batch_evm::PERMIT2_COLLECTOR] {
            sandbox.set_code(at, escrow_code.clone()).await?;
        }
        for placeholder in [VALIDATOR_ADDRESS, EXACT_PERMIT2_PROXY_ADDRESS] {
            sandbox.set_code(placeholder, Bytes::from_static(&ALWAYS_REVERTS)).await?;
        }
        for account in [minter.address(), facilitator_signer, signer(CHANNELS_KEY)?.address()] {
            sandbox.set_balance(account, U256::from(GAS_MONEY_WEI)).await?;
        }
        let usdc = ISandboxUsdc::new(token, &sandbox.provider);
        let pending =
            usdc.initialize(minter.address()).send().await.map_err(|e| rpc_error("initialising the token", e))?;
        confirm(pending, "initialising the token").await?;
        sandbox.mint(sandbox.payer.address(), options.payer_funds).await?;
        Ok(sandbox)
    }

    /// `http://127.0.0.1:<port>`, anvil's JSON-RPC endpoint.
    pub fn rpc_url(&self) -> &Url {
        &self.rpc_url
    }

    /// Always [`SANDBOX_CHAIN_ID`] (8453).
    pub fn chain_id(&self) -> u64 {
        SANDBOX_CHAIN_ID
    }

    /// The CAIP-2 network, `eip155:8453`.
    pub fn network(&self) -> ChainId {
        Eip155ChainReference::new(SANDBOX_CHAIN_ID).as_chain_id()
    }

    /// The test USDC: the Base USDC address, 0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913.
    pub fn token(&self) -> Address {
        self.token
    }

    /// The funded test payer.
    pub fn payer(&self) -> Address {
        self.payer.address()
    }

    /// The payer's private key, 0x and 64 hex digits: test money, shared on purpose.
    pub fn payer_private_key(&self) -> String {
        format!("0x{}", hex::encode(self.payer.to_bytes()))
    }

    /// The payer as a signer, for clients in the same process (tests).
    pub fn payer_signer(&self) -> PrivateKeySigner {
        self.payer.clone()
    }

    /// Where payments go: a fresh address with no code.
    pub fn pay_to(&self) -> Address {
        self.pay_to
    }

    /// The account the facilitator sends settlements from (anvil dev account #0).
    pub fn facilitator_signer(&self) -> Address {
        self.facilitator_signer
    }

    /// The EIP-712 domain name and version of the token, as x402 `extra` carries them.
    pub fn eip712_name_version(&self) -> (String, String) {
        match base_usdc().transfer_method {
            AssetTransferMethod::Eip3009 { name, version } => (name, version),
            // x402 lists Base USDC as EIP-3009; the contract's own domain is the fallback.
            AssetTransferMethod::Permit2 { .. } => ("USD Coin".to_string(), "2".to_string()),
        }
    }

    /// The service's `batch-settlement` escrow on this chain, driven by the sandbox's
    /// channels key (funded with gas).
    pub fn escrow(&self) -> Result<Escrow, SandboxError> {
        Ok(Escrow::new(self.rpc_url.clone(), SANDBOX_CHAIN_ID, signer(CHANNELS_KEY)?))
    }

    /// An in-process x402 v2 facilitator (scheme `exact`, network `eip155:8453`) over this
    /// chain, signing with [`Self::facilitator_signer`]. Keep the chain alive while it is used.
    pub async fn facilitator(&self) -> Result<SandboxFacilitator, SandboxError> {
        local_facilitator(SANDBOX_CHAIN_ID, self.rpc_url.clone(), FACILITATOR_KEY).await
    }

    /// The token balance of `holder`, in base units.
    pub async fn balance_of(&self, holder: Address) -> Result<U256, SandboxError> {
        ISandboxUsdc::new(self.token, &self.provider)
            .balanceOf(holder)
            .call()
            .await
            .map_err(|e| rpc_error("reading a token balance", e))
    }

    /// Mints `amount` base units of the test USDC to `to`.
    pub async fn mint(&self, to: Address, amount: U256) -> Result<(), SandboxError> {
        let pending = ISandboxUsdc::new(self.token, &self.provider)
            .mint(to, amount)
            .send()
            .await
            .map_err(|e| rpc_error("minting test USDC", e))?;
        confirm(pending, "minting test USDC").await
    }

    /// Kills anvil and waits for it to exit and for the tasks reading its output to end
    /// (dropping also kills it, without waiting).
    pub async fn stop(mut self) -> Result<(), SandboxError> {
        // An anvil that already exited has nothing left to kill.
        let _ = self.child.start_kill();
        let exited = self
            .child
            .wait()
            .await
            .map(drop)
            .map_err(|e| SandboxError::Rpc { what: "stopping anvil".into(), detail: e.to_string() });
        for reader in std::mem::take(&mut self.readers) {
            let _ = reader.await;
        }
        exited
    }

    async fn set_code(&self, address: Address, code: Bytes) -> Result<(), SandboxError> {
        self.provider
            .raw_request::<_, serde_json::Value>("anvil_setCode".into(), (address, code))
            .await
            .map(drop)
            .map_err(|e| rpc_error(format!("anvil_setCode at {address}"), e))
    }

    async fn set_balance(&self, address: Address, wei: U256) -> Result<(), SandboxError> {
        self.provider
            .raw_request::<_, serde_json::Value>("anvil_setBalance".into(), (address, wei))
            .await
            .map(drop)
            .map_err(|e| rpc_error(format!("anvil_setBalance of {address}"), e))
    }
}

/// An x402 v2 facilitator for EVM chain `chain_id` reached at `rpc_url`, settling with the
/// private key `signer_key` (0x hex): `exact` (EIP-3009) and `upto` (Permit2, with the
/// payer's EIP-2612 permit submitted for it); the sandbox's, usable for any EVM chain whose
/// node has the EIP-6492 validator, Permit2 and the x402 proxies deployed (x402 checks at
/// start-up).
pub async fn local_facilitator(
    chain_id: u64,
    rpc_url: Url,
    signer_key: &str,
) -> Result<SandboxFacilitator, SandboxError> {
    let key = EvmPrivateKey::from_str(signer_key)
        .map_err(|_| SandboxError::Facilitator("the signer key is not 32 bytes of hex".into()))?;
    let config = Eip155ChainConfig {
        chain_reference: Eip155ChainReference::new(chain_id),
        inner: Eip155ChainConfigInner {
            eip1559: true,
            flashblocks: false,
            signers: vec![LiteralOrEnv::from_literal(key)],
            rpc: vec![RpcConfig { http: LiteralOrEnv::from_literal(rpc_url.clone()), rate_limit: None }],
            receipt_timeout_secs: 30,
        },
    };
    let provider = Eip155ChainProvider::from_config(&config)
        .await
        .map_err(|e| SandboxError::Facilitator(format!("connecting to {rpc_url}: {e}")))?;
    let provider = FacilitatorChain(Arc::new(provider));
    let blueprints = SchemeBlueprints::new().and_register(V2Eip155Exact).and_register(V2Eip155Upto);
    let schemes =
        [(V2Eip155Exact.id(), None), (V2Eip155Upto.id(), Some(serde_json::json!({"eip2612_gas_sponsoring": true})))];
    facilitator_of(provider, blueprints, &schemes)
}

/// An in-process facilitator serving one scheme on the one chain of `provider`.
pub(super) fn one_scheme_facilitator<P, S>(provider: P, scheme: S) -> Result<SandboxFacilitator, SandboxError>
where
    P: ChainProviderOps + 'static,
    S: X402SchemeBlueprint<P> + 'static,
{
    let id = scheme.id();
    facilitator_of(provider, SchemeBlueprints::new().and_register(scheme), &[(id, None)])
}

/// An in-process facilitator serving `schemes` (each blueprint's id and its configuration)
/// on the one chain of `provider`.
fn facilitator_of<P: ChainProviderOps + 'static>(
    provider: P,
    blueprints: SchemeBlueprints<P>,
    schemes: &[(String, Option<serde_json::Value>)],
) -> Result<SandboxFacilitator, SandboxError> {
    let network = provider.chain_id();
    let slugs: Vec<(String, SchemeHandlerSlug)> = schemes
        .iter()
        .map(|(id, _)| {
            let blueprint = blueprints.get(id).expect("every scheme configured is registered");
            let slug =
                SchemeHandlerSlug::new(network.clone(), blueprint.x402_version(), blueprint.scheme().to_string());
            (id.clone(), slug)
        })
        .collect();
    let chains = ChainRegistry::new(HashMap::from([(network.clone(), provider)]));
    let configs: Vec<SchemeConfig> = schemes
        .iter()
        .map(|(id, config)| SchemeConfig {
            enabled: true,
            id: id.clone(),
            chains: ChainIdPattern::exact(network.namespace(), network.reference()),
            config: config.clone(),
        })
        .collect();
    let registry = SchemeRegistry::build(chains, blueprints, &configs);
    // `build` skips, silently, a scheme it could not build: check each is there.
    for (id, slug) in &slugs {
        if registry.by_slug(slug).is_none() {
            return Err(SandboxError::Facilitator(format!("no {id} handler for {network}")));
        }
    }
    Ok(FacilitatorLocal::new(registry))
}

/// The chain provider of a one-scheme facilitator's registry. A type of ours, because
/// x402's blueprints build from a reference to the registry's provider type, and the x402
/// chain crates implement their builders only for owned providers (their facilitator binary
/// does the same).
pub(super) struct FacilitatorChain<P>(pub(super) Arc<P>);

impl<P: ChainProviderOps> ChainProviderOps for FacilitatorChain<P> {
    fn signer_addresses(&self) -> Vec<String> {
        self.0.signer_addresses()
    }

    fn chain_id(&self) -> ChainId {
        ChainProviderOps::chain_id(&*self.0)
    }
}

/// The EVM schemes built from the registry's provider, as x402 builds them from an owned one.
macro_rules! built_from_the_registrys_provider {
    ($($scheme:ty),*) => {$(
        impl X402SchemeFacilitatorBuilder<&FacilitatorChain<Eip155ChainProvider>> for $scheme {
            fn build(
                &self,
                provider: &FacilitatorChain<Eip155ChainProvider>,
                config: Option<serde_json::Value>,
            ) -> Result<Box<dyn X402SchemeFacilitator>, Box<dyn std::error::Error>> {
                self.build(Arc::clone(&provider.0), config)
            }
        }
    )*};
}

built_from_the_registrys_provider!(V2Eip155Exact, V2Eip155Upto);

/// Where anvil is: `$PAPERCHAIN_ANVIL`, else `$PAPERCHAIN_TOOLS/npm/node_modules/.bin/anvil`
/// (tools directory `$HOME/.cache/paperchain/tools` by default, as `cargo xtask setup`
/// installs it), else `anvil` on the PATH.
pub fn find_anvil() -> Result<PathBuf, SandboxError> {
    locate_anvil(|key| std::env::var_os(key))
}

/// [`find_anvil`] reading the environment through `var`.
fn locate_anvil(var: impl Fn(&str) -> Option<OsString>) -> Result<PathBuf, SandboxError> {
    let set = |key: &str| var(key).filter(|v| !v.is_empty());
    if let Some(path) = set("PAPERCHAIN_ANVIL").map(PathBuf::from) {
        return if path.is_file() { Ok(path) } else { Err(SandboxError::AnvilEnvNotAFile(path)) };
    }
    let mut looked_at = Vec::new();
    let tools = set("PAPERCHAIN_TOOLS")
        .map(PathBuf::from)
        .or_else(|| set("HOME").map(|home| PathBuf::from(home).join(".cache/paperchain/tools")));
    if let Some(tools) = tools {
        let path = tools.join("npm/node_modules/.bin/anvil");
        if path.is_file() {
            return Ok(path);
        }
        looked_at.push(path.display().to_string());
    }
    if let Some(paths) = set("PATH")
        && let Some(path) = std::env::split_paths(&paths).map(|dir| dir.join("anvil")).find(|p| is_executable(p))
    {
        return Ok(path);
    }
    looked_at.push("anvil on the PATH".to_string());
    Err(SandboxError::AnvilNotFound { looked_at: looked_at.join(", ") })
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// Base USDC as x402 knows it: the address and EIP-712 domain the sandbox imitates.
fn base_usdc() -> Eip155TokenDeployment {
    USDC::base()
}

/// Keeps the chain's latest block no older than `every`: mines an empty block (stamped now)
/// when it is older. Ends when anvil stops answering.
async fn keep_clock(provider: DynProvider, every: Duration) {
    let every = every.max(Duration::from_secs(1));
    loop {
        tokio::time::sleep(every / 2).await;
        let Ok(Some(latest)) = provider.get_block_by_number(alloy::eips::BlockNumberOrTag::Latest).await else {
            return;
        };
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        if now.saturating_sub(latest.header.timestamp) >= every.as_secs()
            && provider.raw_request::<_, serde_json::Value>("evm_mine".into(), ()).await.is_err()
        {
            return;
        }
    }
}

/// Starts anvil and waits for its `Listening on <address>` line.
async fn spawn_anvil(
    anvil: &Path,
    port: u16,
    deadline: tokio::time::Instant,
) -> Result<(Child, Vec<tokio::task::JoinHandle<()>>, SocketAddr), SandboxError> {
    let mut child = Command::new(anvil)
        .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--chain-id", &SANDBOX_CHAIN_ID.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| SandboxError::Spawn { path: anvil.to_path_buf(), source })?;
    let start_error = |detail: String| SandboxError::AnvilStart { path: anvil.to_path_buf(), detail };
    let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
    let mut readers = Vec::new();
    if let Some(stderr) = child.stderr.take() {
        readers.push(tokio::spawn(keep_tail(stderr, Arc::clone(&stderr_tail))));
    }
    let stdout = child.stdout.take().ok_or_else(|| start_error("its stdout was not captured".into()))?;
    let mut lines = BufReader::new(stdout).lines();
    let listening = tokio::time::timeout_at(deadline, async {
        while let Some(line) = lines.next_line().await? {
            if let Some(address) = line.trim().strip_prefix("Listening on ") {
                return Ok(Some(address.to_string()));
            }
        }
        Ok::<_, std::io::Error>(None)
    })
    .await;
    let address = match listening {
        Ok(Ok(Some(address))) => address,
        Ok(Ok(None)) => {
            // stdout closed: anvil exited; let stderr's reader catch up before quoting it.
            let status = child.wait().await.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
            tokio::time::sleep(Duration::from_millis(50)).await;
            return Err(start_error(format!("it exited ({status}){}", quoted(&stderr_tail))));
        }
        Ok(Err(e)) => return Err(start_error(format!("reading its output: {e}"))),
        Err(_) => return Err(start_error(format!("it did not say where it listens in time{}", quoted(&stderr_tail)))),
    };
    // anvil logs every request on stdout and would block on a full pipe if nobody read it.
    readers.push(tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} }));
    let address = address
        .parse::<SocketAddr>()
        .map_err(|e| start_error(format!("it listens on {address:?}, not an address: {e}")))?;
    Ok((child, readers, address))
}

/// Reads `stream` to its end, keeping its last lines.
async fn keep_tail(stream: impl AsyncRead + Unpin, tail: Arc<Mutex<VecDeque<String>>>) {
    let mut lines = BufReader::new(stream).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Ok(mut tail) = tail.lock() {
            if tail.len() == STDERR_TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(line);
        }
    }
}

fn quoted(tail: &Mutex<VecDeque<String>>) -> String {
    let lines: Vec<String> = tail.lock().map(|t| t.iter().cloned().collect()).unwrap_or_default();
    if lines.is_empty() { String::new() } else { format!("; its stderr ends with:\n{}", lines.join("\n")) }
}

/// Waits until anvil answers `eth_chainId`, and checks it serves the sandbox's chain.
async fn wait_until_answering(
    provider: &DynProvider,
    anvil: &Path,
    deadline: tokio::time::Instant,
) -> Result<(), SandboxError> {
    loop {
        match provider.get_chain_id().await {
            Ok(SANDBOX_CHAIN_ID) => return Ok(()),
            Ok(other) => {
                return Err(SandboxError::AnvilStart {
                    path: anvil.to_path_buf(),
                    detail: format!("it serves chain id {other}, not {SANDBOX_CHAIN_ID}"),
                });
            }
            Err(e) if tokio::time::Instant::now() >= deadline => {
                return Err(SandboxError::AnvilStart {
                    path: anvil.to_path_buf(),
                    detail: format!("it does not answer JSON-RPC: {e}"),
                });
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Waits for a transaction's receipt and checks it succeeded.
async fn confirm(
    pending: alloy::providers::PendingTransactionBuilder<alloy::network::Ethereum>,
    what: &str,
) -> Result<(), SandboxError> {
    let receipt =
        pending.with_timeout(Some(Duration::from_secs(30))).get_receipt().await.map_err(|e| rpc_error(what, e))?;
    if receipt.status() {
        Ok(())
    } else {
        Err(SandboxError::Rpc {
            what: what.to_string(),
            detail: format!("transaction {} reverted", receipt.transaction_hash),
        })
    }
}

fn rpc_error(what: impl Into<String>, error: impl fmt::Display) -> SandboxError {
    SandboxError::Rpc { what: what.into(), detail: error.to_string() }
}

fn signer(key: &str) -> Result<PrivateKeySigner, SandboxError> {
    PrivateKeySigner::from_str(key).map_err(|e| SandboxError::Facilitator(format!("a built-in dev key: {e}")))
}

/// The parts of a contract's artifact the sandbox uses.
struct Artifact {
    runtime: Bytes,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactJson {
    runtime: String,
    source_keccak256: String,
}

impl Artifact {
    fn load(artifact: &str) -> Result<Artifact, SandboxError> {
        let json: ArtifactJson = serde_json::from_str(artifact).map_err(|e| SandboxError::Artifact(e.to_string()))?;
        let runtime = Bytes::from_str(&json.runtime).map_err(|e| SandboxError::Artifact(format!("runtime: {e}")))?;
        if runtime.is_empty() {
            return Err(SandboxError::Artifact("runtime code is empty".into()));
        }
        // Read so that a hand-edited artifact without the hash fails here, not only in tests.
        B256::from_str(&json.source_keccak256).map_err(|e| SandboxError::Artifact(format!("sourceKeccak256: {e}")))?;
        Ok(Artifact { runtime })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::primitives::keccak256;

    #[test]
    fn artifacts_match_their_sources() {
        for (artifact, source) in [TOKEN, PERMIT2, UPTO_PROXY, BATCH_ESCROW] {
            let json: ArtifactJson = serde_json::from_str(artifact).expect("the artifact parses");
            let name = source.lines().find_map(|l| l.strip_prefix("contract ")).unwrap_or("?");
            assert_eq!(
                json.source_keccak256,
                keccak256(source.as_bytes()).to_string(),
                "the artifact of {name} in hosted/contracts/ is stale: rebuild it with\n  \
                 NODE_PATH=\"${{PAPERCHAIN_TOOLS:-$HOME/.cache/paperchain/tools}}/npm/node_modules\" \
                 node hosted/contracts/build.js"
            );
            assert!(Artifact::load(artifact).is_ok());
        }
    }

    /// The functions of an artifact's ABI as `name(type,…)`, tuples written out.
    fn functions_of(artifact: &str) -> Vec<String> {
        fn type_of(input: &serde_json::Value) -> String {
            let kind = input["type"].as_str().unwrap_or_default();
            match kind.strip_prefix("tuple") {
                Some(suffix) => {
                    let parts: Vec<String> =
                        input["components"].as_array().into_iter().flatten().map(type_of).collect();
                    format!("({}){suffix}", parts.join(","))
                }
                None => kind.to_string(),
            }
        }
        let json: serde_json::Value = serde_json::from_str(artifact).expect("the artifact parses");
        let abi = json["abi"].as_array().expect("an abi array");
        abi.iter()
            .filter(|e| e["type"] == "function")
            .map(|entry| {
                let inputs: Vec<String> = entry["inputs"].as_array().into_iter().flatten().map(type_of).collect();
                format!("{}({})", entry["name"].as_str().unwrap_or_default(), inputs.join(","))
            })
            .collect()
    }

    #[test]
    fn the_upto_proxy_has_the_functions_x402_calls() {
        // As x402's facilitator encodes them (x402-chain-eip155's X402UptoPermit2Proxy ABI).
        let functions = functions_of(UPTO_PROXY.0);
        let permit = "((address,uint256),uint256,uint256)";
        let witness = "(address,address,uint256)";
        for wanted in [
            format!("settle({permit},uint256,address,{witness},bytes)"),
            format!(
                "settleWithPermit((uint256,uint256,bytes32,bytes32,uint8),{permit},uint256,address,{witness},bytes)"
            ),
            "PERMIT2()".to_string(),
            "WITNESS_TYPEHASH()".to_string(),
            "WITNESS_TYPE_STRING()".to_string(),
        ] {
            assert!(functions.contains(&wanted), "SandboxUptoProxy lacks {wanted}; it has {functions:?}");
        }
        let functions = functions_of(PERMIT2.0);
        for wanted in [
            format!("permitWitnessTransferFrom({permit},(address,uint256),address,bytes32,string,bytes)"),
            "nonceBitmap(address,uint256)".to_string(),
            "DOMAIN_SEPARATOR()".to_string(),
        ] {
            assert!(functions.contains(&wanted), "SandboxPermit2 lacks {wanted}; it has {functions:?}");
        }
    }

    #[test]
    fn artifact_has_what_x402_calls() {
        let functions = functions_of(TOKEN.0);
        let json: serde_json::Value = serde_json::from_str(TOKEN.0).expect("SandboxUsdc.json parses");
        let abi = json["abi"].as_array().expect("an abi array");
        for wanted in [
            "name()",
            "version()",
            "symbol()",
            "decimals()",
            "totalSupply()",
            "balanceOf(address)",
            "transfer(address,uint256)",
            "approve(address,uint256)",
            "transferFrom(address,address,uint256)",
            "allowance(address,address)",
            "DOMAIN_SEPARATOR()",
            "authorizationState(address,bytes32)",
            "transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,uint8,bytes32,bytes32)",
            "transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)",
            "receiveWithAuthorization(address,address,uint256,uint256,uint256,bytes32,uint8,bytes32,bytes32)",
            "receiveWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)",
            "cancelAuthorization(address,bytes32,uint8,bytes32,bytes32)",
            "cancelAuthorization(address,bytes32,bytes)",
            "permit(address,address,uint256,uint256,uint8,bytes32,bytes32)",
            "nonces(address)",
            "mint(address,uint256)",
            "initialize(address)",
        ] {
            assert!(functions.iter().any(|f| f == wanted), "SandboxUsdc lacks {wanted}; it has {functions:?}");
        }
        let events: Vec<&str> =
            abi.iter().filter(|e| e["type"] == "event").filter_map(|e| e["name"].as_str()).collect();
        for wanted in ["Transfer", "Approval", "AuthorizationUsed", "AuthorizationCanceled"] {
            assert!(events.contains(&wanted), "SandboxUsdc lacks event {wanted}");
        }
    }

    #[test]
    fn imitates_base_usdc() {
        let usdc = base_usdc();
        assert_eq!(usdc.address, alloy::primitives::address!("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"));
        assert_eq!(usdc.chain_reference.inner(), SANDBOX_CHAIN_ID);
        assert_eq!(usdc.decimals, 6);
        let source = include_str!("../contracts/SandboxUsdc.sol");
        match usdc.transfer_method {
            AssetTransferMethod::Eip3009 { name, version } => {
                assert!(source.contains(&format!("string public constant name = \"{name}\";")), "name {name}");
                assert!(source.contains(&format!("return \"{version}\";")), "version {version}");
            }
            AssetTransferMethod::Permit2 { .. } => panic!("x402 lists Base USDC as Permit2"),
        }
    }

    #[test]
    fn dev_keys_are_anvils_first_accounts() {
        let facilitator = signer(FACILITATOR_KEY).expect("a key");
        let minter = signer(MINTER_KEY).expect("a key");
        assert_eq!(facilitator.address(), alloy::primitives::address!("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"));
        assert_eq!(minter.address(), alloy::primitives::address!("0x70997970C51812dc3A010C7d01b50e0d17dc79C8"));
    }

    #[test]
    fn anvil_is_found_where_setup_puts_it() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let bin = dir.path().join("npm/node_modules/.bin");
        std::fs::create_dir_all(&bin).expect("the .bin folder");
        std::fs::write(bin.join("anvil"), "").expect("an anvil file");
        let tools = dir.path().as_os_str().to_owned();
        let env = |tools: Option<OsString>, anvil: Option<&'static str>| {
            move |key: &str| match key {
                "PAPERCHAIN_TOOLS" => tools.clone(),
                "PAPERCHAIN_ANVIL" => anvil.map(OsString::from),
                _ => None,
            }
        };
        assert_eq!(locate_anvil(env(Some(tools.clone()), None)).expect("found"), bin.join("anvil"));
        // The explicit path wins, and must exist.
        let error = locate_anvil(env(Some(tools), Some("/nowhere/anvil"))).expect_err("not a file");
        assert!(error.to_string().contains("PAPERCHAIN_ANVIL is /nowhere/anvil"), "{error}");
        // Nowhere at all: the message says how to install it and where it looked.
        let empty = dir.path().join("empty").into_os_string();
        let error = locate_anvil(env(Some(empty), None)).expect_err("nothing there");
        let message = error.to_string();
        assert!(message.starts_with("anvil not found"), "{message}");
        assert!(message.contains("run `cargo xtask setup` or set PAPERCHAIN_ANVIL"), "{message}");
        assert!(message.contains("empty/npm/node_modules/.bin/anvil"), "{message}");
    }
}
