//! The call path: every call, whichever door it came through (HTTP, MCP, the CLI, the
//! desktop app), goes through [`CallPath::run`], and the decision where it runs is made
//! there and nowhere else:
//!
//! - a hosted server puts it through its paywall ([`paywall::Paywall`]: free pool or
//!   payment, the operation, settlement);
//! - a local one runs it here, or routes it to the hosted service and pays with the wallet,
//!   as the user's configuration and the call ask ([`routed`]), and records it in the
//!   ledger.
//!
//! A door translates its request into a [`Call`] and the [`Outcome`] into its own answer
//! (statuses and headers, tool results, files and exit codes); it holds no switch of its
//! own. [`CallPath::admit`] tells a door whether to take the call's place at the heavy-work
//! gate before it reads a large body.
//!
//! A call runs in a task of its own, so a door whose caller goes away cannot cut a
//! payment, a settlement or a ledger row short. A local run is bounded by the path's
//! timeout (504 past it). [`status_of`] is the one mapping of an engine error's kind to a
//! status, which the HTTP and MCP doors answer with and the ledger records.
//!
//! In local mode a file input may name a file on this machine (`{"path": …}`) and a call
//! may ask for its file result to be saved to a path ([`Call::save_to`]): both inside the
//! folders the user granted, read and written here ([`local_files`]), whether the call
//! then runs here or is routed. A file input may also name a file kept in the keyring
//! (`{"keyring": …}`, a signing identity): read here too, and such a call never leaves
//! this machine. Hosted mode takes none of them.
//!
//! What this crate must not do: know a door's wire format (HTTP headers, MCP `_meta`,
//! arguments), contain a payment rule, or depend on the hosted service's crate.

pub mod local_files;
pub mod paywall;
pub mod routed;

use std::any::Any;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use paperchain_engine_core::cancel::{self, Stop};
use paperchain_engine_core::catalog::{Admission, RouteEntry};
use paperchain_engine_core::context::Progress;
use paperchain_engine_core::{Catalog, Context, EngineError, ErrorKind, Reply};
use paperchain_wallet::client::{Approver, CallError, HostedAnswer, PayingClient, Quote};
use paperchain_wallet::config::RouteMode;
use paperchain_wallet::ledger::Caller;
use serde_json::Value;

use crate::local_files::SaveTo;
use crate::paywall::{Failure, FreeAsk, PaidCall, Payment, Paywall};

/// The header carrying a one-file result's report (compact JSON, ASCII) for `output: "file"`;
/// a hosted service's answer carries it too.
pub const REPORT_HEADER: &str = "paperchain-report";

/// A request body as the door received it.
pub enum Body {
    /// A JSON body.
    Json(bytes::Bytes),
    /// A body declared as something else (the Content-Type given, possibly empty).
    NotJson(String),
    /// A body over the size limit (bytes).
    TooLarge(usize),
}

/// One call, as every door hands it over.
pub struct Call {
    /// The route's path (`/v1/pdf/rotate`).
    pub path: &'static str,
    /// The body.
    pub body: Body,
    /// Who calls, through which door.
    pub caller: Caller,
    /// Local mode: where the call asks to run (`Paperchain-Route`, `--route`), if it asks.
    pub mode: Option<RouteMode>,
    /// Local mode: only what the hosted service would charge is wanted.
    pub quote_only: bool,
    /// Local mode: save the file result there instead of answering with it; the answer is
    /// then JSON naming the files written.
    pub save_to: Option<SaveTo>,
    /// Local mode: who approves a routed payment above the approval threshold, instead of
    /// the paying client's own approver (the door can ask the user through its caller).
    pub approver: Option<Arc<dyn Approver>>,
    /// Hosted mode: the payment the call carries.
    pub payment: Option<Payment>,
    /// Hosted mode: whether the caller asks for the free pool.
    pub free: FreeAsk,
    /// Hosted mode: the caller's address (free pools are per address).
    pub client_ip: Option<IpAddr>,
    /// Hosted mode: the call came as an HTTP request (MPP challenges are bound to it).
    pub over_http: bool,
    /// The call's place at the heavy-work gate when the door took one before it read the
    /// body ([`CallPath::admit`]); the default when it did not.
    pub admission: Admission,
    /// Held until the call ends, wherever it runs (the HTTP door's share of its body budget).
    pub hold: Option<Box<dyn Any + Send>>,
    /// The call's stop signal. [`CallPath::run`] gives it when the door stops waiting (its
    /// caller went away); a door gives it when its caller asks to cancel (MCP
    /// `notifications/cancelled`). The work stops, and a routed call not yet paid pays nothing.
    pub stop: Stop,
    /// Where the call's progress goes (pages done of the total) when its caller asked for
    /// it (an MCP `progressToken`); the path's own sink otherwise.
    pub progress: Option<Arc<dyn Progress>>,
}

