//! `POST /v1/chain/ens/records`: what an ENS name publishes beside its address: text
//! records (ENSIP-5), the avatar (ENSIP-12), the content hash (ENSIP-7) and addresses on
//! other chains (ENSIP-9, ENSIP-11), on the Ethereum main network.
//!
//! The name is normalised by ENSIP-15 as in `/v1/chain/ens`; its resolver is found the same
//! way (ENSIP-10 wildcards, CCIP-read gateways: `evm/ens.rs`), then every record is asked
//! in one JSON-RPC batch: three requests for a name served on chain (registry, resolver
//! interface, records), plus one gateway fetch and callback per record served offchain.
//!
//! Everything in the answer but the name is untrusted data set by the name's owner: text is
//! cleaned of control characters and cut at [`MAX_TEXT`] characters; addresses are written
//! in their chain's own form only when the bytes are a valid address of that kind, else
//! as hex with `format: "hex"`. The avatar is parsed, never fetched.

use std::collections::BTreeMap;

use alloy::primitives::{Address, U256};
use alloy::sol_types::SolCall;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::evm::ens::{self, Resolver, abi, decode_address, decode_string, namehash, normalize};
use crate::evm::{EvmChain, address_text, clean_text};
use crate::output::Reply;
use crate::price::Price;

/// Most text keys one call may ask for.
pub const MAX_TEXTS: usize = 32;
/// Most coins one call may ask for.
pub const MAX_COINS: usize = 16;
/// Longest text key accepted, in characters.
pub const MAX_KEY: usize = 128;
/// Longest text value returned, in characters; a longer one is cut.
pub const MAX_TEXT: usize = 4_096;
/// Largest address or content hash read, in bytes.
const MAX_RECORD_BYTES: usize = 1_024;

/// The text keys read when the caller names none (ENSIP-5's global keys and the common
/// service keys). `avatar` is read in every call.
pub const DEFAULT_TEXTS: &[&str] = &[
    "avatar",
    "description",
    "display",
    "email",
    "url",
    "location",
    "notice",
    "keywords",
    "header",
    "com.twitter",
    "com.github",
    "com.discord",
    "org.telegram",
];

/// ENSIP-11: an EVM chain's coin type is this bit with the chain id below it; the bit alone
/// is the default address for every EVM chain (ENSIP-19).
const EVM_BIT: u64 = 0x8000_0000;

/// The coins known by name: (name, coin type).
pub const COINS: &[(&str, u64)] = &[
    ("eth", 60),
    ("btc", 0),
    ("ltc", 2),
    ("doge", 3),
    ("sol", 501),
    ("optimism", EVM_BIT | 10),
    ("polygon", EVM_BIT | 137),
    ("base", EVM_BIT | 8453),
    ("arbitrum", EVM_BIT | 42_161),
];

/// The coins read when the caller names none.
const DEFAULT_COINS: &[&str] = &["eth", "btc", "sol", "base", "optimism", "arbitrum", "polygon"];

/// Request of `/v1/chain/ens/records`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnsRecordsInput {
    /// ENS name (`vitalik.eth`, at most 255 characters), normalised by ENSIP-15 before it is read.
    #[schemars(length(min = 1, max = ens::MAX_NAME), regex(pattern = ens::NAME_PATTERN), extend("format" = "ens-name"))]
    pub name: String,
    /// Text record keys to read (1 to 32, each at most 128 characters), such as `url`, `com.github`. Defaults to avatar, description, display, email, url, location, notice, keywords, header, com.twitter, com.github, com.discord, org.telegram; `avatar` is always read.
    #[serde(default)]
    #[schemars(length(min = 1, max = MAX_TEXTS), inner(regex(pattern = KEY_PATTERN), length(min = 1, max = MAX_KEY)))]
    pub texts: Option<Vec<String>>,
    /// Coins whose addresses to read (1 to 16): `eth`, `btc`, `ltc`, `doge`, `sol`, `base`, `optimism`, `arbitrum`, `polygon`, or a coin type in decimal (SLIP-44, or ENSIP-11's 2147483648 + chain id for an EVM chain). Defaults to eth, btc, sol, base, optimism, arbitrum, polygon.
    #[serde(default)]
    #[schemars(length(min = 1, max = MAX_COINS), inner(regex(pattern = coin_pattern())))]
    pub coins: Option<Vec<String>>,
}

