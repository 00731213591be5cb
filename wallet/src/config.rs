//! The client's configuration: `config.toml` in the user's config folder (XDG paths), which
//! hosted service calls are routed to, how each route runs, and the spend policy.
//!
//! ```toml
//! [service]
//! url = "https://api.paperchain.example"   # the hosted service routed calls go to
//!
//! [routing]
//! default = "local"                        # local | hosted | auto
//! routes = { rotate_pdf_pages = "hosted", "/v1/chain/balance" = "auto" }
//!
//! [policy]
//! per_call = "0.05"                        # dollars; caps compare the amount signed
//! per_day = "1.00"
//! per_session = "0.50"
//! approve_above = "0.10"                   # dearer calls wait for the user
//! hosts = ["api.paperchain.example"]      # default: the [service] host
//! payees = []                              # empty: any payee
//! clients = { "claude-desktop" = "0.50" }  # per client, per day
//! networks = { "eip155:8453" = "1.00" }    # a main network is paid on only with a day cap
//! channel_deposit = "0.50"                 # batch-settlement: most deposited into one channel
//! [[policy.assets]]                        # besides USDC on Base, Polygon and their testnets
//! network = "eip155:8453"
//! address = "0x…"
//! symbol = "USDC"
//! decimals = 6
//!
//! [files]
//! folders = ["~/Documents"]                # where calls may read `{"path": …}` and save results
//! ```
//!
//! Environment variables override the file (`PAPERCHAIN_SERVICE_URL`,
//! `PAPERCHAIN_ROUTE`); the file itself is `PAPERCHAIN_CLIENT_CONFIG` when set. Only the user
//! changes it: the CLI, an editor, the desktop app; never the HTTP API or an MCP tool.
//! A configuration that cannot be followed is refused whole, the error naming the file and
//! the key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::Deserialize;

use crate::money::Dollars;

/// Why the configuration cannot be used; names the file and the key.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// Where a route runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RouteMode {
    /// On this machine, by the engine (free).
    Local,
    /// On the hosted service, paid by the wallet.
    Hosted,
    /// Locally, and on the hosted service when the engine cannot (a missing external tool,
    /// no reachable RPC for the chain).
    Auto,
}

impl RouteMode {
    /// Its name in the configuration and in headers.
    pub fn as_str(self) -> &'static str {
        match self {
            RouteMode::Local => "local",
            RouteMode::Hosted => "hosted",
            RouteMode::Auto => "auto",
        }
    }
}

impl FromStr for RouteMode {
    type Err = String;
    fn from_str(text: &str) -> Result<RouteMode, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "local" => Ok(RouteMode::Local),
            "hosted" => Ok(RouteMode::Hosted),
            "auto" => Ok(RouteMode::Auto),
            other => Err(format!("`{other}` is not a route mode (local, hosted or auto)")),
        }
    }
}

/// An asset the wallet may pay in: a dollar stablecoin on one network.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Asset {
    /// CAIP-2 network (`eip155:8453`).
    pub network: String,
    /// Token contract address.
    pub address: String,
    /// Its symbol, for messages.
    #[serde(default = "usdc")]
    pub symbol: String,
    /// Its decimals: caps in dollars become its atomic units with these.
    pub decimals: u8,
}

fn usdc() -> String {
    "USDC".into()
}

