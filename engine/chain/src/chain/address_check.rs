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
//! Scoring: each reason has the points of its code in [`SCORING`]; `risk_score` is the sum,
//! capped at 100. Verdict: `low` below [`CAUTION_FROM`], `caution` from it, `high` from
//! [`HIGH_FROM`]; `unknown` when the code that runs could not be checked (a proxy whose
//! implementation has no code or cannot be found).
//!
//! An address without code gets `low` with one zero-point `externally_owned_account`
//! reason: an EOA is not risky by itself, and the request does not say whether a contract
//! was expected; the reason's message says what it means if one was.
//!
//! Failures: the chain not answering, answering badly or too slowly (over
//! [`CHECK_DEADLINE`]) is `Unavailable` (503) with Retry-After, as the spec lists for
//! this route; a node's rate limit stays `RateLimited` (429), which the spec also lists.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alloy::primitives::{Address, B256, Bytes, U64, U256, keccak256};
use alloy::transports::RpcError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::{EngineError, ErrorKind};
use crate::evm::bytecode::{self, Power, Scan};
use crate::evm::erc20::read_erc20;
use crate::evm::trade_sim::{self, TradeOutcome, TradeSimulation};
use crate::evm::{ChainName, EvmAddress, EvmChain, address_text};
use crate::output::Reply;
use crate::price::Price;

/// The result schema identifier.
pub const SCHEMA: &str = "precheck/1";
/// The chains this route checks (a subset of the configured ones).
pub const CHECKED_CHAINS: &[&str] = &["base", "ethereum"];
/// The longest a check may read the chain ("at most about 4 s").
pub const CHECK_DEADLINE: Duration = Duration::from_secs(4);
/// How long a result is reused (spec, Limits: "address check cache 10 minutes").
pub const CACHE_TTL: Duration = Duration::from_secs(600);
/// Most results kept; beyond it the oldest go first.
pub const CACHE_ENTRIES: usize = 10_000;
/// Retry-After of a 503.
const RETRY_AFTER: Duration = Duration::from_secs(5);
/// Scores from here are `caution`.
pub const CAUTION_FROM: u32 = 20;
/// Scores from here are `high`.
pub const HIGH_FROM: u32 = 50;
/// A buy or sell tax above this many basis points is `trade_tax` (0.5%).
pub const TAX_NOTED_BPS: u64 = 50;
/// A buy or sell tax above this many basis points is `high_trade_tax` (10%).
pub const TAX_HIGH_BPS: u64 = 1_000;
/// A sell that keeps more than this many basis points of its quote is `sell_blocked` (90%).
pub const SELL_KEPT_BPS: u64 = 9_000;

/// EIP-1967 implementation slot: keccak256("eip1967.proxy.implementation") - 1.
pub const SLOT_IMPLEMENTATION: B256 =
    alloy::primitives::b256!("360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc");
/// EIP-1967 admin slot: keccak256("eip1967.proxy.admin") - 1.
pub const SLOT_ADMIN: B256 =
    alloy::primitives::b256!("b53127684a568b3173ae13b9f8a6016e243e63b6e8ee1178d6a717850b5d6103");
/// EIP-1967 beacon slot: keccak256("eip1967.proxy.beacon") - 1.
pub const SLOT_BEACON: B256 =
    alloy::primitives::b256!("a3f0ad74e5423aebfd80d3ef4346578335a9a72aeaee59ff6cb3582b35133d50");
/// EIP-1822 proxiable slot: keccak256("PROXIABLE").
pub const SLOT_PROXIABLE: B256 =
    alloy::primitives::b256!("c5f16f0fcc639fa48a6947836d9850f504798523bf8c9a3a87d5876cf622bcf7");

/// `implementation()` (beacons).
const IMPLEMENTATION: [u8; 4] = [0x5c, 0x60, 0xda, 0x1b];
/// `owner()`.
pub const OWNER: [u8; 4] = [0x8d, 0xa5, 0xcb, 0x5b];
/// Code of an EIP-7702 delegated account: this prefix and the delegate's 20 bytes.
pub const DELEGATION_PREFIX: [u8; 3] = [0xef, 0x01, 0x00];

pub const DISCLAIMER: &str = "Automated heuristic check, not an audit. Findings can be false positives; \
    a low verdict is not proof of safety. Strings read from the chain are untrusted data.";

/// How serious a reason is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "PrecheckSeverity")]
pub enum Severity {
    /// Context, no points.
    Info,
    /// Worth knowing.
    Low,
    /// A power or pattern that can hurt holders or callers.
    Medium,
    /// A power or pattern that can take funds or change everything at once.
    High,
}

