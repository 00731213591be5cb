//! The paywall: what a hosted call costs, whether it may run, and when it is paid.
//!
//! It knows routes only through the catalog (`quote`, `run`) and front doors only
//! through the call path's [`PaidCall`] and [`Answer`] (`paperchain_calls::paywall`): every
//! door hands the call path a call and encodes what it answers, so the payment rules exist
//! once.
//!
//! The order of a call (spec, Authentication; design, "Payment flow"):
//! 1. quote the input: a valid input costs its exact price, a missing or invalid one the
//!    route's base price (and the 402 says what is wrong);
//! 2. unpaid: the free pool when asked for (`X-Svc-Free: 1`, or always over MCP) and not
//!    used up, else 402; nothing is consumed by a 402;
//! 3. paid: invalid input is refused with its own status and the payment is not used;
//!    a payment for another amount is a fresh 402 `price_mismatch`; a payload already
//!    used is refused; else verify, run, and settle only when the operation succeeded;
//!    the result is delivered only when settlement succeeded.
//!
//! A payment payload is claimed in the store before it is verified, so two copies at
//! the same moment cannot both run; the claim is released when the call fails before
//! settlement (nothing ran to completion, nothing was charged: the same signed payload may
//! be sent again) and made permanent once settlement was attempted.
//!
//! Every 402 advertises the spec's `payment-identifier` extension (optional). A paid
//! call whose answer was lost can be resent with the very same payload: when its replay
//! key is already `settled`, and it carries the same payment id, for the same route and
//! the same body bytes (sha256) as the settled call, the operation runs again without
//! verifying or settling anything and the answer goes out with the stored settlement
//! (exactly-once payment, at-least-once execution; ledger outcome `redelivered`). Any
//! other resend of a used payload is refused `payment_already_used` as before.
//!
//! The replay key is a hash of what the payer signed: for Solana the transaction's
//! message, so a copy with anything else in the fee payer's signature slot is the same
//! payment. A Solana payment's payer signature and signed amount are checked here, before
//! any work. The files of an `output: "url"` result are stored before settlement, so a
//! result that cannot be kept is not charged; a settlement is recorded with its ledger
//! row in one transaction. Each route's 402 body at a price is serialized once and kept
//! ([`RequiredBody`]).

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use paperchain_engine::catalog::{Admission, PreparedCall, Produces, RouteEntry};
use paperchain_engine::{Catalog, Context, EngineError, ErrorKind, Price, Reply, cancel};
use paperchain_protocol::exact_svm;
use paperchain_protocol::x402::{
    self, EIP2612_GAS_SPONSORING, PaymentPayload, PaymentRequired, Requirements, ResourceInfo, SCHEME_BATCH,
    SCHEME_UPTO, SchemePayload, SettlementResponse, Version2,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use tokio::sync::RwLock;
use x402_chain_eip155::eip2612_gas_sponsoring::Eip2612GasSponsoring;
use x402_types::proto;

use super::config::{HostedConfig, PayTo};
use super::facilitator::{FacilitatorFailure, PaymentFacilitator, Settled};
use super::mpp::{MppConfig, MppError, RequestBinding, now_unix};
use super::store::{
    Authorization, Claim, ClosedPayment, Decision, FreeTake, Outcome, PaidRequest, PaymentOutcome, PaymentState,
    Pruned, Store,
};
use paperchain_calls::Body;
pub use paperchain_calls::paywall::{Answer, Failure, FreeAsk, PaidCall, Payment, Receipt, Required, RequiredBody};
use paperchain_gateway::files::FileStore;

mod batch;
mod payload;

pub use payload::{PAYMENT_IDENTIFIER, client_key};
use payload::{authorization, paid_request, payment_identifier_extension, payment_key, raw_request, requirement};

/// The time, injectable so tests can cross a UTC day.
pub trait Clock: Send + Sync {
    /// Now, in UTC.
    fn now(&self) -> OffsetDateTime;
}

/// The system clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }
}

/// A paid call as the paywall works on it: the call path's, and what an MPP challenge is
/// bound to (HTTP method, path, body), `None` where MPP does not apply (MCP).
struct PaywallCall<'a> {
    route: &'a RouteEntry,
    body: &'a Body,
    payment: Option<Payment>,
    free: FreeAsk,
    client: Option<IpAddr>,
    binding: Option<RequestBinding>,
    admission: Admission,
}

