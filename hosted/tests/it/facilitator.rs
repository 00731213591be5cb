//! The facilitator failing, on the sandbox chain: a paywall paid through
//! `facilitator::Remote` at a dead port, at a server that never answers, or at one that
//! answers garbage or HTTP 500, answers a paid call 503 with Retry-After and settles
//! nothing; the payment is released, so the same signed payload pays once the facilitator
//! works again. A facilitator that verifies but fails to settle gets nothing delivered and
//! the payment is spent for good (it may have landed on chain).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use alloy::primitives::U256;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use paperchain_hosted::HostedOptions;
use paperchain_hosted::facilitator::{FacilitatorFailure, PaymentFacilitator, Remote, Settled, Verified};
use paperchain_hosted::store::{Decision, Outcome, PaymentState};
use paperchain_protocol::mpp::sign_evm_credential;
use paperchain_testkit::sandbox::{self, HostedServer, Setup};
use paperchain_testkit::{loopback, x402};
use serde_json::{Value, json};
use x402_types::proto::{self, SupportedResponse};

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

const BALANCE: &str = "/v1/chain/balance";
/// The paywall's limit on one facilitator call where the test waits on it (a silent
/// facilitator, a settlement answered late).
/// Long enough for the working facilitator that replaces it to verify and settle on a
/// loaded machine (the same limit then applies to it): 4 s was once too short with the
/// whole suite running on two cores (the settlement landed after the limit, so the resent
/// payment was already used), and still far below the silent facilitator's 60 s.
const SHORT: Duration = Duration::from_secs(8);
/// The paywall's limit elsewhere: generous, so the working facilitator is never cut short
/// on a loaded machine (the broken ones fail at once).
const PATIENT: Duration = Duration::from_secs(15);
/// The HTTP client's own limit in `Remote`.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(1);

/// A facilitator the test can replace while the server runs.
struct Swappable(RwLock<Arc<dyn PaymentFacilitator>>);

impl Swappable {
    fn new(inner: Arc<dyn PaymentFacilitator>) -> Arc<Swappable> {
        Arc::new(Swappable(RwLock::new(inner)))
    }

    fn set(&self, inner: Arc<dyn PaymentFacilitator>) {
        *self.0.write().unwrap() = inner;
    }

    fn current(&self) -> Arc<dyn PaymentFacilitator> {
        self.0.read().unwrap().clone()
    }
}

impl PaymentFacilitator for Swappable {
    fn verify(&self, request: proto::VerifyRequest) -> BoxFuture<'_, Result<Verified, FacilitatorFailure>> {
        let inner = self.current();
        Box::pin(async move { inner.verify(request).await })
    }

    fn settle(&self, request: proto::SettleRequest) -> BoxFuture<'_, Result<Settled, FacilitatorFailure>> {
        let inner = self.current();
        Box::pin(async move { inner.settle(request).await })
    }

    fn supported(&self) -> BoxFuture<'_, Result<SupportedResponse, FacilitatorFailure>> {
        let inner = self.current();
        Box::pin(async move { inner.supported().await })
    }
}

/// The in-process facilitator, with settlement replaced by `settle`.
struct SettleFails {
    inner: Arc<dyn PaymentFacilitator>,
    settle: SettleMode,
}

#[derive(Clone, Copy)]
enum SettleMode {
    /// The facilitator refuses the settlement (`success: false`).
    Refused,
    /// The settlement lands on chain but the answer comes after the paywall stopped waiting
    /// (it waits [`LATE_TIMEOUT`]).
    LandsLate,
}

impl PaymentFacilitator for SettleFails {
    fn verify(&self, request: proto::VerifyRequest) -> BoxFuture<'_, Result<Verified, FacilitatorFailure>> {
        self.inner.verify(request)
    }

    fn settle(&self, request: proto::SettleRequest) -> BoxFuture<'_, Result<Settled, FacilitatorFailure>> {
        Box::pin(async move {
            match self.settle {
                SettleMode::Refused => Err(FacilitatorFailure::Rejected {
                    reason: "unexpected_settle_error".into(),
                    details: "the test facilitator refuses every settlement".into(),
                }),
                SettleMode::LandsLate => {
                    let settled = self.inner.settle(request).await;
                    tokio::time::sleep(LATE_TIMEOUT + Duration::from_secs(2)).await;
                    settled
                }
            }
        })
    }

    fn supported(&self) -> BoxFuture<'_, Result<SupportedResponse, FacilitatorFailure>> {
        self.inner.supported()
    }
}

