//! A call's stop signal, and what a call holds until its work has really stopped.
//!
//! Every call runs [`within`] a scope made from its [`Stop`]: the call path stops it when
//! the call times out ([`Why::TimedOut`]) and when its caller goes away (an HTTP connection
//! closed, MCP `notifications/cancelled`, the app's Cancel: [`Why::Cancelled`]). Engine
//! code learns of it without taking a parameter: [`check`] between pages, rows and steps
//! answers the call's error once it is stopped, and [`is_stopped`] tells a loop that waits
//! on an external program (LibreOffice, Chromium) to kill it. Both work in the async code
//! of the call and in the threads [`crate::context::blocking`] starts for it.
//!
//! A call's place at the heavy-work gate is [`hold`]: given back when the last of the
//! call's work ends, not when its answer is sent. A call that timed out keeps its place
//! until the thread it started has seen the signal and returned, so the gate never admits
//! more work than it is sized for.
//!
//! Work outside any scope (a test calling a route directly) is never stopped.

use std::any::Any;
use std::cell::RefCell;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::error::{EngineError, ErrorKind};
use crate::memory::{Budget, Charged};

/// Why a call was stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// Its caller went away or asked to stop it.
    Cancelled,
    /// It took longer than it may.
    TimedOut,
}

impl Why {
    /// The ledger's name of a call stopped this way.
    pub fn as_str(self) -> &'static str {
        match self {
            Why::Cancelled => "cancelled",
            Why::TimedOut => "timed_out",
        }
    }
}

/// A call's stop signal. Clones share it; the first reason given is kept.
#[derive(Clone, Debug, Default)]
pub struct Stop {
    token: CancellationToken,
    why: Arc<OnceLock<Why>>,
}

impl Stop {
    /// A signal not given yet.
    pub fn new() -> Stop {
        Stop::default()
    }

    /// A signal given when `token` is cancelled (an MCP request's token, which the server
    /// cancels on `notifications/cancelled`), as [`Why::Cancelled`], or when stopped here.
    pub fn from_token(token: CancellationToken) -> Stop {
        Stop { token, why: Arc::default() }
    }

    /// A signal given when this one is, or on its own (a call's time-out, which must not
    /// stop the caller's other calls).
    pub fn child(&self) -> Stop {
        Stop { token: self.token.child_token(), why: Arc::default() }
    }

    /// Stops the call for `why` (the first reason given is the one kept).
    pub fn stop(&self, why: Why) {
        let _ = self.why.set(why);
        self.token.cancel();
    }

    /// Whether the call was stopped.
    pub fn is_stopped(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Why the call was stopped, if it was.
    pub fn why(&self) -> Option<Why> {
        self.is_stopped().then(|| self.why.get().copied().unwrap_or(Why::Cancelled))
    }

    /// Waits until the call is stopped.
    pub async fn stopped(&self) {
        self.token.cancelled().await
    }

    /// The error of a call stopped for `why`.
    pub fn error_of(why: Why) -> EngineError {
        match why {
            Why::Cancelled => {
                EngineError::new(ErrorKind::Cancelled, "cancelled", "the call was cancelled; its work was stopped")
            }
            Why::TimedOut => EngineError::new(
                ErrorKind::Timeout,
                "timeout",
                "the call took longer than it may; its work was stopped",
            ),
        }
    }

    /// The error of this call if it was stopped.
    pub fn check(&self) -> Result<(), EngineError> {
        match self.why() {
            Some(why) => Err(Stop::error_of(why)),
            None => Ok(()),
        }
    }

    /// Stops the call as [`Why::Cancelled`] when the guard is dropped, unless it was
    /// [disarmed](StopOnDrop::disarm) first: what a door holds while it waits for the call,
    /// so that a caller who goes away stops it.
    pub fn on_drop(&self) -> StopOnDrop {
        StopOnDrop(Some(self.clone()))
    }
}

/// Stops a call when dropped ([`Stop::on_drop`]).
#[derive(Debug)]
pub struct StopOnDrop(Option<Stop>);

impl StopOnDrop {
    /// The call ended normally: dropping the guard no longer stops it.
    pub fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let Some(stop) = self.0.take() {
            stop.stop(Why::Cancelled);
        }
    }
}

