//! `POST /v1/chain/block`: the latest block's header.

use std::sync::Arc;

use alloy::primitives::U256;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::chain::evm::{ChainName, EvmChain, format_units, parse_quantity};
use crate::context::Context;
use crate::error::{EngineError, ErrorKind};
use crate::output::Reply;
use crate::price::Price;

/// Request of `/v1/chain/block`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BlockInput {
    /// Chain to read: `ethereum`, `base` or `polygon`.
    pub chain: ChainName,
}

/// Answer of `/v1/chain/block`; a field the node does not supply is null.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BlockOutput {
    /// Chain read.
    pub chain: String,
    /// Block number.
    #[schemars(required, extend("type" = ["integer", "null"]))]
    pub number: Option<u64>,
    /// Block time, Unix seconds.
    #[schemars(required, extend("type" = ["integer", "null"]))]
    pub timestamp: Option<u64>,
    /// Block hash, 0x and 64 lower-case hex digits.
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub hash: Option<String>,
    /// EIP-1559 base fee in gwei (exact decimal string); null on a chain without it.
    pub base_fee_gwei: Option<String>,
    /// Gas used by the block's transactions, decimal string.
    pub gas_used: Option<String>,
    /// The block's gas limit, decimal string.
    pub gas_limit: Option<String>,
}

/// The route.
pub struct BlockRoute;

impl Route for BlockRoute {
    type Input = BlockInput;
    type Prepared = Arc<EvmChain>;
    type Output = BlockOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/block",
        operation: "get_latest_block",
        family: Family::Chain,
        summary: "Latest block header",
        description: "The chain's latest block: number, timestamp, hash, EIP-1559 base fee in gwei, gas used and \
            gas limit. A field the node does not supply is null.",
        base_price: Price::micros(1_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
    };

    async fn prepare(input: BlockInput, ctx: &Context) -> Result<Arc<EvmChain>, EngineError> {
        ctx.chains.resolve(&input.chain, "/chain")
    }

    fn quote(_: &Arc<EvmChain>) -> Price {
        Self::INFO.base_price
    }

    async fn run(chain: Arc<EvmChain>, _: &Context) -> Result<Reply<BlockOutput>, EngineError> {
        let block = chain.deadline(read_latest_block(&chain)).await?;
        Ok(Reply::Json(BlockOutput {
            chain: chain.name().to_string(),
            number: block.number,
            timestamp: block.timestamp,
            hash: block.hash,
            base_fee_gwei: block.base_fee_per_gas.map(wei_to_gwei),
            gas_used: block.gas_used.map(|g| g.to_string()),
            gas_limit: block.gas_limit.map(|g| g.to_string()),
        }))
    }
}

/// What the routes use of a block header; each member is None when the node leaves it out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockHeader {
    /// Block number.
    pub number: Option<u64>,
    /// Unix seconds.
    pub timestamp: Option<u64>,
    /// Lower-case 0x hex.
    pub hash: Option<String>,
    /// EIP-1559 base fee in wei.
    pub base_fee_per_gas: Option<U256>,
    /// Gas used.
    pub gas_used: Option<U256>,
    /// Gas limit.
    pub gas_limit: Option<U256>,
}

/// The latest block's header, read leniently: a missing member is None, a malformed one
/// (a number that is not a quantity) makes the answer unusable.
pub async fn read_latest_block(chain: &EvmChain) -> Result<BlockHeader, EngineError> {
    let block: Value = chain.request("eth_getBlockByNumber", ("latest", false)).await?;
    latest_header(chain, &block)
}

/// The header of `block`, `chain`'s answer to `eth_getBlockByNumber("latest", false)`, read
/// as [`read_latest_block`] reads it (for callers that batch the request with others).
pub fn latest_header(chain: &EvmChain, block: &Value) -> Result<BlockHeader, EngineError> {
    parse_header(block).map_err(|why| {
        EngineError::new(
            ErrorKind::BadUpstream,
            "upstream_error",
            format!("the {} RPC's latest block is not usable: {why}", chain.name()),
        )
    })
}

fn parse_header(block: &Value) -> Result<BlockHeader, String> {
    let object = block.as_object().ok_or("it is not a JSON object")?;
    let quantity = |key: &str| -> Result<Option<U256>, String> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => {
                parse_quantity(text).map(Some).ok_or_else(|| format!("`{key}` is not a quantity"))
            }
            Some(_) => Err(format!("`{key}` is not a quantity")),
        }
    };
    let small = |key: &str| -> Result<Option<u64>, String> {
        quantity(key)?.map(|q| u64::try_from(q).map_err(|_| format!("`{key}` is out of range"))).transpose()
    };
    let hash = match object.get("hash") {
        None | Some(Value::Null) => None,
        Some(Value::String(text))
            if text.len() == 66 && text.starts_with("0x") && text.bytes().skip(2).all(|b| b.is_ascii_hexdigit()) =>
        {
            Some(text.to_ascii_lowercase())
        }
        Some(_) => return Err("`hash` is not a 32-byte hash".into()),
    };
    Ok(BlockHeader {
        number: small("number")?,
        timestamp: small("timestamp")?,
        hash,
        base_fee_per_gas: quantity("baseFeePerGas")?,
        gas_used: quantity("gasUsed")?,
        gas_limit: quantity("gasLimit")?,
    })
}

/// Wei as an exact decimal number of gwei.
pub fn wei_to_gwei(wei: U256) -> String {
    format_units(wei, 9)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_members_are_none_and_malformed_ones_refused() {
        let header = parse_header(&json!({"number": "0x10", "timestamp": "0x5", "gasLimit": "0x1c9c380"})).unwrap();
        assert_eq!(header.number, Some(16));
        assert_eq!(header.hash, None);
        assert_eq!(header.base_fee_per_gas, None);
        assert_eq!(header.gas_limit, Some(U256::from(30_000_000u64)));
        assert!(parse_header(&json!({"number": 16})).is_err());
        assert!(parse_header(&json!({"number": "0x"})).is_err());
        assert!(parse_header(&json!({"hash": "0x12"})).is_err());
        assert!(parse_header(&json!({"number": format!("0x{}", "f".repeat(20))})).is_err());
        assert!(parse_header(&json!(null)).is_err());
        assert!(parse_header(&json!("0x1")).is_err());
    }

    #[test]
    fn gwei_is_exact() {
        assert_eq!(wei_to_gwei(U256::from(1_234_567_891u64)), "1.234567891");
        assert_eq!(wei_to_gwei(U256::from(7u64)), "0.000000007");
    }
}
