//! Memory a call may use, counted where it is spent.
//!
//! Each call has a [`Budget`]: the most heap memory its work may hold at once
//! (`PAPERCHAIN_CALL_MEMORY_MIB`, 1 GiB by default). The programs that run the engine
//! install [`Counting`] as their global allocator; it charges every allocation and credit
//! every free made by a thread while it works for a call (the call's async code, and the
//! threads [`crate::context::blocking`] and [`crate::cancel::carry`] give its scope) to that
//! call's budget. A call over its budget is stopped at its next [`crate::cancel::check`]
//! with 413 `memory_budget`; code that is about to spend a size it read from the input (a
//! stream's decoded bytes, an image's pixels) asks [`room`] first and refuses past it, so
//! one allocation never takes more than the budget has left.
//!
//! The libraries written in C and C++ (pdfium, qpdf, Tesseract) allocate outside this
//! count: what they are given is checked first (decoded sizes, pixels, nesting), and the
//! programs run in boxes (LibreOffice, Chromium) have a hard cap of their own.
//!
//! The whole server stays under a ceiling (`PAPERCHAIN_MEMORY_MIB`, half of the machine's
//! memory by default): at most `ceiling / budget` heavy calls run at once (the work gate),
//! and a heavy call is refused with 503 `busy` while the process already holds more than
//! the ceiling less one budget ([`admit`]).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use crate::context::env_number;
use crate::error::EngineError;

const MIB: usize = 1 << 20;

/// The allocator that counts: the system's, with every allocation charged to the call the
/// allocating thread works for. Installed by the programs that run the engine:
///
/// ```ignore
/// #[global_allocator]
/// static ALLOCATOR: paperchain_engine_core::memory::Counting = paperchain_engine_core::memory::Counting;
/// ```
pub struct Counting;

/// Bytes live on the heap through [`Counting`] (0 where it is not installed).
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// Whether [`Counting`] is the global allocator (set by its first allocation).
static INSTALLED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// The budget of the call this thread works for now (null: none). A raw pointer so that
    /// reading it never allocates and never runs a destructor: the allocator reads it. Set
    /// only while the owner of the budget ([`Charged`], [`charging`]) keeps it alive.
    static CHARGED: Cell<*const Budget> = const { Cell::new(std::ptr::null()) };
}

fn charge(delta: isize) {
    if delta >= 0 {
        LIVE.fetch_add(delta as usize, Ordering::Relaxed);
    } else {
        LIVE.fetch_sub(delta.unsigned_abs(), Ordering::Relaxed);
    }
    let budget = CHARGED.with(Cell::get);
    if !budget.is_null() {
        // SAFETY: the pointer is set only for as long as its owner keeps the budget alive
        // (see `CHARGED`).
        unsafe { (*budget).add(delta) };
    }
}

/// Charges a new allocation (when there is one) and hands it on.
fn allocated(ptr: *mut u8, layout: Layout) -> *mut u8 {
    if !ptr.is_null() {
        INSTALLED.store(true, Ordering::Relaxed);
        charge(layout.size() as isize);
    }
    ptr
}

// SAFETY: every method forwards to the system allocator with the same arguments; the
// counting around it touches atomics and a `const` thread-local only, never the heap.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        allocated(unsafe { System.alloc(layout) }, layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        allocated(unsafe { System.alloc_zeroed(layout) }, layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        charge(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let moved = unsafe { System.realloc(ptr, layout, new_size) };
        if !moved.is_null() {
            charge(new_size as isize - layout.size() as isize);
        }
        moved
    }
}

/// Whether [`Counting`] counts this process's memory.
pub fn counting() -> bool {
    INSTALLED.load(Ordering::Relaxed)
}

/// Bytes this process holds on the heap through [`Counting`].
pub fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// The most heap memory one call's work may hold at once.
#[derive(Debug)]
pub struct Budget {
    limit: usize,
    used: AtomicIsize,
    peak: AtomicUsize,
    over: AtomicBool,
}

impl Budget {
    /// A budget of `limit` bytes, nothing used.
    pub fn new(limit: usize) -> Budget {
        Budget { limit, used: AtomicIsize::new(0), peak: AtomicUsize::new(0), over: AtomicBool::new(false) }
    }

    /// The budget of a call made now: `PAPERCHAIN_CALL_MEMORY_MIB` ([`Settings::from_env`]).
    pub fn for_call() -> Budget {
        Budget::new(settings().call_bytes)
    }

