//! MPP, the "Payment" HTTP authentication scheme: the challenges a hosted 402 carries, the
//! `Authorization: Payment` credentials it accepts, and the `Payment-Receipt` it answers with.
//!
//! Plain strings in and out; the HTTP glue, the facilitator and the replay guard live elsewhere,
//! and so do the names both sides share and the client's credential (the protocol crate,
//! `paperchain_protocol::mpp`).
//!
//! Design, after the drafts in tempoxyz/mpp-specs (`draft-httpauth-payment-00`, "core";
//! `draft-payment-intent-charge-00`, "charge"; `draft-evm-charge-00`, "evm"):
//! - One `WWW-Authenticate: Payment` value per offered method (core §5.1 "Challenge"), with
//!   `id`, `realm`, `method`, `intent="charge"`, `request` = base64url(JCS(JSON)) (core §5.1.1)
//!   and `expires` = now + ttl (core §5.1.2). The 402 is sent with `Cache-Control: no-store`
//!   and a receipt response with `Cache-Control: private` (core "Caching").
//! - The `id` is the draft's recommended HMAC-SHA256 binding (core §5.1.2 "Challenge
//!   Binding", "Recommended: HMAC-SHA256 Binding"): HMAC over the seven slots
//!   realm|method|intent|request|expires|digest|opaque under a server secret, computed by
//!   `mpp::compute_challenge_id`. Nothing is stored: an echoed challenge is ours when its id
//!   recomputes.
//! - The challenge is bound to the request: `digest` is the RFC 9530 sha-256 of the body
//!   (core "Request Body Digest Binding") and the HTTP method and path travel in `opaque`
//!   (core §5.1.2: server correlation data, echoed unchanged, SHOULD be in the binding). Both
//!   are HMAC slots, so a credential issued for one request or price pays for no other.
//! - The `evm` request (evm "Request Schema"): `amount` (atomic units), `currency` (token),
//!   `recipient`, `methodDetails` {`chainId`, `credentialTypes`: ["authorization"],
//!   `decimals`, `permit2Address`}. Only the EIP-3009 credential (evm "Authorization Payload",
//!   `type="authorization"`) is accepted: it is what the x402 `exact` facilitator settles.
//! - Its checks (evm "Authorization Verification" 3-6): `to` = recipient, `value` = amount,
//!   `nonce` = keccak256(id ‖ realm) (evm "Challenge Binding"), `validBefore` not passed. The
//!   signature, the balance and the on-chain call (steps 2, 7-10) are the facilitator's, through
//!   [`MppConfig::to_x402_payload`]; a local ECDSA check would refuse smart-wallet signatures
//!   (EIP-1271/6492) that the facilitator accepts.
//! - Replay (evm "Replay Protection"): the token is signer + nonce; the nonce is bound to one
//!   challenge, so [`EvmAuthorization::replay_key`] allows one payment per challenge.
//! - The receipt (core "Payment-Receipt Header", evm "Receipt Generation") is base64url(JSON
//!   {method, challengeId, reference, status, timestamp, chainId}).
//! - Tempo is offered only when configured. Its credentials are signed Tempo transactions, which
//!   need the mpp crate's `tempo` feature (a second EVM stack); until then they are refused with
//!   `unsupported_method`, and [`MppConfig::check_challenge`] is the method-neutral half.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use alloy::primitives::{Address, B256, Bytes, U256};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use mpp::protocol::intents::ChargeRequest;
use mpp::{Base64UrlJson, PaymentChallenge, PaymentCredential};
use paperchain_protocol::eip3009::TransferAuthorization;
use paperchain_protocol::exact_evm::ExactEvmPayload;
pub use paperchain_protocol::mpp::{
    AUTHORIZATION_HEADER, CACHE_CONTROL_CHALLENGE, CACHE_CONTROL_RECEIPT, CREDENTIAL_TYPE_AUTHORIZATION, INTENT_CHARGE,
    METHOD_EVM, METHOD_TEMPO, PAYMENT_RECEIPT_HEADER, WWW_AUTHENTICATE_HEADER, challenge_hash,
};
use paperchain_protocol::x402::{PaymentPayload, Requirements, SCHEME_EXACT, Version2};
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Canonical Permit2 address; the evm draft makes `permit2Address` a required detail.
const PERMIT2_ADDRESS: &str = "0x000000000022D473030F116dDEE9F6B43aC78BA3";
/// An EIP-6492 wrapped signature can be long, but not longer than a header allows.
const MAX_SIGNATURE_BYTES: usize = 8 * 1024;

