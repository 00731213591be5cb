//! Payment approval in the conversation: a routed call whose payment is above
//! `policy.approve_above`, from an MCP client that takes URL-mode elicitation, asks the user
//! through that client. The URL is the approval's one-time page on this server
//! (`/app/approve/<id>?token=…`, loopback only, for that approval, gone once answered or
//! when the wait runs out) saying who asks, for which operation, to which service and how
//! much, with Approve and Deny.
//!
//! The approval waits in the server's one queue, so the app's dialog can answer it too;
//! the first answer counts. A client that declines or cancels the elicitation denies it.
//! Deny or no answer in time signs nothing, and the ledger says denied. A client without
//! URL-mode elicitation (or a 2026-07-28 session, where a server sends no request of its
//! own) is not given this approver: its calls wait for the app's dialog as before.

use std::sync::Arc;

use paperchain_gateway::app::approve::page_path;
use paperchain_wallet::approvals::ApprovalQueue;
use paperchain_wallet::client::{Approval, Approver, BoxFuture};
use rmcp::model::{ElicitationAction, ProtocolVersion};
use rmcp::service::{ElicitationMode, Peer, RoleServer};

/// Asks the user of one MCP session through its client.
pub struct ElicitingApprover {
    /// The server's approval queue (its pages and the app's dialog answer from it).
    pub queue: Arc<ApprovalQueue>,
    /// The session's client.
    pub peer: Peer<RoleServer>,
    /// The server's base URL (loopback), without a trailing slash.
    pub base_url: String,
}

impl ElicitingApprover {
    /// An approver for the session of `peer`, when its client takes URL-mode elicitation
    /// and may be sent a request (a session before 2026-07-28).
    pub fn for_session(queue: &Arc<ApprovalQueue>, peer: &Peer<RoleServer>, base_url: &str) -> Option<Self> {
        let info = peer.peer_info()?;
        let modern = info.protocol_version >= ProtocolVersion::V_2026_07_28;
        if modern || !peer.supported_elicitation_modes().contains(&ElicitationMode::Url) {
            return None;
        }
        Some(ElicitingApprover { queue: queue.clone(), peer: peer.clone(), base_url: base_url.to_string() })
    }
}

impl Approver for ElicitingApprover {
    fn approve<'a>(&'a self, approval: &'a Approval) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let asked = self.queue.ask(approval);
            let (id, url) = (asked.id, format!("{}{}", self.base_url, page_path(asked.id, &asked.token)));
            let message = format!(
                "Paperchain asks to pay {} to {} for {}. Open the page to approve or deny; nothing is paid unless you \
                 approve.",
                approval.description, approval.host, approval.route
            );
            let url = match url::Url::parse(&url) {
                Ok(url) => url,
                Err(e) => {
                    self.queue.answer(id, false);
                    return Err(format!("the approval page's address is not a URL ({e})"));
                }
            };
            let answered = self.queue.wait(asked, approval);
            tokio::pin!(answered);
            let elicited = self.peer.elicit_url_with_timeout(
                message,
                url,
                format!("paperchain-approval-{id}"),
                Some(self.queue.patience()),
            );
            tokio::select! {
                outcome = &mut answered => return outcome,
                action = elicited => match action {
                    // The user went to the page: its answer (or the app's) decides.
                    Ok(ElicitationAction::Accept) => {}
                    Ok(_) => {
                        self.queue.answer(id, false);
                    }
                    Err(error) => {
                        // The client could not show it: the app's dialog may still answer.
                        tracing::warn!(%error, "asking the user through the agent's client failed");
                    }
                },
            }
            answered.await
        })
    }
}
