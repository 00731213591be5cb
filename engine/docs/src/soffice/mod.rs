//! Office documents to PDF with LibreOffice, kept warm and kept in a box.
//!
//! A pool of workers ([`worker`]), each a `soffice` with its own profile running in its own
//! bubblewrap box ([`crate::sandbox`]: no network, no user files). A call borrows an idle
//! worker, or starts one when fewer than the pool's size run, or waits in a bounded queue;
//! past the queue's bound the answer is 503 `busy` with Retry-After. A worker is replaced
//! after a number of conversions (LibreOffice's memory grows), when it dies, and when a
//! conversion outlives its timeout (the box is killed with everything in it). Workers idle
//! for a while are stopped, so a desktop that converted one file does not keep LibreOffice
//! in memory all day.
//!
//! Workers are started by one long-lived thread of the pool: a box dies with the thread
//! that started it (bwrap `--die-with-parent`), so a server killed outright leaves no
//! LibreOffice behind, and a worker must not be tied to a short-lived blocking thread.

mod format;
mod worker;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

pub use format::{Format, sniff};

use crate::context::env_number;
use crate::error::{EngineError, ErrorKind};
use crate::sandbox::Layout;
use worker::{Failure, Worker};

/// Settings of a pool.
#[derive(Clone, Debug)]
pub struct PoolConfig {
    /// Most workers running at once.
    pub workers: usize,
    /// Most calls waiting for a worker; one more is 503 `busy`.
    pub queue: usize,
    /// Longest a call waits in the queue before it is 503 `busy`.
    pub wait: Duration,
    /// Longest one conversion may take; past it the worker is killed and the call is 504.
    pub timeout: Duration,
    /// Conversions after which a worker is replaced.
    pub max_conversions: u32,
    /// Idle time after which a worker is stopped.
    pub idle: Duration,
    /// Longest a worker may take to start.
    pub start_patience: Duration,
}

impl PoolConfig {
    /// The defaults, sized to this machine: a worker per core up to 4, and no more than one
    /// per 1.5 GiB of memory (a busy soffice takes 200 to 600 MiB), at least one. Each
    /// setting can be changed in the environment: `PAPERCHAIN_OFFICE_WORKERS`,
    /// `PAPERCHAIN_OFFICE_QUEUE`, `PAPERCHAIN_OFFICE_TIMEOUT_S`,
    /// `PAPERCHAIN_OFFICE_MAX_CONVERSIONS`, `PAPERCHAIN_OFFICE_IDLE_S`.
    pub fn from_env() -> PoolConfig {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let by_memory = memory_bytes().map_or(4, |bytes| (bytes / (1536 << 20)) as usize);
        let workers =
            env_number("PAPERCHAIN_OFFICE_WORKERS").unwrap_or_else(|| cores.min(4).min(by_memory).max(1) as u64);
        let workers = workers.clamp(1, 64) as usize;
        PoolConfig {
            workers,
            queue: env_number("PAPERCHAIN_OFFICE_QUEUE").map_or(workers * 8, |n| n as usize),
            wait: Duration::from_secs(60),
            timeout: Duration::from_secs(env_number("PAPERCHAIN_OFFICE_TIMEOUT_S").unwrap_or(120).max(1)),
            max_conversions: env_number("PAPERCHAIN_OFFICE_MAX_CONVERSIONS")
                .map_or(200, |n| n.clamp(1, 100_000) as u32),
            idle: Duration::from_secs(env_number("PAPERCHAIN_OFFICE_IDLE_S").unwrap_or(600).max(1)),
            start_patience: Duration::from_secs(60),
        }
    }
}