/// MPP settings of the hosted server.
#[derive(Clone)]
pub struct MppConfig {
    /// Protection space, usually the public host name (core §5.1.1 `realm`).
    pub realm: String,
    /// HMAC key of challenge ids; random at start unless configured (then ids survive restarts).
    pub secret: [u8; 32],
    /// The EVM charge (EIP-3009 authorization), offered when set.
    pub evm: Option<EvmCharge>,
    /// The Tempo charge, offered only when configured.
    pub tempo: Option<TempoCharge>,
    /// Lifetime of a challenge (its `expires`).
    pub challenge_ttl: Duration,
}

/// Where and in what an `evm` charge is paid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvmCharge {
    /// EIP-155 chain id (8453 for Base, the sandbox anvil's id in sandbox mode).
    pub chain_id: u64,
    /// The EIP-3009 dollar stablecoin (request `currency`).
    pub asset: Address,
    /// Who is paid (request `recipient`, x402 `payTo`).
    pub recipient: Address,
    /// EIP-712 domain name of the token ("USD Coin" for USDC).
    pub token_name: String,
    /// EIP-712 domain version of the token ("2" for USDC).
    pub token_version: String,
    /// Token decimals (6 for USDC); shown to clients as `methodDetails.decimals`.
    pub decimals: u8,
}

/// Where and in what a `tempo` charge is paid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TempoCharge {
    /// Tempo chain id.
    pub chain_id: u64,
    /// TIP-20 dollar stablecoin address (request `currency`).
    pub currency: Address,
    /// Who is paid (request `recipient`).
    pub recipient: Address,
    /// Whether the server sponsors the transaction fee (`methodDetails.feePayer`).
    pub fee_payer: bool,
}

/// What a challenge is bound to: HTTP method, path and body digest of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestBinding {
    method: String,
    path: String,
    digest: Option<String>,
}

/// A parsed `Authorization: Payment` credential, not yet checked.
#[derive(Clone)]
pub struct Credential {
    inner: PaymentCredential,
}

/// An accepted EIP-3009 authorization, ready for the x402 facilitator.
#[derive(Clone, PartialEq, Eq)]
pub struct EvmAuthorization {
    /// The id of the challenge it pays (for the receipt).
    pub challenge_id: String,
    /// EIP-155 chain id.
    pub chain_id: u64,
    /// Token contract.
    pub asset: Address,
    /// Payer.
    pub from: Address,
    /// Recipient (equal to the configured recipient).
    pub to: Address,
    /// Amount in atomic units (equal to the quote).
    pub value: U256,
    /// Not valid before this Unix time.
    pub valid_after: u64,
    /// Not valid at or after this Unix time.
    pub valid_before: u64,
    /// keccak256(challenge id ‖ realm).
    pub nonce: B256,
    /// EIP-712 signature (EOA, EIP-1271 or EIP-6492); a secret, never logged.
    pub signature: Bytes,
    /// Payer DID as sent by the client (`did:pkh:eip155:<chain>:<address>`), if any.
    pub source: Option<String>,
}

/// Why a credential is refused; each answer is a 402 with fresh challenges.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MppError {
    /// The header is not a Payment credential of the draft's shape.
    #[error("{0}")]
    Malformed(String),
    /// The echoed challenge was not issued by this server (or under another configuration).
    #[error("{0}")]
    UnknownChallenge(String),
    /// The challenge or the authorization has expired.
    #[error("{0}")]
    Expired(String),
    /// The challenge was issued for another request (method, path or body).
    #[error("{0}")]
    WrongRequest(String),
    /// The challenge or authorization is for another amount than this request's price.
    #[error("{0}")]
    WrongAmount(String),
    /// The method (or credential type) is not one this server accepts.
    #[error("{0}")]
    UnsupportedMethod(String),
    /// The payload does not satisfy the challenge (recipient, nonce, validity window).
    #[error("{0}")]
    VerificationFailed(String),
}

