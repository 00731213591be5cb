//! Event logs as nodes send them (in receipts and `eth_getLogs` answers), checked and
//! decoded with the event table (`super::events`): what the receipt and logs routes answer.

use alloy::primitives::B256;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::events::{self, DecodedEvent, EventSignature, MAX_TOPICS};
use super::node_json::{address_member, hash_member, small};

/// Most bytes of one log's data read from a node; a longer one is a bad upstream answer.
const MAX_NODE_LOG_DATA: usize = 1024 * 1024;

/// One log, as answers show it.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
pub struct LogEntry {
    /// The contract that emitted it, lower-case.
    pub address: String,
    /// Block number; null when the node leaves it out (a pending log).
    pub block: Option<u64>,
    /// Transaction hash; null when the node leaves it out.
    pub transaction_hash: Option<String>,
    /// Index of the log in its block; null when the node leaves it out.
    pub log_index: Option<u64>,
    /// The topics, 0x and 64 hex digits each.
    pub topics: Vec<String>,
    /// The data, 0x hex.
    pub data: String,
    /// True when a reorganisation removed the log from the chain.
    pub removed: bool,
    /// The event decoded: the caller's `event` or a well-known one whose topics and data the log fits exactly; null when none does. A match is a hint about the event's shape, not proof of which code emitted it.
    pub event: Option<DecodedEvent>,
}

/// The parts of a node's log object, checked.
pub struct NodeLog {
    /// The answer's entry, not yet decoded.
    pub entry: LogEntry,
    /// Topics as words.
    pub topics: Vec<B256>,
    /// Data bytes.
    pub data: Vec<u8>,
}

/// Reads one log object of a node's answer; the error says what is wrong with it.
pub fn parse_node_log(log: &Value) -> Result<NodeLog, String> {
    let object = log.as_object().ok_or("a log is not a JSON object")?;
    let address = address_member(object, "address")?.ok_or("a log has no address")?;
    let topics = match object.get("topics") {
        Some(Value::Array(items)) if items.len() <= MAX_TOPICS => items
            .iter()
            .map(|t| match t.as_str().and_then(|t| t.parse::<B256>().ok()) {
                Some(word) if t.as_str().is_some_and(|s| s.len() == 66) => Ok(word),
                _ => Err("a log topic is not 0x and 64 hex digits".to_string()),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(Value::Array(_)) => return Err(format!("a log has more than {MAX_TOPICS} topics")),
        _ => return Err("a log has no topics list".into()),
    };
    let data = match object.get("data") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(text)) if text.len() <= MAX_NODE_LOG_DATA * 2 + 2 => {
            text.strip_prefix("0x").and_then(|digits| hex::decode(digits).ok()).ok_or("a log's data is not 0x hex")?
        }
        Some(_) => return Err("a log's data is not 0x hex of at most 1 MiB".into()),
    };
    let removed = match object.get("removed") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("a log's `removed` is not a bool".into()),
    };
    let entry = LogEntry {
        address,
        block: small(object, "blockNumber")?,
        transaction_hash: hash_member(object, "transactionHash")?,
        log_index: small(object, "logIndex")?,
        topics: topics.iter().map(ToString::to_string).collect(),
        data: format!("0x{}", hex::encode(&data)),
        removed,
        event: None,
    };
    Ok(NodeLog { entry, topics, data })
}

/// The answer's entry for `log`, decoded with `declared` events first, then the table.
pub fn decoded_entry(log: NodeLog, declared: &[EventSignature]) -> LogEntry {
    let found = events::decode_known(&log.topics, &log.data, declared);
    LogEntry { event: found.best().cloned(), ..log.entry }
}
