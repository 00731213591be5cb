//! The EVM support code the chain routes share; no route lives here.
//!
//! This module itself is the EVM chains: which ones the product reads, their RPC
//! endpoints, and the one way every chain route reaches them. Its submodules read what
//! several routes read (a token's ERC-20 views, the latest block's header, node JSON
//! members, logs), name blocks, call contracts (a revert told apart from a failure), scan
//! bytecode, hold the one ABI layer (clean decoding, JSON arguments, revert reasons) with
//! the bundled function, error and event signatures, and simulate a trade.
//!
//! Requests go through alloy's [`RpcClient`] over [`FallbackTransport`], our own HTTP
//! transport: it tries the configured URLs in order, checks once per URL that the node
//! serves the configured chain id, and turns every network failure into an
//! [`UpstreamFailure`] that already carries the [`ErrorKind`] a front door needs (timeout,
//! rate limit with its Retry-After, bad answer, unreachable). Routes then map any alloy
//! error with [`EvmChain::error`].
//!
//! The chains are the known ones of [`KNOWN_CHAINS`] and those added by `PAPERCHAIN_CHAINS`
//! (`name=chain_id`, comma-separated, each with its URLs in its own `PAPERCHAIN_RPC_<NAME>`);
//! published schemas list them through [`PublishedChains`].
//!
//! Addresses in answers are lower-case hex (`0xabc…`), as the spec's shapes show them.

pub mod abi;
pub mod block_header;
pub mod block_ref;
pub mod bytecode;
pub mod call;
pub mod ens;
pub mod erc20;
pub mod events;
pub mod logs;
pub mod node_json;
pub mod signatures;
pub mod trade_sim;

use std::borrow::Cow;
use std::sync::Arc;
use std::task;
use std::time::Duration;

use alloy::primitives::{Address, U256};
use alloy::providers::RootProvider;
use alloy::rpc::client::RpcClient;
use alloy::rpc::json_rpc::{RequestPacket, ResponsePacket};
use alloy::transports::{RpcError, TransportError, TransportErrorKind, TransportFut};
use schemars::JsonSchema;
use serde::Deserialize;
use url::Url;

use crate::error::{EngineError, ErrorKind};
use crate::http_client::LazyClient;
use crate::rpc_http::{
    DEFAULT_RETRY_AFTER, Endpoint, env_value, first_answer, is_rate_limit, parse_url_list, post, preview, urls_from,
    within,
};
pub use crate::rpc_http::{UpstreamFailure, bad_upstream, clean_text, rpc_env_var};

/// The EVM chains Paperchain knows, with their chain ids and default public RPC URLs
/// (`../shared/spec/routebook.md` §2; `polygon` is the spec's `chain3`).
pub const KNOWN_CHAINS: &[(&str, u64, &[&str])] = &[
    (
        "ethereum",
        1,
        &[
            "https://ethereum-rpc.publicnode.com",
            "https://eth.drpc.org",
            "https://1rpc.io/eth",
            "https://eth.llamarpc.com",
        ],
    ),
    (
        "base",
        8453,
        &[
            "https://mainnet.base.org",
            "https://base-rpc.publicnode.com",
            "https://base.drpc.org",
            "https://1rpc.io/base",
        ],
    ),
    (
        "polygon",
        137,
        &[
            "https://polygon-bor-rpc.publicnode.com",
            "https://polygon-rpc.com",
            "https://polygon.drpc.org",
            "https://1rpc.io/matic",
        ],
    ),
];

/// The whole budget of one call's chain reads, across every URL tried.
pub const DEFAULT_TOTAL_TIMEOUT: Duration = Duration::from_secs(10);
/// The most one URL gets before the next is tried.
pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(4);

/// One chain's configuration.
#[derive(Clone, Debug)]
pub struct ChainConfig {
    /// The name users give in `chain` (`ethereum`).
    pub name: String,
    /// The EIP-155 chain id the nodes must serve.
    pub chain_id: u64,
    /// RPC endpoints, tried in order.
    pub rpc_urls: Vec<Url>,
}

impl ChainConfig {
    /// A chain from its name, id and URLs.
    pub fn new(name: impl Into<String>, chain_id: u64, rpc_urls: Vec<Url>) -> ChainConfig {
        ChainConfig { name: name.into(), chain_id, rpc_urls }
    }
}

/// How long chain reads may take.
#[derive(Clone, Copy, Debug)]
pub struct ChainTimeouts {
    /// Everything one call reads from the chain.
    pub total: Duration,
    /// One URL, before the next is tried.
    pub attempt: Duration,
}

impl Default for ChainTimeouts {
    fn default() -> Self {
        ChainTimeouts { total: DEFAULT_TOTAL_TIMEOUT, attempt: DEFAULT_ATTEMPT_TIMEOUT }
    }
}

