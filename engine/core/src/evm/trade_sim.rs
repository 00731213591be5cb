//! The buy/sell (honeypot) simulation of an ERC-20 token for `/v1/check/address`.
//!
//! One `eth_call` at the pinned block runs `engine/data/TradeSimulator.sol` at
//! [`simulator_address`], an address with no code on any chain: the call's state override
//! puts the simulator's runtime code and some ETH there. The simulator finds the token's
//! Uniswap V2 pair with WETH, buys the token for at most [`MAX_BUY_WEI`] (and at most 1% of
//! the pool's WETH) through the chain's Uniswap V2 router, then sells everything it got
//! back; each step's result is compared with the router's `getAmountsOut` quote taken
//! just before it, which gives the buy and sell tax. Nothing is sent to the chain.
//!
//! The runtime code is committed in `engine/data/trade-simulator.json`, built by
//! `engine/data/build-trade-simulator.js`; a unit test fails when the source changed
//! without a rebuild.

use std::sync::LazyLock;

use alloy::primitives::{Address, Bytes, U256, address, keccak256};
use alloy::rpc::json_rpc::ErrorPayload;
use alloy::sol_types::SolCall;
use alloy::transports::RpcError;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;

use crate::error::{EngineError, ErrorKind};
use crate::evm::{EvmChain, address_text};

/// The simulator artifact written by `engine/data/build-trade-simulator.js`.
const ARTIFACT: &str = include_str!("../../../data/trade-simulator.json");

/// Most wei the simulated buy spends (0.01 ETH).
pub const MAX_BUY_WEI: u128 = 10_000_000_000_000_000;
/// ETH the state override gives the simulator: more than any buy needs.
const SIMULATOR_BALANCE_WEI: u128 = 1_000_000_000_000_000_000;
/// Gas limit of the simulation call: room for tokens whose transfers swap their fees.
const SIMULATION_GAS: u64 = 10_000_000;

/// A Uniswap V2 deployment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dex {
    /// `UniswapV2Router02`.
    pub router: Address,
    /// `UniswapV2Factory`.
    pub factory: Address,
    /// The chain's wrapped ether, the other side of the pools searched.
    pub weth: Address,
}

/// The Uniswap V2 deployment of a chain the address check serves.
///
/// Sources: <https://docs.uniswap.org/contracts/v2/reference/smart-contracts/v2-deployments>
/// (factory and router of Mainnet and Base), <https://docs.base.org/chain/contracts> (Base
/// Uniswap v2 factory and router); WETH9 on Ethereum and the OP Stack predeploy WETH on
/// Base are the router's `WETH()`.
pub fn uniswap_v2(chain: &str) -> Option<Dex> {
    match chain {
        "ethereum" => Some(Dex {
            router: address!("7a250d5630B4cF539739dF2C5dAcb4c659F2488D"),
            factory: address!("5C69bEe701ef814a2B6a3EDD4B1652CB9cc5aA6f"),
            weth: address!("C02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2"),
        }),
        "base" => Some(Dex {
            router: address!("4752ba5DBc23f44D87826276BF6Fd6b1C372aD24"),
            factory: address!("8909Dc15e40173Ff4699343b6eB8132c65e18eC6"),
            weth: address!("4200000000000000000000000000000000000006"),
        }),
        _ => None,
    }
}

/// Where the simulator's code is put for the call: the last 20 bytes of
/// keccak256("paperchain.trade-simulator"), an address nobody holds the key of.
pub fn simulator_address() -> Address {
    Address::from_word(keccak256("paperchain.trade-simulator"))
}

/// The `from` of the simulation call (its `tx.origin`): keccak256("paperchain.trade-simulator.origin").
fn origin_address() -> Address {
    Address::from_word(keccak256("paperchain.trade-simulator.origin"))
}

alloy::sol! {
    /// What `TradeSimulator.simulate` answers (field order as in the Solidity struct).
    #[derive(Debug, PartialEq, Eq)]
    struct SimResult {
        uint8 status;
        address pair;
        uint256 reserveWeth;
        uint256 reserveToken;
        uint256 amountIn;
        bool buyOk;
        uint256 buyExpected;
        uint256 buyReceived;
        uint256 buyGas;
        bool sellTried;
        bool sellOk;
        uint256 sellAmount;
        uint256 sellExpected;
        uint256 sellReceived;
        uint256 sellGas;
    }

    function simulate(address factory, address router, address weth, address token, uint256 maxIn)
        returns (SimResult r);
}

/// `SimResult.status` values (the constants of TradeSimulator.sol).
const RAN: u8 = 0;
const NO_FACTORY: u8 = 1;
const NO_ROUTER: u8 = 2;
const NO_PAIR: u8 = 3;
const NO_LIQUIDITY: u8 = 4;

