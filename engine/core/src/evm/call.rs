//! `eth_call`, with a revert told apart from a failure: a node answers a reverted call
//! with a JSON-RPC error carrying the revert data (code 3, "execution reverted"), which is
//! the call's answer, not an upstream failure. Shared by the routes that call contracts.

use alloy::transports::{RpcError, TransportError};
use serde_json::Value;

use alloy::primitives::U256;

use super::signatures::Signature;
use super::{EvmAddress, EvmChain, abi, parse_uint256};
use crate::error::EngineError;

/// Most bytes of calldata a caller may give.
pub const MAX_CALLDATA_BYTES: usize = 128 * 1024;

/// A call as a caller describes a transaction: who to, from whom, with what value, and
/// either raw calldata or a function signature with its JSON arguments.
pub struct CallSpec {
    /// The JSON-RPC transaction object (`to`, `data`, `value`, `from` when given).
    pub tx: Value,
    /// The calldata.
    pub calldata: Vec<u8>,
    /// The signature, when the call was given as one (its return types decode the answer).
    pub signature: Option<Signature>,
    /// The value, in wei.
    pub value: U256,
}

/// Reads a call from its fields (`/to`, `/from`, `/value`, `/data`, `/signature`, `/args`):
/// `data` or `signature` (with `args`), not both; every error names its field.
pub fn call_spec(
    to: &EvmAddress,
    from: Option<&EvmAddress>,
    value: Option<&str>,
    data: Option<&str>,
    signature: Option<&str>,
    args: Option<&[Value]>,
) -> Result<CallSpec, EngineError> {
    let (calldata, signature) = match (data, signature, args) {
        (Some(_), Some(_), _) => {
            return Err(EngineError::invalid(
                "/signature",
                "/signature: give the call as `data` or as `signature` with `args`, not both",
            ));
        }
        (_, None, Some(_)) => {
            return Err(EngineError::invalid("/args", "/args: arguments need the `signature` they are for"));
        }
        (Some(data), None, None) => (abi::parse_hex_bytes("/data", data, MAX_CALLDATA_BYTES)?, None),
        (None, Some(text), args) => {
            let (sig, values) = abi::signature_and_args(text, "/signature", args.unwrap_or_default(), "/args")?;
            (abi::encode_call(&sig, values), Some(sig))
        }
        (None, None, None) => (Vec::new(), None),
    };
    let value = match value {
        None => U256::ZERO,
        Some(text) => parse_uint256(text).ok_or_else(|| {
            EngineError::invalid("/value", "/value: write wei as a decimal number below 2^256 or as 0x hex")
        })?,
    };
    let mut tx = serde_json::json!({
        "to": to.text(),
        "data": format!("0x{}", hex::encode(&calldata)),
        "value": format!("{value:#x}"),
    });
    if let Some(from) = from {
        tx["from"] = Value::String(from.text());
    }
    Ok(CallSpec { tx, calldata, signature, value })
}

/// What a call did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallOutcome {
    /// It returned these bytes.
    Returned(Vec<u8>),
    /// It reverted with this data (empty when the node gives none).
    Reverted(Vec<u8>),
}

/// `eth_call` of `tx` (a JSON-RPC transaction object) at `block`.
pub async fn eth_call(chain: &EvmChain, tx: Value, block: &str) -> Result<CallOutcome, EngineError> {
    outcome(chain, chain.client().request("eth_call", (tx, block)).await)
}

/// What an `eth_call` answer (or its error) says the call did: a revert is an outcome, any
/// other failure an error (for callers that batch the call with other requests).
pub fn outcome(
    chain: &EvmChain,
    result: Result<alloy::primitives::Bytes, TransportError>,
) -> Result<CallOutcome, EngineError> {
    match result {
        Ok(bytes) => Ok(CallOutcome::Returned(bytes.to_vec())),
        Err(RpcError::ErrorResp(payload)) if is_revert(payload.code, &payload.message) => {
            let data = payload
                .data
                .as_ref()
                .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
                .and_then(|v| revert_data(&v))
                .unwrap_or_default();
            Ok(CallOutcome::Reverted(data))
        }
        Err(error) => Err(chain.error("eth_call", error)),
    }
}

