//! The Solana support code the `/v1/solana/*` routes share; no route lives here (they are
//! `chain/solana_*.rs`).
//!
//! This module itself is the Solana clusters: `mainnet` and `devnet`, their RPC URLs
//! (`PAPERCHAIN_RPC_SOLANA`, `PAPERCHAIN_RPC_SOLANA_DEVNET`, comma-separated, tried in
//! order, else public defaults) and the one way every Solana route reaches them: JSON-RPC
//! over [`crate::rpc_http`], the same failure mapping as the EVM chains (timeout 504, rate
//! limit 429 with Retry-After, unreachable 503, an unusable answer 502). Each URL is asked
//! once for its genesis hash: a node of another cluster is a bad upstream, never read. A
//! local validator that stands in for a cluster has a genesis of its own, given in
//! `PAPERCHAIN_GENESIS_SOLANA` (or `_DEVNET`).
//!
//! Submodules: base58 inputs ([`keys`]), token amounts and Token-2022 extensions as the
//! node parses them ([`token`]), Metaplex token metadata ([`metaplex`]).

pub mod keys;
pub mod metaplex;
pub mod token;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use url::Url;

use crate::error::{EngineError, ErrorKind};
use crate::evm::ChainTimeouts;
use crate::http_client::LazyClient;
use crate::rpc_http::{
    DEFAULT_RETRY_AFTER, Endpoint, UpstreamFailure, clean_text, env_value, first_answer, is_rate_limit, node_client,
    post, preview, rpc_env_var, urls_from, within,
};

/// Lamports in one SOL.
pub const LAMPORTS_DECIMALS: u8 = 9;

/// A Solana cluster a route reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "SolanaNetwork")]
pub enum Network {
    /// Solana mainnet-beta.
    #[default]
    Mainnet,
    /// Solana devnet.
    Devnet,
}

impl Network {
    /// Every network, in the order they are listed.
    pub const ALL: [Network; 2] = [Network::Mainnet, Network::Devnet];

    /// The name in inputs and answers.
    pub fn name(self) -> &'static str {
        match self {
            Network::Mainnet => "mainnet",
            Network::Devnet => "devnet",
        }
    }

    /// The cluster's genesis hash.
    pub fn genesis_hash(self) -> &'static str {
        match self {
            Network::Mainnet => "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d",
            Network::Devnet => "EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG",
        }
    }

    /// The cluster of a CAIP-2 network id: `solana:` and the first 32 characters of the
    /// genesis hash (how payments name Solana networks).
    pub fn from_caip2(network: &str) -> Option<Network> {
        let reference = network.strip_prefix("solana:")?;
        Network::ALL.into_iter().find(|n| n.genesis_hash().get(..32) == Some(reference))
    }

    /// Public RPC endpoints used when the variable is not set.
    pub fn default_urls(self) -> &'static [&'static str] {
        match self {
            Network::Mainnet => &["https://api.mainnet-beta.solana.com", "https://solana-rpc.publicnode.com"],
            Network::Devnet => &["https://api.devnet.solana.com"],
        }
    }

    /// The chain name of its variables: `solana`, `solana-devnet`.
    fn chain_name(self) -> &'static str {
        match self {
            Network::Mainnet => "solana",
            Network::Devnet => "solana-devnet",
        }
    }

    /// `PAPERCHAIN_RPC_SOLANA`, `PAPERCHAIN_RPC_SOLANA_DEVNET`.
    pub fn rpc_env_var(self) -> String {
        rpc_env_var(self.chain_name())
    }

    /// `PAPERCHAIN_GENESIS_SOLANA`, `PAPERCHAIN_GENESIS_SOLANA_DEVNET`: the genesis hash a
    /// local validator standing in for the cluster serves.
    pub fn genesis_env_var(self) -> String {
        format!("PAPERCHAIN_GENESIS_{}", self.chain_name().to_ascii_uppercase().replace('-', "_"))
    }
}

