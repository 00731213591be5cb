//! `cargo xtask setup`: installs, idempotently, the programs the project runs but does not
//! build: Debian packages, and a Python virtual environment of test tools.
//!
//! What the project needs is listed once, in the constants at the top; adding a tool is
//! adding a line there. Native libraries come out of PyPI wheels (libpdfium from
//! `pypdfium2`); anvil, cast, solcjs, the x402 TypeScript client and the MCP tools (the
//! Inspector, the TypeScript SDK, the bundle tool) come from npm into
//! `$PAPERCHAIN_TOOLS/npm`. The wallet's keyring tests need a real Secret Service:
//! gnome-keyring on a private D-Bus session bus, both from Debian. Later work adds
//! LibreOffice, tesseract and Chromium (Debian) the same way.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use crate::cmd::{Cmd, find_program};

/// Debian packages the project needs.
pub const DEBIAN_PACKAGES: &[DebianPackage] = &[
    DebianPackage { name: "qpdf", why: "the qpdf CLI: reference for tests and the bench" },
    DebianPackage { name: "g++", why: "builds the libqpdf bundled with the qpdf crate (protect, unlock, repair)" },
    DebianPackage { name: "poppler-utils", why: "pdftoppm, pdftotext, pdfinfo: an independent reader for tests" },
    DebianPackage { name: "ghostscript", why: "gs: the reference compressor in the docs bench" },
    DebianPackage {
        name: "mupdf-tools",
        why: "mutool poster: the reference for /v1/pdf/poster in `cargo xtask bench edits`",
    },
    DebianPackage {
        name: "comparepdf",
        why: "the reference for /v1/pdf/compare's comparison of looks in `cargo xtask bench edits`",
    },
    DebianPackage { name: "python3-venv", why: "`python3 -m venv`, for the Python tools below" },
    DebianPackage { name: "time", why: "/usr/bin/time: peak memory in the bench" },
    DebianPackage { name: "wrk", why: "the HTTP load generator of `cargo xtask bench load`" },
    DebianPackage {
        name: "openssl",
        why: "the test CA (`openssl ca`) and time-stamp authority (`openssl ts`) of the signature tests",
    },
    // The wallet's keyring tests (wallet/tests/it/keyring.rs) run a real Secret Service:
    // testkit's `keyring::SecretService` starts a private session bus and an unlocked
    // gnome-keyring on it.
    DebianPackage { name: "dbus-daemon", why: "dbus-daemon: the private D-Bus session bus of the keyring tests" },
    DebianPackage { name: "dbus-bin", why: "dbus-send: the keyring tests wait until the Secret Service is on the bus" },
    DebianPackage {
        name: "gnome-keyring",
        why: "gnome-keyring-daemon: the Secret Service the wallet's keyring tests store keys in",
    },
    DebianPackage { name: "libsecret-tools", why: "secret-tool: reads the keyring independently in the keyring tests" },
    DebianPackage {
        name: "libreoffice-writer-nogui",
        why: "soffice: Word, OpenDocument text and RTF to PDF (/v1/docs/to-pdf), and the Word files of \
              /v1/pdf/to-docx rendered in tests",
    },
    DebianPackage { name: "libreoffice-calc-nogui", why: "soffice: Excel and OpenDocument spreadsheets to PDF" },
    DebianPackage {
        name: "libreoffice-impress-nogui",
        why: "soffice: PowerPoint and OpenDocument presentations to PDF",
    },
    DebianPackage {
        name: "bubblewrap",
        why: "bwrap: the box LibreOffice runs in (no network, no user files; engine/docs/src/sandbox.rs)",
    },
    DebianPackage {
        name: "fonts-liberation",
        why: "metric-compatible Arial, Times New Roman and Courier New for soffice",
    },
    DebianPackage {
        name: "chromium",
        why: "the browser /v1/pdf/html-to-pdf prints pages with (run in a bubblewrap box, driven over its pipe)",
    },
    DebianPackage {
        name: "fonts-urw-base35",
        why: "URW Symbol and Dingbats: embedded by to-pdfa where a PDF uses them unembedded",
    },
    DebianPackage { name: "fonts-crosextra-carlito", why: "Carlito: metric-compatible Calibri for soffice" },
    DebianPackage { name: "fonts-crosextra-caladea", why: "Caladea: metric-compatible Cambria for soffice" },
    DebianPackage {
        name: "libwebkit2gtk-4.1-dev",
        why: "WebKitGTK: the desktop app's (src-tauri) web view, to build it",
    },
    DebianPackage { name: "libayatana-appindicator3-dev", why: "the desktop app's tray icon" },
    DebianPackage { name: "librsvg2-dev", why: "SVG icons in the desktop app's build" },
    DebianPackage { name: "libxdo-dev", why: "the desktop app's menus (tauri's muda) link it on Linux" },
    DebianPackage { name: "webkit2gtk-driver", why: "WebKitWebDriver: drives the desktop app's window in its tests" },
    DebianPackage { name: "xvfb", why: "a display for the desktop app's window in its tests" },
    DebianPackage { name: "xdotool", why: "answers the system save dialog of the desktop app in its tests" },
    DebianPackage {
        name: "dunst",
        why: "a notification server on the desktop app's test display: its tests read the notification shown",
    },
    DebianPackage {
        name: "python3-xlib",
        why: "closes the desktop app's window as a window manager does (WM_DELETE_WINDOW) in its tests",
    },
    DebianPackage {
        name: "tesseract-ocr",
        why: "libtesseract 5, the OCR engine of /v1/pdf/ocr and /v1/ocr (loaded at run time), and the tesseract the \
              OCR bench's reference runs",
    },
    DebianPackage {
        name: "tesseract-ocr-osd",
        why: "Tesseract's orientation detection: OCR turns sideways pages upright",
    },
    DebianPackage { name: "tesseract-ocr-eng", why: "Tesseract's English models (the default OCR language)" },
    DebianPackage { name: "tesseract-ocr-deu", why: "Tesseract's German models" },
    DebianPackage { name: "tesseract-ocr-fra", why: "Tesseract's French models" },
    DebianPackage { name: "tesseract-ocr-spa", why: "Tesseract's Spanish models" },
    DebianPackage { name: "tesseract-ocr-ita", why: "Tesseract's Italian models" },
    DebianPackage { name: "tesseract-ocr-por", why: "Tesseract's Portuguese models" },
    DebianPackage { name: "tesseract-ocr-nld", why: "Tesseract's Dutch models" },
];

