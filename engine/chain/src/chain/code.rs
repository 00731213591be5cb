//! `POST /v1/chain/code`: what lives at an address: nothing (an externally owned account),
//! an EIP-7702 delegation, or contract code with its size and hash, and when the contract
//! is a proxy, its kind and implementation.
//!
//! One batch reads the block number, the code and the four proxy slots (EIP-1967
//! implementation, admin and beacon, EIP-1822 proxiable) at that block; a beacon proxy
//! takes a second request for the beacon's `implementation()`. An EIP-1167 minimal proxy
//! names its implementation in its code, so it costs nothing more.

use std::sync::Arc;

use alloy::primitives::{Address, B256, Bytes, U256, keccak256};
use alloy::rpc::client::Waiter;
use alloy::transports::RpcError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::{EngineError, ErrorKind};
use crate::evm::{ChainName, EvmAddress, EvmChain, address_text};
use crate::output::Reply;
use crate::price::Price;
use crate::risk::contract::{DELEGATION_PREFIX, SLOT_ADMIN, SLOT_BEACON, SLOT_IMPLEMENTATION, SLOT_PROXIABLE};

/// EIP-1167 minimal proxy runtime code: this prefix, the implementation's 20 bytes, the suffix.
const EIP1167_PREFIX: [u8; 10] = [0x36, 0x3d, 0x3d, 0x37, 0x3d, 0x3d, 0x3d, 0x36, 0x3d, 0x73];
const EIP1167_SUFFIX: [u8; 15] =
    [0x5a, 0xf4, 0x3d, 0x82, 0x80, 0x3e, 0x90, 0x3d, 0x91, 0x60, 0x2b, 0x57, 0xfd, 0x5b, 0xf3];
/// `implementation()`, which a beacon answers.
const IMPLEMENTATION: [u8; 4] = [0x5c, 0x60, 0xda, 0x1b];
/// Largest code read: contracts hold at most 24 KiB (48 KiB under EIP-7907), so far more
/// than that is a bad upstream answer.
const MAX_CODE_BYTES: usize = 256 * 1024;

/// Request of `/v1/chain/code`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CodeInput {
    /// Chain to read: `ethereum`, `base` or `polygon`.
    pub chain: ChainName,
    /// The address, 0x and 40 hex digits (any case).
    pub address: EvmAddress,
    /// Also answer the runtime bytecode itself in `code` (it can be tens of kilobytes). Default false.
    #[serde(default)]
    pub include_code: bool,
}

/// What is at the address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "CodeKind")]
pub enum CodeKind {
    /// No code: an externally owned account (or an address never used).
    Eoa,
    /// An externally owned account whose code delegates to a contract (EIP-7702).
    Delegated,
    /// Contract code.
    Contract,
}

/// Proxy kinds recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "CodeProxyStandard")]
pub enum ProxyKind {
    /// EIP-1967 implementation slot (transparent and UUPS proxies).
    Eip1967,
    /// EIP-1967 beacon slot: the implementation is the beacon's `implementation()`.
    Eip1967Beacon,
    /// EIP-1822 proxiable slot.
    Eip1822,
    /// EIP-1167 minimal proxy (a clone): the implementation is in the code and cannot change.
    Eip1167,
}

/// A proxy's details.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct CodeProxy {
    /// Which standard.
    pub standard: ProxyKind,
    /// The implementation the proxy runs, lower-case; null when a beacon does not answer one.
    pub implementation: Option<String>,
    /// The EIP-1967 admin slot's address, lower-case; null when the slot is empty.
    pub admin: Option<String>,
    /// The beacon, lower-case; null unless `standard` is `eip1967_beacon`.
    pub beacon: Option<String>,
    /// Whether the proxy can be pointed at other code: false only for an EIP-1167 clone.
    pub upgradeable: bool,
}

