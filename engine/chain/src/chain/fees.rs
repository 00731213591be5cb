//! `POST /v1/chain/fees`: the recent fee market from one `eth_feeHistory` request: base fee
//! per block and the next one, priority-fee percentiles per block, EIP-1559 suggestions
//! (slow, normal, fast) and the blob base fee where the chain has blobs.
//!
//! Suggestions take the median over the non-empty blocks of the 10th, 50th and 90th
//! priority-fee percentiles, and a max fee of twice the next block's base fee plus that tip,
//! which stays valid through six full blocks of base-fee rises.

use std::sync::Arc;

use alloy::primitives::U256;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::{EngineError, ErrorKind};
use crate::evm::block_header::wei_to_gwei;
use crate::evm::node_json::small;
use crate::evm::{ChainName, EvmChain, parse_quantity};
use crate::output::Reply;
use crate::price::Price;

/// Most blocks one call reads (the JSON-RPC limit of most nodes).
pub const MAX_BLOCKS: u64 = 1024;
/// Most percentiles one call asks for.
pub const MAX_PERCENTILES: usize = 10;
/// The percentiles the suggestions are made of: slow, normal, fast.
const SUGGESTED: [f64; 3] = [10.0, 50.0, 90.0];

/// Request of `/v1/chain/fees`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FeesInput {
    /// Chain to read: `ethereum`, `base` or `polygon`.
    pub chain: ChainName,
    /// How many recent blocks to read, 1 to 1024. Default 20.
    #[serde(default = "default_blocks")]
    #[schemars(range(min = 1, max = 1024))]
    pub blocks: u64,
    /// Priority-fee percentiles to report per block, each 0 to 100, ascending, at most 10. Default [10, 50, 90].
    #[serde(default = "default_percentiles")]
    #[schemars(length(min = 1, max = 10), inner(range(min = 0, max = 100)))]
    pub percentiles: Vec<f64>,
}

fn default_blocks() -> u64 {
    20
}

fn default_percentiles() -> Vec<f64> {
    SUGGESTED.to_vec()
}

/// One fee suggestion.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FeeSuggestion {
    /// `maxPriorityFeePerGas` to set, in wei.
    pub max_priority_fee_per_gas_wei: String,
    /// `maxFeePerGas` to set, in wei: twice the next block's base fee plus the tip.
    pub max_fee_per_gas_wei: String,
    /// `max_fee_per_gas_wei` in gwei.
    pub max_fee_per_gas_gwei: String,
}

/// Fee suggestions for an EIP-1559 transaction.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FeeSuggestions {
    /// The median 10th-percentile tip: cheap, may wait a few blocks.
    pub slow: FeeSuggestion,
    /// The median 50th-percentile tip.
    pub normal: FeeSuggestion,
    /// The median 90th-percentile tip: included promptly.
    pub fast: FeeSuggestion,
}

/// Answer of `/v1/chain/fees`. Fees are exact decimal strings in wei.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FeesOutput {
    /// Chain read.
    pub chain: String,
    /// First block read.
    pub oldest_block: u64,
    /// Last block read (the latest).
    pub newest_block: u64,
    /// Base fee per gas of each block read, oldest first.
    pub base_fee_per_gas_wei: Vec<String>,
    /// The base fee of the block after the newest, as the protocol sets it.
    pub next_base_fee_per_gas_wei: String,
    /// `next_base_fee_per_gas_wei` in gwei.
    pub next_base_fee_per_gas_gwei: String,
    /// Gas used ÷ gas limit of each block, oldest first.
    pub gas_used_ratio: Vec<f64>,
    /// The percentiles asked for, in order.
    pub percentiles: Vec<f64>,
    /// Per block (oldest first), the priority fee paid at each percentile of `percentiles`, weighted by gas.
    pub rewards_wei: Vec<Vec<String>>,
    /// Suggestions for the next block.
    pub suggestions: FeeSuggestions,
    /// The blob base fee (EIP-4844) of the block after the newest, in wei; null on a chain without blobs.
    pub next_blob_base_fee_wei: Option<String>,
}

/// A checked request.
pub struct FeesRequest {
    chain: Arc<EvmChain>,
    blocks: u64,
    percentiles: Vec<f64>,
}

/// The route.
pub struct FeesRoute;

impl Route for FeesRoute {
    type Input = FeesInput;
    type Prepared = FeesRequest;
    type Output = FeesOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/fees",
        operation: "get_fee_history",
        family: Family::Chain,
        summary: "Fee history percentiles, slow/normal/fast suggestions, blob base fee",
        description: "The fee market of the last 1 to 1024 blocks (20 by default) from one eth_feeHistory read: base \
            fee per block and for the next block, gas used ratios, priority-fee percentiles per block (10, 50 and 90 \
            by default), EIP-1559 suggestions (slow, normal, fast: the median tip at those percentiles over non-empty \
            blocks, max fee twice the next base fee plus the tip) and the next blob base fee where the chain has blobs.",
        base_price: Price::micros(1_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: FeesInput, ctx: &Context) -> Result<FeesRequest, EngineError> {
        let chain = ctx.chains.resolve(&input.chain, "/chain")?;
        if !(1..=MAX_BLOCKS).contains(&input.blocks) {
            return Err(EngineError::invalid(
                "/blocks",
                format!("/blocks: read 1 to {MAX_BLOCKS} blocks, not {}", input.blocks),
            ));
        }
        let p = &input.percentiles;
        if p.is_empty() || p.len() > MAX_PERCENTILES {
            return Err(EngineError::invalid(
                "/percentiles",
                format!("/percentiles: give 1 to {MAX_PERCENTILES} percentiles, not {}", p.len()),
            ));
        }
        for (i, value) in p.iter().enumerate() {
            if !(0.0..=100.0).contains(value) {
                return Err(EngineError::invalid(
                    format!("/percentiles/{i}"),
                    format!("/percentiles/{i}: {value} is not a percentile from 0 to 100"),
                ));
            }
            if i > 0 && *value <= p[i - 1] {
                return Err(EngineError::invalid_with(
                    "inconsistent_fields",
                    format!("/percentiles/{i}"),
                    format!(
                        "/percentiles/{i}: percentiles go in ascending order without repeats; {value} follows {}",
                        p[i - 1]
                    ),
                ));
            }
        }
        Ok(FeesRequest { chain, blocks: input.blocks, percentiles: input.percentiles })
    }

