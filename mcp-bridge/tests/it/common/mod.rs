//! The gateway with its MCP endpoints on a random loopback port, rmcp clients and checks of
//! what tools answer, for the MCP tests (corpus files, page counts, anvil and the hosted
//! sandbox come from `paperchain-testkit`).

pub mod hosted;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use paperchain_engine::Context;
use paperchain_gateway::HttpServer;
use paperchain_hosted::paywall::Paywall;
use paperchain_testkit::server::{loopback_listener, server_config, spawn_router};
use rmcp::ServiceExt as _;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ResourceContents};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::Value;

/// An rmcp client connection.
pub type Client = RunningService<RoleClient, ()>;

pub struct Server {
    pub base: String,
    /// The server's data folder, kept for as long as the server runs.
    _dir: tempfile::TempDir,
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
    let (listener, addr, base) = loopback_listener().await;
    let mut config = server_config(dir.path(), addr, &base);
    config.request_timeout = Duration::from_secs(60);
    let mut server = HttpServer::new(config, ctx).mount(paperchain_mcp::http::mount);
    if let Some(paywall) = paywall {
        server = server.paywall(paywall);
    }
    let app = server.router(addr).unwrap();
    let task = spawn_router(listener, app);
    Server { base, _dir: dir, task }
}

/// An rmcp client of the streamable HTTP endpoint at `url`.
pub async fn http_client(url: &str) -> Client {
    ().serve(StreamableHttpClientTransport::from_uri(url.to_string()))
        .await
        .unwrap_or_else(|e| panic!("connecting to {url}: {e}"))
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
