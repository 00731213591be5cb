//! A tool call's progress as MCP progress notifications: when the call carries a
//! `progressToken` in its `_meta`, what the engine reports (pages read of the total, steps
//! done) goes to the client as `notifications/progress`, in order and strictly increasing
//! as the specification asks, with a message such as "7 of 20 pages".

use std::sync::Mutex;

use paperchain_engine::context::Progress;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use tokio::sync::mpsc;

/// Sends one call's progress to its client.
pub struct ToolProgress {
    /// The last `done` sent: reports from several threads may arrive out of order.
    last: Mutex<u64>,
    sender: mpsc::UnboundedSender<ProgressNotificationParam>,
    token: ProgressToken,
}

impl ToolProgress {
    /// Progress for the call whose token is `token`, sent to `peer` in the order reported;
    /// the sending ends when the last reference to it goes.
    pub fn start(peer: Peer<RoleServer>, token: ProgressToken) -> ToolProgress {
        let (sender, mut reports) = mpsc::unbounded_channel::<ProgressNotificationParam>();
        tokio::spawn(async move {
            while let Some(report) = reports.recv().await {
                if let Err(e) = peer.notify_progress(report).await {
                    tracing::debug!(error = %e, "a progress notification could not be sent");
                    break;
                }
            }
        });
        ToolProgress { last: Mutex::new(0), sender, token }
    }
}

impl Progress for ToolProgress {
    fn advance(&self, what: &str, done: u64, total: u64) {
        let mut last = self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if done <= *last {
            return;
        }
        *last = done;
        let report = ProgressNotificationParam::new(self.token.clone(), done as f64)
            .with_total(total as f64)
            .with_message(format!("{done} of {total} {what}"));
        let _ = self.sender.send(report);
    }
}
