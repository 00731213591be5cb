//! The MCP endpoints of the HTTP server, streamable HTTP: `/mcp`, every operation behind
//! the compact surface (three tools); `/mcp/full`, one tool per route; `/mcp/chain` and
//! `/mcp/docs`, one tool per route of one family. The gateway mounts this router behind its own layers, so the Host
//! check and request tracing are the HTTP API's.
//!
//! A hosted server is stateless and answers in JSON: any instance behind a name can answer
//! any request, and nothing is kept between them. A local server keeps a session per
//! client (for clients before protocol 2026-07-28) and answers over an event stream, so a
//! call can ask the user something through the client mid-way (a payment's approval page,
//! [`crate::approval`]).

use std::sync::Arc;

use axum::Router;
use paperchain_engine::Family;
use paperchain_gateway::routes::BODY_LIMIT;
use paperchain_gateway::server::Mount;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::results::Links;
use crate::server::{McpServer, ServerOptions, Surface};

/// The endpoint with every operation, chain and documents, on the compact surface: what
/// agents are pointed at, and what `paperchain mcp --stdio` relays to.
pub const ALL_ENDPOINT: &str = "/mcp";
/// Every operation as a tool of its own.
pub const FULL_ENDPOINT: &str = "/mcp/full";

/// The path of a family's MCP endpoint.
pub fn endpoint(family: Family) -> &'static str {
    match family {
        Family::Chain => "/mcp/chain",
        Family::Docs => "/mcp/docs",
    }
}

/// `/mcp/chain` and `/mcp/docs` beside an HTTP API, sharing its context, paywall, file
/// links (`output: "url"`) and call timeout: what `HttpServer::mount` takes.
pub fn mount(api: &Mount<'_>) -> Router {
    let links = Links { files: api.files.clone(), base_url: api.base_url.to_string() };
    let mut router = Router::new();
    let both = || vec![Family::Chain, Family::Docs];
    let endpoints = [
        (ALL_ENDPOINT, both(), Surface::Compact),
        (FULL_ENDPOINT, both(), Surface::Full),
        (endpoint(Family::Chain), vec![Family::Chain], Surface::Full),
        (endpoint(Family::Docs), vec![Family::Docs], Surface::Full),
    ];
    for (path, families, surface) in endpoints {
        let approvals = api.approvals.cloned();
        let options =
            ServerOptions { families, calls: api.calls.clone(), links: Some(links.clone()), surface, approvals };
        let server = McpServer::new(options);
        let local = api.calls.paywall().is_none();
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(local)
            .with_json_response(!local)
            .with_max_request_body_bytes(BODY_LIMIT)
            // Sessions end when the server stops.
            .with_cancellation_token(api.stopping.child_token())
            // The gateway's Host check (loopback, the public URL, --allow-host) runs in front.
            .disable_allowed_hosts();
        let make = move || Ok(server.clone());
        router = match local {
            true => {
                let sessions = Arc::new(LocalSessionManager::default());
                router.route_service(path, StreamableHttpService::new(make, sessions, config))
            }
            false => {
                let stateless = Arc::new(NeverSessionManager::default());
                router.route_service(path, StreamableHttpService::new(make, stateless, config))
            }
        };
    }
    // As the MCP transport asks: a browser page of another origin is refused.
    router.layer(axum::middleware::from_fn(paperchain_gateway::host::require_same_origin))
}
