//! The paying client's half of MPP: answering an `evm` challenge with a signed EIP-3009
//! authorization.

use std::str::FromStr as _;

use alloy::primitives::{Address, U256};
use alloy::signers::local::PrivateKeySigner;
use mpp::PaymentCredential;
use serde_json::Value;
use time::OffsetDateTime;

use super::{AuthorizationPayload, CREDENTIAL_TYPE_AUTHORIZATION, METHOD_EVM, challenge_hash};
use crate::SignError;
use crate::eip3009::{self, TransferAuthorization, TransferWithAuthorization};

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
    let payload = AuthorizationPayload {
        kind: CREDENTIAL_TYPE_AUTHORIZATION.to_string(),
        authorization: TransferAuthorization::of(&message),
        signature,
    };
    let payload = serde_json::to_value(payload).map_err(|error| SignError::Malformed(error.to_string()))?;
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
    fn only_evm_challenges_are_signed() {
        let signer = PrivateKeySigner::random();
        let tempo = r#"Payment id="x", realm="r", method="tempo", intent="charge", request="e30""#;
        let error = sign_evm_credential(tempo, &signer, "USD Coin", "2").unwrap_err();
        assert!(matches!(error, SignError::Unsupported(_) | SignError::Malformed(_)), "{error:?}");
        assert!(sign_evm_credential("Basic abc", &signer, "USD Coin", "2").is_err());
    }
}
