//! `paperchain mcp --stdio` driven as a desktop agent drives it (the binary as a child
//! process, rmcp's client), and the official MCP Inspector CLI (npm
//! `@modelcontextprotocol/inspector`, installed by `cargo xtask setup`) listing and calling
//! tools over stdio and over the streamable HTTP endpoint of `paperchain serve`.

use crate::common;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use paperchain_engine::Family;
use paperchain_testkit::anvil::Anvil;
use paperchain_testkit::corpus::corpus_file;
use paperchain_testkit::pdf::qpdf_pages;
use paperchain_testkit::tools::{npm_bin, tools_dir};
use rmcp::ServiceExt as _;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ResourceContents};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

type Client = RunningService<RoleClient, ()>;

fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_paperchain")
}

/// A local anvil at chain id 8453 (Base's) for the chain tools.
async fn anvil() -> Anvil {
    Anvil::start(8453).await
}

/// The binary as an MCP server over stdio, `base` read from `rpc` when given, the engine
/// in process (whatever local server this user runs).
async fn stdio_client(args: &[&str], rpc: Option<&str>) -> Client {
    stdio_client_with(&[&["--standalone"], args].concat(), rpc, &[]).await
}

/// `paperchain mcp --stdio args`, with `env` set.
async fn stdio_client_with(args: &[&str], rpc: Option<&str>, env: &[(&str, &std::path::Path)]) -> Client {
    let mut command = tokio::process::Command::new(binary());
    command.args(["mcp", "--stdio"]).args(args).env_remove("PAPERCHAIN_CHAINS");
    if let Some(rpc) = rpc {
        command.env("PAPERCHAIN_RPC_BASE", rpc);
    }
    command.envs(env.iter().copied());
    let transport = TokioChildProcess::new(command).expect("spawning paperchain mcp --stdio");
    ().serve(transport).await.unwrap_or_else(|e| panic!("the MCP handshake over stdio: {e}"))
}

async fn call(client: &Client, name: &str, arguments: Value) -> CallToolResult {
    let params = CallToolRequestParams::new(name.to_string()).with_arguments(arguments.as_object().cloned().unwrap());
    client.call_tool(params).await.unwrap_or_else(|e| panic!("calling {name}: {e}"))
}

fn operations(families: &[Family]) -> Vec<String> {
    paperchain_engine::catalog::standard()
        .routes()
        .filter(|r| families.contains(&r.info().family))
        .map(|r| r.info().operation.to_string())
        .collect()
}

#[tokio::test]
async fn stdio_lists_every_tool_and_runs_them_in_process() {
    let chain = anvil().await;
    let client = stdio_client(&["--tools", "full"], Some(&chain.url)).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, operations(&[Family::Chain, Family::Docs]));
    assert!(tools.iter().all(|t| t.output_schema.is_some() && t.input_schema.get("properties").is_some()));

    // A document tool: the result is an embedded PDF.
    let data = base64::engine::general_purpose::STANDARD.encode(corpus_file("sample-files/pdflatex-4-pages.pdf"));
    let result =
        call(&client, "rotate_pdf_pages", json!({ "file": { "data": data, "filename": "a.pdf" }, "degrees": 180 }))
            .await;
    assert_ne!(result.is_error, Some(true), "{:?}", result.content);
    let pdf = result
        .content
        .iter()
        .find_map(|block| match block {
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::BlobResourceContents { blob, mime_type, .. } => {
                    assert_eq!(mime_type.as_deref(), Some("application/pdf"));
                    Some(base64::engine::general_purpose::STANDARD.decode(blob).unwrap())
                }
                _ => None,
            },
            _ => None,
        })
        .expect("an embedded PDF");
    assert_eq!(qpdf_pages(&pdf), 4);
    assert_eq!(result.structured_content.as_ref().unwrap()["files"][0]["filename"], "a-rotated.pdf");

    // A chain tool reads anvil.
    let result = call(&client, "get_gas_price", json!({ "chain": "base" })).await;
    assert_ne!(result.is_error, Some(true), "{:?}", result.content);
    assert_eq!(result.structured_content.as_ref().unwrap()["chain"], "base");

    // Invalid input: a tool error naming the field.
    for (name, arguments, field) in [
        ("rotate_pdf_pages", json!({ "file": { "data": data }, "degrees": 45 }), "/degrees"),
        ("get_gas_price", json!({ "chain": "nowhere" }), "/chain"),
        // Links need the HTTP server: refused before anything runs.
        ("rotate_pdf_pages", json!({ "file": { "data": data }, "degrees": 90, "output": "url" }), "/output"),
    ] {
        let result = call(&client, name, arguments).await;
        assert_eq!(result.is_error, Some(true), "{name}");
        let error: Value = serde_json::from_str(&result.content[0].as_text().unwrap().text).unwrap();
        assert_eq!(error["error"]["field"], field, "{error}");
    }
    client.cancel().await.unwrap();
}

