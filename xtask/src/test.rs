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

/// The desktop app's package.
const DESKTOP_APP: &str = "paperchain-app";

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
    let packages: [&[&str]; 2] = [&["--workspace", "--exclude", DESKTOP_APP], &["-p", DESKTOP_APP]];
    let mut failed = Vec::new();
    for selection in packages {
        let tests = if use_nextest {
            cargo().args(["nextest", "run"]).args(selection).args(["--all-targets", "--no-fail-fast"])
        } else {
            cargo().arg("test").args(selection).args(["--all-targets", "--no-fail-fast"])
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
        // A filter that names nothing in one of the two runs (the desktop app's, often) is
        // not a failure.
        let tests = if filtered && use_nextest { tests.arg("--no-tests=pass") } else { tests };
        // nextest takes its filters (names, `-E` expressions) as its own arguments; `cargo
        // test` passes a name filter to the test binaries after `--`.
        let tests = match (filtered, use_nextest) {
            (false, _) => tests,
            (true, true) => tests.args(runner_args),
            (true, false) => tests.arg("--").args(runner_args),
        };
        // Every failing test is listed (--no-fail-fast, and the app's tests run after a
        // failure in the others); the exit code still says "failed".
        if tests.run().is_err() {
            failed.push(selection.join(" "));
        }
    }
    if failed.is_empty() { Ok(()) } else { anyhow::bail!("tests failed in: {}", failed.join("; ")) }
}

/// `cargo fmt --check` and clippy with warnings as errors, the workspace and the desktop app.
fn checks() -> anyhow::Result<()> {
    cargo().args(["fmt", "--all", "--", "--check"]).run().context("formatting differs: run `cargo fmt --all`")?;
    // The desktop app (src-tauri) is checked and tested apart from the rest: in one build its
    // dependencies (tauri, WebKitGTK's bindings) would change the features of crates the
    // others share, and both sets would be built again each time one of them is. Apart,
    // each keeps its own build in the cache.
    cargo()
        .args(["clippy", "--workspace", "--exclude", DESKTOP_APP, "--all-targets", "--", "-D", "warnings"])
        .run()
        .context("clippy found problems (above); fix them before testing")?;
    cargo()
        .args(["clippy", "-p", DESKTOP_APP, "--all-targets", "--", "-D", "warnings"])
        .run()
        .context("clippy found problems in the desktop app (above); fix them before testing")?;
    Ok(())
}
