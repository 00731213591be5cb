//! `POST /v1/chain/simulate`: a call as a transaction would make it (a sender, value,
//! calldata or a signature with arguments) against the chain's state with overrides (a
//! balance, a nonce, code or storage slots of any account), the outcome decoded and the
//! gas it would take, from one JSON-RPC batch (`eth_call` and `eth_estimateGas` with the
//! same overrides). Nothing is sent or signed.

use std::collections::BTreeMap;
use std::sync::Arc;

use alloy::primitives::{Address, B256, Bytes, U256};
use alloy::rpc::client::Waiter;
use alloy::transports::RpcError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::evm::abi::{self, DecodedArg, Revert};
use crate::evm::block_ref::{BlockRef, explain};
use crate::evm::call::{CallOutcome, MAX_CALLDATA_BYTES, call_spec};
use crate::evm::signatures::Signature;
use crate::evm::{ChainName, EvmAddress, EvmChain, address_text, parse_uint256};
use crate::output::Reply;
use crate::price::Price;

/// Most accounts one simulation may override.
pub const MAX_OVERRIDDEN_ACCOUNTS: usize = 16;
/// Most storage slots one account's override may set.
pub const MAX_OVERRIDDEN_SLOTS: usize = 256;

/// Request of `/v1/chain/simulate`: give the call as `data` (raw calldata) or as `signature` with `args`, not both.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
// Not both `data` and `signature`; `args` only with a `signature` (a null counts as absent).
#[schemars(extend(
    "not" = { "required": ["data", "signature"], "properties": { "data": { "type": "string" }, "signature": { "type": "string" } } },
    "if" = { "required": ["args"], "not": { "properties": { "args": { "type": "null" } } } },
    "then" = { "required": ["signature"], "not": { "properties": { "signature": { "type": "null" } } } }
))]
pub struct SimulateInput {
    /// Chain to read: `ethereum`, `base` or `polygon`.
    pub chain: ChainName,
    /// The contract or account called, 0x and 40 hex digits.
    pub to: EvmAddress,
    /// The sender (`msg.sender`), 0x and 40 hex digits; the zero address when omitted.
    #[serde(default)]
    pub from: Option<EvmAddress>,
    /// Native value sent with the call, in wei: a decimal string (`"1000000000000000000"`) or 0x hex. Default 0.
    #[serde(default)]
    #[schemars(regex(pattern = crate::patterns::uint256()))]
    pub value: Option<String>,
    /// Raw calldata, 0x hex (`0x` for a plain transfer). Use this or `signature`.
    #[serde(default)]
    #[schemars(regex(pattern = r"^0[xX]([0-9a-fA-F]{2})*$"), length(max = 262146))]
    pub data: Option<String>,
    /// The function, with return types to decode the answer: `swap(uint256,address) returns (uint256)`. Use this or `data`.
    #[serde(default)]
    #[schemars(length(min = 1, max = 1024), extend("format" = "solidity-function"))]
    pub signature: Option<String>,
    /// One value per parameter of `signature`, in order (strings as `cast` writes them, numbers, bools, arrays).
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub args: Option<Vec<Value>>,
    /// The block whose state is simulated on: a number or a tag. Defaults to `latest`.
    #[serde(default)]
    pub block: Option<BlockRef>,
    /// State overrides by account address (at most 16): each may set `balance` (wei), `nonce`, `code` (0x hex) and storage, either `state` (the whole storage replaced by these slots) or `state_diff` (these slots changed).
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "pattern": "^0x[0-9a-fA-F]{40}$" }, "maxProperties" = MAX_OVERRIDDEN_ACCOUNTS))]
    pub state_overrides: Option<BTreeMap<String, AccountOverride>>,
    /// The contract's custom errors, to explain a revert: `InsufficientFunds(uint256 needed)`.
    #[serde(default)]
    #[schemars(
        length(max = 64),
        extend("items" = { "type": "string", "minLength": 1, "maxLength": 1024, "format": "solidity-function" })
    )]
    pub errors: Vec<String>,
}

/// One account's overrides: `state` or `state_diff`, not both.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("not" = {"required": ["state", "state_diff"]}))]
pub struct AccountOverride {
    /// Balance in wei: decimal string or 0x hex.
    #[serde(default)]
    #[schemars(regex(pattern = crate::patterns::uint256()))]
    pub balance: Option<String>,
    /// Nonce.
    #[serde(default)]
    pub nonce: Option<u64>,
    /// Runtime code, 0x hex.
    #[serde(default)]
    #[schemars(regex(pattern = r"^0[xX]([0-9a-fA-F]{2})*$"), length(max = 262146))]
    pub code: Option<String>,
    /// The account's whole storage replaced by these slots (slot → value, each 0x and up to 64 hex digits).
    #[serde(default)]
    #[schemars(extend(
        "propertyNames" = { "pattern": "^0x[0-9a-fA-F]{1,64}$" },
        "additionalProperties" = { "type": "string", "pattern": "^0x[0-9a-fA-F]{1,64}$" },
        "maxProperties" = MAX_OVERRIDDEN_SLOTS
    ))]
    pub state: Option<BTreeMap<String, String>>,
    /// These slots changed, the rest kept (slot → value, each 0x and up to 64 hex digits).
    #[serde(default)]
    #[schemars(extend(
        "propertyNames" = { "pattern": "^0x[0-9a-fA-F]{1,64}$" },
        "additionalProperties" = { "type": "string", "pattern": "^0x[0-9a-fA-F]{1,64}$" },
        "maxProperties" = MAX_OVERRIDDEN_SLOTS
    ))]
    pub state_diff: Option<BTreeMap<String, String>>,
}

