//! HTTP clients built on first use. Building a client loads and parses the system's root
//! certificates, tens of milliseconds that a command which never goes online (a workbook
//! read, a PDF edit) should not pay at start.

use std::sync::{Arc, OnceLock};

type Build = dyn Fn() -> Result<reqwest::Client, String> + Send + Sync;

/// A reqwest client made by `build` the first time it is asked for; clones share it (and
/// its connection pool).
#[derive(Clone)]
pub struct LazyClient {
    cell: Arc<OnceLock<Result<reqwest::Client, String>>>,
    build: Arc<Build>,
}

impl LazyClient {
    /// A client that `build` makes when first needed; its error is kept and given to every caller.
    pub fn new(build: impl Fn() -> Result<reqwest::Client, String> + Send + Sync + 'static) -> Self {
        LazyClient { cell: Arc::new(OnceLock::new()), build: Arc::new(build) }
    }

    /// The client, built now if it was not yet.
    pub fn get(&self) -> Result<&reqwest::Client, String> {
        self.cell.get_or_init(|| (self.build)()).as_ref().map_err(Clone::clone)
    }
}

impl std::fmt::Debug for LazyClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyClient").field("built", &self.cell.get().is_some()).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn built_once_on_first_use_and_shared_by_clones() {
        let builds = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&builds);
        let client = LazyClient::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            reqwest::Client::builder().build().map_err(|e| e.to_string())
        });
        let clone = client.clone();
        assert_eq!(builds.load(Ordering::SeqCst), 0, "nothing is built before it is needed");
        assert!(client.get().is_ok() && clone.get().is_ok());
        assert_eq!(builds.load(Ordering::SeqCst), 1);
        let failing = LazyClient::new(|| Err("no TLS roots".into()));
        assert_eq!(failing.get().unwrap_err(), "no TLS roots");
    }
}
