//! The HTTP server: configuration, layers, and one builder that makes the application and
//! runs it until the caller stops it.
//!
//! [`HttpServer`] is the only way in: [`HttpServer::router`] gives the application (tests and
//! benches drive it on a listener of their own), [`HttpServer::start_on`] serves it on a listener
//! in a task and hands back a [`Running`] whose [`Running::stop`] ends everything the server
//! started (connections, the file-link sweeper, the paywall's housekeeping) before it returns.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{MatchedPath, Request};
use axum::middleware::{self, Next};
use axum::response::Response;
use paperchain_calls::CallPath;
use paperchain_calls::paywall::Paywall;
use paperchain_engine::Context;
use paperchain_wallet::approvals::ApprovalQueue;
use paperchain_wallet::client::PayingClient;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::files::{FileStore, LINK_TTL};
use crate::host::{HostPolicy, require_allowed_host};
use crate::routes::{AppState, BODY_LIMIT, router};
use crate::service_docs::ServiceDocs;

/// How the server runs.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Where linked result files are kept.
    pub data_dir: PathBuf,
    /// Base URL written in links and documents; `http://{listen}` when unset.
    pub public_url: Option<String>,
    /// Longest a call may take.
    pub request_timeout: Duration,
    /// Host names answered besides loopback, the public URL's host and a specific listen address.
    pub allowed_hosts: Vec<String>,
    /// Request-body bytes held at once across all calls, MCP's included
    /// (`PAPERCHAIN_BODY_BUDGET_MIB`; never below the body limit).
    pub body_budget: usize,
}

impl ServerConfig {
    /// Local defaults: 127.0.0.1:8402, 120 s per call.
    pub fn local(data_dir: PathBuf) -> ServerConfig {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8402)),
            data_dir,
            public_url: None,
            request_timeout: Duration::from_secs(120),
            allowed_hosts: Vec::new(),
            body_budget: crate::intake::budget_from_env(),
        }
    }

    /// Absolute base URL of a server of this configuration listening on `local_addr`,
    /// without a trailing slash: the public URL, else `http://{local_addr}`.
    pub fn base_url(&self, local_addr: SocketAddr) -> String {
        self.public_url.clone().unwrap_or_else(|| format!("http://{local_addr}")).trim_end_matches('/').to_string()
    }

    /// The store of 24-hour file links (`output: "url"`), served at `/v1/files/{id}`.
    pub fn file_store(&self) -> std::io::Result<FileStore> {
        FileStore::open(self.data_dir.join("files"), LINK_TTL)
    }

    /// Binds the configured address, refusing to answer every name on all addresses.
    pub async fn bind(&self) -> std::io::Result<TcpListener> {
        if self.listen.ip().is_unspecified() && self.public_url.is_none() && self.allowed_hosts.is_empty() {
            // Every name that resolves here would be answered, including a rebinding page's.
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "listening on all addresses ({}) needs --public-url or --allow-host to say which names this server answers",
                    self.listen
                ),
            ));
        }
        TcpListener::bind(self.listen).await
    }
}

/// A hosted service's paywall as the HTTP server runs it: the call path's paywall, told
/// where `output: "url"` files are kept, with housekeeping that runs as long as the server.
pub trait ServedPaywall: Paywall {
    /// Keeps the files of `output: "url"` calls in `files`, linked under `base_url`.
    fn keep_files_in(&self, files: FileStore, base_url: String);

    /// Housekeeping (recovery, counts, pruning) until the server stops.
    fn maintain(self: Arc<Self>) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// What routes mounted beside the HTTP API (the MCP endpoints) share with it.
pub struct Mount<'a> {
    /// Where calls go: the catalog, the engine context, the paywall or the paying client.
    pub calls: &'a CallPath,
    /// The API's file-link store.
    pub files: &'a FileStore,
    /// The API's base URL.
    pub base_url: &'a str,
    /// Longest a call may take.
    pub request_timeout: Duration,
    /// The app's session (its page's token).
    pub app_session: &'a Arc<crate::app::Session>,
    /// Payments waiting for the user's approval, in local mode with a wallet.
    pub approvals: Option<&'a Arc<ApprovalQueue>>,
    /// The data folder (the ledger, the wallet's keystore file).
    pub data_dir: &'a std::path::Path,
    /// The desktop app around this server, when there is one.
    pub desktop: Option<&'a Arc<dyn crate::app::Desktop>>,
    /// Cancelled when the server stops: what a mount keeps running of its own (MCP
    /// sessions and their event streams) ends with it.
    pub stopping: &'a tokio_util::sync::CancellationToken,
}

