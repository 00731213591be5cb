//! `POST /v1/chain/gas`: the current gas price and the latest block's base fee, read in one
//! JSON-RPC batch (one round trip).

use std::sync::Arc;

use alloy::primitives::U256;
use alloy::rpc::client::Waiter;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::evm::block_header::{BlockHeader, latest_header, wei_to_gwei};
use crate::evm::{ChainName, EvmChain};
use crate::output::Reply;
use crate::price::Price;

/// Request of `/v1/chain/gas`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GasInput {
    /// Chain to read: `ethereum`, `base` or `polygon`.
    pub chain: ChainName,
}

/// Answer of `/v1/chain/gas`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GasOutput {
    /// Chain read.
    pub chain: String,
    /// Gas price the node suggests (`eth_gasPrice`), in wei, as a decimal string.
    pub gas_price_wei: String,
    /// The same in gwei, exact decimal string.
    pub gas_price_gwei: String,
    /// The latest block's EIP-1559 base fee in gwei (exact decimal string); null on a chain without it.
    pub base_fee_gwei: Option<String>,
}

/// The route.
pub struct GasRoute;

impl Route for GasRoute {
    type Input = GasInput;
    type Prepared = Arc<EvmChain>;
    type Output = GasOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/gas",
        operation: "get_gas_price",
        family: Family::Chain,
        summary: "Current gas price and base fee",
        description: "The gas price the chain's node suggests (eth_gasPrice) in wei and gwei, and the latest block's \
            EIP-1559 base fee in gwei (null on a chain without it). Amounts are exact decimal strings.",
        base_price: Price::micros(1_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: GasInput, ctx: &Context) -> Result<Arc<EvmChain>, EngineError> {
        ctx.chains.resolve(&input.chain, "/chain")
    }

    fn quote(_: &Arc<EvmChain>) -> Price {
        Self::INFO.base_price
    }

    async fn run(chain: Arc<EvmChain>, _: &Context) -> Result<Reply<GasOutput>, EngineError> {
        let (price, block) = chain.deadline(read_gas(&chain)).await?;
        Ok(Reply::Json(GasOutput {
            chain: chain.name().to_string(),
            gas_price_wei: price.to_string(),
            gas_price_gwei: wei_to_gwei(price),
            base_fee_gwei: block.base_fee_per_gas.map(wei_to_gwei),
        }))
    }
}

/// The node's gas price and the latest block's header, in one JSON-RPC batch.
async fn read_gas(chain: &EvmChain) -> Result<(U256, BlockHeader), EngineError> {
    let mut batch = chain.client().new_batch();
    let price: Waiter<U256> = batch.add_call("eth_gasPrice", &()).map_err(|e| chain.error("eth_gasPrice", e))?;
    let block: Waiter<Value> = batch
        .add_call("eth_getBlockByNumber", &("latest", false))
        .map_err(|e| chain.error("eth_getBlockByNumber", e))?;
    batch.send().await.map_err(|e| chain.error("eth_gasPrice", e))?;
    let price = price.await.map_err(|e| chain.error("eth_gasPrice", e))?;
    let block = block.await.map_err(|e| chain.error("eth_getBlockByNumber", e))?;
    Ok((price, latest_header(chain, &block)?))
}
