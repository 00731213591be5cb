//! `POST /v1/chain/call`: a read-only contract call from a function signature and its
//! arguments, at a block, with the return values decoded by the signature's return types
//! and a revert explained (`Error`, `Panic`, custom errors). A revert is an answer, not an
//! error: the call reverted, and the answer says why.

use std::sync::Arc;

use alloy::dyn_abi::DynSolValue;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::evm::abi::{self, DecodedArg, Revert};
use crate::evm::block_ref::{BlockRef, explain};
use crate::evm::call::{CallOutcome, eth_call};
use crate::evm::signatures::Signature;
use crate::evm::{ChainName, EvmAddress, EvmChain};
use crate::output::Reply;
use crate::price::Price;

/// Request of `/v1/chain/call`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallInput {
    /// Chain to read: `ethereum`, `base` or `polygon`.
    pub chain: ChainName,
    /// The contract called, 0x and 40 hex digits.
    pub to: EvmAddress,
    /// The function, with its return types to decode the answer: `balanceOf(address) returns (uint256)`, or as cast writes it, `balanceOf(address)(uint256)`. Without return types the raw return data is given.
    #[schemars(length(min = 1, max = 1024), extend("format" = "solidity-function"))]
    pub signature: String,
    /// One value per parameter, in order: a string as `cast` writes it, a number, a bool, or a JSON array for an array or tuple parameter.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub args: Vec<Value>,
    /// The block to call at: a number or a tag. Defaults to `latest`.
    #[serde(default)]
    pub block: Option<BlockRef>,
    /// The caller (`msg.sender`), 0x and 40 hex digits; the zero address when omitted.
    #[serde(default)]
    pub from: Option<EvmAddress>,
    /// The contract's custom errors, to explain a revert: `InsufficientFunds(uint256 needed)` or `error InsufficientFunds(uint256)`. Well-known errors (OpenZeppelin, Permit2, Uniswap…) are decoded without them.
    #[serde(default)]
    #[schemars(
        length(max = 64),
        extend("items" = { "type": "string", "minLength": 1, "maxLength": 1024, "format": "solidity-function" })
    )]
    pub errors: Vec<String>,
}

/// Answer of `/v1/chain/call`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CallOutput {
    /// Chain read.
    pub chain: String,
    /// The contract called, lower-case.
    pub to: String,
    /// The block called at, as sent to the node (`latest`, or 0x-hex number).
    pub block: String,
    /// The canonical signature called.
    pub signature: String,
    /// The calldata sent, 0x hex.
    pub calldata: String,
    /// True when the call returned; false when it reverted (then `revert` says why).
    pub success: bool,
    /// The raw return data, 0x hex; null when the call reverted.
    pub result: Option<String>,
    /// The return values decoded with the signature's return types; empty when it gives none, when they do not decode cleanly (see `note`) or when the call reverted.
    pub outputs: Vec<DecodedArg>,
    /// Why the return data was not decoded, when it was not: no return types given, or data that does not fit them (calling an address without code returns nothing).
    pub note: Option<String>,
    /// Why the call reverted; null when it returned.
    pub revert: Option<Revert>,
}

/// A checked request.
pub struct CallRequest {
    chain: Arc<EvmChain>,
    to: EvmAddress,
    signature: Signature,
    values: Vec<DynSolValue>,
    block: BlockRef,
    from: Option<EvmAddress>,
    errors: Vec<Signature>,
}

/// The route.
pub struct CallRoute;

impl Route for CallRoute {
    type Input = CallInput;
    type Prepared = CallRequest;
    type Output = CallOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/call",
        operation: "call_contract",
        family: Family::Chain,
        summary: "Read-only contract call, outputs decoded",
        description: "Calls a contract function without a transaction (eth_call) at a block (latest by default): the \
            signature and JSON arguments are encoded, the return data is decoded with the signature's return types \
            (`balanceOf(address) returns (uint256)`). A call that reverts answers success false with the reason \
            decoded: Error(string), Panic codes in words, the caller's custom errors or well-known ones.",
        base_price: Price::micros(2_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: CallInput, ctx: &Context) -> Result<CallRequest, EngineError> {
        let chain = ctx.chains.resolve(&input.chain, "/chain")?;
        let (signature, values) = abi::signature_and_args(&input.signature, "/signature", &input.args, "/args")?;
        let errors = abi::parse_errors(&input.errors, "/errors")?;
        Ok(CallRequest {
            chain,
            to: input.to,
            signature,
            values,
            block: input.block.unwrap_or(BlockRef::Tag("latest")),
            from: input.from,
            errors,
        })
    }

    fn quote(_: &CallRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: CallRequest, _: &Context) -> Result<Reply<CallOutput>, EngineError> {
        let CallRequest { chain, to, signature, values, block, from, errors } = request;
        let calldata = abi::encode_call(&signature, values);
        let mut tx = json!({"to": to.text(), "data": format!("0x{}", hex::encode(&calldata))});
        if let Some(from) = &from {
            tx["from"] = Value::String(from.text());
        }
        let named = block;
        let block = block.param();
        let outcome = explain(&chain, &[Some(named)], chain.deadline(eth_call(&chain, tx, &block)).await).await?;
        let mut answer = CallOutput {
            chain: chain.name().to_string(),
            to: to.text(),
            block,
            signature: signature.text.clone(),
            calldata: format!("0x{}", hex::encode(&calldata)),
            success: false,
            result: None,
            outputs: Vec::new(),
            note: None,
            revert: None,
        };
        match outcome {
            CallOutcome::Returned(data) => {
                answer.success = true;
                answer.result = Some(format!("0x{}", hex::encode(&data)));
                let (outputs, note) = abi::decode_returns(&signature, &data);
                answer.outputs = outputs;
                answer.note = note;
            }
            CallOutcome::Reverted(data) => answer.revert = Some(abi::decode_revert(&data, &errors)),
        }
        Ok(Reply::Json(answer))
    }
}