/// An address on one coin's chain.
#[derive(Debug, Serialize, JsonSchema, PartialEq, Eq)]
pub struct CoinAddress {
    /// The coin's name (`btc`, `base`…), or its coin type in decimal when it has none here.
    pub coin: String,
    /// Its coin type (SLIP-44, or 2147483648 + chain id for an EVM chain).
    pub coin_type: u64,
    /// The address in the chain's own form (lower-case hex for EVM chains, base58 or bech32 for Bitcoin-family chains, base58 for Solana), or 0x hex when the bytes are not a valid address of that kind or the coin is unknown here.
    pub address: String,
    /// `evm`, `bitcoin` (base58 or bech32), `base58` or `hex`.
    pub format: String,
    /// For an EVM chain without an address of its own: the name's default EVM address (ENSIP-19, coin type 2147483648) was used.
    pub from_default: bool,
}

/// An NFT used as the avatar (ENSIP-12).
#[derive(Debug, Serialize, JsonSchema, PartialEq, Eq)]
pub struct AvatarNft {
    /// The chain id of the NFT.
    pub chain_id: u64,
    /// `erc721` or `erc1155`.
    pub standard: String,
    /// The NFT contract, lower-case.
    pub contract: String,
    /// The token id, decimal.
    pub token_id: String,
}

/// The avatar record, parsed (never fetched).
#[derive(Debug, Serialize, JsonSchema, PartialEq, Eq)]
pub struct Avatar {
    /// The record as set, untrusted text.
    pub uri: String,
    /// `https`, `http`, `ipfs`, `ipns`, `arweave`, `data`, `nft` or `other`.
    pub kind: String,
    /// The NFT, when the avatar names one (`eip155:1/erc721:0x…/1`). Whether the name's owner holds it is not checked.
    pub nft: Option<AvatarNft>,
}

/// The content hash (ENSIP-7): what the name serves as a website.
#[derive(Debug, Serialize, JsonSchema, PartialEq, Eq)]
pub struct ContentHash {
    /// `ipfs`, `ipns`, `swarm`, `onion`, `onion3`, `skynet`, `arweave` or `unknown`.
    pub protocol: String,
    /// The content as a URI (`ipfs://Qm…`, `ipns://k…`, `bzz://…`, `onion3://…`, `ar://…`); null when the protocol is unknown or the hash does not decode.
    pub uri: Option<String>,
    /// The record's bytes, 0x hex.
    pub raw: String,
}

/// Answer of `/v1/chain/ens/records`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EnsRecordsOutput {
    /// The name, normalised.
    pub name: String,
    /// The resolver that answered, lower-case; null when the name has none that can answer.
    pub resolver: Option<String>,
    /// The resolver is a parent name's, answering for its subnames (ENSIP-10 wildcard).
    pub wildcard: bool,
    /// The ETH address (`addr`), lower-case; null when none is set.
    pub address: Option<String>,
    /// Addresses set for the coins asked (ETH included), in the order asked; coins without one are left out.
    pub addresses: Vec<CoinAddress>,
    /// Text records that are set, by key, in the order asked; untrusted text, at most 4,096 characters each.
    pub texts: BTreeMap<String, String>,
    /// The avatar record, parsed; null when none is set.
    pub avatar: Option<Avatar>,
    /// The content hash; null when none is set.
    pub contenthash: Option<ContentHash>,
}

/// A checked request.
pub struct EnsRecordsRequest {
    chain: std::sync::Arc<EvmChain>,
    name: String,
    texts: Vec<String>,
    coins: Vec<(String, u64)>,
}

/// The route.
pub struct EnsRecordsRoute;

