//! `POST /v1/chain/dex-price`: the spot price of a token pair in its Uniswap v3 pool on
//! Ethereum or Base, from the pool's `slot0` and `liquidity`.
//!
//! Pools are not looked up in the factory: a pool's address follows from the pair and its
//! fee tier (CREATE2 of the factory, the tokens sorted and the fee, Uniswap's pool init
//! code hash), so the four fee tiers' pools, their state and both tokens' symbols and
//! decimals are read in one JSON-RPC batch at one block. A tier whose address has no pool
//! answers nothing there. The deepest pool (most in-range liquidity) gives the price unless
//! the caller names a fee tier.
//!
//! The price is exact arithmetic on `sqrtPriceX96` (Q64.96): price of token0 in token1 =
//! sqrtPriceX96² / 2¹⁹² × 10^(decimals0 − decimals1), written with [`SIGNIFICANT`]
//! significant digits. A spot price is what one more unit trades at now: it is not a TWAP
//! and can be moved within a block by anyone with capital, which the answer says when the
//! pool is shallow.

use alloy::primitives::{Address, B256, U256, Uint, address, b256, keccak256};
use alloy::sol_types::SolValue;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::{EngineError, ErrorKind};
use crate::evm::block_ref::{BlockRef, explain};
use crate::evm::call::{View, ViewBatch};
use crate::evm::erc20::{DECIMALS, SYMBOL, decode_text};
use crate::evm::{ChainName, EvmAddress, EvmChain, address_text};
use crate::output::Reply;
use crate::price::Price;

/// Uniswap v3's pool init code hash, the same wherever its factory is deployed.
pub const POOL_INIT_CODE_HASH: B256 = b256!("e34f199b19b2b4f47f68442619d555527d244f78a3297ea89325f843f87b8b54");
/// The Uniswap v3 factory on each chain this route reads.
pub const FACTORIES: &[(&str, Address)] = &[
    ("ethereum", address!("0x1F98431c8aD98523631AE4a59f267346ea31F984")),
    ("base", address!("0x33128a8fC17869897dcE68Ed026d694621f6FDfD")),
];
/// The fee tiers the factory enables, in hundredths of a basis point.
pub const FEE_TIERS: [u32; 4] = [100, 500, 3_000, 10_000];
/// Significant digits of a price.
pub const SIGNIFICANT: usize = 18;
/// `slot0()`.
const SLOT0: [u8; 4] = [0x38, 0x50, 0xc7, 0xbd];
/// `liquidity()`.
const LIQUIDITY: [u8; 4] = [0x1a, 0x68, 0x65, 0x02];
/// A pool whose in-range liquidity is below this (in the pool's raw L units) is flagged shallow.
const SHALLOW_LIQUIDITY: u128 = 1_000_000_000;
/// Most decimals a token may declare for its price to be computed.
const MAX_DECIMALS: u8 = 77;

type U1024 = Uint<1024, 16>;

/// Request of `/v1/chain/dex-price`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DexPriceInput {
    /// Chain to read: `ethereum` or `base` (where Uniswap v3's factory is known).
    #[schemars(schema_with = "uniswap_chains")]
    pub chain: ChainName,
    /// The token priced, 0x and 40 hex digits.
    pub base: EvmAddress,
    /// The token the price is in, 0x and 40 hex digits (for example USDC, or WETH).
    pub quote: EvmAddress,
    /// Fee tier of the pool to read, in hundredths of a basis point: 100, 500, 3000 or 10000. Defaults to the pool with the most in-range liquidity.
    #[serde(default)]
    #[schemars(extend("enum" = [100, 500, 3000, 10000, null]))]
    pub fee: Option<u32>,
    /// Block to read at: a number or a tag. Defaults to `latest`.
    #[serde(default)]
    pub block: Option<BlockRef>,
}

/// One token of the pair.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PairToken {
    /// Its address, lower-case.
    pub address: String,
    /// Its `symbol()`, untrusted text; null when it has none.
    pub symbol: Option<String>,
    /// Its `decimals()`.
    pub decimals: u8,
}

/// One fee tier's pool.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TierPool {
    /// Fee tier, hundredths of a basis point.
    pub fee: u32,
    /// The pool's address (computed), lower-case.
    pub pool: String,
    /// Whether a pool answers there.
    pub exists: bool,
    /// Whether its price is set (a created pool is initialised with a first price).
    pub initialised: bool,
    /// Its in-range liquidity (raw L), decimal; null when there is no pool.
    pub liquidity: Option<String>,
}

/// The chains whose Uniswap v3 factory is known ([`FACTORIES`]): the only ones `chain` takes.
fn uniswap_chains(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let names: Vec<&str> = FACTORIES.iter().map(|(name, _)| *name).collect();
    schemars::json_schema!({ "type": "string", "enum": names })
}

