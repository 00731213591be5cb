use super::*;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;

#[test]
fn client_keys_group_ipv6_by_64() {
    assert_eq!(client_key("203.0.113.9".parse().unwrap()), "203.0.113.9");
    assert_eq!(client_key("2001:db8:1:2:3:4:5:6".parse().unwrap()), "2001:db8:1:2::/64");
    assert_eq!(client_key("2001:db8:1:2:ffff::1".parse().unwrap()), "2001:db8:1:2::/64");
    assert_eq!(client_key("::ffff:198.51.100.4".parse().unwrap()), "198.51.100.4");
}

/// Requirements as a payment's `accepted` carries them, on `network`.
fn accepted_on(network: &str) -> Value {
    json!({"scheme": "exact", "network": network, "amount": "2", "asset": "0xAbC", "payTo": "0xDeF",
        "maxTimeoutSeconds": 300})
}

/// The replay key of a payment sent as `raw`.
fn key_of(raw: Value) -> [u8; 32] {
    let read: PaymentPayload = x402::read(raw.clone(), "the payment").unwrap();
    payment_key(&raw, &read)
}

#[test]
fn payment_key_ignores_encoding_differences() {
    let a = json!({"x402Version": 2, "accepted": accepted_on("eip155:8453"), "payload": {"signature": "0xABcd", "authorization": {"from": "0x1", "to": "0x2", "value": "2", "validAfter": "0", "validBefore": "9", "nonce": "0x3"}}});
    let b = json!({"payload": {"authorization": {"nonce": "0x3", "validBefore": "9", "validAfter": "0", "value": "2", "to": "0x2", "from": "0x1"}, "signature": "0xabcd"}, "accepted": accepted_on("eip155:8453"), "x402Version": 2});
    assert_eq!(key_of(a.clone()), key_of(b));
    let mut c = a.clone();
    c["accepted"] = accepted_on("eip155:137");
    assert_ne!(key_of(a), key_of(c));
}

#[test]
fn payment_ids_are_read_only_when_valid() {
    let with = |id: Value| json!({"payment-identifier": {"info": {"required": false, "id": id}}});
    let payment_id = |extensions: &Value| x402::payment_id(extensions.as_object().unwrap()).map(str::to_string);
    assert_eq!(payment_id(&with(json!("call_0123456789abcdef"))).as_deref(), Some("call_0123456789abcdef"));
    assert_eq!(payment_id(&with(json!("A-b_".repeat(32)))).as_deref(), Some("A-b_".repeat(32).as_str()));
    assert_eq!(payment_id(&with(json!("short_id_15chars"[..15]))), None, "under 16");
    assert_eq!(payment_id(&with(json!("a".repeat(129)))), None, "over 128");
    assert_eq!(payment_id(&with(json!("call 0123456789abcdef"))), None, "a space");
    assert_eq!(payment_id(&with(json!("call_0123456789abcdé"))), None, "not ASCII");
    assert_eq!(payment_id(&with(json!(12345678901234567u64))), None, "not a string");
    assert_eq!(payment_id(&json!({})), None);
    let schema = payment_identifier_extension();
    assert_eq!(schema["info"], json!({"required": false}));
    assert_eq!(schema["schema"]["properties"]["id"]["minLength"], 16);
    assert_eq!(schema["schema"]["properties"]["id"]["maxLength"], 128);
}

