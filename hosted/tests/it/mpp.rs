//! MPP on the sandbox: every 402 carries one `WWW-Authenticate: Payment` challenge (`evm`
//! charge of the quote in the test USDC, bound to the request, expiring), a signed EIP-3009
//! credential in `Authorization: Payment` is settled on chain and answered with a
//! `Payment-Receipt`, and every credential that cannot pay for this call (reused, malformed,
//! altered, issued for another request or amount, expired) gets a 402 with a fresh
//! challenge and the reason, with no money moved.
//!
//! The server runs with a known `PAPERCHAIN_MPP_SECRET`, so a test can issue challenges the
//! server honours (another amount, an expiry in the past) the way a second server behind the
//! same name would.

use alloy::primitives::{Address, U256};
use alloy::signers::local::PrivateKeySigner;
use base64::Engine as _;
use mpp::PaymentChallenge;
use paperchain_hosted::mpp::{RequestBinding, now_unix};
use paperchain_hosted::store::Outcome;
use paperchain_protocol::mpp::sign_evm_credential;
use paperchain_testkit::sandbox::{self, HostedServer, Setup};
use paperchain_testkit::x402::sign_x402;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

/// The server's MPP secret (test value).
const SECRET: [u8; 32] = [0x5a; 32];
const BALANCE: &str = "/v1/chain/balance";

async fn server() -> HostedServer {
    sandbox::start(Setup { env: vec![("PAPERCHAIN_MPP_SECRET", hex::encode(SECRET))], ..Setup::default() }).await
}

/// A chain read of `who`'s balance: cheap, and the body differs per address.
fn balance_body(who: Address) -> Vec<u8> {
    serde_json::to_vec(&json!({"chain": "base", "address": who.to_checksum(None)})).unwrap()
}