impl Route for EnsRecordsRoute {
    type Input = EnsRecordsInput;
    type Prepared = EnsRecordsRequest;
    type Output = EnsRecordsOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/ens/records",
        operation: "get_ens_records",
        family: Family::Chain,
        summary: "An ENS name's text records, avatar, content hash and addresses on other chains",
        description: "Reads what an ENS name publishes on the Ethereum main network: text records (the common ones, \
            or the keys given), the avatar (parsed: a URL, IPFS, data or an NFT, never fetched), the content hash \
            as an ipfs://, ipns://, bzz:// or onion URI, and addresses on other chains (BTC, LTC, DOGE in base58 or \
            bech32, SOL, and EVM chains by ENSIP-11 with the default EVM address as fallback). The name is \
            normalised by ENSIP-15; wildcard resolvers (ENSIP-10) and offchain gateways (CCIP-read, public \
            addresses only) are followed. Every record is untrusted text set by the name's owner.",
        base_price: Price::micros(2_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: EnsRecordsInput, ctx: &Context) -> Result<EnsRecordsRequest, EngineError> {
        let name = normalize(&input.name).map_err(|why| EngineError::invalid("/name", why))?;
        let texts = texts(input.texts)?;
        let coins = coins(input.coins)?;
        Ok(EnsRecordsRequest { chain: ens::chain(ctx)?, name, texts, coins })
    }

    fn quote(_: &EnsRecordsRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: EnsRecordsRequest, ctx: &Context) -> Result<Reply<EnsRecordsOutput>, EngineError> {
        let chain = request.chain.clone();
        let output = chain
            .deadline(async {
                let Some(resolver) = ens::resolver(&chain, &request.name).await? else {
                    return Ok(EnsRecordsOutput {
                        name: request.name,
                        resolver: None,
                        wildcard: false,
                        address: None,
                        addresses: Vec::new(),
                        texts: BTreeMap::new(),
                        avatar: None,
                        contenthash: None,
                    });
                };
                read(&chain, ctx, request, resolver).await
            })
            .await?;
        Ok(Reply::Json(output))
    }
}

/// The text keys asked: the caller's (deduplicated, `avatar` added) or the defaults.
fn texts(asked: Option<Vec<String>>) -> Result<Vec<String>, EngineError> {
    let Some(asked) = asked else { return Ok(DEFAULT_TEXTS.iter().map(|k| (*k).to_string()).collect()) };
    if asked.is_empty() || asked.len() > MAX_TEXTS {
        return Err(EngineError::invalid(
            "/texts",
            format!("/texts: list 1 to {MAX_TEXTS} text keys, or leave it out for the common ones"),
        ));
    }
    let mut keys = vec!["avatar".to_string()];
    for (i, key) in asked.into_iter().enumerate() {
        let field = format!("/texts/{i}");
        if key.is_empty() || key.chars().count() > MAX_KEY || key.chars().any(char::is_control) {
            return Err(EngineError::invalid(
                &field,
                format!("{field}: a text key is 1 to {MAX_KEY} characters without control characters, such as `url`"),
            ));
        }
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    Ok(keys)
}

/// A text key: no control characters (Unicode's Cc, what `char::is_control` refuses).
const KEY_PATTERN: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F]*$";

/// What [`coin_type`] reads, as a JSON Schema pattern: a name of [`COINS`] in any case, or
/// a decimal coin type below 2^32, with blanks around either.
fn coin_pattern() -> String {
    let names: Vec<String> = COINS
        .iter()
        .map(|(name, _)| {
            name.chars().map(|c| format!("[{}{}]", c.to_ascii_uppercase(), c.to_ascii_lowercase())).collect()
        })
        .collect();
    let below_2_32 = crate::patterns::decimal_below("4294967296");
    let blank = crate::patterns::white_space!();
    format!("^[{blank}]*(?:{}|{below_2_32})[{blank}]*$", names.join("|"))
}

/// The coins asked, as (name, coin type), deduplicated by coin type.
fn coins(asked: Option<Vec<String>>) -> Result<Vec<(String, u64)>, EngineError> {
    let asked = match asked {
        None => DEFAULT_COINS.iter().map(|c| (*c).to_string()).collect(),
        Some(list) if list.is_empty() || list.len() > MAX_COINS => {
            return Err(EngineError::invalid(
                "/coins",
                format!("/coins: list 1 to {MAX_COINS} coins, or leave it out for the common ones"),
            ));
        }
        Some(list) => list,
    };
    let mut out: Vec<(String, u64)> = Vec::new();
    for (i, text) in asked.iter().enumerate() {
        let coin_type = coin_type(text).ok_or_else(|| {
            let field = format!("/coins/{i}");
            EngineError::invalid(
                &field,
                format!(
                    "{field}: `{}` is not a coin: write one of {}, or a coin type in decimal below 2^32",
                    clean_text(text, 40),
                    COINS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                ),
            )
        })?;
        if !out.iter().any(|(_, t)| *t == coin_type) {
            out.push((coin_name(coin_type), coin_type));
        }
    }
    Ok(out)
}

