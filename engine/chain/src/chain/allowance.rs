//! `POST /v1/chain/allowance`: how much of an owner's ERC-20 tokens a spender may move,
//! formatted with the token's decimals and flagged when it is unlimited (the maximum
//! value, or more than the token's whole supply), with the owner's balance beside it: all
//! read in one JSON-RPC batch.

use std::sync::Arc;

use alloy::primitives::U256;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::evm::call::ViewBatch;
use crate::evm::erc20::{BALANCE_OF, DECIMALS, SYMBOL, TOTAL_SUPPLY, decode_text};
use crate::evm::{ChainName, EvmAddress, EvmChain, address_word, format_units};
use crate::output::Reply;
use crate::price::Price;

/// `allowance(address,address)`.
const ALLOWANCE: [u8; 4] = [0xdd, 0x62, 0xed, 0x3e];

/// Request of `/v1/chain/allowance`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AllowanceInput {
    /// Chain to read: `ethereum`, `base` or `polygon`.
    pub chain: ChainName,
    /// The ERC-20 token contract, 0x and 40 hex digits.
    pub token: EvmAddress,
    /// Whose tokens, 0x and 40 hex digits.
    pub owner: EvmAddress,
    /// Who may move them (a router, a protocol, a wallet), 0x and 40 hex digits.
    pub spender: EvmAddress,
}

/// Answer of `/v1/chain/allowance`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AllowanceOutput {
    /// Chain read.
    pub chain: String,
    /// The token, lower-case.
    pub token: String,
    /// The owner, lower-case.
    pub owner: String,
    /// The spender, lower-case.
    pub spender: String,
    /// `symbol()`, untrusted text from the chain; null when the token does not answer one.
    pub symbol: Option<String>,
    /// `decimals()`; null when the token does not answer one.
    pub decimals: Option<u8>,
    /// The allowance in the token's smallest unit, decimal string.
    pub allowance_raw: String,
    /// The allowance in whole tokens; `unlimited` when `unlimited` is true; null without decimals.
    pub allowance: Option<String>,
    /// True when the spender may take everything the owner has now and later: the allowance is 2^256 - 1, or more than the token's total supply.
    pub unlimited: bool,
    /// True when the allowance is not zero.
    pub approved: bool,
    /// The owner's balance in the smallest unit, decimal string: what the spender could take now.
    pub owner_balance_raw: Option<String>,
    /// The owner's balance in whole tokens; null without decimals.
    pub owner_balance: Option<String>,
}

/// A checked request.
pub struct AllowanceRequest {
    chain: Arc<EvmChain>,
    token: EvmAddress,
    owner: EvmAddress,
    spender: EvmAddress,
}

/// The route.
pub struct AllowanceRoute;

impl Route for AllowanceRoute {
    type Input = AllowanceInput;
    type Prepared = AllowanceRequest;
    type Output = AllowanceOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/allowance",
        operation: "get_token_allowance",
        family: Family::Chain,
        summary: "ERC-20 allowance, formatted, flagged when unlimited",
        description: "How much of an owner's ERC-20 tokens a spender may move (allowance), in raw units and formatted \
            with the token's decimals, flagged unlimited when it is the maximum value or more than the whole supply, \
            with the owner's balance (what the spender could take now), in one batched read. An address that does \
            not answer allowance() is 422 naming `token`.",
        base_price: Price::micros(2_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: AllowanceInput, ctx: &Context) -> Result<AllowanceRequest, EngineError> {
        Ok(AllowanceRequest {
            chain: ctx.chains.resolve(&input.chain, "/chain")?,
            token: input.token,
            owner: input.owner,
            spender: input.spender,
        })
    }

    fn quote(_: &AllowanceRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: AllowanceRequest, _: &Context) -> Result<Reply<AllowanceOutput>, EngineError> {
        let chain = Arc::clone(&request.chain);
        let answer = chain.deadline(read_allowance(&request)).await?;
        Ok(Reply::Json(answer))
    }
}

async fn read_allowance(request: &AllowanceRequest) -> Result<AllowanceOutput, EngineError> {
    let AllowanceRequest { chain, token, owner, spender } = request;
    let mut batch = ViewBatch::new(chain, "latest");
    let allowance = batch.view(
        &token.0,
        [&ALLOWANCE[..], address_word(&owner.0).as_slice(), address_word(&spender.0).as_slice()].concat(),
    )?;
    let balance = batch.view(&token.0, [&BALANCE_OF[..], address_word(&owner.0).as_slice()].concat())?;
    let supply = batch.view(&token.0, TOTAL_SUPPLY.to_vec())?;
    let symbol = batch.view(&token.0, SYMBOL.to_vec())?;
    let decimals = batch.view(&token.0, DECIMALS.to_vec())?;
    batch.send().await?;
    let allowance = allowance.word(chain).await?.ok_or_else(|| {
        EngineError::invalid_with(
            "not_a_token",
            "/token",
            format!(
                "/token: {} does not answer allowance(address,address) on {}: it is not an ERC-20 token",
                token.text(),
                chain.name()
            ),
        )
    })?;
    let balance = balance.word(chain).await?;
    let supply = supply.word(chain).await?;
    let symbol = symbol.answer(chain).await?.as_deref().and_then(decode_text);
    let decimals = decimals.word(chain).await?.and_then(|d| u8::try_from(d).ok());
    let unlimited = allowance == U256::MAX || supply.is_some_and(|s| allowance > s);
    Ok(AllowanceOutput {
        chain: chain.name().to_string(),
        token: token.text(),
        owner: owner.text(),
        spender: spender.text(),
        symbol,
        decimals,
        allowance_raw: allowance.to_string(),
        allowance: if unlimited { Some("unlimited".into()) } else { decimals.map(|d| format_units(allowance, d)) },
        unlimited,
        approved: !allowance.is_zero(),
        owner_balance_raw: balance.map(|b| b.to_string()),
        owner_balance: balance.zip(decimals).map(|(b, d)| format_units(b, d)),
    })
}
