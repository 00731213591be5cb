//! What every operation may use: the URL fetcher, the limits, a progress sink.

use std::sync::Arc;

use crate::error::EngineError;
use crate::fetch::{AddressPolicy, FetchLimits, SafeFetcher};

/// Fixed input limits (route book §6).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest decoded file, in bytes.
    pub max_file_bytes: u64,
    /// Most pages a PDF may have.
    pub max_pages: u32,
    /// Largest size any one PDF stream may decompress to while loading.
    pub max_stream_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_file_bytes: 50 * 1024 * 1024, max_pages: 5_000, max_stream_bytes: 128 * 1024 * 1024 }
    }
}

/// Receives progress of long operations (the CLI shows a bar; servers ignore it).
pub trait Progress: Send + Sync {
    /// `done` of `total` units of `what` are finished.
    fn advance(&self, what: &str, done: u64, total: u64);
}

/// A progress sink that discards the reports.
pub struct NoProgress;

impl Progress for NoProgress {
    fn advance(&self, _what: &str, _done: u64, _total: u64) {}
}

/// Shared, cheap to clone.
#[derive(Clone)]
pub struct Context {
    /// Fetches URL inputs from public addresses only.
    pub fetcher: SafeFetcher,
    /// The EVM chains and their RPC clients (`PAPERCHAIN_CHAINS`, URLs from `PAPERCHAIN_RPC_<CHAIN>` or defaults).
    pub chains: Arc<crate::evm::Chains>,
    /// Input limits.
    pub limits: Limits,
    /// Progress sink.
    pub progress: Arc<dyn Progress>,
    /// The perpetual-funding upstream's client and its 60 s cache.
    pub funding: Arc<crate::chain::funding::FundingClient>,
    /// The address check's 10-minute result cache.
    pub address_checks: Arc<crate::chain::address_check::AddressCheckCache>,
}

impl Context {
    /// The production context: public-only fetching, standard limits, no progress.
    pub fn new() -> Context {
        Context::with_policy(AddressPolicy::public_only())
    }

    /// The production context, or the configuration error that [`Context::new`] would only
    /// log (a malformed `PAPERCHAIN_CHAINS`, an added chain without RPC URLs): what servers
    /// and the CLI start with, refusing to run on a configuration they would not follow.
    pub fn try_new() -> Result<Context, crate::evm::ConfigError> {
        let chains = Arc::new(crate::evm::Chains::try_from_env()?);
        Ok(Context { chains, ..Context::new() })
    }

    /// A context whose fetcher follows `policy` (tests allow loopback servers this way).
    pub fn with_policy(policy: AddressPolicy) -> Context {
        Context {
            fetcher: SafeFetcher::new(FetchLimits::default(), policy),
            chains: Arc::new(crate::evm::Chains::from_env()),
            limits: Limits::default(),
            progress: Arc::new(NoProgress),
            funding: Arc::new(crate::chain::funding::FundingClient::from_env()),
            address_checks: Arc::default(),
        }
    }

    /// The same context reporting progress to `progress`.
    pub fn with_progress(mut self, progress: Arc<dyn Progress>) -> Context {
        self.progress = progress;
        self
    }
}

impl Default for Context {
    fn default() -> Self {
        Context::new()
    }
}

/// Runs CPU-bound work off the async threads; a panic becomes an internal error
/// instead of taking the server down.
pub async fn blocking<T, F>(work: F) -> Result<T, EngineError>
where
    F: FnOnce() -> Result<T, EngineError> + Send + 'static,
    T: Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(join) => {
            tracing::error!(error = %join, "an operation panicked");
            Err(EngineError::internal("the operation failed unexpectedly"))
        }
    }
}
