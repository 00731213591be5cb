//! The paying client's own cost on a paid call, the server and the chain excluded: N paid
//! calls (`PayingClient::call`, each a whole x402 v2 exchange) against a loopback server
//! that answers at once, and the bare transport of the same exchange (the same two HTTP
//! requests made with a plain reqwest client). The difference is what the client adds:
//! reading the 402, the policy's choice, the ledger's rows (start, quote and finish
//! without a flush; reserve in a `BEGIN IMMEDIATE` transaction, signing and paid each with
//! one, `synchronous=FULL`, WAL), the EIP-3009 signature, encoding the payment, reading
//! the settlement.
//!
//! Run by `cargo xtask bench wallet`, or alone with
//! `cargo bench -p paperchain-wallet --bench client [-- --calls N] [--dir FOLDER]`; the
//! ledger goes in a new folder inside FOLDER (default: the system's temporary folder),
//! whose disk decides what its commits cost.
//!
//! The server is a few lines of HTTP/1.1 on a tokio socket, in this process: an unpaid
//! POST gets a 402 with a fixed PaymentRequired (header and body; one `exact` offer of
//! 1000 units of USDC on Base Sepolia, a test network), a POST with a `payment-signature`
//! header gets 200, a small JSON body and a `payment-response` naming a made-up
//! transaction; it checks nothing. Both sides talk to it over keep-alive loopback
//! connections through the same reqwest settings, so they differ only by the client's
//! work. The policy has a per-call and a per-day cap, as a user's would: the day's cap is
//! checked by summing the day's paid rows, which grow by one each paid call.
//!
//! A timed loop rather than criterion, as in the gateway's paywall bench: the figures are
//! the median and the 99th percentile of single calls, one at a time, and the sides
//! alternate in blocks of 50 (which starts a round alternates too), so drift falls on both.
//!
//! Output: one `result side=paid|bare|own calls=… p50_us=… p99_us=… max_us=… mean_us=…`
//! line each on stdout (xtask reads them), progress on stderr. The `own` line's figures are
//! differences, paid minus bare, of the p50s, the p99s, the maxima and the means: not
//! percentiles of per-call differences (the two sides' calls are not paired).
//! Without `--bench` (`cargo test --all-targets`, nextest) it makes a few calls of each
//! side as a smoke test, checks that each paid call was paid and is in the ledger as paid,
//! and prints no timings.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy::signers::local::PrivateKeySigner;
use bytes::Bytes;
use paperchain_engine_core::evm::{ChainTimeouts, Chains};
use paperchain_protocol::x402::{self, PAYMENT_REQUIRED, PAYMENT_RESPONSE, PAYMENT_SIGNATURE};
use paperchain_testkit::bench::BenchArgs;
use paperchain_wallet::client::{KeyLoader, NobodyToAsk, PayingClient, Request};
use paperchain_wallet::config::ClientConfig;
use paperchain_wallet::ledger::{Caller, Ledger};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// Timed calls of each side, unless `--calls` says otherwise.
const DEFAULT_CALLS: usize = 2000;
/// Calls of one side before the other side's turn.
const BLOCK: usize = 50;
const PATH: &str = "/v1/chain/gas";
const NETWORK: &str = "eip155:84532";
/// USDC on Base Sepolia: an asset the wallet knows, on a network paid without a network cap.
const ASSET: &str = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const PAY_TO: &str = "0x00000000000000000000000000000000000b0b02";
/// Anvil's first development key: a well-known test key that holds nothing anywhere real.
const PAYER_KEY: &str = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
/// The policy: a per-call and a per-day cap, far above what the bench spends.
const POLICY: &str = "per_call = \"0.01\"\nper_day = \"1000\"";

fn main() {
    let Some(BenchArgs { bench, calls, parent }) = BenchArgs::from_env("client", DEFAULT_CALLS) else { return };
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    runtime.block_on(run(calls, bench, &parent));
}