/// How a loopback HTTP facilitator misbehaves.
#[derive(Clone, Copy)]
enum Misbehaviour {
    /// 200 with a body that is not JSON.
    Garbage,
    /// 200 with JSON that is no verify answer.
    WrongJson,
    /// HTTP 500 on every endpoint.
    ServerError,
    /// `/verify` by the real (in-process) facilitator, HTTP 500 on `/settle`.
    VerifiesThenFailsToSettle,
}

#[derive(Clone)]
struct Loopback {
    misbehaviour: Misbehaviour,
    real: Option<Arc<dyn PaymentFacilitator>>,
}

/// Serves a facilitator at a loopback URL, behaving as told.
async fn loopback_facilitator(misbehaviour: Misbehaviour, real: Option<Arc<dyn PaymentFacilitator>>) -> url::Url {
    async fn answer(State(state): State<Loopback>, endpoint: &'static str, body: String) -> Response {
        match (state.misbehaviour, endpoint) {
            (Misbehaviour::Garbage, _) => (StatusCode::OK, "<html>not a facilitator</html>").into_response(),
            (Misbehaviour::WrongJson, _) => Json(json!({"hello": "world"})).into_response(),
            (Misbehaviour::VerifiesThenFailsToSettle, "verify") => {
                let real = state.real.expect("the real facilitator");
                let request = proto::VerifyRequest::from(serde_json::value::RawValue::from_string(body).unwrap());
                match real.verify(request).await {
                    Ok(verified) => Json(json!({"isValid": true, "payer": verified.payer})).into_response(),
                    Err(FacilitatorFailure::Rejected { reason, .. }) => {
                        Json(json!({"isValid": false, "invalidReason": reason})).into_response()
                    }
                    Err(FacilitatorFailure::Unavailable(why)) => (StatusCode::BAD_GATEWAY, why).into_response(),
                }
            }
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response(),
        }
    }
    let router = axum::Router::new()
        .route("/verify", post(|s: State<Loopback>, b: String| answer(s, "verify", b)))
        .route("/settle", post(|s: State<Loopback>, b: String| answer(s, "settle", b)))
        .route("/supported", axum::routing::get(|s: State<Loopback>| answer(s, "supported", String::new())))
        .with_state(Loopback { misbehaviour, real });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = url::Url::parse(&format!("http://{}/", listener.local_addr().unwrap())).unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    url
}

/// A loopback port where nothing listens.
async fn dead_port() -> url::Url {
    loopback::closed_port_url().await.parse().unwrap()
}

/// A loopback server that accepts connections and never says a word (for the test's lifetime).
async fn silent_server() -> url::Url {
    loopback::silent_server().await.0.parse().unwrap()
}

/// How long the paywall waits for a settlement that lands late: long enough for the
/// verification before it on a loaded machine.
const LATE_TIMEOUT: Duration = Duration::from_secs(4);

fn remote(url: &url::Url) -> Arc<dyn PaymentFacilitator> {
    remote_waiting(url, CLIENT_TIMEOUT)
}

fn remote_waiting(url: &url::Url, timeout: Duration) -> Arc<dyn PaymentFacilitator> {
    Arc::new(Remote::new(url, timeout).expect("a facilitator client"))
}

fn setup(facilitator_timeout: Duration) -> Setup {
    Setup { options: HostedOptions { facilitator_timeout, ..Setup::default().options }, ..Setup::default() }
}

/// A server on the sandbox paid through `first`, behind a [`Swappable`] the test controls.
async fn server_with(first: Arc<dyn PaymentFacilitator>, timeout: Duration) -> (HostedServer, Arc<Swappable>) {
    let swappable = Swappable::new(first);
    let handle = swappable.clone();
    let server =
        sandbox::start_with_facilitator(setup(timeout), |_local| async move { handle as Arc<dyn PaymentFacilitator> })
            .await;
    (server, swappable)
}

