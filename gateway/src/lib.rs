//! Paperchain's HTTP server: every catalog route over axum, the service documents
//! (OpenAPI, llms.txt, x402 listing), and 24-hour file links.
//!
//! Routes are generated from [`paperchain_engine::Catalog`]; no handler here knows a
//! route by name. Cross-cutting behaviour (Host check, tracing, timeouts) lives in
//! layers. What this crate must not do: contain route logic, or let a request reach an
//! operation without going through the catalog's `prepare`.

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
