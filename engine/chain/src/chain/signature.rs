//! `POST /v1/chain/signature`: signatures and their hashes, both ways, offline. A 4-byte
//! selector gives the bundled table's functions and custom errors with it; a 32-byte event
//! topic gives the table's events; signature text gives its canonical form, its selector
//! and its event topic, and the known signatures that share them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::evm::signatures::{self, Selector};
use crate::evm::{abi, events};
use crate::output::Reply;
use crate::price::Price;

/// Request of `/v1/chain/signature`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignatureInput {
    /// What to look up: a 4-byte function or error selector (`0xa9059cbb`), a 32-byte event topic (0x and 64 hex digits), or a signature to hash (`transfer(address,uint256)`, `function balanceOf(address owner) view returns (uint256)`, `event Transfer(address indexed from, address indexed to, uint256 value)`).
    #[schemars(
        length(min = 1, max = 2048),
        extend("anyOf" = [
            { "pattern": "^0[xX][0-9a-fA-F]{8}$" },
            { "pattern": "^0[xX][0-9a-fA-F]{64}$" },
            { "format": "solidity-function" },
            { "format": "solidity-event" }
        ])
    )]
    pub query: String,
}

/// What the query was read as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QueryKind {
    /// A 4-byte selector.
    Selector,
    /// A 32-byte event topic.
    Topic,
    /// Signature text, hashed.
    Signature,
}

/// Answer of `/v1/chain/signature`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SignatureOutput {
    /// What the query was read as.
    pub kind: QueryKind,
    /// The canonical signature text (`transfer(address,uint256)`) when the query is a signature; else null.
    pub canonical: Option<String>,
    /// The 4-byte selector: the query's, or the signature's (first 4 bytes of its keccak-256). Null for a topic query.
    pub selector: Option<String>,
    /// The 32-byte event topic: the query's, or the signature's (its keccak-256). Null for a selector query.
    pub topic: Option<String>,
    /// Functions of the bundled table with this selector, best known first: unverified hints, since different functions can share a selector.
    pub functions: Vec<String>,
    /// Custom errors of the bundled table with this selector.
    pub errors: Vec<String>,
    /// Events of the bundled table with this topic, as declared (with `indexed` and names).
    pub events: Vec<String>,
}

/// A checked query.
pub enum SignatureRequest {
    /// A selector.
    Selector(Selector),
    /// A topic.
    Topic(alloy::primitives::B256),
    /// Signature text: canonical form and its hash.
    Text { canonical: String, hash: alloy::primitives::B256 },
}

/// The route.
pub struct SignatureRoute;

impl Route for SignatureRoute {
    type Input = SignatureInput;
    type Prepared = SignatureRequest;
    type Output = SignatureOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/signature",
        operation: "lookup_signature",
        family: Family::Chain,
        summary: "Selector or event topic to signatures, and signature to selector and topic",
        description: "Offline, reading no chain. A 4-byte selector gives the functions (492 in the bundled table) and \
            custom errors with that selector; a 32-byte topic gives the well-known events with that topic; a \
            signature gives its canonical text, selector and event topic, with the known signatures sharing them \
            (so selector collisions show). Table matches are unverified hints.",
        base_price: Price::micros(1_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: SignatureInput, _: &Context) -> Result<SignatureRequest, EngineError> {
        let query = input.query.trim();
        let digits = query.strip_prefix("0x").or_else(|| query.strip_prefix("0X"));
        if let Some(digits) = digits.filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit())) {
            return match digits.len() {
                8 => {
                    let bytes = abi::parse_hex_bytes("/query", query, 4)?;
                    Ok(SignatureRequest::Selector([bytes[0], bytes[1], bytes[2], bytes[3]]))
                }
                64 => Ok(SignatureRequest::Topic(abi::parse_word("/query", query)?)),
                n => Err(EngineError::invalid(
                    "/query",
                    format!(
                        "/query: {n} hex digits; a selector is 0x and 8 hex digits, an event topic 0x and 64, or give \
                         a signature such as transfer(address,uint256)"
                    ),
                )),
            };
        }
        let canonical = match signatures::parse_signature(query) {
            Ok(sig) => sig.text,
            Err(function_error) => match events::parse_event(query) {
                Ok(event) => event.text,
                Err(_) => return Err(EngineError::invalid("/query", format!("/query: {function_error}"))),
            },
        };
        let hash = alloy::primitives::keccak256(canonical.as_bytes());
        Ok(SignatureRequest::Text { canonical, hash })
    }

    fn quote(_: &SignatureRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: SignatureRequest, _: &Context) -> Result<Reply<SignatureOutput>, EngineError> {
        Ok(Reply::Json(answer(&request)))
    }
}

fn answer(request: &SignatureRequest) -> SignatureOutput {
    let (kind, canonical, selector, topic) = match request {
        SignatureRequest::Selector(s) => (QueryKind::Selector, None, Some(*s), None),
        SignatureRequest::Topic(t) => (QueryKind::Topic, None, None, Some(*t)),
        SignatureRequest::Text { canonical, hash } => {
            (QueryKind::Signature, Some(canonical.clone()), Some([hash[0], hash[1], hash[2], hash[3]]), Some(*hash))
        }
    };
    let texts = |found: &mut dyn Iterator<Item = &signatures::Signature>| found.map(|s| s.text.clone()).collect();
    SignatureOutput {
        kind,
        canonical,
        selector: selector.map(|s| format!("0x{}", hex::encode(s))),
        topic: topic.map(|t| t.to_string()),
        functions: selector.map(|s| texts(&mut signatures::table().lookup(s))).unwrap_or_default(),
        errors: selector.map(|s| texts(&mut abi::error_table().lookup(s))).unwrap_or_default(),
        events: topic.map(|t| events::table().lookup(t).map(|e| e.declaration.clone()).collect()).unwrap_or_default(),
    }
}
