//! The paying client stands without the server: it depends on the protocol crate and the
//! engine, not on `paperchain-gateway`, and what it signs is accepted by the hosted sandbox
//! running as its own process (`paperchain serve --hosted --sandbox`).

use std::io::BufRead as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use std::sync::Arc;

use alloy::signers::local::PrivateKeySigner;
use paperchain_engine_core::evm::{ChainConfig, ChainTimeouts, Chains};
use paperchain_protocol::x402;
use paperchain_wallet::client::{KeyLoader, NobodyToAsk, PayingClient, Request};
use paperchain_wallet::config::ClientConfig;
use paperchain_wallet::ledger::{Caller, Ledger};
use paperchain_wallet::reconcile::reconcile;
use paperchain_wallet::x402_client;
use serde_json::{Value, json};

/// The `paperchain` binary of this build (the workspace's tests build every binary).
fn paperchain_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let dir = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>/deps");
    let binary = dir.join(format!("paperchain{}", std::env::consts::EXE_SUFFIX));
    assert!(binary.is_file(), "{} is not built: run the workspace's tests (cargo xtask test)", binary.display());
    binary
}

struct Sandbox {
    child: Child,
    line: Value,
    _data: tempfile::TempDir,
}

impl Drop for Sandbox {
    /// SIGTERM first: the server stops its anvil on the way out (a SIGKILL would leave the
    /// chain running); SIGKILL only if it has not exited within 20 s.
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_sandbox() -> Sandbox {
    start_sandbox_with(&[])
}

/// The sandbox process with `env` added to its environment.
fn start_sandbox_with(env: &[(&str, &str)]) -> Sandbox {
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(paperchain_binary())
        .args(["serve", "--hosted", "--sandbox", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data.path())
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting paperchain");
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut first).unwrap();
    let line: Value = serde_json::from_str(&first).unwrap_or_else(|e| panic!("{e}: the first line is {first:?}"));
    Sandbox { child, line, _data: data }
}

#[tokio::test]
async fn the_paying_client_without_the_server_crate_pays_the_sandbox_process() {
    let sandbox = start_sandbox();
    let line = &sandbox.line["sandbox"];
    let base = line["base_url"].as_str().expect("base_url").to_string();
    let payer: PrivateKeySigner = line["payer_private_key"].as_str().expect("the test payer's key").parse().unwrap();
    let rpc = line["rpc_url"].as_str().expect("rpc_url").parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[service]\nurl = \"{base}\"\n[policy]\nper_call = \"0.01\"\nnetworks = {{ \"eip155:8453\" = \"1\" }}\n"
    );
    let config = ClientConfig::parse(&config, None).unwrap();
    let signer = payer.clone();
    let keys: KeyLoader = Arc::new(move || Ok(signer.clone()));
    let chains = Chains::new(vec![ChainConfig::new("base", 8453, vec![rpc])], ChainTimeouts::default());
    let ledger = Ledger::open_in(dir.path()).await.unwrap();
    let client = PayingClient::new(Arc::new(config), ledger, keys, Arc::new(NobodyToAsk), Arc::new(chains));
    let caller = Caller { front_door: "cli", client: None };
    let request = Request {
        operation: "get_gas_price",
        path: "/v1/chain/gas",
        body: json!({ "chain": "base" }).to_string().into(),
        caller: &caller,
        approver: None,
        stop: Default::default(),
    };
    let answer = client.call(&request).await.unwrap();
    assert_eq!(answer.status, 200);
    let settlement = answer.header(x402::PAYMENT_RESPONSE).expect("the settlement");
    let settlement = serde_json::to_value(x402_client::read_settlement(settlement).unwrap()).unwrap();
    assert_eq!(settlement["network"], "eip155:8453");
    assert_eq!(settlement["payer"].as_str().map(str::to_lowercase), Some(payer.address().to_string().to_lowercase()));
    let paid = answer.paid.expect("paid");
    assert_eq!(paid.tx, settlement["transaction"].as_str().unwrap());
    let body: Value = serde_json::from_slice(&answer.body).unwrap();
    assert!(body.is_object(), "the gas answer: {body}");
    // The ledger and the chain agree on it.
    let checks = reconcile(
        client.ledger(),
        &Chains::new(
            vec![ChainConfig::new("base", 8453, vec![line["rpc_url"].as_str().unwrap().parse().unwrap()])],
            ChainTimeouts::default(),
        ),
        &paperchain_engine_core::solana::Clusters::from_env(),
        0,
    )
    .await
    .unwrap();
    assert_eq!(checks.iter().map(|c| c.verdict.as_str()).collect::<Vec<_>>(), ["ok"]);
}

