//! x402 v2 on the wire: where each message travels, how it is encoded, and the messages
//! themselves as types ([`messages`]).
//!
//! Over HTTP (x402 v2 transport): the 402 carries the PaymentRequired object, base64 JSON,
//! in `PAYMENT-REQUIRED` (Paperchain also sends it as the body); the client repeats the
//! request with the PaymentPayload, base64 JSON, in `PAYMENT-SIGNATURE`; the paid answer
//! carries the SettlementResponse, base64 JSON, in `PAYMENT-RESPONSE`. Over MCP (the x402
//! MCP transport) the same objects travel as JSON in `_meta["x402/payment"]` and
//! `_meta["x402/payment-response"]`.
//!
//! A message is read once, where it arrives ([`decode`], [`decode_payment`]), into its type;
//! the code behind works with fields, not JSON paths.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub mod messages;

pub use messages::{
    Offer, PaymentPayload, PaymentRequired, Permit2Payload, Requirements, ResourceInfo, SchemePayload,
    SettlementResponse, Version2, payment_id,
};

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
/// The scheme of an exact amount, known before the work.
pub const SCHEME_EXACT: &str = "exact";
/// The scheme of an amount known after the work, up to a maximum the payer signs (EVM,
/// through Permit2).
pub const SCHEME_UPTO: &str = "upto";
/// The scheme of a deposit into an escrow channel and a signed cumulative voucher per call,
/// claimed in batches (EVM).
pub const SCHEME_BATCH: &str = "batch-settlement";
/// The extension by which a facilitator submits the payer's EIP-2612 permit for Permit2,
/// so an `upto` payer needs no gas for the approval.
pub const EIP2612_GAS_SPONSORING: &str = "eip2612GasSponsoring";
/// The idempotency extension (`extensions/payment-identifier`): the payment's id, so a
/// server that supports it can answer a repeated payment from what it settled.
pub const PAYMENT_IDENTIFIER: &str = "payment-identifier";
/// Shortest and longest payment id the `payment-identifier` extension allows.
pub const PAYMENT_ID_LENGTH: std::ops::RangeInclusive<usize> = 16..=128;

/// The header form of any x402 message: base64 of its JSON.
pub fn encode<T: Serialize + ?Sized>(message: &T) -> String {
    STANDARD.encode(serde_json::to_vec(message).expect("an x402 message serializes to JSON"))
}

/// An x402 message from its header form (standard or URL-safe base64 of JSON); `name` (the
/// header's) opens each error.
pub fn decode<T: DeserializeOwned>(header: &str, name: &str) -> Result<T, String> {
    let bytes = STANDARD
        .decode(header.trim())
        .or_else(|_| URL_SAFE.decode(header.trim()))
        .map_err(|_| format!("{name} is not base64"))?;
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|_| format!("{name} is not base64 of JSON"))?;
    read(value, name)
}

/// An x402 message from its JSON (a 402's body, an MCP `_meta` value).
pub fn read<T: DeserializeOwned>(value: serde_json::Value, name: &str) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|error| match error.path().to_string() {
        path if path == "." => format!("{name} does not read: {}", error.inner()),
        path => format!("{name} does not read: `{path}`: {}", error.inner()),
    })
}

/// The PaymentPayload of a `PAYMENT-SIGNATURE` value: the payment as sent (what goes to the
/// facilitator, which checks the signature over exactly these values) and as read.
pub fn decode_payment(header: &str) -> Result<(serde_json::Value, PaymentPayload), String> {
    let raw: serde_json::Value = decode(header, "PAYMENT-SIGNATURE")?;
    let payment = read(raw.clone(), "the payment")?;
    Ok((raw, payment))
}

/// An x402 `amount`: decimal digits only (no sign, no exponent), at most 78 of them.
pub fn parse_amount(amount: &str) -> Option<alloy::primitives::U256> {
    (!amount.is_empty() && amount.len() <= 78 && amount.bytes().all(|b| b.is_ascii_digit()))
        .then(|| alloy::primitives::U256::from_str_radix(amount, 10).ok())
        .flatten()
}