/// Answer of `/v1/chain/code`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CodeOutput {
    /// Chain read.
    pub chain: String,
    /// The address, lower-case.
    pub address: String,
    /// The block every read was made at.
    pub block: u64,
    /// `eoa`, `delegated` (EIP-7702) or `contract`.
    pub kind: CodeKind,
    /// Bytes of runtime code (0 for an account without code, 23 for a delegation).
    pub code_size: u64,
    /// keccak-256 of the code, 0x hex (the hash of no bytes for an account without code).
    pub code_hash: String,
    /// The contract an EIP-7702 delegation points to, lower-case; null unless `kind` is `delegated`.
    pub delegation: Option<String>,
    /// Proxy details; null when the contract is not a recognised proxy (or not a contract).
    pub proxy: Option<CodeProxy>,
    /// The runtime bytecode, 0x hex, when `include_code` was true; else null.
    pub code: Option<String>,
}

/// A checked request.
pub struct CodeRequest {
    chain: Arc<EvmChain>,
    address: EvmAddress,
    include_code: bool,
}

/// The route.
pub struct CodeRoute;

impl Route for CodeRoute {
    type Input = CodeInput;
    type Prepared = CodeRequest;
    type Output = CodeOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/code",
        operation: "get_contract_code",
        family: Family::Chain,
        summary: "Contract or account: code size and hash, proxy kind and implementation, EIP-7702 delegation",
        description: "What is at an address: an externally owned account, an EIP-7702 delegation (with its delegate), \
            or a contract with its code size and keccak-256 hash. Proxies are recognised and their implementation \
            named: EIP-1967 (with the admin slot), EIP-1967 beacon, EIP-1822 and EIP-1167 clones. Everything is \
            read at one block, in one batch (a beacon adds one call). The bytecode itself on request.",
        base_price: Price::micros(2_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: CodeInput, ctx: &Context) -> Result<CodeRequest, EngineError> {
        Ok(CodeRequest {
            chain: ctx.chains.resolve(&input.chain, "/chain")?,
            address: input.address,
            include_code: input.include_code,
        })
    }

    fn quote(_: &CodeRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: CodeRequest, _: &Context) -> Result<Reply<CodeOutput>, EngineError> {
        let CodeRequest { chain, address, include_code } = request;
        let answer = chain.deadline(read_code(&chain, address.0, include_code)).await?;
        Ok(Reply::Json(answer))
    }
}

/// What the batch reads.
struct Reads {
    block: u64,
    code: Bytes,
    slots: [Option<Address>; 4],
}

async fn read_batch(chain: &EvmChain, address: Address) -> Result<Reads, EngineError> {
    // The head first, then everything at that block, in one request: the node answers a
    // batch in order, and reads at `latest` would race a new block between members.
    let block: U256 = chain.request("eth_blockNumber", ()).await?;
    let block = u64::try_from(block).map_err(|_| bad(chain, format!("block number {block}")))?;
    let tag = format!("{block:#x}");
    let mut batch = chain.client().new_batch();
    let code: Waiter<Bytes> =
        batch.add_call("eth_getCode", &(address, &tag)).map_err(|e| chain.error("eth_getCode", e))?;
    let mut waiters = Vec::with_capacity(4);
    for slot in [SLOT_IMPLEMENTATION, SLOT_ADMIN, SLOT_BEACON, SLOT_PROXIABLE] {
        let waiter: Waiter<B256> = batch
            .add_call("eth_getStorageAt", &(address, slot, &tag))
            .map_err(|e| chain.error("eth_getStorageAt", e))?;
        waiters.push(waiter);
    }
    batch.send().await.map_err(|e| chain.error("eth_getCode", e))?;
    let code = code.await.map_err(|e| chain.error("eth_getCode", e))?;
    let mut slots = [None; 4];
    for (slot, waiter) in slots.iter_mut().zip(waiters) {
        let word = waiter.await.map_err(|e| chain.error("eth_getStorageAt", e))?;
        *slot = word_address(word);
    }
    Ok(Reads { block, code, slots })
}