impl<'a> PaywallCall<'a> {
    fn of(paid: PaidCall<'a>) -> PaywallCall<'a> {
        let PaidCall { route, body, payment, free, client, over_http, admission } = paid;
        let bytes: &[u8] = match body {
            Body::Json(bytes) => bytes,
            Body::NotJson(_) | Body::TooLarge(_) => &[],
        };
        let binding = over_http.then(|| RequestBinding::new("POST", route.info().path, bytes));
        PaywallCall { route, body, payment, free, client, binding, admission }
    }
}

/// Most quotes kept serialized (routes × prices seen); past it the cache starts over.
const QUOTE_CACHE: usize = 4096;

/// The paywall of one server.
pub struct Paywall {
    config: HostedConfig,
    facilitator: Arc<dyn PaymentFacilitator>,
    store: Store,
    clock: Arc<dyn Clock>,
    /// Per route path: the `bazaar` discovery extension.
    bazaar: HashMap<&'static str, Value>,
    /// Per network: the `extra` of its requirements (Solana's fee payer comes from the facilitator).
    extras: RwLock<HashMap<&'static str, Value>>,
    /// Per EVM network whose facilitator settles `upto`: the `extra` of `upto` requirements
    /// (the token's domain and the facilitator's address), and whether the facilitator
    /// submits a payer's EIP-2612 permit for Permit2 (`eip2612GasSponsoring`).
    upto: RwLock<HashMap<&'static str, (Value, bool)>>,
    facilitator_timeout: Duration,
    run_timeout: Duration,
    mpp: Option<MppConfig>,
    /// The PaymentRequired bodies of quotes without an error, by route path and price.
    quotes: std::sync::Mutex<HashMap<(&'static str, u64), Arc<RequiredBody>>>,
    /// Where `output: "url"` files are kept, and the base URL of their links: stored before
    /// a payment settles ([`Paywall::keep_files_in`]).
    files: std::sync::RwLock<Option<(FileStore, String)>>,
    /// The chains payments are looked up on after a crash (recovery.rs).
    chains: Arc<paperchain_engine::evm::Chains>,
    solana: Arc<paperchain_engine::solana::Clusters>,
    /// The `batch-settlement` channels, on the one EVM network they are offered on.
    batch: Option<Arc<crate::batch::Channels>>,
}

/// How often the unpaid refusals counted in memory are added to the store.
pub const COUNT_FLUSH: Duration = Duration::from_secs(5);
/// How often claims of runs that died are looked up on chain (recovery.rs).
pub const RECOVERY_EVERY: Duration = Duration::from_secs(30);
/// How long a facilitator call may take before the call is answered 503.
pub const FACILITATOR_TIMEOUT: Duration = Duration::from_secs(20);
/// What a 503 for an unavailable facilitator suggests.
const FACILITATOR_RETRY_AFTER: Duration = Duration::from_secs(10);

impl Paywall {
    /// A paywall for `catalog` with `config`'s networks, paid through `facilitator`.
    pub fn new(
        config: HostedConfig,
        catalog: &Catalog,
        ctx: &Context,
        facilitator: Arc<dyn PaymentFacilitator>,
        store: Store,
        clock: Arc<dyn Clock>,
    ) -> Paywall {
        let bazaar = catalog.routes().map(|r| (r.info().path, super::bazaar::extension(r, ctx))).collect();
        let extras = config
            .pay_to
            .iter()
            .filter_map(|p| {
                p.network.eip712.map(|(name, version)| (p.network.caip2, json!({"name": name, "version": version})))
            })
            .collect();
        Paywall {
            config,
            facilitator,
            store,
            clock,
            bazaar,
            extras: RwLock::new(extras),
            upto: RwLock::new(HashMap::new()),
            facilitator_timeout: FACILITATOR_TIMEOUT,
            run_timeout: Duration::from_secs(120),
            mpp: None,
            quotes: std::sync::Mutex::new(HashMap::new()),
            files: std::sync::RwLock::new(None),
            chains: ctx.chains.clone(),
            solana: ctx.solana.clone(),
            batch: None,
        }
    }

    /// Offers `batch-settlement` on the network of `channels` beside `exact`, for every route.
    pub fn with_batch(mut self, channels: crate::batch::Channels) -> Paywall {
        self.batch = Some(Arc::new(channels));
        self
    }

    /// Keeps the files of `output: "url"` calls in `files`, linked under `base_url`, before
    /// their payment settles: a call whose files cannot be kept (a full disk) fails and is
    /// not charged. The server that serves this paywall sets it.
    pub fn keep_files_in(&self, files: FileStore, base_url: String) {
        *self.files.write().unwrap_or_else(|e| e.into_inner()) = Some((files, base_url));
    }

    /// Offers and accepts MPP payments as configured.
    pub fn with_mpp(mut self, mpp: MppConfig) -> Paywall {
        self.mpp = Some(mpp);
        self
    }

    /// Limits each operation to `timeout` (the verify and settle calls around it are
    /// limited separately, so a slow operation can never cut a settlement short).
    pub fn with_run_timeout(mut self, timeout: Duration) -> Paywall {
        self.run_timeout = timeout;
        self
    }

    /// Limits each facilitator call to `timeout`.
    pub fn with_facilitator_timeout(mut self, timeout: Duration) -> Paywall {
        self.facilitator_timeout = timeout;
        self
    }

    /// The configuration.
    pub fn config(&self) -> &HostedConfig {
        &self.config
    }

    /// The store (ledger, pools, replay guard).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Housekeeping while the server runs. Every [`COUNT_FLUSH`] the unpaid refusals
    /// counted in memory are written. Hourly (and at start): free-pool counts of past days
    /// are deleted, and so is what moved no money and is older than the retention period;
    /// claims left by a call that never finished (a crash in another process sharing the
    /// database) are marked abandoned, which keeps them refused; and a network still
    /// waiting for its fee payer (the facilitator was down at start) asks again.
    pub async fn maintain(self: Arc<Self>) {
        let mut flush = tokio::time::interval(COUNT_FLUSH);
        flush.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut hourly = tokio::time::interval(Duration::from_secs(3600));
        let mut recovery = tokio::time::interval(RECOVERY_EVERY);
        recovery.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let claim_every = self.batch.as_ref().map_or(Duration::from_secs(3600), |b| b.claim_every());
        let mut claims = tokio::time::interval_at(tokio::time::Instant::now() + claim_every, claim_every);
        claims.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = claims.tick() => {
                    self.claim_channels().await;
                    continue;
                }
                _ = flush.tick() => {
                    if let Err(e) = self.store.flush_counts().await {
                        tracing::error!(error = %e, "writing the unpaid counts failed; kept for the next try");
                    }
                    continue;
                }
                _ = recovery.tick() => {
                    self.recover().await;
                    continue;
                }
                _ = hourly.tick() => {}
            }
            let retention = Duration::from_secs(u64::from(self.config.retention_days) * 24 * 3600);
            match self.store.prune(self.clock.now() - retention).await {
                Ok(pruned) if pruned != Pruned::default() => {
                    tracing::info!(?pruned, days = self.config.retention_days, "ledger: deleted what is past retention")
                }
                Ok(_) => {}
                Err(e) => tracing::error!(error = %e, "ledger retention failed"),
            }
            if self.waiting_for_supported().await
                && let Err(e) = self.learn_supported().await
            {
                tracing::warn!(error = %e, "the facilitator's supported networks are still unknown");
            }
            let yesterday = self.clock.now().date().previous_day().unwrap_or(time::Date::MIN);
            if let Err(e) = self.store.prune_free_before(yesterday).await {
                tracing::warn!(error = %e, "pruning old free-pool counts failed");
            }
            // Longer than any call can hold a claim: the operation plus verify and settle.
            let stale = self.run_timeout + self.facilitator_timeout * 2 + Duration::from_secs(600);
            match self.store.abandon_stale(stale).await {
                Ok(0) => {}
                Ok(n) => tracing::warn!(claims = n, "payment claims left unfinished were marked abandoned"),
                Err(e) => tracing::warn!(error = %e, "checking for unfinished payment claims failed"),
            }
        }
    }

