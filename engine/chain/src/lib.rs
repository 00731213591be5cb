//! Paperchain's chain reads: one route per file under `chain/` (EVM chains, Solana, the
//! perpetual-funding venue, the risk checks; `../shared/spec/routebook.md` §3) and the
//! sanctions list they check against (`sanctions/`). The chain clients they read with are
//! the core's (`paperchain_engine_core::evm`, `::solana`). Code several routes share, or
//! a route's own logic grown past its file, sits beside `chain/` and uses no route:
//! `risk/` (the risk checks' scoring; the address reads and assessment the address and
//! token checks share), `phishing/` (the URL check's lists, brands and look-alike letters)
//! and `hyperliquid/` (the funding venue's answers and its cached client).
//!
//! What this crate must not do: know about HTTP, MCP or payments, or depend on a
//! document library.

// The core's modules under their usual names, so a route says `crate::context::Context`
// wherever it lives.
pub(crate) use paperchain_engine_core::*;

pub mod chain;
pub mod hyperliquid;
pub mod phishing;
pub mod risk;
pub mod sanctions;

pub use chain::register;
