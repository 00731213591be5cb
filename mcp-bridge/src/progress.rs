//! A tool call's progress as MCP progress notifications: when the call carries a
//! `progressToken` in its `_meta`, what the engine reports (pages read of the total, steps
//! done) goes to the client as `notifications/progress`, in order and strictly increasing
//! as the specification asks, with a message such as "7 of 20 pages". Work in phases (a
//! conversion reads every page's layout, then the scanned pages by OCR) goes on counting
//! from where the last phase ended: "3 of 6 scanned pages read by OCR" is sent as 9 of 12.

use std::sync::Mutex;

use paperchain_engine::context::Progress;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use tokio::sync::mpsc;

/// Sends one call's progress to its client.
pub struct ToolProgress {
    /// Where the reports stand: several threads may report out of order.
    counted: Mutex<Counted>,
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
        ToolProgress { counted: Mutex::new(Counted::default()), sender, token }
    }
}

/// The phase being reported, and what the phases before it counted.
#[derive(Default)]
struct Counted {
    phase: String,
    /// The totals of the phases before this one.
    before: u64,
    /// The last `done` of this phase sent, and its total.
    last: u64,
    total: u64,
}

impl Counted {
    /// The progress and total to send for a report, or None for one that is not past the
    /// last sent (out of order).
    fn report(&mut self, what: &str, done: u64, total: u64) -> Option<(u64, u64)> {
        if what != self.phase {
            self.before += self.total;
            self.phase = what.to_string();
            (self.last, self.total) = (0, 0);
        }
        if done <= self.last {
            return None;
        }
        (self.last, self.total) = (done, total);
        Some((self.before + done, self.before + total))
    }
}

impl Progress for ToolProgress {
    fn advance(&self, what: &str, done: u64, total: u64) {
        let mut counted = self.counted.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some((progress, all)) = counted.report(what, done, total) else { return };
        let report = ProgressNotificationParam::new(self.token.clone(), progress as f64)
            .with_total(all as f64)
            .with_message(format!("{done} of {total} {what}"));
        let _ = self.sender.send(report);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_go_on_counting_and_late_reports_are_dropped() {
        let mut counted = Counted::default();
        let sent: Vec<Option<(u64, u64)>> =
            [("pages", 1, 3), ("pages", 3, 3), ("pages", 2, 3), ("scans", 1, 2), ("scans", 2, 2)]
                .into_iter()
                .map(|(what, done, total)| counted.report(what, done, total))
                .collect();
        assert_eq!(sent, vec![Some((1, 3)), Some((3, 3)), None, Some((4, 5)), Some((5, 5))]);
    }
}
