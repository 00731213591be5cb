//! The variety set: bank statements, reports and tables written at test time by PDF
//! writers nobody on the project controls (reportlab, LibreOffice from a spreadsheet or a
//! Word file, Chromium from HTML), in many layouts, each file with its exact ground truth
//! taken from the generator's input (`variety.py`, whose docstring describes the manifest).
//!
//! Seeded: the same seed gives the same cases. The conversion routes are held to the set
//! in the engine's tests and scored on it, per writer and layout, by `cargo xtask bench
//! convert`.

use std::path::{Path, PathBuf};

/// The generator.
pub const SCRIPT: &str = include_str!("variety.py");

/// The seed the tests and the bench use.
pub const SEED: u64 = 2026;

/// What to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Bank statements (a table of dated transactions, balances).
    Statements,
    /// Reports: a title, headings, paragraphs and a table.
    Reports,
    /// A heading and a table.
    Tables,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Statements => "statements",
            Kind::Reports => "reports",
            Kind::Tables => "tables",
        }
    }
}

/// Writes `per_writer` cases of each kind per writer (reports and tables: half as many)
/// into `dir` and returns the path of its `manifest.json`; panics with the generator's
/// error output when it fails. Needs the tools venv (reportlab, openpyxl, python-docx),
/// LibreOffice and Chromium.
pub fn generate(dir: &Path, seed: u64, per_writer: usize, kinds: &[Kind]) -> PathBuf {
    let script = dir.join("variety.py");
    std::fs::create_dir_all(dir).expect("the variety folder is made");
    std::fs::write(&script, SCRIPT).expect("the generator is written");
    let kinds: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
    let out = std::process::Command::new(crate::tools::python())
        .arg(&script)
        .arg(dir)
        .args(["--seed", &seed.to_string(), "--per-writer", &per_writer.to_string(), "--kinds", &kinds.join(",")])
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "the variety set was not generated: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("manifest.json")
}
