//! `POST /v1/chain/logs`: `eth_getLogs` over a bounded block range (at most 10,000 blocks
//! and 1,000 logs), each log decoded with the caller's event or a well-known one.
//!
//! The answer says exactly which blocks it covers. A range of two numbers is checked before
//! anything is asked and takes one request; a number up to a tag (`latest`, `safe`…) takes
//! one batch, the tag's block read beside the logs; a range that starts at a tag, or takes
//! the default start, reads its tags first (two requests).

use std::sync::Arc;

use alloy::primitives::B256;
use alloy::rpc::client::Waiter;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::{EngineError, ErrorKind};
use crate::evm::abi;
use crate::evm::block_ref::{BlockRef, explain};
use crate::evm::events::{self, EventSignature, MAX_TOPICS};
use crate::evm::logs::{self, LogEntry};
use crate::evm::node_json::small;
use crate::evm::{ChainName, EvmAddress, EvmChain};
use crate::output::Reply;
use crate::price::Price;

/// Widest block range one call reads.
pub const MAX_BLOCK_RANGE: u64 = 10_000;
/// Most logs one call answers.
pub const MAX_LOGS: usize = 1_000;
/// Blocks read when `from_block` is not given: the last 1,000 up to `to_block`.
pub const DEFAULT_BLOCKS: u64 = 1_000;
/// Most alternatives one topic position may list.
const MAX_TOPIC_CHOICES: usize = 16;

/// Request of `/v1/chain/logs`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LogsInput {
    /// Chain to read: `ethereum`, `base` or `polygon`.
    pub chain: ChainName,
    /// Only logs emitted by this contract, 0x and 40 hex digits; all contracts when omitted.
    #[serde(default)]
    pub address: Option<EvmAddress>,
    /// An event to filter on and decode with, written as Solidity declares it: `Transfer(address indexed from, address indexed to, uint256 value)`. Its topic is the first topic filter unless `topics` gives one.
    #[serde(default)]
    #[schemars(length(min = 1, max = 2048), extend("format" = "solidity-event"))]
    pub event: Option<String>,
    /// Topic filters by position (at most 4): null matches anything, a topic (0x and 64 hex digits) matches that topic, a list of up to 16 topics matches any of them.
    #[serde(default)]
    #[schemars(length(max = 4))]
    pub topics: Vec<Option<TopicFilter>>,
    /// First block of the range: a number or a tag. Defaults to 999 blocks before `to_block`, so that 1,000 blocks are read.
    #[serde(default)]
    pub from_block: Option<BlockRef>,
    /// Last block of the range: a number or a tag. Defaults to `latest`. The range covers at most 10,000 blocks.
    #[serde(default)]
    pub to_block: Option<BlockRef>,
}

/// One position's topic filter.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum TopicFilter {
    /// Exactly this topic.
    One(#[schemars(regex(pattern = r"^0[xX][0-9a-fA-F]{64}$"))] String),
    /// Any of these topics.
    AnyOf(#[schemars(length(min = 1, max = 16), inner(regex(pattern = r"^0[xX][0-9a-fA-F]{64}$")))] Vec<String>),
}

/// Answer of `/v1/chain/logs`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LogsOutput {
    /// Chain read.
    pub chain: String,
    /// First block read.
    pub from_block: u64,
    /// Last block read.
    pub to_block: u64,
    /// Number of logs.
    pub count: u64,
    /// How many of `logs` decoded as the given or a well-known event.
    pub decoded_logs: u64,
    /// The logs, in chain order.
    pub logs: Vec<LogEntry>,
}

/// A checked request.
pub struct LogsRequest {
    chain: Arc<EvmChain>,
    address: Option<EvmAddress>,
    event: Option<EventSignature>,
    topics: Vec<Option<Vec<B256>>>,
    from: Option<BlockRef>,
    to: BlockRef,
}

/// The route.
pub struct LogsRoute;

