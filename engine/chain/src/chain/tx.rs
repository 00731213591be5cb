//! `POST /v1/chain/tx`: a transaction's status, receipt and fees.
//!
//! The transaction, its receipt and the head block number are read in one JSON-RPC batch;
//! the block's timestamp comes from the transaction's `blockTimestamp` where the node gives
//! it, else from a second request for the block. Node answers are read leniently (absent
//! members are null) but checked for consistency: an answer about another hash, or a mined
//! transaction whose block the node does not have, is a bad upstream answer, never a guess.

use std::borrow::Cow;
use std::sync::Arc;

use alloy::primitives::U256;
use alloy::rpc::client::Waiter;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::{EngineError, ErrorKind};
use crate::evm::node_json::{address_member, hash_member, quantity, small};
use crate::evm::{ChainName, EvmChain, clean_text, format_units, parse_quantity};
use crate::output::Reply;
use crate::price::Price;

/// Decimals of the native coin of every supported chain (ETH, POL).
const NATIVE_DECIMALS: u8 = 18;

/// Request of `/v1/chain/tx`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TxInput {
    /// Chain to read: `ethereum`, `base` or `polygon`.
    pub chain: ChainName,
    /// Transaction hash: 0x followed by 64 hexadecimal digits, any case.
    pub hash: TxHash,
}

/// A transaction hash input, kept as lower-case text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxHash(pub String);

impl std::str::FromStr for TxHash {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let valid = text.len() == 66 && text.starts_with("0x") && text.bytes().skip(2).all(|b| b.is_ascii_hexdigit());
        if !valid {
            return Err(format!(
                "`{}` is not a transaction hash: expected 0x followed by 64 hexadecimal digits",
                clean_text(text, 80)
            ));
        }
        Ok(TxHash(text.to_ascii_lowercase()))
    }
}

impl<'de> Deserialize<'de> for TxHash {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for TxHash {
    fn schema_name() -> Cow<'static, str> {
        "TxHash".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^0x[0-9a-fA-F]{64}$",
            "maxLength": 66,
            "description": "0x followed by 64 hexadecimal digits, any case."
        })
    }
}

/// Where a transaction stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "TxStatus")]
pub enum TxStatus {
    /// Mined, receipt status 1.
    Success,
    /// Mined, receipt status 0 (reverted).
    Failed,
    /// Known to the node, not yet mined.
    Pending,
    /// The node knows no transaction with this hash.
    NotFound,
    /// Mined, but the receipt carries no status (before Byzantium).
    Unknown,
}

impl TxStatus {
    /// The status of a mined transaction's receipt: `status` 1 or 0, or none before Byzantium.
    pub fn of_receipt(receipt: &Map<String, Value>) -> Result<TxStatus, String> {
        match small(receipt, "status")? {
            None => Ok(TxStatus::Unknown),
            Some(1) => Ok(TxStatus::Success),
            Some(0) => Ok(TxStatus::Failed),
            Some(other) => Err(format!("receipt status {other} is neither 0 nor 1")),
        }
    }
}

/// What a mined transaction cost, in wei (decimal strings).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct TxFee {
    /// Execution fee: gas used × effective gas price.
    pub execution_wei: String,
    /// Layer-1 data fee of a rollup (OP-stack receipts' `l1Fee`); null where the chain has none.
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub l1_data_wei: Option<String>,
    /// Blob fee: blob gas used × blob gas price (EIP-4844); null for a transaction without blobs.
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub blob_wei: Option<String>,
    /// Everything the sender paid: execution + layer-1 data + blob fee.
    pub total_wei: String,
    /// `total_wei` in whole native coins (ETH, POL), exact decimal string.
    pub total_formatted: String,
}