/// POSTs exactly `body` (the challenge binds these bytes) with `headers`.
async fn post(server: &HostedServer, path: &str, body: &[u8], headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = server
        .client
        .post(format!("{}{path}", server.base))
        .header("content-type", "application/json")
        .body(body.to_vec());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

/// A 402 as the client sees it.
struct Refusal {
    body: Value,
    challenges: Vec<String>,
    cache_control: String,
}

async fn refusal(response: reqwest::Response) -> Refusal {
    assert_eq!(response.status(), 402, "expected a 402");
    let header = |name: &str| -> Vec<String> {
        response.headers().get_all(name).iter().map(|v| v.to_str().unwrap().to_string()).collect()
    };
    let challenges = header("www-authenticate");
    let cache_control = header("cache-control").join(", ");
    Refusal { body: response.json().await.unwrap(), challenges, cache_control }
}

impl Refusal {
    /// The one challenge, checked to be ours and to bind `path` and `body` at `price`.
    fn challenge(&self, server: &HostedServer, path: &str, body: &[u8], price: &str) -> PaymentChallenge {
        assert_eq!(self.challenges.len(), 1, "exactly one Payment challenge: {:?}", self.challenges);
        assert_eq!(self.cache_control, "no-store", "a 402 is never cached");
        let challenge = mpp::parse_www_authenticate(&self.challenges[0]).expect("a Payment challenge");
        assert!(challenge.verify(&hex::encode(SECRET)), "the id is the server's HMAC");
        assert_eq!(challenge.realm, "127.0.0.1");
        assert_eq!(challenge.method.as_str(), "evm");
        assert_eq!(challenge.intent.as_str(), "charge");
        let request = challenge.request.decode_value().expect("the charge request");
        assert_eq!(request["amount"], price, "{request}");
        let address = |key: &str| request[key].as_str().unwrap().parse::<Address>().unwrap();
        assert_eq!(address("currency"), server.chain.token());
        assert_eq!(address("recipient"), server.chain.pay_to());
        assert_eq!(request["methodDetails"]["chainId"], 8453);
        assert_eq!(request["methodDetails"]["credentialTypes"], json!(["authorization"]));
        let expires = challenge.expires_at().expect("`expires`").unix_timestamp();
        let now = i64::try_from(now_unix()).unwrap();
        assert!(expires > now && expires <= now + 300, "expires {expires}, now {now}");
        let digest = format!("sha-256=:{}:", base64::engine::general_purpose::STANDARD.encode(Sha256::digest(body)));
        assert_eq!(challenge.digest.as_deref(), Some(digest.as_str()), "bound to the body");
        let opaque = challenge.opaque.as_ref().expect("`opaque`").decode_value().unwrap();
        assert_eq!(
            (&opaque["method"], &opaque["path"]),
            (&json!("POST"), &json!(path)),
            "bound to the method and path"
        );
        assert_eq!(opaque["nonce"].as_str().map(str::len), Some(32), "every challenge is new: {opaque}");
        challenge
    }

    /// The quote in the x402 requirements (atomic units).
    fn quote(&self) -> String {
        self.body["accepts"][0]["amount"].as_str().unwrap().to_string()
    }

    fn error(&self) -> &str {
        self.body["error"].as_str().unwrap_or("")
    }
}

fn pay(challenge: &str, signer: &PrivateKeySigner) -> String {
    sign_evm_credential(challenge, signer, "USD Coin", "2").expect("the client signs the challenge")
}

/// Decodes an `Authorization: Payment` credential, lets `edit` change its JSON, encodes it again.
fn tamper(authorization: &str, edit: impl FnOnce(&mut Value)) -> String {
    let token = authorization.strip_prefix("Payment ").expect("Payment scheme");
    let mut json: Value = serde_json::from_slice(&mpp::base64url_decode(token).unwrap()).unwrap();
    edit(&mut json);
    format!("Payment {}", mpp::base64url_encode(json.to_string().as_bytes()))
}

async fn latest(server: &HostedServer) -> paperchain_hosted::store::Decision {
    server.paywall.store().recent(1).await.unwrap().remove(0)
}

fn units(text: &str) -> U256 {
    U256::from_str_radix(text, 10).unwrap()
}

#[tokio::test]
async fn every_402_carries_one_evm_charge_challenge_for_the_quote() {
    let server = server().await;
    let body = balance_body(server.chain.payer());
    let unpaid = refusal(post(&server, BALANCE, &body, &[]).await).await;
    assert!(unpaid.body.get("error").is_none(), "{}", unpaid.body);
    let quote = unpaid.quote();
    unpaid.challenge(&server, BALANCE, &body, &quote);

    // An invalid input is quoted at the route's base price, and that 402 offers MPP too.
    let invalid = br#"{"chain":"base"}"#;
    let refused = refusal(post(&server, BALANCE, invalid, &[]).await).await;
    assert!(refused.error().starts_with("invalid_input"), "{}", refused.body);
    refused.challenge(&server, BALANCE, invalid, &refused.quote());

    // Another path, another binding.
    let gas = br#"{"chain":"base"}"#;
    let other = refusal(post(&server, "/v1/chain/gas", gas, &[]).await).await;
    let other_challenge = other.challenge(&server, "/v1/chain/gas", gas, &other.quote());
    assert_ne!(other_challenge.id, mpp::parse_www_authenticate(&unpaid.challenges[0]).unwrap().id);
}

#[tokio::test]
async fn an_evm_credential_settles_once_and_is_answered_with_a_receipt() {
    let server = server().await;
    let body = balance_body(server.chain.payer());
    let unpaid = refusal(post(&server, BALANCE, &body, &[]).await).await;
    let quote = unpaid.quote();
    let challenge = unpaid.challenge(&server, BALANCE, &body, &quote);
    let credential = pay(&unpaid.challenges[0], &server.chain.payer_signer());
    let (payer_before, payee_before) = server.balances().await;

    let response = post(&server, BALANCE, &body, &[("authorization", &credential)]).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "private", "a paid answer is the payer's alone");
    assert!(response.headers().get("payment-response").is_none(), "MPP is answered with Payment-Receipt only");
    let receipt = response.headers()["payment-receipt"].to_str().unwrap().to_string();
    let receipt: Value = serde_json::from_slice(&mpp::base64url_decode(&receipt).expect("base64url")).expect("JSON");
    assert_eq!(receipt["method"], "evm", "{receipt}");
    assert_eq!(receipt["status"], "success");
    assert_eq!(receipt["challengeId"], challenge.id.as_str());
    assert_eq!(receipt["chainId"], 8453);
    let tx = receipt["reference"].as_str().expect("reference");
    assert_eq!(sandbox::tx_succeeded(&server.chain, tx).await, Some(true), "the reference is a mined, successful tx");
    let answer: Value = response.json().await.unwrap();
    assert!(answer.is_object(), "{answer}");

    let (payer_after, payee_after) = server.balances().await;
    assert_eq!(payer_before - payer_after, units(&quote), "the payer paid the quote");
    assert_eq!(payee_after - payee_before, units(&quote), "the payee got the quote");
    let row = latest(&server).await;
    assert_eq!(row.outcome, Outcome::MppPaid);
    assert_eq!(row.tx_hash.as_deref(), Some(tx));
    assert_eq!(row.quote, Some(quote.parse().unwrap()));
    assert_eq!(row.network.as_deref(), Some("eip155:8453"));
    assert_eq!(row.payer.map(|p| p.to_lowercase()), Some(server.chain.payer().to_string().to_lowercase()));

    // The same credential again: refused with a challenge, nothing moved. (That the
    // challenge is a new one is the_challenge_after_a_replay_is_never_the_spent_one.)
    let replay = refusal(post(&server, BALANCE, &body, &[("authorization", &credential)]).await).await;
    assert!(replay.error().starts_with("payment_already_used"), "{}", replay.body);
    replay.challenge(&server, BALANCE, &body, &quote);
    assert_eq!(server.balances().await, (payer_after, payee_after), "nothing moved");
    assert_eq!(latest(&server).await.outcome, Outcome::Replay);
    let totals = server.paywall.store().totals().await.unwrap();
    assert_eq!(totals.paid_calls, 1);
}

