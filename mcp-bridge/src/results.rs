//! Replies as MCP tool results: JSON as `structuredContent` and the same JSON as text;
//! files as embedded resources, as resource links for `output: "url"` (stored and
//! described by the gateway's own link code), or, on a local server, a file larger than
//! [`EMBED_LIMIT`] as a link to the copy [`Kept`] for `resources/read`; errors as tool errors
//! naming the field.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use paperchain_engine::context::blocking;
use paperchain_engine::output::OutputMode;
use paperchain_engine::{EngineError, FileSet, Reply};
use paperchain_gateway::error::ApiError;
use paperchain_gateway::files::FileStore;
use paperchain_protocol::x402::{self, MCP_PAYMENT_RESPONSE, PAYMENT_RESPONSE};
use paperchain_wallet::client::HostedAnswer;
use rmcp::model::{CallToolResult, ContentBlock, EmbeddedResource, MetaObject, Resource, ResourceContents, Tool};
use serde_json::{Value, json};

use crate::kept::Kept;
use crate::tools::{FileItem, FilesResult, WRAPPED_RESULT};

/// The largest file embedded in a local server's tool result (`output` left as `file`);
/// a larger one is kept for `resources/read` and answered as a link.
pub const EMBED_LIMIT: usize = 256 * 1024;

/// Where a result's files may go besides the result itself.
#[derive(Clone, Copy, Default)]
pub struct Delivery<'a> {
    /// The HTTP server's link store, for `output: "url"`.
    pub links: Option<&'a Links>,
    /// A local server's kept results, for large files.
    pub kept: Option<&'a Kept>,
}

/// Where `output: "url"` results are stored and linked from (the HTTP server's own store).
#[derive(Clone, Debug)]
pub struct Links {
    /// The gateway's file-link store.
    pub files: FileStore,
    /// Absolute base URL of the server, without a trailing slash.
    pub base_url: String,
}

/// The tool result of a successful call; `wrap` puts a JSON answer that is not an object
/// under [`WRAPPED_RESULT`].
pub async fn success(reply: Reply<Value>, wrap: bool, delivery: Delivery<'_>) -> Result<CallToolResult, ApiError> {
    match reply {
        Reply::Json(value) => {
            let value = if wrap { json!({ WRAPPED_RESULT: value }) } else { value };
            Ok(CallToolResult::structured(value))
        }
        Reply::Files(set) => files(set, delivery).await,
    }
}

async fn files(set: FileSet, delivery: Delivery<'_>) -> Result<CallToolResult, ApiError> {
    let mut blocks = Vec::with_capacity(set.files.len() + 1);
    let described = match (set.mode, delivery.links, delivery.kept) {
        (OutputMode::Url, Some(links), _) => {
            let stored = links.files.links(&links.base_url, set).await?;
            let report = match stored.as_slice() {
                [one] => one.report.clone(),
                _ => None,
            };
            let mut items = Vec::with_capacity(stored.len());
            for link in stored {
                blocks.push(ContentBlock::resource_link(
                    Resource::new(link.url.clone(), link.filename.clone())
                        .with_mime_type(link.media_type.clone())
                        .with_size(link.bytes)
                        .with_description(format!("Download link, valid until {}", link.expires_at)),
                ));
                items.push(FileItem {
                    filename: link.filename,
                    media_type: link.media_type,
                    bytes: link.bytes,
                    sha256: link.sha256,
                    uri: link.url,
                    expires_at: Some(link.expires_at),
                });
            }
            FilesResult { files: items, report }
        }
        (OutputMode::Url, None, _) => {
            return Err(EngineError::invalid(
                "/output",
                "/output: \"url\" needs the HTTP server (paperchain serve, MCP at /mcp/…); over stdio files \
                 come embedded in the result",
            )
            .into());
        }
        // Several files are several resources: MCP carries them without a ZIP. On a local
        // server a large file the caller did not ask for as base64 is a link, read with
        // resources/read.
        (mode, _, kept) => {
            let report = if set.bundle.is_some() { None } else { set.report };
            let keep = if mode == OutputMode::File { kept } else { None };
            // Base64 and hashing of large files is CPU work: off the async threads.
            let linked = keep.is_some();
            let prepared = blocking(move || {
                Ok(set
                    .files
                    .into_iter()
                    .map(|file| {
                        let sha256 = file.sha256();
                        let embed = !linked || file.bytes.len() <= EMBED_LIMIT;
                        let block = embed.then(|| embedded(&file, &sha256));
                        (file, sha256, block)
                    })
                    .collect::<Vec<_>>())
            })
            .await?;
            let mut items = Vec::with_capacity(prepared.len());
            for (file, sha256, block) in prepared {
                let (filename, media_type, bytes) = (file.filename.clone(), file.media_type.clone(), file.bytes.len());
                let (uri, block) = match (block, keep) {
                    (Some(embedded), _) => embedded,
                    (None, Some(kept)) => {
                        let uri = kept.keep(file);
                        let link = Resource::new(uri.clone(), filename.clone())
                            .with_mime_type(media_type.clone())
                            .with_size(bytes as u64)
                            .with_description("The result, kept for an hour: read it with resources/read");
                        (uri, ContentBlock::resource_link(link))
                    }
                    (None, None) => unreachable!("a file is embedded unless it is kept"),
                };
                blocks.push(block);
                items.push(FileItem { filename, media_type, bytes: bytes as u64, sha256, uri, expires_at: None });
            }
            FilesResult { files: items, report }
        }
    };
    let value = serde_json::to_value(&described)
        .map_err(|e| ApiError::from(EngineError::internal(format!("describing the files: {e}"))))?;
    let mut result = CallToolResult::structured(value);
    result.content.extend(blocks);
    Ok(result)
}

