//! The x402 v2 messages as types: PaymentRequired (with its requirements and resource),
//! PaymentPayload (with each scheme's payload) and SettlementResponse.
//!
//! Field order is the wire order the specification's examples use, so what Paperchain sends
//! reads as they do. The `x402-types` crate has v2 structs of the same names; these differ
//! where a paying client needs it to: an entry of `accepts` is read on its own ([`Offer`]),
//! so one the client cannot read is refused by name instead of failing the whole 402, and it
//! is echoed in `accepted` exactly as sent; a network is text until a scheme reads it; and a
//! resource keeps the fields a server adds to it (`serviceName`, `tags`, `iconUrl`).

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::{PAYMENT_ID_LENGTH, PAYMENT_IDENTIFIER, SCHEME_EXACT, SCHEME_UPTO, X402_VERSION};
use crate::SignError;
use crate::batch_evm::BatchPayload;
use crate::exact_evm::ExactEvmPayload;
use crate::exact_svm::ExactSvmPayload;

/// `x402Version`: always 2 (written as the number 2; anything else does not read).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Version2;

impl Serialize for Version2 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(X402_VERSION)
    }
}

impl<'de> Deserialize<'de> for Version2 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Number(n) if n.as_u64() == Some(X402_VERSION) => Ok(Version2),
            other => Err(D::Error::custom(format!("x402Version is {other}, not 2"))),
        }
    }
}

/// One way to pay a resource: an entry of a PaymentRequired's `accepts`, and the `accepted`
/// copy a PaymentPayload carries. `extra` is the scheme's own (an EIP-3009 token's EIP-712
/// domain, a Solana facilitator's fee payer), read by the scheme.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Requirements {
    /// The scheme (`exact`).
    pub scheme: String,
    /// CAIP-2 network (`eip155:8453`, `solana:5eykt4Us…`).
    pub network: String,
    /// Atomic units of the asset, decimal digits.
    pub amount: String,
    /// The token (an ERC-20 contract, an SPL mint).
    pub asset: String,
    /// Who is paid.
    pub pay_to: String,
    /// How long a payment for it may take to settle. Missing reads as 0, which no payer
    /// accepts and no server offers: the offer is refused naming it, not unread.
    #[serde(default)]
    pub max_timeout_seconds: u64,
    /// Scheme-specific terms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
}

impl Requirements {
    /// The same terms, EVM addresses (`asset`, `payTo`) compared without regard to case:
    /// clients may checksum them again.
    pub fn same_terms(&self, other: &Requirements) -> bool {
        let fold = |text: &str| if text.starts_with("0x") { text.to_ascii_lowercase() } else { text.to_string() };
        let addresses = |r: &Requirements| (fold(&r.asset), fold(&r.pay_to));
        self.scheme == other.scheme
            && self.network == other.network
            && self.amount == other.amount
            && addresses(self) == addresses(other)
            && self.max_timeout_seconds == other.max_timeout_seconds
            && self.extra == other.extra
    }

    /// A text field of `extra`.
    pub fn extra_text(&self, key: &str) -> Option<&str> {
        self.extra.as_ref()?.get(key)?.as_str()
    }
}

/// An entry of `accepts` as a paying client reads it: exactly as sent (what a payment echoes
/// in `accepted`), and as [`Requirements`] when it reads as one.
#[derive(Clone, Debug, PartialEq)]
pub struct Offer {
    /// The entry as the server sent it.
    pub raw: Value,
    /// The entry read, or why it does not read.
    pub terms: Result<Requirements, String>,
}

impl Offer {
    /// Its terms, when it reads and is an `exact` offer: what a paying client signs.
    pub fn exact_terms(&self) -> Result<&Requirements, SignError> {
        self.terms_of(SCHEME_EXACT)
    }

    /// Its terms, when it reads and is an `upto` offer.
    pub fn upto_terms(&self) -> Result<&Requirements, SignError> {
        self.terms_of(SCHEME_UPTO)
    }

    fn terms_of(&self, scheme: &str) -> Result<&Requirements, SignError> {
        let terms = self.terms.as_ref().map_err(|why| SignError::Malformed(format!("the requirement: {why}")))?;
        if terms.scheme != scheme {
            return Err(SignError::Unsupported(format!("scheme `{}` is not `{scheme}`", terms.scheme)));
        }
        Ok(terms)
    }

    /// Its network as sent, for naming it in a refusal.
    pub fn network(&self) -> &str {
        self.raw.get("network").and_then(Value::as_str).unwrap_or("an unnamed network")
    }
}

impl From<Requirements> for Offer {
    fn from(terms: Requirements) -> Offer {
        let raw = serde_json::to_value(&terms).expect("requirements serialize");
        Offer { raw, terms: Ok(terms) }
    }
}

