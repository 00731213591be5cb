//! `POST /v1/chain/block/by-number`: one block by number, hash or tag, its header and
//! transaction count, optionally its transaction hashes. A block the node does not have
//! (a number past the head, an unknown hash) is 404.

use std::borrow::Cow;
use std::sync::Arc;

use alloy::primitives::U256;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::{EngineError, ErrorKind};
use crate::evm::block_header::wei_to_gwei;
use crate::evm::block_ref::BlockRef;
use crate::evm::node_json::{address_member, hash_member, quantity, small};
use crate::evm::{ChainName, EvmChain, clean_text};
use crate::output::Reply;
use crate::price::Price;

/// Most transaction hashes read from one block; a larger list is a bad upstream answer.
const MAX_BLOCK_TRANSACTIONS: usize = 100_000;

/// Request of `/v1/chain/block/by-number`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BlockByNumberInput {
    /// Chain to read: `ethereum`, `base` or `polygon`.
    pub chain: ChainName,
    /// The block: its number (an integer, or a decimal or 0x-hex string), its hash (0x and 64 hex digits) or a tag: latest, pending, safe, finalized or earliest.
    pub block: BlockId,
    /// Also answer the hashes of the block's transactions, in order. Default false.
    #[serde(default)]
    pub transactions: bool,
}

/// A block by number, tag or hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockId {
    /// By number or tag.
    Ref(BlockRef),
    /// By hash, lower-case 0x hex.
    Hash(String),
}

impl<'de> Deserialize<'de> for BlockId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        if let Value::String(text) = &value {
            let text = text.trim();
            if text.len() == 66 && text.starts_with("0x") {
                return if text.bytes().skip(2).all(|b| b.is_ascii_hexdigit()) {
                    Ok(BlockId::Hash(text.to_ascii_lowercase()))
                } else {
                    Err(serde::de::Error::custom(format!(
                        "`{}` is not a block hash: 0x and 64 hex digits are expected",
                        clean_text(text, 80)
                    )))
                };
            }
        }
        BlockRef::deserialize(value).map(BlockId::Ref).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for BlockId {
    fn schema_name() -> Cow<'static, str> {
        "BlockId".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A block: its number (an integer, or a decimal or 0x-hex string), its hash (0x and 64 hex digits), or a tag: latest, pending, safe, finalized or earliest.",
            "anyOf": [
                {"type": "integer", "minimum": 0, "maximum": 18446744073709551615u64},
                {"type": "string", "enum": crate::evm::block_ref::TAGS},
                {"type": "string", "pattern": "^(0[xX][0-9a-fA-F]{1,16}|[0-9]{1,20}|0x[0-9a-fA-F]{64})$"}
            ]
        })
    }
}

/// Answer of `/v1/chain/block/by-number`. Gas and fees are exact decimal strings.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BlockByNumberOutput {
    /// Chain read.
    pub chain: String,
    /// Block number.
    pub number: u64,
    /// Block hash, lower-case; null for a pending block.
    pub hash: Option<String>,
    /// Parent block's hash, lower-case.
    pub parent_hash: String,
    /// Unix seconds.
    pub timestamp: u64,
    /// Fee recipient (`miner`), lower-case; null when the node leaves it out.
    pub fee_recipient: Option<String>,
    /// Gas used by the block's transactions.
    pub gas_used: String,
    /// The block's gas limit.
    pub gas_limit: String,
    /// EIP-1559 base fee per gas in wei; null before London.
    pub base_fee_per_gas_wei: Option<String>,
    /// The same in gwei.
    pub base_fee_per_gas_gwei: Option<String>,
    /// Blob gas used (EIP-4844); null before Cancun or on chains without blobs.
    pub blob_gas_used: Option<String>,
    /// Excess blob gas (EIP-4844); null where absent.
    pub excess_blob_gas: Option<String>,
    /// Size of the block in bytes; null when the node leaves it out.
    pub size: Option<u64>,
    /// Number of transactions.
    pub transaction_count: u64,
    /// Number of withdrawals (post-Shanghai Ethereum); null where the block has none listed.
    pub withdrawal_count: Option<u64>,
    /// The transactions' hashes in order, when `transactions` was true; else null.
    pub transactions: Option<Vec<String>>,
}

/// A checked request.
pub struct BlockByNumberRequest {
    chain: Arc<EvmChain>,
    block: BlockId,
    transactions: bool,
}

/// The route.
pub struct BlockByNumberRoute;