/// Answer of `/v1/chain/dex-price`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DexPriceOutput {
    /// Chain read.
    pub chain: String,
    /// The block read.
    pub block: u64,
    /// `uniswap-v3`.
    pub dex: String,
    /// The token priced.
    pub base: PairToken,
    /// The token the price is in.
    pub quote: PairToken,
    /// Quote tokens per one base token, 18 significant digits.
    pub price: String,
    /// Base tokens per one quote token, 18 significant digits.
    pub inverse_price: String,
    /// The pool read, lower-case.
    pub pool: String,
    /// Its fee tier, hundredths of a basis point (3000 is 0.3%).
    pub fee: u32,
    /// Its fee in percent, as text (`0.3`).
    pub fee_percent: String,
    /// Its current tick.
    pub tick: i32,
    /// Its `sqrtPriceX96`, decimal.
    pub sqrt_price_x96: String,
    /// Its in-range liquidity (raw L), decimal.
    pub liquidity: String,
    /// Every fee tier's pool, as checked.
    pub pools: Vec<TierPool>,
    /// What to keep in mind about this price (`shallow_pool`, `no_liquidity`, `locked`); empty when none.
    pub warnings: Vec<String>,
}

/// A checked request.
pub struct DexPriceRequest {
    chain: std::sync::Arc<EvmChain>,
    factory: Address,
    base: Address,
    quote: Address,
    fee: Option<u32>,
    block: BlockRef,
}

/// The route.
pub struct DexPriceRoute;

impl Route for DexPriceRoute {
    type Input = DexPriceInput;
    type Prepared = DexPriceRequest;
    type Output = DexPriceOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/dex-price",
        operation: "get_dex_price",
        family: Family::Chain,
        summary: "Spot price and liquidity of a token pair in its Uniswap v3 pool (ethereum, base)",
        description: "Reads the Uniswap v3 pools of a pair on Ethereum or Base (all four fee tiers, or the one \
            given) and prices the base token in the quote token from the deepest pool's slot0, exactly, with its \
            tick, sqrtPriceX96 and in-range liquidity, and the inverse price. A spot price can be moved within a \
            block: shallow or empty pools are flagged. 404 when the pair has no pool.",
        base_price: Price::micros(3_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: DexPriceInput, ctx: &Context) -> Result<DexPriceRequest, EngineError> {
        let Some((_, factory)) = FACTORIES.iter().find(|(name, _)| *name == input.chain.0) else {
            return Err(EngineError::invalid(
                "/chain",
                "/chain: Uniswap v3 pools are read on `ethereum` and `base`".to_string(),
            ));
        };
        let chain = ctx.chains.resolve(&input.chain, "/chain")?;
        if input.base.0 == input.quote.0 {
            return Err(EngineError::invalid_with(
                "inconsistent_fields",
                "/quote",
                "/quote: the quote token is the base token; give two tokens",
            ));
        }
        if let Some(fee) = input.fee
            && !FEE_TIERS.contains(&fee)
        {
            return Err(EngineError::invalid("/fee", "/fee: a Uniswap v3 fee tier is 100, 500, 3000 or 10000"));
        }
        Ok(DexPriceRequest {
            chain,
            factory: *factory,
            base: input.base.0,
            quote: input.quote.0,
            fee: input.fee,
            block: input.block.unwrap_or(BlockRef::Tag("latest")),
        })
    }

    fn quote(_: &DexPriceRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: DexPriceRequest, _: &Context) -> Result<Reply<DexPriceOutput>, EngineError> {
        let chain = request.chain.clone();
        let blocks = [Some(request.block)];
        Ok(Reply::Json(explain(&chain, &blocks, chain.deadline(read(&chain, request)).await).await?))
    }
}

/// The address of the pool of `token_a`/`token_b` at `fee` (Uniswap v3's PoolAddress).
pub fn pool_address(factory: Address, token_a: Address, token_b: Address, fee: u32) -> Address {
    let (token0, token1) = if token_a < token_b { (token_a, token_b) } else { (token_b, token_a) };
    let salt = keccak256((token0, token1, alloy::primitives::aliases::U24::from(fee)).abi_encode());
    factory.create2(salt, POOL_INIT_CODE_HASH)
}

/// One tier's state as read.
struct TierState {
    fee: u32,
    pool: Address,
    slot0: Option<Vec<u8>>,
    /// Its price is set (a pool created but not initialised has sqrtPriceX96 zero).
    initialised: bool,
    liquidity: Option<u128>,
}

