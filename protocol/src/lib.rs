//! The payment protocols Paperchain speaks, for both sides: the hosted paywall that is
//! paid and the client that pays.
//!
//! - [`x402`]: x402 v2 wire names (HTTP headers, MCP `_meta` keys) and the base64 JSON
//!   encodings of PaymentRequired, PaymentPayload and SettlementResponse;
//!   [`x402::sign_exact_evm`] signs one `exact` EVM requirement as a paying client does.
//! - [`eip3009`]: the EIP-3009 `TransferWithAuthorization` message and its EIP-712 signature,
//!   which both x402's `exact` scheme on EVM chains and MPP's `evm` charge carry.
//! - [`svm`]: x402's `exact` scheme on Solana: the payer's transfer transaction (a v0
//!   message the facilitator co-signs as fee payer), built, signed and read from bytes.
//! - [`mpp`]: the MPP ("Payment" HTTP authentication) names both sides share and the
//!   client's answer to an `evm` challenge.
//!
//! What this crate must not do: know about HTTP servers, routes, the ledger or where a key
//! is kept. It takes a signer and wire values, and gives wire values back.

pub mod eip3009;
pub mod mpp;
pub mod svm;
pub mod x402;

/// Why a payment could not be built from what a server asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignError {
    /// The server's request is not one this client can read (a field missing or malformed).
    #[error("{0}")]
    Malformed(String),
    /// The scheme, network or method is not one this client pays with.
    #[error("{0}")]
    Unsupported(String),
    /// The signer failed.
    #[error("signing failed: {0}")]
    Signing(String),
}