/// One cluster's configuration.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// Which cluster.
    pub network: Network,
    /// The genesis hash its nodes must serve.
    pub genesis_hash: String,
    /// RPC URLs, tried in order.
    pub rpc_urls: Vec<Url>,
}

impl ClusterConfig {
    /// `network` at `rpc_urls`, expecting the cluster's own genesis hash.
    pub fn new(network: Network, rpc_urls: Vec<Url>) -> ClusterConfig {
        ClusterConfig { network, genesis_hash: network.genesis_hash().to_string(), rpc_urls }
    }

    /// The same, expecting another genesis hash (a local validator).
    pub fn with_genesis(mut self, genesis_hash: impl Into<String>) -> ClusterConfig {
        self.genesis_hash = genesis_hash.into();
        self
    }
}

/// The Solana clusters, shared by the Solana routes (in [`crate::Context`]).
pub struct Clusters {
    clusters: Vec<Arc<Cluster>>,
}

impl Clusters {
    /// Both clusters, their URLs from `PAPERCHAIN_RPC_SOLANA` / `PAPERCHAIN_RPC_SOLANA_DEVNET`
    /// (comma-separated, tried in order) or the public defaults, their genesis from
    /// `PAPERCHAIN_GENESIS_SOLANA` / `_DEVNET` or the cluster's own.
    pub fn from_env() -> Clusters {
        Clusters::from_vars(env_value)
    }

    /// As [`Clusters::from_env`], reading the variables through `lookup`.
    pub fn from_vars(lookup: impl Fn(&str) -> Option<String>) -> Clusters {
        let configs = Network::ALL
            .iter()
            .map(|&network| {
                let urls = urls_from(&lookup, &network.rpc_env_var(), network.default_urls());
                let config = ClusterConfig::new(network, urls);
                match lookup(&network.genesis_env_var()).map(|g| g.trim().to_string()).filter(|g| !g.is_empty()) {
                    Some(genesis) => config.with_genesis(genesis),
                    None => config,
                }
            })
            .collect();
        Clusters::new(configs, ChainTimeouts::default())
    }

    /// Exactly these clusters (tests point them at a local validator this way).
    pub fn new(configs: Vec<ClusterConfig>, timeouts: ChainTimeouts) -> Clusters {
        let http = node_client();
        Clusters { clusters: configs.into_iter().map(|c| Arc::new(Cluster::new(c, timeouts, http.clone()))).collect() }
    }

    /// The cluster a payment's CAIP-2 network (`solana:<genesis prefix>`) names; why not,
    /// in words, when it names none or this deployment has it unconfigured.
    pub fn of_caip2(&self, network: &str) -> Result<Arc<Cluster>, String> {
        let known = Network::from_caip2(network).ok_or_else(|| format!("{network} is not a known Solana cluster"))?;
        self.get(known).map_err(|e| e.message)
    }

    /// The cluster of `network`, or a 503 when this deployment has none configured.
    pub fn get(&self, network: Network) -> Result<Arc<Cluster>, EngineError> {
        self.clusters.iter().find(|c| c.config.network == network).cloned().ok_or_else(|| {
            EngineError::new(
                ErrorKind::Unavailable { retry_after: DEFAULT_RETRY_AFTER },
                "unavailable",
                format!("Solana {} is not configured here (set {})", network.name(), network.rpc_env_var()),
            )
        })
    }
}

impl std::fmt::Debug for Clusters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.clusters.iter().map(|c| c.config.network.name())).finish()
    }
}

/// One configured cluster: its URLs and how long reads may take.
pub struct Cluster {
    config: ClusterConfig,
    endpoints: Vec<Endpoint<String>>,
    http: LazyClient,
    timeouts: ChainTimeouts,
}

impl Cluster {
    fn new(config: ClusterConfig, timeouts: ChainTimeouts, http: LazyClient) -> Cluster {
        let endpoints = config.rpc_urls.iter().cloned().map(Endpoint::new).collect();
        Cluster { config, endpoints, http, timeouts }
    }

    /// Which cluster.
    pub fn network(&self) -> Network {
        self.config.network
    }