impl Route for LogsRoute {
    type Input = LogsInput;
    type Prepared = LogsRequest;
    type Output = LogsOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/logs",
        operation: "get_logs",
        family: Family::Chain,
        summary: "Event logs of a block range, decoded",
        description: "eth_getLogs by contract address, event and topics over at most 10,000 blocks (the last 1,000 \
            by default), at most 1,000 logs: a wider range or more logs is 422 saying how to narrow it. Each log is \
            decoded with the given `event`, or with a well-known event (Transfer, Approval, Swap, Sync, Deposit…) \
            when its topics and data fit one exactly.",
        base_price: Price::micros(3_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: LogsInput, ctx: &Context) -> Result<LogsRequest, EngineError> {
        let chain = ctx.chains.resolve(&input.chain, "/chain")?;
        let event = match input.event.as_deref() {
            None => None,
            Some(text) => Some(
                events::parse_event(text).map_err(|why| EngineError::invalid("/event", format!("/event: {why}")))?,
            ),
        };
        if input.topics.len() > MAX_TOPICS {
            return Err(EngineError::invalid(
                "/topics",
                format!(
                    "/topics: a log has at most {MAX_TOPICS} topics, and {} filters were given",
                    input.topics.len()
                ),
            ));
        }
        let mut topics = Vec::with_capacity(MAX_TOPICS);
        for (i, filter) in input.topics.iter().enumerate() {
            topics.push(match filter {
                None => None,
                Some(TopicFilter::One(text)) => Some(vec![abi::parse_word(&format!("/topics/{i}"), text)?]),
                Some(TopicFilter::AnyOf(list)) => {
                    if list.is_empty() || list.len() > MAX_TOPIC_CHOICES {
                        return Err(EngineError::invalid(
                            format!("/topics/{i}"),
                            format!("/topics/{i}: list 1 to {MAX_TOPIC_CHOICES} topics, or null for any"),
                        ));
                    }
                    let words = list
                        .iter()
                        .enumerate()
                        .map(|(j, t)| abi::parse_word(&format!("/topics/{i}/{j}"), t))
                        .collect::<Result<Vec<_>, _>>()?;
                    Some(words)
                }
            });
        }
        if let Some(event) = event.as_ref().filter(|e| !e.anonymous) {
            match topics.first_mut() {
                Some(slot @ None) => *slot = Some(vec![event.topic]),
                None => topics.push(Some(vec![event.topic])),
                Some(Some(_)) => {}
            }
        }
        let to = input.to_block.unwrap_or(BlockRef::Tag("latest"));
        if let (Some(from), Some(to)) = (input.from_block.and_then(|b| b.number()), to.number()) {
            check_range(from, to)?;
        }
        Ok(LogsRequest { chain, address: input.address, event, topics, from: input.from_block, to })
    }

    fn quote(_: &LogsRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: LogsRequest, _: &Context) -> Result<Reply<LogsOutput>, EngineError> {
        let chain = Arc::clone(&request.chain);
        let blocks = [request.from, Some(request.to)];
        let answer = explain(&chain, &blocks, chain.deadline(read_logs(request)).await).await?;
        Ok(Reply::Json(answer))
    }
}

/// Refuses a range that runs backwards or covers more than [`MAX_BLOCK_RANGE`] blocks.
fn check_range(from: u64, to: u64) -> Result<(), EngineError> {
    if from > to {
        return Err(EngineError::invalid_with(
            "inconsistent_fields",
            "/from_block",
            format!("/from_block: block {from} comes after to_block {to}; the range runs from the first to the last"),
        ));
    }
    // In u128: from 0 to u64::MAX is one block more than u64 counts.
    let blocks = u128::from(to - from) + 1;
    if blocks > u128::from(MAX_BLOCK_RANGE) {
        // A rule between two fields, which no schema states.
        return Err(EngineError::invalid_with(
            "inconsistent_fields",
            "/from_block",
            format!(
                "/from_block: blocks {from} to {to} are {blocks} blocks; at most {MAX_BLOCK_RANGE} are read in one call. \
                 Narrow the range (from_block {} reads the last {MAX_BLOCK_RANGE} up to {to}) or split it into calls",
                to.saturating_sub(MAX_BLOCK_RANGE - 1)
            ),
        ));
    }
    Ok(())
}

async fn read_logs(request: LogsRequest) -> Result<LogsOutput, EngineError> {
    let LogsRequest { chain, address, event, topics, from, to } = request;
    let to_was_number = to.number().is_some();
    let filter = |from: Value, to: Value| {
        let mut filter = json!({
            "fromBlock": from,
            "toBlock": to,
            "topics": topics.iter().map(|t| match t {
                None => Value::Null,
                Some(list) if list.len() == 1 => Value::String(list[0].to_string()),
                Some(list) => Value::Array(list.iter().map(|w| Value::String(w.to_string())).collect()),
            }).collect::<Vec<_>>(),
        });
        if let Some(address) = &address {
            filter["address"] = Value::String(address.text());
        }
        filter
    };
    let quantity = |n: u64| Value::String(format!("{n:#x}"));
    let (from, to, answer) = match (from.and_then(first_number), to) {
        // A number up to a tag (the common `from_block: N` to `latest`): the tag's block and
        // the logs in one batch, the block asked first. The range is checked on the block's
        // number before the logs answer is looked at; logs of blocks the tag reached between
        // the two calls are left out below, so the answer covers exactly `from..=to`.
        (Some(from), BlockRef::Tag(tag)) if tag != "earliest" => {
            let mut batch = chain.client().new_batch();
            let block: Waiter<Value> =
                batch.add_call(BLOCK_METHOD, &(tag, false)).map_err(|e| chain.error(BLOCK_METHOD, e))?;
            let logs: Waiter<Value> = batch
                .add_call(LOGS_METHOD, &(filter(quantity(from), Value::String(tag.to_string())),))
                .map_err(|e| chain.error(LOGS_METHOD, e))?;
            batch.send().await.map_err(|e| chain.error(LOGS_METHOD, e))?;
            let to = tag_number(&chain, tag, block.await.map_err(|e| chain.error(BLOCK_METHOD, e))?)?;
            check_range(from, to)?;
            (from, to, logs.await.map_err(|e| chain.error(LOGS_METHOD, e))?)
        }
        (_, to_ref) => {
            let (from, to) = resolve_range(&chain, from, to_ref).await?;
            check_range(from, to)?;
            (from, to, chain.request(LOGS_METHOD, (filter(quantity(from), quantity(to)),)).await?)
        }
    };
    let bad = |why: String| {
        EngineError::new(
            ErrorKind::BadUpstream,
            "upstream_error",
            format!("the {} RPC's logs for blocks {from} to {to} are not usable: {why}", chain.name()),
        )
    };
    let items = answer.as_array().ok_or_else(|| bad("the answer is not a list".into()))?;
    if items.len() > MAX_LOGS {
        return Err(EngineError::invalid_with(
            "too_many_logs",
            "/from_block",
            format!(
                "blocks {from} to {to} hold {} matching logs, more than the {MAX_LOGS} one call answers; narrow the \
                 range (from_block, to_block) or filter by address, event or topics",
                items.len()
            ),
        ));
    }
    let declared: Vec<EventSignature> = event.into_iter().collect();
    let mut entries = Vec::with_capacity(items.len());
    for item in items {
        let log = logs::parse_node_log(item).map_err(bad)?;
        match log.entry.block {
            Some(b) if b < from => return Err(bad(format!("a log of block {b} is before the range asked for"))),
            // Only a tag can have moved past `to` (see above); a range of numbers is exact.
            Some(b) if b > to && to_was_number => {
                return Err(bad(format!("a log of block {b} is after the range asked for")));
            }
            Some(b) if b > to => continue,
            _ => {}
        }
        entries.push(logs::decoded_entry(log, &declared));
    }
    Ok(LogsOutput {
        chain: chain.name().to_string(),
        from_block: from,
        to_block: to,
        count: entries.len() as u64,
        decoded_logs: entries.iter().filter(|e| e.event.is_some()).count() as u64,
        logs: entries,
    })
}

