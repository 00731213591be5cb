//! Payments on Solana, end to end on the sandbox's Solana side: the local validator
//! standing in for mainnet, the test USDC at the mainnet USDC mint, the in-process
//! facilitator that co-signs as fee payer. The payer's transaction is built and signed by
//! the paying client's own code (`paperchain_wallet::solana_pay`) from what the validator
//! says; every figure is read back from the validator.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use paperchain_hosted::sandbox_solana::{SolanaSandbox, USDC_MINT};
use paperchain_hosted::store::Outcome;
use paperchain_protocol::exact_svm::{self, SigningKey};
use paperchain_protocol::x402;
use paperchain_testkit::sandbox::{self, HostedServer, Setup};
use serde_json::{Value, json};

const SOLANA: &str = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";
/// The price of `/v1/solana/status`.
const STATUS_PRICE: u64 = 1_000;

async fn server() -> HostedServer {
    sandbox::start(Setup { solana: true, ..Setup::default() }).await
}

fn solana(server: &HostedServer) -> &SolanaSandbox {
    server.solana.as_ref().expect("the sandbox's Solana side")
}

/// The unpaid 402 of `/v1/solana/status` (a read of the sandbox validator).
async fn required(server: &HostedServer) -> Value {
    let response = server.post("/v1/solana/status", &json!({}), &[]).await;
    assert_eq!(response.status(), 402);
    response.json().await.unwrap()
}

fn solana_requirement(required: &Value) -> Value {
    let accepts = required["accepts"].as_array().expect("accepts");
    accepts.iter().find(|r| r["network"] == SOLANA).cloned().unwrap_or_else(|| panic!("no Solana offer in {required}"))
}

/// A payment of `requirement` by `key`, as the wallet signs it.
async fn sign(server: &HostedServer, key: &SigningKey, requirement: &Value) -> Value {
    let clusters = solana(server).clusters();
    let offer = serde_json::from_value(requirement.clone()).expect("an offer");
    let signed = paperchain_wallet::solana_pay::sign(&clusters, key, &offer, None).await.expect("a signed payment");
    serde_json::to_value(signed.payload).expect("a payment serializes")
}

/// The transaction a payment (as sent) carries.
fn transaction_of(payment: &Value) -> Vec<u8> {
    STANDARD.decode(payment["payload"]["transaction"].as_str().expect("payload.transaction")).expect("base64")
}

/// What the payer of a payment (as sent) signed, as the paywall reads it.
fn signed_message(payment: &Value) -> Option<Vec<u8>> {
    exact_svm::signed_message(&x402::read(payment.clone(), "the payment").expect("a payment"))
}

async fn pay(server: &HostedServer, payment: &Value) -> reqwest::Response {
    server.post("/v1/solana/status", &json!({}), &[("payment-signature", &x402::encode(payment))]).await
}

async fn balances(server: &HostedServer) -> (u64, u64) {
    let side = solana(server);
    (side.balance_of(&side.payer()).await.unwrap(), side.balance_of(&side.pay_to()).await.unwrap())
}

async fn refusal(response: reqwest::Response) -> String {
    assert_eq!(response.status(), 402);
    let body: Value = response.json().await.unwrap();
    body["error"].as_str().unwrap_or_else(|| panic!("no error in {body}")).to_string()
}

