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
//! URL-mode elicitation is not given an approver: its calls wait for the app's dialog.
//!
//! How the client is asked depends on the protocol the request speaks:
//! - before 2026-07-28 the server sends `elicitation/create` during the call
//!   ([`ElicitingApprover`]);
//! - from 2026-07-28 a server sends no request of its own: the call is held here and
//!   answered at once with an `InputRequiredResult` carrying the elicitation and a
//!   `requestState` naming the held call ([`RoundTripApprover`], [`HeldCalls`]). The
//!   client opens the page, then repeats the call with the elicitation's result and that
//!   `requestState`; the repeat takes the held call's result. The payment waits for both
//!   the page's answer and the client's return, so nothing is paid for a result no one
//!   comes back for.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use paperchain_engine::cancel::Stop;
use paperchain_gateway::app::approve::page_path;
use paperchain_wallet::approvals::{ApprovalQueue, Asked};
use paperchain_wallet::client::{Approval, Approver, BoxFuture};
use rmcp::model::{
    CallToolResult, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest, InputRequests,
    InputRequiredResult, InputResponses, ProtocolVersion,
};
use rmcp::service::{ElicitationMode, Peer, RequestContext, RoleServer};
use serde_json::Value;
use sha2::Digest as _;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The key of the approval in an `InputRequiredResult`'s `inputRequests` (and of the
/// client's answer in the repeat's `inputResponses`).
pub const APPROVAL_INPUT: &str = "payment_approval";

/// How long past the queue's patience a held call waits for its client to come back.
const HELD_MARGIN: Duration = Duration::from_secs(60);

/// What the client is asked: the message, and the approval's page.
fn ask_user(
    queue: &ApprovalQueue,
    approval: &Approval,
    base_url: &str,
    asked: &Asked,
) -> Result<(String, url::Url), String> {
    let url = format!("{base_url}{}", page_path(asked.id, &asked.token));
    let message = format!(
        "Paperchain asks to pay {} to {} for {}. Open the page to approve or deny; nothing is paid unless you \
         approve.",
        approval.description, approval.host, approval.route
    );
    match url::Url::parse(&url) {
        Ok(url) => Ok((message, url)),
        Err(e) => {
            queue.answer(asked.id, false);
            Err(format!("the approval page's address is not a URL ({e})"))
        }
    }
}

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
            let id = asked.id;
            let (message, url) = ask_user(&self.queue, approval, &self.base_url, &asked)?;
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

/// Whether the client of this request is asked by a round trip: the request speaks
/// 2026-07-28 or later and declares URL-mode elicitation in its own capabilities.
pub fn round_trips(context: &RequestContext<RoleServer>) -> bool {
    let modern = context.protocol_version().is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
    let url = context.client_capabilities().and_then(|c| c.elicitation).is_some_and(|e| e.url.is_some());
    modern && url
}

/// The user was asked: what the held call's client is told, and how the call learns the
/// client came back.
struct AskedUser {
    approval: u64,
    message: String,
    url: url::Url,
    came_back: oneshot::Sender<()>,
}

/// Asks the user of a 2026-07-28 request: queues the approval, hands its page to the
/// request's handler (which answers the client with it), then waits for both the page's
/// answer and the client's return.
struct RoundTripApprover {
    queue: Arc<ApprovalQueue>,
    base_url: String,
    tell: Mutex<Option<oneshot::Sender<AskedUser>>>,
}

impl Approver for RoundTripApprover {
    fn approve<'a>(&'a self, approval: &'a Approval) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let asked = self.queue.ask(approval);
            let id = asked.id;
            let (message, url) = ask_user(&self.queue, approval, &self.base_url, &asked)?;
            let (came_back, back) = oneshot::channel();
            let tell = self.tell.lock().unwrap_or_else(|p| p.into_inner()).take();
            let told = tell.is_some_and(|tell| tell.send(AskedUser { approval: id, message, url, came_back }).is_ok());
            if !told {
                self.queue.answer(id, false);
                return Err(format!("{} was not asked: the call's request is gone", approval.description));
            }
            let patience = self.queue.patience() + HELD_MARGIN;
            let (answer, back) = tokio::join!(self.queue.wait(asked, approval), tokio::time::timeout(patience, back));
            match back {
                Ok(Ok(())) => answer,
                _ => Err(format!(
                    "{} was not paid: the agent's client did not come back for the user's answer",
                    approval.description
                )),
            }
        })
    }
}

/// A call held while its user answers, until its client comes back.
struct Held {
    /// The tool and its arguments: only a repeat of the same call takes it.
    digest: [u8; 32],
    approval: u64,
    /// The elicitation, asked again when a repeat brings no answer.
    ask: InputRequest,
    came_back: oneshot::Sender<()>,
    result: JoinHandle<CallToolResult>,
    stop: Stop,
    since: Instant,
}

/// The calls held for their clients' return, keyed by the `requestState` given out: a
/// random 128-bit name, which only the client it was given to knows.
#[derive(Default)]
pub struct HeldCalls {
    held: Mutex<HashMap<String, Held>>,
}

/// A tool call, run with the approver and stop signal given.
pub type HeldCall =
    Box<dyn FnOnce(Arc<dyn Approver>, Stop) -> std::pin::Pin<Box<dyn Future<Output = CallToolResult> + Send>> + Send>;