/// Python packages pip-installs into the tools venv (`$PAPERCHAIN_TOOLS`).
pub const PYTHON_TOOLS: &[PythonTool] = &[
    PythonTool {
        requirement: "openapi-spec-validator",
        probe: &["openapi-spec-validator", "--version"],
        why: "validates the generated OpenAPI document in tests",
    },
    PythonTool {
        requirement: "openpyxl==3.1.5",
        probe: &["python", "-c", "import openpyxl"],
        why: "reads back the workbooks of /v1/docs/xlsx-build and checks /v1/docs/xlsx-to-json in tests and the bench",
    },
    PythonTool {
        requirement: "python-pptx==1.0.2",
        probe: &["python", "-c", "import pptx"],
        why: "reads back the decks of /v1/docs/pptx-build in tests",
    },
    PythonTool {
        requirement: "markitdown[pdf,docx,pptx,xlsx]==0.1.9",
        probe: &["python", "-c", "import markitdown"],
        why: "the reference for /v1/docs/to-markdown in `cargo xtask bench convert`",
    },
    PythonTool {
        requirement: "pdfplumber==0.11.9",
        probe: &["python", "-c", "import pdfplumber"],
        why: "the reference for /v1/pdf/tables in `cargo xtask bench convert`",
    },
    PythonTool {
        requirement: "ofxparse==0.21",
        probe: &["python", "-c", "import ofxparse"],
        why: "reads back the OFX statements of /v1/pdf/bank-statement in tests",
    },
    PythonTool {
        requirement: "reportlab==5.1.0",
        probe: &["python", "-c", "import sys, reportlab; sys.exit(reportlab.Version != '5.1.0')"],
        why: "one of the three PDF writers of the variety set (testkit/src/variety.py) the conversion routes are tested on",
    },
    PythonTool {
        requirement: "factur-x==7.8",
        probe: &["python", "-c", "import sys, facturx; sys.exit(facturx.__version__ != '7.8')"],
        why: "reads back and checks (against the Factur-X XSD) the e-invoices of /v1/pdf/e-invoice in tests",
    },
    PythonTool {
        // AGPL: run as a program by the bench, never linked.
        requirement: "pymupdf==1.28.2",
        probe: &["python", "-c", "import sys, pymupdf; sys.exit(pymupdf.__version__ != '1.28.2')"],
        why: "the reference for /v1/pdf/redact and /v1/pdf/sanitize in `cargo xtask bench edits`",
    },
    PythonTool {
        requirement: "python-docx==1.2.0",
        probe: &["python", "-c", "import docx"],
        why: "reads back the Word files of /v1/pdf/to-docx in tests",
    },
    PythonTool {
        requirement: "schemathesis==4.32.5",
        // The exact version: a newer one generates other requests and checks other things.
        probe: &["python", "-c", "import sys, schemathesis; sys.exit(schemathesis.__version__ != '4.32.5')"],
        why: "sends generated requests to every route of the published OpenAPI document in gateway/tests/it/conformance.rs",
    },
    PythonTool {
        requirement: "ocrmypdf==16.13.0",
        probe: &["ocrmypdf", "--version"],
        why: "the reference for /v1/pdf/ocr in `cargo xtask bench ocr` (same Tesseract, Ghostscript from Debian)",
    },
    PythonTool {
        // 2.x has both clients the tests drive: stdio and streamable HTTP.
        requirement: "mcp==2.3.0",
        probe: &[
            "python",
            "-c",
            "import sys, importlib.metadata, mcp.client.stdio, mcp.client.streamable_http; \
             sys.exit(importlib.metadata.version('mcp') != '2.3.0')",
        ],
        why: "the official MCP Python SDK client in the file-path tests of mcp-bridge/tests/it",
    },
    PythonTool {
        requirement: "check-jsonschema==0.39.0",
        probe: &[
            "python",
            "-c",
            "import sys, importlib.metadata; sys.exit(importlib.metadata.version('check-jsonschema') != '0.39.0')",
        ],
        why: "validates the server.json of `cargo xtask bundle --bundles mcpb` against the MCP registry's schema \
              in cli/tests/it/mcpb.rs",
    },
    PythonTool {
        requirement: "pyhanko==0.38.0",
        // The exact version: another one validates (and reports) otherwise.
        probe: &[
            "python",
            "-c",
            "import sys, importlib.metadata, pyhanko.sign.validation; \
             sys.exit(importlib.metadata.version('pyhanko') != '0.38.0')",
        ],
        why: "the independent validator (and second signer) of /v1/pdf/sign and /v1/pdf/verify-signatures in tests",
    },
    PythonTool {
        // pyhanko 0.38.0 takes any 0.33.x; its path validation is pinned too.
        requirement: "pyhanko-certvalidator==0.33.0",
        probe: &[
            "python",
            "-c",
            "import sys, importlib.metadata, pyhanko_certvalidator; \
             sys.exit(importlib.metadata.version('pyhanko-certvalidator') != '0.33.0')",
        ],
        why: "the certificate path validation of pyhanko (above)",
    },
];

