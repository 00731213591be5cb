//! The whole Paperchain server as a library: the HTTP API of every catalog route, the MCP
//! endpoints (`/mcp/chain`, `/mcp/docs`), 24-hour file links, and hosted mode (the paywall,
//! a remote facilitator or the sandbox chain) when asked for.
//!
//! [`start`] builds and starts all of it from [`Options`]; the [`Server`] it returns serves
//! until the caller stops it ([`Server::stop`], or [`Server::run_until`] a signal of the
//! caller's choosing), and leaves no task, port, process or open file behind once that
//! returns. `paperchain serve`, the desktop app and the background service all start the
//! server this way; none of them assembles it by hand.
//!
//! In local mode the server claims its data folder ([`instance`]): a second local server
//! for the same folder does not start, and says where the first one is.
//!
//! What [`start`] puts together: the engine context (from the environment unless given;
//! a configuration it would not follow stops it), the HTTP API with the MCP endpoints
//! mounted beside it, and then either hosted mode (the paywall of `paperchain-hosted`,
//! with a remote facilitator or the sandbox, which listens on loopback only since its
//! test payer's key is printed) or local mode (the paying client it is given, routing and
//! recording calls; the app at `/app` with its approval queue and desktop; the payments
//! an earlier run left open settled from the chain, [`settle_open_payments`]).
//! [`serve_stdio`] is `paperchain mcp --stdio` with its own engine, assembled the same
//! way; [`local_config_from_env`] and [`approval_wait_from_env`] read the settings of a
//! local server started without a command line (the desktop app).
//!
//! Hosted mode is behind the default `hosted` feature: the desktop app builds this crate
//! without it, and so without any of the hosted service's code.
//!
//! What this crate must not do: parse arguments, print, or contain route or payment logic.

pub mod instance;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use paperchain_calls::CallPath;
use paperchain_engine::{Context, Family};
use paperchain_gateway::{HttpServer, Running, ServerConfig};
#[cfg(feature = "hosted")]
use paperchain_hosted::config::{ConfigSources, HostedConfig};
#[cfg(feature = "hosted")]
use paperchain_hosted::paywall::Paywall;
#[cfg(feature = "hosted")]
pub use paperchain_hosted::sandbox::SandboxOptions;
#[cfg(feature = "hosted")]
use paperchain_hosted::{Hosted, HostedOptions};
use paperchain_wallet::approvals::ApprovalQueue;
use paperchain_wallet::client::PayingClient;
use serde_json::Value;

use crate::instance::{ClaimError, Instance, InstanceLock};

pub use paperchain_gateway::server::interrupted;

/// What to start.
pub struct Options {
    /// Address, data folder, public URL, allowed hosts, per-call timeout.
    pub http: ServerConfig,
    /// Hosted mode, when wanted; local mode (no payments) otherwise.
    #[cfg(feature = "hosted")]
    pub hosted: Option<HostedMode>,
    /// The engine context; `None` reads the configuration from the environment
    /// (`PAPERCHAIN_CHAINS`, `PAPERCHAIN_RPC_*`…) and refuses one it would not follow.
    pub ctx: Option<Context>,
    /// Local mode's paying client: routes calls as the user configured and records every
    /// call in the ledger. `None` runs every call here, unrecorded. Not used in hosted mode.
    pub client: Option<Arc<PayingClient>>,
    /// The runtime folder where a local server claims its data folder
    /// ([`instance::claim`]); `None` claims nothing (hosted mode, which may run beside it).
    pub runtime_dir: Option<PathBuf>,
    /// Where the paying client's approvals wait for the app (the client must have been
    /// made with this queue as its approver). Local mode only.
    pub approvals: Option<Arc<ApprovalQueue>>,
    /// The desktop app this server runs in (its save dialog, its login item). Local mode only.
    pub desktop: Option<Arc<dyn paperchain_gateway::app::Desktop>>,
}

impl Options {
    /// Local mode with `http`, the engine configured from the environment, claiming the
    /// data folder in the usual runtime folder.
    pub fn local(http: ServerConfig) -> Options {
        let runtime_dir = Some(instance::runtime_dir(&http.data_dir));
        Options {
            http,
            #[cfg(feature = "hosted")]
            hosted: None,
            ctx: None,
            client: None,
            runtime_dir,
            approvals: None,
            desktop: None,
        }
    }
}

