//! `cargo xtask bundle --bundles mcpb`: the MCP bundle a desktop agent installs in one
//! click, and the `server.json` that lists it in the MCP registry.
//!
//! The bundle (`paperchain-<version>-<os>-<arch>.mcpb`, a zip) holds `manifest.json`
//! (MCP bundle manifest 0.3), the `paperchain` program, the libpdfium its rendering routes
//! load, and the app's icon. The official bundle tool (npm `@anthropic-ai/mcpb`, installed
//! by setup) validates the manifest and packs the folder. The agent's app runs
//! `paperchain mcp --stdio --standalone` from where it unpacked the bundle, with the route
//! mode and the folders the user chose in its settings.
//!
//! `server.json` (the registry's schema of 2025-12-11, kept in `xtask/schemas/`) names the
//! bundle by the URL of the release asset and its SHA-256, and is checked against that
//! schema before it is written.
//!
//! The manifest claims only the platform it was built on: a bundle for another system is
//! built there.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::cmd::Cmd;

/// The program's version, licence and repository: the workspace's, which xtask shares.
const VERSION: &str = env!("CARGO_PKG_VERSION");
const LICENSE: &str = env!("CARGO_PKG_LICENSE");
const REPOSITORY: &str = env!("CARGO_PKG_REPOSITORY");

/// The registry schema `server.json` follows, and the copy of it in this repository.
const SERVER_SCHEMA_URL: &str = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json";
const SERVER_SCHEMA_FILE: &str = "xtask/schemas/server.schema.2025-12-11.json";

/// The tools `paperchain mcp --stdio` lists by default (the compact surface, with the two
/// read-only money tools of the paying client), as the manifest names them.
const TOOLS: &[(&str, &str)] = &[
    (
        "chain_read",
        "Runs one chain read: balances, transactions, tokens, address risk, ENS names, prices and simulations on \
         Ethereum, Base, Polygon and Solana.",
    ),
    (
        "document_operation",
        "Runs one document operation: PDFs merged, split, compressed, filled or made searchable; PDFs to Word, \
         Markdown or tables; Office files and web pages to PDF.",
    ),
    (
        "describe_operation",
        "Describes one operation: what it does, its price, and the JSON Schemas of its input and result.",
    ),
    ("wallet_budget", "Shows the spend limits, what was spent against them today and what is left; changes nothing."),
    (
        "quote_operation",
        "Says what the hosted service would charge for a call and whether the limits allow it, without paying.",
    ),
];

/// What `bundle` made.
pub struct Made {
    pub bundle: PathBuf,
    pub server_json: PathBuf,
}

/// The system the bundle is for, in the names the bundle manifest uses (Node.js's
/// `process.platform` and `process.arch`).
struct Platform {
    os: &'static str,
    arch: &'static str,
}

impl Platform {
    fn this() -> anyhow::Result<Platform> {
        let os = match std::env::consts::OS {
            "linux" => "linux",
            "macos" => "darwin",
            "windows" => "win32",
            other => bail!("MCP bundles run on Linux, macOS and Windows, not on {other}"),
        };
        let arch = match std::env::consts::ARCH {
            "x86_64" => "x64",
            "aarch64" => "arm64",
            other => bail!("no MCP bundle name for the {other} architecture"),
        };
        Ok(Platform { os, arch })
    }

    fn describe(&self) -> String {
        let os = match self.os {
            "darwin" => "macOS",
            "win32" => "Windows",
            _ => "Linux",
        };
        let arch = if self.arch == "x64" { "x86-64" } else { "ARM64" };
        format!("{os} on {arch}")
    }
}