/// USDC where Paperchain's hosted service is paid: Base, Polygon, Solana, and their test networks.
pub fn known_assets() -> Vec<Asset> {
    let asset = |network: &str, address: &str| Asset {
        network: network.into(),
        address: address.into(),
        symbol: "USDC".into(),
        decimals: 6,
    };
    vec![
        asset("eip155:8453", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"),
        asset("eip155:137", "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359"),
        asset("eip155:84532", "0x036CbD53842c5426634e7929541eC2318f3dCF7e"),
        asset("eip155:80002", "0x41E94Eb019C0762f9Bfcf9Fb1E58725BfB0e7582"),
        asset(SOLANA_MAINNET, "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"),
        asset(SOLANA_DEVNET, "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU"),
    ]
}

/// Solana mainnet's CAIP-2 network.
pub const SOLANA_MAINNET: &str = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";
/// Solana devnet's CAIP-2 network.
pub const SOLANA_DEVNET: &str = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";

/// Test networks: paid on without a network cap (the other caps still hold).
pub const TEST_NETWORKS: &[&str] =
    &["eip155:84532", "eip155:80002", "eip155:11155111", "eip155:421614", "eip155:11155420", SOLANA_DEVNET];

/// The spend policy, as configured.
#[derive(Clone, Debug, Default)]
pub struct PolicyConfig {
    /// Most one call may cost.
    pub per_call: Option<Dollars>,
    /// Most all calls may cost in a UTC day.
    pub per_day: Option<Dollars>,
    /// Most the calls of one process (a server run, a CLI call) may cost.
    pub per_session: Option<Dollars>,
    /// Calls costing more wait for the user's approval.
    pub approve_above: Option<Dollars>,
    /// Hosted services (host names) that may be paid; empty means the configured service's.
    pub hosts: Vec<String>,
    /// Addresses that may be paid; empty means any.
    pub payees: Vec<String>,
    /// Per client (MCP client name, user agent): most it may spend in a UTC day.
    pub clients: BTreeMap<String, Dollars>,
    /// Per network: most spent there in a UTC day. A main network needs one.
    pub networks: BTreeMap<String, Dollars>,
    /// Assets paid in, besides [`known_assets`].
    pub assets: Vec<Asset>,
    /// Most deposited into one `batch-settlement` payment channel at a time; unset, no
    /// channel is opened (a deposit is not spend, but it is locked in the escrow until
    /// refunded). Each call's voucher is spend, under the caps above.
    pub channel_deposit: Option<Dollars>,
    /// Why nothing is paid at all: no configuration is confirmed ([`crate::confirmed`]).
    pub locked: Option<String>,
}

/// The whole client configuration.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// The hosted service routed calls go to (`https://…`, no trailing slash).
    pub service_url: Option<String>,
    /// How long a routed call may take, seconds.
    pub service_timeout: u64,
    /// Routes' mode when nothing else says.
    pub default_route: RouteMode,
    /// Per route (operation name or path).
    pub routes: BTreeMap<String, RouteMode>,
    /// The spend policy.
    pub policy: PolicyConfig,
    /// Folders whose files a local call may read by path and write results into (absolute,
    /// `~` expanded); none means no path is taken.
    pub folders: Vec<PathBuf>,
    /// The file this was read from, when there was one.
    pub file: Option<PathBuf>,
    /// The configuration its owner confirmed, when the file says more than it
    /// ([`crate::confirmed::meet`]): hosts, payees and routes must be allowed by both.
    pub ceiling: Option<std::sync::Arc<ClientConfig>>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            service_url: None,
            service_timeout: 120,
            default_route: RouteMode::Local,
            routes: BTreeMap::new(),
            policy: PolicyConfig::default(),
            folders: Vec::new(),
            file: None,
            ceiling: None,
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    service: ServiceTable,
    #[serde(default)]
    routing: RoutingTable,
    #[serde(default)]
    policy: PolicyTable,
    #[serde(default)]
    files: FilesTable,
    /// The hosted service's own table (`paperchain serve --hosted`): not the client's.
    #[serde(default)]
    #[allow(dead_code)]
    hosted: Option<toml::Value>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ServiceTable {
    url: Option<String>,
    timeout_seconds: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RoutingTable {
    default: Option<RouteMode>,
    #[serde(default)]
    routes: BTreeMap<String, RouteMode>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FilesTable {
    #[serde(default)]
    folders: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct PolicyTable {
    per_call: Option<String>,
    per_day: Option<String>,
    per_session: Option<String>,
    approve_above: Option<String>,
    #[serde(default)]
    hosts: Vec<String>,
    #[serde(default)]
    payees: Vec<String>,
    #[serde(default)]
    clients: BTreeMap<String, String>,
    #[serde(default)]
    networks: BTreeMap<String, String>,
    #[serde(default)]
    assets: Vec<Asset>,
    channel_deposit: Option<String>,
}

/// The user's config folder: `$XDG_CONFIG_HOME/paperchain`, else `~/.config/paperchain`.
pub fn config_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("paperchain");
    }
    match std::env::var_os("HOME") {
        Some(home) => PathBuf::from(home).join(".config/paperchain"),
        None => std::env::temp_dir().join("paperchain-config"),
    }
}

/// The user's data folder: `$XDG_DATA_HOME/paperchain`, else `~/.local/share/paperchain`.
pub fn data_dir() -> PathBuf {
    paperchain_engine_core::user_data_dir()
}

/// The configuration file: `PAPERCHAIN_CLIENT_CONFIG`, else `config.toml` in [`config_dir`].
pub fn config_file() -> PathBuf {
    match std::env::var_os("PAPERCHAIN_CLIENT_CONFIG").filter(|f| !f.is_empty()) {
        Some(file) => PathBuf::from(file),
        None => config_dir().join("config.toml"),
    }
}

impl ClientConfig {
    /// The configuration of this user: the file (when it exists), then the environment.
    pub fn load() -> Result<ClientConfig, ConfigError> {
        let file = config_file();
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(ConfigError(format!("reading {}: {e}", file.display()))),
        };
        ClientConfig::of_file(text.as_deref(), &file)
    }

    /// The configuration of `file`'s text (`None`: there is no file, the defaults), then
    /// the environment.
    pub fn of_file(text: Option<&str>, file: &Path) -> Result<ClientConfig, ConfigError> {
        let mut config = match text {
            Some(text) => ClientConfig::parse(text, Some(file))?,
            None => ClientConfig::default(),
        };
        config.apply_env(|name| std::env::var(name).ok())?;
        Ok(config)
    }

    /// A configuration from the text of a file (`file` names it in errors).
    pub fn parse(text: &str, file: Option<&Path>) -> Result<ClientConfig, ConfigError> {
        let name = file.map(|f| f.display().to_string()).unwrap_or_else(|| "the configuration".into());
        let table: FileConfig = toml::from_str(text).map_err(|e| ConfigError(format!("{name}: {e}")))?;
        let dollars = |key: &str, value: &Option<String>| -> Result<Option<Dollars>, ConfigError> {
            value
                .as_deref()
                .map(|v| v.parse::<Dollars>().map_err(|e| ConfigError(format!("{name}: policy.{key}: {e}"))))
                .transpose()
        };
        let map = |key: &str, values: &BTreeMap<String, String>| -> Result<BTreeMap<String, Dollars>, ConfigError> {
            values
                .iter()
                .map(|(k, v)| {
                    v.parse::<Dollars>()
                        .map(|d| (k.clone(), d))
                        .map_err(|e| ConfigError(format!("{name}: policy.{key}.\"{k}\": {e}")))
                })
                .collect()
        };
        let p = &table.policy;
        for asset in &p.assets {
            check_asset(asset).map_err(|e| ConfigError(format!("{name}: policy.assets: {e}")))?;
        }
        for network in p.networks.keys() {
            check_network(network).map_err(|e| ConfigError(format!("{name}: policy.networks: {e}")))?;
        }
        for payee in &p.payees {
            if !is_address_of("eip155:", payee) && !is_address_of("solana:", payee) {
                return Err(ConfigError(format!("{name}: policy.payees: `{payee}` is not an EVM or Solana address")));
            }
        }
        let policy = PolicyConfig {
            per_call: dollars("per_call", &p.per_call)?,
            per_day: dollars("per_day", &p.per_day)?,
            per_session: dollars("per_session", &p.per_session)?,
            approve_above: dollars("approve_above", &p.approve_above)?,
            hosts: p.hosts.iter().map(|h| h.trim().to_ascii_lowercase()).collect(),
            payees: p.payees.clone(),
            clients: map("clients", &p.clients)?,
            networks: map("networks", &p.networks)?,
            assets: p.assets.clone(),
            channel_deposit: dollars("channel_deposit", &p.channel_deposit)?,
            locked: None,
        };
        let service_url = table
            .service
            .url
            .as_deref()
            .map(|u| check_service_url(u).map_err(|e| ConfigError(format!("{name}: service.url: {e}"))))
            .transpose()?;
        let folders = table
            .files
            .folders
            .iter()
            .map(|folder| granted_folder(folder).map_err(|e| ConfigError(format!("{name}: files.folders: {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ClientConfig {
            service_url,
            service_timeout: table.service.timeout_seconds.unwrap_or(120).max(1),
            default_route: table.routing.default.unwrap_or(RouteMode::Local),
            routes: table.routing.routes,
            policy,
            folders,
            file: file.map(Path::to_path_buf),
            ceiling: None,
        })
    }

    /// Applies `PAPERCHAIN_SERVICE_URL` and `PAPERCHAIN_ROUTE` (the default mode).
    pub fn apply_env(&mut self, var: impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        if let Some(url) = var("PAPERCHAIN_SERVICE_URL").filter(|u| !u.trim().is_empty()) {
            self.service_url =
                Some(check_service_url(&url).map_err(|e| ConfigError(format!("PAPERCHAIN_SERVICE_URL: {e}")))?);
        }
        if let Some(mode) = var("PAPERCHAIN_ROUTE").filter(|m| !m.trim().is_empty()) {
            self.default_route = mode.parse().map_err(|e| ConfigError(format!("PAPERCHAIN_ROUTE: {e}")))?;
        }
        Ok(())
    }

    /// How `operation` (served at `path`) runs when the call itself does not say.
    pub fn mode_of(&self, operation: &str, path: &str) -> RouteMode {
        let mode = self.routes.get(operation).or_else(|| self.routes.get(path)).copied().unwrap_or(self.default_route);
        match &self.ceiling {
            Some(ceiling) => crate::confirmed::more_local(mode, ceiling.mode_of(operation, path)),
            None => mode,
        }
    }

    /// Every asset the wallet may pay in: the known USDC and the configured ones.
    pub fn assets(&self) -> Vec<Asset> {
        let mut assets = known_assets();
        assets.extend(self.policy.assets.iter().cloned());
        assets
    }
}

/// A folder granted to local calls (`files.folders`, `--folder`): an absolute path, or one
/// starting with `~/` (the home folder); never the root, the home folder itself or a
/// system folder, which would grant every file there. It need not exist yet (a removable
/// drive); a call checks the real path when it uses it.
pub fn granted_folder(text: &str) -> Result<PathBuf, String> {
    let trimmed = text.trim();
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let path = match trimmed.strip_prefix("~/") {
        Some(rest) => match &home {
            Some(home) => home.join(rest),
            None => return Err(format!("`{text}`: there is no home folder to start `~/` from")),
        },
        None if trimmed == "~" => return Err(format!("`{text}` grants the whole home folder; name a folder in it")),
        None => PathBuf::from(trimmed),
    };
    if !path.is_absolute() {
        return Err(format!("`{text}` is not an absolute path (write /home/me/Documents or ~/Documents)"));
    }
    // `..` would make the grant say one thing and mean another.
    if path.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return Err(format!("`{text}` contains `..`; name the folder itself"));
    }
    let normal: PathBuf = path.components().collect();
    let too_wide = normal.parent().is_none()
        || home.as_deref().is_some_and(|home| normal == home)
        || ["/etc", "/usr", "/bin", "/sbin", "/lib", "/boot", "/dev", "/proc", "/sys", "/var", "/root", "/home"]
            .iter()
            .any(|system| normal == Path::new(system));
    if too_wide {
        return Err(format!("`{text}` would grant too much; name a folder of your documents"));
    }
    Ok(normal)
}

/// The host of `url`, in lower case.
pub fn host_of(url: &str) -> Option<String> {
    url::Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_ascii_lowercase))
}

