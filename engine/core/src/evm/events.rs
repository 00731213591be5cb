//! Event logs: parsing an event signature (a caller's or a line of the bundled table,
//! `engine/data/event-signatures.txt`), and decoding a log's topics and data with it.
//!
//! A log decodes as an event only when it fits it exactly: the first topic is the event's
//! topic (unless the event is anonymous), there is one more topic per indexed parameter,
//! each indexed value-type topic is a clean word of its type, and the data is a clean
//! encoding of the other parameters (`super::abi::clean_decode`). ERC-20 and ERC-721
//! `Transfer` share a topic; the number of topics tells them apart.
//!
//! Indexed parameters of dynamic types (`string`, `bytes`, arrays, tuples) are stored as
//! the keccak-256 hash of their encoding: the value cannot be recovered, so the answer
//! gives the hash and says so.

use std::collections::HashMap;
use std::sync::LazyLock;

use alloy::dyn_abi::{DynSolType, Specifier};
use alloy::json_abi::Event;
use alloy::primitives::{B256, keccak256};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::abi;

/// The bundled table's text, one event a line.
const TABLE_TEXT: &str = include_str!("../../../data/event-signatures.txt");

/// Longest event signature text accepted from a user.
pub const MAX_EVENT_CHARS: usize = 2048;

/// Most topics a log can have (LOG0 to LOG4).
pub const MAX_TOPICS: usize = 4;

/// One parameter of an event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventParam {
    /// The parameter's name as declared (may be empty).
    pub name: String,
    /// Its type.
    pub ty: DynSolType,
    /// Whether it is a topic rather than part of the data.
    pub indexed: bool,
}

/// A parsed event signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSignature {
    /// Canonical text, the topic's preimage: `Transfer(address,address,uint256)`.
    pub text: String,
    /// The declaration with `indexed` and names: `Transfer(address indexed from, address indexed to, uint256 value)`.
    pub declaration: String,
    /// The event's name.
    pub name: String,
    /// Parameters, in order.
    pub params: Vec<EventParam>,
    /// keccak-256 of `text`: the log's first topic (unless anonymous).
    pub topic: B256,
    /// Whether the event is anonymous (no first topic).
    pub anonymous: bool,
}

impl EventSignature {
    /// Topics a log of this event has.
    pub fn topic_count(&self) -> usize {
        usize::from(!self.anonymous) + self.params.iter().filter(|p| p.indexed).count()
    }
}

/// Parses an event such as `Transfer(address indexed from, address indexed to, uint256 value)`;
/// the `event` keyword and `anonymous` are accepted, type aliases made canonical. The
/// error is a sentence for the user.
pub fn parse_event(text: &str) -> Result<EventSignature, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("the event signature is empty; give one such as Transfer(address indexed from, address indexed to, uint256 value)".into());
    }
    if text.chars().count() > MAX_EVENT_CHARS {
        return Err(format!("the event signature is longer than {MAX_EVENT_CHARS} characters"));
    }
    let event = Event::parse(text).map_err(|e| {
        let why = e.to_string();
        let why = why.lines().next().unwrap_or_default().trim().to_string();
        format!(
            "not an event signature such as Transfer(address indexed from, address indexed to, uint256 value): {why}"
        )
    })?;
    let mut params = Vec::with_capacity(event.inputs.len());
    for (index, input) in event.inputs.iter().enumerate() {
        let ty = input
            .resolve()
            .map_err(|e| format!("parameter {} has type `{}`, which is not an ABI type: {e}", index + 1, input.ty))?;
        // The same bounds as function signatures: `f(T)` parses only when T is safe to decode.
        super::signatures::parse_signature(&format!("f({})", ty.sol_type_name()))
            .map_err(|why| format!("parameter {} (`{}`): {why}", index + 1, ty.sol_type_name()))?;
        params.push(EventParam { name: input.name.clone(), ty, indexed: input.indexed });
    }
    let indexed = params.iter().filter(|p| p.indexed).count();
    let limit = if event.anonymous { MAX_TOPICS } else { MAX_TOPICS - 1 };
    if indexed > limit {
        return Err(format!(
            "{indexed} parameters are indexed; a{} event has room for at most {limit}",
            if event.anonymous { "n anonymous" } else { "" }
        ));
    }
    let types: Vec<_> = params.iter().map(|p| p.ty.sol_type_name()).collect();
    let canonical = format!("{}({})", event.name, types.join(","));
    let declared: Vec<String> = params
        .iter()
        .map(|p| {
            let mut part = p.ty.sol_type_name().into_owned();
            if p.indexed {
                part.push_str(" indexed");
            }
            if !p.name.is_empty() {
                part.push(' ');
                part.push_str(&p.name);
            }
            part
        })
        .collect();
    let declaration =
        format!("{}({}){}", event.name, declared.join(", "), if event.anonymous { " anonymous" } else { "" });
    Ok(EventSignature {
        topic: keccak256(canonical.as_bytes()),
        text: canonical,
        declaration,
        name: event.name,
        params,
        anonymous: event.anonymous,
    })
}

