//! An EVM address read at one block, as the address and token checks read it
//! (`chain/address_check.rs`, `chain/token_check.rs`):
//! 1. the address's code (`eth_getCode`): no code is an externally owned account, the
//!    EIP-7702 prefix a delegated one;
//! 2. the proxy slots (EIP-1967 implementation, admin and beacon; EIP-1822 proxiable). A
//!    beacon's implementation comes from its `implementation()`. The upgrade key is the
//!    admin slot, else `owner()` of the beacon (beacon proxies) or of the proxy (UUPS). An
//!    admin that is a contract is followed one step through its own `owner()` (the
//!    OpenZeppelin `ProxyAdmin` pattern);
//! 3. the implementation's code, for a proxy;
//! 4. the ERC-20 views (`token`);
//! 5. for an ERC-20 token, a buy and a sell through the chain's Uniswap V2 router
//!    ([`crate::evm::trade_sim`]).
//!
//! Also the `chain` input both checks take ([`CheckChain`]: base or ethereum) and the 503
//! their failures to read the chain become ([`unavailable`]), within [`CHECK_DEADLINE`].
//!
//! What this module must not do: judge what it read (scoring is `super::address`'s) or
//! use a route file.

use std::sync::Arc;
use std::time::Duration;

use alloy::primitives::{Address, B256, Bytes, U64, U256};
use alloy::transports::RpcError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::context::Context;
use crate::error::{EngineError, ErrorKind};
use crate::evm::erc20::read_erc20;
use crate::evm::trade_sim::{self, TradeOutcome, TradeSimulation};
use crate::evm::{ChainName, EvmChain, address_text};

/// The chains the address and token checks read (a subset of the configured ones).
pub const CHECKED_CHAINS: &[&str] = &["base", "ethereum"];
/// The longest a check may read the chain ("at most about 4 s").
pub const CHECK_DEADLINE: Duration = Duration::from_secs(4);
/// Retry-After of a 503.
const RETRY_AFTER: Duration = Duration::from_secs(5);

/// EIP-1967 implementation slot: keccak256("eip1967.proxy.implementation") - 1.
pub const SLOT_IMPLEMENTATION: B256 =
    alloy::primitives::b256!("360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc");
/// EIP-1967 admin slot: keccak256("eip1967.proxy.admin") - 1.
pub const SLOT_ADMIN: B256 =
    alloy::primitives::b256!("b53127684a568b3173ae13b9f8a6016e243e63b6e8ee1178d6a717850b5d6103");
/// EIP-1967 beacon slot: keccak256("eip1967.proxy.beacon") - 1.
pub const SLOT_BEACON: B256 =
    alloy::primitives::b256!("a3f0ad74e5423aebfd80d3ef4346578335a9a72aeaee59ff6cb3582b35133d50");
/// EIP-1822 proxiable slot: keccak256("PROXIABLE").
pub const SLOT_PROXIABLE: B256 =
    alloy::primitives::b256!("c5f16f0fcc639fa48a6947836d9850f504798523bf8c9a3a87d5876cf622bcf7");

/// `implementation()` (beacons).
const IMPLEMENTATION: [u8; 4] = [0x5c, 0x60, 0xda, 0x1b];
/// `owner()`.
pub const OWNER: [u8; 4] = [0x8d, 0xa5, 0xcb, 0x5b];
/// Code of an EIP-7702 delegated account: this prefix and the delegate's 20 bytes.
pub const DELEGATION_PREFIX: [u8; 3] = [0xef, 0x01, 0x00];

/// The `chain` input of the address and token checks: `base` or `ethereum` only.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct CheckChain(pub String);

impl JsonSchema for CheckChain {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PrecheckChain".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "enum": CHECKED_CHAINS,
            "description": "Chain to check on: `base` (chain id 8453) or `ethereum` (1)."
        })
    }
}

impl CheckChain {
    /// The configured chain, if `check` covers it (a 422 on `/chain` saying which do).
    pub fn resolve(self, ctx: &Context, check: &str) -> Result<Arc<EvmChain>, EngineError> {
        if !CHECKED_CHAINS.contains(&self.0.as_str()) {
            let shown: String = self.0.chars().take(40).collect();
            return Err(EngineError::invalid(
                "/chain",
                format!("/chain: {check} does not cover `{shown}`; valid chains: base, ethereum"),
            ));
        }
        ctx.chains.resolve(&ChainName(self.0), "/chain")
    }
}

