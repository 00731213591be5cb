//! `POST /v1/chain/receipt`: a mined transaction's receipt with every log decoded where
//! its event is known (`crate::evm::events`), in one request. A transaction the node has
//! no receipt for (unknown, or not mined yet) is 404.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::chain::tx::{TxHash, TxStatus};
use crate::context::Context;
use crate::error::{EngineError, ErrorKind};
use crate::evm::logs::{self, LogEntry};
use crate::evm::node_json::{address_member, hash_member, quantity, small};
use crate::evm::{ChainName, EvmChain};
use crate::output::Reply;
use crate::price::Price;

/// Most logs a receipt may carry before the node's answer is judged unusable.
const MAX_RECEIPT_LOGS: usize = 10_000;

/// Request of `/v1/chain/receipt`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReceiptInput {
    /// Chain to read: `ethereum`, `base` or `polygon`.
    pub chain: ChainName,
    /// Transaction hash: 0x followed by 64 hexadecimal digits, any case.
    pub hash: TxHash,
}

/// Answer of `/v1/chain/receipt`. Gas and prices are exact decimal strings.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReceiptOutput {
    /// Chain read.
    pub chain: String,
    /// Transaction hash, lower-case.
    pub hash: String,
    /// `success` (status 1), `failed` (status 0, reverted) or `unknown` (a receipt before Byzantium, which has no status).
    pub status: TxStatus,
    /// Number of the block that holds the transaction.
    pub block: u64,
    /// That block's hash, lower-case.
    pub block_hash: String,
    /// Position of the transaction in its block.
    pub transaction_index: Option<u64>,
    /// Sender, lower-case.
    pub from: Option<String>,
    /// Recipient, lower-case; null for a contract creation.
    pub to: Option<String>,
    /// Address of the contract a creation deployed, lower-case; null otherwise.
    pub contract_address: Option<String>,
    /// EIP-2718 transaction type: 0 legacy, 1 access list, 2 EIP-1559, 3 blob, 4 EIP-7702 (126 an OP-stack deposit).
    #[serde(rename = "type")]
    pub tx_type: u64,
    /// Gas the transaction used.
    pub gas_used: String,
    /// Gas used in the block up to and including this transaction.
    pub cumulative_gas_used: Option<String>,
    /// Price paid per gas, in wei; null on receipts before London that do not say it.
    pub effective_gas_price_wei: Option<String>,
    /// Blob gas used (EIP-4844); null for a transaction without blobs.
    pub blob_gas_used: Option<String>,
    /// The logs, in order, each decoded where its event is known.
    pub logs: Vec<LogEntry>,
    /// How many of `logs` decoded as a known event.
    pub decoded_logs: u64,
}

/// A checked request.
pub struct ReceiptRequest {
    chain: Arc<EvmChain>,
    hash: TxHash,
}

/// The route.
pub struct ReceiptRoute;

impl Route for ReceiptRoute {
    type Input = ReceiptInput;
    type Prepared = ReceiptRequest;
    type Output = ReceiptOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/receipt",
        operation: "get_transaction_receipt",
        family: Family::Chain,
        summary: "Receipt of a transaction with its logs decoded",
        description: "A mined transaction's receipt (status, block, gas used, effective gas price, created contract) \
            and every log with its event decoded where it is well known (Transfer, Approval, Swap, Sync, Deposit, \
            Withdrawal, ApprovalForAll, TransferSingle/Batch, OwnershipTransferred, Upgraded and 75 more): a log \
            decodes only when its topics and data fit the event exactly. 404 when the node has no receipt: the hash \
            is unknown or the transaction is not mined yet.",
        base_price: Price::micros(2_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: ReceiptInput, ctx: &Context) -> Result<ReceiptRequest, EngineError> {
        Ok(ReceiptRequest { chain: ctx.chains.resolve(&input.chain, "/chain")?, hash: input.hash })
    }

    fn quote(_: &ReceiptRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: ReceiptRequest, _: &Context) -> Result<Reply<ReceiptOutput>, EngineError> {
        let ReceiptRequest { chain, hash } = request;
        let receipt: Value = chain.deadline(chain.request("eth_getTransactionReceipt", (hash.0.as_str(),))).await?;
        let receipt = match receipt {
            Value::Null => {
                return Err(EngineError::new(
                    ErrorKind::NotFound,
                    "not_found",
                    format!(
                        "the {} node has no receipt for {}: the transaction is unknown to it or not mined yet",
                        chain.name(),
                        hash.0
                    ),
                ));
            }
            Value::Object(object) => object,
            _ => return Err(bad(&chain, &hash, "the receipt is not a JSON object".into())),
        };
        let answer = parse(chain.name(), &hash.0, &receipt).map_err(|why| bad(&chain, &hash, why))?;
        Ok(Reply::Json(answer))
    }
}

fn bad(chain: &EvmChain, hash: &TxHash, why: String) -> EngineError {
    EngineError::new(
        ErrorKind::BadUpstream,
        "upstream_error",
        format!("the {} RPC's receipt for {} is not usable: {why}", chain.name(), hash.0),
    )
}

/// The answer from the node's receipt object, checked.
fn parse(chain: &str, hash: &str, receipt: &Map<String, Value>) -> Result<ReceiptOutput, String> {
    if hash_member(receipt, "transactionHash")?.as_deref() != Some(hash) {
        return Err("it is the receipt of another transaction".into());
    }
    let status = TxStatus::of_receipt(receipt)?;
    let raw_logs = match receipt.get("logs") {
        Some(Value::Array(items)) if items.len() <= MAX_RECEIPT_LOGS => items.as_slice(),
        Some(Value::Array(items)) => return Err(format!("{} logs, more than any block holds", items.len())),
        None | Some(Value::Null) => &[],
        Some(_) => return Err("`logs` is not a list".into()),
    };
    let mut entries = Vec::with_capacity(raw_logs.len());
    for log in raw_logs {
        entries.push(logs::decoded_entry(logs::parse_node_log(log)?, &[]));
    }
    let text = |key: &str| quantity(receipt, key).map(|q| q.map(|q| q.to_string()));
    Ok(ReceiptOutput {
        chain: chain.to_string(),
        hash: hash.to_string(),
        status,
        block: small(receipt, "blockNumber")?.ok_or("it has no block number")?,
        block_hash: hash_member(receipt, "blockHash")?.ok_or("it has no block hash")?,
        transaction_index: small(receipt, "transactionIndex")?,
        from: address_member(receipt, "from")?,
        to: address_member(receipt, "to")?,
        contract_address: address_member(receipt, "contractAddress")?,
        tx_type: small(receipt, "type")?.unwrap_or(0),
        gas_used: text("gasUsed")?.ok_or("it has no gas used")?,
        cumulative_gas_used: text("cumulativeGasUsed")?,
        effective_gas_price_wei: text("effectiveGasPrice")?,
        blob_gas_used: text("blobGasUsed")?,
        decoded_logs: entries.iter().filter(|e| e.event.is_some()).count() as u64,
        logs: entries,
    })
}
