//! What only the desktop app can do for its page, asked through `/app/api/desktop`: save a
//! result where the user picks in the system's own dialog, and start the app at login.
//! A server started by `paperchain serve` has no desktop: these answer 404 there, and the
//! page saves through the browser instead.
//!
//! Must not: know the windowing toolkit. The app (src-tauri) implements [`Desktop`].

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Value, json};

use super::api::AppApi;
use crate::error::ApiError;

/// A future the desktop hands back.
pub type DesktopFuture<T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send>>;

/// The desktop app's side of its page.
pub trait Desktop: Send + Sync + 'static {
    /// Asks the user where to save `name` (the system's save dialog, `name` proposed) and
    /// writes `bytes` there whole (never a half-written file); the path, or `None` when the
    /// user cancelled.
    fn save(&self, name: String, bytes: Bytes) -> DesktopFuture<Option<PathBuf>>;
    /// Whether the app starts when the user logs in.
    fn starts_at_login(&self) -> Result<bool, String>;
    /// Makes the app start at login, or not.
    fn set_start_at_login(&self, on: bool) -> Result<(), String>;
}

/// Largest result the page hands over to be saved.
pub const SAVE_LIMIT: usize = 1024 * 1024 * 1024;

fn no_desktop() -> ApiError {
    ApiError::not_found(
        "this server runs without the desktop app: the browser saves files, and starts nothing at login",
    )
}

fn invalid(field: &str, message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_input", message.into()).with_field(field)
}

fn internal(message: String) -> ApiError {
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "desktop_failed", message)
}

/// The desktop's settings.
pub async fn settings(State(app): State<AppApi>) -> Result<Json<Value>, ApiError> {
    let desktop = app.desktop.clone().ok_or_else(no_desktop)?;
    let on = tokio::task::spawn_blocking(move || desktop.starts_at_login())
        .await
        .map_err(|_| internal("reading the login items failed".into()))?
        .map_err(internal)?;
    Ok(Json(json!({ "start_at_login": on })))
}

/// A change of the desktop's settings.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Change {
    start_at_login: bool,
}

pub async fn change(
    State(app): State<AppApi>,
    body: Result<Json<Change>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(change) =
        body.map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_input", e.body_text()))?;
    let desktop = app.desktop.clone().ok_or_else(no_desktop)?;
    tokio::task::spawn_blocking(move || desktop.set_start_at_login(change.start_at_login))
        .await
        .map_err(|_| internal("changing the login items failed".into()))?
        .map_err(internal)?;
    settings(State(app)).await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaveQuery {
    /// The file name the dialog proposes.
    name: String,
}

/// The name proposed in the dialog: a plain file name, no folder in it.
fn file_name(name: &str) -> Result<&str, ApiError> {
    let plain = !name.is_empty()
        && name.len() <= 255
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0'])
        && !name.chars().any(char::is_control);
    if plain {
        Ok(name)
    } else {
        Err(invalid("/name", "`name` must be a plain file name (no folder, at most 255 bytes)"))
    }
}

/// Saves the body where the user picks.
pub async fn save(
    State(app): State<AppApi>,
    query: Result<Query<SaveQuery>, axum::extract::rejection::QueryRejection>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let Query(query) = query.map_err(|e| invalid("/name", e.body_text()))?;
    let name = file_name(&query.name)?.to_string();
    let desktop = app.desktop.clone().ok_or_else(no_desktop)?;
    let saved = desktop.save(name, body).await.map_err(internal)?;
    Ok(Json(json!({ "saved": saved })))
}

#[cfg(test)]
mod tests {
    use super::file_name;

    #[test]
    fn a_proposed_name_is_a_plain_file_name() {
        assert!(file_name("rotated.pdf").is_ok());
        assert!(file_name("Relevé de compte.pdf").is_ok());
        for bad in ["", ".", "..", "../x.pdf", "a/b.pdf", "a\\b.pdf", "a\nb", &"x".repeat(256)] {
            let error = file_name(bad).unwrap_err();
            assert_eq!(error.error.field.as_deref(), Some("/name"), "{bad:?}");
        }
    }
}