/// The variable that adds EVM chains to the known ones: `arbitrum=42161,optimism=10`.
pub const CHAINS_ENV_VAR: &str = "PAPERCHAIN_CHAINS";

/// Names an added chain cannot take: `solana` is not EVM, and `PAPERCHAIN_RPC_SOLANA`
/// already configures the Solana routes.
const RESERVED_NAMES: &[&str] = &["solana"];

/// A configuration error found at start-up: the variable at fault and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{variable}: {message}")]
pub struct ConfigError {
    /// The environment variable at fault (`PAPERCHAIN_CHAINS`, `PAPERCHAIN_RPC_ARBITRUM`).
    pub variable: String,
    /// What is wrong, quoting the entry.
    pub message: String,
}

impl ConfigError {
    fn new(variable: &str, message: impl Into<String>) -> ConfigError {
        ConfigError { variable: variable.to_string(), message: message.into() }
    }
}

/// The configured EVM chains, shared by every chain route (in [`crate::Context`]).
pub struct Chains {
    chains: Vec<Arc<EvmChain>>,
}

impl Chains {
    /// The configuration in the environment, as [`Chains::try_from_env`] reads it; when that
    /// is an error, it is logged and only the known chains are served (servers call
    /// `try_from_env` first and refuse to start instead).
    pub fn from_env() -> Chains {
        Chains::from_vars(env_value)
    }

    fn from_vars(lookup: impl Fn(&str) -> Option<String>) -> Chains {
        Chains::try_from_vars(&lookup).unwrap_or_else(|error| {
            tracing::error!(%error, "the chains added in {CHAINS_ENV_VAR} are ignored");
            Chains::new(known_configs(&lookup), ChainTimeouts::default())
        })
    }

    /// The known chains (their URLs overridable by `PAPERCHAIN_RPC_<CHAIN>`, comma-separated,
    /// tried in order), then the chains added by `PAPERCHAIN_CHAINS` (`name=chain_id`,
    /// comma-separated), each with its URLs from its own `PAPERCHAIN_RPC_<NAME>`.
    pub fn try_from_env() -> Result<Chains, ConfigError> {
        Chains::try_from_vars(env_value)
    }

    /// As [`Chains::try_from_env`], reading the variables through `lookup` (tests, embedders).
    pub fn try_from_vars(lookup: impl Fn(&str) -> Option<String>) -> Result<Chains, ConfigError> {
        let mut configs = known_configs(&lookup);
        for added in added_chains(lookup(CHAINS_ENV_VAR).as_deref().unwrap_or(""))? {
            let entry = &added.entry;
            let clash = |message: String| ConfigError::new(CHAINS_ENV_VAR, format!("entry `{entry}`: {message}"));
            if let Some((_, id, _)) = KNOWN_CHAINS.iter().find(|(name, _, _)| *name == added.name) {
                let var = rpc_env_var(&added.name);
                return Err(clash(format!(
                    "`{}` is a built-in chain (chain id {id}); re-point it with {var} instead of adding it",
                    added.name
                )));
            }
            if let Some(other) = configs.iter().find(|c| c.name == added.name) {
                return Err(clash(format!("`{}` is listed twice", other.name)));
            }
            if let Some(other) = configs.iter().find(|c| c.chain_id == added.chain_id) {
                return Err(clash(format!("chain id {} is already `{}`", added.chain_id, other.name)));
            }
            let var = rpc_env_var(&added.name);
            if let Some(other) = configs.iter().find(|c| rpc_env_var(&c.name) == var) {
                return Err(clash(format!("`{}` and `{}` would both read {var}; rename one", other.name, added.name)));
            }
            let urls = match lookup(&var).filter(|v| !v.trim().is_empty()) {
                Some(list) => parse_url_list(&list, &var),
                None => {
                    return Err(ConfigError::new(
                        &var,
                        format!(
                            "not set; the chain `{entry}` added in {CHAINS_ENV_VAR} needs its RPC URLs \
                             (comma-separated, tried in order)"
                        ),
                    ));
                }
            };
            if urls.is_empty() {
                return Err(ConfigError::new(
                    &var,
                    format!("no http(s) URL in it; the chain `{entry}` added in {CHAINS_ENV_VAR} needs at least one"),
                ));
            }
            configs.push(ChainConfig::new(added.name, added.chain_id, urls));
        }
        Ok(Chains::new(configs, ChainTimeouts::default()))
    }

    /// Exactly these chains (tests point them at a local node this way).
    pub fn new(configs: Vec<ChainConfig>, timeouts: ChainTimeouts) -> Chains {
        let http = crate::rpc_http::node_client();
        Chains { chains: configs.into_iter().map(|c| Arc::new(EvmChain::new(c, timeouts, http.clone()))).collect() }
    }

