//! ENS resolution on the Ethereum main network, shared by `/v1/chain/ens` and
//! `/v1/chain/ens/records`.
//!
//! Names are normalised by full ENSIP-15 (the `ens-normalize` crate, the official
//! spec.json/nf.json of ens-normalize.js 1.11.1, Unicode 17): mapping (case, width, emoji
//! presentation), refusal of disallowed characters, illegal mixtures of scripts,
//! whole-script confusables, misplaced combining marks, hyphens and underscores.
//!
//! A lookup reads the registry for the resolver of the name or, failing that (ENSIP-10), of
//! its closest parent that has one, every level in one JSON-RPC batch. A resolver
//! supporting `resolve(bytes,bytes)` (interface 0x9061b923) is asked
//! `resolve(dnsEncode(name), record call)`; otherwise only the name's own resolver is asked
//! directly, and a name whose only resolver is a parent's without wildcard support does not
//! resolve. Several records of one name are asked in one JSON-RPC batch.
//!
//! A resolver that reverts with `OffchainLookup` (CCIP-read, EIP-3668) is followed: its
//! gateway URLs, untrusted data from the chain, are fetched in order through the engine's
//! [`SafeFetcher`] (public addresses only, redirects re-checked; [`GATEWAY_TIMEOUT`] each,
//! answers over [`MAX_GATEWAY_BYTES`] refused once read, the download itself bounded only
//! by the fetcher's own limit; [`MAX_GATEWAY_URLS`] tried), the answer handed to the
//! resolver's callback on chain, at most [`MAX_LOOKUPS`] lookups deep. Only GET gateways
//! (URL templates with `{data}`) are fetched: the fetcher does not POST, so a resolver whose
//! gateways all want POST gives a 502. Gateway outcomes: 404/410 means the name has no
//! answer; 429 a rate limit; a timeout 504; down or 5xx 503 (after the other URLs); refused
//! targets (private addresses), too-large or unreadable answers, other 4xx and an answer
//! the callback rejects 502. A lookup whose `sender` is not the resolver asked is the
//! resolver's misbehaviour: no answer.

use std::time::Duration;

use alloy::primitives::{Address, B256, Bytes, FixedBytes, address, keccak256};
use alloy::sol_types::{SolCall, SolError, SolValue};
use serde::Deserialize;
use serde_json::json;

use super::call::{CallOutcome, ViewBatch, eth_call};
use super::{EvmChain, address_text, clean_text};
use crate::error::{EngineError, ErrorKind};
use crate::fetch::{FetchError, SafeFetcher};
use crate::rpc_http::bad_upstream;

/// The ENS registry, at the same address on every network that has ENS.
pub const ENS_REGISTRY: Address = address!("0x00000000000C2E074eC69A0dFb2997BA6C7d2e1e");
/// The chain every lookup reads (the spec: the Ethereum main network).
pub const CHAIN: &str = "ethereum";
/// Longest name accepted or returned, in characters; a longer name read from a chain is cut.
pub const MAX_NAME: usize = 255;
/// What the published schemas say of a name, the part of ENSIP-15 a pattern can hold:
/// dot-separated labels, none empty; of ASCII only letters (any case), digits, `-`, `$`,
/// `_` at a label's start, `'` between other characters, and `#` and `*` (keycap emoji);
/// control characters, spaces and other punctuation never pass. Which other characters pass, and together with which,
/// are Unicode tables no pattern holds: the route answers those with a 422 on `/name`.
pub const NAME_PATTERN: &str = concat!(
    r"^(?:_+|_*[^\x00-\x22\x25-\x29\x2b\x2c\x2e\x2f\x3a-\x40\x5b-\x60\x7b-\x9f]+(?:'[^\x00-\x22\x25-\x29\x2b\x2c\x2e\x2f\x3a-\x40\x5b-\x60\x7b-\x9f]+)*)",
    r"(?:\.(?:_+|_*[^\x00-\x22\x25-\x29\x2b\x2c\x2e\x2f\x3a-\x40\x5b-\x60\x7b-\x9f]+(?:'[^\x00-\x22\x25-\x29\x2b\x2c\x2e\x2f\x3a-\x40\x5b-\x60\x7b-\x9f]+)*))*$",
);
/// Most offchain lookups (EIP-3668) one answer may take: its own and those its callbacks ask for.
pub const MAX_LOOKUPS: usize = 4;
/// Most gateway URLs of one lookup that are tried.
pub const MAX_GATEWAY_URLS: usize = 4;
/// Time one gateway may take to answer.
pub const GATEWAY_TIMEOUT: Duration = Duration::from_secs(4);
/// Largest gateway answer accepted, in bytes.
pub const MAX_GATEWAY_BYTES: usize = 256 * 1024;
/// Longest gateway URL fetched (after substitution), in bytes.
const MAX_GATEWAY_URL: usize = 8 * 1024;
/// When to come back after a gateway refused for rate or was down.
const GATEWAY_RETRY_AFTER: Duration = Duration::from_secs(5);
/// ENSIP-10's extended resolver interface: `resolve(bytes,bytes)`.
pub const EXTENDED_RESOLVER: [u8; 4] = [0x90, 0x61, 0xb9, 0x23];