/// A coin's type from its name or decimal number.
fn coin_type(text: &str) -> Option<u64> {
    let lower = text.trim().to_ascii_lowercase();
    if let Some((_, t)) = COINS.iter().find(|(n, _)| *n == lower) {
        return Some(*t);
    }
    if lower.is_empty() || lower.len() > 10 || !lower.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    lower.parse::<u64>().ok().filter(|t| *t <= u64::from(u32::MAX))
}

/// A coin type's name here, or its decimal number.
fn coin_name(coin_type: u64) -> String {
    COINS.iter().find(|(_, t)| *t == coin_type).map_or_else(|| coin_type.to_string(), |(n, _)| (*n).to_string())
}

/// Every record of the request, asked of `resolver` in one batch.
async fn read(
    chain: &EvmChain,
    ctx: &Context,
    request: EnsRecordsRequest,
    resolver: Resolver,
) -> Result<EnsRecordsOutput, EngineError> {
    let EnsRecordsRequest { name, texts, coins, .. } = request;
    let node = namehash(&name);
    let other_coins: Vec<&(String, u64)> = coins.iter().filter(|(_, t)| *t != 60).collect();
    let wants_evm = other_coins.iter().any(|(_, t)| evm_chain(*t).is_some());
    let mut calls = vec![abi::addr_0Call { node }.abi_encode()];
    calls.extend(other_coins.iter().map(|(_, t)| abi::addr_1Call { node, coinType: U256::from(*t) }.abi_encode()));
    calls.extend(texts.iter().map(|key| abi::textCall { node, key: key.clone() }.abi_encode()));
    calls.push(abi::contenthashCall { node }.abi_encode());
    if wants_evm {
        calls.push(abi::addr_1Call { node, coinType: U256::from(EVM_BIT) }.abi_encode());
    }
    let mut answers = ens::records(chain, &ctx.fetcher, &name, &resolver, calls).await?.into_iter();
    let mut next = || answers.next().flatten().map(|bytes| bytes.to_vec());

    let eth = next().as_deref().and_then(decode_address).filter(|a| !a.is_zero());
    let coin_bytes: Vec<Option<Vec<u8>>> =
        other_coins.iter().map(|_| next().as_deref().and_then(record_bytes)).collect();
    let text_answers: Vec<Option<String>> =
        texts.iter().map(|_| next().and_then(|d| decode_string(&d, MAX_TEXT))).collect();
    let contenthash = next().as_deref().and_then(record_bytes).map(|raw| content_hash(&raw));
    let default_evm =
        if wants_evm { next().as_deref().and_then(record_bytes).and_then(|b| evm_address(&b)) } else { None };

    let mut addresses = Vec::new();
    let mut other = other_coins.iter().zip(coin_bytes);
    for (coin, coin_type) in &coins {
        if *coin_type == 60 {
            if let Some(eth) = eth {
                addresses.push(CoinAddress {
                    coin: coin.clone(),
                    coin_type: 60,
                    address: address_text(&eth),
                    format: "evm".into(),
                    from_default: false,
                });
            }
            continue;
        }
        let Some((_, bytes)) = other.next() else { continue };
        match bytes {
            Some(bytes) => addresses.push(coin_address(coin, *coin_type, &bytes)),
            None => {
                if let (Some(_), Some(default)) = (evm_chain(*coin_type), default_evm) {
                    addresses.push(CoinAddress {
                        coin: coin.clone(),
                        coin_type: *coin_type,
                        address: address_text(&default),
                        format: "evm".into(),
                        from_default: true,
                    });
                }
            }
        }
    }
    let mut text_map = BTreeMap::new();
    let mut avatar = None;
    for (key, value) in texts.into_iter().zip(text_answers) {
        let Some(value) = value else { continue };
        if key == "avatar" {
            avatar = Some(parse_avatar(&value));
        }
        text_map.insert(key, value);
    }
    Ok(EnsRecordsOutput {
        name,
        resolver: Some(address_text(&resolver.address)),
        wildcard: !resolver.exact,
        address: eth.as_ref().map(address_text),
        addresses,
        texts: text_map,
        avatar,
        contenthash,
    })
}