/// Waits until just after the next whole second, so that what follows runs within one
/// second (the challenges' `expires`, and so their ids, have one-second resolution).
async fn next_second() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1_000 - u64::from(now.subsec_millis()) + 5)).await;
    now_unix()
}

/// A reused credential is answered with a fresh challenge, which pays. The id is an HMAC
/// over `expires` (whole seconds) and the request, nothing else: a 402 answered within the
/// second the paid challenge was issued hands back the very challenge just spent, whose
/// nonce the replay guard (and the token) refuse for good.
#[tokio::test]
async fn the_challenge_after_a_replay_is_never_the_spent_one() {
    let server = server().await;
    let body = balance_body(server.chain.payer());
    for _ in 0..3 {
        let started = next_second().await;
        let unpaid = refusal(post(&server, BALANCE, &body, &[]).await).await;
        let spent = mpp::parse_www_authenticate(&unpaid.challenges[0]).unwrap().id;
        let credential = pay(&unpaid.challenges[0], &server.chain.payer_signer());
        assert_eq!(post(&server, BALANCE, &body, &[("authorization", &credential)]).await.status(), 200);
        let replay = refusal(post(&server, BALANCE, &body, &[("authorization", &credential)]).await).await;
        if now_unix() != started {
            continue; // too slow to land in one second; try again
        }
        let fresh = mpp::parse_www_authenticate(&replay.challenges[0]).unwrap();
        assert_ne!(fresh.id, spent, "the 402 after a replay offers the challenge that was just spent");
        let again = pay(&replay.challenges[0], &server.chain.payer_signer());
        let response = post(&server, BALANCE, &body, &[("authorization", &again)]).await;
        assert_eq!(response.status(), 200, "the fresh challenge pays: {}", response.text().await.unwrap());
        return;
    }
    panic!("could not issue, pay and replay within one second three times");
}

/// Two clients asking for the same call in the same second are two payments: the second
/// must not be refused as a replay of the first.
#[tokio::test]
async fn two_payers_quoted_in_the_same_second_can_both_pay() {
    let server = server().await;
    let second = PrivateKeySigner::random();
    server.chain.mint(second.address(), U256::from(1_000_000u64)).await.unwrap();
    let body = balance_body(server.chain.pay_to());
    for _ in 0..3 {
        let started = next_second().await;
        let first_402 = refusal(post(&server, BALANCE, &body, &[]).await).await;
        let second_402 = refusal(post(&server, BALANCE, &body, &[]).await).await;
        if now_unix() != started {
            continue;
        }
        let a = pay(&first_402.challenges[0], &server.chain.payer_signer());
        let b = pay(&second_402.challenges[0], &second);
        assert_eq!(post(&server, BALANCE, &body, &[("authorization", &a)]).await.status(), 200);
        let response = post(&server, BALANCE, &body, &[("authorization", &b)]).await;
        let status = response.status();
        assert_eq!(status, 200, "the second payer's own credential: {}", response.text().await.unwrap());
        return;
    }
    panic!("could not issue two challenges within one second three times");
}

