//! MPP, the "Payment" HTTP authentication scheme (tempoxyz/mpp-specs drafts): the names both
//! sides use, the EIP-3009 nonce a challenge binds, the `evm` charge's credential payload,
//! and the client's answer to an `evm` challenge ([`client`]). Issuing and checking
//! challenges is the server's (hosted/src/mpp/mod.rs).

use alloy::primitives::{B256, keccak256};
use serde::{Deserialize, Serialize};

use crate::eip3009::TransferAuthorization;

pub mod client;

pub use client::sign_evm_credential;
pub use mpp::{AUTHORIZATION_HEADER, PAYMENT_RECEIPT_HEADER, WWW_AUTHENTICATE_HEADER};

/// `Cache-Control` of every 402 that carries challenges (core "Caching").
pub const CACHE_CONTROL_CHALLENGE: &str = "no-store";
/// `Cache-Control` of a response that carries a `Payment-Receipt` (core "Caching").
pub const CACHE_CONTROL_RECEIPT: &str = "private";

/// The method name of the EVM charge (evm "IANA Considerations").
pub const METHOD_EVM: &str = "evm";
/// The method name of the Tempo charge.
pub const METHOD_TEMPO: &str = "tempo";
/// The only intent Paperchain offers and pays.
pub const INTENT_CHARGE: &str = "charge";
/// EIP-3009 credential type (evm "Authorization Payload").
pub const CREDENTIAL_TYPE_AUTHORIZATION: &str = "authorization";

/// The EIP-3009 nonce the evm draft requires: keccak256(abi.encodePacked(id, realm)).
pub fn challenge_hash(id: &str, realm: &str) -> B256 {
    let mut packed = Vec::with_capacity(id.len() + realm.len());
    packed.extend_from_slice(id.as_bytes());
    packed.extend_from_slice(realm.as_bytes());
    keccak256(packed)
}

/// The payload of an `evm` credential of type `authorization` (evm "Authorization
/// Payload"): the EIP-3009 authorization's fields and its signature, beside the type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthorizationPayload {
    /// Always [`CREDENTIAL_TYPE_AUTHORIZATION`].
    #[serde(rename = "type")]
    pub kind: String,
    /// What it authorizes.
    #[serde(flatten)]
    pub authorization: TransferAuthorization,
    /// The 65-byte signature, `0x` hex.
    pub signature: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nonce_binds_id_and_realm() {
        assert_eq!(challenge_hash("ab", "c"), keccak256(b"abc"));
        assert_ne!(challenge_hash("a", "bc"), challenge_hash("a", "bd"));
    }
}