    fn add(&self, delta: isize) {
        let used = if delta >= 0 {
            self.used.fetch_add(delta, Ordering::Relaxed) + delta
        } else {
            // Never below nothing: freeing what the call did not allocate (the input it was
            // handed, objects a library's own threads parsed for it) gives it no room.
            let before = self
                .used
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| Some((used + delta).max(0)))
                .unwrap_or_default();
            (before + delta).max(0)
        };
        if used > 0 {
            let used = used as usize;
            self.peak.fetch_max(used, Ordering::Relaxed);
            if used > self.limit && !self.over.load(Ordering::Relaxed) {
                self.over.store(true, Ordering::Relaxed);
            }
        }
    }

    /// The budget, in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes the call's work holds now (what it allocated less what it freed, never below 0).
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed).max(0) as usize
    }

    /// The most the call's work held at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// Bytes the work may still take.
    pub fn room(&self) -> usize {
        self.limit.saturating_sub(self.used())
    }

    /// The call's error once its work went over the budget.
    pub fn check(&self) -> Result<(), EngineError> {
        if self.over.load(Ordering::Relaxed) { Err(over_budget(self.limit)) } else { Ok(()) }
    }
}

/// The 413 of a call whose work needed more memory than its budget.
pub fn over_budget(limit: usize) -> EngineError {
    EngineError::too_large(
        "memory_budget",
        None,
        format!(
            "the operation needed more than {} MiB of memory, the most one call may use \
             (PAPERCHAIN_CALL_MEMORY_MIB); the input is too large or too complex for it",
            limit / MIB
        ),
    )
}

/// The error of input that would need `bytes` (what `what` says) where the call has only
/// `room` left: 413 `memory_budget` naming what, before anything is spent on it.
pub fn refuse(what: &str, bytes: u64, room: usize) -> EngineError {
    EngineError::too_large(
        "memory_budget",
        None,
        format!(
            "{what} would take {} MiB of memory, more than the {} MiB this call has left of its budget \
             (PAPERCHAIN_CALL_MEMORY_MIB)",
            bytes.div_ceil(MIB as u64),
            room / MIB
        ),
    )
}

/// Runs `work` on this thread with its allocations charged to `budget`.
pub fn charging<T>(budget: &Arc<Budget>, work: impl FnOnce() -> T) -> T {
    struct Restore(*const Budget);
    impl Drop for Restore {
        fn drop(&mut self) {
            CHARGED.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(CHARGED.with(|c| c.replace(Arc::as_ptr(budget))));
    work()
}

/// A future whose polls are charged to `budget` (the async part of a call's work).
pub struct Charged<F> {
    budget: Arc<Budget>,
    work: Pin<Box<F>>,
}

impl<F: Future> Charged<F> {
    /// `work`, charged to `budget` whenever it runs.
    pub fn new(budget: Arc<Budget>, work: F) -> Charged<F> {
        Charged { budget, work: Box::pin(work) }
    }
}

impl<F: Future> Future for Charged<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        charging(&this.budget, || this.work.as_mut().poll(cx))
    }
}

/// Bytes the current call may still take: its budget's room, or no bound outside a call or
/// where memory is not counted. What code asks before it spends a size read from input.
pub fn room() -> usize {
    match crate::cancel::budget() {
        Some(budget) if counting() => budget.room(),
        _ => usize::MAX,
    }
}

/// Refuses (413 naming `what`) work that would take `bytes` more than the current call has
/// room for.
pub fn reserve(what: &str, bytes: u64) -> Result<(), EngineError> {
    let room = room();
    if bytes > room as u64 { Err(refuse(what, bytes, room)) } else { Ok(()) }
}

/// The memory settings of this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The most the whole process should hold (`PAPERCHAIN_MEMORY_MIB`).
    pub ceiling_bytes: usize,
    /// The most one call's work may hold (`PAPERCHAIN_CALL_MEMORY_MIB`).
    pub call_bytes: usize,
}

impl Settings {
    /// From the environment: `PAPERCHAIN_MEMORY_MIB` (default half of the machine's
    /// memory, at least 256 MiB) and `PAPERCHAIN_CALL_MEMORY_MIB` (default 1 GiB, at least
    /// 64 MiB, at most half the ceiling: one call alone must pass admission).
    pub fn from_env() -> Settings {
        let machine = machine_bytes().unwrap_or(4 << 30);
        let ceiling = env_number("PAPERCHAIN_MEMORY_MIB").map_or(machine / 2, |mib| mib as usize * MIB).max(256 * MIB);
        let call = env_number("PAPERCHAIN_CALL_MEMORY_MIB").map_or(1024 * MIB, |mib| mib as usize * MIB);
        Settings { ceiling_bytes: ceiling, call_bytes: call.clamp(64 * MIB, ceiling / 2) }
    }

