//! `POST /v1/chain/balance`: an address's native balance, or its balance of one ERC-20 token.

use std::sync::Arc;

use alloy::primitives::U256;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::evm::erc20::read_erc20;
use crate::evm::{ChainName, EvmAddress, EvmChain, format_units};
use crate::output::Reply;
use crate::price::Price;

/// Decimals of the native coin of every supported chain (ETH, POL).
const NATIVE_DECIMALS: u8 = 18;

/// Request of `/v1/chain/balance`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BalanceInput {
    /// Chain to read: `ethereum`, `base` or `polygon`.
    pub chain: ChainName,
    /// Account whose balance is read, 0x and 40 hex digits (any case).
    pub address: EvmAddress,
    /// ERC-20 token contract; omit (or null) for the native balance.
    #[serde(default)]
    pub token: Option<EvmAddress>,
}

/// `native` or `erc20`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "BalanceAsset")]
pub enum Asset {
    /// The chain's own coin.
    Native,
    /// An ERC-20 token.
    Erc20,
}

/// Answer of `/v1/chain/balance`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BalanceOutput {
    /// Chain read.
    pub chain: String,
    /// Account, lower-case.
    pub address: String,
    /// `native` or `erc20`.
    pub asset: Asset,
    /// Native balance in wei, decimal string (native only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "string"))]
    pub wei: Option<String>,
    /// Token contract, lower-case (erc20 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "string"))]
    pub token: Option<String>,
    /// Token symbol as the contract returns it, untrusted data, at most 256 characters; null when it has none (erc20 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol: Option<Option<String>>,
    /// Token decimals; null when the contract does not say (erc20 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decimals: Option<Option<u8>>,
    /// Token balance in base units, decimal string (erc20 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "string"))]
    pub raw: Option<String>,
    /// Balance with the decimals applied, exact decimal string (18 for the native coin; base units when a token's decimals are unknown).
    pub formatted: String,
}

/// A checked balance request.
pub struct BalanceRequest {
    chain: Arc<EvmChain>,
    address: EvmAddress,
    token: Option<EvmAddress>,
}

/// The route.
pub struct BalanceRoute;

impl Route for BalanceRoute {
    type Input = BalanceInput;
    type Prepared = BalanceRequest;
    type Output = BalanceOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/balance",
        operation: "get_wallet_balance",
        family: Family::Chain,
        summary: "Native or ERC-20 balance of an address",
        description: "The native balance of an address in wei and in whole coins, or, with `token`, its balance of \
            that ERC-20 token in base units and with the token's decimals applied, with the token's symbol \
            (untrusted data from the contract). Amounts are exact decimal strings. A `token` that is not an \
            ERC-20 contract is an input error.",
        base_price: Price::micros(2_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: BalanceInput, ctx: &Context) -> Result<BalanceRequest, EngineError> {
        let chain = ctx.chains.resolve(&input.chain, "/chain")?;
        Ok(BalanceRequest { chain, address: input.address, token: input.token })
    }

    fn quote(_: &BalanceRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: BalanceRequest, _: &Context) -> Result<Reply<BalanceOutput>, EngineError> {
        let BalanceRequest { chain, address, token } = request;
        let answer = match token {
            None => {
                let wei: U256 = chain.deadline(chain.request("eth_getBalance", (address.0, "latest"))).await?;
                BalanceOutput {
                    chain: chain.name().to_string(),
                    address: address.text(),
                    asset: Asset::Native,
                    wei: Some(wei.to_string()),
                    token: None,
                    symbol: None,
                    decimals: None,
                    raw: None,
                    formatted: format_units(wei, NATIVE_DECIMALS),
                }
            }
            Some(token) => {
                let reads = chain.deadline(read_erc20(&chain, token.0, address.0)).await?;
                let why = if !reads.has_code {
                    Some("has no code")
                } else if !reads.is_erc20() {
                    Some("does not answer totalSupply() and balanceOf(address) as an ERC-20 token")
                } else {
                    None
                };
                if let Some(why) = why {
                    return Err(EngineError::invalid_with(
                        "not_a_token",
                        "/token",
                        format!("/token: {} {why} on {}", token.text(), chain.name()),
                    ));
                }
                let raw = reads.balance.unwrap_or_default();
                BalanceOutput {
                    chain: chain.name().to_string(),
                    address: address.text(),
                    asset: Asset::Erc20,
                    wei: None,
                    token: Some(token.text()),
                    symbol: Some(reads.symbol),
                    decimals: Some(reads.decimals),
                    raw: Some(raw.to_string()),
                    formatted: format_units(raw, reads.decimals.unwrap_or(0)),
                }
            }
        };
        Ok(Reply::Json(answer))
    }
}
