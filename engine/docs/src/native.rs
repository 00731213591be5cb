//! Native libraries the engine loads at run time (libpdfium, libtesseract): loaded once a
//! process, a failure logged once and answered as each route's 503 after that.

use std::sync::OnceLock;
use std::time::Duration;

use crate::error::{EngineError, ErrorKind};

/// How long a caller is told to wait after a 503 for a missing library: installing it is
/// an operator's job, so not soon.
const RETRY_AFTER: Duration = Duration::from_secs(3600);

/// The 503 `unavailable` of a route whose library is missing; `message` says which and
/// what the operator does about it.
pub fn unavailable(message: String) -> EngineError {
    EngineError::new(ErrorKind::Unavailable { retry_after: RETRY_AFTER }, "unavailable", message)
}

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