    /// The chain called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<EvmChain>> {
        self.chains.iter().find(|c| c.config.name == name)
    }

    /// The chain serving chain id `chain_id` (the first, if several do).
    pub fn by_chain_id(&self, chain_id: u64) -> Option<&Arc<EvmChain>> {
        self.chains.iter().find(|c| c.config.chain_id == chain_id)
    }

    /// The configured names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.chains.iter().map(|c| c.config.name.as_str()).collect()
    }

    /// The configured chains as published schemas show them.
    pub fn published(&self) -> PublishedChains {
        PublishedChains(self.chains.iter().map(|c| (c.config.name.clone(), c.config.chain_id)).collect())
    }

    /// The chain named by the input field at `field`, or an input error listing the names.
    pub fn resolve(&self, name: &ChainName, field: &str) -> Result<Arc<EvmChain>, EngineError> {
        self.get(&name.0).cloned().ok_or_else(|| {
            let shown: String = name.0.chars().take(40).collect();
            EngineError::invalid(
                field,
                format!("{field}: unknown chain `{shown}`; valid chains: {}", self.names().join(", ")),
            )
        })
    }
}

impl std::fmt::Debug for EvmChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EvmChain").field("name", &self.config.name).field("chain_id", &self.config.chain_id).finish()
    }
}

impl std::fmt::Debug for Chains {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.chains.iter().map(|c| (&c.config.name, c.config.chain_id))).finish()
    }
}

/// The known chains, each with its `PAPERCHAIN_RPC_<CHAIN>` URLs or its defaults.
fn known_configs(lookup: &impl Fn(&str) -> Option<String>) -> Vec<ChainConfig> {
    KNOWN_CHAINS
        .iter()
        .map(|(name, id, defaults)| ChainConfig::new(*name, *id, urls_from(lookup, &rpc_env_var(name), defaults)))
        .collect()
}

/// One `name=chain_id` entry of `PAPERCHAIN_CHAINS`.
#[derive(Debug, PartialEq, Eq)]
struct AddedChain {
    name: String,
    chain_id: u64,
    /// The entry as messages quote it, spaces removed: `arbitrum=42161`.
    entry: String,
}

/// The entries of `PAPERCHAIN_CHAINS`, each checked on its own (clashes are checked by the
/// caller, against every chain already configured).
fn added_chains(list: &str) -> Result<Vec<AddedChain>, ConfigError> {
    list.split(',').map(str::trim).filter(|e| !e.is_empty()).map(added_chain).collect()
}

fn added_chain(entry: &str) -> Result<AddedChain, ConfigError> {
    let shown = clean_text(entry, 80);
    let bad = |why: String| ConfigError::new(CHAINS_ENV_VAR, format!("entry `{shown}`: {why}"));
    let Some((name, id)) = entry.split_once('=') else {
        return Err(bad("expected `name=chain_id`, e.g. `arbitrum=42161`".into()));
    };
    let (name, id) = (name.trim(), id.trim());
    let name_ok = name.len() <= 32
        && name.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if !name_ok {
        return Err(bad(format!(
            "the name `{}` must be 1 to 32 characters: a lower-case letter, then lower-case letters, digits, `-` or `_`",
            clean_text(name, 40)
        )));
    }
    if RESERVED_NAMES.contains(&name) {
        return Err(bad(format!("`{name}` is reserved (not an EVM chain)")));
    }
    let chain_id = match id.parse::<u64>() {
        Ok(n) if n > 0 && id.bytes().all(|b| b.is_ascii_digit()) => n,
        _ => return Err(bad(format!("the chain id `{}` is not a positive integer", clean_text(id, 30)))),
    };
    Ok(AddedChain { name: name.to_string(), chain_id, entry: format!("{name}={chain_id}") })
}

/// One configured chain: its config and a client over its URLs.
pub struct EvmChain {
    config: ChainConfig,
    client: RpcClient,
    timeouts: ChainTimeouts,
}

impl EvmChain {
    fn new(config: ChainConfig, timeouts: ChainTimeouts, http: LazyClient) -> EvmChain {
        let transport = FallbackTransport {
            inner: Arc::new(TransportInner {
                chain: config.name.clone(),
                chain_id: config.chain_id,
                endpoints: config.rpc_urls.iter().map(|url| Endpoint::new(url.clone())).collect(),
                http,
                attempt_timeout: timeouts.attempt,
            }),
        };
        let local = config.rpc_urls.iter().all(|u| alloy::transports::utils::guess_local_url(u.as_str()));
        EvmChain { client: RpcClient::new(transport, local), config, timeouts }
    }

    /// The chain's name (`ethereum`).
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// The chain id its nodes must serve.
    pub fn chain_id(&self) -> u64 {
        self.config.chain_id
    }

    /// The JSON-RPC client (batches: `client().new_batch()`).
    pub fn client(&self) -> &RpcClient {
        &self.client
    }

    /// An alloy provider over the same client, for the typed `Provider` methods.
    pub fn provider(&self) -> RootProvider {
        RootProvider::new(self.client.clone())
    }

