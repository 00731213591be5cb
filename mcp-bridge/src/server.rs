//! The MCP server: lists the tools of its families and hands each tool call to the call
//! path (`paperchain_calls`), which runs it here, routes it and pays (local mode) or puts it
//! through the paywall, free pool first (hosted mode); the outcome becomes a tool result.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use paperchain_calls::local_files::{self, SaveTo};
use paperchain_calls::paywall::{Answer, Failure, FreeAsk, Payment};
use paperchain_calls::{Call, CallPath, Outcome};
use paperchain_engine::cancel::Stop;
use paperchain_engine::catalog::RouteEntry;
use paperchain_engine::context::Progress;
use paperchain_engine::{Context, EngineError, Family};
use paperchain_gateway::error::ApiError;
use paperchain_gateway::paid::client_ip_of;
use paperchain_gateway::routed;
use paperchain_protocol::x402::{MCP_PAYMENT, MCP_PAYMENT_RESPONSE};
use paperchain_wallet::approvals::ApprovalQueue;
use paperchain_wallet::client::Approver;
use paperchain_wallet::ledger::Caller;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, Implementation, ListToolsResult, MetaObject, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ResourceContents, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};

use crate::approval::{self, Answered, ElicitingApprover, HeldCalls};
use crate::kept::{self, Kept};
use crate::results::{self, Delivery, Links};
use crate::{compact, tools};

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
    /// Which tools are listed: a few that cover every operation, or one per route.
    pub surface: Surface,
    /// Local mode over HTTP: the queue where payments wait for the user's approval, which a
    /// client with URL-mode elicitation is asked to open a page of ([`ElicitingApprover`]).
    pub approvals: Option<Arc<ApprovalQueue>>,
}

/// The tools a server lists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Surface {
    /// One run tool per family and `describe_operation` ([`compact`]): the whole list is a
    /// few KB, what an agent's context can carry on every turn.
    #[default]
    Compact,
    /// One tool per route, each with its full input and output schemas ([`tools`]).
    Full,
}

impl ServerOptions {
    /// A local server of `families`: no paywall, no wallet, no links, 120 s per call.
    pub fn local(families: Vec<Family>, ctx: Context) -> ServerOptions {
        let catalog = Arc::new(paperchain_engine::catalog::standard());
        let calls = CallPath::local(catalog, ctx, None, Duration::from_secs(120));
        ServerOptions { families, calls, links: None, surface: Surface::Compact, approvals: None }
    }
}

/// Who sent one tool call, and the payment it carried.
#[derive(Clone, Default)]
pub struct Requester {
    /// `_meta["x402/payment"]`, when the call carries one (hosted mode).
    pub payment: Option<Value>,
    /// The caller's network address (hosted mode's free pools count by it).
    pub address: Option<IpAddr>,
    /// The MCP client's name (from `initialize`), else the HTTP caller's user agent.
    pub name: Option<String>,
    /// Who approves a routed payment of this call, when its client can ask the user.
    pub approver: Option<Arc<dyn Approver>>,
    /// The call's stop signal: given when the client sends `notifications/cancelled` for
    /// it, or its session ends.
    pub stop: Stop,
    /// Where the call's progress goes, when the client asked for it (a `progressToken`).
    pub progress: Option<Arc<dyn Progress>>,
}

/// One MCP server (cheap to clone: the streamable HTTP transport makes one per session).
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

struct Inner {
    options: ServerOptions,
    /// The tools listed.
    tools: Vec<Tool>,
    /// One tool per route: listed on the full surface, described on the compact one.
    per_route: Vec<Tool>,
    /// Per operation: whether its JSON answer is wrapped to be an object.
    wraps: HashMap<&'static str, bool>,
    /// A local server's large results, kept for `resources/read`.
    kept: Option<Kept>,
    /// A local server's heavy calls run as tasks ([`crate::tasks`]), shared by its sessions.
    tasks: rmcp::task_manager::TaskManager,
    /// Calls waiting for their client to come back with the user's answer (2026-07-28
    /// requests), shared by its sessions.
    held: HeldCalls,
}

