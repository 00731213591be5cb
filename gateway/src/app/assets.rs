//! The built front end, embedded at compile time (see `gateway/build.rs`).

use axum::extract::Path;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

include!(concat!(env!("OUT_DIR"), "/ui_assets.rs"));

/// The bytes of `name` (a path under `ui/dist`), when it was built in.
pub fn find(name: &str) -> Option<&'static [u8]> {
    ASSETS.binary_search_by(|(n, _)| (*n).cmp(name)).ok().map(|i| ASSETS[i].1)
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("woff2") => "font/woff2",
        Some("json" | "map") => "application/json",
        Some("html") => "text/html; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// `/app/assets/{path}`: a file of the build. Their names carry a hash of their content,
/// so they are kept for a year.
pub async fn asset(Path(path): Path<String>) -> Response {
    let name = format!("assets/{path}");
    let Some(bytes) = find(&name) else {
        return ApiError::not_found(format!("no file /app/{name} in the app")).into_response();
    };
    let mut response = bytes.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type(&name)));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=31536000, immutable"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}