#[tokio::test]
async fn credentials_that_cannot_pay_get_a_fresh_challenge_and_the_reason() {
    let server = server().await;
    let signer = server.chain.payer_signer();
    let body = balance_body(server.chain.payer());
    let unpaid = refusal(post(&server, BALANCE, &body, &[]).await).await;
    let quote = unpaid.quote();
    let good = pay(&unpaid.challenges[0], &signer);

    // Valid credentials for other requests, all at the same price.
    let other_body = balance_body(server.chain.pay_to());
    let other = refusal(post(&server, BALANCE, &other_body, &[]).await).await;
    assert_eq!(other.quote(), quote, "the same route prices both addresses alike");
    let for_other_body = pay(&other.challenges[0], &signer);
    let gas = br#"{"chain":"base"}"#;
    let for_other_path = pay(&refusal(post(&server, "/v1/chain/gas", gas, &[]).await).await.challenges[0], &signer);
    // A genuine challenge (the server's secret) for this very request at another price.
    let twin = sandbox::sandbox_mpp(&server.chain, SECRET);
    let binding = RequestBinding::new("POST", BALANCE, &body);
    let cheaper = twin.challenges_at(quote.parse::<u64>().unwrap() - 1, &binding, now_unix());
    let for_other_amount = pay(&cheaper[0], &signer);
    let stranger = PrivateKeySigner::random();
    server.chain.mint(stranger.address(), U256::from(1_000_000u64)).await.unwrap();

    let cases: Vec<(&str, String, &str, Outcome)> = vec![
        ("garbage", "Payment !!!not-base64!!!".into(), "malformed", Outcome::InvalidPayment),
        ("empty", "Payment x".into(), "malformed", Outcome::InvalidPayment),
        ("not JSON", format!("Payment {}", mpp::base64url_encode(b"not json")), "malformed", Outcome::InvalidPayment),
        (
            "auth-params instead of a token",
            r#"Payment id="abc", realm="127.0.0.1", method="evm", intent="charge""#.into(),
            "malformed",
            Outcome::InvalidPayment,
        ),
        (
            "no signature",
            tamper(&good, |json| {
                json["payload"].as_object_mut().unwrap().remove("signature");
            }),
            "malformed",
            Outcome::InvalidPayment,
        ),
        (
            "tampered id",
            tamper(&good, |json| json["challenge"]["id"] = "x7Tg2pLqR9mKvNwY3hBcZa".into()),
            "unknown_challenge",
            Outcome::InvalidPayment,
        ),
        (
            "tampered realm",
            tamper(&good, |json| json["challenge"]["realm"] = "evil.example".into()),
            "unknown_challenge",
            Outcome::InvalidPayment,
        ),
        (
            "another method",
            tamper(&good, |json| json["challenge"]["method"] = "stripe".into()),
            "unsupported_method",
            Outcome::InvalidPayment,
        ),
        (
            "another credential type",
            tamper(&good, |json| json["payload"]["type"] = "hash".into()),
            "unsupported_method",
            Outcome::InvalidPayment,
        ),
        ("issued for another body", for_other_body, "wrong_request", Outcome::InvalidPayment),
        ("issued for another path", for_other_path, "wrong_request", Outcome::InvalidPayment),
        ("issued for another amount", for_other_amount, "price_mismatch", Outcome::PriceMismatch),
        (
            "authorizing another value",
            tamper(&good, |json| json["payload"]["value"] = "1".into()),
            "price_mismatch",
            Outcome::PriceMismatch,
        ),
        (
            "paying someone else",
            tamper(&good, |json| json["payload"]["to"] = stranger.address().to_checksum(None).into()),
            "verification_failed",
            Outcome::InvalidPayment,
        ),
        (
            "signed by another key",
            tamper(&good, |json| {
                // The stranger's signature over the payer's authorization: the token refuses it.
                let stranger_credential = pay(&unpaid.challenges[0], &stranger);
                let token = stranger_credential.strip_prefix("Payment ").unwrap();
                let theirs: Value = serde_json::from_slice(&mpp::base64url_decode(token).unwrap()).unwrap();
                json["payload"]["signature"] = theirs["payload"]["signature"].clone();
            }),
            "",
            Outcome::VerifyFailed,
        ),
    ];
    let balances = server.balances().await;
    for (what, credential, code, outcome) in cases {
        let refused = refusal(post(&server, BALANCE, &body, &[("authorization", &credential)]).await).await;
        assert!(refused.error().starts_with(code) && !refused.error().is_empty(), "{what}: {}", refused.body);
        refused.challenge(&server, BALANCE, &body, &quote);
        let row = latest(&server).await;
        assert_eq!(row.outcome, outcome, "{what}: {row:?}");
        assert!(row.error_code.is_some(), "{what}: the ledger names the reason");
        assert_eq!(server.balances().await, balances, "{what}: nothing moved");
    }

    // None of them used up the genuine credential.
    let response = post(&server, BALANCE, &body, &[("authorization", &good)]).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers().contains_key("payment-receipt"));
}

