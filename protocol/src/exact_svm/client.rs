//! The paying client's half of `exact` on Solana: what an offer asks, and the payload that
//! pays it. Building the transfer needs the chain (the mint's program and decimals, a
//! recent blockhash): the wallet does that and signs with [`super::sign_transfer`].

use serde_json::Value;

use super::{Address, ExactSvmPayload, address};
use crate::SignError;
use crate::x402::{Offer, PaymentPayload, ResourceInfo, Version2, parse_amount};

/// The PaymentPayload for `offer` carrying the signed transaction `wire`; the offer is
/// echoed as it was sent.
pub fn payment(offer: &Offer, resource: Option<&ResourceInfo>, wire: &[u8]) -> PaymentPayload<ExactSvmPayload, Value> {
    PaymentPayload {
        x402_version: Version2,
        accepted: offer.raw.clone(),
        resource: resource.cloned(),
        payload: ExactSvmPayload::of(wire),
        extensions: Default::default(),
    }
}

/// What a Solana `exact` offer asks, read and checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Terms {
    /// CAIP-2 network (`solana:<genesis hash prefix>`).
    pub network: String,
    /// The mint.
    pub asset: Address,
    /// The payee's wallet address (the owner of the destination token account).
    pub pay_to: Address,
    /// Atomic units.
    pub amount: u64,
    /// The facilitator's fee payer.
    pub fee_payer: Address,
}

impl Terms {
    /// Reads an `exact` offer on a `solana:` network.
    pub fn read(offer: &Offer) -> Result<Terms, SignError> {
        let terms = offer.exact_terms()?;
        let network = &terms.network;
        if !network.starts_with("solana:") {
            return Err(SignError::Unsupported(format!("network `{network}` is not a Solana network")));
        }
        let amount = parse_amount(&terms.amount).and_then(|amount| u64::try_from(amount).ok()).ok_or_else(|| {
            SignError::Malformed("the requirement's `amount` is not a whole number of at most 64 bits".into())
        })?;
        let fee_payer = terms.extra_text("feePayer").ok_or_else(|| {
            SignError::Unsupported("the requirement's `extra` names no `feePayer`: the facilitator pays no fees".into())
        })?;
        Ok(Terms {
            network: network.clone(),
            asset: address(&terms.asset, "the requirement's `asset`")?,
            pay_to: address(&terms.pay_to, "the requirement's `payTo`")?,
            amount,
            fee_payer: address(fee_payer, "the requirement's `extra.feePayer`")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::exact_svm::{SigningKey, sign_transfer, to_base58, transaction::tests::transfer};

    #[test]
    fn the_payload_carries_the_transaction_as_base64() {
        let owner = SigningKey::from_bytes(&[7; 32]);
        let wire = sign_transfer(&owner, &transfer()).unwrap();
        let requirement = json!({"scheme": "exact", "network": "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"});
        let offer: Offer = serde_json::from_value(requirement.clone()).unwrap();
        let paid = payment(&offer, None, &wire);
        assert_eq!(paid.accepted, requirement);
        assert_eq!(paid.payload.wire().unwrap(), wire);
        assert_eq!(paid.payload.transferred_amount(), Some(2_000));
    }

    #[test]
    fn requirements_are_read_with_the_field_named() {
        let good = json!({
            "scheme": "exact", "network": "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", "amount": "2000",
            "asset": "EPjFWdd5AufqSSqeM2qN3xzybapC8G4wEGGkZwyTDt1v",
            "payTo": "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
            "maxTimeoutSeconds": 300, "extra": {"feePayer": "2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4"},
        });
        let read = |r: &Value| Terms::read(&serde_json::from_value(r.clone()).unwrap());
        let terms = read(&good).unwrap();
        assert_eq!(terms.amount, 2_000);
        assert_eq!(to_base58(&terms.fee_payer), "2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4");
        let refuse = |change: &dyn Fn(&mut Value)| {
            let mut r = good.clone();
            change(&mut r);
            read(&r).unwrap_err().to_string()
        };
        assert!(refuse(&|r| r["network"] = json!("eip155:8453")).contains("not a Solana network"));
        assert!(refuse(&|r| r["amount"] = json!("18446744073709551616")).contains("amount"));
        assert!(refuse(&|r| r["payTo"] = json!("0OIl")).contains("payTo"));
        assert!(refuse(&|r| r["asset"] = json!("abc")).contains("32-byte"));
        assert!(refuse(&|r| r["extra"] = json!({})).contains("feePayer"));
        assert!(refuse(&|r| r["payTo"] = json!(7)).contains("payTo"));
    }
}
