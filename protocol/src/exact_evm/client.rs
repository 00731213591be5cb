//! The paying client's half of `exact` on EVM: signing one offer with an EIP-3009
//! authorization.

use alloy::primitives::{Address, B256, U256};
use alloy::signers::local::PrivateKeySigner;
use serde_json::Value;

use super::{ExactEvmPayload, token_domain_of};
use crate::SignError;
use crate::eip3009::{self, TransferAuthorization, TransferWithAuthorization};
use crate::x402::{Offer, PaymentPayload, ResourceInfo, Version2, parse_amount};

/// How long before now an authorization becomes valid: a payer's clock a little ahead of
/// the chain's must not make a fresh payment "not yet valid".
pub const VALID_AFTER_SLACK_SECONDS: u64 = 600;

/// The window and nonce of one EIP-3009 authorization. Keeping it lets a payer sign the
/// very same authorization again (the same nonce: the token moves the money at most once)
/// instead of a second one, when an answer is lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuthorizationWindow {
    /// Unix time from which it is valid.
    pub valid_after: u64,
    /// Unix time before which it must be settled.
    pub valid_before: u64,
    /// Its random 32-byte nonce.
    pub nonce: B256,
}

impl AuthorizationWindow {
    /// A fresh window for `offer` at Unix time `now`: valid from `now - 600 s` until
    /// `now + maxTimeoutSeconds`, with a random nonce.
    pub fn fresh(offer: &Offer, now: u64) -> Result<AuthorizationWindow, SignError> {
        let terms = offer.exact_terms()?;
        Ok(AuthorizationWindow {
            valid_after: now.saturating_sub(VALID_AFTER_SLACK_SECONDS),
            valid_before: now.saturating_add(terms.max_timeout_seconds),
            nonce: eip3009::random_nonce(),
        })
    }
}

/// The PaymentPayload that pays `offer` (one entry of a PaymentRequired's `accepts`) with
/// a fresh EIP-3009 authorization signed by `signer` at Unix time `now` (see
/// [`AuthorizationWindow::fresh`] and [`sign_exact_evm_with`]).
pub fn sign_exact_evm(
    signer: &PrivateKeySigner,
    offer: &Offer,
    resource: Option<&ResourceInfo>,
    now: u64,
) -> Result<PaymentPayload<ExactEvmPayload, Value>, SignError> {
    sign_exact_evm_with(signer, offer, resource, &AuthorizationWindow::fresh(offer, now)?)
}

