//! Hosted-mode configuration: a TOML file (`[hosted]` table) overridden by `PAPERCHAIN_*`
//! environment variables, checked once at start so the server refuses to run on a
//! configuration it would not follow.
//!
//! ```toml
//! [hosted]
//! public_url = "https://api.example.com"        # resource URLs in every 402
//! facilitator_url = "https://facilitator.example.com"
//! service_name = "Paperchain"
//! icon_url = "https://api.example.com/icon.png"  # optional
//! client_ip_header = "x-forwarded-for"          # optional: only behind a proxy you run
//! database = "/var/lib/paperchain/hosted.sqlite" # default: <data dir>/hosted.sqlite
//! max_timeout_seconds = 300
//! mpp_secret = "<64 hex digits>"                 # shared by every server behind one name
//! retention_days = 90                             # what moved no money is kept this long
//! claim_every_seconds = 60                        # batch-settlement channels claimed this often
//! channel_idle_seconds = 86400                    # an idle channel's unspent deposit is refunded
//!
//! [hosted.pay_to]                                 # at least one network
//! base = "0x…"
//! polygon = "0x…"
//! solana = "<base58 address>"
//!
//! [hosted.free_pools]                             # calls per client IP per UTC day
//! chain-reads = 10
//! address-check = 30
//! docs = 10
//! ```
//!
//! Environment (wins over the file): `PAPERCHAIN_PUBLIC_URL`, `PAPERCHAIN_FACILITATOR_URL`,
//! `PAPERCHAIN_SERVICE_NAME`, `PAPERCHAIN_ICON_URL`, `PAPERCHAIN_CLIENT_IP_HEADER`,
//! `PAPERCHAIN_HOSTED_DB`, `PAPERCHAIN_PAY_TO_BASE`, `PAPERCHAIN_PAY_TO_POLYGON`,
//! `PAPERCHAIN_PAY_TO_SOLANA`, `PAPERCHAIN_FREE_CHAIN_READS`, `PAPERCHAIN_FREE_ADDRESS_CHECK`,
//! `PAPERCHAIN_FREE_DOCS`, `PAPERCHAIN_MPP_SECRET`, `PAPERCHAIN_LEDGER_RETENTION_DAYS`,
//! `PAPERCHAIN_CLAIM_EVERY_SECONDS`, `PAPERCHAIN_CHANNEL_IDLE_SECONDS`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use http::HeaderName;
use paperchain_engine::catalog::FreePool;
use serde::Deserialize;
use url::Url;

/// A network the service can be paid on: its CAIP-2 id, the dollar stablecoin there and
/// the EIP-712 domain of that token (what x402's `extra` carries for EVM networks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Network {
    /// Short name used in configuration (`base`, `polygon`, `solana`).
    pub name: &'static str,
    /// CAIP-2 identifier.
    pub caip2: &'static str,
    /// Token contract (EVM) or mint (Solana).
    pub asset: &'static str,
    /// EIP-712 domain name and version of the token (EVM only).
    pub eip712: Option<(&'static str, &'static str)>,
}

/// The networks of spec Authentication rule 1, primary first. Asset addresses are
/// Circle's native USDC deployments (developers.circle.com, "USDC contract addresses");
/// the EIP-712 domains are what the contracts' `name()` and `version()` return.
pub const NETWORKS: &[Network] = &[
    Network {
        name: "base",
        caip2: "eip155:8453",
        asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        eip712: Some(("USD Coin", "2")),
    },
    Network {
        name: "polygon",
        caip2: "eip155:137",
        asset: "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359",
        eip712: Some(("USD Coin", "2")),
    },
    Network {
        name: "solana",
        caip2: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
        asset: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
        eip712: None,
    },
];

/// A network this server accepts payment on, with where the money goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PayTo {
    /// The network.
    pub network: Network,
    /// Receiving address.
    pub address: String,
}