impl MppError {
    /// Short stable code: `malformed`, `unknown_challenge`, `expired`, `wrong_request`,
    /// `wrong_amount`, `unsupported_method`, `verification_failed`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Malformed(_) => "malformed",
            Self::UnknownChallenge(_) => "unknown_challenge",
            Self::Expired(_) => "expired",
            Self::WrongRequest(_) => "wrong_request",
            Self::WrongAmount(_) => "wrong_amount",
            Self::UnsupportedMethod(_) => "unsupported_method",
            Self::VerificationFailed(_) => "verification_failed",
        }
    }

    /// The draft's problem type URI (core "Error Codes") for an RFC 9457 body.
    pub fn problem_type(&self) -> &'static str {
        match self {
            Self::Malformed(_) => "https://paymentauth.org/problems/malformed-credential",
            Self::UnknownChallenge(_) | Self::WrongRequest(_) => "https://paymentauth.org/problems/invalid-challenge",
            Self::Expired(_) => "https://paymentauth.org/problems/payment-expired",
            Self::WrongAmount(_) | Self::VerificationFailed(_) => {
                "https://paymentauth.org/problems/verification-failed"
            }
            Self::UnsupportedMethod(_) => "https://paymentauth.org/problems/method-unsupported",
        }
    }
}

impl RequestBinding {
    /// Binds to `method` (case-insensitive), `path` (as routed, with the query if it
    /// matters) and the exact body bytes.
    pub fn new(method: &str, path: &str, body: &[u8]) -> Self {
        // RFC 9530 byte-sequence form, as the core draft's digest example writes it.
        let digest = (!body.is_empty()).then(|| format!("sha-256=:{}:", STANDARD.encode(Sha256::digest(body))));
        Self { method: method.to_ascii_uppercase(), path: path.to_owned(), digest }
    }

    /// The `digest` auth-param, absent for an empty body.
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }

    /// The `opaque` auth-param: JCS JSON {method, path, nonce}, base64url. The random
    /// nonce makes every challenge new, so two 402s for the same request in the same second
    /// (two payers, or the 402 answering a replay) never share an id and its EIP-3009 nonce.
    fn opaque(&self, nonce: &str) -> Option<Base64UrlJson> {
        Base64UrlJson::from_value(&json!({ "method": self.method, "path": self.path, "nonce": nonce })).ok()
    }

    /// Whether an echoed `opaque` names this request's method and path.
    fn matches_opaque(&self, echoed: Option<&Base64UrlJson>) -> bool {
        let Some(value) = echoed.and_then(|o| o.decode_value().ok()) else {
            return false;
        };
        value["method"] == self.method.as_str() && value["path"] == self.path.as_str()
    }
}

impl Credential {
    /// The echoed challenge id.
    pub fn challenge_id(&self) -> &str {
        &self.inner.challenge.id
    }

    /// The echoed method (`evm`, `tempo`, …).
    pub fn method(&self) -> &str {
        self.inner.challenge.method.as_str()
    }

    /// The payer DID, if the client sent one.
    pub fn source(&self) -> Option<&str> {
        self.inner.source.as_deref()
    }
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The payload holds a payment signature: a bearer secret (core "Credential Handling").
        f.debug_struct("Credential")
            .field("challenge_id", &self.challenge_id())
            .field("method", &self.method())
            .field("source", &self.source())
            .field("payload", &"<redacted>")
            .finish()
    }
}

impl fmt::Debug for EvmAuthorization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EvmAuthorization")
            .field("challenge_id", &self.challenge_id)
            .field("chain_id", &self.chain_id)
            .field("asset", &self.asset)
            .field("from", &self.from)
            .field("to", &self.to)
            .field("value", &self.value)
            .field("valid_after", &self.valid_after)
            .field("valid_before", &self.valid_before)
            .field("nonce", &self.nonce)
            .field("signature", &"<redacted>")
            .finish()
    }
}

impl fmt::Debug for MppConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MppConfig")
            .field("realm", &self.realm)
            .field("secret", &"<redacted>")
            .field("evm", &self.evm)
            .field("tempo", &self.tempo)
            .field("challenge_ttl", &self.challenge_ttl)
            .finish()
    }
}