    fn quote(_: &FeesRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: FeesRequest, _: &Context) -> Result<Reply<FeesOutput>, EngineError> {
        let FeesRequest { chain, blocks, percentiles } = request;
        // The caller's percentiles and the suggestions', in one ascending list.
        let mut asked = percentiles.clone();
        asked.extend(SUGGESTED);
        asked.sort_by(f64::total_cmp);
        asked.dedup();
        let answer: Value =
            chain.deadline(chain.request("eth_feeHistory", (format!("{blocks:#x}"), "latest", asked.clone()))).await?;
        let out = parse(chain.name(), &answer, &asked, &percentiles).map_err(|why| {
            EngineError::new(
                ErrorKind::BadUpstream,
                "upstream_error",
                format!("the {} RPC's fee history is not usable: {why}", chain.name()),
            )
        })?;
        Ok(Reply::Json(out))
    }
}

fn quantities(object: &Map<String, Value>, key: &str) -> Result<Option<Vec<U256>>, String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().and_then(parse_quantity).ok_or_else(|| format!("`{key}` holds a non-quantity")))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(format!("`{key}` is not a list")),
    }
}

fn parse(chain: &str, answer: &Value, asked: &[f64], wanted: &[f64]) -> Result<FeesOutput, String> {
    let object = answer.as_object().ok_or("it is not a JSON object")?;
    let oldest = small(object, "oldestBlock")?.ok_or("it has no oldestBlock")?;
    let base_fees = quantities(object, "baseFeePerGas")?.ok_or("it has no baseFeePerGas")?;
    let ratios: Vec<f64> = match object.get("gasUsedRatio") {
        Some(Value::Array(items)) => {
            items.iter().map(|v| v.as_f64().ok_or("`gasUsedRatio` holds a non-number")).collect::<Result<_, _>>()?
        }
        _ => return Err("it has no gasUsedRatio".into()),
    };
    let blocks = ratios.len();
    if blocks == 0 || base_fees.len() != blocks + 1 {
        return Err(format!("{} base fees for {blocks} blocks", base_fees.len()));
    }
    let rewards: Vec<Vec<U256>> = match object.get("reward") {
        Some(Value::Array(rows)) if rows.len() == blocks => rows
            .iter()
            .map(|row| match row {
                Value::Array(cells) if cells.len() == asked.len() => cells
                    .iter()
                    .map(|c| c.as_str().and_then(parse_quantity).ok_or("a reward is not a quantity"))
                    .collect::<Result<Vec<_>, _>>(),
                _ => Err("a reward row does not have one value per percentile"),
            })
            .collect::<Result<_, _>>()?,
        _ => return Err("it has no reward row per block".into()),
    };
    let column = |p: f64| asked.iter().position(|a| *a == p).unwrap_or_default();
    let next_base = base_fees[blocks];
    let suggestion = |p: f64| {
        let at = column(p);
        let mut tips: Vec<U256> =
            rewards.iter().zip(&ratios).filter(|(_, ratio)| **ratio > 0.0).map(|(row, _)| row[at]).collect();
        tips.sort();
        let tip = tips.get(tips.len() / 2).copied().unwrap_or_default();
        let max_fee = next_base.saturating_mul(U256::from(2)).saturating_add(tip);
        FeeSuggestion {
            max_priority_fee_per_gas_wei: tip.to_string(),
            max_fee_per_gas_wei: max_fee.to_string(),
            max_fee_per_gas_gwei: wei_to_gwei(max_fee),
        }
    };
    let blob = quantities(object, "baseFeePerBlobGas")?.and_then(|fees| fees.get(blocks).copied());
    let suggestions = FeeSuggestions {
        slow: suggestion(SUGGESTED[0]),
        normal: suggestion(SUGGESTED[1]),
        fast: suggestion(SUGGESTED[2]),
    };
    Ok(FeesOutput {
        chain: chain.to_string(),
        oldest_block: oldest,
        newest_block: oldest + blocks as u64 - 1,
        base_fee_per_gas_wei: base_fees[..blocks].iter().map(ToString::to_string).collect(),
        next_base_fee_per_gas_wei: next_base.to_string(),
        next_base_fee_per_gas_gwei: wei_to_gwei(next_base),
        gas_used_ratio: ratios,
        percentiles: wanted.to_vec(),
        rewards_wei: rewards.iter().map(|row| wanted.iter().map(|p| row[column(*p)].to_string()).collect()).collect(),
        suggestions,
        // A chain without blobs reports zeros.
        next_blob_base_fee_wei: blob.filter(|fee| !fee.is_zero()).map(|fee| fee.to_string()),
    })
}