/// One decoded event.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
pub struct DecodedEvent {
    /// The canonical signature whose hash is the first topic: `Transfer(address,address,uint256)`.
    pub signature: String,
    /// The declaration, with `indexed` and parameter names.
    pub declaration: String,
    /// The event's name.
    pub name: String,
    /// The parameters, in declaration order.
    pub args: Vec<EventArg>,
}

/// One parameter of a decoded event.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
pub struct EventArg {
    /// The parameter's declared name; empty when the declaration has none.
    pub name: String,
    /// The canonical ABI type.
    #[serde(rename = "type")]
    pub ty: String,
    /// Whether the value came from a topic.
    pub indexed: bool,
    /// The value as text, written as `/v1/chain/calldata` writes arguments. For an indexed parameter of a dynamic type (string, bytes, array, tuple) this is the topic itself, the keccak-256 hash of the value, and `hashed` is true.
    pub value: String,
    /// True when `value` is the hash of an indexed dynamic value, which cannot be recovered.
    pub hashed: bool,
}

/// Decodes a log with `event`, or says why it does not fit.
pub fn decode(event: &EventSignature, topics: &[B256], data: &[u8]) -> Result<DecodedEvent, String> {
    if topics.len() != event.topic_count() {
        return Err(format!("the log has {} topics and {} takes {}", topics.len(), event.text, event.topic_count()));
    }
    let mut rest = topics;
    if !event.anonymous {
        match rest.split_first() {
            Some((first, others)) if *first == event.topic => rest = others,
            _ => return Err(format!("the first topic is not the topic of {}", event.text)),
        }
    }
    let data_types: Vec<DynSolType> = event.params.iter().filter(|p| !p.indexed).map(|p| p.ty.clone()).collect();
    let mut data_values = abi::clean_decode(&data_types, data)
        .map_err(|why| format!("the data does not decode cleanly as {}: {why}", event.text))?
        .into_iter();
    let mut topic_values = rest.iter();
    let mut args = Vec::with_capacity(event.params.len());
    for param in &event.params {
        let ty = param.ty.sol_type_name().into_owned();
        let arg = if param.indexed {
            let topic = topic_values.next().ok_or("fewer topics than indexed parameters")?;
            if is_hashed(&param.ty) {
                EventArg { name: param.name.clone(), ty, indexed: true, value: topic.to_string(), hashed: true }
            } else {
                let value = abi::clean_decode_word(&param.ty, &topic.0)
                    .map_err(|why| format!("the topic of `{}` is not a clean {}: {why}", param.name, param.ty))?;
                EventArg { name: param.name.clone(), ty, indexed: true, value: abi::render(&value), hashed: false }
            }
        } else {
            let value = data_values.next().ok_or("fewer data values than parameters")?;
            EventArg { name: param.name.clone(), ty, indexed: false, value: abi::render(&value), hashed: false }
        };
        args.push(arg);
    }
    Ok(DecodedEvent {
        signature: event.text.clone(),
        declaration: event.declaration.clone(),
        name: event.name.clone(),
        args,
    })
}

