//! `cargo xtask test`: what CI runs (`.ci/run`) and what to run before a commit.
//!
//! Setup, `cargo fmt --check`, then every test target of the workspace, built with clippy's
//! lints as errors. `cargo xtask test -- <filter>` runs setup and only the tests the filter
//! names (nextest's filters), without the format check.
//!
//! Clippy runs inside the test build rather than as a `cargo clippy` of its own: clippy's
//! driver is the compiler of the workspace's crates (`RUSTC_WORKSPACE_WRAPPER`, as `cargo
//! clippy` itself sets it), with warnings denied (`CLIPPY_ARGS`, as `cargo clippy -- -D
//! warnings` passes them). The lints are the same; the dependencies are compiled once
//! instead of twice (a check build for clippy, then the build the tests run), which was
//! about a third of a cold run. Filtered runs use the same driver, so switching between
//! them rebuilds nothing.
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

pub fn run(runner_args: &[OsString]) -> anyhow::Result<()> {
    let installed = setup::run(Verbosity::Report)?;
    setup::ensure_surfnet(&installed.tools, Verbosity::Report)?;

    // With a filter, only what it names runs (after setup): the checks are for a whole run.
    let filtered = !runner_args.is_empty();
    if !filtered {
        checks()?;
    }

    let use_nextest = cargo().args(["nextest", "--version"]).succeeds();
    if !use_nextest {
        println!("test: cargo-nextest is not installed; running `cargo test`");
    }
    let tests = if use_nextest {
        cargo().args(["nextest", "run", "--workspace", "--all-targets", "--no-fail-fast"])
    } else {
        cargo().args(["test", "--workspace", "--all-targets", "--no-fail-fast"])
    };
    let tests = tests.env("RUSTC_WORKSPACE_WRAPPER", clippy_driver()?).env("CLIPPY_ARGS", CLIPPY_ARGS);
    // Tesseract in the tests' own processes gets one thread a page, as `paperchain` gives
    // it (engine/docs/src/ocr/mod.rs, limit_engine_threads): its spinning OpenMP threads would
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
    // nextest takes its filters (names, `-E` expressions) as its own arguments; `cargo
    // test` passes a name filter to the test binaries after `--`.
    let tests = match (filtered, use_nextest) {
        (false, _) => tests,
        (true, true) => tests.args(runner_args),
        (true, false) => tests.arg("--").args(runner_args),
    };
    // Every failing test is listed (--no-fail-fast); the exit code still says "failed".
    tests.run().context("tests failed (above)")
}

/// What `cargo clippy -- -D warnings` hands clippy's driver: the arguments, each followed
/// by clippy's separator.
const CLIPPY_ARGS: &str = "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__";

/// Clippy's driver in the toolchain that builds the workspace.
fn clippy_driver() -> anyhow::Result<std::path::PathBuf> {
    let out = std::process::Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()))
        .args(["--print", "sysroot"])
        .output()
        .context("rustc --print sysroot")?;
    let driver = std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("bin/clippy-driver");
    anyhow::ensure!(
        driver.is_file(),
        "clippy is not installed in this toolchain ({} is missing): run `rustup component add clippy`",
        driver.display()
    );
    Ok(driver)
}

/// `cargo fmt --check`. Clippy's lints are checked by the test build itself (see above);
/// the desktop app is built in the same cargo run as the rest, so the crates both share
/// are built with one feature resolution, once.
fn checks() -> anyhow::Result<()> {
    cargo().args(["fmt", "--all", "--", "--check"]).run().context("formatting differs: run `cargo fmt --all`")
}
