//! The x402 paywall's failure paths on the sandbox chain: every refusal answers with the
//! status and body the spec gives, leaves the payer's and payee's token balances where
//! they were and writes its outcome to the ledger; a payment refused before it was used
//! stays usable, a used one never works twice (also concurrently and after a restart);
//! free pools count per pool, client and UTC day and survive a restart.
//!
//! Payments are signed with x402's own v2 client (`x402::sign_x402`) and tampered with by
//! editing the payload and re-signing it (`x402::tamper_x402`), so each refusal is the
//! server's judgement of a well-formed, validly signed payment.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use alloy::primitives::U256;
use alloy::signers::local::PrivateKeySigner;
use base64::Engine as _;
use lopdf::{Document, Object, dictionary};
use paperchain_hosted::HostedOptions;
use paperchain_hosted::store::{Decision, Outcome, PaymentState};
use paperchain_testkit::sandbox::{self, HostedServer, Setup, TestClock};
use paperchain_testkit::x402;
use serde_json::{Value, json};
use time::macros::datetime;

const BALANCE: &str = "/v1/chain/balance";
const ROTATE: &str = "/v1/pdf/rotate";
/// The flat price of `/v1/chain/balance`, and the base price of `/v1/pdf/rotate`.
const TWO_MILLI: u64 = 2000;
/// Where every free call comes from (the test client's loopback address).
const CLIENT: &str = "127.0.0.1";

fn balance_body(server: &HostedServer) -> Value {
    json!({"chain": "base", "address": server.chain.payer().to_string()})
}

/// A PDF of `pages` empty Letter pages.
fn pdf_with_pages(pages: usize) -> Vec<u8> {
    let mut doc = Document::with_version("1.7");
    let pages_id = doc.new_object_id();
    let kids: Vec<Object> = (0..pages)
        .map(|_| {
            doc.add_object(dictionary! {
                "Type" => "Page",
                "Parent" => pages_id,
                "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
            })
            .into()
        })
        .collect();
    doc.objects
        .insert(pages_id, Object::Dictionary(dictionary! {"Type" => "Pages", "Kids" => kids, "Count" => pages as i64}));
    let catalog = doc.add_object(dictionary! {"Type" => "Catalog", "Pages" => pages_id});
    doc.trailer.set("Root", catalog);
    let mut bytes = Vec::new();
    doc.save_to(&mut bytes).unwrap();
    bytes
}

fn rotate_body(pages: usize) -> Value {
    json!({
        "file": {"data": paperchain_testkit::b64(&pdf_with_pages(pages)), "filename": format!("{pages}-pages.pdf")},
        "degrees": 90,
        "output": "base64",
    })
}

/// The 402 an unpaid call of `body` gets, checked for status and header.
async fn required(server: &HostedServer, path: &str, body: &Value) -> Value {
    let response = server.post(path, body, &[]).await;
    expect_402(response).await
}

/// Asserts a 402 whose `PAYMENT-REQUIRED` header decodes to its body; returns the body.
async fn expect_402(response: reqwest::Response) -> Value {
    assert_eq!(response.status(), 402);
    let header = response.headers().get("payment-required").expect("PAYMENT-REQUIRED").to_str().unwrap().to_string();
    assert_eq!(response.headers().get("cache-control").map(|v| v.to_str().unwrap()), Some("no-store"));
    let body: Value = response.json().await.unwrap();
    let decoded: Value =
        serde_json::from_slice(&base64::engine::general_purpose::STANDARD.decode(header).unwrap()).unwrap();
    assert_eq!(decoded, body, "PAYMENT-REQUIRED is the body");
    body
}

fn amount(required: &Value) -> u64 {
    required["accepts"][0]["amount"].as_str().expect("accepts[0].amount").parse().unwrap()
}

/// A fresh payment by the sandbox payer for the first requirement of `required`.
async fn sign(server: &HostedServer, required: &Value) -> String {
    x402::sign_x402(&server.chain.payer_signer(), &required["accepts"][0]).await
}

async fn paid(server: &HostedServer, path: &str, body: &Value, header: &str) -> reqwest::Response {
    server.post(path, body, &[("payment-signature", header)]).await
}

/// A POST with a body of any content type.
async fn post_raw(
    server: &HostedServer,
    path: &str,
    content_type: &str,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut request =
        server.client.post(format!("{}{path}", server.base)).header("content-type", content_type).body("chain=base");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

/// The status line and body of a POST declaring a body over the 64 MiB limit (sent over a
/// plain socket: the server answers from Content-Length, before any body is sent).
async fn post_oversized(server: &HostedServer, path: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        server.addr,
        64 * 1024 * 1024 + 1
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer)).await.expect("an answer").unwrap();
    let text = String::from_utf8_lossy(&answer);
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("{text}"));
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("");
    (status, serde_json::from_str(body).unwrap_or_else(|_| json!({"raw": body})))
}

/// The ledger's newest entry.
async fn last_decision(server: &HostedServer) -> Decision {
    server.paywall.store().recent(1).await.unwrap().pop().expect("a ledger entry")
}

/// How many refusals of unpaid calls to `route` were counted as `outcome` with `error`.
async fn unpaid(server: &HostedServer, route: &str, outcome: Outcome, error: Option<&str>) -> u64 {
    let counts = server.paywall.store().unpaid_counts().await.unwrap();
    counts
        .iter()
        .filter(|c| c.route == route && c.outcome == outcome && c.error_code.as_deref() == error)
        .map(|c| c.count)
        .sum()
}