#[tokio::test]
async fn an_expired_challenge_is_refused() {
    let server = server().await;
    let body = balance_body(server.chain.payer());
    let quote = refusal(post(&server, BALANCE, &body, &[]).await).await.quote();
    // Issued ten minutes ago with the server's secret: its 5-minute life is over.
    let twin = sandbox::sandbox_mpp(&server.chain, SECRET);
    let binding = RequestBinding::new("POST", BALANCE, &body);
    let old = twin.challenges_at(quote.parse().unwrap(), &binding, now_unix() - 600);
    let credential = pay(&old[0], &server.chain.payer_signer());
    let balances = server.balances().await;
    let refused = refusal(post(&server, BALANCE, &body, &[("authorization", &credential)]).await).await;
    assert!(refused.error().starts_with("expired"), "{}", refused.body);
    refused.challenge(&server, BALANCE, &body, &quote);
    assert_eq!(latest(&server).await.outcome, Outcome::InvalidPayment);
    assert_eq!(server.balances().await, balances);

    // The same challenge issued now is honoured: only the time was wrong.
    let current = twin.challenges_at(quote.parse().unwrap(), &binding, now_unix());
    let credential = pay(&current[0], &server.chain.payer_signer());
    assert_eq!(post(&server, BALANCE, &body, &[("authorization", &credential)]).await.status(), 200);
}

#[tokio::test]
async fn x402_and_mpp_both_pay_the_same_call_but_one_payment_is_taken() {
    let server = server().await;
    let signer = server.chain.payer_signer();
    let body = balance_body(server.chain.payer());
    let unpaid = refusal(post(&server, BALANCE, &body, &[]).await).await;
    let quote = units(&unpaid.quote());
    let (_, payee_start) = server.balances().await;

    let x402 = sign_x402(&signer, &unpaid.body["accepts"][0]).await;
    let response = post(&server, BALANCE, &body, &[("payment-signature", &x402)]).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers().contains_key("payment-response"));
    assert!(!response.headers().contains_key("payment-receipt"));
    assert_eq!(latest(&server).await.outcome, Outcome::Paid);

    let unpaid = refusal(post(&server, BALANCE, &body, &[]).await).await;
    let credential = pay(&unpaid.challenges[0], &signer);
    let response = post(&server, BALANCE, &body, &[("authorization", &credential)]).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers().contains_key("payment-receipt"));
    assert!(!response.headers().contains_key("payment-response"));
    assert_eq!(latest(&server).await.outcome, Outcome::MppPaid);
    assert_eq!(server.balances().await.1 - payee_start, quote * U256::from(2));

    // Both at once: x402 is taken, the MPP credential is left untouched. (A second later,
    // so that the challenge is not the one just paid: two_payers_quoted_in_the_same_second….)
    next_second().await;
    let unpaid = refusal(post(&server, BALANCE, &body, &[]).await).await;
    let x402 = sign_x402(&signer, &unpaid.body["accepts"][0]).await;
    let credential = pay(&unpaid.challenges[0], &signer);
    let response = post(&server, BALANCE, &body, &[("payment-signature", &x402), ("authorization", &credential)]).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers().contains_key("payment-response"));
    assert!(!response.headers().contains_key("payment-receipt"));
    assert_eq!(server.balances().await.1 - payee_start, quote * U256::from(3), "one payment taken, not two");
    let response = post(&server, BALANCE, &body, &[("authorization", &credential)]).await;
    let status = response.status();
    assert_eq!(status, 200, "the MPP credential sent alongside was not spent: {}", response.text().await.unwrap());
    assert_eq!(server.balances().await.1 - payee_start, quote * U256::from(4));
}
