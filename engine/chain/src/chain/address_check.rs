//! `POST /v1/check/address`: a heuristic risk check of an EVM address before sending funds
//! to it or calling it (result schema `precheck/1`).
//!
//! What is read, all pinned to one block (`checked_at_block`):
//! 1. the address's code (`eth_getCode`): no code is an externally owned account;
//! 2. the proxy slots (EIP-1967 implementation, admin and beacon; EIP-1822 proxiable). A
//!    beacon's implementation comes from its `implementation()`. The upgrade key is the
//!    admin slot, else `owner()` of the beacon (beacon proxies) or of the proxy (UUPS). An
//!    admin that is a contract is followed one step through its own `owner()` (the
//!    OpenZeppelin `ProxyAdmin` pattern); an upgrade key that ends at an EOA is
//!    `upgradeable_single_key`;
//! 3. the code that runs (the implementation's for a proxy) is scanned by
//!    [`crate::evm::bytecode`]: SELFDESTRUCT, DELEGATECALL (a proxy's own DELEGATECALL is
//!    its expected use and is not counted) and the selectors of owner powers;
//! 4. the ERC-20 views (`token`);
//! 5. for an ERC-20 token, a buy and a sell through the chain's Uniswap V2 router
//!    ([`crate::evm::trade_sim`]): one `eth_call` whose state override puts a simulator
//!    contract at a throwaway address; it buys the token for a little ETH from its pool
//!    with wrapped ether and sells it back, each step against the router's quote
//!    (`token.simulation`). A sell that reverts after a working buy is a honeypot
//!    (`sell_blocked`); the share of a quote that did not arrive is the buy or sell tax
//!    (`trade_tax`, `high_trade_tax`). The simulation sees one trade at the block checked.
//!
//! Not done, and said so in `skipped`: source verification (no verifier is reachable from
//! this server, so no `unverified_source` reason is ever given), and the trade simulation
//! where it cannot run (not an ERC-20 token, the token is wrapped ether, no pool with
//! liquidity, or the simulation reverted as a whole), each with its reason.
//!
//! Results are cached for 10 minutes per (chain, address) in [`AddressCheckCache`] (kept in
//! the [`Context`]'s route state); a cached answer keeps its `checked_at_block` and gets the
//! `latency_ms` of the call that served it. Failures are not cached.
//!
//! Scoring: each reason has the points of its code in the address check's table
//! ([`crate::risk::address::SCORING`]); `risk_score` is the sum, capped at 100. Verdict:
//! `low` below [`crate::risk::CAUTION_FROM`], `caution` from it, `high` from
//! [`crate::risk::HIGH_FROM`]; `unknown` when the code that runs could not be checked (a
//! proxy whose implementation has no code or cannot be found).
//!
//! An address without code gets `low` with one zero-point `externally_owned_account`
//! reason: an EOA is not risky by itself, and the request does not say whether a contract
//! was expected; the reason's message says what it means if one was.
//!
//! Failures: the chain not answering, answering badly or too slowly (over
//! [`crate::risk::contract::CHECK_DEADLINE`]) is `Unavailable` (503) with Retry-After, as
//! the spec lists for this route; a node's rate limit stays `RateLimited` (429), which the
//! spec also lists.
//!
//! This file is the route: its input, the cache and the call. The reads are
//! [`crate::risk::contract`]'s and the scoring [`crate::risk::address`]'s, which the token
//! check (`token_check.rs`) builds on too.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alloy::primitives::Address;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::evm::{EvmAddress, EvmChain};
use crate::output::Reply;
use crate::price::Price;
use crate::risk::address::{AddressCheckOutput, assess};
use crate::risk::contract::{CheckChain, inspect_in_time};

/// How long a result is reused (spec, Limits: "address check cache 10 minutes").
pub const CACHE_TTL: Duration = Duration::from_secs(600);
/// Most results kept; beyond it the oldest go first.
pub const CACHE_ENTRIES: usize = 10_000;

/// Request of `/v1/check/address`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddressCheckInput {
    /// Address to check, 0x and 40 hex digits (any case).
    pub address: EvmAddress,
    /// Chain to check on: `base` or `ethereum`.
    pub chain: CheckChain,
}

/// A checked request.
pub struct AddressCheckRequest {
    chain: Arc<EvmChain>,
    address: Address,
}

/// The route.
pub struct AddressCheckRoute;

