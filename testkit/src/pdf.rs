//! PDF checks through qpdf (a Debian package `cargo xtask setup` installs).

use std::path::Path;
use std::process::Command;

/// The page count of a PDF that passes `qpdf --check`; panics when it does not.
pub fn qpdf_pages(bytes: &[u8]) -> u32 {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("x.pdf");
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    qpdf_pages_of(&path)
}

/// The page count of the PDF at `path`, which must pass `qpdf --check`.
pub fn qpdf_pages_of(path: &Path) -> u32 {
    let check =
        Command::new("qpdf").arg("--check").arg(path).output().expect("qpdf is installed (run `cargo xtask setup`)");
    assert!(
        check.status.success(),
        "qpdf --check {} failed: {}",
        path.display(),
        String::from_utf8_lossy(&check.stdout)
    );
    let out = Command::new("qpdf").arg("--show-npages").arg(path).output().expect("qpdf runs");
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().parse().unwrap_or_else(|e| panic!("qpdf --show-npages {}: {e}: {text}", path.display()))
}
