//! Native libraries the engine loads at run time (libpdfium, libtesseract): loaded once a
//! process, a failure logged once and answered as each route's 503 after that.

use std::sync::OnceLock;

use crate::error::EngineError;

/// The library in `cell`, loaded by `load` on first use; when it cannot be, `what` (“libpdfium
/// could not be loaded; rendering routes answer 503”) is logged once with the reason, and
/// every call answers `unavailable(reason)`.
pub fn load_once<T>(
    cell: &'static OnceLock<Result<T, String>>,
    load: impl FnOnce() -> Result<T, String>,
    what: &'static str,
    unavailable: fn(&str) -> EngineError,
) -> Result<&'static T, EngineError> {
    cell.get_or_init(|| {
        let found = load();
        if let Err(why) = &found {
            tracing::error!(reason = %why, "{what}");
        }
        found
    })
    .as_ref()
    .map_err(|why| unavailable(why))
}

/// Runs `library` (a [`load_once`] getter) off the async threads, where the first load happens.
pub async fn ensure<T: Sync + 'static>(library: fn() -> Result<&'static T, EngineError>) -> Result<(), EngineError> {
    crate::context::blocking(move || library().map(|_| ())).await
}