fn memory_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The soffice program: `PAPERCHAIN_SOFFICE`, else `soffice` on the `PATH`, with its
/// links followed (the box sees `/usr`; a LibreOffice installed elsewhere is shown to the
/// box read-only at its own path).
pub fn program() -> Result<&'static (PathBuf, Layout), EngineError> {
    static FOUND: OnceLock<Result<(PathBuf, Layout), String>> = OnceLock::new();
    crate::native::load_once(
        &FOUND,
        || {
            const INSTALL: &str = "install Debian's libreoffice-writer-nogui, libreoffice-calc-nogui and \
                                   libreoffice-impress-nogui (cargo xtask setup does), or set PAPERCHAIN_SOFFICE to \
                                   the soffice program";
            let given = match std::env::var_os("PAPERCHAIN_SOFFICE") {
                Some(path) => PathBuf::from(path),
                None => crate::sandbox::find_on_path("soffice")
                    .ok_or_else(|| format!("LibreOffice is not installed; {INSTALL}"))?,
            };
            let program =
                given.canonicalize().map_err(|e| format!("no soffice at {} ({e}); {INSTALL}", given.display()))?;
            let mut layout = Layout::default();
            if !program.starts_with("/usr") {
                // /opt/libreoffice7.6/program/soffice: the installation is the folder above program/.
                let install = program.parent().and_then(Path::parent).unwrap_or(Path::new("/")).to_path_buf();
                layout.read_only.push(install);
            }
            crate::sandbox::bwrap()?;
            Ok((program, layout))
        },
        "LibreOffice cannot be run; Office conversions answer 503",
        |why| crate::native::unavailable(format!("Office conversion is not available on this server: {why}")),
    )
}

/// Checks that LibreOffice and the box can run, off the async threads.
pub async fn ensure_available() -> Result<(), EngineError> {
    crate::native::ensure(program).await
}

/// What a pool is doing, for the bench and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Workers waiting for a call.
    pub idle: usize,
    /// Workers converting.
    pub busy: usize,
    /// Workers being started.
    pub starting: usize,
    /// Calls waiting for a worker.
    pub waiting: usize,
    /// Workers started since the pool was made.
    pub started: u64,
    /// Process ids of the idle workers' boxes.
    pub idle_pids: Vec<u32>,
}

struct State {
    idle: Vec<Worker>,
    busy: usize,
    starting: usize,
    waiting: usize,
    started: u64,
    next_id: u64,
}