    /// Claims what the `batch-settlement` channels charged (crate::batch), after releasing
    /// reservations of calls that died. Every [`crate::batch::Channels::claim_every`].
    pub async fn claim_channels(&self) {
        let Some(channels) = &self.batch else { return };
        let stale = self.run_timeout + self.facilitator_timeout * 2 + Duration::from_secs(600);
        if let Err(e) = self.store.release_stale_channels(stale).await {
            tracing::warn!(error = %e, "releasing channel reservations of stopped calls failed");
        }
        if let Err(e) = channels.sweep(&self.store).await {
            tracing::warn!(error = %e, "claiming the batch-settlement channels failed; tried again at the next sweep");
        }
    }

    /// Claims of runs that died are abandoned (they stay refused), then looked up on chain:
    /// a settlement a crash left out of the ledger is recorded (recovery.rs). At start and
    /// every [`RECOVERY_EVERY`].
    pub async fn recover(&self) {
        match self.store.abandon_orphaned().await {
            Ok(0) => {}
            Ok(n) => tracing::warn!(claims = n, "payment claims of a run that stopped were marked abandoned"),
            Err(e) => tracing::warn!(error = %e, "checking for claims of stopped runs failed"),
        }
        let pay_to: Vec<(String, String)> =
            self.config.pay_to.iter().map(|p| (p.network.caip2.to_string(), p.address.clone())).collect();
        match super::recovery::recover(&self.store, &self.chains, &self.solana, &pay_to).await {
            Ok(found) if found.settled + found.never_used > 0 => {
                tracing::warn!(?found, "abandoned payments looked up on chain")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "looking up abandoned payments failed"),
        }
    }

    /// Whether a configured network, or `upto` on an EVM one, is not offered yet for want of
    /// the facilitator's answer (or because it does not settle `upto` there: it is asked
    /// again hourly).
    async fn waiting_for_supported(&self) -> bool {
        let (extras, upto) = (self.extras.read().await, self.upto.read().await);
        self.config.pay_to.iter().any(|p| {
            !extras.contains_key(p.network.caip2) || (p.network.eip712.is_some() && !upto.contains_key(p.network.caip2))
        })
    }

    /// Asks the facilitator what it supports: Solana's fee payer (a Solana network without
    /// one is not offered) and, per EVM network, whether it settles `upto` and with which
    /// address (without it, `upto` is not offered there).
    pub async fn learn_supported(&self) -> Result<(), String> {
        let supported = tokio::time::timeout(self.facilitator_timeout, self.facilitator.supported())
            .await
            .map_err(|_| "the facilitator did not answer /supported in time".to_string())?
            .map_err(|e| format!("the facilitator's /supported failed: {e:?}"))?;
        let mut extras = self.extras.write().await;
        let mut upto = self.upto.write().await;
        // The requirements change: quotes serialized with the old ones are stale.
        self.quotes.lock().unwrap_or_else(|p| p.into_inner()).clear();
        for pay_to in &self.config.pay_to {
            if let Some((name, version)) = pay_to.network.eip712 {
                // `upto` where the facilitator settles it and names the address that does.
                let kind = supported.kinds.iter().find(|kind| {
                    kind.network == pay_to.network.caip2 && kind.x402_version == 2 && kind.scheme == SCHEME_UPTO
                });
                let extra = kind.and_then(|kind| kind.extra.as_ref());
                match extra.and_then(|extra| extra.get("facilitatorAddress")?.as_str()) {
                    Some(facilitator) => {
                        let sponsors =
                            extra.and_then(|extra| extra.get("extensions")?.as_array()).is_some_and(|names| {
                                names.iter().any(|name| name.as_str() == Some(EIP2612_GAS_SPONSORING))
                            });
                        let extra = json!({"name": name, "version": version, "facilitatorAddress": facilitator});
                        upto.insert(pay_to.network.caip2, (extra, sponsors));
                    }
                    None => {
                        upto.remove(pay_to.network.caip2);
                    }
                }
                continue;
            }
            let fee_payer = supported.kinds.iter().find_map(|kind| {
                (kind.network == pay_to.network.caip2 && kind.x402_version == 2)
                    .then(|| kind.extra.as_ref()?.get("feePayer")?.as_str().map(str::to_string))
                    .flatten()
            });
            match fee_payer {
                Some(fee_payer) => {
                    extras.insert(pay_to.network.caip2, json!({ "feePayer": fee_payer }));
                }
                None => tracing::warn!(
                    network = pay_to.network.caip2,
                    "the facilitator names no fee payer for this network; it is not offered"
                ),
            }
        }
        Ok(())
    }

    /// The requirements for `price`, one per network this server is paid on, primary first.
    pub async fn requirements(&self, price: Price) -> Vec<Requirements> {
        let extras = self.extras.read().await;
        self.config
            .pay_to
            .iter()
            .filter_map(|pay_to| {
                let extra = extras.get(pay_to.network.caip2)?;
                Some(requirement(pay_to, price, self.config.max_timeout_seconds, extra.clone()))
            })
            .collect()
    }

