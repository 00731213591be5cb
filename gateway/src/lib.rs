//! Paperchain's HTTP server: every catalog route over axum, the service documents
//! (OpenAPI, llms.txt, x402 listing), and 24-hour file links.
//!
//! Routes are generated from [`paperchain_engine::Catalog`]; no handler here knows a
//! route by name. Cross-cutting behaviour (Host check, tracing, timeouts) lives in
//! layers. What this crate must not do: contain route logic, or let a request reach an
//! operation without going through the catalog's `prepare`.
//!
//! Where a call runs is not decided here: every route handler ([`routes`]) hands its call
//! to the call path (`paperchain_calls::CallPath`) and translates the outcome. The HTTP
//! face of each mode is a module of its own: [`paid`] (hosted mode's payment headers) and
//! [`routed`] (local mode's `Paperchain-*` headers). A hosted server's paywall comes from
//! outside as a [`server::ServedPaywall`] (the `paperchain-hosted` crate implements it);
//! this crate compiles no payment rule. [`app`] is the local user's app and its API,
//! mounted by the server assembly in local mode only.

pub mod app;
pub mod error;
pub mod files;
pub mod host;
pub mod intake;
pub mod paid;
pub mod routed;
pub mod routes;
pub mod server;
pub mod service_docs;

pub use server::{HttpServer, Running, ServerConfig};
