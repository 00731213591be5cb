//! Where the programs `cargo xtask setup` installs are.
//!
//! The tools folder is `$PAPERCHAIN_TOOLS`, else `$HOME/.cache/paperchain/tools`. anvil and
//! cast come from npm (`@foundry-rs/anvil-linux-amd64`, `@foundry-rs/cast-linux-amd64`) into
//! its `npm/node_modules/.bin/`; `$PAPERCHAIN_ANVIL` and `$PAPERCHAIN_CAST` name other
//! binaries. The interop scripts' npm packages sit in `npm/node_modules/`.

use std::path::{Path, PathBuf};

/// The tools folder, `None` when neither `PAPERCHAIN_TOOLS` nor `HOME` is set.
pub fn try_tools_dir() -> Option<PathBuf> {
    set_var("PAPERCHAIN_TOOLS").or_else(|| set_var("HOME").map(|home| home.join(".cache/paperchain/tools")))
}

/// The tools folder; panics when neither `PAPERCHAIN_TOOLS` nor `HOME` is set.
pub fn tools_dir() -> PathBuf {
    try_tools_dir().expect("neither PAPERCHAIN_TOOLS nor HOME is set")
}

/// Program `name` of the npm packages in `tools`, or `$<env_key>` when that is set; an
/// error saying how to install it when it is not there.
pub fn npm_program(tools: &Path, name: &str, env_key: &str) -> Result<PathBuf, String> {
    if let Some(path) = set_var(env_key) {
        return Ok(path);
    }
    let path = npm_bin(tools, name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{name} is not installed (looked at {}); run `cargo xtask setup`, or set {env_key} to its path",
            path.display()
        ))
    }
}

/// Where setup puts program `name` of the npm packages in `tools` (whether or not it is there).
pub fn npm_bin(tools: &Path, name: &str) -> PathBuf {
    tools.join("npm/node_modules/.bin").join(name)
}

/// Where anvil is; panics, saying how to install it, when it is not there.
pub fn anvil_binary() -> PathBuf {
    installed("anvil", "PAPERCHAIN_ANVIL")
}

/// Where cast is; panics, saying how to install it, when it is not there.
pub fn cast_binary() -> PathBuf {
    installed("cast", "PAPERCHAIN_CAST")
}

fn installed(name: &str, env_key: &str) -> PathBuf {
    if let Some(path) = set_var(env_key) {
        return path;
    }
    npm_program(&tools_dir(), name, env_key).unwrap_or_else(|e| panic!("{e}"))
}

/// Panics, saying what is missing, unless node runs and every one of `packages` is
/// installed in `tools`: tests that run the interop scripts fail, never skip, without them.
/// `what` names the packages in the message (`the MCP TypeScript SDK`).
pub fn require_node_packages(tools: &Path, what: &str, packages: &[&str]) {
    let version = match std::process::Command::new("node").arg("--version").output() {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_string(),
        Ok(out) => panic!("`node --version` failed ({}); run `cargo xtask setup`", out.status),
        Err(e) => panic!("node is not on the PATH ({e}); run `cargo xtask setup`"),
    };
    let modules = tools.join("npm/node_modules");
    let missing: Vec<&str> =
        packages.iter().copied().filter(|package| !modules.join(package).join("package.json").is_file()).collect();
    assert!(
        missing.is_empty(),
        "{what} is not installed: {} missing from {} (node {version}); run `cargo xtask setup`",
        missing.join(", "),
        modules.display()
    );
}

/// An environment variable that is set and not empty, as a path.
fn set_var(key: &str) -> Option<PathBuf> {
    std::env::var_os(key).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// The Python of the tools folder's virtual environment (openpyxl, python-pptx,
/// python-docx, ofxparse, pdfplumber…); panics, saying how to install it, when it is missing.
pub fn python() -> PathBuf {
    let python = tools_dir().join("bin/python");
    assert!(python.is_file(), "{} is missing; run `cargo xtask setup`", python.display());
    python
}

/// Runs a Python snippet with `args` (its `sys.argv[1:]`) and returns what it printed;
/// panics with its error output when it fails.
pub fn run_python(script: &str, args: &[&Path]) -> String {
    let out = std::process::Command::new(python()).arg("-c").arg(script).args(args).output().expect("python runs");
    assert!(out.status.success(), "python failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("python printed UTF-8")
}

/// A Python script: `python -c DOCX_TEXT file.docx` prints, as JSON, what python-docx reads
/// from a Word file: `blocks` (the body's paragraphs with their runs' font, size, bold and
/// italic, and its tables, in order), `sections` (page size and margins in points) and the
/// number of `pictures`.
pub const DOCX_TEXT: &str = include_str!("docx_text.py");
