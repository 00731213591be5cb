//! The facilitator seen by the paywall: verify, settle and supported behind one
//! object-safe trait, with every failure sorted into "the payment is wrong" (the client
//! gets a 402) or "the facilitator cannot answer" (503 with Retry-After, nothing settled).
//!
//! Implementations: [`Remote`] (x402-axum's HTTP facilitator client, hosted mode),
//! [`Local`] (x402-facilitator-local in process, the sandbox and tests) and
//! [`ByNamespace`] (several of them, each for the networks of one namespace).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use x402_types::facilitator::Facilitator;
use x402_types::proto::{self, AsPaymentProblem, SupportedResponse};

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a facilitator call did not succeed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FacilitatorFailure {
    /// The payment is not acceptable: a snake_case reason (x402's `invalidReason` /
    /// `errorReason`) and details for people.
    Rejected { reason: String, details: String },
    /// The facilitator could not be reached or did not answer in time.
    Unavailable(String),
}

/// A verified payment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    /// Who pays.
    pub payer: Option<String>,
}

/// A settled payment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settled {
    /// Who paid.
    pub payer: Option<String>,
    /// Transaction hash (or signature on Solana).
    pub transaction: String,
    /// CAIP-2 network.
    pub network: String,
}

/// What the paywall needs from a facilitator.
pub trait PaymentFacilitator: Send + Sync {
    /// Checks a payment against the requirements it claims to satisfy.
    fn verify(&self, request: proto::VerifyRequest) -> BoxFuture<'_, Result<Verified, FacilitatorFailure>>;
    /// Executes the payment on chain.
    fn settle(&self, request: proto::SettleRequest) -> BoxFuture<'_, Result<Settled, FacilitatorFailure>>;
    /// Schemes, networks and signers (Solana's fee payer) the facilitator supports.
    fn supported(&self) -> BoxFuture<'_, Result<SupportedResponse, FacilitatorFailure>>;
}

/// A remote facilitator over HTTP.
pub struct Remote(pub x402_axum::facilitator_client::FacilitatorClient);

impl Remote {
    /// A client for the facilitator at `url`, each call limited to `timeout`.
    pub fn new(url: &url::Url, timeout: Duration) -> Result<Remote, String> {
        let client = x402_axum::facilitator_client::FacilitatorClient::try_new(url.clone())
            .map_err(|e| format!("facilitator URL {url}: {e}"))?;
        Ok(Remote(client.with_timeout(timeout)))
    }
}

impl PaymentFacilitator for Remote {
    fn verify(&self, request: proto::VerifyRequest) -> BoxFuture<'_, Result<Verified, FacilitatorFailure>> {
        Box::pin(async move {
            let response = self.0.verify(&request).await.map_err(remote_failure)?;
            verified(response.0)
        })
    }

    fn settle(&self, request: proto::SettleRequest) -> BoxFuture<'_, Result<Settled, FacilitatorFailure>> {
        Box::pin(async move {
            let response = self.0.settle(&request).await.map_err(remote_failure)?;
            settled(response.0)
        })
    }

    fn supported(&self) -> BoxFuture<'_, Result<SupportedResponse, FacilitatorFailure>> {
        Box::pin(async move { self.0.supported().await.map_err(remote_failure) })
    }
}

fn remote_failure(error: x402_axum::facilitator_client::FacilitatorClientError) -> FacilitatorFailure {
    use x402_axum::facilitator_client::FacilitatorClientError as E;
    match error {
        // A 4xx from the facilitator is its judgement of the payment, not an outage.
        E::HttpStatus { status, body, .. } if status.is_client_error() => {
            FacilitatorFailure::Rejected { reason: "invalid_payment".into(), details: truncate(&body, 300) }
        }
        other => FacilitatorFailure::Unavailable(other.to_string()),
    }
}

/// An in-process facilitator (x402-facilitator-local).
pub struct Local<F>(pub F);