fn balance_body(server: &HostedServer) -> Value {
    json!({"chain": "base", "address": server.chain.payer().to_checksum(None)})
}

/// The quote's requirements and an x402 payment for them, signed by the sandbox payer.
async fn x402_payment(server: &HostedServer) -> (U256, String) {
    let response = server.post(BALANCE, &balance_body(server), &[]).await;
    assert_eq!(response.status(), 402);
    let required: Value = response.json().await.unwrap();
    let requirement = &required["accepts"][0];
    let quote = U256::from_str_radix(requirement["amount"].as_str().unwrap(), 10).unwrap();
    (quote, x402::sign_x402(&server.chain.payer_signer(), requirement).await)
}

async fn latest(server: &HostedServer) -> Decision {
    server.paywall.store().recent(1).await.unwrap().remove(0)
}

async fn payment_state(server: &HostedServer, row: &Decision) -> Option<PaymentState> {
    let key = row.payment_key.expect("the ledger row names the payment");
    server.paywall.store().payment_state(&key).await.unwrap()
}

/// A paid call through the broken facilitator is 503 `unavailable` with Retry-After, settles
/// nothing and releases the payment; once the working facilitator is back, the same signed
/// payment pays.
async fn unavailable_then_recovers(first: Arc<dyn PaymentFacilitator>, timeout: Duration, what: &str) {
    let (server, swappable) = server_with(first, timeout).await;
    let (quote, payment) = x402_payment(&server).await;
    let balances = server.balances().await;

    let started = Instant::now();
    let response = server.post(BALANCE, &balance_body(&server), &[("payment-signature", &payment)]).await;
    let took = started.elapsed();
    assert_eq!(response.status(), 503, "{what}");
    let retry_after: u64 = response.headers()["retry-after"].to_str().unwrap().parse().expect("Retry-After seconds");
    assert!(retry_after >= 1, "{what}: Retry-After {retry_after}");
    assert!(response.headers().get("payment-response").is_none(), "{what}");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unavailable", "{what}: {body}");
    // Never later than the paywall's own limit, plus room for a loaded machine (the silent
    // server would hold the call for 60 s: the margin stays far below that).
    let limit = timeout + Duration::from_secs(10);
    assert!(took < limit, "{what}: answered after {took:?}, the facilitator timeout is {timeout:?}");
    assert_eq!(server.balances().await, balances, "{what}: nothing settled");
    let row = latest(&server).await;
    assert_eq!(row.outcome, Outcome::FacilitatorUnavailable, "{what}: {row:?}");
    assert_eq!(row.tx_hash, None);
    assert_eq!(payment_state(&server, &row).await, Some(PaymentState::Released), "{what}: the claim is given back");

    // The facilitator is back: the very same signed payment goes through (retried on 503
    // after a pause, as Retry-After invites: with the short limit a loaded machine may
    // need it).
    swappable.set(sandbox::local_facilitator(&server.chain).await);
    let mut response = server.post(BALANCE, &balance_body(&server), &[("payment-signature", &payment)]).await;
    for _ in 0..8 {
        if response.status() != 503 {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        response = server.post(BALANCE, &balance_body(&server), &[("payment-signature", &payment)]).await;
    }
    if response.status() != 200 {
        let status = response.status();
        let headers = format!("{:?}", response.headers());
        panic!("{what}: the released payment pays later, got {status} {headers} {}", response.text().await.unwrap());
    }
    assert!(response.headers().contains_key("payment-response"));
    let (payer, payee) = server.balances().await;
    assert_eq!(balances.0 - payer, quote, "{what}");
    assert_eq!(payee - balances.1, quote, "{what}");
    assert_eq!(latest(&server).await.outcome, Outcome::Paid);
}

#[tokio::test]
async fn a_dead_facilitator_port_is_503_and_the_payment_pays_later() {
    unavailable_then_recovers(remote(&dead_port().await), PATIENT, "dead port").await;
}

#[tokio::test]
async fn a_facilitator_that_never_answers_is_503_after_the_timeout() {
    // The paywall's own limit answers, not the HTTP client's.
    let silent = remote_waiting(&silent_server().await, Duration::from_secs(60));
    unavailable_then_recovers(silent, SHORT, "silent server").await;
}

#[tokio::test]
async fn a_facilitator_answering_garbage_is_503() {
    unavailable_then_recovers(remote(&loopback_facilitator(Misbehaviour::Garbage, None).await), PATIENT, "garbage")
        .await;
}

#[tokio::test]
async fn a_facilitator_answering_json_that_is_no_verdict_is_503() {
    unavailable_then_recovers(
        remote(&loopback_facilitator(Misbehaviour::WrongJson, None).await),
        PATIENT,
        "wrong JSON",
    )
    .await;
}

#[tokio::test]
async fn a_facilitator_answering_500_is_503() {
    unavailable_then_recovers(
        remote(&loopback_facilitator(Misbehaviour::ServerError, None).await),
        PATIENT,
        "HTTP 500",
    )
    .await;
}

/// MPP goes through the same facilitator: its credential is released the same way.
#[tokio::test]
async fn an_mpp_credential_through_a_dead_facilitator_is_503_and_pays_later() {
    let (server, swappable) = server_with(remote(&dead_port().await), PATIENT).await;
    let body = serde_json::to_vec(&balance_body(&server)).unwrap();
    let send = |headers: Vec<(&'static str, String)>| {
        let mut request = server
            .client
            .post(format!("{}{BALANCE}", server.base))
            .header("content-type", "application/json")
            .body(body.clone());
        for (name, value) in headers {
            request = request.header(name, value);
        }
        request.send()
    };
    let unpaid = send(Vec::new()).await.unwrap();
    assert_eq!(unpaid.status(), 402);
    let challenge = unpaid.headers()["www-authenticate"].to_str().unwrap().to_string();
    let credential = sign_evm_credential(&challenge, &server.chain.payer_signer(), "USD Coin", "2").unwrap();
    let balances = server.balances().await;

    let response = send(vec![("authorization", credential.clone())]).await.unwrap();
    assert_eq!(response.status(), 503);
    assert!(response.headers().contains_key("retry-after"));
    assert_eq!(server.balances().await, balances);
    let row = latest(&server).await;
    assert_eq!(row.outcome, Outcome::FacilitatorUnavailable);
    assert_eq!(payment_state(&server, &row).await, Some(PaymentState::Released));

    swappable.set(sandbox::local_facilitator(&server.chain).await);
    let response = send(vec![("authorization", credential)]).await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers().contains_key("payment-receipt"));
    assert_eq!(latest(&server).await.outcome, Outcome::MppPaid);
}