/// Every tier's pool and both tokens, in one batch.
async fn read(chain: &EvmChain, request: DexPriceRequest) -> Result<DexPriceOutput, EngineError> {
    let block_number = request.block.number_on(chain).await?;
    let block = format!("{block_number:#x}");
    let tiers: Vec<u32> = request.fee.map_or_else(|| FEE_TIERS.to_vec(), |fee| vec![fee]);
    let mut batch = ViewBatch::new(chain, &block);
    let mut views: Vec<(u32, Address, View, View)> = Vec::new();
    for fee in &tiers {
        let pool = pool_address(request.factory, request.base, request.quote, *fee);
        views.push((*fee, pool, batch.view(&pool, SLOT0.to_vec())?, batch.view(&pool, LIQUIDITY.to_vec())?));
    }
    let token_views = [
        batch.view(&request.base, DECIMALS.to_vec())?,
        batch.view(&request.base, SYMBOL.to_vec())?,
        batch.view(&request.quote, DECIMALS.to_vec())?,
        batch.view(&request.quote, SYMBOL.to_vec())?,
    ];
    batch.send().await?;
    let mut states = Vec::new();
    for (fee, pool, slot0, liquidity) in views {
        // An address without code answers an empty 0x: no pool.
        let slot0 = slot0.answer(chain).await?.filter(|d| d.len() >= 7 * 32);
        let initialised = slot0.as_deref().is_some_and(|d| d[..32].iter().any(|b| *b != 0));
        let liquidity = liquidity.word(chain).await?.and_then(|l| u128::try_from(l).ok());
        states.push(TierState { fee, pool, slot0, initialised, liquidity });
    }
    let [base_decimals, base_symbol, quote_decimals, quote_symbol] = token_views;
    let base = pair_token(chain, request.base, base_decimals, base_symbol, "/base").await?;
    let quote = pair_token(chain, request.quote, quote_decimals, quote_symbol, "/quote").await?;

    let pools: Vec<TierPool> = states
        .iter()
        .map(|s| TierPool {
            fee: s.fee,
            pool: address_text(&s.pool),
            exists: s.slot0.is_some(),
            initialised: s.initialised,
            liquidity: s.slot0.as_ref().map(|_| s.liquidity.unwrap_or(0).to_string()),
        })
        .collect();
    // The deepest pool; on a tie, the lower fee.
    let Some(best) = states
        .iter()
        .filter(|s| s.initialised)
        .max_by(|a, b| a.liquidity.unwrap_or(0).cmp(&b.liquidity.unwrap_or(0)).then(b.fee.cmp(&a.fee)))
    else {
        let tiers = tiers.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
        return Err(EngineError::new(
            ErrorKind::NotFound,
            "not_found",
            format!(
                "no initialised Uniswap v3 pool of {}/{} on {} at fee tier {tiers} (block {block_number})",
                base.symbol.as_deref().unwrap_or(&base.address),
                quote.symbol.as_deref().unwrap_or(&quote.address),
                chain.name()
            ),
        ));
    };
    let slot0 = best.slot0.as_deref().unwrap_or_default();
    let bad_pool = || {
        EngineError::new(
            ErrorKind::BadUpstream,
            "upstream_error",
            format!("the pool {} answered a slot0 that is not Uniswap v3's", address_text(&best.pool)),
        )
    };
    let sqrt_price = U256::from_be_slice(&slot0[..32]);
    if sqrt_price.bit_len() > 160 {
        return Err(bad_pool());
    }
    let tick_word = U256::from_be_slice(&slot0[32..64]);
    let tick = i32::try_from(alloy::primitives::I256::from_raw(tick_word)).map_err(|_| bad_pool())?;
    let unlocked = slot0[7 * 32 - 1] == 1;

    let base_is_token0 = request.base < request.quote;
    let (decimals0, decimals1) =
        if base_is_token0 { (base.decimals, quote.decimals) } else { (quote.decimals, base.decimals) };
    // price of token0 in token1 = sqrtP² × 10^decimals0 / (2^192 × 10^decimals1)
    let ten = |n: u8| U1024::from(10u8).pow(U1024::from(n));
    let sqrt = U1024::from(sqrt_price);
    let numerator = sqrt * sqrt * ten(decimals0);
    let denominator = (U1024::from(1u8) << 192) * ten(decimals1);
    let (price, inverse) = if base_is_token0 {
        (decimal(numerator, denominator), decimal(denominator, numerator))
    } else {
        (decimal(denominator, numerator), decimal(numerator, denominator))
    };
    let liquidity = best.liquidity.unwrap_or(0);
    let mut warnings = Vec::new();
    if liquidity == 0 {
        warnings.push("no_liquidity: the pool has no liquidity in range; its price is not a market price".into());
    } else if liquidity < SHALLOW_LIQUIDITY {
        warnings.push("shallow_pool: little liquidity in range; a small trade moves this price".into());
    }
    if !unlocked {
        warnings.push("locked: the pool is mid-swap or not initialised (slot0.unlocked is false)".into());
    }
    Ok(DexPriceOutput {
        chain: chain.name().to_string(),
        block: block_number,
        dex: "uniswap-v3".into(),
        price,
        inverse_price: inverse,
        pool: address_text(&best.pool),
        fee: best.fee,
        fee_percent: fee_percent(best.fee),
        tick,
        sqrt_price_x96: sqrt_price.to_string(),
        liquidity: liquidity.to_string(),
        pools,
        warnings,
        base,
        quote,
    })
}

