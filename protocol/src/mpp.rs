//! MPP, the "Payment" HTTP authentication scheme (tempoxyz/mpp-specs drafts): the names both
//! sides use, the EIP-3009 nonce a challenge binds, and the client's answer to an `evm`
//! challenge. Issuing and checking challenges is the server's (hosted/src/mpp/mod.rs).

use std::str::FromStr as _;

use alloy::primitives::{Address, B256, U256, keccak256};
use alloy::signers::local::PrivateKeySigner;
use mpp::PaymentCredential;
use serde_json::{Value, json};
use time::OffsetDateTime;

use crate::SignError;
use crate::eip3009::{self, TransferWithAuthorization};

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

/// Answers an `evm` challenge (one `WWW-Authenticate: Payment` value) with an EIP-3009
/// authorization signed by `signer` for the token whose EIP-712 domain is
/// `token_name`/`token_version`, as a wallet does. Returns the `Authorization` header value.
pub fn sign_evm_credential(
    www_authenticate: &str,
    signer: &PrivateKeySigner,
    token_name: &str,
    token_version: &str,
) -> Result<String, SignError> {
    let challenge =
        mpp::parse_www_authenticate(www_authenticate).map_err(|error| SignError::Malformed(error.to_string()))?;
    if challenge.method.as_str() != METHOD_EVM {
        return Err(SignError::Unsupported(format!("cannot sign a `{}` challenge", challenge.method)));
    }
    let request: Value = challenge.request.decode_value().map_err(|error| SignError::Malformed(error.to_string()))?;
    let field = |name: &str| request.get(name).and_then(Value::as_str).unwrap_or_default();
    let bad = |what: &str| SignError::Malformed(format!("challenge request has no valid {what}"));
    let amount = U256::from_str_radix(field("amount"), 10).map_err(|_| bad("amount"))?;
    let currency = Address::from_str(field("currency")).map_err(|_| bad("currency"))?;
    let recipient = Address::from_str(field("recipient")).map_err(|_| bad("recipient"))?;
    let chain_id = request.pointer("/methodDetails/chainId").and_then(Value::as_u64).ok_or_else(|| bad("chainId"))?;
    let valid_before = challenge
        .expires_at()
        .map(OffsetDateTime::unix_timestamp)
        .and_then(|secs| u64::try_from(secs).ok())
        .ok_or_else(|| bad("expires"))?;
    let nonce = challenge_hash(&challenge.id, &challenge.realm);
    let message = TransferWithAuthorization {
        from: signer.address(),
        to: recipient,
        value: amount,
        validAfter: U256::ZERO,
        validBefore: U256::from(valid_before),
        nonce,
    };
    let domain = eip3009::token_domain(token_name, token_version, chain_id, currency);
    let signature = eip3009::sign(signer, &message, &domain)?;
    let payload = json!({
        "type": CREDENTIAL_TYPE_AUTHORIZATION,
        "from": signer.address().to_checksum(None),
        "to": recipient.to_checksum(None),
        "value": amount.to_string(),
        "validAfter": "0",
        "validBefore": valid_before.to_string(),
        "nonce": nonce.to_string(),
        "signature": signature,
    });
    let credential = PaymentCredential::with_source(
        challenge.to_echo(),
        PaymentCredential::evm_did(chain_id, &signer.address().to_checksum(None)),
        payload,
    );
    mpp::format_authorization(&credential).map_err(|error| SignError::Malformed(error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nonce_binds_id_and_realm() {
        assert_eq!(challenge_hash("ab", "c"), keccak256(b"abc"));
        assert_ne!(challenge_hash("a", "bc"), challenge_hash("a", "bd"));
    }

    #[test]
    fn only_evm_challenges_are_signed() {
        let signer = PrivateKeySigner::random();
        let tempo = r#"Payment id="x", realm="r", method="tempo", intent="charge", request="e30""#;
        let error = sign_evm_credential(tempo, &signer, "USD Coin", "2").unwrap_err();
        assert!(matches!(error, SignError::Unsupported(_) | SignError::Malformed(_)), "{error:?}");
        assert!(sign_evm_credential("Basic abc", &signer, "USD Coin", "2").is_err());
    }
}