/// Packs `program` (a built `paperchain`) and the libpdfium of `tools` into the bundle, in
/// `out`, and writes `server.json` beside it.
pub fn bundle(tools: &Path, program: &Path, out: &Path) -> anyhow::Result<Made> {
    let platform = Platform::this()?;
    let stage = out.join("paperchain");
    if stage.exists() {
        std::fs::remove_dir_all(&stage).with_context(|| format!("removing {}", stage.display()))?;
    }
    std::fs::create_dir_all(stage.join("lib")).with_context(|| format!("creating {}", stage.display()))?;

    let executable = format!("paperchain{}", std::env::consts::EXE_SUFFIX);
    copy(program, &stage.join(&executable))?;
    let pdfium_name = format!("{}pdfium{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    let pdfium = tools.join("pdfium").join(&pdfium_name);
    copy(&pdfium, &stage.join("lib").join(&pdfium_name)).context("libpdfium comes from `cargo xtask setup`")?;
    copy(&crate::project_root().join("src-tauri/icons/icon.png"), &stage.join("icon.png"))?;
    let manifest = serde_json::to_string_pretty(&manifest(&platform)).context("the manifest as JSON")?;
    std::fs::write(stage.join("manifest.json"), manifest + "\n").context("writing manifest.json")?;

    // The official tool validates the manifest (and the icon) and packs the folder, keeping
    // the program's execute bit. Written under another name and renamed, so a bundle that
    // is there is whole.
    let file_name = format!("paperchain-{VERSION}-{}-{}.mcpb", platform.os, platform.arch);
    let bundle = out.join(&file_name);
    let partial = out.join(format!("{file_name}.partial"));
    Cmd::new(tools.join("npm/node_modules/.bin/mcpb"))
        .arg("pack")
        .arg(&stage)
        .arg(&partial)
        .run()
        .context("packing the MCP bundle (the mcpb tool comes from `cargo xtask setup`)")?;
    std::fs::rename(&partial, &bundle).with_context(|| format!("moving the bundle to {}", bundle.display()))?;
    std::fs::remove_dir_all(&stage).with_context(|| format!("removing {}", stage.display()))?;

    let sha256 = sha256_of(&bundle)?;
    let server = serde_json::to_string_pretty(&server_json(&file_name, &sha256)).context("server.json as JSON")?;
    let server_json = out.join("server.json");
    std::fs::write(&server_json, server + "\n").with_context(|| format!("writing {}", server_json.display()))?;
    Cmd::new(tools.join("bin/check-jsonschema"))
        .arg("--schemafile")
        .arg(crate::project_root().join(SERVER_SCHEMA_FILE))
        .arg(&server_json)
        .run()
        .context("server.json against the registry's schema (check-jsonschema comes from `cargo xtask setup`)")?;
    Ok(Made { bundle, server_json })
}

/// The bundle's `manifest.json`.
fn manifest(platform: &Platform) -> Value {
    let tools: Vec<Value> =
        TOOLS.iter().map(|(name, description)| json!({ "name": name, "description": description })).collect();
    json!({
        "manifest_version": "0.3",
        "name": "paperchain",
        "display_name": "Paperchain",
        "version": VERSION,
        "description": "PDF and Office documents, and blockchain reads, done on your own machine.",
        "long_description": long_description(platform),
        "author": { "name": "The Paperchain developers", "url": REPOSITORY },
        "repository": { "type": "git", "url": REPOSITORY },
        "homepage": REPOSITORY,
        "support": format!("{REPOSITORY}/issues"),
        "icon": "icon.png",
        "server": {
            "type": "binary",
            "entry_point": format!("paperchain{}", std::env::consts::EXE_SUFFIX),
            "mcp_config": {
                "command": "${__dirname}/paperchain",
                // Where a setting with several values stands alone, the agent's app puts one
                // argument per value there (none when nothing is chosen): the folders follow
                // one `--folder`.
                "args": [
                    "mcp", "--stdio", "--standalone",
                    "--route", "${user_config.route_mode}",
                    "--folder", "${user_config.allowed_folders}",
                ],
                // The renderer packed beside the program.
                "env": { "PAPERCHAIN_PDFIUM": "${__dirname}/lib" },
            },
        },
        "tools": tools,
        "keywords": ["pdf", "documents", "ocr", "office", "markdown", "blockchain", "ethereum", "solana", "x402"],
        "license": LICENSE,
        "compatibility": { "platforms": [platform.os] },
        "user_config": {
            "route_mode": {
                "type": "string",
                "title": "Where calls run",
                "description": "local (on this machine, free), hosted (sent to the hosted Paperchain service and \
                                paid from your wallet, under your spend limits) or auto (here, and on the service \
                                when this machine cannot).",
                "default": "local",
                "required": false,
            },
            "allowed_folders": {
                "type": "directory",
                "title": "Folders",
                "description": "Folders whose files the tools may read by path and save results into.",
                "multiple": true,
                "default": [],
                "required": false,
            },
        },
    })
}

fn long_description(platform: &Platform) -> String {
    format!(
        "Paperchain works on documents and reads blockchains on this machine: PDFs merged, split, compressed, \
         filled, made searchable or turned into Word, Markdown, tables and bank transactions; Office files and web \
         pages to PDF; balances, transactions, token and address risk, ENS names, prices and simulations on \
         Ethereum, Base, Polygon and Solana.\n\n\
         Agents get five tools: `chain_read` and `document_operation` run any of the 93 operations, \
         `describe_operation` gives one operation's schemas, `wallet_budget` and `quote_operation` read the spend \
         limits and prices. No tool changes a limit.\n\n\
         Calls run here by default. With *Where calls run* set to hosted or auto, they can go to a hosted Paperchain \
         service, paid per call in USDC from the wallet in your keyring under the limits you set with the \
         `paperchain` command line.\n\n\
         This bundle is built for {}. The Office, web page and OCR operations run LibreOffice, Chromium and \
         Tesseract (in bubblewrap) when the system has them, and say what to install when it does not.",
        platform.describe()
    )
}

/// The registry entry: the bundle as a release asset of the repository, with its SHA-256.
fn server_json(file_name: &str, sha256: &str) -> Value {
    let owner_and_name = REPOSITORY.trim_start_matches("https://github.com/");
    let (owner, _) = owner_and_name.split_once('/').unwrap_or((owner_and_name, ""));
    json!({
        "$schema": SERVER_SCHEMA_URL,
        "name": format!("io.github.{owner}/paperchain"),
        "title": "Paperchain",
        "description": "PDF and Office documents, and blockchain reads, done on your own machine.",
        "version": VERSION,
        "repository": { "url": REPOSITORY, "source": "github" },
        "websiteUrl": REPOSITORY,
        "packages": [{
            "registryType": "mcpb",
            "identifier": format!("{REPOSITORY}/releases/download/v{VERSION}/{file_name}"),
            "version": VERSION,
            "fileSha256": sha256,
            "transport": { "type": "stdio" },
        }],
    })
}

fn copy(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::copy(from, to).map(drop).with_context(|| format!("copying {} to {}", from.display(), to.display()))
}

fn sha256_of(file: &Path) -> anyhow::Result<String> {
    let mut reader = std::fs::File::open(file).with_context(|| format!("opening {}", file.display()))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut reader, &mut hasher).with_context(|| format!("reading {}", file.display()))?;
    Ok(format!("{:x}", hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_entry_names_the_release_asset() {
        let entry = server_json("paperchain-1.2.3-linux-x64.mcpb", &"ab".repeat(32));
        let package = &entry["packages"][0];
        assert_eq!(
            package["identifier"],
            format!("{REPOSITORY}/releases/download/v{VERSION}/paperchain-1.2.3-linux-x64.mcpb")
        );
        assert_eq!(package["registryType"], "mcpb");
        assert!(entry["description"].as_str().unwrap().len() <= 100, "the registry's limit");
    }
}
