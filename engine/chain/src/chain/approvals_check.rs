//! `POST /v1/check/approvals`: an owner's ERC-20 approvals that still stand, each flagged
//! when it is unlimited or given to a spender that is not a contract or not a well-known
//! one. The pairs come from the caller (`tokens` × `spenders`) or from a bounded scan of the
//! owner's `Approval` events (at most 10,000 blocks, the last 10,000 by default); the
//! current allowances, the tokens' symbols, decimals and supplies and the spenders' code
//! are then read in one JSON-RPC batch.

use std::sync::Arc;

use alloy::primitives::{Address, B256, Bytes, U256};
use alloy::rpc::client::Waiter;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::chain::typed_data_check::known_name;
use crate::context::Context;
use crate::error::{EngineError, ErrorKind};
use crate::evm::block_ref::{BlockRef, explain};
use crate::evm::call::ViewBatch;
use crate::evm::erc20::{DECIMALS, SYMBOL, TOTAL_SUPPLY, decode_text};
use crate::evm::node_json::small;
use crate::evm::{ChainName, EvmAddress, EvmChain, address_text, address_word, format_units};
use crate::output::Reply;
use crate::price::Price;
use crate::risk::{Reason, ScoreRule, Severity, Verdict, rank, reason_from, rule};

/// Most tokens or spenders a caller may list.
pub const MAX_LISTED: usize = 50;
/// Most token/spender pairs read in one call.
pub const MAX_PAIRS: usize = 200;
/// Widest block range scanned for `Approval` events.
pub const MAX_SCAN_BLOCKS: u64 = 10_000;
/// Most `Approval` events a scan reads.
pub const MAX_SCAN_LOGS: usize = 1_000;
/// `Approval(address,address,uint256)`.
const APPROVAL_TOPIC: B256 =
    alloy::primitives::b256!("8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925");
/// `allowance(address,address)`.
const ALLOWANCE: [u8; 4] = [0xdd, 0x62, 0xed, 0x3e];

/// The scoring table of one approval. An approval's score is the sum of its reasons'
/// points, capped at 100; the answer's score is its highest approval's.
pub const SCORING: &[ScoreRule] = &[
    rule(
        "spender_without_code",
        Severity::High,
        50,
        "the spender has no code: an approval to a wallet, which is how approval phishing takes tokens",
    ),
    rule(
        "unlimited_approval",
        Severity::Medium,
        20,
        "the allowance is unlimited (the maximum, or more than the token's supply): the spender can take every token, now and later",
    ),
    rule("unknown_spender", Severity::Low, 10, "the spender is a contract that is not a well-known router or protocol"),
];

/// Request of `/v1/check/approvals`: with `spenders`, `tokens` (at least one) and no block range; without, an event scan.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("dependentSchemas" = {"spenders": {
    "required": ["tokens"],
    "properties": {"tokens": {"minItems": 1}, "from_block": false, "to_block": false}
}}))]
pub struct ApprovalsInput {
    /// Chain to read: `ethereum`, `base` or `polygon`.
    pub chain: ChainName,
    /// Whose approvals, 0x and 40 hex digits.
    pub owner: EvmAddress,
    /// ERC-20 tokens to check (at most 50). With `spenders`, exactly these pairs are read; without, the event scan is limited to these tokens.
    #[serde(default)]
    #[schemars(length(max = 50))]
    pub tokens: Vec<EvmAddress>,
    /// Spenders to check (1 to 50); needs `tokens` and takes no block range. Without them, the spenders come from the owner's Approval events.
    #[serde(default)]
    #[schemars(length(min = 1, max = 50))]
    pub spenders: Option<Vec<EvmAddress>>,
    /// First block scanned for Approval events (without `spenders`): a number or a tag. Defaults to 9,999 blocks before `to_block`.
    #[serde(default)]
    pub from_block: Option<BlockRef>,
    /// Last block scanned: a number or a tag. Defaults to `latest`. At most 10,000 blocks are scanned.
    #[serde(default)]
    pub to_block: Option<BlockRef>,
}

