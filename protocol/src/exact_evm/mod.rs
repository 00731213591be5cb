//! x402's `exact` scheme on EVM chains with EIP-3009 (`transferWithAuthorization`): the
//! payload both sides read ([`ExactEvmPayload`]), the token's EIP-712 domain a requirement
//! names in its `extra`, and the paying client's half ([`client`]). The server's half is
//! reading the payload (the paywall) and the facilitator's verification.

use serde::{Deserialize, Serialize};

use crate::eip3009::TransferAuthorization;
use crate::x402::Requirements;

pub mod client;

pub use client::{AuthorizationWindow, VALID_AFTER_SLACK_SECONDS, sign_exact_evm, sign_exact_evm_with};

/// The payload of an `exact` EVM payment: the EIP-3009 authorization and its signature.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExactEvmPayload {
    /// The 65-byte signature, `0x` hex.
    pub signature: String,
    /// What it authorizes.
    pub authorization: TransferAuthorization,
}

/// The EIP-712 domain name and version of the token a requirement names in `extra`
/// (`{"name": "USD Coin", "version": "2"}`): what tells an EIP-3009 token.
pub fn token_domain_of(requirements: &Requirements) -> Option<(&str, &str)> {
    Some((requirements.extra_text("name")?, requirements.extra_text("version")?))
}