/// A service URL: http(s), a host, no query; returned without a trailing slash.
pub fn check_service_url(text: &str) -> Result<String, String> {
    let url = url::Url::parse(text.trim()).map_err(|e| format!("`{text}` is not a URL ({e})"))?;
    if !matches!(url.scheme(), "https" | "http") {
        return Err(format!("`{text}` is not an http(s) URL"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("`{text}` names no host"));
    }
    // Over plain HTTP anyone on the way could rewrite the payee of a 402: only this machine.
    let loopback = match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    if url.scheme() == "http" && !loopback {
        return Err(format!("`{text}` is plain HTTP: a hosted service is paid over https (http only on this machine)"));
    }
    if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() || url.password().is_some() {
        return Err(format!("`{text}` must be a plain base URL (no query, fragment or credentials)"));
    }
    Ok(url.as_str().trim_end_matches('/').to_string())
}

fn check_network(network: &str) -> Result<(), String> {
    let ok = match network.split_once(':') {
        Some(("eip155", id)) => id.parse::<u64>().is_ok(),
        Some(("solana", reference)) => {
            reference.len() == 32 && reference.bytes().all(|b| b.is_ascii_alphanumeric() && !b"0OIl".contains(&b))
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{network}` is not a CAIP-2 network (eip155:<chain id>, or solana:<32 characters of genesis hash>)"
        ))
    }
}

/// Whether `address` is an address of `network`'s kind: 0x and 40 hex digits on EVM
/// chains, base58 of 32 bytes on Solana.
pub fn is_address_of(network: &str, address: &str) -> bool {
    if network.starts_with("solana:") {
        paperchain_protocol::exact_svm::address(address, "").is_ok()
    } else {
        address.parse::<alloy::primitives::Address>().is_ok()
    }
}

/// Whether two addresses of `network` are the same: EVM addresses in any letter case,
/// base58 exactly.
pub fn same_address(network: &str, a: &str, b: &str) -> bool {
    if network.starts_with("solana:") { a == b } else { a.eq_ignore_ascii_case(b) }
}

/// An asset the wallet can pay in: a CAIP-2 network, an address of its kind, at most 30
/// decimals.
pub fn check_asset(asset: &Asset) -> Result<(), String> {
    check_network(&asset.network)?;
    if !is_address_of(&asset.network, &asset.address) {
        return Err(format!("`{}` is not an address", asset.address));
    }
    if asset.decimals > 30 {
        return Err(format!("{}: {} decimals is more than a token has", asset.address, asset.decimals));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_file_reads() {
        let text = r#"
            [service]
            url = "https://api.example.test/"
            [routing]
            default = "auto"
            routes = { rotate_pdf_pages = "hosted", "/v1/chain/balance" = "local" }
            [policy]
            per_call = "0.05"
            per_day = "1"
            approve_above = "0.10"
            hosts = ["Other.Example.test"]
            clients = { "claude-desktop" = "0.5" }
            networks = { "eip155:8453" = "2.00" }
            [[policy.assets]]
            network = "eip155:8453"
            address = "0x1111111111111111111111111111111111111111"
            decimals = 6
        "#;
        let config = ClientConfig::parse(text, None).unwrap();
        assert_eq!(config.service_url.as_deref(), Some("https://api.example.test"));
        assert_eq!(config.mode_of("rotate_pdf_pages", "/v1/pdf/rotate"), RouteMode::Hosted);
        assert_eq!(config.mode_of("get_balance", "/v1/chain/balance"), RouteMode::Local);
        assert_eq!(config.mode_of("merge_pdfs", "/v1/pdf/merge"), RouteMode::Auto);
        assert_eq!(config.policy.per_call.unwrap().micros(), 50_000);
        assert_eq!(config.policy.per_day.unwrap().micros(), 1_000_000);
        assert_eq!(config.policy.hosts, vec!["other.example.test"]);
        assert_eq!(config.policy.clients["claude-desktop"].micros(), 500_000);
        assert_eq!(config.assets().len(), known_assets().len() + 1);
    }

    #[test]
    fn mistakes_name_the_key() {
        let error = |text: &str| ClientConfig::parse(text, Some(Path::new("c.toml"))).unwrap_err().to_string();
        assert!(
            error("[policy]\nper_day = \"1.2.3\"").contains("policy.per_day"),
            "{}",
            error("[policy]\nper_day = \"1.2.3\"")
        );
        assert!(error("[policy]\nnetworks = { base = \"1\" }").contains("`base` is not a CAIP-2 network"));
        assert!(error("[routing]\ndefault = \"cloud\"").contains("c.toml"));
        assert!(error("[service]\nurl = \"ftp://x\"").contains("not an http(s) URL"));
        assert!(error("[service]\nurl = \"http://api.example.test\"").contains("plain HTTP"));
        assert!(ClientConfig::parse("[service]\nurl = \"http://127.0.0.1:8402\"", None).is_ok());
        assert!(error("[polcy]\nper_day = \"1\"").contains("polcy"));
        assert!(error("[policy]\nclients = { a = \"-1\" }").contains("policy.clients.\"a\""));
        let mut config = ClientConfig::default();
        let env = |name: &str| (name == "PAPERCHAIN_ROUTE").then(|| "sometimes".to_string());
        assert!(config.apply_env(env).unwrap_err().to_string().contains("PAPERCHAIN_ROUTE"));
    }
}