/// One standing approval.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ApprovalView {
    /// The token, lower-case.
    pub token: String,
    /// Its `symbol()`, untrusted text; null when it has none.
    pub symbol: Option<String>,
    /// Its `decimals()`; null when it has none.
    pub decimals: Option<u8>,
    /// The spender, lower-case.
    pub spender: String,
    /// The spender's name when it is a well-known contract.
    pub spender_name: Option<String>,
    /// Whether the spender has code (a contract, or an EIP-7702 delegated account).
    pub spender_has_code: bool,
    /// The allowance now, raw units, decimal.
    pub allowance_raw: String,
    /// The allowance in whole tokens, or `unlimited`; null without decimals.
    pub allowance: Option<String>,
    /// Whether it is unlimited (the maximum, or more than the supply).
    pub unlimited: bool,
    /// What is risky about it, most serious first.
    pub reasons: Vec<Reason>,
    /// Sum of the reasons' points, capped at 100.
    pub score: u32,
}

/// Answer of `/v1/check/approvals`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ApprovalsOutput {
    /// Chain read.
    pub chain: String,
    /// The owner, lower-case.
    pub owner: String,
    /// `pairs` (the caller's tokens × spenders) or `event_scan`.
    pub source: String,
    /// First block scanned; null when the pairs were given.
    pub from_block: Option<u64>,
    /// Last block scanned; null when the pairs were given.
    pub to_block: Option<u64>,
    /// Token/spender pairs checked.
    pub checked: u64,
    /// Pairs whose allowance is now zero (revoked, spent or never given).
    pub zero: u64,
    /// The approvals that stand (allowance above zero), riskiest first.
    pub approvals: Vec<ApprovalView>,
    /// Pairs that could not be read (the token does not answer allowance()), as `token spender`.
    pub unreadable: Vec<String>,
    /// The highest approval score, 0 to 100.
    #[schemars(range(min = 0, max = 100))]
    pub risk_score: u32,
    /// `low` below 20, `caution` from 20, `high` from 50, from `risk_score`.
    pub verdict: Verdict,
}

/// Where the pairs come from.
enum Pairs {
    Given(Vec<(Address, Address)>),
    Scan { tokens: Vec<Address>, from: Option<BlockRef>, to: BlockRef },
}

/// A checked request.
pub struct ApprovalsRequest {
    chain: Arc<EvmChain>,
    owner: Address,
    pairs: Pairs,
}

/// The route.
pub struct ApprovalsRoute;

impl Route for ApprovalsRoute {
    type Input = ApprovalsInput;
    type Prepared = ApprovalsRequest;
    type Output = ApprovalsOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/check/approvals",
        operation: "check_token_approvals",
        family: Family::Chain,
        summary: "An owner's standing ERC-20 approvals, unlimited or risky ones flagged",
        description: "Lists the ERC-20 allowances an owner has given that still stand, for the given tokens and \
            spenders, or found by scanning the owner's Approval events over at most 10,000 blocks. Each is read now \
            (with the token's symbol and decimals) and flagged: unlimited, a spender without code (approval \
            phishing), a spender that is not a well-known router. Riskiest first, with a score and verdict.",
        base_price: Price::micros(5_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: ApprovalsInput, ctx: &Context) -> Result<ApprovalsRequest, EngineError> {
        let chain = ctx.chains.resolve(&input.chain, "/chain")?;
        let tokens = distinct(&input.tokens, "/tokens")?;
        let pairs = if let Some(spenders) = &input.spenders {
            let spenders = distinct(spenders, "/spenders")?;
            if spenders.is_empty() {
                return Err(EngineError::invalid(
                    "/spenders",
                    "/spenders: list at least one spender, or leave it out to scan events",
                ));
            }
            if tokens.is_empty() {
                return Err(EngineError::invalid(
                    "/tokens",
                    "/tokens: list the tokens to check with these spenders (or leave out `spenders` to scan events)",
                ));
            }
            if input.from_block.is_some() || input.to_block.is_some() {
                return Err(EngineError::invalid(
                    "/from_block",
                    "/from_block: a block range is for the event scan; with `spenders` the allowances are read now",
                ));
            }
            let pairs: Vec<(Address, Address)> =
                tokens.iter().flat_map(|t| spenders.iter().map(move |s| (*t, *s))).collect();
            if pairs.len() > MAX_PAIRS {
                return Err(EngineError::invalid(
                    "/spenders",
                    format!(
                        "/spenders: {} tokens × {} spenders is {} pairs; at most {MAX_PAIRS}",
                        tokens.len(),
                        spenders.len(),
                        pairs.len()
                    ),
                ));
            }
            Pairs::Given(pairs)
        } else {
            let to = input.to_block.unwrap_or(BlockRef::Tag("latest"));
            if let (Some(from), Some(to)) = (input.from_block.and_then(|b| b.number()), to.number()) {
                check_range(from, to)?;
            }
            Pairs::Scan { tokens, from: input.from_block, to }
        };
        Ok(ApprovalsRequest { chain, owner: input.owner.0, pairs })
    }

