//! The paying client stands without the server: it depends on the protocol crate and the
//! engine, not on `paperchain-gateway`, and what it signs is accepted by the hosted sandbox
//! running as its own process (`paperchain serve --hosted --sandbox`).

use std::io::BufRead as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use alloy::signers::local::PrivateKeySigner;
use paperchain_engine::Price;
use paperchain_protocol::x402;
use paperchain_wallet::x402_client::{self, Acceptable};
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
    fn drop(&mut self) {
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

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

#[tokio::test]
async fn a_payment_signed_without_the_server_crate_settles_on_the_sandbox() {
    let sandbox = start_sandbox();
    let base = sandbox.line["sandbox"]["base_url"].as_str().expect("base_url").to_string();
    let payer: PrivateKeySigner =
        sandbox.line["sandbox"]["payer_private_key"].as_str().expect("the test payer's key").parse().unwrap();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let call = || http.post(format!("{base}/v1/chain/gas")).json(&json!({ "chain": "base" }));

    let unpaid = call().send().await.unwrap();
    assert_eq!(unpaid.status(), 402);
    let header = unpaid.headers().get(x402::PAYMENT_REQUIRED).map(|v| v.to_str().unwrap().to_string());
    let required = x402_client::read_payment_required(header.as_deref(), &unpaid.bytes().await.unwrap()).unwrap();
    let acceptable = Acceptable { networks: vec!["eip155:8453".into()], max_amount: Price::micros(10_000) };
    let requirement = x402_client::choose(&required, &acceptable).unwrap();
    let signature = x402_client::pay(&payer, &required, &requirement, now()).unwrap();

    let paid = call().header(x402::PAYMENT_SIGNATURE, &signature).send().await.unwrap();
    assert_eq!(paid.status(), 200);
    let settlement = paid.headers().get(x402::PAYMENT_RESPONSE).expect("the settlement").to_str().unwrap().to_string();
    let settlement = x402_client::read_settlement(&settlement).unwrap();
    assert_eq!(settlement["network"], "eip155:8453");
    assert_eq!(settlement["payer"].as_str().map(str::to_lowercase), Some(payer.address().to_string().to_lowercase()));
    let answer: Value = paid.json().await.unwrap();
    assert!(answer.is_object(), "the gas answer: {answer}");

    // The same payment a second time is refused, not charged again.
    let replay = call().header(x402::PAYMENT_SIGNATURE, &signature).send().await.unwrap();
    assert_eq!(replay.status(), 402);
    let body: Value = replay.json().await.unwrap();
    assert!(body["error"].as_str().is_some_and(|e| e.starts_with("payment_already_used")), "{body}");
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
    for needed in ["paperchain-protocol", "paperchain-engine"] {
        assert!(names.contains(&needed), "{needed} missing from {names:?}");
    }
    for server in ["paperchain-gateway", "paperchain-server", "paperchain-mcp", "axum", "rmcp"] {
        assert!(!names.contains(&server), "the wallet builds with {server}");
    }
}
