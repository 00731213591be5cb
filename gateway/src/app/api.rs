//! `/app/api`: what the app shows beside the routes: this server's session, the ledger,
//! payments waiting for approval, the wallet's balances, and the settings (the service,
//! routing, caps and budgets), which only the user changes: here, with the CLI or in the
//! file; never through the route API or MCP. Behind the session token (see the module
//! above).

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use paperchain_wallet::approvals::ApprovalQueue;
use paperchain_wallet::client::PayingClient;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::server::Mount;

/// What the app's API reads.
#[derive(Clone)]
pub struct AppApi {
    base_url: String,
    client: Option<Arc<PayingClient>>,
    approvals: Option<Arc<ApprovalQueue>>,
    chains: Arc<paperchain_engine::evm::Chains>,
    data_dir: std::path::PathBuf,
    pub(super) desktop: Option<Arc<dyn super::Desktop>>,
}

impl AppApi {
    pub fn new(api: &Mount<'_>) -> AppApi {
        AppApi {
            base_url: api.base_url.to_string(),
            client: api.calls.client().cloned(),
            approvals: api.approvals.cloned(),
            chains: api.calls.ctx().chains.clone(),
            data_dir: api.data_dir.to_path_buf(),
            desktop: api.desktop.cloned(),
        }
    }
}

pub fn router(state: AppApi) -> Router {
    Router::new()
        .route("/session", get(session))
        .route("/ledger", get(ledger))
        .route("/approvals", get(approvals))
        .route("/approvals/{id}", post(answer))
        .route("/wallet", get(wallet))
        .route("/settings", get(settings).post(change_setting))
        .route("/settings/confirm", post(confirm_settings))
        .route("/settings/discard", post(discard_settings))
        .route("/agents/claude-desktop", get(claude_desktop).post(add_to_claude_desktop))
        .route("/desktop", get(super::desktop::settings).post(super::desktop::change))
        .route(
            "/desktop/save",
            post(super::desktop::save).layer(axum::extract::DefaultBodyLimit::max(super::desktop::SAVE_LIMIT)),
        )
        .with_state(state)
}

fn no_client() -> ApiError {
    ApiError::not_found("this server runs without the paying client (no wallet, no ledger)")
}

/// The wallet's address and what it holds on each network it pays on.
async fn wallet(State(app): State<AppApi>) -> Result<Json<Value>, ApiError> {
    let client = app.client.as_ref().ok_or_else(no_client)?;
    let keys = paperchain_wallet::keys::KeyConfig::from_env(&app.data_dir);
    let status = tokio::task::spawn_blocking(move || paperchain_wallet::keys::status(&keys))
        .await
        .map_err(|_| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "reading the wallet failed"))?;
    let Some(address) = status.address else {
        return Ok(Json(json!({ "address": null, "balances": [], "store": status.store })));
    };
    let config = client.config();
    let balances = paperchain_wallet::chain::wallet_balances(&config, &app.chains, address).await;
    Ok(Json(json!({ "address": address.to_checksum(None), "balances": balances, "store": status.store })))
}