    /// The genesis hash its nodes serve.
    pub fn genesis_hash(&self) -> &str {
        &self.config.genesis_hash
    }

    /// Runs one call's reads within the total timeout.
    pub async fn deadline<T>(&self, work: impl Future<Output = Result<T, EngineError>>) -> Result<T, EngineError> {
        within(&format!("Solana {}", self.network().name()), self.timeouts.total, work).await
    }

    /// One JSON-RPC request; its `result` read as `R` (a node's error, an unusable answer
    /// and every network failure mapped to their kinds).
    pub async fn request<R: DeserializeOwned>(&self, method: &str, params: Value) -> Result<R, EngineError> {
        let result = self.raw_request(method, params).await?;
        serde_json::from_value(result).map_err(|e| {
            bad(format!("the Solana {} RPC's answer to {method} is not understood: {e}", self.network().name()))
        })
    }

    /// One JSON-RPC request's `result` as JSON.
    pub async fn raw_request(&self, method: &str, params: Value) -> Result<Value, EngineError> {
        let body = serde_json::to_vec(&json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }))
            .map_err(|e| EngineError::internal(format!("encoding a JSON-RPC request: {e}")))?;
        let network = self.network();
        let label = format!("Solana {}", network.name());
        let answer = first_answer(&label, &network.rpc_env_var(), &self.endpoints, self.timeouts.attempt, |endpoint| {
            let body = body.clone();
            async move {
                self.check_genesis(endpoint).await?;
                let answer = post(&self.http, endpoint, body).await?;
                serde_json::from_slice::<RpcAnswer>(&answer).map_err(|_| {
                    UpstreamFailure::bad(format!("{}: not a JSON-RPC answer: {}", endpoint.label, preview(&answer)))
                })
            }
        })
        .await
        .map_err(UpstreamFailure::into_engine_error)?;
        match answer {
            RpcAnswer { error: Some(error), .. } => Err(self.node_error(method, &error)),
            RpcAnswer { result: Some(result), .. } => Ok(result),
            RpcAnswer { .. } => Err(bad(format!("the {label} RPC answered {method} with neither result nor error"))),
        }
    }

    fn node_error(&self, method: &str, error: &RpcErrorObject) -> EngineError {
        let network = self.network().name();
        let message = clean_text(&error.message, 200);
        if error.code == NODE_UNHEALTHY {
            EngineError::new(
                ErrorKind::Unavailable { retry_after: DEFAULT_RETRY_AFTER },
                "unavailable",
                format!("the Solana {network} RPC is behind or unhealthy: {message}"),
            )
        } else if is_rate_limit(error.code, &message) {
            EngineError::new(
                ErrorKind::RateLimited { retry_after: DEFAULT_RETRY_AFTER },
                "rate_limited",
                format!("the Solana {network} RPC refused {method} for rate: {message}"),
            )
        } else {
            bad(format!("the Solana {network} RPC answered {method} with error {}: {message}", error.code))
        }
    }

    async fn check_genesis(&self, endpoint: &Endpoint<String>) -> Result<(), UpstreamFailure> {
        let served = endpoint
            .identity
            .get_or_try_init(|| async {
                let body = br#"{"jsonrpc":"2.0","id":0,"method":"getGenesisHash","params":[]}"#.to_vec();
                let answer = post(&self.http, endpoint, body).await?;
                let unusable = |why: String| {
                    UpstreamFailure::bad(format!(
                        "{}: its answer to getGenesisHash is not usable: {why}",
                        endpoint.label
                    ))
                };
                match serde_json::from_slice::<RpcAnswer>(&answer) {
                    Ok(RpcAnswer { result: Some(Value::String(hash)), .. }) if keys::is_base58(&hash, 32) => Ok(hash),
                    Ok(RpcAnswer { error: Some(error), .. }) => {
                        Err(unusable(format!("error {}: {}", error.code, clean_text(&error.message, 200))))
                    }
                    _ => Err(unusable(preview(&answer))),
                }
            })
            .await?;
        if *served != self.config.genesis_hash {
            let network = self.network();
            return Err(UpstreamFailure::bad(format!(
                "{}: the node serves the cluster with genesis hash {served}, not Solana {} ({}); check its URL in {}",
                endpoint.label,
                network.name(),
                self.config.genesis_hash,
                network.rpc_env_var()
            )));
        }
        Ok(())
    }
}

