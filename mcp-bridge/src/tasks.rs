//! Long document operations as MCP tasks (the 2026-07-28 tasks extension,
//! `io.modelcontextprotocol/tasks`). A local server declares the extension; a heavy
//! operation (OCR, rendering, a conversion) called by a client that declares it too is
//! answered at once with a task handle, and runs as the same call it would have been. The
//! client polls `tasks/get`, which shows the work done so far as the task's status message
//! ("7 of 20 pages") and, once done, the tool's result; `tasks/cancel` stops the work as
//! `notifications/cancelled` does, and the ledger says `cancelled`.

use std::sync::Arc;

use paperchain_engine::cancel::{Stop, Why};
use paperchain_engine::context::Progress;
use rmcp::model::CallToolResult;
use rmcp::task_manager::{TaskContext, TaskExit, TaskFuture, TaskManager, TaskOptions};

/// How long a task and its result are kept for the client to read: an hour.
const TASK_TTL_MS: u64 = 60 * 60 * 1000;

/// How often the client is asked to poll.
const POLL_INTERVAL_MS: u64 = 500;

/// Reports a task's progress as its status message, and to the client's own progress
/// sink when it asked for one too.
struct TaskProgress {
    task: TaskContext,
    also: Option<Arc<dyn Progress>>,
}

impl Progress for TaskProgress {
    fn advance(&self, what: &str, done: u64, total: u64) {
        self.task.set_status_message(format!("{done} of {total} {what}"));
        if let Some(also) = &self.also {
            also.advance(what, done, total);
        }
    }
}

/// What a task runs: the call, given its stop signal and progress sink.
pub(crate) type TaskCall =
    Box<dyn FnOnce(Stop, Arc<dyn Progress>) -> std::pin::Pin<Box<dyn Future<Output = CallToolResult> + Send>> + Send>;

/// Starts `call` as a task of `tasks`; `progress` is the client's own sink, if any. The
/// answer is the task's first state, for the `CreateTaskResult`.
pub(crate) fn start(tasks: &TaskManager, progress: Option<Arc<dyn Progress>>, call: TaskCall) -> rmcp::model::Task {
    let options = TaskOptions::new()
        .with_ttl_ms(TASK_TTL_MS)
        .with_poll_interval_ms(POLL_INTERVAL_MS)
        .with_status_message("started");
    tasks.spawn(options, move |task: TaskContext| -> TaskFuture {
        Box::pin(async move {
            let stop = Stop::new();
            let sink: Arc<dyn Progress> = Arc::new(TaskProgress { task: task.clone(), also: progress });
            let run = call(stop.clone(), sink);
            tokio::select! {
                result = run => Ok(result),
                () = task.cancelled() => {
                    // The call path stops the work (its caller went away) and records it.
                    stop.stop(Why::Cancelled);
                    Err(TaskExit::Cancelled)
                }
            }
        })
    })
}