const BLOCK_METHOD: &str = "eth_getBlockByNumber";
const LOGS_METHOD: &str = "eth_getLogs";

/// A range end given as a number (`earliest` is 0).
fn first_number(block: BlockRef) -> Option<u64> {
    match block {
        BlockRef::Number(n) => Some(n),
        BlockRef::Tag("earliest") => Some(0),
        BlockRef::Tag(_) => None,
    }
}

/// The number of the block a tag named, from the node's `eth_getBlockByNumber` answer.
fn tag_number(chain: &EvmChain, tag: &str, block: Value) -> Result<u64, EngineError> {
    block.as_object().and_then(|b| small(b, "number").ok().flatten()).ok_or_else(|| {
        EngineError::new(
            ErrorKind::BadUpstream,
            "upstream_error",
            format!("the {} RPC answered no usable `{tag}` block", chain.name()),
        )
    })
}

/// The range as block numbers: tags are read in one batch (`earliest` is 0).
async fn resolve_range(chain: &EvmChain, from: Option<BlockRef>, to: BlockRef) -> Result<(u64, u64), EngineError> {
    const METHOD: &str = BLOCK_METHOD;
    let wanted: Vec<&'static str> = [from, Some(to)]
        .into_iter()
        .flatten()
        .filter_map(|b| match b {
            BlockRef::Tag("earliest") | BlockRef::Number(_) => None,
            BlockRef::Tag(tag) => Some(tag),
        })
        .collect();
    let mut numbers: Vec<(&str, u64)> = Vec::new();
    if !wanted.is_empty() {
        let mut batch = chain.client().new_batch();
        let mut waiters: Vec<(&str, Waiter<Value>)> = Vec::new();
        for tag in wanted {
            if waiters.iter().any(|(t, _)| *t == tag) {
                continue;
            }
            waiters.push((tag, batch.add_call(METHOD, &(tag, false)).map_err(|e| chain.error(METHOD, e))?));
        }
        batch.send().await.map_err(|e| chain.error(METHOD, e))?;
        for (tag, waiter) in waiters {
            let block = waiter.await.map_err(|e| chain.error(METHOD, e))?;
            numbers.push((tag, tag_number(chain, tag, block)?));
        }
    }
    let number = |b: BlockRef| match b {
        BlockRef::Number(n) => n,
        BlockRef::Tag("earliest") => 0,
        BlockRef::Tag(tag) => numbers.iter().find(|(t, _)| *t == tag).map(|(_, n)| *n).unwrap_or_default(),
    };
    let to = number(to);
    let from = from.map(number).unwrap_or_else(|| to.saturating_sub(DEFAULT_BLOCKS - 1));
    Ok((from, to))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_up_to_the_last_block_number_are_refused_without_overflow() {
        let error = check_range(100, u64::MAX).unwrap_err();
        assert_eq!(error.field.as_deref(), Some("/from_block"));
        assert!(error.message.contains(&format!("from_block {} reads", u64::MAX - 9_999)), "{}", error.message);
        let error = check_range(0, u64::MAX).unwrap_err();
        assert!(error.message.contains("18446744073709551616 blocks"), "{}", error.message);
        assert!(check_range(u64::MAX - 9_999, u64::MAX).is_ok());
        assert!(check_range(u64::MAX - 10_000, u64::MAX).is_err());
    }
}
