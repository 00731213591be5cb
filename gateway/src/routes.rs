//! The HTTP routes, generated from the catalog: one POST handler for every route, the
//! file-link download, the service documents, and JSON 404/405 answers.
//!
//! One call over HTTP (`call`): the headers become the call path's [`Call`] (hosted
//! mode: the payment, the free-pool ask and the client's address, [`crate::paid`]; local
//! mode: the route mode and quote headers, [`crate::routed`], and the caller: the app's
//! page when it sends the app's token, recorded as front door `app`); a heavy call that
//! can only run here takes its place at the work gate before the body is read
//! (`CallPath::admit`: a busy server refuses at once); the body is read once for both
//! modes within the request timeout and the body budget ([`crate::intake`]; a body not
//! declared as JSON is not read, one over [`BODY_LIMIT`] is not kept, and the call path
//! answers them: 415 and 413, or the paywall's 402 naming the fault); [`CallPath::run`]
//! decides and runs it; the outcome becomes a status, headers and a body, and a file
//! reply is encoded here in one place (`file`, `base64` or `url`, [`encode_reply`]).

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::body::Body as HttpBody;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use paperchain_calls::paywall::Answer;
use paperchain_calls::{Body, Call, CallPath, Outcome};
use paperchain_engine::context::blocking;
use paperchain_engine::output::OutputMode;
use paperchain_engine::{EngineError, FileSet, OutFile, Reply};
use paperchain_wallet::ledger::Caller;

use crate::error::ApiError;
use crate::files::FileStore;
pub use crate::intake::{BodyBudget, BodyHold, read_body, too_large};
use crate::service_docs::ServiceDocs;
use crate::{paid, routed};

/// Largest request body (`../shared/spec/routebook.md` §6).
pub const BODY_LIMIT: usize = 64 * 1024 * 1024;

/// Everything a request handler needs.
pub struct AppState {
    /// Where calls go (the catalog, the engine context, the paywall or the paying client).
    pub calls: CallPath,
    /// Stored files for `output: "url"`.
    pub files: FileStore,
    /// Absolute base URL of this server, without a trailing slash.
    pub base_url: String,
    /// OpenAPI, llms.txt, x402 listing, built once.
    pub docs: ServiceDocs,
    /// Longest the body of a local call may take to arrive.
    pub request_timeout: Duration,
    /// Largest request body.
    pub body_limit: usize,
    /// Most request-body bytes held at once, across all calls.
    pub body_budget: Arc<BodyBudget>,
    /// The app's session: a call carrying its token comes from the app's own page.
    pub app_session: Arc<crate::app::Session>,
}

/// The router: every catalog route plus the service documents and file links.
pub fn router(state: Arc<AppState>) -> Router {
    let mut router = Router::new();
    for entry in state.calls.catalog().routes() {
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

/// Reads the body once for either mode: a body not declared as JSON is not read. The hold
/// keeps the body's share of the budget until the call ends.
async fn receive(request: Request, limit: usize, budget: &BodyBudget) -> Result<(Body, Option<BodyHold>), ApiError> {
    if !is_json(request.headers()) {
        return Ok((Body::NotJson(content_type(request.headers()).to_string()), None));
    }
    match read_body(request, limit, budget).await {
        Ok((bytes, hold)) => Ok((Body::Json(bytes), Some(hold))),
        Err(e) if e.status == StatusCode::PAYLOAD_TOO_LARGE => Ok((Body::TooLarge(limit), None)),
        Err(e) => Err(e),
    }
}

async fn call_route(state: Arc<AppState>, path: &'static str, request: Request) -> Response {
    match call(&state, path, request).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

/// One call over HTTP: its request translated into the call path's [`Call`], the outcome
/// into statuses and headers.
async fn call(state: &AppState, path: &'static str, request: Request) -> Result<Response, ApiError> {
    let calls = &state.calls;
    let route = calls.catalog().by_path(path).ok_or_else(|| ApiError::not_found(format!("no route {path}")))?;
    let headers = request.headers();
    let mut call = Call::new(path, bytes::Bytes::new(), Caller { front_door: "http", client: None });
    call.save_to = routed::save_to(headers)?;
    match calls.paywall() {
        Some(paywall) => {
            call.client_ip = paid::client_ip_of(headers, request.extensions(), paywall.client_ip_header());
            call.payment = paid::payment(headers);
            call.free = paid::free_ask(headers);
            call.over_http = true;
        }
        None => {
            call.mode = routed::mode_of(headers)?;
            call.quote_only = routed::quote_only(headers)?;
            let from_app = state.app_session.sent_by(headers);
            call.caller = match from_app {
                true => Caller { front_door: "app", client: Some(crate::app::CLIENT_NAME.to_string()) },
                false => Caller {
                    front_door: "http",
                    client: headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).map(str::to_string),
                },
            };
        }
    }
    // A heavy call that can only run here takes its place before its body is read: a busy
    // server refuses at once.
    call.admission = calls.admit(route, call.mode, call.quote_only)?;
    // Receiving the body is bounded (a caller that sends slowly cannot hold a task).
    let (body, hold) =
        tokio::time::timeout(state.request_timeout, receive(request, state.body_limit, &state.body_budget))
            .await
            .map_err(|_| {
                ApiError::from(EngineError::new(
                    paperchain_engine::ErrorKind::Timeout,
                    "timeout",
                    format!("the request body did not arrive within {} s", state.request_timeout.as_secs()),
                ))
            })??;
    call.body = body;
    call.hold = hold.map(|hold| Box::new(hold) as Box<dyn std::any::Any + Send>);
    match calls.run(call).await {
        Outcome::Local(reply, call_id) => {
            let mut response = encode_reply(state, reply?).await?;
            routed::mark_local(&mut response, call_id.as_deref());
            Ok(response)
        }
        Outcome::Hosted(Ok(answer)) => Ok(routed::hosted_response(answer)),
        Outcome::Hosted(Err(error)) => Err(routed::call_error(&error)),
        Outcome::Quote(quote) => Ok(routed::quote_response(*quote)),
        Outcome::Paywall(Answer::Delivered { reply, receipt, free_left }) => {
            let mut response = encode_reply(state, reply).await.unwrap_or_else(IntoResponse::into_response);
            paid::add_delivery_headers(&mut response, receipt.as_deref(), free_left);
            Ok(response)
        }
        Outcome::Paywall(Answer::PaymentRequired(required)) => Ok(paid::payment_required(&required)),
        Outcome::Paywall(Answer::Failed(failure)) | Outcome::Refused(failure) => Err(ApiError::from(failure)),
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

pub use paperchain_calls::REPORT_HEADER;

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
    let mut response = Response::new(HttpBody::from(file.bytes));
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
        serde_json::json!({ "status": "ok", "version": env!("CARGO_PKG_VERSION"), "routes": state.calls.catalog().routes().count() }),
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