impl McpServer {
    /// A server with `options`; the tools are generated once, here.
    pub fn new(options: ServerOptions) -> McpServer {
        let (catalog, ctx) = (options.calls.catalog(), options.calls.ctx());
        let local = options.calls.paywall().is_none();
        let per_route = match local {
            true => {
                let mut tools = tools::tools(catalog, &options.families, ctx);
                tools::offer_local_files(&mut tools, catalog);
                tools
            }
            false => tools::hosted_tools(catalog, &options.families, ctx),
        };
        let tools = match options.surface {
            Surface::Full => per_route.clone(),
            Surface::Compact => {
                let mut listed = compact::tools(catalog, &options.families, local);
                if options.calls.client().is_some() {
                    listed.extend(compact::money_tools(catalog, &options.families));
                }
                listed
            }
        };
        let wraps = catalog
            .routes()
            .filter(|r| options.families.contains(&r.info().family))
            .map(|r| (r.info().operation, tools::wraps_json(r, ctx)))
            .collect();
        let kept = local.then(Kept::default);
        let tasks = rmcp::task_manager::TaskManager::new();
        McpServer {
            inner: Arc::new(Inner { options, tools, per_route, wraps, kept, tasks, held: HeldCalls::default() }),
        }
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

    /// Whether `name` is a tool this server lists.
    fn lists(&self, name: &str) -> bool {
        self.inner.tools.iter().any(|t| t.name == name)
    }

    /// Runs one tool call from `requester`.
    pub async fn call(&self, name: &str, arguments: Value, requester: Requester) -> CallToolResult {
        if self.inner.options.surface == Surface::Compact {
            return self.call_compact(name, arguments, requester).await;
        }
        let Some(route) = self.route(name) else {
            return results::failure(ApiError::not_found(format!("no tool {name}")));
        };
        let tool = self.inner.tools.iter().find(|t| t.name == name);
        let mut arguments = arguments;
        // A local server's file tools take where to save beside the route's own input.
        let save_to = match (self.local(), arguments.as_object_mut()) {
            (true, Some(arguments)) => {
                let save_to = save_to_of(arguments);
                arguments.remove(tools::SAVE_TO);
                arguments.remove(tools::OVERWRITE);
                match save_to {
                    Ok(save_to) => save_to,
                    Err((field, message)) => return results::failure(EngineError::invalid(field, message).into()),
                }
            }
            _ => None,
        };
        self.run(route, tool, "", arguments, requester, save_to).await
    }

    /// Whether a call of tool `name` with `arguments` is heavy work (its route's
    /// [`RouteEntry::heavy`]): such a call runs as a task for a client that takes them.
    fn heavy_call(&self, name: &str, arguments: &Value) -> bool {
        let route = match self.inner.options.surface {
            Surface::Compact => arguments.get("operation").and_then(Value::as_str).and_then(|op| self.route(op)),
            Surface::Full => self.route(name),
        };
        route.is_some_and(RouteEntry::heavy)
    }

    /// Whether this is a local server (no paywall): files on this machine may be used.
    fn local(&self) -> bool {
        self.inner.options.calls.paywall().is_none()
    }

    /// A call to a compact tool: `describe_operation`, or a family's run tool.
    async fn call_compact(&self, name: &str, arguments: Value, requester: Requester) -> CallToolResult {
        let invalid = |field: &str, message: String| results::failure(EngineError::invalid(field, message).into());
        let arguments = match arguments {
            Value::Object(arguments) => arguments,
            _ => return invalid("/", "the arguments must be an object".into()),
        };
        if name == compact::DESCRIBE {
            let operation = arguments.get("operation").and_then(Value::as_str).unwrap_or_default();
            let Some(route) = self.route(operation) else { return no_operation(operation) };
            let full = self.inner.per_route.iter().find(|t| t.name == operation).expect("a tool per route");
            return compact::describe(route, full);
        }
        if name == compact::BUDGET && self.lists(name) {
            return self.budget(requester.name.as_deref()).await;
        }
        if name == compact::QUOTE && self.lists(name) {
            let (operation, input) = match compact::operation_and_input(&arguments) {
                Ok(found) => found,
                Err((field, message)) => return invalid(field, message),
            };
            let Some(route) = self.route(operation) else { return no_operation(operation) };
            return self.quote(route, input, requester.name).await;
        }
        let Some(family) = compact::family_of_tool(name).filter(|_| self.lists(name)) else {
            return results::failure(ApiError::not_found(format!("no tool {name}")));
        };
        let (operation, input) = match compact::operation_and_input(&arguments) {
            Ok(found) => found,
            Err((field, message)) => return invalid(field, message),
        };
        let save_to = match save_to_of(&arguments) {
            Ok(save_to) => save_to,
            Err((field, message)) => return invalid(field, message),
        };
        let Some(route) = self.route(operation).filter(|r| r.info().family == family) else {
            return invalid(
                "/operation",
                format!("/operation: `{name}` has no operation `{operation}`; its description lists them"),
            );
        };
        let tool = self.inner.tools.iter().find(|t| t.name == name);
        self.run(route, tool, "/input", input, requester, save_to).await
    }

    /// `wallet_budget`: the policy followed now, what waits for the user, and the ledger's sums.
    async fn budget(&self, client: Option<&str>) -> CallToolResult {
        let Some(paying) = self.inner.options.calls.client() else {
            return results::failure(EngineError::internal("this server has no wallet").into());
        };
        let config = paying.config();
        let networks: Vec<String> = config.policy.networks.keys().cloned().collect();
        match paying.ledger().spent_so_far(client, &networks).await {
            Ok(spent) => compact::budget(&config, &spent, client, paying.unconfirmed().as_ref()),
            Err(error) => results::failure(EngineError::internal(format!("reading the ledger: {error}")).into()),
        }
    }

    /// `quote_operation`: the hosted service's price for `route` with `input`, and the policy's
    /// verdict; nothing runs, nothing is signed.
    async fn quote(&self, route: &RouteEntry, input: Value, client_name: Option<String>) -> CallToolResult {
        let body = match serde_json::to_vec(&input) {
            Ok(body) => body,
            Err(e) => return results::failure(EngineError::internal(format!("encoding the input: {e}")).into()),
        };
        let mut call = Call::new(route.info().path, body, Caller { front_door: "mcp", client: client_name });
        call.quote_only = true;
        match self.inner.options.calls.run(call).await {
            Outcome::Quote(quote) => match *quote {
                Ok(quote) => CallToolResult::structured(paperchain_calls::routed::quote_json(&quote)),
                Err(error) => results::failure(routed::call_error(&error)),
            },
            Outcome::Refused(failure) => results::failure(ApiError::from(failure)),
            _ => results::failure(EngineError::internal("the call path gave no quote").into()),
        }
    }

    /// Runs `route` with `arguments` for the listed tool `tool`; an error's field is named
    /// under `at` (`/input` when the arguments are a run tool's `input`).
    async fn run(
        &self,
        route: &RouteEntry,
        tool: Option<&Tool>,
        at: &str,
        arguments: Value,
        requester: Requester,
        save_to: Option<SaveTo>,
    ) -> CallToolResult {
        let Requester { payment, address: client, name: client_name, approver, stop, progress } = requester;
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
        let saves = save_to.is_some();
        call.save_to = save_to;
        call.approver = approver;
        call.stop = stop;
        call.progress = progress;
        let saved = |result: CallToolResult| if saves { results::with_saved_links(result) } else { result };
        let delivery = Delivery { links: links.as_ref(), kept: self.inner.kept.as_ref() };
        match self.inner.options.calls.run(call).await {
            Outcome::Local(Ok(reply), _) => {
                saved(results::success(reply, wrap, delivery).await.unwrap_or_else(results::failure))
            }
            Outcome::Local(Err(error), _) => results::failure(under(at, error).into()),
            Outcome::Hosted(Ok(answer)) => saved(results::hosted(answer, wrap, delivery).await),
            Outcome::Hosted(Err(error)) => results::failure(routed::call_error(&error)),
            // Tools never ask for a quote only.
            Outcome::Quote(_) => results::failure(EngineError::internal("a quote was not asked for").into()),
            // A paid call's input error names its field under `input` too.
            Outcome::Paywall(Answer::Failed(Failure::Engine(error))) => results::failure(under(at, error).into()),
            Outcome::Paywall(answer) => answer_result(answer, tool, wrap, delivery).await,
            Outcome::Refused(failure) => results::failure(ApiError::from(failure)),
        }
    }
}

/// Where a call's progress goes: the client's progress notifications, when the request
/// carries a `progressToken`.
fn progress_of(context: &RequestContext<RoleServer>) -> Option<Arc<dyn Progress>> {
    context
        .meta
        .get_progress_token()
        .map(|token| Arc::new(crate::progress::ToolProgress::start(context.peer.clone(), token)) as Arc<dyn Progress>)
}

/// The `save_to` and `overwrite` arguments of a tool call, or the tool error naming the
/// one that is wrong.
fn save_to_of(arguments: &rmcp::model::JsonObject) -> Result<Option<SaveTo>, (&'static str, String)> {
    let overwrite = match arguments.get(tools::OVERWRITE) {
        None | Some(Value::Null) => false,
        Some(Value::Bool(overwrite)) => *overwrite,
        Some(_) => return Err(("/overwrite", "/overwrite: must be true or false".into())),
    };
    match arguments.get(tools::SAVE_TO) {
        None | Some(Value::Null) if overwrite => {
            Err(("/overwrite", "/overwrite: it goes with `save_to`, the path a result is saved to".into()))
        }
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(path)) => {
            Ok(Some(SaveTo { path: path.clone(), overwrite, field: format!("/{}", tools::SAVE_TO) }))
        }
        Some(_) => Err(("/save_to", "/save_to: must be an absolute path (a string)".into())),
    }
}