/// Native libraries taken out of PyPI wheels into `$PAPERCHAIN_TOOLS`.
pub const WHEEL_LIBRARIES: &[WheelLibrary] = &[WheelLibrary {
    // Pinned: pdfium-render's `pdfium_NNNN` feature (engine/docs/Cargo.toml) must match the
    // pdfium build inside (5.15.2 carries pdfium 159.0.8149.0; see pypdfium2_raw/version.json).
    requirement: "pypdfium2==5.15.2",
    folder: "pypdfium2_raw",
    library: "pdfium",
    dest: "pdfium",
    why: "libpdfium, the renderer of /v1/pdf/to-images and /v1/pdf/rasterize",
}];

/// npm packages installed into `$PAPERCHAIN_TOOLS/npm` (their programs are in
/// `node_modules/.bin` there). Tests find anvil at `$PAPERCHAIN_TOOLS/npm/node_modules/.bin/anvil`;
/// the chain bench finds cast beside it; tests/interop/*.mjs load the x402 client from
/// `$PAPERCHAIN_TOOLS/npm/node_modules`.
pub const NPM_TOOLS: &[NpmTool] = &[
    NpmTool {
        package: "@foundry-rs/anvil-linux-amd64",
        version: "1.7.1",
        program: Some("anvil"),
        why: "anvil, the local EVM chain the chain-route tests start",
    },
    NpmTool {
        // The platform package itself, like anvil's: `@foundry-rs/cast` only picks it in a
        // postinstall script, which would fetch the binary on its own.
        package: "@foundry-rs/cast-linux-amd64",
        version: "1.7.1",
        program: Some("cast"),
        why: "cast, the reference client of the chain bench (same Foundry release as anvil)",
    },
    NpmTool {
        package: "solc",
        version: "0.8.37",
        program: Some("solcjs"),
        why: "solcjs, which built the fixture contracts (engine/tests/fixtures/contracts/build.js)",
    },
    NpmTool {
        package: "@x402/fetch",
        version: "2.27.0",
        program: None,
        why: "the official x402 TypeScript client, which pays the sandbox in tests/tests/it/interop_x402_fetch.rs",
    },
    NpmTool {
        // Same release as @x402/fetch: both require @x402/core ~2.27.0.
        package: "@x402/evm",
        version: "2.27.0",
        program: None,
        why: "the EVM exact scheme (EIP-3009 signing) of the x402 TypeScript client",
    },
    NpmTool {
        // Same release as @x402/fetch (@x402/core ~2.27.0).
        package: "@x402/svm",
        version: "2.27.0",
        program: None,
        why: "the Solana exact scheme of the x402 TypeScript client, which pays the sandbox's Solana side",
    },
    NpmTool {
        // @x402/svm's peer (>=5.1.0), pinned so every setup builds the same transactions.
        package: "@solana/kit",
        version: "5.5.1",
        program: None,
        why: "the payer's key and the RPC client of the x402 TypeScript Solana client",
    },
    NpmTool {
        // @x402/evm asks for viem ^2.48.11; pinned so every setup signs with the same code,
        // and at a version whose dependencies the registry mirrors we use carry.
        package: "viem",
        version: "2.56.0",
        program: None,
        why: "the payer's key (viem/accounts) for the x402 TypeScript client",
    },
    NpmTool {
        // 2.x asks for Node.js 22.19 for its web UI; its CLI mode (`mcp-inspector --cli`),
        // the only one used, runs under Debian 12's Node.js 20, and has `--strict`, the
        // tool-schema portability check.
        package: "@modelcontextprotocol/inspector",
        version: "2.12.0",
        program: None,
        why: "the official MCP Inspector, whose CLI lists, checks (--strict) and calls the MCP tools in cli/tests/it/mcp.rs",
    },
    NpmTool {
        // Pinned, not left to the Inspector's ^1.25.2: the interop test depends on how 1.x's
        // client validates structured content. The release the Inspector 1.0.3 install brought.
        package: "@modelcontextprotocol/sdk",
        version: "1.32.2",
        program: None,
        why: "the official MCP TypeScript SDK client, which calls the hosted sandbox in mcp-bridge/tests/it/mcp_ts_sdk.rs",
    },
    NpmTool {
        // Its command line runs under Debian 12's Node.js 20.
        package: "@anthropic-ai/mcpb",
        version: "2.1.2",
        program: Some("mcpb"),
        why: "the official MCP bundle tool: packs the .mcpb of `cargo xtask bundle --bundles mcpb`, and validates, \
              unpacks and reads it in cli/tests/it/mcpb.rs",
    },
];

