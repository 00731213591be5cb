//! `POST /v1/chain/status`: every configured EVM chain at once: its id, head block, how old
//! the head is and how long its node took to answer. One chain that cannot be read is
//! reported as such; it does not fail the others.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::evm::block_header::latest_header;
use crate::evm::{ChainName, EvmChain};
use crate::output::Reply;
use crate::price::Price;

/// Most chain names one call may list.
const MAX_CHAINS: usize = 32;

/// Request of `/v1/chain/status`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusInput {
    /// Only these chains (names of configured chains); every configured chain when omitted.
    #[serde(default)]
    #[schemars(length(max = MAX_CHAINS))]
    pub chains: Option<Vec<ChainName>>,
}

/// One chain's state.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ChainStatus {
    /// The chain's name.
    pub chain: String,
    /// Its EIP-155 chain id (the node's was checked to match).
    pub chain_id: u64,
    /// True when the node answered a usable latest block.
    pub ok: bool,
    /// The latest block's number; null when not ok.
    pub head_block: Option<u64>,
    /// The latest block's time, Unix seconds; null when not ok.
    pub head_timestamp: Option<u64>,
    /// Seconds from the latest block's time to now (0 when the block's clock is ahead); null when not ok. A head minutes old means a stalled node or chain.
    pub head_age_seconds: Option<u64>,
    /// Milliseconds until the node answered (or failed).
    pub latency_ms: u64,
    /// Why the chain could not be read; null when ok.
    pub error: Option<String>,
}

/// Answer of `/v1/chain/status`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StatusOutput {
    /// Each chain asked for, in configuration order.
    pub chains: Vec<ChainStatus>,
    /// How many chains answered.
    pub ok: u64,
}

/// The route.
pub struct StatusRoute;

impl Route for StatusRoute {
    type Input = StatusInput;
    type Prepared = Vec<std::sync::Arc<EvmChain>>;
    type Output = StatusOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/status",
        operation: "get_chain_status",
        family: Family::Chain,
        summary: "Every configured chain: chain id, head block, age, RPC latency",
        description: "Reads the latest block of every configured EVM chain (or the ones listed) at the same time and \
            answers, per chain, its chain id, head block and time, the head's age in seconds and the node's latency. \
            A chain that cannot be read is listed with ok false and the reason, without failing the others.",
        base_price: Price::micros(1_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: StatusInput, ctx: &Context) -> Result<Self::Prepared, EngineError> {
        match input.chains {
            None => Ok(ctx.chains.names().into_iter().filter_map(|n| ctx.chains.get(n).cloned()).collect()),
            Some(names) if names.len() > MAX_CHAINS => Err(EngineError::invalid(
                "/chains",
                format!("/chains: at most {MAX_CHAINS} names, {} given", names.len()),
            )),
            Some(names) => {
                let mut chains: Vec<std::sync::Arc<EvmChain>> = Vec::with_capacity(names.len());
                for (i, name) in names.iter().enumerate() {
                    let chain = ctx.chains.resolve(name, &format!("/chains/{i}"))?;
                    if !chains.iter().any(|c| c.name() == chain.name()) {
                        chains.push(chain);
                    }
                }
                Ok(chains)
            }
        }
    }

    fn quote(_: &Self::Prepared) -> Price {
        Self::INFO.base_price
    }

    async fn run(chains: Self::Prepared, _: &Context) -> Result<Reply<StatusOutput>, EngineError> {
        let reads = chains.iter().map(|chain| async move {
            let started = Instant::now();
            let read = chain
                .deadline(async {
                    let block: Value = chain.request("eth_getBlockByNumber", ("latest", false)).await?;
                    latest_header(chain, &block)
                })
                .await;
            (chain, read, started.elapsed())
        });
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default();
        let mut out = Vec::with_capacity(chains.len());
        for (chain, read, took) in futures::future::join_all(reads).await {
            let latency_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
            let status = match read {
                Ok(header) if header.number.is_some() && header.timestamp.is_some() => ChainStatus {
                    chain: chain.name().to_string(),
                    chain_id: chain.chain_id(),
                    ok: true,
                    head_block: header.number,
                    head_timestamp: header.timestamp,
                    head_age_seconds: header.timestamp.map(|t| now.saturating_sub(t)),
                    latency_ms,
                    error: None,
                },
                Ok(_) => failed(chain, latency_ms, "the latest block has no number or timestamp".into()),
                Err(error) => failed(chain, latency_ms, error.message),
            };
            out.push(status);
        }
        Ok(Reply::Json(StatusOutput { ok: out.iter().filter(|s| s.ok).count() as u64, chains: out }))
    }
}

fn failed(chain: &EvmChain, latency_ms: u64, error: String) -> ChainStatus {
    ChainStatus {
        chain: chain.name().to_string(),
        chain_id: chain.chain_id(),
        ok: false,
        head_block: None,
        head_timestamp: None,
        head_age_seconds: None,
        latency_ms,
        error: Some(error),
    }
}
