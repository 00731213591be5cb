//! x402 v2 payments made as Paperchain's paying client makes them (`paperchain-protocol`'s
//! `exact_evm::sign_exact_evm`, the signer the wallet uses), and edited by hand for the tests of what a
//! server must refuse. The reference clients pay the sandbox in their own tests (x402-rs's
//! in hosted/tests/it/paid.rs, the TypeScript ones in tests/ and mcp-bridge/tests).
//!
//! A `PAYMENT-SIGNATURE` header is the base64 of the PaymentPayload's JSON; MCP carries the
//! JSON itself in `_meta["x402/payment"]`.

use std::time::{SystemTime, UNIX_EPOCH};

use alloy::signers::local::PrivateKeySigner;
use serde_json::Value;

pub use paperchain_protocol::eip3009::TransferWithAuthorization;

/// The `PAYMENT-SIGNATURE` value `signer` makes for one x402 v2 requirement (an entry of a
/// 402's `accepts`), valid from now.
pub async fn sign_x402(signer: &PrivateKeySigner, requirement: &Value) -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).expect("a clock after 1970").as_secs();
    let offer: paperchain_protocol::x402::Offer =
        serde_json::from_value(requirement.clone()).expect("an entry of `accepts` is JSON");
    let payment = paperchain_protocol::exact_evm::sign_exact_evm(signer, &offer, None, now)
        .unwrap_or_else(|e| panic!("signing an x402 payment for {requirement}: {e}"));
    paperchain_protocol::x402::encode(&payment)
}

/// The x402 v2 PaymentPayload (JSON, as `_meta["x402/payment"]` carries it) that `signer`
/// makes for one requirement: [`sign_x402`]'s header, decoded.
pub async fn sign_x402_payload(signer: &PrivateKeySigner, requirement: &Value) -> Value {
    decode_x402(&sign_x402(signer, requirement).await)
}

/// The JSON in an x402 header value (`PAYMENT-SIGNATURE`, `PAYMENT-REQUIRED`,
/// `PAYMENT-RESPONSE`: base64 JSON); panics when it is not that.
pub fn decode_x402(header: &str) -> Value {
    paperchain_protocol::x402::decode(header, "the payment header").unwrap_or_else(|e| panic!("{e}"))
}

/// The header value of `payment` (base64 of its JSON).
pub fn encode_x402(payment: &Value) -> String {
    paperchain_protocol::x402::encode(payment)
}

/// `header` after `change` edited its PaymentPayload (`accepted` and the EIP-3009
/// `payload.authorization`), re-signed by `signer` over the edited authorization, as a
/// client signing other terms would have: the signature is valid, only the terms differ.
pub async fn tamper_x402(signer: &PrivateKeySigner, header: &str, change: impl FnOnce(&mut Value)) -> String {
    use alloy::primitives::{Address, B256, U256};
    use paperchain_protocol::eip3009;
    let mut payment = decode_x402(header);
    change(&mut payment);
    let chain_id: u64 = payment["accepted"]["network"]
        .as_str()
        .and_then(|n| n.strip_prefix("eip155:"))
        .and_then(|id| id.parse().ok())
        .expect("an eip155 network");
    let token: Address = payment["accepted"]["asset"].as_str().and_then(|a| a.parse().ok()).expect("asset");
    let (name, version) = (
        payment["accepted"]["extra"]["name"].as_str().expect("extra.name").to_string(),
        payment["accepted"]["extra"]["version"].as_str().expect("extra.version").to_string(),
    );
    let authorization = &payment["payload"]["authorization"];
    let field = |key: &str| authorization[key].as_str().unwrap_or_else(|| panic!("{key} in {authorization}"));
    let number = |key: &str| field(key).parse::<U256>().unwrap_or_else(|e| panic!("{key}: {e}"));
    let message = TransferWithAuthorization {
        from: field("from").parse().expect("from"),
        to: field("to").parse().expect("to"),
        value: number("value"),
        validAfter: number("validAfter"),
        validBefore: number("validBefore"),
        nonce: field("nonce").parse::<B256>().expect("nonce"),
    };
    let domain = eip3009::token_domain(&name, &version, chain_id, token);
    let signature = eip3009::sign(signer, &message, &domain).expect("signing");
    payment["payload"]["signature"] = serde_json::json!(signature);
    encode_x402(&payment)
}
