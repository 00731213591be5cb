//! The one-time page of one payment waiting for the user's approval, which an agent's
//! client opens for the user (MCP URL-mode elicitation): who asks, for which operation, to
//! which service and how much, with Approve and Deny.
//!
//! `GET /app/approve/<id>?token=…` shows it and `POST` answers it, for that approval only
//! (its one-time token), while it waits; only from this machine (a loopback peer), never
//! inside another page's frame, and a form from another site is refused. Deny, a wrong
//! token or the wait running out signs nothing. Everything shown that comes from a caller
//! (the client's name, the route) is escaped.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Form, Path, Query};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::get;
use axum::{Extension, Router};
use paperchain_engine::xml::escape;
use paperchain_wallet::approvals::{ApprovalQueue, Waiting};
use serde::Deserialize;

/// Where the page of approval `id` is, under the server's base URL.
pub fn page_path(id: u64, token: &str) -> String {
    format!("/app/approve/{id}?token={token}")
}

/// The page's routes; without a queue (no wallet, hosted mode) every page is gone.
pub fn router(queue: Option<Arc<ApprovalQueue>>) -> Router {
    Router::new().route("/app/approve/{id}", get(show).post(answer)).layer(Extension(Queue(queue)))
}

#[derive(Clone)]
struct Queue(Option<Arc<ApprovalQueue>>);

#[derive(Deserialize)]
struct TokenQuery {
    #[serde(default)]
    token: String,
}

#[derive(Deserialize)]
struct Decision {
    #[serde(default)]
    token: String,
    #[serde(default)]
    decision: String,
}

const PAGE_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; \
     frame-ancestors 'none'; base-uri 'none'";

async fn show(
    Extension(Queue(queue)): Extension<Queue>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<u64>,
    Query(query): Query<TokenQuery>,
) -> Response {
    if !peer.ip().is_loopback() {
        return page(StatusCode::FORBIDDEN, "Not here", "<p>This page opens on the computer that runs Paperchain.</p>");
    }
    match queue.as_ref().and_then(|q| q.with_token(id, &query.token)) {
        Some(waiting) => page(StatusCode::OK, "Approve a payment?", &form(id, &query.token, &waiting)),
        None => gone(),
    }
}

async fn answer(
    Extension(Queue(queue)): Extension<Queue>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Path(id): Path<u64>,
    Form(decision): Form<Decision>,
) -> Response {
    let cross_site = headers.get("sec-fetch-site").is_some_and(|v| v.as_bytes() == b"cross-site");
    if !peer.ip().is_loopback() || cross_site {
        return page(
            StatusCode::FORBIDDEN,
            "Not here",
            "<p>Answer on the page Paperchain opened, on this computer.</p>",
        );
    }
    let approve = match decision.decision.as_str() {
        "approve" => true,
        "deny" => false,
        _ => return page(StatusCode::UNPROCESSABLE_ENTITY, "Approve or deny", "<p>Choose Approve or Deny.</p>"),
    };
    let Some(queue) = queue else { return gone() };
    let Some(waiting) = queue.with_token(id, &decision.token) else { return gone() };
    if !queue.answer_with_token(id, &decision.token, approve) {
        return gone();
    }
    let body = match approve {
        true => format!("<p>Approved: {} will be paid. You can close this page.</p>", escape(&waiting.description)),
        false => "<p>Denied: nothing is paid. You can close this page.</p>".to_string(),
    };
    page(StatusCode::OK, if approve { "Approved" } else { "Denied" }, &body)
}

fn gone() -> Response {
    page(
        StatusCode::NOT_FOUND,
        "Nothing to approve",
        "<p>This approval is not waiting any more: it was answered, its wait ran out, or the link is not \
         the one Paperchain gave. Nothing is paid from this page now.</p>",
    )
}

fn form(id: u64, token: &str, waiting: &Waiting) -> String {
    let client = waiting.client.as_deref().unwrap_or("A caller");
    format!(
        "<p><strong>{client}</strong> (through {door}) asks Paperchain to pay for one call on the hosted service.</p>\
         <table>\
         <tr><th>Operation</th><td>{route}</td></tr>\
         <tr><th>Service</th><td>{host}</td></tr>\
         <tr><th>Amount</th><td>${dollars}</td></tr>\
         <tr><th>Payment</th><td>{description}</td></tr>\
         </table>\
         <form method=\"post\" action=\"/app/approve/{id}\">\
         <input type=\"hidden\" name=\"token\" value=\"{token}\">\
         <button type=\"submit\" name=\"decision\" value=\"approve\" class=\"approve\">Approve</button> \
         <button type=\"submit\" name=\"decision\" value=\"deny\">Deny</button>\
         </form>\
         <p class=\"note\">Nothing is paid unless you approve. Your spend limits still apply.</p>",
        client = escape(client),
        door = escape(&waiting.front_door),
        route = escape(&waiting.route),
        host = escape(&waiting.host),
        dollars = escape(&waiting.dollars),
        description = escape(&waiting.description),
        token = escape(token),
    )
}

fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>Paperchain: {title}</title>\
         <style>body{{font:16px system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem}}\
         th{{text-align:left;padding-right:1rem}}td,th{{padding:.3rem 0}}button{{font-size:1rem;padding:.5rem 1.2rem}}\
         .approve{{background:#1f5bd6;color:#fff;border:0;border-radius:4px}}.note{{color:#555}}</style></head>\
         <body><h1>{title}</h1>{body}</body></html>"
    );
    super::html_page(status, html, PAGE_POLICY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_caller_names_is_escaped() {
        assert_eq!(escape("<script>\"x\"&'"), "&lt;script&gt;&quot;x&quot;&amp;&apos;");
        let waiting = Waiting {
            id: 1,
            route: "rotate<b>".into(),
            host: "api.example".into(),
            client: Some("<img src=x onerror=alert(1)>".into()),
            front_door: "mcp".into(),
            description: "0.25 USDC".into(),
            dollars: "0.25".into(),
            asked_at_ms: 0,
        };
        let html = form(1, "abc", &waiting);
        assert!(!html.contains("<img") && !html.contains("rotate<b>"), "{html}");
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"));
    }
}
