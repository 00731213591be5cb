//! The HTTP routes, generated from the catalog: one POST handler for every route, the
//! file-link download, the service documents, and JSON 404/405 answers.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use paperchain_engine::context::blocking;
use paperchain_engine::output::OutputMode;
use paperchain_engine::{Catalog, Context, EngineError, FileSet, OutFile, Reply};

use crate::error::ApiError;
use crate::files::FileStore;
use crate::hosted;
use crate::hosted::mpp::RequestBinding;
use crate::hosted::paywall::{Answer, Body as PaidBody, Call};
pub use crate::intake::{BodyBudget, BodyHold, read_body, too_large};
use crate::routed;
use crate::service_docs::ServiceDocs;
use paperchain_wallet::ledger::Caller;

/// Largest request body (`../shared/spec/routebook.md` §6).
pub const BODY_LIMIT: usize = 64 * 1024 * 1024;

/// Everything a request handler needs.
pub struct AppState {
    /// The routes.
    pub catalog: Arc<Catalog>,
    /// The engine context (fetcher, limits).
    pub ctx: Context,
    /// Stored files for `output: "url"`.
    pub files: FileStore,
    /// Absolute base URL of this server, without a trailing slash.
    pub base_url: String,
    /// OpenAPI, llms.txt, x402 listing, built once.
    pub docs: ServiceDocs,
    /// Longest a call may take.
    pub request_timeout: Duration,
    /// Largest request body.
    pub body_limit: usize,
    /// Most request-body bytes held at once, across all calls.
    pub body_budget: Arc<BodyBudget>,
    /// The paywall in hosted mode; local mode has none.
    pub paywall: Option<Arc<crate::hosted::paywall::Paywall>>,
    /// Local mode's paying client (routing, ledger); `None` runs every call here, unrecorded.
    pub client: Option<Arc<paperchain_wallet::client::PayingClient>>,
    /// The app's session: a call carrying its token comes from the app's own page.
    pub app_session: Arc<crate::app::Session>,
}

/// The router: every catalog route plus the service documents and file links.
pub fn router(state: Arc<AppState>) -> Router {
    let mut router = Router::new();
    for entry in state.catalog.routes() {
        let path = entry.info().path;
        router = router.route(
            path,
            post(move |State(state): State<Arc<AppState>>, request: Request| call_route(state, path, request))
                .fallback(method_not_allowed),
        );
    }
    router
        .route("/v1/files/{id}", get(download).fallback(method_not_allowed))
        .route("/openapi.json", get(openapi).fallback(method_not_allowed))
        .route("/llms.txt", get(llms_txt).fallback(method_not_allowed))
        .route("/.well-known/x402", get(x402_listing).fallback(method_not_allowed))
        .route("/healthz", get(healthz).fallback(method_not_allowed))
        .fallback(not_found)
        .with_state(state)
}

/// A route's request as received: the headers, and the body when it is JSON and fits.
enum Received {
    /// A JSON body within the limit, and its share of the body budget.
    Json(axum::body::Bytes, BodyHold),
    /// A body declared as something else (the Content-Type given, possibly empty).
    NotJson(String),
    /// A body over the limit (bytes).
    TooLarge(usize),
}

impl Received {
    /// The body as the paywall takes it, and the bytes an MPP challenge is bound to.
    fn paid(&self) -> (PaidBody<'_>, &[u8]) {
        match self {
            Received::Json(bytes, _) => (PaidBody::Json(bytes), bytes),
            Received::NotJson(content_type) => (PaidBody::NotJson(content_type.clone()), &[]),
            Received::TooLarge(limit) => (PaidBody::TooLarge(*limit), &[]),
        }
    }
}

/// Reads the body once for either mode: a body not declared as JSON is not read.
async fn receive(request: Request, limit: usize, budget: &BodyBudget) -> Result<Received, ApiError> {
    if !is_json(request.headers()) {
        return Ok(Received::NotJson(content_type(request.headers()).to_string()));
    }
    match read_body(request, limit, budget).await {
        Ok((bytes, hold)) => Ok(Received::Json(bytes, hold)),
        Err(e) if e.status == StatusCode::PAYLOAD_TOO_LARGE => Ok(Received::TooLarge(limit)),
        Err(e) => Err(e),
    }
}