    /// What a call of `route` at `price` may be paid with: the [`Paywall::requirements`];
    /// for a metered route (its quote the most it costs) an `upto` offer after each EVM
    /// network's `exact` one, where the facilitator settles `upto`; and `batch-settlement`
    /// on the network whose channels this service keeps.
    pub async fn offers(&self, route: &RouteEntry, price: Price) -> Vec<Requirements> {
        let exact = self.requirements(price).await;
        if !route.metered() && self.batch.is_none() {
            return exact;
        }
        let upto = self.upto.read().await;
        let mut offers = Vec::with_capacity(exact.len() * 3);
        for requirement in exact {
            let metered = upto.get(requirement.network.as_str()).filter(|_| route.metered()).map(|(extra, _)| {
                Requirements { scheme: SCHEME_UPTO.to_string(), extra: Some(extra.clone()), ..requirement.clone() }
            });
            let channel = self.batch_offer(&requirement);
            offers.push(requirement);
            offers.extend(metered);
            offers.extend(channel);
        }
        offers
    }

    /// The PaymentRequired object for `route` at `price`, with `error` if any.
    pub async fn payment_required(&self, route: &RouteEntry, price: Price, error: Option<String>) -> Value {
        let info = route.info();
        let resource = ResourceInfo {
            url: format!("{}{}", self.config.public_url.as_str().trim_end_matches('/'), info.path),
            description: Some(info.summary.to_string()),
            mime_type: Some(mime_type(route).to_string()),
            service_name: Some(self.config.service_name.clone()),
            tags: tags(route),
            icon_url: self.config.icon_url.clone(),
            more: Default::default(),
        };
        let mut extensions = serde_json::Map::new();
        if let Some(bazaar) = self.bazaar.get(info.path) {
            extensions.insert("bazaar".into(), bazaar.clone());
        }
        extensions.insert(PAYMENT_IDENTIFIER.into(), payment_identifier_extension());
        let accepts = self.offers(route, price).await;
        let upto = self.upto.read().await;
        let sponsored = accepts.iter().any(|offer| {
            offer.scheme == SCHEME_UPTO && upto.get(offer.network.as_str()).is_some_and(|(_, sponsors)| *sponsors)
        });
        if sponsored {
            let extension = serde_json::to_value(Eip2612GasSponsoring::server()).expect("the extension serializes");
            extensions.insert(EIP2612_GAS_SPONSORING.into(), extension);
        }
        let required = PaymentRequired { x402_version: Version2, error, resource: Some(resource), accepts, extensions };
        serde_json::to_value(required).expect("a PaymentRequired serializes")
    }

    /// Decides and, where allowed, runs one call.
    pub async fn handle(&self, call: PaidCall<'_>, ctx: &Context) -> Answer {
        let call = PaywallCall::of(call);
        let mut decision = Decision::new(call.route.info().path, call.route.info().operation, Outcome::PaymentRequired);
        decision.at = self.clock.now();
        decision.client = call.client.map(client_key);
        let answer = match call.payment {
            None => self.unpaid(&call, ctx, &mut decision).await,
            Some(Payment::X402(ref header)) => {
                let payment = x402::decode_payment(header);
                self.paid_or_refund(&call, payment, ctx, &mut decision).await
            }
            Some(Payment::X402Json(ref value)) => {
                let payment = x402::read(value.clone(), "the payment").map(|read| (value.clone(), read));
                self.paid_or_refund(&call, payment, ctx, &mut decision).await
            }
            Some(Payment::Mpp(ref header)) => self.paid_mpp(&call, header, ctx, &mut decision).await,
        };
        // A call that carried no payment and was refused is a count, not a row: unpaid
        // callers can neither grow the file without bound nor make every refusal a write.
        let refused =
            matches!(decision.outcome, Outcome::PaymentRequired | Outcome::FreeExhausted | Outcome::InvalidInput);
        if call.payment.is_none() && refused {
            self.store.count_unpaid(&decision);
        } else if let Err(e) = self.store.record(&decision).await {
            // The ledger is the record of money; failing to write it is loud, but the
            // answer (and any settlement already made) stands.
            tracing::error!(error = %e, path = decision.route, "writing the ledger failed");
        }
        answer
    }

    async fn unpaid(&self, call: &PaywallCall<'_>, ctx: &Context, decision: &mut Decision) -> Answer {
        let route = call.route;
        let base = route.info().base_price;
        let bytes = match call.body {
            &Body::TooLarge(limit) => {
                decision.outcome = Outcome::InvalidInput;
                decision.quote = Some(base.units());
                return Answer::Failed(Failure::TooLarge(limit));
            }
            Body::NotJson(content_type) => {
                decision.outcome = Outcome::PaymentRequired;
                decision.quote = Some(base.units());
                decision.error_code = Some("unsupported_media_type".into());
                let error = format!(
                    "unsupported_media_type: the body must be JSON with Content-Type: application/json (got {})",
                    if content_type.is_empty() { "none" } else { content_type }
                );
                return self.required(call, base, Some(error)).await;
            }
            Body::Json(bytes) => bytes,
        };
        let (price, prepared) = route.quote_admitted(call.admission.clone(), bytes, ctx).await;
        decision.quote = Some(price.units());
        let prepared = match prepared {
            Ok(prepared) => prepared,
            Err(error) => {
                decision.outcome = Outcome::PaymentRequired;
                decision.error_code = Some(error.code.to_string());
                return self.required(call, base, Some(describe(&error))).await;
            }
        };
        if call.free == FreeAsk::No {
            decision.outcome = Outcome::PaymentRequired;
            return self.required(call, price, None).await;
        }
        let pool = route.info().free_pool;
        let limit = self.config.free_calls(pool);
        let day = self.clock.now().date();
        let client = decision.client.clone().unwrap_or_else(|| "unknown".into());
        let left = match self.store.take_free(pool.id(), &client, day, limit).await {
            Ok(FreeTake::Taken { remaining }) => remaining,
            Ok(FreeTake::Exhausted) => {
                decision.outcome = Outcome::FreeExhausted;
                decision.error_code = Some("free_pool_exhausted".into());
                return self.required(call, price, Some("free_pool_exhausted".into())).await;
            }
            Err(e) => return Answer::Failed(store_failure(e)),
        };
        match self.run(prepared, ctx).await {
            Ok((reply, _)) => {
                decision.outcome = Outcome::Free;
                Answer::Delivered { reply, receipt: None, free_left: Some(left) }
            }
            Err(error) => {
                // No failure is charged, and a free call is a charge on the pool.
                if let Err(e) = self.store.refund_free(pool.id(), &client, day).await {
                    tracing::error!(error = %e, "refunding a free call failed");
                }
                decision.outcome = Outcome::OperationFailed;
                decision.error_code = Some(error.code.to_string());
                Answer::Failed(error.into())
            }
        }
    }