/// Answer of `/v1/chain/simulate`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SimulateOutput {
    /// Chain read.
    pub chain: String,
    /// The block simulated on, as sent to the node (`latest`, or 0x-hex number).
    pub block: String,
    /// The sender used, lower-case; null when none was given.
    pub from: Option<String>,
    /// The address called, lower-case.
    pub to: String,
    /// The value sent, in wei.
    pub value_wei: String,
    /// The calldata sent, 0x hex.
    pub calldata: String,
    /// The canonical signature, when the call was given as one; else null.
    pub signature: Option<String>,
    /// How many accounts had their state overridden.
    pub overridden_accounts: u64,
    /// True when the call returned; false when it reverted (then `revert` says why).
    pub success: bool,
    /// The raw return data, 0x hex; null when the call reverted.
    pub result: Option<String>,
    /// The return values decoded with the signature's return types; empty without them.
    pub outputs: Vec<DecodedArg>,
    /// Why the return data was not decoded, when it was not.
    pub note: Option<String>,
    /// Why the call reverted; null when it returned.
    pub revert: Option<Revert>,
    /// Gas the call would take as a transaction (`eth_estimateGas` on the same state); null when the node cannot estimate it (the call reverts).
    pub gas_estimate: Option<u64>,
}

/// A checked request.
pub struct SimulateRequest {
    chain: Arc<EvmChain>,
    tx: Value,
    block: BlockRef,
    overrides: Option<Value>,
    overridden: u64,
    signature: Option<Signature>,
    errors: Vec<Signature>,
    calldata: Vec<u8>,
    value: U256,
    from: Option<EvmAddress>,
    to: EvmAddress,
}

/// The route.
pub struct SimulateRoute;

impl Route for SimulateRoute {
    type Input = SimulateInput;
    type Prepared = SimulateRequest;
    type Output = SimulateOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/simulate",
        operation: "simulate_call",
        family: Family::Chain,
        summary: "Simulate a call with state overrides; revert reason decoded",
        description: "Runs a call as a transaction would (sender, value, raw calldata or a signature with JSON \
            arguments) on a block's state with overrides of any account's balance, nonce, code or storage, without \
            sending anything. Answers whether it succeeded, the return data decoded, the gas it would take, and for \
            a revert the reason decoded: Error(string), Panic codes in words, the caller's or well-known custom errors.",
        base_price: Price::micros(3_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: SimulateInput, ctx: &Context) -> Result<SimulateRequest, EngineError> {
        let chain = ctx.chains.resolve(&input.chain, "/chain")?;
        let spec = call_spec(
            &input.to,
            input.from.as_ref(),
            input.value.as_deref(),
            input.data.as_deref(),
            input.signature.as_deref(),
            input.args.as_deref(),
        )?;
        let errors = abi::parse_errors(&input.errors, "/errors")?;
        let (overrides, overridden) = match &input.state_overrides {
            None => (None, 0),
            Some(map) => (Some(overrides_json(map)?), map.len() as u64),
        };
        Ok(SimulateRequest {
            chain,
            tx: spec.tx,
            block: input.block.unwrap_or(BlockRef::Tag("latest")),
            overrides,
            overridden,
            signature: spec.signature,
            errors,
            calldata: spec.calldata,
            value: spec.value,
            from: input.from,
            to: input.to,
        })
    }

    fn quote(_: &SimulateRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: SimulateRequest, _: &Context) -> Result<Reply<SimulateOutput>, EngineError> {
        let chain = Arc::clone(&request.chain);
        let block = request.block.param();
        let read = chain.deadline(simulate(&chain, &request.tx, &block, request.overrides.clone())).await;
        let (outcome, gas) = explain(&chain, &[Some(request.block)], read).await?;
        let mut answer = SimulateOutput {
            chain: chain.name().to_string(),
            block,
            from: request.from.as_ref().map(EvmAddress::text),
            to: request.to.text(),
            value_wei: request.value.to_string(),
            calldata: format!("0x{}", hex::encode(&request.calldata)),
            signature: request.signature.as_ref().map(|s| s.text.clone()),
            overridden_accounts: request.overridden,
            success: false,
            result: None,
            outputs: Vec::new(),
            note: None,
            revert: None,
            gas_estimate: None,
        };
        match outcome {
            CallOutcome::Returned(data) => {
                answer.success = true;
                answer.result = Some(format!("0x{}", hex::encode(&data)));
                answer.gas_estimate = gas;
                if let Some(sig) = &request.signature {
                    let (outputs, note) = abi::decode_returns(sig, &data);
                    answer.outputs = outputs;
                    answer.note = note;
                }
            }
            CallOutcome::Reverted(data) => answer.revert = Some(abi::decode_revert(&data, &request.errors)),
        }
        Ok(Reply::Json(answer))
    }
}