/// Answer of `/v1/chain/tx`. Every member is present; what the node cannot say yet (a
/// pending transaction's block) or at all (everything but `chain`, `hash` and `status` of
/// an unknown hash) is null. Amounts and gas are exact decimal strings.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct TxOutput {
    /// Chain read.
    pub chain: String,
    /// Transaction hash, lower-case.
    pub hash: String,
    /// `success`, `failed`, `pending`, `not_found` or `unknown`.
    pub status: TxStatus,
    /// Number of the block that holds the transaction; null while pending.
    #[schemars(required, extend("type" = ["integer", "null"]))]
    pub block: Option<u64>,
    /// That block's time, Unix seconds; null while pending.
    #[schemars(required, extend("type" = ["integer", "null"]))]
    pub timestamp: Option<u64>,
    /// Blocks from the transaction's block to the head, both counted (1 in the head block); null while pending.
    #[schemars(required, extend("type" = ["integer", "null"]))]
    pub confirmations: Option<u64>,
    /// Sender, lower-case.
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub from: Option<String>,
    /// Recipient, lower-case; null for a contract creation.
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub to: Option<String>,
    /// Address of the contract a creation deployed, lower-case; null otherwise (and while pending).
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub contract_address: Option<String>,
    /// Native value sent, in wei.
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub value_wei: Option<String>,
    /// `value_wei` in whole native coins (ETH, POL).
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub value_formatted: Option<String>,
    /// Sender's nonce.
    #[schemars(required, extend("type" = ["integer", "null"]))]
    pub nonce: Option<u64>,
    /// EIP-2718 transaction type: 0 legacy, 1 access list, 2 EIP-1559, 3 blob, 4 EIP-7702.
    #[serde(rename = "type")]
    #[schemars(required, extend("type" = ["integer", "null"]))]
    pub tx_type: Option<u64>,
    /// First 4 bytes of the input (the called function's selector), 0x hex; null when the input is empty.
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub method_id: Option<String>,
    /// Gas limit the sender set.
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub gas_limit: Option<String>,
    /// Gas the transaction used; null while pending.
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub gas_used: Option<String>,
    /// Price paid per gas, in wei; null while pending.
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub effective_gas_price_wei: Option<String>,
    /// `effective_gas_price_wei` in gwei.
    #[schemars(required, extend("type" = ["string", "null"]))]
    pub effective_gas_price_gwei: Option<String>,
    /// The fee split; null while pending.
    #[schemars(required, schema_with = "nullable_fee")]
    pub fee: Option<TxFee>,
}

/// `fee`'s schema: the fee object or null (schemars drops the null of a required Option).
fn nullable_fee(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let fee = generator.subschema_for::<TxFee>();
    schemars::json_schema!({"anyOf": [fee, {"type": "null"}]})
}

impl TxOutput {
    fn bare(chain: &str, hash: &str, status: TxStatus) -> TxOutput {
        TxOutput {
            chain: chain.to_string(),
            hash: hash.to_string(),
            status,
            block: None,
            timestamp: None,
            confirmations: None,
            from: None,
            to: None,
            contract_address: None,
            value_wei: None,
            value_formatted: None,
            nonce: None,
            tx_type: None,
            method_id: None,
            gas_limit: None,
            gas_used: None,
            effective_gas_price_wei: None,
            effective_gas_price_gwei: None,
            fee: None,
        }
    }
}

/// A checked transaction request.
pub struct TxRequest {
    chain: Arc<EvmChain>,
    hash: TxHash,
}

/// The route.
pub struct TxRoute;

impl Route for TxRoute {
    type Input = TxInput;
    type Prepared = TxRequest;
    type Output = TxOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/tx",
        operation: "get_transaction",
        family: Family::Chain,
        summary: "Status, receipt and fees of a transaction",
        description: "A transaction's status (success, failed, pending, not_found, or unknown for receipts \
            before Byzantium), block, timestamp, confirmations, sender, recipient (null for a contract \
            creation, with contract_address set), value, nonce, type, method id, gas limit and use, effective \
            gas price, and the fee split into execution, layer-1 data fee (OP-stack rollups such as base), \
            blob fee and total. Amounts are exact decimal strings in wei. An unknown hash is status \
            not_found, not an error.",
        base_price: Price::micros(2_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: TxInput, ctx: &Context) -> Result<TxRequest, EngineError> {
        Ok(TxRequest { chain: ctx.chains.resolve(&input.chain, "/chain")?, hash: input.hash })
    }

