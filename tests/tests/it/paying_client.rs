//! The paying client against the hosted sandbox (anvil, the test USDC, the in-process
//! facilitator settling real EIP-3009 transfers): it pays exactly the quote, once; the
//! spend policy refuses before any signature exists; a server that refuses or asks again
//! gets no second signature; a lost paid answer is not paid twice.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use alloy::primitives::U256;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use paperchain_engine::solana::Clusters;
use paperchain_testkit::sandbox::{self, HostedServer, Setup};
use paperchain_testkit::server::{loopback_listener, spawn_router};
use paperchain_wallet::client::{
    Approval, Approver, BoxFuture, CallError, KeyLoader, NobodyToAsk, PayingClient, Request as Outgoing,
};
use paperchain_wallet::config::ClientConfig;
use paperchain_wallet::ledger::{Caller, Ledger};
use paperchain_wallet::policy::Refusal;
use serde_json::{Value, json};
use tokio::sync::Mutex;

const GAS: &str = "/v1/chain/gas";

struct Rig {
    hosted: HostedServer,
    client: Arc<PayingClient>,
    _dir: tempfile::TempDir,
}

/// The sandbox, and a paying client of `service` (the sandbox's URL when `None`) whose
/// policy is `policy` (TOML lines of `[policy]`). The sandbox's test USDC sits at the Base
/// USDC address, an asset the wallet knows.
async fn rig_with(policy: &str, service: Option<&str>, approver: Arc<dyn Approver>) -> Rig {
    let hosted = sandbox::start(Setup::default()).await;
    client_for(hosted, policy, service, approver).await
}

async fn client_for(hosted: HostedServer, policy: &str, service: Option<&str>, approver: Arc<dyn Approver>) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("[service]\nurl = \"{}\"\n[policy]\n{policy}\n", service.unwrap_or(&hosted.base));
    let config = ClientConfig::parse(&text, None).unwrap();
    let ledger = Ledger::open_in(dir.path()).await.unwrap();
    let signer = hosted.chain.payer_signer();
    let keys: KeyLoader = Arc::new(move || Ok(signer.clone()));
    let chains = Arc::new(sandbox::sandbox_chains(&hosted.chain, &[]));
    let client = Arc::new(PayingClient::new(Arc::new(config), ledger, keys, approver, chains));
    Rig { hosted, client, _dir: dir }
}

async fn rig(policy: &str) -> Rig {
    rig_with(policy, None, Arc::new(NobodyToAsk)).await
}

const CAPPED: &str = "networks = { \"eip155:8453\" = \"1.00\" }";

fn caller() -> Caller {
    Caller { front_door: "http", client: Some("test-agent".into()) }
}

/// A gas price read from `caller`, stopped by `stop`.
fn gas_request<'a>(caller: &'a Caller, stop: paperchain_engine::cancel::Stop) -> Outgoing<'a> {
    Outgoing {
        operation: "get_gas_price",
        path: GAS,
        body: json!({"chain": "base"}).to_string().into(),
        caller,
        approver: None,
        stop,
    }
}

/// A Solana status read from `caller`.
fn solana_status_request(caller: &Caller) -> Outgoing<'_> {
    Outgoing {
        operation: "get_solana_status",
        path: "/v1/solana/status",
        body: "{}".into(),
        caller,
        approver: None,
        stop: Default::default(),
    }
}

async fn gas(client: &PayingClient) -> Result<paperchain_wallet::client::HostedAnswer, CallError> {
    let caller = caller();
    client.call(&gas_request(&caller, Default::default())).await
}

