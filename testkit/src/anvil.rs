//! A local anvil chain: [`AnvilProcess`] starts one on a free loopback port and kills it
//! when dropped (std only, for `cargo xtask bench` too). With the `suite` feature, [`Anvil`]
//! adds the JSON-RPC helpers tests need (set code, balances and storage, mine, deploy a
//! fixture [`Artifact`], send a transaction from an unlocked dev account, send a blob).
//!
//! anvil is found by [`crate::tools::anvil_binary`]; cast, which signs what anvil's unlocked
//! accounts cannot send (blob transactions), by [`crate::tools::cast_binary`].

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long anvil may take to say where it listens.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A running anvil process, killed when dropped.
pub struct AnvilProcess {
    child: Child,
    /// The loopback port it listens on.
    pub port: u16,
}

impl AnvilProcess {
    /// Starts `binary` on a free loopback port serving `chain_id`, `args` passed after the
    /// others as they are; waits until it says where it listens. Its stderr is the caller's.
    pub fn spawn(binary: &Path, chain_id: u64, args: &[String]) -> std::io::Result<AnvilProcess> {
        let mut child = Command::new(binary)
            .args(["--host", "127.0.0.1", "--port", "0", "--chain-id", &chain_id.to_string()])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| std::io::Error::new(e.kind(), format!("starting {}: {e}", binary.display())))?;
        let stdout = child.stdout.take().expect("anvil's stdout is piped");
        // anvil prints `Listening on 127.0.0.1:<port>` once ready; the reader keeps draining
        // stdout afterwards, or anvil would block on a full pipe while logging requests.
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(address) = line.trim().strip_prefix("Listening on ")
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(address.to_string());
                }
            }
        });
        // Killed on every way out from here.
        let mut process = AnvilProcess { child, port: 0 };
        let address = rx.recv_timeout(START_TIMEOUT).map_err(|_| {
            std::io::Error::other(format!(
                "{} did not say where it listens within {} s",
                binary.display(),
                START_TIMEOUT.as_secs()
            ))
        })?;
        process.port = address
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("no port after `Listening on` in {address:?}")))?;
        Ok(process)
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for AnvilProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(feature = "suite")]
pub use client::*;

#[cfg(feature = "suite")]
mod client {
    use std::process::Stdio;
    use std::time::Duration;

    use serde_json::{Value, json};

    use super::AnvilProcess;
    use crate::tools::{anvil_binary, cast_binary};

    /// A running anvil with a JSON-RPC client, killed when dropped.
    pub struct Anvil {
        _process: AnvilProcess,
        /// `http://127.0.0.1:<port>`.
        pub url: String,
        /// The port it listens on.
        pub port: u16,
        /// The chain id it serves.
        pub chain_id: u64,
        client: reqwest::Client,
    }

    /// Options beyond the chain id.
    #[derive(Clone, Debug, Default)]
    pub struct AnvilOptions {
        /// `--hardfork` (e.g. `berlin` for blocks without a base fee); anvil's latest when None.
        pub hardfork: Option<String>,
        /// More arguments, passed as they are.
        pub args: Vec<String>,
    }

    /// The private key of anvil's first dev account (its default mnemonic), for signing with cast.
    pub const DEV_KEY: &str = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

    impl Anvil {
        /// anvil serving `chain_id`, with its defaults otherwise.
        pub async fn start(chain_id: u64) -> Anvil {
            Anvil::start_with(chain_id, AnvilOptions::default()).await
        }

