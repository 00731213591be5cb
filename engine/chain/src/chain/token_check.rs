//! `POST /v1/check/token`: the risk of an ERC-20 token before buying or accepting it, on
//! Ethereum or Base.
//!
//! It is the address check (`address_check.rs`, whose reads and scoring are
//! `risk/contract.rs` and `risk/address.rs`: proxy and upgrade key, SELFDESTRUCT and
//! DELEGATECALL, owner powers by selector, the buy/sell simulation through the chain's
//! Uniswap V2 router with its measured taxes, one block, scored on one table) plus what a
//! token holder needs to know about who holds those powers and what the token declares:
//! - the owner (`owner()`, else `getOwner()`): a wallet, a contract (multisig, timelock,
//!   not inspected further), or renounced (the zero address). A wallet that holds owner
//!   powers found in the code is `owner_holds_powers`;
//! - the fee, limit and trading views common in taxed tokens ([`DECLARED_VIEWS`]), read
//!   and reported as the token states them. They are not scored as taxes: what a trade
//!   loses is measured by the simulation instead. A trading switch that answers false is
//!   `trading_disabled`; a maximum transaction or wallet below the supply is
//!   `transaction_limit`.
//!
//! All views are read in one JSON-RPC batch at the block the address check read, the
//! owner's code in one more request. An address that is not an ERC-20 token (no code, or
//! no `totalSupply()`/`balanceOf()`) is a 422 naming `/address`: the address check is the
//! route for any address.

use alloy::primitives::{Address, U256};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::evm::call::ViewBatch;
use crate::evm::erc20::TOTAL_SUPPLY;
use crate::evm::trade_sim::TradeSimulation;
use crate::evm::{EvmAddress, EvmChain, address_text};
use crate::output::Reply;
use crate::price::Price;
use crate::risk::address::{self, Capabilities, DISCLAIMER, Skipped};
use crate::risk::contract::{self, CheckChain, OWNER, ProxyDetails};
use crate::risk::{Reason, ScoreRule, Severity, Verdict, rank, reason_from, rule};

/// `getOwner()` (BEP-20 style).
const GET_OWNER: [u8; 4] = [0x89, 0x3d, 0x20, 0xe8];

/// What a declared view means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Declared {
    /// A fee or tax number, in the token's own unit.
    Fee,
    /// A maximum per transaction or per wallet, raw units.
    Limit,
    /// A switch that opens trading.
    Trading,
}

/// The views taxed tokens commonly declare: (signature, meaning).
pub const DECLARED_VIEWS: &[(&str, Declared)] = &[
    ("buyTax()", Declared::Fee),
    ("sellTax()", Declared::Fee),
    ("buyFee()", Declared::Fee),
    ("sellFee()", Declared::Fee),
    ("buyTotalFees()", Declared::Fee),
    ("sellTotalFees()", Declared::Fee),
    ("totalFees()", Declared::Fee),
    ("taxFee()", Declared::Fee),
    ("_taxFee()", Declared::Fee),
    ("maxTxAmount()", Declared::Limit),
    ("_maxTxAmount()", Declared::Limit),
    ("maxTransactionAmount()", Declared::Limit),
    ("maxWallet()", Declared::Limit),
    ("maxWalletSize()", Declared::Limit),
    ("_maxWalletSize()", Declared::Limit),
    ("tradingOpen()", Declared::Trading),
    ("tradingEnabled()", Declared::Trading),
    ("tradingActive()", Declared::Trading),
];

/// The reasons this route adds to the address check's, on the same scale.
pub const SCORING: &[ScoreRule] = &[
    rule(
        "owner_holds_powers",
        Severity::Medium,
        20,
        "the owner powers found in the code are held by one wallet: one key can use them",
    ),
    rule(
        "trading_disabled",
        Severity::Medium,
        25,
        "the token says trading is not open: holders cannot sell until the owner opens it",
    ),
    rule(
        "transaction_limit",
        Severity::Low,
        10,
        "a maximum per transaction or per wallet below the supply: large sales can be refused",
    ),
    rule(
        "ownership_renounced",
        Severity::Info,
        0,
        "the owner is the zero address: powers that only the owner may use can no longer be used",
    ),
];

/// Request of `/v1/check/token`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenCheckInput {
    /// Chain to check on: `base` or `ethereum`.
    pub chain: CheckChain,
    /// The ERC-20 token, 0x and 40 hex digits (any case).
    pub address: EvmAddress,
}

/// Who owns the token contract.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TokenOwner {
    /// The owner, lower-case; null when the token has no `owner()` or `getOwner()`.
    pub address: Option<String>,
    /// `wallet`, `contract`, `renounced` or `none` (no owner view).
    pub kind: String,
}

/// One declared view that answered.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DeclaredValue {
    /// The view (`sellTax()`).
    pub view: String,
    /// `fee`, `limit` or `trading`.
    pub kind: String,
    /// Its answer: a decimal number (fees in the token's own unit, limits in raw units), or `true`/`false` for a trading switch.
    pub value: String,
}