    /// Runs one call's chain reads within the total timeout.
    pub async fn deadline<T>(&self, work: impl Future<Output = Result<T, EngineError>>) -> Result<T, EngineError> {
        within(&self.config.name, self.timeouts.total, work).await
    }

    /// One JSON-RPC request, its failure already mapped.
    pub async fn request<P, R>(&self, method: &'static str, params: P) -> Result<R, EngineError>
    where
        P: alloy::rpc::json_rpc::RpcSend,
        R: alloy::rpc::json_rpc::RpcRecv,
    {
        self.client.request(method, params).await.map_err(|e| self.error(method, e))
    }

    /// The engine error for a failed request of `method`.
    pub fn error(&self, method: &str, error: TransportError) -> EngineError {
        let chain = &self.config.name;
        match error {
            RpcError::Transport(TransportErrorKind::Custom(inner)) => match inner.downcast::<UpstreamFailure>() {
                Ok(failure) => failure.into_engine_error(),
                Err(other) => bad_upstream(format!("{chain} RPC: {method} failed: {other}")),
            },
            RpcError::ErrorResp(payload) => {
                let message = clean_text(&payload.message, 200);
                if is_rate_limit(payload.code, &message) {
                    EngineError::new(
                        ErrorKind::RateLimited { retry_after: DEFAULT_RETRY_AFTER },
                        "rate_limited",
                        format!("the {chain} RPC refused {method} for rate: {message}"),
                    )
                } else {
                    bad_upstream(format!("the {chain} RPC answered {method} with error {}: {message}", payload.code))
                }
            }
            RpcError::NullResp => bad_upstream(format!("the {chain} RPC answered {method} with null")),
            RpcError::DeserError { err, .. } => {
                bad_upstream(format!("the {chain} RPC's answer to {method} is not understood: {err}"))
            }
            other => bad_upstream(format!("{chain} RPC: {method} failed: {other}")),
        }
    }
}

/// The alloy transport of a chain: each request goes to the URLs in order until one answers.
#[derive(Clone)]
pub struct FallbackTransport {
    inner: Arc<TransportInner>,
}

struct TransportInner {
    chain: String,
    chain_id: u64,
    endpoints: Vec<Endpoint<u64>>,
    http: LazyClient,
    attempt_timeout: Duration,
}

impl tower::Service<RequestPacket> for FallbackTransport {
    type Response = ResponsePacket;
    type Error = TransportError;
    type Future = TransportFut<'static>;

    fn poll_ready(&mut self, _: &mut task::Context<'_>) -> task::Poll<Result<(), Self::Error>> {
        task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: RequestPacket) -> Self::Future {
        let inner = self.inner.clone();
        Box::pin(async move { inner.send(request).await.map_err(TransportErrorKind::custom) })
    }
}

impl TransportInner {
    async fn send(&self, request: RequestPacket) -> Result<ResponsePacket, UpstreamFailure> {
        let body = serde_json::to_vec(&request)
            .map_err(|e| UpstreamFailure::new(ErrorKind::Internal, format!("encoding a JSON-RPC request: {e}")))?;
        let batch = matches!(request, RequestPacket::Batch(_));
        let var = rpc_env_var(&self.chain);
        first_answer(&self.chain, &var, &self.endpoints, self.attempt_timeout, |endpoint| {
            let body = body.clone();
            async move {
                self.check_chain_id(endpoint).await?;
                let answer = post(&self.http, endpoint, body).await?;
                parse_packet(&answer, batch).map_err(|why| UpstreamFailure::bad(format!("{}: {why}", endpoint.label)))
            }
        })
        .await
    }