/// Whether an indexed parameter of this type is stored as a hash.
fn is_hashed(ty: &DynSolType) -> bool {
    matches!(
        ty,
        DynSolType::String
            | DynSolType::Bytes
            | DynSolType::Array(_)
            | DynSolType::FixedArray(..)
            | DynSolType::Tuple(_)
    )
}

/// What is known of one log: the table's events with its first topic, and the clean decodes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogDecode {
    /// Declarations of the events tried (the caller's that match, then the table's), best known first.
    pub candidates: Vec<String>,
    /// Every event that decodes the log cleanly, in the same order.
    pub decoded: Vec<DecodedEvent>,
}

impl LogDecode {
    /// The best clean decode.
    pub fn best(&self) -> Option<&DecodedEvent> {
        self.decoded.first()
    }
}

/// Decodes a log with `declared` events first (the caller's; anonymous ones are tried on
/// every log), then the bundled table's events with its first topic.
pub fn decode_known(topics: &[B256], data: &[u8], declared: &[EventSignature]) -> LogDecode {
    let first = topics.first();
    let mine = declared.iter().filter(|e| e.anonymous || Some(&e.topic) == first);
    let known = first.into_iter().flat_map(|t| table().lookup(*t));
    let mut answer = LogDecode::default();
    for event in mine.chain(known) {
        if answer.candidates.contains(&event.declaration) {
            continue;
        }
        answer.candidates.push(event.declaration.clone());
        if let Ok(decoded) = decode(event, topics, data) {
            answer.decoded.push(decoded);
        }
    }
    answer
}

/// The bundled events, in file order, indexed by topic.
pub struct EventTable {
    entries: Vec<EventSignature>,
    by_topic: HashMap<B256, Vec<usize>>,
}

impl EventTable {
    /// Builds a table from `text` (one event a line; `#` comments and blank lines skipped).
    /// Lines that do not parse are skipped and logged: the table's own test makes sure
    /// there are none.
    pub fn parse(text: &str) -> EventTable {
        let mut entries = Vec::new();
        let mut by_topic: HashMap<B256, Vec<usize>> = HashMap::new();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            match parse_event(line) {
                Ok(event) => {
                    by_topic.entry(event.topic).or_default().push(entries.len());
                    entries.push(event);
                }
                Err(why) => tracing::error!(line, why, "skipping a bad line of the event table"),
            }
        }
        EventTable { entries, by_topic }
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every event, in table order.
    pub fn entries(&self) -> &[EventSignature] {
        &self.entries
    }

    /// The events with first topic `topic`, best known first.
    pub fn lookup(&self, topic: B256) -> impl Iterator<Item = &EventSignature> {
        self.by_topic.get(&topic).into_iter().flatten().filter_map(|&i| self.entries.get(i))
    }
}

static TABLE: LazyLock<EventTable> = LazyLock::new(|| EventTable::parse(TABLE_TEXT));

