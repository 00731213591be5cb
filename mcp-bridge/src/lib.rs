//! Paperchain over MCP: every catalog route as a tool, generated from the catalog; by
//! default behind a compact surface of three tools ([`compact`]), one tool per route on
//! request ([`tools`]).
//!
//! Served over streamable HTTP by the gateway at `/mcp` (compact), `/mcp/full`, `/mcp/chain`
//! and `/mcp/docs` (one tool per route) ([`http::mount`], mounted beside the HTTP API), and over stdio for desktop agents
//! (`paperchain mcp --stdio`): relayed to the local server when one runs
//! ([`relay::relay_stdio`]), else with the engine in process ([`stdio::serve_stdio`]).
//!
//! Every tool call goes to the call path (`paperchain_calls::CallPath`, [`server`]), as
//! the HTTP API's calls do: in local mode it runs here or is routed and paid as the user's
//! configuration says; in hosted mode it goes through the paywall with the free pool asked
//! for, and payments travel as the x402 MCP transport says (`_meta["x402/payment"]`,
//! `_meta["x402/payment-response"]`). [`results`] turns the outcome into a tool result; a
//! local server answers a large file as a link [`kept`] for `resources/read`, and files on
//! the user's machine (paths in, `save_to` out) as `file://` links.
//!
//! Must not: name a route, or decide anything about payments (the paywall does).

pub mod approval;
pub mod compact;
pub mod http;
pub mod kept;
pub mod progress;
pub mod relay;
pub mod results;
pub mod server;
pub mod stdio;
pub mod tasks;
pub mod tools;

pub use results::Links;
pub use server::{McpServer, Requester, ServerOptions, Surface};