/// The sandbox's quote for the gas route, in atomic units.
async fn quote(hosted: &HostedServer) -> u64 {
    let response = hosted.post(GAS, &json!({"chain": "base"}), &[]).await;
    assert_eq!(response.status(), 402);
    let required: Value = response.json().await.unwrap();
    required["accepts"][0]["amount"].as_str().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paid_call_moves_exactly_the_quote_and_the_ledger_matches_the_chain() {
    let rig = rig(CAPPED).await;
    let price = quote(&rig.hosted).await;
    let (payer_before, payee_before) = rig.hosted.balances().await;
    let answer = gas(&rig.client).await.unwrap();
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    let body: Value = serde_json::from_slice(&answer.body).unwrap();
    assert!(body.get("gas_price_wei").is_some() || body.is_object(), "{body}");
    let paid = answer.paid.clone().expect("the call was paid");
    assert_eq!(paid.amount, price.to_string());
    assert_eq!(rig.hosted.tx_succeeded(&paid.tx).await, Some(true), "the settlement's transaction is on chain");
    let (payer_after, payee_after) = rig.hosted.balances().await;
    assert_eq!(payer_before - payer_after, U256::from(price));
    assert_eq!(payee_after - payee_before, U256::from(price));
    let row = rig.client.ledger().get(&answer.call_id).await.unwrap().unwrap();
    assert_eq!((row.state.as_str(), row.ran.as_str(), row.status), ("paid", "hosted", Some(200)));
    assert_eq!(row.tx.as_deref(), Some(paid.tx.as_str()));
    assert_eq!(row.amount.as_deref(), Some(price.to_string().as_str()));
    assert_eq!(row.payer.as_deref(), Some(rig.hosted.chain.payer().to_checksum(None).as_str()));
    assert_eq!(row.client.as_deref(), Some("test-agent"));
    // The reconciliation agrees with the chain.
    let chains = sandbox::sandbox_chains(&rig.hosted.chain, &[]);
    let checks =
        paperchain_wallet::reconcile::reconcile(rig.client.ledger(), &chains, &Clusters::from_env(), 0).await.unwrap();
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0].verdict, "ok", "{:?}", checks[0]);
}

const SOLANA: &str = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";