/// One row of the scoring table.
#[derive(Clone, Copy, Debug)]
pub struct ScoreRule {
    /// Stable reason code.
    pub code: &'static str,
    /// Its severity.
    pub severity: Severity,
    /// Points added to the score.
    pub points: u32,
    /// What it means.
    pub description: &'static str,
}

/// A row of a scoring table (this route's and the other checks' tables).
pub const fn rule(code: &'static str, severity: Severity, points: u32, description: &'static str) -> ScoreRule {
    ScoreRule { code, severity, points, description }
}

/// The scoring table: every reason this route gives. Score = min(100, sum of points).
pub const SCORING: &[ScoreRule] = &[
    rule(
        "upgradeable_single_key",
        Severity::High,
        50,
        "upgradeable proxy whose upgrade key ends at one externally owned account: one key can replace all the code",
    ),
    rule(
        "upgradeable_proxy",
        Severity::Medium,
        15,
        "upgradeable proxy whose admin is a contract (multisig, timelock; not inspected further) or is not found",
    ),
    rule(
        "implementation_not_found",
        Severity::Medium,
        20,
        "a proxy whose implementation has no code or cannot be read: the code that runs was not checked",
    ),
    rule("selfdestruct", Severity::High, 50, "the code contains SELFDESTRUCT"),
    rule(
        "delegatecall",
        Severity::Medium,
        15,
        "DELEGATECALL outside a recognised proxy: other code can run with this contract's storage and balance",
    ),
    rule("mint_function", Severity::Medium, 15, "a mint function: supply can be created (common in legitimate tokens)"),
    rule("blacklist_function", Severity::Medium, 25, "a blacklist function: chosen holders can be blocked"),
    rule("fee_setter", Severity::Medium, 25, "a fee or tax setter: transfer fees can be raised after purchase"),
    rule("pause_function", Severity::Low, 10, "a pause function: all transfers can be stopped"),
    rule(
        "eip7702_delegation",
        Severity::Medium,
        15,
        "an externally owned account whose code delegates to a contract (EIP-7702); the delegate is not scanned",
    ),
    rule(
        "sell_blocked",
        Severity::High,
        60,
        "honeypot: a simulated buy went through but selling the tokens back reverted or returned under 10% of the quote",
    ),
    rule(
        "buy_blocked",
        Severity::Medium,
        20,
        "a simulated buy through the token's pool reverted: trading is closed or restricted for new buyers",
    ),
    rule(
        "high_trade_tax",
        Severity::Medium,
        30,
        "a simulated buy or sell lost more than 10% to the token's transfer tax",
    ),
    rule("trade_tax", Severity::Low, 10, "a simulated buy or sell lost more than 0.5% (up to 10%) to a transfer tax"),
    rule(
        "externally_owned_account",
        Severity::Info,
        0,
        "no code: an externally owned account (a wallet), not risky by itself; not a contract if one was expected",
    ),
];

/// The `chain` input of this route: `base` or `ethereum` only.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct CheckChain(pub String);

impl JsonSchema for CheckChain {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PrecheckChain".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "enum": CHECKED_CHAINS,
            "description": "Chain to check on: `base` (chain id 8453) or `ethereum` (1)."
        })
    }
}

impl CheckChain {
    /// The configured chain, if `check` covers it (a 422 on `/chain` saying which do).
    pub fn resolve(self, ctx: &Context, check: &str) -> Result<Arc<EvmChain>, EngineError> {
        if !CHECKED_CHAINS.contains(&self.0.as_str()) {
            let shown: String = self.0.chars().take(40).collect();
            return Err(EngineError::invalid(
                "/chain",
                format!("/chain: {check} does not cover `{shown}`; valid chains: base, ethereum"),
            ));
        }
        ctx.chains.resolve(&ChainName(self.0), "/chain")
    }
}

/// Request of `/v1/check/address`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddressCheckInput {
    /// Address to check, 0x and 40 hex digits (any case).
    pub address: EvmAddress,
    /// Chain to check on: `base` or `ethereum`.
    pub chain: CheckChain,
}

/// Overall verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "PrecheckVerdict")]
pub enum Verdict {
    /// Score below 20.
    Low,
    /// Score 20 to 49.
    Caution,
    /// Score 50 or more.
    High,
    /// The code that runs could not be checked.
    Unknown,
}

impl Verdict {
    /// The verdict of a score: `low` below [`CAUTION_FROM`], `caution` from it, `high` from [`HIGH_FROM`].
    pub fn from_score(score: u32) -> Verdict {
        if score >= HIGH_FROM {
            Verdict::High
        } else if score >= CAUTION_FROM {
            Verdict::Caution
        } else {
            Verdict::Low
        }
    }
}

