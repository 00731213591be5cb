//! x402's `upto` scheme on EVM chains: the payer signs a Permit2 transfer of at most the
//! offer's `amount` to its `payTo`, which only the facilitator the offer names may settle,
//! for what the work used. The paying client's half: the Permit2 authorization
//! ([`sign_upto_evm`]) and, when the payer's Permit2 allowance is short, the EIP-2612 permit
//! a facilitator that sponsors gas submits first ([`sign_permit2_allowance`], x402's
//! `eip2612GasSponsoring`).
//!
//! What this file must not do: read the chain. The payer's Permit2 allowance and token nonce
//! are the caller's to look up.

use alloy::primitives::{Address, U256, address};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::Eip712Domain;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::SignError;
use crate::eip3009::{sign, token_domain};
use crate::exact_evm::token_domain_of;
use crate::x402::{EIP2612_GAS_SPONSORING, Offer, PaymentPayload, ResourceInfo, Version2, parse_amount};

/// The canonical Permit2 contract (the same address on every EVM chain).
pub const PERMIT2: Address = address!("0x000000000022D473030F116dDEE9F6B43aC78BA3");
/// x402's `upto` Permit2 proxy: the spender of every `upto` authorization.
pub const UPTO_PROXY: Address = address!("0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002");

alloy::sol! {
    /// Permit2's token and most amount.
    #[derive(Debug, PartialEq, Eq)]
    struct TokenPermissions {
        address token;
        uint256 amount;
    }

    /// The `upto` proxy's witness: who is paid, the one facilitator that may settle, and
    /// from when.
    #[derive(Debug, PartialEq, Eq)]
    struct Witness {
        address to;
        address facilitator;
        uint256 validAfter;
    }

    /// Permit2's signed transfer with the `upto` witness.
    #[derive(Debug, PartialEq, Eq)]
    struct PermitWitnessTransferFrom {
        TokenPermissions permitted;
        address spender;
        uint256 nonce;
        uint256 deadline;
        Witness witness;
    }

    /// EIP-2612's permit: `spender` may move `value` of the owner's tokens.
    #[derive(Debug, PartialEq, Eq)]
    struct Permit {
        address owner;
        address spender;
        uint256 value;
        uint256 nonce;
        uint256 deadline;
    }
}

/// Where Permit2 marks an unordered `nonce` used: the word of the owner's nonce bitmap
/// (`nonceBitmap(owner, word)`) and the bit in it.
pub fn nonce_bit(nonce: U256) -> (U256, usize) {
    (nonce >> 8, (nonce & U256::from(0xff)).to::<usize>())
}

/// The payload of an `upto` EVM payment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UptoEvmPayload {
    /// The 65-byte signature of the Permit2 transfer, `0x` hex.
    pub signature: String,
    /// What it authorizes.
    pub permit2_authorization: UptoAuthorization,
}

/// A signed `upto` authorization's fields as they travel: addresses checksummed, numbers as
/// decimal text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UptoAuthorization {
    /// The token and the most that may move.
    pub permitted: Permitted,
    /// The payer.
    pub from: String,
    /// The `upto` proxy.
    pub spender: String,
    /// Permit2's unordered nonce (random).
    pub nonce: String,
    /// Unix time after which it cannot be settled.
    pub deadline: String,
    /// Who is paid, by whom it is settled, and from when.
    pub witness: WitnessFields,
}

/// [`Permitted`] on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Permitted {
    /// The token.
    pub token: String,
    /// The most, atomic units.
    pub amount: String,
}

/// [`Witness`] on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WitnessFields {
    /// Who is paid.
    pub to: String,
    /// The facilitator that may settle it.
    pub facilitator: String,
    /// Unix time from which it is valid.
    pub valid_after: String,
}