    async fn check_chain_id(&self, endpoint: &Endpoint<u64>) -> Result<(), UpstreamFailure> {
        let served = *endpoint
            .identity
            .get_or_try_init(|| async {
                let body = br#"{"jsonrpc":"2.0","id":0,"method":"eth_chainId","params":[]}"#.to_vec();
                let answer = post(&self.http, endpoint, body).await?;
                parse_chain_id(&answer).map_err(|why| {
                    UpstreamFailure::bad(format!("{}: its answer to eth_chainId is not usable: {why}", endpoint.label))
                })
            })
            .await?;
        if served != self.chain_id {
            return Err(UpstreamFailure::bad(format!(
                "{}: the node serves chain id {served}, not {} ({}); check its URL in {}",
                endpoint.label,
                self.chain_id,
                self.chain,
                rpc_env_var(&self.chain)
            )));
        }
        Ok(())
    }
}

fn parse_packet(answer: &[u8], batch: bool) -> Result<ResponsePacket, String> {
    let packet: ResponsePacket =
        serde_json::from_slice(answer).map_err(|_| format!("not a JSON-RPC answer: {}", preview(answer)))?;
    match (&packet, batch) {
        (ResponsePacket::Single(_), false) | (ResponsePacket::Batch(_), true) => Ok(packet),
        _ => Err("a JSON-RPC answer of the wrong shape (single for a batch, or the other way)".into()),
    }
}

fn parse_chain_id(answer: &[u8]) -> Result<u64, String> {
    #[derive(Deserialize)]
    struct Answer {
        result: Option<String>,
        error: Option<serde_json::Value>,
    }
    let answer: Answer =
        serde_json::from_slice(answer).map_err(|_| format!("not a JSON-RPC answer: {}", preview(answer)))?;
    if let Some(error) = answer.error {
        return Err(format!("error {}", clean_text(&error.to_string(), 200)));
    }
    let text = answer.result.ok_or("no result")?;
    parse_quantity(&text).and_then(|q| u64::try_from(q).ok()).ok_or_else(|| format!("`{}`", clean_text(&text, 40)))
}

/// A JSON-RPC quantity (`0x1a`) as a number.
pub fn parse_quantity(text: &str) -> Option<U256> {
    let digits = text.strip_prefix("0x")?;
    if digits.is_empty() || digits.len() > 64 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    U256::from_str_radix(digits, 16).ok()
}

/// An unsigned 256-bit number a caller wrote as decimal (`"1000"`, below 2^256) or as 0x and
/// 1 to 64 hex digits (`"0x3e8"`); None for anything else (signs, exponents, spaces inside).
pub fn parse_uint256(text: &str) -> Option<U256> {
    let text = text.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) if (1..=64).contains(&hex.len()) && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            U256::from_str_radix(hex, 16).ok()
        }
        Some(_) => None,
        None if (1..=78).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit()) => {
            U256::from_str_radix(text, 10).ok()
        }
        None => None,
    }
}

/// `raw` with `decimals` decimals as an exact decimal string: `1500000000`, 9 → `1.5`.
pub fn format_units(raw: U256, decimals: u8) -> String {
    let digits = raw.to_string();
    let decimals = usize::from(decimals);
    if decimals == 0 {
        return digits;
    }
    let padded =
        if digits.len() <= decimals { format!("{}{digits}", "0".repeat(decimals + 1 - digits.len())) } else { digits };
    let (whole, fraction) = padded.split_at(padded.len() - decimals);
    let fraction = fraction.trim_end_matches('0');
    if fraction.is_empty() { whole.to_string() } else { format!("{whole}.{fraction}") }
}

/// An address as one ABI word (an argument, an indexed topic): 12 zero bytes, then its 20.
pub fn address_word(address: &Address) -> alloy::primitives::B256 {
    alloy::primitives::B256::left_padding_from(address.as_slice())
}

/// Lower-case 0x hex, the form every answer shows addresses in.
pub fn address_text(address: &Address) -> String {
    format!("0x{}", hex::encode(address.as_slice()))
}

/// The `chain` input: one of the configured chains, checked against them in `prepare`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct ChainName(pub String);

impl JsonSchema for ChainName {
    fn schema_name() -> Cow<'static, str> {
        "EvmChain".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        // Generators built for publishing carry the deployment's chains; others (tests, a
        // plain `schema_for!`) show the known ones.
        let published = generator.settings().transforms.iter().find_map(|t| t.downcast_ref::<PublishedChains>());
        match published {
            Some(published) => chain_schema(published.0.iter().map(|(name, id)| (name.as_str(), *id))),
            None => chain_schema(KNOWN_CHAINS.iter().map(|(name, id, _)| (*name, *id))),
        }
    }
}

/// The schema of a `chain` taking any of `chains`, in order.
fn chain_schema<'a>(chains: impl Iterator<Item = (&'a str, u64)>) -> schemars::Schema {
    let chains: Vec<(&str, u64)> = chains.collect();
    let listed: Vec<String> = chains
        .iter()
        .enumerate()
        .map(|(i, (name, id))| if i == 0 { format!("`{name}` (chain id {id})") } else { format!("`{name}` ({id})") })
        .collect();
    let listed = match listed.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => listed.concat(),
    };
    let names: Vec<&str> = chains.iter().map(|(name, _)| *name).collect();
    schemars::json_schema!({
        "type": "string",
        "enum": names,
        "description": format!("EVM chain to read: {listed}.")
    })
}

/// The configured chains, as a setting of published schemas: [`ChainName`]'s schema lists
/// them when its generator's settings hold this (see [`crate::catalog::published_settings`]).
/// schemars settings take no user data but transforms, hence a transform that changes nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublishedChains(pub Vec<(String, u64)>);

impl schemars::transform::Transform for PublishedChains {
    fn transform(&mut self, _: &mut schemars::Schema) {}
}

/// An EVM address input: `0x` and 40 hex digits, any case (an EIP-55 checksum is not required).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EvmAddress(pub Address);

impl EvmAddress {
    /// Lower-case 0x hex.
    pub fn text(&self) -> String {
        address_text(&self.0)
    }
}

