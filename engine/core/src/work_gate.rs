//! Heavy work under a bound: the routes that render, compress, read text by OCR or convert
//! documents (those whose [`crate::catalog::Route::HEAVY`] is set) run at most `workers`
//! at once, and at most `queue` more are admitted to wait for a turn. One more is refused
//! at once with 503 `busy` and a Retry-After, so a burst of calls costs a queue, never the
//! memory of hundreds of renders at once.
//!
//! A call is admitted (it takes a [`Ticket`]) before its input is read: a front door that
//! knows the route admits it before it reads the request body, so a refused call costs
//! neither its upload nor its parsing; the engine admits the calls that come without a
//! ticket before it parses them. An admitted call then waits for its [`Turn`] to run. The
//! bound holds from admission to the end of the run's last work: the catalog keeps the
//! ticket and the turn with the call ([`crate::cancel::hold`]) until every thread working
//! for it has returned, also after a time-out or a cancel has answered the caller. At most
//! `workers + queue` heavy calls hold their input, and at most `workers` work, at once.
//!
//! The gate is the context's (shared by its clones, so by every front door of one server).
//! A call waits in arrival order; a call whose caller stops waiting (a timeout, a closed
//! connection) leaves the queue. Office conversions are not gated here: the Office pool
//! (`soffice/`) has workers and a queue of its own.
//!
//! By default a machine runs one heavy operation per core and admits eight more per
//! worker to wait ([`GateConfig::from_env`]: `PAPERCHAIN_HEAVY_WORKERS`,
//! `PAPERCHAIN_HEAVY_QUEUE`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::context::env_number;
use crate::error::{EngineError, ErrorKind};

/// Settings of the gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GateConfig {
    /// Most heavy operations running at once.
    pub workers: usize,
    /// Most heavy calls admitted beyond the running ones (waiting for a turn, or having
    /// their input read and checked); one more is 503 `busy`.
    pub queue: usize,
}

impl GateConfig {
    /// The defaults, sized to this machine: one heavy operation per core (each is CPU-bound
    /// and many use all of one core), and eight waiting per worker. The environment can
    /// change both: `PAPERCHAIN_HEAVY_WORKERS` (1 to 256), `PAPERCHAIN_HEAVY_QUEUE` (0 to
    /// 65536).
    pub fn from_env() -> GateConfig {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        // Never more than fit under the memory ceiling, one call's budget each (crate::memory).
        let by_memory = crate::memory::settings().heavy_calls();
        let workers = env_number("PAPERCHAIN_HEAVY_WORKERS").map_or(cores, |n| n.clamp(1, 256) as usize).min(by_memory);
        let queue = env_number("PAPERCHAIN_HEAVY_QUEUE").map_or(workers * 8, |n| n.min(65_536) as usize);
        GateConfig { workers, queue }
    }
}

/// How long a refused caller is told to wait before sending the call again.
const RETRY_AFTER: Duration = Duration::from_secs(5);

/// The bound on heavy work.
#[derive(Debug)]
pub struct WorkGate {
    config: GateConfig,
    running: Arc<Semaphore>,
    admitted: Arc<AtomicUsize>,
}

/// A heavy call's place, from admission to the end of its run; given back when dropped.
#[derive(Debug)]
pub struct Ticket {
    running: Arc<Semaphore>,
    admitted: Arc<AtomicUsize>,
    workers: usize,
}

/// A heavy operation's turn to run, given back when dropped.
#[derive(Debug)]
pub struct Turn {
    permit: Option<OwnedSemaphorePermit>,
    running: Arc<Semaphore>,
    workers: usize,
}

impl WorkGate {
    /// A gate with these settings (`workers` at least 1).
    pub fn new(config: GateConfig) -> WorkGate {
        let config = GateConfig { workers: config.workers.max(1), ..config };
        WorkGate { running: Arc::new(Semaphore::new(config.workers)), admitted: Arc::new(AtomicUsize::new(0)), config }
    }

    /// The gate's settings.
    pub fn config(&self) -> GateConfig {
        self.config
    }

    /// Heavy operations running now.
    pub fn running(&self) -> usize {
        self.config.workers - self.running.available_permits()
    }

    /// Heavy calls admitted and not running now (waiting for a turn, or being read).
    pub fn waiting(&self) -> usize {
        self.admitted.load(Ordering::Acquire).saturating_sub(self.running())
    }

    /// Whether one more call would be refused now.
    pub fn is_full(&self) -> bool {
        self.admitted.load(Ordering::Acquire) >= self.capacity()
    }

    fn capacity(&self) -> usize {
        self.config.workers + self.config.queue
    }