/// The PaymentPayload that pays `offer` with the EIP-3009 authorization `window` signed by
/// `signer`. Exactly the offer given is signed: its `amount` to its `payTo` in its `asset` on
/// its `network`, under the token domain its `extra` names; the offer is echoed as it was
/// sent, and `resource` when given. The same inputs give the same payload.
pub fn sign_exact_evm_with(
    signer: &PrivateKeySigner,
    offer: &Offer,
    resource: Option<&ResourceInfo>,
    window: &AuthorizationWindow,
) -> Result<PaymentPayload<ExactEvmPayload, Value>, SignError> {
    let terms = offer.exact_terms()?;
    let network = &terms.network;
    let chain_id = network
        .strip_prefix("eip155:")
        .and_then(|id| id.parse::<u64>().ok())
        .ok_or_else(|| SignError::Unsupported(format!("network `{network}` is not an EVM chain (eip155:<id>)")))?;
    let address = |key: &str, text: &str| {
        text.parse::<Address>()
            .map_err(|_| SignError::Malformed(format!("the requirement's `{key}` is not an address")))
    };
    let (asset, pay_to) = (address("asset", &terms.asset)?, address("payTo", &terms.pay_to)?);
    let value = parse_amount(&terms.amount)
        .ok_or_else(|| SignError::Malformed("the requirement's `amount` is not a whole number".into()))?;
    let Some((name, version)) = token_domain_of(terms) else {
        return Err(SignError::Unsupported(
            "the requirement's `extra` names no EIP-712 token domain (name, version): not an EIP-3009 token".into(),
        ));
    };
    let message = TransferWithAuthorization {
        from: signer.address(),
        to: pay_to,
        value,
        validAfter: U256::from(window.valid_after),
        validBefore: U256::from(window.valid_before),
        nonce: window.nonce,
    };
    let signature = eip3009::sign(signer, &message, &eip3009::token_domain(name, version, chain_id, asset))?;
    Ok(PaymentPayload {
        x402_version: Version2,
        accepted: offer.raw.clone(),
        resource: resource.cloned(),
        payload: ExactEvmPayload { signature, authorization: TransferAuthorization::of(&message) },
        extensions: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::x402::{self, SchemePayload};

    fn offer() -> Offer {
        offer_of(requirement())
    }

    fn requirement() -> Value {
        json!({
            "scheme": "exact", "network": "eip155:8453", "amount": "2000",
            "asset": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
            "payTo": "0x1111111111111111111111111111111111111111",
            "maxTimeoutSeconds": 300, "extra": {"name": "USD Coin", "version": "2"},
        })
    }

    fn offer_of(requirement: Value) -> Offer {
        serde_json::from_value(requirement).unwrap()
    }

    #[test]
    fn a_signed_payment_pays_exactly_the_requirement() {
        let signer = PrivateKeySigner::random();
        let payment = sign_exact_evm(&signer, &offer(), None, 1_000_000).unwrap();
        assert_eq!(payment.accepted, requirement());
        let auth = &payment.payload.authorization;
        assert_eq!(auth.value, "2000");
        assert_eq!(auth.to, "0x1111111111111111111111111111111111111111");
        assert_eq!(auth.from, signer.address().to_checksum(None));
        assert_eq!((auth.valid_after.as_str(), auth.valid_before.as_str()), ("999400", "1000300"));
        // The header form reads back as the server reads it: the same payment, its amount signed.
        let (raw, read) = x402::decode_payment(&x402::encode(&payment)).unwrap();
        assert_eq!(raw, serde_json::to_value(&payment).unwrap());
        assert_eq!(read.signed_amount(), Some(2000));
        assert!(matches!(read.payload, SchemePayload::Eip3009(ref evm) if evm == &payment.payload));
        // Two payments never share a nonce.
        let again = sign_exact_evm(&signer, &offer(), None, 1_000_000).unwrap();
        assert_ne!(again.payload.authorization.nonce, auth.nonce);
        // The same authorization signed again is the very same payload (one nonce, one payment).
        let kept = AuthorizationWindow::fresh(&offer(), 1_000_000).unwrap();
        let first = sign_exact_evm_with(&signer, &offer(), None, &kept).unwrap();
        let second = sign_exact_evm_with(&signer, &offer(), None, &kept).unwrap();
        assert_eq!(serde_json::to_value(&second).unwrap(), serde_json::to_value(&first).unwrap());
        assert_eq!(first.payload.authorization.nonce, kept.nonce.to_string());
    }

    #[test]
    fn the_offer_is_echoed_as_sent() {
        let mut sent = requirement();
        sent["asset"] = json!("0x833589fcd6edb6e08f4c7c32d4f71b54bda02913");
        sent["note"] = json!({"any": "field"});
        let payment = sign_exact_evm(&PrivateKeySigner::random(), &offer_of(sent.clone()), None, 0).unwrap();
        assert_eq!(payment.accepted, sent);
    }

    #[test]
    fn requirements_it_cannot_pay_are_refused_by_name() {
        let signer = PrivateKeySigner::random();
        let refuse = |change: &dyn Fn(&mut Value)| {
            let mut r = requirement();
            change(&mut r);
            sign_exact_evm(&signer, &offer_of(r), None, 0).unwrap_err().to_string()
        };
        assert!(refuse(&|r| r["scheme"] = json!("upto")).contains("scheme"));
        assert!(refuse(&|r| r["network"] = json!("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp")).contains("not an EVM"));
        assert!(refuse(&|r| r["amount"] = json!("-1")).contains("amount"));
        assert!(refuse(&|r| r["payTo"] = json!("0x12")).contains("payTo"));
        assert!(refuse(&|r| r["extra"] = json!({})).contains("EIP-712"));
        assert!(refuse(&|r| r.as_object_mut().unwrap().clear()).contains("missing field"));
        assert!(refuse(&|r| r["maxTimeoutSeconds"] = json!("300")).contains("maxTimeoutSeconds"));
    }
}
