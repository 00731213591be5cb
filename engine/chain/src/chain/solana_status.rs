//! `POST /v1/solana/status`: a cluster's slot, block height, epoch and the priority fees of
//! recent slots as percentiles.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::output::Reply;
use crate::price::Price;
use crate::solana::keys::SolanaAddress;
use crate::solana::{COMMITMENT, Cluster, Network, bad, node_u64};

/// Most accounts a fee query may name (the node's own limit).
pub const MAX_FEE_ACCOUNTS: usize = 128;

/// Request of `/v1/solana/status`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SolanaStatusInput {
    /// Cluster to read: `mainnet` (default) or `devnet`.
    #[serde(default)]
    pub network: Network,
    /// Accounts a transaction would write (at most 128, no repeats): the fees are then those
    /// paid by recent transactions that wrote any of them (a busy market costs more than the
    /// cluster at large). Omit for the whole cluster.
    #[serde(default)]
    #[schemars(length(max = 128), extend("uniqueItems" = true))]
    pub accounts: Vec<SolanaAddress>,
}

/// Priority fees of recent slots, micro-lamports per compute unit.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "SolanaPriorityFees")]
pub struct PriorityFees {
    /// How many recent slots the node reported (up to 150).
    pub slots: u32,
    /// Of those, how many had a fee above zero.
    pub nonzero_slots: u32,
    /// Lowest.
    pub min: u64,
    /// 25th percentile.
    pub p25: u64,
    /// Median.
    pub p50: u64,
    /// 75th percentile.
    pub p75: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 95th percentile.
    pub p95: u64,
    /// Highest.
    pub max: u64,
}

/// Answer of `/v1/solana/status`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SolanaStatusOutput {
    /// Cluster read.
    pub network: Network,
    /// The genesis hash of the cluster the node serves.
    pub genesis_hash: String,
    /// The node's software version; null when it does not say.
    pub version: Option<String>,
    /// Current slot (confirmed).
    pub slot: u64,
    /// Current block height (slots that produced a block).
    pub block_height: u64,
    /// Current epoch.
    pub epoch: u64,
    /// The slot's index within the epoch.
    pub slot_index: u64,
    /// Slots in this epoch.
    pub slots_in_epoch: u64,
    /// How far the epoch is, percent with two decimals.
    pub epoch_progress_percent: f64,
    /// Transactions processed since genesis; null when the node does not say.
    pub transaction_count: Option<u64>,
    /// Per-slot priority fees of recent slots: each slot counts with the lowest fee that landed in it (for the `accounts` given, if any); null when the node reported no slot.
    pub priority_fees: Option<PriorityFees>,
}

/// A checked request.
pub struct SolanaStatusRequest {
    network: Network,
    accounts: Vec<SolanaAddress>,
}

/// The route.
pub struct SolanaStatusRoute;

impl Route for SolanaStatusRoute {
    type Input = SolanaStatusInput;
    type Prepared = SolanaStatusRequest;
    type Output = SolanaStatusOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/solana/status",
        operation: "get_solana_status",
        family: Family::Chain,
        summary: "Slot, block height, epoch and recent priority fees of a Solana cluster",
        description: "The cluster's current slot and block height, epoch with its progress, transaction count and \
            node version, and the priority fees of the recent slots the node reports (up to 150) as percentiles in \
            micro-lamports per compute unit, for the whole cluster or for the accounts a transaction would write.",
        base_price: Price::micros(1_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: SolanaStatusInput, ctx: &Context) -> Result<SolanaStatusRequest, EngineError> {
        ctx.solana.get(input.network)?;
        if input.accounts.len() > MAX_FEE_ACCOUNTS {
            return Err(EngineError::invalid(
                "/accounts",
                format!("/accounts: {} accounts; at most {MAX_FEE_ACCOUNTS}", input.accounts.len()),
            ));
        }
        for (i, account) in input.accounts.iter().enumerate() {
            if input.accounts[..i].contains(account) {
                return Err(EngineError::invalid(
                    format!("/accounts/{i}"),
                    format!("/accounts/{i}: {} is listed twice", account.as_str()),
                ));
            }
        }
        Ok(SolanaStatusRequest { network: input.network, accounts: input.accounts })
    }