/// One call's scope: its signal, and what it holds until its last work has ended.
struct Scope {
    stop: Stop,
    held: Mutex<Vec<Box<dyn Any + Send>>>,
    budget: Arc<Budget>,
    seen: Mutex<std::collections::HashSet<[u8; 32]>>,
}

tokio::task_local! {
    static CALL: Arc<Scope>;
}

thread_local! {
    /// The scope of the call a blocking thread works for.
    static WORKING_FOR: RefCell<Option<Arc<Scope>>> = const { RefCell::new(None) };
}

/// Runs `work` as the call `stop` signals (its own scope): [`check`] and [`is_stopped`]
/// within it, and in the threads it starts through [`crate::context::blocking`], see the
/// signal, and what it [`hold`]s is kept until the last of that work has ended. Inside
/// another call's scope, `work` runs in that one (a route run by the pipeline is part of
/// the pipeline's call).
pub async fn within<F: Future>(stop: Stop, work: F) -> F::Output {
    if current().is_some() {
        return work.await;
    }
    let budget = Arc::new(Budget::for_call());
    let scope = Arc::new(Scope {
        stop,
        held: Mutex::new(Vec::new()),
        budget: Arc::clone(&budget),
        seen: Mutex::new(Default::default()),
    });
    let outcome = CALL.scope(scope, Charged::new(Arc::clone(&budget), work)).await;
    if crate::memory::counting() {
        tracing::debug!(peak_mib = budget.peak() >> 20, held_mib = budget.used() >> 20, "the call's memory");
        // What a large call freed goes back to the system, not to the allocator's arenas,
        // so that the process comes back to its resting size.
        if budget.peak() >= crate::memory::GIVE_BACK_AFTER {
            crate::memory::give_back();
        }
    }
    outcome
}

/// Runs `work` as the call `stop` signals ([`within`]) for at most `limit`: past it the
/// call is stopped as [`Why::TimedOut`] and answers 504 at once; stopped otherwise (its
/// caller went away) it answers its error at once. Either way its work goes on only until
/// it sees the signal, holding its place meanwhile.
pub async fn bounded<T>(
    stop: &Stop,
    limit: Duration,
    work: impl Future<Output = Result<T, EngineError>>,
) -> Result<T, EngineError> {
    tokio::select! {
        biased;
        outcome = within(stop.clone(), work) => outcome,
        () = stop.stopped() => Err(Stop::error_of(stop.why().unwrap_or(Why::Cancelled))),
        () = tokio::time::sleep(limit) => {
            stop.stop(Why::TimedOut);
            Err(EngineError::new(
                ErrorKind::Timeout,
                "timeout",
                format!("the operation took longer than {} s; its work was stopped", limit.as_secs()),
            ))
        }
    }
}

fn scope() -> Option<Arc<Scope>> {
    CALL.try_with(Arc::clone).ok().or_else(|| WORKING_FOR.with(|w| w.borrow().clone()))
}

/// The signal of the call this code works for, if any.
pub fn current() -> Option<Stop> {
    scope().map(|s| s.stop.clone())
}

/// Whether the call this code works for was stopped, or went over its memory budget.
pub fn is_stopped() -> bool {
    scope().is_some_and(|s| s.stop.is_stopped() || s.budget.check().is_err())
}

/// The call's error once the call this code works for was stopped or went over its memory
/// budget ([`crate::memory`]): what long work answers between its steps.
pub fn check() -> Result<(), EngineError> {
    match scope() {
        Some(scope) => scope.stop.check().and_then(|()| scope.budget.check()),
        None => Ok(()),
    }
}

/// Whether the call this code works for meets `key` (a digest of something it checked)
/// for the first time: a check made once per call (a document's streams, before each
/// library opens it) is not made again. Outside a call, always true.
pub fn first_time(key: [u8; 32]) -> bool {
    match scope() {
        Some(scope) => scope.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(key),
        None => true,
    }
}

/// The memory budget of the call this code works for.
pub(crate) fn budget() -> Option<Arc<Budget>> {
    scope().map(|s| Arc::clone(&s.budget))
}

