//! `POST /v1/chain/encode`: calldata from a function signature and its arguments,
//! offline. Arguments are JSON: strings in the notation `cast` accepts, numbers, bools,
//! or arrays for array and tuple parameters (`crate::evm::abi::values_from_json`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::evm::abi::{self, DecodedArg};
use crate::evm::signatures::Signature;
use crate::output::Reply;
use crate::price::Price;

/// Request of `/v1/chain/encode`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EncodeInput {
    /// The function: `transfer(address,uint256)`; parameter names, `function`, modifiers and `returns (...)` are allowed and dropped.
    #[schemars(length(min = 1, max = 1024), extend("format" = "solidity-function"))]
    pub signature: String,
    /// One value per parameter, in order: a string (`"0x5B38…"`, `"1000000"`, `"true"`, `"0xdeadbeef"`, `"[1,2]"` as `cast` writes them), a number, a bool, or a JSON array for an array or tuple parameter. Omitted for a function without parameters.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub args: Vec<Value>,
}

/// Answer of `/v1/chain/encode`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct EncodeOutput {
    /// The canonical signature encoded.
    pub signature: String,
    /// Its 4-byte selector, 0x hex.
    pub selector: String,
    /// The calldata: selector then ABI-encoded arguments, 0x and lower-case hex.
    pub calldata: String,
    /// Byte length of the calldata.
    pub bytes: u64,
    /// The arguments as encoded, each with its canonical type, written as `/v1/chain/calldata` decodes them.
    pub args: Vec<DecodedArg>,
}

/// A checked request.
pub struct EncodeRequest {
    signature: Signature,
    values: Vec<alloy::dyn_abi::DynSolValue>,
}

/// The route.
pub struct EncodeRoute;

impl Route for EncodeRoute {
    type Input = EncodeInput;
    type Prepared = EncodeRequest;
    type Output = EncodeOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/encode",
        operation: "encode_calldata",
        family: Family::Chain,
        summary: "Calldata from a function signature and arguments",
        description: "ABI-encodes a call offline, reading no chain: the selector of the canonical signature, then the \
            arguments. Arguments are JSON values in order (strings as cast writes them, numbers, bools, arrays for \
            arrays and tuples); a value that does not fit its type is refused naming its place (`/args/1/0`).",
        base_price: Price::micros(1_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: EncodeInput, _: &Context) -> Result<EncodeRequest, EngineError> {
        let (signature, values) = abi::signature_and_args(&input.signature, "/signature", &input.args, "/args")?;
        Ok(EncodeRequest { signature, values })
    }

    fn quote(_: &EncodeRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: EncodeRequest, _: &Context) -> Result<Reply<EncodeOutput>, EngineError> {
        let EncodeRequest { signature, values } = request;
        let args = abi::typed_values(&signature.types, &values);
        let calldata = abi::encode_call(&signature, values);
        Ok(Reply::Json(EncodeOutput {
            selector: format!("0x{}", hex::encode(signature.selector)),
            signature: signature.text,
            bytes: calldata.len() as u64,
            calldata: format!("0x{}", hex::encode(calldata)),
            args,
        }))
    }
}
