//! `paperchain mcp --stdio`: the tools over standard input and output, the engine in
//! process. Standard output carries only the protocol; logs go to standard error.

use std::sync::Arc;

use paperchain_engine::{Context, Family};
use paperchain_wallet::client::PayingClient;
use rmcp::ServiceExt as _;

use crate::server::{McpServer, ServerOptions};

/// Serves the tools of `families` on stdin/stdout until the client closes the stream.
pub async fn serve_stdio(
    families: Vec<Family>,
    ctx: Context,
    client: Option<Arc<PayingClient>>,
) -> std::io::Result<()> {
    let server = McpServer::new(ServerOptions { client, ..ServerOptions::local(families, ctx) });
    let running = server.serve(rmcp::transport::stdio()).await.map_err(std::io::Error::other)?;
    running.waiting().await.map_err(std::io::Error::other)?;
    Ok(())
}
