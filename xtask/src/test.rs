//! `cargo xtask test`: what CI runs (`.ci/run`) and what to run before a commit.
//!
//! Setup, then the cheap checks first so they fail fast (`cargo fmt --check`, clippy with
//! warnings as errors), then every test target of the workspace.
//!
//! The runner is cargo-nextest when it is installed: each test runs in its own process, so
//! a test that crashes or aborts on a hostile corpus file is reported as that one failure
//! while the rest go on (under `cargo test` it takes down its whole test binary and hides
//! the tests after it), and a slow or hung test is named as it happens. On two cores the
//! speed gain is small (nextest keeps both cores busy across test binaries, where
//! `cargo test` runs the binaries one after another); isolation is the reason.
//! Without nextest, `cargo test` runs the same targets. Doctests are not run.

use std::ffi::OsString;

use anyhow::Context as _;

use crate::setup::{self, Verbosity};
use crate::{cargo, corpus_dir};

/// The desktop app's package.
const DESKTOP_APP: &str = "paperchain-app";

pub fn run(runner_args: &[OsString]) -> anyhow::Result<()> {
    let installed = setup::run(Verbosity::Report)?;

    cargo().args(["fmt", "--all", "--", "--check"]).run().context("formatting differs: run `cargo fmt --all`")?;
    // The desktop app (src-tauri) is left out until its own tests land: built with the rest,
    // its dependencies change the features of the crates they share, and every crate is
    // built again. It builds on its own: `cargo build -p paperchain-app`.
    cargo()
        .args(["clippy", "--workspace", "--exclude", DESKTOP_APP, "--all-targets", "--", "-D", "warnings"])
        .run()
        .context("clippy found problems (above); fix them before testing")?;

    let use_nextest = cargo().args(["nextest", "--version"]).succeeds();
    let tests = if use_nextest {
        cargo().args(["nextest", "run", "--workspace", "--exclude", DESKTOP_APP, "--all-targets", "--no-fail-fast"])
    } else {
        println!("test: cargo-nextest is not installed; running `cargo test`");
        cargo().args(["test", "--workspace", "--exclude", DESKTOP_APP, "--all-targets", "--no-fail-fast"])
    };
    // Tesseract in the tests' own processes gets one thread a page, as `paperchain` gives it
    // (engine/src/ocr/mod.rs, limit_engine_threads): its spinning OpenMP threads would
    // otherwise slow every OCR test, and the tests run side by side.
    let tests = tests.env("PAPERCHAIN_TOOLS", &installed.tools).env("OMP_THREAD_LIMIT", "1");
    let tests = match corpus_dir() {
        Some(corpus) => tests.env("PAPERCHAIN_CORPUS", corpus),
        None => {
            println!(
                "test: no corpus found: the corpus tests need PAPERCHAIN_CORPUS, or shared/corpus beside the clone"
            );
            tests
        }
    };
    // Every failing test is listed in one run (--no-fail-fast); the exit code still says "failed".
    let tests = if runner_args.is_empty() { tests } else { tests.arg("--").args(runner_args) };
    tests.run().context("tests failed")
}