#[test]
fn malformed_payment_headers_are_named() {
    let decode_payment = |header: &str| x402::decode_payment(header).map(|(raw, _)| raw);
    let accepted = accepted_on("eip155:8453");
    assert!(decode_payment("%%%").unwrap_err().contains("base64"));
    assert!(decode_payment(&B64.encode("nope")).unwrap_err().contains("JSON"));
    assert!(decode_payment(&B64.encode(r#"{"x402Version":1}"#)).unwrap_err().contains("x402Version"));
    assert!(decode_payment(&B64.encode(r#"{"x402Version":2,"payload":{}}"#)).unwrap_err().contains("accepted"));
    let no_payload = json!({"x402Version": 2, "accepted": accepted}).to_string();
    assert!(decode_payment(&B64.encode(no_payload)).unwrap_err().contains("payload"));
}

/// A facilitator that only answers `/supported`, with `kinds`.
struct Supports(Value);

impl PaymentFacilitator for Supports {
    fn verify(
        &self,
        _: proto::VerifyRequest,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<crate::facilitator::Verified, FacilitatorFailure>> + Send + '_>>
    {
        Box::pin(async { Err(FacilitatorFailure::Unavailable("not in this test".into())) })
    }

    fn settle(
        &self,
        _: proto::SettleRequest,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<Settled, FacilitatorFailure>> + Send + '_>> {
        Box::pin(async { Err(FacilitatorFailure::Unavailable("not in this test".into())) })
    }

    fn supported(
        &self,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<proto::SupportedResponse, FacilitatorFailure>> + Send + '_>> {
        let value = self.0.clone();
        Box::pin(
            async move { serde_json::from_value(value).map_err(|e| FacilitatorFailure::Unavailable(e.to_string())) },
        )
    }
}

async fn paywall_paid_on_all_three(supported: Value) -> Paywall {
    let env = [
        ("PAPERCHAIN_PUBLIC_URL", "https://api.example.com"),
        ("PAPERCHAIN_FACILITATOR_URL", "https://facilitator.example.com"),
        ("PAPERCHAIN_PAY_TO_BASE", "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"),
        ("PAPERCHAIN_PAY_TO_POLYGON", "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"),
        ("PAPERCHAIN_PAY_TO_SOLANA", "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM"),
    ];
    let sources = crate::config::ConfigSources {
        file: None,
        data_dir: std::path::Path::new("/unused"),
        public_url: None,
        sandbox: false,
    };
    let config =
        HostedConfig::load_with(&sources, |k| env.iter().find(|(key, _)| *key == k).map(|(_, v)| v.to_string()))
            .unwrap();
    let store = Store::open_in_memory().await.unwrap();
    Paywall::new(
        config,
        &paperchain_engine::catalog::standard(),
        &Context::new(),
        Arc::new(Supports(supported)),
        store,
        Arc::new(SystemClock),
    )
}

#[tokio::test]
async fn solana_is_offered_with_the_facilitators_fee_payer_and_base_comes_first() {
    let solana = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";
    let settler = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
    let paywall = paywall_paid_on_all_three(json!({"kinds": [
        {"x402Version": 2, "scheme": "exact", "network": "eip155:8453"},
        {"x402Version": 2, "scheme": "upto", "network": "eip155:8453", "extra": {"facilitatorAddress": settler}},
        {"x402Version": 2, "scheme": "upto", "network": "eip155:137",
         "extra": {"facilitatorAddress": settler, "extensions": ["eip2612GasSponsoring"]}},
        {"x402Version": 2, "scheme": "exact", "network": solana, "extra": {"feePayer": "FeePayer1111111111111111111111111111111111"}},
    ]}))
    .await;
    // Before the facilitator is asked, Solana has no fee payer and is not offered.
    let networks = |reqs: &[Requirements]| reqs.iter().map(|r| r.network.clone()).collect::<Vec<_>>();
    assert_eq!(networks(&paywall.requirements(Price::atomic(2000)).await), ["eip155:8453", "eip155:137"]);
    assert!(paywall.waiting_for_supported().await, "housekeeping will ask again");
    paywall.learn_supported().await.unwrap();
    assert!(!paywall.waiting_for_supported().await);
    let offered = paywall.requirements(Price::atomic(2000)).await;
    assert_eq!(networks(&offered), ["eip155:8453", "eip155:137", solana]);
    assert_eq!(offered[2].extra, Some(json!({"feePayer": "FeePayer1111111111111111111111111111111111"})));
    assert_eq!(offered[2].asset, "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v");
    assert_eq!(offered[0].extra, Some(json!({"name": "USD Coin", "version": "2"})));
    assert!(offered.iter().all(|r| r.amount == "2000" && r.scheme == "exact" && r.max_timeout_seconds == 300));
    // A metered route (OCR) is offered `upto` too, after each EVM network's `exact`, with
    // the address that settles it; the permit extension only where the facilitator said.
    let catalog = paperchain_engine::catalog::standard();
    let ocr = catalog.by_path("/v1/pdf/ocr").unwrap();
    let offers = paywall.offers(ocr, Price::atomic(7000)).await;
    let schemes: Vec<(&str, &str)> = offers.iter().map(|r| (r.network.as_str(), r.scheme.as_str())).collect();
    assert_eq!(
        schemes,
        [
            ("eip155:8453", "exact"),
            ("eip155:8453", "upto"),
            ("eip155:137", "exact"),
            ("eip155:137", "upto"),
            (solana, "exact")
        ]
    );
    assert_eq!(offers[1].extra, Some(json!({"name": "USD Coin", "version": "2", "facilitatorAddress": settler})));
    let rotate = catalog.by_path("/v1/pdf/rotate").unwrap();
    assert!(paywall.offers(rotate, Price::atomic(2000)).await.iter().all(|r| r.scheme == "exact"));
}

#[tokio::test]
async fn solana_without_a_fee_payer_is_not_offered() {
    let paywall = paywall_paid_on_all_three(json!({"kinds": [
        {"x402Version": 2, "scheme": "exact", "network": "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"},
        {"x402Version": 1, "scheme": "exact", "network": "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", "extra": {"feePayer": "x"}},
    ]}))
    .await;
    paywall.learn_supported().await.unwrap();
    assert_eq!(paywall.requirements(Price::atomic(1)).await.len(), 2);
    assert!(paywall.waiting_for_supported().await);
}

/// A payment as the paywall reads it, with `payload` as its scheme's payload.
fn payment_with(payload: Value) -> Result<PaymentPayload, String> {
    let accepted = json!({"scheme": "exact", "network": "eip155:8453", "amount": "1", "asset": "0xAbC",
        "payTo": "0xDeF", "maxTimeoutSeconds": 300});
    x402::read(json!({"x402Version": 2, "accepted": accepted, "payload": payload}), "the payment")
}

#[test]
fn the_signed_amount_is_read_from_every_payload() {
    let evm = |value: Value| {
        json!({"signature": "0x", "authorization": {"from": "0x1", "to": "0x2", "value": value, "validAfter": "0",
            "validBefore": "1", "nonce": "0x3"}})
    };
    let amount = |payload: Value| payment_with(payload).unwrap().signed_amount();
    assert_eq!(amount(evm(json!("2000"))), Some(2000));
    let permit2 = json!({"permit2Authorization": {"permitted": {"token": "0xA", "amount": "2001"}}});
    assert_eq!(amount(permit2), Some(2001));
    let huge = evm(json!("99999999999999999999999"));
    assert_eq!(amount(huge), Some(u64::MAX));
    // An authorization whose value is not text does not read: the payment is refused before
    // anything is compared.
    assert!(payment_with(evm(json!(2000))).unwrap_err().contains("EIP-3009"));
    // A Solana transaction that does not read signs no amount that can be any quote.
    assert_eq!(amount(json!({"transaction": "AQID"})), Some(u64::MAX));
    assert_eq!(amount(json!({"other": "AQID"})), None);
}

#[test]
fn requirements_compare_addresses_in_any_case() {
    let ours = requirement_of(
        json!({"scheme": "exact", "network": "eip155:8453", "amount": "1", "asset": "0xAbC", "payTo": "0xDeF", "maxTimeoutSeconds": 300, "extra": {"name": "USD Coin", "version": "2"}}),
    );
    let mut theirs = ours.clone();
    theirs.asset = "0xabc".into();
    assert!(theirs.same_terms(&ours));
    theirs.pay_to = "0x999".into();
    assert!(!theirs.same_terms(&ours));
    let mut theirs = ours.clone();
    theirs.extra = Some(json!({"name": "USD Coin", "version": "1"}));
    assert!(!theirs.same_terms(&ours));
}

fn requirement_of(value: Value) -> Requirements {
    serde_json::from_value(value).unwrap()
}