/// The checked hosted configuration.
#[derive(Clone, Debug)]
pub struct HostedConfig {
    /// Base URL of this service (resource URLs).
    pub public_url: Url,
    /// The facilitator; `None` only in the sandbox, which runs one in process.
    pub facilitator_url: Option<Url>,
    /// `resource.serviceName`.
    pub service_name: String,
    /// `resource.iconUrl`.
    pub icon_url: Option<String>,
    /// Header carrying the client IP set by a proxy in front of this server.
    pub client_ip_header: Option<HeaderName>,
    /// SQLite file of the ledger, replay guard and free pools.
    pub database: PathBuf,
    /// `maxTimeoutSeconds` of every requirement.
    pub max_timeout_seconds: u64,
    /// Accepted networks, primary first.
    pub pay_to: Vec<PayTo>,
    /// Daily free calls per client IP, by pool.
    pub free_pools: BTreeMap<&'static str, u32>,
    /// Key of MPP challenge ids; servers behind one name must share it. Random per start
    /// when unset (challenges then die with the process, which their 5-minute life allows).
    pub mpp_secret: Option<[u8; 32]>,
    /// How long the ledger keeps what moved no money (decisions and unpaid counts); money
    /// rows are kept for good.
    pub retention_days: u32,
    /// How often what `batch-settlement` channels charged is claimed on chain.
    pub claim_every: std::time::Duration,
    /// How long a `batch-settlement` channel may go without a call before the service
    /// refunds its unspent deposit to the payer.
    pub channel_idle: std::time::Duration,
}

/// Why the hosted configuration cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct ConfigError(pub String);

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRoot {
    hosted: Option<FileHosted>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileHosted {
    public_url: Option<String>,
    facilitator_url: Option<String>,
    service_name: Option<String>,
    icon_url: Option<String>,
    client_ip_header: Option<String>,
    database: Option<PathBuf>,
    max_timeout_seconds: Option<u64>,
    #[serde(default)]
    pay_to: BTreeMap<String, String>,
    #[serde(default)]
    free_pools: BTreeMap<String, u32>,
    mpp_secret: Option<String>,
    retention_days: Option<u32>,
    claim_every_seconds: Option<u64>,
    channel_idle_seconds: Option<u64>,
}

/// What the caller already knows: the file (if any), the data folder and the public URL
/// given on the command line.
pub struct ConfigSources<'a> {
    /// `--config`.
    pub file: Option<&'a Path>,
    /// Default folder of the database.
    pub data_dir: &'a Path,
    /// `--public-url` (already merged with `PAPERCHAIN_PUBLIC_URL` by the CLI).
    pub public_url: Option<&'a str>,
    /// The sandbox supplies its own facilitator and payee.
    pub sandbox: bool,
}

/// Days the ledger keeps what moved no money, unless configured.
pub const DEFAULT_RETENTION_DAYS: u32 = 90;

const POOLS: [FreePool; 3] = [FreePool::ChainReads, FreePool::AddressCheck, FreePool::Docs];

impl HostedConfig {
    /// Reads the file and the process environment.
    pub fn load(sources: &ConfigSources<'_>) -> Result<HostedConfig, ConfigError> {
        HostedConfig::load_with(sources, |key| std::env::var(key).ok())
    }