    /// A place for one heavy call, or 503 `busy` when `workers + queue` calls hold one, or
    /// when the process holds so much memory that one more call could pass its ceiling
    /// ([`crate::memory::admit`]).
    pub fn admit(&self) -> Result<Ticket, EngineError> {
        crate::memory::admit()?;
        let capacity = self.capacity();
        self.admitted
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < capacity).then_some(n + 1))
            .map_err(|_| self.busy())?;
        Ok(Ticket {
            running: Arc::clone(&self.running),
            admitted: Arc::clone(&self.admitted),
            workers: self.config.workers,
        })
    }

    /// Admission and a turn in one step: at once when a worker is free, after the calls
    /// before it when the queue has room, else 503 `busy`.
    pub async fn enter(&self) -> Result<(Ticket, Turn), EngineError> {
        let ticket = self.admit()?;
        let turn = ticket.turn().await?;
        Ok((ticket, turn))
    }

    fn busy(&self) -> EngineError {
        busy(format!(
            "{} heavy operations run and {} more wait, the most this server takes at once; send the call again in \
             a few seconds",
            self.config.workers, self.config.queue
        ))
    }
}

/// 503 `busy` saying `why`, with the Retry-After of every refusal for load (the heavy-work
/// gate's, and the request-body budget's).
pub fn busy(why: String) -> EngineError {
    EngineError::new(ErrorKind::Unavailable { retry_after: RETRY_AFTER }, "busy", why)
}

impl Ticket {
    /// The turn to run, after the admitted calls that asked before (the semaphore serves
    /// waiters in order). A caller that stops waiting keeps its ticket until it drops it.
    pub async fn turn(&self) -> Result<Turn, EngineError> {
        let permit = Arc::clone(&self.running)
            .acquire_owned()
            .await
            .map_err(|_| EngineError::internal("the heavy-work gate was closed"))?;
        Ok(Turn { permit: Some(permit), running: Arc::clone(&self.running), workers: self.workers })
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        drop(self.permit.take());
        // The last heavy call to end gives what its work freed back to the system, so that
        // the process comes back to its resting size between bursts.
        if self.running.available_permits() == self.workers {
            crate::memory::give_back();
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.admitted.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn past_the_workers_and_the_queue_a_call_is_busy_with_a_retry_after() {
        let gate = Arc::new(WorkGate::new(GateConfig { workers: 1, queue: 1 }));
        let first = gate.enter().await.unwrap();
        assert_eq!((gate.running(), gate.waiting()), (1, 0));

        let waiter = tokio::spawn({
            let gate = Arc::clone(&gate);
            async move { gate.enter().await.map(drop) }
        });
        while gate.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        let refused = gate.enter().await.unwrap_err();
        assert_eq!(refused.code, "busy");
        assert_eq!(refused.kind, ErrorKind::Unavailable { retry_after: RETRY_AFTER });
        assert!(refused.message.contains("1 heavy operations run and 1 more wait"), "{}", refused.message);

        // The waiter gets the turn the first call gives back, and the queue empties.
        drop(first);
        waiter.await.unwrap().unwrap();
        assert_eq!((gate.running(), gate.waiting()), (0, 0));
    }

    #[tokio::test]
    async fn a_caller_that_stops_waiting_leaves_the_queue() {
        let gate = Arc::new(WorkGate::new(GateConfig { workers: 1, queue: 1 }));
        let held = gate.enter().await.unwrap();
        let waiter = tokio::spawn({
            let gate = Arc::clone(&gate);
            async move { gate.enter().await.map(drop) }
        });
        while gate.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        waiter.abort();
        let _ = waiter.await;
        assert_eq!(gate.waiting(), 0, "the abandoned wait gave its place back");
        // So the next call may wait again instead of being refused.
        let next = tokio::spawn({
            let gate = Arc::clone(&gate);
            async move { gate.enter().await.map(drop) }
        });
        while gate.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        drop(held);
        next.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn without_a_queue_only_the_workers_run() {
        let gate = WorkGate::new(GateConfig { workers: 2, queue: 0 });
        let (a, b) = (gate.enter().await.unwrap(), gate.enter().await.unwrap());
        assert_eq!(gate.enter().await.unwrap_err().code, "busy");
        drop(a);
        let _c = gate.enter().await.unwrap();
        drop(b);
        assert_eq!(gate.running(), 1);
    }

    #[tokio::test]
    async fn admitted_calls_hold_their_place_before_they_run() {
        let gate = WorkGate::new(GateConfig { workers: 1, queue: 1 });
        // Two calls admitted while their input is read: neither runs yet, both count.
        let (first, second) = (gate.admit().unwrap(), gate.admit().unwrap());
        assert!(gate.is_full());
        assert_eq!((gate.running(), gate.waiting()), (0, 2));
        assert_eq!(gate.admit().unwrap_err().code, "busy");
        let turn = first.turn().await.unwrap();
        assert_eq!((gate.running(), gate.waiting()), (1, 1));
        // A refused or finished call gives its place back only when its ticket goes.
        drop(turn);
        assert!(gate.is_full());
        drop(first);
        assert!(!gate.is_full());
        let _third = gate.admit().unwrap();
        let _turn = second.turn().await.unwrap();
        assert_eq!((gate.running(), gate.waiting()), (1, 1));
    }

    #[test]
    fn workers_are_at_least_one() {
        assert_eq!(WorkGate::new(GateConfig { workers: 0, queue: 3 }).config(), GateConfig { workers: 1, queue: 3 });
    }
}