    fn quote(_: &TxRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: TxRequest, _: &Context) -> Result<Reply<TxOutput>, EngineError> {
        let TxRequest { chain, hash } = request;
        let answer = chain.deadline(read_transaction(&chain, &hash.0)).await?;
        Ok(Reply::Json(answer))
    }
}

/// Reads and summarises transaction `hash` (lower-case 0x hex).
async fn read_transaction(chain: &EvmChain, hash: &str) -> Result<TxOutput, EngineError> {
    let mut batch = chain.client().new_batch();
    let tx: Waiter<Value> =
        batch.add_call("eth_getTransactionByHash", &(hash,)).map_err(|e| chain.error("eth_getTransactionByHash", e))?;
    let receipt: Waiter<Value> = batch
        .add_call("eth_getTransactionReceipt", &(hash,))
        .map_err(|e| chain.error("eth_getTransactionReceipt", e))?;
    let head: Waiter<Value> = batch.add_call("eth_blockNumber", &()).map_err(|e| chain.error("eth_blockNumber", e))?;
    batch.send().await.map_err(|e| chain.error("eth_getTransactionByHash", e))?;
    let tx = tx.await.map_err(|e| chain.error("eth_getTransactionByHash", e))?;
    let receipt = receipt.await.map_err(|e| chain.error("eth_getTransactionReceipt", e))?;
    let head = head.await.map_err(|e| chain.error("eth_blockNumber", e))?;

    let bad = |why: String| {
        EngineError::new(
            ErrorKind::BadUpstream,
            "upstream_error",
            format!("the {} RPC's answer about transaction {hash} is not usable: {why}", chain.name()),
        )
    };
    let reads = Reads::parse(hash, &tx, &receipt, &head).map_err(bad)?;
    let timestamp = match (&reads.mined, reads.timestamp) {
        (Some(mined), None) => {
            // A timeout or rate limit keeps its own kind; only what the node said is judged here.
            let block: Value = chain.request("eth_getBlockByHash", (mined.block_hash.as_str(), false)).await?;
            Some(block_time(&block, &mined.block_hash, mined.block).map_err(bad)?)
        }
        (_, known) => known,
    };
    Ok(reads.summary(chain.name(), hash, timestamp))
}

/// The timestamp of `block`, the node's answer for `block_hash`, checked to be block number `number`.
fn block_time(block: &Value, block_hash: &str, number: u64) -> Result<u64, String> {
    let block = match block {
        Value::Object(object) => object,
        Value::Null => return Err(format!("its block {block_hash} is unknown to the node")),
        _ => return Err("its block is not a JSON object".into()),
    };
    if small(block, "number")? != Some(number) {
        return Err(format!("block {block_hash} does not have number {number}"));
    }
    small(block, "timestamp")?.ok_or_else(|| "its block has no timestamp".to_string())
}

/// The parts of a mined transaction's receipt the answer uses.
#[derive(Debug, PartialEq, Eq)]
struct Mined {
    status: TxStatus,
    block: u64,
    block_hash: String,
    gas_used: U256,
    effective_gas_price: U256,
    contract_address: Option<String>,
    l1_fee: Option<U256>,
    blob_fee: Option<U256>,
}

/// The transaction fields the answer uses.
#[derive(Debug, PartialEq, Eq)]
struct Sent {
    from: String,
    to: Option<String>,
    value: U256,
    nonce: u64,
    tx_type: u64,
    method_id: Option<String>,
    gas_limit: U256,
    /// `gasPrice`, which for a mined transaction of any type is the price paid.
    gas_price: Option<U256>,
}

/// The node's three answers, parsed and checked against each other.
#[derive(Debug, PartialEq, Eq)]
struct Reads {
    sent: Option<Sent>,
    mined: Option<Mined>,
    head: u64,
    timestamp: Option<u64>,
}

