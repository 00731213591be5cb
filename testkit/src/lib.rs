//! Test support for Paperchain: what more than one test suite (or `cargo xtask bench`)
//! needs, written once. Test-only: no product crate depends on it outside
//! `[dev-dependencies]`, and nothing here is careful about anything but tests.
//!
//! - [`tools`]: where `cargo xtask setup` put anvil, cast and the npm packages.
//! - [`corpus`]: the shared document corpus (`$PAPERCHAIN_CORPUS`, else `../shared/corpus`).
//! - [`hostile`]: hostile files and bodies (decompression and nesting bombs, huge dimensions),
//!   generated in seconds.
//! - [`anvil`]: a local anvil chain; with the `suite` feature, its JSON-RPC helpers and the
//!   compiled fixture contracts of `engine/tests/fixtures/contracts/`.
//! - [`keyring`]: a real Secret Service (gnome-keyring on a private D-Bus session bus) for the
//!   wallet's keyring tests, and sessions without one (std only).
//! - [`markdown_score`]: how close a Markdown conversion is to a reference (text, headings, tables).
//! - [`variety`]: statements, reports and tables written by reportlab, LibreOffice and Chromium
//!   at test time, with their exact ground truth.
//! - [`pki`]: a test CA made by `openssl ca` (root, intermediate, RSA and ECDSA signers as
//!   PKCS#12, a time-stamping certificate, an unrelated root) and pyHanko's validator and
//!   signer; with the `suite` feature, an RFC 3161 time-stamp authority (`openssl ts`).
//! - [`b64`] and [`b64_decode`]: standard base64; [`workspace_root`]: the checkout's root.
//! - `suite` feature (default): [`loopback`] (stand-in HTTP servers: request reader,
//!   closed ports, silent servers), [`hyperliquid`] (the funding upstream replaying
//!   recorded answers), [`fake_node`] (a scripted JSON-RPC node), [`surfnet`] (a local
//!   Solana validator with seeded fixtures), [`pdf`]
//!   (page counts through qpdf), [`node`] (the interop scripts run by node).
//! - `x402` feature: [`x402`], payments signed as an x402 client signs them.
//! - `gateway` feature: [`server`], the gateway on a random loopback port. It depends on
//!   `paperchain-gateway`, so the engine's tests never turn it (or `hosted`) on.
//! - `hosted` feature: [`sandbox`], the gateway in hosted mode on the sandbox chain.
//!
//! `cargo xtask bench` uses the core only (`default-features = false`): no async runtime,
//! no JSON crate.

pub mod anvil;
mod b64;
pub mod bench;
pub mod corpus;
pub mod hostile;
pub mod invoice;
pub mod keyring;
pub mod markdown_score;
pub mod openpyxl;
pub mod page_pdf;
pub mod pki;
pub mod scan;
pub mod table_score;
pub mod tools;
pub mod variety;

#[cfg(feature = "suite")]
pub mod fake_node;
#[cfg(feature = "suite")]
pub mod hyperliquid;
#[cfg(feature = "suite")]
pub mod json_rpc;
#[cfg(feature = "suite")]
pub mod loopback;
#[cfg(feature = "suite")]
pub mod node;
#[cfg(feature = "suite")]
pub mod pdf;
#[cfg(feature = "hosted")]
pub mod sandbox;
#[cfg(feature = "gateway")]
pub mod server;
#[cfg(feature = "suite")]
pub mod surfnet;
#[cfg(feature = "x402")]
pub mod x402;

pub use b64::{b64, b64_decode};

use std::path::{Path, PathBuf};

/// The workspace root of the checkout whose tests run: the parent of the crate folder cargo
/// names at run time (`CARGO_MANIFEST_DIR`), else of testkit's own. A test binary that cargo
/// reuses from another checkout sharing the target folder then still reads this
/// checkout's files, not those of a folder that may be gone.
pub fn workspace_root() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .filter(|dir| !dir.is_empty())
        .and_then(|dir| Path::new(&dir).parent().map(Path::to_path_buf))
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
}