/// A paying client of `sandbox` with the sandbox's funded payer, paying up to `per_call`.
async fn client_of(sandbox: &Sandbox, per_call: &str, dir: &std::path::Path) -> (PayingClient, PrivateKeySigner) {
    client_with(sandbox, &format!("per_call = \"{per_call}\"\nnetworks = {{ \"eip155:8453\" = \"1\" }}"), dir).await
}

/// A paying client of `sandbox` with the sandbox's funded payer, under `policy` (the
/// `[policy]` table's lines).
async fn client_with(sandbox: &Sandbox, policy: &str, dir: &std::path::Path) -> (PayingClient, PrivateKeySigner) {
    let line = &sandbox.line["sandbox"];
    let base = line["base_url"].as_str().expect("base_url").to_string();
    let payer: PrivateKeySigner = line["payer_private_key"].as_str().expect("the test payer's key").parse().unwrap();
    let config = format!("[service]\nurl = \"{base}\"\n[policy]\n{policy}\n");
    let config = ClientConfig::parse(&config, None).unwrap();
    let signer = payer.clone();
    let keys: KeyLoader = Arc::new(move || Ok(signer.clone()));
    let ledger = Ledger::open_in(dir).await.unwrap();
    (PayingClient::new(Arc::new(config), ledger, keys, Arc::new(NobodyToAsk), Arc::new(sandbox_chains(sandbox))), payer)
}

fn sandbox_chains(sandbox: &Sandbox) -> Chains {
    let rpc = sandbox.line["sandbox"]["rpc_url"].as_str().expect("rpc_url").parse().unwrap();
    Chains::new(vec![ChainConfig::new("base", 8453, vec![rpc])], ChainTimeouts::default())
}

/// `holder`'s balance of the sandbox's USDC.
async fn usdc_balance(sandbox: &Sandbox, holder: alloy::primitives::Address) -> u128 {
    let chains = sandbox_chains(sandbox);
    let chain = chains.get("base").expect("the sandbox chain");
    let (_, held) =
        paperchain_wallet::chain::balances(chain, "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", holder).await.unwrap();
    held.to::<u128>()
}

/// A scan of 20 pages, 12 of prose and 8 blank (separator sheets), none with text.
fn twenty_page_scan() -> Vec<u8> {
    scan_of(20)
}

/// A scan of `pages` pages, every third and fifth of five blank, the others prose.
fn scan_of(pages: u32) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("text.pdf");
    std::fs::write(&text, paperchain_testkit::scan::sample_page().0).unwrap();
    let page = paperchain_testkit::scan::render(&text, 1, 100);
    // The top of the page, where the prose is: a short page reads quickly.
    let rows = page.height * 4 / 10;
    let prose =
        paperchain_testkit::scan::Gray { height: rows, pixels: page.pixels[..page.width * rows].to_vec(), ..page };
    let blank = paperchain_testkit::scan::Gray { pixels: vec![255; prose.pixels.len()], ..prose.clone() };
    let pages: Vec<&paperchain_testkit::scan::Gray> =
        (1..=pages).map(|n| if n % 5 == 0 || n % 5 == 3 { &blank } else { &prose }).collect();
    paperchain_testkit::scan::image_pdf(&pages, 100)
}

