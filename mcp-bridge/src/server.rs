//! The MCP server: lists the tools of its families and hands each tool call to the call
//! path (`paperchain_calls`), which runs it here, routes it and pays (local mode) or puts it
//! through the paywall, free pool first (hosted mode); the outcome becomes a tool result.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use paperchain_calls::paywall::{Answer, FreeAsk, Payment};
use paperchain_calls::{Call, CallPath, Outcome};
use paperchain_engine::catalog::RouteEntry;
use paperchain_engine::{Context, EngineError, Family};
use paperchain_gateway::error::ApiError;
use paperchain_gateway::paid::client_ip_of;
use paperchain_gateway::routed;
use paperchain_protocol::x402::{MCP_PAYMENT, MCP_PAYMENT_RESPONSE};
use paperchain_wallet::ledger::Caller;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, Implementation, ListToolsResult, MetaObject, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};

use crate::results::{self, Links};
use crate::tools;

/// Free calls left today in the pool a free call used (hosted mode).
pub const FREE_REMAINING_META: &str = "paperchain/free-remaining";

/// How a server is set up.
#[derive(Clone)]
pub struct ServerOptions {
    /// The route families served as tools.
    pub families: Vec<Family>,
    /// Where calls go: the catalog, the engine context, the paywall (hosted mode) or the
    /// paying client (local mode).
    pub calls: CallPath,
    /// Where `output: "url"` files are stored; `None` (stdio) refuses that output.
    pub links: Option<Links>,
}

impl ServerOptions {
    /// A local server of `families`: no paywall, no wallet, no links, 120 s per call.
    pub fn local(families: Vec<Family>, ctx: Context) -> ServerOptions {
        let catalog = Arc::new(paperchain_engine::catalog::standard());
        let calls = CallPath::local(catalog, ctx, None, Duration::from_secs(120));
        ServerOptions { families, calls, links: None }
    }
}

/// One MCP server (cheap to clone: the streamable HTTP transport makes one per session).
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

struct Inner {
    options: ServerOptions,
    tools: Vec<Tool>,
    /// Per operation: whether its JSON answer is wrapped to be an object.
    wraps: HashMap<&'static str, bool>,
}

impl McpServer {
    /// A server with `options`; the tools are generated once, here.
    pub fn new(options: ServerOptions) -> McpServer {
        let (catalog, ctx) = (options.calls.catalog(), options.calls.ctx());
        let tools = match options.calls.paywall() {
            None => tools::tools(catalog, &options.families, ctx),
            Some(_) => tools::hosted_tools(catalog, &options.families, ctx),
        };
        let wraps = catalog
            .routes()
            .filter(|r| options.families.contains(&r.info().family))
            .map(|r| (r.info().operation, tools::wraps_json(r, ctx)))
            .collect();
        McpServer { inner: Arc::new(Inner { options, tools, wraps }) }
    }

    /// The tools this server lists.
    pub fn tools(&self) -> &[Tool] {
        &self.inner.tools
    }

    fn route(&self, name: &str) -> Option<&RouteEntry> {
        self.inner
            .options
            .calls
            .catalog()
            .by_operation(name)
            .filter(|r| self.inner.options.families.contains(&r.info().family))
    }

