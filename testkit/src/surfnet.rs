//! A local Solana validator for the Solana tests: `paperchain-surfnet` (surfpool's core,
//! LiteSVM behind a real JSON-RPC server; source in `testkit/surfnet/`), which `cargo xtask
//! setup` builds into `$PAPERCHAIN_TOOLS/bin`. `$PAPERCHAIN_SURFNET` names another build.
//!
//! The runner starts offline on loopback, seeds accounts, mints (Token, Token-2022 with
//! extensions, a Metaplex metadata account) and real signed transactions, then prints one
//! JSON line: its RPC URL and the addresses and signatures of what it made. It stops when
//! its stdin closes, which dropping [`Surfnet`] does (and the kill on drop backs it up).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long the runner may take to start and seed its fixtures.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// Where the runner is; panics, saying how to build it, when it is not there.
pub fn surfnet_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("PAPERCHAIN_SURFNET").filter(|v| !v.is_empty()) {
        return PathBuf::from(path);
    }
    let path = crate::tools::tools_dir().join("bin/paperchain-surfnet");
    assert!(path.is_file(), "{} is missing; run `cargo xtask setup` (it builds testkit/surfnet)", path.display());
    path
}

/// A running validator with its fixtures; stopped when dropped.
pub struct Surfnet {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// What the runner printed: `rpc`, then addresses (`owner`, `usdc_mint`, `t22_mint`, …)
    /// and signatures (`tx_sol`, `tx_token`, …).
    pub fixtures: Value,
    client: reqwest::Client,
    _child: Child,
}

impl Surfnet {
    /// Starts the runner and waits for its fixtures.
    pub async fn start() -> Surfnet {
        let binary = surfnet_binary();
        let mut child = Command::new(&binary)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", binary.display()));
        let stdout = child.stdout.take().expect("the runner's stdout is piped");
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(START_TIMEOUT, lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("{} printed nothing within {} s", binary.display(), START_TIMEOUT.as_secs()))
            .expect("reading the runner's stdout")
            .unwrap_or_else(|| panic!("{} exited before printing its fixtures", binary.display()));
        let fixtures: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("the runner printed {line:?}, not JSON: {e}"));
        let url = fixtures["rpc"].as_str().expect("the fixtures name the RPC URL").to_string();
        let client = reqwest::Client::builder().no_proxy().build().expect("a reqwest client");
        Surfnet { url, fixtures, client, _child: child }
    }

    /// A fixture's address or signature.
    pub fn fixture(&self, key: &str) -> &str {
        self.fixtures[key].as_str().unwrap_or_else(|| panic!("no fixture `{key}` in {}", self.fixtures))
    }

    /// A JSON-RPC call: its result, or its error object (or a transport error as a string).
    pub async fn try_rpc(&self, method: &str, params: Value) -> Result<Value, Value> {
        crate::json_rpc::call(&self.client, &self.url, method, params).await
    }

    /// A JSON-RPC call's result; panics on an error.
    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        self.try_rpc(method, params.clone()).await.unwrap_or_else(|e| panic!("{method} {params}: {e}"))
    }

    /// The genesis hash it serves.
    pub async fn genesis_hash(&self) -> String {
        self.rpc("getGenesisHash", json!([])).await.as_str().expect("a genesis hash").to_string()
    }
}