/// `eth_call` and `eth_estimateGas` of the same call on the same state, in one batch.
async fn simulate(
    chain: &EvmChain,
    tx: &Value,
    block: &str,
    overrides: Option<Value>,
) -> Result<(CallOutcome, Option<u64>), EngineError> {
    let params = match &overrides {
        Some(overrides) => json!([tx, block, overrides]),
        None => json!([tx, block]),
    };
    let mut batch = chain.client().new_batch();
    let call: Waiter<Bytes> = batch.add_call("eth_call", &params).map_err(|e| chain.error("eth_call", e))?;
    let gas: Waiter<U256> =
        batch.add_call("eth_estimateGas", &params).map_err(|e| chain.error("eth_estimateGas", e))?;
    batch.send().await.map_err(|e| chain.error("eth_call", e))?;
    let outcome = crate::evm::call::outcome(chain, call.await)?;
    let gas = match gas.await {
        Ok(gas) => u64::try_from(gas).ok(),
        // A call that reverts has no estimate; the call's own answer says why.
        Err(RpcError::ErrorResp(_)) => None,
        Err(e) => return Err(chain.error("eth_estimateGas", e)),
    };
    Ok((outcome, gas))
}

/// The state override set as nodes take it (camelCase members, hex quantities), every
/// error naming the account and member at fault.
fn overrides_json(map: &BTreeMap<String, AccountOverride>) -> Result<Value, EngineError> {
    if map.len() > MAX_OVERRIDDEN_ACCOUNTS {
        return Err(EngineError::invalid(
            "/state_overrides",
            format!("/state_overrides: at most {MAX_OVERRIDDEN_ACCOUNTS} accounts, {} given", map.len()),
        ));
    }
    let mut out = Map::new();
    for (key, account) in map {
        let at = format!("/state_overrides/{}", key.replace('~', "~0").replace('/', "~1"));
        let address: Address = key
            .parse::<EvmAddress>()
            .map(|a| a.0)
            .map_err(|why| EngineError::invalid(at.clone(), format!("{at}: the key is not an address: {why}")))?;
        let mut entry = Map::new();
        if let Some(balance) = &account.balance {
            let wei = parse_uint256(balance).ok_or_else(|| {
                EngineError::invalid(format!("{at}/balance"), format!("{at}/balance: write wei as decimal or 0x hex"))
            })?;
            entry.insert("balance".into(), Value::String(format!("{wei:#x}")));
        }
        if let Some(nonce) = account.nonce {
            entry.insert("nonce".into(), Value::String(format!("{nonce:#x}")));
        }
        if let Some(code) = &account.code {
            let bytes = abi::parse_hex_bytes(&format!("{at}/code"), code, MAX_CALLDATA_BYTES)?;
            entry.insert("code".into(), Value::String(format!("0x{}", hex::encode(bytes))));
        }
        let slots = match (&account.state, &account.state_diff) {
            (Some(_), Some(_)) => {
                return Err(EngineError::invalid(
                    format!("{at}/state_diff"),
                    format!(
                        "{at}/state_diff: give `state` (replace all storage) or `state_diff` (change slots), not both"
                    ),
                ));
            }
            (Some(state), None) => Some(("state", "state", state)),
            (None, Some(diff)) => Some(("stateDiff", "state_diff", diff)),
            (None, None) => None,
        };
        if let Some((member, field, slots)) = slots {
            if slots.len() > MAX_OVERRIDDEN_SLOTS {
                return Err(EngineError::invalid(
                    format!("{at}/{field}"),
                    format!("{at}/{field}: at most {MAX_OVERRIDDEN_SLOTS} slots, {} given", slots.len()),
                ));
            }
            let mut words = Map::new();
            for (slot, value) in slots {
                let slot_at = format!("{at}/{field}/{}", slot.replace('~', "~0").replace('/', "~1"));
                // Exactly 0x and 1 to 64 hex digits, as the schema's pattern says.
                let word = |text: &str, what: &str| {
                    let digits = text.strip_prefix("0x").filter(|d| (1..=64).contains(&d.len()));
                    let digits = digits.filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()));
                    digits.and_then(|_| parse_uint256(text)).map(B256::from).ok_or_else(|| {
                        EngineError::invalid(
                            slot_at.clone(),
                            format!("{slot_at}: the {what} is not 0x and 1 to 64 hex digits"),
                        )
                    })
                };
                words.insert(word(slot, "slot")?.to_string(), Value::String(word(value, "value")?.to_string()));
            }
            entry.insert(member.into(), Value::Object(words));
        }
        out.insert(address_text(&address), Value::Object(entry));
    }
    Ok(Value::Object(out))
}
