//! The app's web front end at `/app` (the same UI the desktop app shows), and its own API
//! at `/app/api`, on the local server only.
//!
//! Who may drive it: the page at `/app/` carries a token made when the server starts; every
//! request to `/app/api` must send it back (`X-Paperchain-Token`). Another web page open in
//! the same browser cannot read that page (no CORS here), so it cannot learn the token; the
//! Host check in front stops DNS rebinding, and the page may not be framed. The route API
//! under `/v1` takes JSON bodies only, which a page of another origin cannot send here
//! without a preflight this server never grants.
//!
//! Must not: hold any route logic. The UI builds its forms from `/openapi.json` and runs
//! routes through `/v1` like any client.

mod agents;
mod api;
pub mod approve;
mod assets;
mod desktop;

pub use desktop::{Desktop, DesktopFuture};

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use sha2::{Digest as _, Sha256};

use crate::error::ApiError;
use crate::server::Mount;

/// The header that carries the session token.
pub const TOKEN_HEADER: &str = "x-paperchain-token";

/// What the page's HTML has in place of the token.
const TOKEN_PLACEHOLDER: &str = "__PAPERCHAIN_TOKEN__";

/// The page's rules: its own scripts and styles only, nothing framed or framing it.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' blob: data:; connect-src 'self'; font-src 'self'; frame-src blob:; object-src 'none'; \
     base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The client name the ledger gives the app's own calls.
pub const CLIENT_NAME: &str = "Paperchain app";

/// One server run's session: the token the page must send back.
pub struct Session {
    token: String,
}

impl Session {
    /// A new session with a fresh random token.
    pub fn new() -> Session {
        Session { token: hex::encode(rand::random::<[u8; 32]>()) }
    }

    /// Whether `offered` is the token (compared in constant time, through digests).
    fn accepts(&self, offered: &[u8]) -> bool {
        Sha256::digest(offered) == Sha256::digest(self.token.as_bytes())
    }

    /// Whether a request carries the token (it comes from the app's page).
    pub fn sent_by(&self, headers: &axum::http::HeaderMap) -> bool {
        headers.get(TOKEN_HEADER).is_some_and(|t| self.accepts(t.as_bytes()))
    }
}

impl Default for Session {
    fn default() -> Session {
        Session::new()
    }
}

/// `/app` and `/app/api` beside the local server's API: what `HttpServer::mount` takes.
pub fn mount(api: &Mount<'_>) -> Router {
    let session = api.app_session.clone();
    let state = api::AppApi::new(api);
    let api_routes = api::router(state).layer(axum::middleware::from_fn_with_state(session.clone(), require_token));
    Router::new()
        .route("/app", get(|| async { Redirect::permanent("/app/") }))
        .route("/app/", get(page).with_state(session))
        .route("/app/assets/{*path}", get(assets::asset))
        .nest("/app/api", api_routes)
        .merge(approve::router(api.approvals.cloned()))
}

/// The page, with this run's token in it.
async fn page(State(session): State<Arc<Session>>) -> Response {
    let Some(html) = assets::find("index.html") else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "The app's front end is not built into this program. Build it with `cargo xtask setup` \
             (it runs `npm ci` and `npm run build` in ui/), then build Paperchain again.\n",
        )
            .into_response();
    };
    let html = String::from_utf8_lossy(html).replace(TOKEN_PLACEHOLDER, &session.token);
    html_page(StatusCode::OK, html, CONTENT_SECURITY_POLICY)
}

/// An HTML page of the app with `policy` as its content security policy: never framed,
/// cached, sniffed or named in a referrer.
pub(crate) fn html_page(status: StatusCode, html: String, policy: &'static str) -> Response {
    let mut response = (status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(policy));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// Lets through requests that carry the token and do not come from another site.
async fn require_token(State(session): State<Arc<Session>>, request: Request, next: Next) -> Response {
    let cross_site = request.headers().get("sec-fetch-site").is_some_and(|v| v.as_bytes() == b"cross-site");
    if cross_site || !session.sent_by(request.headers()) {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "the app's API answers the app's own page only: send the session token of the page at /app/ \
             in the X-Paperchain-Token header",
        )
        .into_response();
    }
    next.run(request).await
}