impl<'de> Deserialize<'de> for Offer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Value::deserialize(deserializer)?;
        let terms = serde_path_to_error::deserialize(&raw).map_err(|error| match error.path().to_string() {
            path if path == "." => error.inner().to_string(),
            path => format!("`{path}`: {}", error.inner()),
        });
        Ok(Offer { raw, terms })
    }
}

impl Serialize for Offer {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(serializer)
    }
}

/// What is paid for.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInfo {
    /// The resource's URL.
    pub url: String,
    /// What it does, in a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The media type of its answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The service's name, for a wallet to show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// Words a directory files it under.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The service's icon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
    /// Whatever else the server said about it, kept as sent.
    #[serde(flatten)]
    pub more: Map<String, Value>,
}

/// The 402's PaymentRequired. A server writes `PaymentRequired<Requirements>`; a paying
/// client reads the default, `PaymentRequired<Offer>`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentRequired<A = Offer> {
    /// Always 2.
    pub x402_version: Version2,
    /// Why an earlier payment was refused, when one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What is paid for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<ResourceInfo>,
    /// The ways to pay, the server's preferred first.
    pub accepts: Vec<A>,
    /// Extensions the server supports, by name.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extensions: Map<String, Value>,
}

/// A PaymentPayload: the requirements the payer accepted and its scheme's signed payload.
/// A server reads the default (`PaymentPayload<SchemePayload, Requirements>`); a client
/// writes `accepted` as the offer it received ([`Offer::raw`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentPayload<P = SchemePayload, A = Requirements> {
    /// Always 2.
    pub x402_version: Version2,
    /// The requirements paid.
    pub accepted: A,
    /// What is paid for, echoed from the PaymentRequired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<ResourceInfo>,
    /// The scheme's signed payload.
    pub payload: P,
    /// Extensions the payer uses (`payment-identifier`), by name.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extensions: Map<String, Value>,
}

impl<P> PaymentPayload<P, Requirements> {
    /// The payment's id (`extensions["payment-identifier"].info.id`), when it has a valid one.
    pub fn payment_id(&self) -> Option<&str> {
        payment_id(&self.extensions)
    }
}

impl PaymentPayload {
    /// The amount the payload's signature moves, when its scheme says (see
    /// [`SchemePayload::signed_amount`]).
    pub fn signed_amount(&self) -> Option<u64> {
        self.payload.signed_amount()
    }
}

/// The payment id of a message's `payment-identifier` extension (`info.id`), when it is a
/// valid one (16 to 128 of `[A-Za-z0-9_-]`); an invalid one counts as none.
pub fn payment_id(extensions: &Map<String, Value>) -> Option<&str> {
    let id = extensions.get(PAYMENT_IDENTIFIER)?.get("info")?.get("id")?.as_str()?;
    let valid = PAYMENT_ID_LENGTH.contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    valid.then_some(id)
}

/// The signed payload of one scheme, told apart by its fields: an EIP-3009 `authorization`
/// (`exact` on EVM), a Solana `transaction` (`exact` on Solana), a Permit2 authorization
/// (`exact` on EVM for tokens without EIP-3009), or another kind this side does not read.
/// A payload that names one of the first three but does not read as it is refused.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SchemePayload {
    /// `exact` on EVM with EIP-3009.
    Eip3009(ExactEvmPayload),
    /// `exact` on Solana.
    Solana(ExactSvmPayload),
    /// `upto` on EVM (and `exact` with Permit2, for tokens without EIP-3009).
    Permit2(Permit2Payload),
    /// `batch-settlement` on EVM: a deposit, a voucher or a refund request.
    Batch(BatchPayload),
    /// A kind this side does not read; the facilitator may.
    Other(Map<String, Value>),
}

impl<'de> Deserialize<'de> for SchemePayload {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Value::Object(map) = Value::deserialize(deserializer)? else {
            return Err(D::Error::custom("the payment's `payload` is not an object"));
        };
        let read = |kind: &str| format!("the payment's `payload` does not read as {kind}");
        let value = Value::Object(map);
        let kind = if value.get("authorization").is_some() {
            ExactEvmPayload::deserialize(&value)
                .map(SchemePayload::Eip3009)
                .map_err(|e| format!("{}: {e}", read("an EIP-3009 authorization")))
        } else if value.get("transaction").is_some() {
            ExactSvmPayload::deserialize(&value)
                .map(SchemePayload::Solana)
                .map_err(|e| format!("{}: {e}", read("a Solana transaction")))
        } else if value.get("channelConfig").is_some() {
            BatchPayload::deserialize(&value)
                .map(SchemePayload::Batch)
                .map_err(|e| format!("{}: {e}", read("a batch-settlement deposit, voucher or refund")))
        } else if value.get("permit2Authorization").is_some() {
            Permit2Payload::deserialize(&value)
                .map(SchemePayload::Permit2)
                .map_err(|e| format!("{}: {e}", read("a Permit2 authorization")))
        } else {
            let Value::Object(map) = value else { unreachable!("an object stays one") };
            Ok(SchemePayload::Other(map))
        };
        kind.map_err(D::Error::custom)
    }
}