type SharedPaywall = Arc<dyn ServedPaywall>;

type Mounter = Box<dyn FnOnce(&Mount<'_>) -> Router + Send>;

/// The HTTP server of one configuration: the API of every catalog route, the service
/// documents and file links, in hosted mode behind the paywall, with any routes mounted
/// beside it behind the same layers (Host check, request tracing).
pub struct HttpServer {
    config: ServerConfig,
    ctx: Context,
    paywall: Option<SharedPaywall>,
    client: Option<Arc<PayingClient>>,
    approvals: Option<Arc<ApprovalQueue>>,
    desktop: Option<Arc<dyn crate::app::Desktop>>,
    mounts: Vec<Mounter>,
}

impl HttpServer {
    /// A local server (no paywall) of `config` running the engine with `ctx`.
    pub fn new(config: ServerConfig, ctx: Context) -> HttpServer {
        HttpServer { config, ctx, paywall: None, client: None, approvals: None, desktop: None, mounts: Vec::new() }
    }

    /// Local mode with the wallet: calls run where the user's routing says (here, or the
    /// hosted service, paid), and each one is in the ledger.
    pub fn client(mut self, client: Arc<PayingClient>) -> HttpServer {
        self.client = Some(client);
        self
    }

    /// The queue the paying client's approvals wait in, shown and answered by the app.
    pub fn approvals(mut self, approvals: Arc<ApprovalQueue>) -> HttpServer {
        self.approvals = Some(approvals);
        self
    }

    /// The desktop app this server runs in: the app's page saves and sets login items through it.
    pub fn desktop(mut self, desktop: Arc<dyn crate::app::Desktop>) -> HttpServer {
        self.desktop = Some(desktop);
        self
    }

    /// Hosted mode: every route goes through `paywall`.
    pub fn paywall(mut self, paywall: Arc<dyn ServedPaywall>) -> HttpServer {
        self.paywall = Some(paywall);
        self
    }

    /// Routes built by `mount` from what the API shares, served beside it.
    pub fn mount(mut self, mount: impl FnOnce(&Mount<'_>) -> Router + Send + 'static) -> HttpServer {
        self.mounts.push(Box::new(mount));
        self
    }

    /// The application as it answers at `local_addr` (used for the default base URL),
    /// without the background work [`HttpServer::start_on`] runs beside it.
    pub fn router(self, local_addr: SocketAddr) -> std::io::Result<Router> {
        Ok(self.assemble(local_addr, &tokio_util::sync::CancellationToken::new())?.0)
    }

    fn assemble(
        self,
        local_addr: SocketAddr,
        stopping: &tokio_util::sync::CancellationToken,
    ) -> std::io::Result<(Router, FileStore, Option<SharedPaywall>)> {
        let HttpServer { config, ctx, paywall, client, approvals, desktop, mounts } = self;
        let catalog = Arc::new(paperchain_engine::catalog::standard());
        let base_url = config.base_url(local_addr);
        let files = config.file_store()?;
        if let Some(paywall) = &paywall {
            paywall.keep_files_in(files.clone(), base_url.clone());
        }
        let docs = ServiceDocs::build(&catalog, &base_url, &ctx);
        let calls = match &paywall {
            Some(paywall) => CallPath::hosted(catalog, ctx, paywall.clone()),
            None => CallPath::local(catalog, ctx, client, config.request_timeout),
        };
        let app_session = Arc::new(crate::app::Session::new());
        // One budget for the bodies of the API and of what is mounted beside it (MCP).
        let body_budget = Arc::new(crate::routes::BodyBudget::new(config.body_budget, BODY_LIMIT));
        let mut mounted = Router::new();
        for mount in mounts {
            let shared = Mount {
                calls: &calls,
                files: &files,
                base_url: &base_url,
                request_timeout: config.request_timeout,
                app_session: &app_session,
                approvals: approvals.as_ref(),
                data_dir: &config.data_dir,
                desktop: desktop.as_ref(),
                stopping,
            };
            mounted = mounted.merge(mount(&shared));
        }
        let mounted =
            mounted.layer(middleware::from_fn_with_state((body_budget.clone(), BODY_LIMIT), crate::intake::hold_body));
        let state = Arc::new(AppState {
            calls,
            files: files.clone(),
            base_url,
            docs,
            request_timeout: config.request_timeout,
            body_limit: BODY_LIMIT,
            body_budget,
            app_session,
        });
        let hosts = Arc::new(HostPolicy::new(local_addr, config.public_url.as_deref(), &config.allowed_hosts));
        let app = mounted
            .merge(router(state))
            .layer(middleware::from_fn_with_state(hosts, require_allowed_host))
            .layer(middleware::from_fn(trace_request));
        Ok((app, files, paywall))
    }

    /// Starts serving on `listener`: the application, the file-link sweep (every ten minutes) and, in
    /// hosted mode, the paywall's housekeeping, all in tasks that [`Running::stop`] ends.
    pub async fn start_on(self, listener: TcpListener) -> std::io::Result<Running> {
        let local_addr = listener.local_addr()?;
        let base_url = self.config.base_url(local_addr);
        let mode = if self.paywall.is_some() { "hosted" } else { "local" };
        let stopping = tokio_util::sync::CancellationToken::new();
        let (app, files, paywall) = self.assemble(local_addr, &stopping)?;
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            let mut background = JoinSet::new();
            background.spawn(sweep_files(files));
            if let Some(paywall) = paywall {
                background.spawn(paywall.maintain());
            }
            tracing::info!(%local_addr, mode, "serving http://{local_addr} (OpenAPI at /openapi.json)");
            // The peer address is the client IP of free pools unless a proxy header is configured.
            let served = axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())
                .with_graceful_shutdown(async move {
                    let _ = stopped.wait_for(|stop| *stop).await;
                    tracing::info!("shutting down: finishing calls in flight");
                    // Long-lived streams (MCP sessions) end now rather than hold the stop.
                    stopping.cancel();
                })
                .await;
            background.shutdown().await;
            tracing::info!("stopped");
            served
        });
        Ok(Running { local_addr, base_url, stop, task })
    }
}

