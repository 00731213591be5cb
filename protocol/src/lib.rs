//! The payment protocols Paperchain speaks, for both sides: the hosted paywall that is
//! paid and the client that pays.
//!
//! By scheme, each with the paying client's half (`client`) and, where the paid side reads
//! more than the shared types, the server's (`server`):
//!
//! - [`x402`]: x402 v2 wire names (HTTP headers, MCP `_meta` keys, extensions), the base64
//!   JSON codec, and the messages as types: PaymentRequired, PaymentPayload (with each
//!   scheme's payload), SettlementResponse ([`x402::messages`]).
//! - [`exact_evm`]: x402's `exact` scheme on EVM chains with EIP-3009; the client signs an
//!   offer ([`exact_evm::sign_exact_evm`]).
//! - [`upto_evm`]: x402's `upto` scheme on EVM chains: a Permit2 transfer of at most the
//!   offer's amount, settled for what the work used by the facilitator the offer names; the
//!   EIP-2612 permit that gives Permit2 its allowance without gas.
//! - [`batch_evm`]: x402's `batch-settlement` scheme on EVM chains: a deposit into an
//!   escrow channel, a signed cumulative voucher per call, the escrow's calls the service
//!   makes to claim, sweep and refund.
//! - [`exact_svm`]: x402's `exact` scheme on Solana: the payer's transfer transaction (a v0
//!   message the facilitator co-signs as fee payer), built, signed and read from bytes; the
//!   server's checks before spending work on a payment.
//! - [`mpp`]: the MPP ("Payment" HTTP authentication) names both sides share, the `evm`
//!   credential payload, and the client's answer to an `evm` challenge.
//! - [`eip3009`]: the EIP-3009 `TransferWithAuthorization` message, its EIP-712 signature and
//!   its JSON form, which both x402's `exact` EVM scheme and MPP's `evm` charge carry.
//!
//! What this crate must not do: know about HTTP servers, routes, the ledger or where a key
//! is kept. It takes a signer and wire values, and gives wire values back.

pub mod batch_evm;
pub mod eip3009;
pub mod exact_evm;
pub mod exact_svm;
pub mod mpp;
pub mod upto_evm;
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