/// A `bytes` record's content: None when it does not decode, is empty or too large.
fn record_bytes(data: &[u8]) -> Option<Vec<u8>> {
    crate::evm::abi::dynamic_bytes(data).filter(|b| !b.is_empty() && b.len() <= MAX_RECORD_BYTES).map(<[u8]>::to_vec)
}

/// The chain id of an ENSIP-11 coin type.
fn evm_chain(coin_type: u64) -> Option<u64> {
    (coin_type > EVM_BIT && coin_type <= u64::from(u32::MAX)).then_some(coin_type & !EVM_BIT)
}

/// 20 bytes as an EVM address.
fn evm_address(bytes: &[u8]) -> Option<Address> {
    (bytes.len() == 20).then(|| Address::from_slice(bytes))
}

/// An address record in its coin's text form (ENSIP-9), or hex.
pub fn coin_address(coin: &str, coin_type: u64, bytes: &[u8]) -> CoinAddress {
    let (address, format) = match coin_type {
        0 => bitcoin_family(bytes, 0x00, 0x05, Some("bc")).map(|a| (a, "bitcoin")),
        2 => bitcoin_family(bytes, 0x30, 0x32, Some("ltc")).map(|a| (a, "bitcoin")),
        3 => bitcoin_family(bytes, 0x1e, 0x16, None).map(|a| (a, "bitcoin")),
        501 => (bytes.len() == 32).then(|| (bs58::encode(bytes).into_string(), "base58")),
        t if t == 60 || t == EVM_BIT || evm_chain(t).is_some() => evm_address(bytes).map(|a| (address_text(&a), "evm")),
        _ => None,
    }
    .unwrap_or_else(|| (format!("0x{}", hex::encode(bytes)), "hex"));
    CoinAddress { coin: coin.to_string(), coin_type, address, format: format.to_string(), from_default: false }
}

/// A Bitcoin-family output script (ENSIP-9 stores the scriptPubkey) as an address: P2PKH
/// and P2SH in base58check with the chain's version bytes, segwit programs in bech32
/// (version 0) or bech32m (later versions) with the chain's prefix.
fn bitcoin_family(script: &[u8], p2pkh: u8, p2sh: u8, hrp: Option<&str>) -> Option<String> {
    match script {
        [0x76, 0xa9, 0x14, hash @ .., 0x88, 0xac] if hash.len() == 20 => Some(base58check(p2pkh, hash)),
        [0xa9, 0x14, hash @ .., 0x87] if hash.len() == 20 => Some(base58check(p2sh, hash)),
        [op, len, program @ ..] if (*op == 0 || (0x51..=0x60).contains(op)) && usize::from(*len) == program.len() => {
            let version = if *op == 0 { 0 } else { op - 0x50 };
            let valid = (2..=40).contains(&program.len()) && (version != 0 || matches!(program.len(), 20 | 32));
            let hrp = bech32::Hrp::parse(hrp?).ok()?;
            let version = bech32::Fe32::try_from(version).ok()?;
            valid.then(|| bech32::segwit::encode(hrp, version, program).ok()).flatten()
        }
        _ => None,
    }
}

/// Base58check: version byte, payload, the first four bytes of the double SHA-256.
fn base58check(version: u8, payload: &[u8]) -> String {
    let mut data = Vec::with_capacity(payload.len() + 5);
    data.push(version);
    data.extend_from_slice(payload);
    let check = Sha256::digest(Sha256::digest(&data));
    data.extend_from_slice(&check[..4]);
    bs58::encode(data).into_string()
}

/// An avatar record parsed by ENSIP-12's forms.
pub fn parse_avatar(uri: &str) -> Avatar {
    let lower = uri.to_ascii_lowercase();
    let nft = avatar_nft(uri);
    let kind = if nft.is_some() {
        "nft"
    } else if lower.starts_with("https://") {
        "https"
    } else if lower.starts_with("http://") {
        "http"
    } else if lower.starts_with("ipfs://") || lower.starts_with("ipfs/") {
        "ipfs"
    } else if lower.starts_with("ipns://") {
        "ipns"
    } else if lower.starts_with("ar://") {
        "arweave"
    } else if lower.starts_with("data:") {
        "data"
    } else {
        "other"
    };
    Avatar { uri: uri.to_string(), kind: kind.to_string(), nft }
}

