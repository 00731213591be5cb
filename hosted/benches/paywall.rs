//! The paywall's own cost on a paid call, the facilitator excluded: the same route and
//! input served in process (a) in local mode, no paywall, and (b) in hosted mode paid with
//! x402, through a facilitator that answers verify and settle at once. The difference is
//! what the paywall adds: header decoding, requirement matching, the SQLite claim, finish
//! and ledger row (each a committed transaction), the task of a paid call, the receipt.
//!
//! Run by `cargo xtask bench paywall`, or alone with
//! `cargo bench -p paperchain-gateway --bench paywall [-- --calls N] [--dir FOLDER]`; the
//! SQLite store goes in a new folder inside FOLDER (default: the system's temporary folder),
//! whose disk decides what its commits cost.
//!
//! A timed loop rather than criterion: the figures asked for are the median and the 99th
//! percentile of single calls, and criterion times batches of calls (their means), which
//! hides the tail that the SQLite commits make. Each call goes through the whole axum
//! router (`tower::ServiceExt::oneshot`, no socket), so both sides pay the same HTTP
//! layer and differ only by the paywall. The sides alternate in blocks, so drift (page
//! cache, CPU frequency, the ledger growing) falls on both.
//!
//! Output: one `result route=… mode=… calls=… p50_us=… p99_us=… max_us=… mean_us=…` line
//! per route and side on stdout (xtask reads them), progress on stderr.
//! Without `--bench` (`cargo test --all-targets`, nextest) it makes a few calls of each
//! kind as a smoke test and prints no timings.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt as _;
use paperchain_engine::Context;
use paperchain_gateway::{HttpServer, ServerConfig};
use paperchain_hosted::config::{NETWORKS, PayTo};
use paperchain_hosted::facilitator::{FacilitatorFailure, PaymentFacilitator, Settled, Verified};
use paperchain_hosted::paywall::{Paywall, SystemClock};
use paperchain_hosted::store::Store;
use paperchain_protocol::x402::{self, PAYMENT_REQUIRED, PAYMENT_RESPONSE, PAYMENT_SIGNATURE};
use paperchain_testkit::bench::BenchArgs;
use paperchain_testkit::sandbox::sandbox_config;
use serde_json::{Value, json};
use tower::ServiceExt as _;
use x402_types::proto;

/// Where the in-process server says it listens (only the Host check reads it).
const ADDR: &str = "127.0.0.1:8402";
const PAY_TO: &str = "0x00000000000000000000000000000000000b0b02";
const PAYER: &str = "0x00000000000000000000000000000000000a11ce";
/// Timed calls of each side of each route, unless `--calls` says otherwise.
const DEFAULT_CALLS: usize = 3000;
/// Calls of one side before the other side's turn.
const BLOCK: usize = 50;

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Accepts every payment at once: bench-only, it checks no signature and moves no money,
/// so what is timed is the paywall around it.
struct InstantFacilitator;

impl PaymentFacilitator for InstantFacilitator {
    fn verify(&self, _: proto::VerifyRequest) -> BoxFuture<'_, Result<Verified, FacilitatorFailure>> {
        Box::pin(async { Ok(Verified { payer: Some(PAYER.into()) }) })
    }

    fn settle(&self, _: proto::SettleRequest) -> BoxFuture<'_, Result<Settled, FacilitatorFailure>> {
        Box::pin(async {
            Ok(Settled {
                payer: Some(PAYER.into()),
                transaction: format!("0x{}", "ab".repeat(32)),
                network: NETWORKS[0].caip2.into(),
            })
        })
    }

    fn supported(&self) -> BoxFuture<'_, Result<proto::SupportedResponse, FacilitatorFailure>> {
        Box::pin(async { Err(FacilitatorFailure::Unavailable("not asked in the bench".into())) })
    }
}

/// A route and the input both sides are given.
struct Case {
    path: &'static str,
    body: Vec<u8>,
}

fn cases() -> Vec<Case> {
    // transfer(address,uint256): decoded offline from the bundled selector table.
    let calldata = format!("0xa9059cbb{:0>64}{:064x}", &PAY_TO[2..], 1_000_000u64);
    let pdf = paperchain_testkit::b64(include_bytes!("one-page.pdf"));
    vec![
        Case { path: "/v1/chain/calldata", body: json!({ "calldata": calldata }).to_string().into_bytes() },
        Case { path: "/v1/pdf/inspect", body: json!({ "file": { "data": pdf } }).to_string().into_bytes() },
    ]
}

fn main() {
    let Some(BenchArgs { bench, calls, parent }) = BenchArgs::from_env("paywall", DEFAULT_CALLS) else { return };
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    runtime.block_on(run(calls, bench, &parent));
}

