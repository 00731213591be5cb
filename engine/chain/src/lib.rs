//! Paperchain's chain reads: one route per file under `chain/` (EVM chains, Solana, the
//! perpetual-funding venue, the risk checks; `../shared/spec/routebook.md` §3) and the
//! sanctions list they check against (`sanctions/`). The chain clients they read with are
//! the core's (`paperchain_engine_core::evm`, `::solana`).
//!
//! What this crate must not do: know about HTTP, MCP or payments, or depend on a
//! document library.

// The core's modules under their usual names, so a route says `crate::context::Context`
// wherever it lives.
pub(crate) use paperchain_engine_core::*;

pub mod chain;
pub mod sanctions;

pub use chain::register;