/// Puts `reasons` most serious first and answers their score: the sum of their points,
/// capped at 100 (every check scores this way).
pub fn rank(reasons: &mut [Reason]) -> u32 {
    reasons.sort_by_key(|r| std::cmp::Reverse(r.points));
    reasons.iter().map(|r| r.points).sum::<u32>().min(100)
}

/// The reason `code` of `table`, with `message`; None when the table has no such code.
pub fn reason_from(table: &[ScoreRule], code: &str, message: String) -> Option<Reason> {
    table.iter().find(|r| r.code == code).map(|r| Reason {
        code: r.code.into(),
        severity: r.severity,
        points: r.points,
        message,
    })
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Reason {
    /// Stable code from the scoring table (`upgradeable_single_key`).
    pub code: String,
    /// `info`, `low`, `medium` or `high`.
    pub severity: Severity,
    /// Points this finding adds to the score.
    pub points: u32,
    /// What was found, for a person.
    pub message: String,
}

/// Proxy standards recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProxyStandard {
    /// EIP-1967 implementation slot.
    Eip1967,
    /// EIP-1967 beacon slot.
    Eip1967Beacon,
    /// EIP-1822 (UUPS) proxiable slot.
    Eip1822,
}

/// Whether an address holds code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AccountKind {
    /// No code.
    Eoa,
    /// Code.
    Contract,
}

/// Proxy details.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ProxyDetails {
    /// The address is a proxy of a recognised standard.
    pub is_proxy: bool,
    /// Which standard; null when not a proxy.
    pub standard: Option<ProxyStandard>,
    /// Implementation address, lower-case; null when not a proxy or not found.
    pub implementation: Option<String>,
    /// Beacon address (beacon proxies), lower-case.
    pub beacon: Option<String>,
    /// Who can upgrade: the admin slot, else `owner()` of the beacon or proxy; null when not found.
    pub admin: Option<String>,
    /// Whether the admin holds code.
    pub admin_kind: Option<AccountKind>,
    /// `owner()` of an admin that is a contract, when that owner is an externally owned account; lower-case.
    pub admin_owner: Option<String>,
}

/// Source verification.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Verification {
    /// `skipped` (no verifier is reachable).
    pub status: String,
    /// Why.
    pub reason: String,
}

/// What the code lets someone do, as far as the scan can tell.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Capabilities {
    /// The address holds code.
    pub is_contract: bool,
    /// The code can be replaced (a recognised proxy).
    pub upgradeable: bool,
    /// A mint function.
    pub mint: bool,
    /// A blacklist function.
    pub blacklist: bool,
    /// A fee or tax setter.
    pub fee_setter: bool,
    /// A pause function.
    pub pause: bool,
    /// SELFDESTRUCT in the code that runs.
    pub selfdestruct: bool,
    /// DELEGATECALL in the code that runs (a proxy's own is not counted).
    pub delegatecall: bool,
}

/// ERC-20 details of a contract.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct TokenDetails {
    /// The contract answers `totalSupply()` and `balanceOf(address)`.
    pub is_erc20: bool,
    /// `name()`; untrusted data, at most 256 characters.
    pub name: Option<String>,
    /// `symbol()`; untrusted data, at most 256 characters.
    pub symbol: Option<String>,
    /// `decimals()`.
    pub decimals: Option<u8>,
    /// The buy/sell simulation through the chain's Uniswap V2 router; null when it did not run (`skipped` says why).
    pub simulation: Option<TradeSimulation>,
}

/// A known selector the scan found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SelectorFound {
    /// 0x and 8 hex digits.
    pub selector: String,
    /// The signature it is known as.
    pub signature: String,
    /// `mint`, `blacklist`, `fee_setter` or `pause`.
    pub power: String,
}

/// The bytecode scan.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct DeepScan {
    /// A scan ran (false for accounts without code and proxies whose implementation has none).
    pub performed: bool,
    /// Address whose code was scanned (the implementation for a proxy), lower-case.
    pub scanned_address: Option<String>,
    /// Size of the scanned code in bytes.
    pub code_size: u64,
    /// keccak-256 of the scanned code.
    pub code_hash: Option<String>,
    /// Known selectors found.
    pub selectors: Vec<SelectorFound>,
}

/// A check that did not run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Skipped {
    /// `source_verification` or `trade_simulation`.
    pub check: String,
    /// Why it did not run.
    pub reason: String,
}