impl SchemePayload {
    /// The amount the signature authorises: the EIP-3009 `value`, the Permit2
    /// `permitted.amount`, the amount of a Solana transaction's `TransferChecked`.
    /// `Some(u64::MAX)` for an amount that cannot be read (it cannot be any quote); `None`
    /// for a payload of another kind.
    pub fn signed_amount(&self) -> Option<u64> {
        let whole = |text: &str| text.parse::<u64>().ok().filter(|_| text.bytes().all(|b| b.is_ascii_digit()));
        match self {
            SchemePayload::Eip3009(evm) => Some(whole(&evm.authorization.value).unwrap_or(u64::MAX)),
            SchemePayload::Permit2(permit) => {
                Some(whole(&permit.permit2_authorization.permitted.amount).unwrap_or(u64::MAX))
            }
            SchemePayload::Solana(svm) => Some(svm.transferred_amount().unwrap_or(u64::MAX)),
            // A voucher is cumulative: what it adds is the server's to work out.
            SchemePayload::Batch(_) | SchemePayload::Other(_) => None,
        }
    }
}

/// The Permit2 payload, as far as this side reads it: the amount and token permitted. The
/// rest (spender, witness, deadline, signature) is the facilitator's to check.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Permit2Payload {
    /// The permit.
    pub permit2_authorization: Permit2Authorization,
    /// Everything else, kept as sent.
    #[serde(flatten)]
    pub more: Map<String, Value>,
}

/// A Permit2 authorization's permitted transfer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Permit2Authorization {
    /// What may be moved.
    pub permitted: Permitted,
    /// Everything else, kept as sent.
    #[serde(flatten)]
    pub more: Map<String, Value>,
}

/// A token and the most of it a Permit2 authorization moves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Permitted {
    /// The token.
    pub token: String,
    /// Atomic units, decimal digits.
    pub amount: String,
}

/// The SettlementResponse of a paid answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SettlementResponse {
    /// Whether the payment settled.
    pub success: bool,
    /// Why it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
    /// The settling transaction (an EVM hash, a Solana signature); empty when none.
    #[serde(default)]
    pub transaction: String,
    /// The network it settled on.
    #[serde(default)]
    pub network: String,
    /// Who paid, when known.
    #[serde(default)]
    pub payer: Option<String>,
    /// What was charged, atomic units (the `upto` scheme's settled amount, at most what was
    /// authorized; 0 with no transaction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<String>,
    /// The scheme's own (`batch-settlement`: the channel's state and what this call charged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
}

impl SettlementResponse {
    /// A successful settlement.
    pub fn settled(transaction: &str, network: &str, payer: Option<&str>) -> SettlementResponse {
        SettlementResponse {
            success: true,
            error_reason: None,
            transaction: transaction.to_string(),
            network: network.to_string(),
            payer: payer.map(str::to_string),
            amount: None,
            extra: None,
        }
    }

    /// The same settlement, saying what it charged (`upto`).
    pub fn charging(mut self, amount: u64) -> SettlementResponse {
        self.amount = Some(amount.to_string());
        self
    }