async fn read_code(chain: &EvmChain, address: Address, include_code: bool) -> Result<CodeOutput, EngineError> {
    let Reads { block, code, slots } = read_batch(chain, address).await?;
    if code.len() > MAX_CODE_BYTES {
        return Err(bad(chain, format!("{} bytes of code, more than any contract holds", code.len())));
    }
    let [implementation_slot, admin, beacon, proxiable] = slots;
    let delegation = delegate(&code);
    let kind = match (&delegation, code.is_empty()) {
        (Some(_), _) => CodeKind::Delegated,
        (None, true) => CodeKind::Eoa,
        (None, false) => CodeKind::Contract,
    };
    let proxy = if kind != CodeKind::Contract {
        None
    } else if let Some(implementation) = clone_target(&code) {
        Some(CodeProxy {
            standard: ProxyKind::Eip1167,
            implementation: Some(address_text(&implementation)),
            admin: None,
            beacon: None,
            upgradeable: false,
        })
    } else {
        let found = match (implementation_slot, beacon, proxiable) {
            (Some(implementation), _, _) => Some((ProxyKind::Eip1967, Some(implementation))),
            (None, Some(beacon), _) => {
                Some((ProxyKind::Eip1967Beacon, beacon_implementation(chain, beacon, block).await?))
            }
            (None, None, Some(implementation)) => Some((ProxyKind::Eip1822, Some(implementation))),
            (None, None, None) => None,
        };
        found.map(|(standard, implementation)| CodeProxy {
            standard,
            implementation: implementation.as_ref().map(address_text),
            admin: admin.as_ref().map(address_text),
            beacon: beacon.filter(|_| standard == ProxyKind::Eip1967Beacon).as_ref().map(address_text),
            upgradeable: true,
        })
    };
    Ok(CodeOutput {
        chain: chain.name().to_string(),
        address: address_text(&address),
        block,
        kind,
        code_size: code.len() as u64,
        code_hash: keccak256(&code).to_string(),
        delegation: delegation.as_ref().map(address_text),
        proxy,
        code: include_code.then(|| format!("0x{}", hex::encode(&code))),
    })
}

/// The delegate of EIP-7702 delegation code (`0xef0100` and 20 bytes).
fn delegate(code: &[u8]) -> Option<Address> {
    (code.len() == 23 && code.starts_with(&DELEGATION_PREFIX)).then(|| Address::from_slice(&code[3..]))
}

/// The implementation named by EIP-1167 clone code.
fn clone_target(code: &[u8]) -> Option<Address> {
    let rest = code.strip_prefix(&EIP1167_PREFIX)?;
    let (target, suffix) = rest.split_at_checked(20)?;
    (suffix == EIP1167_SUFFIX).then(|| Address::from_slice(target))
}

/// The address in a slot's low 20 bytes; None for an empty slot.
fn word_address(word: B256) -> Option<Address> {
    let address = Address::from_word(word);
    (!address.is_zero()).then_some(address)
}

/// A beacon's `implementation()` at `block`; None when it reverts or answers no address.
async fn beacon_implementation(chain: &EvmChain, beacon: Address, block: u64) -> Result<Option<Address>, EngineError> {
    let call = json!({"to": beacon, "data": Bytes::from(IMPLEMENTATION.to_vec())});
    match chain.client().request::<_, Bytes>("eth_call", (call, format!("{block:#x}"))).await {
        Ok(data) if data.len() >= 32 => Ok(word_address(B256::from_slice(&data[..32]))),
        Ok(_) | Err(RpcError::ErrorResp(_)) => Ok(None),
        Err(e) => Err(chain.error("eth_call", e)),
    }
}

fn bad(chain: &EvmChain, why: String) -> EngineError {
    EngineError::new(
        ErrorKind::BadUpstream,
        "upstream_error",
        format!("the {} RPC's answer is not usable: {why}", chain.name()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_and_delegations_are_read_from_code() {
        let target: Address = "0xbebebebebebebebebebebebebebebebebebebebe".parse().unwrap();
        let mut clone = EIP1167_PREFIX.to_vec();
        clone.extend(target.as_slice());
        clone.extend(EIP1167_SUFFIX);
        assert_eq!(clone.len(), 45);
        assert_eq!(clone_target(&clone), Some(target));
        assert_eq!(clone_target(&clone[..44]), None);
        let mut delegation = DELEGATION_PREFIX.to_vec();
        delegation.extend(target.as_slice());
        assert_eq!(delegate(&delegation), Some(target));
        assert_eq!(delegate(&clone), None);
    }
}