/// A saved result (`save_to`): its JSON, a file:// resource link per file written, and a
/// line saying where each went.
pub fn with_saved_links(mut result: CallToolResult) -> CallToolResult {
    if result.is_error == Some(true) {
        return result;
    }
    let files = result.structured_content.as_ref().and_then(|v| v["files"].as_array()).cloned().unwrap_or_default();
    let mut lines = Vec::with_capacity(files.len());
    for file in files {
        let (Some(uri), Some(name)) = (file["uri"].as_str(), file["filename"].as_str()) else { continue };
        if !uri.starts_with("file://") {
            continue;
        }
        let bytes = file["bytes"].as_u64().unwrap_or_default();
        let mut resource = Resource::new(uri, name).with_size(bytes).with_description("Saved on this machine");
        if let Some(media_type) = file["media_type"].as_str() {
            resource = resource.with_mime_type(media_type);
        }
        result.content.push(ContentBlock::resource_link(resource));
        let path = url::Url::parse(uri).ok().and_then(|u| u.to_file_path().ok());
        let shown = path.map(|p| p.display().to_string()).unwrap_or_else(|| uri.to_string());
        lines.push(format!("Saved {shown} ({bytes} bytes)."));
    }
    if !lines.is_empty() {
        result.content.push(ContentBlock::text(lines.join("\n")));
    }
    result
}

/// The media type of a file by its extension (for files read back from disk).
pub fn media_type_of(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase()).as_deref() {
        Some("pdf") => "application/pdf",
        Some("zip") => "application/zip",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("md") => "text/markdown",
        Some("csv") => "text/csv",
        Some("txt") => "text/plain",
        Some("json") => "application/json",
        Some("html" | "htm") => "text/html",
        Some("ofx") => "application/x-ofx",
        Some("docx") => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        Some("xlsx") => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        Some("pptx") => "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        _ => "application/octet-stream",
    }
}

/// Bytes as standard base64.
pub fn base64(bytes: &[u8]) -> String {
    B64.encode(bytes)
}

/// A failed call as a tool error: `{"error": {"code", "message", "field"}}` as text, the
/// same body the HTTP API answers. An internal error's details are logged, not sent.
pub fn failure(error: ApiError) -> CallToolResult {
    let message = if error.status.is_server_error() && error.status.as_u16() == 500 {
        tracing::error!(code = %error.error.code, message = %error.error.message, "internal error");
        "the operation failed on our side; it has been logged".to_string()
    } else {
        error.error.message.clone()
    };
    let mut body = json!({ "error": { "code": error.error.code, "message": message, "field": error.error.field } });
    if let Some(after) = error.retry_after {
        body["error"]["retry_after_seconds"] = json!(after.as_secs().max(1));
    }
    // Text only: a structured error would have to match the tool's output schema.
    CallToolResult::error(vec![ContentBlock::text(body.to_string())])
}

/// The paywall's PaymentRequired as the x402 MCP transport carries it: a tool error whose
/// `structuredContent` and `content[0].text` are the object. The paywall names the HTTP
/// route; over MCP the resource is the tool: `resource.url` becomes `mcp://tool/<name>` (the
/// transport's and the x402 MCP libraries' convention), and a `bazaar` discovery extension
/// describes the tool (`input.type: "mcp"`) instead of an HTTP POST to a URL it no longer
/// names. Nothing the payment is checked against changes: a PaymentPayload's `resource` is
/// neither signed nor compared, only its `accepted` requirement is.
pub fn payment_required(mut body: Value, tool: &Tool) -> CallToolResult {
    if let Some(resource) = body.get_mut("resource").and_then(Value::as_object_mut) {
        resource.insert("url".into(), json!(format!("mcp://tool/{}", tool.name)));
    }
    if let Some(bazaar) = body.get_mut("extensions").and_then(|e| e.get_mut("bazaar")) {
        *bazaar = mcp_bazaar(tool);
    }
    CallToolResult::structured_error(body)
}

