//! x402 v2 on the wire: where each message travels and how it is encoded.
//!
//! Over HTTP (x402 v2 transport): the 402 carries the PaymentRequired object, base64 JSON,
//! in `PAYMENT-REQUIRED` (Paperchain also sends it as the body); the client repeats the
//! request with the PaymentPayload, base64 JSON, in `PAYMENT-SIGNATURE`; the paid answer
//! carries the SettlementResponse, base64 JSON, in `PAYMENT-RESPONSE`. Over MCP (the x402
//! MCP transport) the same objects travel as JSON in `_meta["x402/payment"]` and
//! `_meta["x402/payment-response"]`.

use alloy::primitives::{Address, B256, U256};
use alloy::signers::local::PrivateKeySigner;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use serde_json::{Value, json};

use crate::SignError;
use crate::eip3009::{self, TransferWithAuthorization};

/// The protocol version these names and shapes belong to.
pub const X402_VERSION: u64 = 2;
/// Request header carrying the PaymentPayload.
pub const PAYMENT_SIGNATURE: &str = "payment-signature";
/// 402 header carrying the PaymentRequired object.
pub const PAYMENT_REQUIRED: &str = "payment-required";
/// Paid answer's header carrying the SettlementResponse.
pub const PAYMENT_RESPONSE: &str = "payment-response";
/// MCP `_meta` key of a tool call's PaymentPayload.
pub const MCP_PAYMENT: &str = "x402/payment";
/// MCP `_meta` key of a paid tool result's SettlementResponse.
pub const MCP_PAYMENT_RESPONSE: &str = "x402/payment-response";
/// The one scheme Paperchain pays and is paid with: an exact amount.
pub const SCHEME_EXACT: &str = "exact";
/// The idempotency extension (`extensions/payment-identifier`): the payment's id, so a
/// server that supports it can answer a repeated payment from what it settled.
pub const PAYMENT_IDENTIFIER: &str = "payment-identifier";

/// The header form of any x402 object: base64 of its JSON.
pub fn encode(value: &Value) -> String {
    STANDARD.encode(value.to_string())
}

/// An x402 object from its header form (standard or URL-safe base64 of JSON).
pub fn decode(header: &str, name: &str) -> Result<Value, String> {
    let bytes = STANDARD
        .decode(header.trim())
        .or_else(|_| URL_SAFE.decode(header.trim()))
        .map_err(|_| format!("{name} is not base64"))?;
    serde_json::from_slice(&bytes).map_err(|_| format!("{name} is not base64 of JSON"))
}

/// The PaymentPayload of a `PAYMENT-SIGNATURE` value, checked for its shape.
pub fn decode_payment(header: &str) -> Result<Value, String> {
    check_payment(decode(header, "PAYMENT-SIGNATURE")?)
}

/// A PaymentPayload has x402 version 2 and `accepted` and `payload` objects.
pub fn check_payment(value: Value) -> Result<Value, String> {
    if value["x402Version"] != X402_VERSION {
        return Err("x402Version must be 2".into());
    }
    if !value["accepted"].is_object() {
        return Err("the payment has no `accepted` requirements".into());
    }
    if !value["payload"].is_object() {
        return Err("the payment has no `payload`".into());
    }
    Ok(value)
}

/// The SettlementResponse of a successful settlement.
pub fn settlement_response(transaction: &str, network: &str, payer: Option<&str>) -> Value {
    json!({ "success": true, "transaction": transaction, "network": network, "payer": payer })
}

/// The amount an exact payment's signature authorises: the EIP-3009 `value`, the Permit2
/// `permitted.amount`, or the amount of a Solana transaction's `TransferChecked`.
/// `Some(u64::MAX)` for an amount that cannot be read (it cannot be any quote); `None` for
/// a payload of none of these kinds.
pub fn signed_amount(payload: &Value) -> Option<u64> {
    let inner = &payload["payload"];
    if inner.get("transaction").is_some() {
        let wire = crate::svm::payload_transaction(payload);
        let tx = wire.as_deref().and_then(crate::svm::Transaction::parse);
        return Some(tx.and_then(|tx| tx.transferred_amount()).unwrap_or(u64::MAX));
    }
    let amount = inner
        .get("authorization")
        .map(|a| &a["value"])
        .or_else(|| inner.get("permit2Authorization").map(|p| &p["permitted"]["amount"]))?;
    Some(amount.as_str().and_then(|text| text.parse::<u64>().ok()).unwrap_or(u64::MAX))
}

