//! `/app/api`: what the app shows beside the routes: this server's session and the ledger.
//! Behind the session token (see the module above).

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use paperchain_wallet::approvals::ApprovalQueue;
use paperchain_wallet::client::PayingClient;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Session;
use crate::error::ApiError;
use crate::server::Mount;

/// What the app's API reads.
#[derive(Clone)]
pub struct AppApi {
    base_url: String,
    client: Option<Arc<PayingClient>>,
    approvals: Option<Arc<ApprovalQueue>>,
    _session: Arc<Session>,
}

impl AppApi {
    pub fn new(api: &Mount<'_>, session: Arc<Session>) -> AppApi {
        AppApi {
            base_url: api.base_url.to_string(),
            client: api.client.cloned(),
            approvals: api.approvals.cloned(),
            _session: session,
        }
    }
}

pub fn router(state: AppApi) -> Router {
    Router::new()
        .route("/session", get(session))
        .route("/ledger", get(ledger))
        .route("/approvals", get(approvals))
        .route("/approvals/{id}", post(answer))
        .with_state(state)
}

/// The payments waiting for the user.
async fn approvals(State(app): State<AppApi>) -> Json<Value> {
    let waiting = app.approvals.as_ref().map(|q| q.waiting()).unwrap_or_default();
    Json(json!({ "waiting": waiting, "asks": app.approvals.is_some() }))
}

/// The user's answer to one.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    approve: bool,
}

async fn answer(
    State(app): State<AppApi>,
    Path(id): Path<u64>,
    body: Result<Json<Answer>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(body) =
        body.map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_input", e.body_text()))?;
    let queue = app.approvals.as_ref().ok_or_else(|| ApiError::not_found("this server asks for no approvals"))?;
    if !queue.answer(id, body.approve) {
        return Err(ApiError::not_found(format!("no payment {id} waits for an answer (answered, or given up)")));
    }
    Ok(Json(json!({ "id": id, "approved": body.approve })))
}

/// The server the page talks to: version, endpoints, whether calls are recorded.
async fn session(State(app): State<AppApi>) -> Json<Value> {
    let base = &app.base_url;
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "base_url": base,
        "openapi": format!("{base}/openapi.json"),
        "mcp": {
            "all": format!("{base}/mcp"),
            "chain": format!("{base}/mcp/chain"),
            "docs": format!("{base}/mcp/docs"),
        },
        "ledger": app.client.is_some(),
        // What an agent's configuration runs for `paperchain mcp --stdio`.
        "executable": std::env::current_exe().ok().map(|p| p.display().to_string()),
    }))
}

/// Which rows of the ledger.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LedgerQuery {
    /// Unix milliseconds; rows at or after it. The last 30 days when omitted.
    since_ms: Option<i64>,
    /// Only this operation.
    route: Option<String>,
    /// Only this client.
    client: Option<String>,
    /// `local` or `hosted`.
    ran: Option<String>,
    /// Only calls that paid something.
    paid: Option<bool>,
}

/// The ledger's rows, newest first, filtered.
async fn ledger(
    State(app): State<AppApi>,
    query: Result<Query<LedgerQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(query) =
        query.map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_input", e.body_text()))?;
    let Some(client) = &app.client else {
        return Ok(Json(json!({ "rows": [], "recorded": false })));
    };
    let since = query.since_ms.unwrap_or_else(|| paperchain_wallet::ledger::now_ms() - 30 * 86_400_000);
    let rows = client
        .ledger()
        .rows(since)
        .await
        .map_err(|e| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "ledger_unavailable", e.to_string()))?;
    let rows: Vec<_> = rows
        .into_iter()
        .rev()
        .filter(|r| query.route.as_ref().is_none_or(|route| &r.route == route))
        .filter(|r| query.client.as_ref().is_none_or(|c| r.client.as_ref() == Some(c)))
        .filter(|r| query.ran.as_ref().is_none_or(|ran| &r.ran == ran))
        .filter(|r| query.paid.is_none_or(|paid| (r.micros > 0) == paid))
        .collect();
    Ok(Json(json!({ "rows": rows, "recorded": true })))
}