async fn run(calls: usize, bench: bool, parent: &Path) {
    let dir = tempfile::tempdir_in(parent).expect("a temporary folder");
    let signer: PrivateKeySigner = PAYER_KEY.parse().expect("the bench's key");
    let payer = signer.address().to_checksum(None);
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await.expect("a loopback port");
    let base = format!("http://{}", listener.local_addr().expect("the port's address"));
    let required = payment_required(&base);
    tokio::spawn(serve(listener, Arc::new(Answers::new(&required, &payer))));

    let config = format!("[service]\nurl = \"{base}\"\n[policy]\n{POLICY}\n");
    let config = ClientConfig::parse(&config, None).expect("the bench's configuration");
    let ledger = Ledger::open_in(dir.path()).await.expect("the ledger");
    let key = signer.clone();
    let keys: KeyLoader = Arc::new(move || Ok(key.clone()));
    // The happy path never reads a chain: none is configured.
    let chains = Arc::new(Chains::new(vec![], ChainTimeouts::default()));
    let client = PayingClient::new(Arc::new(config), ledger, keys, Arc::new(NobodyToAsk), chains);
    let caller = Caller { front_door: "cli", client: Some("bench".into()) };
    let request = Request {
        operation: "get_gas_price",
        path: PATH,
        body: json!({"chain": "base"}).to_string().into(),
        caller: &caller,
        approver: None,
        stop: Default::default(),
    };

    // The bare side: the same reqwest settings as the client's, and one real signed
    // payment (of the same size as each paid call's) sent every time.
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .connect_timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("paperchain/", env!("CARGO_PKG_VERSION")))
        .build()
        .expect("a reqwest client");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let read: x402::PaymentRequired = x402::read(required.clone(), "the 402").expect("a PaymentRequired");
    let payment =
        paperchain_protocol::exact_evm::sign_exact_evm(&signer, &read.accepts[0], read.resource.as_ref(), now)
            .expect("a signed payment");
    let signature = x402::encode(&payment);
    let url = format!("{base}{PATH}");

    let warm_up = if bench { (calls / 10).clamp(1, 200) } else { 1 };
    if bench {
        eprintln!(
            "wallet bench: {calls} timed calls of each side, one at a time, in blocks of {BLOCK}, after {warm_up} \
             warm-up calls each; server at {base}; ledger at {} (money steps synchronous=FULL)",
            dir.path().display()
        );
    }
    for _ in 0..warm_up {
        paid_call(&client, &request).await;
        bare_call(&http, &url, &request.body, &signature).await;
    }
    let (mut paid, mut bare) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
    let mut round = 0;
    while paid.len() < calls {
        let n = BLOCK.min(calls - paid.len());
        for side in if round % 2 == 0 { [true, false] } else { [false, true] } {
            for _ in 0..n {
                if side {
                    paid.push(paid_call(&client, &request).await);
                } else {
                    bare.push(bare_call(&http, &url, &request.body, &signature).await);
                }
            }
        }
        round += 1;
        if bench && round % 10 == 0 {
            eprintln!("  {} of {calls} calls of each side", paid.len());
        }
    }

    // Every paid call, warm-ups too, is one `paid` row, and nothing else is in the ledger.
    let rows = client.ledger().rows(0).await.expect("the ledger's rows");
    let paid_rows = rows.iter().filter(|r| r.state == "paid").count();
    assert_eq!(paid_rows, calls + warm_up, "one paid row per paid call: {:?}", rows.iter().find(|r| r.state != "paid"));
    assert_eq!(rows.len(), paid_rows, "only paid rows");
    client.ledger().close().await;
    if bench {
        eprintln!("wallet bench: ledger has {paid_rows} paid rows");
        let paid = summary(&mut paid);
        let bare = summary(&mut bare);
        report("paid", calls, paid);
        report("bare", calls, bare);
        report("own", calls, paid.minus(bare));
    }
}

/// One paid call through the client; its time. Anything but a 200 that was paid stops the
/// bench: a refusal would be timed as if it were the work.
async fn paid_call(client: &PayingClient, request: &Request<'_>) -> Duration {
    let started = Instant::now();
    let answer = client.call(request).await;
    let elapsed = started.elapsed();
    let answer = answer.unwrap_or_else(|e| panic!("the paid call failed: {e}"));
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    let paid = answer.paid.as_ref().expect("the call was paid");
    assert_eq!((paid.amount.as_str(), paid.network.as_str()), ("1000", NETWORK));
    elapsed
}

/// The same exchange without the client: an unpaid POST read whole (402), then a POST with
/// a payment read whole (200). Its time.
async fn bare_call(http: &reqwest::Client, url: &str, body: &Bytes, signature: &str) -> Duration {
    let started = Instant::now();
    let first = http.post(url).header("content-type", "application/json").body(body.clone()).send().await;
    let first = first.expect("the server answers");
    let quoted = (first.status().as_u16(), first.headers().contains_key(PAYMENT_REQUIRED));
    first.bytes().await.expect("the 402's body");
    let second = http
        .post(url)
        .header("content-type", "application/json")
        .header(PAYMENT_SIGNATURE, signature)
        .body(body.clone())
        .send()
        .await
        .expect("the server answers");
    let settled = (second.status().as_u16(), second.headers().contains_key(PAYMENT_RESPONSE));
    second.bytes().await.expect("the answer's body");
    let elapsed = started.elapsed();
    assert_eq!((quoted, settled), ((402, true), (200, true)));
    elapsed
}