#[tokio::test]
async fn an_upto_ocr_payment_authorized_for_twenty_pages_pays_for_the_twelve_read() {
    let sandbox = start_sandbox();
    let dir = tempfile::tempdir().unwrap();
    let (client, payer) = client_of(&sandbox, "0.05", dir.path()).await;
    let pay_to: alloy::primitives::Address =
        sandbox.line["sandbox"]["pay_to"].as_str().expect("pay_to").parse().unwrap();
    let caller = Caller { front_door: "cli", client: None };
    let body = json!({ "file": { "data": paperchain_testkit::b64(&twenty_page_scan()), "filename": "scan.pdf" }, "output": "base64" });
    let request = Request {
        operation: "ocr_pdf",
        path: "/v1/pdf/ocr",
        body: body.to_string().into(),
        caller: &caller,
        approver: None,
        stop: Default::default(),
    };
    // Two at once while Permit2 may move nothing yet, from two clients of one wallet: each
    // needs a permit signed with the token's nonce, and each counts on the allowance. Both
    // are paid, one after the other (at once, the second permit would reuse the first one's
    // nonce and its settlement would fail after the work), each for its own pages.
    let small = json!({ "file": { "data": paperchain_testkit::b64(&scan_of(3)), "filename": "three.pdf" }, "output": "base64" });
    let small = Request { body: small.to_string().into(), ..request.clone() };
    let before = usdc_balance(&sandbox, payer.address()).await;
    // The second payer is another client of the same wallet and ledger, as another process
    // would be.
    let (other, _) = client_of(&sandbox, "0.05", dir.path()).await;
    let (first, second) = tokio::join!(client.call(&small), other.call(&small));
    for answer in [first.unwrap(), second.unwrap()] {
        assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
        assert_eq!(answer.paid.expect("paid").amount, "7000", "$0.003 + 2 pages with words of 3");
    }
    assert_eq!(usdc_balance(&sandbox, payer.address()).await, before - 14_000);
    // One permit was signed, for the day's cap on Base ($1): the second payment needed none.
    let chains = sandbox_chains(&sandbox);
    let usdc = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
    let base = chains.get("base").unwrap();
    let allowance = paperchain_wallet::chain::permit2_allowance(base, usdc, payer.address()).await.unwrap();
    let permits = paperchain_wallet::chain::permit_nonce(base, usdc, payer.address()).await.unwrap();
    assert_eq!((allowance.to::<u128>(), permits.to::<u64>()), (1_000_000 - 14_000, 1));
    let (payer_before, payee_before) =
        (usdc_balance(&sandbox, payer.address()).await, usdc_balance(&sandbox, pay_to).await);
    // The quote, as the service asks it: `exact` for the 20 pages, and `upto` as much.
    let quote = client.quote(&request).await.unwrap();
    let offers: Vec<(String, String)> = quote
        .required
        .expect("a 402")
        .accepts
        .iter()
        .filter(|o| o.raw["network"] == "eip155:8453")
        .map(|o| (o.raw["scheme"].as_str().unwrap().to_string(), o.raw["amount"].as_str().unwrap().to_string()))
        .collect();
    let expected =
        [("exact", "43000"), ("upto", "43000"), ("batch-settlement", "43000")].map(|(s, a)| (s.into(), a.into()));
    assert_eq!(offers, expected, "$0.003 + 20 × $0.002");
    let answer = client.call(&request).await.unwrap();
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    let report: Value = serde_json::from_slice(&answer.body).unwrap();
    let report = &report["report"];
    assert_eq!(report["pages_with_words"], 12, "{report}");
    assert_eq!(report["pages_blank"], "3,5,8,10,13,15,18,20", "{report}");
    // Paid what the 12 pages read cost: $0.003 + 12 × $0.002.
    let settlement = x402_client::read_settlement(answer.header(x402::PAYMENT_RESPONSE).unwrap()).unwrap();
    assert_eq!(settlement.amount.as_deref(), Some("27000"));
    let paid = answer.paid.clone().expect("paid");
    assert_eq!((paid.amount.as_str(), paid.dollars.micros()), ("27000", 27_000));
    assert_eq!(usdc_balance(&sandbox, payer.address()).await, payer_before - 27_000);
    assert_eq!(usdc_balance(&sandbox, pay_to).await, payee_before + 27_000);
    // The ledger holds the most authorized as the quote, the charge as the amount, and the
    // chain agrees with it.
    let row = client.ledger().get(&answer.call_id).await.unwrap().expect("the row");
    assert_eq!(
        (row.state.as_str(), row.scheme.as_deref(), row.quote.as_deref(), row.amount.as_deref(), row.micros),
        ("paid", Some("upto"), Some("43000"), Some("27000"), 27_000)
    );
    let checks =
        reconcile(client.ledger(), &sandbox_chains(&sandbox), &paperchain_engine_core::solana::Clusters::from_env(), 0)
            .await
            .unwrap();
    assert_eq!(checks.iter().map(|c| c.verdict.as_str()).collect::<Vec<_>>(), ["ok"; 3], "{checks:?}");
    // A per-call cap under the most authorized refuses it, though the charge would fit.
    let (capped, _) = client_of(&sandbox, "0.03", tempfile::tempdir().unwrap().path()).await;
    let error = capped.call(&request).await.unwrap_err().to_string();
    assert!(error.contains("$0.043 is more than the $0.03 allowed per call"), "{error}");
}