/// Proxy standards recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProxyStandard {
    /// EIP-1967 implementation slot.
    Eip1967,
    /// EIP-1967 beacon slot.
    Eip1967Beacon,
    /// EIP-1822 (UUPS) proxiable slot.
    Eip1822,
}

/// Whether an address holds code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AccountKind {
    /// No code.
    Eoa,
    /// Code.
    Contract,
}

/// Proxy details.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ProxyDetails {
    /// The address is a proxy of a recognised standard.
    pub is_proxy: bool,
    /// Which standard; null when not a proxy.
    pub standard: Option<ProxyStandard>,
    /// Implementation address, lower-case; null when not a proxy or not found.
    pub implementation: Option<String>,
    /// Beacon address (beacon proxies), lower-case.
    pub beacon: Option<String>,
    /// Who can upgrade: the admin slot, else `owner()` of the beacon or proxy; null when not found.
    pub admin: Option<String>,
    /// Whether the admin holds code.
    pub admin_kind: Option<AccountKind>,
    /// `owner()` of an admin that is a contract, when that owner is an externally owned account; lower-case.
    pub admin_owner: Option<String>,
}

/// ERC-20 details of a contract.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct TokenDetails {
    /// The contract answers `totalSupply()` and `balanceOf(address)`.
    pub is_erc20: bool,
    /// `name()`; untrusted data, at most 256 characters.
    pub name: Option<String>,
    /// `symbol()`; untrusted data, at most 256 characters.
    pub symbol: Option<String>,
    /// `decimals()`.
    pub decimals: Option<u8>,
    /// The buy/sell simulation through the chain's Uniswap V2 router; null when it did not run (`skipped` says why).
    pub simulation: Option<TradeSimulation>,
}

/// Every failure to read the chain as the 503 the spec lists for the checks; a rate limit
/// stays a 429 (also listed) and a defect of ours stays internal.
pub fn unavailable(chain: &EvmChain, error: EngineError) -> EngineError {
    match error.kind {
        ErrorKind::RateLimited { .. } | ErrorKind::Internal | ErrorKind::InvalidInput => error,
        ErrorKind::Unavailable { retry_after } => {
            EngineError::new(ErrorKind::Unavailable { retry_after }, "unavailable", error.message)
        }
        _ => EngineError::new(
            ErrorKind::Unavailable { retry_after: RETRY_AFTER },
            "unavailable",
            format!("the {} chain could not be read in time: {}", chain.name(), error.message),
        ),
    }
}

/// What was read from the chain.
#[derive(Clone, Debug, Default)]
pub struct Inspection {
    /// Block the reads were pinned to.
    pub block: u64,
    /// The address's own code.
    pub code: Bytes,
    /// Proxy details (addresses filled in).
    pub proxy: ProxyDetails,
    /// The implementation's code, when a proxy's implementation was found with code.
    pub implementation_code: Option<Bytes>,
    /// ERC-20 views, for contracts.
    pub token: Option<TokenDetails>,
    /// The trade simulation, for ERC-20 tokens on a chain with a known DEX.
    pub trade: Option<TradeOutcome>,
}

/// A block tag for `block`.
fn tag(block: u64) -> String {
    format!("{block:#x}")
}

pub async fn get_code(chain: &EvmChain, address: Address, block: u64) -> Result<Bytes, EngineError> {
    chain.request("eth_getCode", (address, tag(block))).await
}

async fn get_slot(chain: &EvmChain, address: Address, slot: B256, block: u64) -> Result<Option<Address>, EngineError> {
    let word: U256 = chain.request("eth_getStorageAt", (address, slot, tag(block))).await?;
    Ok(word_address(word))
}

/// The address in the low 20 bytes of a slot or answer word; None for zero.
fn word_address(word: U256) -> Option<Address> {
    let address = Address::from_word(B256::from(word));
    (!address.is_zero()).then_some(address)
}

/// An address-returning view of `to`; None when it reverts or answers no address.
pub async fn call_address(
    chain: &EvmChain,
    to: Address,
    selector: [u8; 4],
    block: u64,
) -> Result<Option<Address>, EngineError> {
    let call = json!({"to": to, "data": Bytes::from(selector.to_vec())});
    match chain.client().request::<_, Bytes>("eth_call", (call, tag(block))).await {
        Ok(data) => Ok(data.get(..32).map(U256::from_be_slice).and_then(word_address)),
        Err(RpcError::ErrorResp(_)) => Ok(None),
        Err(e) => Err(chain.error("eth_call", e)),
    }
}