        /// anvil serving `chain_id` with `options`; waits until it answers JSON-RPC.
        pub async fn start_with(chain_id: u64, options: AnvilOptions) -> Anvil {
            let mut args = Vec::new();
            if let Some(hardfork) = &options.hardfork {
                args.extend(["--hardfork".to_string(), hardfork.clone()]);
            }
            args.extend(options.args);
            let binary = anvil_binary();
            let process = AnvilProcess::spawn(&binary, chain_id, &args).unwrap_or_else(|e| panic!("{e}"));
            let port = process.port;
            let client = reqwest::Client::builder().no_proxy().build().expect("a reqwest client");
            let anvil = Anvil { _process: process, url: format!("http://127.0.0.1:{port}"), port, chain_id, client };
            let mut tries = 0;
            while anvil.try_rpc("eth_chainId", json!([])).await.is_err() {
                tries += 1;
                assert!(tries < 100, "anvil at {} does not answer", anvil.url);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            anvil
        }

        /// A JSON-RPC call: its result, or its error object (or a transport error as a string).
        pub async fn try_rpc(&self, method: &str, params: Value) -> Result<Value, Value> {
            crate::json_rpc::call(&self.client, &self.url, method, params).await
        }

        /// A JSON-RPC call's result; panics on an error.
        pub async fn rpc(&self, method: &str, params: Value) -> Value {
            self.try_rpc(method, params.clone()).await.unwrap_or_else(|e| panic!("{method} {params}: {e}"))
        }

        /// The unlocked dev accounts.
        pub async fn accounts(&self) -> Vec<String> {
            let accounts = self.rpc("eth_accounts", json!([])).await;
            serde_json::from_value(accounts).expect("eth_accounts is a list of strings")
        }

        /// The fixture MockAggregator (a Chainlink feed) at `feed`, answering `answer` with
        /// `decimals` in round `round`, updated at `updated_at` (Unix seconds).
        pub async fn place_feed(&self, feed: &str, round: u128, answer: i128, updated_at: u64, decimals: u8) {
            self.set_code(feed, &Artifact::load("MockAggregator").deployed_bytecode).await;
            let signature = format!("0x{}", hex::encode("set(uint80,int256,uint256,uint8)"));
            let hash = self.rpc("web3_sha3", json!([signature])).await;
            let selector = &hash.as_str().expect("a hash")[2..10];
            // int256 in two's complement: a negative answer is padded with f's.
            let pad = if answer < 0 { "f" } else { "0" };
            let answer = format!("{}{:032x}", pad.repeat(32), answer as u128);
            let word = |n: u128| format!("{n:064x}");
            let data =
                format!("0x{selector}{}{answer}{}{}", word(round), word(updated_at.into()), word(decimals.into()));
            self.send(Some(feed), &data).await;
        }

        /// Puts `code` (0x hex runtime bytecode) at `address`.
        pub async fn set_code(&self, address: &str, code: &str) {
            self.rpc("anvil_setCode", json!([address, code])).await;
        }

        /// Sets the native balance of `address` to `wei`.
        pub async fn set_balance(&self, address: &str, wei: u128) {
            self.rpc("anvil_setBalance", json!([address, format!("{wei:#x}")])).await;
        }

        /// Sets one storage slot (`slot` and `value` as 0x hex words).
        pub async fn set_storage(&self, address: &str, slot: &str, value: &str) {
            self.rpc("anvil_setStorageAt", json!([address, slot, value])).await;
        }

        /// Mines `blocks` blocks.
        pub async fn mine(&self, blocks: u64) {
            for _ in 0..blocks {
                self.rpc("evm_mine", json!([])).await;
            }
        }

        /// Sends a transaction from the first dev account and waits for its receipt
        /// (anvil mines it at once); panics when it fails.
        pub async fn send(&self, to: Option<&str>, data: &str) -> Value {
            self.transact(to, data, None).await
        }

        /// [`Anvil::send`] with `wei` of value.
        pub async fn send_value(&self, to: Option<&str>, data: &str, wei: u128) -> Value {
            self.transact(to, data, Some(wei)).await
        }

        async fn transact(&self, to: Option<&str>, data: &str, wei: Option<u128>) -> Value {
            let from = self.accounts().await.into_iter().next().expect("anvil has dev accounts");
            let mut tx = json!({"from": from, "data": data, "gas": "0x1c9c380"});
            if let Some(to) = to {
                tx["to"] = json!(to);
            }
            if let Some(wei) = wei {
                tx["value"] = json!(format!("{wei:#x}"));
            }
            let hash = self.rpc("eth_sendTransaction", json!([tx])).await;
            let mut receipt = Value::Null;
            for _ in 0..100 {
                receipt = self.rpc("eth_getTransactionReceipt", json!([hash])).await;
                if !receipt.is_null() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert_eq!(receipt["status"], json!("0x1"), "transaction {hash} failed: {receipt}");
            receipt
        }

        /// Sends `data` as one blob in a type-3 (EIP-4844) transaction to `to` from the first dev
        /// account, and answers its hash once mined; panics when cast is missing or the
        /// transaction fails. cast signs the transaction with its sidecar and sends it with
        /// `eth_sendRawTransaction`: anvil refuses a sidecar through `eth_sendTransaction`.
        pub async fn send_blob(&self, to: &str, data: &[u8]) -> String {
            let cast = cast_binary();
            let dir = tempfile::tempdir().expect("a temporary directory");
            let path = dir.path().join("blob.bin");
            std::fs::write(&path, data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let output = tokio::process::Command::new(&cast)
                .args(["send", "--json", "--blob", "--path"])
                .arg(&path)
                .args(["--private-key", DEV_KEY, "--rpc-url", &self.url, to])
                // A proxy from the environment must not stand between cast and the loopback anvil.
                .env("NO_PROXY", "127.0.0.1")
                .stdin(Stdio::null())
                .output()
                .await
                .unwrap_or_else(|e| panic!("running {}: {e}", cast.display()));
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(
                output.status.success(),
                "{} send --blob failed ({}): {}{stdout}",
                cast.display(),
                output.status,
                String::from_utf8_lossy(&output.stderr)
            );
            // cast waits for the receipt and prints it.
            let printed: Value = serde_json::from_str(stdout.trim())
                .unwrap_or_else(|e| panic!("cast printed no receipt ({e}): {stdout}"));
            assert_eq!(printed["status"], json!("0x1"), "blob transaction failed: {printed}");
            printed["transactionHash"].as_str().unwrap_or_else(|| panic!("no transactionHash: {printed}")).to_string()
        }

        /// Deploys `init_code` (bytecode then ABI-encoded constructor arguments, 0x hex) and
        /// answers the new contract's address (lower-case).
        pub async fn deploy(&self, init_code: &str) -> String {
            let receipt = self.send(None, init_code).await;
            receipt["contractAddress"].as_str().expect("a deployment receipt has contractAddress").to_ascii_lowercase()
        }
    }

    /// A compiled fixture contract under `engine/tests/fixtures/contracts/` (built by build.js there).
    pub struct Artifact {
        /// Creation bytecode, 0x hex.
        pub bytecode: String,
        /// Runtime bytecode, 0x hex (for `anvil_setCode`).
        pub deployed_bytecode: String,
        /// The ABI.
        pub abi: Value,
    }

    impl Artifact {
        /// The artifact of contract `name` (`FixtureToken`).
        pub fn load(name: &str) -> Artifact {
            let path = crate::workspace_root().join("engine/tests/fixtures/contracts").join(format!("{name}.json"));
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let json: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let field =
                |key: &str| json[key].as_str().unwrap_or_else(|| panic!("{}: no {key}", path.display())).to_string();
            Artifact {
                bytecode: field("bytecode"),
                deployed_bytecode: field("deployedBytecode"),
                abi: json["abi"].clone(),
            }
        }

        /// Creation code followed by `constructor_args` (ABI-encoded, without 0x).
        pub fn init_code(&self, constructor_args: &[u8]) -> String {
            format!("{}{}", self.bytecode, hex::encode(constructor_args))
        }
    }
}