/// The simulator's runtime code, from the committed artifact.
static RUNTIME: LazyLock<Result<Bytes, String>> = LazyLock::new(|| {
    let artifact: serde_json::Value = serde_json::from_str(ARTIFACT).map_err(|e| e.to_string())?;
    let runtime = artifact["runtime"].as_str().ok_or("no runtime field")?;
    let code: Bytes = runtime.parse().map_err(|e| format!("runtime: {e}"))?;
    if code.is_empty() { Err("empty runtime".to_string()) } else { Ok(code) }
});

/// One simulated buy and sell, as published in the answer's `token.simulation`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct TradeSimulation {
    /// DEX the trade went through: `uniswap_v2`.
    pub dex: String,
    /// Router address, lower-case.
    pub router: String,
    /// Pair (pool) of the token with wrapped ether, lower-case.
    pub pair: String,
    /// Wrapped ether address (the pool's other token), lower-case.
    pub weth: String,
    /// Wrapped ether held by the pool, wei, decimal string.
    pub pool_weth_wei: String,
    /// Tokens held by the pool, base units, decimal string.
    pub pool_token_raw: String,
    /// ETH spent on the buy, wei, decimal string: 0.01 ETH or 1% of the pool's wrapped ether, whichever is smaller.
    pub amount_in_wei: String,
    /// The buy went through.
    pub buy_ok: bool,
    /// Tokens the router quoted for the buy, base units, decimal string.
    pub buy_expected_raw: String,
    /// Tokens that arrived, base units, decimal string ("0" when the buy failed).
    pub buy_received_raw: String,
    /// Share of the quote that did not arrive, percent with two decimals ("5.00"); null when the buy failed or no quote was given. Never negative.
    pub buy_tax_percent: Option<String>,
    /// Gas the buy used.
    pub buy_gas: u64,
    /// The sell of all bought tokens went through; null when no sell was tried (the buy failed or brought nothing).
    pub sell_ok: Option<bool>,
    /// ETH the router quoted for the sell, wei, decimal string; null when no sell was tried.
    pub sell_expected_wei: Option<String>,
    /// ETH that arrived from the sell, wei, decimal string; null when no sell was tried.
    pub sell_received_wei: Option<String>,
    /// Share of the quote that did not arrive, percent with two decimals; null when the sell failed, was not tried or had no quote. Never negative.
    pub sell_tax_percent: Option<String>,
    /// Gas the sell (approval and swap) used; null when no sell was tried.
    pub sell_gas: Option<u64>,
    /// Buy tax in basis points, for the scoring (not published).
    #[serde(skip)]
    pub buy_tax_bps: Option<u64>,
    /// Sell tax in basis points, for the scoring (not published).
    #[serde(skip)]
    pub sell_tax_bps: Option<u64>,
}

/// What the simulation came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TradeOutcome {
    /// It ran.
    Ran(Box<TradeSimulation>),
    /// It did not run, with why (for `skipped`).
    Skipped(String),
}

/// Runs the simulation for `token` at `block`. Reverts of the whole call and pools that
/// do not exist are [`TradeOutcome::Skipped`]; the node failing is an error.
pub async fn simulate_trade(
    chain: &EvmChain,
    dex: Dex,
    token: Address,
    block: u64,
) -> Result<TradeOutcome, EngineError> {
    if token == dex.weth {
        return Ok(TradeOutcome::Skipped(
            "the token is the chain's wrapped ether, the other side of every pool searched".into(),
        ));
    }
    let runtime = RUNTIME.as_ref().map_err(|e| EngineError::internal(format!("trade simulator code: {e}")))?;
    let data = simulateCall {
        factory: dex.factory,
        router: dex.router,
        weth: dex.weth,
        token,
        maxIn: U256::from(MAX_BUY_WEI),
    }
    .abi_encode();
    let simulator = simulator_address();
    let call = json!({
        "from": origin_address(),
        "to": simulator,
        "gas": format!("{SIMULATION_GAS:#x}"),
        "data": Bytes::from(data),
    });
    let overrides = json!({
        simulator.to_string(): {"code": runtime, "balance": format!("{SIMULATOR_BALANCE_WEI:#x}")}
    });
    let answer = chain.client().request::<_, Bytes>("eth_call", (call, format!("{block:#x}"), overrides)).await;
    let answer = match answer {
        Ok(answer) => answer,
        Err(RpcError::ErrorResp(payload)) if is_revert(&payload) => {
            return Ok(TradeOutcome::Skipped(format!(
                "the simulation reverted as a whole ({}), so no buy or sell result is known",
                crate::evm::clean_text(&payload.message, 120)
            )));
        }
        Err(e) => return Err(chain.error("eth_call", e)),
    };
    let result = simulateCall::abi_decode_returns(&answer).map_err(|e| {
        EngineError::new(
            ErrorKind::BadUpstream,
            "upstream_error",
            format!("the {} RPC's answer to the trade simulation is not understood: {e}", chain.name()),
        )
    })?;
    Ok(outcome(dex, &result))
}

