//! The x402 v2 messages the paying side reads: the 402's PaymentRequired and the paid
//! answer's SettlementResponse. What to pay is the policy's choice ([`crate::policy`]); the
//! exchange itself is [`crate::client`].

use paperchain_protocol::x402::{self, PaymentRequired, SettlementResponse};

/// Why a payment was not made; the message says what the server asked and what was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PayError {
    /// The 402 carries no PaymentRequired this client can read.
    #[error("the payment request cannot be read: {0}")]
    Unreadable(String),
    /// The chosen requirement could not be signed.
    #[error("the payment cannot be signed: {0}")]
    Sign(#[from] paperchain_protocol::SignError),
    /// The paid answer carries no successful settlement.
    #[error("the settlement cannot be read: {0}")]
    Settlement(String),
    /// What the payment needs from the chain could not be read or is not there.
    #[error("{0}")]
    Chain(String),
}

/// The PaymentRequired of a 402: the `PAYMENT-REQUIRED` header when present (the x402 v2
/// transport), else the JSON body. Each entry of `accepts` is read on its own: one this
/// client cannot read is refused by the policy with its reason, the others stay payable.
pub fn read_payment_required(header: Option<&str>, body: &[u8]) -> Result<PaymentRequired, PayError> {
    match header {
        Some(header) => x402::decode(header, "PAYMENT-REQUIRED").map_err(PayError::Unreadable),
        None => {
            let value =
                serde_json::from_slice(body).map_err(|_| PayError::Unreadable("the 402's body is not JSON".into()))?;
            x402::read(value, "the 402's body").map_err(PayError::Unreadable)
        }
    }
}

/// The SettlementResponse of a call paid over a `batch-settlement` channel: successful,
/// naming a transaction only when a deposit went on chain (a voucher alone sends none).
pub fn read_channel_settlement(header: &str) -> Result<SettlementResponse, PayError> {
    let settlement: SettlementResponse = x402::decode(header, "PAYMENT-RESPONSE").map_err(PayError::Settlement)?;
    if settlement.transaction.is_empty() && settlement.success {
        return Ok(settlement);
    }
    read_settlement(header)
}

/// The SettlementResponse of a paid answer's `PAYMENT-RESPONSE` header, which must say it
/// succeeded and name its transaction.
pub fn read_settlement(header: &str) -> Result<SettlementResponse, PayError> {
    let settlement: SettlementResponse = x402::decode(header, "PAYMENT-RESPONSE").map_err(PayError::Settlement)?;
    if !settlement.success {
        let reason = settlement
            .error_reason
            .as_deref()
            .map(|r| crate::clean(r, 200))
            .unwrap_or_else(|| "no reason given".into());
        return Err(PayError::Settlement(format!("it says the settlement failed: {reason}")));
    }
    let transaction = settlement.transaction.as_str();
    if transaction.is_empty() {
        return Err(PayError::Settlement("it names no transaction".into()));
    }
    // An EVM transaction is a 32-byte hash, a Solana one a 64-byte signature in base58;
    // anything else would reach the ledger and the screen.
    let readable = if settlement.network.starts_with("solana:") {
        bs58::decode(transaction).into_vec().is_ok_and(|bytes| bytes.len() == 64)
    } else {
        transaction.parse::<alloy::primitives::B256>().is_ok()
    };
    if !readable {
        return Err(PayError::Settlement(format!(
            "its transaction `{}` is not a transaction hash",
            crate::clean(transaction, 80)
        )));
    }
    Ok(settlement)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn required() -> Value {
        json!({
            "x402Version": 2,
            "resource": {"url": "https://example.test/v1/chain/gas"},
            "accepts": [
                {"scheme": "exact", "network": "eip155:8453", "amount": "2000", "asset": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
                 "payTo": "0x1111111111111111111111111111111111111111", "maxTimeoutSeconds": 300, "extra": {"name": "USD Coin", "version": "2"}},
                {"scheme": "exact", "network": "eip155:137", "amount": "2000", "asset": "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359",
                 "payTo": "0x1111111111111111111111111111111111111111", "maxTimeoutSeconds": 300, "extra": {"name": "USD Coin", "version": "2"}},
            ],
        })
    }

    #[test]
    fn unreadable_requests_and_settlements_are_named() {
        assert!(read_payment_required(Some("???"), b"").unwrap_err().to_string().contains("not base64"));
        assert!(read_payment_required(None, br#"{"x402Version": 1}"#).unwrap_err().to_string().contains("not 2"));
        assert!(read_payment_required(None, br#"{"x402Version": 2}"#).unwrap_err().to_string().contains("accepts"));
        let required = read_payment_required(None, required().to_string().as_bytes()).unwrap();
        assert_eq!(required.accepts.len(), 2);
        assert!(required.accepts.iter().all(|offer| offer.terms.is_ok()));
        assert_eq!(required.resource.unwrap().url, "https://example.test/v1/chain/gas");
        let failed = x402::encode(&json!({"success": false, "errorReason": "insufficient_funds"}));
        assert!(read_settlement(&failed).unwrap_err().to_string().contains("insufficient_funds"));
        let forged = x402::encode(&json!({"success": true, "network": "eip155:8453", "transaction": "\u{1b}[2Jpaid"}));
        let error = read_settlement(&forged).unwrap_err().to_string();
        assert!(error.contains("not a transaction hash") && !error.contains('\u{1b}'), "{error}");
        let solana = |tx: &str| {
            x402::encode(
                &json!({"success": true, "network": "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", "transaction": tx}),
            )
        };
        assert!(read_settlement(&solana(&bs58::encode([9u8; 64]).into_string())).is_ok());
        assert!(read_settlement(&solana(&bs58::encode([9u8; 32]).into_string())).is_err());
    }
}
