//! What every operation may use: the URL fetcher, the chains, the limits, a progress sink,
//! and the state routes keep between calls.
//!
//! A [`Context`] is cheap to clone, and its clones share everything: the fetcher (public
//! addresses only), the configured EVM chains and Solana clusters, the [`Limits`] (a file
//! of 50 MiB, 5,000 pages, 128 MiB for one PDF stream decompressed while loading), the
//! heavy-work gate, and the [`RouteState`] where a route keeps what outlives a call (an
//! upstream client, a cache), one value per type, made on first use; tests preset it
//! with [`RouteState::insert`]. So every front door of one server shares one gate and one
//! set of caches. The context names no route.
//!
//! CPU work runs off the async threads through [`blocking`], where a panic becomes an
//! internal error (500) instead of taking the server down. The thread works as part of
//! its call ([`crate::cancel`]): it sees the call's stop signal (long work checks it
//! between steps), and the call's place at the heavy-work gate is kept until it returns.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::error::EngineError;
use crate::fetch::{AddressPolicy, FetchLimits, SafeFetcher};

/// Fixed input limits (`../shared/spec/routebook.md` §6).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest decoded file, in bytes.
    pub max_file_bytes: u64,
    /// Most pages a PDF may have.
    pub max_pages: u32,
    /// Largest size any one PDF stream may decompress to while loading.
    pub max_stream_bytes: usize,
    /// Most bytes all streams of one PDF may decode to together, checked before pdfium or
    /// qpdf is given the file (a small file of many small bombs).
    pub max_decoded_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: 50 * 1024 * 1024,
            max_pages: 5_000,
            max_stream_bytes: 128 * 1024 * 1024,
            max_decoded_bytes: 1024 * 1024 * 1024,
        }
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

/// What routes keep between calls (an upstream client, a cache): one value per type, made
/// by the route that uses it on first use and shared by every clone of the context.
///
/// A route reads its state with [`RouteState::get_or_insert_with`]; tests preset it with
/// [`RouteState::insert`] (a client pointed at a local upstream, say) before the first call.
#[derive(Clone, Default)]
pub struct RouteState {
    values: Arc<Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>>,
}

impl RouteState {
    /// The context's `T`, made by `make` when there is none yet. Should two calls make one at
    /// the same time, the first stored is kept and both get it.
    pub fn get_or_insert_with<T: Any + Send + Sync>(&self, make: impl FnOnce() -> T) -> Arc<T> {
        if let Some(value) = self.get::<T>() {
            return value;
        }
        // Made without the lock held: `make` may be slow or read other state.
        let made: Arc<dyn Any + Send + Sync> = Arc::new(make());
        let value = Arc::clone(self.lock().entry(TypeId::of::<T>()).or_insert(made));
        Self::downcast(value)
    }

    /// Sets the context's `T`, replacing any it had.
    pub fn insert<T: Any + Send + Sync>(&self, value: T) {
        self.lock().insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The context's `T`, if it has one.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.lock().get(&TypeId::of::<T>()).cloned().map(Self::downcast)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TypeId, Arc<dyn Any + Send + Sync>>> {
        // The map is never left half-changed, so a panic elsewhere while it was held does no harm.
        self.values.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn downcast<T: Any + Send + Sync>(value: Arc<dyn Any + Send + Sync>) -> Arc<T> {
        // Values are stored under their own type's id.
        value.downcast::<T>().unwrap_or_else(|_| unreachable!("route state stored under another type's id"))
    }
}

/// Shared, cheap to clone.
#[derive(Clone)]
pub struct Context {
    /// Fetches URL inputs from public addresses only.
    pub fetcher: SafeFetcher,
    /// The EVM chains and their RPC clients (`PAPERCHAIN_CHAINS`, URLs from `PAPERCHAIN_RPC_<CHAIN>` or defaults).
    pub chains: Arc<crate::evm::Chains>,
    /// The Solana clusters (`PAPERCHAIN_RPC_SOLANA`, `PAPERCHAIN_RPC_SOLANA_DEVNET`, or defaults).
    pub solana: Arc<crate::solana::Clusters>,
    /// Input limits.
    pub limits: Limits,
    /// Progress sink.
    pub progress: Arc<dyn Progress>,
    /// What routes keep between calls, shared by the context's clones.
    pub state: RouteState,
    /// The bound on heavy work (rendering, compression, OCR, conversions), shared by the
    /// context's clones.
    pub heavy: Arc<crate::work_gate::WorkGate>,
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
            solana: Arc::new(crate::solana::Clusters::from_env()),
            limits: Limits::default(),
            progress: Arc::new(NoProgress),
            state: RouteState::default(),
            heavy: Arc::new(crate::work_gate::WorkGate::new(crate::work_gate::GateConfig::from_env())),
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

/// The data folder: `PAPERCHAIN_DATA_DIR`, else `$XDG_DATA_HOME/paperchain`, else
/// `~/.local/share/paperchain` (the CLI's ledger, keystore and refreshed sanctions list).
pub fn data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PAPERCHAIN_DATA_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    user_data_dir()
}

/// `$XDG_DATA_HOME/paperchain`, else `~/.local/share/paperchain` (else a folder in the temporary one).
pub fn user_data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("paperchain");
    }
    match std::env::var_os("HOME") {
        Some(home) => PathBuf::from(home).join(".local/share/paperchain"),
        None => std::env::temp_dir().join("paperchain"),
    }
}

/// A whole number from the environment (a server setting); a value that is not one is
/// logged and the caller's default used.
pub fn env_number(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    match value.trim().parse() {
        Ok(n) => Some(n),
        Err(_) => {
            tracing::warn!(variable = name, value = %value, "not a whole number; the default is used");
            None
        }
    }
}

/// Runs CPU-bound work off the async threads, as part of the current call
/// ([`crate::cancel`]); a panic becomes an internal error instead of taking the server down.
pub async fn blocking<T, F>(work: F) -> Result<T, EngineError>
where
    F: FnOnce() -> Result<T, EngineError> + Send + 'static,
    T: Send + 'static,
{
    let call = crate::cancel::carry();
    match tokio::task::spawn_blocking(move || call.enter(work)).await {
        Ok(result) => result,
        Err(join) => {
            tracing::error!(error = %join, "an operation panicked");
            Err(EngineError::internal("the operation failed unexpectedly"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_state_is_made_once_and_shared_by_clones() {
        let state = RouteState::default();
        let copy = state.clone();
        assert_eq!(*state.get_or_insert_with(|| 1u32), 1);
        assert_eq!(*copy.get_or_insert_with(|| 2u32), 1, "made once, seen by a clone");
        copy.insert(3u32);
        assert_eq!(state.get::<u32>().as_deref(), Some(&3));
        assert_eq!(state.get::<u64>(), None, "one value per type");
        assert_eq!(*RouteState::default().get_or_insert_with(|| 4u32), 4, "a new store starts empty");
    }
}
