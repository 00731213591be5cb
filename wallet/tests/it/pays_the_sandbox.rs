//! The paying client stands without the server: it depends on the protocol crate and the
//! engine, not on `paperchain-gateway`, and what it signs is accepted by the hosted sandbox
//! running as its own process (`paperchain serve --hosted --sandbox`).

use std::io::BufRead as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use std::sync::Arc;

use alloy::signers::local::PrivateKeySigner;
use paperchain_engine_core::evm::{ChainConfig, ChainTimeouts, Chains};
use paperchain_protocol::x402;
use paperchain_wallet::client::{KeyLoader, NobodyToAsk, PayingClient, Request};
use paperchain_wallet::config::ClientConfig;
use paperchain_wallet::ledger::{Caller, Ledger};
use paperchain_wallet::reconcile::reconcile;
use paperchain_wallet::x402_client;
use serde_json::{Value, json};

/// The `paperchain` binary of this build (the workspace's tests build every binary).
fn paperchain_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let dir = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>/deps");
    let binary = dir.join(format!("paperchain{}", std::env::consts::EXE_SUFFIX));
    assert!(binary.is_file(), "{} is not built: run the workspace's tests (cargo xtask test)", binary.display());
    binary
}

struct Sandbox {
    child: Child,
    line: Value,
    _data: tempfile::TempDir,
}

impl Drop for Sandbox {
    /// SIGTERM first: the server stops its anvil on the way out (a SIGKILL would leave the
    /// chain running); SIGKILL only if it has not exited within 20 s.
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_sandbox() -> Sandbox {
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(paperchain_binary())
        .args(["serve", "--hosted", "--sandbox", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting paperchain");
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut first).unwrap();
    let line: Value = serde_json::from_str(&first).unwrap_or_else(|e| panic!("{e}: the first line is {first:?}"));
    Sandbox { child, line, _data: data }
}

#[tokio::test]
async fn the_paying_client_without_the_server_crate_pays_the_sandbox_process() {
    let sandbox = start_sandbox();
    let line = &sandbox.line["sandbox"];
    let base = line["base_url"].as_str().expect("base_url").to_string();
    let payer: PrivateKeySigner = line["payer_private_key"].as_str().expect("the test payer's key").parse().unwrap();
    let rpc = line["rpc_url"].as_str().expect("rpc_url").parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[service]\nurl = \"{base}\"\n[policy]\nper_call = \"0.01\"\nnetworks = {{ \"eip155:8453\" = \"1\" }}\n"
    );
    let config = ClientConfig::parse(&config, None).unwrap();
    let signer = payer.clone();
    let keys: KeyLoader = Arc::new(move || Ok(signer.clone()));
    let chains = Chains::new(vec![ChainConfig::new("base", 8453, vec![rpc])], ChainTimeouts::default());
    let ledger = Ledger::open_in(dir.path()).await.unwrap();
    let client = PayingClient::new(Arc::new(config), ledger, keys, Arc::new(NobodyToAsk), Arc::new(chains));
    let caller = Caller { front_door: "cli", client: None };
    let request = Request {
        operation: "get_gas_price",
        path: "/v1/chain/gas",
        body: json!({ "chain": "base" }).to_string().into(),
        caller: &caller,
        approver: None,
        stop: Default::default(),
    };
    let answer = client.call(&request).await.unwrap();
    assert_eq!(answer.status, 200);
    let settlement = answer.header(x402::PAYMENT_RESPONSE).expect("the settlement");
    let settlement = serde_json::to_value(x402_client::read_settlement(settlement).unwrap()).unwrap();
    assert_eq!(settlement["network"], "eip155:8453");
    assert_eq!(settlement["payer"].as_str().map(str::to_lowercase), Some(payer.address().to_string().to_lowercase()));
    let paid = answer.paid.expect("paid");
    assert_eq!(paid.tx, settlement["transaction"].as_str().unwrap());
    let body: Value = serde_json::from_slice(&answer.body).unwrap();
    assert!(body.is_object(), "the gas answer: {body}");
    // The ledger and the chain agree on it.
    let checks = reconcile(
        client.ledger(),
        &Chains::new(
            vec![ChainConfig::new("base", 8453, vec![line["rpc_url"].as_str().unwrap().parse().unwrap()])],
            ChainTimeouts::default(),
        ),
        &paperchain_engine_core::solana::Clusters::from_env(),
        0,
    )
    .await
    .unwrap();
    assert_eq!(checks.iter().map(|c| c.verdict.as_str()).collect::<Vec<_>>(), ["ok"]);
}

#[test]
fn the_paying_client_does_not_depend_on_the_server() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // Every package the wallet builds with on this machine (normal and build dependencies,
    // not its tests'), one `name vX.Y.Z` a line.
    let output = Command::new(cargo)
        .args([
            "tree",
            "-p",
            "paperchain-wallet",
            "-e",
            "normal,build",
            "--prefix",
            "none",
            "--offline",
            "--manifest-path",
        ])
        .arg(paperchain_testkit::workspace_root().join("Cargo.toml"))
        .output()
        .expect("cargo tree");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    let names: Vec<&str> = text.lines().filter_map(|line| line.split_whitespace().next()).collect();
    assert_eq!(names.first(), Some(&"paperchain-wallet"), "{text}");
    for needed in ["paperchain-protocol", "paperchain-engine-core"] {
        assert!(names.contains(&needed), "{needed} missing from {names:?}");
    }
    // No server, no route and no document library: the chain clients are the core's.
    for server in [
        "paperchain-gateway",
        "paperchain-server",
        "paperchain-mcp",
        "axum",
        "rmcp",
        "paperchain-engine",
        "paperchain-chain",
        "paperchain-docs",
        "lopdf",
        "qpdf",
        "pdfium-render",
        "html5ever",
        "calamine",
        "x402-facilitator-local",
    ] {
        assert!(!names.contains(&server), "the wallet builds with {server}");
    }
}