impl Call {
    /// A call of the route at `path` with a JSON `body`, from `caller`; nothing else asked.
    pub fn new(path: &'static str, body: impl Into<bytes::Bytes>, caller: Caller) -> Call {
        Call {
            path,
            body: Body::Json(body.into()),
            caller,
            mode: None,
            quote_only: false,
            save_to: None,
            approver: None,
            payment: None,
            free: FreeAsk::No,
            client_ip: None,
            over_http: false,
            admission: Admission::default(),
            hold: None,
            stop: Stop::new(),
            progress: None,
        }
    }
}

/// What came of a call.
pub enum Outcome {
    /// Local mode: the engine ran it here; the ledger's id of the call when one was recorded.
    Local(Result<Reply<Value>, EngineError>, Option<String>),
    /// Local mode: routed to the hosted service, whose answer is passed on as it came.
    Hosted(Result<HostedAnswer, CallError>),
    /// Local mode: only a quote was asked for.
    Quote(Box<Result<Quote, CallError>>),
    /// Hosted mode: the paywall's answer.
    Paywall(paywall::Answer),
    /// Refused before anything ran (a body that is not JSON or too large, no such route).
    Refused(Failure),
}

/// Where calls go: the catalog and context they run with, and either a paywall (hosted
/// mode) or the paying client (local mode). Cheap to clone.
#[derive(Clone)]
pub struct CallPath {
    catalog: Arc<Catalog>,
    ctx: Context,
    gate: Gate,
}

#[derive(Clone)]
enum Gate {
    /// Local mode: the paying client (`None`: every call runs here, unrecorded) and the
    /// longest a local run may take.
    Local { client: Option<Arc<PayingClient>>, timeout: Duration },
    /// Hosted mode: the paywall limits the operation itself.
    Paywall(Arc<dyn Paywall>),
}

impl CallPath {
    /// Local mode: calls run here or go to the hosted service as `client`'s configuration
    /// says; a local run may take `timeout`.
    pub fn local(
        catalog: Arc<Catalog>,
        ctx: Context,
        client: Option<Arc<PayingClient>>,
        timeout: Duration,
    ) -> CallPath {
        CallPath { catalog, ctx, gate: Gate::Local { client, timeout } }
    }

    /// Hosted mode: every call goes through `paywall`.
    pub fn hosted(catalog: Arc<Catalog>, ctx: Context, paywall: Arc<dyn Paywall>) -> CallPath {
        CallPath { catalog, ctx, gate: Gate::Paywall(paywall) }
    }

    /// The routes.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// The engine context calls run with.
    pub fn ctx(&self) -> &Context {
        &self.ctx
    }

    /// The paywall, in hosted mode.
    pub fn paywall(&self) -> Option<&Arc<dyn Paywall>> {
        match &self.gate {
            Gate::Paywall(paywall) => Some(paywall),
            Gate::Local { .. } => None,
        }
    }

    /// The paying client, in local mode with a wallet.
    pub fn client(&self) -> Option<&Arc<PayingClient>> {
        match &self.gate {
            Gate::Local { client, .. } => client.as_ref(),
            Gate::Paywall(_) => None,
        }
    }

    /// The call's place at the heavy-work gate, taken before the door reads its body when
    /// the call can only run here (hosted mode always; local mode when it is neither a
    /// quote nor routed, nor `auto`, which goes to the hosted service when this server is
    /// busy): a busy server refuses at once. Otherwise the default, which takes no place.
    pub fn admit(
        &self,
        route: &RouteEntry,
        mode: Option<RouteMode>,
        quote_only: bool,
    ) -> Result<Admission, EngineError> {
        let here_only = match &self.gate {
            Gate::Paywall(_) => true,
            Gate::Local { client, .. } => routed::runs_here_only(client.as_ref(), route, mode, quote_only),
        };
        if here_only { route.admit(&self.ctx) } else { Ok(Admission::default()) }
    }