    /// How many heavy calls may run at once within the ceiling: one budget each, and a
    /// budget kept for everything else the process holds.
    pub fn heavy_calls(&self) -> usize {
        (self.ceiling_bytes / self.call_bytes).saturating_sub(1).max(1)
    }
}

/// This process's settings, read once.
pub fn settings() -> Settings {
    static SETTINGS: OnceLock<Settings> = OnceLock::new();
    *SETTINGS.get_or_init(Settings::from_env)
}

/// The machine's memory (Linux: `MemTotal` of `/proc/meminfo`).
pub fn machine_bytes() -> Option<usize> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// This process's resident memory (Linux: `/proc/self/statm`), everything included: the
/// heap counted here and what C and C++ libraries hold.
pub fn resident_bytes() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Whether one more heavy call fits under the ceiling: 503 `busy` while the process
/// already holds more than the ceiling less one call's budget.
pub fn admit() -> Result<(), EngineError> {
    admit_with(resident_bytes().unwrap_or(0).max(live()), &settings())
}

/// [`admit`] for a process holding `held` bytes.
fn admit_with(held: usize, settings: &Settings) -> Result<(), EngineError> {
    if held + settings.call_bytes > settings.ceiling_bytes {
        return Err(crate::work_gate::busy(format!(
            "the server holds {} MiB of memory and one more operation may need {} MiB, past its ceiling of {} MiB \
             (PAPERCHAIN_MEMORY_MIB); send the call again in a few seconds",
            held / MIB,
            settings.call_bytes / MIB,
            settings.ceiling_bytes / MIB
        )));
    }
    Ok(())
}

/// A call that held this much at its peak gives what it freed back when it ends.
pub const GIVE_BACK_AFTER: usize = 64 * MIB;

/// Gives the memory freed by a finished heavy call back to the system (glibc keeps freed
/// memory in its arenas otherwise, and the process would not come back to its resting size).
pub fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: malloc_trim only returns free memory of glibc's arenas to the system.
        unsafe { malloc_trim(0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_counts_what_is_held_and_goes_over_once() {
        let budget = Budget::new(100);
        budget.add(60);
        budget.add(-20);
        assert_eq!((budget.used(), budget.peak(), budget.room()), (40, 60, 60));
        assert!(budget.check().is_ok());
        budget.add(70);
        let over = budget.check().unwrap_err();
        assert_eq!(over.code, "memory_budget");
        assert!(over.message.contains("PAPERCHAIN_CALL_MEMORY_MIB"), "{}", over.message);
        budget.add(-110);
        assert!(budget.check().is_err(), "once over, the call stays stopped");
        assert_eq!(budget.peak(), 110);
    }

    #[test]
    fn freeing_what_the_call_did_not_allocate_gives_it_no_room() {
        let budget = Budget::new(100);
        budget.add(-500);
        assert_eq!(budget.used(), 0);
        budget.add(120);
        assert!(budget.check().is_err(), "120 over a budget of 100, whatever was freed before");
    }

    #[test]
    fn heavy_calls_keep_one_budget_for_the_rest() {
        let settings = Settings { ceiling_bytes: 12 << 30, call_bytes: 1 << 30 };
        assert_eq!(settings.heavy_calls(), 11);
        let small = Settings { ceiling_bytes: 1 << 30, call_bytes: 1 << 30 };
        assert_eq!(small.heavy_calls(), 1);
    }

    #[test]
    fn a_heavy_call_is_busy_while_one_more_budget_would_pass_the_ceiling() {
        let settings = Settings { ceiling_bytes: 4096 * MIB, call_bytes: 1024 * MIB };
        assert!(admit_with(3072 * MIB, &settings).is_ok());
        let busy = admit_with(3073 * MIB, &settings).unwrap_err();
        assert_eq!(busy.code, "busy");
        assert!(busy.message.contains("ceiling of 4096 MiB (PAPERCHAIN_MEMORY_MIB)"), "{}", busy.message);
    }

    #[test]
    fn the_process_size_is_read() {
        assert!(resident_bytes().unwrap() > 0);
        assert!(machine_bytes().unwrap() > 0);
    }
}
