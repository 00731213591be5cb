//! One x402 v2 exchange from the paying side: read the 402, choose, sign, read the settlement.

use alloy::signers::local::PrivateKeySigner;
use paperchain_engine::Price;
use paperchain_protocol::x402;
use serde_json::Value;

/// Why a payment was not made; the message says what the server asked and what was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PayError {
    /// The 402 carries no PaymentRequired this client can read.
    #[error("the payment request cannot be read: {0}")]
    Unreadable(String),
    /// No requirement is one the caller allows.
    #[error("no payment option is acceptable: {0}")]
    NothingAcceptable(String),
    /// The chosen requirement could not be signed.
    #[error("the payment cannot be signed: {0}")]
    Sign(#[from] paperchain_protocol::SignError),
    /// The paid answer carries no successful settlement.
    #[error("the settlement cannot be read: {0}")]
    Settlement(String),
}

/// What the caller is willing to pay: on which networks (CAIP-2, in order of preference)
/// and at most how much per call.
#[derive(Clone, Debug)]
pub struct Acceptable {
    /// Networks the caller pays on, most preferred first (`eip155:8453`…).
    pub networks: Vec<String>,
    /// The most one call may cost.
    pub max_amount: Price,
}

/// The PaymentRequired of a 402: the `PAYMENT-REQUIRED` header when present (the x402 v2
/// transport), else the JSON body.
pub fn read_payment_required(header: Option<&str>, body: &[u8]) -> Result<Value, PayError> {
    let required = match header {
        Some(header) => x402::decode(header, "PAYMENT-REQUIRED").map_err(PayError::Unreadable)?,
        None => serde_json::from_slice(body).map_err(|_| PayError::Unreadable("the 402's body is not JSON".into()))?,
    };
    if required["x402Version"] != x402::X402_VERSION {
        return Err(PayError::Unreadable(format!("x402Version is {}, not 2", required["x402Version"])));
    }
    if !required["accepts"].is_array() {
        return Err(PayError::Unreadable("it lists no `accepts`".into()));
    }
    Ok(required)
}

/// The requirement to pay: of those `required` accepts, the one on the caller's most
/// preferred network whose scheme is `exact` and whose amount is within the caller's
/// limit. The error lists why each offer was refused.
pub fn choose(required: &Value, acceptable: &Acceptable) -> Result<Value, PayError> {
    let offers = required["accepts"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut refused = Vec::new();
    let mut usable = Vec::new();
    for offer in offers {
        let network = offer["network"].as_str().unwrap_or("an unnamed network");
        let Some(rank) = acceptable.networks.iter().position(|n| n == network) else {
            refused.push(format!("{network}: not a network this wallet pays on"));
            continue;
        };
        if offer["scheme"] != x402::SCHEME_EXACT {
            refused.push(format!("{network}: scheme {} is not `exact`", offer["scheme"]));
            continue;
        }
        let Some(amount) = offer["amount"].as_str().and_then(|a| a.parse::<u64>().ok()) else {
            refused.push(format!("{network}: the amount is not a whole number"));
            continue;
        };
        if amount > acceptable.max_amount.units() {
            refused.push(format!(
                "{network}: {} is more than the {} allowed per call",
                Price::atomic(amount),
                acceptable.max_amount
            ));
            continue;
        }
        usable.push((rank, offer));
    }
    usable.sort_by_key(|(rank, _)| *rank);
    match usable.first() {
        Some((_, offer)) => Ok((*offer).clone()),
        None if refused.is_empty() => Err(PayError::NothingAcceptable("the server offered no way to pay".into())),
        None => Err(PayError::NothingAcceptable(refused.join("; "))),
    }
}

/// The `PAYMENT-SIGNATURE` value paying `requirement` (chosen from `required` by [`choose`]),
/// signed by `signer` at Unix time `now`.
pub fn pay(signer: &PrivateKeySigner, required: &Value, requirement: &Value, now: u64) -> Result<String, PayError> {
    let resource = required.get("resource").filter(|r| r.is_object());
    let payment = x402::sign_exact_evm(signer, requirement, resource, now)?;
    Ok(x402::encode(&payment))
}

/// The SettlementResponse of a paid answer's `PAYMENT-RESPONSE` header, which must say it
/// succeeded and name its transaction.
pub fn read_settlement(header: &str) -> Result<Value, PayError> {
    let settlement = x402::decode(header, "PAYMENT-RESPONSE").map_err(PayError::Settlement)?;
    if settlement["success"] != true {
        return Err(PayError::Settlement(format!("it says the settlement failed: {}", settlement["errorReason"])));
    }
    if settlement["transaction"].as_str().is_none_or(str::is_empty) {
        return Err(PayError::Settlement("it names no transaction".into()));
    }
    Ok(settlement)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    fn acceptable(networks: &[&str], max: u64) -> Acceptable {
        Acceptable { networks: networks.iter().map(|n| n.to_string()).collect(), max_amount: Price::atomic(max) }
    }

    #[test]
    fn the_most_preferred_allowed_network_is_chosen() {
        let chosen = choose(&required(), &acceptable(&["eip155:137", "eip155:8453"], 10_000)).unwrap();
        assert_eq!(chosen["network"], "eip155:137");
        let chosen = choose(&required(), &acceptable(&["eip155:8453"], 10_000)).unwrap();
        assert_eq!(chosen["network"], "eip155:8453");
    }

    #[test]
    fn refusals_say_why() {
        let error = choose(&required(), &acceptable(&["eip155:8453"], 1_999)).unwrap_err().to_string();
        assert!(error.contains("eip155:8453: $0.002 is more than the $0.001999 allowed per call"), "{error}");
        assert!(error.contains("eip155:137: not a network this wallet pays on"), "{error}");
        let none = json!({"x402Version": 2, "accepts": []});
        assert!(choose(&none, &acceptable(&["eip155:8453"], 1)).unwrap_err().to_string().contains("no way to pay"));
    }

    #[test]
    fn the_signed_payment_is_the_chosen_requirement() {
        let signer = PrivateKeySigner::random();
        let required = required();
        let chosen = choose(&required, &acceptable(&["eip155:8453"], 2_000)).unwrap();
        let header = pay(&signer, &required, &chosen, 1_000_000).unwrap();
        let payment = x402::decode_payment(&header).unwrap();
        assert_eq!(payment["accepted"], chosen);
        assert_eq!(payment["resource"], required["resource"]);
        assert_eq!(x402::signed_amount(&payment), Some(2_000));
    }

    #[test]
    fn unreadable_requests_and_settlements_are_named() {
        assert!(read_payment_required(Some("???"), b"").unwrap_err().to_string().contains("not base64"));
        assert!(read_payment_required(None, br#"{"x402Version": 1}"#).unwrap_err().to_string().contains("not 2"));
        let required = read_payment_required(None, required().to_string().as_bytes()).unwrap();
        assert_eq!(required["accepts"].as_array().map(Vec::len), Some(2));
        let failed = x402::encode(&json!({"success": false, "errorReason": "insufficient_funds"}));
        assert!(read_settlement(&failed).unwrap_err().to_string().contains("insufficient_funds"));
    }
}
