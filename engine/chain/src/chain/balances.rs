//! `POST /v1/chain/balances`: an address's native balance and its balances of up to 50
//! ERC-20 tokens, with each token's symbol and decimals, read in one JSON-RPC batch at one
//! block. A token that does not answer like an ERC-20 is reported as such without failing
//! the others.

use std::sync::Arc;

use alloy::primitives::{Address, U256};
use alloy::rpc::client::Waiter;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::evm::block_ref::BlockRef;
use crate::evm::call::{View, ViewBatch, first_word};
use crate::evm::erc20::{BALANCE_OF, DECIMALS, SYMBOL, decode_text};
use crate::evm::{ChainName, EvmAddress, EvmChain, address_text, address_word, format_units};
use crate::output::Reply;
use crate::price::Price;

/// Most tokens one call reads.
pub const MAX_TOKENS: usize = 50;
/// Decimals of the native coin of every supported chain (ETH, POL).
const NATIVE_DECIMALS: u8 = 18;

/// Request of `/v1/chain/balances`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BalancesInput {
    /// Chain to read: `ethereum`, `base` or `polygon`.
    pub chain: ChainName,
    /// The holder, 0x and 40 hex digits.
    pub address: EvmAddress,
    /// ERC-20 token contracts to read the holder's balance of, at most 50, no repeats; none for the native balance alone.
    #[serde(default)]
    #[schemars(length(max = 50), extend("uniqueItems" = true))]
    pub tokens: Vec<EvmAddress>,
}

/// The native balance.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NativeBalance {
    /// In wei.
    pub wei: String,
    /// In whole coins (ETH, POL), exact decimal string.
    pub formatted: String,
}

/// One token's balance.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TokenBalance {
    /// The token contract, lower-case.
    pub token: String,
    /// True when the token answered `balanceOf`; false when it is not an ERC-20 (no code, or the call reverted), and then `error` says so.
    pub ok: bool,
    /// `symbol()`, untrusted text from the chain; null when it does not answer one.
    pub symbol: Option<String>,
    /// `decimals()`; null when it does not answer one (then `formatted` is null too).
    pub decimals: Option<u8>,
    /// The balance in the token's smallest unit, decimal string; null when not ok.
    pub raw: Option<String>,
    /// The balance in whole tokens (`raw` with `decimals` decimals), exact decimal string; null without decimals.
    pub formatted: Option<String>,
    /// Why the balance could not be read; null when ok.
    pub error: Option<String>,
}

/// Answer of `/v1/chain/balances`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BalancesOutput {
    /// Chain read.
    pub chain: String,
    /// The holder, lower-case.
    pub address: String,
    /// The block every balance was read at.
    pub block: u64,
    /// The native balance.
    pub native: NativeBalance,
    /// The tokens, in the order given.
    pub tokens: Vec<TokenBalance>,
    /// How many tokens the holder has a non-zero balance of.
    pub non_zero: u64,
}

/// A checked request.
pub struct BalancesRequest {
    chain: Arc<EvmChain>,
    address: EvmAddress,
    tokens: Vec<Address>,
}

/// The route.
pub struct BalancesRoute;

impl Route for BalancesRoute {
    type Input = BalancesInput;
    type Prepared = BalancesRequest;
    type Output = BalancesOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/balances",
        operation: "get_wallet_balances",
        family: Family::Chain,
        summary: "Native and up to 50 ERC-20 balances in one batched read",
        description: "An address's native balance and its balances of up to 50 ERC-20 tokens, each with its symbol \
            and decimals and formatted, all read at one block in one JSON-RPC batch. A token that is not an ERC-20 \
            is listed with ok false and the reason, without failing the others. Amounts are exact decimal strings.",
        base_price: Price::micros(3_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: BalancesInput, ctx: &Context) -> Result<BalancesRequest, EngineError> {
        let chain = ctx.chains.resolve(&input.chain, "/chain")?;
        if input.tokens.len() > MAX_TOKENS {
            return Err(EngineError::invalid(
                "/tokens",
                format!("/tokens: at most {MAX_TOKENS} tokens in one call, {} given", input.tokens.len()),
            ));
        }
        let mut tokens: Vec<Address> = Vec::with_capacity(input.tokens.len());
        for (i, token) in input.tokens.iter().enumerate() {
            if tokens.contains(&token.0) {
                return Err(EngineError::invalid(
                    format!("/tokens/{i}"),
                    format!("/tokens/{i}: {} is listed twice", token.text()),
                ));
            }
            tokens.push(token.0);
        }
        Ok(BalancesRequest { chain, address: input.address, tokens })
    }

    fn quote(_: &BalancesRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: BalancesRequest, _: &Context) -> Result<Reply<BalancesOutput>, EngineError> {
        let BalancesRequest { chain, address, tokens } = request;
        let answer = chain.deadline(read_balances(&chain, address.0, &tokens)).await?;
        Ok(Reply::Json(answer))
    }
}

/// One token's three calls.
struct TokenCalls {
    balance: View,
    symbol: View,
    decimals: View,
}

async fn read_balances(chain: &EvmChain, holder: Address, tokens: &[Address]) -> Result<BalancesOutput, EngineError> {
    let block = BlockRef::Tag("latest").number_on(chain).await?;
    let tag = format!("{block:#x}");
    let mut batch = ViewBatch::new(chain, &tag);
    let native: Waiter<U256> = batch.request("eth_getBalance", &(holder, &tag))?;
    let mut calls = Vec::with_capacity(tokens.len());
    for token in tokens {
        calls.push(TokenCalls {
            balance: batch.view(token, [&BALANCE_OF[..], address_word(&holder).as_slice()].concat())?,
            symbol: batch.view(token, SYMBOL.to_vec())?,
            decimals: batch.view(token, DECIMALS.to_vec())?,
        });
    }
    batch.send().await?;
    let native = native.await.map_err(|e| chain.error("eth_getBalance", e))?;
    let mut out = Vec::with_capacity(tokens.len());
    for (token, calls) in tokens.iter().zip(calls) {
        let balance = calls.balance.answer(chain).await?;
        let symbol = calls.symbol.answer(chain).await?;
        let decimals = calls.decimals.word(chain).await?;
        let decimals = decimals.and_then(|d| u8::try_from(d).ok());
        let entry = match balance.as_deref().and_then(first_word) {
            Some(raw) => TokenBalance {
                token: address_text(token),
                ok: true,
                symbol: symbol.as_deref().and_then(decode_text),
                decimals,
                raw: Some(raw.to_string()),
                formatted: decimals.map(|d| format_units(raw, d)),
                error: None,
            },
            None => TokenBalance {
                token: address_text(token),
                ok: false,
                symbol: None,
                decimals: None,
                raw: None,
                formatted: None,
                error: Some(match balance {
                    None => "balanceOf(address) reverted: not an ERC-20 token".into(),
                    Some(data) if data.is_empty() => {
                        "balanceOf(address) answered nothing: no contract at this address".into()
                    }
                    Some(data) => format!("balanceOf(address) answered {} bytes, not a number", data.len()),
                }),
            },
        };
        out.push(entry);
    }
    Ok(BalancesOutput {
        chain: chain.name().to_string(),
        address: address_text(&holder),
        block,
        native: NativeBalance { wei: native.to_string(), formatted: format_units(native, NATIVE_DECIMALS) },
        non_zero: out.iter().filter(|t| t.raw.as_deref().is_some_and(|r| r != "0")).count() as u64,
        tokens: out,
    })
}