struct Shared {
    config: PoolConfig,
    /// Where the workers' folders are: `paperchain-office-<random>` in the temporary folder,
    /// removed with the pool.
    dir: tempfile::TempDir,
    state: Mutex<State>,
    freed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The state's counters are changed in single steps: a panic elsewhere leaves them whole.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A request to the starter thread: start a worker with this id, answer on the channel.
type StartRequest = (u64, mpsc::Sender<Result<Worker, String>>);

/// The pool of LibreOffice workers of a process (kept in the route state).
///
/// Dropping it stops its workers and removes their folders before it returns.
pub struct OfficePool {
    shared: Arc<Shared>,
    starter: Mutex<Option<mpsc::Sender<StartRequest>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl OfficePool {
    /// A pool with `config`; no worker starts until the first call.
    pub fn new(config: PoolConfig) -> Result<OfficePool, EngineError> {
        remove_stale_folders();
        let dir = tempfile::Builder::new()
            .prefix(&format!("paperchain-office-{}-", std::process::id()))
            .tempdir()
            .map_err(|e| EngineError::internal(format!("cannot make the Office workers' folder: {e}")))?;
        let shared = Arc::new(Shared {
            config,
            dir,
            state: Mutex::new(State { idle: Vec::new(), busy: 0, starting: 0, waiting: 0, started: 0, next_id: 0 }),
            freed: Condvar::new(),
        });
        let (starter, requests) = mpsc::channel::<StartRequest>();
        let for_thread = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("office-pool".into())
            .spawn(move || starter_thread(&for_thread, &requests))
            .map_err(|e| EngineError::internal(format!("cannot start the Office pool's thread: {e}")))?;
        Ok(OfficePool { shared, starter: Mutex::new(Some(starter)), thread: Some(thread) })
    }

    /// What the pool is doing now.
    pub fn stats(&self) -> PoolStats {
        let state = self.shared.lock();
        PoolStats {
            idle: state.idle.len(),
            busy: state.busy,
            starting: state.starting,
            waiting: state.waiting,
            started: state.started,
            idle_pids: state.idle.iter().map(Worker::pid).collect(),
        }
    }

    /// The folder the workers' folders are made in.
    pub fn folder(&self) -> &Path {
        self.shared.dir.path()
    }

    /// Converts `input`, a file of `format`, to PDF. Blocking: call it off the async threads.
    pub fn convert(&self, input: &[u8], format: Format, field: &str) -> Result<Vec<u8>, EngineError> {
        let mut lease = self.acquire()?;
        let timeout = self.shared.config.timeout;
        let worker = lease.worker.as_mut().expect("a lease holds its worker until dropped");
        let result = worker.convert(input, format.extension(), timeout);
        let healthy = result.is_ok() || matches!(result, Err(Failure::NotConverted));
        lease.healthy = healthy && worker.alive();
        result.map_err(|failure| match failure {
            Failure::NotConverted => EngineError::invalid_with(
                "conversion_failed",
                field,
                format!(
                    "{field}: LibreOffice could not open this file as {}: it is damaged, password-protected, or not \
                     what its contents claim",
                    format.noun()
                ),
            ),
            Failure::TimedOut => EngineError::new(
                ErrorKind::Timeout,
                "timeout",
                format!("the conversion took longer than {} s and was stopped", timeout.as_secs()),
            ),
            Failure::WorkerDied => EngineError::new(
                ErrorKind::Unavailable { retry_after: Duration::from_secs(1) },
                "engine_failed",
                "LibreOffice stopped during the conversion; a new one is started, send the call again",
            ),
            Failure::OutOfMemory => EngineError::too_large(
                "memory_budget",
                Some(field.to_string()),
                format!(
                    "{field}: LibreOffice needed more than {} MiB of memory for this document, the most a \
                     conversion may take (PAPERCHAIN_WORKER_MEMORY_MIB); its worker was replaced",
                    crate::sandbox::memory_cap() >> 20
                ),
            ),
            Failure::Stopped => {
                crate::cancel::check().err().unwrap_or_else(|| EngineError::internal("the conversion was stopped"))
            }
            Failure::Internal(why) => {
                tracing::error!(reason = %why, "an Office conversion failed on our side");
                EngineError::internal("the conversion could not be run")
            }
        })
    }

    /// A worker for one conversion: an idle one, a new one, or one freed while waiting.
    fn acquire(&self) -> Result<Lease<'_>, EngineError> {
        let config = &self.shared.config;
        let give_up = Instant::now() + config.wait;
        let mut state = self.shared.lock();
        let mut queued = false;
        loop {
            if let Some(mut worker) = state.idle.pop() {
                if !worker.alive() {
                    // Died while idle (killed, out of memory): replaced below or on the next turn.
                    drop(worker);
                    continue;
                }
                state.busy += 1;
                if queued {
                    state.waiting -= 1;
                }
                return Ok(Lease { pool: self, worker: Some(worker), healthy: true });
            }
            if state.idle.len() + state.busy + state.starting < config.workers {
                state.starting += 1;
                if queued {
                    state.waiting -= 1;
                }
                state.next_id += 1;
                let id = state.next_id;
                drop(state);
                let started = self.start(id);
                let mut state = self.shared.lock();
                state.starting -= 1;
                return match started {
                    Ok(worker) => {
                        state.busy += 1;
                        state.started += 1;
                        Ok(Lease { pool: self, worker: Some(worker), healthy: true })
                    }
                    Err(why) => {
                        // Another waiting call may try (and likely fail the same way, with its own message).
                        self.shared.freed.notify_one();
                        tracing::error!(reason = %why, "a LibreOffice worker could not be started");
                        Err(crate::native::unavailable(format!("LibreOffice could not be started: {why}")))
                    }
                };
            }
            if !queued {
                if state.waiting >= config.queue {
                    return Err(busy(config));
                }
                state.waiting += 1;
                queued = true;
            }
            let now = Instant::now();
            if now >= give_up {
                state.waiting -= 1;
                return Err(busy(config));
            }
            if let Err(stopped) = crate::cancel::check() {
                // Its call was stopped while it waited: the place in the queue goes at once.
                state.waiting -= 1;
                return Err(stopped);
            }
            // Woken when a worker is freed, and every 100 ms to see whether the call was stopped.
            let wait = (give_up - now).min(Duration::from_millis(100));
            state = self.shared.freed.wait_timeout(state, wait).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    fn start(&self, id: u64) -> Result<Worker, String> {
        let (answer, answered) = mpsc::channel();
        self.starter
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .ok_or_else(|| "the pool is closing".to_string())?
            .send((id, answer))
            .map_err(|_| "the pool's thread has stopped".to_string())?;
        answered.recv().map_err(|_| "the pool's thread has stopped".to_string())?
    }
}

impl Drop for OfficePool {
    fn drop(&mut self) {
        // The thread ends when its channel closes, dropping its hold on the shared state.
        self.starter.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let idle = std::mem::take(&mut self.shared.lock().idle);
        drop(idle);
    }
}

fn busy(config: &PoolConfig) -> EngineError {
    EngineError::new(
        ErrorKind::Unavailable { retry_after: Duration::from_secs(5) },
        "busy",
        format!(
            "every Office worker is busy and {} calls already wait; send the call again in a few seconds",
            config.queue
        ),
    )
}

/// A borrowed worker, given back (or replaced) when dropped.
struct Lease<'a> {
    pool: &'a OfficePool,
    worker: Option<Worker>,
    healthy: bool,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let Some(worker) = self.worker.take() else { return };
        let config = &self.pool.shared.config;
        let keep = self.healthy && worker.conversions < config.max_conversions;
        let mut state = self.pool.shared.lock();
        state.busy -= 1;
        if keep {
            state.idle.push(worker);
            drop(state);
        } else {
            drop(state);
            // Killed and its folder removed outside the lock.
            drop(worker);
        }
        self.pool.shared.freed.notify_one();
    }
}

/// Starts workers on request and stops the ones idle too long, until the pool is dropped.
fn starter_thread(shared: &Shared, requests: &mpsc::Receiver<StartRequest>) {
    let (program, layout) = match program() {
        Ok(found) => found.clone(),
        Err(e) => {
            // Every request is answered with why.
            for (_, answer) in requests.iter() {
                let _ = answer.send(Err(e.message.clone()));
            }
            return;
        }
    };
    let check_every = shared.config.idle.min(Duration::from_secs(30));
    loop {
        match requests.recv_timeout(check_every) {
            Ok((id, answer)) => {
                let root = shared.dir.path().join(format!("worker-{id}"));
                let started = Worker::start(root, &program, &layout, shared.config.start_patience);
                let _ = answer.send(started);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let idle_limit = shared.config.idle;
                let stale: Vec<Worker> = {
                    let mut state = shared.lock();
                    let (old, fresh) = std::mem::take(&mut state.idle)
                        .into_iter()
                        .partition(|w: &Worker| w.idle_since.elapsed() >= idle_limit);
                    state.idle = fresh;
                    old
                };
                drop(stale);
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Removes the workers' folders of pools whose process is gone (a server killed outright).
fn remove_stale_folders() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("paperchain-office-")) else { continue };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else { continue };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The pool of a context's routes, as kept in its state.
struct Installed(Result<Arc<OfficePool>, EngineError>);

/// The pool of `state`: made with [`PoolConfig::from_env`] on first use, unless one was
/// [`install`]ed.
pub fn pool(state: &crate::context::RouteState) -> Result<Arc<OfficePool>, EngineError> {
    state.get_or_insert_with(|| Installed(OfficePool::new(PoolConfig::from_env()).map(Arc::new))).0.clone()
}

/// Makes `pool` the one `state`'s routes use (tests and the bench size their own).
pub fn install(state: &crate::context::RouteState, pool: Arc<OfficePool>) {
    state.insert(Installed(Ok(pool)));
}