/// What a desktop agent that runs `paperchain mcp --stdio` gets: the compact surface, whose
/// run tools reach the same operations.
#[tokio::test]
async fn stdio_gives_agents_the_compact_surface_by_default() {
    let client = stdio_client(&[], None).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    // The engine runs with the paying client here: the read-only money tools come too.
    assert_eq!(names, ["chain_read", "document_operation", "describe_operation", "wallet_budget", "quote_operation"]);
    assert!(serde_json::to_vec(&tools).unwrap().len() <= 32 * 1024);
    let data = base64::engine::general_purpose::STANDARD.encode(corpus_file("sample-files/pdflatex-4-pages.pdf"));
    let input = json!({ "file": { "data": data, "filename": "a.pdf" }, "degrees": 180 });
    let result = call(&client, "document_operation", json!({ "operation": "rotate_pdf_pages", "input": input })).await;
    assert_ne!(result.is_error, Some(true), "{:?}", result.content);
    assert_eq!(result.structured_content.as_ref().unwrap()["files"][0]["filename"], "a-rotated.pdf");
    client.cancel().await.unwrap();

    // The compact surface serves every family: asking it of one is refused, saying so.
    let refused = Command::new(binary())
        .args(["mcp", "--stdio", "--standalone", "--family", "docs", "--tools", "compact"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--tools compact serves every family"));
}

#[tokio::test]
async fn stdio_serves_one_family_when_asked() {
    let client = stdio_client(&["--family", "docs"], None).await;
    let names: Vec<String> = client.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, operations(&[Family::Docs]));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn stdio_uses_the_local_server_of_its_data_folder_when_one_runs() {
    let chain = anvil().await;
    let data = tempfile::tempdir().unwrap();
    let runtime = tempfile::tempdir().unwrap();
    let folders = [("PAPERCHAIN_DATA_DIR", data.path()), ("PAPERCHAIN_RUNTIME_DIR", runtime.path())];
    let mut server = serve_with(&chain.url, data.path(), &[("PAPERCHAIN_RUNTIME_DIR", runtime.path())]);
    let started = Instant::now();
    let instance = loop {
        if let Some(found) = paperchain_server::instance::find(runtime.path(), data.path()) {
            break found;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "the server wrote no address file");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(instance.base_url, server.base);
    assert_eq!(instance.pid, server.child.id());

    // This process's own engine would read a closed port: an answer from anvil can only
    // come through the server.
    let closed = "http://127.0.0.1:1";
    let client = stdio_client_with(&["--tools", "full"], Some(closed), &folders).await;
    let names: Vec<String> = client.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, operations(&[Family::Chain, Family::Docs]));
    let result = call(&client, "get_gas_price", json!({ "chain": "base" })).await;
    assert_ne!(result.is_error, Some(true), "{:?}", result.content);
    assert_eq!(result.structured_content.as_ref().unwrap()["chain"], "base");
    // Links work, as they do for the server's own MCP endpoint.
    let data64 = base64::engine::general_purpose::STANDARD.encode(corpus_file("sample-files/pdflatex-4-pages.pdf"));
    let result =
        call(&client, "rotate_pdf_pages", json!({ "file": { "data": data64 }, "degrees": 90, "output": "url" })).await;
    assert_ne!(result.is_error, Some(true), "{:?}", result.content);
    let url = result.structured_content.as_ref().unwrap()["files"][0]["uri"].as_str().unwrap().to_string();
    assert!(url.starts_with(&server.base), "{url}");

    // The server's ledger has the calls, under the agent's own name.
    let ledger = Command::new(binary()).args(["ledger", "--json"]).envs(folders).output().unwrap();
    assert!(ledger.status.success(), "{}", String::from_utf8_lossy(&ledger.stderr));
    let rows: Value = serde_json::from_slice(&ledger.stdout).unwrap();
    let routes: Vec<&str> = rows.as_array().unwrap().iter().filter_map(|r| r["route"].as_str()).collect();
    assert_eq!(routes, ["get_gas_price", "rotate_pdf_pages"], "{rows}");
    let client_name = rmcp::ClientHandler::get_info(&()).client_info.name;
    assert!(
        rows.as_array().unwrap().iter().all(|r| r["front_door"] == "mcp" && r["client"] == client_name.as_str()),
        "{rows}"
    );

    // --standalone keeps the engine here: the closed port answers.
    let standalone = stdio_client_with(&["--standalone", "--tools", "full"], Some(closed), &folders).await;
    let result = call(&standalone, "get_gas_price", json!({ "chain": "base" })).await;
    assert_eq!(result.is_error, Some(true), "{:?}", result.content);
    standalone.cancel().await.unwrap();

    // The server gone, a call says so instead of hanging.
    let _ = server.child.kill();
    let _ = server.child.wait();
    let error = client
        .call_tool(
            CallToolRequestParams::new("get_gas_price")
                .with_arguments(json!({"chain": "base"}).as_object().cloned().unwrap()),
        )
        .await
        .expect_err("no server to answer");
    assert!(error.to_string().contains("did not answer"), "{error}");
    client.cancel().await.unwrap();
}

// ---- The MCP Inspector CLI ----

/// The Inspector's launcher, as `cargo xtask setup` installs it.
fn inspector() -> PathBuf {
    let launcher = npm_bin(&tools_dir(), "mcp-inspector");
    assert!(launcher.exists(), "the MCP Inspector is missing at {}; run `cargo xtask setup`", launcher.display());
    launcher
}

/// Runs the Inspector CLI with `args`; its stdout as JSON.
fn run_inspector(args: &[&str]) -> Value {
    let output = Command::new(inspector())
        .arg("--cli")
        .args(args)
        .env_remove("PAPERCHAIN_CHAINS")
        .output()
        .expect("running the MCP Inspector (node is installed by `cargo xtask setup`)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let answer: Option<Value> = serde_json::from_str(&stdout).ok();
    // The Inspector (2.x) exits with an error when a tool answers `isError`; the answer is
    // still printed, and is what the caller checks.
    let tool_error = answer.as_ref().is_some_and(|a| a["isError"] == true);
    assert!(
        output.status.success() || tool_error,
        "the Inspector failed on {args:?}: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    answer.unwrap_or_else(|| panic!("the Inspector's answer is not JSON: {stdout}"))
}

/// `paperchain serve` on a free loopback port, killed on drop.
struct Served {
    child: std::process::Child,
    base: String,
    _dir: Option<tempfile::TempDir>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(rpc: &str) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let mut served = serve_with(rpc, dir.path(), &[]);
    served._dir = Some(dir);
    served
}

/// `paperchain serve` on a free port for `data`, `env` set.
fn serve_with(rpc: &str, data: &std::path::Path, env: &[(&str, &std::path::Path)]) -> Served {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Command::new(binary())
        .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--data-dir"])
        .arg(data)
        .env("PAPERCHAIN_RPC_BASE", rpc)
        .envs(env.iter().copied())
        .env_remove("PAPERCHAIN_CHAINS")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning paperchain serve");
    let base = format!("http://127.0.0.1:{port}");
    common::wait_until_listening(&mut child, port);
    Served { child, base, _dir: None }
}

fn names(list: &Value) -> Vec<String> {
    list["tools"].as_array().expect("tools").iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn the_mcp_inspector_lists_and_calls_tools_over_stdio_and_http() {
    let chain = anvil().await;
    let rpc = chain.url.clone();
    let env = format!("PAPERCHAIN_RPC_BASE={rpc}");

    // stdio: the Inspector starts the binary itself.
    let list = run_inspector(&["-e", &env, binary(), "mcp", "--stdio", "--tools", "full", "--method", "tools/list"]);
    assert_eq!(names(&list), operations(&[Family::Chain, Family::Docs]));
    let gas = run_inspector(&[
        "-e",
        &env,
        binary(),
        "mcp",
        "--stdio",
        "--tools",
        "full",
        "--method",
        "tools/call",
        "--tool-name",
        "get_gas_price",
        "--tool-arg",
        "chain=base",
    ]);
    assert_ne!(gas["isError"], true, "{gas}");
    assert_eq!(gas["structuredContent"]["chain"], "base", "{gas}");

    // Streamable HTTP: the endpoints of `paperchain serve`.
    let served = serve(&rpc);
    let chain_url = format!("{}/mcp/chain", served.base);
    let docs_url = format!("{}/mcp/docs", served.base);

    // Every surface passes the Inspector's tool-schema portability check: no problem
    // reported at all (`--strict` lists each one on stderr, and exits 6 on an error).
    let strict = |endpoint: &str| {
        let url = format!("{}{endpoint}", served.base);
        let strict = Command::new(inspector())
            .args(["--cli", &url, "--transport", "http", "--method", "tools/list", "--strict"])
            .output()
            .expect("running the MCP Inspector");
        let (stdout, stderr) = (String::from_utf8_lossy(&strict.stdout), String::from_utf8_lossy(&strict.stderr));
        assert!(strict.status.success(), "--strict failed on {endpoint}: {stderr}");
        assert!(!stderr.contains("Warning") && !stderr.contains("Error"), "--strict reports on {endpoint}: {stderr}");
        serde_json::from_str::<Value>(&stdout).expect("the Inspector's answer is JSON")
    };
    let listed = strict("/mcp");
    assert_eq!(names(&listed)[..3], ["chain_read", "document_operation", "describe_operation"]);
    assert_eq!(names(&strict("/mcp/full")).len(), operations(&[Family::Chain, Family::Docs]).len());
    let list = run_inspector(&[&docs_url, "--transport", "http", "--method", "tools/list"]);
    assert_eq!(names(&list), operations(&[Family::Docs]));
    let list = run_inspector(&[&chain_url, "--transport", "http", "--method", "tools/list"]);
    assert_eq!(names(&list), operations(&[Family::Chain]));
    let block = run_inspector(&[
        &chain_url,
        "--transport",
        "http",
        "--method",
        "tools/call",
        "--tool-name",
        "get_latest_block",
        "--tool-arg",
        "chain=base",
    ]);
    assert_ne!(block["isError"], true, "{block}");
    assert!(block["structuredContent"].is_object(), "{block}");
    let bad = run_inspector(&[
        &chain_url,
        "--transport",
        "http",
        "--method",
        "tools/call",
        "--tool-name",
        "get_gas_price",
        "--tool-arg",
        "chain=nowhere",
    ]);
    assert_eq!(bad["isError"], true, "{bad}");
    assert!(bad["content"][0]["text"].as_str().unwrap().contains("\"field\":\"/chain\""), "{bad}");
}
