//! Interop: the official x402 TypeScript client (`@x402/fetch` with `@x402/evm` and viem, from
//! npm, as `cargo xtask setup` installs them) pays the hosted sandbox for a chain route and a
//! document route. Node runs tests/interop/x402-fetch-pay.mjs, which may fetch loopback
//! addresses only; the test checks the PAYMENT-RESPONSE the client decoded, the transaction
//! on the sandbox chain, and that the token balances moved by exactly the quote of the 402.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use alloy::primitives::{B256, U256};
use alloy::providers::{Provider as _, ProviderBuilder};
use base64::Engine as _;
use paperchain_engine::{Catalog, Context};
use paperchain_gateway::hosted::config::{ConfigSources, HostedConfig};
use paperchain_gateway::hosted::paywall::Paywall;
use paperchain_gateway::hosted::sandbox::{SandboxChain, SandboxOptions};
use paperchain_gateway::hosted::{Hosted, HostedOptions};
use paperchain_gateway::{HttpServer, ServerConfig};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;

/// The npm packages the script loads, each checked before node runs.
const PACKAGES: [&str; 3] = ["@x402/fetch", "@x402/evm", "viem"];

/// Longest one paid call through node may take (node start-up, two requests, settlement).
const NODE_TIMEOUT: Duration = Duration::from_secs(120);

/// The sandbox in hosted mode on a random loopback port, as gateway/tests/common/hosted.rs
/// builds it (only what this test needs).
struct Sandbox {
    base: String,
    chain: SandboxChain,
    paywall: Arc<Paywall>,
    client: reqwest::Client,
    _dir: tempfile::TempDir,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Sandbox {
    async fn start() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let base = format!("http://{addr}");
        let sources = ConfigSources { file: None, data_dir: dir.path(), public_url: Some(&base), sandbox: true };
        let config = HostedConfig::load_with(&sources, |_| None).expect("sandbox configuration");
        let options = HostedOptions { run_timeout: Duration::from_secs(60), ..HostedOptions::default() };
        let hosted =
            Hosted::start_sandbox(config, &Catalog::standard(), Context::new(), options, SandboxOptions::default())
                .await
                .unwrap_or_else(|e| panic!("starting the sandbox: {e}"));
        let mut server_config = ServerConfig::local(dir.path().to_path_buf());
        server_config.listen = addr;
        server_config.public_url = Some(base.clone());
        let Hosted { paywall, sandbox, ctx } = hosted;
        let router = HttpServer::new(server_config, ctx).paywall(paywall.clone()).router(addr).unwrap();
        let task = tokio::spawn(async move {
            axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>()).await.unwrap();
        });
        Sandbox {
            base,
            chain: sandbox.expect("the sandbox chain"),
            paywall,
            client: reqwest::Client::builder().no_proxy().build().unwrap(),
            _dir: dir,
            task,
        }
    }

    /// Token balances of the payer and the payee.
    async fn balances(&self) -> (U256, U256) {
        let payer = self.chain.balance_of(self.chain.payer()).await.expect("balanceOf the payer");
        let payee = self.chain.balance_of(self.chain.pay_to()).await.expect("balanceOf the payee");
        (payer, payee)
    }

    /// The quote of an unpaid call: the 402's `accepts[0].amount`.
    async fn quote(&self, path: &str, body: &Value) -> U256 {
        let response = self.client.post(format!("{}{path}", self.base)).json(body).send().await.unwrap();
        assert_eq!(response.status(), 402, "{path}: an unpaid call is asked to pay");
        let required: Value = response.json().await.unwrap();
        assert!(required.get("error").is_none(), "{path}: a valid input is quoted without an error: {required}");
        let amount = required["accepts"][0]["amount"].as_str().unwrap_or_else(|| panic!("no amount in {required}"));
        U256::from_str_radix(amount, 10).unwrap()
    }

    /// Whether transaction `hash` is mined on the sandbox chain and succeeded (`None`: unknown).
    async fn tx_succeeded(&self, hash: &str) -> Option<bool> {
        let hash: B256 = hash.parse().unwrap_or_else(|e| panic!("`{hash}` is no transaction hash: {e}"));
        let provider = ProviderBuilder::new().connect_http(self.chain.rpc_url().clone());
        let receipt = provider.get_transaction_receipt(hash).await.expect("eth_getTransactionReceipt");
        receipt.map(|r| r.status())
    }
}

/// `$PAPERCHAIN_TOOLS`, else `$HOME/.cache/paperchain/tools`, as setup and the script read it.
fn tools_dir() -> PathBuf {
    let set = |key: &str| std::env::var_os(key).filter(|v| !v.is_empty());
    set("PAPERCHAIN_TOOLS")
        .map(PathBuf::from)
        .or_else(|| set("HOME").map(|home| PathBuf::from(home).join(".cache/paperchain/tools")))
        .expect("neither PAPERCHAIN_TOOLS nor HOME is set")
}