impl Route for BlockByNumberRoute {
    type Input = BlockByNumberInput;
    type Prepared = BlockByNumberRequest;
    type Output = BlockByNumberOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/block/by-number",
        operation: "get_block",
        family: Family::Chain,
        summary: "A block by number, hash or tag",
        description: "One block's header (number, hash, parent, time, fee recipient, gas used and limit, base fee, \
            blob gas, size) and transaction and withdrawal counts, optionally with its transaction hashes. The \
            block is given by number, hash or tag (latest, pending, safe, finalized, earliest); one the node does \
            not have is 404.",
        base_price: Price::micros(1_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: BlockByNumberInput, ctx: &Context) -> Result<BlockByNumberRequest, EngineError> {
        Ok(BlockByNumberRequest {
            chain: ctx.chains.resolve(&input.chain, "/chain")?,
            block: input.block,
            transactions: input.transactions,
        })
    }

    fn quote(_: &BlockByNumberRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: BlockByNumberRequest, _: &Context) -> Result<Reply<BlockByNumberOutput>, EngineError> {
        let BlockByNumberRequest { chain, block, transactions } = request;
        let (method, param, named) = match &block {
            BlockId::Ref(r) => ("eth_getBlockByNumber", r.param(), describe(r)),
            BlockId::Hash(hash) => ("eth_getBlockByHash", hash.clone(), format!("block {hash}")),
        };
        let answer: Value = chain.deadline(chain.request(method, (param.as_str(), false))).await?;
        let object = match answer {
            Value::Null => {
                return Err(EngineError::new(
                    ErrorKind::NotFound,
                    "not_found",
                    format!("the {} node has no {named}", chain.name()),
                ));
            }
            Value::Object(object) => object,
            _ => return Err(bad(&chain, &named, "it is not a JSON object".into())),
        };
        let out = parse(chain.name(), &block, &object, transactions).map_err(|why| bad(&chain, &named, why))?;
        Ok(Reply::Json(out))
    }
}

fn describe(block: &BlockRef) -> String {
    match block {
        BlockRef::Number(n) => format!("block {n} (the chain has not reached it, or the node has pruned it)"),
        BlockRef::Tag(tag) => format!("`{tag}` block"),
    }
}

fn bad(chain: &EvmChain, named: &str, why: String) -> EngineError {
    EngineError::new(
        ErrorKind::BadUpstream,
        "upstream_error",
        format!("the {} RPC's answer for {named} is not usable: {why}", chain.name()),
    )
}

/// The answer from the node's block object, checked against what was asked.
fn parse(
    chain: &str,
    asked: &BlockId,
    block: &Map<String, Value>,
    with_transactions: bool,
) -> Result<BlockByNumberOutput, String> {
    let number = small(block, "number")?.ok_or("it has no number")?;
    let hash = hash_member(block, "hash")?;
    match asked {
        BlockId::Ref(BlockRef::Number(n)) if *n != number => return Err(format!("it is block {number}")),
        BlockId::Hash(h) if hash.as_deref() != Some(h.as_str()) => return Err("it has another hash".into()),
        _ => {}
    }
    let transactions = match block.get("transactions") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) if items.len() <= MAX_BLOCK_TRANSACTIONS => items
            .iter()
            .map(|item| match item.as_str() {
                Some(text)
                    if text.len() == 66
                        && text.starts_with("0x")
                        && text.bytes().skip(2).all(|b| b.is_ascii_hexdigit()) =>
                {
                    Ok(text.to_ascii_lowercase())
                }
                _ => Err("a transaction hash is not 0x and 64 hex digits".to_string()),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("`transactions` is not a list of at most 100,000 hashes".into()),
    };
    let withdrawal_count = match block.get("withdrawals") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(items.len() as u64),
        Some(_) => return Err("`withdrawals` is not a list".into()),
    };
    let text = |key: &str| quantity(block, key).map(|q| q.map(|q: U256| q.to_string()));
    let base_fee = quantity(block, "baseFeePerGas")?;
    Ok(BlockByNumberOutput {
        chain: chain.to_string(),
        number,
        hash,
        parent_hash: hash_member(block, "parentHash")?.ok_or("it has no parent hash")?,
        timestamp: small(block, "timestamp")?.ok_or("it has no timestamp")?,
        fee_recipient: address_member(block, "miner")?,
        gas_used: text("gasUsed")?.ok_or("it has no gas used")?,
        gas_limit: text("gasLimit")?.ok_or("it has no gas limit")?,
        base_fee_per_gas_wei: base_fee.map(|f| f.to_string()),
        base_fee_per_gas_gwei: base_fee.map(wei_to_gwei),
        blob_gas_used: text("blobGasUsed")?,
        excess_blob_gas: text("excessBlobGas")?,
        size: small(block, "size")?,
        transaction_count: transactions.len() as u64,
        withdrawal_count,
        transactions: with_transactions.then_some(transactions),
    })
}