    fn quote(_: &ApprovalsRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: ApprovalsRequest, _: &Context) -> Result<Reply<ApprovalsOutput>, EngineError> {
        let chain = Arc::clone(&request.chain);
        let blocks = match &request.pairs {
            Pairs::Scan { from, to, .. } => [*from, Some(*to)],
            Pairs::Given(_) => [None, None],
        };
        let answer = explain(&chain, &blocks, chain.deadline(check(request)).await).await?;
        Ok(Reply::Json(answer))
    }
}

/// The addresses listed, each once, in order (at most [`MAX_LISTED`]).
fn distinct(list: &[EvmAddress], field: &str) -> Result<Vec<Address>, EngineError> {
    if list.len() > MAX_LISTED {
        return Err(EngineError::invalid(field, format!("{field}: at most {MAX_LISTED}, {} given", list.len())));
    }
    // An address listed twice (in any letter case) is read once: the answer is the same.
    let mut out: Vec<Address> = Vec::with_capacity(list.len());
    for address in list {
        if !out.contains(&address.0) {
            out.push(address.0);
        }
    }
    Ok(out)
}

fn check_range(from: u64, to: u64) -> Result<(), EngineError> {
    if from > to {
        return Err(EngineError::invalid_with(
            "inconsistent_fields",
            "/from_block",
            format!("/from_block: block {from} comes after to_block {to}"),
        ));
    }
    // In u128: from 0 to u64::MAX is one block more than u64 counts.
    let blocks = u128::from(to - from) + 1;
    if blocks > u128::from(MAX_SCAN_BLOCKS) {
        // A rule between two fields, which no schema states.
        return Err(EngineError::invalid_with(
            "inconsistent_fields",
            "/from_block",
            format!(
                "/from_block: blocks {from} to {to} are {blocks} blocks; at most {MAX_SCAN_BLOCKS} are scanned in one call \
                 (list `tokens` and `spenders` to check pairs without a scan)"
            ),
        ));
    }
    Ok(())
}

/// The block number of a tag (`earliest` is 0).
async fn tag_number(chain: &EvmChain, block: BlockRef) -> Result<u64, EngineError> {
    match block {
        BlockRef::Number(n) => Ok(n),
        BlockRef::Tag("earliest") => Ok(0),
        BlockRef::Tag(tag) => {
            let answer: Value = chain.request("eth_getBlockByNumber", (tag, false)).await?;
            answer.as_object().and_then(|b| small(b, "number").ok().flatten()).ok_or_else(|| {
                EngineError::new(
                    ErrorKind::BadUpstream,
                    "upstream_error",
                    format!("the {} RPC answered no usable `{tag}` block", chain.name()),
                )
            })
        }
    }
}