/// The tool error for an `operation` argument that names no operation of this server.
fn no_operation(operation: &str) -> CallToolResult {
    let message = format!("/operation: no operation `{operation}` here");
    results::failure(EngineError::invalid("/operation", message).into())
}

/// `error` with its field (and the message that opens with it) named under `at`; an error
/// about `save_to`, an argument beside the input, stays as it is.
fn under(at: &str, mut error: EngineError) -> EngineError {
    if at.is_empty() || error.field.as_deref().is_some_and(|f| f.strip_prefix('/') == Some(tools::SAVE_TO)) {
        return error;
    }
    if let Some(field) = error.field.take() {
        let named = format!("{at}{}", if field == "/" { "" } else { field.as_str() });
        if let Some(rest) = error.message.strip_prefix(field.as_str()) {
            error.message = format!("{named}{rest}");
        }
        error.field = Some(named);
    }
    error
}

/// The paywall's answer as a tool result (x402 MCP transport: a 402 is a tool error whose
/// structured content, and first text, is the PaymentRequired object, naming `tool`).
async fn answer_result(answer: Answer, tool: Option<&Tool>, wrap: bool, delivery: Delivery<'_>) -> CallToolResult {
    match answer {
        Answer::Delivered { reply, receipt, free_left } => {
            let mut result = results::success(reply, wrap, delivery).await.unwrap_or_else(results::failure);
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
        let mut instructions = match self.inner.options.surface {
            Surface::Full => format!(
                "Paperchain {} tools: every route of the catalog, with its input and output schema. {}",
                families.join(" and "),
                tools::UNTRUSTED
            ),
            Surface::Compact => format!(
                "Paperchain {} operations: each run tool's description lists its operations; `{}` gives one \
                 operation's input schema; run it with {{\"operation\", \"input\"}}. {}",
                families.join(" and "),
                compact::DESCRIBE,
                tools::UNTRUSTED
            ),
        };
        if self.local() {
            instructions.push(' ');
            instructions.push_str(tools::LOCAL_FILES);
        }
        if self.inner.options.calls.paywall().is_some() {
            instructions.push_str(
                " Calls use the caller's free pool first; past it a call answers isError with the x402 \
                 PaymentRequired object: pay by repeating the call with the signed PaymentPayload in \
                 _meta[\"x402/payment\"]; the settlement comes back in _meta[\"x402/payment-response\"].",
            );
        }
        let capabilities = match self.local() {
            // Kept and saved results are resource links, read with resources/read.
            // Heavy operations run as tasks for clients that take them.
            true => ServerCapabilities::builder().enable_tools().enable_resources().enable_tasks().build(),
            false => ServerCapabilities::builder().enable_tools().build(),
        };
        ServerConfig::new(capabilities)
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

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        self.inner.tasks.get_task(&request.task_id).map(rmcp::model::GetTaskResult::new)
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.tasks.cancel_task(&request.task_id)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let not_found = |message: String| ErrorData::resource_not_found(message, Some(json!({ "uri": request.uri })));
        if request.uri.starts_with(kept::SCHEME) {
            let kept = self.inner.kept.as_ref().and_then(|kept| kept.read(&request.uri));
            let (media_type, bytes) = kept.ok_or_else(|| {
                not_found(format!("{} is not kept (any more): results are kept an hour", request.uri))
            })?;
            let contents =
                ResourceContents::blob(results::base64(&bytes), request.uri.clone()).with_mime_type(media_type);
            return Ok(ReadResourceResult::new(vec![contents]).into());
        }
        let path = match url::Url::parse(&request.uri) {
            Ok(url) if url.scheme() == "file" && self.local() => {
                url.to_file_path().map_err(|()| not_found(format!("{} is not a file path", request.uri)))?
            }
            _ => {
                return Err(not_found(format!(
                    "no resource {}: kept results ({}…) and saved files (file://) are read",
                    request.uri,
                    kept::SCHEME
                )));
            }
        };
        let folders = self.inner.options.calls.client().map(|c| c.config().folders.clone()).unwrap_or_default();
        let max = self.inner.options.calls.ctx().limits.max_file_bytes;
        let text = path.to_string_lossy().into_owned();
        let read = tokio::task::spawn_blocking(move || local_files::read_granted(&folders, &text, "uri", max))
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
            .map_err(|e| not_found(e.message.to_string()))?;
        let media_type = results::media_type_of(&read.filename);
        let blob = results::base64(&read.bytes);
        Ok(ReadResourceResult::new(vec![ResourceContents::blob(blob, request.uri.clone()).with_mime_type(media_type)])
            .into())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        if !self.lists(&request.name) {
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
        // The name the request itself carries (the 2026-07-28 revision has no handshake, and
        // its session's own info is then a placeholder), else the one from `initialize`, else
        // the HTTP caller's user agent.
        let client_name = context
            .meta
            .client_info()
            .map(|info| info.name)
            .or_else(|| context.peer.peer_info().map(|info| info.client_info.name.clone()))
            .or_else(|| {
                context
                    .extensions
                    .get::<http::request::Parts>()
                    .and_then(|parts| parts.headers.get(http::header::USER_AGENT))
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            });
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        // Local mode over HTTP: a client that can open a page for the user approves there,
        // asked during the call (before 2026-07-28) or by a round trip (from 2026-07-28).
        let asks_user = match (&self.inner.options.approvals, &self.inner.options.links) {
            (Some(queue), Some(links)) if self.local() => Some((queue.clone(), links.base_url.clone())),
            _ => None,
        };
        // Heavy work runs as a task for a client that takes them (approved in the app).
        let as_task = context.client_capabilities().is_some_and(|c| c.supports_tasks())
            && self.local()
            && self.heavy_call(&request.name, &arguments);
        if let Some((queue, base_url)) = asks_user.as_ref().filter(|_| !as_task && approval::round_trips(&context)) {
            let digest = approval::call_digest(&request.name, &arguments);
            let stopped = context.ct.clone().cancelled_owned();
            let answered = match request.request_state.as_deref() {
                Some(state) => {
                    let responses = request.input_responses.as_ref();
                    match self.inner.held.resume(queue, state, digest, responses, stopped).await {
                        Ok(answered) => answered,
                        Err(message) => Answered::Done(results::failure(
                            EngineError::invalid_with("approval_not_waiting", "/requestState", message).into(),
                        )),
                    }
                }
                None => {
                    let progress = progress_of(&context);
                    let (server, name) = (self.clone(), request.name.to_string());
                    let call: approval::HeldCall = Box::new(move |approver, stop| {
                        Box::pin(async move {
                            let requester = Requester {
                                payment,
                                address: client,
                                name: client_name,
                                approver: Some(approver),
                                stop,
                                progress,
                            };
                            server.call(&name, arguments, requester).await
                        })
                    });
                    self.inner.held.start(queue, base_url, digest, stopped, call).await
                }
            };
            return Ok(match answered {
                Answered::Done(result) => result.into(),
                Answered::AskUser(ask) => ask.into(),
            });
        }
        let approver = asks_user.and_then(|(queue, base_url)| {
            ElicitingApprover::for_session(&queue, &context.peer, &base_url)
                .map(|approver| Arc::new(approver) as Arc<dyn Approver>)
        });
        // The server cancels the request's token on `notifications/cancelled`.
        let stop = Stop::from_token(context.ct.clone());
        let progress = progress_of(&context);
        let requester = Requester { payment, address: client, name: client_name, approver, stop, progress };
        if as_task {
            let (server, name) = (self.clone(), request.name.to_string());
            let own_progress = requester.progress.clone();
            let call: crate::tasks::TaskCall = Box::new(move |stop, progress| {
                Box::pin(async move {
                    let requester = Requester { stop, progress: Some(progress), ..requester };
                    server.call(&name, arguments, requester).await
                })
            });
            let task = crate::tasks::start(&self.inner.tasks, own_progress, call);
            return Ok(rmcp::model::CallToolResponse::Task(rmcp::model::CreateTaskResult::new(task)));
        }
        Ok(self.call(&request.name, arguments, requester).await.into())
    }
}