/// A node's error that means the code ran and reverted (or ran out of gas), not that the node failed.
fn is_revert(payload: &ErrorPayload) -> bool {
    let message = payload.message.to_ascii_lowercase();
    payload.code == 3 || message.contains("revert") || message.contains("out of gas")
}

/// The simulator's answer as the published simulation, or why it did not run (pure).
pub fn outcome(dex: Dex, r: &SimResult) -> TradeOutcome {
    let skipped = |reason: String| TradeOutcome::Skipped(reason);
    match r.status {
        RAN => {}
        NO_FACTORY => {
            return skipped(format!(
                "no Uniswap V2 factory is deployed at {} on this chain",
                address_text(&dex.factory)
            ));
        }
        NO_ROUTER => {
            return skipped(format!("no Uniswap V2 router is deployed at {} on this chain", address_text(&dex.router)));
        }
        NO_PAIR => return skipped("no Uniswap V2 pool of this token with wrapped ether exists".into()),
        NO_LIQUIDITY => return skipped("no Uniswap V2 pool with wrapped ether holds liquidity for this token".into()),
        other => return skipped(format!("the simulator answered an unknown status {other}")),
    }
    let gas = |g: U256| u64::try_from(g).unwrap_or(u64::MAX);
    let buy_tax_bps = r.buyOk.then(|| tax_bps(r.buyExpected, r.buyReceived)).flatten();
    let sell_tax_bps = (r.sellTried && r.sellOk).then(|| tax_bps(r.sellExpected, r.sellReceived)).flatten();
    let tried = |text: String| r.sellTried.then_some(text);
    TradeOutcome::Ran(Box::new(TradeSimulation {
        dex: "uniswap_v2".into(),
        router: address_text(&dex.router),
        pair: address_text(&r.pair),
        weth: address_text(&dex.weth),
        pool_weth_wei: r.reserveWeth.to_string(),
        pool_token_raw: r.reserveToken.to_string(),
        amount_in_wei: r.amountIn.to_string(),
        buy_ok: r.buyOk,
        buy_expected_raw: r.buyExpected.to_string(),
        buy_received_raw: r.buyReceived.to_string(),
        buy_tax_percent: buy_tax_bps.map(percent),
        buy_gas: gas(r.buyGas),
        sell_ok: r.sellTried.then_some(r.sellOk),
        sell_expected_wei: tried(r.sellExpected.to_string()),
        sell_received_wei: tried(r.sellReceived.to_string()),
        sell_tax_percent: sell_tax_bps.map(percent),
        sell_gas: r.sellTried.then(|| gas(r.sellGas)),
        buy_tax_bps,
        sell_tax_bps,
    }))
}

/// The share of `expected` that did not arrive, in basis points rounded to the nearest;
/// None without a quote, 0 when more arrived than quoted.
pub fn tax_bps(expected: U256, received: U256) -> Option<u64> {
    if expected.is_zero() {
        return None;
    }
    let missing = expected.saturating_sub(received);
    // missing <= expected, so the quotient is at most 10_000.
    let bps = match missing.checked_mul(U256::from(10_000u64)).and_then(|m| m.checked_add(expected / U256::from(2u8))) {
        Some(scaled) => scaled / expected,
        // Amounts near 2^256 (only a hostile token answers those): exact enough without rounding.
        None => missing / (expected / U256::from(10_000u64)),
    };
    u64::try_from(bps.min(U256::from(10_000u64))).ok()
}