/// A server whose facilitator is `wrap` applied to the chain's in-process one.
async fn server_wrapping(
    timeout: Duration,
    wrap: impl FnOnce(Arc<dyn PaymentFacilitator>) -> BoxFuture<'static, Arc<dyn PaymentFacilitator>>,
) -> (HostedServer, Arc<Swappable>) {
    let swappable = Swappable::new(remote(&dead_port().await));
    let handle = swappable.clone();
    let server = sandbox::start_with_facilitator(setup(timeout), |local| async move {
        handle.set(wrap(local).await);
        handle as Arc<dyn PaymentFacilitator>
    })
    .await;
    (server, swappable)
}

/// After verification succeeded and the operation ran, settlement failed: nothing is
/// delivered, the payment is spent for good (replays are refused even once a working
/// facilitator is back). Returns the answer and the ledger row for the caller's checks.
async fn settle_fails(
    (server, swappable): (HostedServer, Arc<Swappable>),
    what: &str,
    lands: bool,
) -> (StatusCode, Value, Decision) {
    let (quote, payment) = x402_payment(&server).await;
    let balances = server.balances().await;

    let response = server.post(BALANCE, &balance_body(&server), &[("payment-signature", &payment)]).await;
    let status = response.status();
    assert!(status == 503 || status == 402, "{what}: {status}");
    assert!(response.headers().get("payment-response").is_none(), "{what}: no settlement to report");
    let body: Value = response.json().await.unwrap();
    assert!(
        body.get("error").is_some() && body.get("balance").is_none(),
        "{what}: the result is not delivered: {body}"
    );
    let row = latest(&server).await;
    assert_eq!(payment_state(&server, &row).await, Some(PaymentState::SettleFailed), "{what}: spent for good");
    let moved = if lands { quote } else { U256::ZERO };
    assert_eq!(balances.0 - server.balances().await.0, moved, "{what}");

    // Replaying it is refused, even through a working facilitator.
    swappable.set(sandbox::local_facilitator(&server.chain).await);
    let replay = server.post(BALANCE, &balance_body(&server), &[("payment-signature", &payment)]).await;
    assert_eq!(replay.status(), 402, "{what}: a replay after a settlement attempt");
    let refused: Value = replay.json().await.unwrap();
    assert!(refused["error"].as_str().unwrap_or("").starts_with("payment_already_used"), "{what}: {refused}");
    assert_eq!(latest(&server).await.outcome, Outcome::Replay);
    assert_eq!(balances.0 - server.balances().await.0, moved, "{what}: the replay moved nothing");
    (status, body, row)
}

