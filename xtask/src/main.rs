//! `cargo xtask`: the project's automation, written in Rust rather than shell scripts.
//!
//! - `setup` installs the system tools the project needs (Debian packages, a Python venv).
//! - `run` serves the HTTP API from a release build, after a quiet `setup`.
//! - `test` checks formatting and lints, then runs every test (CI's one command).
//! - `bench` times document operations against reference tools (qpdf, Ghostscript, pdftoppm, pyHanko).
//! - `bundle` packages the desktop app for Linux (.deb, AppImage), and the MCP bundle (.mcpb).
//! - `fuzz` mutates corpus files and JSON bodies through every route, in process.
//!
//! Nothing here is linked into the product; it only runs programs.

mod bench;
mod bundle;
mod cmd;
mod mcpb;
mod setup;
mod test;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::cmd::Cmd;
use crate::setup::Verbosity;

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "Project automation: setup, run, test, bench, bundle."
)]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Install what the project needs (Debian packages, Python test tools); safe to repeat.
    Setup,
    /// Serve the HTTP API from a release build (`paperchain serve ARGS`), after a quiet setup.
    Run {
        /// Arguments for `paperchain serve`, after `--`.
        #[arg(last = true)]
        args: Vec<OsString>,
    },
    /// Setup, then `cargo fmt --check`, clippy with -D warnings, and every test of the workspace.
    Test {
        /// Arguments for the test runner (a test name filter, for instance), after `--`.
        #[arg(last = true)]
        args: Vec<OsString>,
    },
    /// Benchmarks: operations against reference tools (qpdf, Ghostscript, pdftoppm, cast) on the same
    /// inputs, the hosted paywall under load, and the paying client's own cost on a paid call.
    Bench(bench::BenchArgs),
    /// The desktop app's Linux packages (.deb and AppImage) with Tauri's command line, or the MCP
    /// bundle desktop agents install (`--bundles mcpb`: a .mcpb and its server.json).
    Bundle(bundle::BundleArgs),
    /// Mutation fuzzing of every route's prepare and run, in process, for a time budget
    /// (`paperchain-fuzz --help` lists its options, after `--`). Findings are saved as
    /// regression inputs under fuzz/tests/regressions.
    Fuzz {
        /// Arguments for `paperchain-fuzz` (`--seconds 600`, `--routes split_pdf`), after `--`.
        #[arg(last = true)]
        args: Vec<OsString>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.task {
        Task::Setup => setup::run(Verbosity::Report)
            .and_then(|installed| setup::ensure_surfnet(&installed.tools, Verbosity::Report))
            .map(|()| ExitCode::SUCCESS),
        Task::Run { args } => serve(args),
        Task::Test { args } => test::run(&args).map(|()| ExitCode::SUCCESS),
        Task::Bench(args) => bench::run(&args),
        Task::Bundle(args) => bundle::run(&args).map(|()| ExitCode::SUCCESS),
        Task::Fuzz { args } => fuzz(args),
    };
    result.unwrap_or_else(|e| {
        eprintln!("error: {e:#}");
        ExitCode::FAILURE
    })
}

/// `cargo xtask run`: the README's way to start the server.
fn serve(args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    setup::run(Verbosity::Quiet)?;
    let status = cargo().args(["run", "--release", "-p", "paperchain", "--", "serve"]).args(args).status()?;
    // The server's own exit code (130 after Ctrl-C, for instance) is the answer.
    Ok(status.code().and_then(|c| u8::try_from(c).ok()).map(ExitCode::from).unwrap_or(ExitCode::FAILURE))
}

/// `cargo xtask fuzz`: the fuzzer from a test-profile build (dependencies optimised, as
/// the tests run them), with the tools setup installs and the shared corpus.
fn fuzz(args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let installed = setup::run(Verbosity::Quiet)?;
    let corpus = corpus_dir().ok_or_else(|| anyhow::anyhow!("no corpus: set PAPERCHAIN_CORPUS"))?;
    let status = cargo()
        .args(["run", "-p", "paperchain-fuzz", "--"])
        .args(args)
        .env("PAPERCHAIN_TOOLS", &installed.tools)
        .env("PAPERCHAIN_CORPUS", corpus)
        .env("OMP_THREAD_LIMIT", "1")
        .status()?;
    Ok(status.code().and_then(|c| u8::try_from(c).ok()).map(ExitCode::from).unwrap_or(ExitCode::FAILURE))
}

/// The workspace root: xtask lives one folder below it.
pub(crate) fn project_root() -> PathBuf {
    // `cargo run` says where the manifest is now. The path baked in at compile time can be
    // another checkout's: cargo reuses an xtask built from a clone elsewhere that shares the
    // target folder, and its folder may be gone (every child then fails to start).
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.join("Cargo.toml").is_file())
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest_dir.parent().unwrap_or(&manifest_dir).to_path_buf()
}

/// The shared document corpus: `$PAPERCHAIN_CORPUS`, else `../shared/corpus` beside the clone.
/// `None` when neither exists.
fn corpus_dir() -> Option<PathBuf> {
    match std::env::var_os("PAPERCHAIN_CORPUS").filter(|v| !v.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => project_root().parent().map(|p| p.join("shared/corpus")).filter(|d| d.is_dir()),
    }
}

/// The cargo that started us (`$CARGO`), run from the workspace root.
fn cargo() -> Cmd {
    let mut cargo = Cmd::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())).dir(project_root());
    // `cargo run` gives xtask the variables of its own package; passed on, they look like a
    // change to build scripts that watch them (ring's watches CARGO_MANIFEST_DIR), and ring,
    // rustls and everything above them were built again whenever `cargo xtask` followed a
    // plain `cargo` in the same cache.
    for (key, _) in std::env::vars_os() {
        let name = key.to_string_lossy();
        if name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_MANIFEST_")
            || matches!(name.as_ref(), "CARGO_CRATE_NAME" | "CARGO_BIN_NAME" | "CARGO_PRIMARY_PACKAGE")
        {
            cargo = cargo.env_remove(&key);
        }
    }
    cargo
}
