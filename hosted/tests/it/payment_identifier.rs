//! The spec's `payment-identifier` extension on the hosted paywall, on the sandbox chain:
//! every 402 advertises it; a settled payment resent with the same payment id for the same
//! route and body (the paying client's resend when a paid answer is lost) gets the answer
//! again with the original settlement and moves no money; any other resend of a used
//! payment (another body, another route, another id, no id) is still `payment_already_used`.

use alloy::primitives::U256;
use base64::Engine as _;
use paperchain_hosted::HostedOptions;
use paperchain_hosted::store::{Outcome, PaymentState};
use paperchain_testkit::sandbox::{self, HostedServer, Setup};
use paperchain_testkit::x402;
use serde_json::{Value, json};

const BALANCE: &str = "/v1/chain/balance";
/// Another route at the same flat price, so a payment for BALANCE reaches its replay guard.
const ENS: &str = "/v1/chain/ens";
const TWO_MILLI: u64 = 2000;
/// An address neither the payer nor the payee: its balance stays put between calls.
const STILL: &str = "0x000000000000000000000000000000000000dEaD";
const ID: &str = "call_0123456789abcdef0123456789abcdef";

fn body() -> Value {
    json!({"chain": "base", "address": STILL})
}

async fn required(server: &HostedServer, path: &str, body: &Value) -> Value {
    let response = server.post(path, body, &[]).await;
    assert_eq!(response.status(), 402);
    response.json().await.unwrap()
}

/// A payment for `required`'s first requirement, echoing the extension with `id` (none if `None`).
async fn sign_with_id(server: &HostedServer, required: &Value, id: Option<&str>) -> String {
    let mut payload = x402::sign_x402_payload(&server.chain.payer_signer(), &required["accepts"][0]).await;
    if let Some(id) = id {
        let mut extension = required["extensions"]["payment-identifier"].clone();
        extension["info"]["id"] = json!(id);
        payload["extensions"] = json!({ "payment-identifier": extension });
    }
    x402::encode_x402(&payload)
}

/// `header` with its payment id replaced by `id` (`None`: the extension removed); the
/// signed part is untouched, so it is the same payment.
fn with_id(header: &str, id: Option<&str>) -> String {
    let mut payload = x402::decode_x402(header);
    match id {
        Some(id) => payload["extensions"]["payment-identifier"]["info"]["id"] = json!(id),
        None => {
            payload.as_object_mut().unwrap().remove("extensions");
        }
    }
    x402::encode_x402(&payload)
}

async fn paid(server: &HostedServer, path: &str, body: &Value, header: &str) -> reqwest::Response {
    server.post(path, body, &[("payment-signature", header)]).await
}

/// Status, decoded PAYMENT-RESPONSE (if any) and body of a response.
async fn read(response: reqwest::Response) -> (u16, Option<Value>, Value) {
    let status = response.status().as_u16();
    let settlement = response.headers().get("payment-response").map(|v| x402::decode_x402(v.to_str().unwrap()));
    let body = response.json().await.unwrap();
    (status, settlement, body)
}

fn error_text(required: &Value) -> &str {
    required["error"].as_str().unwrap_or_else(|| panic!("an error in {required}"))
}

async fn assert_moved_by(server: &HostedServer, before: (U256, U256), quote: u64, what: &str) {
    let (payer, payee) = server.balances().await;
    assert_eq!(before.0 - payer, U256::from(quote), "{what}: the payer paid exactly this");
    assert_eq!(payee - before.1, U256::from(quote), "{what}: the payee got exactly this");
}

#[tokio::test]
async fn every_402_advertises_the_payment_identifier_extension() {
    let server = sandbox::start(Setup::default()).await;
    for (path, body) in [(BALANCE, body()), (BALANCE, json!({})), (ENS, json!({"name": "vitalik.eth"}))] {
        let response = server.post(path, &body, &[]).await;
        assert_eq!(response.status(), 402);
        let header = response.headers().get("payment-required").unwrap().to_str().unwrap().to_string();
        let offer: Value = response.json().await.unwrap();
        let decoded: Value =
            serde_json::from_slice(&base64::engine::general_purpose::STANDARD.decode(header).unwrap()).unwrap();
        assert_eq!(decoded, offer);
        let extension = &offer["extensions"]["payment-identifier"];
        assert_eq!(extension["info"], json!({"required": false}), "{path}: {offer}");
        assert!(offer["extensions"]["bazaar"].is_object(), "the bazaar extension stays");
        let schema = jsonschema::validator_for(&extension["schema"]).expect("the schema compiles");
        assert!(schema.is_valid(&json!({"required": false})));
        assert!(schema.is_valid(&json!({"required": false, "id": ID})));
        assert!(!schema.is_valid(&json!({"required": false, "id": "too_short"})));
        assert!(!schema.is_valid(&json!({"required": false, "id": "x".repeat(129)})));
        assert!(!schema.is_valid(&json!({"required": false, "id": "call 0123456789abcdef"})));
        assert!(!schema.is_valid(&json!({"id": ID})), "`required` is required");
    }
}