/// `eip155:<chain id>/<erc721|erc1155>:<contract>/<token id>` (CAIP-22, CAIP-29).
fn avatar_nft(uri: &str) -> Option<AvatarNft> {
    let rest = uri.strip_prefix("eip155:")?;
    let (chain_id, rest) = rest.split_once('/')?;
    let (standard, rest) = rest.split_once(':')?;
    let (contract, token_id) = rest.split_once('/')?;
    let standard = standard.to_ascii_lowercase();
    if !matches!(standard.as_str(), "erc721" | "erc1155") {
        return None;
    }
    let chain_id = chain_id.parse::<u64>().ok()?;
    let contract: Address = contract.parse().ok()?;
    let token_id = U256::from_str_radix(token_id, 10).ok()?;
    Some(AvatarNft { chain_id, standard, contract: address_text(&contract), token_id: token_id.to_string() })
}

/// The multicodec namespaces of ENSIP-7 and their URI schemes.
const NAMESPACES: &[(u64, &str)] = &[
    (0xe3, "ipfs"),
    (0xe5, "ipns"),
    (0xe4, "swarm"),
    (0x01bc, "onion"),
    (0x01bd, "onion3"),
    (0xb1_9910, "skynet"),
    (0xb2_9910, "arweave"),
];

/// A content hash record decoded (ENSIP-7).
pub fn content_hash(raw: &[u8]) -> ContentHash {
    let unknown = || ContentHash { protocol: "unknown".into(), uri: None, raw: format!("0x{}", hex::encode(raw)) };
    let Some((codec, rest)) = varint(raw) else { return unknown() };
    let Some((_, protocol)) = NAMESPACES.iter().find(|(c, _)| *c == codec) else { return unknown() };
    let uri = match *protocol {
        "ipfs" | "ipns" => cid_text(rest).map(|cid| format!("{protocol}://{cid}")),
        "swarm" => swarm_hash(rest).map(|hash| format!("bzz://{}", hex::encode(hash))),
        "onion" | "onion3" => {
            let want = if *protocol == "onion" { 16 } else { 56 };
            (rest.len() == want && rest.iter().all(|b| b.is_ascii_alphanumeric()))
                .then(|| format!("{protocol}://{}", String::from_utf8_lossy(rest)))
        }
        "skynet" => (!rest.is_empty()).then(|| format!("sia://{}", base64_url(rest))),
        _ => (!rest.is_empty()).then(|| format!("ar://{}", base64_url(rest))),
    };
    ContentHash { protocol: (*protocol).to_string(), uri, raw: format!("0x{}", hex::encode(raw)) }
}

/// An unsigned LEB128 varint (multiformats) and what follows it.
fn varint(data: &[u8]) -> Option<(u64, &[u8])> {
    let mut value = 0u64;
    for (i, byte) in data.iter().enumerate().take(9) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, &data[i + 1..]));
        }
    }
    None
}

/// A CID's text: CIDv0 (`Qm…`, base58) for a dag-pb SHA-256 CID, as ENS apps show IPFS
/// sites; a CID whose multihash is the identity holding a DNS name (old IPNS records such
/// as `ipns://app.uniswap.org`) as that name; any other CIDv1 in base32 (`b…`).
fn cid_text(cid: &[u8]) -> Option<String> {
    let (version, rest) = varint(cid)?;
    if version != 1 {
        return None;
    }
    let (codec, multihash) = varint(rest)?;
    let (hash_fn, digest) = varint(multihash)?;
    let (length, digest) = varint(digest)?;
    if usize::try_from(length).ok()? != digest.len() {
        return None;
    }
    if codec == 0x70 && hash_fn == 0x12 && digest.len() == 32 {
        return Some(bs58::encode(multihash).into_string());
    }
    if hash_fn == 0 && !digest.is_empty() && digest.iter().all(|b| b.is_ascii_alphanumeric() || b"-.".contains(b)) {
        return Some(String::from_utf8_lossy(digest).to_ascii_lowercase());
    }
    Some(format!("b{}", data_encoding::BASE32_NOPAD.encode(cid).to_ascii_lowercase()))
}