    /// The input of a paid call, checked before the payment is looked at: bad input is
    /// refused with its own status and the payment is not used.
    async fn paid_input(
        &self,
        call: &PaywallCall<'_>,
        ctx: &Context,
        decision: &mut Decision,
    ) -> Result<(Price, PreparedCall), Answer> {
        let bytes = match call.body {
            &Body::TooLarge(limit) => {
                decision.outcome = Outcome::InvalidInput;
                return Err(Answer::Failed(Failure::TooLarge(limit)));
            }
            Body::NotJson(content_type) => {
                decision.outcome = Outcome::InvalidInput;
                decision.error_code = Some("unsupported_media_type".into());
                return Err(Answer::Failed(Failure::NotJson(content_type.clone())));
            }
            Body::Json(bytes) => bytes,
        };
        let (price, prepared) = call.route.quote_admitted(call.admission.clone(), bytes, ctx).await;
        decision.quote = Some(price.units());
        match prepared {
            Ok(prepared) => Ok((price, prepared)),
            Err(error) => {
                decision.outcome = Outcome::InvalidInput;
                decision.error_code = Some(error.code.to_string());
                Err(Answer::Failed(error.into()))
            }
        }
    }

    /// A paid call, or a `batch-settlement` refund request (which runs no route, so its
    /// body is not the route's input).
    async fn paid_or_refund(
        &self,
        call: &PaywallCall<'_>,
        payment: Result<(Value, PaymentPayload), String>,
        ctx: &Context,
        decision: &mut Decision,
    ) -> Answer {
        if let Ok((_, read)) = &payment
            && let Some(refund) = batch::refund_request(read)
        {
            decision.network = Some(read.accepted.network.clone());
            return self.refund_batch(call, read, refund, decision).await;
        }
        self.paid_x402(call, payment, ctx, decision).await
    }

    async fn paid_x402(
        &self,
        call: &PaywallCall<'_>,
        payment: Result<(Value, PaymentPayload), String>,
        ctx: &Context,
        decision: &mut Decision,
    ) -> Answer {
        let (price, prepared) = match self.paid_input(call, ctx, decision).await {
            Ok(checked) => checked,
            Err(answer) => return answer,
        };
        let refuse = |decision: &mut Decision, outcome: Outcome, code: &str, error: String| {
            decision.outcome = outcome;
            decision.error_code = Some(code.into());
            error
        };
        // `raw` is the payment as sent: what the facilitator verifies the signature over.
        let (raw, payment) = match payment {
            Ok(read) => read,
            Err(why) => {
                let error =
                    refuse(decision, Outcome::InvalidPayment, "invalid_payment", format!("invalid_payment: {why}"));
                return self.required(call, price, Some(error)).await;
            }
        };
        let accepted = &payment.accepted;
        decision.network = Some(accepted.network.clone());
        let key = payment_key(&raw, &payment);
        let paid_request = PaidRequest {
            payment_id: payment.payment_id().map(str::to_string),
            authorization: authorization(&payment),
            ..paid_request(call, price, decision)
        };
        if paid_request.payment_id.is_some() {
            match self.store.redeliver(&key, call.route.info().path, &paid_request).await {
                Ok(Some(stored)) => return self.redeliver(prepared, key, stored, ctx, decision).await,
                Ok(None) => {}
                Err(e) => return Answer::Failed(store_failure(e)),
            }
        }
        let offered = self.offers(call.route, price).await;
        let Some(ours) = offered.iter().find(|r| r.network == accepted.network && r.scheme == accepted.scheme) else {
            let (code, error) = if offered.iter().any(|r| r.network == accepted.network) {
                let schemes: Vec<&str> =
                    offered.iter().filter(|r| r.network == accepted.network).map(|r| r.scheme.as_str()).collect();
                let error = format!(
                    "scheme_not_accepted: scheme `{}` on {} is not accepted for this call (accepted: {})",
                    accepted.scheme.chars().take(40).collect::<String>(),
                    accepted.network,
                    schemes.join(", ")
                );
                ("scheme_not_accepted", error)
            } else {
                let networks: Vec<&str> = offered.iter().map(|r| r.network.as_str()).collect();
                let error = format!(
                    "network_not_accepted: payment on {} is not accepted here (accepted: {})",
                    accepted.network,
                    networks.join(", ")
                );
                ("network_not_accepted", error)
            };
            let error = refuse(decision, Outcome::InvalidPayment, code, error);
            return self.required(call, price, Some(error)).await;
        };
        // Both the amount the client says it accepted and the amount its signature moves
        // must be the quote: facilitators only refuse too little, and settle what is signed
        // (for `upto`, the quote is the most the signature allows).
        if accepted.amount != ours.amount || payment.signed_amount().is_some_and(|signed| signed != price.units()) {
            let error = refuse(decision, Outcome::PriceMismatch, "price_mismatch", "price_mismatch".into());
            return self.required(call, price, Some(error)).await;
        }
        if !accepted.same_terms(ours) {
            let error = "requirements_mismatch: the payment's accepted requirements differ from the ones offered \
                         (scheme, asset, payTo, maxTimeoutSeconds or extra)";
            let error = refuse(decision, Outcome::InvalidPayment, "requirements_mismatch", error.into());
            return self.required(call, price, Some(error)).await;
        }
        if let SchemePayload::Batch(channel) = &payment.payload {
            if ours.scheme != SCHEME_BATCH {
                let error = "invalid_payment: a batch-settlement payload for another scheme".to_string();
                let error = refuse(decision, Outcome::InvalidPayment, "invalid_payment", error);
                return self.required(call, price, Some(error)).await;
            }
            return self.paid_batch(call, price, prepared, (&payment, channel), ctx, decision).await;
        }
        if ours.scheme == SCHEME_BATCH {
            let error = "invalid_payment: a batch-settlement payment carries a deposit or a voucher".to_string();
            let error = refuse(decision, Outcome::InvalidPayment, "invalid_payment", error);
            return self.required(call, price, Some(error)).await;
        }
        // A Solana payment its payer did not sign can never settle: refused before any work.
        if let Err(why) = exact_svm::check_signed(&payment) {
            let error = refuse(decision, Outcome::InvalidPayment, "invalid_payment", format!("invalid_payment: {why}"));
            return self.required(call, price, Some(error)).await;
        }
        let request = json!({ "x402Version": 2, "paymentPayload": raw, "paymentRequirements": ours });
        let metered = ours.scheme == SCHEME_UPTO;
        let settle =
            self.verify_run_settle(call, price, prepared, key, &paid_request, (&request, metered), ctx, decision);
        let (reply, settled) = match settle.await {
            Ok(done) => done,
            Err(answer) => return answer,
        };
        decision.outcome = Outcome::Paid;
        let mut settlement = settlement_response(&settled, &decision.payer);
        if metered {
            settlement = settlement.charging(decision.charged.unwrap_or(price.units()));
        }
        Answer::Delivered { reply, receipt: Some(Box::new(Receipt { settlement, mpp_receipt: None })), free_left: None }
    }