/// [`inspect`] within [`CHECK_DEADLINE`]; a chain that fails or is too slow is 503.
pub async fn inspect_in_time(chain: &EvmChain, address: Address) -> Result<Inspection, EngineError> {
    let work = chain.deadline(inspect(chain, address));
    match tokio::time::timeout(CHECK_DEADLINE, work).await {
        Ok(result) => result.map_err(|e| unavailable(chain, e)),
        Err(_) => {
            Err(unavailable(chain, EngineError::new(ErrorKind::Timeout, "timeout", "the chain was not read in time")))
        }
    }
}

/// Reads everything the assessment needs.
pub async fn inspect(chain: &EvmChain, address: Address) -> Result<Inspection, EngineError> {
    let block: U64 = chain.request("eth_blockNumber", ()).await?;
    let block = block.to::<u64>();
    let code = get_code(chain, address, block).await?;
    let mut inspection = Inspection { block, code: code.clone(), ..Default::default() };
    if code.is_empty() || code.starts_with(&DELEGATION_PREFIX) {
        return Ok(inspection);
    }

    let implementation_slot = get_slot(chain, address, SLOT_IMPLEMENTATION, block).await?;
    let beacon = get_slot(chain, address, SLOT_BEACON, block).await?;
    let proxiable = get_slot(chain, address, SLOT_PROXIABLE, block).await?;
    let (standard, implementation) = match (implementation_slot, beacon, proxiable) {
        (Some(implementation), _, _) => (Some(ProxyStandard::Eip1967), Some(implementation)),
        (None, Some(beacon), _) => {
            (Some(ProxyStandard::Eip1967Beacon), call_address(chain, beacon, IMPLEMENTATION, block).await?)
        }
        (None, None, Some(implementation)) => (Some(ProxyStandard::Eip1822), Some(implementation)),
        (None, None, None) => (None, None),
    };
    if standard.is_some() {
        let admin = match get_slot(chain, address, SLOT_ADMIN, block).await? {
            Some(admin) => Some(admin),
            None => call_address(chain, beacon.unwrap_or(address), OWNER, block).await?,
        };
        let mut proxy = ProxyDetails {
            is_proxy: true,
            standard,
            implementation: implementation.as_ref().map(address_text),
            beacon: beacon.as_ref().map(address_text),
            admin: admin.as_ref().map(address_text),
            ..Default::default()
        };
        if let Some(admin) = admin {
            let admin_code = get_code(chain, admin, block).await?;
            if admin_code.is_empty() {
                proxy.admin_kind = Some(AccountKind::Eoa);
            } else {
                proxy.admin_kind = Some(AccountKind::Contract);
                if let Some(owner) = call_address(chain, admin, OWNER, block).await? {
                    // Only an EOA owner is a single key; a contract owner is a multisig or timelock.
                    if get_code(chain, owner, block).await?.is_empty() {
                        proxy.admin_owner = Some(address_text(&owner));
                    }
                }
            }
        }
        inspection.proxy = proxy;
        if let Some(implementation) = implementation {
            let implementation_code = get_code(chain, implementation, block).await?;
            inspection.implementation_code = (!implementation_code.is_empty()).then_some(implementation_code);
        }
    }

    let reads = read_erc20(chain, address, Address::ZERO).await?;
    let is_erc20 = reads.is_erc20();
    inspection.token = Some(TokenDetails {
        is_erc20,
        name: reads.name,
        symbol: reads.symbol,
        decimals: reads.decimals,
        simulation: None,
    });
    if is_erc20 && let Some(dex) = trade_sim::uniswap_v2(chain.name()) {
        inspection.trade = Some(trade_sim::simulate_trade(chain, dex, address, block).await?);
    }
    Ok(inspection)
}

#[cfg(test)]
mod tests {
    use alloy::primitives::keccak256;

    use super::*;

    fn selector(sig: &str) -> [u8; 4] {
        <[u8; 4]>::try_from(&keccak256(sig)[..4]).unwrap()
    }

    #[test]
    fn constants_match_their_definitions() {
        assert_eq!(IMPLEMENTATION, selector("implementation()"));
        assert_eq!(OWNER, selector("owner()"));
        let minus_one = |s: &str| B256::from(U256::from_be_bytes(keccak256(s).0) - U256::from(1));
        assert_eq!(SLOT_IMPLEMENTATION, minus_one("eip1967.proxy.implementation"));
        assert_eq!(SLOT_ADMIN, minus_one("eip1967.proxy.admin"));
        assert_eq!(SLOT_BEACON, minus_one("eip1967.proxy.beacon"));
        assert_eq!(SLOT_PROXIABLE, keccak256("PROXIABLE"));
    }
}