#[tokio::test]
async fn a_resent_settled_payment_with_its_id_gets_the_answer_again_and_pays_once() {
    let mut server = sandbox::start(Setup::default()).await;
    let body = body();
    let header = sign_with_id(&server, &required(&server, BALANCE, &body).await, Some(ID)).await;
    let before = server.balances().await;
    let (status, first_settlement, first_body) = read(paid(&server, BALANCE, &body, &header).await).await;
    assert_eq!(status, 200, "{first_body}");
    let first_settlement = first_settlement.expect("PAYMENT-RESPONSE");
    assert_eq!(first_settlement["success"], true);
    let tx = first_settlement["transaction"].as_str().unwrap().to_string();
    assert_eq!(server.tx_succeeded(&tx).await, Some(true));
    assert_moved_by(&server, before, TWO_MILLI, "the first call").await;
    let after_once = server.balances().await;
    let paid_row = server.paywall.store().recent(1).await.unwrap().pop().unwrap();
    assert_eq!(paid_row.outcome, Outcome::Paid);
    let key = paid_row.payment_key.expect("a payment key");

    // The same PAYMENT-SIGNATURE again (the paid answer was lost): the answer again, the
    // same settlement, no money moved.
    for attempt in 0..2 {
        let (status, settlement, again) = read(paid(&server, BALANCE, &body, &header).await).await;
        assert_eq!(status, 200, "resend {attempt}: {again}");
        assert_eq!(again, first_body, "resend {attempt}: the same answer");
        assert_eq!(settlement.as_ref(), Some(&first_settlement), "resend {attempt}: the same settlement");
        assert_eq!(server.balances().await, after_once, "resend {attempt}: no money moved");
        let row = server.paywall.store().recent(1).await.unwrap().pop().unwrap();
        assert_eq!(row.outcome, Outcome::Redelivered, "{row:?}");
        assert_eq!(row.tx_hash.as_deref(), Some(tx.as_str()));
        assert_eq!(row.payment_key, Some(key));
        assert_eq!(row.quote, Some(TWO_MILLI), "the input's quote, as paid by the original call");
        assert_eq!(row.payer, paid_row.payer);
        assert_eq!(row.network.as_deref(), Some("eip155:8453"));
        assert_eq!(row.error_code, None);
    }
    let totals = server.paywall.store().totals().await.unwrap();
    assert_eq!((totals.paid_calls, totals.settled_amount), (1, TWO_MILLI), "paid once");
    assert_eq!(server.paywall.store().payment_state(&key).await.unwrap(), Some(PaymentState::Settled));

    // From the file, after a restart, too.
    server.restart(HostedOptions::default()).await;
    let (status, settlement, again) = read(paid(&server, BALANCE, &body, &header).await).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again, first_body);
    assert_eq!(settlement, Some(first_settlement));
    assert_eq!(server.balances().await, after_once, "after a restart: no money moved");
}

#[tokio::test]
async fn a_used_payment_for_anything_else_is_still_refused() {
    let server = sandbox::start(Setup::default()).await;
    let body = body();
    let header = sign_with_id(&server, &required(&server, BALANCE, &body).await, Some(ID)).await;
    let before = server.balances().await;
    assert_eq!(paid(&server, BALANCE, &body, &header).await.status(), 200);
    assert_moved_by(&server, before, TWO_MILLI, "the first call").await;
    let after_once = server.balances().await;

    let other_address = json!({"chain": "base", "address": "0x000000000000000000000000000000000000bEEF"});
    // The same read, other bytes (an explicit null token).
    let other_bytes = json!({"chain": "base", "address": STILL, "token": null});
    let cases = [
        ("another body", BALANCE, other_address, header.clone()),
        ("other bytes for the same read", BALANCE, other_bytes, header.clone()),
        ("another route", ENS, json!({"name": "vitalik.eth"}), header.clone()),
        ("another id", BALANCE, body.clone(), with_id(&header, Some("call_ffffffffffffffffffffffffffffffff"))),
        ("an invalid id", BALANCE, body.clone(), with_id(&header, Some("short"))),
        ("no id", BALANCE, body.clone(), with_id(&header, None)),
    ];
    for (what, path, body, header) in cases {
        let (status, settlement, answer) = read(paid(&server, path, &body, &header).await).await;
        assert_eq!(status, 402, "{what}: {answer}");
        assert_eq!(settlement, None, "{what}");
        assert!(error_text(&answer).starts_with("payment_already_used"), "{what}: {answer}");
        assert_eq!(server.balances().await, after_once, "{what}: no money moved");
        let row = server.paywall.store().recent(1).await.unwrap().pop().unwrap();
        assert_eq!(row.outcome, Outcome::Replay, "{what}: {row:?}");
    }
    // The right resend still works after all of those.
    assert_eq!(paid(&server, BALANCE, &body, &header).await.status(), 200);
    assert_eq!(server.balances().await, after_once);
}

#[tokio::test]
async fn a_settled_payment_without_an_id_is_never_redelivered() {
    let server = sandbox::start(Setup::default()).await;
    let body = body();
    let header = sign_with_id(&server, &required(&server, BALANCE, &body).await, None).await;
    let before = server.balances().await;
    assert_eq!(paid(&server, BALANCE, &body, &header).await.status(), 200);
    assert_moved_by(&server, before, TWO_MILLI, "the first call").await;
    let after_once = server.balances().await;
    for (what, header) in [("the same header", header.clone()), ("an id added later", with_id(&header, Some(ID)))] {
        let (status, _, answer) = read(paid(&server, BALANCE, &body, &header).await).await;
        assert_eq!(status, 402, "{what}: {answer}");
        assert!(error_text(&answer).starts_with("payment_already_used"), "{what}: {answer}");
        assert_eq!(server.balances().await, after_once, "{what}: no money moved");
    }
}
