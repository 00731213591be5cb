//! The core of Paperchain's engine: what every route is made of and runs with, without
//! any route. The route catalog's types ([`catalog`]), the context a call runs in
//! ([`context`]: the safe fetcher, the configured chains, the work gate), errors with the
//! codes they publish ([`error`]), file input and output, prices, the request patterns
//! the published schemas share, and the chain clients (`evm/`, `solana/`) that the chain
//! routes and the paying wallet both read chains with.
//!
//! The routes live in `paperchain-chain` (chain reads) and `paperchain-docs` (documents);
//! `paperchain-engine` puts both in one catalog for the front doors.
//!
//! What this crate must not do: know about HTTP, MCP or payments, name a route, or depend
//! on a document library (PDF, Office, HTML): the wallet builds on it.

pub mod cancel;
pub mod catalog;
pub mod context;
pub mod error;
pub mod evm;
pub mod fetch;
pub mod http_client;
pub mod input;
pub mod memory;
pub mod output;
pub mod patterns;
pub mod price;
pub mod rpc_http;
pub mod solana;
pub mod work_gate;

pub use catalog::{Catalog, Family, FreePool, RouteInfo};
pub use context::{Context, data_dir, user_data_dir};
pub use error::{EngineError, ErrorKind};
pub use output::{FileSet, OutFile, OutputMode, Reply};
pub use price::Price;