    async fn paid_mpp(&self, call: &PaywallCall<'_>, header: &str, ctx: &Context, decision: &mut Decision) -> Answer {
        let (price, prepared) = match self.paid_input(call, ctx, decision).await {
            Ok(checked) => checked,
            Err(answer) => return answer,
        };
        let (Some(mpp), Some(binding)) = (&self.mpp, &call.binding) else {
            decision.outcome = Outcome::InvalidPayment;
            decision.error_code = Some("unsupported_method".into());
            let error = "unsupported_method: MPP payments are not accepted here; pay with x402 (PAYMENT-SIGNATURE)";
            return self.required(call, price, Some(error.into())).await;
        };
        let checked = MppConfig::parse_credential(header)
            .and_then(|credential| mpp.check(&credential, binding, price.units(), now_unix()));
        let auth = match checked {
            Ok(auth) => auth,
            Err(error) => {
                let (outcome, code) = match error {
                    MppError::WrongAmount(_) => (Outcome::PriceMismatch, "price_mismatch"),
                    _ => (Outcome::InvalidPayment, error.code()),
                };
                decision.outcome = outcome;
                decision.error_code = Some(code.into());
                let message = if code == "price_mismatch" { code.to_string() } else { format!("{code}: {error}") };
                return self.required(call, price, Some(message)).await;
            }
        };
        decision.network = Some(format!("eip155:{}", auth.chain_id));
        let request = mpp.to_x402_verify_request(&auth);
        let key: [u8; 32] = Sha256::digest(auth.replay_key().as_bytes()).into();
        // No payment id in MPP: its payments are never redelivered.
        let paid_request = paid_request(call, price, decision);
        let settle =
            self.verify_run_settle(call, price, prepared, key, &paid_request, (&request, false), ctx, decision);
        let (reply, settled) = match settle.await {
            Ok(done) => done,
            Err(answer) => return answer,
        };
        decision.outcome = Outcome::MppPaid;
        let mpp_receipt = Some(mpp.receipt(&auth.challenge_id, &settled.transaction, now_unix()));
        let settlement = settlement_response(&settled, &decision.payer);
        Answer::Delivered { reply, receipt: Some(Box::new(Receipt { settlement, mpp_receipt })), free_left: None }
    }

    /// A settled payment resent for the same request with the same payment id
    /// ([`Store::redeliver`] matched it): runs the operation again and delivers its answer
    /// with the stored settlement. Nothing is verified, claimed, settled or released.
    ///
    /// The ledger row: outcome `redelivered`, the input's quote (for the same route and
    /// body, the price paid by the original call; not counted in the totals, which sum
    /// `paid` and `mpp_paid` only), the original settlement's tx hash, network and payer.
    async fn redeliver(
        &self,
        prepared: PreparedCall,
        key: [u8; 32],
        stored: super::store::StoredSettlement,
        ctx: &Context,
        decision: &mut Decision,
    ) -> Answer {
        decision.payment_key = Some(key);
        decision.network = Some(stored.network.clone());
        decision.payer = stored.payer.clone();
        decision.tx_hash = Some(stored.tx_hash.clone());
        match self.run(prepared, ctx).await {
            Ok((reply, _)) => {
                decision.outcome = Outcome::Redelivered;
                let mut settlement =
                    SettlementResponse::settled(&stored.tx_hash, &stored.network, stored.payer.as_deref());
                if let Some(charged) = stored.charged {
                    settlement = settlement.charging(charged);
                }
                Answer::Delivered {
                    reply,
                    receipt: Some(Box::new(Receipt { settlement, mpp_receipt: None })),
                    free_left: None,
                }
            }
            Err(error) => {
                // Already paid for: the same payment may be resent again.
                decision.outcome = Outcome::OperationFailed;
                decision.error_code = Some(error.code.to_string());
                Answer::Failed(error.into())
            }
        }
    }

