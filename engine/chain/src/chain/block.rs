//! `POST /v1/chain/block`: the latest block's header.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::evm::block_header::{read_latest_block, wei_to_gwei};
use crate::evm::{ChainName, EvmChain};
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
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
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