impl Reads {
    fn parse(hash: &str, tx: &Value, receipt: &Value, head: &Value) -> Result<Reads, String> {
        let head = match head {
            Value::String(text) => parse_quantity(text).and_then(|q| u64::try_from(q).ok()),
            _ => None,
        }
        .ok_or("eth_blockNumber is not a block number")?;
        let tx = match tx {
            Value::Null => None,
            Value::Object(object) => Some(object),
            _ => return Err("the transaction is not a JSON object".into()),
        };
        let receipt = match receipt {
            Value::Null => None,
            Value::Object(object) => Some(object),
            _ => return Err("the receipt is not a JSON object".into()),
        };
        let (sent, tx_block, tx_time) = match tx {
            None => (None, None, None),
            Some(tx) => {
                if hash_member(tx, "hash")?.as_deref() != Some(hash) {
                    return Err("the transaction returned has another hash".into());
                }
                let (sent, block, time) = parse_sent(tx)?;
                (Some(sent), block, time)
            }
        };
        let (mined, receipt_time) = match receipt {
            None => (None, None),
            Some(receipt) => {
                if hash_member(receipt, "transactionHash")?.as_deref() != Some(hash) {
                    return Err("the receipt returned is of another transaction".into());
                }
                let (mined, time) = parse_mined(receipt)?;
                (Some(mined), time)
            }
        };
        match (&sent, &mined, tx_block) {
            (None, Some(_), _) => return Err("the node has a receipt but not the transaction".into()),
            (Some(_), None, Some(block)) => {
                return Err(format!("the transaction is in block {block} but the node has no receipt for it"));
            }
            (Some(_), Some(mined), Some(block)) if block != mined.block => {
                return Err(format!("the transaction says block {block}, its receipt block {}", mined.block));
            }
            _ => {}
        }
        let timestamp = if mined.is_some() { tx_time.or(receipt_time) } else { None };
        Ok(Reads { sent, mined, head, timestamp })
    }

    fn summary(self, chain: &str, hash: &str, timestamp: Option<u64>) -> TxOutput {
        let Some(sent) = self.sent else { return TxOutput::bare(chain, hash, TxStatus::NotFound) };
        let status = self.mined.as_ref().map_or(TxStatus::Pending, |m| m.status);
        let mut out = TxOutput::bare(chain, hash, status);
        out.from = Some(sent.from);
        out.to = sent.to;
        out.value_wei = Some(sent.value.to_string());
        out.value_formatted = Some(format_units(sent.value, NATIVE_DECIMALS));
        out.nonce = Some(sent.nonce);
        out.tx_type = Some(sent.tx_type);
        out.method_id = sent.method_id;
        out.gas_limit = Some(sent.gas_limit.to_string());
        if let Some(mined) = self.mined {
            // A head behind the transaction's block comes from a lagging node behind a load
            // balancer; the transaction is then in the newest block known.
            out.confirmations = Some(self.head.max(mined.block) - mined.block + 1);
            out.block = Some(mined.block);
            out.timestamp = timestamp;
            out.contract_address = mined.contract_address;
            let price = if mined.effective_gas_price.is_zero() {
                sent.gas_price.unwrap_or(mined.effective_gas_price)
            } else {
                mined.effective_gas_price
            };
            out.gas_used = Some(mined.gas_used.to_string());
            out.effective_gas_price_wei = Some(price.to_string());
            out.effective_gas_price_gwei = Some(format_units(price, 9));
            let execution = mined.gas_used.saturating_mul(price);
            let total = execution
                .saturating_add(mined.l1_fee.unwrap_or_default())
                .saturating_add(mined.blob_fee.unwrap_or_default());
            out.fee = Some(TxFee {
                execution_wei: execution.to_string(),
                l1_data_wei: mined.l1_fee.map(|f| f.to_string()),
                blob_wei: mined.blob_fee.map(|f| f.to_string()),
                total_wei: total.to_string(),
                total_formatted: format_units(total, NATIVE_DECIMALS),
            });
        }
        out
    }
}