/// The calls and the error a lookup uses.
pub mod abi {
    alloy::sol! {
        error OffchainLookup(address sender, string[] urls, bytes callData, bytes4 callbackFunction, bytes extraData);
        function resolver(bytes32 node) external view returns (address);
        function addr(bytes32 node) external view returns (address);
        function addr(bytes32 node, uint256 coinType) external view returns (bytes);
        function name(bytes32 node) external view returns (string);
        function text(bytes32 node, string key) external view returns (string);
        function contenthash(bytes32 node) external view returns (bytes);
        function resolve(bytes name, bytes data) external view returns (bytes);
        function supportsInterface(bytes4 interfaceID) external view returns (bool);
    }
}

/// The Ethereum main network, which every ENS lookup reads; 503 when it is not configured.
pub fn chain(ctx: &crate::context::Context) -> Result<std::sync::Arc<EvmChain>, EngineError> {
    ctx.chains.get(CHAIN).cloned().ok_or_else(|| {
        EngineError::new(
            ErrorKind::Unavailable { retry_after: Duration::from_secs(60) },
            "unavailable",
            "the ethereum chain is not configured",
        )
    })
}

/// The resolver that answers for a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resolver {
    /// Its address.
    pub address: Address,
    /// It is the name's own, not a parent's (ENSIP-10 wildcard).
    pub exact: bool,
    /// It takes `resolve(bytes,bytes)`.
    pub extended: bool,
}

/// The resolver that answers for the normalised `name`: the registry searched up the
/// name's parents (ENSIP-10), then asked whether it takes `resolve(bytes,bytes)`. None when
/// no resolver can answer: none is set, or only a parent's one that is not extended.
pub async fn resolver(chain: &EvmChain, name: &str) -> Result<Option<Resolver>, EngineError> {
    let Some((address, exact)) = find_resolver(chain, name).await? else { return Ok(None) };
    let extended = supports_extended(chain, address).await?;
    Ok((extended || exact).then_some(Resolver { address, exact, extended }))
}

/// The answers of `resolver` to record calls `calls` of `name` (each the calldata of a
/// record function for the name's node), in order: the calls in one JSON-RPC batch (one
/// call alone goes as a single request), offchain lookups followed one by one. A record the
/// resolver does not answer (it reverts, or its gateway has no answer) is None.
pub async fn records(
    chain: &EvmChain,
    fetcher: &SafeFetcher,
    name: &str,
    resolver: &Resolver,
    calls: Vec<Vec<u8>>,
) -> Result<Vec<Option<Bytes>>, EngineError> {
    let wrap = |call: Vec<u8>| {
        if resolver.extended {
            abi::resolveCall { name: dns_encode(name).into(), data: call.into() }.abi_encode()
        } else {
            call
        }
    };
    let datas: Vec<Vec<u8>> = calls.into_iter().map(wrap).collect();
    let outcomes = if let [data] = datas.as_slice() {
        vec![eth_call(chain, json!({"to": resolver.address, "data": Bytes::from(data.clone())}), "latest").await?]
    } else {
        let mut batch = ViewBatch::new(chain, "latest");
        let views =
            datas.iter().map(|data| batch.view(&resolver.address, data.clone())).collect::<Result<Vec<_>, _>>()?;
        batch.send().await?;
        let mut outcomes = Vec::with_capacity(views.len());
        for view in views {
            outcomes.push(view.outcome(chain).await?);
        }
        outcomes
    };
    let mut answers = Vec::with_capacity(outcomes.len());
    for outcome in outcomes {
        let Some(answer) = follow(chain, fetcher, resolver.address, outcome).await? else {
            answers.push(None);
            continue;
        };
        // An extended resolver's answer comes wrapped in `bytes`; anything else is its fault.
        answers.push(if resolver.extended { abi::resolveCall::abi_decode_returns(&answer).ok() } else { Some(answer) });
    }
    Ok(answers)
}