/// What a held call answers now: its result, or the client is to ask its user.
pub enum Answered {
    Done(CallToolResult),
    AskUser(InputRequiredResult),
}

/// Digest of one tool call: its name and arguments (as JSON, keys in order).
pub fn call_digest(name: &str, arguments: &Value) -> [u8; 32] {
    let mut hash = sha2::Sha256::new();
    hash.update(name.as_bytes());
    hash.update([0]);
    hash.update(arguments.to_string().as_bytes());
    hash.finalize().into()
}

impl HeldCalls {
    /// Runs `call`. When it asks its user, it is held, and the client is answered with the
    /// elicitation and the `requestState` to come back with. `stopped` (the request's own
    /// cancellation) stops the call until then.
    pub async fn start(
        &self,
        queue: &Arc<ApprovalQueue>,
        base_url: &str,
        digest: [u8; 32],
        stopped: impl Future<Output = ()>,
        call: HeldCall,
    ) -> Answered {
        self.forget_expired(queue.patience());
        let mut stopped = std::pin::pin!(stopped);
        let (tell, told) = oneshot::channel();
        let approver =
            RoundTripApprover { queue: queue.clone(), base_url: base_url.to_string(), tell: Mutex::new(Some(tell)) };
        let stop = Stop::new();
        let mut result = tokio::spawn(call(Arc::new(approver), stop.clone()));
        tokio::select! {
            done = &mut result => Answered::Done(joined(done)),
            () = &mut stopped => Answered::Done(stopped_call(&stop, result).await),
            asked = told => match asked {
                Ok(AskedUser { approval, message, url, came_back }) => {
                    let ask = url_request(approval, message, &url);
                    let state = hex::encode(rand::random::<[u8; 16]>());
                    let held = Held { digest, approval, ask: ask.clone(), came_back, result, stop, since: Instant::now() };
                    self.lock().insert(state.clone(), held);
                    Answered::AskUser(ask_again(ask, state))
                }
                // The approver is gone without asking: the call ended.
                Err(_) => Answered::Done(joined(result.await)),
            },
        }
    }

    /// A repeat of a held call, with the client's answers: the held call's result once its
    /// user answered (the page, or a decline here); the same question again when the
    /// repeat brings no answer to it.
    pub async fn resume(
        &self,
        queue: &ApprovalQueue,
        state: &str,
        digest: [u8; 32],
        responses: Option<&InputResponses>,
        stopped: impl Future<Output = ()>,
    ) -> Result<Answered, String> {
        self.forget_expired(queue.patience());
        let held = {
            let mut held = self.lock();
            let waiting = match held.get(state) {
                None => {
                    return Err("no call waits for this requestState: it was answered already, or waited too long; \
                                call again without it"
                        .into());
                }
                Some(h) if h.digest != digest => {
                    return Err("this requestState belongs to another call: repeat the same tool with the same \
                                arguments"
                        .into());
                }
                Some(waiting) => waiting,
            };
            let Some(answer) = responses.and_then(|r| r.get(APPROVAL_INPUT)) else {
                return Ok(Answered::AskUser(ask_again(waiting.ask.clone(), state.to_string())));
            };
            let Some(held) = held.remove(state) else { unreachable!("found above, under the same lock") };
            let accepted = serde_json::from_value::<ElicitResult>(answer.clone())
                .is_ok_and(|r| r.action == ElicitationAction::Accept);
            if !accepted {
                // Declined or cancelled in the client: denied.
                queue.answer(held.approval, false);
            }
            held
        };
        let Held { came_back, mut result, stop, .. } = held;
        let mut stopped = std::pin::pin!(stopped);
        let _ = came_back.send(());
        Ok(Answered::Done(tokio::select! {
            done = &mut result => joined(done),
            () = &mut stopped => stopped_call(&stop, result).await,
        }))
    }

    /// Drops the calls whose client did not come back in time (their calls end unpaid on
    /// their own).
    fn forget_expired(&self, patience: Duration) {
        self.lock().retain(|_, held| held.since.elapsed() < patience + 2 * HELD_MARGIN);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The URL-mode elicitation of approval `approval`.
fn url_request(approval: u64, message: String, url: &url::Url) -> InputRequest {
    InputRequest::Elicitation(ElicitRequest::new(ElicitRequestParams::UrlElicitationParams {
        meta: None,
        message,
        url: url.to_string(),
        // Not in 2026-07-28's schema (the requestState names the call); written anyway.
        elicitation_id: format!("paperchain-approval-{approval}"),
    }))
}

fn ask_again(ask: InputRequest, state: String) -> InputRequiredResult {
    let mut requests = InputRequests::new();
    requests.insert(APPROVAL_INPUT.to_string(), ask);
    InputRequiredResult::new(Some(requests), Some(state))
}

/// Stops a call whose request was cancelled, and waits for it to end (unpaid, or as the call
/// path leaves a payment already under way).
async fn stopped_call(stop: &Stop, result: JoinHandle<CallToolResult>) -> CallToolResult {
    stop.stop(paperchain_engine::cancel::Why::Cancelled);
    joined(result.await)
}

/// A held call's result, or a tool error when its task failed.
fn joined(done: Result<CallToolResult, tokio::task::JoinError>) -> CallToolResult {
    done.unwrap_or_else(|e| {
        crate::results::failure(paperchain_engine::EngineError::internal(format!("the call's task failed: {e}")).into())
    })
}