    /// Reads the file and `env` (tests pass a map).
    pub fn load_with(
        sources: &ConfigSources<'_>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<HostedConfig, ConfigError> {
        let file = match sources.file {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| ConfigError(format!("cannot read the configuration file {}: {e}", path.display())))?;
                let root: FileRoot = toml::from_str(&text)
                    .map_err(|e| ConfigError(format!("configuration file {}: {}", path.display(), e.message())))?;
                root.hosted.unwrap_or_default()
            }
            None => FileHosted::default(),
        };
        let env = |key: &str| env(key).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let origin = |var: &str, key: &str| match sources.file {
            Some(path) => format!("{var} or `{key}` in {}", path.display()),
            None => var.to_string(),
        };

        let public_url = env("PAPERCHAIN_PUBLIC_URL")
            .or_else(|| sources.public_url.map(str::to_string))
            .or(file.public_url)
            .ok_or_else(|| {
                ConfigError(format!(
                    "hosted mode needs the service's public base URL (written into every 402): set --public-url, {}",
                    origin("PAPERCHAIN_PUBLIC_URL", "hosted.public_url")
                ))
            })?;
        let public_url = http_url(&public_url, "public URL")?;

        let facilitator_url = match env("PAPERCHAIN_FACILITATOR_URL").or(file.facilitator_url) {
            Some(url) => Some(http_url(&url, "facilitator URL")?),
            None if sources.sandbox => None,
            None => {
                return Err(ConfigError(format!(
                    "hosted mode needs an x402 facilitator to verify and settle payments: set {}",
                    origin("PAPERCHAIN_FACILITATOR_URL", "hosted.facilitator_url")
                )));
            }
        };

        let mut pay_to = Vec::new();
        for network in NETWORKS {
            let var = format!("PAPERCHAIN_PAY_TO_{}", network.name.to_ascii_uppercase());
            let value = env(&var).or_else(|| file.pay_to.get(network.name).cloned());
            if let Some(address) = value {
                check_address(network, &address, &var)?;
                pay_to.push(PayTo { network: network.clone(), address });
            }
        }
        if let Some(unknown) = file.pay_to.keys().find(|k| !NETWORKS.iter().any(|n| n.name == k.as_str())) {
            return Err(ConfigError(format!(
                "hosted.pay_to: unknown network `{unknown}` (known: {})",
                NETWORKS.iter().map(|n| n.name).collect::<Vec<_>>().join(", ")
            )));
        }
        if pay_to.is_empty() && !sources.sandbox {
            return Err(ConfigError(format!(
                "hosted mode needs at least one address to be paid to: set {}",
                origin("PAPERCHAIN_PAY_TO_BASE", "hosted.pay_to.base")
            )));
        }

        let mut free_pools = BTreeMap::new();
        for pool in POOLS {
            let var = format!("PAPERCHAIN_FREE_{}", pool.id().replace('-', "_").to_ascii_uppercase());
            let calls = match env(&var) {
                Some(text) => text
                    .parse::<u32>()
                    .map_err(|_| ConfigError(format!("{var} must be a whole number of calls, not `{text}`")))?,
                None => file.free_pools.get(pool.id()).copied().unwrap_or(pool.daily_calls()),
            };
            free_pools.insert(pool.id(), calls);
        }
        if let Some(unknown) = file.free_pools.keys().find(|k| !POOLS.iter().any(|p| p.id() == k.as_str())) {
            return Err(ConfigError(format!(
                "hosted.free_pools: unknown pool `{unknown}` (known: {})",
                POOLS.iter().map(|p| p.id()).collect::<Vec<_>>().join(", ")
            )));
        }

        let client_ip_header = match env("PAPERCHAIN_CLIENT_IP_HEADER").or(file.client_ip_header) {
            Some(name) => Some(
                HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes())
                    .map_err(|_| ConfigError(format!("client IP header `{name}` is not a valid HTTP header name")))?,
            ),
            None => None,
        };
        let max_timeout_seconds = file.max_timeout_seconds.unwrap_or(300);
        if !(10..=3600).contains(&max_timeout_seconds) {
            return Err(ConfigError(format!(
                "hosted.max_timeout_seconds must be between 10 and 3600, not {max_timeout_seconds}"
            )));
        }
        let icon_url = match env("PAPERCHAIN_ICON_URL").or(file.icon_url) {
            Some(url) => Some(http_url(&url, "icon URL")?.to_string()),
            None => None,
        };
        let mpp_secret = match env("PAPERCHAIN_MPP_SECRET").or(file.mpp_secret) {
            Some(text) => {
                let bytes = hex::decode(text.trim_start_matches("0x")).ok().and_then(|b| <[u8; 32]>::try_from(b).ok());
                Some(bytes.ok_or_else(|| {
                    ConfigError("PAPERCHAIN_MPP_SECRET (hosted.mpp_secret) must be 64 hex digits (32 bytes)".into())
                })?)
            }
            None => None,
        };
        let retention_days = match env("PAPERCHAIN_LEDGER_RETENTION_DAYS") {
            Some(text) => text.parse::<u32>().map_err(|_| {
                ConfigError(format!("PAPERCHAIN_LEDGER_RETENTION_DAYS must be a whole number of days, not `{text}`"))
            })?,
            None => file.retention_days.unwrap_or(DEFAULT_RETENTION_DAYS),
        };
        if !(1..=36_500).contains(&retention_days) {
            return Err(ConfigError(format!(
                "{} must be between 1 and 36500 days, not {retention_days}",
                origin("PAPERCHAIN_LEDGER_RETENTION_DAYS", "hosted.retention_days")
            )));
        }
        // Seconds from the environment, else the file, else `default`, within `range`.
        let seconds =
            |variable: &str, key: &str, in_file: Option<u64>, default: u64, range: std::ops::RangeInclusive<u64>| {
                let value = match env(variable) {
                    Some(text) => text.parse::<u64>().map_err(|_| {
                        ConfigError(format!("{variable} must be a whole number of seconds, not `{text}`"))
                    })?,
                    None => in_file.unwrap_or(default),
                };
                if !range.contains(&value) {
                    return Err(ConfigError(format!(
                        "{} must be between {} and {} seconds, not {value}",
                        origin(variable, key),
                        range.start(),
                        range.end()
                    )));
                }
                Ok(value)
            };
        // Well inside the escrow's shortest withdraw delay (900 s): claimed before a payer's
        // withdrawal can take what was charged.
        let claim_every = seconds(
            "PAPERCHAIN_CLAIM_EVERY_SECONDS",
            "hosted.claim_every_seconds",
            file.claim_every_seconds,
            60,
            1..=600,
        )?;
        let channel_idle = seconds(
            "PAPERCHAIN_CHANNEL_IDLE_SECONDS",
            "hosted.channel_idle_seconds",
            file.channel_idle_seconds,
            86_400,
            1..=2_592_000,
        )?;
        let default_database = if sources.sandbox { "sandbox.sqlite" } else { "hosted.sqlite" };
        Ok(HostedConfig {
            claim_every: std::time::Duration::from_secs(claim_every),
            channel_idle: std::time::Duration::from_secs(channel_idle),
            mpp_secret,
            public_url,
            facilitator_url,
            service_name: env("PAPERCHAIN_SERVICE_NAME").or(file.service_name).unwrap_or_else(|| "Paperchain".into()),
            icon_url,
            client_ip_header,
            // The sandbox's store is emptied at each start, so it is never one named for
            // hosted mode: always its own file in the data folder.
            database: match sources.sandbox {
                true => sources.data_dir.join(default_database),
                false => env("PAPERCHAIN_HOSTED_DB")
                    .map(PathBuf::from)
                    .or(file.database)
                    .unwrap_or_else(|| sources.data_dir.join(default_database)),
            },
            max_timeout_seconds,
            pay_to,
            free_pools,
            retention_days,
        })
    }

    /// Daily free calls of `pool` per client IP.
    pub fn free_calls(&self, pool: FreePool) -> u32 {
        self.free_pools.get(pool.id()).copied().unwrap_or(pool.daily_calls())
    }
}