/// The answer to record call `call` (for the node of `name`), or None when the name has no
/// resolver that answers it.
pub async fn resolve_record(
    chain: &EvmChain,
    fetcher: &SafeFetcher,
    name: &str,
    call: Vec<u8>,
) -> Result<Option<Bytes>, EngineError> {
    let Some(resolver) = resolver(chain, name).await? else { return Ok(None) };
    Ok(records(chain, fetcher, name, &resolver, vec![call]).await?.pop().flatten())
}

/// The non-zero address the normalised `name` resolves to, if any.
pub async fn resolve_addr(chain: &EvmChain, fetcher: &SafeFetcher, name: &str) -> Result<Option<Address>, EngineError> {
    let call = abi::addr_0Call { node: namehash(name) }.abi_encode();
    let answer = resolve_record(chain, fetcher, name, call).await?;
    // A resolver is anyone's contract: an answer that is not an address means "no address".
    Ok(answer.as_deref().and_then(|data| decode_address(data)).filter(|a| !a.is_zero()))
}

/// The primary name `address` sets for itself (its reverse record), cleaned and cut at
/// [`MAX_NAME`] characters; None when it has none. Not checked forward: see [`verified`].
pub async fn primary_name(
    chain: &EvmChain,
    fetcher: &SafeFetcher,
    address: Address,
) -> Result<Option<String>, EngineError> {
    let reverse_name = format!("{}.addr.reverse", hex::encode(address.as_slice()));
    let call = abi::nameCall { node: namehash(&reverse_name) }.abi_encode();
    Ok(resolve_record(chain, fetcher, &reverse_name, call).await?.and_then(|data| decode_name(&data)))
}

/// Whether primary name `name` of `address` resolves forward: (resolves at all, to
/// `address`). A name not in normal form (or cut) cannot be the one its owner set forward.
pub async fn verified(
    chain: &EvmChain,
    fetcher: &SafeFetcher,
    address: Address,
    name: &str,
) -> Result<(bool, bool), EngineError> {
    if normalize(name).as_deref() != Ok(name) {
        return Ok((false, false));
    }
    let forward = resolve_addr(chain, fetcher, name).await?;
    Ok((forward.is_some(), forward == Some(address)))
}

/// The resolver of `name` or of its closest parent that has one (ENSIP-10), and whether it
/// is the name's own; None when neither the name nor any parent has one. The registry is
/// read for every level in one JSON-RPC batch; it is ENS's own contract, so an answer that
/// does not decode is the node's fault (BadUpstream).
async fn find_resolver(chain: &EvmChain, name: &str) -> Result<Option<(Address, bool)>, EngineError> {
    let mut batch = ViewBatch::new(chain, "latest");
    let mut views = Vec::new();
    let mut rest = Some(name);
    while let Some(suffix) = rest {
        views.push(batch.view(&ENS_REGISTRY, abi::resolverCall { node: namehash(suffix) }.abi_encode())?);
        rest = suffix.split_once('.').map(|(_, parent)| parent);
    }
    batch.send().await?;
    let mut found = None;
    for (level, view) in views.into_iter().enumerate() {
        let answer = match view.outcome(chain).await? {
            CallOutcome::Returned(answer) => answer,
            CallOutcome::Reverted(_) => {
                return Err(bad_upstream(format!("the {} RPC says the ENS registry reverted", chain.name())));
            }
        };
        let resolver = decode_address(&answer).ok_or_else(|| {
            bad_upstream(format!(
                "the {} RPC gave an ENS registry answer that is not an address ({} bytes)",
                chain.name(),
                answer.len()
            ))
        })?;
        if found.is_none() && !resolver.is_zero() {
            found = Some((resolver, level == 0));
        }
    }
    Ok(found)
}

