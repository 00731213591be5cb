//! The interop scripts under `tests/interop/` run by node: they drive Paperchain with the
//! official TypeScript clients (x402, MCP) that `cargo xtask setup` installs from npm, and
//! print one JSON line as their last.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncWriteExt as _;

/// The interop script `name` (`x402-fetch-pay.mjs`).
pub fn interop_script(name: &str) -> PathBuf {
    crate::workspace_root().join("tests/interop").join(name)
}

/// One run of a script.
pub struct NodeRun<'a> {
    /// The script.
    pub script: PathBuf,
    /// Its arguments.
    pub args: Vec<&'a str>,
    /// Written to its stdin, which is closed after (closed at once when `None`).
    pub stdin: Option<&'a [u8]>,
    /// Environment besides `PAPERCHAIN_TOOLS` (a key is passed this way, never in argv,
    /// where any process list would show it).
    pub env: Vec<(&'a str, String)>,
    /// Longest the run may take.
    pub timeout: Duration,
    /// What the run is, in panic messages.
    pub label: &'a str,
}

impl NodeRun<'_> {
    /// Runs the script with the npm packages of `tools`; panics unless it exits 0 within
    /// the timeout; answers its last line, which must be JSON.
    pub async fn last_json_line(self, tools: &Path) -> Value {
        let mut command = tokio::process::Command::new("node");
        command
            .arg(&self.script)
            .args(&self.args)
            .env("PAPERCHAIN_TOOLS", tools)
            .envs(self.env.iter().map(|(k, v)| (*k, v.as_str())))
            // Nothing preloaded that could get round the script's loopback-only fetch.
            .env_remove("NODE_OPTIONS");
        last_json_line_of(command, self.stdin, self.timeout, self.label).await
    }
}

/// Runs `command` (an interop script under its interpreter) with `stdin` written to it;
/// panics unless it exits 0 within `timeout`; answers its last line, which must be JSON.
pub async fn last_json_line_of(
    mut command: tokio::process::Command,
    stdin: Option<&[u8]>,
    timeout: Duration,
    label: &str,
) -> Value {
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let mut child = command.spawn().unwrap_or_else(|e| panic!("{label}: starting it: {e}; run `cargo xtask setup`"));
    let mut input = child.stdin.take().expect("stdin is piped");
    if let Some(bytes) = stdin {
        input.write_all(bytes).await.unwrap_or_else(|e| panic!("{label}: writing to it: {e}"));
    }
    drop(input);
    let out = tokio::time::timeout(timeout, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{label}: it did not finish within {timeout:?}"))
        .unwrap_or_else(|e| panic!("{label}: waiting for it: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{label}: failed ({}):\n{stderr}{stdout}", out.status);
    let line = stdout.lines().last().unwrap_or_else(|| panic!("{label}: printed nothing; stderr:\n{stderr}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{label}: the last line is not JSON ({e}): {line}"))
}