/// A paying client of `service` that pays on Solana only (Base, offered first, has no cap)
/// with the sandbox's Solana payer, its ledger in `dir`.
async fn solana_client(hosted: &HostedServer, service: &str, dir: &std::path::Path) -> PayingClient {
    let solana = hosted.solana.as_ref().expect("the sandbox's Solana side");
    let text = format!("[service]\nurl = \"{service}\"\n[policy]\nnetworks = {{ \"{SOLANA}\" = \"1.00\" }}\n");
    let config = ClientConfig::parse(&text, None).unwrap();
    let ledger = Ledger::open_in(dir).await.unwrap();
    let keys: KeyLoader = Arc::new(|| Err("no EVM key in this test".into()));
    let payer_key = solana.payer_key();
    let solana_keys: paperchain_wallet::client::SolanaKeyLoader = Arc::new(move || Ok(payer_key.clone()));
    let chains = Arc::new(sandbox::sandbox_chains(&hosted.chain, &[]));
    PayingClient::new(Arc::new(config), ledger, keys, Arc::new(NobodyToAsk), chains)
        .with_solana(solana_keys, Arc::new(solana.clusters()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_solana_a_lost_paid_answer_is_found_by_its_memo_and_not_paid_twice() {
    let hosted = sandbox::start(Setup { solana: true, ..Setup::default() }).await;
    let solana = hosted.solana.as_ref().expect("the sandbox's Solana side");
    let (proxy, sent) = dropping_proxy(&hosted, true).await;
    let dir = tempfile::tempdir().unwrap();
    let client = solana_client(&hosted, &proxy, dir.path()).await;
    let before = solana.balance_of(&solana.payer()).await.unwrap();
    let caller = caller();
    let request = solana_status_request(&caller);
    let error = client.call(&request).await.unwrap_err();
    let CallError::PaidAnswerLost { tx, call_id, .. } = &error else { panic!("{error}") };
    let sent = sent.lock().await.clone();
    assert!(sent.len() >= 2, "the payment was sent again: {}", sent.len());
    assert!(sent.iter().all(|t| *t == sent[0]), "one transaction, sent again, never a second");
    let after = solana.balance_of(&solana.payer()).await.unwrap();
    let price: u64 = client.ledger().get(call_id).await.unwrap().unwrap().amount.unwrap().parse().unwrap();
    assert_eq!(before - after, price, "paid exactly once");
    let rows = client.ledger().rows(0).await.unwrap();
    let paid: Vec<_> = rows.iter().filter(|r| r.state == "paid").collect();
    assert_eq!(paid.len(), 1, "{rows:?}");
    assert_eq!((&paid[0].call_id, paid[0].tx.as_deref()), (call_id, Some(tx.as_str())));
    let hosted_tx = hosted.paywall.store().recent(10).await.unwrap().into_iter().find_map(|r| r.tx_hash);
    assert_eq!(hosted_tx.as_deref(), Some(tx.as_str()), "the hosted ledger has the same transaction");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_solana_a_paid_call_moves_exactly_the_quote_and_both_ledgers_agree() {
    let hosted = sandbox::start(Setup { solana: true, ..Setup::default() }).await;
    let solana = hosted.solana.as_ref().expect("the sandbox's Solana side");
    let dir = tempfile::tempdir().unwrap();
    let clusters = Arc::new(solana.clusters());
    let client = solana_client(&hosted, &hosted.base, dir.path()).await;

    let response = hosted.post("/v1/solana/status", &json!({}), &[]).await;
    let required: Value = response.json().await.unwrap();
    let offer = required["accepts"].as_array().unwrap().iter().find(|r| r["network"] == SOLANA).unwrap().clone();
    let price: u64 = offer["amount"].as_str().unwrap().parse().unwrap();
    let before =
        (solana.balance_of(&solana.payer()).await.unwrap(), solana.balance_of(&solana.pay_to()).await.unwrap());

    let caller = caller();
    let request = solana_status_request(&caller);
    let answer = client.call(&request).await.unwrap();
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    let paid = answer.paid.clone().expect("the call was paid");
    assert_eq!((paid.network.as_str(), paid.amount.as_str()), (SOLANA, price.to_string().as_str()));
    assert_eq!(paid.payer, solana.payer());
    assert_eq!(paid.payee, solana.pay_to());
    let after = (solana.balance_of(&solana.payer()).await.unwrap(), solana.balance_of(&solana.pay_to()).await.unwrap());
    assert_eq!(before.0 - after.0, price, "the payer paid exactly the quote");
    assert_eq!(after.1 - before.1, price, "the payee got exactly the quote");

    // The wallet's ledger and the hosted one agree: one payment, same transaction, payer, amount.
    let row = client.ledger().get(&answer.call_id).await.unwrap().unwrap();
    assert_eq!((row.state.as_str(), row.ran.as_str(), row.status), ("paid", "hosted", Some(200)));
    assert_eq!(row.tx.as_deref(), Some(paid.tx.as_str()));
    assert_eq!(row.network.as_deref(), Some(SOLANA));
    assert_eq!(row.amount.as_deref(), Some(price.to_string().as_str()));
    assert_eq!(row.payer.as_deref(), Some(solana.payer().as_str()));
    let hosted_rows = hosted.paywall.store().recent(10).await.unwrap();
    let settled: Vec<_> = hosted_rows.iter().filter(|r| r.tx_hash.is_some()).collect();
    assert_eq!(settled.len(), 1, "one settled payment on the hosted side: {hosted_rows:?}");
    assert_eq!(settled[0].tx_hash.as_deref(), Some(paid.tx.as_str()));
    assert_eq!(settled[0].payer.as_deref(), Some(solana.payer().as_str()));
    assert_eq!(settled[0].quote, Some(price));
    // The transaction is found on chain by the memo the ledger keeps, as a lost answer would be.
    let memo = row.nonce.as_deref().expect("the memo");
    let found = paperchain_wallet::chain::solana_payment(&clusters, SOLANA, &solana.payer(), memo).await.unwrap();
    assert_eq!(found.as_deref(), Some(paid.tx.as_str()));
    let other = paperchain_wallet::chain::solana_payment(&clusters, SOLANA, &solana.payer(), "00ff").await.unwrap();
    assert_eq!(other, None);
    // The reconciliation finds the transfer on chain as the ledger has it.
    let chains = sandbox::sandbox_chains(&hosted.chain, &[]);
    let checks = paperchain_wallet::reconcile::reconcile(client.ledger(), &chains, &clusters, 0).await.unwrap();
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0].verdict, "ok", "{:?}", checks[0]);
}

/// Balances, and that the sandbox's facilitator saw nothing: both unchanged.
async fn assert_nothing_paid(rig: &Rig, before: (U256, U256)) {
    assert_eq!(rig.hosted.balances().await, before, "no money moved");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_refuses_before_any_signature() {
    let base = sandbox::start(Setup::default()).await;
    let price = quote(&base).await;
    let under = format!("{:.6}", (price - 1) as f64 / 1e6);
    // An offer in an asset the wallet does not pay in: the sandbox's own, at another address.
    let (other_asset, payments) =
        refusing_server(&base, None, Some("0x9999999999999999999999999999999999999999")).await;
    let cases: Vec<(String, Option<&str>, &str)> = vec![
        (format!("per_call = \"{under}\"\n{CAPPED}"), None, "allowed per call"),
        (format!("hosts = [\"api.paperchain.example\"]\n{CAPPED}"), None, "is not a hosted service this wallet pays"),
        (
            format!("payees = [\"0x2222222222222222222222222222222222222222\"]\n{CAPPED}"),
            None,
            "is not in policy.payees",
        ),
        (CAPPED.to_string(), Some(&other_asset), "is not one this wallet pays in"),
        (String::new(), None, "a main network: nothing is paid there until a day cap is set"),
    ];
    let mut hosted = Some(base);
    for (policy, service, expected) in cases {
        let server = match hosted.take() {
            Some(server) => server,
            None => sandbox::start(Setup::default()).await,
        };
        let rig = client_for(server, &policy, service, Arc::new(NobodyToAsk)).await;
        let before = rig.hosted.balances().await;
        let error = gas(&rig.client).await.unwrap_err();
        assert!(matches!(error, CallError::Policy(_)), "{policy}: {error}");
        assert!(error.to_string().contains(expected), "{policy}: {error}");
        assert_nothing_paid(&rig, before).await;
        let rows = rig.client.ledger().rows(0).await.unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].state, "failed");
        assert!(rows[0].nonce.is_none() && rows[0].payer.is_none(), "nothing was signed: {:?}", rows[0]);
        hosted = Some(rig.hosted);
    }
    assert_eq!(payments.load(Ordering::SeqCst), 0, "no payment reached the server");
}

struct Deny;

impl Approver for Deny {
    fn approve<'a>(&'a self, approval: &'a Approval) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move { Err(format!("the user said no to {}", approval.description)) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn above_the_threshold_the_user_decides() {
    let policy = format!("approve_above = \"0.000001\"\n{CAPPED}");
    let rig = rig_with(&policy, None, Arc::new(Deny)).await;
    let before = rig.hosted.balances().await;
    let error = gas(&rig.client).await.unwrap_err();
    assert!(matches!(error, CallError::Policy(Refusal::Approval(_))), "{error}");
    assert!(error.to_string().contains("the user said no"), "{error}");
    assert_nothing_paid(&rig, before).await;
    // Nothing to ask: refused, saying so.
    let rig = client_for(rig.hosted, &policy, None, Arc::new(NobodyToAsk)).await;
    let error = gas(&rig.client).await.unwrap_err().to_string();
    assert!(error.contains("nothing here can ask"), "{error}");
    assert_nothing_paid(&rig, before).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_cannot_together_pass_the_day_cap() {
    let hosted = sandbox::start(Setup::default()).await;
    let price = quote(&hosted).await;
    // Room for exactly three calls, and less than a fourth.
    let cap = format!("{:.6}", (3 * price + price / 2) as f64 / 1e6);
    let rig = client_for(hosted, &format!("per_day = \"{cap}\"\n{CAPPED}"), None, Arc::new(NobodyToAsk)).await;
    let (payer_before, _) = rig.hosted.balances().await;
    let calls: Vec<_> = (0..20)
        .map(|_| {
            let client = rig.client.clone();
            tokio::spawn(async move { gas(&client).await })
        })
        .collect();
    let mut paid = 0;
    let mut capped = 0;
    for call in calls {
        match call.await.unwrap() {
            Ok(answer) => {
                assert!(answer.paid.is_some());
                paid += 1;
            }
            Err(CallError::Policy(Refusal::Cap(why))) => {
                assert!(why.contains("policy.per_day"), "{why}");
                capped += 1;
            }
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!((paid, capped), (3, 17));
    let (payer_after, _) = rig.hosted.balances().await;
    assert_eq!(payer_before - payer_after, U256::from(3 * price));
}

/// A loopback x402 server that answers every call 402 with the sandbox's offer, and a paid
/// one with `second` (a `price_mismatch`, or the same request again); counts the payments.
/// `asset` replaces the offer's asset.
async fn refusing_server(
    hosted: &HostedServer,
    second: Option<&'static str>,
    asset: Option<&str>,
) -> (String, Arc<AtomicUsize>) {
    let response = hosted.post(GAS, &json!({"chain": "base"}), &[]).await;
    let mut required: Value = response.json().await.unwrap();
    if let Some(asset) = asset {
        required["accepts"][0]["asset"] = json!(asset);
    }
    let payments = Arc::new(AtomicUsize::new(0));
    let counter = payments.clone();
    let router = axum::Router::new().route(
        GAS,
        axum::routing::post(move |request: Request| {
            let counter = counter.clone();
            let mut required = required.clone();
            async move {
                if request.headers().contains_key("payment-signature") {
                    counter.fetch_add(1, Ordering::SeqCst);
                    if let Some(error) = second {
                        required["error"] = json!(error);
                    }
                }
                let header = paperchain_protocol_encode(&required);
                Response::builder()
                    .status(402)
                    .header("content-type", "application/json")
                    .header("payment-required", header)
                    .body(Body::from(required.to_string()))
                    .unwrap()
            }
        }),
    );
    let (listener, _, base) = loopback_listener().await;
    spawn_router(listener, router);
    (base, payments)
}

fn paperchain_protocol_encode(value: &Value) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(value.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_payment_or_a_second_402_gets_no_second_signature() {
    let mut hosted = Some(sandbox::start(Setup::default()).await);
    for second in [Some("price_mismatch"), None] {
        let server = hosted.take().unwrap();
        let (fake, payments) = refusing_server(&server, second, None).await;
        let rig = client_for(server, CAPPED, Some(&fake), Arc::new(NobodyToAsk)).await;
        let before = rig.hosted.balances().await;
        let error = gas(&rig.client).await.unwrap_err();
        let CallError::PaymentRefused { reason, chain } = &error else { panic!("{second:?}: {error}") };
        assert_eq!(reason, second.unwrap_or("402 again"));
        assert!(chain.contains("unused"), "the chain was asked: {chain}");
        assert_eq!(payments.load(Ordering::SeqCst), 1, "{second:?}: one signature, never a second");
        assert_nothing_paid(&rig, before).await;
        let rows = rig.client.ledger().rows(0).await.unwrap();
        assert_eq!(rows[0].state, "unsettled", "counted until the authorization expires: {:?}", rows[0]);
        hosted = Some(rig.hosted);
    }
}

/// A proxy in front of the sandbox that drops the first paid answer after the sandbox
/// settled it; records the nonce (the transaction on Solana) of every payment it forwards. With `hide_identifier` it
/// takes the `payment-identifier` extension out of the 402s: a service without it.
async fn dropping_proxy(hosted: &HostedServer, hide_identifier: bool) -> (String, Arc<Mutex<Vec<String>>>) {
    let nonces = Arc::new(Mutex::new(Vec::new()));
    let upstream = hosted.base.clone();
    let client = hosted.client.clone();
    let seen = nonces.clone();
    let router = axum::Router::new().fallback(move |State(()): State<()>, request: Request| {
        let (upstream, client, seen) = (upstream.clone(), client.clone(), seen.clone());
        async move {
            let path = request.uri().path().to_string();
            let payment = request.headers().get("payment-signature").and_then(|v| v.to_str().ok()).map(str::to_string);
            let body = axum::body::to_bytes(request.into_body(), usize::MAX).await.unwrap();
            let mut forward =
                client.post(format!("{upstream}{path}")).header("content-type", "application/json").body(body);
            let mut first_paid = false;
            if let Some(payment) = &payment {
                let (payload, _) = paperchain_protocol::x402::decode_payment(payment).unwrap();
                let mut seen = seen.lock().await;
                first_paid = seen.is_empty();
                // What identifies the signed payment: the EIP-3009 nonce, or the whole Solana transaction.
                let signed = &payload["payload"];
                let id = signed["authorization"]["nonce"].as_str().or(signed["transaction"].as_str());
                seen.push(id.expect("a nonce or a transaction").to_string());
                forward = forward.header("payment-signature", payment);
            }
            let answer = forward.send().await.unwrap();
            let status = answer.status();
            let mut headers = answer.headers().clone();
            let mut bytes = answer.bytes().await.unwrap();
            if hide_identifier && status == 402 {
                let mut required: Value = serde_json::from_slice(&bytes).unwrap();
                if let Some(extensions) = required["extensions"].as_object_mut() {
                    extensions.remove("payment-identifier");
                }
                bytes = required.to_string().into();
                headers.insert("payment-required", paperchain_protocol_encode(&required).parse().unwrap());
            }
            let mut response = if first_paid {
                // Settled upstream; the connection breaks before the answer arrives.
                Response::new(Body::from_stream(futures::stream::once(async {
                    Err::<bytes::Bytes, _>(std::io::Error::other("dropped"))
                })))
            } else {
                Response::new(Body::from(bytes))
            };
            *response.status_mut() = status;
            for (name, value) in &headers {
                if name != "content-length" && name != "transfer-encoding" {
                    response.headers_mut().insert(name, value.clone());
                }
            }
            response
        }
    });
    let (listener, _, base) = loopback_listener().await;
    spawn_router(listener, router.with_state(()));
    (base, nonces)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_paid_answer_is_answered_again_by_the_service_and_paid_once() {
    let hosted = sandbox::start(Setup::default()).await;
    let price = quote(&hosted).await;
    let (proxy, nonces) = dropping_proxy(&hosted, false).await;
    let rig = client_for(hosted, CAPPED, Some(&proxy), Arc::new(NobodyToAsk)).await;
    let (payer_before, _) = rig.hosted.balances().await;
    // The sandbox supports payment-identifier: the resent payment gets the answer.
    let answer = gas(&rig.client).await.unwrap();
    assert_eq!(answer.status, 200);
    let paid = answer.paid.clone().expect("paid");
    let nonces = nonces.lock().await.clone();
    assert!(nonces.len() >= 2, "the payment was sent again: {nonces:?}");
    assert!(nonces.iter().all(|n| *n == nonces[0]), "one authorization, sent again, never a second: {nonces:?}");
    let (payer_after, _) = rig.hosted.balances().await;
    assert_eq!(payer_before - payer_after, U256::from(price), "paid exactly once");
    assert_eq!(rig.hosted.tx_succeeded(&paid.tx).await, Some(true));
    let rows = rig.client.ledger().rows(0).await.unwrap();
    let paid_rows: Vec<_> = rows.iter().filter(|r| r.state == "paid").collect();
    assert_eq!(paid_rows.len(), 1, "{rows:?}");
    assert_eq!((&paid_rows[0].call_id, paid_rows[0].tx.as_deref()), (&answer.call_id, Some(paid.tx.as_str())));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_paid_answer_from_a_service_without_identifiers_is_not_paid_twice() {
    let hosted = sandbox::start(Setup::default()).await;
    let price = quote(&hosted).await;
    let (proxy, nonces) = dropping_proxy(&hosted, true).await;
    let rig = client_for(hosted, CAPPED, Some(&proxy), Arc::new(NobodyToAsk)).await;
    let (payer_before, _) = rig.hosted.balances().await;
    let error = gas(&rig.client).await.unwrap_err();
    let CallError::PaidAnswerLost { tx, call_id, .. } = &error else { panic!("{error}") };
    let nonces = nonces.lock().await.clone();
    assert!(nonces.len() >= 2, "the payment was sent again: {nonces:?}");
    assert!(nonces.iter().all(|n| *n == nonces[0]), "one authorization, sent again, never a second: {nonces:?}");
    let (payer_after, _) = rig.hosted.balances().await;
    assert_eq!(payer_before - payer_after, U256::from(price), "paid exactly once");
    assert_eq!(rig.hosted.tx_succeeded(tx).await, Some(true));
    let rows = rig.client.ledger().rows(0).await.unwrap();
    let paid: Vec<_> = rows.iter().filter(|r| r.state == "paid").collect();
    assert_eq!(paid.len(), 1, "{rows:?}");
    assert_eq!((&paid[0].call_id, paid[0].tx.as_deref()), (call_id, Some(tx.as_str())));
}

/// A server that advertises the spec's `payment-identifier` extension: it drops the first
/// paid answer, and answers a payment it has seen (same id) from its cache.
async fn idempotent_server(hosted: &HostedServer) -> (String, Arc<Mutex<Vec<(String, String)>>>) {
    let response = hosted.post(GAS, &json!({"chain": "base"}), &[]).await;
    let mut required: Value = response.json().await.unwrap();
    required["extensions"] = json!({"payment-identifier": {"info": {"required": false}, "schema": {"type": "object"}}});
    let seen = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let log = seen.clone();
    let router = axum::Router::new().route(
        GAS,
        axum::routing::post(move |request: Request| {
            let (required, log) = (required.clone(), log.clone());
            async move {
                let Some(payment) = request.headers().get("payment-signature").and_then(|v| v.to_str().ok()) else {
                    return Response::builder()
                        .status(402)
                        .header("payment-required", paperchain_protocol_encode(&required))
                        .body(Body::from(required.to_string()))
                        .unwrap();
                };
                let (payload, _) = paperchain_protocol::x402::decode_payment(payment).unwrap();
                let id = payload["extensions"]["payment-identifier"]["info"]["id"].as_str().unwrap_or("").to_string();
                let nonce = payload["payload"]["authorization"]["nonce"].as_str().unwrap().to_string();
                let mut log = log.lock().await;
                let first = log.is_empty();
                log.push((id, nonce));
                let settlement = json!({"success": true, "network": "eip155:8453",
                    "transaction": format!("0x{}", "ab".repeat(32)), "payer": payload["payload"]["authorization"]["from"]});
                let body = if first {
                    Body::from_stream(futures::stream::once(async {
                        Err::<bytes::Bytes, _>(std::io::Error::other("dropped"))
                    }))
                } else {
                    Body::from(json!({"chain": "base", "cached": true}).to_string())
                };
                Response::builder()
                    .status(200)
                    .header("content-type", "application/json")
                    .header("payment-response", paperchain_protocol_encode(&settlement))
                    .body(body)
                    .unwrap()
            }
        }),
    );
    let (listener, _, base) = loopback_listener().await;
    spawn_router(listener, router);
    (base, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_with_payment_identifiers_answers_the_resent_payment_from_its_cache() {
    let hosted = sandbox::start(Setup::default()).await;
    let (server, seen) = idempotent_server(&hosted).await;
    let rig = client_for(hosted, CAPPED, Some(&server), Arc::new(NobodyToAsk)).await;
    let answer = gas(&rig.client).await.unwrap();
    assert_eq!(answer.status, 200);
    assert_eq!(serde_json::from_slice::<Value>(&answer.body).unwrap()["cached"], true);
    let seen = seen.lock().await.clone();
    assert_eq!(seen.len(), 2, "sent once, resent once: {seen:?}");
    assert_eq!(seen[0], seen[1], "the same payment id and nonce both times");
    assert_eq!(seen[0].0, answer.call_id, "the payment id is the ledger's call id");
    assert!((16..=128).contains(&seen[0].0.len()), "the spec's id length: {}", seen[0].0);
    let row = rig.client.ledger().get(&answer.call_id).await.unwrap().unwrap();
    assert_eq!(row.state, "paid");
}

/// Never answers: a user who has not looked at the dialog yet.
struct Waiting;

impl Approver for Waiting {
    fn approve<'a>(&'a self, _: &'a Approval) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_stopped_before_its_payment_is_signed_pays_nothing() {
    let rig = rig_with(&format!("{CAPPED}\napprove_above = \"0.000001\""), None, Arc::new(Waiting)).await;
    let before = rig.hosted.balances().await;
    let caller = caller();
    let stop = paperchain_engine::cancel::Stop::new();
    let request = gas_request(&caller, stop.clone());
    // The caller goes away while the payment waits for the user's approval.
    let stopping = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        stop.stop(paperchain_engine::cancel::Why::Cancelled);
    });
    let error = rig.client.call(&request).await.unwrap_err();
    stopping.await.unwrap();
    assert!(matches!(error, CallError::Stopped(paperchain_engine::cancel::Why::Cancelled)), "{error}");
    assert!(error.to_string().contains("nothing was paid"), "{error}");
    assert_eq!(rig.hosted.balances().await, before, "nothing moved");
    let rows = rig.client.ledger().rows(0).await.unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!((rows[0].state.as_str(), rows[0].nonce.as_deref()), ("cancelled", None), "{rows:?}");
}

/// A proxy to the sandbox that holds each paid request for a second before passing it on,
/// and tells `signed` when one arrives: the signature has left the client by then.
async fn slow_paid_proxy(hosted: &HostedServer, signed: Arc<tokio::sync::Notify>) -> String {
    let (upstream, client) = (hosted.base.clone(), hosted.client.clone());
    let router = axum::Router::new().fallback(move |State(()): State<()>, request: Request| {
        let (upstream, client, signed) = (upstream.clone(), client.clone(), signed.clone());
        async move {
            let path = request.uri().path().to_string();
            let payment = request.headers().get("payment-signature").cloned();
            let body = axum::body::to_bytes(request.into_body(), usize::MAX).await.unwrap();
            let mut forward =
                client.post(format!("{upstream}{path}")).header("content-type", "application/json").body(body);
            if let Some(payment) = payment {
                signed.notify_one();
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                forward = forward.header("payment-signature", payment);
            }
            let answer = forward.send().await.unwrap();
            let mut response = Response::builder().status(answer.status());
            for (name, value) in answer.headers() {
                response = response.header(name, value);
            }
            response.body(Body::from(answer.bytes().await.unwrap())).unwrap()
        }
    });
    let (listener, _, base) = loopback_listener().await;
    spawn_router(listener, router.with_state(()));
    base
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_stopped_after_its_payment_is_signed_is_recorded_with_its_payment() {
    let hosted = sandbox::start(Setup::default()).await;
    let signed = Arc::new(tokio::sync::Notify::new());
    let proxy = slow_paid_proxy(&hosted, signed.clone()).await;
    let rig = client_for(hosted, CAPPED, Some(&proxy), Arc::new(NobodyToAsk)).await;
    let price = quote(&rig.hosted).await;
    let (payer_before, _) = rig.hosted.balances().await;
    let caller = caller();
    let stop = paperchain_engine::cancel::Stop::new();
    let request = gas_request(&caller, stop.clone());
    let stopping = tokio::spawn(async move {
        signed.notified().await;
        stop.stop(paperchain_engine::cancel::Why::Cancelled);
    });
    // Once signed, the call goes on to its answer: the payment is not lost, nor made twice.
    let answer = rig.client.call(&request).await.unwrap();
    stopping.await.unwrap();
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    let paid = answer.paid.clone().expect("paid");
    assert_eq!(paid.amount, price.to_string());
    let (payer_after, _) = rig.hosted.balances().await;
    assert_eq!(payer_before - payer_after, U256::from(price), "paid once");
    let row = rig.client.ledger().get(&answer.call_id).await.unwrap().unwrap();
    assert_eq!((row.state.as_str(), row.tx.as_deref()), ("paid", Some(paid.tx.as_str())), "{row:?}");
    let error = row.error.unwrap_or_default();
    assert!(error.contains("cancelled after its payment was signed"), "{error}");
}