/// Whether `resolver` says it supports ENSIP-10's `resolve(bytes,bytes)`; a revert or an
/// answer other than `true` is no.
async fn supports_extended(chain: &EvmChain, resolver: Address) -> Result<bool, EngineError> {
    let data = abi::supportsInterfaceCall { interfaceID: FixedBytes(EXTENDED_RESOLVER) }.abi_encode();
    Ok(match eth_call(chain, json!({"to": resolver, "data": Bytes::from(data)}), "latest").await? {
        CallOutcome::Returned(answer) => {
            answer.get(..32).is_some_and(|word| word == B256::with_last_byte(1).as_slice())
        }
        CallOutcome::Reverted(_) => false,
    })
}

/// What `resolver` answered to `data` (`outcome`), following offchain lookups (EIP-3668):
/// the answer, or None when it reverts otherwise or its lookup cannot be answered for its
/// own fault.
async fn follow(
    chain: &EvmChain,
    fetcher: &SafeFetcher,
    resolver: Address,
    mut outcome: CallOutcome,
) -> Result<Option<Bytes>, EngineError> {
    for lookups in 0..=MAX_LOOKUPS {
        let revert = match outcome {
            CallOutcome::Returned(answer) => return Ok(Some(answer.into())),
            CallOutcome::Reverted(revert) => revert,
        };
        let Ok(lookup) = abi::OffchainLookup::abi_decode(&revert) else {
            if lookups > 0 {
                return Err(bad_upstream(format!(
                    "the resolver {} refused the answer of its offchain gateway",
                    address_text(&resolver)
                )));
            }
            return Ok(None);
        };
        // EIP-3668: a lookup on behalf of another contract is not followed.
        if lookup.sender != resolver {
            return Ok(None);
        }
        if lookups == MAX_LOOKUPS {
            return Err(bad_upstream(format!(
                "the resolver {} asked for more than {MAX_LOOKUPS} offchain lookups",
                address_text(&resolver)
            )));
        }
        let Some(response) = ask_gateways(fetcher, &lookup).await? else { return Ok(None) };
        let data = [&lookup.callbackFunction[..], &(response, lookup.extraData).abi_encode_params()].concat();
        outcome = eth_call(chain, json!({"to": resolver, "data": Bytes::from(data)}), "latest").await?;
    }
    // The loop returns on its last round.
    Err(bad_upstream("too many offchain lookups".to_string()))
}

/// One gateway's outcome when it gives no data.
enum Miss {
    /// The name has no answer there (404, 410).
    NoAnswer,
    /// A failure the other URLs cannot mend (EIP-3668: stop on a 4xx).
    Stop(EngineError),
    /// A failure another URL may not have.
    Next(EngineError),
}

/// The gateways' answer to `lookup` (EIP-3668 GET; URLs in order, a 5xx or unreachable
/// one skipped), or None when the name has no answer there.
async fn ask_gateways(fetcher: &SafeFetcher, lookup: &abi::OffchainLookup) -> Result<Option<Bytes>, EngineError> {
    let sender = address_text(&lookup.sender);
    let data = format!("0x{}", hex::encode(&lookup.callData));
    let mut failure: Option<EngineError> = None;
    for template in lookup.urls.iter().take(MAX_GATEWAY_URLS) {
        let outcome = if template.contains("{data}") {
            ask_gateway(fetcher, &template.replace("{sender}", &sender).replace("{data}", &data)).await
        } else {
            Err(Miss::Next(bad_upstream(format!(
                "the offchain gateway {} takes POST, which is not supported yet",
                gateway_host(template)
            ))))
        };
        match outcome {
            Ok(bytes) => return Ok(Some(bytes)),
            Err(Miss::NoAnswer) => return Ok(None),
            Err(Miss::Stop(e)) => return Err(e),
            Err(Miss::Next(e)) => {
                if failure.as_ref().is_none_or(|f| rank(&e.kind) > rank(&f.kind)) {
                    failure = Some(e);
                }
            }
        }
    }
    // A lookup without URLs cannot be answered by anyone: the resolver's fault, no answer.
    failure.map_or(Ok(None), Err)
}