/// Basis points as a percent with two decimals ("5.00").
pub fn percent(bps: u64) -> String {
    format!("{}.{:02}", bps / 100, bps % 100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_simulator_matches_its_source() {
        let artifact: serde_json::Value = serde_json::from_str(ARTIFACT).unwrap();
        let source = include_str!("../../../data/TradeSimulator.sol");
        assert_eq!(
            artifact["sourceKeccak256"].as_str().unwrap(),
            keccak256(source).to_string(),
            "engine/data/TradeSimulator.sol changed: rebuild with \
             `NODE_PATH=$HOME/.cache/paperchain/tools/npm/node_modules node engine/data/build-trade-simulator.js`"
        );
        let code = RUNTIME.as_ref().unwrap();
        // Dispatches `simulate` (its selector is pushed by the dispatcher).
        let selector = simulateCall::SELECTOR;
        assert!(code.windows(4).any(|w| w == selector), "the runtime code does not dispatch simulate()");
        assert_eq!(
            selector,
            <[u8; 4]>::try_from(&keccak256("simulate(address,address,address,address,uint256)")[..4]).unwrap()
        );
    }

    #[test]
    fn addresses_are_fixed() {
        assert_eq!(simulator_address(), Address::from_slice(&keccak256("paperchain.trade-simulator")[12..]));
        assert_ne!(simulator_address(), origin_address());
        let ethereum = uniswap_v2("ethereum").unwrap();
        assert_eq!(address_text(&ethereum.weth), "0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2");
        let base = uniswap_v2("base").unwrap();
        assert_eq!(address_text(&base.router), "0x4752ba5dbc23f44d87826276bf6fd6b1c372ad24");
        assert!(uniswap_v2("polygon").is_none());
        // The published EIP-55 spellings: a typo in a constant breaks the checksum.
        for (chain, [router, factory, weth]) in [
            (
                "ethereum",
                [
                    "0x7a250d5630B4cF539739dF2C5dAcb4c659F2488D",
                    "0x5C69bEe701ef814a2B6a3EDD4B1652CB9cc5aA6f",
                    "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2",
                ],
            ),
            (
                "base",
                [
                    "0x4752ba5DBc23f44D87826276BF6Fd6b1C372aD24",
                    "0x8909Dc15e40173Ff4699343b6eB8132c65e18eC6",
                    "0x4200000000000000000000000000000000000006",
                ],
            ),
        ] {
            let dex = uniswap_v2(chain).unwrap();
            assert_eq!(dex.router, Address::parse_checksummed(router, None).unwrap());
            assert_eq!(dex.factory, Address::parse_checksummed(factory, None).unwrap());
            assert_eq!(dex.weth, Address::parse_checksummed(weth, None).unwrap());
        }
    }

    #[test]
    fn taxes_round_and_never_go_negative() {
        let u = |n: u64| U256::from(n);
        assert_eq!(tax_bps(u(1000), u(950)), Some(500));
        assert_eq!(tax_bps(u(1000), u(1000)), Some(0));
        assert_eq!(tax_bps(u(1000), u(1200)), Some(0));
        assert_eq!(tax_bps(u(1000), u(0)), Some(10_000));
        assert_eq!(tax_bps(u(3), u(2)), Some(3333));
        assert_eq!(tax_bps(u(0), u(5)), None);
        assert_eq!(tax_bps(U256::MAX, U256::ZERO), Some(10_000));
        assert_eq!(tax_bps(U256::MAX, U256::MAX / U256::from(2u8)), Some(5000));
        assert_eq!(percent(500), "5.00");
        assert_eq!(percent(7), "0.07");
        assert_eq!(percent(10_000), "100.00");
    }

    fn ran() -> SimResult {
        SimResult {
            status: RAN,
            pair: Address::repeat_byte(9),
            reserveWeth: U256::from(10u64).pow(U256::from(20u8)),
            reserveToken: U256::from(10u64).pow(U256::from(24u8)),
            amountIn: U256::from(MAX_BUY_WEI),
            buyOk: true,
            buyExpected: U256::from(1000u64),
            buyReceived: U256::from(800u64),
            buyGas: U256::from(120_000u64),
            sellTried: true,
            sellOk: false,
            sellAmount: U256::from(800u64),
            sellExpected: U256::from(5000u64),
            sellReceived: U256::ZERO,
            sellGas: U256::from(50_000u64),
        }
    }

    #[test]
    fn a_blocked_sell_has_no_sell_tax() {
        let dex = uniswap_v2("ethereum").unwrap();
        let TradeOutcome::Ran(sim) = outcome(dex, &ran()) else { panic!("not ran") };
        assert_eq!(sim.buy_tax_percent.as_deref(), Some("20.00"));
        assert_eq!(sim.sell_ok, Some(false));
        assert_eq!(sim.sell_tax_percent, None);
        assert_eq!(sim.sell_gas, Some(50_000));
        let json = serde_json::to_value(&sim).unwrap();
        assert!(json.get("buy_tax_bps").is_none());
        // A failed buy: no sell tried.
        let failed = SimResult { buyOk: false, buyReceived: U256::ZERO, sellTried: false, ..ran() };
        let TradeOutcome::Ran(sim) = outcome(dex, &failed) else { panic!("not ran") };
        assert_eq!((sim.buy_tax_percent, sim.sell_ok, sim.sell_gas), (None, None, None));
    }

    #[test]
    fn missing_pools_are_skipped_with_a_reason() {
        let dex = uniswap_v2("base").unwrap();
        for (status, words) in [
            (NO_FACTORY, "factory"),
            (NO_ROUTER, "router"),
            (NO_PAIR, "no Uniswap V2 pool"),
            (NO_LIQUIDITY, "holds liquidity"),
            (77, "unknown status"),
        ] {
            match outcome(dex, &SimResult { status, ..ran() }) {
                TradeOutcome::Skipped(reason) => assert!(reason.contains(words), "{status}: {reason}"),
                other => panic!("{status}: {other:?}"),
            }
        }
    }
}