/// The ledger's rows, newest first (up to 1000).
async fn rows(server: &HostedServer) -> Vec<Decision> {
    server.paywall.store().recent(1000).await.unwrap()
}

async fn assert_unmoved(server: &HostedServer, before: (U256, U256), what: &str) {
    assert_eq!(server.balances().await, before, "{what}: payer and payee balances did not move");
}

async fn assert_moved_by(server: &HostedServer, before: (U256, U256), quote: u64, what: &str) {
    let (payer, payee) = server.balances().await;
    assert_eq!(before.0 - payer, U256::from(quote), "{what}: the payer paid exactly the quote");
    assert_eq!(payee - before.1, U256::from(quote), "{what}: the payee got exactly the quote");
}

fn error_text(required: &Value) -> &str {
    required["error"].as_str().unwrap_or_else(|| panic!("an error in {required}"))
}

/// A free call of `pool` left today for the test client.
async fn free_left(server: &HostedServer, pool: &str, limit: u32) -> u32 {
    let day = time::OffsetDateTime::now_utc().date();
    server.paywall.store().free_remaining(pool, CLIENT, day, limit).await.unwrap()
}

fn remaining_header(response: &reqwest::Response) -> Option<String> {
    response.headers().get("x-svc-free-remaining").map(|v| v.to_str().unwrap().to_string())
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

#[tokio::test]
async fn a_payment_for_another_amount_than_the_quote_is_a_price_mismatch() {
    let server = sandbox::start(Setup::default()).await;
    // 60 pages: page edits cover 50 pages at 0.002, then 0.00002 a page.
    let large = rotate_body(60);
    let quote = amount(&required(&server, ROTATE, &large).await);
    assert_eq!(quote, TWO_MILLI + 10 * 20, "the quote grows with the pages");
    let base = required(&server, ROTATE, &json!({})).await;
    assert_eq!(amount(&base), TWO_MILLI, "an invalid input quotes the base price");
    let before = server.balances().await;

    // Signed for the base price, sent with the larger input.
    let base_payment = sign(&server, &base).await;
    let refused = expect_402(paid(&server, ROTATE, &large, &base_payment).await).await;
    assert_eq!(refused["error"], "price_mismatch");
    assert_eq!(amount(&refused), quote, "fresh requirements at the input's price");
    assert_eq!(refused["accepts"][0]["payTo"].as_str().unwrap(), server.chain.pay_to().to_checksum(None));
    assert_unmoved(&server, before, "price mismatch").await;
    let decision = last_decision(&server).await;
    assert_eq!(decision.outcome, Outcome::PriceMismatch);
    assert_eq!(decision.error_code.as_deref(), Some("price_mismatch"));
    assert_eq!(decision.quote, Some(quote));
    assert_eq!((decision.payment_key, decision.tx_hash), (None, None), "never claimed, never settled");

    // Signed for the quote, then edited to another amount and re-signed: validly signed, still refused.
    let right = sign(&server, &refused).await;
    let edited = x402::tamper_x402(&server.chain.payer_signer(), &right, |p| {
        p["accepted"]["amount"] = json!("2100");
        p["payload"]["authorization"]["value"] = json!("2100");
    })
    .await;
    let refused = expect_402(paid(&server, ROTATE, &large, &edited).await).await;
    assert_eq!(refused["error"], "price_mismatch");
    assert_eq!(amount(&refused), quote);
    assert_unmoved(&server, before, "edited amount").await;
    assert_eq!(last_decision(&server).await.outcome, Outcome::PriceMismatch);

    // The base-price payment was not used: it pays a 4-page rotation, which costs the base price.
    let response = paid(&server, ROTATE, &rotate_body(4), &base_payment).await;
    assert_eq!(response.status(), 200);
    assert_moved_by(&server, before, TWO_MILLI, "the base-price payment on a small input").await;
    assert_eq!(last_decision(&server).await.outcome, Outcome::Paid);
}

#[tokio::test]
async fn invalid_input_with_a_payment_is_refused_and_the_payment_stays_usable() {
    let server = sandbox::start(Setup::default()).await;
    let body = balance_body(&server);
    let header = sign(&server, &required(&server, BALANCE, &body).await).await;
    let before = server.balances().await;
    let payment = [("payment-signature", header.as_str())];

    // 422 naming the field.
    let response = paid(&server, BALANCE, &json!({"chain": "base", "address": "nope"}), &header).await;
    assert_eq!(response.status(), 422);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["field"], "/address", "{error}");
    assert!(error["error"]["code"].is_string(), "{error}");
    let decision = last_decision(&server).await;
    assert_eq!(decision.outcome, Outcome::InvalidInput);
    assert_eq!(decision.payment_key, None, "the payment was not looked at");

    // An unknown chain names /chain.
    let response = paid(&server, BALANCE, &json!({"chain": "nowhere", "address": body["address"]}), &header).await;
    assert_eq!(response.status(), 422);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["field"], "/chain", "{error}");

    // 415 for a body that is not JSON.
    let response = post_raw(&server, BALANCE, "text/plain", &payment).await;
    assert_eq!(response.status(), 415);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["code"], "unsupported_media_type", "{error}");
    let decision = last_decision(&server).await;
    assert_eq!(decision.outcome, Outcome::InvalidInput);
    assert_eq!(decision.error_code.as_deref(), Some("unsupported_media_type"));

    // 413 for a body over the limit.
    let (status, error) = post_oversized(&server, BALANCE, &payment).await;
    assert_eq!(status, 413, "{error}");
    assert_eq!(error["error"]["code"], "body_too_large", "{error}");
    let decision = last_decision(&server).await;
    assert_eq!(decision.outcome, Outcome::InvalidInput);
    assert_eq!(decision.payment_key, None);

    assert_unmoved(&server, before, "refused inputs").await;
    assert_eq!(server.paywall.store().totals().await.unwrap().paid_calls, 0);

    // The same payment still pays a valid call of the same price.
    let response = paid(&server, BALANCE, &body, &header).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers().contains_key("payment-response"));
    assert_moved_by(&server, before, TWO_MILLI, "the kept payment").await;
    let decision = last_decision(&server).await;
    assert_eq!(decision.outcome, Outcome::Paid);
    assert!(decision.tx_hash.is_some());
}

