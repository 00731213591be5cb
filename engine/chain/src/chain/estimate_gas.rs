//! `POST /v1/chain/estimate-gas`: the gas a call or transfer would take, and what that gas
//! costs at the node's gas price, in native units and in US dollars from the chain's
//! Chainlink ETH/USD feed (the oracle route's feeds). One JSON-RPC batch: the estimate, the
//! gas price and the feed's latest round. A call that would revert is answered with its
//! revert reason, not an estimate.

use std::sync::Arc;

use alloy::primitives::U256;
use alloy::rpc::client::Waiter;
use alloy::transports::RpcError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::chain::price::{self, OracleChain, Pair};
use crate::context::Context;
use crate::error::EngineError;
use crate::evm::abi::{self, Revert};
use crate::evm::block_header::wei_to_gwei;
use crate::evm::call::{CallOutcome, ViewBatch, call_spec, outcome};
use crate::evm::{ChainName, EvmAddress, EvmChain, format_units};
use crate::output::Reply;
use crate::price::Price;

/// Decimals of the native coin of every supported chain (ETH, POL).
const NATIVE_DECIMALS: u8 = 18;
/// Decimals of the dollar amounts answered (hundredths of a cent).
const USD_DECIMALS: u8 = 4;

/// Request of `/v1/chain/estimate-gas`: give the call as `data` or as `signature` with `args`, not both; neither for a plain transfer.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
// Not both `data` and `signature`; `args` only with a `signature` (a null counts as absent).
#[schemars(extend(
    "not" = { "required": ["data", "signature"], "properties": { "data": { "type": "string" }, "signature": { "type": "string" } } },
    "if" = { "required": ["args"], "not": { "properties": { "args": { "type": "null" } } } },
    "then" = { "required": ["signature"], "not": { "properties": { "signature": { "type": "null" } } } }
))]
pub struct EstimateGasInput {
    /// Chain to read: `ethereum`, `base` or `polygon`.
    pub chain: ChainName,
    /// The recipient or contract called, 0x and 40 hex digits.
    pub to: EvmAddress,
    /// The sender, 0x and 40 hex digits; it must be able to pay `value`. The zero address when omitted.
    #[serde(default)]
    pub from: Option<EvmAddress>,
    /// Native value sent, in wei: a decimal string or 0x hex. Default 0.
    #[serde(default)]
    #[schemars(regex(pattern = crate::patterns::uint256()))]
    pub value: Option<String>,
    /// Raw calldata, 0x hex. Use this or `signature`.
    #[serde(default)]
    #[schemars(regex(pattern = r"^0[xX]([0-9a-fA-F]{2})*$"), length(max = 262146))]
    pub data: Option<String>,
    /// The function called: `transfer(address,uint256)`. Use this or `data`.
    #[serde(default)]
    #[schemars(length(min = 1, max = 1024), extend("format" = "solidity-function"))]
    pub signature: Option<String>,
    /// One value per parameter of `signature`, in order.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub args: Option<Vec<Value>>,
    /// The contract's custom errors, to explain a revert.
    #[serde(default)]
    #[schemars(
        length(max = 64),
        extend("items" = { "type": "string", "minLength": 1, "maxLength": 1024, "format": "solidity-function" })
    )]
    pub errors: Vec<String>,
}

/// What the gas costs.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GasCost {
    /// Gas price used (`eth_gasPrice`), in wei.
    pub gas_price_wei: String,
    /// The same in gwei.
    pub gas_price_gwei: String,
    /// gas × gas price, in wei.
    pub wei: String,
    /// The same in whole native coins (ETH, POL), exact decimal string.
    pub native: String,
    /// The same in US dollars at the oracle's price, rounded to 4 decimals; null when the chain has no ETH/USD feed here (polygon) or the feed has no valid answer (see `usd_note`).
    pub usd: Option<String>,
    /// The native coin's USD price used, from the Chainlink feed; null with `usd`.
    pub native_usd_price: Option<String>,
    /// Why `usd` is null, when it is.
    pub usd_note: Option<String>,
}

/// Answer of `/v1/chain/estimate-gas`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EstimateGasOutput {
    /// Chain read.
    pub chain: String,
    /// The calldata estimated, 0x hex.
    pub calldata: String,
    /// The value sent, in wei.
    pub value_wei: String,
    /// True when the call would succeed; false when it would revert (then `revert` says why and there is no estimate).
    pub success: bool,
    /// Gas units the call would take (`eth_estimateGas`); null when it would revert.
    pub gas: Option<u64>,
    /// What that gas costs; null when it would revert.
    pub cost: Option<GasCost>,
    /// Why the call would revert; null when it would succeed.
    pub revert: Option<Revert>,
}

/// A checked request.
pub struct EstimateGasRequest {
    chain: Arc<EvmChain>,
    tx: Value,
    calldata: Vec<u8>,
    value: U256,
    errors: Vec<crate::evm::signatures::Signature>,
}

/// The route.
pub struct EstimateGasRoute;

