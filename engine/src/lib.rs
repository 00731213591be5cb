//! Paperchain's engine as the front doors see it: every route in one catalog
//! ([`catalog::standard`]), and the modules of the three crates it is made of under one
//! name.
//!
//! - `paperchain-engine-core` (`engine/core`): the catalog's types, the context, errors,
//!   input and output, prices, the fetcher, the work gate, the chain clients.
//! - `paperchain-chain` (`engine/chain`): the 40 chain reads and the sanctions list.
//! - `paperchain-docs` (`engine/docs`): the 39 document operations and their support code.
//!
//! Every route is defined once, in one file under `chain/` or `docs/`: its path,
//! operation name, schemas, price rule and the operation. The front doors (HTTP, MCP, the
//! CLI, the desktop app's forms) are generated from [`catalog::Catalog`].
//!
//! What this crate must not do: know about HTTP, MCP or payments. It takes typed input,
//! answers typed output or an [`error::EngineError`] whose kind a front door maps to its
//! own status codes.

pub use paperchain_chain::{chain, sanctions};
pub use paperchain_docs::{
    chromium, docs, layout, markdown, native, ocr, office, pages, pdf, sandbox, soffice, statement, xml,
};
pub use paperchain_engine_core::{
    Catalog, Context, EngineError, ErrorKind, Family, FileSet, FreePool, OutFile, OutputMode, Price, Reply, RouteInfo,
    cancel, context, data_dir, error, evm, fetch, http_client, input, memory, output, patterns, price, rpc_http,
    solana, user_data_dir, work_gate,
};

/// The route catalog: the core's types, and the catalog of every route Paperchain serves.
pub mod catalog {
    pub use paperchain_engine_core::catalog::*;

    /// The catalog of every route Paperchain serves: the chain reads, then the documents.
    pub fn standard() -> Catalog {
        let mut catalog = Catalog::empty();
        paperchain_chain::register(&mut catalog);
        paperchain_docs::register(&mut catalog);
        catalog
    }
}