/// How long before now an authorization becomes valid: a payer's clock a little ahead of
/// the chain's must not make a fresh payment "not yet valid".
pub const VALID_AFTER_SLACK_SECONDS: u64 = 600;

/// The window and nonce of one EIP-3009 authorization. Keeping it lets a payer sign the
/// very same authorization again (the same nonce: the token moves the money at most once)
/// instead of a second one, when an answer is lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Authorization {
    /// Unix time from which it is valid.
    pub valid_after: u64,
    /// Unix time before which it must be settled.
    pub valid_before: u64,
    /// Its random 32-byte nonce.
    pub nonce: B256,
}

impl Authorization {
    /// A fresh authorization for `requirement` at Unix time `now`: valid from `now - 600 s`
    /// until `now + maxTimeoutSeconds`, with a random nonce.
    pub fn fresh(requirement: &Value, now: u64) -> Result<Authorization, SignError> {
        let timeout = requirement["maxTimeoutSeconds"]
            .as_u64()
            .ok_or_else(|| SignError::Malformed("the requirement has no `maxTimeoutSeconds`".into()))?;
        Ok(Authorization {
            valid_after: now.saturating_sub(VALID_AFTER_SLACK_SECONDS),
            valid_before: now.saturating_add(timeout),
            nonce: eip3009::random_nonce(),
        })
    }
}

/// The PaymentPayload (JSON) that pays `requirement` (one entry of a PaymentRequired's
/// `accepts`) with a fresh EIP-3009 authorization signed by `signer` at Unix time `now`
/// (see [`Authorization::fresh`] and [`sign_exact_evm_with`]).
pub fn sign_exact_evm(
    signer: &PrivateKeySigner,
    requirement: &Value,
    resource: Option<&Value>,
    now: u64,
) -> Result<Value, SignError> {
    sign_exact_evm_with(signer, requirement, resource, &Authorization::fresh(requirement, now)?)
}

/// The PaymentPayload (JSON) that pays `requirement` with the EIP-3009 `authorization`
/// signed by `signer`. Exactly the requirement given is signed: its `amount` to its
/// `payTo` in its `asset` on its `network`, under the token domain its `extra` names;
/// `resource` is echoed when given. The same inputs give the same payload.
pub fn sign_exact_evm_with(
    signer: &PrivateKeySigner,
    requirement: &Value,
    resource: Option<&Value>,
    authorization: &Authorization,
) -> Result<Value, SignError> {
    let text = |key: &str| {
        requirement[key].as_str().ok_or_else(|| SignError::Malformed(format!("the requirement has no `{key}`")))
    };
    if text("scheme")? != SCHEME_EXACT {
        return Err(SignError::Unsupported(format!("scheme `{}` is not `exact`", text("scheme")?)));
    }
    let network = text("network")?;
    let chain_id = network
        .strip_prefix("eip155:")
        .and_then(|id| id.parse::<u64>().ok())
        .ok_or_else(|| SignError::Unsupported(format!("network `{network}` is not an EVM chain (eip155:<id>)")))?;
    let address = |key: &str| {
        text(key)?
            .parse::<Address>()
            .map_err(|_| SignError::Malformed(format!("the requirement's `{key}` is not an address")))
    };
    let (asset, pay_to) = (address("asset")?, address("payTo")?);
    let value = parse_amount(text("amount")?)
        .ok_or_else(|| SignError::Malformed("the requirement's `amount` is not a whole number".into()))?;
    let (name, version) = match (requirement["extra"]["name"].as_str(), requirement["extra"]["version"].as_str()) {
        (Some(name), Some(version)) => (name, version),
        _ => {
            return Err(SignError::Unsupported(
                "the requirement's `extra` names no EIP-712 token domain (name, version): not an EIP-3009 token".into(),
            ));
        }
    };
    let Authorization { valid_after, valid_before, nonce } = *authorization;
    let message = TransferWithAuthorization {
        from: signer.address(),
        to: pay_to,
        value,
        validAfter: U256::from(valid_after),
        validBefore: U256::from(valid_before),
        nonce,
    };
    let signature = eip3009::sign(signer, &message, &eip3009::token_domain(name, version, chain_id, asset))?;
    let mut payment = json!({ "x402Version": X402_VERSION, "accepted": requirement });
    if let Some(resource) = resource {
        payment["resource"] = resource.clone();
    }
    payment["payload"] = json!({
        "signature": signature,
        "authorization": {
            "from": message.from.to_checksum(None),
            "to": message.to.to_checksum(None),
            "value": message.value.to_string(),
            "validAfter": valid_after.to_string(),
            "validBefore": valid_before.to_string(),
            "nonce": message.nonce.to_string(),
        },
    });
    Ok(payment)
}

