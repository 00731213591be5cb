//! The paid side's half of `exact` on Solana: what it checks on a payload before spending
//! work on it, and what identifies a payment whatever its fee payer's slot holds. Settling
//! is the facilitator's.

use super::{Transaction, address, to_base58};
use crate::x402::{PaymentPayload, SchemePayload};

/// Checks a Solana `exact` payment before anyone spends work on it: its transaction reads,
/// and every signature but the fee payer's (`accepted.extra.feePayer`, left for the
/// facilitator) is a valid signature of the message. A payment whose payer did not sign it
/// can never settle. Payments of other schemes are not Solana's: `Ok`.
pub fn check_signed(payment: &PaymentPayload) -> Result<(), String> {
    let SchemePayload::Solana(svm) = &payment.payload else { return Ok(()) };
    let wire = svm.wire().ok_or("payload.transaction is not base64 of at most 1,232 bytes")?;
    let tx = Transaction::parse(&wire).ok_or("payload.transaction is not a Solana transaction")?;
    let fee_payer = payment.accepted.extra_text("feePayer").and_then(|text| address(text, "").ok());
    for index in 0..tx.required_signatures {
        if Some(tx.keys[index]) != fee_payer && !tx.signed_by(index) {
            return Err(format!("the signature of {} does not verify", to_base58(&tx.keys[index])));
        }
    }
    Ok(())
}

/// What the payer signed, for telling payments apart: the message of a Solana payment's
/// transaction (the signatures around it, the fee payer's slot included, can be changed
/// without changing the payment). `None` for another scheme's payment or one whose
/// transaction does not read.
pub fn signed_message(payment: &PaymentPayload) -> Option<Vec<u8>> {
    let SchemePayload::Solana(svm) = &payment.payload else { return None };
    Transaction::parse(&svm.wire()?).map(|tx| tx.message.to_vec())
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde_json::{Value, json};

    use super::*;
    use crate::exact_svm::{SigningKey, sign_transfer, transaction::tests::transfer};

    /// A payment as the server reads it: `payload` under requirements with `extra`.
    fn read(extra: Value, payload: Value) -> PaymentPayload {
        serde_json::from_value(json!({
            "x402Version": 2,
            "accepted": {"scheme": "exact", "network": "solana:x", "amount": "2000", "asset": "m", "payTo": "p",
                         "maxTimeoutSeconds": 60, "extra": extra},
            "payload": payload,
        }))
        .unwrap()
    }

    fn paid(extra: Value, wire: &[u8]) -> PaymentPayload {
        read(extra, json!({"transaction": STANDARD.encode(wire)}))
    }

    #[test]
    fn payloads_are_checked_for_the_payers_signature() {
        let owner = SigningKey::from_bytes(&[7; 32]);
        let wire = sign_transfer(&owner, &transfer()).unwrap();
        let extra = json!({"feePayer": to_base58(&[1; 32])});
        let paid_once = paid(extra.clone(), &wire);
        assert_eq!(check_signed(&paid_once), Ok(()));
        // A fee payer slot filled with anything is the same payment.
        let mut refilled = wire.clone();
        refilled[1..65].copy_from_slice(&[5; 64]);
        let other = paid(extra.clone(), &refilled);
        assert_eq!(check_signed(&other), Ok(()));
        assert_eq!(signed_message(&other), signed_message(&paid_once));
        assert!(signed_message(&paid_once).is_some());
        // A forged payer signature, or no named fee payer, is refused.
        let mut forged = wire.clone();
        forged[65] ^= 1;
        assert!(check_signed(&paid(extra.clone(), &forged)).unwrap_err().contains("does not verify"));
        assert!(check_signed(&paid(json!({}), &wire)).unwrap_err().contains("does not verify"));
        assert!(check_signed(&read(extra.clone(), json!({"transaction": "%%"}))).unwrap_err().contains("base64"));
        assert!(
            check_signed(&read(extra.clone(), json!({"transaction": "AAAA"}))).unwrap_err().contains("not a Solana")
        );
        let evm = read(extra, json!({"signature": "0x"}));
        assert_eq!(check_signed(&evm), Ok(()));
        assert_eq!(signed_message(&evm), None);
    }
}