impl std::str::FromStr for EvmAddress {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let valid = text.len() == 42 && text.starts_with("0x") && text.bytes().skip(2).all(|b| b.is_ascii_hexdigit());
        if !valid {
            let shown = clean_text(text, 50);
            return Err(format!("`{shown}` is not an address: expected 0x followed by 40 hexadecimal digits"));
        }
        text.parse::<Address>().map(EvmAddress).map_err(|e| format!("not an address: {e}"))
    }
}

impl<'de> Deserialize<'de> for EvmAddress {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for EvmAddress {
    fn schema_name() -> Cow<'static, str> {
        "EvmAddress".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^0x[0-9a-fA-F]{40}$",
            "description": "0x followed by 40 hexadecimal digits, any case."
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_units_exactly() {
        let n = |s: &str| U256::from_str_radix(s, 10).unwrap();
        assert_eq!(format_units(n("1500000000"), 9), "1.5");
        assert_eq!(format_units(n("1"), 9), "0.000000001");
        assert_eq!(format_units(n("0"), 18), "0");
        assert_eq!(format_units(n("30000000000"), 9), "30");
        assert_eq!(format_units(n("123"), 0), "123");
        assert_eq!(
            format_units(U256::MAX, 18),
            "115792089237316195423570985008687907853269984665640564039457.584007913129639935"
        );
        assert_eq!(format_units(n("5"), 255).len(), 257);
    }

    #[test]
    fn reads_addresses_in_any_case() {
        let lower: EvmAddress = "0xd8da6bf26964af9d7eed9e03e53415d37aa96045".parse().unwrap();
        let mixed: EvmAddress = "0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045".parse().unwrap();
        let wrong_checksum: EvmAddress = "0xD8da6bf26964af9d7eed9e03e53415d37aa96045".parse().unwrap();
        assert_eq!(lower, mixed);
        assert_eq!(lower, wrong_checksum);
        assert_eq!(mixed.text(), "0xd8da6bf26964af9d7eed9e03e53415d37aa96045");
        for bad in [
            "",
            "0x",
            "d8da6bf26964af9d7eed9e03e53415d37aa96045",
            "0xd8da6bf26964af9d7eed9e03e53415d37aa9604",
            "0Xd8da6bf26964af9d7eed9e03e53415d37aa96045",
            "0xg8da6bf26964af9d7eed9e03e53415d37aa96045",
        ] {
            assert!(bad.parse::<EvmAddress>().is_err(), "{bad}");
        }
    }

    #[test]
    fn env_overrides_urls_in_order() {
        let chains = Chains::from_vars(|key| {
            (key == "PAPERCHAIN_RPC_BASE").then(|| "http://127.0.0.1:1/a, not a url ,https://b.example/key".to_string())
        });
        assert_eq!(chains.names(), vec!["ethereum", "base", "polygon"]);
        let base = chains.get("base").unwrap();
        let urls: Vec<&str> = base.config.rpc_urls.iter().map(Url::as_str).collect();
        assert_eq!(urls, vec!["http://127.0.0.1:1/a", "https://b.example/key"]);
        assert_eq!(base.chain_id(), 8453);
        assert!(chains.get("ethereum").unwrap().config.rpc_urls.len() > 1);
        assert_eq!(chains.get("polygon").unwrap().chain_id(), 137);
    }

    #[test]
    fn unknown_chains_are_input_errors_listing_the_names() {
        let chains = Chains::from_vars(|_| None);
        let e = chains.resolve(&ChainName("solana".into()), "/chain").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("/chain"));
        assert_eq!(e.kind, ErrorKind::InvalidInput);
        assert!(e.message.contains("ethereum, base, polygon"), "{}", e.message);
    }

    /// A lookup over `vars` (name, value).
    fn vars(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |key| vars.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    }