    /// Claims the payment `key`, verifies `request` with the facilitator, runs the
    /// operation and settles; the claim is released when the call fails before settlement.
    /// A `metered` payment (`upto`) is verified for the quote and settled for what the run
    /// used ([`PreparedCall::run_metered`], never more than the quote), recorded as
    /// `charged`; one that used nothing is not settled at all.
    #[allow(clippy::too_many_arguments)]
    async fn verify_run_settle(
        &self,
        call: &PaywallCall<'_>,
        price: Price,
        prepared: PreparedCall,
        key: [u8; 32],
        paid_request: &PaidRequest,
        (terms, metered): (&Value, bool),
        ctx: &Context,
        decision: &mut Decision,
    ) -> Result<(Reply<Value>, Settled), Answer> {
        decision.payment_key = Some(key);
        let network = decision.network.as_deref().unwrap_or("");
        match self.store.claim_payment_for(&key, call.route.info().path, network, paid_request).await {
            Ok(Claim::Claimed) => {}
            Ok(Claim::AlreadyUsed { state }) => {
                decision.outcome = Outcome::Replay;
                decision.error_code = Some("payment_already_used".into());
                let error = if state == PaymentState::Claimed {
                    // Another call holds it; it comes back if that call fails before settling.
                    "payment_already_used: this payment is being used by another call right now; sign a new one"
                } else {
                    "payment_already_used: this payment has already been used; sign a new one"
                };
                return Err(self.required(call, price, Some(error.into())).await);
            }
            Err(e) => return Err(Answer::Failed(store_failure(e))),
        }
        let Some(request) = raw_request(terms) else {
            self.release(key).await;
            return Err(Answer::Failed(EngineError::internal("encoding the verify request").into()));
        };
        let verified = match self.facilitate(self.facilitator.verify(request.clone())).await {
            Ok(verified) => verified,
            Err(failure) => {
                self.release(key).await;
                return Err(self.facilitator_refusal(call, price, failure, decision, Outcome::VerifyFailed).await);
            }
        };
        decision.payer = verified.payer;

        let (reply, used) = match self.run(prepared, ctx).await {
            Ok(done) => done,
            Err(error) => {
                self.release(key).await;
                decision.outcome = Outcome::OperationFailed;
                decision.error_code = Some(error.code.to_string());
                return Err(Answer::Failed(error.into()));
            }
        };
        let request = if metered {
            decision.charged = Some(used.units());
            if used == Price::ZERO {
                // Nothing to move: the authorization is left to expire, nothing is settled.
                let network = decision.network.clone().unwrap_or_default();
                let settled = Settled { payer: decision.payer.clone(), transaction: String::new(), network };
                let end = PaymentOutcome::Settled { tx_hash: String::new() };
                decision.finish = Some(ClosedPayment { key, outcome: end, payer: decision.payer.clone() });
                return Ok((reply, settled));
            }
            // What to settle travels as the requirements' `amount` (x402 `upto`).
            let mut charged = terms.clone();
            charged["paymentRequirements"]["amount"] = json!(used.atomic_string());
            match raw_request(&charged) {
                Some(request) => request,
                None => return Err(Answer::Failed(EngineError::internal("encoding the settle request").into())),
            }
        } else {
            request
        };

        // From here the claim is never released: a settlement that failed or timed out
        // may still land on chain.
        let settled = self.facilitate(self.facilitator.settle(request)).await;
        let end = match &settled {
            Ok(s) => PaymentOutcome::Settled { tx_hash: s.transaction.clone() },
            Err(failure) => PaymentOutcome::SettleFailed { reason: failure_reason(failure) },
        };
        let payer = settled.as_ref().ok().and_then(|s| s.payer.clone()).or_else(|| decision.payer.clone());
        // Written with the ledger row, in one transaction (`Paywall::handle`).
        decision.finish = Some(ClosedPayment { key, outcome: end, payer });
        match settled {
            Ok(settled) => {
                if settled.payer.is_some() {
                    decision.payer = settled.payer.clone();
                }
                decision.tx_hash = Some(settled.transaction.clone());
                Ok((reply, settled))
            }
            Err(FacilitatorFailure::Unavailable(why)) => {
                // The settlement was sent and not confirmed: it may have landed, so the
                // payment stays spent and nobody is told "nothing was charged".
                tracing::warn!(reason = %why, "settlement not confirmed by the facilitator");
                decision.outcome = Outcome::SettleFailed;
                decision.error_code = Some("settlement_unconfirmed".into());
                Err(Answer::Failed(Failure::Engine(EngineError::new(
                    ErrorKind::Unavailable { retry_after: FACILITATOR_RETRY_AFTER },
                    "unavailable",
                    "settlement_unconfirmed: the payment facilitator did not confirm the settlement, so the result \
                     is not delivered; the payment may still be charged on chain (look up its authorization nonce); \
                     sign a new payment to call again",
                ))))
            }
            Err(failure) => Err(self.facilitator_refusal(call, price, failure, decision, Outcome::SettleFailed).await),
        }
    }

    /// Runs the operation and, for `output: "url"`, stores its files: what is delivered is
    /// complete before anything is settled. With the answer, the price of the work done
    /// (the quote, or what a metered route used).
    async fn run(&self, prepared: PreparedCall, ctx: &Context) -> Result<(Reply<Value>, Price), EngineError> {
        // The call's own stop signal (its caller went away) or, outside a call, one for the time-out only.
        let stop = cancel::current().unwrap_or_default();
        let (reply, used) = cancel::bounded(&stop, self.run_timeout, prepared.run_metered(ctx.clone())).await?;
        let files = self.files.read().unwrap_or_else(|e| e.into_inner()).clone();
        match files {
            Some((files, base_url)) => Ok((files.keep(&base_url, reply).await?, used)),
            None => Ok((reply, used)),
        }
    }