/// Calls of views (`eth_call` at one block) gathered into one JSON-RPC batch, beside any
/// other request the caller adds; a view that reverts answers None instead of failing.
pub struct ViewBatch<'a> {
    chain: &'a EvmChain,
    batch: alloy::rpc::client::BatchRequest<'a>,
    block: String,
}

/// One view's answer, once the batch is sent.
pub struct View(alloy::rpc::client::Waiter<alloy::primitives::Bytes>);

impl<'a> ViewBatch<'a> {
    /// An empty batch of `chain` reading at `block` (`latest` or a 0x-hex number).
    pub fn new(chain: &'a EvmChain, block: &str) -> ViewBatch<'a> {
        ViewBatch { chain, batch: chain.client().new_batch(), block: block.to_string() }
    }

    /// Adds a call of `to` with `data`.
    pub fn view(&mut self, to: &alloy::primitives::Address, data: Vec<u8>) -> Result<View, EngineError> {
        let call = serde_json::json!({"to": to, "data": alloy::primitives::Bytes::from(data)});
        self.batch.add_call("eth_call", &(call, &self.block)).map(View).map_err(|e| self.chain.error("eth_call", e))
    }

    /// Adds another request of `method` to the same batch.
    pub fn request<P, R>(
        &mut self,
        method: &'static str,
        params: &P,
    ) -> Result<alloy::rpc::client::Waiter<R>, EngineError>
    where
        P: alloy::rpc::json_rpc::RpcSend,
        R: alloy::rpc::json_rpc::RpcRecv,
    {
        self.batch.add_call(method, params).map_err(|e| self.chain.error(method, e))
    }

    /// Sends the batch: one HTTP request.
    pub async fn send(self) -> Result<(), EngineError> {
        self.batch.send().await.map_err(|e| self.chain.error("eth_call", e))
    }
}

impl View {
    /// The view's answer; None when it reverted (or the node refused that one call).
    pub async fn answer(self, chain: &EvmChain) -> Result<Option<Vec<u8>>, EngineError> {
        match self.0.await {
            Ok(data) => Ok(Some(data.to_vec())),
            Err(RpcError::ErrorResp(_)) => Ok(None),
            Err(e) => Err(chain.error("eth_call", e)),
        }
    }

    /// What the view did: a revert is an outcome (with its data), any other failure an error.
    pub async fn outcome(self, chain: &EvmChain) -> Result<CallOutcome, EngineError> {
        outcome(chain, self.0.await)
    }

    /// The answer's first 32-byte word as a number; None when it reverted or is shorter.
    pub async fn word(self, chain: &EvmChain) -> Result<Option<U256>, EngineError> {
        Ok(self.answer(chain).await?.as_deref().and_then(first_word))
    }
}

/// The first 32-byte word of a call's answer as a number.
pub fn first_word(data: &[u8]) -> Option<U256> {
    data.get(..32).map(U256::from_be_slice)
}

/// Whether a JSON-RPC error is a revert: code 3 (geth, anvil, reth), or the message every
/// client uses for one.
fn is_revert(code: i64, message: &str) -> bool {
    code == 3 || message.to_ascii_lowercase().starts_with("execution reverted")
}

/// Revert data from an error's `data`: a hex string, or an object holding one (`{"data": "0x…"}`).
fn revert_data(value: &Value) -> Option<Vec<u8>> {
    match value {
        Value::String(text) => text.strip_prefix("0x").and_then(|digits| hex::decode(digits).ok()),
        Value::Object(object) => object.get("data").and_then(revert_data),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reverts_are_recognised() {
        assert!(is_revert(3, "execution reverted: nope"));
        assert!(is_revert(-32000, "execution reverted"));
        assert!(!is_revert(-32000, "header not found"));
        assert_eq!(revert_data(&serde_json::json!("0x01ff")), Some(vec![1, 255]));
        assert_eq!(revert_data(&serde_json::json!({"data": "0x02"})), Some(vec![2]));
        assert_eq!(revert_data(&serde_json::json!("zz")), None);
    }
}