/// How hosted mode is configured.
#[cfg(feature = "hosted")]
pub struct HostedMode {
    /// The hosted configuration file (TOML, a `[hosted]` table); environment variables win.
    pub config_file: Option<PathBuf>,
    /// The sandbox (local chain, test USDC, facilitator in process) instead of a remote
    /// facilitator; listens on loopback only, since its test payer's key is printed.
    pub sandbox: Option<SandboxOptions>,
}

/// Why the server did not start; the message names what to change.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct StartError {
    message: String,
    running: Option<Instance>,
}

impl StartError {
    fn new(message: String) -> StartError {
        StartError { message, running: None }
    }

    /// The local server that already serves this data folder, when that is why.
    pub fn running(&self) -> Option<&Instance> {
        self.running.as_ref()
    }
}

impl From<ClaimError> for StartError {
    fn from(e: ClaimError) -> StartError {
        let message = e.to_string();
        let running = match e {
            ClaimError::Running(instance) => Some(instance),
            _ => None,
        };
        StartError { message, running }
    }
}

/// A started server.
pub struct Server {
    http: Running,
    #[cfg(feature = "hosted")]
    hosted: Option<Hosted>,
    sandbox: Option<Value>,
    // Held while serving; released (and the address file removed) when the server stops.
    claim: Option<InstanceLock>,
}