/// The `bazaar` extension of a tool (x402 extensions/bazaar.md, "MCP Tools"): `info` says how
/// it is called, `schema` validates `info`.
fn mcp_bazaar(tool: &Tool) -> Value {
    let mut input = json!({
        "type": "mcp",
        "toolName": tool.name,
        "transport": "streamable-http",
        "inputSchema": tool.input_schema.as_ref(),
    });
    if let Some(title) = &tool.title {
        input["description"] = json!(title);
    }
    json!({
        "info": { "input": input, "output": { "type": "json" } },
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "input": {
                    "type": "object",
                    "properties": {
                        "type": { "type": "string", "const": "mcp" },
                        "toolName": { "type": "string" },
                        "description": { "type": "string" },
                        "transport": { "type": "string", "enum": ["streamable-http", "sse"] },
                        "inputSchema": { "type": "object" },
                        "example": { "type": "object" },
                    },
                    "required": ["type", "toolName", "inputSchema"],
                    "additionalProperties": false,
                },
                "output": {
                    "type": "object",
                    "properties": { "type": { "type": "string" }, "example": { "type": "object" } },
                    "required": ["type"],
                },
            },
            "required": ["input"],
        },
    })
}

/// The hosted service's answer to a routed call as a tool result: its JSON or its file,
/// as a local call would give them, or its error; what was paid in `_meta`.
pub async fn hosted(answer: HostedAnswer, wrap: bool, delivery: Delivery<'_>) -> CallToolResult {
    let mut result = match paperchain_calls::routed::answer_reply(&answer) {
        Ok(reply) => success(reply, wrap, delivery).await.unwrap_or_else(failure),
        Err((_, message)) => {
            let mut result = CallToolResult::error(vec![ContentBlock::text(message)]);
            result.structured_content = serde_json::from_slice(&answer.body).ok().filter(Value::is_object);
            result
        }
    };
    let header = |name: &str| answer.header(name).map(str::to_string);
    let mut meta = result.meta.take().unwrap_or_default();
    meta.0.insert(RAN_META.into(), json!("hosted"));
    if let Some(settlement) = header(PAYMENT_RESPONSE).and_then(|h| x402::decode(&h, "PAYMENT-RESPONSE").ok()) {
        meta.0.insert(MCP_PAYMENT_RESPONSE.into(), settlement);
    }
    if let Some(paid) = &answer.paid {
        meta.0.insert(PAID_META.into(), json!(paid.amount_text()));
    }
    result.meta = Some(meta);
    result
}

/// Tool result `_meta` key: where a routed call ran (`hosted`).
pub const RAN_META: &str = "paperchain/ran";
/// Tool result `_meta` key: what a routed call cost (`0.002 USDC`).
pub const PAID_META: &str = "paperchain/paid";

/// `file` as an embedded resource, and its `paperchain://files/…` URI.
fn embedded(file: &paperchain_engine::OutFile, sha256: &str) -> (String, ContentBlock) {
    let uri = format!("paperchain://files/{sha256}/{}", encode_segment(&file.filename));
    let mut meta = MetaObject::default();
    meta.0.insert("filename".into(), json!(file.filename));
    let resource = ResourceContents::BlobResourceContents {
        uri: uri.clone(),
        mime_type: Some(file.media_type.clone()),
        blob: B64.encode(&file.bytes),
        meta: Some(meta),
    };
    (uri, ContentBlock::Resource(EmbeddedResource::new(resource)))
}

/// A file name as one URI path segment (RFC 3986 unreserved characters kept).
pub fn encode_segment(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use paperchain_engine::OutFile;

    #[test]
    fn file_names_become_safe_segments() {
        assert_eq!(encode_segment("a b/c.pdf"), "a%20b%2Fc.pdf");
        assert_eq!(encode_segment("Über.pdf"), "%C3%9Cber.pdf");
    }

    #[tokio::test]
    async fn files_are_embedded_and_described() {
        let set = FileSet::single(OutFile::pdf("x.pdf", b"%PDF-1.7".to_vec()), OutputMode::File)
            .with_report(json!({"ok": true}));
        let result = success(Reply::Files(set), false, Delivery::default()).await.unwrap();
        let structured = result.structured_content.clone().unwrap();
        assert_eq!(structured["files"][0]["filename"], "x.pdf");
        assert_eq!(structured["report"]["ok"], true);
        assert_eq!(result.content[0].as_text().unwrap().text, structured.to_string());
        let ContentBlock::Resource(embedded) = &result.content[1] else { panic!("an embedded resource") };
        let ResourceContents::BlobResourceContents { blob, mime_type, .. } = &embedded.resource else {
            panic!("a blob")
        };
        assert_eq!(B64.decode(blob).unwrap(), b"%PDF-1.7");
        assert_eq!(mime_type.as_deref(), Some("application/pdf"));
        let set = FileSet::single(OutFile::pdf("x.pdf", b"%PDF".to_vec()), OutputMode::Url);
        let error = success(Reply::Files(set), false, Delivery::default()).await.unwrap_err();
        assert_eq!(error.error.field.as_deref(), Some("/output"));
    }
}