/// Answer of `/v1/check/token`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TokenCheckOutput {
    /// Chain checked.
    pub chain: String,
    /// The token, lower-case.
    pub address: String,
    /// `name()`, untrusted text.
    pub name: Option<String>,
    /// `symbol()`, untrusted text.
    pub symbol: Option<String>,
    /// `decimals()`.
    pub decimals: Option<u8>,
    /// `totalSupply()`, raw units, decimal.
    pub total_supply: String,
    /// `low`, `caution`, `high`, or `unknown` when the code that runs could not be checked.
    pub verdict: Verdict,
    /// Sum of the reasons' points, capped at 100.
    #[schemars(range(min = 0, max = 100))]
    pub risk_score: u32,
    /// Findings, highest points first: the address check's and this route's.
    pub reasons: Vec<Reason>,
    /// Who owns the contract.
    pub owner: TokenOwner,
    /// Powers found in the code.
    pub capabilities: Capabilities,
    /// Proxy details.
    pub proxy: ProxyDetails,
    /// The buy/sell simulation with the measured taxes; null when it did not run (`skipped` says why).
    pub simulation: Option<TradeSimulation>,
    /// Fee, limit and trading views the token answers, as it states them.
    pub declared: Vec<DeclaredValue>,
    /// Block the checks read.
    pub checked_at_block: u64,
    /// Checks that did not run, with why.
    pub skipped: Vec<Skipped>,
    /// Heuristic-not-an-audit notice.
    pub disclaimer: String,
}

/// A checked request.
pub struct TokenCheckRequest {
    chain: std::sync::Arc<EvmChain>,
    address: Address,
}

/// The route.
pub struct TokenCheckRoute;

impl Route for TokenCheckRoute {
    type Input = TokenCheckInput;
    type Prepared = TokenCheckRequest;
    type Output = TokenCheckOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/check/token",
        operation: "check_token_risk",
        family: Family::Chain,
        summary: "ERC-20 token risk: owner powers, upgradeability, buy/sell simulation and taxes",
        description: "Checks an ERC-20 token on base or ethereum as the address check does (upgradeable proxy and \
            who holds the upgrade key, SELFDESTRUCT, DELEGATECALL, mint, blacklist, fee setter and pause powers, a \
            simulated buy and sell through the chain's Uniswap V2 router with the taxes each lost, honeypots), \
            then who owns the contract (a wallet, a contract, or renounced), and the fee, limit and trading views \
            the token declares. A wallet holding owner powers, closed trading and transaction limits are scored on \
            the same scale. Answers a verdict, a 0-100 score and the reasons. Heuristic, not an audit; token \
            names are untrusted data. An address that is not an ERC-20 token is an input error.",
        base_price: Price::micros(5_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: TokenCheckInput, ctx: &Context) -> Result<TokenCheckRequest, EngineError> {
        let chain = input.chain.resolve(ctx, "the token check")?;
        Ok(TokenCheckRequest { chain, address: input.address.0 })
    }

    fn quote(_: &TokenCheckRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: TokenCheckRequest, _: &Context) -> Result<Reply<TokenCheckOutput>, EngineError> {
        let TokenCheckRequest { chain, address } = request;
        let inspection = contract::inspect_in_time(&chain, address).await?;
        let block = inspection.block;
        let is_token = inspection.token.as_ref().is_some_and(|t| t.is_erc20);
        if !is_token {
            let what = if inspection.code.is_empty() { "has no code" } else { "does not answer like an ERC-20 token" };
            return Err(EngineError::invalid_with(
                "not_a_token",
                "/address",
                format!(
                    "/address: {} {what} on {} (totalSupply() and balanceOf()); /v1/check/address checks any address",
                    address_text(&address),
                    chain.name()
                ),
            ));
        }
        let checked = address::assess(chain.name(), address, inspection, 0);
        let views =
            chain.deadline(read_views(&chain, address, block)).await.map_err(|e| contract::unavailable(&chain, e))?;
        Ok(Reply::Json(judge(chain.name(), address, checked, views)))
    }
}

