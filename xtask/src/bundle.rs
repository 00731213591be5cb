//! `cargo xtask bundle`: the desktop app's packages for Linux, a `.deb` and an AppImage,
//! built by Tauri's command line (installed into `$PAPERCHAIN_TOOLS` on first use). Each
//! package carries the app (`paperchain-app`) and the command line (`paperchain`) beside
//! it, which agents' configurations run (`paperchain mcp --stdio`). `--bundles mcpb`
//! builds the MCP bundle desktop agents install in one click instead (`mcpb.rs`).

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde_json::json;

use crate::cmd::Cmd;
use crate::setup::{self, Verbosity};
use crate::{cargo, mcpb, project_root};

#[derive(clap::Args)]
pub struct BundleArgs {
    /// Which packages: deb, appimage (both by default), mcpb (the MCP bundle for desktop agents).
    #[arg(long, value_delimiter = ',', default_values_t = [Package::Deb, Package::Appimage])]
    bundles: Vec<Package>,
    /// Package the development build (quick to make from the test build) instead of a release build.
    #[arg(long)]
    debug: bool,
    /// The MCP bundle only: pack this `paperchain` program, already built, instead of building one.
    #[arg(long, value_name = "PATH")]
    program: Option<PathBuf>,
    /// The MCP bundle only: the folder its .mcpb and server.json go to (default:
    /// bundle/mcpb in the profile's target folder).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Package {
    Deb,
    Appimage,
    Mcpb,
}

/// The name `--bundles` takes (Tauri's own for the app's packages).
impl std::fmt::Display for Package {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Package::Deb => "deb",
            Package::Appimage => "appimage",
            Package::Mcpb => "mcpb",
        })
    }
}

/// Programs the engine runs for some routes (Office files, web pages, OCR), recommended by
/// the .deb: the app works without them and says which route needs which.
const RECOMMENDS: &[&str] = &[
    "libreoffice-writer-nogui",
    "libreoffice-calc-nogui",
    "libreoffice-impress-nogui",
    "chromium",
    "tesseract-ocr",
    "bubblewrap",
    "fonts-liberation",
];

pub fn run(args: &BundleArgs) -> anyhow::Result<()> {
    // The packages Tauri makes; the MCP bundle is packed here.
    let app_packages: Vec<Package> = args.bundles.iter().copied().filter(|p| *p != Package::Mcpb).collect();
    if !app_packages.is_empty() && !cfg!(target_os = "linux") {
        bail!(
            "`cargo xtask bundle` makes the Linux packages; on macOS and Windows run `cargo tauri build` in src-tauri"
        );
    }
    if !app_packages.is_empty() && (args.program.is_some() || args.out.is_some()) {
        bail!("--program and --out are for the MCP bundle alone (--bundles mcpb)");
    }
    let installed = setup::run(Verbosity::Quiet)?;
    let profile = if args.debug { "debug" } else { "release" };
    let target = target_dir()?;

    // The command line first, from the same profile: the packages carry it.
    let cli = match &args.program {
        Some(program) => program.clone(),
        None => {
            let mut build = cargo().args(["build", "-p", "paperchain"]);
            if !args.debug {
                build = build.arg("--release");
            }
            build.run().context("building paperchain")?;
            target.join(profile).join(format!("paperchain{}", std::env::consts::EXE_SUFFIX))
        }
    };
    if args.bundles.contains(&Package::Mcpb) {
        let out = args.out.clone().unwrap_or_else(|| target.join(profile).join("bundle/mcpb"));
        let made = mcpb::bundle(&installed.tools, &cli, &out)?;
        println!("bundle: {}", made.bundle.display());
        println!("bundle: {}", made.server_json.display());
    }
    if app_packages.is_empty() {
        return Ok(());
    }
    setup::ensure_cargo_tool(&installed.tools, &setup::TAURI_CLI, Verbosity::Quiet)?;
    // The renderer the engine loads (from ../lib/paperchain beside the program).
    let pdfium = installed.tools.join("pdfium/libpdfium.so");
    let files = json!({ "/usr/bin/paperchain": cli, "/usr/lib/paperchain/libpdfium.so": pdfium });
    let config = json!({ "bundle": { "linux": {
        "deb": { "files": files, "recommends": RECOMMENDS },
        "appimage": { "files": files },
    }}});

    let bundles = app_packages.iter().map(ToString::to_string).collect::<Vec<_>>().join(",");
    let mut tauri = Cmd::new(installed.tools.join("bin/cargo-tauri"))
        .args(["tauri", "build", "--bundles", &bundles, "--config"])
        .arg(config.to_string())
        .dir(project_root().join("src-tauri"))
        .env("CARGO_TARGET_DIR", &target);
    if args.debug {
        tauri = tauri.arg("--debug");
    }
    let built = tauri.run();
    if let Err(e) = built {
        if app_packages.contains(&Package::Appimage) {
            bail!(
                "{e:#}\nTauri's AppImage packaging downloads linuxdeploy and its plugins from GitHub on first \
                 use; where GitHub cannot be reached, build the .deb alone: cargo xtask bundle --bundles deb"
            );
        }
        return Err(e);
    }
    for package in &app_packages {
        let folder = target.join(profile).join("bundle").join(package.to_string());
        let made = packages_in(&folder, *package);
        if made.is_empty() {
            bail!("Tauri finished but {} holds no {package} package", folder.display());
        }
        for file in made {
            println!("bundle: {}", file.display());
        }
    }
    Ok(())
}

fn packages_in(folder: &Path, package: Package) -> Vec<PathBuf> {
    let extension = match package {
        Package::Deb => "deb",
        Package::Appimage => "AppImage",
        Package::Mcpb => "mcpb",
    };
    let Ok(entries) = std::fs::read_dir(folder) else { return Vec::new() };
    entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == extension)).collect()
}

/// Where cargo builds: `cargo metadata` knows (`CARGO_TARGET_DIR`, or `target/`).
fn target_dir() -> anyhow::Result<PathBuf> {
    let metadata = cargo().args(["metadata", "--format-version", "1", "--no-deps"]).quiet().read()?;
    let metadata: serde_json::Value = serde_json::from_str(&metadata).context("cargo metadata's answer")?;
    metadata["target_directory"].as_str().map(PathBuf::from).context("cargo metadata names no target folder")
}
