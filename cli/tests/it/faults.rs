//! `paperchain serve` under faults: a full disk where result files are kept, kill -9 while
//! it writes them, and kill -9 in hosted mode while paid calls settle. A link never serves
//! a truncated file, a full disk is a clean 503 that leaves nothing behind, the server goes
//! on once there is room again, and every payment the chain took is in the ledger once.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alloy::primitives::U256;
use alloy::signers::local::PrivateKeySigner;
use axum::Json;
use axum::extract::State;
use base64::Engine as _;
use paperchain_hosted::facilitator::PaymentFacilitator;
use paperchain_hosted::store::{Outcome, Store};
use paperchain_testkit::corpus::corpus;
use paperchain_testkit::{sandbox, x402};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use x402_types::proto;

/// A child process killed when the test ends, however it ends.
struct Served {
    child: Child,
    base: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `paperchain serve` for `data`, its result files on a tmpfs of `files_kib` KiB when
/// given (in a mount namespace of its own, so nothing is mounted for anyone else).
fn serve(data: &Path, files_kib: Option<u32>) -> Served {
    let port = free_port();
    let binary = env!("CARGO_BIN_EXE_paperchain");
    let listen = format!("127.0.0.1:{port}");
    let mut command = match files_kib {
        None => {
            let mut command = Command::new(binary);
            command.args(["serve", "--listen", &listen, "--data-dir"]).arg(data);
            command
        }
        Some(kib) => {
            std::fs::create_dir_all(data.join("files")).unwrap();
            let mut command = Command::new("unshare");
            command
                .args(["--user", "--map-root-user", "--mount", "sh", "-c"])
                .arg(format!(
                    "mount -t tmpfs -o size={kib}k tmpfs \"$1/files\" && exec \"$2\" serve --listen {listen} --data-dir \"$1\""
                ))
                .arg("sh")
                .arg(data)
                .arg(binary);
            command
        }
    };
    spawn_served(common::unconfigured(&mut command, data), port)
}

/// Starts `command` (a `paperchain serve` listening on `port`) and waits until it listens.
fn spawn_served(command: &mut Command, port: u16) -> Served {
    let child = command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let mut served = Served { child, base: format!("http://127.0.0.1:{port}") };
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = served.child.try_wait() {
            let mut stderr = String::new();
            std::io::Read::read_to_string(served.child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
            panic!("paperchain serve exited ({status}): {stderr}");
        }
        assert!(started.elapsed() < Duration::from_secs(30), "paperchain serve did not listen within 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    served
}

/// The folder where `served` keeps result files, as the server sees it (inside its mount
/// namespace when it has one).
fn files_dir(served: &Served, data: &Path) -> PathBuf {
    let inside = data.join("files");
    PathBuf::from(format!("/proc/{}/root", served.child.id())).join(inside.strip_prefix("/").unwrap())
}

/// A to-images call of `pages` of the 117-page corpus document, answered as links.
fn to_images(pages: &str, dpi: u32) -> Value {
    let pdf = std::fs::read(corpus().join("pdf/sample-files/GeoTopo-komprimiert.pdf")).unwrap();
    json!({
        "file": { "data": base64::engine::general_purpose::STANDARD.encode(pdf), "filename": "geo.pdf" },
        "format": "png", "dpi": dpi, "pages": pages, "output": "url",
    })
}

async fn post(base: &str, path: &str, body: &Value) -> reqwest::Response {
    reqwest::Client::new().post(format!("{base}{path}")).json(body).send().await.unwrap()
}

/// Every link the store holds serves the bytes its metadata promises, or nothing.
async fn every_link_is_whole(base: &str, dir: &Path) -> usize {
    let mut served = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_suffix(".json") else { continue };
        let meta: Value = match std::fs::read(dir.join(&name)).map(|b| serde_json::from_slice(&b)) {
            Ok(Ok(meta)) => meta,
            _ => continue,
        };
        let response = reqwest::get(format!("{base}/v1/files/{id}")).await.unwrap();
        if response.status() == 404 {
            continue;
        }
        assert_eq!(response.status(), 200);
        let bytes = response.bytes().await.unwrap();
        assert_eq!(bytes.len() as u64, meta["bytes"].as_u64().unwrap(), "{id}: served whole or not at all");
        assert_eq!(hex::encode(Sha256::digest(&bytes)), meta["sha256"].as_str().unwrap(), "{id}");
        served += 1;
    }
    served
}

#[tokio::test]
async fn a_full_disk_is_a_clean_503_that_leaves_nothing_and_passes() {
    let data = tempfile::tempdir().unwrap();
    // 1 MiB for result files: twenty pages at 150 dpi are several.
    let server = serve(data.path(), Some(1024));
    let dir = files_dir(&server, data.path());
    assert!(dir.is_dir(), "{}", dir.display());

    let response = post(&server.base, "/v1/pdf/to-images", &to_images("1-20", 150)).await;
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["retry-after"], "60");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "insufficient_storage", "{body}");
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "no file of the failed call is left, no part of one: {left:?}");

    // With room for it, the next call is kept and served whole.
    let response = post(&server.base, "/v1/pdf/to-images", &to_images("1", 36)).await;
    assert_eq!(response.status(), 200);
    let links: Value = response.json().await.unwrap();
    assert_eq!(links.as_array().map(Vec::len), Some(1), "{links}");
    assert_eq!(every_link_is_whole(&server.base, &dir).await, 1);

    // The same full disk for a file answer is no matter: nothing is kept.
    let mut file = to_images("1-20", 150);
    file["output"] = json!("file");
    assert_eq!(post(&server.base, "/v1/pdf/to-images", &file).await.status(), 200);
}