async fn rpc(server: &HostedServer, method: &str, params: Value) -> Value {
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    paperchain_testkit::json_rpc::call(&client, solana(server).rpc_url().as_str(), method, params)
        .await
        .unwrap_or_else(|e| panic!("{method}: {e}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_solana_payment_settles_once_and_moves_exactly_the_quote() {
    let server = server().await;
    let side = solana(&server);
    let required = required(&server).await;
    let requirement = solana_requirement(&required);
    // Base first, then Solana: one requirement per network, with the facilitator's fee payer.
    assert_eq!(required["accepts"][0]["network"], "eip155:8453");
    assert_eq!(requirement["amount"], STATUS_PRICE.to_string());
    assert_eq!(requirement["asset"], USDC_MINT);
    assert_eq!(requirement["payTo"], side.pay_to());
    assert_eq!(requirement["extra"]["feePayer"], side.fee_payer());

    let before = balances(&server).await;
    let fees_before = side.fee_payer_lamports().await.unwrap();
    let payment = sign(&server, &side.payer_key(), &requirement).await;
    let response = pay(&server, &payment).await;
    let status = response.status();
    let settlement_header = response.headers().get("payment-response").map(|v| v.to_str().unwrap().to_string());
    let answer: Value = response.json().await.unwrap();
    assert_eq!(status, 200, "{answer}");
    let settlement: Value = x402::decode(&settlement_header.expect("PAYMENT-RESPONSE"), "PAYMENT-RESPONSE").unwrap();
    assert_eq!(answer["genesis_hash"], side.genesis(), "the route read the sandbox validator");
    assert_eq!(settlement["success"], true);
    assert_eq!(settlement["network"], SOLANA);
    assert_eq!(settlement["payer"], side.payer());
    let signature = settlement["transaction"].as_str().unwrap().to_string();
    assert_eq!(bs58::decode(&signature).into_vec().unwrap().len(), 64, "a transaction signature: {signature}");

    let after = balances(&server).await;
    assert_eq!(before.0 - after.0, STATUS_PRICE, "the payer paid exactly the quote");
    assert_eq!(after.1 - before.1, STATUS_PRICE, "the payee got exactly the quote");

    // The transaction on chain: it succeeded, the fee payer paid its fee, the payer signed
    // the transfer, and the memo is there.
    let tx = rpc(
        &server,
        "getTransaction",
        json!([signature, {"encoding": "jsonParsed", "commitment": "confirmed", "maxSupportedTransactionVersion": 0}]),
    )
    .await;
    assert_eq!(tx["meta"]["err"], Value::Null, "{tx}");
    let keys = &tx["transaction"]["message"]["accountKeys"];
    assert_eq!(keys[0]["pubkey"], side.fee_payer());
    assert_eq!(keys[0]["signer"], true);
    assert_eq!(keys[1]["pubkey"], side.payer());
    assert_eq!(keys[1]["signer"], true);
    let fee = tx["meta"]["fee"].as_u64().unwrap();
    assert!(fee >= 10_000, "two signatures' base fee at least: {fee}");
    assert_eq!(fees_before - side.fee_payer_lamports().await.unwrap(), fee, "only the fee payer paid fees");
    let programs: Vec<&str> = tx["transaction"]["message"]["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ix| ix["programId"].as_str().unwrap())
        .collect();
    assert_eq!(
        programs,
        [
            exact_svm::COMPUTE_BUDGET_PROGRAM,
            exact_svm::COMPUTE_BUDGET_PROGRAM,
            exact_svm::TOKEN_PROGRAM,
            exact_svm::MEMO_PROGRAM
        ]
    );

    // The hosted ledger has the payment, with the transaction signature.
    let row = server.paywall.store().recent(1).await.unwrap().pop().unwrap();
    assert_eq!(row.outcome, Outcome::Paid);
    assert_eq!(row.network.as_deref(), Some(SOLANA));
    assert_eq!(row.tx_hash.as_deref(), Some(signature.as_str()));
    assert_eq!(row.payer.as_deref(), Some(side.payer().as_str()));
    assert_eq!(row.quote, Some(STATUS_PRICE));

    // The same payment again is refused, and so is the same transaction with anything in
    // the fee payer's signature slot: the payer signed one payment.
    assert!(refusal(pay(&server, &payment).await).await.starts_with("payment_already_used"));
    let mut wire = transaction_of(&payment);
    wire[1..65].copy_from_slice(&[7; 64]);
    let mut refilled = payment.clone();
    refilled["payload"]["transaction"] = json!(STANDARD.encode(&wire));
    assert!(refusal(pay(&server, &refilled).await).await.starts_with("payment_already_used"));
    assert_eq!(balances(&server).await, after, "nothing moved twice");

    // A second payment of the same amount is another transaction (its memo differs) and settles.
    let second = sign(&server, &side.payer_key(), &requirement).await;
    assert_ne!(signed_message(&second), signed_message(&payment));
    assert_eq!(pay(&server, &second).await.status(), 200);
    assert_eq!(balances(&server).await.0, after.0 - STATUS_PRICE);
}

#[tokio::test(flavor = "multi_thread")]
async fn solana_payments_that_cannot_settle_are_refused_and_move_nothing() {
    let server = server().await;
    let side = solana(&server);
    let requirement = solana_requirement(&required(&server).await);
    let payer = side.payer_key();
    let before = balances(&server).await;

    // A payer signature that does not verify: refused before anything runs.
    let payment = sign(&server, &payer, &requirement).await;
    let mut wire = transaction_of(&payment);
    wire[100] ^= 0x55;
    let mut forged = payment.clone();
    forged["payload"]["transaction"] = json!(STANDARD.encode(&wire));
    let error = refusal(pay(&server, &forged).await).await;
    assert!(error.starts_with("invalid_payment") && error.contains("does not verify"), "{error}");
    assert_eq!(server.paywall.store().recent(1).await.unwrap()[0].outcome, Outcome::InvalidPayment);

    // A transfer of less than it claims to accept: a price mismatch.
    let mut cheaper = requirement.clone();
    cheaper["amount"] = json!((STATUS_PRICE - 1).to_string());
    let mut underpaid = sign(&server, &payer, &cheaper).await;
    underpaid["accepted"] = requirement.clone();
    assert_eq!(refusal(pay(&server, &underpaid).await).await, "price_mismatch");

    // A transfer to someone else, claiming the offered requirement: the facilitator sees
    // the destination is not the payee's token account.
    let mut elsewhere = requirement.clone();
    elsewhere["payTo"] = json!(side.payer());
    let mut misdirected = sign(&server, &payer, &elsewhere).await;
    misdirected["accepted"] = requirement.clone();
    let error = refusal(pay(&server, &misdirected).await).await;
    assert!(error.contains("recipient"), "{error}");

    // A payer with no token account: refused by the facilitator.
    let stranger = SigningKey::from_bytes(&rand::random::<[u8; 32]>());
    let error = refusal(pay(&server, &sign(&server, &stranger, &requirement).await).await).await;
    assert!(!error.is_empty());
    assert_eq!(server.paywall.store().recent(1).await.unwrap()[0].outcome, Outcome::VerifyFailed);

    // A fee payer other than the facilitator's: the requirements differ from the offer.
    let mut other_fee_payer = requirement.clone();
    other_fee_payer["extra"]["feePayer"] = json!(exact_svm::to_base58(&[3; 32]));
    let wrong = sign(&server, &payer, &other_fee_payer).await;
    assert!(refusal(pay(&server, &wrong).await).await.starts_with("requirements_mismatch"));

    assert_eq!(balances(&server).await, before, "nothing moved");
    // The payment refused before it was used still works.
    assert_eq!(pay(&server, &payment).await.status(), 200);
    assert_eq!(balances(&server).await.0, before.0 - STATUS_PRICE);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_solana_payment_while_the_validator_is_down_is_an_outage_not_a_refusal() {
    let mut server = server().await;
    let requirement = solana_requirement(&required(&server).await);
    let payment = sign(&server, &solana(&server).payer_key(), &requirement).await;
    server.solana.take().expect("the Solana side").stop().await.unwrap();
    let response = pay(&server, &payment).await;
    assert_eq!(response.status(), 503, "nobody can judge the payment");
    assert!(response.headers().contains_key("retry-after"));
    let row = server.paywall.store().recent(1).await.unwrap().pop().unwrap();
    assert_eq!(row.outcome, Outcome::FacilitatorUnavailable);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_solana_settlement_a_crash_left_out_of_the_ledger_is_found_by_its_memo() {
    use paperchain_hosted::facilitator::{Local, PaymentFacilitator};
    use paperchain_hosted::recovery::{Recovered, recover};
    use paperchain_hosted::store::{Authorization, PaidRequest, PaymentState, Store};

    let server = server().await;
    let side = solana(&server);
    let requirement = solana_requirement(&required(&server).await);
    let payment = sign(&server, &side.payer_key(), &requirement).await;
    let wire = transaction_of(&payment);
    let (payer, mint, memo) = exact_svm::Transaction::parse(&wire).unwrap().payment_parts().unwrap();
    // What the paywall keeps with a Solana claim.
    let kept = |memo: String, valid_before: u64| PaidRequest {
        operation: Some("get_solana_status".into()),
        amount: Some(STATUS_PRICE),
        authorization: Some(Authorization {
            asset: exact_svm::to_base58(&mint),
            authorizer: exact_svm::to_base58(&payer),
            nonce: memo,
            valid_before,
        }),
        ..PaidRequest::default()
    };

    // A first run claims two payments and settles one on chain, then dies before recording it.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hosted.sqlite");
    let first = Store::open(&db).await.unwrap();
    let (settled_key, unused_key) = ([1u8; 32], [2u8; 32]);
    first.claim_payment_for(&settled_key, "/v1/solana/status", SOLANA, &kept(memo.unwrap(), u64::MAX)).await.unwrap();
    first.claim_payment_for(&unused_key, "/v1/solana/status", SOLANA, &kept("00ff".into(), 1)).await.unwrap();
    let request = json!({"x402Version": 2, "paymentPayload": payment, "paymentRequirements": requirement});
    let raw = serde_json::value::to_raw_value(&request).unwrap();
    let facilitator = Local(side.facilitator().await.unwrap());
    let settled = facilitator.settle(x402_types::proto::VerifyRequest::from(raw)).await.unwrap();
    first.close().await;
    drop(first); // the run's lock goes with it, as with a process that died

    // The next run finds the settled one by its memo, and the other as never used and too old.
    let second = Store::open(&db).await.unwrap();
    // Opening the store abandoned the dead run's claims: refused, not yet resolved.
    for key in [&settled_key, &unused_key] {
        assert_eq!(second.payment_state(key).await.unwrap(), Some(PaymentState::Abandoned));
    }
    let found = recover(&second, &paperchain_engine::evm::Chains::from_env(), &side.clusters(), &[]).await.unwrap();
    assert_eq!(found, Recovered { settled: 1, never_used: 1, pending: 0 });
    assert_eq!(second.payment_state(&settled_key).await.unwrap(), Some(PaymentState::Settled));
    let row = second.recent(1).await.unwrap().pop().unwrap();
    assert_eq!(row.outcome, Outcome::Paid);
    assert_eq!(row.tx_hash.as_deref(), Some(settled.transaction.as_str()));
    assert_eq!(row.payer.as_deref(), Some(side.payer().as_str()));
    assert_eq!((row.network.as_deref(), row.quote), (Some(SOLANA), Some(STATUS_PRICE)));
}