#[test]
fn the_paying_client_does_not_depend_on_the_server() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // Every package the wallet builds with on this machine (normal and build dependencies,
    // not its tests'), one `name vX.Y.Z` a line.
    let output = Command::new(cargo)
        .args([
            "tree",
            "-p",
            "paperchain-wallet",
            "-e",
            "normal,build",
            "--prefix",
            "none",
            "--offline",
            "--manifest-path",
        ])
        .arg(paperchain_testkit::workspace_root().join("Cargo.toml"))
        .output()
        .expect("cargo tree");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    let names: Vec<&str> = text.lines().filter_map(|line| line.split_whitespace().next()).collect();
    assert_eq!(names.first(), Some(&"paperchain-wallet"), "{text}");
    for needed in ["paperchain-protocol", "paperchain-engine-core"] {
        assert!(names.contains(&needed), "{needed} missing from {names:?}");
    }
    // No server, no route and no document library: the chain clients are the core's.
    for server in [
        "paperchain-gateway",
        "paperchain-server",
        "paperchain-mcp",
        "axum",
        "rmcp",
        "paperchain-engine",
        "paperchain-chain",
        "paperchain-docs",
        "lopdf",
        "qpdf",
        "pdfium-render",
        "html5ever",
        "calamine",
        "x402-facilitator-local",
    ] {
        assert!(!names.contains(&server), "the wallet builds with {server}");
    }
}

/// anvil's dev account #2: the sandbox's batch-settlement receiver authorizer, the sender
/// of its deposits, claims and refunds.
const CHANNELS_SENDER: &str = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";