/// Answer of `/v1/check/address` (`precheck/1`).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct AddressCheckOutput {
    /// Result schema identifier, `precheck/1`.
    #[schemars(extend("const" = "precheck/1"))]
    pub schema: String,
    /// The call succeeded.
    pub ok: bool,
    /// Chain checked.
    pub chain: String,
    /// Address checked, lower-case.
    pub address: String,
    /// `low`, `caution`, `high` or `unknown`.
    pub verdict: Verdict,
    /// Sum of the reasons' points, capped at 100.
    #[schemars(range(min = 0, max = 100))]
    pub risk_score: u32,
    /// Findings, highest points first.
    pub reasons: Vec<Reason>,
    /// Block number at which the check ran.
    pub checked_at_block: u64,
    /// Duration of the check in milliseconds.
    pub latency_ms: u64,
    /// Heuristic-not-an-audit notice.
    pub disclaimer: String,
    /// Proxy details.
    pub proxy: ProxyDetails,
    /// Source verification status.
    pub verification: Verification,
    /// Powers found in the code.
    pub capabilities: Capabilities,
    /// ERC-20 details; null for an address without code.
    pub token: Option<TokenDetails>,
    /// The bytecode scan.
    pub deep_scan: DeepScan,
    /// Checks that did not run, with why.
    pub skipped: Vec<Skipped>,
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

/// Every failure to read the chain as the 503 the spec lists for this route; a rate limit
/// stays a 429 (also listed) and a defect of ours stays internal.
pub fn unavailable(chain: &EvmChain, error: EngineError) -> EngineError {
    match error.kind {
        ErrorKind::RateLimited { .. } | ErrorKind::Internal | ErrorKind::InvalidInput => error,
        ErrorKind::Unavailable { retry_after } => {
            EngineError::new(ErrorKind::Unavailable { retry_after }, "unavailable", error.message)
        }
        _ => EngineError::new(
            ErrorKind::Unavailable { retry_after: RETRY_AFTER },
            "unavailable",
            format!("the {} chain could not be read in time: {}", chain.name(), error.message),
        ),
    }
}

/// What was read from the chain.
#[derive(Clone, Debug, Default)]
pub struct Inspection {
    /// Block the reads were pinned to.
    pub block: u64,
    /// The address's own code.
    pub code: Bytes,
    /// Proxy details (addresses filled in).
    pub proxy: ProxyDetails,
    /// The implementation's code, when a proxy's implementation was found with code.
    pub implementation_code: Option<Bytes>,
    /// ERC-20 views, for contracts.
    pub token: Option<TokenDetails>,
    /// The trade simulation, for ERC-20 tokens on a chain with a known DEX.
    pub trade: Option<TradeOutcome>,
}

/// A block tag for `block`.
fn tag(block: u64) -> String {
    format!("{block:#x}")
}

pub async fn get_code(chain: &EvmChain, address: Address, block: u64) -> Result<Bytes, EngineError> {
    chain.request("eth_getCode", (address, tag(block))).await
}

async fn get_slot(chain: &EvmChain, address: Address, slot: B256, block: u64) -> Result<Option<Address>, EngineError> {
    let word: U256 = chain.request("eth_getStorageAt", (address, slot, tag(block))).await?;
    Ok(word_address(word))
}

/// The address in the low 20 bytes of a slot or answer word; None for zero.
fn word_address(word: U256) -> Option<Address> {
    let address = Address::from_word(B256::from(word));
    (!address.is_zero()).then_some(address)
}

/// An address-returning view of `to`; None when it reverts or answers no address.
pub async fn call_address(
    chain: &EvmChain,
    to: Address,
    selector: [u8; 4],
    block: u64,
) -> Result<Option<Address>, EngineError> {
    let call = json!({"to": to, "data": Bytes::from(selector.to_vec())});
    match chain.client().request::<_, Bytes>("eth_call", (call, tag(block))).await {
        Ok(data) => Ok(data.get(..32).map(U256::from_be_slice).and_then(word_address)),
        Err(RpcError::ErrorResp(_)) => Ok(None),
        Err(e) => Err(chain.error("eth_call", e)),
    }
}

/// [`inspect`] within [`CHECK_DEADLINE`]; a chain that fails or is too slow is 503.
pub async fn inspect_in_time(chain: &EvmChain, address: Address) -> Result<Inspection, EngineError> {
    let work = chain.deadline(inspect(chain, address));
    match tokio::time::timeout(CHECK_DEADLINE, work).await {
        Ok(result) => result.map_err(|e| unavailable(chain, e)),
        Err(_) => {
            Err(unavailable(chain, EngineError::new(ErrorKind::Timeout, "timeout", "the chain was not read in time")))
        }
    }
}

