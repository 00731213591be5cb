//! The gateway on a random loopback port: the listener, its configuration, the serving task.

use std::net::SocketAddr;
use std::path::Path;

use paperchain_gateway::ServerConfig;
use tokio::net::TcpListener;

/// Serves `router` on `listener` in a task, with each connection's client address (the
/// hosted paywall reads it).
pub fn spawn_router(listener: TcpListener, router: axum::Router) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>()).await.unwrap();
    })
}

/// A random loopback port to serve on, and its base URL (`http://127.0.0.1:<port>`).
pub async fn loopback_listener() -> (TcpListener, SocketAddr, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (listener, addr, format!("http://{addr}"))
}

/// The gateway's configuration for a test server: local defaults, files in `dir`, listening
/// on `addr`, `base` as its public URL.
pub fn server_config(dir: &Path, addr: SocketAddr, base: &str) -> ServerConfig {
    let mut config = ServerConfig::local(dir.to_path_buf());
    config.listen = addr;
    config.public_url = Some(base.to_string());
    config
}