async fn call_route(state: Arc<AppState>, path: &'static str, request: Request) -> Response {
    let Some(paywall) = state.paywall.clone() else {
        // Its own task, limited inside (the engine's run by the timeout; a routed call by
        // the client's): a caller that goes away cannot cut a payment or its ledger row short.
        let task = tokio::spawn(async move { call_local(&state, path, request).await });
        return match task.await {
            Ok(Ok(response)) => response,
            Ok(Err(error)) => error.into_response(),
            Err(e) => {
                tracing::error!(error = %e, "a call's task failed");
                ApiError::from(EngineError::internal("the call's task failed")).into_response()
            }
        };
    };
    // The paywall limits the operation itself; verify and settle around it must not be cut short.
    let client =
        hosted::http::client_ip_of(request.headers(), request.extensions(), paywall.config().client_ip_header.as_ref());
    let payment = hosted::http::payment(request.headers());
    let free = hosted::http::free_ask(request.headers());
    let Some(route) = state.catalog.by_path(path) else {
        return ApiError::not_found(format!("no route {path}")).into_response();
    };
    // A heavy route's place is taken before its body is read: a busy server refuses at once.
    let admission = match route.admit(&state.ctx) {
        Ok(admission) => admission,
        Err(busy) => return ApiError::from(busy).into_response(),
    };
    let received = match receive(request, state.body_limit, &state.body_budget).await {
        Ok(received) => received,
        Err(error) => return error.into_response(),
    };
    // A paid call runs in its own task: if the client goes away mid-call, the settlement
    // and its ledger entry still complete instead of being cut off half-way.
    let task = tokio::spawn(async move {
        let Some(route) = state.catalog.by_path(path) else {
            return ApiError::not_found(format!("no route {path}")).into_response();
        };
        let (body, bytes) = received.paid();
        let binding = Some(RequestBinding::new("POST", path, bytes));
        let call = Call { route, body, payment, free, client, binding, admission };
        let answer = paywall.handle(call, &state.ctx).await;
        match answer {
            Answer::Delivered { reply, receipt, free_left } => {
                let mut response = encode_reply(&state, reply).await.unwrap_or_else(IntoResponse::into_response);
                hosted::http::add_delivery_headers(&mut response, receipt.as_ref(), free_left);
                response
            }
            Answer::PaymentRequired(required) => hosted::http::payment_required(&required),
            Answer::Failed(failure) => ApiError::from(failure).into_response(),
        }
    });
    match task.await {
        Ok(response) => response,
        Err(e) => {
            tracing::error!(error = %e, "a hosted call's task failed");
            ApiError::from(EngineError::internal("the call's task failed")).into_response()
        }
    }
}

async fn call_local(state: &AppState, path: &'static str, request: Request) -> Result<Response, ApiError> {
    let entry = state.catalog.by_path(path).ok_or_else(|| ApiError::not_found(format!("no route {path}")))?;
    let mode = routed::mode_of(request.headers())?;
    let quote_only = routed::quote_only(request.headers())?;
    let from_app = state.app_session.sent_by(request.headers());
    let client = match from_app {
        true => Some(crate::app::CLIENT_NAME.to_string()),
        false => request.headers().get(header::USER_AGENT).and_then(|v| v.to_str().ok()).map(str::to_string),
    };
    let front_door = if from_app { "app" } else { "http" };
    // A heavy call that can only run here takes its place before its body is read: a busy
    // server refuses at once.
    let admission = match routed::runs_here_only(state.client.as_ref(), entry, mode, quote_only) {
        true => entry.admit(&state.ctx)?,
        false => Default::default(),
    };
    // Receiving the body is bounded like the call (a caller that sends slowly cannot hold a task).
    let received = tokio::time::timeout(state.request_timeout, receive(request, state.body_limit, &state.body_budget))
        .await
        .map_err(|_| {
            ApiError::from(EngineError::new(
                paperchain_engine::ErrorKind::Timeout,
                "timeout",
                format!("the request body did not arrive within {} s", state.request_timeout.as_secs()),
            ))
        })??;
    // The hold keeps the body's share of the budget until the call ends.
    let (body, _hold) = match received {
        Received::Json(bytes, hold) => (bytes, hold),
        Received::NotJson(content_type) => return Err(unsupported_media_type(&content_type)),
        Received::TooLarge(limit) => return Err(too_large(limit)),
    };
    let caller = Caller { front_door, client };
    let call = routed::Call { route: entry, body, caller, mode, quote_only, admission };
    match routed::run(state.client.as_ref(), &state.ctx, call, state.request_timeout).await {
        routed::Ran::Local(reply, call_id) => {
            let mut response = encode_reply(state, reply?).await?;
            routed::mark_local(&mut response, call_id.as_deref());
            Ok(response)
        }
        routed::Ran::Hosted(Ok(answer)) => Ok(routed::hosted_response(answer)),
        routed::Ran::Hosted(Err(error)) => Err(routed::call_error(&error)),
        routed::Ran::Quote(quote) => Ok(routed::quote_response(quote)),
    }
}

/// Whether the request declares a JSON body.
pub fn is_json(headers: &HeaderMap) -> bool {
    content_type(headers).split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("application/json")
}

/// The Content-Type header as text ("" when absent or not text).
pub fn content_type(headers: &HeaderMap) -> &str {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("")
}

/// 415 for a body declared as `content_type`.
pub fn unsupported_media_type(content_type: &str) -> ApiError {
    ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        format!(
            "the body must be JSON with Content-Type: application/json (got {})",
            if content_type.is_empty() { "none" } else { content_type }
        ),
    )
}