/// The transaction's fields, its block number and its block's time (when it says them).
fn parse_sent(tx: &Map<String, Value>) -> Result<(Sent, Option<u64>, Option<u64>), String> {
    let from = address_member(tx, "from")?.ok_or("the transaction has no sender")?;
    let input = match tx.get("input").or_else(|| tx.get("data")) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => {
            let digits = text.strip_prefix("0x").ok_or("`input` is not 0x hex")?;
            if digits.len() % 2 != 0 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err("`input` is not 0x hex".into());
            }
            digits.to_ascii_lowercase()
        }
        Some(_) => return Err("`input` is not 0x hex".into()),
    };
    // A call's input starts with its 4-byte selector; a shorter, non-empty input is shown whole.
    let method_id = input.get(..input.len().min(8)).filter(|s| !s.is_empty()).map(|selector| format!("0x{selector}"));
    let sent = Sent {
        from,
        to: address_member(tx, "to")?,
        value: quantity(tx, "value")?.unwrap_or_default(),
        nonce: small(tx, "nonce")?.ok_or("the transaction has no nonce")?,
        // Nodes before EIP-2718 leave `type` out: those are all legacy transactions.
        tx_type: small(tx, "type")?.unwrap_or(0),
        method_id,
        gas_limit: quantity(tx, "gas")?.ok_or("the transaction has no gas limit")?,
        gas_price: quantity(tx, "gasPrice")?,
    };
    Ok((sent, small(tx, "blockNumber")?, small(tx, "blockTimestamp")?))
}