#[tokio::test]
async fn killed_while_writing_links_a_restart_serves_only_whole_files() {
    let data = tempfile::tempdir().unwrap();
    let files = data.path().join("files");
    let body = to_images("1-20", 150);
    // One call without a kill: all 20 links kept and served whole, and how long it takes
    // (the files are written at its end).
    let server = serve(data.path(), None);
    let started = std::time::Instant::now();
    let response = post(&server.base, "/v1/pdf/to-images", &body).await;
    let took = started.elapsed();
    assert_eq!(response.status(), 200);
    let links: Value = response.json().await.unwrap();
    assert_eq!(links.as_array().map(Vec::len), Some(20));
    assert_eq!(every_link_is_whole(&server.base, &files).await, 20);
    drop(server);

    // Killed at points spread over the call, the last ones where its files are written;
    // after each restart, every link serves its whole file or nothing.
    for share in [0.5, 0.95, 0.99, 1.0, 1.02] {
        let server = serve(data.path(), None);
        let call = tokio::spawn({
            let (base, body) = (server.base.clone(), body.clone());
            async move { reqwest::Client::new().post(format!("{base}/v1/pdf/to-images")).json(&body).send().await }
        });
        tokio::time::sleep(took.mul_f64(share)).await;
        let killed = Command::new("kill").args(["-KILL", &server.child.id().to_string()]).status().unwrap();
        assert!(killed.success());
        let _ = call.await;
        drop(server);
        let restarted = serve(data.path(), None);
        assert!(every_link_is_whole(&restarted.base, &files).await >= 20);
    }
}

// ---------------------------------------------------------------------------------------
// kill -9 while paid calls settle (hosted mode).

/// A facilitator served over HTTP on loopback, settling for real on the sandbox chain
/// through the in-process one; it can hold its settle answers back (`late`), and it lists
/// what it settled.
#[derive(Clone)]
struct TestFacilitator {
    real: Arc<dyn PaymentFacilitator>,
    late: Arc<AtomicBool>,
    settled: Arc<Mutex<Vec<String>>>,
}