    async fn facilitate<T>(
        &self,
        future: impl Future<Output = Result<T, FacilitatorFailure>>,
    ) -> Result<T, FacilitatorFailure> {
        let started = Instant::now();
        match tokio::time::timeout(self.facilitator_timeout, future).await {
            Ok(result) => result,
            Err(_) => {
                Err(FacilitatorFailure::Unavailable(format!("no answer within {} ms", started.elapsed().as_millis())))
            }
        }
    }

    async fn facilitator_refusal(
        &self,
        call: &PaywallCall<'_>,
        price: Price,
        failure: FacilitatorFailure,
        decision: &mut Decision,
        rejected: Outcome,
    ) -> Answer {
        match failure {
            FacilitatorFailure::Unavailable(why) => {
                tracing::warn!(reason = %why, "payment facilitator unavailable");
                decision.outcome = Outcome::FacilitatorUnavailable;
                decision.error_code = Some("facilitator_unavailable".into());
                Answer::Failed(Failure::Engine(EngineError::new(
                    ErrorKind::Unavailable { retry_after: FACILITATOR_RETRY_AFTER },
                    "unavailable",
                    "the payment facilitator is unavailable; nothing was charged, try again shortly",
                )))
            }
            FacilitatorFailure::Rejected { reason, details } => {
                decision.outcome = rejected;
                decision.error_code = Some(reason.clone());
                let error = if details.is_empty() { reason } else { format!("{reason}: {details}") };
                self.required(call, price, Some(error)).await
            }
        }
    }

    async fn required(&self, call: &PaywallCall<'_>, price: Price, error: Option<String>) -> Answer {
        let body = match error {
            // An error names this input: built for it alone.
            Some(error) => Arc::new(RequiredBody::new(self.payment_required(call.route, price, Some(error)).await)),
            None => self.quote_body(call.route, price).await,
        };
        // MPP is an HTTP authentication scheme: challenges only where the request can be bound.
        let challenges = match (&self.mpp, &call.binding) {
            (Some(mpp), Some(binding)) => mpp.challenges(price.units(), binding),
            _ => Vec::new(),
        };
        Answer::PaymentRequired(Box::new(Required { body, challenges }))
    }

    /// The serialized PaymentRequired of `route` at `price` without an error, built once.
    async fn quote_body(&self, route: &RouteEntry, price: Price) -> Arc<RequiredBody> {
        let key = (route.info().path, price.units());
        if let Some(body) = self.quotes.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return body.clone();
        }
        let body = Arc::new(RequiredBody::new(self.payment_required(route, price, None).await));
        let mut quotes = self.quotes.lock().unwrap_or_else(|p| p.into_inner());
        if quotes.len() >= QUOTE_CACHE {
            quotes.clear();
        }
        quotes.insert(key, body.clone());
        body
    }

    async fn release(&self, key: [u8; 32]) {
        if let Err(e) = self.store.release_payment(&key).await {
            tracing::error!(error = %e, "releasing a payment claim failed");
        }
    }
}

/// The x402 SettlementResponse of a successful settlement.
fn settlement_response(settled: &Settled, payer: &Option<String>) -> SettlementResponse {
    SettlementResponse::settled(&settled.transaction, &settled.network, settled.payer.as_deref().or(payer.as_deref()))
}

fn describe(error: &EngineError) -> String {
    match &error.field {
        Some(field) if !field.is_empty() && !error.message.starts_with(field.as_str()) => {
            format!("{}: {field}: {}", error.code, error.message)
        }
        _ => format!("{}: {}", error.code, error.message),
    }
}

fn failure_reason(failure: &FacilitatorFailure) -> String {
    match failure {
        FacilitatorFailure::Rejected { reason, .. } => reason.clone(),
        FacilitatorFailure::Unavailable(_) => "facilitator_unavailable".into(),
    }
}

fn store_failure(error: super::store::StoreError) -> Failure {
    tracing::error!(error = %error, "the hosted store failed");
    Failure::Engine(EngineError::new(
        ErrorKind::Unavailable { retry_after: Duration::from_secs(5) },
        "unavailable",
        "the service cannot record payments right now; nothing was charged",
    ))
}

/// What the resource answers: its usual file, or JSON.
fn mime_type(route: &RouteEntry) -> &'static str {
    match (route.info().produces, route.file_types().first()) {
        (Produces::File | Produces::Files, Some(media_type)) => media_type,
        _ => "application/json",
    }
}

fn tags(route: &RouteEntry) -> Vec<String> {
    let info = route.info();
    let mut tags = vec![info.family.as_str().to_string()];
    if let Some(group) = info.path.split('/').nth(2).filter(|g| *g != info.family.as_str()) {
        tags.push(group.to_string());
    }
    tags
}

impl paperchain_calls::paywall::Paywall for Paywall {
    fn client_ip_header(&self) -> Option<&http::HeaderName> {
        self.config.client_ip_header.as_ref()
    }

    fn handle<'a>(
        &'a self,
        call: PaidCall<'a>,
        ctx: &'a Context,
    ) -> std::pin::Pin<Box<dyn Future<Output = Answer> + Send + 'a>> {
        Box::pin(Paywall::handle(self, call, ctx))
    }
}

impl paperchain_gateway::server::ServedPaywall for Paywall {
    fn keep_files_in(&self, files: FileStore, base_url: String) {
        Paywall::keep_files_in(self, files, base_url)
    }

    fn maintain(self: Arc<Self>) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(Paywall::maintain(self))
    }
}

#[cfg(test)]
mod tests;