/// An x402 `amount`: decimal digits only (no sign, no exponent), at most 78 of them.
pub fn parse_amount(amount: &str) -> Option<U256> {
    (!amount.is_empty() && amount.len() <= 78 && amount.bytes().all(|b| b.is_ascii_digit()))
        .then(|| U256::from_str_radix(amount, 10).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requirement() -> Value {
        json!({
            "scheme": "exact", "network": "eip155:8453", "amount": "2000",
            "asset": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
            "payTo": "0x1111111111111111111111111111111111111111",
            "maxTimeoutSeconds": 300, "extra": {"name": "USD Coin", "version": "2"},
        })
    }

    #[test]
    fn a_signed_payment_pays_exactly_the_requirement() {
        let signer = PrivateKeySigner::random();
        let payment = sign_exact_evm(&signer, &requirement(), None, 1_000_000).unwrap();
        assert_eq!(payment["accepted"], requirement());
        let auth = &payment["payload"]["authorization"];
        assert_eq!(auth["value"], "2000");
        assert_eq!(auth["to"], "0x1111111111111111111111111111111111111111");
        assert_eq!(auth["from"], signer.address().to_checksum(None));
        assert_eq!((auth["validAfter"].as_str(), auth["validBefore"].as_str()), (Some("999400"), Some("1000300")));
        assert_eq!(signed_amount(&payment), Some(2000));
        // The header form decodes back to the same payload, and passes the shape check.
        assert_eq!(decode_payment(&encode(&payment)).unwrap(), payment);
        // Two payments never share a nonce.
        let again = sign_exact_evm(&signer, &requirement(), None, 1_000_000).unwrap();
        assert_ne!(again["payload"]["authorization"]["nonce"], auth["nonce"]);
        // The same authorization signed again is the very same payload (one nonce, one payment).
        let kept = Authorization::fresh(&requirement(), 1_000_000).unwrap();
        let first = sign_exact_evm_with(&signer, &requirement(), None, &kept).unwrap();
        assert_eq!(sign_exact_evm_with(&signer, &requirement(), None, &kept).unwrap(), first);
        assert_eq!(first["payload"]["authorization"]["nonce"], kept.nonce.to_string());
    }

    #[test]
    fn requirements_it_cannot_pay_are_refused_by_name() {
        let signer = PrivateKeySigner::random();
        let refuse = |change: &dyn Fn(&mut Value)| {
            let mut r = requirement();
            change(&mut r);
            sign_exact_evm(&signer, &r, None, 0).unwrap_err().to_string()
        };
        assert!(refuse(&|r| r["scheme"] = json!("upto")).contains("scheme"));
        assert!(refuse(&|r| r["network"] = json!("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp")).contains("not an EVM"));
        assert!(refuse(&|r| r["amount"] = json!("-1")).contains("amount"));
        assert!(refuse(&|r| r["payTo"] = json!("0x12")).contains("payTo"));
        assert!(refuse(&|r| r["extra"] = json!({})).contains("EIP-712"));
    }

    #[test]
    fn payments_of_the_wrong_shape_are_refused() {
        assert_eq!(decode_payment("%%%").unwrap_err(), "PAYMENT-SIGNATURE is not base64");
        assert!(decode_payment(&STANDARD.encode("nope")).unwrap_err().contains("not base64 of JSON"));
        assert!(check_payment(json!({"x402Version": 1})).unwrap_err().contains("x402Version"));
        assert!(check_payment(json!({"x402Version": 2, "accepted": {}})).unwrap_err().contains("payload"));
        assert_eq!(signed_amount(&json!({"payload": {"authorization": {"value": "1e9"}}})), Some(u64::MAX));
        assert_eq!(signed_amount(&json!({"payload": {"transaction": "..."}})), Some(u64::MAX));
        assert_eq!(signed_amount(&json!({"payload": {"other": "..."}})), None);
    }
}