/// The settings the app edits, as the client follows them now.
async fn settings(State(app): State<AppApi>) -> Result<Json<Value>, ApiError> {
    let client = app.client.as_ref().ok_or_else(no_client)?;
    // One reading of the file: the settings shown and whether they are the file's.
    let (config, problem) = client.config_now();
    let dollars =
        |d: Option<paperchain_wallet::money::Dollars>| d.map(|d| d.to_string().trim_start_matches('$').to_string());
    let map = |m: &std::collections::BTreeMap<String, paperchain_wallet::money::Dollars>| {
        m.iter()
            .map(|(k, v)| (k.clone(), json!(v.to_string().trim_start_matches('$'))))
            .collect::<serde_json::Map<_, _>>()
    };
    let routes: serde_json::Map<_, _> = config.routes.iter().map(|(k, v)| (k.clone(), json!(v.as_str()))).collect();
    let waiting = client.unconfirmed();
    let keys = paperchain_wallet::keys::KeyConfig::from_env(&app.data_dir);
    let store = match &waiting {
        Some(_) => {
            tokio::task::spawn_blocking(move || paperchain_wallet::keys::status(&keys).store).await.ok().flatten()
        }
        None => None,
    };
    Ok(Json(json!({
        "file": paperchain_wallet::config::config_file(),
        // The file as it is now does not parse: what is shown is the last valid one.
        "problem": problem,
        // What the file loosens beyond what the owner confirmed: the settings shown are
        // those followed meanwhile (the tighter of the two); confirming asks for the
        // wallet's password, or the system's authentication for a keyring wallet.
        "unconfirmed": waiting.map(|w| json!({
            "changes": w.changes,
            "reason": w.reason,
            "confirm_with": match store {
                Some(paperchain_wallet::keys::Store::Keystore { .. }) => "password",
                Some(paperchain_wallet::keys::Store::Keyring { .. }) => "system",
                None => "nothing",
            },
        })),
        "service_url": config.service_url,
        "routing": { "default": config.default_route.as_str(), "routes": routes },
        "files": { "folders": config.folders },
        "policy": {
            "per_call": dollars(config.policy.per_call),
            "per_day": dollars(config.policy.per_day),
            "per_session": dollars(config.policy.per_session),
            "approve_above": dollars(config.policy.approve_above),
            "networks": map(&config.policy.networks),
            "clients": map(&config.policy.clients),
        },
    })))
}

/// One setting changed by the user.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingChange {
    /// `policy.per_day`, `routing.routes.rotate_pdf_pages`, `policy.networks."eip155:8453"`…
    key: String,
    /// The new value; `null` removes the key.
    #[serde(default)]
    value: Option<String>,
    /// A value to add to a list (`files.folders`).
    #[serde(default)]
    add: Option<String>,
    /// A value to take out of a list.
    #[serde(default)]
    remove: Option<String>,
}

/// The keys the app may change: the service, routing, caps and budgets.
fn editable(key: &str) -> Result<(), String> {
    let parts = paperchain_wallet::config_edit::key_path(key).map_err(|e| e.0)?;
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    match parts.as_slice() {
        ["service", "url"] | ["routing", "default"] => Ok(()),
        ["policy", "per_call" | "per_day" | "per_session" | "approve_above"] => Ok(()),
        ["routing", "routes", _] | ["policy", "networks" | "clients", _] => Ok(()),
        ["files", "folders"] => Ok(()),
        _ => Err(format!(
            "`{key}` is not a setting the app changes (service.url, routing.default, routing.routes.<route>, \
             policy.per_call, per_day, per_session, approve_above, policy.networks.<network>, policy.clients.<client>, \
             files.folders); edit the file for the rest"
        )),
    }
}

async fn change_setting(
    State(app): State<AppApi>,
    body: Result<Json<SettingChange>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let invalid = |field: &str, message: String| {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_input", message).with_field(field)
    };
    let Json(change) =
        body.map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_input", e.body_text()))?;
    let client = app.client.as_ref().ok_or_else(no_client)?;
    editable(&change.key).map_err(|e| invalid("/key", e))?;
    let list = change.key == "files.folders";
    let field = match (&change.add, &change.remove) {
        (Some(_), _) => "/add",
        (None, Some(_)) => "/remove",
        (None, None) => "/value",
    };
    let edit = match (change.value, change.add, change.remove) {
        (None, Some(value), None) if list => paperchain_wallet::config_edit::Change::Add(value),
        (None, None, Some(value)) if list => paperchain_wallet::config_edit::Change::Remove(value),
        (_, _, _) if list => {
            return Err(invalid("/add", "files.folders is a list: give one of `add` and `remove`, a folder".into()));
        }
        (value, None, None) => match value {
            Some(value) => paperchain_wallet::config_edit::Change::Set(value),
            None => paperchain_wallet::config_edit::Change::Unset,
        },
        _ => return Err(invalid("/add", format!("`{}` is not a list: give `value`", change.key))),
    };
    let file = paperchain_wallet::config::config_file();
    let (key, edited) = (change.key.clone(), file.clone());
    tokio::task::spawn_blocking(move || paperchain_wallet::config_edit::edit_file(&edited, &key, &edit))
        .await
        .map_err(|_| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "changing the settings failed"))?
        .map_err(|e| invalid(field, e.0))?;
    // Calls made from now on follow the new file.
    client.reload().map_err(|e| ApiError::new(StatusCode::CONFLICT, "config_not_applied", e.0))?;
    settings(State(app)).await
}

