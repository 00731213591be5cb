use super::*;
use alloy::primitives::Signature;
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::{Eip712Domain, SolStruct as _};
use paperchain_protocol::mpp::sign_evm_credential;
use x402_chain_eip155::v1_eip155_exact::TransferWithAuthorization;
use x402_chain_eip155::v2_eip155_exact::FacilitatorVerifyRequest;

/// 2026-01-01T00:00:00Z.
const NOW: u64 = 1_767_225_600;
const QUOTE: u64 = 1_234;
/// Anvil's first development key: a public test key, never a real wallet.
const PAYER_KEY: &str = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

fn address(text: &str) -> Address {
    Address::from_str(text).expect("test address")
}

fn evm() -> EvmCharge {
    EvmCharge {
        chain_id: 8453,
        asset: address("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"),
        recipient: address("0x209693Bc6afc0C5328bA36FaF03C514EF312287C"),
        token_name: "USD Coin".into(),
        token_version: "2".into(),
        decimals: 6,
    }
}

fn config() -> MppConfig {
    MppConfig {
        realm: "paperchain.example".into(),
        secret: [7; 32],
        evm: Some(evm()),
        tempo: None,
        challenge_ttl: Duration::from_secs(300),
    }
}

fn with_tempo() -> MppConfig {
    MppConfig {
        tempo: Some(TempoCharge {
            chain_id: 4217,
            currency: address("0x20c0000000000000000000000000000000000000"),
            recipient: address("0x209693Bc6afc0C5328bA36FaF03C514EF312287C"),
            fee_payer: true,
        }),
        ..config()
    }
}