    /// Runs `call` where it belongs and says what came of it. The call runs in its own
    /// task: a door whose caller goes away cannot cut a payment, a settlement or a ledger
    /// row short. It stops the call instead ([`Call::stop`]): the work stops between its
    /// steps, and the call ends as the ledger then says (`cancelled`).
    pub async fn run(&self, call: Call) -> Outcome {
        let path = self.clone();
        let stop_if_left = call.stop.on_drop();
        let outcome = match tokio::spawn(async move { path.run_here(call).await }).await {
            Ok(outcome) => outcome,
            Err(e) => {
                tracing::error!(error = %e, "a call's task failed");
                Outcome::Refused(Failure::Engine(EngineError::internal("the call's task failed")))
            }
        };
        stop_if_left.disarm();
        outcome
    }

    async fn run_here(&self, call: Call) -> Outcome {
        let Call {
            path,
            body,
            caller,
            mode,
            quote_only,
            save_to,
            approver,
            payment,
            free,
            client_ip,
            over_http,
            admission,
            hold,
            stop,
            progress,
        } = call;
        let _hold = hold;
        let ctx = match progress {
            Some(progress) => self.ctx.clone().with_progress(progress),
            None => self.ctx.clone(),
        };
        let ctx = &ctx;
        let Some(route) = self.catalog.by_path(path) else {
            return Outcome::Refused(Failure::Engine(EngineError::new(
                ErrorKind::NotFound,
                "not_found",
                format!("no route {path}"),
            )));
        };
        match &self.gate {
            Gate::Paywall(_) if save_to.is_some() => {
                let field = save_to.map(|s| s.field).unwrap_or_default();
                Outcome::Refused(Failure::Engine(EngineError::invalid_with(
                    "path_not_here",
                    &field,
                    format!("{field}: a hosted service writes no file on your machine; leave it out"),
                )))
            }
            Gate::Paywall(paywall) => {
                let call = PaidCall { route, body: &body, payment, free, client: client_ip, over_http, admission };
                // The paywall runs the operation as this call: its caller going away stops it, unsettled.
                Outcome::Paywall(cancel::within(stop, paywall.handle(call, ctx)).await)
            }
            Gate::Local { client, timeout } => {
                let body = match body {
                    Body::Json(bytes) => bytes,
                    Body::NotJson(content_type) => return Outcome::Refused(Failure::NotJson(content_type)),
                    Body::TooLarge(limit) => return Outcome::Refused(Failure::TooLarge(limit)),
                };
                let folders = client.as_ref().map(|c| c.config().folders.clone()).unwrap_or_default();
                let max = ctx.limits.max_file_bytes;
                let body = match local_files::inline_paths(route, body, &folders, max).await {
                    Ok(local_files::Inlined { from_keyring: true, .. })
                        if routed::mode_for(client.as_ref(), route, mode) != RouteMode::Local =>
                    {
                        return Outcome::Local(
                            Err(EngineError::invalid_with(
                                "keyring_not_here",
                                "",
                                "a file kept in the keyring never leaves this machine, and this call is sent to the \
                                 hosted service; run it here (mode local), or send the file as `data`",
                            )),
                            None,
                        );
                    }
                    Ok(inlined) => inlined.body,
                    Err(error) => return Outcome::Local(Err(error), None),
                };
                let target = match save_to.as_ref().filter(|_| !quote_only) {
                    Some(save) => match local_files::check_save(route, &body, &folders, save) {
                        Ok(target) => Some(target),
                        Err(error) => return Outcome::Local(Err(error), None),
                    },
                    None => None,
                };
                let call = routed::LocalCall { route, body, caller, mode, quote_only, admission, approver, stop };
                let outcome = routed::run(client.as_ref(), ctx, call, *timeout).await;
                match target {
                    Some(target) => local_files::save_outcome(outcome, target).await,
                    None => outcome,
                }
            }
        }
    }
}

/// The status an engine error answers with (HTTP's numbers; the ledger records them for
/// every door), and how long to wait before trying again when that is known.
pub fn status_of(kind: &ErrorKind) -> u16 {
    match kind {
        ErrorKind::InvalidInput => 422,
        ErrorKind::NotFound => 404,
        ErrorKind::TooLarge => 413,
        ErrorKind::RateLimited { .. } => 429,
        ErrorKind::BadUpstream => 502,
        ErrorKind::Unavailable { .. } => 503,
        ErrorKind::Timeout => 504,
        ErrorKind::Cancelled => 499,
        ErrorKind::Internal => 500,
    }
}
