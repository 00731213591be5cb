//! The paywall as the call path sees it: the [`Paywall`] a hosted server runs paid calls
//! through, the call it is handed ([`PaidCall`]) and what it answers ([`Answer`]). The
//! paywall itself (prices in stablecoins, free pools, x402 and MPP, the facilitator, the
//! store) is the hosted service's (`paperchain-hosted`); the front doors know it only
//! through these types, so the payment rules exist once and a build without hosted mode
//! compiles none of them.

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;

use paperchain_engine_core::catalog::{Admission, RouteEntry};
use paperchain_engine_core::{Context, EngineError, Reply};
use paperchain_protocol::x402::SettlementResponse;
use serde_json::Value;

use crate::Body;

/// A hosted server's paywall.
pub trait Paywall: Send + Sync {
    /// The request header that names the caller's address behind a proxy the operator
    /// runs (free pools are per address); `None` takes the connection's address.
    fn client_ip_header(&self) -> Option<&http::HeaderName>;

    /// Decides and, where allowed, runs one call: quote, free pool or payment, the
    /// operation, settlement, the record of it.
    fn handle<'a>(&'a self, call: PaidCall<'a>, ctx: &'a Context) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>>;
}

/// A payment attached to a call.
pub enum Payment {
    /// The `PAYMENT-SIGNATURE` header value (base64 JSON PaymentPayload).
    X402(String),
    /// A PaymentPayload as JSON (MCP's `_meta["x402/payment"]`).
    X402Json(Value),
    /// The `Authorization: Payment` credential (MPP).
    Mpp(String),
}

/// Whether the caller asks for the free pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreeAsk {
    /// No: an unpaid call gets the 402.
    No,
    /// `X-Svc-Free: 1` over HTTP, or any call over MCP.
    Yes,
}

/// One call to a paid route.
pub struct PaidCall<'a> {
    /// The route.
    pub route: &'a RouteEntry,
    /// The body.
    pub body: &'a Body,
    /// The payment, if any.
    pub payment: Option<Payment>,
    /// Free pool asked for.
    pub free: FreeAsk,
    /// The client's address (free pools are per IP).
    pub client: Option<IpAddr>,
    /// The call came as an HTTP request (`POST` to the route's path): MPP challenges are
    /// bound to it. MPP does not apply to the other doors (MCP).
    pub over_http: bool,
    /// The call's place at the heavy-work gate when the front door took one before it read
    /// the body; the default when it did not.
    pub admission: Admission,
}

/// A settlement to report with the result.
#[derive(Clone, Debug)]
pub struct Receipt {
    /// The x402 SettlementResponse (HTTP: base64 in `PAYMENT-RESPONSE`; MCP:
    /// `_meta["x402/payment-response"]`).
    pub settlement: SettlementResponse,
    /// For a call paid with MPP, the `Payment-Receipt` value its client expects instead of
    /// the x402 header.
    pub mpp_receipt: Option<String>,
}

/// A 402.
pub struct Required {
    /// The PaymentRequired object (the body, and base64 in `PAYMENT-REQUIRED`).
    pub body: Arc<RequiredBody>,
    /// `WWW-Authenticate: Payment` challenges (MPP), one per offered method.
    pub challenges: Vec<String>,
}

/// A PaymentRequired object, serialized once: the same quote goes to every unpaid caller
/// of a route at one price, and writing its 10 KB twice per 402 (JSON, then base64) cost
/// more than the rest of the refusal.
pub struct RequiredBody {
    /// The object.
    pub value: Value,
    /// Its JSON: the 402's body.
    pub json: bytes::Bytes,
    /// The JSON in base64: the `PAYMENT-REQUIRED` header.
    pub base64: String,
}

impl RequiredBody {
    /// `value`, serialized.
    pub fn new(value: Value) -> RequiredBody {
        let json = bytes::Bytes::from(value.to_string());
        let base64 = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &json);
        RequiredBody { value, json, base64 }
    }
}

/// What the front door answers.
pub enum Answer {
    /// The operation ran; deliver its result.
    Delivered {
        /// The result.
        reply: Reply<Value>,
        /// The settlement, for paid calls.
        receipt: Option<Box<Receipt>>,
        /// Free calls left today in the pool used, for free calls.
        free_left: Option<u32>,
    },
    /// Payment is required (HTTP 402; an MCP tool error carrying the object).
    PaymentRequired(Box<Required>),
    /// Any other refusal or failure.
    Failed(Failure),
}

/// Why a call was refused or failed, in terms each front door maps to its own answer.
#[derive(Debug)]
pub enum Failure {
    /// An engine error: its kind decides the status (invalid input 422, too large 413,
    /// unavailable 503 with Retry-After…).
    Engine(EngineError),
    /// A paid call whose body is not declared as JSON (HTTP 415), with the Content-Type given.
    NotJson(String),
    /// A body over the size limit (HTTP 413), in bytes.
    TooLarge(usize),
}

impl From<EngineError> for Failure {
    fn from(error: EngineError) -> Failure {
        Failure::Engine(error)
    }
}
