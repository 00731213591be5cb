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
/// Shortest and longest payment id the extension allows.
const PAYMENT_ID_LENGTH: std::ops::RangeInclusive<usize> = 16..=128;

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

/// The payload's payment id (`extensions["payment-identifier"].info.id`), when it is a
/// valid one (16 to 128 of `[A-Za-z0-9_-]`); an invalid one counts as none.
pub(super) fn payment_id(payload: &Value) -> Option<String> {
    let id = payload["extensions"][PAYMENT_IDENTIFIER]["info"]["id"].as_str()?;
    let valid = PAYMENT_ID_LENGTH.contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    valid.then(|| id.to_string())
}

/// The sha256 of a JSON body's bytes (paid calls only get here with one).
fn body_sha256(body: &Body) -> Option<[u8; 32]> {
    match body {
        Body::Json(bytes) => Some(Sha256::digest(bytes).into()),
        _ => None,
    }
}

pub(super) fn requirement(pay_to: &PayTo, price: Price, max_timeout_seconds: u64, extra: Value) -> Value {
    json!({
        "scheme": "exact",
        "network": pay_to.network.caip2,
        "amount": price.atomic_string(),
        "asset": pay_to.network.asset,
        "payTo": pay_to.address,
        "maxTimeoutSeconds": max_timeout_seconds,
        "extra": extra,
    })
}

/// Equal requirements, comparing EVM addresses without regard to case (clients may
/// re-checksum them).
pub(super) fn same_requirements(accepted: &Value, ours: &Value) -> bool {
    let fold = |v: &Value| -> Value {
        let mut v = v.clone();
        for key in ["asset", "payTo"] {
            if let Some(text) = v[key].as_str().filter(|t| t.starts_with("0x")) {
                v[key] = json!(text.to_ascii_lowercase());
            }
        }
        v
    };
    let (a, b) = (fold(accepted), fold(ours));
    ["scheme", "network", "amount", "asset", "payTo", "maxTimeoutSeconds", "extra"].iter().all(|k| a[k] == b[k])
}

/// What a claim keeps of the call it pays for, whatever the payment: the body's hash, the
/// operation, the client and the quote.
pub(super) fn paid_request(call: &Call<'_>, price: Price, decision: &Decision) -> PaidRequest {
    PaidRequest {
        request_sha256: body_sha256(call.body),
        operation: Some(call.route.info().operation.to_string()),
        client: decision.client.clone(),
        amount: Some(price.units()),
        ..PaidRequest::default()
    }
}

/// What the store keeps of a payment to find it on chain after a crash: the EIP-3009
/// authorization of an x402 `exact` EVM payload; for a Solana payload, the payer, the mint
/// and the memo of its transfer, usable until its blockhash is too old. `None` for other
/// payloads (Permit2) or one whose fields do not read (it is refused later anyway).
pub(super) fn authorization(payload: &Value) -> Option<Authorization> {
    if let Some(wire) = svm::payload_transaction(payload) {
        let (payer, mint, memo) = svm::Transaction::parse(&wire)?.payment_parts()?;
        let now = time::OffsetDateTime::now_utc().unix_timestamp().max(0) as u64;
        return Some(Authorization {
            asset: svm::to_base58(&mint),
            authorizer: svm::to_base58(&payer),
            nonce: memo?,
            valid_before: now + SOLANA_BLOCKHASH_SECONDS,
        });
    }
    let signed = &payload["payload"]["authorization"];
    fn hex_of(value: &Value, len: usize) -> Option<&str> {
        value
            .as_str()
            .filter(|t| t.len() == len + 2 && t.starts_with("0x") && t[2..].bytes().all(|b| b.is_ascii_hexdigit()))
    }
    let valid_before = match &signed["validBefore"] {
        Value::String(text) => text.parse::<u64>().ok()?,
        other => other.as_u64()?,
    };
    Some(Authorization {
        asset: hex_of(&payload["accepted"]["asset"], 40)?.to_ascii_lowercase(),
        authorizer: hex_of(&signed["from"], 40)?.to_ascii_lowercase(),
        nonce: hex_of(&signed["nonce"], 64)?.to_ascii_lowercase(),
        valid_before,
    })
}

use paperchain_protocol::svm::BLOCKHASH_LIFETIME_SECONDS as SOLANA_BLOCKHASH_SECONDS;

/// The replay key: a hash of the signed part of the payment (the network and the
/// scheme's payload; for Solana the transaction's message, whatever fills the fee payer's
/// signature), so re-encoding the same signature differently is the same payment.
pub(super) fn payment_key(payload: &Value) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(payload["accepted"]["network"].as_str().unwrap_or("").as_bytes());
    hasher.update([0]);
    match svm::signed_message(payload) {
        Some(message) => {
            hasher.update(b"solana-message\0");
            hasher.update(&message);
        }
        None => hasher.update(canonical(&payload["payload"]).as_bytes()),
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