/// The distinct (token, spender) pairs of the owner's Approval events in the range.
async fn scan(
    chain: &EvmChain,
    owner: Address,
    tokens: &[Address],
    from: Option<BlockRef>,
    to: BlockRef,
) -> Result<(u64, u64, Vec<(Address, Address)>), EngineError> {
    let to = tag_number(chain, to).await?;
    let from = match from {
        Some(block) => tag_number(chain, block).await?,
        None => to.saturating_sub(MAX_SCAN_BLOCKS - 1),
    };
    check_range(from, to)?;
    let mut filter = json!({
        "fromBlock": format!("{from:#x}"),
        "toBlock": format!("{to:#x}"),
        "topics": [APPROVAL_TOPIC, address_word(&owner)],
    });
    if !tokens.is_empty() {
        filter["address"] = json!(tokens.iter().map(address_text).collect::<Vec<_>>());
    }
    let logs: Value = chain.request("eth_getLogs", (filter,)).await?;
    let bad = |why: &str| {
        EngineError::new(
            ErrorKind::BadUpstream,
            "upstream_error",
            format!("the {} RPC's Approval logs are not usable: {why}", chain.name()),
        )
    };
    let logs = logs.as_array().ok_or_else(|| bad("not a list"))?;
    if logs.len() > MAX_SCAN_LOGS {
        return Err(EngineError::invalid_with(
            "too_many_logs",
            "/from_block",
            format!(
                "blocks {from} to {to} hold {} Approval events of this owner, more than the {MAX_SCAN_LOGS} one call \
                 reads; narrow the range or list `tokens` and `spenders`",
                logs.len()
            ),
        ));
    }
    let mut pairs: Vec<(Address, Address)> = Vec::new();
    for log in logs {
        let log = crate::evm::logs::parse_node_log(log).map_err(|why| bad(&why))?;
        // ERC-20 Approval: three topics (ERC-721's has four and is not an allowance).
        if log.topics.len() != 3 || log.topics[0] != APPROVAL_TOPIC || log.topics[1] != address_word(&owner) {
            continue;
        }
        let token: Address = log.entry.address.parse().map_err(|_| bad("a log address is not an address"))?;
        let spender = Address::from_word(log.topics[2]);
        if !pairs.contains(&(token, spender)) {
            pairs.push((token, spender));
        }
    }
    if pairs.len() > MAX_PAIRS {
        return Err(EngineError::invalid(
            "/from_block",
            format!(
                "the scan found {} token/spender pairs, more than the {MAX_PAIRS} one call checks; narrow the range or list `tokens`",
                pairs.len()
            ),
        ));
    }
    Ok((from, to, pairs))
}