impl Route for AddressCheckRoute {
    type Input = AddressCheckInput;
    type Prepared = AddressCheckRequest;
    type Output = AddressCheckOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/check/address",
        operation: "check_address_risk",
        family: Family::Chain,
        summary: "Heuristic risk check of an address before sending funds to it or calling it",
        description: "Checks an EVM address on base or ethereum: account or contract, upgradeable proxy \
            (EIP-1967, beacon, EIP-1822) and who holds the upgrade key, SELFDESTRUCT and DELEGATECALL in the \
            code, and owner powers (mint, blacklist, fee setters, pause) found by selector. For an ERC-20 token \
            it simulates a small buy and sell through the chain's Uniswap V2 router (eth_call with state \
            overrides, nothing is sent): a sell that reverts is a honeypot, and buy and sell taxes are \
            measured; without a pool holding liquidity the simulation is skipped with the reason. Answers a \
            verdict (low, caution, high, unknown), a 0-100 score and the reasons with their points. Heuristic, \
            not an audit: the simulation sees one trade at the block checked, and a low verdict is not a \
            clearance. Source verification is reported as skipped. Token names are untrusted data.",
        base_price: Price::micros(5_000),
        price_rule: "flat",
        free_pool: FreePool::AddressCheck,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: AddressCheckInput, ctx: &Context) -> Result<AddressCheckRequest, EngineError> {
        let chain = input.chain.resolve(ctx, "the address check")?;
        Ok(AddressCheckRequest { chain, address: input.address.0 })
    }

    fn quote(_: &AddressCheckRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: AddressCheckRequest, ctx: &Context) -> Result<Reply<AddressCheckOutput>, EngineError> {
        let AddressCheckRequest { chain, address } = request;
        let started = Instant::now();
        let key = (chain.name().to_string(), address);
        let cache = ctx.state.get_or_insert_with(AddressCheckCache::default);
        if let Some(mut cached) = cache.get(&key, started) {
            cached.latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            return Ok(Reply::Json(cached));
        }
        let inspection = inspect_in_time(&chain, address).await?;
        let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let answer = assess(chain.name(), address, inspection, latency_ms);
        cache.put(key, answer.clone(), Instant::now());
        Ok(Reply::Json(answer))
    }
}

/// Recent results by (chain name, address), each reused for [`CACHE_TTL`].
#[derive(Debug)]
pub struct AddressCheckCache {
    ttl: Duration,
    capacity: usize,
    entries: Mutex<HashMap<(String, Address), (Instant, AddressCheckOutput)>>,
}

impl Default for AddressCheckCache {
    fn default() -> Self {
        AddressCheckCache::new(CACHE_TTL, CACHE_ENTRIES)
    }
}

impl AddressCheckCache {
    /// A cache keeping up to `capacity` results for `ttl` each.
    pub fn new(ttl: Duration, capacity: usize) -> AddressCheckCache {
        AddressCheckCache { ttl, capacity: capacity.max(1), entries: Mutex::new(HashMap::new()) }
    }

    /// The result stored for `key`, if younger than the TTL at `now`.
    fn get(&self, key: &(String, Address), now: Instant) -> Option<AddressCheckOutput> {
        // A poisoned lock only means another call panicked mid-insert; the map is still usable.
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.get(key).filter(|(at, _)| now.saturating_duration_since(*at) < self.ttl).map(|(_, a)| a.clone())
    }

    /// Stores `answer`, first dropping expired results and, when still full, the oldest.
    fn put(&self, key: (String, Address), answer: AddressCheckOutput, now: Instant) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= self.capacity {
            entries.retain(|_, (at, _)| now.saturating_duration_since(*at) < self.ttl);
        }
        while entries.len() >= self.capacity {
            let Some(oldest) = entries.iter().min_by_key(|(_, (at, _))| *at).map(|(k, _)| k.clone()) else { break };
            entries.remove(&oldest);
        }
        entries.insert(key, (now, answer));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::risk::contract::Inspection;

    #[test]
    fn cache_expires_and_stays_bounded() {
        let cache = AddressCheckCache::new(Duration::from_secs(600), 2);
        let t0 = Instant::now();
        let answer = |n: u8| assess("base", Address::repeat_byte(n), Inspection::default(), 0);
        let key = |n: u8| ("base".to_string(), Address::repeat_byte(n));
        cache.put(key(1), answer(1), t0);
        assert_eq!(cache.get(&key(1), t0 + Duration::from_secs(599)).unwrap().address, answer(1).address);
        assert!(cache.get(&key(1), t0 + Duration::from_secs(600)).is_none());
        assert!(cache.get(&("ethereum".to_string(), Address::repeat_byte(1)), t0).is_none());
        cache.put(key(2), answer(2), t0 + Duration::from_secs(1));
        cache.put(key(3), answer(3), t0 + Duration::from_secs(2));
        // Full at two: the oldest (1) went.
        assert!(cache.get(&key(1), t0 + Duration::from_secs(3)).is_none());
        assert!(cache.get(&key(2), t0 + Duration::from_secs(3)).is_some());
        assert!(cache.get(&key(3), t0 + Duration::from_secs(3)).is_some());
    }
}