impl EvmAuthorization {
    /// Replay-guard key: chain + nonce, and the nonce is bound to one challenge, so one
    /// payment per challenge (evm "Replay Protection" uses signer + nonce; this is stricter).
    pub fn replay_key(&self) -> String {
        format!("mpp:evm:{}:{}", self.chain_id, self.nonce)
    }
}

/// Current Unix time in seconds.
pub fn now_unix() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_secs())
}

impl MppConfig {
    /// A configuration with a fresh random secret, no method yet and a 5-minute ttl.
    pub fn new(realm: impl Into<String>) -> Self {
        Self {
            realm: realm.into(),
            secret: rand::random(),
            evm: None,
            tempo: None,
            challenge_ttl: Duration::from_secs(300),
        }
    }

    /// Checks what `challenges` relies on; call once at start.
    pub fn validate(&self) -> Result<(), String> {
        if self.realm.is_empty() || self.realm.contains(['"', '\\', '\r', '\n']) {
            return Err("MPP realm must be non-empty, without quotes, backslashes or newlines".into());
        }
        if self.evm.is_none() && self.tempo.is_none() {
            return Err("MPP needs at least one method (evm or tempo)".into());
        }
        if self.challenge_ttl.as_secs() < 10 {
            return Err("MPP challenge ttl must be at least 10 seconds".into());
        }
        Ok(())
    }

    /// `WWW-Authenticate` values for a 402 quoting `quote_atomic`, one per offered method.
    pub fn challenges(&self, quote_atomic: u64, binding: &RequestBinding) -> Vec<String> {
        self.challenges_at(quote_atomic, binding, now_unix())
    }

    /// [`challenges`](Self::challenges) at a given Unix time.
    pub fn challenges_at(&self, quote_atomic: u64, binding: &RequestBinding, now: u64) -> Vec<String> {
        let expires = rfc3339(now.saturating_add(self.challenge_ttl.as_secs()));
        let mut requests = Vec::new();
        if let Some(evm) = &self.evm {
            requests.push((METHOD_EVM, evm_request(evm, quote_atomic)));
        }
        if let Some(tempo) = &self.tempo {
            requests.push((METHOD_TEMPO, tempo_request(tempo, quote_atomic)));
        }
        requests
            .into_iter()
            .filter_map(|(method, request)| {
                let challenge = self.issue(method, &request, &expires, binding)?;
                match challenge.to_header() {
                    Ok(header) => Some(header),
                    Err(error) => {
                        // Only a realm that `validate` refuses can get here.
                        tracing::error!(%error, method, "MPP challenge could not be formatted");
                        None
                    }
                }
            })
            .collect()
    }

    /// Parses an `Authorization` value (other schemes beside `Payment` are skipped).
    pub fn parse_credential(header: &str) -> Result<Credential, MppError> {
        mpp::parse_authorization(header)
            .map(|inner| Credential { inner })
            .map_err(|error| MppError::Malformed(malformed_message(&error)))
    }

    /// Checks a credential for this request and price and returns its EIP-3009 authorization.
    pub fn check(
        &self,
        credential: &Credential,
        binding: &RequestBinding,
        quote_atomic: u64,
        now: u64,
    ) -> Result<EvmAuthorization, MppError> {
        let Some(evm) = &self.evm else {
            return Err(unsupported_method(credential.method(), self));
        };
        if credential.method() != METHOD_EVM {
            return Err(unsupported_method(credential.method(), self));
        }
        self.check_challenge(credential, binding, quote_atomic, now)?;
        let echo = &credential.inner.challenge;
        let request: ChargeRequest = echo
            .request
            .decode()
            .map_err(|_| MppError::UnknownChallenge("the echoed request is not a charge request".into()))?;
        if !evm_request_matches(evm, &request) {
            return Err(MppError::UnknownChallenge(
                "the challenge was issued for another token, recipient or chain; request a new one".into(),
            ));
        }
        let payload = parse_authorization_payload(&credential.inner.payload)?;
        if payload.to != evm.recipient {
            return Err(MppError::VerificationFailed(format!(
                "authorization `to` must be the recipient {}",
                evm.recipient
            )));
        }
        if payload.value != U256::from(quote_atomic) {
            return Err(MppError::WrongAmount(format!(
                "authorization `value` {} differs from the price {quote_atomic}",
                payload.value
            )));
        }
        if payload.nonce != challenge_hash(&echo.id, &echo.realm) {
            return Err(MppError::VerificationFailed(
                "authorization `nonce` must be keccak256(challenge id ‖ realm)".into(),
            ));
        }
        if payload.valid_before <= now {
            return Err(MppError::Expired("the authorization's `validBefore` has passed".into()));
        }
        if payload.valid_after > now {
            return Err(MppError::VerificationFailed(
                "the authorization is not valid yet (`validAfter` is in the future)".into(),
            ));
        }
        Ok(EvmAuthorization {
            challenge_id: echo.id.clone(),
            chain_id: evm.chain_id,
            asset: evm.asset,
            from: payload.from,
            to: payload.to,
            value: payload.value,
            valid_after: payload.valid_after,
            valid_before: payload.valid_before,
            nonce: payload.nonce,
            signature: payload.signature,
            source: credential.inner.source.clone(),
        })
    }