async fn check(request: ApprovalsRequest) -> Result<ApprovalsOutput, EngineError> {
    let ApprovalsRequest { chain, owner, pairs } = request;
    let (source, range, pairs) = match pairs {
        Pairs::Given(pairs) => ("pairs", None, pairs),
        Pairs::Scan { tokens, from, to } => {
            let (from, to, pairs) = scan(&chain, owner, &tokens, from, to).await?;
            ("event_scan", Some((from, to)), pairs)
        }
    };
    let mut tokens: Vec<Address> = Vec::new();
    let mut spenders: Vec<Address> = Vec::new();
    for (token, spender) in &pairs {
        if !tokens.contains(token) {
            tokens.push(*token);
        }
        if !spenders.contains(spender) {
            spenders.push(*spender);
        }
    }
    let mut batch = ViewBatch::new(&chain, "latest");
    let mut allowances = Vec::with_capacity(pairs.len());
    for (token, spender) in &pairs {
        let data = [&ALLOWANCE[..], address_word(&owner).as_slice(), address_word(spender).as_slice()].concat();
        allowances.push(batch.view(token, data)?);
    }
    let mut token_views = Vec::with_capacity(tokens.len());
    for token in &tokens {
        let symbol = batch.view(token, SYMBOL.to_vec())?;
        let decimals = batch.view(token, DECIMALS.to_vec())?;
        token_views.push((symbol, decimals, batch.view(token, TOTAL_SUPPLY.to_vec())?));
    }
    let mut codes: Vec<Waiter<Bytes>> = Vec::with_capacity(spenders.len());
    for spender in &spenders {
        codes.push(batch.request("eth_getCode", &(spender, "latest"))?);
    }
    if !pairs.is_empty() {
        batch.send().await?;
    }
    let mut allowance_values = Vec::with_capacity(pairs.len());
    for view in allowances {
        allowance_values.push(view.word(&chain).await?);
    }
    let mut token_info = Vec::with_capacity(tokens.len());
    for (symbol, decimals, supply) in token_views {
        let symbol = symbol.answer(&chain).await?.as_deref().and_then(decode_text);
        let decimals = decimals.word(&chain).await?.and_then(|d| u8::try_from(d).ok());
        token_info.push((symbol, decimals, supply.word(&chain).await?));
    }
    let mut has_code = Vec::with_capacity(spenders.len());
    for waiter in codes {
        has_code.push(!waiter.await.map_err(|e| chain.error("eth_getCode", e))?.is_empty());
    }

    let (mut approvals, mut unreadable, mut zero) = (Vec::new(), Vec::new(), 0u64);
    for ((token, spender), value) in pairs.iter().zip(allowance_values) {
        let Some(value) = value else {
            unreadable.push(format!("{} {}", address_text(token), address_text(spender)));
            continue;
        };
        if value.is_zero() {
            zero += 1;
            continue;
        }
        let t = tokens.iter().position(|x| x == token).unwrap_or_default();
        let s = spenders.iter().position(|x| x == spender).unwrap_or_default();
        let (symbol, decimals, supply) = token_info[t].clone();
        let spender_text = address_text(spender);
        let spender_name = known_name(&spender_text).map(str::to_string);
        let unlimited = value == U256::MAX || supply.is_some_and(|s| value > s);
        let mut reasons = Vec::new();
        let mut add = |code: &str, message: String| reasons.extend(reason_from(SCORING, code, message));
        if !has_code[s] {
            add("spender_without_code", format!("{spender_text} has no code: it is a wallet, not a contract."));
        }
        if unlimited {
            add(
                "unlimited_approval",
                format!("{spender_text} may take every {} the owner has.", symbol.as_deref().unwrap_or("token")),
            );
        }
        if has_code[s] && spender_name.is_none() {
            add("unknown_spender", format!("{spender_text} is not a well-known router or protocol contract."));
        }
        let score = rank(&mut reasons);
        approvals.push(ApprovalView {
            token: address_text(token),
            symbol,
            decimals,
            spender: spender_text,
            spender_name,
            spender_has_code: has_code[s],
            allowance_raw: value.to_string(),
            allowance: if unlimited { Some("unlimited".into()) } else { decimals.map(|d| format_units(value, d)) },
            unlimited,
            reasons,
            score,
        });
    }
    approvals.sort_by_key(|a| std::cmp::Reverse(a.score));
    let score = approvals.first().map_or(0, |a| a.score);
    let verdict = Verdict::from_score(score);
    let risk_score = score;
    Ok(ApprovalsOutput {
        chain: chain.name().to_string(),
        owner: address_text(&owner),
        source: source.into(),
        from_block: range.map(|r| r.0),
        to_block: range.map(|r| r.1),
        checked: pairs.len() as u64,
        zero,
        approvals,
        unreadable,
        risk_score,
        verdict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_up_to_the_last_block_number_are_refused_without_overflow() {
        let error = check_range(0, u64::MAX).unwrap_err();
        assert_eq!(error.field.as_deref(), Some("/from_block"));
        assert!(error.message.contains("18446744073709551616 blocks"), "{}", error.message);
        assert!(check_range(u64::MAX - 9_999, u64::MAX).is_ok());
        assert!(check_range(u64::MAX - 10_000, u64::MAX).is_err());
    }
}