/// The token's own views, read at `block`.
struct Views {
    total_supply: U256,
    owner: Option<Address>,
    /// The owner has code.
    owner_is_contract: bool,
    /// The token has an owner view.
    has_owner_view: bool,
    declared: Vec<(&'static str, Declared, U256)>,
}

/// `totalSupply()`, the owner views and [`DECLARED_VIEWS`] in one batch, then the owner's code.
async fn read_views(chain: &EvmChain, token: Address, block: u64) -> Result<Views, EngineError> {
    let tag = format!("{block:#x}");
    let mut batch = ViewBatch::new(chain, &tag);
    let supply = batch.view(&token, TOTAL_SUPPLY.to_vec())?;
    let owner = batch.view(&token, OWNER.to_vec())?;
    let get_owner = batch.view(&token, GET_OWNER.to_vec())?;
    let mut declared = Vec::new();
    for (signature, kind) in DECLARED_VIEWS {
        let selector = alloy::primitives::keccak256(signature.as_bytes())[..4].to_vec();
        declared.push((*signature, *kind, batch.view(&token, selector)?));
    }
    batch.send().await?;
    let total_supply = supply.word(chain).await?.unwrap_or_default();
    let owner_word = match owner.answer(chain).await?.filter(|a| a.len() == 32) {
        Some(word) => Some(word),
        None => get_owner.answer(chain).await?.filter(|a| a.len() == 32),
    };
    // An owner view answers one word holding an address; anything else is no owner view.
    let owner_word = owner_word.filter(|w| w[..12].iter().all(|b| *b == 0));
    let has_owner_view = owner_word.is_some();
    let owner = owner_word.map(|w| Address::from_slice(&w[12..])).filter(|a| !a.is_zero());
    let mut values = Vec::new();
    for (signature, kind, view) in declared {
        // A view that exists answers exactly one word; a fallback that answers anything is not it.
        if let Some(answer) = view.answer(chain).await?.filter(|a| a.len() == 32) {
            let value = U256::from_be_slice(&answer);
            if kind != Declared::Trading || value <= U256::from(1u8) {
                values.push((signature, kind, value));
            }
        }
    }
    let owner_is_contract = match owner {
        Some(owner) => !contract::get_code(chain, owner, block).await?.is_empty(),
        None => false,
    };
    Ok(Views { total_supply, owner, owner_is_contract, has_owner_view, declared: values })
}

fn token_reason(code: &str, message: String) -> Reason {
    reason_from(SCORING, code, message).unwrap_or_else(|| panic!("{code} is in the token check's scoring table"))
}

/// The address check's findings and this route's, scored together.
fn judge(chain: &str, address: Address, checked: address::AddressCheckOutput, views: Views) -> TokenCheckOutput {
    let mut reasons = checked.reasons;
    let powers: Vec<&str> = [
        (checked.capabilities.mint, "mint"),
        (checked.capabilities.blacklist, "blacklist"),
        (checked.capabilities.fee_setter, "fee setter"),
        (checked.capabilities.pause, "pause"),
    ]
    .into_iter()
    .filter_map(|(found, name)| found.then_some(name))
    .collect();
    let owner_kind = match (views.has_owner_view, views.owner, views.owner_is_contract) {
        (false, _, _) => "none",
        (true, None, _) => "renounced",
        (true, Some(_), true) => "contract",
        (true, Some(_), false) => "wallet",
    };
    if owner_kind == "wallet" && !powers.is_empty() {
        reasons.push(token_reason(
            "owner_holds_powers",
            format!(
                "the owner {} is a wallet, and the code has {}: one key can use them",
                views.owner.as_ref().map(address_text).unwrap_or_default(),
                powers.join(", ")
            ),
        ));
    }
    if owner_kind == "renounced" {
        reasons.push(token_reason(
            "ownership_renounced",
            "owner() is the zero address: ownership was renounced (powers under other roles are not covered)".into(),
        ));
    }
    let mut declared = Vec::new();
    let mut limit_noted = false;
    let mut trading_noted = false;
    for (view, kind, value) in views.declared {
        let (kind_name, text) = match kind {
            Declared::Fee => ("fee", value.to_string()),
            Declared::Limit => ("limit", value.to_string()),
            Declared::Trading => ("trading", (value == U256::from(1u8)).to_string()),
        };
        if kind == Declared::Trading && value.is_zero() && !trading_noted {
            trading_noted = true;
            reasons.push(token_reason("trading_disabled", format!("{view} answers false: trading is not open")));
        }
        if kind == Declared::Limit && !value.is_zero() && value < views.total_supply && !limit_noted {
            limit_noted = true;
            reasons.push(token_reason(
                "transaction_limit",
                format!("{view} is {value}, below the supply of {}", views.total_supply),
            ));
        }
        declared.push(DeclaredValue { view: view.to_string(), kind: kind_name.into(), value: text });
    }
    let risk_score = rank(&mut reasons);
    let verdict = if checked.verdict == Verdict::Unknown { Verdict::Unknown } else { Verdict::from_score(risk_score) };
    let (name, symbol, decimals, simulation) =
        checked.token.map_or((None, None, None, None), |t| (t.name, t.symbol, t.decimals, t.simulation));
    TokenCheckOutput {
        chain: chain.to_string(),
        address: address_text(&address),
        name,
        symbol,
        decimals,
        total_supply: views.total_supply.to_string(),
        verdict,
        risk_score,
        reasons,
        owner: TokenOwner { address: views.owner.as_ref().map(address_text), kind: owner_kind.into() },
        capabilities: checked.capabilities,
        proxy: checked.proxy,
        simulation,
        declared,
        checked_at_block: checked.checked_at_block,
        skipped: checked.skipped,
        disclaimer: DISCLAIMER.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_and_table() {
        assert_eq!(GET_OWNER, alloy::primitives::keccak256("getOwner()")[..4]);
        assert_eq!(OWNER, alloy::primitives::keccak256("owner()")[..4]);
        for r in SCORING {
            assert!(address::SCORING.iter().all(|a| a.code != r.code), "{} is in both tables", r.code);
        }
    }
}
