//! `POST /v1/chain/nonce`: an account's transaction count, mined (`latest`) and counting
//! the node's pending pool (`pending`), read in one JSON-RPC batch.

use std::sync::Arc;

use alloy::primitives::U256;
use alloy::rpc::client::Waiter;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::{EngineError, ErrorKind};
use crate::evm::{ChainName, EvmAddress, EvmChain};
use crate::output::Reply;
use crate::price::Price;

/// Request of `/v1/chain/nonce`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NonceInput {
    /// Chain to read: `ethereum`, `base` or `polygon`.
    pub chain: ChainName,
    /// Account whose nonce is read, 0x and 40 hex digits (any case).
    pub address: EvmAddress,
}

/// Answer of `/v1/chain/nonce`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NonceOutput {
    /// Chain read.
    pub chain: String,
    /// Account, lower-case.
    pub address: String,
    /// Transactions mined from the account (`eth_getTransactionCount` at `latest`): the
    /// nonce its next transaction takes once the pending ones are mined.
    pub nonce: u64,
    /// The same counting the node's pending pool (`pending`): the nonce to sign next.
    pub pending_nonce: u64,
    /// Transactions of the account the node holds but has not mined (`pending_nonce - nonce`).
    pub pending: u64,
}

/// A checked request.
pub struct NonceRequest {
    chain: Arc<EvmChain>,
    address: EvmAddress,
}

/// The route.
pub struct NonceRoute;

impl Route for NonceRoute {
    type Input = NonceInput;
    type Prepared = NonceRequest;
    type Output = NonceOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/nonce",
        operation: "get_transaction_count",
        family: Family::Chain,
        summary: "Latest and pending nonce of an account",
        description: "How many transactions an account has sent: mined (`latest`) and counting the node's pending \
            pool (`pending`, the nonce to sign next), in one batched read.",
        base_price: Price::micros(1_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: NonceInput, ctx: &Context) -> Result<NonceRequest, EngineError> {
        Ok(NonceRequest { chain: ctx.chains.resolve(&input.chain, "/chain")?, address: input.address })
    }

    fn quote(_: &NonceRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: NonceRequest, _: &Context) -> Result<Reply<NonceOutput>, EngineError> {
        let NonceRequest { chain, address } = request;
        let (nonce, pending_nonce) = chain.deadline(read_nonces(&chain, &address)).await?;
        let text = |n: U256, tag: &str| {
            u64::try_from(n).map_err(|_| {
                EngineError::new(
                    ErrorKind::BadUpstream,
                    "upstream_error",
                    format!("the {} RPC answered a {tag} nonce of {n}, beyond any account's", chain.name()),
                )
            })
        };
        let (nonce, pending_nonce) = (text(nonce, "latest")?, text(pending_nonce, "pending")?);
        Ok(Reply::Json(NonceOutput {
            chain: chain.name().to_string(),
            address: address.text(),
            nonce,
            pending_nonce,
            // A node may report a pending count below the mined one while it reorganises.
            pending: pending_nonce.saturating_sub(nonce),
        }))
    }
}

/// The `latest` and `pending` transaction counts of `address`, in one batch.
async fn read_nonces(chain: &EvmChain, address: &EvmAddress) -> Result<(U256, U256), EngineError> {
    const METHOD: &str = "eth_getTransactionCount";
    let mut batch = chain.client().new_batch();
    let latest: Waiter<U256> = batch.add_call(METHOD, &(address.0, "latest")).map_err(|e| chain.error(METHOD, e))?;
    let pending: Waiter<U256> = batch.add_call(METHOD, &(address.0, "pending")).map_err(|e| chain.error(METHOD, e))?;
    batch.send().await.map_err(|e| chain.error(METHOD, e))?;
    let latest = latest.await.map_err(|e| chain.error(METHOD, e))?;
    let pending = pending.await.map_err(|e| chain.error(METHOD, e))?;
    Ok((latest, pending))
}
