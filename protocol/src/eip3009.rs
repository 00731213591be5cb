//! EIP-3009 `transferWithAuthorization`: the message a payer signs so that anyone (the
//! facilitator) can move exactly `value` of a token from the payer to `to`, once, between
//! `validAfter` and `validBefore`.

use alloy::primitives::{Address, B256, U256};
use alloy::signers::SignerSync as _;
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::Eip712Domain;
#[cfg(test)]
use alloy::sol_types::SolStruct as _;

use crate::SignError;

alloy::sol! {
    /// EIP-3009's signed message (the token's EIP-712 type `TransferWithAuthorization`).
    #[derive(Debug, PartialEq, Eq)]
    struct TransferWithAuthorization {
        address from;
        address to;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
    }
}

/// The token's EIP-712 domain: its `name()` and `version`, the chain and the token contract.
pub fn token_domain(name: &str, version: &str, chain_id: u64, token: Address) -> Eip712Domain {
    Eip712Domain::new(
        Some(name.to_owned().into()),
        Some(version.to_owned().into()),
        Some(U256::from(chain_id)),
        Some(token),
        None,
    )
}

/// The 65-byte EIP-712 signature of `message` under `domain`, as `0x`-prefixed hex (an
/// EIP-3009 authorization, a Permit2 transfer, an EIP-2612 permit).
pub fn sign<T: alloy::sol_types::SolStruct>(
    signer: &PrivateKeySigner,
    message: &T,
    domain: &Eip712Domain,
) -> Result<String, SignError> {
    let signature =
        signer.sign_hash_sync(&message.eip712_signing_hash(domain)).map_err(|e| SignError::Signing(e.to_string()))?;
    Ok(format!("0x{}", alloy::primitives::hex::encode(signature.as_bytes())))
}

/// A signed EIP-3009 authorization's fields as they travel in JSON (x402's `exact` EVM
/// `payload.authorization`, MPP's `evm` credential): addresses and the nonce as `0x` hex,
/// numbers as decimal text.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TransferAuthorization {
    /// The payer.
    pub from: String,
    /// The payee.
    pub to: String,
    /// Atomic units.
    pub value: String,
    /// Unix time from which it is valid.
    pub valid_after: String,
    /// Unix time before which it must be used.
    pub valid_before: String,
    /// The 32-byte nonce.
    pub nonce: String,
}

impl TransferAuthorization {
    /// The wire form of `message`.
    pub fn of(message: &TransferWithAuthorization) -> TransferAuthorization {
        TransferAuthorization {
            from: message.from.to_checksum(None),
            to: message.to.to_checksum(None),
            value: message.value.to_string(),
            valid_after: message.validAfter.to_string(),
            valid_before: message.validBefore.to_string(),
            nonce: message.nonce.to_string(),
        }
    }

    /// `validBefore` as Unix seconds, when it is one.
    pub fn valid_before_seconds(&self) -> Option<u64> {
        self.valid_before.bytes().all(|b| b.is_ascii_digit()).then(|| self.valid_before.parse().ok()).flatten()
    }
}

/// A fresh random authorization nonce (EIP-3009 nonces are random 32-byte values).
pub fn random_nonce() -> B256 {
    B256::from(rand::random::<[u8; 32]>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::signers::Signature;

    #[test]
    fn a_signature_recovers_to_the_payer() {
        let signer = PrivateKeySigner::random();
        let token: Address = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913".parse().unwrap();
        let domain = token_domain("USD Coin", "2", 8453, token);
        let message = TransferWithAuthorization {
            from: signer.address(),
            to: Address::repeat_byte(7),
            value: U256::from(2_000u64),
            validAfter: U256::ZERO,
            validBefore: U256::from(u64::MAX),
            nonce: random_nonce(),
        };
        let hex = sign(&signer, &message, &domain).unwrap();
        let bytes = alloy::primitives::hex::decode(hex.trim_start_matches("0x")).unwrap();
        let signature = Signature::try_from(bytes.as_slice()).unwrap();
        let recovered = signature.recover_address_from_prehash(&message.eip712_signing_hash(&domain)).unwrap();
        assert_eq!(recovered, signer.address());
        // Another domain (another chain) is another message: the same signature does not recover to the payer.
        let other = token_domain("USD Coin", "2", 137, token);
        let wrong = signature.recover_address_from_prehash(&message.eip712_signing_hash(&other)).unwrap();
        assert_ne!(wrong, signer.address());
    }
}