/// Keeps `value` until the last work of the current call has ended (its place at the
/// heavy-work gate). Outside any call's scope, it is handed back to be kept by the caller.
pub fn hold<T: Any + Send>(value: T) -> Option<T> {
    match scope() {
        Some(scope) => {
            scope.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(Box::new(value));
            None
        }
        None => Some(value),
    }
}

/// The current call's scope, carried to another thread ([`Carried::enter`]).
pub struct Carried(Option<Arc<Scope>>);

/// Takes the current call's scope along, to enter it on another thread: what a thread that
/// work starts itself (OCR's readers) does so that [`check`] works there too.
pub fn carry() -> Carried {
    Carried(scope())
}

impl Carried {
    /// Runs `work` on this thread as part of the carried call; the scope (and what it
    /// holds) is kept at least until `work` returns.
    pub fn enter<T>(self, work: impl FnOnce() -> T) -> T {
        let Some(scope) = self.0 else { return work() };
        let previous = WORKING_FOR.with(|w| w.borrow_mut().replace(scope));
        struct Restore(Option<Arc<Scope>>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                WORKING_FOR.with(|w| *w.borrow_mut() = previous);
            }
        }
        let _restore = Restore(previous);
        let budget = WORKING_FOR.with(|w| w.borrow().as_ref().map(|s| Arc::clone(&s.budget)));
        match budget {
            Some(budget) => crate::memory::charging(&budget, work),
            None => work(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_reason_is_kept() {
        let stop = Stop::new();
        assert_eq!(stop.why(), None);
        assert!(stop.check().is_ok());
        stop.stop(Why::TimedOut);
        stop.stop(Why::Cancelled);
        assert_eq!(stop.why(), Some(Why::TimedOut));
        assert_eq!(stop.check().unwrap_err().code, "timeout");
    }

    #[test]
    fn a_token_cancelled_elsewhere_reads_as_cancelled() {
        let token = CancellationToken::new();
        let stop = Stop::from_token(token.clone());
        token.cancel();
        assert_eq!(stop.why(), Some(Why::Cancelled));
        assert_eq!(stop.check().unwrap_err().code, "cancelled");
    }

    #[test]
    fn a_child_stops_with_its_parent_and_not_the_other_way() {
        let parent = Stop::new();
        let child = parent.child();
        child.stop(Why::TimedOut);
        assert!(!parent.is_stopped());
        let other = parent.child();
        parent.stop(Why::Cancelled);
        assert_eq!(other.why(), Some(Why::Cancelled));
    }

    #[test]
    fn a_dropped_guard_cancels_a_disarmed_one_does_not() {
        let stop = Stop::new();
        stop.on_drop().disarm();
        assert!(!stop.is_stopped());
        drop(stop.on_drop());
        assert_eq!(stop.why(), Some(Why::Cancelled));
    }

    #[tokio::test]
    async fn outside_a_call_nothing_is_stopped_and_holds_come_back() {
        assert!(current().is_none());
        assert!(check().is_ok());
        assert_eq!(hold(5u8), Some(5));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_blocking_thread_sees_its_call_stop_and_keeps_the_holds_until_it_returns() {
        struct Place(Arc<std::sync::atomic::AtomicBool>);
        impl Drop for Place {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let given_back = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop = Stop::new();
        let (started, wait_started) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let call = tokio::spawn(within(stop.clone(), {
            let given_back = Arc::clone(&given_back);
            async move {
                assert!(hold(Place(given_back)).is_none());
                crate::context::blocking(move || {
                    started.send(()).unwrap();
                    while check().is_ok() {
                        std::thread::sleep(std::time::Duration::from_millis(2));
                    }
                    // Stopping takes a while: the place stays taken meanwhile.
                    released.recv().unwrap();
                    check()
                })
                .await
            }
        }));
        wait_started.recv().unwrap();
        stop.stop(Why::TimedOut);
        call.abort();
        let _ = call.await;
        assert!(!given_back.load(std::sync::atomic::Ordering::SeqCst), "held while the thread still works");
        release.send(()).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !given_back.load(std::sync::atomic::Ordering::SeqCst) && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert!(given_back.load(std::sync::atomic::Ordering::SeqCst), "given back once the thread returned");
    }
}