/// Which of several gateway failures speaks for them all: a timeout or a bad answer means
/// a gateway was there; "unreachable" is the least informative.
fn rank(kind: &ErrorKind) -> u8 {
    match kind {
        ErrorKind::Timeout => 2,
        ErrorKind::BadUpstream => 1,
        _ => 0,
    }
}

/// One GET to a gateway URL, its JSON `{"data": "0x…"}` decoded.
async fn ask_gateway(fetcher: &SafeFetcher, url: &str) -> Result<Bytes, Miss> {
    let host = gateway_host(url);
    if url.len() > MAX_GATEWAY_URL {
        return Err(Miss::Next(bad_upstream(format!("the offchain gateway URL for {host} is too long"))));
    }
    let timeout = || {
        EngineError::new(
            ErrorKind::Timeout,
            "timeout",
            format!("the offchain gateway {host} did not answer within {} s", GATEWAY_TIMEOUT.as_secs()),
        )
    };
    let fetched = match tokio::time::timeout(GATEWAY_TIMEOUT, fetcher.fetch(url)).await {
        Err(_) | Ok(Err(FetchError::Timeout)) => return Err(Miss::Next(timeout())),
        Ok(Ok(fetched)) => fetched,
        Ok(Err(FetchError::Status(404 | 410))) => return Err(Miss::NoAnswer),
        Ok(Err(FetchError::Status(429))) => {
            return Err(Miss::Stop(EngineError::new(
                ErrorKind::RateLimited { retry_after: GATEWAY_RETRY_AFTER },
                "rate_limited",
                format!("the offchain gateway {host} refused for rate (HTTP 429)"),
            )));
        }
        Ok(Err(FetchError::Status(status))) if (400..500).contains(&status) => {
            return Err(Miss::Stop(bad_upstream(format!("the offchain gateway {host} answered HTTP {status}"))));
        }
        Ok(Err(e @ (FetchError::Status(_) | FetchError::Network(_)))) => {
            return Err(Miss::Next(EngineError::new(
                ErrorKind::Unavailable { retry_after: GATEWAY_RETRY_AFTER },
                "unavailable",
                format!("the offchain gateway {host} is unavailable: {}", clean_text(&e.to_string(), 200)),
            )));
        }
        Ok(Err(e)) => {
            return Err(Miss::Next(bad_upstream(format!(
                "the offchain gateway {host} was not fetched: {}",
                clean_text(&e.to_string(), 200)
            ))));
        }
    };
    if fetched.bytes.len() > MAX_GATEWAY_BYTES {
        return Err(Miss::Next(bad_upstream(format!(
            "the offchain gateway {host} answered more than {MAX_GATEWAY_BYTES} bytes"
        ))));
    }
    decode_gateway_answer(&fetched.bytes)
        .ok_or_else(|| Miss::Next(bad_upstream(format!("the offchain gateway {host} answered no `data` hex string"))))
}

/// The bytes of a gateway's `{"data": "0x…"}`.
fn decode_gateway_answer(body: &[u8]) -> Option<Bytes> {
    #[derive(Deserialize)]
    struct Answer {
        data: String,
    }
    let answer: Answer = serde_json::from_slice(body).ok()?;
    let digits = answer.data.strip_prefix("0x")?;
    hex::decode(digits).ok().map(Bytes::from)
}

/// The host of a gateway URL, for messages (never the whole URL: a query may hold a key).
fn gateway_host(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(parsed) => clean_text(parsed.host_str().unwrap_or("(no host)"), 100),
        Err(_) => "(unparsable URL)".to_string(),
    }
}

