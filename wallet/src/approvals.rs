//! Payments waiting for the user: an [`Approver`] that queues each approval until a user
//! interface (the desktop app, the page at `/app`) answers it, or the wait runs out.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::{Notify, oneshot};

use crate::client::{Approval, Approver, BoxFuture};

/// One approval waiting, as a user interface shows it.
#[derive(Clone, Debug, Serialize)]
pub struct Waiting {
    /// Its id, to answer it by.
    pub id: u64,
    /// The operation.
    pub route: String,
    /// The hosted service's host.
    pub host: String,
    /// Who asks: the MCP client's name or the HTTP caller's user agent.
    pub client: Option<String>,
    /// Through which front door.
    pub front_door: String,
    /// "0.25 USDC on eip155:8453 to 0x…".
    pub description: String,
    /// What it costs, in dollars ("0.25").
    pub dollars: String,
    /// Unix milliseconds when it was asked.
    pub asked_at_ms: i64,
}

/// Approvals waiting for the user; at most one answer each.
pub struct ApprovalQueue {
    waiting: Mutex<BTreeMap<u64, (Waiting, oneshot::Sender<bool>)>>,
    next: AtomicU64,
    /// How long a call waits for an answer before it is refused.
    patience: Duration,
    /// Woken whenever an approval is added (a native notification can follow it).
    added: Notify,
}

impl ApprovalQueue {
    /// A queue whose approvals are refused after `patience` without an answer.
    pub fn new(patience: Duration) -> ApprovalQueue {
        ApprovalQueue { waiting: Mutex::new(BTreeMap::new()), next: AtomicU64::new(1), patience, added: Notify::new() }
    }

    /// The approvals waiting, oldest first.
    pub fn waiting(&self) -> Vec<Waiting> {
        self.lock().values().map(|(w, _)| w.clone()).collect()
    }

    /// Answers approval `id`; `false` when no such approval waits (answered, or given up).
    pub fn answer(&self, id: u64, approve: bool) -> bool {
        match self.lock().remove(&id) {
            Some((_, reply)) => reply.send(approve).is_ok(),
            None => false,
        }
    }

    /// Resolves when an approval is added.
    pub async fn added(&self) {
        self.added.notified().await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, (Waiting, oneshot::Sender<bool>)>> {
        self.waiting.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Approver for ApprovalQueue {
    fn approve<'a>(&'a self, approval: &'a Approval) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let id = self.next.fetch_add(1, Ordering::Relaxed);
            let (reply, answer) = oneshot::channel();
            let waiting = Waiting {
                id,
                route: approval.route.clone(),
                host: approval.host.clone(),
                client: approval.client.clone(),
                front_door: approval.front_door.to_string(),
                description: approval.description.clone(),
                dollars: approval.dollars.to_string().trim_start_matches('$').to_string(),
                asked_at_ms: crate::ledger::now_ms(),
            };
            self.lock().insert(id, (waiting, reply));
            self.added.notify_waiters();
            // Removed however this ends, so an answer that comes late finds nothing.
            let outcome = tokio::time::timeout(self.patience, answer).await;
            self.lock().remove(&id);
            match outcome {
                Ok(Ok(true)) => Ok(()),
                Ok(Ok(false)) => Err(format!("the user refused {}", approval.description)),
                Ok(Err(_)) => Err(format!("{} was not answered (the app closed)", approval.description)),
                Err(_) => Err(format!(
                    "{} waited {} s for the user's approval and got none",
                    approval.description,
                    self.patience.as_secs()
                )),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::money::Dollars;

    fn approval() -> Approval {
        Approval {
            route: "rotate_pdf_pages".into(),
            host: "api.example".into(),
            description: "0.25 USDC on eip155:8453 to 0xabc".into(),
            dollars: "0.25".parse::<Dollars>().unwrap(),
            client: Some("agent".into()),
            front_door: "mcp",
        }
    }

    #[tokio::test]
    async fn an_answer_decides_and_a_late_one_finds_nothing() {
        let queue = std::sync::Arc::new(ApprovalQueue::new(Duration::from_secs(30)));
        for approve in [true, false] {
            let asking = {
                let queue = queue.clone();
                tokio::spawn(async move { queue.approve(&approval()).await })
            };
            let id = loop {
                if let Some(w) = queue.waiting().first() {
                    break w.id;
                }
                tokio::task::yield_now().await;
            };
            assert_eq!(queue.waiting()[0].client.as_deref(), Some("agent"));
            assert_eq!(queue.waiting()[0].dollars, "0.25");
            assert!(queue.answer(id, approve));
            let result = asking.await.unwrap();
            assert_eq!(result.is_ok(), approve, "{result:?}");
            assert!(!queue.answer(id, true), "answered once");
            assert!(queue.waiting().is_empty());
        }
    }

    #[tokio::test]
    async fn no_answer_in_time_is_a_refusal() {
        let queue = ApprovalQueue::new(Duration::from_millis(50));
        let result = queue.approve(&approval()).await;
        assert!(result.unwrap_err().contains("got none"));
        assert!(queue.waiting().is_empty());
    }
}