/// Solana's "node is unhealthy / behind" JSON-RPC error.
const NODE_UNHEALTHY: i64 = -32005;

/// A JSON-RPC answer: `result` is `Some(Value::Null)` for `"result": null` (a transaction
/// the node does not have) and None when the member is absent.
#[derive(Deserialize)]
struct RpcAnswer {
    #[serde(default, deserialize_with = "present")]
    result: Option<Value>,
    #[serde(default)]
    error: Option<RpcErrorObject>,
}

fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

#[derive(Deserialize)]
struct RpcErrorObject {
    code: i64,
    #[serde(default)]
    message: String,
}

/// A 502: the node's answer cannot be used.
pub use crate::rpc_http::bad_upstream as bad;

/// A number the node sent: a JSON number or a decimal string (token amounts are strings).
pub fn node_u64(value: &Value, what: &str) -> Result<u64, EngineError> {
    match value {
        Value::Number(n) => n.as_u64(),
        Value::String(s) if !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit()) => s.parse().ok(),
        _ => None,
    }
    .ok_or_else(|| bad(format!("the node's {what} is not a whole number: {}", clean_text(&value.to_string(), 60))))
}

/// `raw` base units with `decimals` decimals as an exact decimal string.
pub fn format_amount(raw: u128, decimals: u8) -> String {
    crate::evm::format_units(alloy::primitives::U256::from(raw), decimals)
}

/// Lamports as SOL, exactly.
pub fn sol(lamports: u64) -> String {
    format_amount(u128::from(lamports), LAMPORTS_DECIMALS)
}

/// The commitment every read asks for: confirmed by a supermajority, seconds old at most.
pub const COMMITMENT: &str = "confirmed";

/// Programs an answer names, by address.
pub const KNOWN_PROGRAMS: &[(&str, &str)] = &[
    ("11111111111111111111111111111111", "system"),
    ("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", "spl-token"),
    ("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb", "spl-token-2022"),
    ("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL", "spl-associated-token-account"),
    ("ComputeBudget111111111111111111111111111111", "compute-budget"),
    ("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr", "spl-memo"),
    ("Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo", "spl-memo-v1"),
    ("Stake11111111111111111111111111111111111111", "stake"),
    ("Vote111111111111111111111111111111111111111", "vote"),
    ("AddressLookupTab1e1111111111111111111111111", "address-lookup-table"),
    ("BPFLoaderUpgradeab1e11111111111111111111111", "bpf-loader-upgradeable"),
    ("BPFLoader2111111111111111111111111111111111", "bpf-loader"),
    ("BPFLoader1111111111111111111111111111111111", "bpf-loader-deprecated"),
    ("LoaderV411111111111111111111111111111111111", "loader-v4"),
    ("Config1111111111111111111111111111111111111", "config"),
    ("metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s", "mpl-token-metadata"),
    ("Sysvar1111111111111111111111111111111111111", "sysvar"),
    ("NativeLoader1111111111111111111111111111111", "native-loader"),
];

/// The name of a known program.
pub fn program_name(address: &str) -> Option<&'static str> {
    KNOWN_PROGRAMS.iter().find(|(a, _)| *a == address).map(|(_, name)| *name)
}

impl Cluster {
    /// An account as `encoding` (`jsonParsed`, `base64`) shows it, with the slot read at;
    /// None when it does not exist.
    pub async fn account(&self, address: &str, encoding: &str) -> Result<(Option<Value>, u64), EngineError> {
        let answer: Value = self
            .request("getAccountInfo", json!([address, { "encoding": encoding, "commitment": COMMITMENT }]))
            .await?;
        let slot = node_u64(&answer["context"]["slot"], "slot")?;
        match &answer["value"] {
            Value::Null => Ok((None, slot)),
            value @ Value::Object(_) => Ok((Some(value.clone()), slot)),
            other => Err(bad(format!("the node's account is not an object: {}", clean_text(&other.to_string(), 60)))),
        }
    }
}