fn settling(
    mode: SettleMode,
) -> impl FnOnce(Arc<dyn PaymentFacilitator>) -> BoxFuture<'static, Arc<dyn PaymentFacilitator>> {
    move |inner| Box::pin(async move { Arc::new(SettleFails { inner, settle: mode }) as Arc<dyn PaymentFacilitator> })
}

#[tokio::test]
async fn a_refused_settlement_delivers_nothing_and_spends_the_payment() {
    let server = server_wrapping(PATIENT, settling(SettleMode::Refused)).await;
    let (status, body, row) = settle_fails(server, "refused settlement", false).await;
    assert_eq!(status, 402, "a refused settlement is the payment's fault: a fresh 402");
    assert!(body["error"].as_str().unwrap_or("").starts_with("unexpected_settle_error"), "{body}");
    assert_eq!(row.outcome, Outcome::SettleFailed);
    assert_eq!(row.error_code.as_deref(), Some("unexpected_settle_error"));
}

#[tokio::test]
async fn a_settlement_answered_500_delivers_nothing_and_spends_the_payment() {
    let server = server_wrapping(PATIENT, |real| {
        Box::pin(async move {
            let url = loopback_facilitator(Misbehaviour::VerifiesThenFailsToSettle, Some(real)).await;
            remote_waiting(&url, PATIENT)
        })
    })
    .await;
    let (status, body, row) = settle_fails(server, "HTTP 500 at settle", false).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "unavailable");
    // Retrying the same payment is refused (payment_already_used): the answer must not
    // promise otherwise, and the ledger must tell this apart from an outage before anything ran.
    assert_settle_failure_is_told(&body, &row, "HTTP 500 at settle");
}

/// The answer and the ledger of a settlement that failed for want of an answer.
fn assert_settle_failure_is_told(body: &Value, row: &Decision, what: &str) {
    let mut wrong = Vec::new();
    let message = body["error"]["message"].as_str().unwrap_or("");
    if message.contains("nothing was charged") {
        wrong.push(format!("the 503 says `{message}`, but the payment was spent (and may have landed)"));
    }
    if row.outcome != Outcome::SettleFailed {
        wrong.push(format!("the ledger says `{}`, not `settle_failed`", row.outcome));
    }
    assert!(wrong.is_empty(), "{what}:\n{}", wrong.join("\n"));
}

#[tokio::test]
async fn a_settlement_that_lands_after_the_timeout_is_not_called_uncharged() {
    let server = server_wrapping(LATE_TIMEOUT, settling(SettleMode::LandsLate)).await;
    let (status, body, row) = settle_fails(server, "late settlement", true).await;
    assert_eq!(status, 503, "{body}");
    assert_settle_failure_is_told(&body, &row, "settlement landed after the timeout");
}
