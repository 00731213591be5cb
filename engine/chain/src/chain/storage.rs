//! `POST /v1/chain/storage`: one storage slot of a contract, at the latest block, with the
//! block number read in the same JSON-RPC batch.

use std::sync::Arc;

use alloy::primitives::{B256, U256};
use alloy::rpc::client::Waiter;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::evm::{ChainName, EvmAddress, EvmChain, parse_uint256};
use crate::output::Reply;
use crate::price::Price;

/// Request of `/v1/chain/storage`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StorageInput {
    /// Chain to read: `ethereum`, `base` or `polygon`.
    pub chain: ChainName,
    /// Contract whose storage is read, 0x and 40 hex digits (any case).
    pub address: EvmAddress,
    /// The slot: 0x and 1 to 64 hex digits (`0x0`, an EIP-1967 slot), or a decimal number
    /// below 2^256 (`"3"`).
    #[schemars(regex(pattern = crate::patterns::uint256()))]
    pub slot: String,
}

/// Answer of `/v1/chain/storage`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StorageOutput {
    /// Chain read.
    pub chain: String,
    /// Contract, lower-case.
    pub address: String,
    /// The slot read, 0x and 64 hex digits.
    pub slot: String,
    /// The latest block number the node reported in the same batch.
    pub block: u64,
    /// The slot's 32 bytes, 0x and 64 hex digits (all zero for a slot never written).
    pub value: String,
    /// The same read as an unsigned 256-bit number, decimal string.
    pub value_decimal: String,
}

/// A checked request.
pub struct StorageRequest {
    chain: Arc<EvmChain>,
    address: EvmAddress,
    slot: U256,
}

/// The route.
pub struct StorageRoute;

impl Route for StorageRoute {
    type Input = StorageInput;
    type Prepared = StorageRequest;
    type Output = StorageOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/storage",
        operation: "get_storage_at",
        family: Family::Chain,
        summary: "One storage slot of a contract",
        description: "The 32 bytes of one storage slot of a contract at the latest block (eth_getStorageAt), as \
            hex and as an unsigned number, with the block number read in the same batch. The slot is 0x-hex or \
            decimal.",
        base_price: Price::micros(1_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: StorageInput, ctx: &Context) -> Result<StorageRequest, EngineError> {
        let chain = ctx.chains.resolve(&input.chain, "/chain")?;
        let slot = parse_uint256(&input.slot).ok_or_else(|| {
            EngineError::invalid(
                "/slot",
                "/slot: write a slot as 0x and 1 to 64 hex digits (\"0x0\") or as a decimal number below 2^256 (\"3\")",
            )
        })?;
        Ok(StorageRequest { chain, address: input.address, slot })
    }

    fn quote(_: &StorageRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: StorageRequest, _: &Context) -> Result<Reply<StorageOutput>, EngineError> {
        let StorageRequest { chain, address, slot } = request;
        let (block, value) = chain.deadline(read_slot(&chain, &address, slot)).await?;
        Ok(Reply::Json(StorageOutput {
            chain: chain.name().to_string(),
            address: address.text(),
            slot: B256::from(slot).to_string(),
            block,
            value: value.to_string(),
            value_decimal: U256::from_be_bytes(value.0).to_string(),
        }))
    }
}

/// The latest block number and `slot` of `address` at `latest`, in one batch.
async fn read_slot(chain: &EvmChain, address: &EvmAddress, slot: U256) -> Result<(u64, B256), EngineError> {
    let mut batch = chain.client().new_batch();
    let block: Waiter<U256> = batch.add_call("eth_blockNumber", &()).map_err(|e| chain.error("eth_blockNumber", e))?;
    let value: Waiter<B256> = batch
        .add_call("eth_getStorageAt", &(address.0, slot, "latest"))
        .map_err(|e| chain.error("eth_getStorageAt", e))?;
    batch.send().await.map_err(|e| chain.error("eth_getStorageAt", e))?;
    let block = block.await.map_err(|e| chain.error("eth_blockNumber", e))?;
    let value = value.await.map_err(|e| chain.error("eth_getStorageAt", e))?;
    let block = u64::try_from(block).map_err(|_| {
        EngineError::new(
            crate::error::ErrorKind::BadUpstream,
            "upstream_error",
            format!("the {} RPC answered a block number of {block}", chain.name()),
        )
    })?;
    Ok((block, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_read_as_hex_or_decimal() {
        assert_eq!(parse_uint256("0x0"), Some(U256::ZERO));
        assert_eq!(parse_uint256("3"), Some(U256::from(3)));
        let eip1967 = "0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc";
        assert_eq!(parse_uint256(eip1967).map(|s| B256::from(s).to_string()), Some(eip1967.to_string()));
        assert_eq!(parse_uint256(&"9".repeat(78)), None, "past 2^256");
        for bad in ["", "0x", "-1", "0x1g", "1e3", &format!("0x{}", "f".repeat(65))] {
            assert_eq!(parse_uint256(bad), None, "{bad}");
        }
    }
}