/// The bundled table.
pub fn table() -> &'static EventTable {
    &TABLE
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::dyn_abi::DynSolValue;
    use alloy::primitives::{Address, U256};
    use std::collections::HashSet;

    const ALICE: &str = "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4";
    const BOB: &str = "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2";

    fn topic_of(address: &str) -> B256 {
        B256::left_padding_from(address.parse::<Address>().unwrap().as_slice())
    }

    #[test]
    fn every_line_parses_once_and_standard_topics_are_right() {
        let lines: Vec<&str> =
            TABLE_TEXT.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
        assert_eq!(lines.len(), table().len(), "a line of event-signatures.txt does not parse");
        let mut seen = HashSet::new();
        for (line, event) in lines.iter().zip(table().entries()) {
            assert_eq!(*line, event.declaration, "not written canonically");
            assert!(
                seen.insert((event.topic, event.topic_count())),
                "{line}: same topic and topic count as another line"
            );
        }
        for (text, topic) in [
            ("Transfer(address,address,uint256)", "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"),
            ("Approval(address,address,uint256)", "0x8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925"),
            (
                "Swap(address,uint256,uint256,uint256,uint256,address)",
                "0xd78ad95fa46c994b6551d0da85fc275fe613ce37657fb8d5e3d130840159d822",
            ),
            ("Sync(uint112,uint112)", "0x1c411e9a96e071241c2f21f7726b17ae89e3cab4c78be50e062b03a9fffbbad1"),
            ("Deposit(address,uint256)", "0xe1fffcc4923d04b559f4d29a8bfc6cda04eb5b0d3c460751c2402c5c5cc9109c"),
        ] {
            let event = table().entries().iter().find(|e| e.text == text).expect(text);
            assert_eq!(event.topic.to_string(), topic, "{text}");
        }
    }

    #[test]
    fn erc20_and_erc721_transfers_are_told_apart_by_their_topics() {
        let transfer = parse_event("Transfer(address,address,uint256)").unwrap().topic;
        let amount = DynSolValue::Uint(U256::from(1_000_000u64), 256).abi_encode();
        let erc20 = decode_known(&[transfer, topic_of(ALICE), topic_of(BOB)], &amount, &[]);
        assert_eq!(erc20.candidates.len(), 2);
        let best = erc20.best().unwrap();
        assert_eq!(erc20.decoded.len(), 1);
        assert_eq!(best.declaration, "Transfer(address indexed from, address indexed to, uint256 value)");
        let values: Vec<(&str, &str, bool)> =
            best.args.iter().map(|a| (a.name.as_str(), a.value.as_str(), a.indexed)).collect();
        assert_eq!(values, [("from", ALICE, true), ("to", BOB, true), ("value", "1000000", false)]);

        let id = B256::from(U256::from(42));
        let erc721 = decode_known(&[transfer, topic_of(ALICE), topic_of(BOB), id], &[], &[]);
        assert_eq!(erc721.decoded.len(), 1);
        assert_eq!(erc721.best().unwrap().args[2].value, "42");

        // A dirty address topic decodes as nothing.
        let dirty = B256::repeat_byte(0xff);
        assert!(decode_known(&[transfer, dirty, topic_of(BOB)], &amount, &[]).decoded.is_empty());
        // Trailing data does not decode either.
        let mut long = amount.clone();
        long.extend([0u8; 32]);
        assert!(decode_known(&[transfer, topic_of(ALICE), topic_of(BOB)], &long, &[]).decoded.is_empty());
    }

    #[test]
    fn indexed_dynamic_values_are_hashes_and_declared_events_come_first() {
        let event = parse_event("event Named(string indexed label, bytes32 indexed id, string note) ").unwrap();
        assert_eq!(event.declaration, "Named(string indexed label, bytes32 indexed id, string note)");
        let label_hash = keccak256("alice");
        let id = B256::repeat_byte(7);
        let data = DynSolValue::Tuple(vec![DynSolValue::String("hello".into())]).abi_encode_sequence().unwrap();
        let answer = decode_known(&[event.topic, label_hash, id], &data, std::slice::from_ref(&event));
        let best = answer.best().unwrap();
        assert_eq!((best.args[0].hashed, best.args[0].value.clone()), (true, label_hash.to_string()));
        assert_eq!((best.args[1].hashed, best.args[2].value.as_str()), (false, "hello"));

        let anonymous = parse_event("Ping(uint256 indexed n) anonymous").unwrap();
        assert_eq!(anonymous.topic_count(), 1);
        let answer = decode_known(&[B256::from(U256::from(5))], &[], std::slice::from_ref(&anonymous));
        assert_eq!(answer.best().unwrap().args[0].value, "5");
    }

    #[test]
    fn bad_events_are_refused() {
        for bad in [
            "",
            "Transfer",
            "Transfer(address",
            "T(uint7)",
            "T(uint indexed a, uint indexed b, uint indexed c, uint indexed d)",
        ] {
            assert!(parse_event(bad).is_err(), "{bad:?}");
        }
        assert!(parse_event("T(uint indexed a, uint indexed b, uint indexed c, uint indexed d) anonymous").is_ok());
    }
}