/// Reads everything the assessment needs.
pub async fn inspect(chain: &EvmChain, address: Address) -> Result<Inspection, EngineError> {
    let block: U64 = chain.request("eth_blockNumber", ()).await?;
    let block = block.to::<u64>();
    let code = get_code(chain, address, block).await?;
    let mut inspection = Inspection { block, code: code.clone(), ..Default::default() };
    if code.is_empty() || code.starts_with(&DELEGATION_PREFIX) {
        return Ok(inspection);
    }

    let implementation_slot = get_slot(chain, address, SLOT_IMPLEMENTATION, block).await?;
    let beacon = get_slot(chain, address, SLOT_BEACON, block).await?;
    let proxiable = get_slot(chain, address, SLOT_PROXIABLE, block).await?;
    let (standard, implementation) = match (implementation_slot, beacon, proxiable) {
        (Some(implementation), _, _) => (Some(ProxyStandard::Eip1967), Some(implementation)),
        (None, Some(beacon), _) => {
            (Some(ProxyStandard::Eip1967Beacon), call_address(chain, beacon, IMPLEMENTATION, block).await?)
        }
        (None, None, Some(implementation)) => (Some(ProxyStandard::Eip1822), Some(implementation)),
        (None, None, None) => (None, None),
    };
    if standard.is_some() {
        let admin = match get_slot(chain, address, SLOT_ADMIN, block).await? {
            Some(admin) => Some(admin),
            None => call_address(chain, beacon.unwrap_or(address), OWNER, block).await?,
        };
        let mut proxy = ProxyDetails {
            is_proxy: true,
            standard,
            implementation: implementation.as_ref().map(address_text),
            beacon: beacon.as_ref().map(address_text),
            admin: admin.as_ref().map(address_text),
            ..Default::default()
        };
        if let Some(admin) = admin {
            let admin_code = get_code(chain, admin, block).await?;
            if admin_code.is_empty() {
                proxy.admin_kind = Some(AccountKind::Eoa);
            } else {
                proxy.admin_kind = Some(AccountKind::Contract);
                if let Some(owner) = call_address(chain, admin, OWNER, block).await? {
                    // Only an EOA owner is a single key; a contract owner is a multisig or timelock.
                    if get_code(chain, owner, block).await?.is_empty() {
                        proxy.admin_owner = Some(address_text(&owner));
                    }
                }
            }
        }
        inspection.proxy = proxy;
        if let Some(implementation) = implementation {
            let implementation_code = get_code(chain, implementation, block).await?;
            inspection.implementation_code = (!implementation_code.is_empty()).then_some(implementation_code);
        }
    }

    let reads = read_erc20(chain, address, Address::ZERO).await?;
    let is_erc20 = reads.is_erc20();
    inspection.token = Some(TokenDetails {
        is_erc20,
        name: reads.name,
        symbol: reads.symbol,
        decimals: reads.decimals,
        simulation: None,
    });
    if is_erc20 && let Some(dex) = trade_sim::uniswap_v2(chain.name()) {
        inspection.trade = Some(trade_sim::simulate_trade(chain, dex, address, block).await?);
    }
    Ok(inspection)
}

fn reason(code: &str, message: String) -> Reason {
    let rule = SCORING.iter().find(|r| r.code == code);
    Reason {
        code: code.to_string(),
        severity: rule.map_or(Severity::Info, |r| r.severity),
        points: rule.map_or(0, |r| r.points),
        message,
    }
}

fn power_name(power: Power) -> &'static str {
    match power {
        Power::Mint => "mint",
        Power::Blacklist => "blacklist",
        Power::FeeSetter => "fee_setter",
        Power::Pause => "pause",
    }
}