/// The owner's confirmation of what the file loosens.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Confirmation {
    /// The changes as the page showed them: confirmed only if they are still what waits.
    changes: Vec<String>,
    /// The wallet's password, for a wallet kept in a keystore file.
    #[serde(default)]
    password: Option<String>,
}

/// Confirms the changes shown, once the owner is checked (the wallet's password, or the
/// system's authentication): from the next call every process follows the file whole.
async fn confirm_settings(
    State(app): State<AppApi>,
    body: Result<Json<Confirmation>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(body) =
        body.map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_input", e.body_text()))?;
    let client = app.client.as_ref().ok_or_else(no_client)?.clone();
    let Some(waiting) = client.unconfirmed() else {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "nothing_to_confirm",
            "the settings file loosens nothing you confirmed",
        ));
    };
    if waiting.changes != body.changes {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "changed_since_shown",
            "the settings file changed since these changes were shown; look at them again",
        )
        .with_field("/changes"));
    }
    let keys = paperchain_wallet::keys::KeyConfig::from_env(&app.data_dir);
    let password = body.password.map(zeroize::Zeroizing::new);
    tokio::task::spawn_blocking(move || {
        let checked = paperchain_wallet::owner::check_owner(&keys, password)
            .map_err(|e| ApiError::new(StatusCode::FORBIDDEN, "not_confirmed", e).with_field("/password"))?;
        client.confirm(&waiting).map_err(|e| ApiError::new(StatusCode::CONFLICT, "config_not_applied", e.0))?;
        tracing::info!(how = checked, "the owner confirmed the settings file's changes");
        Ok::<_, ApiError>(())
    })
    .await
    .map_err(|_| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "confirming failed"))??;
    settings(State(app)).await
}

/// Puts the settings file back as the owner last confirmed it (loosens nothing: no check).
async fn discard_settings(State(app): State<AppApi>) -> Result<Json<Value>, ApiError> {
    let client = app.client.as_ref().ok_or_else(no_client)?.clone();
    tokio::task::spawn_blocking(move || client.discard())
        .await
        .map_err(|_| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "discarding failed"))?
        .map_err(|e| ApiError::new(StatusCode::CONFLICT, "nothing_to_discard", e.0))?;
    settings(State(app)).await
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
        // In the desktop app: results are saved through its dialog.
        "desktop": app.desktop.is_some(),
        // What an agent's configuration runs for `paperchain mcp --stdio`.
        "executable": super::agents::command_line_tool().display().to_string(),
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

fn claude_config_file() -> Result<std::path::PathBuf, ApiError> {
    super::agents::claude_config_file()
        .ok_or_else(|| ApiError::not_found("no home folder: Claude Desktop's configuration cannot be found"))
}

/// Whether Claude Desktop runs Paperchain's tools, and the entry that makes it.
async fn claude_desktop() -> Result<Json<Value>, ApiError> {
    let file = claude_config_file()?;
    let executable = super::agents::command_line_tool();
    Ok(Json(json!({
        "file": file,
        "installed": super::agents::installed(&file),
        "entry": super::agents::entry(&executable),
    })))
}

/// Adds the entry to Claude Desktop's configuration.
async fn add_to_claude_desktop() -> Result<Json<Value>, ApiError> {
    let file = claude_config_file()?;
    let executable = super::agents::command_line_tool();
    let target = file.clone();
    tokio::task::spawn_blocking(move || super::agents::install(&target, &executable))
        .await
        .map_err(|_| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "writing the file failed"))?
        .map_err(|e| ApiError::new(StatusCode::CONFLICT, "not_changed", e))?;
    claude_desktop().await
}