pub async fn encode_reply(state: &AppState, reply: Reply<serde_json::Value>) -> Result<Response, ApiError> {
    match reply {
        Reply::Json(value) => Ok(Json(value).into_response()),
        Reply::Files(set) => encode_files(state, set).await,
    }
}

async fn encode_files(state: &AppState, set: FileSet) -> Result<Response, ApiError> {
    let list = set.bundle.is_some();
    // A report describes the one file of a result; a list has no place for it.
    let report = if list { None } else { set.report.clone() };
    // Zipping, base64 and hashing are CPU work on large buffers: off the async threads.
    match set.mode {
        OutputMode::File => {
            let mut response = file_response(blocking(move || set.into_single_file()).await?);
            if let Some(report) = report
                && let Ok(value) = HeaderValue::from_str(&ascii_json(&report))
            {
                response.headers_mut().insert(REPORT_HEADER, value);
            }
            Ok(response)
        }
        OutputMode::Base64 => {
            let mut items = blocking(move || Ok(set.files.iter().map(OutFile::to_base64).collect::<Vec<_>>())).await?;
            if let [item] = items.as_mut_slice() {
                item.report = report;
            }
            Ok(json_one_or_list(items, list))
        }
        OutputMode::Url => Ok(json_one_or_list(state.files.links(&state.base_url, set).await?, list)),
    }
}

fn json_one_or_list<T: serde::Serialize>(mut items: Vec<T>, list: bool) -> Response {
    if !list
        && items.len() == 1
        && let Some(item) = items.pop()
    {
        return Json(item).into_response();
    }
    Json(items).into_response()
}

/// The header carrying a one-file result's report (compact JSON, ASCII) for `output: "file"`.
pub const REPORT_HEADER: &str = "paperchain-report";

/// Compact JSON with every non-ASCII character escaped, so it fits in a header.
fn ascii_json(value: &serde_json::Value) -> String {
    let mut out = String::new();
    for c in value.to_string().chars() {
        if c.is_ascii() && !c.is_ascii_control() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// A file answer: bytes, media type, `Content-Disposition: attachment`.
pub fn file_response(file: OutFile) -> Response {
    let mut response = Response::new(Body::from(file.bytes));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(&file.media_type).unwrap_or(HeaderValue::from_static("application/octet-stream")),
    );
    if let Ok(value) = HeaderValue::from_str(&content_disposition(&file.filename)) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// `attachment; filename="ascii"; filename*=UTF-8''percent-encoded` (RFC 6266).
pub fn content_disposition(filename: &str) -> String {
    let ascii: String = filename
        .chars()
        .map(|c| if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' { c } else { '_' })
        .collect();
    let mut encoded = String::new();
    for byte in filename.bytes() {
        if byte.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&byte) {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}

async fn download(State(state): State<Arc<AppState>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let stored = state
        .files
        .get(&id)
        .await
        .map_err(|e| ApiError::from(EngineError::internal(format!("reading a stored file: {e}"))))?;
    let (meta, bytes) =
        stored.ok_or_else(|| ApiError::not_found("no such file, or its link has expired (links live 24 hours)"))?;
    let mut response = file_response(OutFile { filename: meta.filename, media_type: meta.media_type, bytes });
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
    Ok(response)
}

async fn openapi(State(state): State<Arc<AppState>>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], state.docs.openapi.clone()).into_response()
}

async fn llms_txt(State(state): State<Arc<AppState>>) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], state.docs.llms_txt.clone()).into_response()
}

async fn x402_listing(State(state): State<Arc<AppState>>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], state.docs.x402.clone()).into_response()
}

async fn healthz(State(state): State<Arc<AppState>>) -> Json<serde_json::Value> {
    Json(
        serde_json::json!({ "status": "ok", "version": env!("CARGO_PKG_VERSION"), "routes": state.catalog.routes().count() }),
    )
}

async fn not_found(request: Request) -> ApiError {
    ApiError::not_found(format!("no route {}; GET /openapi.json lists every route", request.uri().path()))
}

async fn method_not_allowed(request: Request) -> Response {
    let allowed = if request.uri().path().starts_with("/v1/") && !request.uri().path().starts_with("/v1/files/") {
        "POST"
    } else {
        "GET"
    };
    let mut response = ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{} takes {allowed}, not {}", request.uri().path(), request.method()),
    )
    .into_response();
    response.headers_mut().insert(header::ALLOW, HeaderValue::from_static(allowed));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_disposition_is_safe_for_any_name() {
        assert_eq!(content_disposition("a b.pdf"), "attachment; filename=\"a b.pdf\"; filename*=UTF-8''a%20b.pdf");
        let tricky = content_disposition("Über \"x\".pdf");
        assert!(tricky.starts_with("attachment; filename=\"_ber _x_.pdf\""), "{tricky}");
        assert!(tricky.ends_with("filename*=UTF-8''%C3%9Cber%20%22x%22.pdf"), "{tricky}");
        assert!(HeaderValue::from_str(&content_disposition("a\r\nb")).is_ok());
    }
}