/// Builds everything `options` asks for and starts serving; returns once the port answers.
pub async fn start(options: Options) -> Result<Server, StartError> {
    #[cfg(feature = "hosted")]
    let Options { http: config, hosted: mode, ctx, client, runtime_dir, approvals, desktop } = options;
    #[cfg(not(feature = "hosted"))]
    let Options { http: config, ctx, client, runtime_dir, approvals, desktop } = options;
    #[cfg(not(feature = "hosted"))]
    let mode: Option<std::convert::Infallible> = None;
    #[cfg(feature = "hosted")]
    if mode.as_ref().is_some_and(|m| m.sandbox.is_some()) && !config.listen.ip().is_loopback() {
        return Err(StartError::new(format!(
            "the sandbox listens on 127.0.0.1 only (its test payer's key is printed); drop --listen {}",
            config.listen
        )));
    }
    if !config.listen.ip().is_loopback() {
        tracing::warn!(listen = %config.listen, "listening beyond loopback: anyone who can reach this address can use it");
    }
    // A configuration the server would not follow (a malformed PAPERCHAIN_CHAINS) stops it here.
    let ctx = match ctx {
        Some(ctx) => ctx,
        None => Context::try_new().map_err(|e| StartError::new(e.to_string()))?,
    };
    // Before binding, so a second server says where the first is rather than "address in use".
    let mut claim = match (&runtime_dir, &mode) {
        (Some(runtime), None) => Some(instance::claim(runtime, &config.data_dir)?),
        _ => None,
    };
    let listener = config.bind().await.map_err(|e| StartError::new(format!("binding {}: {e}", config.listen)))?;
    let local_addr = listener.local_addr().map_err(|e| StartError::new(format!("binding {}: {e}", config.listen)))?;
    #[cfg(feature = "hosted")]
    let base_url = config.base_url(local_addr);
    #[cfg(feature = "hosted")]
    let (ctx, hosted) = match mode {
        None => (ctx, None),
        Some(mode) => {
            let hosted = start_hosted(&config, &base_url, mode, ctx).await?;
            (hosted.ctx.clone(), Some(hosted))
        }
    };
    #[cfg(not(feature = "hosted"))]
    let hosted: Option<NoHosted> = mode.map(|never| match never {});
    #[cfg(feature = "hosted")]
    let sandbox = hosted.as_ref().and_then(|h| h.sandbox_line(&base_url));
    #[cfg(not(feature = "hosted"))]
    let sandbox = None;
    if let (None, Some(client)) = (&hosted, &client) {
        // This server owns the data folder now (claimed above): payments a crash left open
        // in its ledger are settled from the chain.
        settle_open_payments(client, &ctx);
    }
    let mut server = HttpServer::new(config.clone(), ctx).mount(paperchain_mcp::http::mount);
    if hosted.is_none() {
        // The app and its API are the local user's, never the hosted service's.
        server = server.mount(paperchain_gateway::app::mount);
    }
    match (&hosted, client) {
        #[cfg(feature = "hosted")]
        (Some(hosted), _) => server = server.paywall(hosted.paywall.clone()),
        #[cfg(not(feature = "hosted"))]
        (Some(never), _) => match *never {},
        (None, Some(client)) => server = server.client(client),
        (None, None) => {}
    }
    if let (None, Some(approvals)) = (&hosted, approvals) {
        server = server.approvals(approvals);
    }
    if let (None, Some(desktop)) = (&hosted, desktop) {
        server = server.desktop(desktop);
    }
    let http = match server.start_on(listener).await {
        Ok(http) => http,
        Err(e) => {
            #[cfg(feature = "hosted")]
            if let Some(hosted) = hosted {
                hosted.stop().await;
            }
            return Err(StartError::new(format!("serving on {}: {e}", config.listen)));
        }
    };
    if let Some(claim) = &mut claim {
        // The address clients connect to: the loopback one when listening everywhere.
        let base_url = match local_addr.ip().is_unspecified() {
            true => format!("http://127.0.0.1:{}", local_addr.port()),
            false => format!("http://{local_addr}"),
        };
        let published = claim.publish(&Instance {
            pid: std::process::id(),
            base_url,
            data_dir: config.data_dir.clone(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            started_at: paperchain_wallet::ledger::now_secs(),
        });
        if let Err(e) = published {
            // Clients then start their own engine; serving goes on.
            tracing::warn!(error = %e, "could not write the server's address in the runtime folder");
        }
    }
    #[cfg(feature = "hosted")]
    return Ok(Server { http, hosted, sandbox, claim });
    #[cfg(not(feature = "hosted"))]
    Ok(Server { http, sandbox, claim })
}

/// Settles, in the background, the payments an earlier run left open in `client`'s ledger
/// (killed mid-call, an answer lost), from what the chains of `ctx` say. Every process that
/// owns a ledger does it as it starts: a local server ([`start`]) and `paperchain mcp
/// --stdio` running its own engine.
pub fn settle_open_payments(client: &PayingClient, ctx: &Context) {
    let (ledger, chains, clusters) = (client.ledger().clone(), ctx.chains.clone(), ctx.solana.clone());
    tokio::spawn(async move {
        let now = paperchain_wallet::ledger::now_secs();
        match paperchain_wallet::reconcile::settle_open(&ledger, &chains, &clusters, now).await {
            Ok(checks) => {
                for check in checks {
                    tracing::info!(call = %check.call_id, was = %check.was, verdict = %check.verdict, tx = ?check.tx,
                        "an open payment checked on chain: {}", check.detail);
                }
            }
            Err(e) => tracing::warn!(error = %e, "open payments could not be checked on chain"),
        }
    });
}

/// `paperchain mcp --stdio` with its own engine: settles the payments an earlier run left
/// open in `client`'s ledger, then serves the tools of `families` (on `surface`) on stdin
/// and stdout until the client closes the stream, each call going where `client`'s
/// configuration says.
pub async fn serve_stdio(
    families: Vec<Family>,
    surface: paperchain_mcp::Surface,
    ctx: Context,
    client: Arc<PayingClient>,
) -> std::io::Result<()> {
    settle_open_payments(&client, &ctx);
    let catalog = Arc::new(paperchain_engine::catalog::standard());
    let calls = CallPath::local(catalog, ctx, Some(client), STDIO_CALL_TIMEOUT);
    paperchain_mcp::stdio::serve_stdio(families, surface, calls).await
}

/// Longest a call over `mcp --stdio` may run here.
const STDIO_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// The local server's settings from the environment, as `paperchain serve` reads them
/// without options: `PAPERCHAIN_LISTEN` (default 127.0.0.1:8402), `PAPERCHAIN_PUBLIC_URL`,
/// `PAPERCHAIN_ALLOW_HOSTS` (comma-separated), `PAPERCHAIN_REQUEST_TIMEOUT` (seconds, default
/// 120), for a server of `data_dir`. A value that cannot be used is an error naming it.
pub fn local_config_from_env(data_dir: PathBuf) -> Result<ServerConfig, StartError> {
    let var = |name: &str| std::env::var(name).ok().map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    let mut http = ServerConfig::local(data_dir);
    if let Some(listen) = var("PAPERCHAIN_LISTEN") {
        http.listen = listen.parse().map_err(|_| {
            StartError::new(format!("PAPERCHAIN_LISTEN: `{listen}` is not an address such as 127.0.0.1:8402"))
        })?;
    }
    http.public_url = var("PAPERCHAIN_PUBLIC_URL");
    if let Some(hosts) = var("PAPERCHAIN_ALLOW_HOSTS") {
        http.allowed_hosts = hosts.split(',').map(|h| h.trim().to_string()).filter(|h| !h.is_empty()).collect();
    }
    if let Some(seconds) = var("PAPERCHAIN_REQUEST_TIMEOUT") {
        let seconds: u64 = seconds.parse().map_err(|_| {
            StartError::new(format!("PAPERCHAIN_REQUEST_TIMEOUT: `{seconds}` is not a whole number of seconds"))
        })?;
        http.request_timeout = std::time::Duration::from_secs(seconds.max(1));
    }
    Ok(http)
}

/// How long a payment above `policy.approve_above` waits for the user's answer:
/// `PAPERCHAIN_APPROVAL_WAIT` seconds, 120 by default.
pub fn approval_wait_from_env() -> Result<std::time::Duration, StartError> {
    match std::env::var("PAPERCHAIN_APPROVAL_WAIT").ok().map(|v| v.trim().to_string()).filter(|v| !v.is_empty()) {
        None => Ok(std::time::Duration::from_secs(120)),
        Some(text) => text.parse::<u64>().map(|s| std::time::Duration::from_secs(s.max(1))).map_err(|_| {
            StartError::new(format!("PAPERCHAIN_APPROVAL_WAIT: `{text}` is not a whole number of seconds"))
        }),
    }
}

/// A server built without hosted mode has none to start.
#[cfg(not(feature = "hosted"))]
enum NoHosted {}

#[cfg(feature = "hosted")]
async fn start_hosted(
    config: &ServerConfig,
    base_url: &str,
    mode: HostedMode,
    ctx: Context,
) -> Result<Hosted, StartError> {
    let sources = ConfigSources {
        file: mode.config_file.as_deref(),
        data_dir: &config.data_dir,
        // The listen address is a public URL only for the sandbox, which is local by design.
        public_url: Some(base_url).filter(|_| config.public_url.is_some() || mode.sandbox.is_some()),
        sandbox: mode.sandbox.is_some(),
    };
    let hosted_config = HostedConfig::load(&sources).map_err(|e| StartError::new(e.to_string()))?;
    let catalog = paperchain_engine::catalog::standard();
    let options = HostedOptions { run_timeout: config.request_timeout, ..HostedOptions::default() };
    let hosted = match mode.sandbox {
        Some(sandbox) => Hosted::start_sandbox(hosted_config, &catalog, ctx, options, sandbox).await,
        None => Hosted::start(hosted_config, &catalog, ctx, options).await,
    };
    hosted.map_err(|e| StartError::new(e.to_string()))
}

impl Server {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.http.local_addr()
    }

    /// Its base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        self.http.base_url()
    }

    /// In the sandbox, where everything is (`{"sandbox": {base_url, rpc_url, chain_id, token,
    /// payer, payer_private_key, pay_to}}`): test money on a throwaway chain.
    pub fn sandbox(&self) -> Option<&Value> {
        self.sandbox.as_ref()
    }

    /// The paywall, in hosted mode.
    #[cfg(feature = "hosted")]
    pub fn paywall(&self) -> Option<&Arc<Paywall>> {
        self.hosted.as_ref().map(|h| &h.paywall)
    }

    /// Stops serving (calls in flight finish), then closes the hosted store and stops the
    /// sandbox chain; returns when nothing of the server is left.
    pub async fn stop(self) -> std::io::Result<()> {
        let served = self.http.stop().await;
        #[cfg(feature = "hosted")]
        if let Some(hosted) = self.hosted {
            hosted.stop().await;
        }
        drop(self.claim);
        served
    }

    /// Serves until `signal` completes (or serving fails), then stops as [`Server::stop`] does.
    pub async fn run_until(self, signal: impl std::future::Future<Output = ()>) -> std::io::Result<()> {
        let served = self.http.run_until(signal).await;
        #[cfg(feature = "hosted")]
        if let Some(hosted) = self.hosted {
            hosted.stop().await;
        }
        drop(self.claim);
        served
    }
}
