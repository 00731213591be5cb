//! `cargo xtask test`: what CI runs (`.ci/run`) and what to run before a commit.
//!
//! Setup, then the cheap checks first so they fail fast (`cargo fmt --check`, clippy with
//! warnings as errors), then every test target of the workspace. `cargo xtask test --
//! <filter>` runs setup and only the tests the filter names (nextest's filters), without
//! the checks.
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

/// `cargo fmt --check` and clippy with warnings as errors, the desktop app included.
fn checks() -> anyhow::Result<()> {
    cargo().args(["fmt", "--all", "--", "--check"]).run().context("formatting differs: run `cargo fmt --all`")?;
    // The desktop app is checked and tested in the same cargo run as the rest: one feature
    // resolution for the whole workspace, so the crates both share (the proc-macro stack,
    // serde, tokio, reqwest…) are built once for clippy and once for the tests. Apart, the
    // app's dependencies (tauri's macros turn on proc-macro2's `span-locations`) changed the
    // features of nearly every shared crate and a cold run built everything twice more.
    cargo()
        .args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"])
        .run()
        .context("clippy found problems (above); fix them before testing")?;
    Ok(())
}