/// Turns what was read into the answer (pure: unit-tested without a chain).
pub fn assess(chain: &str, address: Address, inspection: Inspection, latency_ms: u64) -> AddressCheckOutput {
    let Inspection { block, code, proxy, implementation_code, mut token, trade } = inspection;
    let mut reasons = Vec::new();
    let mut capabilities = Capabilities { is_contract: !code.is_empty(), ..Default::default() };
    let mut deep_scan = DeepScan::default();
    let mut unknown = false;

    if code.is_empty() {
        reasons.push(reason(
            "externally_owned_account",
            "No code at this address: an externally owned account (a wallet), not risky by itself. If you \
                expected a token or contract here, this is not one."
                .into(),
        ));
    } else if let Some(delegate) = code.strip_prefix(&DELEGATION_PREFIX[..]).filter(|d| d.len() == 20) {
        reasons.push(reason(
            "eip7702_delegation",
            format!(
                "An externally owned account delegating its code to 0x{} (EIP-7702); calls to it run that code.",
                hex::encode(delegate)
            ),
        ));
    } else {
        let scanned = if proxy.is_proxy {
            capabilities.upgradeable = true;
            match (&proxy.admin_kind, &proxy.admin, &proxy.admin_owner) {
                (Some(AccountKind::Eoa), Some(admin), _) => reasons.push(reason(
                    "upgradeable_single_key",
                    format!("Upgradeable proxy whose admin {admin} is an externally owned account: one key can replace the code."),
                )),
                (Some(AccountKind::Contract), Some(admin), Some(owner)) => reasons.push(reason(
                    "upgradeable_single_key",
                    format!("Upgradeable proxy whose admin contract {admin} is owned by the externally owned account {owner}: one key can replace the code."),
                )),
                (_, Some(admin), _) => reasons.push(reason(
                    "upgradeable_proxy",
                    format!("Upgradeable proxy whose admin {admin} is a contract (a multisig or timelock is not inspected further)."),
                )),
                _ => reasons.push(reason(
                    "upgradeable_proxy",
                    "Upgradeable proxy whose upgrade key was not found (no admin slot, no owner()).".into(),
                )),
            }
            match (&implementation_code, &proxy.implementation) {
                (Some(implementation_code), Some(implementation)) => {
                    Some((implementation_code, implementation.clone()))
                }
                _ => {
                    unknown = true;
                    let which = proxy.implementation.clone().unwrap_or_else(|| "(not found)".into());
                    reasons.push(reason(
                        "implementation_not_found",
                        format!("Proxy implementation {which} has no code or could not be read: the code that runs was not checked."),
                    ));
                    None
                }
            }
        } else {
            Some((&code, address_text(&address)))
        };
        if let Some((scanned_code, scanned_address)) = scanned {
            let scan: Scan = bytecode::scan(scanned_code);
            deep_scan = DeepScan {
                performed: true,
                scanned_address: Some(scanned_address.clone()),
                code_size: scanned_code.len() as u64,
                code_hash: Some(format!("{}", keccak256(scanned_code))),
                selectors: scan
                    .selectors
                    .iter()
                    .map(|s| SelectorFound {
                        selector: format!("0x{:08x}", s.selector),
                        signature: s.signature.to_string(),
                        power: power_name(s.power).to_string(),
                    })
                    .collect(),
            };
            capabilities.selfdestruct = scan.selfdestruct;
            capabilities.delegatecall = scan.delegatecall;
            capabilities.mint = scan.has(Power::Mint);
            capabilities.blacklist = scan.has(Power::Blacklist);
            capabilities.fee_setter = scan.has(Power::FeeSetter);
            capabilities.pause = scan.has(Power::Pause);
            let at = if proxy.is_proxy { format!(" (implementation {scanned_address})") } else { String::new() };
            if scan.selfdestruct {
                reasons.push(reason("selfdestruct", format!("The code{at} contains SELFDESTRUCT.")));
            }
            if scan.delegatecall {
                reasons.push(reason(
                    "delegatecall",
                    format!("The code{at} uses DELEGATECALL outside a recognised proxy pattern."),
                ));
            }
            for (power, code) in [
                (Power::Mint, "mint_function"),
                (Power::Blacklist, "blacklist_function"),
                (Power::FeeSetter, "fee_setter"),
                (Power::Pause, "pause_function"),
            ] {
                let signatures: Vec<&str> =
                    scan.selectors.iter().filter(|s| s.power == power).map(|s| s.signature).collect();
                if !signatures.is_empty() {
                    reasons.push(reason(code, format!("The code{at} has {}.", signatures.join(", "))));
                }
            }
        }
    }

    let simulation_skipped = match (&mut token, trade) {
        (Some(details), Some(TradeOutcome::Ran(simulation))) if details.is_erc20 => {
            reasons.extend(trade_reasons(&simulation));
            details.simulation = Some(*simulation);
            None
        }
        (Some(details), Some(TradeOutcome::Skipped(reason))) if details.is_erc20 => Some(reason),
        (Some(details), _) if details.is_erc20 => Some(format!("no DEX router is known for the {chain} chain")),
        _ => Some("not an ERC-20 token".to_string()),
    };

    let risk_score = rank(&mut reasons);
    let verdict = if unknown { Verdict::Unknown } else { Verdict::from_score(risk_score) };
    let mut skipped = vec![Skipped {
        check: "source_verification".into(),
        reason: "no source verifier is reachable from this server".into(),
    }];
    if let Some(reason) = simulation_skipped {
        skipped.push(Skipped { check: "trade_simulation".into(), reason });
    }
    AddressCheckOutput {
        schema: SCHEMA.to_string(),
        ok: true,
        chain: chain.to_string(),
        address: address_text(&address),
        verdict,
        risk_score,
        reasons,
        checked_at_block: block,
        latency_ms,
        disclaimer: DISCLAIMER.to_string(),
        proxy,
        verification: Verification {
            status: "skipped".into(),
            reason: "no source verifier is reachable from this server".into(),
        },
        capabilities,
        token,
        deep_scan,
        skipped,
    }
}