    fn quote(_: &SolanaStatusRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: SolanaStatusRequest, ctx: &Context) -> Result<Reply<SolanaStatusOutput>, EngineError> {
        crate::solana::answer(ctx, request.network, async |cluster| read(cluster, &request.accounts).await).await
    }
}

async fn read(cluster: &Cluster, accounts: &[SolanaAddress]) -> Result<SolanaStatusOutput, EngineError> {
    let commitment = json!([{ "commitment": COMMITMENT }]);
    let addresses: Vec<&str> = accounts.iter().map(SolanaAddress::as_str).collect();
    let (epoch, height, fees, version) = tokio::try_join!(
        cluster.request::<Value>("getEpochInfo", commitment.clone()),
        cluster.request::<Value>("getBlockHeight", commitment.clone()),
        cluster.request::<Value>("getRecentPrioritizationFees", json!([addresses])),
        cluster.request::<Value>("getVersion", json!([])),
    )?;
    let slot_index = node_u64(&epoch["slotIndex"], "slotIndex")?;
    let slots_in_epoch = node_u64(&epoch["slotsInEpoch"], "slotsInEpoch")?;
    if slots_in_epoch == 0 || slot_index > slots_in_epoch {
        return Err(bad(format!("the node's epoch is at slot {slot_index} of {slots_in_epoch}")));
    }
    let progress = (slot_index as f64 * 10_000.0 / slots_in_epoch as f64).round() / 100.0;
    let samples = fees.as_array().ok_or_else(|| bad("the node's recent prioritization fees are not a list".into()))?;
    let mut per_slot: Vec<u64> =
        samples.iter().map(|s| node_u64(&s["prioritizationFee"], "prioritizationFee")).collect::<Result<_, _>>()?;
    per_slot.sort_unstable();
    Ok(SolanaStatusOutput {
        network: cluster.network(),
        genesis_hash: cluster.genesis_hash().to_string(),
        version: crate::solana::token::text(&version, "solana-core", 60),
        slot: node_u64(&epoch["absoluteSlot"], "absoluteSlot")?,
        block_height: node_u64(&height, "block height")?,
        epoch: node_u64(&epoch["epoch"], "epoch")?,
        slot_index,
        slots_in_epoch,
        epoch_progress_percent: progress,
        transaction_count: epoch.get("transactionCount").and_then(Value::as_u64),
        priority_fees: percentiles(&per_slot),
    })
}

/// Nearest-rank percentiles of sorted fees.
fn percentiles(sorted: &[u64]) -> Option<PriorityFees> {
    let (&min, &max) = (sorted.first()?, sorted.last()?);
    let rank = |p: usize| sorted[(p * sorted.len()).div_ceil(100).clamp(1, sorted.len()) - 1];
    Some(PriorityFees {
        slots: u32::try_from(sorted.len()).unwrap_or(u32::MAX),
        nonzero_slots: u32::try_from(sorted.iter().filter(|&&f| f > 0).count()).unwrap_or(u32::MAX),
        min,
        p25: rank(25),
        p50: rank(50),
        p75: rank(75),
        p90: rank(90),
        p95: rank(95),
        max,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let fees: Vec<u64> = (1..=100).collect();
        let p = percentiles(&fees).unwrap();
        assert_eq!((p.min, p.p25, p.p50, p.p75, p.p90, p.p95, p.max), (1, 25, 50, 75, 90, 95, 100));
        let p = percentiles(&[0, 0, 7]).unwrap();
        assert_eq!((p.slots, p.nonzero_slots, p.p50, p.p95), (3, 1, 0, 7));
        assert!(percentiles(&[]).is_none());
    }
}
