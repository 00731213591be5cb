//! What the paywall reads from a payment and writes into a quote, apart from deciding:
//! the `payment-identifier` extension, the requirements it offers and compares, the
//! authorization and replay key of a payload, the canonical JSON the key hashes, the
//! client key of the free pools.
//!
//! What this file must not do: decide, call the facilitator or touch the store; the paywall
//! (its module) does.

use super::*;

/// The spec's `payment-identifier` extension.
pub use paperchain_protocol::x402::PAYMENT_IDENTIFIER;
use paperchain_protocol::x402::{PAYMENT_ID_LENGTH, SCHEME_EXACT, SchemePayload, parse_amount};

/// The `payment-identifier` extension as advertised: optional, with its schema.
pub(super) fn payment_identifier_extension() -> Value {
    json!({
        "info": { "required": false },
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "required": { "type": "boolean" },
                "id": {
                    "type": "string",
                    "minLength": PAYMENT_ID_LENGTH.start(),
                    "maxLength": PAYMENT_ID_LENGTH.end(),
                    "pattern": "^[a-zA-Z0-9_-]+$",
                },
            },
            "required": ["required"],
        },
    })
}

/// The sha256 of a JSON body's bytes (paid calls only get here with one).
fn body_sha256(body: &Body) -> Option<[u8; 32]> {
    match body {
        Body::Json(bytes) => Some(Sha256::digest(bytes).into()),
        _ => None,
    }
}

/// The `exact` requirements this server offers on `pay_to`'s network at `price`.
pub(super) fn requirement(pay_to: &PayTo, price: Price, max_timeout_seconds: u64, extra: Value) -> Requirements {
    Requirements {
        scheme: SCHEME_EXACT.to_string(),
        network: pay_to.network.caip2.to_string(),
        amount: price.atomic_string(),
        asset: pay_to.network.asset.to_string(),
        pay_to: pay_to.address.to_string(),
        max_timeout_seconds,
        extra: Some(extra),
    }
}

/// What a claim keeps of the call it pays for, whatever the payment: the body's hash, the
/// operation, the client and the quote.
pub(super) fn paid_request(call: &PaywallCall<'_>, price: Price, decision: &Decision) -> PaidRequest {
    PaidRequest {
        request_sha256: body_sha256(call.body),
        operation: Some(call.route.info().operation.to_string()),
        client: decision.client.clone(),
        amount: Some(price.units()),
        ..PaidRequest::default()
    }
}

/// What the store keeps of a payment to find it on chain after a crash: the EIP-3009
/// authorization of an x402 `exact` EVM payload; for a Permit2 (`upto`) payload, the token,
/// the payer, Permit2's nonce (decimal) and the deadline; for a Solana payload, the payer,
/// the mint and the memo of its transfer, usable until its blockhash is too old. `None` for
/// other payloads or one whose fields do not read (it is refused later anyway).
pub(super) fn authorization(payment: &PaymentPayload) -> Option<Authorization> {
    match &payment.payload {
        SchemePayload::Solana(solana) => {
            let (payer, mint, memo) = exact_svm::Transaction::parse(&solana.wire()?)?.payment_parts()?;
            let now = time::OffsetDateTime::now_utc().unix_timestamp().max(0) as u64;
            Some(Authorization {
                asset: exact_svm::to_base58(&mint),
                authorizer: exact_svm::to_base58(&payer),
                nonce: memo?,
                valid_before: now + exact_svm::BLOCKHASH_LIFETIME_SECONDS,
            })
        }
        SchemePayload::Eip3009(evm) => {
            let signed = &evm.authorization;
            fn hex_of(text: &str, len: usize) -> Option<String> {
                (text.len() == len + 2 && text.starts_with("0x") && text[2..].bytes().all(|b| b.is_ascii_hexdigit()))
                    .then(|| text.to_ascii_lowercase())
            }
            Some(Authorization {
                asset: hex_of(&payment.accepted.asset, 40)?,
                authorizer: hex_of(&signed.from, 40)?,
                nonce: hex_of(&signed.nonce, 64)?,
                valid_before: signed.valid_before_seconds()?,
            })
        }
        SchemePayload::Permit2(permit) => {
            let auth = &permit.permit2_authorization;
            let text = |key: &str| auth.more.get(key)?.as_str();
            let nonce = text("nonce").filter(|n| parse_amount(n).is_some())?;
            let from = text("from").filter(|f| f.len() == 42 && f.starts_with("0x"))?;
            Some(Authorization {
                asset: auth.permitted.token.to_ascii_lowercase(),
                authorizer: from.to_ascii_lowercase(),
                nonce: nonce.to_string(),
                valid_before: parse_amount(text("deadline")?)?.try_into().ok()?,
            })
        }
        // A channel's vouchers are tracked per channel, not as authorizations.
        SchemePayload::Batch(_) | SchemePayload::Other(_) => None,
    }
}

/// The replay key: a hash of the signed part of the payment (the network and the
/// scheme's payload; for Solana the transaction's message, whatever fills the fee payer's
/// signature), so re-encoding the same signature differently is the same payment.
pub(super) fn payment_key(raw: &Value, payment: &PaymentPayload) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(payment.accepted.network.as_bytes());
    hasher.update([0]);
    match exact_svm::signed_message(payment) {
        Some(message) => {
            hasher.update(b"solana-message\0");
            hasher.update(&message);
        }
        None => hasher.update(canonical(&raw["payload"]).as_bytes()),
    }
    hasher.finalize().into()
}

/// JSON with object keys sorted and hex strings lower-cased, so equal payloads hash alike.
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", Value::String((*k).clone()), canonical(&map[k.as_str()])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(",")),
        Value::String(text) if text.starts_with("0x") => Value::String(text.to_ascii_lowercase()).to_string(),
        other => other.to_string(),
    }
}

pub(super) fn raw_request(value: &Value) -> Option<proto::VerifyRequest> {
    let raw = serde_json::value::to_raw_value(value).ok()?;
    Some(proto::VerifyRequest::from(raw))
}

/// Free pools count per IPv4 address and per IPv6 /64 (one subscriber's network).
pub fn client_key(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
    }
}
