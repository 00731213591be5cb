//! Interop: the official MCP TypeScript SDK client (`@modelcontextprotocol/sdk` 1.x, from npm,
//! as `cargo xtask setup` installs it) against the hosted sandbox over streamable HTTP. That
//! client validates every `structuredContent` against the tool's `outputSchema` once it has
//! listed the tools, even on an `isError` result; so a paid tool's PaymentRequired (x402 MCP
//! transport) reaches it only if the hosted output schemas admit it. Node runs
//! tests/interop/mcp-sdk-call.mjs (at the workspace root, beside the x402 client script), which may fetch loopback addresses only.

use std::path::Path;
use std::time::Duration;

use paperchain_testkit::corpus::file_input;
use paperchain_testkit::node::{NodeRun, interop_script};
use paperchain_testkit::tools::{require_node_packages, tools_dir};
use serde_json::{Value, json};

use crate::common::hosted::start;

/// The npm package the script loads.
const SDK: &str = "@modelcontextprotocol/sdk";

/// Longest one node run may take (node start-up, the handshake, a list and a call).
const NODE_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs the SDK client once: list the tools at `url`, call `tool` with `arguments`; its JSON line.
async fn call_with_sdk(tools: &Path, url: &str, tool: &str, arguments: &Value) -> Value {
    let stdin = arguments.to_string();
    let line = NodeRun {
        script: interop_script("mcp-sdk-call.mjs"),
        // On stdin: a document's base64 outgrows a command-line argument.
        args: vec![url, tool, "-"],
        stdin: Some(stdin.as_bytes()),
        env: Vec::new(),
        timeout: NODE_TIMEOUT,
        label: tool,
    }
    .last_json_line(tools)
    .await;
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
    require_node_packages(&tools, "the MCP TypeScript SDK", &[SDK]);
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
    let arguments = json!({ "file": file_input("sample-files/pdflatex-4-pages.pdf"), "degrees": 90 });
    let result = call_with_sdk(&tools, &url, "rotate_pdf_pages", &arguments).await;
    assert_ne!(result["isError"], true, "{}", result["content"][0]);
    assert_eq!(result["structuredContent"]["files"][0]["media_type"], "application/pdf", "{}", result["content"][0]);
}