#[tokio::test]
async fn a_hundred_calls_over_one_channel_make_one_deposit_and_a_few_claims_and_closing_refunds_the_rest() {
    use alloy::providers::Provider as _;
    use paperchain_protocol::batch_evm;

    // Claimed every 2 s, so the calls below see a claim or two before the channel closes.
    let sandbox = start_sandbox_with(&[("PAPERCHAIN_CLAIM_EVERY_SECONDS", "2")]);
    let line = &sandbox.line["sandbox"];
    let base = line["base_url"].as_str().unwrap().to_string();
    let payer: PrivateKeySigner = line["payer_private_key"].as_str().unwrap().parse().unwrap();
    let pay_to: alloy::primitives::Address = line["pay_to"].as_str().unwrap().parse().unwrap();
    let body = json!({ "chain": "base" }).to_string();
    let http = reqwest::Client::new();
    let first = http.post(format!("{base}/v1/chain/gas")).body(body.clone()).header("content-type", "application/json");
    let first = first.send().await.unwrap();
    let header = first.headers().get(x402::PAYMENT_REQUIRED).and_then(|h| h.to_str().ok()).map(str::to_string);
    let required = x402_client::read_payment_required(header.as_deref(), &first.bytes().await.unwrap()).unwrap();
    let offer = required.accepts.iter().find(|o| o.raw["scheme"] == "batch-settlement").expect("a batch offer").clone();
    let price: u128 = offer.raw["amount"].as_str().unwrap().parse().unwrap();
    assert_eq!(offer.raw["extra"]["withdrawDelay"], 900);
    // The wallet may keep 200 calls' worth in a channel.
    let deposit = 200 * price;
    let dir = tempfile::tempdir().unwrap();
    let policy = format!(
        "per_call = \"0.01\"\nper_day = \"5\"\nchannel_deposit = \"{}\"\nnetworks = {{ \"eip155:8453\" = \"5\" }}",
        paperchain_wallet::money::format_atomic(deposit, 6)
    );
    let (client, _) = client_with(&sandbox, &policy, dir.path()).await;
    let caller = Caller { front_door: "cli", client: None };
    let request = Request {
        operation: "get_gas_price",
        path: "/v1/chain/gas",
        body: body.clone().into(),
        caller: &caller,
        approver: None,
        stop: Default::default(),
    };
    let (payer_before, payee_before) =
        (usdc_balance(&sandbox, payer.address()).await, usdc_balance(&sandbox, pay_to).await);

    // The first call opens the channel: a deposit and a voucher for one call.
    let answer = client.call(&request).await.unwrap();
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    let settlement = x402_client::read_settlement(answer.header(x402::PAYMENT_RESPONSE).unwrap()).unwrap();
    assert!(settlement.transaction.starts_with("0x"), "the deposit's transaction: {settlement:?}");
    assert_eq!(settlement.amount, Some(deposit.to_string()), "the deposit");
    let extra = settlement.extra.clone().unwrap();
    assert_eq!(extra["chargedAmount"], price.to_string());
    assert_eq!(extra["channelState"]["chargedCumulativeAmount"], price.to_string());
    assert_eq!(usdc_balance(&sandbox, payer.address()).await, payer_before - deposit, "the deposit left the wallet");

    // A voucher signed outside the wallet for the next total is taken; sent again, or one
    // for a lower total, is refused with the channel's state, and charges nothing.
    let send = |header: String| {
        let request = http
            .post(format!("{base}/v1/chain/gas"))
            .header("content-type", "application/json")
            .header(x402::PAYMENT_SIGNATURE, header)
            .body(body.clone());
        async move {
            let answer = request.send().await.unwrap();
            let status = answer.status().as_u16();
            let required = answer.headers().get(x402::PAYMENT_REQUIRED).map(|h| h.to_str().unwrap().to_string());
            (status, required.map(|r| x402::decode::<Value>(&r, "PAYMENT-REQUIRED").unwrap()))
        }
    };
    let now = paperchain_wallet::ledger::now_secs();
    let second = x402::encode(&batch_evm::sign_batch_payment(&payer, &offer, None, 2 * price, None, now).unwrap());
    assert_eq!(send(second.clone()).await.0, 200);
    for (what, header) in [
        ("the same voucher again", second),
        (
            "a lower total",
            x402::encode(&batch_evm::sign_batch_payment(&payer, &offer, None, price, None, now).unwrap()),
        ),
    ] {
        let (status, required) = send(header).await;
        assert_eq!(status, 402, "{what}");
        let required = required.unwrap();
        let error = required["error"].as_str().unwrap();
        assert!(error.starts_with("invalid_batch_settlement_evm_cumulative_amount_mismatch"), "{what}: {error}");
        let batch = required["accepts"].as_array().unwrap().iter().find(|o| o["scheme"] == "batch-settlement").unwrap();
        assert_eq!(batch["extra"]["channelState"]["chargedCumulativeAmount"], (2 * price).to_string(), "{what}");
        assert_eq!(batch["extra"]["voucherState"]["signedMaxClaimable"], (2 * price).to_string(), "{what}");
    }
    // The wallet's next voucher is for a total the service has passed: refused, and the
    // wallet takes the service's total, which it proves with the wallet's own voucher.
    let error = client.call(&request).await.unwrap_err().to_string();
    assert!(error.contains("cumulative_amount_mismatch") && error.contains("call again"), "{error}");

    // 99 more calls: vouchers only.
    for n in 0..99 {
        let answer = client.call(&request).await.unwrap();
        assert_eq!(answer.status, 200, "call {n}: {}", String::from_utf8_lossy(&answer.body));
        let paid = answer.paid.expect("paid");
        assert_eq!((paid.amount, paid.tx.as_str()), (price.to_string(), ""), "call {n}: a voucher, no transaction");
    }
    let charged = 101 * price;
    let channels = paperchain_wallet::channels::list(client.ledger()).await.unwrap();
    assert_eq!(channels.len(), 1);
    assert_eq!((channels[0].deposited, channels[0].charged), (deposit, charged));
    // The service claims within a few seconds.
    let rpc_chains = sandbox_chains(&sandbox);
    let chain = rpc_chains.get("base").unwrap();
    let id: alloy::primitives::B256 = channels[0].id.parse().unwrap();
    let started = std::time::Instant::now();
    loop {
        let (_, claimed) = paperchain_wallet::chain::escrow_channel(chain, id).await.unwrap();
        if claimed == charged {
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "claimed {claimed} of {charged}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }

    // Closing refunds the rest, to the atomic unit.
    let closed = client.close_channels().await.unwrap();
    assert_eq!(closed.len(), 1);
    let done = closed[0].1.as_ref().expect("closed");
    assert_eq!(done.refunded, deposit - charged);
    assert_eq!(usdc_balance(&sandbox, payer.address()).await, payer_before - charged);
    assert_eq!(usdc_balance(&sandbox, pay_to).await, payee_before + charged, "every claim swept to the payee");
    let channel = &paperchain_wallet::channels::list(client.ledger()).await.unwrap()[0];
    assert_eq!((channel.deposited - channel.refunded, channel.charged, channel.unspent()), (charged, charged, 0));
    // One deposit, a few claims, one refund: every transaction the service sent.
    let sent = chain.provider().get_transaction_count(CHANNELS_SENDER.parse().unwrap()).await.unwrap();
    assert!((3..=6).contains(&sent), "transactions for 101 paid calls: {sent}");
    println!("on-chain transactions for 101 paid calls over one channel: {sent} (deposit, claims, refund)");
    // The ledger and the escrow agree; the refused voucher counts no more.
    let checks = reconcile(client.ledger(), &rpc_chains, &paperchain_engine_core::solana::Clusters::from_env(), 0)
        .await
        .unwrap();
    let verdicts: std::collections::BTreeMap<&str, usize> = checks.iter().fold(Default::default(), |mut counts, c| {
        *counts.entry(c.verdict.as_str()).or_default() += 1;
        counts
    });
    assert_eq!(verdicts, [("expired", 1), ("ok", 101)].into(), "{checks:?}");
    assert!(checks.iter().any(|c| c.call_id.starts_with("channel ") && c.verdict == "ok"), "{checks:?}");
    // Reconciling recorded what the service claimed: every voucher's total.
    let channel = &paperchain_wallet::channels::list(client.ledger()).await.unwrap()[0];
    assert_eq!(channel.claimed, charged);
}

#[tokio::test]
async fn an_idle_channel_is_refunded_by_the_service_and_the_wallet_deposits_again() {
    // Idle after 2 s without a call; the service looks every second.
    let sandbox =
        start_sandbox_with(&[("PAPERCHAIN_CLAIM_EVERY_SECONDS", "1"), ("PAPERCHAIN_CHANNEL_IDLE_SECONDS", "2")]);
    let dir = tempfile::tempdir().unwrap();
    let policy = "per_call = \"0.01\"\nchannel_deposit = \"0.05\"\nnetworks = { \"eip155:8453\" = \"1\" }";
    let (client, payer) = client_with(&sandbox, policy, dir.path()).await;
    let caller = Caller { front_door: "cli", client: None };
    let request = Request {
        operation: "get_gas_price",
        path: "/v1/chain/gas",
        body: json!({ "chain": "base" }).to_string().into(),
        caller: &caller,
        approver: None,
        stop: Default::default(),
    };
    let before = usdc_balance(&sandbox, payer.address()).await;
    let mut price = 0;
    for _ in 0..2 {
        let answer = client.call(&request).await.unwrap();
        assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
        price = answer.paid.unwrap().amount.parse::<u128>().unwrap();
    }
    let deposit = 50_000;
    assert_eq!(usdc_balance(&sandbox, payer.address()).await, before - deposit);
    // Left idle, the channel's rest comes back to the wallet.
    let started = std::time::Instant::now();
    while usdc_balance(&sandbox, payer.address()).await != before - 2 * price {
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "the idle channel was not refunded");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    // The wallet's next voucher is over what the channel holds now: refused, and the wallet
    // reads the return from the escrow; the call after deposits again.
    let error = client.call(&request).await.unwrap_err().to_string();
    assert!(error.contains("insufficient_balance") && error.contains("returned to this wallet"), "{error}");
    let channel = &paperchain_wallet::channels::list(client.ledger()).await.unwrap()[0];
    assert_eq!((channel.deposited, channel.refunded, channel.charged), (deposit, deposit - 2 * price, 2 * price));
    let answer = client.call(&request).await.unwrap();
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    assert!(answer.paid.unwrap().tx.starts_with("0x"), "a new deposit");
    assert_eq!(usdc_balance(&sandbox, payer.address()).await, before - 2 * price - deposit);
    let checks =
        reconcile(client.ledger(), &sandbox_chains(&sandbox), &paperchain_engine_core::solana::Clusters::from_env(), 0)
            .await
            .unwrap();
    let verdicts: Vec<&str> = checks.iter().map(|c| c.verdict.as_str()).collect();
    assert_eq!(verdicts, ["ok", "ok", "expired", "ok", "ok"], "{checks:?}");
}