    /// The method-neutral half of [`check`](Self::check): the echoed challenge is ours
    /// (HMAC), unexpired, for this request and for `quote_atomic`.
    pub fn check_challenge(
        &self,
        credential: &Credential,
        binding: &RequestBinding,
        quote_atomic: u64,
        now: u64,
    ) -> Result<(), MppError> {
        let echo = &credential.inner.challenge;
        let offered = match echo.method.as_str() {
            METHOD_EVM => self.evm.is_some(),
            METHOD_TEMPO => self.tempo.is_some(),
            _ => false,
        };
        if !offered {
            return Err(unsupported_method(echo.method.as_str(), self));
        }
        let expected_id = mpp::compute_challenge_id(
            &self.hmac_key(),
            &self.realm,
            echo.method.as_str(),
            echo.intent.as_str(),
            echo.request.raw(),
            echo.expires.as_deref(),
            echo.digest.as_deref(),
            echo.opaque.as_ref().map(Base64UrlJson::raw),
        );
        // The id is a MAC: compare in constant time, as mpp's own verify does.
        let genuine = echo.realm == self.realm
            && echo.header.is_none()
            && constant_time_eq(expected_id.as_bytes(), echo.id.as_bytes());
        if !genuine {
            return Err(MppError::UnknownChallenge(
                "the challenge was not issued by this server or was altered".into(),
            ));
        }
        if !echo.intent.is_charge() {
            return Err(MppError::UnknownChallenge("only the `charge` intent is offered".into()));
        }
        let expires = echo
            .expires
            .as_deref()
            .and_then(|text| OffsetDateTime::parse(text, &Rfc3339).ok())
            .map(OffsetDateTime::unix_timestamp)
            .ok_or_else(|| MppError::UnknownChallenge("the challenge has no valid `expires`".into()))?;
        if expires <= i64::try_from(now).unwrap_or(i64::MAX) {
            return Err(MppError::Expired("the challenge has expired; use the new one".into()));
        }
        if !binding.matches_opaque(echo.opaque.as_ref()) || echo.digest.as_deref() != binding.digest() {
            return Err(MppError::WrongRequest(
                "the challenge was issued for another request (method, path or body)".into(),
            ));
        }
        let amount = echo.request.decode::<ChargeRequest>().map(|request| request.amount).unwrap_or_default();
        if amount != quote_atomic.to_string() {
            return Err(MppError::WrongAmount(format!(
                "the challenge quoted {amount}, this request costs {quote_atomic}"
            )));
        }
        Ok(())
    }

    /// The x402 v2 `exact` requirements equal to an `evm` challenge for `amount` (the
    /// facilitator demands `accepted` == `paymentRequirements`).
    pub fn x402_requirements(&self, amount: U256) -> Option<Requirements> {
        let evm = self.evm.as_ref()?;
        Some(Requirements {
            scheme: SCHEME_EXACT.to_string(),
            network: format!("eip155:{}", evm.chain_id),
            amount: amount.to_string(),
            asset: evm.asset.to_checksum(None),
            pay_to: evm.recipient.to_checksum(None),
            max_timeout_seconds: self.challenge_ttl.as_secs(),
            extra: Some(json!({
                "assetTransferMethod": "eip3009",
                "name": evm.token_name,
                "version": evm.token_version,
            })),
        })
    }