impl<F> PaymentFacilitator for Local<F>
where
    F: Facilitator<Error = x402_facilitator_local::FacilitatorLocalError> + Send + Sync,
{
    fn verify(&self, request: proto::VerifyRequest) -> BoxFuture<'_, Result<Verified, FacilitatorFailure>> {
        Box::pin(async move {
            let response = self.0.verify(&request).await.map_err(local_failure)?;
            verified(response.0)
        })
    }

    fn settle(&self, request: proto::SettleRequest) -> BoxFuture<'_, Result<Settled, FacilitatorFailure>> {
        Box::pin(async move {
            let response = self.0.settle(&request).await.map_err(local_failure)?;
            settled(response.0)
        })
    }

    fn supported(&self) -> BoxFuture<'_, Result<SupportedResponse, FacilitatorFailure>> {
        Box::pin(async move { self.0.supported().await.map_err(local_failure) })
    }
}

/// A facilitator whose refusals may hide an outage of its node: x402-chain-solana reports
/// a node it cannot reach as a failed simulation, the payment's fault. Each refusal is
/// checked against `node_answers` (a cheap read of the same node): when the node does not
/// answer, nobody can judge the payment, and the refusal becomes [`FacilitatorFailure::Unavailable`].
pub struct NodeChecked<F> {
    /// The facilitator.
    pub inner: F,
    /// Whether the facilitator's node answers now.
    pub node_answers: Box<dyn Fn() -> BoxFuture<'static, bool> + Send + Sync>,
}

impl<F: PaymentFacilitator> NodeChecked<F> {
    async fn checked<T>(&self, result: Result<T, FacilitatorFailure>) -> Result<T, FacilitatorFailure> {
        match result {
            Err(FacilitatorFailure::Rejected { reason, details }) if !(self.node_answers)().await => {
                Err(FacilitatorFailure::Unavailable(format!(
                    "the facilitator's node does not answer ({reason}: {details})"
                )))
            }
            other => other,
        }
    }
}

impl<F: PaymentFacilitator> PaymentFacilitator for NodeChecked<F> {
    fn verify(&self, request: proto::VerifyRequest) -> BoxFuture<'_, Result<Verified, FacilitatorFailure>> {
        Box::pin(async move { self.checked(self.inner.verify(request).await).await })
    }

    fn settle(&self, request: proto::SettleRequest) -> BoxFuture<'_, Result<Settled, FacilitatorFailure>> {
        Box::pin(async move { self.checked(self.inner.settle(request).await).await })
    }

    fn supported(&self) -> BoxFuture<'_, Result<SupportedResponse, FacilitatorFailure>> {
        self.inner.supported()
    }
}

/// In-process facilitators by CAIP-2 namespace (`eip155`, `solana`): a payment goes to the
/// one of its network, `supported` lists what all of them support.
pub struct ByNamespace(pub Vec<(&'static str, Arc<dyn PaymentFacilitator>)>);

impl ByNamespace {
    fn of(&self, request: &proto::VerifyRequest) -> Result<&Arc<dyn PaymentFacilitator>, FacilitatorFailure> {
        let network = serde_json::from_str::<Value>(request.as_str())
            .ok()
            .and_then(|v| v["paymentRequirements"]["network"].as_str().map(str::to_string))
            .unwrap_or_default();
        let namespace = network.split_once(':').map_or("", |(namespace, _)| namespace);
        self.0.iter().find(|(ours, _)| *ours == namespace).map(|(_, facilitator)| facilitator).ok_or_else(|| {
            FacilitatorFailure::Rejected {
                reason: "unsupported_network".into(),
                details: format!("no facilitator here settles on `{}`", truncate(&network, 60)),
            }
        })
    }
}

impl PaymentFacilitator for ByNamespace {
    fn verify(&self, request: proto::VerifyRequest) -> BoxFuture<'_, Result<Verified, FacilitatorFailure>> {
        Box::pin(async move { self.of(&request)?.verify(request).await })
    }

    fn settle(&self, request: proto::SettleRequest) -> BoxFuture<'_, Result<Settled, FacilitatorFailure>> {
        Box::pin(async move { self.of(&request)?.settle(request).await })
    }

    fn supported(&self) -> BoxFuture<'_, Result<SupportedResponse, FacilitatorFailure>> {
        Box::pin(async move {
            let mut all = SupportedResponse { kinds: Vec::new(), extensions: Vec::new(), signers: Default::default() };
            for (_, facilitator) in &self.0 {
                let one = facilitator.supported().await?;
                all.kinds.extend(one.kinds);
                all.extensions
                    .extend(one.extensions.into_iter().filter(|e| !all.extensions.contains(e)).collect::<Vec<_>>());
                all.signers.extend(one.signers);
            }
            Ok(all)
        })
    }
}