/// Debian's package for npm, installed only when no `npm` is on the PATH (a Node.js from
/// elsewhere brings its own, and Debian's would conflict with it).
const NPM_DEBIAN_PACKAGE: &str = "npm";

/// Where the Python tools venv goes unless `$PAPERCHAIN_TOOLS` says otherwise (under $HOME).
const DEFAULT_TOOLS_DIR: &str = ".cache/paperchain/tools";

pub struct DebianPackage {
    pub name: &'static str,
    pub why: &'static str,
}

pub struct PythonTool {
    /// What `pip install` is given.
    pub requirement: &'static str,
    /// A command (a program in the venv's `bin/`, then its arguments) that works once installed.
    pub probe: &'static [&'static str],
    pub why: &'static str,
}

pub struct NpmTool {
    /// The npm package.
    pub package: &'static str,
    /// Its pinned version.
    pub version: &'static str,
    /// The program it puts in `node_modules/.bin`; `<program> --version` must print the version.
    /// `None` for a library, whose `package.json` must carry the version.
    pub program: Option<&'static str>,
    pub why: &'static str,
}

impl NpmTool {
    fn spec(&self) -> String {
        format!("{}@{}", self.package, self.version)
    }

    fn installed(&self, prefix: &Path) -> bool {
        let probe = match self.program {
            Some(program) => Cmd::new(prefix.join("node_modules/.bin").join(program)).arg("--version"),
            // node rather than a text search, so the top-level "version" is the one read; the
            // path is absolute because packages' `exports` often hide package.json.
            None => Cmd::new("node")
                .args(["-p", "require(process.argv[1]).version"])
                .arg(prefix.join("node_modules").join(self.package).join("package.json")),
        };
        probe.quiet().read().is_ok_and(|out| match self.program {
            Some(_) => out.contains(self.version),
            None => out.trim() == self.version,
        })
    }

    /// What is wrong when [`NpmTool::installed`] says no after an install.
    fn mismatch(&self) -> String {
        match self.program {
            Some(program) => format!("`{program} --version` does not print {}", self.version),
            None => format!("its package.json does not say version {}", self.version),
        }
    }
}

pub struct WheelLibrary {
    /// What `pip download` is given: a pinned `name==version`.
    pub requirement: &'static str,
    /// The folder inside the wheel that holds the library.
    pub folder: &'static str,
    /// The library's name without prefix or suffix (`pdfium` is `libpdfium.so` on Linux).
    pub library: &'static str,
    /// The folder under `$PAPERCHAIN_TOOLS` it goes to.
    pub dest: &'static str,
    pub why: &'static str,
}