    /// The x402 v2 `PaymentPayload` for `auth`, for the same facilitator as PAYMENT-SIGNATURE.
    pub fn to_x402_payload(&self, auth: &EvmAuthorization) -> Value {
        let payment = PaymentPayload {
            x402_version: Version2,
            accepted: self.x402_requirements(auth.value),
            resource: None,
            payload: ExactEvmPayload {
                signature: auth.signature.to_string(),
                authorization: TransferAuthorization {
                    from: auth.from.to_checksum(None),
                    to: auth.to.to_checksum(None),
                    value: auth.value.to_string(),
                    valid_after: auth.valid_after.to_string(),
                    valid_before: auth.valid_before.to_string(),
                    nonce: auth.nonce.to_string(),
                },
            },
            extensions: Default::default(),
        };
        serde_json::to_value(payment).expect("a PaymentPayload serializes")
    }

    /// The facilitator's `/verify` and `/settle` body for `auth`.
    pub fn to_x402_verify_request(&self, auth: &EvmAuthorization) -> Value {
        json!({
            "x402Version": 2,
            "paymentPayload": self.to_x402_payload(auth),
            "paymentRequirements": self.x402_requirements(auth.value),
        })
    }

    /// The `Payment-Receipt` value after settlement in `tx_hash` (evm "Receipt Generation").
    pub fn receipt(&self, challenge_id: &str, tx_hash: &str, now: u64) -> String {
        let mut receipt = json!({
            "method": METHOD_EVM,
            "challengeId": challenge_id,
            "reference": tx_hash,
            "status": "success",
            "timestamp": rfc3339(now),
        });
        if let (Some(evm), Some(object)) = (&self.evm, receipt.as_object_mut()) {
            object.insert("chainId".into(), evm.chain_id.into());
        }
        mpp::base64url_encode(receipt.to_string().as_bytes())
    }

    fn hmac_key(&self) -> String {
        // mpp keys its HMAC with a string; hex keeps all 256 bits.
        hex::encode(self.secret)
    }

    fn issue(
        &self,
        method: &str,
        request: &Value,
        expires: &str,
        binding: &RequestBinding,
    ) -> Option<PaymentChallenge> {
        let request = Base64UrlJson::from_value(request).ok()?;
        let opaque = binding.opaque(&hex::encode(rand::random::<[u8; 16]>()));
        Some(PaymentChallenge::with_secret_key_full(
            &self.hmac_key(),
            self.realm.clone(),
            method,
            INTENT_CHARGE,
            request,
            Some(expires),
            binding.digest(),
            None,
            opaque,
            None,
        ))
    }
}

fn evm_request(evm: &EvmCharge, amount: u64) -> Value {
    json!({
        "amount": amount.to_string(),
        "currency": evm.asset.to_checksum(None),
        "recipient": evm.recipient.to_checksum(None),
        "methodDetails": {
            "chainId": evm.chain_id,
            "credentialTypes": [CREDENTIAL_TYPE_AUTHORIZATION],
            "decimals": evm.decimals,
            "permit2Address": PERMIT2_ADDRESS,
        },
    })
}

fn tempo_request(tempo: &TempoCharge, amount: u64) -> Value {
    json!({
        "amount": amount.to_string(),
        "currency": tempo.currency.to_checksum(None),
        "recipient": tempo.recipient.to_checksum(None),
        "methodDetails": {
            "chainId": tempo.chain_id,
            "feePayer": tempo.fee_payer,
            "supportedModes": ["pull"],
        },
    })
}

/// Addresses are compared by value, not by spelling (evm "Shared Fields").
fn evm_request_matches(evm: &EvmCharge, request: &ChargeRequest) -> bool {
    let address = |text: Option<&str>| text.and_then(|text| Address::from_str(text).ok());
    let chain = request.method_details.as_ref().and_then(|details| details.get("chainId")).and_then(Value::as_u64);
    address(Some(&request.currency)) == Some(evm.asset)
        && address(request.recipient.as_deref()) == Some(evm.recipient)
        && chain == Some(evm.chain_id)
}

