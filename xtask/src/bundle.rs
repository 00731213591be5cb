//! `cargo xtask bundle`: the desktop app's packages for Linux, a `.deb` and an AppImage,
//! built by Tauri's command line (installed into `$PAPERCHAIN_TOOLS` on first use). Each
//! package carries the app (`paperchain-app`) and the command line (`paperchain`) beside
//! it, which agents' configurations run (`paperchain mcp --stdio`).

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde_json::json;

use crate::cmd::Cmd;
use crate::setup::{self, Verbosity};
use crate::{cargo, project_root};

#[derive(clap::Args)]
pub struct BundleArgs {
    /// Which packages: deb, appimage, or both.
    #[arg(long, value_delimiter = ',', default_values_t = [Package::Deb, Package::Appimage])]
    bundles: Vec<Package>,
    /// Package the development build (quick to make from the test build) instead of a release build.
    #[arg(long)]
    debug: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Package {
    Deb,
    Appimage,
}

/// The name Tauri's `--bundles` gives it.
impl std::fmt::Display for Package {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Package::Deb => "deb",
            Package::Appimage => "appimage",
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
    if !cfg!(target_os = "linux") {
        bail!(
            "`cargo xtask bundle` makes the Linux packages; on macOS and Windows run `cargo tauri build` in src-tauri"
        );
    }
    let installed = setup::run(Verbosity::Quiet)?;
    setup::ensure_cargo_tool(&installed.tools, &setup::TAURI_CLI, Verbosity::Quiet)?;
    let profile = if args.debug { "debug" } else { "release" };
    let target = target_dir()?;

    // The command line first, from the same profile: the packages carry it.
    let mut build = cargo().args(["build", "-p", "paperchain"]);
    if !args.debug {
        build = build.arg("--release");
    }
    build.run().context("building paperchain")?;
    let cli = target.join(profile).join("paperchain");
    // The renderer the engine loads (from ../lib/paperchain beside the program).
    let pdfium = installed.tools.join("pdfium/libpdfium.so");
    let files = json!({ "/usr/bin/paperchain": cli, "/usr/lib/paperchain/libpdfium.so": pdfium });
    let config = json!({ "bundle": { "linux": {
        "deb": { "files": files, "recommends": RECOMMENDS },
        "appimage": { "files": files },
    }}});

    let bundles = args.bundles.iter().map(ToString::to_string).collect::<Vec<_>>().join(",");
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
        if args.bundles.contains(&Package::Appimage) {
            bail!(
                "{e:#}\nTauri's AppImage packaging downloads linuxdeploy and its plugins from GitHub on first \
                 use; where GitHub cannot be reached, build the .deb alone: cargo xtask bundle --bundles deb"
            );
        }
        return Err(e);
    }
    for package in &args.bundles {
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