/// The DNS wire form of a normalised name (ENSIP-10): each label as its length and bytes,
/// a zero at the end; a label longer than 255 bytes goes as `[hex of its labelhash]`.
pub fn dns_encode(name: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len() + 2);
    for label in name.split('.').filter(|l| !l.is_empty()) {
        let hashed;
        let bytes = if label.len() > 255 {
            hashed = format!("[{}]", hex::encode(keccak256(label.as_bytes())));
            hashed.as_bytes()
        } else {
            label.as_bytes()
        };
        // At most 255 (a hashed label is 66).
        out.push(u8::try_from(bytes.len()).unwrap_or(u8::MAX));
        out.extend_from_slice(bytes);
    }
    out.push(0);
    out
}

/// A 32-byte word holding an address (its upper 12 bytes zero).
pub fn decode_address(data: &[u8]) -> Option<Address> {
    let word = data.get(..32)?;
    let (pad, address) = word.split_at(12);
    pad.iter().all(|b| *b == 0).then(|| Address::from_slice(address))
}

/// An ABI `string` answer: None when it does not decode or is empty; invalid UTF-8 is
/// replaced, control characters dropped and the text cut at [`MAX_NAME`] characters.
fn decode_name(data: &[u8]) -> Option<String> {
    decode_string(data, MAX_NAME)
}

/// An ABI `string` answer as text: None when it does not decode or is empty; invalid UTF-8
/// is replaced, control characters other than newlines and tabs dropped, the text cut at
/// `max` characters.
pub fn decode_string(data: &[u8], max: usize) -> Option<String> {
    let text = clean_text(&String::from_utf8_lossy(super::abi::dynamic_bytes(data)?), max);
    (!text.is_empty()).then_some(text)
}

/// A name in the normal form it is hashed in (ENSIP-15), or why it has none.
pub fn normalize(name: &str) -> Result<String, String> {
    let shown = clean_text(name, 60);
    if name.is_empty() {
        return Err("the name is empty; give a name such as `vitalik.eth`".into());
    }
    if name.chars().count() > MAX_NAME {
        return Err(format!("the name is longer than {MAX_NAME} characters"));
    }
    let normal = ens_normalize::ens_normalize(name)
        .map_err(|e| format!("`{shown}` is not a valid ENS name (ENSIP-15): {}", explain(e.message())))?;
    if normal.chars().count() > MAX_NAME {
        return Err(format!("the name is longer than {MAX_NAME} characters once normalised"));
    }
    Ok(normal)
}

