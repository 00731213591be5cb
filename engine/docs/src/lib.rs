//! Paperchain's document operations: one route per file under `docs/`, and the support
//! code the routes share beside them: `pdf/` (opening and saving PDFs, assembling, qpdf
//! and pdfium, the repair pass, stamping, the transforms the pipeline chains), `markdown/`
//! and `office/` (conversions), `layout/` (words, lines and tables of a page), `ocr/`
//! (Tesseract), `soffice/` and `chromium/` (the external programs, run sandboxed by
//! `sandbox`), `statement/` (bank statements), `images/` (image files: their format and
//! headers). Support code uses no route.
//!
//! What this crate must not do: know about HTTP, MCP or payments, or read chains.

// The core's modules under their usual names, so a route says `crate::context::Context`
// wherever it lives.
pub(crate) use paperchain_engine_core::*;

pub mod chromium;
pub mod docs;
pub mod images;
pub mod layout;
pub mod markdown;
pub mod native;
pub mod ocr;
pub mod office;
pub mod pages;
pub mod pdf;
pub mod sandbox;
pub mod soffice;
pub mod statement;
pub mod xml;

pub use docs::register;
