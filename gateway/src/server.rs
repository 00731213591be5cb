//! Starting and stopping the server: configuration, layers, graceful shutdown.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{MatchedPath, Request};
use axum::middleware::{self, Next};
use axum::response::Response;
use paperchain_engine::{Catalog, Context};
use tokio::net::TcpListener;

use crate::files::{FileStore, LINK_TTL};
use crate::host::{HostPolicy, require_allowed_host};
use crate::hosted::paywall::Paywall;
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
        }
    }
}

/// The application for `config`, bound to `local_addr` (used for the default base URL).
pub fn app(config: &ServerConfig, local_addr: SocketAddr, ctx: Context) -> std::io::Result<Router> {
    app_with(config, local_addr, ctx, None)
}

/// The application, in hosted mode when `paywall` is given.
pub fn app_with(
    config: &ServerConfig,
    local_addr: SocketAddr,
    ctx: Context,
    paywall: Option<Arc<Paywall>>,
) -> std::io::Result<Router> {
    app_with_routes(config, local_addr, ctx, paywall, None)
}

/// The application with `extra` routes (the MCP endpoints) behind the same layers: Host
/// check and request tracing apply to them as to the HTTP API.
pub fn app_with_routes(
    config: &ServerConfig,
    local_addr: SocketAddr,
    ctx: Context,
    paywall: Option<Arc<Paywall>>,
    extra: Option<Router>,
) -> std::io::Result<Router> {
    let catalog = Arc::new(Catalog::standard());
    let base_url = base_url(config, local_addr);
    let files = file_store(config)?;
    let docs = ServiceDocs::build(&catalog, &base_url, &ctx);
    let state = Arc::new(AppState {
        catalog,
        ctx,
        files: files.clone(),
        base_url,
        docs,
        request_timeout: config.request_timeout,
        body_limit: BODY_LIMIT,
        paywall,
    });
    tokio::spawn(sweep_files(files));
    let hosts = Arc::new(HostPolicy::new(local_addr, config.public_url.as_deref(), &config.allowed_hosts));
    let mut app = router(state);
    if let Some(extra) = extra {
        app = extra.merge(app);
    }
    Ok(app.layer(middleware::from_fn_with_state(hosts, require_allowed_host)).layer(middleware::from_fn(trace_request)))
}

/// Absolute base URL of the server, without a trailing slash: the public URL, else
/// `http://{local_addr}`.
pub fn base_url(config: &ServerConfig, local_addr: SocketAddr) -> String {
    config.public_url.clone().unwrap_or_else(|| format!("http://{local_addr}")).trim_end_matches('/').to_string()
}

/// The store of 24-hour file links (`output: "url"`), served at `/v1/files/{id}`.
pub fn file_store(config: &ServerConfig) -> std::io::Result<FileStore> {
    FileStore::open(config.data_dir.join("files"), LINK_TTL)
}

/// Serves until SIGINT or SIGTERM, then finishes the calls in flight.
pub async fn serve(config: ServerConfig, ctx: Context) -> std::io::Result<()> {
    let listener = bind(&config).await?;
    serve_on(listener, config, ctx, None).await
}

/// Binds the configured address, refusing to answer every name on all addresses.
pub async fn bind(config: &ServerConfig) -> std::io::Result<TcpListener> {
    if config.listen.ip().is_unspecified() && config.public_url.is_none() && config.allowed_hosts.is_empty() {
        // Every name that resolves here would be answered, including a rebinding page's.
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "listening on all addresses ({}) needs --public-url or --allow-host to say which names this server answers",
                config.listen
            ),
        ));
    }
    TcpListener::bind(config.listen).await
}

/// Serves on `listener` until SIGINT or SIGTERM (hosted when `paywall` is given).
pub async fn serve_on(
    listener: TcpListener,
    config: ServerConfig,
    ctx: Context,
    paywall: Option<Arc<Paywall>>,
) -> std::io::Result<()> {
    serve_on_with(listener, config, ctx, paywall, None).await
}

/// [`serve_on`] with `extra` routes behind the same layers (see [`app_with_routes`]).
pub async fn serve_on_with(
    listener: TcpListener,
    config: ServerConfig,
    ctx: Context,
    paywall: Option<Arc<Paywall>>,
    extra: Option<Router>,
) -> std::io::Result<()> {
    let local_addr = listener.local_addr()?;
    let mode = if paywall.is_some() { "hosted" } else { "local" };
    if let Some(paywall) = &paywall {
        tokio::spawn(paywall.clone().maintain());
    }
    let app = app_with_routes(&config, local_addr, ctx, paywall, extra)?;
    tracing::info!(%local_addr, mode, "serving http://{local_addr} (OpenAPI at /openapi.json); Ctrl-C stops");
    // The peer address is the client IP of free pools unless a proxy header is configured.
    axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())
        .with_graceful_shutdown(shutdown_signal())
        .await?;
    tracing::info!("stopped");
    Ok(())
}

async fn shutdown_signal() {
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
    tracing::info!("shutting down: finishing calls in flight");
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