/// ENSIP-15's reason, code points written `U+…` and its terms explained.
fn explain(reason: &str) -> String {
    let mut out = String::with_capacity(reason.len() + 40);
    // The normaliser marks quoted text left-to-right (U+200E) for display; a JSON message
    // is not displayed as is, and the mark is invisible noise there.
    let reason = reason.replace('\u{200e}', "");
    let mut rest = reason.as_str();
    // The normaliser writes code points as `{1F4A9}`.
    while let Some((before, after)) = rest.split_once('{') {
        out.push_str(before);
        let code_point = after
            .split_once('}')
            .filter(|(digits, _)| (2..=6).contains(&digits.len()) && digits.chars().all(|c| c.is_ascii_hexdigit()));
        match code_point {
            Some((digits, tail)) => {
                out.push_str("U+");
                out.push_str(digits);
                rest = tail;
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    if out.contains("illegal mixture") {
        out.push_str(" (mixed scripts)");
    } else if out.contains("whole-script confusable") {
        out.push_str(" (the label looks like one in another script: confusable)");
    } else if out.contains("empty label") {
        out.push_str(" (two dots in a row, or a dot at an end)");
    }
    out
}

/// The ENS namehash (EIP-137) of a normalised name; the root `""` hashes to zero.
pub fn namehash(name: &str) -> B256 {
    let mut node = B256::ZERO;
    if name.is_empty() {
        return node;
    }
    for label in name.rsplit('.') {
        node = keccak256([node.as_slice(), keccak256(label.as_bytes()).as_slice()].concat());
    }
    node
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::sol_types::SolValue;

    #[test]
    fn selectors_and_registry_match() {
        let selector = |sig: &str| <[u8; 4]>::try_from(&keccak256(sig)[..4]).unwrap();
        assert_eq!(abi::resolverCall::SELECTOR, selector("resolver(bytes32)"));
        assert_eq!(abi::addr_0Call::SELECTOR, selector("addr(bytes32)"));
        assert_eq!(abi::addr_1Call::SELECTOR, selector("addr(bytes32,uint256)"));
        assert_eq!(abi::nameCall::SELECTOR, selector("name(bytes32)"));
        assert_eq!(abi::textCall::SELECTOR, selector("text(bytes32,string)"));
        assert_eq!(abi::contenthashCall::SELECTOR, selector("contenthash(bytes32)"));
        assert_eq!(abi::resolveCall::SELECTOR, selector("resolve(bytes,bytes)"));
        assert_eq!(EXTENDED_RESOLVER, selector("resolve(bytes,bytes)"));
        assert_eq!(abi::supportsInterfaceCall::SELECTOR, [0x01, 0xff, 0xc9, 0xa7]);
        // EIP-3668's selector.
        assert_eq!(abi::OffchainLookup::SELECTOR, [0x55, 0x6f, 0x18, 0x30]);
        assert_eq!(ENS_REGISTRY, "0x00000000000C2E074eC69A0dFb2997BA6C7d2e1e".parse::<Address>().unwrap());
    }

    #[test]
    fn namehash_matches_known_vectors() {
        assert_eq!(namehash(""), B256::ZERO);
        assert_eq!(namehash("eth").to_string(), "0x93cdeb708b7545dc668eb9280176169d1c33cfd8ed6f04690a0bcc88a93fc4ae");
        assert_eq!(
            namehash("foo.eth").to_string(),
            "0xde9b09fd7c5f901e23a3f19fecc54828e9c848539801e86591bd9801b019f84f"
        );
        // EIP-181: the reverse namespace.
        assert_eq!(
            namehash("addr.reverse").to_string(),
            "0x91d1777781884d03a6757a803996e38de2a42967fb37eeaca72729271025a9e2"
        );
    }

    #[test]
    fn normalises_by_ensip15() {
        assert_eq!(normalize("Vitalik.ETH").as_deref(), Ok("vitalik.eth"));
        // e + combining acute and the precomposed é hash the same.
        assert_eq!(normalize("cafe\u{301}.eth"), normalize("caf\u{e9}.eth"));
        assert_eq!(normalize("CAF\u{c9}.eth").as_deref(), Ok("caf\u{e9}.eth"));
        assert_eq!(normalize("\u{1f600}.eth").as_deref(), Ok("\u{1f600}.eth"));
        // Emoji presentation selectors are dropped, full-width letters mapped.
        assert_eq!(normalize("\u{2764}\u{fe0f}.eth").as_deref(), Ok("\u{2764}.eth"));
        assert_eq!(
            normalize("\u{ff56}\u{ff49}\u{ff54}\u{ff41}\u{ff4c}\u{ff49}\u{ff4b}.eth").as_deref(),
            Ok("vitalik.eth")
        );
        // A leading underscore and a reverse name are fine.
        assert_eq!(normalize("_dmarc.eth").as_deref(), Ok("_dmarc.eth"));
        let reverse = format!("{}.addr.reverse", "ab".repeat(20));
        assert_eq!(normalize(&reverse).as_deref(), Ok(reverse.as_str()));
    }

    #[test]
    fn refuses_bad_names_saying_why() {
        for (bad, why) in [
            ("", "empty"),
            ("foo bar.eth", "disallowed character"),
            ("foo..eth", "empty label"),
            (".eth", "empty label"),
            ("foo.eth.", "empty label"),
            ("a/b.eth", "disallowed character: \"/\" U+2F"),
            ("a\\b.eth", "disallowed character"),
            ("a\u{0}b.eth", "disallowed character: U+00"),
            ("tab\t.eth", "disallowed character"),
            ("nb\u{a0}sp.eth", "disallowed character"),
            // Latin and Cyrillic in one label.
            ("p\u{430}ypal.eth", "mixed scripts"),
            // A whole Cyrillic label spelling a Latin word.
            ("\u{430}\u{440}\u{440}\u{4cf}\u{435}.eth", "confusable"),
            ("a_b.eth", "underscore"),
            ("ab--c.eth", "label extension"),
        ] {
            let error = normalize(bad).expect_err(bad);
            assert!(error.contains(why), "{bad:?}: {error}");
        }
        assert!(normalize(&"a".repeat(MAX_NAME + 1)).is_err());
        assert!(normalize(&"a".repeat(MAX_NAME)).is_ok());
    }

    #[test]
    fn explains_code_points() {
        assert_eq!(explain("disallowed character: \"!\" {21}"), "disallowed character: \"!\" U+21");
        assert_eq!(explain("x {1F4A9} {zz} {"), "x U+1F4A9 {zz} {");
        assert_eq!(explain("illegal mixture: Latin + Cyrillic"), "illegal mixture: Latin + Cyrillic (mixed scripts)");
    }

    #[test]
    fn dns_encodes_names() {
        assert_eq!(dns_encode("sub.wild.eth"), b"\x03sub\x04wild\x03eth\x00".to_vec());
        assert_eq!(dns_encode("eth"), b"\x03eth\x00".to_vec());
        let long = "\u{1f600}".repeat(100);
        let encoded = dns_encode(&format!("{long}.eth"));
        assert_eq!(encoded[0], 66);
        assert_eq!(&encoded[1..67], format!("[{}]", hex::encode(keccak256(long.as_bytes()))).as_bytes());
        assert_eq!(&encoded[67..], b"\x03eth\x00");
    }

    #[test]
    fn gateway_answers_are_checked() {
        assert_eq!(decode_gateway_answer(br#"{"data":"0x0102"}"#), Some(Bytes::from(vec![1, 2])));
        assert_eq!(decode_gateway_answer(br#"{"data":"0x"}"#), Some(Bytes::new()));
        for garbage in [&b"not json"[..], br#"{"data":"0102"}"#, br#"{"data":"0xzz"}"#, br#"{"data":1}"#, b"{}", b""] {
            assert_eq!(decode_gateway_answer(garbage), None, "{}", String::from_utf8_lossy(garbage));
        }
        assert_eq!(gateway_host("https://gw.example/{sender}/{data}.json?key=secret"), "gw.example");
        assert_eq!(gateway_host("not a url"), "(unparsable URL)");
    }

    #[test]
    fn decodes_addresses_and_refuses_dirty_words() {
        let a: Address = "0x00000000000000000000000000000000000b0b00".parse().unwrap();
        assert_eq!(decode_address(&a.abi_encode()), Some(a));
        assert_eq!(decode_address(&[0u8; 31]), None);
        assert_eq!(decode_address(&[0xffu8; 32]), None);
        assert_eq!(decode_address(&[]), None);
    }

    #[test]
    fn hostile_names_are_capped_cleaned_or_refused() {
        assert_eq!(decode_name(&"vitalik.eth".to_string().abi_encode()).as_deref(), Some("vitalik.eth"));
        assert_eq!(decode_name(&String::new().abi_encode()), None);
        assert_eq!(decode_name(&"x".repeat(10_000).abi_encode()).unwrap().chars().count(), MAX_NAME);
        let bad_utf8 = Bytes::from(vec![0x41, 0xff, 0x42, 0x07]).abi_encode();
        assert_eq!(decode_name(&bad_utf8).as_deref(), Some("A\u{fffd}B"));
        let mut lying = "abc".to_string().abi_encode();
        lying[63] = 0xff;
        assert_eq!(decode_name(&lying), None);
        let mut huge = "abc".to_string().abi_encode();
        huge[32] = 0xff;
        assert_eq!(decode_name(&huge), None);
        assert_eq!(decode_name(&[0u8; 32]), None);
        assert_eq!(decode_name(&[1, 2, 3]), None);
    }
}