#[tokio::test]
async fn an_operation_failing_after_verify_settles_nothing_and_releases_the_payment() {
    // No document input was found that passes `prepare` and then fails in `run` on demand
    // (prepare loads and checks everything), so the failing operation is a chain read whose node is down.
    let dead = paperchain_testkit::loopback::closed_port_url().await;
    let server = sandbox::start(Setup { env: vec![("PAPERCHAIN_RPC_ETHEREUM", dead)], ..Setup::default() }).await;
    let on_ethereum = json!({"chain": "ethereum", "address": server.chain.payer().to_string()});
    let quote = required(&server, BALANCE, &on_ethereum).await;
    assert_eq!(amount(&quote), TWO_MILLI);
    let header = sign(&server, &quote).await;
    let before = server.balances().await;

    let response = paid(&server, BALANCE, &on_ethereum, &header).await;
    let status = response.status().as_u16();
    assert!(matches!(status, 502..=504), "a dead node is a 502, 503 or 504, got {status}");
    assert!(!response.headers().contains_key("payment-response"));
    let error: Value = response.json().await.unwrap();
    assert!(error["error"]["code"].is_string(), "{error}");
    assert_unmoved(&server, before, "failed operation").await;
    let decision = last_decision(&server).await;
    assert_eq!(decision.outcome, Outcome::OperationFailed);
    assert_eq!(decision.tx_hash, None);
    let key = decision.payment_key.expect("the payment was claimed");
    assert_eq!(
        server.paywall.store().payment_state(&key).await.unwrap(),
        Some(PaymentState::Released),
        "the claim is given back"
    );

    // A free call that fails is not charged to the pool either.
    let response = server.post(BALANCE, &on_ethereum, &[("x-svc-free", "1")]).await;
    assert!(matches!(response.status().as_u16(), 502..=504));
    assert_eq!(last_decision(&server).await.outcome, Outcome::OperationFailed);
    assert_eq!(free_left(&server, "chain-reads", 10).await, 10, "the free call was given back");

    // The same payment pays the same read on a chain that answers.
    let response = paid(&server, BALANCE, &balance_body(&server), &header).await;
    assert_eq!(response.status(), 200);
    assert_moved_by(&server, before, TWO_MILLI, "the released payment").await;
    let decision = last_decision(&server).await;
    assert_eq!(decision.outcome, Outcome::Paid);
    assert_eq!(decision.payment_key, Some(key));
    assert_eq!(server.paywall.store().payment_state(&key).await.unwrap(), Some(PaymentState::Settled));
}