fn local_failure(error: x402_facilitator_local::FacilitatorLocalError) -> FacilitatorFailure {
    use x402_facilitator_local::FacilitatorLocalError as E;
    use x402_types::scheme::X402SchemeFacilitatorError as S;
    let inner = match &error {
        E::Verification(inner) | E::Settlement(inner) => inner,
    };
    match inner {
        // The token refused the transfer in simulation: a spent nonce, a forged or
        // mismatched signature. That is the payment's fault, not an outage.
        S::OnchainFailure(message) if message.contains("execution reverted") => {
            FacilitatorFailure::Rejected { reason: "transaction_simulation".into(), details: truncate(message, 300) }
        }
        // The node behind the facilitator failed: nobody can tell whether the payment is good.
        S::OnchainFailure(message) if matches!(error, E::Verification(_)) => {
            FacilitatorFailure::Unavailable(message.clone())
        }
        _ => {
            let problem = inner.as_payment_problem();
            FacilitatorFailure::Rejected {
                reason: serde_json::to_value(problem.reason())
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_else(|| "invalid_payment".into()),
                details: truncate(problem.details(), 300),
            }
        }
    }
}

/// `{"isValid": true, "payer": …}` or `{"isValid": false, "invalidReason": …}`.
fn verified(value: Value) -> Result<Verified, FacilitatorFailure> {
    let payer = value.get("payer").and_then(Value::as_str).map(str::to_string);
    match value.get("isValid").and_then(Value::as_bool) {
        Some(true) => Ok(Verified { payer }),
        Some(false) => Err(FacilitatorFailure::Rejected {
            reason: text(&value, "invalidReason").unwrap_or_else(|| "invalid_payment".into()),
            details: text(&value, "invalidMessage").unwrap_or_default(),
        }),
        None => Err(FacilitatorFailure::Unavailable(format!(
            "the facilitator's verify answer has no isValid: {}",
            truncate(&value.to_string(), 200)
        ))),
    }
}

/// `{"success": true, "transaction": …, "network": …, "payer": …}` or `{"success": false, "errorReason": …}`.
fn settled(value: Value) -> Result<Settled, FacilitatorFailure> {
    match value.get("success").and_then(Value::as_bool) {
        Some(true) => match (text(&value, "transaction"), text(&value, "network")) {
            (Some(transaction), Some(network)) if !transaction.is_empty() => {
                Ok(Settled { payer: text(&value, "payer"), transaction, network })
            }
            _ => Err(FacilitatorFailure::Unavailable("the facilitator's settle answer has no transaction".into())),
        },
        Some(false) => Err(FacilitatorFailure::Rejected {
            reason: text(&value, "errorReason").unwrap_or_else(|| "settlement_failed".into()),
            details: text(&value, "errorMessage").unwrap_or_default(),
        }),
        None => Err(FacilitatorFailure::Unavailable(format!(
            "the facilitator's settle answer has no success: {}",
            truncate(&value.to_string(), 200)
        ))),
    }
}

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_string)
}

fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn verify_answers_are_sorted() {
        assert_eq!(verified(json!({"isValid": true, "payer": "0xab"})), Ok(Verified { payer: Some("0xab".into()) }));
        assert_eq!(
            verified(json!({"isValid": false, "invalidReason": "insufficient_funds"})),
            Err(FacilitatorFailure::Rejected { reason: "insufficient_funds".into(), details: String::new() })
        );
        assert!(matches!(verified(json!({"nonsense": 1})), Err(FacilitatorFailure::Unavailable(_))));
    }

    #[test]
    fn settle_answers_are_sorted() {
        let ok = settled(json!({"success": true, "transaction": "0x1", "network": "eip155:8453", "payer": "0xab"}));
        assert_eq!(ok.unwrap().transaction, "0x1");
        let refused =
            settled(json!({"success": false, "errorReason": "invalid_payment_expired", "network": "eip155:8453"}));
        assert!(
            matches!(refused, Err(FacilitatorFailure::Rejected { reason, .. }) if reason == "invalid_payment_expired")
        );
        assert!(matches!(
            settled(json!({"success": true, "transaction": "", "network": "x"})),
            Err(FacilitatorFailure::Unavailable(_))
        ));
    }
}