    fn config_error(pairs: &[(&str, &str)]) -> ConfigError {
        match Chains::try_from_vars(vars(pairs)) {
            Ok(chains) => panic!("{pairs:?} was accepted: {chains:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn added_chains_follow_the_known_ones_with_their_own_urls() {
        let chains = Chains::try_from_vars(vars(&[
            ("PAPERCHAIN_CHAINS", " arbitrum=42161 , optimism=10,, zk_sync-era=324 ,"),
            ("PAPERCHAIN_RPC_ARBITRUM", "http://127.0.0.1:1/a, ftp://no, https://arb.example/key"),
            ("PAPERCHAIN_RPC_OPTIMISM", "https://op.example"),
            ("PAPERCHAIN_RPC_ZK_SYNC_ERA", "https://zk.example"),
            ("PAPERCHAIN_RPC_BASE", "http://127.0.0.1:2"),
        ]))
        .unwrap();
        assert_eq!(chains.names(), vec!["ethereum", "base", "polygon", "arbitrum", "optimism", "zk_sync-era"]);
        let arbitrum = chains.get("arbitrum").unwrap();
        assert_eq!(arbitrum.chain_id(), 42161);
        let urls: Vec<&str> = arbitrum.config.rpc_urls.iter().map(Url::as_str).collect();
        assert_eq!(urls, vec!["http://127.0.0.1:1/a", "https://arb.example/key"]);
        assert_eq!(chains.get("optimism").unwrap().chain_id(), 10);
        assert_eq!(chains.get("zk_sync-era").unwrap().chain_id(), 324);
        // A known chain is still re-pointed, and keeps its place.
        let base = chains.get("base").unwrap();
        assert_eq!(base.config.rpc_urls.iter().map(Url::as_str).collect::<Vec<_>>(), vec!["http://127.0.0.1:2/"]);
        let published = chains.published();
        assert_eq!(published.0[3], ("arbitrum".to_string(), 42161));
        assert_eq!(published.0.len(), 6);

        let e = chains.resolve(&ChainName("gnosis".into()), "/chain").unwrap_err();
        assert!(e.message.contains("ethereum, base, polygon, arbitrum, optimism, zk_sync-era"), "{}", e.message);
        // Unset, empty or blank: the known chains only.
        for list in [None, Some(""), Some(" , ")] {
            let pairs: Vec<(&str, &str)> = list.map(|l| ("PAPERCHAIN_CHAINS", l)).into_iter().collect();
            assert_eq!(Chains::try_from_vars(vars(&pairs)).unwrap().names(), vec!["ethereum", "base", "polygon"]);
        }
    }

    #[test]
    fn malformed_entries_are_configuration_errors_naming_the_entry() {
        for (list, entry, why) in [
            ("arbitrum", "`arbitrum`", "expected `name=chain_id`"),
            ("arbitrum:42161", "`arbitrum:42161`", "expected `name=chain_id`"),
            ("Arbitrum=42161", "`Arbitrum=42161`", "lower-case"),
            ("1chain=5", "`1chain=5`", "lower-case"),
            ("_x=5", "`_x=5`", "lower-case"),
            ("=5", "`=5`", "lower-case"),
            ("arb.one=5", "`arb.one=5`", "lower-case"),
            ("arb one=5", "`arb one=5`", "lower-case"),
            (&format!("{}=5", "a".repeat(33)), "aaaaaaaa", "1 to 32 characters"),
            ("arbitrum=0", "`arbitrum=0`", "not a positive integer"),
            ("arbitrum=-1", "`arbitrum=-1`", "not a positive integer"),
            ("arbitrum=+5", "`arbitrum=+5`", "not a positive integer"),
            ("arbitrum=0x1", "`arbitrum=0x1`", "not a positive integer"),
            ("arbitrum=", "`arbitrum=`", "not a positive integer"),
            ("arbitrum=18446744073709551616", "`arbitrum=18446744073709551616`", "not a positive integer"),
            ("arbitrum=1=2", "`arbitrum=1=2`", "not a positive integer"),
            ("solana=900", "`solana=900`", "reserved"),
        ] {
            let e = config_error(&[("PAPERCHAIN_CHAINS", list), ("PAPERCHAIN_RPC_ARBITRUM", "http://127.0.0.1:1")]);
            assert_eq!(e.variable, "PAPERCHAIN_CHAINS", "{list}");
            let text = e.to_string();
            assert!(text.starts_with("PAPERCHAIN_CHAINS: entry `"), "{list}: {text}");
            assert!(text.contains(entry) && text.contains(why), "{list}: {text}");
        }
        // The longest name is accepted.
        let name = format!("a{}", "b".repeat(31));
        let list = format!("{name}=5");
        let var = rpc_env_var(&name);
        let chains = Chains::try_from_vars(vars(&[("PAPERCHAIN_CHAINS", &list), (&var, "http://127.0.0.1:1")]));
        assert!(chains.unwrap().get(&name).is_some());
    }

    #[test]
    fn clashes_are_configuration_errors_naming_the_entry() {
        let rpc = [
            ("PAPERCHAIN_RPC_ARBITRUM", "http://127.0.0.1:1"),
            ("PAPERCHAIN_RPC_ARB2", "http://127.0.0.1:1"),
            ("PAPERCHAIN_RPC_MAINNET", "http://127.0.0.1:1"),
            ("PAPERCHAIN_RPC_ARB_ONE", "http://127.0.0.1:1"),
        ];
        for (list, expected) in [
            (
                "base=8453",
                "entry `base=8453`: `base` is a built-in chain (chain id 8453); re-point it with PAPERCHAIN_RPC_BASE",
            ),
            ("polygon=42161", "entry `polygon=42161`: `polygon` is a built-in chain"),
            ("mainnet=1", "entry `mainnet=1`: chain id 1 is already `ethereum`"),
            ("arbitrum=42161,arbitrum=42161", "entry `arbitrum=42161`: `arbitrum` is listed twice"),
            ("arbitrum=42161,arbitrum=10", "entry `arbitrum=10`: `arbitrum` is listed twice"),
            ("arbitrum=42161,arb2=42161", "entry `arb2=42161`: chain id 42161 is already `arbitrum`"),
            (
                "arb-one=5,arb_one=6",
                "entry `arb_one=6`: `arb-one` and `arb_one` would both read PAPERCHAIN_RPC_ARB_ONE",
            ),
        ] {
            let mut pairs = rpc.to_vec();
            pairs.push(("PAPERCHAIN_CHAINS", list));
            let e = config_error(&pairs);
            assert_eq!(e.variable, "PAPERCHAIN_CHAINS", "{list}");
            assert!(e.to_string().starts_with(&format!("PAPERCHAIN_CHAINS: {expected}")), "{list}: {e}");
        }
    }

    #[test]
    fn an_added_chain_without_urls_is_a_configuration_error_naming_its_variable() {
        for rpc in [None, Some(""), Some("  ")] {
            let mut pairs = vec![("PAPERCHAIN_CHAINS", "optimism=10,arbitrum=42161")];
            pairs.push(("PAPERCHAIN_RPC_OPTIMISM", "https://op.example"));
            pairs.extend(rpc.map(|v| ("PAPERCHAIN_RPC_ARBITRUM", v)));
            let e = config_error(&pairs);
            assert_eq!(e.variable, "PAPERCHAIN_RPC_ARBITRUM");
            assert!(
                e.to_string().starts_with(
                    "PAPERCHAIN_RPC_ARBITRUM: not set; the chain `arbitrum=42161` added in PAPERCHAIN_CHAINS needs"
                ),
                "{e}"
            );
        }
        let e = config_error(&[("PAPERCHAIN_CHAINS", "arbitrum=42161"), ("PAPERCHAIN_RPC_ARBITRUM", "ws://x, nope")]);
        assert_eq!(e.variable, "PAPERCHAIN_RPC_ARBITRUM");
        assert!(e.message.contains("no http(s) URL") && e.message.contains("`arbitrum=42161`"), "{e}");
    }

    #[test]
    fn a_configuration_error_leaves_the_known_chains_where_it_is_only_logged() {
        let chains = Chains::from_vars(vars(&[
            ("PAPERCHAIN_CHAINS", "arbitrum"),
            ("PAPERCHAIN_RPC_BASE", "http://127.0.0.1:3"),
        ]));
        assert_eq!(chains.names(), vec!["ethereum", "base", "polygon"]);
        assert_eq!(chains.get("base").unwrap().config.rpc_urls[0].as_str(), "http://127.0.0.1:3/");
    }

    #[test]
    fn the_chain_schema_lists_the_published_chains() {
        let schema = |settings: schemars::generate::SchemaSettings| {
            let mut generator = settings.into_generator();
            ChainName::json_schema(&mut generator).to_value()
        };
        let plain = schema(schemars::generate::SchemaSettings::draft2020_12());
        assert_eq!(plain["enum"], serde_json::json!(["ethereum", "base", "polygon"]));
        assert_eq!(
            plain["description"],
            "EVM chain to read: `ethereum` (chain id 1), `base` (8453) or `polygon` (137)."
        );
        let chains = Chains::try_from_vars(vars(&[
            ("PAPERCHAIN_CHAINS", "arbitrum=42161"),
            ("PAPERCHAIN_RPC_ARBITRUM", "http://127.0.0.1:1"),
        ]))
        .unwrap();
        let published = schema(schemars::generate::SchemaSettings::draft2020_12().with_transform(chains.published()));
        assert_eq!(published["enum"], serde_json::json!(["ethereum", "base", "polygon", "arbitrum"]));
        assert_eq!(
            published["description"],
            "EVM chain to read: `ethereum` (chain id 1), `base` (8453), `polygon` (137) or `arbitrum` (42161)."
        );
        let one = PublishedChains(vec![("ethereum".into(), 1)]);
        let single = schema(schemars::generate::SchemaSettings::draft2020_12().with_transform(one));
        assert_eq!(single["description"], "EVM chain to read: `ethereum` (chain id 1).");
    }

    #[test]
    fn answers_of_the_wrong_shape_are_refused() {
        assert!(parse_packet(b"<html>busy</html>", false).is_err());
        assert!(parse_packet(br#"{"foo": 1}"#, false).is_err());
        assert!(parse_packet(br#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#, true).is_err());
        assert!(parse_packet(br#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#, false).is_ok());
        assert_eq!(parse_chain_id(br#"{"jsonrpc":"2.0","id":0,"result":"0x2105"}"#), Ok(8453));
        assert!(parse_chain_id(br#"{"jsonrpc":"2.0","id":0,"result":"8453"}"#).is_err());
        assert!(parse_chain_id(br#"{"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"no"}}"#).is_err());
    }
}