impl WheelLibrary {
    /// The library's file name on this platform.
    fn file_name(&self) -> String {
        format!("{}{}{}", std::env::consts::DLL_PREFIX, self.library, std::env::consts::DLL_SUFFIX)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Verbosity {
    /// Say what is present as well as what was installed (`cargo xtask setup`, `test`).
    Report,
    /// Say only what was installed (`run`, `bench`).
    Quiet,
}

/// What setup leaves for the other tasks.
pub struct Installed {
    /// The Python tools venv; tests find it through `$PAPERCHAIN_TOOLS`.
    pub tools: PathBuf,
}

pub fn run(verbosity: Verbosity) -> anyhow::Result<Installed> {
    ensure_debian_packages(verbosity)?;
    let tools = tools_dir()?;
    ensure_python_tools(&tools, verbosity)?;
    ensure_wheel_libraries(&tools, verbosity)?;
    ensure_npm_tools(&tools, verbosity)?;
    ensure_ui(verbosity)?;
    ensure_cargo_tools(&tools, verbosity)?;
    Ok(Installed { tools })
}

/// A program built from crates.io into `$PAPERCHAIN_TOOLS/bin`, at a pinned version.
pub struct CargoTool {
    pub krate: &'static str,
    pub version: &'static str,
    pub why: &'static str,
}

/// Programs installed with `cargo install` by setup.
pub const CARGO_TOOLS: &[CargoTool] = &[CargoTool {
    krate: "tauri-driver",
    version: "2.1.0",
    why: "the WebDriver server the desktop app's window tests drive it through (with WebKitWebDriver)",
}];

/// Tauri's command line, which packages the desktop app (`cargo xtask bundle` installs it:
/// the tests do not need it).
pub const TAURI_CLI: CargoTool =
    CargoTool { krate: "tauri-cli", version: "2.12.4", why: "packages the desktop app (.deb, AppImage)" };

fn ensure_cargo_tools(tools: &Path, verbosity: Verbosity) -> anyhow::Result<()> {
    for tool in CARGO_TOOLS {
        ensure_cargo_tool(tools, tool, verbosity)?;
    }
    Ok(())
}

/// Builds `tool` into `tools/bin` unless that version is there.
pub fn ensure_cargo_tool(tools: &Path, tool: &CargoTool, verbosity: Verbosity) -> anyhow::Result<()> {
    // Which versions are there: cargo install's own record, beside `bin`.
    let record = std::fs::read_to_string(tools.join(".crates.toml")).unwrap_or_default();
    if record.contains(&format!("\"{} {} ", tool.krate, tool.version)) {
        if verbosity == Verbosity::Report {
            println!("setup: {} {} present in {}", tool.krate, tool.version, tools.join("bin").display());
        }
        return Ok(());
    }
    println!("setup: building {} {} ({})", tool.krate, tool.version, tool.why);
    // Its own build folder, removed after: the project's build cache stays the project's.
    let build = build_dir(tools, tool.krate)?;
    let installed = Cmd::new("cargo")
        .args(["install", "--locked", "--force", "--version", tool.version, "--root"])
        .arg(tools)
        .arg("--target-dir")
        .arg(&build)
        .arg(tool.krate)
        .run();
    let _ = std::fs::remove_dir_all(&build);
    installed.with_context(|| format!("cargo install {} {}", tool.krate, tool.version))
}

/// The local Solana validator of the Solana tests (`testkit/surfnet`: surfpool-core 1.6.1
/// in a runner that seeds fixtures), built into `tools/bin/paperchain-surfnet`. Its build
/// folder stays in `tools/.build-surfnet`, so that a change of the runner's sources rebuilds
/// the runner alone; the binary is rebuilt only when the sources' fingerprint differs from
/// the one stamped beside it (a fresh clone's new file times do not count).
/// Only `setup` and `test` build it: serving and the benches never start it.
pub fn ensure_surfnet(tools: &Path, verbosity: Verbosity) -> anyhow::Result<()> {
    let source = crate::project_root().join("testkit/surfnet");
    let fingerprint = fingerprint(&source)?;
    let binary = tools.join("bin/paperchain-surfnet");
    let stamp = tools.join("bin/paperchain-surfnet.fingerprint");
    if binary.is_file() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(fingerprint.as_str()) {
        if verbosity == Verbosity::Report {
            println!("setup: the local Solana validator is built ({})", binary.display());
        }
        return Ok(());
    }
    println!(
        "setup: building the local Solana validator from testkit/surfnet (surfpool-core 1.6.1; about 15 minutes \
         on 2 cores the first time, a minute after a change of the runner)"
    );
    let build = build_dir(tools, "surfnet")?;
    Cmd::new("cargo")
        .args(["build", "--release", "--locked", "--manifest-path"])
        .arg(source.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &build)
        .run()
        .context("building testkit/surfnet")?;
    std::fs::create_dir_all(tools.join("bin")).context("creating the tools' bin folder")?;
    // Copied under another name, then renamed: a test never starts a half-copied binary.
    let partial = tools.join("bin/.paperchain-surfnet.partial");
    std::fs::copy(build.join("release/paperchain-surfnet"), &partial).context("copying the validator's binary")?;
    std::fs::rename(&partial, &binary).context("installing the validator's binary")?;
    std::fs::write(&stamp, &fingerprint).with_context(|| format!("writing {}", stamp.display()))?;
    Ok(())
}

/// A fingerprint of the runner's sources: FNV-1a over each file's path and bytes, in
/// path order (stable across toolchains, unlike std's hasher).
fn fingerprint(source: &Path) -> anyhow::Result<String> {
    let mut files = vec![source.join("Cargo.toml"), source.join("Cargo.lock")];
    let mut pending = vec![source.join("src")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
            let path = entry?.path();
            if path.is_dir() { pending.push(path) } else { files.push(path) }
        }
    }
    files.sort();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for file in &files {
        let relative = file.strip_prefix(source).unwrap_or(file).to_string_lossy().into_owned();
        let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
        for byte in relative.as_bytes().iter().chain([0u8].iter()).chain(bytes.iter()) {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    Ok(format!("{hash:016x}"))
}

fn build_dir(tools: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let dir = tools.join(format!(".build-{name}"));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// The app's web front end: its npm packages (`npm ci` from the committed lockfile, again
/// whenever the lockfile changes) and its build in `ui/dist`, which the server embeds at
/// compile time (again whenever a source is newer than the build).
fn ensure_ui(verbosity: Verbosity) -> anyhow::Result<()> {
    let ui = crate::project_root().join("ui");
    let lock = ui.join("package-lock.json");
    let installed_lock = ui.join("node_modules/.paperchain-package-lock.json");
    let lock_text = std::fs::read(&lock).with_context(|| format!("reading {}", lock.display()))?;
    if std::fs::read(&installed_lock).ok().as_deref() != Some(&lock_text[..]) {
        ensure_npm()?;
        println!("setup: installing the app's npm packages in {} (npm ci)", ui.display());
        Cmd::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .dir(&ui)
            .run()
            .context("npm ci in ui/")?;
        std::fs::write(&installed_lock, &lock_text).with_context(|| format!("writing {}", installed_lock.display()))?;
    } else if verbosity == Verbosity::Report {
        println!("setup: the app's npm packages are present in {}", ui.join("node_modules").display());
    }
    let built = ui.join("dist/index.html");
    let built_at = std::fs::metadata(&built).and_then(|m| m.modified()).ok();
    let sources = ["src", "index.html", "vite.config.ts", "tsconfig.json", "package-lock.json"];
    let newest = sources.iter().filter_map(|s| newest_change(&ui.join(s))).max();
    if built_at.is_some() && built_at >= newest {
        if verbosity == Verbosity::Report {
            println!("setup: the app's front end is built ({})", built.display());
        }
        return Ok(());
    }
    println!("setup: building the app's front end (npm run build in {})", ui.display());
    Cmd::new("npm").args(["run", "build", "--silent"]).dir(&ui).run().context("npm run build in ui/")?;
    Ok(())
}

/// The latest modification time of a file, or of any file in a folder.
fn newest_change(path: &Path) -> Option<std::time::SystemTime> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_dir() {
        return meta.modified().ok();
    }
    std::fs::read_dir(path).ok()?.flatten().filter_map(|e| newest_change(&e.path())).max()
}

/// npm, installed from Debian when missing.
fn ensure_npm() -> anyhow::Result<()> {
    if find_program("npm").is_some() {
        return Ok(());
    }
    let by_hand = format!("apt-get update && apt-get install -y --no-install-recommends {NPM_DEBIAN_PACKAGE}");
    let apt = apt_get().with_context(|| format!("npm is missing; as root, run: {by_hand}"))?;
    apt.clone()
        .arg("update")
        .run()
        .and_then(|()| apt.args(["install", "-y", "--no-install-recommends", NPM_DEBIAN_PACKAGE]).run())
        .with_context(|| format!("installing npm failed; as root, run: {by_hand}"))
}

fn ensure_debian_packages(verbosity: Verbosity) -> anyhow::Result<()> {
    let names: Vec<&str> = DEBIAN_PACKAGES.iter().map(|p| p.name).collect();
    if find_program("dpkg-query").is_none() {
        bail!(
            "setup installs with Debian's apt and there is no dpkg-query here; install these yourself: {}",
            names.join(" ")
        );
    }
    let missing: Vec<&str> = names.iter().copied().filter(|name| !is_installed(name)).collect();
    if missing.is_empty() {
        if verbosity == Verbosity::Report {
            println!("setup: Debian packages present: {}", names.join(", "));
        }
        return Ok(());
    }
    for package in DEBIAN_PACKAGES.iter().filter(|p| missing.contains(&p.name)) {
        println!("setup: installing {} ({})", package.name, package.why);
    }
    let by_hand = format!("apt-get update && apt-get install -y --no-install-recommends {}", missing.join(" "));
    let apt = apt_get().with_context(|| format!("cannot install {}; as root, run: {by_hand}", missing.join(", ")))?;
    apt.clone()
        .arg("update")
        .run()
        .and_then(|()| apt.args(["install", "-y", "--no-install-recommends"]).args(&missing).run())
        .with_context(|| format!("installing {} failed; as root, run: {by_hand}", missing.join(", ")))?;
    let still_missing: Vec<&str> = missing.iter().copied().filter(|name| !is_installed(name)).collect();
    if !still_missing.is_empty() {
        bail!("apt-get finished but {} is still not installed; as root, run: {by_hand}", still_missing.join(", "));
    }
    println!("setup: installed Debian packages: {}", missing.join(", "));
    Ok(())
}

fn is_installed(package: &str) -> bool {
    // `${Status}` reads "install ok installed" (or "hold ok installed"); anything else,
    // or no such package, means it has to be installed.
    Cmd::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .quiet()
        .read()
        .is_ok_and(|status| status.split_whitespace().last() == Some("installed"))
}

/// `apt-get`, as root directly or through sudo, non-interactive either way.
fn apt_get() -> anyhow::Result<Cmd> {
    let uid = Cmd::new("id").arg("-u").quiet().read()?;
    if uid.trim() == "0" {
        return Ok(Cmd::new("apt-get").env("DEBIAN_FRONTEND", "noninteractive"));
    }
    if find_program("sudo").is_none() {
        bail!("not running as root, and there is no sudo");
    }
    // Without a terminal (CI) a password prompt would wait forever: -n fails instead.
    let sudo = Cmd::new("sudo");
    let sudo = if std::io::stdin().is_terminal() { sudo } else { sudo.arg("-n") };
    Ok(sudo.args(["env", "DEBIAN_FRONTEND=noninteractive", "apt-get"]))
}

/// `$PAPERCHAIN_TOOLS`, else `$HOME/.cache/paperchain/tools`.
fn tools_dir() -> anyhow::Result<PathBuf> {
    if let Some(dir) = std::env::var_os("PAPERCHAIN_TOOLS").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let home =
        std::env::var_os("HOME").filter(|h| !h.is_empty()).context("neither PAPERCHAIN_TOOLS nor HOME is set")?;
    Ok(PathBuf::from(home).join(DEFAULT_TOOLS_DIR))
}

fn ensure_python_tools(venv: &Path, verbosity: Verbosity) -> anyhow::Result<()> {
    let missing: Vec<&PythonTool> = PYTHON_TOOLS.iter().filter(|tool| !probe(venv, tool).succeeds()).collect();
    let names = |tools: &[&PythonTool]| tools.iter().map(|t| t.requirement).collect::<Vec<_>>().join(", ");
    if missing.is_empty() {
        if verbosity == Verbosity::Report {
            let all: Vec<&PythonTool> = PYTHON_TOOLS.iter().collect();
            println!("setup: Python tools present in {}: {}", venv.display(), names(&all));
        }
        return Ok(());
    }
    for tool in &missing {
        println!("setup: installing {} into {} ({})", tool.requirement, venv.display(), tool.why);
    }
    let python = venv.join("bin/python");
    if !Cmd::new(&python).arg("--version").succeeds() {
        // A venv whose interpreter no longer runs (its base Python moved) is rebuilt; --clear
        // only where pyvenv.cfg shows the folder is a venv, never on someone's other files.
        let venv_cmd = Cmd::new("python3").args(["-m", "venv"]);
        let venv_cmd = if venv.join("pyvenv.cfg").is_file() { venv_cmd.arg("--clear") } else { venv_cmd };
        venv_cmd
            .arg(venv)
            .run()
            .context("creating the venv needs python3 and its venv module (Debian: python3-venv)")?;
    }
    Cmd::new(&python)
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
        .args(missing.iter().map(|t| t.requirement))
        .run()
        .with_context(|| format!("pip could not install {}", names(&missing)))?;
    if let Some(broken) = missing.iter().find(|tool| !probe(venv, tool).succeeds()) {
        bail!("{} was installed but `{}` does not work", broken.requirement, probe(venv, broken));
    }
    println!("setup: installed into {}: {}", venv.display(), names(&missing));
    Ok(())
}

fn probe(venv: &Path, tool: &PythonTool) -> Cmd {
    let (program, args) = tool.probe.split_first().map_or(("python", &[][..]), |(p, a)| (*p, a));
    Cmd::new(venv.join("bin").join(program)).args(args)
}

fn ensure_wheel_libraries(tools: &Path, verbosity: Verbosity) -> anyhow::Result<()> {
    for lib in WHEEL_LIBRARIES {
        let dest = tools.join(lib.dest).join(lib.file_name());
        if dest.is_file() {
            if verbosity == Verbosity::Report {
                println!("setup: {} present: {}", lib.requirement, dest.display());
            }
            continue;
        }
        println!("setup: installing {} from {} ({})", dest.display(), lib.requirement, lib.why);
        install_wheel_library(lib, tools, &dest)?;
        println!("setup: installed {}", dest.display());
    }
    Ok(())
}

fn install_wheel_library(lib: &WheelLibrary, tools: &Path, dest: &Path) -> anyhow::Result<()> {
    let download = tools.join(format!(".download-{}", lib.library));
    if download.exists() {
        // Left by an interrupted run: a half-downloaded wheel must not be read.
        std::fs::remove_dir_all(&download).with_context(|| format!("removing {}", download.display()))?;
    }
    std::fs::create_dir_all(&download).with_context(|| format!("creating {}", download.display()))?;
    // The tools venv's pip is there by now; python3's own pip is the fallback.
    let venv_python = tools.join("bin/python");
    let python = if Cmd::new(&venv_python).args(["-m", "pip", "--version"]).quiet().succeeds() {
        Cmd::new(&venv_python)
    } else {
        Cmd::new("python3")
    };
    python
        .clone()
        .args(["-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps"])
        .args(["--only-binary=:all:", "--dest"])
        .arg(&download)
        .arg(lib.requirement)
        .run()
        .with_context(|| format!("pip could not download the {} wheel for this platform", lib.requirement))?;
    let wheel = std::fs::read_dir(&download)?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .with_context(|| format!("pip downloaded no wheel of {} into {}", lib.requirement, download.display()))?;
    let parent = dest.parent().context("the library's destination has no folder")?;
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    // A wheel is a zip; Python's zipfile reads it, so xtask needs no zip crate. Written
    // beside the destination and renamed, so an interrupted run never leaves a partial
    // library that a later run would take as installed.
    let partial = parent.join(format!("{}.partial", lib.file_name()));
    let member = format!("{}/{}", lib.folder, lib.file_name());
    const EXTRACT: &str = "import sys, zipfile\n\
        with zipfile.ZipFile(sys.argv[1]) as z, open(sys.argv[3], 'wb') as out:\n    out.write(z.read(sys.argv[2]))";
    python
        .args(["-c", EXTRACT])
        .arg(&wheel)
        .arg(&member)
        .arg(&partial)
        .run()
        .with_context(|| format!("extracting {member} from {}", wheel.display()))?;
    std::fs::rename(&partial, dest).with_context(|| format!("moving the library to {}", dest.display()))?;
    std::fs::remove_dir_all(&download).with_context(|| format!("removing {}", download.display()))?;
    Ok(())
}

fn ensure_npm_tools(tools: &Path, verbosity: Verbosity) -> anyhow::Result<()> {
    let prefix = tools.join("npm");
    let missing: Vec<&NpmTool> = NPM_TOOLS.iter().filter(|tool| !tool.installed(&prefix)).collect();
    let specs = |list: &[&NpmTool]| list.iter().map(|t| t.spec()).collect::<Vec<_>>().join(", ");
    if missing.is_empty() {
        if verbosity == Verbosity::Report {
            let all: Vec<&NpmTool> = NPM_TOOLS.iter().collect();
            println!("setup: npm tools present in {}: {}", prefix.display(), specs(&all));
        }
        return Ok(());
    }
    if !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64")) {
        bail!(
            "the pinned anvil and cast builds are for x86_64 Linux; install anvil {} yourself and set PAPERCHAIN_ANVIL to it",
            NPM_TOOLS[0].version
        );
    }
    for tool in &missing {
        println!("setup: installing {} into {} ({})", tool.spec(), prefix.display(), tool.why);
    }
    ensure_npm()?;
    std::fs::create_dir_all(&prefix).with_context(|| format!("creating {}", prefix.display()))?;
    // Every pinned tool is named on each install, so npm never drops one it installed before.
    Cmd::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--no-save", "--loglevel=error", "--prefix"])
        .arg(&prefix)
        .args(NPM_TOOLS.iter().map(NpmTool::spec))
        .run()
        .with_context(|| format!("npm could not install {}", specs(&missing)))?;
    if let Some(broken) = missing.iter().find(|tool| !tool.installed(&prefix)) {
        bail!("{} was installed but {}", broken.spec(), broken.mismatch());
    }
    println!("setup: installed into {}: {}", prefix.display(), specs(&missing));
    Ok(())
}