/// A token of the pair: its decimals are needed (422 on its field when it has none).
async fn pair_token(
    chain: &EvmChain,
    address: Address,
    decimals: View,
    symbol: View,
    field: &str,
) -> Result<PairToken, EngineError> {
    let decimals = decimals.word(chain).await?.and_then(|d| u8::try_from(d).ok()).filter(|d| *d <= MAX_DECIMALS);
    let symbol = symbol.answer(chain).await?.as_deref().and_then(decode_text).filter(|s| !s.is_empty());
    let Some(decimals) = decimals else {
        return Err(EngineError::invalid_with(
            "not_a_token",
            field,
            format!(
                "{field}: {} answers no decimals(): it is not an ERC-20 token on {}",
                address_text(&address),
                chain.name()
            ),
        ));
    };
    Ok(PairToken { address: address_text(&address), symbol, decimals })
}

/// A fee tier in percent: 3000 → `0.3`.
fn fee_percent(fee: u32) -> String {
    let text = format!("{}.{:04}", fee / 10_000, fee % 10_000);
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `numerator / denominator` in decimal with [`SIGNIFICANT`] significant digits (cut, not
/// rounded), trailing zeros dropped.
pub fn decimal(numerator: U1024, denominator: U1024) -> String {
    if denominator.is_zero() {
        return "0".into();
    }
    let integer = numerator / denominator;
    let mut remainder = numerator % denominator;
    let mut out = integer.to_string();
    let mut significant = if integer.is_zero() { 0 } else { out.len() };
    if significant >= SIGNIFICANT {
        // Digits past the significant ones become zeros.
        let keep = SIGNIFICANT;
        let zeros = out.len() - keep;
        out.truncate(keep);
        out.push_str(&"0".repeat(zeros));
        return out;
    }
    let ten = U1024::from(10u8);
    let mut fraction = String::new();
    // At most 1,000 fraction digits: enough for any ratio of 77-decimal tokens.
    while significant < SIGNIFICANT && !remainder.is_zero() && fraction.len() < 1_000 {
        remainder *= ten;
        let digit = remainder / denominator;
        remainder %= denominator;
        fraction.push(char::from(b'0' + u8::try_from(digit).unwrap_or(0)));
        if significant > 0 || !digit.is_zero() {
            significant += 1;
        }
    }
    let fraction = fraction.trim_end_matches('0');
    if fraction.is_empty() { out } else { format!("{out}.{fraction}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_match() {
        let selector = |sig: &str| <[u8; 4]>::try_from(&keccak256(sig)[..4]).unwrap();
        assert_eq!(SLOT0, selector("slot0()"));
        assert_eq!(LIQUIDITY, selector("liquidity()"));
    }

    #[test]
    fn pool_addresses_are_uniswaps() {
        // Mainnet USDC/WETH 0.05% and 0.3%, as Uniswap's own interface lists them.
        let usdc = address!("0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48");
        let weth = address!("0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2");
        let ethereum = FACTORIES[0].1;
        assert_eq!(pool_address(ethereum, weth, usdc, 500), address!("0x88e6A0c2dDD26FEEb64F039a2c41296FcB3f5640"));
        assert_eq!(pool_address(ethereum, usdc, weth, 3000), address!("0x8ad599c3A0ff1De082011EFDDc58f1908eb6e6D8"));
    }

    #[test]
    fn decimals_are_cut_to_significant_digits() {
        let u = |n: u128| U1024::from(n);
        assert_eq!(decimal(u(1), u(3)), "0.333333333333333333");
        assert_eq!(decimal(u(10), u(4)), "2.5");
        assert_eq!(decimal(u(6), u(3)), "2");
        assert_eq!(decimal(u(1), u(3_000_000_000_000)), "0.000000000000333333333333333333");
        assert_eq!(decimal(u(10).pow(u(25)) / u(3), u(1)), "3333333333333333330000000");
        assert_eq!(decimal(u(0), u(5)), "0");
        assert_eq!(fee_percent(3000), "0.3");
        assert_eq!(fee_percent(100), "0.01");
        assert_eq!(fee_percent(10_000), "1");
        assert_eq!(fee_percent(500), "0.05");
    }
}