/// A Swarm content hash: CIDv1, swarm-manifest codec (0xfa), keccak-256 (0x1b), 32 bytes.
fn swarm_hash(cid: &[u8]) -> Option<&[u8]> {
    let (1, rest) = varint(cid)? else { return None };
    let (0xfa, rest) = varint(rest)? else { return None };
    let (0x1b, rest) = varint(rest)? else { return None };
    let (32, digest) = varint(rest)? else { return None };
    (digest.len() == 32).then_some(digest)
}

/// Base64url without padding (Arweave and Skynet identifiers).
fn base64_url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_patterns_take_exactly_what_the_checks_take() {
        let coins = crate::patterns::validator(&coin_pattern());
        let numbers =
            ["0", "60", "007", "999999999", "0123456789", "2147483785", "4294967295", "4294967296", "9999999999"];
        let others = ["12345678901", "-1", "+1", "1.0", "", "ETH", "Base", "eth2", "bitcoin", "é", "0x3c"];
        for text in numbers.iter().chain(&others).chain(&COINS.iter().map(|(n, _)| *n).collect::<Vec<_>>()) {
            for padded in [text.to_string(), format!(" {text}\t"), format!("\u{3000}{text}"), format!("{text}\u{1}")] {
                assert_eq!(coins.is_valid(&serde_json::json!(padded)), coin_type(&padded).is_some(), "{padded:?}");
            }
        }
        let keys = crate::patterns::validator(KEY_PATTERN);
        for code in 0..0x200 {
            let key = format!("a{}", char::from_u32(code).unwrap());
            assert_eq!(keys.is_valid(&serde_json::json!(key)), texts(Some(vec![key.clone()])).is_ok(), "{key:?}");
        }
    }

    #[test]
    fn coins_by_name_and_number() {
        assert_eq!(coin_type("BTC"), Some(0));
        assert_eq!(coin_type("base"), Some(2_147_492_101));
        assert_eq!(coin_type("2147492101"), Some(2_147_492_101));
        assert_eq!(coin_type("60"), Some(60));
        for bad in ["", "bitcoin", "-1", "4294967296", "0x3c", "1.5", "99999999999"] {
            assert_eq!(coin_type(bad), None, "{bad}");
        }
        assert_eq!(evm_chain(2_147_483_658), Some(10));
        assert_eq!(evm_chain(EVM_BIT), None);
        assert_eq!(evm_chain(60), None);
    }

    #[test]
    fn varints_read_multicodecs() {
        assert_eq!(varint(&[0xe3, 0x01, 0xff]), Some((0xe3, &[0xff][..])));
        assert_eq!(varint(&[0xbd, 0x03]), Some((0x01bd, &[][..])));
        assert_eq!(varint(&[0x90, 0xb2, 0xca, 0x05]).map(|(v, _)| v), Some(0xb2_9910));
        assert_eq!(varint(&[0x80]), None);
        assert_eq!(varint(&[]), None);
    }

    #[test]
    fn avatars_are_parsed_not_trusted() {
        let nft = parse_avatar("eip155:1/erc721:0xBC4CA0EdA7647A8aB7C2061c2E118A18a936f13D/1000");
        assert_eq!(nft.kind, "nft");
        assert_eq!(
            nft.nft,
            Some(AvatarNft {
                chain_id: 1,
                standard: "erc721".into(),
                contract: "0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d".into(),
                token_id: "1000".into()
            })
        );
        assert_eq!(parse_avatar("eip155:1/erc1155:0x495f947276749ce646f68ac8c248420045cb7b5e/8112316025873927737505937898915153732580103913704334048512380490797008551937").kind, "nft");
        for (uri, kind) in [
            ("https://example.org/a.png", "https"),
            ("HTTP://example.org/a.png", "http"),
            ("ipfs://QmRAQB6YaCyidP37UdDnjFY5vQuiBrcqdyoW1CuDgwxkD4", "ipfs"),
            ("ar://abc", "arweave"),
            ("data:image/svg+xml;base64,PHN2Zz4=", "data"),
            ("eip155:1/erc20:0xBC4CA0EdA7647A8aB7C2061c2E118A18a936f13D/1", "other"),
            ("eip155:1/erc721:0xnothex/1", "other"),
            ("eip155:x/erc721:0xBC4CA0EdA7647A8aB7C2061c2E118A18a936f13D/1", "other"),
            ("javascript:alert(1)", "other"),
        ] {
            assert_eq!(parse_avatar(uri).kind, kind, "{uri}");
        }
    }
}
