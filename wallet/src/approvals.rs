//! Payments waiting for the user: an [`Approver`] that queues each approval until a user
//! interface (the desktop app, the page at `/app`, or the one-time page an agent's client
//! opens for it) answers it, or the wait runs out.
//!
//! Each approval has a one-time token besides its id: the page of one approval
//! (`/app/approve/<id>?token=…`) shows and answers that approval only, for as long as it
//! waits, and nothing without the token can.

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
    waiting: Mutex<BTreeMap<u64, Entry>>,
    next: AtomicU64,
    /// How long a call waits for an answer before it is refused.
    patience: Duration,
    /// Woken whenever an approval is added (a native notification can follow it).
    added: Notify,
}

struct Entry {
    waiting: Waiting,
    /// The one-time token of this approval's page.
    token: String,
    reply: oneshot::Sender<bool>,
}

/// An approval asked and waiting: its id and page token, and the answer to come.
pub struct Asked {
    /// Its id in the queue.
    pub id: u64,
    /// The token of its one-time page.
    pub token: String,
    answer: oneshot::Receiver<bool>,
}

impl ApprovalQueue {
    /// A queue whose approvals are refused after `patience` without an answer.
    pub fn new(patience: Duration) -> ApprovalQueue {
        ApprovalQueue { waiting: Mutex::new(BTreeMap::new()), next: AtomicU64::new(1), patience, added: Notify::new() }
    }

    /// How long an approval waits for its answer.
    pub fn patience(&self) -> Duration {
        self.patience
    }

    /// The approvals waiting, oldest first.
    pub fn waiting(&self) -> Vec<Waiting> {
        self.lock().values().map(|e| e.waiting.clone()).collect()
    }

    /// Answers approval `id`; `false` when no such approval waits (answered, or given up).
    pub fn answer(&self, id: u64, approve: bool) -> bool {
        match self.lock().remove(&id) {
            Some(entry) => entry.reply.send(approve).is_ok(),
            None => false,
        }
    }

    /// Approval `id` as its one-time page shows it, when it waits and `token` is its own.
    pub fn with_token(&self, id: u64, token: &str) -> Option<Waiting> {
        self.lock().get(&id).filter(|e| same_token(&e.token, token)).map(|e| e.waiting.clone())
    }

    /// Answers approval `id` from its one-time page; `false` when it does not wait or the
    /// token is not its own.
    pub fn answer_with_token(&self, id: u64, token: &str, approve: bool) -> bool {
        let mut waiting = self.lock();
        if !waiting.get(&id).is_some_and(|e| same_token(&e.token, token)) {
            return false;
        }
        waiting.remove(&id).is_some_and(|entry| entry.reply.send(approve).is_ok())
    }

    /// Queues `approval`; [`ApprovalQueue::wait`] gives its answer.
    pub fn ask(&self, approval: &Approval) -> Asked {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let token = hex::encode(rand::random::<[u8; 16]>());
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
        self.lock().insert(id, Entry { waiting, token: token.clone(), reply });
        self.added.notify_waiters();
        Asked { id, token, answer }
    }

    /// The answer to `asked` (`approval`): `Ok` when approved; a refusal, a closed app or no
    /// answer within the patience is an error saying which.
    pub async fn wait(&self, asked: Asked, approval: &Approval) -> Result<(), String> {
        let Asked { id, answer, .. } = asked;
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
    }

    /// Resolves when an approval is added.
    pub async fn added(&self) {
        self.added.notified().await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Entry>> {
        self.waiting.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Compares two tokens in time that does not depend on where they differ.
fn same_token(kept: &str, offered: &str) -> bool {
    use sha2::Digest as _;
    sha2::Sha256::digest(kept.as_bytes()) == sha2::Sha256::digest(offered.as_bytes())
}

impl Approver for ApprovalQueue {
    fn approve<'a>(&'a self, approval: &'a Approval) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move { self.wait(self.ask(approval), approval).await })
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
    async fn a_page_answers_its_own_approval_only_with_its_token() {
        let queue = std::sync::Arc::new(ApprovalQueue::new(Duration::from_secs(30)));
        let asked = queue.ask(&approval());
        let (id, token) = (asked.id, asked.token.clone());
        assert_eq!(token.len(), 32);
        assert!(queue.with_token(id, "0".repeat(32).as_str()).is_none());
        assert!(queue.with_token(id + 1, &token).is_none());
        assert_eq!(queue.with_token(id, &token).unwrap().route, "rotate_pdf_pages");
        assert!(!queue.answer_with_token(id, "wrong", true), "a wrong token answers nothing");
        assert_eq!(queue.waiting().len(), 1);
        assert!(queue.answer_with_token(id, &token, false));
        let refused = queue.wait(asked, &approval()).await.unwrap_err();
        assert!(refused.contains("refused"), "{refused}");
        assert!(!queue.answer_with_token(id, &token, true), "answered once");
    }

    #[tokio::test]
    async fn no_answer_in_time_is_a_refusal() {
        let queue = ApprovalQueue::new(Duration::from_millis(50));
        let result = queue.approve(&approval()).await;
        assert!(result.unwrap_err().contains("got none"));
        assert!(queue.waiting().is_empty());
    }
}