#[tokio::test]
async fn a_used_payment_is_refused_again_and_after_a_restart() {
    let mut server = sandbox::start(Setup::default()).await;
    let body = balance_body(&server);
    let header = sign(&server, &required(&server, BALANCE, &body).await).await;
    let before = server.balances().await;
    assert_eq!(paid(&server, BALANCE, &body, &header).await.status(), 200);
    let after_once = server.balances().await;
    assert_moved_by(&server, before, TWO_MILLI, "first use").await;

    let refused = expect_402(paid(&server, BALANCE, &body, &header).await).await;
    assert!(error_text(&refused).starts_with("payment_already_used"), "{refused}");
    assert_eq!(amount(&refused), TWO_MILLI);
    assert_unmoved(&server, after_once, "replay").await;
    let decision = last_decision(&server).await;
    assert_eq!(decision.outcome, Outcome::Replay);
    assert_eq!(decision.error_code.as_deref(), Some("payment_already_used"));

    // A restarted server over the same database refuses it from its own record, not
    // because the chain would (the facilitator is never asked).
    server.restart(HostedOptions::default()).await;
    let refused = expect_402(paid(&server, BALANCE, &body, &header).await).await;
    assert!(error_text(&refused).starts_with("payment_already_used"), "{refused}");
    assert_unmoved(&server, after_once, "replay after a restart").await;
    let decision = last_decision(&server).await;
    assert_eq!(decision.outcome, Outcome::Replay);
    let totals = server.paywall.store().totals().await.unwrap();
    assert_eq!((totals.paid_calls, totals.settled_amount), (1, TWO_MILLI), "served once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_copies_of_one_payment_are_served_once() {
    let server = sandbox::start(Setup::default()).await;
    let body = balance_body(&server);
    let header = sign(&server, &required(&server, BALANCE, &body).await).await;
    let before = server.balances().await;
    let url = format!("{}{BALANCE}", server.base);
    let copies: Vec<_> = (0..10)
        .map(|_| {
            let request = server.client.post(&url).json(&body).header("payment-signature", &header);
            tokio::spawn(async move {
                let response = request.send().await.unwrap();
                let status = response.status().as_u16();
                (status, response.json::<Value>().await.unwrap())
            })
        })
        .collect();
    let mut served = 0;
    for copy in copies {
        let (status, answer) = copy.await.unwrap();
        match status {
            200 => served += 1,
            402 => assert!(error_text(&answer).starts_with("payment_already_used"), "{answer}"),
            other => panic!("a copy got {other}: {answer}"),
        }
    }
    assert_eq!(served, 1, "exactly one copy is served");
    assert_moved_by(&server, before, TWO_MILLI, "ten copies").await;
    let ledger = server.paywall.store().recent(10).await.unwrap();
    let count = |o: Outcome| ledger.iter().filter(|d| d.outcome == o).count();
    assert_eq!((count(Outcome::Paid), count(Outcome::Replay)), (1, 9), "{ledger:?}");
}

#[tokio::test]
async fn an_expired_authorization_is_refused() {
    let server = sandbox::start(Setup::default()).await;
    let body = balance_body(&server);
    let header = sign(&server, &required(&server, BALANCE, &body).await).await;
    let past = (now() - 60).to_string();
    let expired = x402::tamper_x402(&server.chain.payer_signer(), &header, |p| {
        p["payload"]["authorization"]["validBefore"] = json!(past);
    })
    .await;
    let before = server.balances().await;
    let refused = expect_402(paid(&server, BALANCE, &body, &expired).await).await;
    assert!(error_text(&refused).contains("expired"), "{refused}");
    assert_eq!(amount(&refused), TWO_MILLI);
    assert_unmoved(&server, before, "expired").await;
    let decision = last_decision(&server).await;
    assert_eq!(decision.outcome, Outcome::VerifyFailed);
    assert_eq!(decision.tx_hash, None);
}

#[tokio::test]
async fn a_payer_without_enough_funds_is_refused() {
    let server = sandbox::start(Setup::default()).await;
    let body = balance_body(&server);
    let quote = required(&server, BALANCE, &body).await;
    let poor = PrivateKeySigner::random();
    server.chain.mint(poor.address(), U256::from(TWO_MILLI - 1)).await.unwrap();
    let header = x402::sign_x402(&poor, &quote["accepts"][0]).await;
    let payee_before = server.balance(server.chain.pay_to()).await;
    let refused = expect_402(paid(&server, BALANCE, &body, &header).await).await;
    assert!(error_text(&refused).contains("insufficient_funds"), "{refused}");
    assert_eq!(server.balance(poor.address()).await, U256::from(TWO_MILLI - 1), "the payer kept its funds");
    assert_eq!(server.balance(server.chain.pay_to()).await, payee_before, "the payee got nothing");
    let decision = last_decision(&server).await;
    assert_eq!(decision.outcome, Outcome::VerifyFailed);
    assert_eq!(decision.error_code.as_deref(), Some("insufficient_funds"));
}

#[tokio::test]
async fn a_payment_on_another_network_is_refused() {
    let server = sandbox::start(Setup::default()).await;
    let body = balance_body(&server);
    let mut requirement = required(&server, BALANCE, &body).await["accepts"][0].clone();
    requirement["network"] = json!("eip155:137");
    let header = x402::sign_x402(&server.chain.payer_signer(), &requirement).await;
    let before = server.balances().await;
    let refused = expect_402(paid(&server, BALANCE, &body, &header).await).await;
    assert!(error_text(&refused).starts_with("network_not_accepted"), "{refused}");
    assert_eq!(refused["accepts"][0]["network"], "eip155:8453", "the networks accepted are offered again");
    assert_unmoved(&server, before, "wrong network").await;
    let decision = last_decision(&server).await;
    assert_eq!(decision.outcome, Outcome::InvalidPayment);
    assert_eq!(decision.error_code.as_deref(), Some("network_not_accepted"));
    assert_eq!(decision.network.as_deref(), Some("eip155:137"));
}

#[tokio::test]
async fn upto_is_offered_for_metered_routes_only_and_refused_elsewhere() {
    use paperchain_protocol::upto_evm::{UptoTerms, UptoWindow, sign_upto_evm};
    let server = sandbox::start(Setup::default()).await;
    // A metered route (OCR: its cost is known once the pages are read) offers `upto` beside
    // `exact`, for as much, with the facilitator that settles it and the permit extension.
    let scan = json!({"file": {"data": paperchain_testkit::b64(&pdf_with_pages(2)), "filename": "scan.pdf"}});
    let ocr = required(&server, "/v1/pdf/ocr", &scan).await;
    let schemes: Vec<&str> = ocr["accepts"].as_array().unwrap().iter().map(|a| a["scheme"].as_str().unwrap()).collect();
    assert_eq!(schemes, ["exact", "upto", "batch-settlement"], "{ocr}");
    assert_eq!(ocr["accepts"][1]["amount"], ocr["accepts"][0]["amount"]);
    let facilitator = server.chain.facilitator_signer().to_string().to_lowercase();
    assert_eq!(ocr["accepts"][1]["extra"]["facilitatorAddress"], json!(facilitator), "{ocr}");
    assert_eq!(ocr["extensions"]["eip2612GasSponsoring"]["info"]["version"], "1", "{ocr}");
    // A flat-priced route offers no `upto` (`exact`, and the sandbox's channels), and an
    // `upto` payment for it is refused before anything is verified or run.
    let body = balance_body(&server);
    let balance = required(&server, BALANCE, &body).await;
    let schemes: Vec<&str> =
        balance["accepts"].as_array().unwrap().iter().map(|a| a["scheme"].as_str().unwrap()).collect();
    assert_eq!(schemes, ["exact", "batch-settlement"], "{balance}");
    assert!(balance["extensions"].get("eip2612GasSponsoring").is_none(), "{balance}");
    let mut requirement = balance["accepts"][0].clone();
    requirement["scheme"] = json!("upto");
    requirement["extra"]["facilitatorAddress"] = json!(facilitator);
    let offer: paperchain_protocol::x402::Offer = serde_json::from_value(requirement).unwrap();
    let window = UptoWindow::fresh(&UptoTerms::of(&offer).unwrap(), now());
    let payment = sign_upto_evm(&server.chain.payer_signer(), &offer, None, &window, None).unwrap();
    let before = server.balances().await;
    let refused = expect_402(paid(&server, BALANCE, &body, &paperchain_protocol::x402::encode(&payment)).await).await;
    assert!(error_text(&refused).starts_with("scheme_not_accepted"), "{refused}");
    assert!(error_text(&refused).contains("(accepted: exact, batch-settlement)"), "{refused}");
    assert_unmoved(&server, before, "upto for a flat price").await;
    let decision = last_decision(&server).await;
    assert_eq!(decision.outcome, Outcome::InvalidPayment);
    assert_eq!(decision.error_code.as_deref(), Some("scheme_not_accepted"));
}

#[tokio::test]
async fn a_payment_to_someone_else_is_refused() {
    let server = sandbox::start(Setup::default()).await;
    let body = balance_body(&server);
    let header = sign(&server, &required(&server, BALANCE, &body).await).await;
    let signer = server.chain.payer_signer();
    let stranger = PrivateKeySigner::random().address();
    let before = server.balances().await;

    // Paid to another address, the requirements saying so.
    let elsewhere = x402::tamper_x402(&signer, &header, |p| {
        p["accepted"]["payTo"] = json!(stranger.to_checksum(None));
        p["payload"]["authorization"]["to"] = json!(stranger.to_checksum(None));
    })
    .await;
    let refused = expect_402(paid(&server, BALANCE, &body, &elsewhere).await).await;
    assert!(error_text(&refused).starts_with("requirements_mismatch"), "{refused}");
    let decision = last_decision(&server).await;
    assert_eq!(decision.outcome, Outcome::InvalidPayment);
    assert_eq!(decision.error_code.as_deref(), Some("requirements_mismatch"));

    // Our requirements in `accepted`, the transfer authorized to someone else.
    let diverted = x402::tamper_x402(&signer, &header, |p| {
        p["payload"]["authorization"]["to"] = json!(stranger.to_checksum(None));
    })
    .await;
    let refused = expect_402(paid(&server, BALANCE, &body, &diverted).await).await;
    assert!(refused["error"].is_string(), "{refused}");
    assert_eq!(last_decision(&server).await.outcome, Outcome::VerifyFailed);

    assert_unmoved(&server, before, "payments to someone else").await;
    assert_eq!(server.balance(stranger).await, U256::ZERO);
    assert_eq!(server.paywall.store().totals().await.unwrap().paid_calls, 0);
}

/// Spec, Authentication rule 7: a payment for another amount than the input's price is a
/// `price_mismatch` and never settled. What a payment is for is the amount its signature
/// authorizes, whatever its `accepted` copy of the requirements says.
#[tokio::test]
async fn a_payment_authorizing_another_amount_than_it_claims_is_a_price_mismatch() {
    let server = sandbox::start(Setup::default()).await;
    let body = balance_body(&server);
    let header = sign(&server, &required(&server, BALANCE, &body).await).await;
    let signer = server.chain.payer_signer();
    let before = server.balances().await;

    for value in [TWO_MILLI + 1, 1_000_000, TWO_MILLI - 1] {
        let other = x402::tamper_x402(&signer, &header, |p| {
            p["payload"]["authorization"]["value"] = json!(value.to_string());
        })
        .await;
        let response = paid(&server, BALANCE, &body, &other).await;
        let status = response.status().as_u16();
        assert_unmoved(&server, before, &format!("accepted.amount 2000, authorization.value {value} ({status})")).await;
        let refused = expect_402(response).await;
        assert_eq!(refused["error"], "price_mismatch", "authorization.value {value}");
        let decision = last_decision(&server).await;
        assert_eq!(decision.outcome, Outcome::PriceMismatch, "authorization.value {value}");
        assert_eq!(decision.tx_hash, None);
    }
    assert_eq!(server.paywall.store().totals().await.unwrap().paid_calls, 0);
}

#[tokio::test]
async fn an_unpaid_call_that_is_not_json_gets_a_402_and_consumes_nothing() {
    let server = sandbox::start(Setup::default()).await;
    let before = server.balances().await;
    for (n, headers) in [&[][..], &[("x-svc-free", "1")][..]].into_iter().enumerate() {
        let refused = expect_402(post_raw(&server, BALANCE, "text/plain", headers).await).await;
        assert!(error_text(&refused).starts_with("unsupported_media_type"), "{refused}");
        assert_eq!(amount(&refused), TWO_MILLI, "the base price");
        let counted = unpaid(&server, BALANCE, Outcome::PaymentRequired, Some("unsupported_media_type")).await;
        assert_eq!(counted, n as u64 + 1, "each refusal counted");
    }
    assert!(rows(&server).await.is_empty(), "counted, not a ledger row each");
    assert_eq!(free_left(&server, "chain-reads", 10).await, 10, "no free call was taken");
    assert_unmoved(&server, before, "unpaid non-JSON").await;
}

#[tokio::test]
async fn the_free_pool_serves_valid_unpaid_calls_that_ask_for_it() {
    let server = sandbox::start(Setup::default()).await;
    let body = balance_body(&server);
    let before = server.balances().await;
    let free = [("x-svc-free", "1")];

    for left in ["9", "8"] {
        let response = server.post(BALANCE, &body, &free).await;
        assert_eq!(response.status(), 200);
        assert_eq!(remaining_header(&response).as_deref(), Some(left));
        assert!(!response.headers().contains_key("payment-response"));
        let answer: Value = response.json().await.unwrap();
        assert!(answer.is_object(), "{answer}");
        let decision = last_decision(&server).await;
        assert_eq!(decision.outcome, Outcome::Free);
        assert_eq!(decision.quote, Some(TWO_MILLI));
    }

    // Without the header: the 402, nothing taken.
    let unpaid_before = unpaid(&server, BALANCE, Outcome::PaymentRequired, None).await;
    let quote = required(&server, BALANCE, &body).await;
    assert!(quote.get("error").is_none(), "{quote}");
    assert_eq!(free_left(&server, "chain-reads", 10).await, 8);
    assert_eq!(unpaid(&server, BALANCE, Outcome::PaymentRequired, None).await, unpaid_before + 1);
    assert_eq!(last_decision(&server).await.outcome, Outcome::Free, "a count, not a row");

    // Invalid input with the header: the 402 at the base price, nothing taken. A 60-page
    // rotation would cost more than the base price; with a bad angle it is quoted the base.
    let mut bad = rotate_body(60);
    bad["degrees"] = json!(45);
    let refused = expect_402(server.post(ROTATE, &bad, &free).await).await;
    assert!(error_text(&refused).contains("/degrees"), "{refused}");
    assert_eq!(amount(&refused), TWO_MILLI, "the base price");
    assert_eq!(free_left(&server, "docs", 10).await, 10);
    let refused = expect_402(server.post(BALANCE, &json!({"chain": "base", "address": "nope"}), &free).await).await;
    assert!(error_text(&refused).contains("/address"), "{refused}");
    assert_eq!(free_left(&server, "chain-reads", 10).await, 8);
    assert_eq!(unpaid(&server, BALANCE, Outcome::PaymentRequired, Some("invalid_input")).await, 1);

    // The count resumes where it was.
    let response = server.post(BALANCE, &body, &free).await;
    assert_eq!(remaining_header(&response).as_deref(), Some("7"));
    assert_unmoved(&server, before, "free calls").await;
}

#[tokio::test]
async fn a_used_up_pool_answers_free_pool_exhausted_and_the_address_check_has_its_own() {
    let server =
        sandbox::start(Setup { env: vec![("PAPERCHAIN_FREE_CHAIN_READS", "2".into())], ..Setup::default() }).await;
    let before = server.balances().await;
    let free = [("x-svc-free", "1")];
    let chain = json!({"chain": "base"});

    // One pool for every chain read.
    let response = server.post(BALANCE, &balance_body(&server), &free).await;
    assert_eq!((response.status().as_u16(), remaining_header(&response).as_deref()), (200, Some("1")));
    let response = server.post("/v1/chain/gas", &chain, &free).await;
    assert_eq!((response.status().as_u16(), remaining_header(&response).as_deref()), (200, Some("0")));
    let refused = expect_402(server.post("/v1/chain/block", &chain, &free).await).await;
    assert_eq!(refused["error"], "free_pool_exhausted");
    assert_eq!(amount(&refused), 1000, "the block read's own price");
    assert_eq!(unpaid(&server, "/v1/chain/block", Outcome::FreeExhausted, Some("free_pool_exhausted")).await, 1);
    assert_eq!(free_left(&server, "chain-reads", 2).await, 0);

    // The address check draws on its own pool of 30.
    let check = json!({"chain": "base", "address": server.chain.payer().to_string()});
    let response = server.post("/v1/check/address", &check, &free).await;
    let status = response.status().as_u16();
    let left = remaining_header(&response);
    assert_eq!(status, 200, "{:?}", response.text().await);
    assert_eq!(left.as_deref(), Some("29"));
    assert_unmoved(&server, before, "free calls").await;
}

#[tokio::test]
async fn free_pools_start_again_at_the_utc_day_boundary() {
    let clock = TestClock::at(datetime!(2026-03-14 23:59:59 UTC));
    let options = HostedOptions { clock: clock.clone(), ..Setup::default().options };
    let server =
        sandbox::start(Setup { env: vec![("PAPERCHAIN_FREE_CHAIN_READS", "1".into())], options, solana: false }).await;
    let body = balance_body(&server);
    let free = [("x-svc-free", "1")];

    let response = server.post(BALANCE, &body, &free).await;
    assert_eq!((response.status().as_u16(), remaining_header(&response).as_deref()), (200, Some("0")));
    let refused = expect_402(server.post(BALANCE, &body, &free).await).await;
    assert_eq!(refused["error"], "free_pool_exhausted");

    clock.set(datetime!(2026-03-15 00:00:00 UTC));
    let response = server.post(BALANCE, &body, &free).await;
    assert_eq!((response.status().as_u16(), remaining_header(&response).as_deref()), (200, Some("0")));
    let decision = last_decision(&server).await;
    assert_eq!(decision.outcome, Outcome::Free);
    assert_eq!(decision.at, datetime!(2026-03-15 00:00:00 UTC), "the ledger is on the same clock");
    let refused = expect_402(server.post(BALANCE, &body, &free).await).await;
    assert_eq!(refused["error"], "free_pool_exhausted");
}

#[tokio::test]
async fn free_pool_counts_survive_a_restart() {
    let clock = TestClock::at(datetime!(2026-06-01 12:00:00 UTC));
    let options = HostedOptions { clock: clock.clone(), ..Setup::default().options };
    let mut server = sandbox::start(Setup {
        env: vec![("PAPERCHAIN_FREE_CHAIN_READS", "3".into())],
        options: options.clone(),
        solana: false,
    })
    .await;
    let body = balance_body(&server);
    let free = [("x-svc-free", "1")];
    for left in ["2", "1"] {
        let response = server.post(BALANCE, &body, &free).await;
        assert_eq!(remaining_header(&response).as_deref(), Some(left));
    }
    server.restart(options).await;
    let response = server.post(BALANCE, &body, &free).await;
    assert_eq!((response.status().as_u16(), remaining_header(&response).as_deref()), (200, Some("0")));
    let refused = expect_402(server.post(BALANCE, &body, &free).await).await;
    assert_eq!(refused["error"], "free_pool_exhausted");
    assert_eq!(rows(&server).await.len(), 3, "the ledger kept its rows: the free calls");
    assert_eq!(unpaid(&server, BALANCE, Outcome::FreeExhausted, Some("free_pool_exhausted")).await, 1);
}

#[tokio::test]
async fn the_402_has_the_fields_of_the_spec() {
    let icon = "https://icons.example.com/paperchain.png";
    let env =
        vec![("PAPERCHAIN_SERVICE_NAME", "Paperchain Test".to_string()), ("PAPERCHAIN_ICON_URL", icon.to_string())];
    let server = sandbox::start(Setup { env, ..Setup::default() }).await;
    let body = balance_body(&server);
    let response = server.post(BALANCE, &body, &[]).await;
    assert!(
        response.headers().get_all("www-authenticate").iter().any(|v| v.to_str().unwrap().starts_with("Payment ")),
        "an MPP challenge beside x402"
    );
    let offer = expect_402(response).await;

    let keys = |v: &Value| -> Vec<String> {
        let mut keys: Vec<String> = v.as_object().expect("an object").keys().cloned().collect();
        keys.sort();
        keys
    };
    assert_eq!(keys(&offer), ["accepts", "extensions", "resource", "x402Version"], "no error for a valid input");
    assert_eq!(offer["x402Version"], 2);
    let resource = &offer["resource"];
    assert_eq!(keys(resource), ["description", "iconUrl", "mimeType", "serviceName", "tags", "url"]);
    assert_eq!(resource["url"], format!("{}{BALANCE}", server.base));
    assert!(resource["description"].as_str().is_some_and(|d| !d.is_empty()));
    assert_eq!(resource["mimeType"], "application/json");
    assert_eq!(resource["serviceName"], "Paperchain Test");
    assert_eq!(resource["iconUrl"], icon);
    let tags = resource["tags"].as_array().expect("tags");
    assert!(!tags.is_empty() && tags.iter().all(Value::is_string), "{tags:?}");

    let accepts = offer["accepts"].as_array().expect("accepts");
    assert_eq!(accepts.len(), 2, "the sandbox is paid on Base only: exact, and over a payment channel");
    let channel = &accepts[1];
    assert_eq!(
        (&channel["scheme"], &channel["network"], &channel["amount"]),
        (&json!("batch-settlement"), &json!("eip155:8453"), &json!("2000"))
    );
    assert_eq!(
        channel["extra"],
        json!({"name": "USD Coin", "version": "2", "receiverAuthorizer": "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
               "withdrawDelay": 900, "minDeposit": "20000"})
    );
    let accept = &accepts[0];
    assert_eq!(keys(accept), ["amount", "asset", "extra", "maxTimeoutSeconds", "network", "payTo", "scheme"]);
    assert_eq!(accept["scheme"], "exact");
    assert_eq!(accept["network"], "eip155:8453");
    assert_eq!(accept["amount"], "2000", "atomic units as a string");
    assert_eq!(accept["asset"].as_str().unwrap().to_lowercase(), server.chain.token().to_string().to_lowercase());
    assert_eq!(accept["payTo"].as_str().unwrap(), server.chain.pay_to().to_checksum(None));
    assert_eq!(accept["maxTimeoutSeconds"], 300);
    assert_eq!(accept["extra"], json!({"name": "USD Coin", "version": "2"}));

    // The bazaar schema takes this route's body and refuses what the route refuses.
    let bazaar = &offer["extensions"]["bazaar"];
    assert_eq!(bazaar["info"]["input"], json!({"type": "http", "method": "POST", "bodyType": "json"}));
    let validator = jsonschema::validator_for(&bazaar["schema"]).expect("the bazaar schema compiles");
    let call = |body: Value| json!({"input": {"type": "http", "method": "POST", "bodyType": "json", "body": body}});
    assert!(validator.is_valid(&call(body.clone())));
    assert!(!validator.is_valid(&call(json!({"chain": "base", "address": "nope"}))));
    assert!(!validator.is_valid(&call(json!({"chain": "base", "address": body["address"], "unknown": 1}))));
    let mut input = &bazaar["schema"]["properties"]["input"]["properties"]["body"];
    if let Some(name) = input["$ref"].as_str().and_then(|r| r.strip_prefix("#/$defs/")) {
        input = &bazaar["schema"]["$defs"][name];
    }
    let fields = keys(&input["properties"]);
    assert_eq!(fields, ["address", "chain", "token"], "{input}");

    // A file-producing route says so.
    let rotate = required(&server, ROTATE, &rotate_body(1)).await;
    assert_eq!(rotate["resource"]["mimeType"], "application/pdf");
    assert_eq!(rotate["resource"]["url"], format!("{}{ROTATE}", server.base));
    assert_eq!(rotate["extensions"]["bazaar"]["info"]["output"]["type"], "binary");
}

#[tokio::test]
async fn channel_payments_that_are_not_the_payers_or_not_this_services_are_refused_and_move_nothing() {
    use paperchain_protocol::batch_evm::{sign_batch_payment, sign_batch_refund};
    let server = sandbox::start(Setup::default()).await;
    let body = balance_body(&server);
    let quoted = required(&server, BALANCE, &body).await;
    let offer: paperchain_protocol::x402::Offer = serde_json::from_value(quoted["accepts"][1].clone()).unwrap();
    let payer = server.chain.payer_signer();
    let before = server.balances().await;
    let refusal = |header: String| {
        let (server, body) = (&server, &body);
        async move { expect_402(paid(server, BALANCE, body, &header).await).await }
    };
    // A voucher signed by someone else for the payer's channel.
    let payment = sign_batch_payment(&payer, &offer, None, 2000, Some(20_000), now()).unwrap();
    let forged = sign_batch_payment(&PrivateKeySigner::random(), &offer, None, 2000, None, now()).unwrap();
    let mut stolen = serde_json::to_value(&payment).unwrap();
    stolen["payload"]["voucher"]["signature"] = json!(forged.payload.voucher.signature);
    let refused = refusal(paperchain_protocol::x402::encode(&stolen)).await;
    assert!(error_text(&refused).starts_with("invalid_batch_settlement_evm_voucher_signature"), "{refused}");
    // A channel paying someone else.
    let mut elsewhere = serde_json::to_value(&payment).unwrap();
    elsewhere["payload"]["channelConfig"]["receiver"] = json!(PrivateKeySigner::random().address().to_checksum(None));
    let refused = refusal(paperchain_protocol::x402::encode(&elsewhere)).await;
    assert!(error_text(&refused).contains("`channelConfig.receiver` is not this service's payTo"), "{refused}");
    // A voucher alone, for a channel never funded.
    let unfunded = sign_batch_payment(&payer, &offer, None, 2000, None, now()).unwrap();
    let refused = refusal(paperchain_protocol::x402::encode(&unfunded)).await;
    assert!(error_text(&refused).starts_with("invalid_batch_settlement_evm_insufficient_balance"), "{refused}");
    // A deposit whose authorization is for more than the payer holds: the escrow refuses it
    // before anything runs.
    let broke = sign_batch_payment(&payer, &offer, None, 2000, Some(u128::from(u64::MAX)), now()).unwrap();
    let refused = refusal(paperchain_protocol::x402::encode(&broke)).await;
    assert!(error_text(&refused).starts_with("invalid_batch_settlement_evm_escrow"), "{refused}");
    // Closing a channel the service never had.
    let refund = sign_batch_refund(&payer, &offer, 0).unwrap();
    let refused = refusal(paperchain_protocol::x402::encode(&refund)).await;
    assert!(error_text(&refused).contains("no such channel"), "{refused}");
    assert_unmoved(&server, before, "refused channel payments").await;
    // The payer's own deposit goes through, once.
    let header = paperchain_protocol::x402::encode(&payment);
    let answer = paid(&server, BALANCE, &body, &header).await;
    assert_eq!(answer.status().as_u16(), 200);
    let refused = refusal(header).await;
    assert!(error_text(&refused).starts_with("invalid_batch_settlement_evm_cumulative_amount_mismatch"), "{refused}");
}