/// What an `upto` offer asks to be signed: read from its terms, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UptoTerms {
    /// The chain.
    pub chain_id: u64,
    /// The token.
    pub asset: Address,
    /// Who is paid.
    pub pay_to: Address,
    /// The most that may be charged, atomic units.
    pub max: U256,
    /// The facilitator that settles (`extra.facilitatorAddress`).
    pub facilitator: Address,
    /// The token's EIP-712 name and version (`extra`), for an EIP-2612 permit.
    pub token_domain: Option<(String, String)>,
    /// How long the payment may take to settle.
    pub max_timeout_seconds: u64,
}

impl UptoTerms {
    /// The terms of `offer`, an `upto` offer on an EVM chain.
    pub fn of(offer: &Offer) -> Result<UptoTerms, SignError> {
        let terms = offer.upto_terms()?;
        let network = &terms.network;
        let chain_id = network
            .strip_prefix("eip155:")
            .and_then(|id| id.parse::<u64>().ok())
            .ok_or_else(|| SignError::Unsupported(format!("network `{network}` is not an EVM chain (eip155:<id>)")))?;
        let address = |key: &str, text: Option<&str>| {
            text.and_then(|t| t.parse::<Address>().ok())
                .ok_or_else(|| SignError::Malformed(format!("the requirement's `{key}` is not an address")))
        };
        let max = parse_amount(&terms.amount)
            .ok_or_else(|| SignError::Malformed("the requirement's `amount` is not a whole number".into()))?;
        Ok(UptoTerms {
            chain_id,
            asset: address("asset", Some(&terms.asset))?,
            pay_to: address("payTo", Some(&terms.pay_to))?,
            max,
            facilitator: address("extra.facilitatorAddress", terms.extra_text("facilitatorAddress"))?,
            token_domain: token_domain_of(terms).map(|(n, v)| (n.to_string(), v.to_string())),
            max_timeout_seconds: terms.max_timeout_seconds,
        })
    }

    /// Permit2's domain on this chain.
    fn permit2_domain(&self) -> Eip712Domain {
        Eip712Domain::new(Some("Permit2".into()), None, Some(U256::from(self.chain_id)), Some(PERMIT2), None)
    }
}

/// The window and nonce of one `upto` authorization; keeping it lets a payer sign the very
/// same authorization again (one nonce: Permit2 moves the money at most once).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UptoWindow {
    /// Unix time from which it is valid.
    pub valid_after: u64,
    /// Unix time after which it cannot be settled.
    pub deadline: u64,
    /// Permit2's nonce: random, so two payments never share one.
    pub nonce: U256,
}

impl UptoWindow {
    /// A fresh window for `terms` at Unix time `now`: valid from `now - 600 s` until
    /// `now + maxTimeoutSeconds`, with a random nonce.
    pub fn fresh(terms: &UptoTerms, now: u64) -> UptoWindow {
        UptoWindow {
            valid_after: now.saturating_sub(crate::exact_evm::VALID_AFTER_SLACK_SECONDS),
            deadline: now.saturating_add(terms.max_timeout_seconds),
            nonce: U256::from_be_bytes(rand::random::<[u8; 32]>()),
        }
    }
}