impl TestFacilitator {
    async fn serve(real: Arc<dyn PaymentFacilitator>) -> (TestFacilitator, String) {
        async fn verify(State(f): State<TestFacilitator>, body: String) -> Json<Value> {
            let request = proto::VerifyRequest::from(serde_json::value::RawValue::from_string(body).unwrap());
            Json(match f.real.verify(request).await {
                Ok(verified) => json!({ "isValid": true, "payer": verified.payer }),
                Err(failure) => json!({ "isValid": false, "invalidReason": format!("{failure:?}") }),
            })
        }
        async fn settle(State(f): State<TestFacilitator>, body: String) -> Json<Value> {
            let request = proto::SettleRequest::from(serde_json::value::RawValue::from_string(body).unwrap());
            let answer = match f.real.settle(request).await {
                Ok(s) => {
                    f.settled.lock().unwrap().push(s.transaction.clone());
                    json!({ "success": true, "transaction": s.transaction, "network": s.network, "payer": s.payer })
                }
                Err(failure) => json!({ "success": false, "errorReason": format!("{failure:?}") }),
            };
            if f.late.load(Ordering::SeqCst) {
                // Settled on chain, answered after the server was killed.
                tokio::time::sleep(Duration::from_secs(8)).await;
            }
            Json(answer)
        }
        async fn supported(State(f): State<TestFacilitator>) -> Json<Value> {
            Json(serde_json::to_value(f.real.supported().await.unwrap()).unwrap())
        }
        let facilitator =
            TestFacilitator { real, late: Arc::new(AtomicBool::new(false)), settled: Arc::new(Mutex::new(Vec::new())) };
        let router = axum::Router::new()
            .route("/verify", axum::routing::post(verify))
            .route("/settle", axum::routing::post(settle))
            .route("/supported", axum::routing::get(supported))
            .with_state(facilitator.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        (facilitator, url)
    }

    fn settled(&self) -> Vec<String> {
        self.settled.lock().unwrap().clone()
    }
}

/// `paperchain serve --hosted` on `port`, on the sandbox chain of `env`, its store in `data`.
fn serve_hosted(data: &Path, port: u16, env: &[(&str, String)]) -> Served {
    let listen = format!("127.0.0.1:{port}");
    let mut command = Command::new(env!("CARGO_BIN_EXE_paperchain"));
    command.args(["serve", "--hosted", "--listen", &listen, "--public-url", &format!("http://{listen}"), "--data-dir"]);
    command.arg(data);
    common::unconfigured(&mut command, data);
    for (key, value) in env {
        command.env(key, value);
    }
    spawn_served(&mut command, port)
}

/// One paid call of the gas read: the quote, a payment signed for it, the paid request.
/// The payment header, and the settlement's transaction when the answer came.
async fn paid_gas_call(base: &str, signer: &PrivateKeySigner) -> (Option<String>, Result<String, String>) {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    let body = json!({ "chain": "base" });
    let quote = match client.post(format!("{base}/v1/chain/gas")).json(&body).send().await {
        Ok(r) if r.status() == 402 => r.json::<Value>().await.unwrap(),
        Ok(r) => return (None, Err(format!("quote: {}", r.status()))),
        Err(e) => return (None, Err(format!("quote: {e}"))),
    };
    let payment = x402::sign_x402(signer, &quote["accepts"][0]).await;
    let answer =
        client.post(format!("{base}/v1/chain/gas")).header("payment-signature", &payment).json(&body).send().await;
    let outcome = match answer {
        Ok(r) if r.status() == 200 => {
            let receipt = r.headers()["payment-response"].to_str().unwrap().to_string();
            Ok(x402::decode_x402(&receipt)["transaction"].as_str().unwrap().to_ascii_lowercase())
        }
        Ok(r) => Err(format!("paid call: {} {}", r.status(), r.text().await.unwrap_or_default())),
        Err(e) => Err(format!("paid call: {e}")),
    };
    (Some(payment), outcome)
}

/// Every transaction that used an EIP-3009 authorization of `payer` on the token: what the
/// chain took, whatever the ledger says.
async fn authorizations_used(rpc: &str, token: &str, payer: &str) -> Vec<String> {
    let topic = alloy::primitives::keccak256(b"AuthorizationUsed(address,bytes32)");
    let request = json!({
        "jsonrpc": "2.0", "id": 1, "method": "eth_getLogs",
        "params": [{ "address": token, "fromBlock": "0x0", "toBlock": "latest",
                     "topics": [topic.to_string(), format!("0x{:0>64}", payer.trim_start_matches("0x").to_ascii_lowercase())] }],
    });
    let answer: Value = reqwest::Client::new().post(rpc).json(&request).send().await.unwrap().json().await.unwrap();
    let mut txs: Vec<String> = answer["result"]
        .as_array()
        .unwrap_or_else(|| panic!("eth_getLogs: {answer}"))
        .iter()
        .map(|log| log["transactionHash"].as_str().unwrap().to_ascii_lowercase())
        .collect();
    txs.sort();
    txs
}

/// The `paid` rows of the ledger at `db`: transaction and quote.
async fn paid_rows(db: &Path) -> Vec<(String, u64)> {
    let store = Store::open(db).await.unwrap();
    let rows = store.recent(100_000).await.unwrap();
    store.close().await;
    let mut paid: Vec<(String, u64)> = rows
        .into_iter()
        .filter(|d| d.outcome == Outcome::Paid)
        .map(|d| (d.tx_hash.unwrap_or_default().to_ascii_lowercase(), d.quote.unwrap_or(0)))
        .collect();
    paid.sort();
    paid
}

/// Waits until the ledger's paid transactions include `expected` (the recovery pass at
/// start runs in the background), at most 60 s.
async fn ledger_catches_up(db: &Path, expected: &[String]) -> Vec<(String, u64)> {
    let started = std::time::Instant::now();
    loop {
        let paid = paid_rows(db).await;
        if expected.iter().all(|tx| paid.iter().any(|(t, _)| t == tx)) {
            return paid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the ledger never recorded every settlement:\nexpected {expected:?}\nledger {paid:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killed_while_paid_calls_settle_every_payment_the_chain_took_is_in_the_ledger_once() {
    let chain = sandbox::sandbox_chain().await;
    let (facilitator, facilitator_url) = TestFacilitator::serve(sandbox::local_facilitator(&chain).await).await;
    let data = tempfile::tempdir().unwrap();
    let db = data.path().join("hosted.sqlite");
    let rpc = chain.rpc_url().as_str().trim_end_matches('/').to_string();
    let env = [
        ("PAPERCHAIN_FACILITATOR_URL", facilitator_url),
        ("PAPERCHAIN_PAY_TO_BASE", chain.pay_to().to_checksum(None)),
        ("PAPERCHAIN_RPC_BASE", rpc.clone()),
        ("PAPERCHAIN_HOSTED_DB", db.display().to_string()),
    ];
    // One port throughout: the payments name the server's URL.
    let port = free_port();
    let signer = chain.payer_signer();
    let token = chain.token().to_string();
    let payer = chain.payer().to_string();
    let (payer_before, payee_before) = sandbox::balances(&chain).await;

    // 1. The crash window itself: settled on chain, killed before the settlement was
    //    recorded (the facilitator holds its answers back).
    facilitator.late.store(true, Ordering::SeqCst);
    let served = serve_hosted(data.path(), port, &env);
    let calls: Vec<_> = (0..3)
        .map(|_| {
            let (base, signer) = (served.base.clone(), signer.clone());
            tokio::spawn(async move { paid_gas_call(&base, &signer).await })
        })
        .collect();
    let started = std::time::Instant::now();
    while facilitator.settled().len() < 3 {
        assert!(started.elapsed() < Duration::from_secs(60), "the three calls did not settle");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(served); // SIGKILL
    let mut payments = Vec::new();
    for call in calls {
        let (payment, outcome) = call.await.unwrap();
        assert!(outcome.is_err(), "no answer can have come: {outcome:?}");
        payments.push(payment.expect("the payment was sent"));
    }
    facilitator.late.store(false, Ordering::SeqCst);
    let in_window = facilitator.settled();
    assert_eq!(paid_rows(&db).await, vec![], "nothing was recorded before the kill");

    // The restart finds them on chain: each a paid row with its transaction, its payment
    // refused if sent again.
    let served = serve_hosted(data.path(), port, &env);
    let paid = ledger_catches_up(&db, &in_window).await;
    assert_eq!(paid.len(), 3, "{paid:?}");
    let client = reqwest::Client::new();
    for payment in &payments {
        let replay = client
            .post(format!("{}/v1/chain/gas", served.base))
            .header("payment-signature", payment)
            .json(&json!({ "chain": "base" }))
            .send()
            .await
            .unwrap();
        assert_eq!(replay.status(), 402);
        assert!(replay.text().await.unwrap().contains("payment_already_used"));
    }
    drop(served);

    // 2. kill -9 at moments that fall anywhere in a stream of paid calls.
    let mut delivered = Vec::new();
    for kill_after in [300, 700, 1200, 2000] {
        let served = serve_hosted(data.path(), port, &env);
        let loops: Vec<_> = (0..4)
            .map(|_| {
                let (base, signer) = (served.base.clone(), signer.clone());
                tokio::spawn(async move {
                    let mut txs = Vec::new();
                    loop {
                        match paid_gas_call(&base, &signer).await {
                            (_, Ok(tx)) => txs.push(tx),
                            (_, Err(_)) => return txs,
                        }
                    }
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(kill_after)).await;
        drop(served);
        for paying in loops {
            delivered.extend(paying.await.unwrap());
        }
    }
    let served = serve_hosted(data.path(), port, &env);
    let on_chain = authorizations_used(&rpc, &token, &payer).await;
    let paid = ledger_catches_up(&db, &on_chain).await;
    drop(served);

    // Every transfer the chain made is one paid row, and the ledger has no other.
    let ledger_txs: Vec<String> = paid.iter().map(|(tx, _)| tx.clone()).collect();
    assert_eq!(ledger_txs, on_chain, "the ledger and the chain disagree");
    for tx in &delivered {
        assert!(ledger_txs.contains(tx), "a delivered call's settlement {tx} is not in the ledger");
    }
    let (payer_after, payee_after) = sandbox::balances(&chain).await;
    let recorded: u64 = paid.iter().map(|(_, quote)| quote).sum();
    assert_eq!(payee_after - payee_before, U256::from(recorded));
    assert_eq!(payer_before - payer_after, U256::from(recorded));
    println!(
        "{} settlements on chain, {} answered to their caller, {} recorded with no answer sent (found on chain \
         after a kill, or recorded just before one)",
        on_chain.len(),
        delivered.len(),
        on_chain.len() - delivered.len()
    );
}
