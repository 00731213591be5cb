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
        let label = self.label;
        let mut command = tokio::process::Command::new("node");
        command
            .arg(&self.script)
            .args(&self.args)
            .env("PAPERCHAIN_TOOLS", tools)
            .envs(self.env.iter().map(|(k, v)| (*k, v.as_str())))
            // Nothing preloaded that could get round the script's loopback-only fetch.
            .env_remove("NODE_OPTIONS")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().unwrap_or_else(|e| panic!("starting node: {e}; run `cargo xtask setup`"));
        let mut stdin = child.stdin.take().expect("node's stdin is piped");
        if let Some(bytes) = self.stdin {
            stdin.write_all(bytes).await.unwrap_or_else(|e| panic!("{label}: writing to node: {e}"));
        }
        drop(stdin);
        let out = tokio::time::timeout(self.timeout, child.wait_with_output())
            .await
            .unwrap_or_else(|_| panic!("{label}: node did not finish within {:?}", self.timeout))
            .unwrap_or_else(|e| panic!("{label}: waiting for node: {e}"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{label}: node failed ({}):\n{stderr}{stdout}", out.status);
        let line = stdout.lines().last().unwrap_or_else(|| panic!("{label}: node printed nothing; stderr:\n{stderr}"));
        serde_json::from_str(line).unwrap_or_else(|e| panic!("{label}: node's line is not JSON ({e}): {line}"))
    }
}
