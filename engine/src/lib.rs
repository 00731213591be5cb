//! Paperchain's engine: the route catalog, pricing and the operations themselves.
//!
//! Every route is defined once, in one file under `docs/` (documents) or `chain/`
//! (chain reads): its path, operation name, schemas, price rule and the operation. Those
//! two folders hold routes only; the code routes share lives in support modules beside
//! them: `pdf/` (opening and saving PDFs, assembling, qpdf and pdfium, the repair pass,
//! stamping, the transforms the pipeline chains) and `evm/` (the configured chains and
//! the reads, scans and simulations several chain routes make). Support code uses no
//! route. The front doors (HTTP gateway, CLI, MCP, later the desktop app) are generated
//! from [`catalog::Catalog`]; state a route keeps between calls lives in the
//! [`context::RouteState`] of the context it runs with.
//!
//! What this crate must not do: know about HTTP, MCP or payments. It takes typed
//! input, answers typed output or an [`error::EngineError`] whose kind a front door maps
//! to its own status codes.

pub mod catalog;
pub mod chain;
pub mod chromium;
pub mod context;
pub mod docs;
pub mod error;
pub mod evm;
pub mod fetch;
pub mod http_client;
pub mod input;
pub mod layout;
pub mod markdown;
pub mod native;
pub mod ocr;
pub mod office;
pub mod output;
pub mod pages;
pub mod patterns;
pub mod pdf;
pub mod price;
pub mod rpc_http;
pub mod sanctions;
pub mod sandbox;
pub mod soffice;
pub mod solana;
pub mod statement;
pub mod work_gate;
pub mod xml;

pub use catalog::{Catalog, Family, FreePool, RouteInfo};
pub use context::{Context, data_dir, user_data_dir};
pub use error::{EngineError, ErrorKind};
pub use output::{FileSet, OutFile, OutputMode, Reply};
pub use price::Price;