/// What the server asks: one `exact` offer, shaped like the hosted service's.
fn payment_required(base: &str) -> Value {
    json!({
        "x402Version": 2,
        "error": "PAYMENT-SIGNATURE header is required",
        "resource": {
            "url": format!("{base}{PATH}"),
            "description": "Current gas price of an EVM chain",
            "mimeType": "application/json",
        },
        "accepts": [{
            "scheme": "exact",
            "network": NETWORK,
            "amount": "1000",
            "asset": ASSET,
            "payTo": PAY_TO,
            "maxTimeoutSeconds": 300,
            "extra": {"name": "USDC", "version": "2"},
        }],
    })
}

/// The server's two answers, whole, written as they are.
struct Answers {
    quote: Vec<u8>,
    delivered: Vec<u8>,
}

impl Answers {
    fn new(required: &Value, payer: &str) -> Answers {
        let body = required.to_string();
        let quote = format!(
            "HTTP/1.1 402 Payment Required\r\ncontent-type: application/json\r\n{PAYMENT_REQUIRED}: {}\r\n\
             content-length: {}\r\n\r\n{body}",
            x402::encode(required),
            body.len()
        );
        let settlement = x402::SettlementResponse::settled(&format!("0x{}", "ab".repeat(32)), NETWORK, Some(payer));
        let body = json!({"chain": "base-sepolia", "gas_price_wei": "1000000"}).to_string();
        let delivered = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n{PAYMENT_RESPONSE}: {}\r\n\
             content-length: {}\r\n\r\n{body}",
            x402::encode(&settlement),
            body.len()
        );
        Answers { quote: quote.into_bytes(), delivered: delivered.into_bytes() }
    }
}

async fn serve(listener: TcpListener, answers: Arc<Answers>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let _ = stream.set_nodelay(true);
        tokio::spawn(connection(stream, answers.clone()));
    }
}

/// Keep-alive HTTP/1.1 on one connection: each request's head and Content-Length body are
/// read, and it is answered by whether it carries a payment. Nothing is checked.
async fn connection(stream: TcpStream, answers: Arc<Answers>) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream);
    let (mut line, mut body) = (String::new(), Vec::new());
    loop {
        let (mut length, mut paid, mut head) = (0, false, 0);
        loop {
            line.clear();
            if reader.read_line(&mut line).await? == 0 {
                return Ok(());
            }
            head += 1;
            let text = line.trim_end();
            if text.is_empty() {
                break;
            }
            if head == 1 {
                continue;
            }
            if let Some((name, value)) = text.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                } else if name.eq_ignore_ascii_case(PAYMENT_SIGNATURE) {
                    paid = true;
                }
            }
        }
        body.resize(length, 0);
        reader.read_exact(&mut body).await?;
        let answer = if paid { &answers.delivered } else { &answers.quote };
        reader.get_mut().write_all(answer).await?;
    }
}

#[derive(Clone, Copy)]
struct Summary {
    p50_us: f64,
    p99_us: f64,
    max_us: f64,
    mean_us: f64,
}

impl Summary {
    fn minus(self, other: Summary) -> Summary {
        Summary {
            p50_us: self.p50_us - other.p50_us,
            p99_us: self.p99_us - other.p99_us,
            max_us: self.max_us - other.max_us,
            mean_us: self.mean_us - other.mean_us,
        }
    }
}

/// Nearest-rank percentiles of `times`, in microseconds.
fn summary(times: &mut [Duration]) -> Summary {
    times.sort();
    let at = |q: f64| times[((times.len() as f64 * q).ceil() as usize).clamp(1, times.len()) - 1];
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let mean = times.iter().sum::<Duration>() / times.len() as u32;
    Summary { p50_us: us(at(0.5)), p99_us: us(at(0.99)), max_us: us(times[times.len() - 1]), mean_us: us(mean) }
}

fn report(side: &str, calls: usize, s: Summary) {
    println!(
        "result side={side} calls={calls} p50_us={:.1} p99_us={:.1} max_us={:.1} mean_us={:.1}",
        s.p50_us, s.p99_us, s.max_us, s.mean_us
    );
}
