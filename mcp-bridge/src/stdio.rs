//! `paperchain mcp --stdio`: the tools over standard input and output, the engine in
//! process. Standard output carries only the protocol; logs go to standard error.

use paperchain_calls::CallPath;
use paperchain_engine::Family;
use rmcp::ServiceExt as _;

use crate::server::{McpServer, ServerOptions, Surface};

/// Serves the tools of `families` (on `surface`) on stdin/stdout until the client closes
/// the stream; calls go where `calls` sends them (local mode: files come embedded, no links).
pub async fn serve_stdio(families: Vec<Family>, surface: Surface, calls: CallPath) -> std::io::Result<()> {
    let server = McpServer::new(ServerOptions { families, calls, links: None, surface, approvals: None });
    let running = server.serve(rmcp::transport::stdio()).await.map_err(std::io::Error::other)?;
    running.waiting().await.map_err(std::io::Error::other)?;
    Ok(())
}