/// The findings of a simulation that ran: a blocked trade, else the larger tax.
fn trade_reasons(simulation: &TradeSimulation) -> Vec<Reason> {
    let spent = &simulation.amount_in_wei;
    if !simulation.buy_ok {
        return vec![reason(
            "buy_blocked",
            format!("A simulated buy of the token for {spent} wei through its Uniswap V2 pool reverted."),
        )];
    }
    let mut reasons = Vec::new();
    let sell_kept = simulation.sell_tax_bps.filter(|bps| *bps > SELL_KEPT_BPS);
    match (simulation.sell_ok, sell_kept) {
        (Some(false), _) => reasons.push(reason(
            "sell_blocked",
            "Honeypot: a simulated buy went through but selling the tokens back through the same pool reverted.".into(),
        )),
        (Some(true), Some(bps)) => reasons.push(reason(
            "sell_blocked",
            format!(
                "Honeypot: a simulated buy went through but selling the tokens back kept {}% of the quoted ETH.",
                trade_sim::percent(bps)
            ),
        )),
        _ => {}
    }
    let taxes = [("buy", simulation.buy_tax_bps), ("sell", simulation.sell_tax_bps.filter(|_| sell_kept.is_none()))];
    let worst = taxes.iter().filter_map(|(_, bps)| *bps).max().unwrap_or(0);
    if worst > TAX_NOTED_BPS {
        let said: Vec<String> = taxes
            .iter()
            .filter_map(|(side, bps)| bps.map(|b| format!("{side} tax {}%", trade_sim::percent(b))))
            .collect();
        let code = if worst > TAX_HIGH_BPS { "high_trade_tax" } else { "trade_tax" };
        reasons.push(reason(code, format!("A simulated trade through Uniswap V2 measured {}.", said.join(", "))));
    }
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selector(sig: &str) -> [u8; 4] {
        <[u8; 4]>::try_from(&keccak256(sig)[..4]).unwrap()
    }

    #[test]
    fn constants_match_their_definitions() {
        assert_eq!(IMPLEMENTATION, selector("implementation()"));
        assert_eq!(OWNER, selector("owner()"));
        let minus_one = |s: &str| B256::from(U256::from_be_bytes(keccak256(s).0) - U256::from(1));
        assert_eq!(SLOT_IMPLEMENTATION, minus_one("eip1967.proxy.implementation"));
        assert_eq!(SLOT_ADMIN, minus_one("eip1967.proxy.admin"));
        assert_eq!(SLOT_BEACON, minus_one("eip1967.proxy.beacon"));
        assert_eq!(SLOT_PROXIABLE, keccak256("PROXIABLE"));
    }

    #[test]
    fn scoring_table_is_consistent() {
        for (i, rule) in SCORING.iter().enumerate() {
            assert!(SCORING[..i].iter().all(|r| r.code != rule.code), "{} twice", rule.code);
            // A high-severity finding alone reaches the high verdict.
            assert_eq!(rule.severity == Severity::High, rule.points >= HIGH_FROM, "{}", rule.code);
        }
        let single_key = SCORING.iter().find(|r| r.code == "upgradeable_single_key").unwrap();
        assert_eq!(single_key.severity, Severity::High);
    }

    #[test]
    fn eoa_is_low_with_an_info_reason() {
        let out = assess("base", Address::repeat_byte(1), Inspection { block: 7, ..Default::default() }, 3);
        assert_eq!(out.verdict, Verdict::Low);
        assert_eq!(out.risk_score, 0);
        assert_eq!(out.reasons.len(), 1);
        assert_eq!(out.reasons[0].code, "externally_owned_account");
        assert!(!out.capabilities.is_contract && out.token.is_none() && !out.deep_scan.performed);
    }

    #[test]
    fn score_is_capped_and_sets_the_verdict() {
        // SELFDESTRUCT, DELEGATECALL and every power: far above 100 points.
        let mut code = vec![0xff, 0xf4];
        for sig in ["mint(address,uint256)", "blacklist(address)", "setFee(uint256)", "pause()"] {
            code.push(0x63);
            code.extend_from_slice(&selector(sig));
        }
        let inspection = Inspection { code: code.into(), ..Default::default() };
        let out = assess("ethereum", Address::repeat_byte(2), inspection, 0);
        assert_eq!(out.risk_score, 100);
        assert_eq!(out.verdict, Verdict::High);
        assert_eq!(out.reasons.len(), 6);
        assert_eq!(out.reasons[0].code, "selfdestruct");
    }

    #[test]
    fn proxy_without_implementation_code_is_unknown() {
        let proxy = ProxyDetails {
            is_proxy: true,
            standard: Some(ProxyStandard::Eip1967),
            implementation: Some(address_text(&Address::repeat_byte(3))),
            admin: None,
            ..Default::default()
        };
        let inspection = Inspection { code: vec![0xf4].into(), proxy, ..Default::default() };
        let out = assess("ethereum", Address::repeat_byte(2), inspection, 0);
        assert_eq!(out.verdict, Verdict::Unknown);
        let codes: Vec<&str> = out.reasons.iter().map(|r| r.code.as_str()).collect();
        assert_eq!(codes, vec!["implementation_not_found", "upgradeable_proxy"]);
        assert!(!out.capabilities.delegatecall);
    }

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

    fn token_with(trade: TradeOutcome) -> Inspection {
        let token = TokenDetails { is_erc20: true, name: None, symbol: None, decimals: Some(18), simulation: None };
        Inspection { code: vec![0x00].into(), token: Some(token), trade: Some(trade), ..Default::default() }
    }

    fn simulation(buy_bps: Option<u64>, sell_ok: Option<bool>, sell_bps: Option<u64>) -> TradeSimulation {
        TradeSimulation {
            dex: "uniswap_v2".into(),
            router: "0x01".into(),
            pair: "0x02".into(),
            weth: "0x03".into(),
            pool_weth_wei: "1".into(),
            pool_token_raw: "1".into(),
            amount_in_wei: "10000000000000000".into(),
            buy_ok: buy_bps.is_some(),
            buy_expected_raw: "1000".into(),
            buy_received_raw: "1000".into(),
            buy_tax_percent: buy_bps.map(trade_sim::percent),
            buy_gas: 1,
            sell_ok,
            sell_expected_wei: None,
            sell_received_wei: None,
            sell_tax_percent: sell_bps.map(trade_sim::percent),
            sell_gas: None,
            buy_tax_bps: buy_bps,
            sell_tax_bps: sell_bps,
        }
    }

    #[test]
    fn trade_findings_follow_the_simulation() {
        let run = |sim: TradeSimulation| {
            let out = assess("ethereum", Address::repeat_byte(4), token_with(TradeOutcome::Ran(Box::new(sim))), 0);
            assert!(out.skipped.iter().all(|s| s.check != "trade_simulation"));
            assert!(out.token.as_ref().unwrap().simulation.is_some());
            (out.reasons.iter().map(|r| r.code.clone()).collect::<Vec<_>>(), out.verdict)
        };
        assert_eq!(run(simulation(Some(0), Some(true), Some(0))), (vec![], Verdict::Low));
        // At 0.5% exactly, nothing; just above, a tax.
        assert_eq!(run(simulation(Some(50), Some(true), Some(50))), (vec![], Verdict::Low));
        assert_eq!(run(simulation(Some(51), Some(true), Some(0))), (vec!["trade_tax".into()], Verdict::Low));
        assert_eq!(run(simulation(Some(0), Some(true), Some(1001))), (vec!["high_trade_tax".into()], Verdict::Caution));
        assert_eq!(
            run(simulation(Some(300), Some(false), None)),
            (vec!["sell_blocked".into(), "trade_tax".into()], Verdict::High)
        );
        // Selling keeps over 90% of the quote: a honeypot too, and not also a tax.
        assert_eq!(run(simulation(Some(0), Some(true), Some(9500))), (vec!["sell_blocked".into()], Verdict::High));
        assert_eq!(run(simulation(None, None, None)), (vec!["buy_blocked".into()], Verdict::Caution));
    }

    #[test]
    fn a_simulation_that_did_not_run_is_skipped_with_its_reason() {
        let out = assess("base", Address::repeat_byte(5), token_with(TradeOutcome::Skipped("no pool".into())), 0);
        assert_eq!(out.skipped[1], Skipped { check: "trade_simulation".into(), reason: "no pool".into() });
        let no_dex = Inspection { trade: None, ..token_with(TradeOutcome::Skipped(String::new())) };
        let out = assess("polygon", Address::repeat_byte(5), no_dex, 0);
        assert_eq!(out.skipped[1].reason, "no DEX router is known for the polygon chain");
        assert!(out.reasons.is_empty());
    }

    #[test]
    fn eip7702_delegation_is_reported() {
        let code = [&DELEGATION_PREFIX[..], &[0x11; 20]].concat();
        let out = assess("base", Address::repeat_byte(2), Inspection { code: code.into(), ..Default::default() }, 0);
        assert_eq!(out.reasons[0].code, "eip7702_delegation");
        assert_eq!(out.verdict, Verdict::Low);
    }
}