async fn run(calls: usize, bench: bool, parent: &Path) {
    let dir = tempfile::tempdir_in(parent).expect("a temporary folder");
    let addr: SocketAddr = ADDR.parse().expect("a socket address");
    let ctx = Context::new();
    let local = HttpServer::new(ServerConfig::local(dir.path().join("local")), ctx.clone())
        .router(addr)
        .expect("the local-mode router");
    let paywall = paywall(dir.path(), &ctx).await;
    let hosted = HttpServer::new(ServerConfig::local(dir.path().join("hosted")), ctx)
        .paywall(paywall.clone())
        .router(addr)
        .expect("the hosted-mode router");
    if bench {
        eprintln!(
            "paywall bench: {calls} timed calls of each side of each route, in blocks of {BLOCK}, after {} warm-up \
             calls; SQLite store at {} (payments synchronous=FULL)",
            warm_up(calls),
            dir.path().display()
        );
    }
    for case in cases() {
        let required = quote(&hosted, &case).await;
        let mut next = 0u64;
        let mut payment = || {
            next += 1;
            signature(&required, next)
        };
        for _ in 0..warm_up(calls) {
            call(&local, &case, None).await;
            call(&hosted, &case, Some(payment())).await;
        }
        let (mut ours, mut paid) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
        let mut round = 0;
        while ours.len() < calls {
            let n = BLOCK.min(calls - ours.len());
            // Which side starts a round alternates too: neither always follows the other.
            for side in if round % 2 == 0 { [false, true] } else { [true, false] } {
                for _ in 0..n {
                    if side {
                        let header = payment();
                        paid.push(call(&hosted, &case, Some(header)).await);
                    } else {
                        ours.push(call(&local, &case, None).await);
                    }
                }
            }
            round += 1;
        }
        if bench {
            report(case.path, "local", &mut ours);
            report(case.path, "hosted", &mut paid);
        }
    }
    let totals = paywall.store().totals().await.expect("the ledger's totals");
    if bench {
        eprintln!("paywall bench: ledger {totals:?}");
    }
}

fn warm_up(calls: usize) -> usize {
    (calls / 10).clamp(1, 200)
}

/// The hosted side: the sandbox's configuration (no facilitator URL needed) paid on Base,
/// its store in `dir`, the instant facilitator.
async fn paywall(dir: &Path, ctx: &Context) -> Arc<Paywall> {
    let mut config = sandbox_config(dir, "http://127.0.0.1:8402", &[]);
    config.pay_to = vec![PayTo { network: NETWORKS[0].clone(), address: PAY_TO.into() }];
    let store = Store::open(&config.database).await.expect("the SQLite store");
    let catalog = paperchain_engine::catalog::standard();
    Arc::new(Paywall::new(config, &catalog, ctx, Arc::new(InstantFacilitator), store, Arc::new(SystemClock)))
}

/// The 402 of an unpaid call: the PaymentRequired that payments are built from.
async fn quote(hosted: &Router, case: &Case) -> Value {
    let response = hosted.clone().oneshot(request(case, None)).await.expect("the router answers");
    assert_eq!(response.status(), StatusCode::PAYMENT_REQUIRED, "{}: an unpaid call is quoted", case.path);
    let header = response.headers().get(PAYMENT_REQUIRED).expect("a PAYMENT-REQUIRED header");
    let required: Value =
        x402::decode(header.to_str().expect("an ASCII header"), "PAYMENT-REQUIRED").expect("base64 JSON");
    assert!(required["accepts"][0]["amount"].is_string(), "{}: the 402 has a price: {required}", case.path);
    required
}

/// A PAYMENT-SIGNATURE shaped like an EIP-3009 exact payment for the first requirement,
/// with its own nonce and signature so the replay guard sees a new payment every time.
fn signature(required: &Value, n: u64) -> String {
    let accepted = &required["accepts"][0];
    let payload = json!({
        "x402Version": 2,
        "resource": required["resource"],
        "accepted": accepted,
        "payload": {
            "signature": format!("0x{n:0>130x}"),
            "authorization": {
                "from": PAYER,
                "to": accepted["payTo"],
                "value": accepted["amount"],
                "validAfter": "0",
                "validBefore": "4102444800",
                "nonce": format!("0x{n:064x}"),
            },
        },
    });
    x402::encode(&payload)
}

fn request(case: &Case, payment: Option<String>) -> Request<Body> {
    let mut request = Request::post(case.path)
        .header(header::HOST, ADDR)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CONTENT_LENGTH, case.body.len());
    if let Some(payment) = payment {
        request = request.header(PAYMENT_SIGNATURE, payment);
    }
    request.body(Body::from(case.body.clone())).expect("a request")
}

/// One call, answer read whole; its time. Any answer but a delivered (and, when paid,
/// settled) result stops the bench: a refusal would be timed as if it were the work.
async fn call(router: &Router, case: &Case, payment: Option<String>) -> Duration {
    let paid = payment.is_some();
    let request = request(case, payment);
    let started = Instant::now();
    let response = router.clone().oneshot(request).await.expect("the router answers");
    let (parts, body) = response.into_parts();
    let body = body.collect().await.expect("the answer's body").to_bytes();
    let elapsed = started.elapsed();
    assert_eq!(
        parts.status,
        StatusCode::OK,
        "{} ({}): {}",
        case.path,
        if paid { "paid" } else { "local" },
        String::from_utf8_lossy(&body)
    );
    assert!(!paid || parts.headers.contains_key(PAYMENT_RESPONSE), "{}: a paid answer has its receipt", case.path);
    elapsed
}

fn report(path: &str, mode: &str, times: &mut [Duration]) {
    times.sort();
    let at = |q: f64| times[((times.len() as f64 * q).ceil() as usize).clamp(1, times.len()) - 1];
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let mean = times.iter().sum::<Duration>() / times.len() as u32;
    println!(
        "result route={path} mode={mode} calls={} p50_us={:.1} p99_us={:.1} max_us={:.1} mean_us={:.1}",
        times.len(),
        us(at(0.5)),
        us(at(0.99)),
        us(times[times.len() - 1]),
        us(mean)
    );
}