/// Fails, never skips, when node or the client is missing: CI must run this test.
fn check_node_client(tools: &Path) {
    let node = std::process::Command::new("node").arg("--version").output();
    let version = match node {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_string(),
        Ok(out) => panic!("`node --version` failed ({}); run `cargo xtask setup`", out.status),
        Err(e) => panic!("node is not on the PATH ({e}); run `cargo xtask setup`"),
    };
    let missing: Vec<&str> = PACKAGES
        .into_iter()
        .filter(|package| !tools.join("npm/node_modules").join(package).join("package.json").is_file())
        .collect();
    assert!(
        missing.is_empty(),
        "the x402 TypeScript client is not installed: {} missing from {} (node {version}); run `cargo xtask setup`",
        missing.join(", "),
        tools.join("npm/node_modules").display()
    );
}

/// How the script gets the request body.
#[derive(Clone, Copy)]
enum Body {
    Argument,
    /// Documents outgrow a command-line argument.
    Stdin,
}

/// Runs the TypeScript client once: POST `body` to `path` with the payer's key; its JSON line.
async fn pay_with_node(server: &Sandbox, tools: &Path, path: &str, body: &Value, via: Body) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("interop/x402-fetch-pay.mjs");
    let text = body.to_string();
    let mut command = tokio::process::Command::new("node");
    command
        .arg(&script)
        .arg(&server.base)
        .arg(path)
        .arg(match via {
            Body::Argument => text.as_str(),
            Body::Stdin => "-",
        })
        .env("PAPERCHAIN_TOOLS", tools)
        // The key by environment, not argv, where any process list would show it.
        .env("PAPERCHAIN_PAYER_KEY", server.chain.payer_private_key())
        // Nothing preloaded that could get round the script's loopback-only fetch.
        .env_remove("NODE_OPTIONS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().unwrap_or_else(|e| panic!("starting node: {e}; run `cargo xtask setup`"));
    let mut stdin = child.stdin.take().unwrap();
    if let Body::Stdin = via {
        stdin.write_all(text.as_bytes()).await.unwrap();
    }
    drop(stdin);
    let out = tokio::time::timeout(NODE_TIMEOUT, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{path}: node did not finish within {NODE_TIMEOUT:?}"))
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{path}: node failed ({}):\n{stderr}{stdout}", out.status);
    let line = stdout.lines().last().unwrap_or_else(|| panic!("{path}: node printed nothing; stderr:\n{stderr}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{path}: node's line is not JSON ({e}): {line}"))
}

fn corpus_file_input(relative: &str) -> Value {
    let corpus = std::env::var_os("PAPERCHAIN_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"));
    let path = corpus.join("pdf").join(relative);
    let bytes = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("the test corpus file {} ({e}); set PAPERCHAIN_CORPUS", path.display()));
    json!({ "data": base64::engine::general_purpose::STANDARD.encode(bytes), "filename": "in.pdf" })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_client_pays_a_chain_route_and_a_document_route() {
    let tools = tools_dir();
    check_node_client(&tools);
    let server = Sandbox::start().await;
    let payer = server.chain.payer().to_string().to_lowercase();

    let calls = [
        ("/v1/chain/gas", json!({"chain": "base"}), Body::Argument),
        (
            "/v1/pdf/rotate",
            json!({"file": corpus_file_input("sample-files/pdflatex-4-pages.pdf"), "degrees": 90, "output": "base64"}),
            Body::Stdin,
        ),
    ];
    let mut total = U256::ZERO;
    for (path, body, via) in calls {
        let price = server.quote(path, &body).await;
        assert!(price > U256::ZERO, "{path}: a paid route has a price");
        let (payer_before, payee_before) = server.balances().await;

        let answer = pay_with_node(&server, &tools, path, &body, via).await;

        assert_eq!(answer["status"], 200, "{path}: {answer}");
        let settled = &answer["paymentResponse"];
        assert_eq!(settled["success"], true, "{path}: {answer}");
        assert_eq!(settled["network"], "eip155:8453", "{path}: {settled}");
        assert_eq!(settled["payer"].as_str().map(str::to_lowercase).as_deref(), Some(payer.as_str()), "{settled}");
        let tx = settled["transaction"].as_str().unwrap_or_else(|| panic!("{path}: no transaction in {settled}"));
        assert!(tx.len() == 66 && tx.starts_with("0x"), "{path}: `{tx}` is no transaction hash");
        assert_eq!(server.tx_succeeded(tx).await, Some(true), "{path}: the settlement {tx} is mined and succeeded");
        assert!(answer["body"].is_object(), "{path}: the route's answer: {answer}");
        assert!(answer["body"].get("error").is_none(), "{path}: {answer}");

        let (payer_after, payee_after) = server.balances().await;
        assert_eq!(payer_before - payer_after, price, "{path}: the payer paid exactly the quote");
        assert_eq!(payee_after - payee_before, price, "{path}: the payee got exactly the quote");
        println!(
            "{path}: quote {price}; payer {payer_before} -> {payer_after}; payee {payee_before} -> {payee_after}; tx {tx}"
        );
        total += price;
    }
    let totals = server.paywall.store().totals().await.unwrap();
    assert_eq!(totals.paid_calls, 2, "the ledger has both paid calls");
    assert_eq!(U256::from(totals.settled_amount), total, "the ledger's settled sum is the sum of the quotes");
}