/// A server started by [`HttpServer::start_on`]; it serves until [`Running::stop`].
pub struct Running {
    local_addr: SocketAddr,
    base_url: String,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Running {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Its base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Stops accepting, lets the calls in flight finish, ends the background tasks and
    /// releases the port; returns once all of that is done.
    pub async fn stop(self) -> std::io::Result<()> {
        let _ = self.stop.send(true);
        self.task.await.map_err(std::io::Error::other)?
    }

    /// Serves until `signal` completes, then stops as [`Running::stop`] does; also returns
    /// if serving fails on its own.
    pub async fn run_until(mut self, signal: impl Future<Output = ()>) -> std::io::Result<()> {
        tokio::select! {
            () = signal => self.stop().await,
            served = &mut self.task => served.map_err(std::io::Error::other)?,
        }
    }
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM: the shutdown signal of a server run from a
/// terminal or a service manager.
pub async fn interrupted() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => {},
        _ = terminate => {},
    }
}

/// One log line per request: method, path, status, duration. Never bodies or queries.
async fn trace_request(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let path = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| request.uri().path().to_string());
    let response = next.run(request).await;
    tracing::info!(
        %method,
        path = %path,
        status = response.status().as_u16(),
        duration_ms = started.elapsed().as_millis() as u64,
        "request"
    );
    response
}

/// Deletes expired links at start and every ten minutes.
async fn sweep_files(files: FileStore) {
    let mut tick = tokio::time::interval(Duration::from_secs(600));
    loop {
        tick.tick().await;
        match files.sweep().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(deleted = n, "expired file links deleted"),
            Err(e) => tracing::warn!(error = %e, "sweeping file links failed"),
        }
    }
}