fn unsupported_method(method: &str, config: &MppConfig) -> MppError {
    let mut accepted = Vec::new();
    if config.evm.is_some() {
        accepted.push("`evm` (type=\"authorization\")");
    }
    let method: String = method.chars().take(40).collect();
    MppError::UnsupportedMethod(if accepted.is_empty() {
        format!("payment method `{method}` is not accepted; no MPP method is accepted here")
    } else {
        format!("payment method `{method}` is not accepted; use {}", accepted.join(", "))
    })
}

/// mpp's messages can quote a piece of the header; keep the reason, never the content.
fn malformed_message(error: &mpp::MppError) -> String {
    let text = error.to_string();
    let reason = if text.contains("Invalid base64url") {
        "the credential is not base64url"
    } else if text.contains("Expected 'Payment' scheme") {
        "the Authorization header has no `Payment` credential"
    } else if text.contains("maximum length") {
        "the credential is too long"
    } else if text.contains("Invalid credential JSON") {
        "the credential is not a JSON object {challenge, payload, source}"
    } else {
        "the echoed challenge is not well-formed"
    };
    reason.to_owned()
}

struct AuthorizationPayload {
    from: Address,
    to: Address,
    value: U256,
    valid_after: u64,
    valid_before: u64,
    nonce: B256,
    signature: Bytes,
}

fn parse_authorization_payload(payload: &Value) -> Result<AuthorizationPayload, MppError> {
    let kind = payload
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| MppError::Malformed("payload `type` is missing".into()))?;
    if kind != CREDENTIAL_TYPE_AUTHORIZATION {
        let kind: String = kind.chars().take(40).collect();
        return Err(MppError::UnsupportedMethod(format!(
            "credential type `{kind}` is not accepted; use type=\"authorization\" (EIP-3009)"
        )));
    }
    let raw = paperchain_protocol::mpp::AuthorizationPayload::deserialize(payload).map_err(|_| {
        MppError::Malformed(
            "authorization payload needs string fields from, to, value, validAfter, validBefore, \
             nonce and signature"
                .into(),
        )
    })?;
    let address = |name: &str, text: &str| {
        text.strip_prefix("0x")
            .filter(|hex| hex.len() == 40)
            .and_then(|_| Address::from_str(text).ok())
            .ok_or_else(|| MppError::Malformed(format!("payload `{name}` is not an address")))
    };
    let integer = |name: &str, text: &str| {
        paperchain_protocol::x402::parse_amount(text)
            .ok_or_else(|| MppError::Malformed(format!("payload `{name}` is not a decimal integer")))
    };
    let seconds = |name: &str, text: &str| {
        integer(name, text).and_then(|value| {
            u64::try_from(value).map_err(|_| MppError::Malformed(format!("payload `{name}` is out of range")))
        })
    };
    let signed = &raw.authorization;
    let nonce = signed
        .nonce
        .strip_prefix("0x")
        .filter(|hex| hex.len() == 64)
        .and_then(|_| B256::from_str(&signed.nonce).ok())
        .ok_or_else(|| MppError::Malformed("payload `nonce` is not a 0x-prefixed bytes32".into()))?;
    let signature = raw
        .signature
        .strip_prefix("0x")
        .filter(|hex| !hex.is_empty() && hex.len() <= 2 * MAX_SIGNATURE_BYTES)
        .and_then(|hex| alloy::primitives::hex::decode(hex).ok())
        .map(Bytes::from)
        .ok_or_else(|| MppError::Malformed("payload `signature` is not 0x-prefixed hex".into()))?;
    Ok(AuthorizationPayload {
        from: address("from", &signed.from)?,
        to: address("to", &signed.to)?,
        value: integer("value", &signed.value)?,
        valid_after: seconds("validAfter", &signed.valid_after)?,
        valid_before: seconds("validBefore", &signed.valid_before)?,
        nonce,
        signature,
    })
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    // Constant time over the common length; lengths of HMAC ids are public.
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn rfc3339(unix: u64) -> String {
    i64::try_from(unix)
        .ok()
        .and_then(|secs| OffsetDateTime::from_unix_timestamp(secs).ok())
        .and_then(|time| time.format(&Rfc3339).ok())
        // Fail closed: an unformattable time yields an already expired challenge.
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_owned())
}

#[cfg(test)]
mod tests;