impl Route for EstimateGasRoute {
    type Input = EstimateGasInput;
    type Prepared = EstimateGasRequest;
    type Output = EstimateGasOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/estimate-gas",
        operation: "estimate_gas",
        family: Family::Chain,
        summary: "Gas for a call or transfer, its cost in native units and USD",
        description: "Estimates the gas a call or native transfer would take (eth_estimateGas), and its cost at the \
            node's gas price in wei, in ETH or POL and in US dollars at the chain's Chainlink ETH/USD price (ethereum \
            and base; null on polygon), in one batched read. A call that would revert answers success false with the \
            revert reason decoded instead of an estimate.",
        base_price: Price::micros(2_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: EstimateGasInput, ctx: &Context) -> Result<EstimateGasRequest, EngineError> {
        let chain = ctx.chains.resolve(&input.chain, "/chain")?;
        let spec = call_spec(
            &input.to,
            input.from.as_ref(),
            input.value.as_deref(),
            input.data.as_deref(),
            input.signature.as_deref(),
            input.args.as_deref(),
        )?;
        let errors = abi::parse_errors(&input.errors, "/errors")?;
        Ok(EstimateGasRequest { chain, tx: spec.tx, calldata: spec.calldata, value: spec.value, errors })
    }

    fn quote(_: &EstimateGasRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: EstimateGasRequest, _: &Context) -> Result<Reply<EstimateGasOutput>, EngineError> {
        let chain = Arc::clone(&request.chain);
        let answer = chain.deadline(estimate(&request)).await?;
        Ok(Reply::Json(answer))
    }
}

/// The chain's ETH/USD feed, where the oracle route has one.
fn usd_feed(chain: &str) -> Option<&'static price::Feed> {
    let oracle = match chain {
        "ethereum" => OracleChain::Ethereum,
        "base" => OracleChain::Base,
        _ => return None,
    };
    price::find_feed(oracle, Pair::EthUsd)
}

async fn estimate(request: &EstimateGasRequest) -> Result<EstimateGasOutput, EngineError> {
    let EstimateGasRequest { chain, tx, calldata, value, errors } = request;
    let feed = usd_feed(chain.name());
    let mut batch = ViewBatch::new(chain, "latest");
    let gas: Waiter<U256> = batch.request("eth_estimateGas", &(tx, "latest"))?;
    let price: Waiter<U256> = batch.request("eth_gasPrice", &())?;
    let feed_calls = match feed {
        Some(feed) => Some((
            batch.view(&feed.proxy, price::LATEST_ROUND_DATA.to_vec())?,
            batch.view(&feed.proxy, price::DECIMALS.to_vec())?,
        )),
        None => None,
    };
    batch.send().await?;
    let mut answer = EstimateGasOutput {
        chain: chain.name().to_string(),
        calldata: format!("0x{}", hex::encode(calldata)),
        value_wei: value.to_string(),
        success: false,
        gas: None,
        cost: None,
        revert: None,
    };
    // An estimate that fails because the call reverts says so as eth_call would.
    let gas = match gas.await {
        Ok(gas) => gas,
        Err(RpcError::ErrorResp(payload)) if payload.message.to_ascii_lowercase().contains("insufficient funds") => {
            return Err(EngineError::invalid(
                "/from",
                format!(
                    "/from: the sender cannot pay the value and the gas on {} ({})",
                    chain.name(),
                    crate::evm::clean_text(&payload.message, 200)
                ),
            ));
        }
        Err(RpcError::ErrorResp(payload)) => match outcome(chain, Err(RpcError::ErrorResp(payload)))? {
            CallOutcome::Reverted(data) => {
                answer.revert = Some(abi::decode_revert(&data, errors));
                return Ok(answer);
            }
            CallOutcome::Returned(_) => unreachable!("an error answer is never a returned call"),
        },
        Err(other) => return Err(chain.error("eth_estimateGas", other)),
    };
    let gas = u64::try_from(gas).map_err(|_| {
        EngineError::new(
            crate::error::ErrorKind::BadUpstream,
            "upstream_error",
            format!("the {} RPC estimated {gas} gas, more than any block holds", chain.name()),
        )
    })?;
    let price = price.await.map_err(|e| chain.error("eth_gasPrice", e))?;
    let wei = price.saturating_mul(U256::from(gas));
    let (usd, native_usd_price, usd_note) = match (feed, feed_calls) {
        (Some(feed), Some((latest, decimals))) => {
            let (latest, decimals) = (latest.answer(chain).await?, decimals.answer(chain).await?);
            match price::decode_round(latest.as_ref().map(|b| &b[..]), decimals.as_ref().map(|b| &b[..])) {
                Ok(round) => {
                    // wei × price / 10^(18 + decimals - 4), rounded half up, as 4-decimal dollars.
                    let exponent = u64::from(NATIVE_DECIMALS) + u64::from(round.decimals) - u64::from(USD_DECIMALS);
                    match U256::from(10).checked_pow(U256::from(exponent)) {
                        Some(scale) => {
                            let cents = wei.saturating_mul(round.answer).saturating_add(scale / U256::from(2)) / scale;
                            (
                                Some(format_units(cents, USD_DECIMALS)),
                                Some(format_units(round.answer, round.decimals)),
                                None,
                            )
                        }
                        None => (None, None, Some(format!("the ETH/USD feed says {} decimals", round.decimals))),
                    }
                }
                Err(why) => (None, None, Some(format!("the ETH/USD feed {} has no valid answer: {why}", feed.proxy))),
            }
        }
        _ => (None, None, Some(format!("there is no native/USD oracle feed for {} here", chain.name()))),
    };
    answer.success = true;
    answer.gas = Some(gas);
    answer.cost = Some(GasCost {
        gas_price_wei: price.to_string(),
        gas_price_gwei: wei_to_gwei(price),
        wei: wei.to_string(),
        native: format_units(wei, NATIVE_DECIMALS),
        usd,
        native_usd_price,
        usd_note,
    });
    Ok(answer)
}