    /// The amount it says it charged, when it says one that reads.
    pub fn charged(&self) -> Option<u64> {
        let amount = self.amount.as_deref()?;
        amount.bytes().all(|b| b.is_ascii_digit()).then(|| amount.parse().ok()).flatten()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_version_is_two_and_nothing_else() {
        assert_eq!(serde_json::to_value(Version2).unwrap(), json!(2));
        assert!(serde_json::from_value::<Version2>(json!(2)).is_ok());
        for other in [json!(1), json!("2"), json!(2.5), Value::Null] {
            let error = serde_json::from_value::<Version2>(other.clone()).unwrap_err().to_string();
            assert!(error.contains("x402Version is") && error.contains("not 2"), "{other}: {error}");
        }
    }

    #[test]
    fn an_offer_that_does_not_read_is_kept_with_its_reason_and_echoed_as_sent() {
        let required: PaymentRequired = serde_json::from_value(json!({
            "x402Version": 2,
            "accepts": [
                {"scheme": "exact", "network": "eip155:8453", "amount": "10", "asset": "0xA", "payTo": "0xB",
                 "maxTimeoutSeconds": 60, "extra": {"name": "USD Coin"}, "unknown": [1]},
                {"scheme": "exact", "network": "eip155:1", "amount": 10},
            ],
        }))
        .unwrap();
        assert_eq!(required.accepts[0].terms.as_ref().unwrap().amount, "10");
        assert_eq!(required.accepts[0].raw["unknown"], json!([1]), "echoed exactly, fields unknown here included");
        assert!(required.accepts[1].terms.as_ref().unwrap_err().contains("invalid type"));
        assert_eq!(required.accepts[1].network(), "eip155:1");
        assert_eq!(serde_json::to_value(&required.accepts[1]).unwrap()["amount"], json!(10));
    }

    #[test]
    fn requirements_compare_evm_addresses_without_case() {
        let a = Requirements {
            scheme: "exact".into(),
            network: "eip155:8453".into(),
            amount: "10".into(),
            asset: "0xAbC".into(),
            pay_to: "0xDEF".into(),
            max_timeout_seconds: 60,
            extra: Some(json!({"name": "USD Coin", "version": "2"})),
        };
        let mut b = a.clone();
        (b.asset, b.pay_to) = ("0xabc".into(), "0xdef".into());
        assert!(a.same_terms(&b));
        for change in [
            |r: &mut Requirements| r.max_timeout_seconds = 61,
            |r: &mut Requirements| r.extra = None,
            |r: &mut Requirements| r.scheme = "upto".into(),
            |r: &mut Requirements| r.pay_to = "0xdeadbeef".into(),
        ] {
            let mut c = a.clone();
            change(&mut c);
            assert!(!a.same_terms(&c), "{c:?}");
        }
        // Solana addresses are base58: case is part of them.
        let mut solana = a.clone();
        solana.asset = "EPjFWdd5".into();
        let mut lower = solana.clone();
        lower.asset = "epjfwdd5".into();
        assert!(!solana.same_terms(&lower));
    }

    #[test]
    fn scheme_payloads_are_told_apart_and_a_named_kind_must_read_as_it() {
        let read = |payload: Value| serde_json::from_value::<SchemePayload>(payload).map_err(|e| e.to_string());
        let evm = json!({"signature": "0x01", "authorization": {"from": "0x1", "to": "0x2", "value": "2000",
            "validAfter": "0", "validBefore": "9", "nonce": "0x3"}});
        assert_eq!(read(evm).unwrap().signed_amount(), Some(2000));
        let exponent = json!({"signature": "0x01", "authorization": {"from": "0x1", "to": "0x2", "value": "1e9",
            "validAfter": "0", "validBefore": "9", "nonce": "0x3"}});
        assert_eq!(read(exponent).unwrap().signed_amount(), Some(u64::MAX), "an unreadable amount is no quote");
        assert!(read(json!({"authorization": {"value": 2000}})).unwrap_err().contains("EIP-3009"));
        let permit = json!({"signature": "0x", "permit2Authorization": {"permitted": {"token": "0xA", "amount": "7"},
            "spender": "0xS"}});
        let permit = read(permit).unwrap();
        assert_eq!(permit.signed_amount(), Some(7));
        assert_eq!(serde_json::to_value(&permit).unwrap()["permit2Authorization"]["spender"], "0xS");
        assert_eq!(read(json!({"transaction": "..."})).unwrap().signed_amount(), Some(u64::MAX));
        assert_eq!(read(json!({"other": "..."})).unwrap().signed_amount(), None);
        assert!(read(json!("text")).unwrap_err().contains("not an object"));
    }

    #[test]
    fn a_payment_id_is_read_only_when_valid() {
        let with = |id: Value| {
            let extensions = json!({ PAYMENT_IDENTIFIER: {"info": {"id": id}} });
            payment_id(extensions.as_object().unwrap()).map(str::to_string)
        };
        assert_eq!(with(json!("call_0123456789abcdef")).as_deref(), Some("call_0123456789abcdef"));
        assert_eq!(with(json!("short")), None);
        assert_eq!(with(json!("x".repeat(129))), None);
        assert_eq!(with(json!("has space 0123456789")), None);
        assert_eq!(with(json!(1234567890123456789u64)), None);
    }

    #[test]
    fn a_settlement_reads_with_or_without_a_transaction() {
        let settled = SettlementResponse::settled("0xabc", "eip155:8453", None);
        assert_eq!(
            serde_json::to_value(&settled).unwrap(),
            json!({"success": true, "transaction": "0xabc", "network": "eip155:8453", "payer": null})
        );
        let failed: SettlementResponse =
            serde_json::from_value(json!({"success": false, "errorReason": "insufficient_funds"})).unwrap();
        assert_eq!((failed.success, failed.transaction.as_str()), (false, ""));
        assert_eq!(failed.error_reason.as_deref(), Some("insufficient_funds"));
    }
}