/// The PaymentPayload that pays `offer` (an `upto` entry of a PaymentRequired's `accepts`):
/// a Permit2 transfer of at most its `amount` of its `asset` to its `payTo`, settled only by
/// the facilitator its `extra.facilitatorAddress` names, within `window`. `allowance`, when
/// given, is the EIP-2612 permit for Permit2 ([`sign_permit2_allowance`]) carried in the
/// `eip2612GasSponsoring` extension.
pub fn sign_upto_evm(
    signer: &PrivateKeySigner,
    offer: &Offer,
    resource: Option<&ResourceInfo>,
    window: &UptoWindow,
    allowance: Option<Value>,
) -> Result<PaymentPayload<UptoEvmPayload, Value>, SignError> {
    let terms = UptoTerms::of(offer)?;
    let message = PermitWitnessTransferFrom {
        permitted: TokenPermissions { token: terms.asset, amount: terms.max },
        spender: UPTO_PROXY,
        nonce: window.nonce,
        deadline: U256::from(window.deadline),
        witness: Witness {
            to: terms.pay_to,
            facilitator: terms.facilitator,
            validAfter: U256::from(window.valid_after),
        },
    };
    let signature = sign(signer, &message, &terms.permit2_domain())?;
    let mut extensions = serde_json::Map::new();
    if let Some(allowance) = allowance {
        extensions.insert(EIP2612_GAS_SPONSORING.into(), json!({ "info": allowance }));
    }
    Ok(PaymentPayload {
        x402_version: Version2,
        accepted: offer.raw.clone(),
        resource: resource.cloned(),
        payload: UptoEvmPayload {
            signature,
            permit2_authorization: UptoAuthorization {
                permitted: Permitted { token: terms.asset.to_checksum(None), amount: terms.max.to_string() },
                from: signer.address().to_checksum(None),
                spender: UPTO_PROXY.to_checksum(None),
                nonce: window.nonce.to_string(),
                deadline: window.deadline.to_string(),
                witness: WitnessFields {
                    to: terms.pay_to.to_checksum(None),
                    facilitator: terms.facilitator.to_checksum(None),
                    valid_after: window.valid_after.to_string(),
                },
            },
        },
        extensions,
    })
}

/// The `eip2612GasSponsoring` info that lets Permit2 move `value` of the offer's token for
/// the payer: an EIP-2612 permit signed under the token's domain (the offer's `extra`) with
/// the payer's current token `nonce`, valid until `deadline` (at least the authorization's).
pub fn sign_permit2_allowance(
    signer: &PrivateKeySigner,
    offer: &Offer,
    value: U256,
    nonce: U256,
    deadline: u64,
) -> Result<Value, SignError> {
    let terms = UptoTerms::of(offer)?;
    let Some((name, version)) = &terms.token_domain else {
        return Err(SignError::Unsupported(
            "the requirement's `extra` names no EIP-712 token domain (name, version), which an EIP-2612 permit needs"
                .into(),
        ));
    };
    let permit = Permit { owner: signer.address(), spender: PERMIT2, value, nonce, deadline: U256::from(deadline) };
    let signature = sign(signer, &permit, &token_domain(name, version, terms.chain_id, terms.asset))?;
    Ok(json!({
        "from": signer.address().to_checksum(None),
        "asset": terms.asset.to_checksum(None),
        "spender": PERMIT2.to_checksum(None),
        "amount": value.to_string(),
        "nonce": nonce.to_string(),
        "deadline": deadline.to_string(),
        "signature": signature,
        "version": "1",
    }))
}

#[cfg(test)]
mod tests {
    use alloy::signers::Signature;
    use alloy::sol_types::SolStruct as _;

    use super::*;
    use crate::x402::{self, SchemePayload};

    fn offer() -> Offer {
        serde_json::from_value(json!({
            "scheme": "upto", "network": "eip155:8453", "amount": "43000",
            "asset": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
            "payTo": "0x1111111111111111111111111111111111111111", "maxTimeoutSeconds": 300,
            "extra": {"name": "USD Coin", "version": "2", "facilitatorAddress": "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"},
        }))
        .unwrap()
    }

    fn recovered(signature: &str, hash: alloy::primitives::B256) -> Address {
        let bytes = alloy::primitives::hex::decode(signature.trim_start_matches("0x")).unwrap();
        Signature::try_from(bytes.as_slice()).unwrap().recover_address_from_prehash(&hash).unwrap()
    }

    #[test]
    fn a_nonce_is_a_bit_of_a_bitmap_word() {
        assert_eq!(nonce_bit(U256::from(3 * 256 + 5)), (U256::from(3), 5));
        assert_eq!(nonce_bit(U256::MAX), (U256::MAX >> 8, 255));
    }