/// The signature of a successful transaction of `address` (among its last 1,000) whose memo
/// carries `memo`; `None` when there is none. How a payment signed with a random memo is
/// found on chain when its answer was lost.
pub async fn transaction_with_memo(
    cluster: &Cluster,
    address: &str,
    memo: &str,
) -> Result<Option<String>, EngineError> {
    let params = json!([address, {"limit": 1000, "commitment": "confirmed"}]);
    let found = cluster.deadline(cluster.raw_request("getSignaturesForAddress", params)).await?;
    let entries = found.as_array().ok_or_else(|| {
        bad(format!("the Solana {} RPC's answer to getSignaturesForAddress is not a list", cluster.network().name()))
    })?;
    Ok(entries
        .iter()
        .filter(|entry| entry["err"].is_null())
        .filter(|entry| entry["memo"].as_str().is_some_and(|text| text.contains(memo)))
        .find_map(|entry| entry["signature"].as_str().map(str::to_string)))
}

/// The mint at `address` (with its account and the slot read at) (the input field `field`), read from the node; an address that
/// does not exist or is not a token mint is an input error (`not_a_token`).
pub async fn read_mint(
    cluster: &Cluster,
    address: &keys::SolanaAddress,
    field: &str,
) -> Result<(token::Mint, Value, u64), EngineError> {
    let network = cluster.network().name();
    let (account, slot) = cluster.account(address.as_str(), "jsonParsed").await?;
    let Some(account) = account else {
        return Err(EngineError::invalid_with(
            "not_a_token",
            field,
            format!("{field}: {} does not exist on Solana {network}", address.as_str()),
        ));
    };
    match token::mint(&account)? {
        Some(mint) => Ok((mint, account, slot)),
        None => {
            let owner = token::text(&account, "owner", 44).unwrap_or_default();
            let owner = match program_name(&owner) {
                Some(name) => format!("{owner} ({name})"),
                None => owner,
            };
            Err(EngineError::invalid_with(
                "not_a_token",
                field,
                format!(
                    "{field}: {} on Solana {network} is not a token mint (its owner program is {owner})",
                    address.as_str()
                ),
            ))
        }
    }
}

/// What every Solana route's `run` does: `read` on `network`'s cluster within the call's
/// time budget, its result the JSON answer.
pub async fn answer<T>(
    ctx: &crate::context::Context,
    network: Network,
    read: impl AsyncFnOnce(&Cluster) -> Result<T, EngineError>,
) -> Result<crate::output::Reply<T>, EngineError> {
    let cluster = ctx.solana.get(network)?;
    cluster.deadline(read(&cluster)).await.map(crate::output::Reply::Json)
}

/// The data of an account read with `encoding: base64`.
pub fn b64_data(account: &Value) -> Result<Vec<u8>, EngineError> {
    use base64::Engine as _;
    let encoded = account["data"]
        .as_array()
        .filter(|d| d.get(1).and_then(Value::as_str) == Some("base64"))
        .and_then(|d| d.first())
        .and_then(Value::as_str)
        .ok_or_else(|| bad("the node's account data is not base64 as asked".into()))?;
    base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|_| bad("the node's account data is not valid base64".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caip2_networks_are_told_by_their_genesis_prefix() {
        assert_eq!(Network::from_caip2("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"), Some(Network::Mainnet));
        assert_eq!(Network::from_caip2("solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"), Some(Network::Devnet));
        assert_eq!(Network::from_caip2("solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z"), None);
        assert_eq!(Network::from_caip2("eip155:8453"), None);
        assert_eq!(Network::from_caip2("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpXXXX"), None);
    }
}