fn http_url(text: &str, what: &str) -> Result<Url, ConfigError> {
    let url = Url::parse(text).map_err(|e| ConfigError(format!("the {what} `{text}` is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(ConfigError(format!("the {what} `{text}` must be an http or https URL with a host")));
    }
    Ok(url)
}

fn check_address(network: &Network, address: &str, var: &str) -> Result<(), ConfigError> {
    let ok = if network.eip712.is_some() {
        address.len() == 42 && address.starts_with("0x") && address[2..].bytes().all(|b| b.is_ascii_hexdigit())
    } else {
        // Solana addresses are 32 bytes in base58: 32 to 44 characters of its alphabet.
        (32..=44).contains(&address.len())
            && address.bytes().all(|b| b.is_ascii_alphanumeric() && !matches!(b, b'0' | b'O' | b'I' | b'l'))
    };
    if ok {
        Ok(())
    } else {
        let shape = if network.eip712.is_some() { "0x and 40 hex digits" } else { "a base58 Solana address" };
        Err(ConfigError(format!(
            "{var} (hosted.pay_to.{}): `{address}` is not a {} address ({shape})",
            network.name, network.name
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const PAYEE: &str = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";

    fn load(env: &[(&str, &str)], file: Option<&str>) -> Result<HostedConfig, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("paperchain.toml");
        if let Some(text) = file {
            std::fs::write(&path, text).unwrap();
        }
        let env: HashMap<String, String> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let sources = ConfigSources {
            file: file.map(|_| path.as_path()),
            data_dir: Path::new("/data"),
            public_url: None,
            sandbox: false,
        };
        HostedConfig::load_with(&sources, |k| env.get(k).cloned())
    }

    fn minimal() -> Vec<(&'static str, &'static str)> {
        vec![
            ("PAPERCHAIN_PUBLIC_URL", "https://api.example.com"),
            ("PAPERCHAIN_FACILITATOR_URL", "https://facilitator.example.com"),
            ("PAPERCHAIN_PAY_TO_BASE", PAYEE),
        ]
    }

    #[test]
    fn environment_alone_is_enough() {
        let config = load(&minimal(), None).unwrap();
        assert_eq!(config.public_url.as_str(), "https://api.example.com/");
        assert_eq!(config.pay_to.len(), 1);
        assert_eq!(config.pay_to[0].network.caip2, "eip155:8453");
        assert_eq!(config.database, Path::new("/data/hosted.sqlite"));
        assert_eq!(config.free_calls(FreePool::ChainReads), 10);
        assert_eq!(config.free_calls(FreePool::AddressCheck), 30);
        assert_eq!(config.free_calls(FreePool::Docs), 10);
        assert_eq!(config.service_name, "Paperchain");
        assert!(config.client_ip_header.is_none());
        assert_eq!(config.retention_days, DEFAULT_RETENTION_DAYS);
        assert_eq!((config.claim_every.as_secs(), config.channel_idle.as_secs()), (60, 86_400));
    }

    #[test]
    fn each_missing_requirement_is_named() {
        for (missing, says) in [
            ("PAPERCHAIN_PUBLIC_URL", "public base URL"),
            ("PAPERCHAIN_FACILITATOR_URL", "facilitator"),
            ("PAPERCHAIN_PAY_TO_BASE", "PAPERCHAIN_PAY_TO_BASE"),
        ] {
            let env: Vec<_> = minimal().into_iter().filter(|(k, _)| *k != missing).collect();
            let error = load(&env, None).unwrap_err();
            assert!(error.0.contains(says), "{missing}: {error}");
        }
    }

    #[test]
    fn file_is_read_and_environment_wins() {
        let file = format!(
            "[hosted]\npublic_url = \"https://file.example.com\"\nfacilitator_url = \"https://f.example.com\"\n\
             client_ip_header = \"X-Forwarded-For\"\nmax_timeout_seconds = 120\nretention_days = 30\n\
             [hosted.pay_to]\nbase = \"{PAYEE}\"\npolygon = \"{PAYEE}\"\nsolana = \"9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM\"\n\
             [hosted.free_pools]\ndocs = 3\n"
        );
        let config = load(&[("PAPERCHAIN_PUBLIC_URL", "https://env.example.com")], Some(&file)).unwrap();
        assert_eq!(config.public_url.host_str(), Some("env.example.com"));
        let networks: Vec<_> = config.pay_to.iter().map(|p| p.network.caip2).collect();
        assert_eq!(networks, ["eip155:8453", "eip155:137", "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"]);
        assert_eq!(config.free_calls(FreePool::Docs), 3);
        assert_eq!(config.max_timeout_seconds, 120);
        assert_eq!(config.retention_days, 30);
        assert_eq!(config.client_ip_header.as_ref().map(|h| h.as_str()), Some("x-forwarded-for"));
        let config = load(&[("PAPERCHAIN_FREE_DOCS", "0")], Some(&file)).unwrap();
        assert_eq!(config.free_calls(FreePool::Docs), 0);
    }

    #[test]
    fn bad_values_are_refused_with_their_name() {
        let with = |k: &'static str, v: &'static str| {
            let mut env = minimal();
            env.retain(|(key, _)| *key != k);
            env.push((k, v));
            load(&env, None).unwrap_err().0
        };
        assert!(with("PAPERCHAIN_PAY_TO_BASE", "0x1234").contains("PAPERCHAIN_PAY_TO_BASE"));
        assert!(with("PAPERCHAIN_PAY_TO_SOLANA", "0OIl").contains("PAPERCHAIN_PAY_TO_SOLANA"));
        assert!(with("PAPERCHAIN_PUBLIC_URL", "ftp://x").contains("public URL"));
        assert!(with("PAPERCHAIN_FACILITATOR_URL", "not a url").contains("facilitator URL"));
        assert!(with("PAPERCHAIN_FREE_CHAIN_READS", "ten").contains("PAPERCHAIN_FREE_CHAIN_READS"));
        assert!(with("PAPERCHAIN_CLIENT_IP_HEADER", "bad header").contains("client IP header"));
        assert!(with("PAPERCHAIN_MPP_SECRET", "abcd").contains("PAPERCHAIN_MPP_SECRET"));
        assert!(with("PAPERCHAIN_LEDGER_RETENTION_DAYS", "a year").contains("PAPERCHAIN_LEDGER_RETENTION_DAYS"));
        assert!(with("PAPERCHAIN_LEDGER_RETENTION_DAYS", "0").contains("PAPERCHAIN_LEDGER_RETENTION_DAYS"));
        assert!(with("PAPERCHAIN_CLAIM_EVERY_SECONDS", "soon").contains("PAPERCHAIN_CLAIM_EVERY_SECONDS"));
        let late = with("PAPERCHAIN_CLAIM_EVERY_SECONDS", "900");
        assert!(late.contains("PAPERCHAIN_CLAIM_EVERY_SECONDS") && late.contains("between 1 and 600"), "{late}");
        assert!(with("PAPERCHAIN_CHANNEL_IDLE_SECONDS", "0").contains("PAPERCHAIN_CHANNEL_IDLE_SECONDS"));
        let error = load(&minimal(), Some("[hosted]\nunknown_key = 1\n")).unwrap_err().0;
        assert!(error.contains("unknown_key"), "{error}");
        let error = load(&minimal(), Some("[hosted.pay_to]\nethereum = \"0x0\"\n")).unwrap_err().0;
        assert!(error.contains("ethereum"), "{error}");
        let error = load(&minimal(), Some("[hosted]\nmax_timeout_seconds = 5\n")).unwrap_err().0;
        assert!(error.contains("max_timeout_seconds"), "{error}");
    }

    #[test]
    fn sandbox_needs_no_facilitator_or_payee() {
        let sources = ConfigSources {
            file: None,
            data_dir: Path::new("/d"),
            public_url: Some("http://127.0.0.1:1"),
            sandbox: true,
        };
        let config = HostedConfig::load_with(&sources, |_| None).unwrap();
        assert!(config.facilitator_url.is_none());
        assert!(config.pay_to.is_empty());
        assert_eq!(config.database, Path::new("/d/sandbox.sqlite"));
    }
}
