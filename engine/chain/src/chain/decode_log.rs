//! `POST /v1/chain/decode-log`: an event log's name and arguments from its topics and
//! data, offline: with the caller's event signature, or with the bundled table of
//! well-known events (`engine/data/event-signatures.txt`). A log decodes only when it
//! fits the event exactly (`crate::evm::events`).

use alloy::primitives::B256;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, blocking};
use crate::error::EngineError;
use crate::evm::abi;
use crate::evm::events::{self, DecodedEvent, EventSignature, MAX_TOPICS};
use crate::output::Reply;
use crate::price::Price;

/// Most bytes of log data accepted (64 KiB).
pub const MAX_LOG_DATA_BYTES: usize = 64 * 1024;

/// Request of `/v1/chain/decode-log`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecodeLogInput {
    /// The log's topics in order, each 0x and 64 hex digits: for a non-anonymous event the first is the event's topic (the keccak-256 of its signature), then one per indexed parameter. 0 to 4 topics.
    #[schemars(length(max = 4), inner(regex(pattern = r"^0[xX][0-9a-fA-F]{64}$")))]
    pub topics: Vec<String>,
    /// The log's data as 0x hex (the non-indexed parameters, ABI-encoded); `0x` when there is none. At most 65536 bytes.
    #[serde(default = "empty_data")]
    #[schemars(regex(pattern = r"^0[xX]([0-9a-fA-F]{2})*$"), length(max = 131074))]
    pub data: String,
    /// An event to decode with, written as Solidity declares it: `Transfer(address indexed from, address indexed to, uint256 value)` (`event` and `anonymous` allowed). `indexed` matters: it says which parameters are topics. When omitted or null, the first topic is looked up in the bundled table of well-known events.
    #[serde(default)]
    #[schemars(length(min = 1, max = 2048), extend("format" = "solidity-event"))]
    pub event: Option<String>,
}

fn empty_data() -> String {
    "0x".into()
}

/// Answer of `/v1/chain/decode-log`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct DecodeLogOutput {
    /// The first topic, 0x and 64 hex digits; null for a log without topics.
    pub topic: Option<String>,
    /// Declarations of the events tried: the given `event` when it fits the first topic, else the bundled table's events with this topic, best known first. Matches by topic are unverified hints: any contract can emit any event.
    pub candidates: Vec<String>,
    /// Every event that decodes the log cleanly, best known first.
    pub decoded: Vec<DecodedEvent>,
    /// The best clean decode; null when nothing decodes cleanly.
    pub best: Option<DecodedEvent>,
    /// What was found, in a sentence: why nothing decoded, or that table matches are hints.
    pub note: String,
}

/// A checked request.
pub struct DecodeLogRequest {
    topics: Vec<B256>,
    data: Vec<u8>,
    event: Option<EventSignature>,
}

/// The route.
pub struct DecodeLogRoute;

impl Route for DecodeLogRoute {
    type Input = DecodeLogInput;
    type Prepared = DecodeLogRequest;
    type Output = DecodeLogOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/decode-log",
        operation: "decode_event_log",
        family: Family::Chain,
        summary: "Event name and arguments of a log's topics and data",
        description: "Decodes an EVM event log offline, reading no chain. With `event`, decodes with that event only; \
            without it, looks the first topic up in a bundled table of 85 well-known events (ERC-20, ERC-721, ERC-1155, \
            WETH, ERC-4626, ERC-3009, USDC, OpenZeppelin ownership, roles, pausing and proxies, Uniswap V2/V3/V4, \
            Permit2, Curve, Balancer, CoW, Seaport, Lido, Aave v3, Safe, ERC-4337, governance, Chainlink, ENS). A log \
            decodes only when its topic count, every indexed topic and its data fit the event exactly, so ERC-20 and \
            ERC-721 transfers are told apart. Indexed strings, bytes and arrays are given as their hash.",
        base_price: Price::micros(2_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: DecodeLogInput, _: &Context) -> Result<DecodeLogRequest, EngineError> {
        if input.topics.len() > MAX_TOPICS {
            return Err(EngineError::invalid(
                "/topics",
                format!("/topics: a log has at most {MAX_TOPICS} topics, and {} were given", input.topics.len()),
            ));
        }
        let topics = input
            .topics
            .iter()
            .enumerate()
            .map(|(i, t)| abi::parse_word(&format!("/topics/{i}"), t))
            .collect::<Result<Vec<_>, _>>()?;
        let data = abi::parse_hex_bytes("/data", &input.data, MAX_LOG_DATA_BYTES)?;
        let event = match input.event.as_deref() {
            None => None,
            Some(text) => Some(
                events::parse_event(text).map_err(|why| EngineError::invalid("/event", format!("/event: {why}")))?,
            ),
        };
        Ok(DecodeLogRequest { topics, data, event })
    }

    fn quote(_: &DecodeLogRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: DecodeLogRequest, _: &Context) -> Result<Reply<DecodeLogOutput>, EngineError> {
        blocking(move || Ok(Reply::Json(decode(&request.topics, &request.data, request.event.as_ref())))).await
    }
}

/// The whole answer for one log.
pub fn decode(topics: &[B256], data: &[u8], event: Option<&EventSignature>) -> DecodeLogOutput {
    let topic = topics.first().map(|t| t.to_string());
    match event {
        Some(event) => {
            let (decoded, note) = match events::decode(event, topics, data) {
                Ok(decoded) => (vec![decoded], format!("The log decodes cleanly as {}.", event.declaration)),
                Err(why) => (Vec::new(), format!("The log does not decode as {}: {why}.", event.declaration)),
            };
            DecodeLogOutput {
                topic,
                candidates: vec![event.declaration.clone()],
                best: decoded.first().cloned(),
                decoded,
                note,
            }
        }
        None => {
            let found = events::decode_known(topics, data, &[]);
            let note = match (topics.first(), found.candidates.len(), found.decoded.len()) {
                (None, _, _) => {
                    "The log has no topics: an anonymous event cannot be looked up; give `event` to decode it."
                        .to_string()
                }
                (Some(t), 0, _) => format!(
                    "No event in the bundled table has topic {t}; give `event` to decode the log with one you know."
                ),
                (Some(_), n, 0) => format!(
                    "{n} event{} of the bundled table {} this topic, but the log's topics and data fit none of them.",
                    if n == 1 { "" } else { "s" },
                    if n == 1 { "has" } else { "have" }
                ),
                (Some(_), _, _) => format!(
                    "Matched by topic from a bundled table of {} well-known events: a hint, not proof of which \
                     contract code emitted it.",
                    events::table().len()
                ),
            };
            DecodeLogOutput {
                topic,
                best: found.best().cloned(),
                candidates: found.candidates,
                decoded: found.decoded,
                note,
            }
        }
    }
}
