//! The gateway with its MCP endpoints on a random loopback port, rmcp clients, corpus
//! files and checks of what tools answer, for the MCP tests.

#![allow(dead_code)]

pub mod hosted;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use paperchain_engine::Context;
use paperchain_engine::evm::Chains;
use paperchain_gateway::hosted::paywall::Paywall;
use paperchain_gateway::hosted::sandbox::SandboxChain;
use paperchain_gateway::{HttpServer, ServerConfig};
use rmcp::ServiceExt as _;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ResourceContents};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};

/// An rmcp client connection.
pub type Client = RunningService<RoleClient, ()>;

pub struct Server {
    pub base: String,
    pub dir: tempfile::TempDir,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The gateway (HTTP API and `/mcp/*`) on a random loopback port, hosted when `paywall` is given.
pub async fn serve(ctx: Context, paywall: Option<Arc<Paywall>>) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut config = ServerConfig::local(dir.path().to_path_buf());
    config.listen = addr;
    config.public_url = Some(format!("http://{addr}"));
    config.request_timeout = Duration::from_secs(60);
    let mut server = HttpServer::new(config, ctx).mount(paperchain_mcp::http::mount);
    if let Some(paywall) = paywall {
        server = server.paywall(paywall);
    }
    let app = server.router(addr).unwrap();
    let task = tokio::spawn(async move {
        axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await.unwrap();
    });
    Server { base: format!("http://{addr}"), dir, task }
}

/// An rmcp client of the streamable HTTP endpoint at `url`.
pub async fn http_client(url: &str) -> Client {
    ().serve(StreamableHttpClientTransport::from_uri(url.to_string()))
        .await
        .unwrap_or_else(|e| panic!("connecting to {url}: {e}"))
}

/// A context whose `base` chain is the anvil at `rpc` (and no other chain configured).
pub fn ctx_on(rpc: &str) -> Context {
    let rpc = rpc.to_string();
    let chains = Chains::try_from_vars(|key| (key == "PAPERCHAIN_RPC_BASE").then(|| rpc.clone())).unwrap();
    Context { chains: Arc::new(chains), ..Context::new() }
}

/// A local anvil (chain id 8453, Base's) for the chain tools.
pub async fn anvil() -> SandboxChain {
    SandboxChain::start(Default::default())
        .await
        .unwrap_or_else(|e| panic!("starting anvil ({e}); run `cargo xtask setup`"))
}

/// Calls tool `name` with `arguments` (and `_meta` when given).
pub async fn call(client: &Client, name: &str, arguments: Value, meta: Option<Value>) -> CallToolResult {
    let mut params = CallToolRequestParams::new(name.to_string())
        .with_arguments(arguments.as_object().cloned().expect("arguments are an object"));
    if let Some(Value::Object(meta)) = meta {
        params.meta = Some(rmcp::model::RequestMetaObject(rmcp::model::MetaObject(meta)));
    }
    client.call_tool(params).await.unwrap_or_else(|e| panic!("calling {name}: {e}"))
}

/// The structured content of a successful result, checked against its text twin.
pub fn structured(result: &CallToolResult) -> Value {
    assert_ne!(result.is_error, Some(true), "the call failed: {:?}", result.content);
    let value = result.structured_content.clone().expect("structured content");
    let text = result.content[0].as_text().expect("the first block is text");
    assert_eq!(serde_json::from_str::<Value>(&text.text).unwrap(), value, "text and structured content agree");
    value
}

/// The `{"error": …}` of a tool error.
pub fn tool_error(result: &CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(true), "expected a tool error: {result:?}");
    let text = result.content[0].as_text().expect("the error is text");
    serde_json::from_str::<Value>(&text.text).unwrap()["error"].clone()
}

/// The embedded files of a result: (media type, file name from `_meta`, bytes).
pub fn embedded(result: &CallToolResult) -> Vec<(String, String, Vec<u8>)> {
    result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::BlobResourceContents { mime_type, blob, meta, .. } => Some((
                    mime_type.clone().unwrap_or_default(),
                    meta.as_ref().and_then(|m| m.0.get("filename")).and_then(Value::as_str).unwrap_or("").to_string(),
                    base64::engine::general_purpose::STANDARD.decode(blob).expect("base64 blob"),
                )),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

pub fn corpus() -> PathBuf {
    let dir = std::env::var_os("PAPERCHAIN_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"));
    assert!(dir.join("pdf").is_dir(), "the test corpus is missing at {}; set PAPERCHAIN_CORPUS", dir.display());
    dir
}

/// A file input of corpus file `relative` (under `pdf/`).
pub fn file_input(relative: &str) -> Value {
    let bytes = std::fs::read(corpus().join("pdf").join(relative)).unwrap();
    json!({
        "data": base64::engine::general_purpose::STANDARD.encode(bytes),
        "filename": Path::new(relative).file_name().unwrap().to_string_lossy(),
    })
}

/// The page count of a PDF that passes `qpdf --check`.
pub fn qpdf_pages(bytes: &[u8]) -> u32 {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.pdf");
    std::fs::write(&path, bytes).unwrap();
    let check = std::process::Command::new("qpdf")
        .arg("--check")
        .arg(&path)
        .output()
        .expect("qpdf is installed (run `cargo xtask setup`)");
    assert!(check.status.success(), "qpdf --check failed: {}", String::from_utf8_lossy(&check.stdout));
    let out = std::process::Command::new("qpdf").arg("--show-npages").arg(&path).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}
