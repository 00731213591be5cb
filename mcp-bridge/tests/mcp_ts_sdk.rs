//! Interop: the official MCP TypeScript SDK client (`@modelcontextprotocol/sdk` 1.x, from npm,
//! as `cargo xtask setup` installs it) against the hosted sandbox over streamable HTTP. That
//! client validates every `structuredContent` against the tool's `outputSchema` once it has
//! listed the tools, even on an `isError` result; so a paid tool's PaymentRequired (x402 MCP
//! transport) reaches it only if the hosted output schemas admit it. Node runs
//! tests/interop/mcp-sdk-call.mjs (at the workspace root, beside the x402 client script), which may fetch loopback addresses only.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::hosted::start;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;

/// The npm package the script loads.
const SDK: &str = "@modelcontextprotocol/sdk";

/// Longest one node run may take (node start-up, the handshake, a list and a call).
const NODE_TIMEOUT: Duration = Duration::from_secs(60);

/// `$PAPERCHAIN_TOOLS`, else `$HOME/.cache/paperchain/tools`, as setup and the script read it.
fn tools_dir() -> PathBuf {
    let set = |key: &str| std::env::var_os(key).filter(|v| !v.is_empty());
    set("PAPERCHAIN_TOOLS")
        .map(PathBuf::from)
        .or_else(|| set("HOME").map(|home| PathBuf::from(home).join(".cache/paperchain/tools")))
        .expect("neither PAPERCHAIN_TOOLS nor HOME is set")
}

/// Fails, never skips, when node or the SDK is missing: CI must run this test.
fn check_node_sdk(tools: &Path) {
    let version = match std::process::Command::new("node").arg("--version").output() {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_string(),
        Ok(out) => panic!("`node --version` failed ({}); run `cargo xtask setup`", out.status),
        Err(e) => panic!("node is not on the PATH ({e}); run `cargo xtask setup`"),
    };
    let manifest = tools.join("npm/node_modules").join(SDK).join("package.json");
    assert!(
        manifest.is_file(),
        "the MCP TypeScript SDK is not installed: {} is missing (node {version}); run `cargo xtask setup`",
        manifest.display()
    );
}

/// Runs the SDK client once: list the tools at `url`, call `tool` with `arguments`; its JSON line.
async fn call_with_sdk(tools: &Path, url: &str, tool: &str, arguments: &Value) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/interop/mcp-sdk-call.mjs");
    let mut child = tokio::process::Command::new("node")
        .arg(&script)
        .arg(url)
        .arg(tool)
        // On stdin: a document's base64 outgrows a command-line argument.
        .arg("-")
        .env("PAPERCHAIN_TOOLS", tools)
        // Nothing preloaded that could get round the script's loopback-only fetch.
        .env_remove("NODE_OPTIONS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("starting node: {e}; run `cargo xtask setup`"));
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(arguments.to_string().as_bytes()).await.unwrap();
    drop(stdin);
    let out = tokio::time::timeout(NODE_TIMEOUT, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{tool}: node did not finish within {NODE_TIMEOUT:?}"))
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{tool}: node failed ({}):\n{stderr}{stdout}", out.status);
    let line = stdout.lines().last().unwrap_or_else(|| panic!("{tool}: node printed nothing; stderr:\n{stderr}"));
    let line: Value =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("{tool}: node's line is not JSON ({e}): {line}"));
    let sdk = line["sdk"].as_str().unwrap_or_default();
    assert!(sdk.starts_with("1."), "the SDK is 1.x (its client validates structured content): {sdk}");
    assert!(
        line["tools"].as_array().is_some_and(|names| names.contains(&json!(tool))),
        "{tool} is listed before the call (so the SDK validates its result): {line}"
    );
    assert!(line.get("callError").is_none(), "the SDK refused the result of {tool}: {}", line["callError"]);
    line["result"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_client_receives_the_payment_required_of_a_paid_tool() {
    let tools = tools_dir();
    check_node_sdk(&tools);
    let hosted = start(&[("PAPERCHAIN_FREE_CHAIN_READS", "0")]).await;

    // The free chain-read pool is empty: the call answers the x402 PaymentRequired, and the
    // SDK hands it over instead of failing its output-schema check.
    let url = format!("{}/mcp/chain", hosted.server.base);
    let result = call_with_sdk(&tools, &url, "get_gas_price", &json!({ "chain": "base" })).await;
    assert_eq!(result["isError"], true, "{result}");
    let required = &result["structuredContent"];
    assert_eq!(required["x402Version"], 2, "{result}");
    assert_eq!(required["error"], "free_pool_exhausted", "{required}");
    assert_eq!(required["resource"]["url"], "mcp://tool/get_gas_price", "{required}");
    assert!(required["accepts"][0]["amount"].as_str().is_some_and(|a| a.parse::<u64>().is_ok()), "{required}");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().expect("content[0].text")).unwrap();
    assert_eq!(&text, required, "content[0].text is the same object");

    // The same hosted schemas still take a delivered result: a free document call (files).
    let url = format!("{}/mcp/docs", hosted.server.base);
    let arguments = json!({ "file": common::file_input("sample-files/pdflatex-4-pages.pdf"), "degrees": 90 });
    let result = call_with_sdk(&tools, &url, "rotate_pdf_pages", &arguments).await;
    assert_ne!(result["isError"], true, "{}", result["content"][0]);
    assert_eq!(result["structuredContent"]["files"][0]["media_type"], "application/pdf", "{}", result["content"][0]);
}