    /// Runs one tool call; `payment` is `_meta["x402/payment"]`, `client` the caller's address.
    pub async fn call(
        &self,
        name: &str,
        arguments: Value,
        payment: Option<Value>,
        client: Option<IpAddr>,
        client_name: Option<String>,
    ) -> CallToolResult {
        let Some(route) = self.route(name) else {
            return results::failure(ApiError::not_found(format!("no tool {name}")));
        };
        let operation = route.info().operation;
        let wrap = self.inner.wraps.get(operation).copied().unwrap_or(false);
        let links = self.inner.options.links.clone();
        if links.is_none() && arguments.get("output") == Some(&json!("url")) {
            // Known before anything runs or is paid for.
            return results::failure(
                EngineError::invalid(
                    "/output",
                    "/output: \"url\" needs the HTTP server (paperchain serve, MCP at /mcp/…); over stdio files \
                     come embedded in the result",
                )
                .into(),
            );
        }
        let body = match serde_json::to_vec(&arguments) {
            Ok(body) => body,
            Err(e) => return results::failure(EngineError::internal(format!("encoding the arguments: {e}")).into()),
        };
        let mut call = Call::new(route.info().path, body, Caller { front_door: "mcp", client: client_name });
        // Over MCP every unpaid call asks for the free pool (hosted mode).
        call.payment = payment.map(Payment::X402Json);
        call.free = FreeAsk::Yes;
        call.client_ip = client;
        let tool = self.inner.tools.iter().find(|t| t.name == operation);
        match self.inner.options.calls.run(call).await {
            Outcome::Local(Ok(reply), _) => {
                results::success(reply, wrap, links.as_ref()).await.unwrap_or_else(results::failure)
            }
            Outcome::Local(Err(error), _) => results::failure(error.into()),
            Outcome::Hosted(Ok(answer)) => results::hosted(answer, wrap, links.as_ref()).await,
            Outcome::Hosted(Err(error)) => results::failure(routed::call_error(&error)),
            // Tools never ask for a quote only.
            Outcome::Quote(_) => results::failure(EngineError::internal("a quote was not asked for").into()),
            Outcome::Paywall(answer) => answer_result(answer, tool, wrap, links.as_ref()).await,
            Outcome::Refused(failure) => results::failure(ApiError::from(failure)),
        }
    }
}

/// The paywall's answer as a tool result (x402 MCP transport: a 402 is a tool error whose
/// structured content, and first text, is the PaymentRequired object, naming `tool`).
async fn answer_result(answer: Answer, tool: Option<&Tool>, wrap: bool, links: Option<&Links>) -> CallToolResult {
    match answer {
        Answer::Delivered { reply, receipt, free_left } => {
            let mut result = results::success(reply, wrap, links).await.unwrap_or_else(results::failure);
            let mut meta = MetaObject::default();
            if let Some(receipt) = receipt {
                meta.0.insert(MCP_PAYMENT_RESPONSE.into(), json!(receipt.settlement));
            }
            if let Some(left) = free_left {
                meta.0.insert(FREE_REMAINING_META.into(), json!(left));
            }
            if !meta.0.is_empty() {
                result.meta = Some(meta);
            }
            result
        }
        Answer::PaymentRequired(required) => match tool {
            Some(tool) => results::payment_required(required.body.value.clone(), tool),
            // Every route of a served family is one of its tools; unreachable in practice.
            None => CallToolResult::structured_error(required.body.value.clone()),
        },
        Answer::Failed(failure) => results::failure(ApiError::from(failure)),
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let families: Vec<&str> = self.inner.options.families.iter().map(|f| f.as_str()).collect();
        let mut instructions = format!(
            "Paperchain {} tools: every route of the catalog, with its input and output schema. {}",
            families.join(" and "),
            tools::UNTRUSTED
        );
        if self.inner.options.calls.paywall().is_some() {
            instructions.push_str(
                " Calls use the caller's free pool first; past it a call answers isError with the x402 \
                 PaymentRequired object: pay by repeating the call with the signed PaymentPayload in \
                 _meta[\"x402/payment\"]; the settlement comes back in _meta[\"x402/payment-response\"].",
            );
        }
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("paperchain", env!("CARGO_PKG_VERSION")).with_title("Paperchain"))
            .with_instructions(instructions)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.inner.tools.clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        if self.route(&request.name).is_none() {
            return Err(ErrorData::invalid_params(format!("unknown tool: {}", request.name), None));
        }
        let payment = context
            .meta
            .0
            .0
            .get(MCP_PAYMENT)
            .or_else(|| request.meta.as_ref().and_then(|m| m.0.0.get(MCP_PAYMENT)))
            .cloned();
        let client = match (self.inner.options.calls.paywall(), context.extensions.get::<http::request::Parts>()) {
            (Some(paywall), Some(parts)) => client_ip_of(&parts.headers, &parts.extensions, paywall.client_ip_header()),
            _ => None,
        };
        // The MCP client's own name (from `initialize`), else the HTTP caller's user agent.
        let client_name = context.peer.peer_info().map(|info| info.client_info.name.clone()).or_else(|| {
            context
                .extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.headers.get(http::header::USER_AGENT))
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        });
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        Ok(self.call(&request.name, arguments, payment, client, client_name).await.into())
    }
}