fn binding() -> RequestBinding {
    RequestBinding::new("POST", "/v1/docs/rotate", br#"{"pages":"1-3","angle":90}"#)
}

fn signer() -> PrivateKeySigner {
    PAYER_KEY.parse().expect("test key")
}

/// A client's `Authorization` value for the evm challenge of `config`.
fn pay(config: &MppConfig) -> String {
    let headers = config.challenges_at(QUOTE, &binding(), NOW);
    sign_evm_credential(&headers[0], &signer(), "USD Coin", "2").expect("client signs")
}

fn check(config: &MppConfig, authorization: &str) -> Result<EvmAuthorization, MppError> {
    let credential = MppConfig::parse_credential(authorization)?;
    config.check(&credential, &binding(), QUOTE, NOW + 10)
}

/// Decodes a credential, lets `edit` change its JSON, encodes it again.
fn tamper(authorization: &str, edit: impl FnOnce(&mut Value)) -> String {
    let token = authorization.strip_prefix("Payment ").expect("payment scheme");
    let bytes = mpp::base64url_decode(token).expect("base64url");
    let mut json: Value = serde_json::from_slice(&bytes).expect("json");
    edit(&mut json);
    format!("Payment {}", mpp::base64url_encode(json.to_string().as_bytes()))
}

#[test]
fn challenge_carries_the_draft_parameters() {
    let headers = config().challenges_at(QUOTE, &binding(), NOW);
    assert_eq!(headers.len(), 1, "tempo is not configured: {headers:?}");
    eprintln!("WWW-Authenticate: {}", headers[0]);
    let challenge = mpp::parse_www_authenticate(&headers[0]).expect("parses back");
    assert_eq!(challenge.realm, "paperchain.example");
    assert_eq!(challenge.method.as_str(), "evm");
    assert_eq!(challenge.intent.as_str(), "charge");
    assert_eq!(challenge.expires.as_deref(), Some("2026-01-01T00:05:00Z"));
    assert_eq!(challenge.digest.as_deref(), binding().digest());
    assert!(binding().digest().is_some_and(|d| d.starts_with("sha-256=:")));
    let opaque = challenge.opaque.as_ref().expect("opaque").decode_value().expect("json");
    assert_eq!((&opaque["method"], &opaque["path"]), (&json!("POST"), &json!("/v1/docs/rotate")));
    assert_eq!(opaque["nonce"].as_str().map(str::len), Some(32), "{opaque}");
    let request = challenge.request.decode_value().expect("request");
    assert_eq!(
        request,
        json!({
            "amount": "1234",
            "currency": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
            "recipient": "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
            "methodDetails": {
                "chainId": 8453,
                "credentialTypes": ["authorization"],
                "decimals": 6,
                "permit2Address": "0x000000000022D473030F116dDEE9F6B43aC78BA3",
            },
        })
    );
    // JCS: keys sorted, no spaces, so every implementation computes the same HMAC.
    let raw = mpp::base64url_decode(challenge.request.raw()).expect("raw");
    assert!(raw.starts_with(br#"{"amount":"1234","currency":"#), "{}", String::from_utf8_lossy(&raw));
    // The id is the draft's HMAC over the seven slots, under the hex of the secret.
    let id = mpp::compute_challenge_id(
        &hex::encode([7u8; 32]),
        "paperchain.example",
        "evm",
        "charge",
        challenge.request.raw(),
        challenge.expires.as_deref(),
        challenge.digest.as_deref(),
        challenge.opaque.as_ref().map(Base64UrlJson::raw),
    );
    assert_eq!(challenge.id, id);
    assert!(challenge.verify(&hex::encode([7u8; 32])));
}

#[test]
fn every_challenge_is_new_even_for_the_same_request_and_moment() {
    let config = config();
    let id = |headers: Vec<String>| mpp::parse_www_authenticate(&headers[0]).expect("parses").id;
    let a = id(config.challenges_at(QUOTE, &binding(), NOW));
    assert_ne!(a, id(config.challenges_at(QUOTE, &binding(), NOW)));
    let other_body = RequestBinding::new("POST", "/v1/docs/rotate", b"{}");
    assert_ne!(a, id(config.challenges_at(QUOTE, &other_body, NOW)));
    let empty = RequestBinding::new("get", "/v1/x", b"");
    assert_eq!(empty.digest(), None);
    let header = &config.challenges_at(QUOTE, &empty, NOW)[0];
    assert!(!header.contains("digest="), "{header}");
}

#[test]
fn tempo_is_offered_only_when_configured() {
    let headers = config().challenges_at(QUOTE, &binding(), NOW);
    assert!(headers.iter().all(|h| !h.contains(r#"method="tempo""#)));
    let headers = with_tempo().challenges_at(QUOTE, &binding(), NOW);
    assert_eq!(headers.len(), 2);
    eprintln!("WWW-Authenticate: {}", headers[1]);
    let tempo = mpp::parse_www_authenticate(&headers[1]).expect("tempo parses");
    assert_eq!(tempo.method.as_str(), "tempo");
    let request = tempo.request.decode_value().expect("request");
    assert_eq!(request["amount"], "1234");
    assert_eq!(request["methodDetails"]["chainId"], 4217);
    assert!(tempo.verify(&hex::encode([7u8; 32])));
    let only_tempo = MppConfig { evm: None, ..with_tempo() };
    let headers = only_tempo.challenges_at(QUOTE, &binding(), NOW);
    assert_eq!(headers.len(), 1);
    assert!(headers[0].contains(r#"method="tempo""#));
}

#[test]
fn a_signed_evm_credential_is_accepted() {
    let config = config();
    let authorization = pay(&config);
    eprintln!("Authorization: {authorization}");
    let credential = MppConfig::parse_credential(&authorization).expect("parses");
    assert_eq!(credential.method(), "evm");
    let auth = config.check(&credential, &binding(), QUOTE, NOW + 10).expect("accepted");
    assert_eq!(auth.from, signer().address());
    assert_eq!(auth.to, evm().recipient);
    assert_eq!(auth.value, U256::from(QUOTE));
    assert_eq!(auth.valid_after, 0);
    assert_eq!(auth.valid_before, NOW + 300);
    assert_eq!(auth.nonce, challenge_hash(credential.challenge_id(), "paperchain.example"));
    assert_eq!(auth.challenge_id, credential.challenge_id());
    let did = format!("did:pkh:eip155:8453:{}", signer().address());
    assert_eq!(auth.source.as_deref(), Some(did.as_str()));
    // The signature is the EIP-712 one the facilitator recomputes for USDC on Base.
    let message = TransferWithAuthorization {
        from: auth.from,
        to: auth.to,
        value: auth.value,
        validAfter: U256::from(auth.valid_after),
        validBefore: U256::from(auth.valid_before),
        nonce: auth.nonce,
    };
    let domain =
        Eip712Domain::new(Some("USD Coin".into()), Some("2".into()), Some(U256::from(8453)), Some(evm().asset), None);
    let signature = Signature::from_raw(&auth.signature).expect("65-byte signature");
    let signer_address =
        signature.recover_address_from_prehash(&message.eip712_signing_hash(&domain)).expect("recovers");
    assert_eq!(signer_address, signer().address());
}

#[test]
fn the_x402_payload_is_what_the_exact_facilitator_reads() {
    let config = config();
    let auth = check(&config, &pay(&config)).expect("accepted");
    let payload = config.to_x402_payload(&auth);
    eprintln!("x402 payload: {payload}");
    assert_eq!(payload["x402Version"], 2);
    assert_eq!(payload["accepted"]["network"], "eip155:8453");
    assert_eq!(payload["accepted"]["amount"], "1234");
    let request = config.to_x402_verify_request(&auth);
    let parsed: FacilitatorVerifyRequest =
        serde_json::from_value(request).expect("the facilitator's own request type parses it");
    let FacilitatorVerifyRequest::Eip3009 { payment_payload, payment_requirements, .. } = parsed else {
        panic!("not read as an EIP-3009 payment");
    };
    assert_eq!(payment_payload.accepted, payment_requirements);
    assert_eq!(payment_requirements.pay_to.0, evm().recipient);
    assert_eq!(payment_requirements.asset.0, evm().asset);
    assert_eq!(payment_requirements.amount, U256::from(QUOTE));
    assert_eq!(payment_requirements.extra.name, "USD Coin");
    assert_eq!(payment_requirements.extra.version, "2");
    let authorization = payment_payload.payload.authorization;
    assert_eq!(authorization.from, auth.from);
    assert_eq!(authorization.to, auth.to);
    assert_eq!(authorization.value, auth.value);
    assert_eq!(authorization.nonce, auth.nonce);
    assert_eq!(authorization.valid_before.as_secs(), auth.valid_before);
    assert_eq!(payment_payload.payload.signature, auth.signature);
}

#[test]
fn a_tampered_id_is_an_unknown_challenge() {
    let config = config();
    let forged = tamper(&pay(&config), |json| {
        json["challenge"]["id"] = "x7Tg2pLqR9mKvNwY3hBcZa".into();
    });
    assert!(matches!(check(&config, &forged), Err(MppError::UnknownChallenge(_))));
    // Lowering the price in the echoed request breaks the HMAC too.
    let cheaper = tamper(&pay(&config), |json| {
        let request = Base64UrlJson::from_value(&json!({"amount": "1"})).expect("b64");
        json["challenge"]["request"] = request.raw().into();
    });
    assert!(matches!(check(&config, &cheaper), Err(MppError::UnknownChallenge(_))));
    // So does another server's secret.
    let other = MppConfig { secret: [8; 32], ..config.clone() };
    let error = check(&other, &pay(&config)).expect_err("refused");
    assert_eq!(error.code(), "unknown_challenge");
    assert!(error.problem_type().ends_with("/invalid-challenge"));
}

#[test]
fn a_credential_for_another_request_is_refused() {
    let config = config();
    let credential = MppConfig::parse_credential(&pay(&config)).expect("parses");
    for other in [
        RequestBinding::new("POST", "/v1/docs/rotate", br#"{"pages":"1-30","angle":90}"#),
        RequestBinding::new("POST", "/v1/docs/merge", br#"{"pages":"1-3","angle":90}"#),
        RequestBinding::new("PUT", "/v1/docs/rotate", br#"{"pages":"1-3","angle":90}"#),
        RequestBinding::new("POST", "/v1/docs/rotate", b""),
    ] {
        let error = config.check(&credential, &other, QUOTE, NOW + 10).expect_err("refused");
        assert!(matches!(error, MppError::WrongRequest(_)), "{other:?}: {error:?}");
    }
    // The method is case-insensitive.
    let lower = RequestBinding::new("post", "/v1/docs/rotate", br#"{"pages":"1-3","angle":90}"#);
    assert!(config.check(&credential, &lower, QUOTE, NOW + 10).is_ok());
}

#[test]
fn a_credential_for_another_amount_is_refused() {
    let config = config();
    let credential = MppConfig::parse_credential(&pay(&config)).expect("parses");
    let error = config.check(&credential, &binding(), QUOTE + 1, NOW + 10).expect_err("refused");
    assert_eq!(error.code(), "wrong_amount");
    assert_eq!(error.to_string(), "the challenge quoted 1234, this request costs 1235");
    // An authorization for less than the challenge's amount.
    let short = tamper(&pay(&config), |json| json["payload"]["value"] = "1233".into());
    assert!(matches!(check(&config, &short), Err(MppError::WrongAmount(_))));
}

#[test]
fn an_expired_challenge_is_refused() {
    let config = config();
    let credential = MppConfig::parse_credential(&pay(&config)).expect("parses");
    let at_expiry = config.check(&credential, &binding(), QUOTE, NOW + 300);
    assert!(matches!(at_expiry, Err(MppError::Expired(_))), "{at_expiry:?}");
    let late = config.check(&credential, &binding(), QUOTE, NOW + 3_600);
    assert!(matches!(late, Err(MppError::Expired(_))));
    assert!(config.check(&credential, &binding(), QUOTE, NOW + 299).is_ok());
}

#[test]
fn garbage_is_malformed() {
    for header in [
        "Payment !!!not-base64!!!",
        "Payment ",
        "Bearer abc.def",
        "",
        &format!("Payment {}", mpp::base64url_encode(b"not json")),
        &format!("Payment {}", mpp::base64url_encode(br#"{"challenge":{},"payload":{}}"#)),
    ] {
        let error = MppConfig::parse_credential(header).expect_err(header);
        assert_eq!(error.code(), "malformed", "{header}: {error}");
        assert!(error.problem_type().ends_with("/malformed-credential"));
    }
    let config = config();
    let no_signature = tamper(&pay(&config), |json| {
        if let Some(payload) = json["payload"].as_object_mut() {
            payload.remove("signature");
        }
    });
    assert!(matches!(check(&config, &no_signature), Err(MppError::Malformed(_))));
    let bad_nonce = tamper(&pay(&config), |json| json["payload"]["nonce"] = "0x12".into());
    assert!(matches!(check(&config, &bad_nonce), Err(MppError::Malformed(_))));
    let bad_from = tamper(&pay(&config), |json| json["payload"]["from"] = "alice".into());
    assert!(matches!(check(&config, &bad_from), Err(MppError::Malformed(_))));
    let no_type = tamper(&pay(&config), |json| json["payload"] = json!({}));
    assert!(matches!(check(&config, &no_type), Err(MppError::Malformed(_))));
}

#[test]
fn other_methods_and_credential_types_are_unsupported() {
    // A genuine tempo challenge, answered with a Tempo transaction.
    let config = with_tempo();
    let headers = config.challenges_at(QUOTE, &binding(), NOW);
    let tempo = mpp::parse_www_authenticate(&headers[1]).expect("tempo");
    let credential = PaymentCredential::new(tempo.to_echo(), json!({"type": "transaction", "signature": "0x76f8"}));
    let header = mpp::format_authorization(&credential).expect("formats");
    let credential = MppConfig::parse_credential(&header).expect("parses");
    assert!(config.check_challenge(&credential, &binding(), QUOTE, NOW + 10).is_ok());
    let error = config.check(&credential, &binding(), QUOTE, NOW + 10).expect_err("refused");
    assert_eq!(error.code(), "unsupported_method");
    assert!(error.to_string().contains("use `evm`"), "{error}");
    // A method never offered.
    let stripe = tamper(&pay(&config), |json| json["challenge"]["method"] = "stripe".into());
    assert!(matches!(check(&config, &stripe), Err(MppError::UnsupportedMethod(_))));
    // Tempo credentials when tempo is not configured.
    assert!(matches!(
        MppConfig { tempo: None, ..config.clone() }.check(&credential, &binding(), QUOTE, NOW + 10),
        Err(MppError::UnsupportedMethod(_))
    ));
    // The evm method with another credential type than the EIP-3009 authorization.
    let hash = tamper(&pay(&config), |json| {
        json["payload"] = json!({"type": "hash", "hash": format!("0x{}", "ab".repeat(32))});
    });
    let error = check(&config, &hash).expect_err("refused");
    assert_eq!(error.code(), "unsupported_method");
    assert!(error.to_string().contains("`hash`"), "{error}");
}

#[test]
fn the_authorization_must_match_the_challenge() {
    let config = config();
    let elsewhere = tamper(&pay(&config), |json| {
        json["payload"]["to"] = "0x000000000000000000000000000000000000dEaD".into();
    });
    assert!(matches!(check(&config, &elsewhere), Err(MppError::VerificationFailed(_))));
    let unbound = tamper(&pay(&config), |json| {
        json["payload"]["nonce"] = format!("0x{}", "11".repeat(32)).into();
    });
    assert!(matches!(check(&config, &unbound), Err(MppError::VerificationFailed(_))));
    let stale = tamper(&pay(&config), |json| json["payload"]["validBefore"] = NOW.to_string().into());
    assert!(matches!(check(&config, &stale), Err(MppError::Expired(_))));
    let early = tamper(&pay(&config), |json| {
        json["payload"]["validAfter"] = (NOW + 60).to_string().into();
    });
    assert!(matches!(check(&config, &early), Err(MppError::VerificationFailed(_))));
    // A challenge issued before the recipient changed (same secret) is not honoured.
    let moved = MppConfig {
        evm: Some(EvmCharge { recipient: address("0x000000000000000000000000000000000000dEaD"), ..evm() }),
        ..config.clone()
    };
    assert!(matches!(check(&moved, &pay(&config)), Err(MppError::UnknownChallenge(_))));
}

#[test]
fn one_payment_per_challenge() {
    let config = config();
    let header = &config.challenges_at(QUOTE, &binding(), NOW)[0];
    let sign = || sign_evm_credential(header, &signer(), "USD Coin", "2").expect("client signs");
    let first = check(&config, &sign()).expect("accepted");
    let again = check(&config, &sign()).expect("the same challenge, signed again");
    // Stateless check: refusing the second is the replay guard's job, and the key matches.
    assert_eq!(first.replay_key(), again.replay_key());
    let fresh = check(&config, &pay(&config)).expect("a new challenge for the same request");
    assert_ne!(first.replay_key(), fresh.replay_key());
    let other = RequestBinding::new("POST", "/v1/docs/rotate", b"{}");
    let header = &config.challenges_at(QUOTE, &other, NOW)[0];
    let credential = sign_evm_credential(header, &signer(), "USD Coin", "2").expect("signs");
    let credential = MppConfig::parse_credential(&credential).expect("parses");
    let second = config.check(&credential, &other, QUOTE, NOW + 10).expect("accepted");
    assert_ne!(first.replay_key(), second.replay_key());
    assert!(first.replay_key().starts_with("mpp:evm:8453:0x"));
}

#[test]
fn the_receipt_follows_the_draft() {
    let config = config();
    let tx = format!("0x{}", "ab".repeat(32));
    let header = config.receipt("challenge-1", &tx, NOW + 12);
    eprintln!("Payment-Receipt: {header}");
    let receipt = mpp::parse_receipt(&header).expect("mpp reads it");
    assert!(receipt.is_success());
    assert_eq!(receipt.method.as_str(), "evm");
    assert_eq!(receipt.reference, tx);
    assert_eq!(receipt.timestamp, "2026-01-01T00:00:12Z");
    let json: Value = serde_json::from_slice(&mpp::base64url_decode(&header).expect("b64")).expect("json");
    assert_eq!(json["challengeId"], "challenge-1");
    assert_eq!(json["chainId"], 8453);
    assert_eq!(json["status"], "success");
}

#[test]
fn secrets_stay_out_of_debug_output() {
    let config = config();
    let authorization = pay(&config);
    let credential = MppConfig::parse_credential(&authorization).expect("parses");
    let auth = config.check(&credential, &binding(), QUOTE, NOW + 10).expect("accepted");
    let signature = auth.signature.to_string();
    assert!(!format!("{credential:?}").contains(&signature[2..20]));
    assert!(!format!("{auth:?}").contains(&signature[2..20]));
    assert!(!format!("{config:?}").contains(&hex::encode([7u8; 32])));
}

#[test]
fn validate_refuses_what_cannot_be_sent() {
    assert!(config().validate().is_ok());
    assert!(MppConfig { realm: "a\"b".into(), ..config() }.validate().is_err());
    assert!(MppConfig { evm: None, ..config() }.validate().is_err());
    assert!(MppConfig::new("x").validate().is_err());
    assert_ne!(MppConfig::new("x").secret, MppConfig::new("x").secret);
}