/// The receipt's fields and its block's time (when it says it).
fn parse_mined(receipt: &Map<String, Value>) -> Result<(Mined, Option<u64>), String> {
    let status = TxStatus::of_receipt(receipt)?;
    let block = small(receipt, "blockNumber")?.ok_or("the receipt has no block number")?;
    let block_hash = hash_member(receipt, "blockHash")?.ok_or("the receipt has no block hash")?;
    let blob_fee = match (quantity(receipt, "blobGasUsed")?, quantity(receipt, "blobGasPrice")?) {
        (Some(used), Some(price)) if !used.is_zero() => Some(used.saturating_mul(price)),
        (Some(used), None) if !used.is_zero() => return Err("the receipt has blob gas but no blob gas price".into()),
        _ => None,
    };
    let mined = Mined {
        status,
        block,
        block_hash,
        gas_used: quantity(receipt, "gasUsed")?.ok_or("the receipt has no gas used")?,
        // Receipts before London may lack it; the transaction's gasPrice then stands in (see summary).
        effective_gas_price: quantity(receipt, "effectiveGasPrice")?.unwrap_or_default(),
        contract_address: address_member(receipt, "contractAddress")?,
        l1_fee: quantity(receipt, "l1Fee")?,
        blob_fee,
    };
    Ok((mined, small(receipt, "blockTimestamp")?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const HASH: &str = "0x00000000000000000000000000000000000000000000000000000000000000aa";
    const BLOCK_HASH: &str = "0x00000000000000000000000000000000000000000000000000000000000000bb";
    const FROM: &str = "0x00000000000000000000000000000000000000f1";

    fn tx() -> Value {
        json!({"hash": HASH, "from": FROM, "to": null, "value": "0x0", "nonce": "0x3", "gas": "0x5208",
               "input": "0x", "blockNumber": "0x10", "gasPrice": "0x2"})
    }

    fn receipt() -> Value {
        json!({"transactionHash": HASH, "blockNumber": "0x10", "blockHash": BLOCK_HASH, "status": "0x1",
               "gasUsed": "0x5208", "effectiveGasPrice": "0x2", "contractAddress": null})
    }

    fn parse(tx: &Value, receipt: &Value) -> Result<Reads, String> {
        Reads::parse(HASH, tx, receipt, &json!("0x12"))
    }

    #[test]
    fn hashes_are_checked() {
        assert!("0xAB".parse::<TxHash>().is_err());
        let upper = format!("0x{}", "AB".repeat(32));
        assert_eq!(upper.parse::<TxHash>().unwrap().0, format!("0x{}", "ab".repeat(32)));
        for bad in [format!("0x{}", "a".repeat(63)), format!("0x{}", "a".repeat(65)), "a".repeat(66)] {
            assert!(bad.parse::<TxHash>().is_err(), "{bad}");
        }
    }

    #[test]
    fn statuses_follow_the_receipt() {
        let reads = parse(&tx(), &receipt()).unwrap();
        let out = reads.summary("ethereum", HASH, Some(7));
        assert_eq!((out.status, out.confirmations, out.timestamp), (TxStatus::Success, Some(3), Some(7)));
        let mut failed = receipt();
        failed["status"] = json!("0x0");
        assert_eq!(parse(&tx(), &failed).unwrap().mined.unwrap().status, TxStatus::Failed);
        let mut old = receipt();
        old.as_object_mut().unwrap().remove("status");
        old["root"] = json!(BLOCK_HASH);
        assert_eq!(parse(&tx(), &old).unwrap().mined.unwrap().status, TxStatus::Unknown);
        let mut pending = tx();
        pending["blockNumber"] = Value::Null;
        let out = parse(&pending, &Value::Null).unwrap().summary("ethereum", HASH, None);
        assert_eq!((out.status, out.block, out.fee), (TxStatus::Pending, None, None));
        let out = parse(&Value::Null, &Value::Null).unwrap().summary("ethereum", HASH, None);
        assert_eq!((out.status, out.from), (TxStatus::NotFound, None));
    }

    #[test]
    fn inconsistent_answers_are_refused() {
        let mut other = receipt();
        other["transactionHash"] = json!(BLOCK_HASH);
        assert!(parse(&tx(), &other).is_err());
        let mut other = tx();
        other["hash"] = json!(BLOCK_HASH);
        assert!(parse(&other, &receipt()).is_err());
        assert!(parse(&Value::Null, &receipt()).is_err());
        assert!(parse(&tx(), &Value::Null).is_err(), "mined without a receipt");
        let mut moved = receipt();
        moved["blockNumber"] = json!("0x11");
        assert!(parse(&tx(), &moved).is_err());
        let mut weird = receipt();
        weird["status"] = json!("0x2");
        assert!(parse(&tx(), &weird).is_err());
        assert!(parse(&json!([]), &Value::Null).is_err());
        assert!(parse(&tx(), &json!("0x1")).is_err());
        assert!(Reads::parse(HASH, &tx(), &receipt(), &json!(null)).is_err());
        let mut bad_input = tx();
        bad_input["input"] = json!("0xabc");
        assert!(parse(&bad_input, &receipt()).is_err());
    }

    #[test]
    fn fees_add_up() {
        let mut op = receipt();
        op["l1Fee"] = json!("0x64");
        op["blobGasUsed"] = json!("0x20000");
        op["blobGasPrice"] = json!("0x3");
        let mut call = tx();
        call["input"] = json!("0xA9059CBB0000");
        let out = parse(&call, &op).unwrap().summary("base", HASH, None);
        let fee = out.fee.unwrap();
        assert_eq!(fee.execution_wei, "42000");
        assert_eq!(fee.l1_data_wei.as_deref(), Some("100"));
        assert_eq!(fee.blob_wei.as_deref(), Some("393216"));
        assert_eq!(fee.total_wei, (42000 + 100 + 393216).to_string());
        assert_eq!(out.method_id.as_deref(), Some("0xa9059cbb"));
        let mut short = tx();
        short["input"] = json!("0xa9059c");
        assert_eq!(parse(&short, &receipt()).unwrap().summary("x", HASH, None).method_id.as_deref(), Some("0xa9059c"));
        assert_eq!(parse(&tx(), &receipt()).unwrap().summary("x", HASH, None).method_id, None);
    }
}