    #[test]
    fn the_witness_type_is_the_one_the_upto_proxy_hashes() {
        // The proxy appends its witness type string to Permit2's stub; EIP-712 orders the
        // referenced types by name, so the whole type must read exactly so.
        assert_eq!(
            PermitWitnessTransferFrom::eip712_encode_type(),
            "PermitWitnessTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline,\
             Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,address facilitator,\
             uint256 validAfter)"
        );
    }

    #[test]
    fn an_upto_payment_authorizes_the_most_for_the_named_facilitator_only() {
        let signer = PrivateKeySigner::random();
        let terms = UptoTerms::of(&offer()).unwrap();
        let window = UptoWindow::fresh(&terms, 1_000_000);
        assert_eq!((window.valid_after, window.deadline), (999_400, 1_000_300));
        let payment = sign_upto_evm(&signer, &offer(), None, &window, None).unwrap();
        let auth = &payment.payload.permit2_authorization;
        assert_eq!(auth.permitted.amount, "43000");
        assert_eq!(auth.spender, "0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002");
        assert_eq!(auth.witness.facilitator, "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266");
        assert_eq!(auth.witness.to, "0x1111111111111111111111111111111111111111");
        assert!(payment.extensions.is_empty());
        let message = PermitWitnessTransferFrom {
            permitted: TokenPermissions { token: terms.asset, amount: U256::from(43_000) },
            spender: UPTO_PROXY,
            nonce: window.nonce,
            deadline: U256::from(window.deadline),
            witness: Witness { to: terms.pay_to, facilitator: terms.facilitator, validAfter: U256::from(999_400) },
        };
        let hash = message.eip712_signing_hash(&terms.permit2_domain());
        assert_eq!(recovered(&payment.payload.signature, hash), signer.address());
        // Read back as the server reads it: a Permit2 payload whose signed amount is the most.
        let (_, read) = x402::decode_payment(&x402::encode(&payment)).unwrap();
        assert!(matches!(read.payload, SchemePayload::Permit2(_)));
        assert_eq!(read.signed_amount(), Some(43_000));
        // Without a facilitator to bind, or as an `exact` offer, nothing is signed.
        let mut raw = offer().raw;
        raw["extra"].as_object_mut().unwrap().remove("facilitatorAddress");
        let error = UptoTerms::of(&serde_json::from_value(raw).unwrap()).unwrap_err().to_string();
        assert!(error.contains("facilitatorAddress"), "{error}");
        let mut raw = offer().raw;
        raw["scheme"] = json!("exact");
        assert!(UptoTerms::of(&serde_json::from_value(raw).unwrap()).is_err());
    }

    #[test]
    fn the_allowance_permit_is_for_permit2_under_the_tokens_domain() {
        let signer = PrivateKeySigner::random();
        let info = sign_permit2_allowance(&signer, &offer(), U256::from(43_000), U256::from(3), 1_000_300).unwrap();
        assert_eq!(info["spender"], "0x000000000022D473030F116dDEE9F6B43aC78BA3");
        assert_eq!((info["amount"].as_str(), info["nonce"].as_str()), (Some("43000"), Some("3")));
        let permit = Permit {
            owner: signer.address(),
            spender: PERMIT2,
            value: U256::from(43_000),
            nonce: U256::from(3),
            deadline: U256::from(1_000_300),
        };
        let terms = UptoTerms::of(&offer()).unwrap();
        let hash = permit.eip712_signing_hash(&token_domain("USD Coin", "2", 8453, terms.asset));
        assert_eq!(recovered(info["signature"].as_str().unwrap(), hash), signer.address());
        let payment =
            sign_upto_evm(&signer, &offer(), None, &UptoWindow::fresh(&terms, 1_000_000), Some(info.clone())).unwrap();
        assert_eq!(payment.extensions[EIP2612_GAS_SPONSORING]["info"], info);
    }
}
